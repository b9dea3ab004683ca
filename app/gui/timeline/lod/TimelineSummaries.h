// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything a timeline summarizes once per data (on a worker thread when
// large): each thread's SpanLod and each CPU lane's CpuLod, with what building
// them took (for benchmarks).
#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "gui/timeline/lod/CpuLod.h"
#include "gui/timeline/lod/SpanLod.h"
#include "spans/TimelineData.h"

namespace auxscope {

struct TimelineSummaryStats {
    double threadMs = 0, cpuMs = 0;
    size_t threadBytes = 0, cpuBytes = 0;
    size_t spans = 0, cpuSlices = 0;
};

struct TimelineSummaries {
    std::vector<std::unique_ptr<SpanLod>> threads;  // per data.threads
    std::map<int, std::unique_ptr<CpuLod>> cpus;    // per data.cpus
    TimelineSummaryStats stats;
};

// The summaries of `data`, once per store, on a few threads when there is much to read.
TimelineSummaries buildTimelineSummaries(const TimelineData& data);

}  // namespace auxscope
