// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a CPU's Intel PT trace can be entered: every PSB with the TSC its PSB+
// carries, so a time window maps to the trace segments that cover it and
// segments can be decoded independently (in parallel, on demand).
//
// Opening a large trace must not cost a decode of every packet: PSBs are found
// by a byte search for their 16-byte pattern (which no other packet sequence
// produces in practice: it is what libipt's own sync searches for), piece by
// piece of the AUX stream in parallel, and only the few packets of the PSB+
// after each PSB go through libipt's packet decoder, for its TSC. The end time
// of a run is estimated from its last PSB on (last TSC advanced by the MTC
// packets after it). Packet counts per type need every packet: they are
// counted on first request only.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "pt/PtConfig.h"
#include "pt/PtPacketDump.h"
#include "pt/PtTraceSource.h"

namespace auxscope {

struct PsbEntry {
    uint64_t offset = 0;  // in PtCpuTrace::bytes
    uint64_t tsc = 0;     // of the PSB+'s TSC packet; 0 when the PSB+ had none
};

struct PsbRunIndex {
    std::vector<PsbEntry> psbs;
    uint64_t endTsc = 0;  // estimated TSC at the end of the run (0: no timing seen)
};

// Runs task(0) .. task(n - 1), possibly on several threads, and returns when all
// have finished. PtSession passes its worker pool; a default runs them in turn.
using ParallelFor = std::function<void(size_t n, const std::function<void(size_t)>& task)>;

struct PsbIndex {
    std::vector<PsbRunIndex> runs;  // one per PtCpuTrace::runs entry

    // `trace` must outlive the index (counts() reads it later).
    static PsbIndex build(const PtCpuTrace& trace, const PtConfigOptions& options,
                          const ParallelFor& parallel = {});
    size_t psbCount() const;
    // Per-type packet counts over every run: one pass of libipt's packet decoder
    // over the whole trace, on the first call (thread-safe), kept afterwards.
    PtPacketCounts counts() const;
    uint64_t packetDecodeErrors() const;  // resyncs that pass needed

private:
    struct Lazy {
        std::once_flag once;
        PtPacketCounts counts;
        uint64_t errors = 0;
    };
    void countPackets() const;
    const PtCpuTrace* trace_ = nullptr;
    PtConfigOptions options_;
    std::shared_ptr<Lazy> lazy_ = std::make_shared<Lazy>();
};

// Offsets (relative to `bytes`) of the PSBs starting in [ownFrom, ownTo) of
// `bytes`, in order. Exposed for tests.
void findPsbs(std::span<const uint8_t> bytes, size_t ownFrom, size_t ownTo, std::vector<uint64_t>& out);

}  // namespace auxscope
