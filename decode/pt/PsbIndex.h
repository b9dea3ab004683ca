// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a CPU's Intel PT trace can be entered: every PSB with the TSC its PSB+
// carries, so a time window maps to the trace segments that cover it and
// segments can be decoded independently (in parallel, on demand). Built by one
// pass of libipt's packet decoder over each run, which also gives the packet
// counts per type and an estimate of the time at the end of the run (last TSC
// advanced by the MTC packets after it).
#include <cstdint>
#include <vector>

#include "PtConfig.h"
#include "PtPacketDump.h"
#include "PtTraceSource.h"

namespace auxscope {

struct PsbEntry {
    uint64_t offset = 0;  // in PtCpuTrace::bytes
    uint64_t tsc = 0;     // of the PSB+'s TSC packet; 0 when the PSB+ had none
};

struct PsbRunIndex {
    std::vector<PsbEntry> psbs;
    uint64_t endTsc = 0;  // estimated TSC at the end of the run (0: no timing seen)
    PtPacketCounts counts;
    uint64_t decodeErrors = 0;
};

struct PsbIndex {
    std::vector<PsbRunIndex> runs;  // one per PtCpuTrace::runs entry

    static PsbIndex build(const PtCpuTrace& trace, const PtConfigOptions& options);
    size_t psbCount() const;
    PtPacketCounts counts() const;
};

}  // namespace auxscope
