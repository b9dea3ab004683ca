// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a CoreSight trace can be decoded from: the A-sync packets of every
// trace ID in every AUX buffer of a ring, found on open (before any decode), so
// a big buffer is cut into segments that decode in parallel, as Intel PT's are
// cut at PSBs (pt/PsbIndex).
//
// A-sync patterns (OpenCSD's packet processors): ETMv4 and ETE eleven 0x00
// bytes then 0x80; ETMv3 and PTM five 0x00 bytes then 0x80. Longer runs of
// zeros before the 0x80 are the tail of the packet before.
//   - Raw data (one source): the A-sync's first byte is where a decoder starts.
//   - Frame-formatted data (16-byte frames from the buffer's start): each trace
//     ID's bytes are taken apart with etm/FrameDeformatter frame by frame, so
//     every byte keeps the frame it came in. A decoder can only start at a frame
//     (the deformatter needs the frame's ID bytes), so a sync point is the frame
//     holding the A-sync's first byte, and only when a fresh deformatter started
//     at that frame hands the ID the whole A-sync before any other byte of it
//     (bytes of the frame before its first ID byte are dropped by a fresh start).
// A buffer may be cut at a sync point when it holds one trace ID (a per-CPU
// sink, or raw data): a decoder started there misses nothing of the trace after
// it (`cuts`). A buffer several IDs share is cut per ID: one ID's sync point
// lies inside the others' packets, so a decoder that starts there takes only
// that ID (etm/EtmSession decodes a shared ring ID by ID).
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "etm/EtmTraceSource.h"

namespace auxscope::etm {

struct EtmSyncPoint {
    uint64_t offset = 0;  // stream offset a decoder starts at (raw: the A-sync; formatted: its frame)
    uint64_t time = 0;    // perf time of `offset` (EtmCpuTrace::timeAt; 0: unknown)
    bool clean = true;    // formatted: a fresh deformatter at `offset` hands the A-sync over whole
};

struct EtmBufferSyncs {
    uint64_t begin = 0, end = 0;  // the AUX buffer in the ring's stream
    std::map<uint8_t, std::vector<EtmSyncPoint>> byId;
    std::set<uint8_t> ids;  // formatted: every trace ID with bytes in the buffer
    // Where the buffer may be cut (ascending, in (begin, end)): the clean sync points of
    // a buffer with one trace ID.
    std::vector<uint64_t> cuts;
};

struct EtmSyncIndex {
    std::vector<EtmBufferSyncs> buffers;  // one per AuxStream::places entry

    // A-sync patterns found in every buffer, per trace ID.
    std::map<uint8_t, uint64_t> syncsById() const;
    uint64_t cutCount() const;

    static EtmSyncIndex build(const EtmCpuTrace& trace);
    // One buffer of `trace` ([begin, end) of its stream).
    static EtmBufferSyncs buildBuffer(const EtmCpuTrace& trace, uint64_t begin, uint64_t end);
};

// The zero bytes before 0x80 an A-sync of `protocol` has (ETMv4/ETE 11, ETMv3/PTM 5; 0: none).
unsigned asyncZeros(EtmProtocol protocol);

// The same sync points found while the bytes arrive (the live decoder's index,
// built as the drain thread hands it AUX data): bytes are fed in stream order,
// across transfers (a frame or an A-sync split between two is found whole).
// Frame-formatted data: frames lie at stream offsets that are multiples of 16
// (the AUX area's, as the sink writes them); a sync point is the frame holding
// an A-sync's first byte, of any trace ID (a decoder started there waits for
// its other IDs' own A-syncs). Raw data: the A-sync's first byte.
class EtmSyncScanner {
public:
    // `sources`: the ring's trace units (raw: the one). Unknown trace IDs are scanned as ETMv4.
    EtmSyncScanner(std::vector<EtmSourceConfig> sources, EtmInput input);
    ~EtmSyncScanner();
    EtmSyncScanner(const EtmSyncScanner&) = delete;
    EtmSyncScanner& operator=(const EtmSyncScanner&) = delete;

    struct Point {
        uint64_t offset = 0;  // as EtmSyncPoint::offset (formatted: the frame of the A-sync's first byte)
        // Where a decoder must start to get the A-sync whole: `offset` where
        // EtmSyncPoint::clean, else the last frame before it with an ID byte
        // (a fresh deformatter drops bytes before the first ID byte it sees).
        uint64_t entry = 0;
    };
    // `bytes` at stream offset `offset`; appends the sync points they complete
    // (ascending, each once) to `found`. An offset that does not continue the
    // last bytes starts afresh there (a loss). A point may precede one an
    // earlier call gave (an A-sync that began earlier and ended later).
    void feed(uint64_t offset, std::span<const uint8_t> bytes, std::vector<Point>& found);
    void reset();
    EtmInput input() const { return input_; }

private:
    void scan(uint64_t offset, std::span<const uint8_t> bytes, std::vector<Point>& found);
    struct Impl;
    std::unique_ptr<Impl> impl_;
    EtmInput input_;
};

}  // namespace auxscope::etm
