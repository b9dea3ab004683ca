// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Before and after: two RangeStats (two captures, or two ranges of one) side by
// side, what `auxscope compare` prints and the GUI's comparison views show.
//
// Functions are matched across the two by what they are, not where they were:
// by name and binary (the file's base name, so a program rebuilt elsewhere still
// matches), or, with MatchBy::Name, by name alone (another library version, a
// renamed binary). Each side's call tree is rewritten in terms of these matched
// functions ("keys"), so a function's totals follow RangeStats' rules (recursion
// counted once per stack) over the matched functions, and the two trees are
// merged by path: a node of the merged tree is a stack of keys, with both sides'
// costs (zero where one side lacks that stack). The bottom-up trees are merged
// the same way.
//
// Normalisation scales the sides before deltas are taken:
//   - None:    the counts as measured;
//   - Total:   B scaled to A's total (B x totalA / totalB; the total is the time
//              in frames for decoded traces, the period for samples), "per run";
//   - PerCall: each side divided by its calls of a chosen function (for samples,
//              which have no calls, this is refused), "one average request".
// The raw costs are kept; scaledA()/scaledB()/delta() apply the scales.
//
// Everything is plain data and Qt-free: a GUI computes it on a worker and keeps it.
// The views it is made for: the top functions table is `functions` (sorted(),
// deltas by delta()/deltaPercent()); the call tree and bottom-up views are
// `tree` and bottomUp(); a differential flame graph is `tree` drawn with each
// node's width from B's total (scaledB of TotalTime, or TotalPeriod for samples)
// and its colour from the change (delta / deltaPercent of the same), A's value
// and B's both at hand for the hover.
#include <cstdint>
#include <string>
#include <vector>

#include "Result.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"

namespace auxscope {

// One side: the statistics and the table their function ids refer to.
struct CompareSide {
    const RangeStats* stats = nullptr;
    const FunctionTable* functions = nullptr;
};

enum class MatchBy { NameAndBinary, Name };

struct CompareNormalize {
    enum Kind { None, Total, PerCall } kind = None;
    std::string function;  // PerCall: the function's name (every binary's function of that name)
};

struct CompareOptions {
    MatchBy match = MatchBy::NameAndBinary;
    CompareNormalize normalize;
};

// The columns a comparison has (a RangeCost's fields).
enum class CompareMetric {
    Calls,
    SelfTime,
    TotalTime,
    SelfInsns,
    TotalInsns,
    SelfSamples,
    TotalSamples,
    SelfPeriod,
    TotalPeriod
};
uint64_t costOf(const RangeCost& c, CompareMetric m);
// "calls", "self_ns", ... as CSV and JSON name them.
const char* compareMetricName(CompareMetric m);
// "calls", "self ns", ... as text tables and the GUI's columns head them.
const char* compareMetricHeading(CompareMetric m);

// A matched function: the name and binary both sides share.
struct CompareKey {
    std::string name;
    std::string file;  // the binary's base name ("" when none); MatchBy::Name: one of the sides' binaries
    bool inlined = false;
};

struct ComparedFunction {
    uint32_t key = 0;               // CompareResult::keys index
    RangeCost a, b;                 // raw costs on each side
    bool inA = false, inB = false;  // occurs on that side (in the range)
};

// A merged tree: `shape` holds the nodes (function = key, links), `a` and `b`
// each node's cost on either side, indexed like shape.nodes.
struct CompareTree {
    CallTree shape;
    std::vector<RangeCost> a, b;
    size_t size() const { return shape.size(); }
};

struct CompareResult {
    RangeSource source;  // A's (both sides have the same kind)
    std::vector<CompareKey> keys;
    std::vector<ComparedFunction> functions;  // every key, key ascending
    CompareTree tree;                         // top-down
    // Each side's call tree with keys for functions (what `tree` merges).
    CallTree keyedA, keyedB;
    // Per side: the total the Total normalisation uses, and the scale applied.
    uint64_t totalA = 0, totalB = 0;
    double scaleA = 1.0, scaleB = 1.0;

    double scaledA(const RangeCost& c, CompareMetric m) const { return double(costOf(c, m)) * scaleA; }
    double scaledB(const RangeCost& c, CompareMetric m) const { return double(costOf(c, m)) * scaleB; }
    // B - A after scaling.
    double delta(const RangeCost& a, const RangeCost& b, CompareMetric m) const {
        return scaledB(b, m) - scaledA(a, m);
    }
    // The delta in % of A's value; NaN when A's is 0 (new on B's side, or both 0).
    double deltaPercent(const RangeCost& a, const RangeCost& b, CompareMetric m) const;

    // Functions on one side only.
    std::vector<ComparedFunction> onlyInA() const;
    std::vector<ComparedFunction> onlyInB() const;
    // Functions by `by`: the largest |delta| first (or with bySide 'a'/'b', the
    // largest value on that side; 'p': the largest |delta %|, new ones first),
    // ties by key; at most `limit`.
    std::vector<ComparedFunction> sorted(CompareMetric by, char bySide = 'd', size_t limit = SIZE_MAX) const;
    // The merged bottom-up tree: the functions at the root, the callers they
    // were reached from below (RangeStats::bottomUp of each side, merged by
    // path). Made on demand: it is larger than the top-down tree.
    CompareTree bottomUp() const;
    // The function for `name` (exact; any binary): its entries.
    std::vector<const ComparedFunction*> byName(const std::string& name) const;
};

// The comparison of A and B. Errors: the sides count different things (trace
// against samples, two sampled events of different names), or PerCall names a
// function that A or B never calls.
Expected<CompareResult> compareRanges(const CompareSide& a, const CompareSide& b,
                                      const CompareOptions& options);

}  // namespace auxscope
