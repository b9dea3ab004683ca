// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/FoldedStacks.h"

#include "samples/SampleProfile.h"

namespace auxscope {

namespace {
const std::string kNoName;
}

FoldedStacks::FoldedStacks(const SampleProfile& profile, size_t budgetBytes)
    : profile_(profile),
      budget_(budgetBytes),
      begin_(profile.tree().size(), kNotKept),
      size_(profile.tree().size(), 0) {}

std::string_view FoldedStacks::of(uint32_t node) {
    const CallTree& tree = profile_.tree();
    if (node == 0 || node >= tree.size()) return {};
    if (begin_[node] != kNotKept) return std::string_view(kept_).substr(begin_[node], size_[node]);
    path_.clear();
    for (uint32_t k = node; k != 0 && k != CallTree::kNone; k = tree.nodes[k].parent)
        path_.push_back(tree.nodes[k].function);
    scratch_.clear();
    for (size_t k = path_.size(); k-- > 0;) {
        if (k + 1 < path_.size()) scratch_ += ';';
        scratch_ += profile_.functions()[path_[k]].name;
    }
    if (kept_.size() + scratch_.size() > budget_) return scratch_;
    begin_[node] = kept_.size();
    size_[node] = uint32_t(scratch_.size());
    kept_ += scratch_;
    return std::string_view(kept_).substr(begin_[node], size_[node]);
}

const std::string& FoldedStacks::leafName(uint32_t node) const {
    const CallTree& tree = profile_.tree();
    if (node == 0 || node >= tree.size()) return kNoName;
    return profile_.functions()[tree.nodes[node].function].name;
}

}  // namespace auxscope
