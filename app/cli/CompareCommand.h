// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cli/ReportCommand.h"
#include "spans/RangeCompare.h"

namespace auxscope {

// `auxscope compare A B [--time A-B] [--time-b A-B] [--tid T] [--tid-b T] [--event E]
// [--by-symbol] [--normalize none|total|per-call=FUNC] [--sort COLUMN]
// [--format text|csv|json] [--limit N] [--tree] [--bottom-up]`, also spelled
// `auxscope report --diff A B ...`: each file's range statistics as `auxscope
// report` computes them (loadReportRange), compared by spans/RangeCompare.
struct CompareArgs {
    ReportArgs a, b;  // each side's selection (the same options; B's --time and --tid from --time-b, --tid-b)
    CompareOptions options;
    std::string sortName = "self";
    char sortSide = 'd';  // d: |delta|, a / b: that side's value, p: |delta %|
    std::string format = "text";
    size_t limit = 30;
    bool tree = false, bottomUp = false;
    bool help = false;
};
// Parses compare's arguments (without the command word). `command` names the
// command in messages ("compare", "report --diff").
Expected<CompareArgs> parseCompareArgs(const std::vector<std::string>& args);

// Runs `auxscope compare ARGS`; `command` is "compare" or "report --diff".
int runCompareCommand(const std::vector<std::string>& args, const std::string& command = "compare");

}  // namespace auxscope
