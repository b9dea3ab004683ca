// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/export/ writes what was captured and decoded for other tools
// (Perfetto, CSV). It includes samples/, images/, spans/, sideband/ and
// perfdata/; no trace decoder.
//
// Exports a TraceModel for other tools:
//  - Perfetto (protobuf TrackEvent): one track per CPU showing which thread ran,
//    one track per thread with its run intervals and samples, per-CPU counter
//    tracks for lost records/samples and for any counter series in the model.
//    Opens in ui.perfetto.dev.
//    With decoded spans (Intel PT), each thread's track carries its call stack
//    as nested slices (function name; instructions and depth as args) and its
//    gaps as "[gap: REASON]" slices, as magic-trace draws them; that thread's
//    run intervals then move to a child track, since they do not nest with
//    frames that outlive a context switch.
//    With a sampled profile (samples/SampleProfile: perf record -g, ...), the
//    samples are perf samples with their call stacks (export/PerfettoSampleWriter:
//    a "callstacks" track per thread, a flame graph of a selected area) instead
//    of bare instants, and each time a thread spent switched out is an
//    "off-CPU" slice on an "off CPU" track under the thread's, with the
//    function it blocked in and its stack as args.
//  - CSV: the same events, one per row, for scripts. With a sampled profile a
//    tenth column, stack, holds each sample's stack folded (outermost function
//    first, ';' between: flamegraph.pl's input less the count), and each
//    off-CPU stretch is a row of its own.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "Result.h"
#include "sideband/TraceModel.h"
#include "spans/FunctionTable.h"
#include "spans/SpanStore.h"

namespace auxscope {

class SampleProfile;
namespace spe {
struct SpeRecord;
}

// Arm SPE records to export beside the model (decode/spe decodes them), with
// the names the exporters print; read in place. Each name function may be
// empty (then the field is left empty).
struct ExportSpe {
    const std::vector<spe::SpeRecord>* records = nullptr;          // by time
    std::function<std::string(const spe::SpeRecord&)> function;    // the PC's function
    std::function<std::string(const spe::SpeRecord&)> dataSymbol;  // the data address as symbol+offset
    std::function<std::string(const spe::SpeRecord&)> source;      // the data source's name
    std::function<std::string(const spe::SpeRecord&)> events;      // the events' names
};
// "load", "store", "branch", "SVE load", "atomic store", "other", ...: what an SPE record sampled.
std::string speOperationName(const spe::SpeRecord& record);

// Decoded call-stack spans to export beside the model. Read in place: the
// exporters stream them to the file without copying.
struct ExportSpans {
    const std::map<int32_t, SpanStore>* threads = nullptr;
    const FunctionTable* functions = nullptr;
    // Process of a thread the model does not know (e.g. from the decoder's sideband).
    std::function<int32_t(int32_t tid)> pidOf;
    uint64_t spanCount() const;
};

struct ExportOptions {
    bool includeSamples = true;
    const ExportSpans* spans = nullptr;  // none when null
    // The file's sampled profile (SampleProfile::load over the same file):
    // its samples, with their stacks, replace the model's bare samples, and
    // its off-CPU stretches are exported too. Read in place. None when null:
    // the export is then what it was before stacks existed.
    const SampleProfile* samples = nullptr;
    // Arm SPE records: in Perfetto an instant per record on an "SPE" track under
    // its thread's, every field as an arg; in CSV an "spe" row per record
    // (name = the operation, value = total latency in cycles, detail = function).
    // A record without a timestamp is shown at the time of the record before
    // it on its CPU; a range leaves such records out.
    const ExportSpe* spe = nullptr;
    // Only [begin, end) of the trace (a selected range): run slices and spans
    // that overlap it, clipped to it, and samples, losses and counter points in
    // it. A clipped span keeps its instruction count. Default: everything.
    uint64_t begin = 0, end = UINT64_MAX;
    // Called every 64 Ki events written with (events written, events in all):
    // returning false stops the export, which removes the file and fails with
    // "PATH: export cancelled".
    std::function<bool(uint64_t done, uint64_t total)> progress;
    // Threads that format the CSV's span rows (written in order; 0: one per CPU).
    unsigned threads = 0;
};

Expected<void> exportPerfetto(const TraceModel& model, const std::string& path,
                              const ExportOptions& options = {});
Expected<void> exportCsv(const TraceModel& model, const std::string& path, const ExportOptions& options = {});
// SPE records whose time is in [begin, end) (by default every record, those
// without a timestamp too) as a table: a header row, then one row per record
// with every SpeRecord field (as decode/spe/SpeRecord.h names them), then the
// operation, function, data symbol, source and event names.
Expected<void> exportSpeCsv(const ExportSpe& spe, const std::string& path, uint64_t begin = 0,
                            uint64_t end = UINT64_MAX);

// Perfetto track uuids, stable so that tests and other tools can find tracks.
uint64_t perfettoProcessTrack(int32_t pid);
uint64_t perfettoThreadTrack(int32_t tid);
uint64_t perfettoCpuTrack(int cpu);
// Where a thread's run intervals go when its own track holds decoded spans.
uint64_t perfettoThreadRunTrack(int32_t tid);
// The child track of a thread's with its off-CPU slices.
uint64_t perfettoThreadOffCpuTrack(int32_t tid);
// The child track of a thread's with its SPE samples.
uint64_t perfettoThreadSpeTrack(int32_t tid);
// The packet sequence of the perf samples of SampleProfile::events()[event].
uint32_t perfettoSampleSequence(int event);
// The name of a gap slice: "[gap: missing image]".
std::string perfettoGapName(GapReason reason);

}  // namespace auxscope
