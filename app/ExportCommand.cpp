// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExportCommand.h"

#include <filesystem>
#include <iostream>

#include "PerfDataReader.h"
#include "TraceExport.h"
#include "TraceModelLoader.h"

namespace auxscope {
namespace {

const char* kHelp = R"(usage: auxscope export FILE [--format perfetto|csv] [-o OUT] [--no-samples]

Converts a perf.data (auxscope's, perf's or simpleperf's) for other tools:
  perfetto   protobuf trace for ui.perfetto.dev: a track per CPU showing which
             thread ran, a track per thread, lost records/samples as counters
  csv        the same events, one per row (kind,cpu,time_ns,end_ns,pid,tid,name,value,detail)

  --format F      perfetto (default) or csv
  -o, --output    output file (default: FILE with .pftrace or .csv)
  --no-samples    leave out individual samples
)";

}  // namespace

int runExportCommand(const std::vector<std::string>& args) {
    std::string input, output, format = "perfetto";
    ExportOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kHelp;
            return 0;
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
    auto written =
        format == "csv" ? exportCsv(model, output, options) : exportPerfetto(model, output, options);
    if (!written) {
        std::cerr << "auxscope export: " << written.error().message << "\n";
        return 1;
    }
    std::cout << "auxscope export: wrote " << output << " (" << format << "): " << model.runSlices().size()
              << " run slices on " << model.cpus().size() << " CPUs, " << model.samples().size()
              << " samples, " << model.losses().size() << " loss records\n";
    if (loaded && loaded->withoutCpu)
        std::cout
            << "note: " << loaded->withoutCpu
            << " records name no CPU (recorded without PERF_SAMPLE_CPU); they give names and samples but no "
               "CPU placement\n";
    return loaded && !file->hasErrors() ? 0 : 1;
}

}  // namespace auxscope
