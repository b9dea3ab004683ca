// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/CompareCommand.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <tuple>

#include "OptionParser.h"
#include "cli/DecodeOptions.h"
#include "cli/JsonString.h"
#include "export/CompareCsv.h"

namespace auxscope {
namespace {

const char* kHelp =
    R"(usage: auxscope compare A.DATA B.DATA [--time A-B] [--time-b A-B] [--tid T] [--tid-b T]
                        [--event NAME] [--source auto|trace|samples|off-cpu] [--by-symbol]
                        [--normalize none|total|per-call=FUNC] [--sort COLUMN]
                        [--format text|csv|json] [--limit N] [--tree] [--bottom-up] [--no-inline]
                        [--cpu N] [--symfs DIR] [--vmlinux FILE] [--kcore DIR|FILE]
                        [--kallsyms FILE] [--binary-dir DIR] [--debug-dir DIR] [--debuginfod URL]
                        [--no-debuginfod] [--jit-dump FILE] [--perf-map FILE] [-j N]
       auxscope report --diff A.DATA B.DATA [the same options]

Before and after: the statistics of a time range of A and of B, as auxscope report
computes them (the decoded AUX trace of each, Intel PT or CoreSight ETM/ETE, or
their samples), side by side with the change from A to B. Functions are matched
by name and binary (the file's base name, not its address, so a rebuilt program
matches), or with --by-symbol by name alone. A and B must count the same thing:
both decoded traces, or samples of the same event. For two ranges of one file,
name it twice: auxscope compare F F --time +0-+1000000 --time-b +1000000-+2000000

  --time A-B      the range of both files (as auxscope report --time; +N is N ns
                  after each recording's start)
  --time-b A-B    B's range instead (A keeps --time's)
  --tid T         only that thread, on both sides
  --tid-b T       B's thread instead (two captures have other thread ids; or two
                  threads of one file)
  --event NAME    samples: the sampled event on both sides (default: the first
                  with samples that is not a switch event)
  --source S      auto (default: the trace when a file has one), trace, samples
                  or off-cpu, as auxscope report --source
  --by-symbol     match functions by name only (another library version, a
                  renamed binary), not by name and binary
  --normalize N   none (default): the counts as measured; total: B scaled to A's
                  total (time in frames for traces, period for samples: one run
                  against the other); per-call=FUNC: each side divided by its calls
                  of FUNC (traces: one average request against another)
  --sort COLUMN   the functions by the largest change of COLUMN (default self);
                  COLUMN:a or COLUMN:b by that side's value, COLUMN:pct by the
                  largest change in percent (new functions first). trace: self,
                  total, calls, insns, total-insns; samples: self, total (period),
                  samples, total-samples
  --limit N       the first N functions (default 30; 0: all; --top N is the same)
  --tree          also the merged call tree (top-down): each stack with both sides
  --bottom-up     also the merged bottom-up tree: each function, then its callers
  --format F      text (default), csv (one row per function, one-side function
                  and, with --tree/--bottom-up, tree node) or json
  --no-inline, --cpu N, --symfs DIR, --vmlinux FILE, --kcore DIR|FILE, --kallsyms FILE,
  --jit-dump FILE, --perf-map FILE, --pt-decoder walk|block, -j N:
                  as for auxscope report (see auxscope report --help)
%LOOKUP%

Each column shows A, B (scaled when --normalize says so), B - A and the change in
% of A ("new" when A has none). Functions found on one side only are listed as
such after the table.

Exit status 0; 1 when a file cannot be read or decoded, or the two count different
things; 2 for bad arguments.
)";

struct SortColumn {
    const char* name;
    CompareMetric metric;
};
const SortColumn kSpanColumns[] = {{"self", CompareMetric::SelfTime},
                                   {"total", CompareMetric::TotalTime},
                                   {"calls", CompareMetric::Calls},
                                   {"insns", CompareMetric::SelfInsns},
                                   {"total-insns", CompareMetric::TotalInsns}};
