// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The cost columns of the selection's views, by what the range's statistics
// count (RangeSource): decoded spans have time, calls and instructions; a
// sampled event has its samples and their period (shown as time for cpu-clock
// and task-clock, whose period counts ns, else as cycles or events); off-CPU
// time has the time threads were switched out and the switch-outs. The
// columns and their names follow `auxscope report`'s for the same source (no
// calls or instructions for samples, no samples for spans), so the GUI and the
// CLI answer alike. Shared by the top functions, the call trees, the flame
// graph and the caller / callee view.
#include <QString>

#include <cstdint>
#include <vector>

#include "spans/RangeStats.h"

namespace auxscope {

enum class CostColumn {
    TotalTime,
    SelfTime,
    Calls,
    TotalInsns,
    SelfInsns,
    TotalPeriod,
    SelfPeriod,
    TotalSamples,
    SelfSamples
};

// Samples or off-CPU time: what a sampled profile counts (not decoded spans).
inline bool isSampled(const RangeSource& source) {
    return source.kind != RangeSource::Spans;
}

// The columns a source has, in the order the views show them.
std::vector<CostColumn> costColumns(const RangeSource& source);
// Its header ("Total time", "Self CPU time", "Total cycles", "Self samples", "Total switch-outs").
QString costLabel(CostColumn column, const RangeSource& source);
// Its name in copied text, as auxscope report's CSV names it ("total_ns", "self_period", "self_samples").
QString costKey(CostColumn column, const RangeSource& source);
// Its value in `cost`.
uint64_t costValue(CostColumn column, const RangeCost& cost);
// The value written: time as time, counts with separators; with `whole` >= 0
// (the root's value of the column; 0 counts as 1) also its share ("1.2 ms  35.0%").
QString costText(CostColumn column, const RangeCost& cost, const RangeSource& source, int64_t whole = -1);
// The period of a source written as its unit says: time when it counts ns, else a count with its unit.
QString periodText(uint64_t period, const RangeSource& source);
// The period's name in sentences: "CPU time", "off-CPU time", "cycles", "events".
QString periodName(const RangeSource& source);
// What one sample is called: "samples", or "switch-outs" for off-CPU time.
QString samplesName(const RangeSource& source);

}  // namespace auxscope
