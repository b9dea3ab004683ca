// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/ThreadTrack.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/lod/PixelColumns.h"
#include "spans/RangeStats.h"

namespace auxscope {

using namespace timeline_metrics;

namespace {
constexpr int kRunBand = 9;  // run slices on top, sample ticks below
}  // namespace

void ThreadTrack::paint(TrackPaintContext& ctx, int top) const {
    if (ctx.data.lanes)
        paintLane(ctx, top);
    else
        paintTitle(ctx, top);
    if (pinned && ctx.state.laneState().isPinned(TimelineLaneState::Pin::Thread, tid))
        drawPin(ctx.p, kLabelWidth - 9, top + (height - 12) / 2);
}

void ThreadTrack::paintTitle(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const auto& th = ctx.data.threads[thread];
    const QFont small = p.font();
    p.fillRect(QRect(0, y, ctx.plotRight(), height), QColor(240, 242, 245));
    QFont bold = small;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(30, 30, 30));
    const QString title =
        QString("%1  tid %2  pid %3").arg(QString::fromStdString(th.name)).arg(th.tid).arg(th.pid);
    p.drawText(QRect(6, y, ctx.plotRight() - 12, height), Qt::AlignVCenter | Qt::AlignLeft, title);
    p.setFont(small);
}

void ThreadTrack::paintLane(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const uint64_t viewBegin = ctx.viewBegin, viewEnd = ctx.viewEnd;
    const int plotRight = kLabelWidth + ctx.plotWidth;
    const SidebandLanes::Thread* threadLane = lane >= 0 ? &data.lanes->threads[size_t(lane)] : nullptr;
    const TimelineData::Thread* spans = thread != kNoThread ? &data.threads[thread] : nullptr;
    const int32_t pid = threadLane ? threadLane->pid : spans->pid,
                  tid = threadLane ? threadLane->tid : spans->tid;
    const QString name = QString::fromStdString(threadLane ? threadLane->name : spans->name);
    p.fillRect(QRect(0, y, kLabelWidth, height), QColor(246, 247, 249));
    p.setPen(QColor(225, 228, 232));
    p.drawLine(0, y + height - 1, plotRight, y + height - 1);
    p.setPen(QColor(30, 30, 30));
    p.drawText(QRect(14, y, kLabelWidth - 20, height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(
                   name == QString("tid %1").arg(tid) ? name : QString("%1 %2").arg(name).arg(tid),
                   Qt::ElideMiddle, kLabelWidth - 20));
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + height - 1);
    if (!threadLane) return;
    const double pxDur = double(viewEnd - viewBegin) / ctx.plotWidth;
    const double W = ctx.plotWidth;
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, ctx.plotWidth, height));
    // Runs, merged where narrower than a pixel.
    const QColor run = pid > 0 ? palette::process(pid) : palette::thread(tid);
    const auto& runs = threadLane->runs;
    auto it = std::upper_bound(runs.begin(), runs.end(), viewBegin,
                               [](uint64_t t, const SidebandLanes::Run& r) { return t < r.start; });
    if (it != runs.begin()) --it;
    double px0 = 0, px1 = -1e300;
    bool pending = false;
    auto flush = [&] {
        if (!pending) return;
        const int a = int(std::floor(px0)), b = std::max(a + 1, int(std::ceil(px1)));
        p.fillRect(QRect(kLabelWidth + a, y + 3, b - a, kRunBand), run);
        ++ctx.frame.rects;
        pending = false;
    };
    while (it != runs.end() && it->start < viewEnd) {
        if (it->end <= viewBegin) {
            ++it;
            continue;
        }
        const double x0 = std::max(-2.0, (double(it->start) - double(viewBegin)) / pxDur);
        const double x1 = std::min(W + 2.0, (double(it->end) - double(viewBegin)) / pxDur);
        if (pending && x0 < px1 + 1) {
            px1 = std::max(px1, x1);
        } else {
            flush();
            pending = true, px0 = x0, px1 = x1;
        }
        const uint64_t next = viewBegin + uint64_t((std::floor(x1) + 1) * pxDur) + 1;
        auto jump =
            gallop(it + 1, runs.end(), [next](const SidebandLanes::Run& r) { return r.start < next; });
        if (jump - it > 2) {
            px1 = std::max(px1, std::min(W + 2.0, (double((jump - 1)->end) - double(viewBegin)) / pxDur));
            it = jump;
        } else {
            ++it;
        }
    }
    flush();
    // Samples: a tick per pixel column that has any (ticks side by side: one rectangle).
    const auto& samples = threadLane->samples;
    auto si = std::lower_bound(samples.begin(), samples.end(), viewBegin,
                               [](const SidebandLanes::Sample& s, uint64_t t) { return s.time < t; });
    const QColor tick = palette::sample;
    int tick0 = 0, tick1 = -2;  // the pending run of ticked columns
    auto flushTicks = [&] {
        if (tick1 < tick0) return;
        p.fillRect(QRect(kLabelWidth + tick0, y + 4 + kRunBand, tick1 - tick0 + 1, height - 6 - kRunBand),
                   tick);
        ++ctx.frame.rects;
    };
    // Samples with a value and key (Arm SPE): each column coloured by its
    // sample of the highest value (latency), or by that sample's key (source).
    const bool shaded =
        !threadLane->sampleValue.empty() && ctx.state.sampleShading() != TimelineState::SampleShading::Plain;
    while (shaded && si != samples.end() && si->time < viewEnd) {
        const int x = int(std::floor((double(si->time) - double(viewBegin)) / pxDur));
        uint16_t best = 0, key = 0;
        bool valued = false;
        for (; si != samples.end() && si->time < viewEnd &&
               int(std::floor((double(si->time) - double(viewBegin)) / pxDur)) == x;
             ++si) {
            const size_t k = size_t(si - samples.begin());
            if (si->event == data.lanes->extraEvent && (!valued || threadLane->sampleValue[k] > best))
                best = threadLane->sampleValue[k], key = threadLane->sampleKey[k], valued = true;
        }
        const QColor c = !valued ? tick
                         : ctx.state.sampleShading() == TimelineState::SampleShading::Value
                             ? palette::sampleValue(best)
                             : palette::sampleKey(key);
        p.fillRect(QRect(kLabelWidth + x, y + 4 + kRunBand, 1, height - 6 - kRunBand), c);
        ++ctx.frame.rects;
    }
    while (!shaded && si != samples.end() && si->time < viewEnd) {
        const double x = std::floor((double(si->time) - double(viewBegin)) / pxDur);
        if (int(x) == tick1 + 1) {
            tick1 = int(x);
        } else if (int(x) > tick1) {
            flushTicks();
            tick0 = tick1 = int(x);
        }
        const uint64_t next = viewBegin + uint64_t((x + 1) * pxDur) + 1;
        auto jump =
            gallop(si + 1, samples.end(), [next](const SidebandLanes::Sample& s) { return s.time < next; });
        si = jump > si ? jump : si + 1;
    }
    flushTicks();
    p.restore();
}