const SortColumn kSampleColumns[] = {{"self", CompareMetric::SelfPeriod},
                                     {"total", CompareMetric::TotalPeriod},
                                     {"samples", CompareMetric::SelfSamples},
                                     {"total-samples", CompareMetric::TotalSamples}};

Expected<CompareMetric> sortMetric(const std::string& name, bool spans) {
    if (spans) {
        for (const SortColumn& c : kSpanColumns)
            if (name == c.name) return c.metric;
        return makeError("--sort " + name + ": expected self, total, calls, insns or total-insns");
    }
    for (const SortColumn& c : kSampleColumns)
        if (name == c.name) return c.metric;
    return makeError("--sort " + name + ": expected self, total, samples or total-samples for samples");
}

}  // namespace

Expected<CompareArgs> parseCompareArgs(const std::vector<std::string>& args) {
    static const std::vector<OptionSpec> table = withDecodeSelectionOptions({
        {"format", 0, OptionArg::Required, "text|csv|json", ""},
        {"sort", 0, OptionArg::Required, "COLUMN", ""},
        {"limit", 0, OptionArg::Required, "N", ""},
        {"top", 0, OptionArg::Required, "N", ""},
        {"source", 0, OptionArg::Required, "auto|trace|samples|off-cpu", ""},
        {"event", 0, OptionArg::Required, "NAME", ""},
        {"by-symbol", 0, OptionArg::None, "", ""},
        {"normalize", 0, OptionArg::Required, "none|total|per-call=FUNC", ""},
        {"time-b", 0, OptionArg::Required, "A-B", ""},
        {"tid-b", 0, OptionArg::Required, "T", ""},
        {"tree", 0, OptionArg::None, "", ""},
        {"bottom-up", 0, OptionArg::None, "", ""},
        {"no-inline", 0, OptionArg::None, "", ""},
        {"help", 'h', OptionArg::None, "", ""},
    });
    auto cl = parseCommandLine(table, args);
    if (!cl) return cl.error();
    CompareArgs out;
    std::optional<ParsedOption> timeB, tidB;
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
            std::string name = v;
            const size_t colon = v.rfind(':');
            if (colon != std::string::npos) {
                const std::string side = v.substr(colon + 1);
                name = v.substr(0, colon);
                if (side == "a" || side == "b")
                    out.sortSide = side[0];
                else if (side == "pct")
                    out.sortSide = 'p';
                else
                    return makeError("--sort " + v + ": expected COLUMN, COLUMN:a, COLUMN:b or COLUMN:pct");
            }
            out.sortName = name;  // checked once the source is known
        } else if (o.is("limit") || o.is("top")) {
            auto n = parseUnsignedOption(o.spelling, v);
            if (!n) return n.error();
            out.limit = *n ? size_t(*n) : SIZE_MAX;
        } else if (o.is("source")) {
            if (v != "auto" && v != "trace" && v != "samples" && v != "off-cpu")
                return makeError("--source " + v + ": expected auto, trace, samples or off-cpu");
            out.a.source = out.b.source = v;
        } else if (o.is("event")) {
            out.a.event = out.b.event = v;
        } else if (o.is("by-symbol")) {
            out.options.match = MatchBy::Name;
        } else if (o.is("normalize")) {
            if (v == "none") {
                out.options.normalize = {};
            } else if (v == "total") {
                out.options.normalize = {CompareNormalize::Total, ""};
            } else if (v.starts_with("per-call=") && v.size() > 9) {
                out.options.normalize = {CompareNormalize::PerCall, v.substr(9)};
            } else {
                return makeError("--normalize " + v + ": expected none, total or per-call=FUNCTION");
            }
        } else if (o.is("time-b")) {
            timeB = o;
        } else if (o.is("tid-b")) {
            tidB = o;
        } else if (o.is("tree")) {
            out.tree = true;
        } else if (o.is("bottom-up")) {
            out.bottomUp = true;
        } else if (o.is("no-inline")) {
            out.a.inlineFrames = out.b.inlineFrames = false;
        } else {
            if (auto r = applyDecodeSelectionOption(o, out.a); !r) return r.error();
            if (auto r = applyDecodeSelectionOption(o, out.b); !r) return r.error();
        }
    }
    // B's range and thread: --time's and --tid's own parsing, under these options' names.
    for (const auto& [given, name] : {std::pair{&timeB, "time"}, std::pair{&tidB, "tid"}}) {
        if (!*given) continue;
        ParsedOption t = **given;
        for (const OptionSpec& s : decodeSelectionOptions())
            if (std::string_view(s.longName) == name) t.spec = &s;
        if (auto r = applyDecodeSelectionOption(t, out.b); !r) return r.error();
    }
    if (cl->operands.size() != 2)
        return makeError(cl->operands.empty() ? std::string("no file given: expected A and B")
                         : cl->operands.size() == 1
                             ? "only one file ('" + cl->operands[0] + "'): expected A and B"
                             : "more than two files: '" + cl->operands[2] + "'");
    out.a.path = cl->operands[0];
    out.b.path = cl->operands[1];
    addOpenedFileFolder(out.a.path, out.a);
    addOpenedFileFolder(out.b.path, out.b);
    return out;
}

