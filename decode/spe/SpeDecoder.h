// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Arm SPE records from packets (spe/SpePacket.h) and from a whole perf.data.
//
// A record is the packets between two record ends: END, or a TIMESTAMP (which
// belongs to the record it ends). PAD packets are skipped. Bytes that do not
// parse (a reserved header, a packet cut by the end of a run) are a gap counted
// with its reason; decoding resyncs at the next byte that starts a packet and
// the record being assembled there is dropped (counted: its packets are mixed
// with garbage). A run ending inside a record drops that partial record too.
// Address values follow perf (util/arm-spe-decoder): PC, branch targets: bits
// [55:0], with the top byte set to 0xff for NS EL1/EL2 addresses; data VA: bits
// [55:0] (the tag byte in dataVaTag), with the top byte set to 0xff when bits
// [55:48] are all ones; data PA: bits [55:0].
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "Result.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"
#include "spe/SpeRecord.h"

namespace auxscope::spe {

// Gap reasons (the keys of SpeDecodeStats::gaps).
inline constexpr const char* kGapReservedHeader = "reserved header";
inline constexpr const char* kGapTruncatedPacket = "packet cut by the end of the buffer";
inline constexpr const char* kGapPartialRecord = "partial record dropped";
inline constexpr const char* kGapLostAux = "AUX data lost";  // bytes the AUX records say are missing

struct SpeDecodeStats {
    uint64_t bytes = 0, packets = 0, records = 0, gapBytes = 0;
    std::vector<std::pair<std::string, uint64_t>> gaps;  // reason -> bytes
    // Added beyond the contract: partial records dropped (cut by a run's end or by bad bytes).
    uint64_t droppedRecords = 0;
    void addGap(const std::string& reason, uint64_t n);
    void add(const SpeDecodeStats& other);
};

struct SpeRecords {
    std::vector<SpeRecord> records;  // by time, every CPU
    SpeDecodeStats stats;
    std::vector<std::string> notes;
    // Added beyond the contract: each traced CPU's MIDR (AUXTRACE_INFO version 2,
    // else the file's HEADER_CPUID); dataSourceName() needs it.
    std::map<int, uint64_t> midr;
    uint64_t midrOf(int cpu) const;
    // Added beyond the contract: every AUXTRACE buffer of every ring, in stream
    // order per ring, with the records that ended in it.
    struct Buffer {
        int cpu = -1;
        int32_t tid = -1;             // per-thread rings
        uint64_t begin = 0, end = 0;  // offsets in the ring's stream
        uint64_t auxOffset = 0;
        uint64_t records = 0;
        uint64_t firstTime = 0, lastTime = 0;  // of its records with a time (0: none)
    };
    std::vector<Buffer> buffers;
};

Expected<SpeRecords> decodeSpeRecords(const PerfDataReader& file, const Sideband& sideband);

// "L1D", "L2", "peer core", "DRAM", ... by the CPU's encoding (Neoverse and the
// cores perf lists share one; AmpereOne has its own), else "0x…".
std::string dataSourceName(uint16_t source, uint64_t midr);
// "L1D-access L1D-refill TLB-access ..." (EventBit order; unknown bits "bitN").
std::string eventNames(uint64_t events);

// Decodes one contiguous run of SPE bytes into records (cpu, timestamps and the
// context filled; time, pid and tid left for the caller). Appends to `out`;
// counts to `stats`. No allocation per packet. With `ends`, also appends each
// record's end: `base` + the offset just past its last packet.
void decodeSpeRun(std::span<const uint8_t> bytes, int cpu, std::vector<SpeRecord>& out, SpeDecodeStats& stats,
                  std::vector<uint64_t>* ends = nullptr, uint64_t base = 0);

// Fills the fields derived from opClass/opPayload (isLoad, isStore, ...).
void deriveOpFlags(SpeRecord& r);

}  // namespace auxscope::spe
