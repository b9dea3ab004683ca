// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Per-function costs of an auxscope-ptsynth trace from its truth, beside the
// same costs from a decode's RangeStats, for the golden tests of range
// statistics and of stacks across segment cuts.
//
// What the truth says a decode that starts at instruction `from` knows about
// instructions [from, to): the stack is rebuilt from there as a decoder does
// (the function running at `from` is the first frame; a return past the
// outermost known frame finds its caller one level further out), so totals
// count what the trace shows from its sync point on. Per function name: calls
// (frames opened by a call), self and total instructions (recursion counted
// once per stack in totals).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "PtSynthTruth.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"

namespace auxscope::test_support {

struct TruthCost {
    uint64_t calls = 0, selfInsns = 0, totalInsns = 0;
    bool operator==(const TruthCost&) const = default;
};
using TruthCosts = std::map<std::string, TruthCost>;

// The generated program's functions by entry address.
struct TruthProgram {
    std::vector<std::pair<uint64_t, std::string>> entries;  // sorted by address
    explicit TruthProgram(const ptsynth::Truth& truth) {
        for (const auto& f : truth.functions)
            entries.push_back({f.entry, f.name});
        std::sort(entries.begin(), entries.end());
    }
    std::string nameAt(uint64_t ip) const {
        auto it = std::upper_bound(entries.begin(), entries.end(), std::make_pair(ip, std::string("\xff")));
        return it == entries.begin() ? "" : std::prev(it)->second;
    }
};

// Adds the truth's costs of instructions [from, to) to `out` (see above).
inline void addTruthCosts(const ptsynth::Truth& truth, const TruthProgram& program, size_t from, size_t to,
                          TruthCosts& out) {
    using Kind = ptsynth::TruthEvent::Kind;
    // The call and return events, in order, matched to instruction pairs by (from, to).
    std::vector<std::string> stack{program.nameAt(truth.ips[from])};
    size_t next = 0;
    // Events before `from`: skip those whose transfer precedes it (each event is one ip pair).
    std::vector<const ptsynth::TruthEvent*> events;
    for (const auto& e : truth.events)
        if (e.kind == Kind::Call || e.kind == Kind::Ret) events.push_back(&e);
    for (size_t i = 0; i + 1 <= from && next < events.size(); ++i)
        if (events[next]->from == truth.ips[i] && i + 1 < truth.ips.size() &&
            events[next]->to == truth.ips[i + 1])
            ++next;
    for (size_t i = from; i < to; ++i) {
        ++out[stack.back()].selfInsns;
        std::set<std::string> seen;
        for (const auto& f : stack)
            if (seen.insert(f).second) ++out[f].totalInsns;
        if (i + 1 >= to || next >= events.size()) continue;
        const auto& e = *events[next];
        if (e.from != truth.ips[i] || e.to != truth.ips[i + 1]) continue;
        ++next;
        if (e.kind == Kind::Call) {
            stack.push_back(program.nameAt(e.to));
            ++out[stack.back()].calls;
        } else if (stack.size() > 1) {
            stack.pop_back();
        } else {
            stack.back() = program.nameAt(e.to);  // the caller, found by returning to it
        }
    }
}

// Drops functions with nothing in the range (the truth map lists every name it saw).
inline TruthCosts nonZero(const TruthCosts& c) {
    TruthCosts out;
    for (const auto& [n, v] : c)
        if (v.calls || v.selfInsns || v.totalInsns) out[n] = v;
    return out;
}

// A decode's costs per function name.
inline TruthCosts costsByName(const RangeStats& stats, const FunctionTable& functions) {
    TruthCosts out;
    for (const auto& f : stats.functions) {
        TruthCost& c = out[functions[f.function].name];
        c.calls += f.cost.calls;
        c.selfInsns += f.cost.selfInsns;
        c.totalInsns += f.cost.totalInsns;
    }
    return out;
}

// The functions whose costs differ: "name: calls got/want self got/want total got/want; ...".
inline std::string describeCosts(const TruthCosts& got, const TruthCosts& want) {
    std::string text;
    std::set<std::string> names;
    for (const auto& [n, c] : got)
        names.insert(n);
    for (const auto& [n, c] : want)
        names.insert(n);
    for (const auto& n : names) {
        const TruthCost g = got.count(n) ? got.at(n) : TruthCost{},
                        w = want.count(n) ? want.at(n) : TruthCost{};
        if (g == w) continue;
        text += n + ": calls " + std::to_string(g.calls) + "/" + std::to_string(w.calls) + " self " +
                std::to_string(g.selfInsns) + "/" + std::to_string(w.selfInsns) + " total " +
                std::to_string(g.totalInsns) + "/" + std::to_string(w.totalInsns) + "; ";
    }
    return text;
}

}  // namespace auxscope::test_support
