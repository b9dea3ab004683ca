// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/ExportCommand.h"

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "auxtrace/AuxTraceDecode.h"
#include "cli/DecodeOptions.h"
#include "export/TraceExport.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/TraceModelLoader.h"

namespace auxscope {
namespace {

const char* kHelp = R"(usage: auxscope export FILE [--format perfetto|csv] [-o OUT] [--no-samples]
                       [--decode|--no-decode] [--cpu N] [--tid T] [--time A-B] [--symfs DIR]
                       [--vmlinux FILE] [--kcore DIR|FILE] [--kallsyms FILE] [-j N]

Converts a perf.data (auxscope's, perf's or simpleperf's) for other tools:
  perfetto   protobuf trace for ui.perfetto.dev: a track per CPU showing which
             thread ran, a track per thread, lost records/samples as counters
  csv        the same events, one per row (kind,cpu,time_ns,end_ns,pid,tid,name,value,detail)

A file with Intel PT data is decoded too (as auxscope decode does): each thread's
track then shows its call stack as nested slices (function; instructions and
depth as args) and every gap as a "[gap: REASON]" slice (cause, trace offset),
a flame chart per thread; the thread's run intervals move to an "on CPU" track
under it. In CSV, span rows: name = function, value = instructions, detail =
depth; gap rows: cpu = the trace's CPU, name = reason, value = trace offset,
detail = cause.

  --format F      perfetto (default) or csv
  -o, --output    output file (default: FILE with .pftrace or .csv)
  --no-samples    leave out individual samples
  --decode        decode Intel PT (default when the file has Intel PT data)
  --no-decode     do not decode: scheduling, samples and losses only
  --cpu N         decode only that CPU's trace      --tid T   only that thread's spans
  --time A-B      only [A, B] in perf time (ns; either side may be empty): only
                  that window is decoded, and the run slices and spans that
                  overlap it are exported clipped to it, with the samples, losses
                  and counter points inside it (what the GUI's "Export range" writes)
  --symfs DIR     look for mapped files under DIR first
  --vmlinux FILE  kernel code and symbols (see auxscope decode --help)
  --kcore DIR|FILE  kernel code from a kcore copy, names from its kallsyms
  --kallsyms FILE kernel symbols
  -j N            decode threads (default: all CPUs)
)";

}  // namespace

int runExportCommand(const std::vector<std::string>& args) {
    std::string input, output, format = "perfetto";
    ExportOptions options;
    std::optional<bool> decode;  // unset: when the file has Intel PT data
    DecodeSelection selection;
    auto bad = [](const std::string& what) {
        std::cerr << "auxscope export: " << what << " (see auxscope export --help)\n";
        return 2;
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kHelp;
            return 0;
        } else if (a == "--decode" || a == "--no-decode") {
            decode = a == "--decode";
        } else if (isDecodeSelectionOption(a) && i + 1 < args.size()) {
            if (auto r = applyDecodeSelectionOption(a, args[i + 1], selection); !r)
                return bad(r.error().message);
            ++i;
        } else if ((a == "--format" || a == "-F") && i + 1 < args.size()) {
            format = args[++i];
        } else if (a.rfind("--format=", 0) == 0) {
            format = a.substr(9);
        } else if ((a == "-o" || a == "--output") && i + 1 < args.size()) {
            output = args[++i];
        } else if (a == "--no-samples") {
            options.includeSamples = false;
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "auxscope export: unknown or incomplete option '" << a
                      << "' (see auxscope export --help)\n";
            return 2;
        } else if (input.empty()) {
            input = a;
        } else {
            std::cerr << "auxscope export: more than one input file given\n";
            return 2;
        }
    }
    if (input.empty()) {
        std::cerr << kHelp;
        return 2;
    }
    if (format != "perfetto" && format != "csv") {
        std::cerr << "auxscope export: unknown format '" << format << "' (perfetto or csv)\n";
        return 2;
    }
    if (output.empty())
        output =
            std::filesystem::path(input).replace_extension(format == "csv" ? ".csv" : ".pftrace").string();

    auto file = PerfDataReader::open(input);
    if (!file) {
        std::cerr << "auxscope export: " << file.error().message << "\n";
        return 1;
    }
    for (auto& issue : file->issues())
        std::cerr << "auxscope export: " << (issue.error ? "error: " : "warning: ") << issue.message << "\n";
    TraceModel model;
    auto loaded = loadTraceModel(*file, model);
    if (!loaded)
        std::cerr << "auxscope export: " << loaded.error().message
                  << " (exporting what was read before it)\n";

    const bool hasTrace = hasDecodableAuxTrace(*file);
    const char* kind = auxTraceKindName(auxTraceKind(*file));
    bool decodeFailed = false;
    std::optional<AuxTraceSpans> decoded;
    ExportSpans view;
    if (decode.value_or(hasTrace)) {
        if (!hasTrace) {
            std::cerr << "auxscope export: --decode: " << input << " has no AUX trace data auxscope decodes ("
                      << kind << ")\n";
            decodeFailed = true;
        } else {
            auto spans = decodeAuxTraceSpans(*file, selection.window, selection.session, selection.threads);
            if (!spans) {
                std::cerr << "auxscope export: " << kind << " decode: " << spans.error().message
                          << " (exporting without spans)\n";
                decodeFailed = true;
            } else {
                decoded = std::move(*spans);
                for (const std::string& note : decoded->session->traceNotes())
                    std::cerr << "auxscope export: " << input << ": " << note << "\n";
                view = decoded->exportView();
                options.spans = &view;
            }
        }
    }
    if (selection.window.begin != 0 || selection.window.end != UINT64_MAX) {
        options.begin = selection.window.begin;
        options.end = selection.window.end == UINT64_MAX ? UINT64_MAX : selection.window.end + 1;  // [A, B]
    }
    auto written =
        format == "csv" ? exportCsv(model, output, options) : exportPerfetto(model, output, options);
    if (!written) {
        std::cerr << "auxscope export: " << written.error().message << "\n";
        return 1;
    }
    std::cout << "auxscope export: wrote " << output << " (" << format << "): " << model.runSlices().size()
              << " run slices on " << model.cpus().size() << " CPUs, " << model.samples().size()
              << " samples, " << model.losses().size() << " loss records";
    if (decoded) {
        uint64_t gaps = 0;
        for (const auto& [reason, n] : decoded->result.stats.gaps)
            gaps += n;
        std::cout << ", " << decoded->spanCount() << " " << kind << " spans in "
                  << decoded->result.threads.size() << " threads (" << gaps << " gaps";
        for (const auto& [reason, n] : decoded->result.stats.gaps)
            std::cout << "; " << gapReasonName(reason) << " " << n;
        std::cout << ")";
    }
    std::cout << "\n";
    if (loaded && loaded->withoutCpu)
        std::cout
            << "note: " << loaded->withoutCpu
            << " records name no CPU (recorded without PERF_SAMPLE_CPU); they give names and samples but no "
               "CPU placement\n";
    return loaded && !file->hasErrors() && !decodeFailed ? 0 : 1;
}

}  // namespace auxscope
