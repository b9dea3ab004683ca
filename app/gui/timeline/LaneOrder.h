// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which lanes a timeline shows and in what order, from its data and its lane
// state (TimelineLaneState): the pinned lanes first (in the order pinned),
// then the CPUs, the capture-health group, and the processes (sorted,
// filtered; a collapsed one shows only its header) with their threads. A
// thread is one entry: its lane (runs and samples, or its title) and, when it
// has spans, its flame chart. No geometry beyond the spacing between groups:
// TrackLayout places the entries as tracks. TimelineState keeps the order of
// its data and lane state (the lane bar's counts read it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gui/timeline/TimelineLaneState.h"
#include "spans/TimelineData.h"

namespace auxscope {

struct LaneEntry {
    static constexpr size_t kNoThread = SIZE_MAX;
    enum Kind { Cpu, Thread, ProcessHeader, HealthHeader, Health, Space } kind = Space;
    int cpu = -1;               // Cpu, Health
    size_t thread = kNoThread;  // Thread: index into data.threads (kNoThread: a thread with no spans)
    long lane = -1;             // Thread: index into data.lanes->threads (-1: none)
    int32_t pid = -1;           // ProcessHeader
    long process = -1;          // ProcessHeader: index into data.lanes->processes (-1: none)
    int space = 0;              // Space: pixels between groups
    bool pinned = false;        // in the pinned section on top
};

struct LaneOrder {
    std::vector<LaneEntry> entries;  // the pinned ones first
    int threadsShown = 0, threadsTotal = 0;
};

LaneOrder arrangeLanes(const TimelineData& data, const TimelineLaneState& state);

}  // namespace auxscope
