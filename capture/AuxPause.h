// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// AUX pause/resume (Linux 6.13, "perf/core: Add aux_pause, aux_resume,
// aux_start_paused"): an AUX-area event opened with aux_start_paused traces
// nothing until an event of its group with aux_resume overflows, and stops again
// when one with aux_pause does. With a trigger's uprobe resuming and its
// uretprobe pausing, the AUX area holds the trigger's calls and nothing else
// (--trigger-mode pause), instead of everything until a snapshot (snapshot).
//
// The three bits share a 32-bit word of perf_event_attr (aux_action) that older
// headers, Debian 12's among them, call __reserved_3: set here by offset. A
// kernel before 6.13 refuses a non-zero word (EINVAL); one whose PMU lacks
// PERF_PMU_CAP_AUX_PAUSE refuses the bits (EOPNOTSUPP). That capability is not
// in sysfs: as of 6.13 the kernel gives it to intel_pt alone. The check names
// which of these stands in the way, and tries the PMU's event for real.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope {

class PmuRegistry;

enum class TriggerMode {
    Snapshot,  // a firing takes a snapshot of the AUX areas (and/or the sideband)
    Pause,     // the AUX trace runs only inside the triggers' calls (entry resumes, return pauses)
};
Expected<TriggerMode> parseTriggerMode(std::string_view text);
const char* triggerModeName(TriggerMode mode);

// perf_event_attr.aux_action: after aux_sample_size (PERF_ATTR_SIZE_VER6 ends there + 4).
constexpr size_t kAuxActionOffset = 116;
constexpr uint32_t kAuxStartPaused = 1u << 0;
constexpr uint32_t kAuxPause = 1u << 1;
constexpr uint32_t kAuxResume = 1u << 2;
constexpr unsigned kAuxPauseMinMajor = 6, kAuxPauseMinMinor = 13;

void setAuxAction(perf_event_attr& attr, uint32_t bits);
uint32_t auxAction(const perf_event_attr& attr);

// Pure: whether pause mode can work given the kernel's release (uname -r) and
// the AUX-area PMUs present; the PMU to use, or the reason it cannot.
Expected<std::string> checkAuxPause(const std::string& kernelRelease,
                                    const std::vector<std::string>& auxPmus);
// This machine: its kernel and PMUs, then the PMU's event opened paused for real
// (and closed) so that the kernel has the last word.
Expected<std::string> checkAuxPauseHere(const PmuRegistry& pmus);

}  // namespace auxscope
