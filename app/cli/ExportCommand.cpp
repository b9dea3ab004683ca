// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/ExportCommand.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include "OptionParser.h"
#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAuxTrace.h"
#include "auxtrace/SpeExportNames.h"
#include "cli/DecodeOptions.h"
#include "export/TraceExport.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "sideband/TraceModelLoader.h"

namespace auxscope {
namespace {

const char* kHelp = R"(usage: auxscope export FILE [--format perfetto|csv|spe-csv] [-o OUT] [--no-samples]
                       [--no-stacks] [--decode|--no-decode] [--cpu N] [--tid T] [--time A-B]
                       [--symfs DIR] [--vmlinux FILE] [--kcore DIR|FILE] [--kallsyms FILE]
                       [--binary-dir DIR] [--debug-dir DIR] [--debuginfod URL] [--no-debuginfod]
                       [--jit-dump FILE] [--perf-map FILE] [-j N]

Converts a perf.data (auxscope's, perf's or simpleperf's) for other tools:
  perfetto   protobuf trace for ui.perfetto.dev: a track per CPU showing which
             thread ran, a track per thread, lost records/samples as counters
  csv        the same events, one per row (kind,cpu,time_ns,end_ns,pid,tid,name,value,detail)
  spe-csv    Arm SPE records, one row per record with every field decoded
             (timestamp, time, cpu, pid, tid, operation, PC, addresses,
             latencies, events, data source) and their names (function, data
             symbol+offset, source, events)

A file with Intel PT data is decoded too (as auxscope decode does): each thread's
track then shows its call stack as nested slices (function; instructions and
depth as args) and every gap as a "[gap: REASON]" slice (cause, trace offset),
a flame chart per thread; the thread's run intervals move to an "on CPU" track
under it. In CSV, span rows: name = function, value = instructions, detail =
depth; gap rows: cpu = the trace's CPU, name = reason, value = trace offset,
detail = cause.

A file with Arm SPE data exports its records too: in Perfetto an instant per
record on an "SPE" track under its thread's (the operation as its name; PC,
function, data address and symbol, physical address, latencies, data source
and events as args); in CSV an "spe" row per record (name = the operation,
value = total latency in cycles, detail = the function).

A file whose samples carry call stacks (perf record -g or --call-graph,
auxscope record -g) exports them, resolved to functions as auxscope report
does: in Perfetto each sample is a perf sample with its call stack (a
"callstacks" track per thread, its stack on click, and a flame graph of a
selected area), and each time a thread spent switched out (from switch
records) is an "off-CPU" slice on an "off CPU" track under the thread's, with
the function it blocked in ("blocked in") and its stack as args. In CSV every
row gets a tenth column, stack; sample rows (value = event, detail = address)
hold their stack there folded: the functions from the outermost in, joined
with ';', as flamegraph.pl reads them:
  awk -F, '$1=="sample"{print $10}' OUT.csv | sort | uniq -c | awk '{c=$1; $1=""; print substr($0,2), c}'
(names with a comma are quoted), and "off-cpu" rows (time_ns-end_ns, cpu = the
CPU it ran on last, detail = the function it blocked in) hold the stack it
blocked in (stacks of sched:sched_switch or context-switches samples with
callchains; "[off-CPU: no stack]" without).

  --format F      perfetto (default), csv or spe-csv
  -o, --output    output file (default: FILE with .pftrace or .csv)
  --no-samples    leave out individual samples
  --no-stacks     leave out the samples' call stacks and the off-CPU time:
                  export samples as a file without stacks exports them
  --decode        decode Intel PT (default when the file has Intel PT data)
  --no-decode     do not decode: scheduling, samples and losses only
  --cpu N         decode only that CPU's trace      --tid T   only that thread's spans
  --time A-B      only [A, B] in perf time (N ns, S.F seconds, +N after the
                  recording's start; either side may be empty; auxscope report
                  --help says more): only
                  that window is decoded, and the run slices and spans that
                  overlap it are exported clipped to it (off-CPU stretches too),
                  with the samples, losses and counter points inside it (what the
                  GUI's "Export range" writes)
  --symfs DIR     look for mapped files under DIR first (code of traces and
                  symbols of stacks alike)
  --vmlinux FILE  kernel code and symbols (see auxscope decode --help)
  --kcore DIR|FILE  kernel code from a kcore copy, names from its kallsyms
  --kallsyms FILE kernel symbols
  --jit-dump FILE, --perf-map FILE  JIT code's names (and, from a jitdump, its
                  code for the decoders); see auxscope decode --help
%LOOKUP%  -j N            decode and stack symbolizing threads (default: all CPUs)
  --pt-decoder walk|block  Intel PT spans through auxscope's flow walker (default)
                  or libipt's block decoder (see auxscope decode --help)
)";

// Whether any sampling event of the file records call stacks
// (PERF_SAMPLE_CALLCHAIN, or user stack copies to unwind) and the file has samples.
bool hasSampleStacks(const PerfDataReader& file) {
    const auto& byType = file.summary().recordsByType;
    auto samples = byType.find(PERF_RECORD_SAMPLE);
    if (samples == byType.end() || samples->second == 0) return false;
    return std::any_of(file.attrs().begin(), file.attrs().end(), [](const auto& a) {
        return (a.attr.sample_type & (PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_STACK_USER)) != 0;
    });
}

}  // namespace

