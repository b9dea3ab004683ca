// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtTraceSource.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataFormat.h"

namespace auxscope {

const PtCpuTrace* PtTraceSource::cpu(int cpu) const {
    for (const PtCpuTrace& c : cpus_)
        if (c.cpu == cpu) return &c;
    return nullptr;
}

Expected<PtTraceSource> PtTraceSource::fromPerfData(const PerfDataReader& file) {
    PtTraceSource source;
    const PerfAuxtraceInfo* block = nullptr;
    for (const PerfAuxtraceInfo& i : file.summary().auxtraceInfo)
        if (i.type == auxtrace::kTypeIntelPt) block = &i;
    if (!block)
        return makeError(file.path() + ": no Intel PT AUXTRACE_INFO record (not an intel_pt capture)");
    auto info = decodeIntelPtInfo(block->priv);
    if (!info)
        return makeError(file.path() + ": offset " + std::to_string(block->fileOffset) +
                         ": Intel PT AUXTRACE_INFO: " + info.error().message);
    source.info_ = *info;
    uint64_t attrConfig = 0;
    bool haveAttr = false;
    for (const PerfAttr& attr : file.attrs())
        if (attr.attr.type == info->pmuType) attrConfig = attr.attr.config, haveAttr = true;
    if (!haveAttr) source.notes_.push_back("no intel_pt event among the attrs: MTC period unknown");
    std::string cpuid = file.features().cpuId.value_or("");
    source.options_ = ptConfigFromPerf(*info, attrConfig, cpuid);
    if (!source.options_.cpu)
        source.notes_.push_back("CPU identity unknown (HEADER_CPUID '" + cpuid +
                                "'): decoding without errata workarounds");

    // The AUX event's own user page is the better source; TIME_CONV is the same
    // data from the tracking event's page.
    if (info->capUserTimeZero && info->timeMult && info->timeShift >= 64) {
        // Only a damaged or hostile file has one (the kernel's is below 32).
        source.notes_.push_back("offset " + std::to_string(block->fileOffset) +
                                ": Intel PT AUXTRACE_INFO: time_shift " + std::to_string(info->timeShift) +
                                " is not below 64: no TSC conversion, times are raw TSC");
    } else if (info->capUserTimeZero && info->timeMult) {
        source.time_ = {true, info->timeShift, info->timeMult, info->timeZero};
    } else if (const auto& tc = file.summary().timeConv; tc && tc->timeMult) {
        source.time_ = {true, tc->timeShift, tc->timeMult, tc->timeZero};
        if (tc->hasCycles && tc->capUserTimeShort)
            source.time_.shortCounter = true, source.time_.cycles = tc->timeCycles,
            source.time_.mask = tc->timeMask;
    } else {
        source.notes_.push_back("no TSC conversion (cap_user_time_zero unset): times are raw TSC");
    }

    source.cpus_ = collectAuxStreams(file, "PSB", source.notes_);
    return source;
}

}  // namespace auxscope