namespace {

struct CompareReport {
    const CompareArgs& args;
    const ReportRange& ra;
    const ReportRange& rb;
    const CompareResult& r;
    CompareMetric sort;
    bool spans() const { return r.source.kind == RangeSource::Spans; }
    bool scaled() const { return r.scaleA != 1.0 || r.scaleB != 1.0; }

    std::vector<CompareMetric> metrics() const { return compareColumns(r); }
    std::string name(uint32_t key) const { return compareKeyName(r, key); }
    std::string number(double v, bool sign = false) const { return compareNumber(r, v, sign); }
    static std::string pct(double p) {
        if (std::isnan(p)) return "new";
        char text[32];
        std::snprintf(text, sizeof text, "%+.1f%%", p);
        return text;
    }
    // Delta % as text, "" when both sides are 0.
    std::string pctOf(const RangeCost& a, const RangeCost& b, CompareMetric m) const {
        if (costOf(a, m) == 0 && costOf(b, m) == 0) return "0.0%";
        return pct(r.deltaPercent(a, b, m));
    }
    static const char* sideNote(bool inA, bool inB) {
        return inA && !inB ? "A only" : !inA && inB ? "B only" : "";
    }

    std::string rangeLine(const ReportRange& x, const ReportArgs& a) const {
        const uint64_t end =
            x.stats.end == UINT64_MAX ? std::max(x.recordingEnd, x.stats.begin) : x.stats.end;
        char line[256];
        std::snprintf(line, sizeof line,
                      "range %" PRIu64 "-%" PRIu64 " (+%" PRIu64 " to +%" PRIu64
                      " ns after the recording's start)",
                      x.stats.begin, end, x.stats.begin - x.recordingBegin, end - x.recordingBegin);
        return a.path + ": " + x.sourceName + ", " + line +
               (a.window.tid ? ", thread " + std::to_string(*a.window.tid) : std::string());
    }
    std::string normalizeName() const {
        switch (args.options.normalize.kind) {
            case CompareNormalize::None:
                return "none";
            case CompareNormalize::Total:
                return "total";
            case CompareNormalize::PerCall:
                return "per-call=" + args.options.normalize.function;
        }
        return "";
    }

    template <typename Visit>
    void walk(const CompareTree& t, Visit&& visit) const {
        walkCompareTree(r, t, visit);
    }

    // Two heading lines: each column's name over its four cells, then A, B, delta, %.
    static void columnHeads(std::ostream& out, const std::vector<CompareMetric>& cols, int w) {
        char cell[128];
        const int span = 3 * w + 8 + 4;
        for (CompareMetric m : cols) {
            const std::string name = std::string(compareMetricHeading(m));
            const int pad = std::max(0, (span - 1 - int(name.size())) / 2);
            std::snprintf(cell, sizeof cell, "%*s%-*s", pad, "", span - pad, name.c_str());
            out << cell;
        }
        out << "\n";
        for (size_t i = 0; i < cols.size(); ++i) {
            std::snprintf(cell, sizeof cell, "%*s %*s %*s %8s ", w, "A", w, "B", w, "delta", "%");
            out << cell;
        }
        out << " function\n";
    }
    // "  [binary]" after a function's name ("" when it has none).
    std::string binary(uint32_t key) const {
        const std::string& f = r.keys[key].file;
        if (f.empty()) return "";
        return f.front() == '[' ? "  " + f : "  [" + f + "]";
    }

