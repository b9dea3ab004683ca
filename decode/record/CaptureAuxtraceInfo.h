// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The PERF_RECORD_AUXTRACE_INFO a capture with an AUX-area event writes, built
// the way perf record builds it for each PMU (the PMU's sysfs files, the AUX
// event's attr and user page, how the capture was set up), so that perf's own
// decoders and auxscope's read the file alike.
#include <linux/perf_event.h>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "AuxEventConfig.h"
#include "Pmu.h"
#include "Result.h"
#include "record/PerfDataWriterCapture.h"

namespace auxscope {

struct CaptureAuxtraceInputs {
    const AuxEventPlan* plan = nullptr;
    const PmuInfo* pmu = nullptr;
    const perf_event_mmap_page* userPage = nullptr;  // the AUX event's (time conversion)
    std::vector<int> cpus;                           // traced CPUs (CoreSight: one block per CPU)
    bool perCpu = true;                              // one ring per CPU (system-wide or CPU list)
    bool contextSwitches = true;                     // attr.context_switch on the tracking event
    std::string filter;                              // the address filter as the user wrote it
    // Where cs_etm/cpuN/{trcidr,mgmt}/ and intel_pt/max_nonturbo_ratio are read.
    std::filesystem::path sysfsRoot = "/sys/bus/event_source/devices";
};

// The block for the plan's PMU. Errors name the sysfs file that could not be read
// (CoreSight needs each CPU's ID registers).
Expected<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> captureAuxtraceInfo(
    const CaptureAuxtraceInputs& in);

// The same for a live session with an AUX event (nullopt without one).
Expected<std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>> captureAuxtraceInfo(
    const CaptureSession& session);

}  // namespace auxscope