TimelineHit ThreadTrack::hit(const TrackHitContext& ctx, int, uint64_t t, uint64_t tolerance) const {
    const TimelineData& data = ctx.data;
    TimelineHit hit;
    if (lane < 0 || !data.lanes) return hit;
    const SidebandLanes& lanes = *data.lanes;
    const SidebandLanes::Thread& th = lanes.threads[size_t(lane)];
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    if (const SidebandLanes::Process* proc = lanes.process(th.pid))
        hit.processName = QString::fromStdString(proc->name);
    // The nearest sample within a couple of pixels.
    const auto& samples = th.samples;
    size_t here = 0;
    auto nearest = nearestInReach(samples.begin(), samples.end(), t, tolerance,
                                  [&](const SidebandLanes::Sample&) { ++here; });
    const SidebandLanes::Sample* best = nearest != samples.end() ? &*nearest : nullptr;
    if (best) {
        hit.kind = TimelineHit::Sample;
        hit.start = hit.end = best->time;
        hit.cpu = best->cpu;
        hit.ip = best->ip;
        hit.samplesHere = here;
        if (best->event >= 0 && size_t(best->event) < lanes.events.size())
            hit.event = QString::fromStdString(lanes.events[size_t(best->event)]);
        if (best->event == lanes.extraEvent && size_t(best - samples.data()) < th.sampleValue.size()) {
            const size_t k = size_t(best - samples.data());
            hit.event +=
                QString(", %1 %2").arg(QString::fromStdString(lanes.extraValueName)).arg(th.sampleValue[k]);
            if (auto name = lanes.extraKeyNames.find(th.sampleKey[k]); name != lanes.extraKeyNames.end())
                hit.event += ", " + QString::fromStdString(name->second);
        }
        const FunctionTable* functions = lanes.functions ? lanes.functions.get() : data.functions.get();
        if (functions && best->function < functions->size() && best->function != FunctionTable::kUnknown) {
            hit.function = QString::fromStdString((*functions)[best->function].name);
            hit.file = QString::fromStdString((*functions)[best->function].file);
        }
        // Its stack, leaf first: the node's path read upwards.
        const size_t index = size_t(best - samples.data());
        if (lanes.stacks && index < th.sampleStacks.size()) {
            const CallTree& tree = *lanes.stacks;
            for (uint32_t n = th.sampleStacks[index]; n != 0 && n < tree.nodes.size();
                 n = tree.nodes[n].parent) {
                if (size_t(hit.stack.size()) < TimelineHit::kStackShown)
                    hit.stack << (functions && tree.nodes[n].function < functions->size()
                                      ? QString::fromStdString((*functions)[tree.nodes[n].function].name)
                                      : QString("[unknown]"));
                else
                    ++hit.stackMore;
            }
        }
        return hit;
    }
    const auto& runs = th.runs;
    auto r = std::upper_bound(runs.begin(), runs.end(), t,
                              [](uint64_t v, const SidebandLanes::Run& x) { return v < x.start; });
    if (r != runs.begin() && (r - 1)->end + tolerance > t) {
        --r;
        hit.kind = TimelineHit::ThreadRun;
        hit.start = r->start, hit.end = r->end;
        hit.cpu = r->cpu;
        return hit;
    }
    return {};
}

}  // namespace auxscope