    void text(std::ostream& out) const {
        out << "A: " << rangeLine(ra, args.a) << "\n";
        out << "B: " << rangeLine(rb, args.b) << "\n";
        out << "matched by " << (args.options.match == MatchBy::Name ? "name" : "name and binary")
            << "; normalised: " << normalizeName();
        if (scaled()) {
            char s[96];
            std::snprintf(s, sizeof s, " (A x %.6g, B x %.6g)", r.scaleA, r.scaleB);
            out << s;
        }
        out << "\n";
        const RangeCost& ta = r.tree.a[0];
        const RangeCost& tb = r.tree.b[0];
        if (spans()) {
            out << "instructions: " << number(r.scaledA(ta, CompareMetric::TotalInsns)) << " -> "
                << number(r.scaledB(tb, CompareMetric::TotalInsns)) << " ("
                << pctOf(ta, tb, CompareMetric::TotalInsns)
                << "); ns in frames: " << number(r.scaledA(ta, CompareMetric::TotalTime)) << " -> "
                << number(r.scaledB(tb, CompareMetric::TotalTime)) << " ("
                << pctOf(ta, tb, CompareMetric::TotalTime) << ")\n";
        } else {
            out << "samples: " << number(r.scaledA(ta, CompareMetric::TotalSamples)) << " -> "
                << number(r.scaledB(tb, CompareMetric::TotalSamples)) << " ("
                << pctOf(ta, tb, CompareMetric::TotalSamples)
                << "); period: " << number(r.scaledA(ta, CompareMetric::TotalPeriod)) << " -> "
                << number(r.scaledB(tb, CompareMetric::TotalPeriod)) << " ("
                << pctOf(ta, tb, CompareMetric::TotalPeriod) << ")\n";
        }
        const auto top = r.sorted(sort, args.sortSide, args.limit);
        out << "\nfunctions by "
            << (args.sortSide == 'a'   ? "A's "
                : args.sortSide == 'b' ? "B's "
                : args.sortSide == 'p' ? "the change in % of "
                                       : "the change of ")
            << args.sortName << " (" << top.size() << " of " << r.functions.size() << "):\n";
        const int w = scaled() ? 16 : 13;
        char cell[128];
        columnHeads(out, metrics(), w);
        for (const ComparedFunction& f : top) {
            for (CompareMetric m : metrics()) {
                std::snprintf(cell, sizeof cell, "%*s %*s %*s %8s ", w, number(r.scaledA(f.a, m)).c_str(), w,
                              number(r.scaledB(f.b, m)).c_str(), w,
                              number(r.delta(f.a, f.b, m), true).c_str(), pctOf(f.a, f.b, m).c_str());
                out << cell;
            }
            out << " " << name(f.key);
            out << binary(f.key);
            if (const char* n = sideNote(f.inA, f.inB); *n) out << "  (" << n << ")";
            out << "\n";
        }
        for (const auto& [label, list] : {std::pair{"A", r.onlyInA()}, std::pair{"B", r.onlyInB()}}) {
            out << "\nonly in " << label << ": " << list.size() << " functions";
            out << (list.empty() ? "\n" : ":\n");
            size_t shown = 0;
            for (const ComparedFunction& f : r.sorted(sort, label[0] == 'A' ? 'a' : 'b', SIZE_MAX)) {
                if (!(label[0] == 'A' ? f.inA && !f.inB : f.inB && !f.inA)) continue;
                if (shown++ == args.limit) {
                    out << "  ... (--limit 0: all)\n";
                    break;
                }
                const RangeCost& c = label[0] == 'A' ? f.a : f.b;
                out << "  " << name(f.key);
                out << binary(f.key);
                out << ": " << compareMetricHeading(sort) << " "
                    << number(label[0] == 'A' ? r.scaledA(c, sort) : r.scaledB(c, sort)) << "\n";
            }
        }
        auto tree = [&](const CompareTree& t, const char* title) {
            const std::vector<CompareMetric> cols =
                spans()
                    ? std::vector{CompareMetric::TotalTime, CompareMetric::Calls, CompareMetric::TotalInsns}
                    : std::vector{CompareMetric::TotalSamples, CompareMetric::SelfSamples};
            out << "\n" << title << ":\n";
            columnHeads(out, cols, w);
            walk(t, [&](uint32_t n, int depth) {
                for (CompareMetric m : cols) {
                    std::snprintf(
                        cell, sizeof cell, "%*s %*s %*s %8s ", w, number(r.scaledA(t.a[n], m)).c_str(), w,
                        number(r.scaledB(t.b[n], m)).c_str(), w,
                        number(r.delta(t.a[n], t.b[n], m), true).c_str(), pctOf(t.a[n], t.b[n], m).c_str());
                    out << cell;
                }
                out << " " << std::string(size_t(depth) * 2, ' ') << name(t.shape.nodes[n].function) << "\n";
            });
        };
        if (args.tree) tree(r.tree, "call tree (top-down, both sides; children by the larger total)");
        if (args.bottomUp)
            tree(r.bottomUp(), "bottom-up (each function, then the callers it was reached from)");
    }

