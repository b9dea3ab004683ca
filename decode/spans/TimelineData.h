// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a timeline draws, decoder- and GUI-independent: per CPU, which thread ran
// when (from the switch sideband); per thread, the call-stack spans decoded for
// a window of time; and the names of the functions they refer to. A file's
// decode on demand (a window at a time, as the view zooms and pans) and a live
// capture's bounded-rate decode of the newest trace both produce one of these;
// the Qt view (app/TimelineView) only reads it. Immutable once published: the
// producer builds a new one and hands it over as a shared_ptr<const>.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spans/FunctionTable.h"
#include "spans/SidebandLanes.h"
#include "spans/SpanStore.h"

namespace auxscope {

struct TimelineData {
    uint64_t begin = 0, end = 0;  // the whole recording (or, live, what is kept of it), perf clock ns

    // Which thread ran on a CPU in [start, end): tid 0 is idle, -1 unknown.
    struct CpuSlice {
        uint64_t start = 0, end = 0;
        int32_t pid = -1, tid = -1;
    };
    std::map<int, std::vector<CpuSlice>> cpus;  // by CPU, slices by start, not overlapping

    struct Thread {
        int32_t pid = -1, tid = -1;
        std::string name;  // COMM
        SpanStore spans;   // sorted by start; gaps are spans with a reason
    };
    std::vector<Thread> threads;  // by pid, then tid

    // The window the spans were decoded for ([0, 0): none yet): outside it the
    // flame chart has nothing to show, which is not the same as a gap.
    uint64_t decodedBegin = 0, decodedEnd = 0;

    // Names of Span::function ids; keeps whatever owns the table alive.
    std::shared_ptr<const FunctionTable> functions;

    std::vector<std::string> notes;  // shown beside the view: "live: newest 1 MB per CPU decoded every 0.5 s"

    // COMM of the threads the CPU lanes name (tid -> name), including threads
    // without spans; the view falls back to `threads`, then to the tid.
    std::map<int32_t, std::string> threadNames;

    // What the sideband says without a decoder (spans/SidebandLanes.h): per
    // thread its runs and samples, grouped by process, and every loss per CPU;
    // shared by every window's data of one file. Null: CPU lanes and spans only.
    std::shared_ptr<const SidebandLanes> lanes;
};

class Sideband;

// Builders for producers (Qt-free); for the sideband lanes see
// buildSidebandLanes() and setTimelineLanes(). The recording's extent and, per CPU, the
// slices of the sideband's switch timeline (pids resolved through the
// sideband), with the names of every thread they mention.
void setTimelineCpus(TimelineData& data, const Sideband& sideband);
// Adds a thread (pid, tid and COMM from the sideband) per store, and an empty
// one per tid of `alsoTids` not among them (a thread seen in an earlier
// window keeps its place), then sorts the threads by pid, then tid.
void addTimelineThreads(TimelineData& data, std::map<int32_t, SpanStore> threads, const Sideband& sideband,
                        const std::vector<int32_t>& alsoTids = {});

}  // namespace auxscope
