// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Turns perf-style event strings into perf_event_attr:
//   "cpu-clock", "context-switches:u"                  symbolic software/hardware events
//   "raw_syscalls:sys_enter", "raw_syscalls:*"         tracepoints (globs expand to several events)
//   "intel_pt/cyc,mtc_period=3/u", "software/config=0/" PMU with format terms and modifiers
// A comma-separated list (commas inside /.../ belong to the PMU terms) gives several events.
#include <linux/perf_event.h>

#include <string>
#include <vector>

#include "Pmu.h"
#include "Result.h"

namespace auxscope {

struct EventDesc {
    std::string name;  // as the user wrote it, or the expanded tracepoint name
    perf_event_attr attr{};
    bool isTracepoint = false;
    bool isAux = false;  // an AUX-area PMU (intel_pt, cs_etm, arm_spe, intel_bts)
};

struct EventDefaults {
    uint64_t sampleFreq = 4000;  // Hz, for counting events without an explicit period/freq
};

class EventParser {
public:
    explicit EventParser(const PmuRegistry& pmus, EventDefaults defaults = {})
        : pmus_(pmus), defaults_(defaults) {}

    // Parses one -e argument (which may hold a comma-separated list).
    Expected<std::vector<EventDesc>> parse(const std::string& spec) const;

    // Splits at commas that are not inside a /.../ term list.
    static std::vector<std::string> splitList(const std::string& spec);

private:
    Expected<std::vector<EventDesc>> parseOne(const std::string& spec) const;
    Expected<EventDesc> parsePmuForm(const std::string& spec) const;
    Expected<void> applyModifiers(const std::string& mods, const std::string& spec,
                                  perf_event_attr& attr) const;
    void applySamplingDefaults(EventDesc& ev, bool explicitPeriod) const;

    const PmuRegistry& pmus_;
    EventDefaults defaults_;
};

}  // namespace auxscope
