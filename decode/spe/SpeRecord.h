// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One Arm SPE sample record, decoder-neutral: what the packets between two
// record ends (END or TIMESTAMP) say about one sampled operation. spe/ decodes
// them (SpeDecoder); the synthesizer (tools/spesynth) writes them; views and
// exporters read them. Fields a record did not carry keep their `has*` flag
// false (and value 0). Layouts follow the Arm ARM (SPE chapter) and perf's
// util/arm-spe-decoder.
#include <cstdint>

namespace auxscope::spe {

// OP-TYPE packet class (header index): what kind of operation was sampled.
enum class OpClass : uint8_t { Other = 0, LoadStore = 1, Branch = 2, None = 0xff };

// Bits of the EVENTS packet payload (Arm ARM PMSEVFR_EL1 numbering).
enum EventBit : uint64_t {
    kEvGenerated = 1ull << 0,      // generated an exception
    kEvRetired = 1ull << 1,        // architecturally retired
    kEvL1dAccess = 1ull << 2,      // level 1 data cache access
    kEvL1dRefill = 1ull << 3,      // level 1 data cache refill (miss)
    kEvTlbAccess = 1ull << 4,      // TLB access
    kEvTlbWalk = 1ull << 5,        // TLB walk (miss)
    kEvNotTaken = 1ull << 6,       // conditional, not taken
    kEvMispredicted = 1ull << 7,   // branch mispredicted
    kEvLlcAccess = 1ull << 8,      // last level cache access
    kEvLlcMiss = 1ull << 9,        // last level cache miss
    kEvRemoteAccess = 1ull << 10,  // access to another socket
    kEvAlignment = 1ull << 11,     // misaligned access
    kEvTransactional = 1ull << 16,
    kEvPartialPredicate = 1ull << 17,  // SVE partial predicate
    kEvEmptyPredicate = 1ull << 18,    // SVE empty predicate
};

struct SpeRecord {
    // Times: the TIMESTAMP packet's counter value, and that converted to perf
    // time (ns) through the file's TIME_CONV; 0 when the record has none.
    uint64_t timestamp = 0;
    uint64_t time = 0;
    // Who: the CPU whose AUX buffer held it; the thread from its CONTEXT
    // packet (CONTEXTIDR holds the pid... on Linux the tid) or, without one,
    // from the switch sideband at `time`; -1 when unknown.
    int cpu = -1;
    int32_t pid = -1, tid = -1;
    uint32_t context = 0;      // CONTEXT packet payload
    uint8_t contextIndex = 0;  // 0: CONTEXTIDR_EL1, 1: CONTEXTIDR_EL2
    bool hasContext = false;

    // What: OP-TYPE class and its payload byte (subclass bits as the Arm ARM lays them out).
    OpClass opClass = OpClass::None;
    uint8_t opPayload = 0;
    // Convenience, derived from opClass/opPayload.
    bool isLoad = false, isStore = false, isBranch = false, isSve = false, isAtomic = false;
    bool isConditional = false;  // a conditional branch

    // ADDRESS packets. pc (index 0) with its exception level and NS bit.
    uint64_t pc = 0;
    uint8_t pcEl = 0;
    bool pcNs = false, hasPc = false;
    uint64_t branchTarget = 0;  // index 1
    bool hasBranchTarget = false;
    uint64_t prevBranchTarget = 0;  // index 4 (SPEv1p2)
    bool hasPrevBranchTarget = false;
    uint64_t dataVa = 0;  // index 2 (tag bits [63:56] removed; dataVaTag keeps them)
    uint8_t dataVaTag = 0;
    bool hasDataVa = false;
    uint64_t dataPa = 0;  // index 3, with NS, CH (checked access) and PAT
    bool dataPaNs = false, dataPaCh = false;
    uint8_t dataPaPat = 0;
    bool hasDataPa = false;

    // COUNTER packets (cycles): total (index 0), issue (1), translation (2).
    uint16_t totalLatency = 0, issueLatency = 0, translationLatency = 0;
    bool hasTotalLatency = false, hasIssueLatency = false, hasTranslationLatency = false;

    // EVENTS payload (EventBit), DATA-SOURCE payload (its meaning depends on the
    // CPU's MIDR: see dataSourceName()).
    uint64_t events = 0;
    bool hasEvents = false;
    uint16_t dataSource = 0;
    bool hasDataSource = false;
};

}  // namespace auxscope::spe