Expected<ExportArgs> parseExportArgs(const std::vector<std::string>& args) {
    static const std::vector<OptionSpec> table = withDecodeSelectionOptions({
        {"format", 'F', OptionArg::Required, "perfetto|csv", ""},
        {"output", 'o', OptionArg::Required, "OUT", ""},
        {"no-samples", 0, OptionArg::None, "", ""},
        {"no-stacks", 0, OptionArg::None, "", ""},
        {"decode", 0, OptionArg::None, "", ""},
        {"no-decode", 0, OptionArg::None, "", ""},
        {"help", 'h', OptionArg::None, "", ""},
    });
    auto cl = parseCommandLine(table, args);
    if (!cl) return cl.error();
    ExportArgs out;
    for (const ParsedOption& o : cl->options) {
        if (o.is("help")) {
            out.help = true;
            return out;
        } else if (o.is("decode") || o.is("no-decode")) {
            out.decode = o.is("decode");
        } else if (o.is("format")) {
            if (*o.value != "perfetto" && *o.value != "csv" && *o.value != "spe-csv")
                return makeError(o.spelling + " '" + *o.value +
                                 "': unknown format (perfetto, csv or spe-csv)");
            out.format = *o.value;
        } else if (o.is("output")) {
            if (o.value->empty()) return makeError(o.spelling + " wants a file name");
            out.output = *o.value;
        } else if (o.is("no-samples")) {
            out.includeSamples = false;
        } else if (o.is("no-stacks")) {
            out.stacks = false;
        } else if (auto r = applyDecodeSelectionOption(o, out.selection); !r) {
            return r.error();
        }
    }
    if (cl->operands.size() > 1)
        return makeError("more than one input file given ('" + cl->operands[0] + "', '" + cl->operands[1] +
                         "')");
    if (cl->operands.empty()) return makeError("no input file given");
    out.input = cl->operands[0];
    addOpenedFileFolder(out.input, out.selection);
    if (out.output.empty())
        out.output = std::filesystem::path(out.input)
                         .replace_extension(out.format == "csv"       ? ".csv"
                                            : out.format == "spe-csv" ? ".spe.csv"
                                                                      : ".pftrace")
                         .string();
    return out;
}

