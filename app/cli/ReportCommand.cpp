// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/ReportCommand.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "auxtrace/AuxTraceDecode.h"
#include "cli/DecodeOptions.h"
#include "cli/JsonString.h"
#include "perfdata/PerfDataReader.h"
#include "spans/RangeStats.h"

namespace auxscope {
namespace {

const char* kHelp =
    R"(usage: auxscope report PERF.DATA [--tid T] [--time A-B] [--sort self|total|calls|insns|total-insns]
                       [--format text|csv|json] [--top N] [--tree] [--cpu N] [--symfs DIR]
                       [--vmlinux FILE] [--kcore DIR|FILE] [--kallsyms FILE] [-j N]

Decodes a perf.data's AUX trace (Intel PT or CoreSight ETM/ETE, as auxscope decode
does) and prints the statistics of a time range of its call-stack spans: the top
functions by time, calls and instructions and, with --tree, the call tree.

  --time A-B      the range [A, B): A and B in ns; a plain number is absolute perf
                  time (the clock of the file's records, as auxscope decode --time
                  takes it), +N is N ns after the start of the recording. Either side
                  may be empty (the recording's start / end): --time +1000000-+2000000
  --tid T         only that thread (default: every thread)
  --sort KEY      order of the functions: self (self time, default), total (total
                  time), calls, insns (self instructions), total-insns
  --top N         the first N functions (default 30; 0: all)
  --tree          also the call tree (top-down), every stack with its cost
  --format F      text (default), csv (one row per function, gap and, with --tree,
                  call tree node) or json
  --cpu N, --symfs DIR, --vmlinux FILE, --kcore DIR|FILE, --kallsyms FILE, -j N:
                  as for auxscope decode (see auxscope decode --help)

What the numbers mean:
  total time      time in frames of the function, callees included; a function
                  recursing is counted once per stack
  self time       total time less the time of its callees and gaps below it
  calls           frames entered in the range (frames already running when the
                  trace or a decode segment begins are not calls)
  self insns      instructions executed in the function itself; total: callees included
A span cut by an end of the range counts the part of its time inside it and its
instructions in proportion. Gaps (lost trace, overflow, missing code, decode errors,
untraced time) are summed per reason.

Exit status 0; 1 when the file cannot be read or decoded; 2 for bad arguments.
)";

struct ReportArgs : DecodeSelection {
    std::string path;
    std::string format = "text";
    RangeSort sort = RangeSort::SelfTime;
    std::string sortName = "self";
    size_t top = 30;
    bool tree = false;
    // --time: each side absolute or relative to the recording's start.
    std::optional<uint64_t> begin, end;
    bool beginRelative = false, endRelative = false;
};

std::optional<uint64_t> number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    if (errno || *end || s[0] == '-') return std::nullopt;
    return v;
}

Expected<ReportArgs> parseReportArgs(const std::vector<std::string>& args) {
    ReportArgs out;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> Expected<std::string> {
            if (i + 1 >= args.size()) return makeError(a + " needs a value");
            return args[++i];
        };
        if (a == "--format" || a == "--sort" || a == "--top" || a == "--time" || a == "--tid" ||
            isDecodeSelectionOption(a)) {
            auto v = value();
            if (!v) return v.error();
            if (a == "--format") {
                if (*v != "text" && *v != "csv" && *v != "json")
                    return makeError("--format " + *v + ": expected text, csv or json");
                out.format = *v;
            } else if (a == "--sort") {
                if (*v == "self")
                    out.sort = RangeSort::SelfTime;
                else if (*v == "total")
                    out.sort = RangeSort::TotalTime;
                else if (*v == "calls")
                    out.sort = RangeSort::Calls;
                else if (*v == "insns")
                    out.sort = RangeSort::SelfInsns;
                else if (*v == "total-insns")
                    out.sort = RangeSort::TotalInsns;
                else
                    return makeError("--sort " + *v + ": expected self, total, calls, insns or total-insns");
                out.sortName = *v;
            } else if (a == "--top") {
                auto n = number(*v);
                if (!n) return makeError("--top " + *v + ": not a number");
                out.top = *n ? size_t(*n) : SIZE_MAX;
            } else if (a == "--time") {
                const size_t dash = v->find('-', 1);
                if (dash == std::string::npos)
                    return makeError("--time " + *v + ": expected A-B (ns; +N: after the recording's start)");
                auto side = [&](std::string s, std::optional<uint64_t>& into, bool& relative) -> bool {
                    if (s.empty()) return true;
                    if (s[0] == '+') relative = true, s.erase(0, 1);
                    into = number(s);
                    return into.has_value();
                };
                if (!side(v->substr(0, dash), out.begin, out.beginRelative) ||
                    !side(v->substr(dash + 1), out.end, out.endRelative))
                    return makeError("--time " + *v +
                                     ": expected A-B in ns (+N: after the recording's start)");
            } else if (a == "--tid") {
                auto n = number(*v);
                if (!n) return makeError("--tid " + *v + ": not a thread id");
                out.window.tid = int32_t(*n);
            } else if (auto r = applyDecodeSelectionOption(a, *v, out); !r) {
                return r.error();
            }
        } else if (a == "--tree") {
            out.tree = true;
        } else if (!a.empty() && a[0] == '-') {
            return makeError("unknown option " + a);
        } else if (out.path.empty()) {
            out.path = a;
        } else {
            return makeError("more than one file: " + out.path + ", " + a);
        }
    }
    if (out.path.empty()) return makeError("no file given");
    return out;
}

