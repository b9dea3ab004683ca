// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Exports a TraceModel for other tools:
//  - Perfetto (protobuf TrackEvent): one track per CPU showing which thread ran,
//    one track per thread with its run intervals and samples, per-CPU counter
//    tracks for lost records/samples and for any counter series in the model.
//    Opens in ui.perfetto.dev.
//  - CSV: the same events, one per row, for scripts.
#include <string>

#include "Result.h"
#include "TraceModel.h"

namespace auxscope {

struct ExportOptions {
    bool includeSamples = true;
};

Expected<void> exportPerfetto(const TraceModel& model, const std::string& path,
                              const ExportOptions& options = {});
Expected<void> exportCsv(const TraceModel& model, const std::string& path, const ExportOptions& options = {});

// Perfetto track uuids, stable so that tests and other tools can find tracks.
uint64_t perfettoProcessTrack(int32_t pid);
uint64_t perfettoThreadTrack(int32_t tid);
uint64_t perfettoCpuTrack(int cpu);

}  // namespace auxscope