    void csv(std::ostream& out) const {
        writeCompareCsv(out, r, {sort, args.sortSide, args.limit, args.tree, args.bottomUp});
    }

    void jsonCosts(std::ostream& out, const RangeCost& a, const RangeCost& b) const {
        const char* sides[] = {"a", "b", "delta", "delta_pct"};
        for (int s = 0; s < 4; ++s) {
            out << (s ? "," : "") << "\"" << sides[s] << "\":{";
            bool first = true;
            for (CompareMetric m : metrics()) {
                const double v = s == 0   ? r.scaledA(a, m)
                                 : s == 1 ? r.scaledB(b, m)
                                 : s == 2 ? r.delta(a, b, m)
                                          : r.deltaPercent(a, b, m);
                out << (first ? "" : ",") << "\"" << compareMetricName(m) << "\":" << jsonNumber(v);
                first = false;
            }
            out << "}";
        }
    }

    void jsonSide(std::ostream& out, const ReportRange& x, const ReportArgs& a) const {
        out << "{\"file\":" << jsonString(a.path) << ",\"source\":" << jsonString(x.sourceName)
            << ",\"begin\":" << x.stats.begin << ",\"end\":"
            << (x.stats.end == UINT64_MAX ? std::max(x.recordingEnd, x.stats.begin) : x.stats.end)
            << ",\"recording_begin\":" << x.recordingBegin;
        if (a.window.tid) out << ",\"tid\":" << *a.window.tid;
        out << "}";
    }

