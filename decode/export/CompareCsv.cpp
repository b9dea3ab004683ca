// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/CompareCsv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "export/CsvQuoted.h"

namespace auxscope {

namespace {

bool spans(const CompareResult& r) {
    return r.source.kind == RangeSource::Spans;
}
bool scaled(const CompareResult& r) {
    return r.scaleA != 1.0 || r.scaleB != 1.0;
}

void costs(std::ostream& out, const CompareResult& r, const std::vector<CompareMetric>& metrics,
           const RangeCost& a, const RangeCost& b) {
    for (CompareMetric m : metrics) {
        const double p = r.deltaPercent(a, b, m);
        out << "," << compareNumber(r, r.scaledA(a, m)) << "," << compareNumber(r, r.scaledB(b, m)) << ","
            << compareNumber(r, r.delta(a, b, m)) << ",";
        if (!std::isnan(p)) {
            char t[32];
            std::snprintf(t, sizeof t, "%.3f", p);
            out << t;
        }
    }
    out << "\n";
}

const char* side(bool inA, bool inB) {
    return inA && inB ? "both" : inA ? "a" : "b";
}

}  // namespace

std::vector<CompareMetric> compareColumns(const CompareResult& r) {
    if (spans(r))
        return {CompareMetric::SelfTime, CompareMetric::TotalTime, CompareMetric::Calls,
                CompareMetric::SelfInsns, CompareMetric::TotalInsns};
    return {CompareMetric::SelfSamples, CompareMetric::TotalSamples, CompareMetric::SelfPeriod,
            CompareMetric::TotalPeriod};
}

std::string compareKeyName(const CompareResult& r, uint32_t key) {
    const CompareKey& k = r.keys[key];
    return k.inlined ? k.name + " (inlined)" : k.name;
}

std::string compareNumber(const CompareResult& r, double v, bool sign) {
    char text[64];
    if (scaled(r))
        std::snprintf(text, sizeof text, sign ? "%+.2f" : "%.2f", v);
    else
        std::snprintf(text, sizeof text, sign ? "%+.0f" : "%.0f", v);
    return text;
}

void walkCompareTree(const CompareResult& r, const CompareTree& t,
                     const std::function<void(uint32_t node, int depth)>& visit) {
    const CompareMetric key = spans(r) ? CompareMetric::TotalTime : CompareMetric::TotalPeriod;
    auto size = [&](uint32_t n) { return std::max(r.scaledA(t.a[n], key), r.scaledB(t.b[n], key)); };
    std::vector<std::pair<uint32_t, int>> todo;
    auto push = [&](uint32_t node, int depth) {
        std::vector<uint32_t> kids = t.shape.children(node);
        std::stable_sort(kids.begin(), kids.end(), [&](uint32_t x, uint32_t y) { return size(x) > size(y); });
        for (size_t k = kids.size(); k-- > 0;)
            todo.emplace_back(kids[k], depth);
    };
    push(0, 0);
    while (!todo.empty()) {
        auto [n, depth] = todo.back();
        todo.pop_back();
        visit(n, depth);
        push(n, depth + 1);
    }
}

void writeCompareCsv(std::ostream& out, const CompareResult& r, const CompareCsvOptions& options) {
    const std::vector<CompareMetric> metrics = compareColumns(r);
    out << "kind,id,parent,depth,function,file,side";
    for (CompareMetric m : metrics) {
        const std::string n = compareMetricName(m);
        out << ",a_" << n << ",b_" << n << ",delta_" << n << ",delta_pct_" << n;
    }
    out << "\n";
    for (const ComparedFunction& f : r.sorted(options.sort, options.sortSide, options.limit)) {
        out << "function," << f.key << ",,," << csvQuoted(compareKeyName(r, f.key)) << ","
            << csvQuoted(r.keys[f.key].file) << "," << side(f.inA, f.inB);
        costs(out, r, metrics, f.a, f.b);
    }
    auto tree = [&](const CompareTree& t, const char* kind) {
        walkCompareTree(r, t, [&](uint32_t n, int depth) {
            const CallTree::Node& node = t.shape.nodes[n];
            const bool inA = t.a[n] != RangeCost{}, inB = t.b[n] != RangeCost{};
            out << kind << "," << n << "," << node.parent << "," << depth << ","
                << csvQuoted(compareKeyName(r, node.function)) << "," << csvQuoted(r.keys[node.function].file)
                << "," << side(inA, inB);
            costs(out, r, metrics, t.a[n], t.b[n]);
        });
    };
    if (options.tree) tree(r.tree, "node");
    if (options.bottomUp) tree(r.bottomUp(), "bottom-up");
}

}  // namespace auxscope
