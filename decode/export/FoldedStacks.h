// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The stacks of a sampled profile as text, for the exports: a node of
// SampleProfile::tree() as its functions from the outermost frame to the leaf,
// joined with ';' -- the "folded" stacks that Brendan Gregg's flamegraph.pl
// (and speedscope, inferno, ...) read, less the count -- and its leaf function.
// A node's text is made once and kept while the kept text stays under a budget
// (deep trees of millions of nodes would otherwise hold gigabytes); past it,
// it is made anew on each call.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace auxscope {

class SampleProfile;

class FoldedStacks {
public:
    explicit FoldedStacks(const SampleProfile& profile, size_t budgetBytes = size_t(64) << 20);
    // "main;hot;mid;leaf" ("" for the root, node 0). Valid until the next call.
    std::string_view of(uint32_t node);
    // The innermost function's name ("" for the root).
    const std::string& leafName(uint32_t node) const;

private:
    const SampleProfile& profile_;
    size_t budget_;
    std::string kept_;             // the texts kept, back to back
    std::vector<uint64_t> begin_;  // per node: its text's offset in kept_ (kNotKept: not made yet)
    std::vector<uint32_t> size_;   // per node: its text's length
    std::string scratch_;          // a text made past the budget
    std::vector<uint32_t> path_;   // the node being made, leaf first
    static constexpr uint64_t kNotKept = UINT64_MAX;
};

}  // namespace auxscope
