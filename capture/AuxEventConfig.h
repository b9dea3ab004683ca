// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The perf_event_attr of an AUX-area trace event (intel_pt, intel_bts, cs_etm, arm_spe*), set up
// the way `perf record -e PMU/terms/mods` sets it up, checked against what the PMU publishes in
// sysfs (format/*, caps/*, nr_addr_filters) before the kernel sees it, so that a refusal names
// the term and the file that decided it instead of a bare EINVAL/EOPNOTSUPP.
//
//   auto plan = planAuxEvent(pmus, "intel_pt/cyc,cyc_thresh=2/u", {.filter = "filter main @ /bin/ls"});
//   open plan->attr per CPU, mmap its AUX ring (plan->auxPages, read-only when plan->snapshot),
//   then ioctl(fd, PERF_EVENT_IOC_SET_FILTER, plan->addrFilter.c_str()) when it is not empty.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Pmu.h"
#include "Result.h"

namespace auxscope {

enum class AuxPmuKind { IntelPt, IntelBts, CsEtm, ArmSpe };

struct AuxEventOptions {
    // Flight-recorder mode (perf record -S): the AUX ring is mapped read-only and overwritten;
    // Intel PT then gets no aux_watermark.
    bool snapshot = false;
    // One event per CPU (system-wide or a CPU list, what auxscope does today) rather than per
    // thread. perf adds PERF_SAMPLE_CPU and the PMUs' per-CPU defaults only in that case.
    bool perCpu = true;
    // Privilege levels traced when the event string has no u/k/h modifier.
    bool traceUser = true;
    bool traceKernel = true;
    // AUX ring size per CPU in pages; 0: perf's default (4 MiB privileged, 128 KiB otherwise).
    size_t auxPages = 0;
    bool privileged = true;  // CAP_PERFMON/root or perf_event_paranoid < 0 (perf's "privileged")
    size_t pageSize = 0;     // 0: the system's
    // perf's --filter text for the AUX event (address filters); empty: none.
    std::string filter;
    // Where PMUs live (cs_etm sinks/ and cpuN/trcidr/ are read from here) and kernel symbols.
    std::filesystem::path sysfsRoot = "/sys/bus/event_source/devices";
    std::string kallsyms = "/proc/kallsyms";
};

struct AuxEventPlan {
    std::string pmuName;
    AuxPmuKind kind = AuxPmuKind::IntelPt;
    std::string eventName;  // the event string as given
    perf_event_attr attr{};
    // What perf's PMU default contributed (Intel PT: "tsc,mtc,mtc_period=3,psb_period=3,pt,branch"
    // subject to caps; others: the per-CPU "if unset" terms). Empty when none applied.
    std::string defaultTerms;
    uint64_t defaultConfig = 0;
    // The terms the user gave, with their values (flags are 1).
    std::map<std::string, uint64_t> userTerms;
    // For PERF_EVENT_IOC_SET_FILTER after opening; empty: no address filter.
    std::string addrFilter;
    size_t auxPages = 0;  // AUX ring pages per CPU (a power of two)
    size_t auxBytes = 0;
    bool snapshot = false;
    // Human-readable remarks: defaults applied, values adjusted, what the kernel may still refuse.
    std::vector<std::string> notes;
};

// Builds the AUX event for `eventSpec` (one event in perf syntax: "intel_pt//", "cs_etm/@tmc_etr0/u").
Expected<AuxEventPlan> planAuxEvent(const PmuRegistry& pmus, const std::string& eventSpec,
                                    const AuxEventOptions& options = {});

// The terms of `pmu`, their bit fields and what its caps allow; for --list-events and tooltips.
std::string auxEventHelp(const PmuInfo& pmu);

// perf's default term string for `pmu` given its caps ("" for PMUs without one), e.g.
// "tsc,mtc,mtc_period=3,psb_period=3,pt,branch" on Skylake.
std::string auxDefaultTerms(const PmuInfo& pmu);

// GUI-style toggles; unset optionals leave the PMU's default alone. Turned into the same event
// string the command line takes, so both go through planAuxEvent.
struct AuxToggles {
    std::string pmu = "intel_pt";
    bool user = true;
    bool kernel = true;
    std::optional<bool> branch;
    std::optional<bool> tsc;
    std::optional<bool> mtc;
    std::optional<unsigned> mtcPeriod;
    std::optional<bool> cyc;
    std::optional<unsigned> cycThresh;
    std::optional<bool> noretcomp;
    std::optional<unsigned> psbPeriod;
    std::optional<bool> ptwrite;
    // Further terms in the order given, as perf spells them ("load_filter",
    // "min_latency=20", "event_filter=0x8"): the other PMUs' options (Arm SPE).
    std::vector<std::string> terms;
    std::string filter;  // address filters (perf --filter syntax)
};

// "intel_pt/cyc,cyc_thresh=2,noretcomp/u"; fails when neither user nor kernel is traced.
Expected<std::string> auxEventStringFromToggles(const AuxToggles& toggles);

// auxEventStringFromToggles + planAuxEvent with toggles.filter as the filter.
Expected<AuxEventPlan> planAuxEventFromToggles(const PmuRegistry& pmus, const AuxToggles& toggles,
                                               AuxEventOptions options = {});

}  // namespace auxscope
