// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/CostColumns.h"

#include <algorithm>

#include "gui/timeline/TimeFormat.h"

namespace auxscope {

std::vector<CostColumn> costColumns(const RangeSource& source) {
    if (!isSampled(source))
        return {CostColumn::TotalTime, CostColumn::SelfTime, CostColumn::Calls, CostColumn::TotalInsns,
                CostColumn::SelfInsns};
    return {CostColumn::TotalPeriod, CostColumn::SelfPeriod, CostColumn::TotalSamples,
            CostColumn::SelfSamples};
}

QString periodName(const RangeSource& source) {
    if (source.kind == RangeSource::OffCpu) return "off-CPU time";
    if (source.periodIsTime) return "CPU time";
    return QString::fromStdString(source.periodUnit.empty() ? std::string("period") : source.periodUnit);
}

QString samplesName(const RangeSource& source) {
    return source.kind == RangeSource::OffCpu ? "switch-outs" : "samples";
}

QString costLabel(CostColumn column, const RangeSource& source) {
    switch (column) {
        case CostColumn::TotalTime:
            return "Total time";
        case CostColumn::SelfTime:
            return "Self time";
        case CostColumn::Calls:
            return "Calls";
        case CostColumn::TotalInsns:
            return "Total insns";
        case CostColumn::SelfInsns:
            return "Self insns";
        case CostColumn::TotalPeriod:
            return "Total " + periodName(source);
        case CostColumn::SelfPeriod:
            return "Self " + periodName(source);
        case CostColumn::TotalSamples:
            return "Total " + samplesName(source);
        case CostColumn::SelfSamples:
            return "Self " + samplesName(source);
    }
    return {};
}

QString costKey(CostColumn column, const RangeSource&) {
    switch (column) {
        case CostColumn::TotalTime:
            return "total_ns";
        case CostColumn::SelfTime:
            return "self_ns";
        case CostColumn::Calls:
            return "calls";
        case CostColumn::TotalInsns:
            return "total_insns";
        case CostColumn::SelfInsns:
            return "self_insns";
        case CostColumn::TotalPeriod:
            return "total_period";
        case CostColumn::SelfPeriod:
            return "self_period";
        case CostColumn::TotalSamples:
            return "total_samples";
        case CostColumn::SelfSamples:
            return "self_samples";
    }
    return {};
}

uint64_t costValue(CostColumn column, const RangeCost& c) {
    switch (column) {
        case CostColumn::TotalTime:
            return c.totalTime;
        case CostColumn::SelfTime:
            return c.selfTime;
        case CostColumn::Calls:
            return c.calls;
        case CostColumn::TotalInsns:
            return c.totalInsns;
        case CostColumn::SelfInsns:
            return c.selfInsns;
        case CostColumn::TotalPeriod:
            return c.totalPeriod;
        case CostColumn::SelfPeriod:
            return c.selfPeriod;
        case CostColumn::TotalSamples:
            return c.totalSamples;
        case CostColumn::SelfSamples:
            return c.selfSamples;
    }
    return 0;
}

QString periodText(uint64_t period, const RangeSource& source) {
    if (source.periodIsTime) return formatNs(double(period));
    return formatCount(period);
}

QString costText(CostColumn column, const RangeCost& cost, const RangeSource& source, int64_t whole) {
    const uint64_t v = costValue(column, cost);
    QString text;
    switch (column) {
        case CostColumn::TotalTime:
        case CostColumn::SelfTime:
            text = formatNs(double(v));
            break;
        case CostColumn::TotalPeriod:
        case CostColumn::SelfPeriod:
            text = periodText(v, source);
            break;
        default:
            text = formatCount(v);
            break;
    }
    if (whole >= 0)
        text += QString("  %1%").arg(100.0 * double(v) / double(std::max<int64_t>(whole, 1)), 0, 'f', 1);
    return text;
}

}  // namespace auxscope
