// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Intel PT trace of a perf.data, ready for libipt: per CPU (AUX ring) the
// AUX streams of perfdata/AuxStreams (collectAuxStreams), that is the
// AUXTRACE buffers in AUX order, one logical stream (PtTraceBytes: pieces of
// the mapped file, not copies) split into runs where AUX data is missing (a gap in the AUX offsets, named
// with its size from the reader's accounting of what the AUX records announce, a
// buffer cut short by the end of the file, or the end of a PERF_RECORD_AUX flagged
// TRUNCATED, PARTIAL or COLLISION: the kernel's AUX offsets stay contiguous there
// but the trace is not), plus the machine parameters
// (ptConfigFromPerf) and the TSC <-> perf time conversion.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "Result.h"
#include "perfdata/AuxStreams.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtConfig.h"

namespace auxscope {

// The AUX-generic stream types (perfdata/AuxStreams.h) under the names pt/ has used.
using PtTraceBytes = AuxStreamBytes;
using PtRun = AuxRun;
using PtAuxLoss = AuxLoss;
using PtCpuTrace = AuxStream;
using PtTimeConv = PerfClockConv;

class PtTraceSource {
public:
    // Fails when the file has no Intel PT AUXTRACE_INFO, or its block cannot be read.
    static Expected<PtTraceSource> fromPerfData(const PerfDataReader& file);

    const PtConfigOptions& configOptions() const { return options_; }
    const IntelPtInfo& info() const { return info_; }
    const PtTimeConv& time() const { return time_; }
    const std::vector<PtCpuTrace>& cpus() const { return cpus_; }
    const PtCpuTrace* cpu(int cpu) const;
    // Problems worth telling the user (no time conversion, CPU unknown to libipt, ...).
    const std::vector<std::string>& notes() const { return notes_; }

private:
    PtConfigOptions options_;
    IntelPtInfo info_;
    PtTimeConv time_;
    std::vector<PtCpuTrace> cpus_;
    std::vector<std::string> notes_;
};

}  // namespace auxscope