int runExportCommand(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::cerr << withImageLookupHelp(kHelp);
        return 2;
    }
    auto parsed = parseExportArgs(args);
    if (!parsed) {
        std::cerr << "auxscope export: " << parsed.error().message << " (auxscope export --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << withImageLookupHelp(kHelp);
        return 0;
    }
    const std::string& input = parsed->input;
    const std::string& output = parsed->output;
    const std::string& format = parsed->format;
    ExportOptions options;
    options.includeSamples = parsed->includeSamples;
    const std::optional<bool> decode = parsed->decode;  // unset: when the file has Intel PT data
    const bool stacks = parsed->stacks;                 // the samples' call stacks, when they have some
    DecodeSelection& selection = parsed->selection;
    options.threads = selection.threads;  // CSV span rows formatted on -j threads

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
    if (auto r = resolveTime(selection, model.firstTime()); !r) {
        std::cerr << "auxscope export: " << r.error().message << "\n";
        return 2;
    }

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
    // Arm SPE: the records the session decoded, with their names.
    std::optional<SpeExportNames> speNames;
    const SpeAuxTraceSession* speSession =
        decoded ? dynamic_cast<const SpeAuxTraceSession*>(decoded->session.get()) : nullptr;
    if (speSession) {
        speNames.emplace(speExportNames(speSession->records(), speSession->images(), speSession->functions(),
                                        *file, selection.session.images.binaryDirs));
        for (const std::string& note : speNames->space->notes())
            std::cerr << "auxscope export: " << input << ": " << note << "\n";
        options.spe = &speNames->spe;
    }
    if (format == "spe-csv" && !speSession) {
        std::cerr << "auxscope export: --format spe-csv: " << input << " has no Arm SPE data (" << kind
                  << ")\n";
        return 2;
    }
    // Samples with call stacks: the sampled profile, symbolized as auxscope
    // report does. A file whose samples carry none exports as before.
    std::shared_ptr<const SampleProfile> profile;
    bool stacksFailed = false;
    if (stacks && hasSampleStacks(*file)) {
        auto sideband = Sideband::load(*file);
        if (!sideband) {
            std::cerr << "auxscope export: " << sideband.error().message << " (exporting without stacks)\n";
            stacksFailed = true;
        } else {
            SampleProfileOptions profileOptions;
            profileOptions.images = selection.session.images;
            profileOptions.threads = selection.threads;
            auto loadedProfile = SampleProfile::load(
                *file, std::make_shared<const Sideband>(std::move(*sideband)), profileOptions);
            if (!loadedProfile) {
                std::cerr << "auxscope export: " << input << ": " << loadedProfile.error().message
                          << " (exporting without stacks)\n";
                stacksFailed = true;
            } else {
                profile = *loadedProfile;
                for (const StackNote& n : profile->stackNotes())
                    std::cerr << "auxscope export: " << input << ": " << n.samples << " " << n.reason << "\n";
                for (const std::string& note : profile->images().notes())
                    std::cerr << "auxscope export: " << input << ": " << note << "\n";
                const bool anyStack = std::any_of(
                    profile->events().begin(), profile->events().end(),
                    [](const SampledEvent& e) { return e.withCallchain > 0 || e.withUserStack > 0; });
                if (anyStack)
                    options.samples = profile.get();
                else
                    profile.reset();
            }
        }
    }
    if (selection.window.begin != 0 || selection.window.end != UINT64_MAX) {
        options.begin = selection.window.begin;
        options.end = selection.window.end == UINT64_MAX ? UINT64_MAX : selection.window.end + 1;  // [A, B]
    }
    const auto writeStarted = std::chrono::steady_clock::now();
    auto written = format == "spe-csv" ? exportSpeCsv(speNames->spe, output, options.begin, options.end)
                   : format == "csv"   ? exportCsv(model, output, options)
                                       : exportPerfetto(model, output, options);
    const double writeSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - writeStarted).count();
    if (!written) {
        std::cerr << "auxscope export: " << written.error().message << "\n";
        return 1;
    }
    if (decoded && format == "csv") {
        // As `decode` prints its output phase: the span rows dominate a decoded file's CSV.
        char line[160];
        std::snprintf(line, sizeof line,
                      "output: %llu span rows and the rest in %.3f s (%.1f M span rows/s)\n",
                      (unsigned long long)decoded->spanCount(), writeSeconds,
                      writeSeconds > 0 ? double(decoded->spanCount()) / writeSeconds / 1e6 : 0.0);
        std::cerr << line;
    }
    std::cout << "auxscope export: wrote " << output << " (" << format << "): " << model.runSlices().size()
              << " run slices on " << model.cpus().size() << " CPUs, " << model.samples().size()
              << " samples, " << model.losses().size() << " loss records";
    if (speSession) {
        const bool all = options.begin == 0 && options.end == UINT64_MAX;
        uint64_t kept = 0;
        for (const spe::SpeRecord& r : speSession->records().records)
            kept += all || (r.time >= options.begin && r.time < options.end && (r.timestamp || r.time));
        std::cout << ", " << kept << " Arm SPE records";
    } else if (decoded) {
        uint64_t gaps = 0;
        for (const auto& [reason, n] : decoded->result.stats.gaps)
            gaps += n;
        std::cout << ", " << decoded->spanCount() << " " << kind << " spans in "
                  << decoded->result.threads.size() << " threads (" << gaps << " gaps";
        for (const auto& [reason, n] : decoded->result.stats.gaps)
            std::cout << "; " << gapReasonName(reason) << " " << n;
        std::cout << ")";
    }
    if (profile) {
        uint64_t withStack = 0;
        for (const SampledEvent& e : profile->events())
            if (e.withCallchain > 0 || e.withUserStack > 0) withStack += e.samples;
        std::cout << ", " << withStack << " samples with call stacks, " << profile->offCpu().size()
                  << " off-CPU stretches";
    }
    std::cout << "\n";
    if (loaded && loaded->withoutCpu)
        std::cout
            << "note: " << loaded->withoutCpu
            << " records name no CPU (recorded without PERF_SAMPLE_CPU); they give names and samples but no "
               "CPU placement\n";
    return loaded && !file->hasErrors() && !decodeFailed && !stacksFailed ? 0 : 1;
}

}  // namespace auxscope
