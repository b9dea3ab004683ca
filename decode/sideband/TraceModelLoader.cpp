// SPDX-License-Identifier: GPL-3.0-or-later
#include "sideband/TraceModelLoader.h"

#include <map>

#include "perfdata/CaptureStatsFeature.h"

namespace auxscope {

Expected<TraceModelLoad> loadTraceModel(const PerfDataReader& file, TraceModel& model) {
    TraceModelLoad load;
    model.readHeaders(file);
    auto walked = file.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type >= perfdata::kRecordHeaderAttr) return true;  // perf's own records
        ++load.records;
        if (rec.cpu < 0) ++load.withoutCpu;
        model.addRecord(int(rec.cpu), rec.parsed);
        return true;
    });
    load.notes = model.notes();
    struct Prev {
        uint64_t time = 0, bytes = 0;
    };
    std::map<int32_t, Prev> prev;
    for (const StatsSample& s : model.statsHistory()) {
        model.addCounter("data ring fill %", s.cpu, "%", s.perfTime, s.fillPeakPercent);
        model.addCounter("kernel lost (PERF_FORMAT_LOST)", s.cpu, "records", s.perfTime,
                         double(s.kernelLost));
        if (s.hasAux) {
            model.addCounter("AUX fill %", s.cpu, "%", s.perfTime, s.auxFillPercent);
            model.addCounter("AUX loss (TRUNCATED+PARTIAL+COLLISION)", s.cpu, "records", s.perfTime,
                             double(s.auxTruncated + s.auxPartial + s.auxCollision));
        }
        Prev& p = prev[s.cpu];
        if (p.time && s.perfTime > p.time)
            model.addCounter(
                "throughput MiB/s", s.cpu, "MiB/s", s.perfTime,
                double(s.bytes - p.bytes) / (double(s.perfTime - p.time) / 1e9) / (1024.0 * 1024.0));
        p = {s.perfTime, s.bytes};
        ++load.statsSamples;
    }
    model.finish();
    if (!walked) return walked.error();
    return load;
}

}  // namespace auxscope
