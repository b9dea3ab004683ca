// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/ReportCommand.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "OptionParser.h"
#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAuxTrace.h"
#include "auxtrace/SpeSamples.h"
#include "cli/CompareCommand.h"
#include "cli/DecodeOptions.h"
#include "cli/JsonString.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "spans/RangeStats.h"
#include "spe/SpeDecoder.h"

namespace auxscope {
namespace {

const char* kHelp =
    R"(usage: auxscope report PERF.DATA [--source auto|trace|samples|off-cpu] [--event NAME]
                       [--tid T] [--time A-B] [--sort KEY] [--format text|csv|json] [--top N]
                       [--tree] [--threads] [--no-inline] [--cpu N] [--symfs DIR] [--vmlinux FILE]
                       [--kcore DIR|FILE] [--kallsyms FILE] [--binary-dir DIR] [--debug-dir DIR]
                       [--debuginfod URL] [--no-debuginfod] [--jit-dump FILE] [--perf-map FILE] [-j N]
       auxscope report --diff A.DATA B.DATA [--by-symbol] [--normalize none|total|per-call=FUNC]
                       [--limit N] [the options of auxscope compare]

Prints the statistics of a time range of a perf.data: the top functions and, with
--tree, the call tree. Two sources answer:
  trace     the call-stack spans of its AUX trace (Intel PT or CoreSight ETM/ETE,
            decoded as auxscope decode does): time, calls and instructions
  samples   its samples with their call stacks (perf record -g / --call-graph
            dwarf, auxscope record -g; without stacks, the sampled function
            alone): samples and their period per function, self and total
  off-cpu   the time threads spent switched out, by the stack they blocked in
            (from switch records; stacks from sched:sched_switch or
            context-switches samples with callchains)
--source auto (the default) takes the trace when the file has one, else samples.
With --diff A B, two files (or two ranges) side by side with the deltas: the same
as auxscope compare A B (see auxscope compare --help for its options).

