// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A comparison (spans/RangeCompare) written as `auxscope compare --format csv`
// prints it, one writer for the command line and the GUI's comparison export:
// a header row (kind,id,parent,depth,function,file,side, then per column a_,
// b_, delta_ and delta_pct_), one "function" row per matched function in the
// order asked for, then the merged call tree's "node" rows and the bottom-up
// tree's "bottom-up" rows when asked for, depth first, children by the larger
// of their two totals. Counts are whole numbers unless a side is scaled (then
// two decimals); a delta % is empty where A is 0.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "spans/RangeCompare.h"

namespace auxscope {

// The columns compared: time, calls and instructions for decoded traces;
// samples and period for samples.
std::vector<CompareMetric> compareColumns(const CompareResult& r);
// A matched function's name as shown ("f (inlined)" for an inlined frame).
std::string compareKeyName(const CompareResult& r, uint32_t key);
// A count as text: whole unless the comparison is scaled (then 2 decimals); `sign`: "+12".
std::string compareNumber(const CompareResult& r, double v, bool sign = false);
// A merged tree depth first (the root, node 0, not visited), children by the
// larger of their two totals (time for traces, period for samples).
void walkCompareTree(const CompareResult& r, const CompareTree& t,
                     const std::function<void(uint32_t node, int depth)>& visit);

struct CompareCsvOptions {
    CompareMetric sort = CompareMetric::SelfTime;
    char sortSide = 'd';  // d: |delta|, a / b: that side's value, p: |delta %|
    size_t limit = SIZE_MAX;
    bool tree = false, bottomUp = false;
};
void writeCompareCsv(std::ostream& out, const CompareResult& r, const CompareCsvOptions& options);

}  // namespace auxscope
