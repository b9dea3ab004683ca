// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fills a TraceModel from a perf.data file. The CLI (`auxscope export`) and the
// GUI (File > Export) both go through this.
#include "perfdata/PerfDataReader.h"
#include "sideband/TraceModel.h"

#include <string>
#include <vector>

namespace auxscope {

struct TraceModelLoad {
    uint64_t records = 0;       // kernel records fed to the model
    uint64_t withoutCpu = 0;    // records that name no CPU (no sample_id CPU field)
    uint64_t statsSamples = 0;  // auxscope capture statistics turned into counters
    std::vector<std::string> notes;
};

// Reads the file's headers into `model` (TraceModel::readHeaders: sched_switch
// layouts, CPUs, capture statistics; what it could not read is in `notes`), then
// feeds every kernel record of `file` to it and closes it with finish().
// A file auxscope captured also carries each CPU's ring fill and loss over time:
// they become the counters "data ring fill %", "throughput MiB/s" and
// "kernel lost (PERF_FORMAT_LOST)".
// Damage in the file ends the walk early with the reader's error; what was read
// before it stays in the model.
Expected<TraceModelLoad> loadTraceModel(const PerfDataReader& file, TraceModel& model);

}  // namespace auxscope