  --time A-B      the range [A, B): A and B in perf time (the clock of the
                  file's records, as auxscope decode --time takes it): N in ns,
                  S.F in seconds (1234.5678, as perf script prints times);
                  +N is N ns after the start of the recording (+S.F: seconds).
                  Either side may be empty (the recording's start / end), and
                  perf's A,B works too: --time +1000000-+2000000, --time 1234.5,1234.6
  --tid T         only that thread (default: every thread)
  --event NAME    samples: the sampled event (default: the first with samples that
                  is not a switch event). An Arm SPE file's records are samples of
                  arm_spe events: 'arm_spe: all ops', 'arm_spe: loads', 'arm_spe: stores',
                  'arm_spe: branches', 'arm_spe: L1D refill', 'arm_spe: LLC miss',
                  'arm_spe: TLB walk', 'arm_spe: mispredicted', 'arm_spe: remote', and
                  'arm_spe: total latency (cycles)' whose period is the latency
  --sort KEY      order of the functions. trace: self (self time, default), total
                  (total time), calls, insns (self instructions), total-insns.
                  samples, off-cpu: self (self period, default), total (total
                  period), samples (self samples), total-samples
  --top N         the first N functions (default 30; 0: all)
  --tree          also the call tree (top-down), every stack with its cost
  --threads       samples, off-cpu: also each thread's samples and its time on CPU,
                  off CPU and their sum (wall-clock) in the range
  --no-inline     samples, off-cpu: no frames for functions inlined at an address
                  (their samples count in the function they were inlined into, as
                  perf report --no-inline counts them)
  --format F      text (default), csv (one row per function, gap and, with --tree,
                  call tree node) or json
  --cpu N, --symfs DIR, --vmlinux FILE, --kcore DIR|FILE, --kallsyms FILE, -j N,
  --jit-dump FILE, --perf-map FILE, --pt-decoder walk|block:
                  as for auxscope decode (see auxscope decode --help)
%LOOKUP%

What the numbers mean:
  total time      time in frames of the function, callees included; a function
                  recursing is counted once per stack
  self time       total time less the time of its callees and gaps below it
  calls           frames entered in the range (frames already running when the
                  trace or a decode segment begins are not calls)
  self insns      instructions executed in the function itself; total: callees included
  self samples    samples whose stack ends in the function; total: whose stack holds
                  it (once per stack, as perf report --children counts)
  period          the samples' periods summed: ns of CPU time for cpu-clock and
                  task-clock, events for other events; off-cpu: ns switched out
A span cut by an end of the range counts the part of its time inside it and its
instructions in proportion. Gaps (lost trace, overflow, missing code, decode errors,
untraced time) are summed per reason.

Exit status 0; 1 when the file cannot be read or decoded; 2 for bad arguments.
)";

}  // namespace

Expected<ReportArgs> parseReportArgs(const std::vector<std::string>& args) {
    static const std::vector<OptionSpec> table = withDecodeSelectionOptions({
        {"format", 0, OptionArg::Required, "text|csv|json", ""},
        {"sort", 0, OptionArg::Required, "KEY", ""},
        {"top", 0, OptionArg::Required, "N", ""},
        {"source", 0, OptionArg::Required, "auto|trace|samples|off-cpu", ""},
        {"event", 0, OptionArg::Required, "NAME", ""},
        {"tree", 0, OptionArg::None, "", ""},
        {"threads", 0, OptionArg::None, "", ""},
        {"no-inline", 0, OptionArg::None, "", ""},
        {"help", 'h', OptionArg::None, "", ""},
    });
    auto cl = parseCommandLine(table, args);
    if (!cl) return cl.error();
    ReportArgs out;
    for (const ParsedOption& o : cl->options) {
        const std::string v = o.value.value_or(std::string());
        if (o.is("help")) {
            out.help = true;
            return out;
        } else if (o.is("format")) {
            if (v != "text" && v != "csv" && v != "json")
                return makeError("--format " + v + ": expected text, csv or json");
            out.format = v;
        } else if (o.is("sort")) {
            out.sortName = v;  // checked against the source's keys once the source is known
        } else if (o.is("source")) {
            if (v != "auto" && v != "trace" && v != "samples" && v != "off-cpu")
                return makeError("--source " + v + ": expected auto, trace, samples or off-cpu");
            out.source = v;
        } else if (o.is("event")) {
            out.event = v;
        } else if (o.is("top")) {
            auto n = parseUnsignedOption(o.spelling, v);
            if (!n) return n.error();
            out.top = *n ? size_t(*n) : SIZE_MAX;
        } else if (o.is("tree")) {
            out.tree = true;
        } else if (o.is("threads")) {
            out.threadTable = true;
        } else if (o.is("no-inline")) {
            out.inlineFrames = false;
        } else if (auto r = applyDecodeSelectionOption(o, out); !r) {
            return r.error();
        }
    }
    if (cl->operands.size() > 1)
        return makeError("more than one file: '" + cl->operands[0] + "', '" + cl->operands[1] + "'");
    if (cl->operands.empty()) return makeError("no file given");
    out.path = cl->operands[0];
    addOpenedFileFolder(out.path, out);
    return out;
}

namespace {

std::string percent(uint64_t part, uint64_t whole) {
    char text[32];
    std::snprintf(text, sizeof text, "%5.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return text;
}

// The sort keys of a source ("self" ...), or an error naming the expected ones.
Expected<RangeSort> sortKey(const std::string& name, RangeSource::Kind kind) {
    if (kind == RangeSource::Spans) {
        if (name == "self") return RangeSort::SelfTime;
        if (name == "total") return RangeSort::TotalTime;
        if (name == "calls") return RangeSort::Calls;
        if (name == "insns") return RangeSort::SelfInsns;
        if (name == "total-insns") return RangeSort::TotalInsns;
        return makeError("--sort " + name + ": expected self, total, calls, insns or total-insns");
    }
    if (name == "self") return RangeSort::SelfPeriod;
    if (name == "total") return RangeSort::TotalPeriod;
    if (name == "samples") return RangeSort::SelfSamples;
    if (name == "total-samples") return RangeSort::TotalSamples;
    return makeError("--sort " + name + ": expected self, total, samples or total-samples for samples");
}

struct Report {
    const ReportArgs& args;
    RangeSort sort;
    const FunctionTable& functions;
    const TraceModel& model;
    std::string sourceName;  // "Intel PT", "samples of cpu-clock", ...
    const RangeStats& stats;
    uint64_t recordingBegin = 0, recordingEnd = 0;
    bool spans() const { return stats.source.kind == RangeSource::Spans; }
    // The range's end as shown: the recording's when the range is open-ended.
    uint64_t shownEnd() const {
        return stats.end == UINT64_MAX ? std::max(recordingEnd, stats.begin) : stats.end;
    }

    std::string name(uint32_t f) const {
        const FunctionInfo& info = functions[f];
        return info.inlined ? info.name + " (inlined)" : info.name;
    }
    std::string file(uint32_t f) const { return functions[f].file; }
    uint64_t rangeTime() const {
        uint64_t t = stats.tree.nodes[0].cost.totalTime;
        for (const auto& [reason, g] : stats.gaps)
            t += g.time;
        return t;
    }
    // What a node's children are ordered by in the tree: its total time, or period.
    uint64_t treeKey(const RangeCost& c) const { return spans() ? c.totalTime : c.totalPeriod; }

    // The call tree depth first, children by total cost.
    template <typename Visit>
    void walkTree(Visit&& visit) const {
        struct Item {
            uint32_t node;
            int depth;
        };
        std::vector<Item> todo;
        auto pushChildren = [&](uint32_t node, int depth) {
            std::vector<uint32_t> kids = stats.tree.children(node);
            std::stable_sort(kids.begin(), kids.end(), [&](uint32_t a, uint32_t b) {
                return treeKey(stats.tree.nodes[a].cost) > treeKey(stats.tree.nodes[b].cost);
            });
            for (size_t k = kids.size(); k-- > 0;)
                todo.push_back({kids[k], depth});
        };
        pushChildren(0, 0);
        while (!todo.empty()) {
            Item it = todo.back();
            todo.pop_back();
            visit(it.node, it.depth);
            pushChildren(it.node, it.depth + 1);
        }
    }

    void header(std::ostream& out) const {
        char line[512];
        std::snprintf(line, sizeof line,
                      "range %" PRIu64 "-%" PRIu64 " (+%" PRIu64 " to +%" PRIu64
                      " ns after the recording's start)\n",
                      stats.begin, shownEnd(), stats.begin - recordingBegin, shownEnd() - recordingBegin);
        out << args.path << ": " << sourceName << ", " << line;
    }

    void text(std::ostream& out) const {
        header(out);
        if (spans())
            spanText(out);
        else
            sampleText(out);
    }

    void spanText(std::ostream& out) const {
        char line[512];
        const uint64_t total = rangeTime();
        out << stats.threads.size() << " threads, " << stats.spans << " spans, " << stats.instructions()
            << " instructions, " << stats.tree.nodes[0].cost.totalTime << " ns in frames\n";
        for (const auto& [reason, g] : stats.gaps)
            out << "gaps: " << gapReasonName(reason) << ": " << g.count << " (" << g.time << " ns)\n";
        const auto top = stats.topFunctions(sort, args.top);
        out << "\ntop functions by " << args.sortName << " (" << top.size() << " of "
            << stats.functions.size() << "):\n";
        std::snprintf(line, sizeof line, "%14s %7s %14s %7s %10s %14s %14s  %s\n", "self ns", "self",
                      "total ns", "total", "calls", "self insns", "total insns", "function");
        out << line;
        for (const FunctionStats& f : top) {
            std::snprintf(line, sizeof line,
                          "%14" PRIu64 " %7s %14" PRIu64 " %7s %10" PRIu64 " %14" PRIu64 " %14" PRIu64 "  ",
                          f.cost.selfTime, percent(f.cost.selfTime, total).c_str(), f.cost.totalTime,
                          percent(f.cost.totalTime, total).c_str(), f.cost.calls, f.cost.selfInsns,
                          f.cost.totalInsns);
            out << line << name(f.function) << "\n";
        }
        if (!args.tree) return;
        out << "\ncall tree (top-down; children by total time):\n";
        std::snprintf(line, sizeof line, "%14s %7s %14s %10s %14s %14s  %s\n", "total ns", "total", "self ns",
                      "calls", "self insns", "total insns", "function");
        out << line;
        walkTree([&](uint32_t n, int depth) {
            const CallTree::Node& node = stats.tree.nodes[n];
            std::snprintf(line, sizeof line,
                          "%14" PRIu64 " %7s %14" PRIu64 " %10" PRIu64 " %14" PRIu64 " %14" PRIu64 "  %*s",
                          node.cost.totalTime, percent(node.cost.totalTime, total).c_str(),
                          node.cost.selfTime, node.cost.calls, node.cost.selfInsns, node.cost.totalInsns,
                          2 * std::min(depth, 60), "");
            out << line << name(node.function) << "\n";
        });
    }

    void sampleText(std::ostream& out) const {
        char line[512];
        const RangeCost& all = stats.tree.nodes[0].cost;
        const std::string unit = stats.source.periodUnit;
        out << stats.threads.size() << " threads, " << all.totalSamples
            << (stats.source.kind == RangeSource::OffCpu ? " switch-outs, " : " samples, ") << all.totalPeriod
            << " " << unit << "\n";
        const auto top = stats.topFunctions(sort, args.top);
        out << "\ntop functions by " << args.sortName << " (" << top.size() << " of "
            << stats.functions.size() << "; % of the period):\n";
        const std::string selfP = "self " + unit, totalP = "total " + unit;
        std::snprintf(line, sizeof line, "%12s %12s %16s %7s %16s %7s  %s\n", "self smpl", "total smpl",
                      selfP.c_str(), "self", totalP.c_str(), "total", "function");
        out << line;
        for (const FunctionStats& f : top) {
            std::snprintf(line, sizeof line,
                          "%12" PRIu64 " %12" PRIu64 " %16" PRIu64 " %7s %16" PRIu64 " %7s  ",
                          f.cost.selfSamples, f.cost.totalSamples, f.cost.selfPeriod,
                          percent(f.cost.selfPeriod, all.totalPeriod).c_str(), f.cost.totalPeriod,
                          percent(f.cost.totalPeriod, all.totalPeriod).c_str());
            out << line << name(f.function) << "\n";
        }
        if (args.tree) {
            out << "\ncall tree (top-down; children by total period):\n";
            std::snprintf(line, sizeof line, "%12s %16s %7s %12s %16s  %s\n", "total smpl", totalP.c_str(),
                          "total", "self smpl", selfP.c_str(), "function");
            out << line;
            walkTree([&](uint32_t n, int depth) {
                const RangeCost& c = stats.tree.nodes[n].cost;
                std::snprintf(line, sizeof line,
                              "%12" PRIu64 " %16" PRIu64 " %7s %12" PRIu64 " %16" PRIu64 "  %*s",
                              c.totalSamples, c.totalPeriod, percent(c.totalPeriod, all.totalPeriod).c_str(),
                              c.selfSamples, c.selfPeriod, 2 * std::min(depth, 60), "");
                out << line << name(stats.tree.nodes[n].function) << "\n";
            });
        }
        if (!args.threadTable) return;
        out << "\nthreads (time on CPU and off CPU in the range; their sum is its wall-clock time there):\n";
        std::snprintf(line, sizeof line, "%10s %12s %16s %14s %14s %14s  %s\n", "tid", "samples",
                      totalP.c_str(), "on-CPU ns", "off-CPU ns", "wall ns", "thread");
        out << line;
        for (const auto& [tid, t] : stats.threads) {
            std::snprintf(line, sizeof line,
                          "%10d %12" PRIu64 " %16" PRIu64 " %14" PRIu64 " %14" PRIu64 " %14" PRIu64 "  ", tid,
                          t.samples, t.period, t.onCpuTime, t.offCpuTime, t.onCpuTime + t.offCpuTime);
            out << line << model.threadName(tid) << "\n";
        }
    }

    void csv(std::ostream& out) const {
        if (spans()) {
            out << "kind,id,parent,depth,function,file,calls,total_ns,self_ns,total_insns,self_insns\n";
            for (const FunctionStats& f : stats.topFunctions(sort, args.top)) {
                out << "function," << f.function << ",,," << csvQuoted(name(f.function)) << ","
                    << csvQuoted(file(f.function)) << "," << f.cost.calls << "," << f.cost.totalTime << ","
                    << f.cost.selfTime << "," << f.cost.totalInsns << "," << f.cost.selfInsns << "\n";
            }
            for (const auto& [reason, g] : stats.gaps)
                out << "gap,,,," << csvQuoted(gapReasonName(reason)) << ",," << g.count << "," << g.time
                    << ",,,\n";
            if (!args.tree) return;
            walkTree([&](uint32_t n, int depth) {
                const CallTree::Node& node = stats.tree.nodes[n];
                out << "node," << n << "," << node.parent << "," << depth << ","
                    << csvQuoted(name(node.function)) << "," << csvQuoted(file(node.function)) << ","
                    << node.cost.calls << "," << node.cost.totalTime << "," << node.cost.selfTime << ","
                    << node.cost.totalInsns << "," << node.cost.selfInsns << "\n";
            });
            return;
        }
        out << "kind,id,parent,depth,function,file,total_samples,self_samples,total_period,self_period,"
               "on_cpu_ns,off_cpu_ns\n";
        for (const FunctionStats& f : stats.topFunctions(sort, args.top))
            out << "function," << f.function << ",,," << csvQuoted(name(f.function)) << ","
                << csvQuoted(file(f.function)) << "," << f.cost.totalSamples << "," << f.cost.selfSamples
                << "," << f.cost.totalPeriod << "," << f.cost.selfPeriod << ",,\n";
        if (args.tree)
            walkTree([&](uint32_t n, int depth) {
                const CallTree::Node& node = stats.tree.nodes[n];
                out << "node," << n << "," << node.parent << "," << depth << ","
                    << csvQuoted(name(node.function)) << "," << csvQuoted(file(node.function)) << ","
                    << node.cost.totalSamples << "," << node.cost.selfSamples << "," << node.cost.totalPeriod
                    << "," << node.cost.selfPeriod << ",,\n";
            });
        if (args.threadTable)
            for (const auto& [tid, t] : stats.threads)
                out << "thread," << tid << ",,," << csvQuoted(model.threadName(tid)) << ",," << t.samples
                    << ",," << t.period << ",," << t.onCpuTime << "," << t.offCpuTime << "\n";
    }

    void cost(std::ostream& out, const RangeCost& c) const {
        if (spans()) {
            out << "\"calls\":" << c.calls << ",\"total_ns\":" << c.totalTime << ",\"self_ns\":" << c.selfTime
                << ",\"total_insns\":" << c.totalInsns << ",\"self_insns\":" << c.selfInsns;
        } else {
            out << "\"total_samples\":" << c.totalSamples << ",\"self_samples\":" << c.selfSamples
                << ",\"total_period\":" << c.totalPeriod << ",\"self_period\":" << c.selfPeriod;
        }
    }

    void json(std::ostream& out) const {
        out << "{\"file\":" << jsonString(args.path);
        if (spans()) {
            out << ",\"trace\":" << jsonString(sourceName) << ",\"begin\":" << stats.begin
                << ",\"end\":" << shownEnd() << ",\"recording_begin\":" << recordingBegin
                << ",\"spans\":" << stats.spans << ",\"instructions\":" << stats.instructions()
                << ",\"frame_ns\":" << stats.tree.nodes[0].cost.totalTime;
        } else {
            const RangeCost& all = stats.tree.nodes[0].cost;
            out << ",\"source\":"
                << jsonString(stats.source.kind == RangeSource::OffCpu ? "off-cpu" : "samples")
                << ",\"event\":" << jsonString(stats.source.event)
                << ",\"period_unit\":" << jsonString(stats.source.periodUnit) << ",\"begin\":" << stats.begin
                << ",\"end\":" << shownEnd() << ",\"recording_begin\":" << recordingBegin
                << ",\"samples\":" << all.totalSamples << ",\"period\":" << all.totalPeriod;
        }
        out << ",\"sort\":" << jsonString(args.sortName);
        out << ",\"threads\":[";
        bool first = true;
        for (const auto& [tid, t] : stats.threads) {
            out << (first ? "" : ",") << "{\"tid\":" << tid
                << ",\"name\":" << jsonString(model.threadName(tid));
            if (spans())
                out << ",\"spans\":" << t.spans << ",\"instructions\":" << t.instructions
                    << ",\"calls\":" << t.calls << ",\"frame_ns\":" << t.frameTime << "}";
            else
                out << ",\"samples\":" << t.samples << ",\"period\":" << t.period
                    << ",\"on_cpu_ns\":" << t.onCpuTime << ",\"off_cpu_ns\":" << t.offCpuTime << "}";
            first = false;
        }
        out << "]";
        if (spans()) {
            out << ",\"gaps\":[";
            first = true;
            for (const auto& [reason, g] : stats.gaps) {
                out << (first ? "" : ",") << "{\"reason\":" << jsonString(gapReasonName(reason))
                    << ",\"count\":" << g.count << ",\"time_ns\":" << g.time << "}";
                first = false;
            }
            out << "]";
        }
        out << ",\"functions\":[";
        first = true;
        for (const FunctionStats& f : stats.topFunctions(sort, args.top)) {
            out << (first ? "" : ",") << "{\"id\":" << f.function
                << ",\"name\":" << jsonString(name(f.function))
                << ",\"file\":" << jsonString(file(f.function)) << ",";
            cost(out, f.cost);
            out << "}";
            first = false;
        }
        out << "]";
        if (args.tree) {
            out << ",\"tree\":[";
            first = true;
            walkTree([&](uint32_t n, int depth) {
                const CallTree::Node& node = stats.tree.nodes[n];
                out << (first ? "" : ",") << "{\"id\":" << n << ",\"parent\":" << node.parent
                    << ",\"depth\":" << depth << ",\"name\":" << jsonString(name(node.function)) << ",";
                cost(out, node.cost);
                out << "}";
                first = false;
            });
            out << "]";
        }
        out << "}\n";
    }
};

int print(const Report& report) {
    std::ostringstream out;
    if (report.args.format == "csv")
        report.csv(out);
    else if (report.args.format == "json")
        report.json(out);
    else
        report.text(out);
    std::cout << out.str();
    std::cout.flush();
    if (!std::cout) {
        std::cerr << "auxscope report: cannot write the report to stdout\n";
        return 1;
    }
    return 0;
}

// The range the arguments name, in perf time; an error when it is empty.
Expected<std::pair<uint64_t, uint64_t>> rangeOf(const ReportArgs& a, const TimeExtent& extent) {
    DecodeSelection resolved = a;
    if (auto r = resolveTime(resolved, extent.begin); !r) return r.error();
    const uint64_t begin = a.time && a.time->begin ? resolved.window.begin : extent.begin;
    const uint64_t end = resolved.window.end;
    if (end <= begin)
        return makeError("--time: the range " + std::to_string(begin) + "-" + std::to_string(end) +
                         " is empty (the recording runs " + std::to_string(extent.begin) + "-" +
                         std::to_string(extent.end) + ")");
    return std::pair{begin, end};
}

// Prints "COMMAND: FILE: message" (the file named once) and gives `code`.
int failed(const std::string& command, const std::string& path, const std::string& message, int code) {
    std::cerr << command << ": " << (message.starts_with(path) ? "" : path + ": ") << message << "\n";
    return code;
}

int loadTraceRange(const ReportArgs& a, const std::string& command, ReportRange& out) {
    auto opened = AuxTraceSession::open(*out.file, a.session);
    if (!opened) return failed(command, a.path, opened.error().message, 1);
    out.session = std::move(*opened);
    AuxTraceSession& session = *out.session;
    for (const std::string& note : session.traceNotes())
        std::cerr << command << ": " << a.path << ": " << note << "\n";
    for (const std::string& note : session.imageNotes())
        std::cerr << command << ": " << a.path << ": " << note << "\n";
    const TimeExtent extent = recordingExtent(session);
    auto range = rangeOf(a, extent);
    if (!range) return failed(command, a.path, range.error().message, 2);
    DecodeWindow window = a.window;
    window.begin = range->first;
    window.end = range->second;
    DecodedSpans decoded = session.decodeSpans(window, a.threads);
    RangeQuery query;
    query.begin = window.begin;
    query.end = window.end;
    if (window.tid) query.tids = {*window.tid};
    query.threads = a.threads;
    auto stats = computeRangeStats(decoded.threads, query);
    if (!stats) return failed(command, a.path, stats.error().message, 1);
    for (const auto& [reason, n] : decoded.stats.gaps)
        if (reason == GapReason::DecodeError)
            std::cerr << command << ": " << a.path << ": " << n << " decode errors (gaps in the range)\n";
    out.stats = std::move(*stats);
    out.functions = &session.functions();
    out.model = &session.sideband().model();
    out.sourceName = auxTraceKindName(session.kind());
    out.recordingBegin = extent.begin;
    out.recordingEnd = extent.end;
    return 0;
}

bool isArmSpe(const PerfDataReader& file) {
    for (const PerfAuxtraceInfo& info : file.summary().auxtraceInfo)
        if (info.type == auxtrace::kTypeArmSpe) return true;
    return false;
}

// An Arm SPE file: its records by function (the PC's), with their latency and
// misses, and by data source. SPE has no flow: no call tree, no spans.
int reportSpe(const ReportArgs& a, const PerfDataReader& file) {
    if (a.format != "text" || a.tree || a.threadTable) {
        std::cerr << "auxscope report: " << a.path
                  << ": an Arm SPE report is a text table (no --format json, --tree or --threads)\n";
        return 2;
    }
    auto opened = AuxTraceSession::open(file, a.session);
    if (!opened) {
        std::cerr << "auxscope report: " << opened.error().message << "\n";
        return 1;
    }
    const auto& session = static_cast<const SpeAuxTraceSession&>(**opened);
    for (const std::string& note : session.imageNotes())
        std::cerr << "auxscope report: " << a.path << ": " << note << "\n";
    const spe::SpeRecords& recs = session.records();
    const TimeExtent extent = recordingExtent(session);
    auto range = rangeOf(a, extent);
    if (!range) {
        std::cerr << "auxscope report: " << range.error().message << "\n";
        return 2;
    }
    struct Row {
        uint64_t records = 0, loads = 0, stores = 0, branches = 0, latency = 0, l1dMiss = 0, llcMiss = 0,
                 tlbWalk = 0, mispredicted = 0;
    };
    std::map<uint32_t, Row> byFunction;
    std::map<std::string, Row> bySource;
    Row all;
    const bool ranged = range->first > extent.begin || range->second < extent.end;
    for (const spe::SpeRecord& r : recs.records) {
        if (a.window.cpu && r.cpu != *a.window.cpu) continue;
        if (a.window.tid && r.tid != *a.window.tid) continue;
        if (ranged && (r.time < range->first || r.time > range->second)) continue;
        auto add = [&](Row& row) {
            ++row.records;
            row.loads += r.isLoad;
            row.stores += r.isStore;
            row.branches += r.isBranch;
            row.latency += r.totalLatency;
            row.l1dMiss += (r.events & spe::kEvL1dRefill) != 0;
            row.llcMiss += (r.events & spe::kEvLlcMiss) != 0;
            row.tlbWalk += (r.events & spe::kEvTlbWalk) != 0;
            row.mispredicted += (r.events & spe::kEvMispredicted) != 0;
        };
        add(all);
        add(byFunction[r.hasPc ? session.images().functionAt(r.pid, r.pc) : FunctionTable::kUnknown]);
        if (r.hasDataSource) add(bySource[spe::dataSourceName(r.dataSource, recs.midrOf(r.cpu))]);
    }
    char line[512];
    std::cout << a.path << ": Arm SPE, " << all.records << " of " << recs.records.size() << " records ("
              << all.loads << " loads, " << all.stores << " stores, " << all.branches << " branches); gaps "
              << recs.stats.gapBytes << " bytes\n\n";
    auto header = [&](const char* what) {
        std::snprintf(line, sizeof line, "%9s %8s %8s %9s %12s %9s %8s %8s %8s %8s  %s\n", "records", "loads",
                      "stores", "branches", "total lat", "avg lat", "L1D miss", "LLC miss", "TLB walk",
                      "mispred", what);
        std::cout << line;
    };
    auto printRow = [&](const Row& r, const std::string& name) {
        std::snprintf(line, sizeof line,
                      "%9" PRIu64 " %8" PRIu64 " %8" PRIu64 " %9" PRIu64 " %12" PRIu64 " %9.1f %8" PRIu64
                      " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "  ",
                      r.records, r.loads, r.stores, r.branches, r.latency,
                      r.records ? double(r.latency) / double(r.records) : 0.0, r.l1dMiss, r.llcMiss,
                      r.tlbWalk, r.mispredicted);
        std::cout << line << name << "\n";
    };
    std::vector<std::pair<uint32_t, Row>> rows(byFunction.begin(), byFunction.end());
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& x, const auto& y) { return x.second.records > y.second.records; });
    std::cout << "top functions by records (" << std::min(rows.size(), a.top) << " of " << rows.size()
              << "; latency in cycles):\n";
    header("function");
    for (size_t i = 0; i < rows.size() && i < a.top; ++i)
        printRow(rows[i].second, session.functions()[rows[i].first].name);
    std::cout << "\nby data source:\n";
    header("source");
    for (const auto& [name, row] : bySource)
        printRow(row, name);
    return 0;
}

int loadSampleRange(const ReportArgs& a, const std::string& command, ReportRange& out) {
    const PerfDataReader& file = *out.file;
    const bool offCpu = a.source == "off-cpu";
    auto sideband = Sideband::load(file);
    if (!sideband) return failed(command, a.path, sideband.error().message, 1);
    SampleProfileOptions options;
    options.images = a.session.images;
    options.threads = a.threads;
    options.inlineFrames = a.inlineFrames;
    // An Arm SPE file: its records as samples of the arm_spe events.
    if (isArmSpe(file)) {
        auto records = spe::decodeSpeRecords(file, *sideband);
        if (!records) return failed(command, a.path, records.error().message, 1);
        for (const auto& [reason, bytes] : records->stats.gaps)
            std::cerr << command << ": " << a.path << ": Arm SPE: " << bytes
                      << " bytes not decoded: " << reason << "\n";
        options.synthetic = std::make_shared<const SyntheticSamples>(speSyntheticSamples(records->records));
    }
    auto loaded = SampleProfile::load(file, std::make_shared<const Sideband>(std::move(*sideband)), options);
    if (!loaded) return failed(command, a.path, loaded.error().message, 1);
    out.profile = *loaded;
    const SampleProfile& profile = *out.profile;
    for (const StackNote& n : profile.stackNotes())
        std::cerr << command << ": " << a.path << ": " << n.samples << " " << n.reason << "\n";
    for (const std::string& note : profile.images().notes())
        std::cerr << command << ": " << a.path << ": " << note << "\n";
    if (std::string d = debuginfodSummary(profile.images()); !d.empty())
        std::cerr << command << ": " << a.path << ": " << d << "\n";
    SampleQuery query;
    std::string sourceName;
    if (offCpu) {
        query.event = SampleQuery::kOffCpu;
        sourceName = "off-CPU time";
        if (profile.offCpu().empty())
            return failed(command, a.path,
                          "no off-CPU time: the file has no context switches (record with switch events, "
                          "or -e sched:sched_switch)",
                          1);
        if (!profile.hasOffCpuStacks())
            std::cerr << command << ": " << a.path
                      << ": no stacks at switch-outs: record -e sched:sched_switch -g for the stacks threads "
                         "block in\n";
    } else {
        int chosen = -1;
        for (const SampledEvent& e : profile.events()) {
            if (!a.event.empty() ? e.name == a.event : (e.samples > 0 && !e.switchEvent)) {
                chosen = e.index;
                break;
            }
        }
        if (chosen < 0 && a.event.empty())
            for (const SampledEvent& e : profile.events())
                if (e.samples > 0) {
                    chosen = e.index;
                    break;
                }
        if (chosen < 0) {
            std::string names;
            for (const SampledEvent& e : profile.events())
                if (e.samples > 0) names += (names.empty() ? "" : ", ") + e.name;
            return failed(command, a.path,
                          a.event.empty() ? std::string("no samples to report")
                                          : "no sampled event named " + a.event +
                                                (names.empty() ? "" : " (the file samples " + names + ")"),
                          1);
        }
        query.event = chosen;
        sourceName = "samples of " + profile.events()[size_t(chosen)].name;
    }
    const TimeExtent extent{std::min(profile.sideband().model().firstTime(), profile.firstTime()),
                            std::max(profile.sideband().model().lastTime(), profile.lastTime())};
    auto range = rangeOf(a, extent);
    if (!range) return failed(command, a.path, range.error().message, 2);
    query.begin = range->first;
    query.end = range->second;
    if (a.window.tid) query.tids = {*a.window.tid};
    auto stats = computeSampleRangeStats(profile, query);
    if (!stats) return failed(command, a.path, stats.error().message, 1);
    out.stats = std::move(*stats);
    out.functions = &profile.functions();
    out.model = &profile.sideband().model();
    out.sourceName = sourceName;
    out.recordingBegin = extent.begin;
    out.recordingEnd = extent.end;
    return 0;
}

}  // namespace

int loadReportRange(const ReportArgs& a, const std::string& command, ReportRange& out) {
    auto file = PerfDataReader::open(a.path);
    if (!file) return failed(command, a.path, file.error().message, 1);
    out.file = std::make_unique<PerfDataReader>(std::move(*file));
    const bool trace = hasDecodableAuxTrace(*out.file);
    if (a.source == "trace" && !trace) {
        const AuxTraceKind kind = auxTraceKind(*out.file);
        return failed(
            command, a.path,
            kind == AuxTraceKind::None
                ? std::string("no AUX trace (AUXTRACE_INFO) to decode (--source samples reports its samples)")
                : std::string(auxTraceKindName(kind)) + (kind == AuxTraceKind::Other
                                                             ? ": no decoder for this trace"
                                                             : ": no trace data in the file"),
            1);
    }
    // Arm SPE has no flow: its records are samples of the arm_spe events.
    if (isArmSpe(*out.file)) return loadSampleRange(a, command, out);
    if (a.source == "trace" || (a.source == "auto" && trace)) return loadTraceRange(a, command, out);
    return loadSampleRange(a, command, out);
}

int runReportCommand(const std::vector<std::string>& args) {
    // --diff A B: the comparison, one code path with `auxscope compare`.
    for (size_t i = 0; i < args.size() && args[i] != "--"; ++i)
        if (args[i] == "--diff") {
            std::vector<std::string> rest = args;
            rest.erase(rest.begin() + std::ptrdiff_t(i));
            return runCompareCommand(rest, "report --diff");
        }
    if (args.empty()) {
        std::cerr << withImageLookupHelp(kHelp);
        return 2;
    }
    auto parsed = parseReportArgs(args);
    if (!parsed) {
        std::cerr << "auxscope report: " << parsed.error().message << " (auxscope report --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << withImageLookupHelp(kHelp);
        return 0;
    }
    ReportArgs& a = *parsed;
    // An Arm SPE file without --event: its records by function and data source
    // (with an event, and in comparisons, they are samples of the arm_spe events).
    if (a.source != "samples" && a.event.empty()) {
        auto file = PerfDataReader::open(a.path);
        if (file && isArmSpe(*file)) return reportSpe(a, *file);
    }
    ReportRange range;
    if (int status = loadReportRange(a, "auxscope report", range)) return status;
    auto sort = sortKey(a.sortName, range.stats.source.kind);
    if (!sort) {
        std::cerr << "auxscope report: " << sort.error().message << " (see auxscope report --help)\n";
        return 2;
    }
    return print(Report{a, *sort, *range.functions, *range.model, range.sourceName, range.stats,
                        range.recordingBegin, range.recordingEnd});
}

}  // namespace auxscope
