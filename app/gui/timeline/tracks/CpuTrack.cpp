// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/CpuTrack.h"

#include <QMenu>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gui/timeline/HitDescription.h"
#include "gui/timeline/TimelineLabels.h"
#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/lod/PixelColumns.h"

namespace auxscope {

using namespace timeline_metrics;

namespace {
constexpr int kLossStrip = 5;  // loss markers along the top
}  // namespace

const std::string* CpuTrack::noteOf(const TimelineData& data, int cpu) {
    if (!data.lanes) return nullptr;
    const auto found = data.lanes->cpuNotes.find(cpu);
    return found == data.lanes->cpuNotes.end() ? nullptr : &found->second;
}

void CpuTrack::paint(TrackPaintContext& ctx, int top) const {
    if (const std::string* note = noteOf(ctx.data, cpu))
        paintNote(ctx, top, *note);
    else
        paintLane(ctx, top);
    ctx.p.setPen(QColor(200, 200, 200));
    ctx.p.drawLine(kLabelWidth - 1, top, kLabelWidth - 1, top + height - 1);
    if (pinned && ctx.state.laneState().isPinned(TimelineLaneState::Pin::Cpu, cpu))
        drawPin(ctx.p, kLabelWidth - 9, top + (height - 12) / 2);
}

void CpuTrack::addMenuItems(TrackMenuContext& m) const {
    m.menu.setTitle(QString("CPU %1").arg(cpu));
    addPin(m, TimelineLaneState::Pin::Cpu, cpu, QString("CPU %1").arg(cpu));
}

void CpuTrack::paintLane(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const uint64_t viewBegin = ctx.viewBegin, viewEnd = ctx.viewEnd;
    p.fillRect(QRect(0, y, kLabelWidth, height), QColor(250, 250, 250));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(6, y, kLabelWidth - 12, height), Qt::AlignVCenter,
               cpu < 0 ? QString("no CPU") : QString("CPU %1").arg(cpu));
    const auto found = data.cpus.find(cpu);
    if (found == data.cpus.end()) return;
    const auto& slices = found->second;
    const double pxDur = double(viewEnd - viewBegin) / ctx.plotWidth;
    const int h = height - 3;
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, ctx.plotWidth, height));
    if (slices.empty() && data.lanes) {
        // A CPU the sideband has records from but no switch timeline for.
        p.setPen(QColor(150, 150, 150));
        p.drawText(QRect(kLabelWidth + 6, y, ctx.plotWidth - 12, height), Qt::AlignVCenter | Qt::AlignLeft,
                   cpu < 0 ? QString("records that name no CPU")
                           : QString("no context switches recorded on this CPU"));
    } else if (!slices.empty()) {
        // Idle: a thin line from the first thread on (before it nothing is known);
        // the threads are painted over it.
        const double a = (double(slices.front().start) - double(viewBegin)) / pxDur;
        const double b = (double(std::max(slices.back().end, data.end)) - double(viewBegin)) / pxDur;
        if (b > 0 && a < ctx.plotWidth) {
            p.setPen(QColor(175, 175, 185));
            const int mid = y + 1 + h / 2;
            p.drawLine(QPointF(kLabelWidth + std::max(0.0, a), mid),
                       QPointF(kLabelWidth + std::min(double(ctx.plotWidth), b), mid));
        }
    }
    auto nameOf = [&](int32_t tid) {
        auto it = data.threadNames.find(tid);
        if (it != data.threadNames.end()) return QString::fromStdString(it->second);
        for (const auto& t : data.threads)
            if (t.tid == tid) return QString::fromStdString(t.name);
        return QString("tid %1").arg(tid);
    };
    const auto lodFound = ctx.summaries.cpus.find(cpu);
    if (slices.empty() || lodFound == ctx.summaries.cpus.end()) {
        paintLosses(ctx, y);
        p.restore();
        return;
    }
    const CpuLod& lod = *lodFound->second;
    const int W = ctx.plotWidth;
    // Coloured by process. A pixel column of several slices shows the process
    // that ran most of it: over the lane's height where threads ran at least
    // half of the column, over its lower third where the CPU was mostly idle.
    std::vector<QRgb> colour(size_t(W), 0);
    std::vector<uint8_t> busy(size_t(W), 0);
    ColumnTally tally;
    if (lod.summarized() && pxDur >= double(lod.bucketDur[0])) {
        // Zoomed out: a few summary cells per column.
        size_t level = 0;
        while (level + 1 < lod.bucketDur.size() && double(lod.bucketDur[level + 1]) <= pxDur)
            ++level;
        const double bd = double(lod.bucketDur[level]), t0 = double(lod.t0);
        const uint32_t n = lod.n[level];
        const CpuLod::Cell* row = lod.cells[level].data();
        for (int x = 0; x < W; ++x) {
            const double a = double(viewBegin) + x * pxDur, b = a + pxDur;
            if (b <= t0 || a >= double(lod.extentEnd)) continue;
            const uint64_t ba = a <= t0 ? 0 : uint64_t((a - t0) / bd);
            const uint64_t bb = std::min<uint64_t>(n - 1, uint64_t(std::max(0.0, (b - t0) / bd)));
            tally.clear();
            uint32_t busySum = 0, cells = 0;
            for (uint64_t k = ba; k <= bb; ++k, ++cells) {
                const CpuLod::Cell c = row[k];
                busySum += c.busy;
                if (c.key >= 0) tally.add(c.key, c.cover);
            }
            ctx.frame.summaryCells += cells;
            const int32_t key = tally.most().first;
            if (key < 0 || !busySum) continue;
            colour[size_t(x)] = lod.rgb[size_t(key)];
            busy[size_t(x)] = uint8_t((busySum + cells - 1) / cells);
        }
        ctx.frame.rects += uint64_t(paintColumns(p, kLabelWidth, y + 1, h, colour, &busy));
    } else {
        // Zoomed in: the slices in view; one a pixel wide or more is drawn (and
        // named) as it is, narrower ones are tallied per column.
        struct Wide {
            QRect rect;
            QRgb rgb;
            int32_t tid;
        };
        std::vector<Wide> wide;
        auto it = std::upper_bound(slices.begin(), slices.end(), viewBegin,
                                   [](uint64_t t, const TimelineData::CpuSlice& s) { return t < s.start; });
        if (it != slices.begin()) --it;
        int column = -1;
        ColumnTally spill;  // what reaches into the column after `column`
        auto finish = [&](ColumnTally& t, int x) {
            if (x >= 0 && x < W && t.busy) {
                const int32_t key = t.most().first;
                if (key >= 0) {
                    colour[size_t(x)] = lod.rgb[size_t(key)];
                    busy[size_t(x)] = share255(t.busy, std::max<uint64_t>(1, uint64_t(pxDur)));
                }
            }
            t.clear();
        };
        int32_t lastKey = -1;
        int64_t lastLaneKey = INT64_MIN;
        for (; it != slices.end() && it->start < viewEnd; ++it) {
            const auto& s = *it;
            ++ctx.frame.spansWalked;
            if (s.end <= viewBegin || s.tid <= 0) continue;
            if (laneKey(s) != lastLaneKey) lastLaneKey = laneKey(s), lastKey = lod.keyIndex(lastLaneKey);
            const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin)) / pxDur);
            const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin)) / pxDur);
            if (x1 - x0 >= 1) {
                const int a = int(std::floor(x0)), b = std::max(a + 1, int(std::ceil(x1)));
                const QRgb rgb = lastKey >= 0
                                     ? lod.rgb[size_t(lastKey)]
                                     : (s.pid > 0 ? palette::process(s.pid) : palette::thread(s.tid)).rgb();
                wide.push_back({QRect(kLabelWidth + a, y + 1, b - a, h), rgb, s.tid});
                continue;
            }
            const int c0 = int(std::floor(x0));
            if (c0 != column) {
                finish(tally, column);
                if (c0 == column + 1) {
                    std::swap(tally, spill);
                } else {
                    finish(spill, column + 1);
                }
                column = c0;
            }
            // A slice narrower than a pixel reaches at most into the next column.
            const double split = std::min(x1, double(c0 + 1));
            if (lastKey < 0) continue;
            tally.add(lastKey, uint64_t((split - x0) * pxDur + 0.5));
            if (x1 > split) spill.add(lastKey, uint64_t((x1 - split) * pxDur + 0.5));
        }
        finish(tally, column);
        finish(spill, column + 1);
        ctx.frame.rects += uint64_t(paintColumns(p, kLabelWidth, y + 1, h, colour, &busy));
        for (const Wide& w : wide) {
            p.fillRect(w.rect, QColor(w.rgb));
            ++ctx.frame.rects;
            if (w.rect.width() >= kLabelMinWidth) {
                p.setPen(QColor(20, 20, 20));
                const QRect visible = w.rect.intersected(QRect(kLabelWidth, y, W, height));
                if (ctx.labels.draw(p, visible.adjusted(3, 0, -2, 0), TimelineLabels::threadKey(w.tid),
                                    [&] { return QString("%1 %2").arg(nameOf(w.tid)).arg(w.tid); }))
                    ++ctx.frame.labels;
            }
        }
    }
    paintLosses(ctx, y);
    p.restore();
}

