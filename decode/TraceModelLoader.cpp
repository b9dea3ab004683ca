// SPDX-License-Identifier: GPL-3.0-or-later
#include "TraceModelLoader.h"

namespace auxscope {

Expected<TraceModelLoad> loadTraceModel(const PerfDataReader& file, TraceModel& model) {
    TraceModelLoad load;
    auto walked = file.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type >= perfdata::kRecordHeaderAttr) return true;  // perf's own records
        ++load.records;
        if (rec.cpu < 0) ++load.withoutCpu;
        model.addRecord(int(rec.cpu), rec.parsed);
        return true;
    });
    model.finish();
    if (!walked) return walked.error();
    return load;
}

}  // namespace auxscope
