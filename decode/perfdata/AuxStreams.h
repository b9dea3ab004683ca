// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The AUX trace of a perf.data as per-ring byte streams, whatever the trace
// kind (Intel PT, CoreSight): per CPU (or per thread, for per-thread rings) the
// AUXTRACE buffers in AUX order, one logical stream (AuxStreamBytes: pieces of the
// mapped file, not copies) split into runs where AUX data is missing (a gap in
// the AUX offsets, named with its size from the reader's accounting of what the
// AUX records announce, a buffer cut short by the end of the file, or the end of
// a PERF_RECORD_AUX flagged TRUNCATED, PARTIAL or COLLISION: the kernel's AUX
// offsets stay contiguous there but the trace is not). The decoders (pt/, etm/)
// read their bytes from here; what the bytes mean is theirs.
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "perfdata/PerfDataReader.h"

namespace auxscope {

// perf's user-page time conversion (perf_event_mmap_page time_shift/mult/zero),
// from AUXTRACE_INFO's Intel PT words or PERF_RECORD_TIME_CONV; the
// counter is the TSC on x86 and the generic timer (CoreSight timestamps) on Arm.
struct PerfClockConv {
    bool valid = false;
    uint64_t shift = 0, mult = 0, zero = 0;
    bool shortCounter = false;  // cap_user_time_short: the TSC is first widened with cycles/mask
    uint64_t cycles = 0, mask = 0;

    uint64_t toPerfTime(uint64_t tsc) const;
    uint64_t toTsc(uint64_t perfTime) const;
};

// The AUX bytes of one ring as one logical stream, made of pieces that point
// into the file (PerfDataReader maps it): opening a session copies nothing.
// AUXTRACE records interleave headers (and other CPUs' buffers) with the data, so
// a range that crosses a piece boundary is stitched into a caller's scratch
// buffer when asked for (view()); a range within one piece is the file's bytes.
// Compressed files' payloads are the only bytes owned here. The stream's bytes
// live as long as the PerfDataReader the source was made from.
class AuxStreamBytes {
public:
    struct Piece {
        uint64_t begin = 0;  // offset in the stream
        std::span<const uint8_t> bytes;
    };
    uint64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const std::vector<Piece>& pieces() const { return pieces_; }
    // [begin, end) contiguous: the piece's bytes when it lies in one, else a copy in `scratch`.
    std::span<const uint8_t> view(uint64_t begin, uint64_t end, std::vector<uint8_t>& scratch) const;
    // The whole stream contiguous (for callers that hand whole runs to a
    // decoder): the file's bytes when there is one piece, else a copy made on
    // the first call and kept.
    const uint8_t* data() const;

    void append(std::span<const uint8_t> bytes);
    void appendOwned(std::vector<uint8_t> bytes);  // a payload that exists only in memory
    void dropBack(uint64_t n);                     // perf's padding, counted twice

private:
    struct Shared {
        std::once_flag once;
        std::vector<uint8_t> whole;
        std::vector<std::vector<uint8_t>> owned;
    };
    std::vector<Piece> pieces_;
    uint64_t size_ = 0;
    std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

// Contiguous AUX bytes of one ring: [begin, end) of AuxStream::bytes.
struct AuxRun {
    uint64_t begin = 0, end = 0;
    uint64_t auxOffset = 0;  // AUX area offset of its first byte
    // Missing AUX data before this run (0 for the first run unless the first buffer
    // does not start the AUX area... which is normal, so only later runs count).
    // 0 also when the amount is unknown: after a TRUNCATED record the bytes the
    // hardware could not write never took AUX offsets.
    uint64_t lostBefore = 0;
    // "4096 AUX bytes missing from the file ...", "AUX buffer cut short ...", "AUX area full ..."
    std::string lostCause;
    // AUX data missing after this run with no trace after it (the last run of a
    // ring whose AUX records announce more than the file holds): told where the run ends.
    uint64_t lostAfter = 0;
    std::string lostAfterCause;
};

// PERF_RECORD_AUX records of one ring with a loss flag.
struct AuxLoss {
    uint64_t truncated = 0, partial = 0, collision = 0;  // records with each flag
    uint64_t splits = 0;                                 // runs started at their ends
    // AUX bytes the AUX records announce and the file does not hold (the
    // reader's PerfAuxArea): missing from the file, not lost by the kernel.
    uint64_t missingBytes = 0, missingGaps = 0;
};

// One AUXTRACE buffer's place in the stream.
struct AuxBufferPlace {
    uint64_t begin = 0, end = 0;  // in AuxStream::bytes
    uint64_t auxOffset = 0;
};

struct AuxStream {
    int cpu = -1;      // -1: a per-thread ring
    int32_t tid = -1;  // the AUXTRACE records' tid (per-thread mode); -1 when CPU-wide
    AuxStreamBytes bytes;
    std::vector<AuxRun> runs;
    size_t buffers = 0;
    std::vector<AuxBufferPlace> places;  // every buffer, in stream order
    AuxLoss auxLoss;
};

// Gathers every ring's stream of `file` (ascending CPU). `syncName` words where
// the trace resumes after a loss ("PSB", "sync point"). Problems worth telling
// (missing AUX data, no AUXTRACE data at all) are appended to `notes`.
std::vector<AuxStream> collectAuxStreams(const PerfDataReader& file, const std::string& syncName,
                                         std::vector<std::string>& notes);

}  // namespace auxscope