    void json(std::ostream& out) const {
        out << "{\"a\":";
        jsonSide(out, ra, args.a);
        out << ",\"b\":";
        jsonSide(out, rb, args.b);
        out << ",\"kind\":"
            << jsonString(spans()                                ? "trace"
                          : r.source.kind == RangeSource::OffCpu ? "off-cpu"
                                                                 : "samples")
            << ",\"event\":" << jsonString(r.source.event)
            << ",\"match\":" << jsonString(args.options.match == MatchBy::Name ? "name" : "name-and-binary")
            << ",\"normalize\":" << jsonString(normalizeName()) << ",\"scale_a\":" << jsonNumber(r.scaleA)
            << ",\"scale_b\":" << jsonNumber(r.scaleB) << ",\"sort\":" << jsonString(args.sortName)
            << ",\"totals\":{";
        jsonCosts(out, r.tree.a[0], r.tree.b[0]);
        out << "},\"functions\":[";
        bool first = true;
        for (const ComparedFunction& f : r.sorted(sort, args.sortSide, args.limit)) {
            out << (first ? "" : ",") << "{\"name\":" << jsonString(name(f.key))
                << ",\"file\":" << jsonString(r.keys[f.key].file) << ",\"side\":"
                << jsonString(f.inA && f.inB ? "both"
                              : f.inA        ? "a"
                                             : "b")
                << ",";
            jsonCosts(out, f.a, f.b);
            out << "}";
            first = false;
        }
        out << "]";
        for (const auto& [label, list] :
             {std::pair{"only_in_a", r.onlyInA()}, std::pair{"only_in_b", r.onlyInB()}}) {
            out << ",\"" << label << "\":[";
            first = true;
            for (const ComparedFunction& f : list) {
                out << (first ? "" : ",") << "{\"name\":" << jsonString(name(f.key))
                    << ",\"file\":" << jsonString(r.keys[f.key].file) << "}";
                first = false;
            }
            out << "]";
        }
        auto tree = [&](const CompareTree& t, const char* label) {
            out << ",\"" << label << "\":[";
            first = true;
            walk(t, [&](uint32_t n, int depth) {
                const CallTree::Node& node = t.shape.nodes[n];
                out << (first ? "" : ",") << "{\"id\":" << n << ",\"parent\":" << node.parent
                    << ",\"depth\":" << depth << ",\"name\":" << jsonString(name(node.function))
                    << ",\"file\":" << jsonString(r.keys[node.function].file) << ",";
                jsonCosts(out, t.a[n], t.b[n]);
                out << "}";
                first = false;
            });
            out << "]";
        };
        if (args.tree) tree(r.tree, "tree");
        if (args.bottomUp) tree(r.bottomUp(), "bottom_up");
        out << "}\n";
    }
};

}  // namespace

int runCompareCommand(const std::vector<std::string>& args, const std::string& command) {
    const std::string prefix = "auxscope " + command;
    if (args.empty()) {
        std::cerr << withImageLookupHelp(kHelp);
        return 2;
    }
    auto parsed = parseCompareArgs(args);
    if (!parsed) {
        std::cerr << prefix << ": " << parsed.error().message << " (auxscope compare --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << withImageLookupHelp(kHelp);
        return 0;
    }
    const CompareArgs& c = *parsed;
    ReportRange a, b;
    if (int status = loadReportRange(c.a, prefix, a)) return status;
    if (int status = loadReportRange(c.b, prefix, b)) return status;
    // A range that starts past its recording's end compares with nothing: refused.
    for (const auto& [range, args, option] :
         {std::tuple{&a, &c.a, "--time"}, std::tuple{&b, &c.b, "--time-b"}})
        if (range->stats.begin >= range->recordingEnd) {
            std::cerr << prefix << ": " << args->path << ": the range starts at " << range->stats.begin
                      << ", after the recording's end (" << range->recordingEnd << "; " << option
                      << (option == std::string("--time-b") ? " or --time" : "") << ")\n";
            return 2;
        }
    auto metric = sortMetric(c.sortName, a.stats.source.kind == RangeSource::Spans);
    if (!metric) {
        std::cerr << prefix << ": " << metric.error().message << " (auxscope compare --help)\n";
        return 2;
    }
    auto result = compareRanges({&a.stats, a.functions}, {&b.stats, b.functions}, c.options);
    if (!result) {
        std::cerr << prefix << ": " << c.a.path << " against " << c.b.path << ": " << result.error().message
                  << "\n";
        return 1;
    }
    const CompareReport report{c, a, b, *result, *metric};
    std::ostringstream out;
    if (c.format == "csv")
        report.csv(out);
    else if (c.format == "json")
        report.json(out);
    else
        report.text(out);
    std::cout << out.str();
    std::cout.flush();
    if (!std::cout) {
        std::cerr << prefix << ": cannot write to stdout\n";
        return 1;
    }
    return 0;
}

}  // namespace auxscope