void CpuTrack::paintLosses(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const uint64_t viewBegin = ctx.viewBegin, viewEnd = ctx.viewEnd;
    if (!data.lanes) return;
    const auto found = data.lanes->losses.find(cpu);
    if (found == data.lanes->losses.end()) return;
    const auto& losses = found->second;
    const double pxDur = double(viewEnd - viewBegin) / ctx.plotWidth;
    auto xOfTime = [&](uint64_t t) { return (double(t) - double(viewBegin)) / pxDur; };
    // Throttles first: a translucent band for as long as sampling stopped.
    for (const SidebandLanes::Loss& l : losses) {
        if (l.kind != SidebandLanes::Loss::Throttle) continue;
        const uint64_t end = l.end ? l.end : data.end;
        if (end < viewBegin || l.time > viewEnd) continue;
        const double a = std::max(-2.0, xOfTime(l.time)), b = std::min(ctx.plotWidth + 2.0, xOfTime(end));
        QColor band = palette::loss(l.kind);
        band.setAlpha(70);
        p.fillRect(QRectF(kLabelWidth + a, y, std::max(1.0, b - a), height), band);
    }
    // Then a marker per loss (one per pixel column: the first there names the
    // colour): a strip along the top of the lane, and a triangle where markers
    // are far enough apart to be told apart, so the threads stay visible below.
    auto it = std::lower_bound(losses.begin(), losses.end(),
                               viewBegin > uint64_t(3 * pxDur) ? viewBegin - uint64_t(3 * pxDur) : 0,
                               [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
    double lastMarker = -1e9;
    while (it != losses.end() && double(it->time) <= double(viewEnd) + 3 * pxDur) {
        const double x = std::floor(xOfTime(it->time));
        const QColor c = palette::loss(it->kind);
        const int xi = kLabelWidth + int(x);
        const uint64_t next = uint64_t(std::max(0.0, double(viewBegin) + (x + 1) * pxDur)) + 1;
        auto jump = std::lower_bound(it + 1, losses.end(), next,
                                     [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
        const bool isolated = (jump == losses.end() || xOfTime(jump->time) - x >= 8) && x - lastMarker >= 8;
        p.fillRect(QRect(xi - 1, y, 2, kLossStrip), c);
        if (isolated) {
            const QPointF tri[3] = {QPointF(xi - 4.5, y), QPointF(xi + 4.5, y), QPointF(xi, y + 9)};
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawPolygon(tri, 3);
            p.fillRect(QRect(xi - 1, y, 2, height), c);
        }
        lastMarker = x;
        ++ctx.frame.rects;
        it = jump > it ? jump : it + 1;
    }
    p.setBrush(Qt::NoBrush);
}

void CpuTrack::paintNote(TrackPaintContext& ctx, int y, const std::string& note) const {
    QPainter& p = ctx.p;
    // A CPU the file names but nothing was recorded on: grey, hatched, saying why.
    const QString text = QString::fromStdString(note);
    p.fillRect(QRect(0, y, kLabelWidth, height), QColor(244, 244, 244));
    p.setPen(QColor(120, 120, 120));
    p.drawText(QRect(6, y, kLabelWidth - 12, height), Qt::AlignVCenter,
               QString("CPU %1  %2").arg(cpu).arg(text));
    const QRect body(kLabelWidth, y + 1, ctx.plotWidth, height - 2);
    p.fillRect(body, palette::cpuNote);
    p.fillRect(body, QBrush(QColor(185, 185, 185), Qt::BDiagPattern));
    QFont italic = p.font();
    const QFont normal = p.font();
    italic.setItalic(true);
    p.setFont(italic);
    const QString said = cpuNoteText(text).section('\n', 0, 0);
    const int w = p.fontMetrics().horizontalAdvance(said) + 12;
    const QRect label(kLabelWidth + 8, y + 2, std::min(w, ctx.plotWidth - 16), height - 4);
    p.fillRect(label, palette::cpuNote);
    p.setPen(QColor(90, 90, 90));
    p.drawText(label, Qt::AlignCenter, p.fontMetrics().elidedText(said, Qt::ElideRight, label.width() - 4));
    p.setFont(normal);
}

TimelineHit CpuTrack::hit(const TrackHitContext& ctx, int, uint64_t t, uint64_t tolerance) const {
    const TimelineData& data = ctx.data;
    TimelineHit hit;
    if (const std::string* note = noteOf(data, cpu)) {
        hit.kind = TimelineHit::CpuNote;
        hit.cpu = cpu;
        hit.loss = QString::fromStdString(*note);
        hit.start = data.begin, hit.end = data.end;
        return hit;
    }
    if (!data.cpus.count(cpu)) return hit;
    hit.cpu = cpu;
    // A loss marker first: they are drawn over the threads.
    if (data.lanes) {
        const auto found = data.lanes->losses.find(cpu);
        if (found != data.lanes->losses.end()) {
            const auto& losses = found->second;
            uint64_t total = 0;
            auto nearest = nearestInReach(losses.begin(), losses.end(), t, tolerance * 2,
                                          [&](const SidebandLanes::Loss& l) { total += l.count; });
            const SidebandLanes::Loss* best = nearest != losses.end() ? &*nearest : nullptr;
            if (!best) {
                // Inside a throttle's band.
                for (const SidebandLanes::Loss& l : losses)
                    if (l.kind == SidebandLanes::Loss::Throttle && l.time <= t &&
                        t < (l.end ? l.end : data.end))
                        best = &l;
            }
            if (best) {
                hit.kind = TimelineHit::Loss;
                hit.start = best->time;
                hit.end = best->kind == SidebandLanes::Loss::Throttle ? (best->end ? best->end : data.end)
                                                                      : best->time;
                hit.loss = QString::fromStdString(describeLoss(*best));
                if (best->kind <= SidebandLanes::Loss::LostSamples && total > best->count)
                    hit.loss += QString("\n(%1 lost in the markers under the mouse)").arg(total);
                hit.pid = best->pid, hit.tid = best->tid;
                return hit;
            }
        }
    }
    const auto& slices = data.cpus.at(cpu);
    auto it = std::upper_bound(slices.begin(), slices.end(), t,
                               [](uint64_t v, const TimelineData::CpuSlice& s) { return v < s.start; });
    const TimelineData::CpuSlice* found = nullptr;
    if (it != slices.begin() && (it - 1)->end > t)
        found = &*(it - 1);
    else if (it != slices.begin() && t - (it - 1)->end <= tolerance)
        found = &*(it - 1);
    else if (it != slices.end() && it->start - t <= tolerance)
        found = &*it;
    if (!found || found->tid <= 0) {
        // Between threads (after the first one): idle.
        if (it == slices.begin() || slices.empty()) return {};
        hit.kind = TimelineHit::CpuIdle;
        hit.start = (it - 1)->end;
        hit.end = it != slices.end() ? it->start : std::max(data.end, hit.start);
        hit.pid = hit.tid = 0;
        return hit;
    }
    hit.kind = TimelineHit::CpuSlice;
    hit.pid = found->pid, hit.tid = found->tid;
    hit.start = found->start, hit.end = found->end;
    auto name = data.threadNames.find(found->tid);
    if (name != data.threadNames.end()) hit.threadName = QString::fromStdString(name->second);
    if (data.lanes)
        if (const SidebandLanes::Process* proc = data.lanes->process(found->pid))
            hit.processName = QString::fromStdString(proc->name);
    return hit;
}

}  // namespace auxscope
