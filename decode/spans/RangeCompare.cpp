// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/RangeCompare.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace auxscope {

uint64_t costOf(const RangeCost& c, CompareMetric m) {
    switch (m) {
        case CompareMetric::Calls:
            return c.calls;
        case CompareMetric::SelfTime:
            return c.selfTime;
        case CompareMetric::TotalTime:
            return c.totalTime;
        case CompareMetric::SelfInsns:
            return c.selfInsns;
        case CompareMetric::TotalInsns:
            return c.totalInsns;
        case CompareMetric::SelfSamples:
            return c.selfSamples;
        case CompareMetric::TotalSamples:
            return c.totalSamples;
        case CompareMetric::SelfPeriod:
            return c.selfPeriod;
        case CompareMetric::TotalPeriod:
            return c.totalPeriod;
    }
    return 0;
}

const char* compareMetricHeading(CompareMetric m) {
    switch (m) {
        case CompareMetric::SelfTime:
            return "self ns";
        case CompareMetric::TotalTime:
            return "total ns";
        case CompareMetric::Calls:
            return "calls";
        case CompareMetric::SelfInsns:
            return "self insns";
        case CompareMetric::TotalInsns:
            return "total insns";
        case CompareMetric::SelfSamples:
            return "self samples";
        case CompareMetric::TotalSamples:
            return "total samples";
        case CompareMetric::SelfPeriod:
            return "self period";
        case CompareMetric::TotalPeriod:
            return "total period";
    }
    return "";
}

const char* compareMetricName(CompareMetric m) {
    switch (m) {
        case CompareMetric::Calls:
            return "calls";
        case CompareMetric::SelfTime:
            return "self_ns";
        case CompareMetric::TotalTime:
            return "total_ns";
        case CompareMetric::SelfInsns:
            return "self_insns";
        case CompareMetric::TotalInsns:
            return "total_insns";
        case CompareMetric::SelfSamples:
            return "self_samples";
        case CompareMetric::TotalSamples:
            return "total_samples";
        case CompareMetric::SelfPeriod:
            return "self_period";
        case CompareMetric::TotalPeriod:
            return "total_period";
    }
    return "";
}

double CompareResult::deltaPercent(const RangeCost& a, const RangeCost& b, CompareMetric m) const {
    const double va = scaledA(a, m);
    if (va == 0) return std::nan("");
    return 100.0 * (scaledB(b, m) - va) / va;
}

std::vector<ComparedFunction> CompareResult::onlyInA() const {
    std::vector<ComparedFunction> out;
    for (const ComparedFunction& f : functions)
        if (f.inA && !f.inB) out.push_back(f);
    return out;
}

std::vector<ComparedFunction> CompareResult::onlyInB() const {
    std::vector<ComparedFunction> out;
    for (const ComparedFunction& f : functions)
        if (f.inB && !f.inA) out.push_back(f);
    return out;
}

std::vector<ComparedFunction> CompareResult::sorted(CompareMetric by, char bySide, size_t limit) const {
    std::vector<ComparedFunction> out = functions;
    auto key = [&](const ComparedFunction& f) {
        switch (bySide) {
            case 'a':
                return scaledA(f.a, by);
            case 'b':
                return scaledB(f.b, by);
            case 'p': {
                const double p = deltaPercent(f.a, f.b, by);
                if (std::isnan(p)) return scaledB(f.b, by) > 0 ? HUGE_VAL : 0.0;  // new: first
                return std::fabs(p);
            }
            default:
                return std::fabs(delta(f.a, f.b, by));
        }
    };
    std::vector<std::pair<double, size_t>> order;
    order.reserve(out.size());
    for (size_t i = 0; i < out.size(); ++i)
        order.emplace_back(key(out[i]), i);
    std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
        if (x.first != y.first) return x.first > y.first;
        return out[x.second].key < out[y.second].key;
    });
    std::vector<ComparedFunction> result;
    result.reserve(std::min(limit, out.size()));
    for (size_t i = 0; i < order.size() && result.size() < limit; ++i)
        result.push_back(out[order[i].second]);
    return result;
}

std::vector<const ComparedFunction*> CompareResult::byName(const std::string& name) const {
    std::vector<const ComparedFunction*> out;
    for (const ComparedFunction& f : functions)
        if (keys[f.key].name == name) out.push_back(&f);
    return out;
}