// CSV field: always quoted (function names hold commas: templates, argument lists).
std::string csvField(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

std::string percent(uint64_t part, uint64_t whole) {
    char text[32];
    std::snprintf(text, sizeof text, "%5.1f%%", whole ? 100.0 * double(part) / double(whole) : 0.0);
    return text;
}

struct Report {
    const ReportArgs& args;
    const AuxTraceSession& session;
    const RangeStats& stats;
    uint64_t recordingBegin = 0, recordingEnd = 0;
    // The range's end as shown: the recording's when the range is open-ended.
    uint64_t shownEnd() const {
        return stats.end == UINT64_MAX ? std::max(recordingEnd, stats.begin) : stats.end;
    }

    std::string name(uint32_t f) const { return session.functions()[f].name; }
    std::string file(uint32_t f) const { return session.functions()[f].file; }
    uint64_t rangeTime() const {
        uint64_t t = stats.tree.nodes[0].cost.totalTime;
        for (const auto& [reason, g] : stats.gaps)
            t += g.time;
        return t;
    }

    // The call tree depth first, children by total time.
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
                return stats.tree.nodes[a].cost.totalTime > stats.tree.nodes[b].cost.totalTime;
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

    void text(std::ostream& out) const {
        char line[512];
        const uint64_t total = rangeTime();
        std::snprintf(line, sizeof line,
                      "range %" PRIu64 "-%" PRIu64 " (+%" PRIu64 " to +%" PRIu64
                      " ns after the recording's start)\n",
                      stats.begin, shownEnd(), stats.begin - recordingBegin, shownEnd() - recordingBegin);
        out << args.path << ": " << auxTraceKindName(session.kind()) << ", " << line;
        out << stats.threads.size() << " threads, " << stats.spans << " spans, " << stats.instructions()
            << " instructions, " << stats.tree.nodes[0].cost.totalTime << " ns in frames\n";
        for (const auto& [reason, g] : stats.gaps)
            out << "gaps: " << gapReasonName(reason) << ": " << g.count << " (" << g.time << " ns)\n";
        const auto top = stats.topFunctions(args.sort, args.top);
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

    void csv(std::ostream& out) const {
        out << "kind,id,parent,depth,function,file,calls,total_ns,self_ns,total_insns,self_insns\n";
        for (const FunctionStats& f : stats.topFunctions(args.sort, args.top)) {
            out << "function," << f.function << ",,," << csvField(name(f.function)) << ","
                << csvField(file(f.function)) << "," << f.cost.calls << "," << f.cost.totalTime << ","
                << f.cost.selfTime << "," << f.cost.totalInsns << "," << f.cost.selfInsns << "\n";
        }
        for (const auto& [reason, g] : stats.gaps)
            out << "gap,,,," << csvField(gapReasonName(reason)) << ",," << g.count << "," << g.time
                << ",,,\n";
        if (!args.tree) return;
        walkTree([&](uint32_t n, int depth) {
            const CallTree::Node& node = stats.tree.nodes[n];
            out << "node," << n << "," << node.parent << "," << depth << "," << csvField(name(node.function))
                << "," << csvField(file(node.function)) << "," << node.cost.calls << ","
                << node.cost.totalTime << "," << node.cost.selfTime << "," << node.cost.totalInsns << ","
                << node.cost.selfInsns << "\n";
        });
    }

    static void cost(std::ostream& out, const RangeCost& c) {
        out << "\"calls\":" << c.calls << ",\"total_ns\":" << c.totalTime << ",\"self_ns\":" << c.selfTime
            << ",\"total_insns\":" << c.totalInsns << ",\"self_insns\":" << c.selfInsns;
    }

    void json(std::ostream& out) const {
        out << "{\"file\":" << jsonString(args.path)
            << ",\"trace\":" << jsonString(auxTraceKindName(session.kind())) << ",\"begin\":" << stats.begin
            << ",\"end\":" << shownEnd() << ",\"recording_begin\":" << recordingBegin
            << ",\"spans\":" << stats.spans << ",\"instructions\":" << stats.instructions()
            << ",\"frame_ns\":" << stats.tree.nodes[0].cost.totalTime
            << ",\"sort\":" << jsonString(args.sortName);
        out << ",\"threads\":[";
        bool first = true;
        for (const auto& [tid, t] : stats.threads) {
            out << (first ? "" : ",") << "{\"tid\":" << tid
                << ",\"name\":" << jsonString(session.sideband().model().threadName(tid))
                << ",\"spans\":" << t.spans << ",\"instructions\":" << t.instructions
                << ",\"calls\":" << t.calls << ",\"frame_ns\":" << t.frameTime << "}";
            first = false;
        }
        out << "],\"gaps\":[";
        first = true;
        for (const auto& [reason, g] : stats.gaps) {
            out << (first ? "" : ",") << "{\"reason\":" << jsonString(gapReasonName(reason))
                << ",\"count\":" << g.count << ",\"time_ns\":" << g.time << "}";
            first = false;
        }
        out << "],\"functions\":[";
        first = true;
        for (const FunctionStats& f : stats.topFunctions(args.sort, args.top)) {
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

}  // namespace

int runReportCommand(const std::vector<std::string>& args) {
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::cout << kHelp;
            return 0;
        }
    }
    if (args.empty()) {
        std::cerr << kHelp;
        return 2;
    }
    auto parsed = parseReportArgs(args);
    if (!parsed) {
        std::cerr << "auxscope report: " << parsed.error().message << " (see auxscope report --help)\n";
        return 2;
    }
    ReportArgs& a = *parsed;
    auto file = PerfDataReader::open(a.path);
    if (!file) {
        std::cerr << "auxscope report: " << file.error().message << "\n";
        return 1;
    }
    if (!hasDecodableAuxTrace(*file)) {
        const AuxTraceKind kind = auxTraceKind(*file);
        std::cerr << "auxscope report: " << a.path << ": "
                  << (kind == AuxTraceKind::None
                          ? std::string("no AUX trace (AUXTRACE_INFO) to decode")
                          : std::string(auxTraceKindName(kind)) + (kind == AuxTraceKind::Other
                                                                       ? ": no decoder for this trace"
                                                                       : ": no trace data in the file"))
                  << "\n";
        return 1;
    }
    auto opened = AuxTraceSession::open(*file, a.session);
    if (!opened) {
        std::cerr << "auxscope report: " << opened.error().message << "\n";
        return 1;
    }
    AuxTraceSession& session = **opened;
    for (const std::string& note : session.traceNotes())
        std::cerr << "auxscope report: " << a.path << ": " << note << "\n";
    for (const std::string& note : session.imageNotes())
        std::cerr << "auxscope report: " << a.path << ": " << note << "\n";
    const TimeExtent extent = recordingExtent(session);
    auto resolve = [&](const std::optional<uint64_t>& v, bool relative, uint64_t otherwise) {
        if (!v) return otherwise;
        return relative ? extent.begin + *v : *v;
    };
    DecodeWindow window = a.window;
    window.begin = resolve(a.begin, a.beginRelative, extent.begin);
    window.end = resolve(a.end, a.endRelative, UINT64_MAX);
    if (window.end <= window.begin) {
        std::cerr << "auxscope report: --time: the range " << window.begin << "-" << window.end
                  << " is empty (the recording runs " << extent.begin << "-" << extent.end << ")\n";
        return 2;
    }
    DecodedSpans decoded = session.decodeSpans(window, a.threads);
    RangeQuery query;
    query.begin = window.begin;
    query.end = window.end;
    if (window.tid) query.tids = {*window.tid};
    query.threads = a.threads;
    auto stats = computeRangeStats(decoded.threads, query);
    if (!stats) {
        std::cerr << "auxscope report: " << a.path << ": " << stats.error().message << "\n";
        return 1;
    }
    for (const auto& [reason, n] : decoded.stats.gaps)
        if (reason == GapReason::DecodeError)
            std::cerr << "auxscope report: " << a.path << ": " << n << " decode errors (gaps in the range)\n";
    Report report{a, session, *stats, extent.begin, extent.end};
    std::ostringstream out;
    if (a.format == "csv")
        report.csv(out);
    else if (a.format == "json")
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

}  // namespace auxscope
