// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineHit.h"

namespace auxscope {

QString functionNameOf(const TimelineData* data, uint32_t id) {
    if (data && data->functions && id < data->functions->size())
        return QString::fromStdString((*data->functions)[id].name);
    return id == FunctionTable::kUnknown ? QString("[unknown]") : QString("function %1").arg(id);
}

TimelineHit spanHit(const TimelineData& data, const TimelineData::Thread& th, size_t index) {
    TimelineHit hit;
    hit.kind = TimelineHit::ThreadSpan;
    hit.index = index;
    hit.span = th.spans.at(index);
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    hit.start = hit.span.start, hit.end = hit.span.end;
    if (hit.span.isGap()) {
        const Gap& g = th.spans.gaps()[size_t(hit.span.gap)];
        hit.gapReason = QString::fromUtf8(gapReasonName(g.reason));
        hit.gapDetail = QString::fromStdString(g.detail);
    } else {
        hit.function = functionNameOf(&data, hit.span.function);
        if (data.functions && hit.span.function < data.functions->size())
            hit.file = QString::fromStdString((*data.functions)[hit.span.function].file);
    }
    return hit;
}

}  // namespace auxscope
