// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <vector>

namespace auxscope {

// `auxscope report FILE [--tid T] [--time A-B] [--sort self|total|calls|insns]
// [--format text|csv|json] [--top N] [--tree]`: the top functions and call tree
// of a time range of a decoded AUX trace (spans/RangeStats).
int runReportCommand(const std::vector<std::string>& args);

}  // namespace auxscope