namespace {

std::string baseName(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Hands out one key per distinct (name, binary) -- or name -- over both sides.
class KeyTable {
public:
    explicit KeyTable(MatchBy match) : match_(match) {}
    uint32_t keyOf(const FunctionInfo& f) {
        CompareKey k{f.name, baseName(f.file), f.inlined};
        std::string text = k.name;
        text += '\0';
        text += k.inlined ? '1' : '0';
        if (match_ == MatchBy::NameAndBinary) {
            text += '\0';
            text += k.file;
        }
        auto [it, added] = index_.try_emplace(std::move(text), uint32_t(keys.size()));
        if (added) keys.push_back(std::move(k));
        return it->second;
    }
    std::vector<CompareKey> keys;

private:
    MatchBy match_;
    std::unordered_map<std::string, uint32_t> index_;
};

// The side's tree with every node's function replaced by its key; stacks that
// become the same stack of keys are added together.
CallTree keyedTree(const CompareSide& side, KeyTable& keys) {
    const CallTree& tree = side.stats->tree;
    std::vector<uint32_t> keyOfId(side.functions->size(), UINT32_MAX);
    std::vector<uint32_t> at(tree.nodes.size(), 0);
    CallTree out;
    out.nodes[0].cost = tree.nodes[0].cost;
    for (uint32_t n = 1; n < tree.nodes.size(); ++n) {  // parents come before children
        const CallTree::Node& node = tree.nodes[n];
        // An id the table lacks (never from one decode) counts as unknown code.
        static const FunctionInfo unknown{"[unknown]", "", 0, false};
        if (node.function >= keyOfId.size()) keyOfId.resize(size_t(node.function) + 1, UINT32_MAX);
        uint32_t& k = keyOfId[node.function];
        if (k == UINT32_MAX)
            k = keys.keyOf(node.function < side.functions->size() ? (*side.functions)[node.function]
                                                                  : unknown);
        at[n] = out.child(at[node.parent], k);
        out.nodes[at[n]].cost += node.cost;
    }
    return out;
}

// A and B merged by path into one shape.
CompareTree mergeTrees(const CallTree& a, const CallTree& b) {
    CompareTree out;
    auto add = [&](const CallTree& tree, std::vector<RangeCost> CompareTree::*side) {
        std::vector<uint32_t> at(tree.nodes.size(), 0);
        for (uint32_t n = 1; n < tree.nodes.size(); ++n) {
            const CallTree::Node& node = tree.nodes[n];
            at[n] = out.shape.child(at[node.parent], node.function);
            out.a.resize(out.shape.size());
            out.b.resize(out.shape.size());
            (out.*side)[at[n]] += node.cost;
        }
        out.a.resize(out.shape.size());
        out.b.resize(out.shape.size());
        (out.*side)[0] += tree.nodes[0].cost;
    };
    add(a, &CompareTree::a);
    add(b, &CompareTree::b);
    return out;
}

}  // namespace

CompareTree CompareResult::bottomUp() const {
    RangeStats a, b;
    a.tree = keyedA;
    b.tree = keyedB;
    return mergeTrees(a.bottomUp(), b.bottomUp());
}

namespace {

std::string describe(const RangeSource& s) {
    switch (s.kind) {
        case RangeSource::Spans:
            return "decoded trace";
        case RangeSource::Samples:
            return "samples of " + s.event;
        case RangeSource::OffCpu:
            return "off-CPU time";
    }
    return "";
}

}  // namespace

Expected<CompareResult> compareRanges(const CompareSide& a, const CompareSide& b,
                                      const CompareOptions& options) {
    if (a.stats->source.kind != b.stats->source.kind ||
        (a.stats->source.kind == RangeSource::Samples && a.stats->source.event != b.stats->source.event))
        return makeError("A and B count different things: A has " + describe(a.stats->source) + ", B has " +
                         describe(b.stats->source));
    CompareResult out;
    out.source = a.stats->source;
    KeyTable keys(options.match);
    RangeStats ka, kb;  // each side in terms of keys
    ka.source = a.stats->source;
    kb.source = b.stats->source;
    ka.tree = keyedTree(a, keys);
    kb.tree = keyedTree(b, keys);
    ka.functions = functionStatsOf(ka.tree);
    kb.functions = functionStatsOf(kb.tree);
    out.keys = std::move(keys.keys);
    out.functions.resize(out.keys.size());
    for (uint32_t k = 0; k < out.keys.size(); ++k)
        out.functions[k].key = k;
    for (const FunctionStats& f : ka.functions) {
        out.functions[f.function].a = f.cost;
        out.functions[f.function].inA = true;
    }
    for (const FunctionStats& f : kb.functions) {
        out.functions[f.function].b = f.cost;
        out.functions[f.function].inB = true;
    }
    // Keys are made for tree nodes only, so every key occurs on a side.
    out.tree = mergeTrees(ka.tree, kb.tree);
    out.keyedA = std::move(ka.tree);
    out.keyedB = std::move(kb.tree);

    const bool spans = out.source.kind == RangeSource::Spans;
    const RangeCost& ra = a.stats->tree.nodes[0].cost;
    const RangeCost& rb = b.stats->tree.nodes[0].cost;
    out.totalA = spans ? ra.totalTime : ra.totalPeriod;
    out.totalB = spans ? rb.totalTime : rb.totalPeriod;
    switch (options.normalize.kind) {
        case CompareNormalize::None:
            break;
        case CompareNormalize::Total:
            if (out.totalB == 0)
                return makeError(std::string("B has nothing to scale to A's total: no ") +
                                 (spans ? "time in frames" : "samples") + " in its range");
            out.scaleB = double(out.totalA) / double(out.totalB);
            break;
        case CompareNormalize::PerCall: {
            if (!spans)
                return makeError("per call of " + options.normalize.function +
                                 ": samples do not count calls (a decoded trace does)");
            uint64_t callsA = 0, callsB = 0;
            bool known = false;
            for (const ComparedFunction* f : out.byName(options.normalize.function)) {
                callsA += f->a.calls;
                callsB += f->b.calls;
                known = true;
            }
            if (!known)
                return makeError("per call of " + options.normalize.function +
                                 ": no function of that name in A or B");
            if (callsA == 0 || callsB == 0)
                return makeError("per call of " + options.normalize.function + ": " +
                                 (callsA == 0 ? "A" : "B") + " has no calls of it in its range");
            out.scaleA = 1.0 / double(callsA);
            out.scaleB = 1.0 / double(callsB);
            break;
        }
    }
    return out;
}

}  // namespace auxscope
