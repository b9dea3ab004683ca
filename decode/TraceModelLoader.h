// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fills a TraceModel from a perf.data file. The CLI (`auxscope export`) and the
// GUI (File > Export) both go through this.
#include "PerfDataReader.h"
#include "TraceModel.h"

namespace auxscope {

struct TraceModelLoad {
    uint64_t records = 0;     // kernel records fed to the model
    uint64_t withoutCpu = 0;  // records that name no CPU (no sample_id CPU field)
};

// Feeds every kernel record of `file` to `model` and closes it with finish().
// Damage in the file ends the walk early with the reader's error; what was read
// before it stays in the model.
Expected<TraceModelLoad> loadTraceModel(const PerfDataReader& file, TraceModel& model);

}  // namespace auxscope
