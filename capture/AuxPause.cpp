// SPDX-License-Identifier: GPL-3.0-or-later
#include "AuxPause.h"

#include <sys/utsname.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "PerfEvent.h"
#include "Pmu.h"

namespace auxscope {

static_assert(offsetof(perf_event_attr, aux_sample_size) + sizeof(uint32_t) == kAuxActionOffset,
              "aux_action follows aux_sample_size");
static_assert(kAuxActionOffset + sizeof(uint32_t) <= sizeof(perf_event_attr));

Expected<TriggerMode> parseTriggerMode(std::string_view text) {
    if (text == "snapshot") return TriggerMode::Snapshot;
    if (text == "pause") return TriggerMode::Pause;
    return makeError("'" + std::string(text) + "': expected snapshot or pause");
}

const char* triggerModeName(TriggerMode mode) {
    return mode == TriggerMode::Pause ? "pause" : "snapshot";
}

void setAuxAction(perf_event_attr& attr, uint32_t bits) {
    std::memcpy(reinterpret_cast<char*>(&attr) + kAuxActionOffset, &bits, sizeof bits);
}

uint32_t auxAction(const perf_event_attr& attr) {
    uint32_t bits = 0;
    std::memcpy(&bits, reinterpret_cast<const char*>(&attr) + kAuxActionOffset, sizeof bits);
    return bits;
}

Expected<std::string> checkAuxPause(const std::string& kernelRelease,
                                    const std::vector<std::string>& auxPmus) {
    unsigned major = 0, minor = 0;
    if (std::sscanf(kernelRelease.c_str(), "%u.%u", &major, &minor) != 2)
        return makeError("cannot read the kernel's version from '" + kernelRelease + "'");
    if (major < kAuxPauseMinMajor || (major == kAuxPauseMinMajor && minor < kAuxPauseMinMinor))
        return makeError("the kernel (" + kernelRelease +
                         ") predates AUX pause/resume (aux_start_paused, aux_pause, aux_resume: Linux 6.13)");
    if (auxPmus.empty())
        return makeError(
            "no AUX-area trace PMU on this machine (none of intel_pt, cs_etm, arm_spe in "
            "/sys/bus/event_source/devices): there is no AUX trace to pause and resume");
    for (const std::string& p : auxPmus)
        if (p == "intel_pt") return p;
    std::string list;
    for (const std::string& p : auxPmus)
        list += (list.empty() ? "" : ", ") + p;
    return makeError("the AUX-area PMU here (" + list +
                     ") cannot pause and resume: the kernel offers it for intel_pt only "
                     "(PERF_PMU_CAP_AUX_PAUSE)");
}

Expected<std::string> checkAuxPauseHere(const PmuRegistry& pmus) {
    utsname u{};
    if (uname(&u) != 0) return makeError(std::string("uname: ") + std::strerror(errno));
    std::vector<std::string> aux;
    for (const PmuInfo& p : pmus.pmus())
        if (p.isAuxPmu()) aux.push_back(p.name);
    auto pmu = checkAuxPause(u.release, aux);
    if (!pmu) return pmu;
    // The kernel's word: the PMU's event, system-wide on the first CPU, paused.
    const PmuInfo* info = pmus.find(*pmu);
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = info->type;
    attr.disabled = 1;
    attr.exclude_kernel = 1;
    setAuxAction(attr, kAuxStartPaused);
    const int cpu = onlineCpus().empty() ? 0 : onlineCpus().front();
    auto fd = PerfEventFd::open(attr, -1, cpu, -1, *pmu + " opened paused");
    if (!fd) return makeError("the kernel refuses " + *pmu + " with aux_start_paused: " + fd.error().message);
    return pmu;
}

}  // namespace auxscope
