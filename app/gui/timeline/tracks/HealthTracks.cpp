// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/HealthTracks.h"

#include <QMenu>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"

namespace auxscope {

using namespace timeline_metrics;

namespace {

constexpr float kRingNearlyFull = 95;  // a ring this full has no room for a large record

// "Collapse capture health" / "Expand capture health".
void addHealthAction(TrackMenuContext& m) {
    TimelineState* state = &m.state;
    QAction* a = m.menu.addAction(state->laneState().healthCollapsed ? "Expand capture health"
                                                                     : "Collapse capture health");
    QObject::connect(a, &QAction::triggered, state,
                     [state] { state->setHealthCollapsed(!state->laneState().healthCollapsed); });
}

}  // namespace

void HealthHeaderTrack::addMenuItems(TrackMenuContext& m) const {
    addHealthAction(m);
}

void HealthTrack::addMenuItems(TrackMenuContext& m) const {
    addHealthAction(m);
}

HealthTrack::HealthTrack(const LaneEntry& entry, int y, const TimelineData& data)
    : TimelineTrack(Health, entry, y, kHealthHeight) {
    for (const SidebandLanes::Health& h : data.lanes->health.at(cpu))
        peak_ = std::max(peak_, h.ringFill);
}

void HealthHeaderTrack::paint(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const int plotRight = kLabelWidth + ctx.plotWidth;
    p.fillRect(QRect(0, y, plotRight, height), QColor(232, 236, 230));
    p.fillRect(QRect(0, y, 4, height), palette::healthRing);
    drawDisclosure(p, 7, y, height, !ctx.state.laneState().healthCollapsed);
    const QFont normal = p.font();
    QFont bold = normal;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(25, 25, 35));
    const QString title = "Capture health";
    p.drawText(QRect(20, y, kLabelWidth, height), Qt::AlignVCenter | Qt::AlignLeft, title);
    p.setFont(normal);
    // A legend: what each mark means.
    int x = 20 + QFontMetrics(bold).horizontalAdvance(title) + 18;
    const int mid = y + height / 2;
    auto item = [&](const QColor& c, int kind, const QString& text) {
        if (kind == 0)
            p.fillRect(QRect(x, mid - 4, 12, 8), c);
        else if (kind == 1)
            p.fillRect(QRect(x, mid - 1, 12, 2), c);
        else
            p.fillRect(QRect(x + 5, mid - 6, 2, 12), c);
        x += 16;
        p.setPen(QColor(60, 60, 70));
        const int w = p.fontMetrics().horizontalAdvance(text);
        p.drawText(QRect(x, y, w + 4, height), Qt::AlignVCenter | Qt::AlignLeft, text);
        x += w + 16;
    };
    item(palette::healthRing, 0, "data ring fill (peak per interval, 0-100 %)");
    item(palette::healthFull, 0, "ring ≥ 95 % full");
    item(palette::healthAux, 1, "AUX area fill");
    item(palette::loss(SidebandLanes::Loss::LostRecords), 2, "records lost");
    if (ctx.state.laneState().healthCollapsed && data.lanes) {
        p.setPen(QColor(90, 90, 100));
        p.drawText(QRect(x, y, plotRight - x, height), Qt::AlignVCenter | Qt::AlignLeft,
                   QString("·  %1 CPUs collapsed").arg(data.lanes->health.size()));
    }
}

void HealthTrack::paint(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const uint64_t viewBegin = ctx.viewBegin, viewEnd = ctx.viewEnd;
    const SidebandLanes& lanes = *data.lanes;
    const auto& points = lanes.health.at(cpu);
    const int W = ctx.plotWidth, h = height - 4, base = y + height - 2;
    p.fillRect(QRect(0, y, kLabelWidth, height), QColor(250, 250, 248));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(6, y, kLabelWidth - 12, height), Qt::AlignVCenter | Qt::AlignLeft,
               QString("CPU %1").arg(cpu));
    const float peak = peak_;
    p.setPen(peak >= kRingNearlyFull ? palette::loss(SidebandLanes::Loss::LostRecords)
                                     : QColor(110, 110, 120));
    p.drawText(QRect(6, y, kLabelWidth - 12, height), Qt::AlignVCenter | Qt::AlignRight,
               QString("peak %1 %").arg(double(peak), 0, 'f', 0));
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + height - 1);
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, W, height));
    p.fillRect(QRect(kLabelWidth, y, W, height), QColor(249, 250, 251));
    p.setPen(QPen(QColor(225, 228, 232), 1, Qt::DotLine));
    p.drawLine(kLabelWidth, base - h, kLabelWidth + W, base - h);
    p.drawLine(kLabelWidth, base - h / 2, kLabelWidth + W, base - h / 2);
    p.setPen(QColor(230, 232, 236));
    p.drawLine(kLabelWidth, y + height - 1, kLabelWidth + W, y + height - 1);
    if (points.empty()) {
        p.restore();
        return;
    }
    // Per pixel column: the highest ring and AUX fill of the points whose
    // intervals (previous point, this point] reach into it, and whether a
    // count of losses grew there.
    const double pxDur = double(viewEnd - viewBegin) / W;
    auto col = [&](uint64_t t) { return (double(t) - double(viewBegin)) / pxDur; };
    std::vector<float> ring(size_t(W), -1.0f), aux(size_t(W), -1.0f);
    std::vector<char> lost(size_t(W), 0);
    auto it = std::lower_bound(points.begin(), points.end(), viewBegin,
                               [](const SidebandLanes::Health& a, uint64_t t) { return a.time < t; });
    for (; it != points.end(); ++it) {
        // The first point's peak is since the capture began: from the recording's start.
        const uint64_t from = it == points.begin() ? std::min(it->time, data.begin) : (it - 1)->time;
        if (from > viewEnd) break;
        const double c0 = col(from), c1 = col(it->time);
        const int a = std::max(0, int(std::floor(std::max(-1.0, c0)))),
                  b = std::min(W - 1, int(std::floor(std::min(double(W), c1))));
        for (int x = a; x <= b; ++x) {
            ring[size_t(x)] = std::max(ring[size_t(x)], it->ringFill);
            if (it->auxFill >= 0) aux[size_t(x)] = std::max(aux[size_t(x)], it->auxFill);
        }
        const bool grew = it == points.begin()
                              ? it->lostRecords + it->lostSamples + it->auxLost > 0
                              : it->lostRecords + it->lostSamples + it->auxLost >
                                    (it - 1)->lostRecords + (it - 1)->lostSamples + (it - 1)->auxLost;
        const int xt = int(std::floor(c1));
        if (grew && xt >= 0 && xt < W) lost[size_t(xt)] = 1;
        ++ctx.frame.rects;
    }
    // At least a pixel: a point of 0 % still shows that there is data.
    auto yOf = [&](float v) {
        return std::min(double(base) - 1, double(base) - double(std::clamp(v, 0.0f, 100.0f)) * h / 100.0);
    };
    // The ring's fill: an area per run of columns with data, full columns over it in their colour.
    for (int x = 0; x < W;) {
        if (ring[size_t(x)] < 0) {
            ++x;
            continue;
        }
        QPolygonF area;
        area << QPointF(kLabelWidth + x, base);
        int e = x;
        for (; e < W && ring[size_t(e)] >= 0; ++e) {
            const double v = yOf(ring[size_t(e)]);
            area << QPointF(kLabelWidth + e, v) << QPointF(kLabelWidth + e + 1, v);
        }
        area << QPointF(kLabelWidth + e, base);
        p.setPen(Qt::NoPen);
        p.setBrush(palette::healthRing);
        p.drawPolygon(area);
        for (int k = x; k < e; ++k)
            if (ring[size_t(k)] >= kRingNearlyFull)
                p.fillRect(QRectF(kLabelWidth + k, yOf(ring[size_t(k)]), 1, base - yOf(ring[size_t(k)])),
                           palette::healthFull);
        x = e;
    }
    p.setBrush(Qt::NoBrush);
    // The AUX area's fill: a line.
    p.setPen(QPen(palette::healthAux, 1.5));
    QPolygonF line;
    auto flushLine = [&] {
        if (line.size() > 1) p.drawPolyline(line);
        if (line.size() == 1) p.drawPoint(line.front());
        line.clear();
    };
    for (int x = 0; x < W; ++x) {
        if (aux[size_t(x)] < 0) {
            flushLine();
            continue;
        }
        line << QPointF(kLabelWidth + x + 0.5, yOf(aux[size_t(x)]));
    }
    flushLine();
    // Losses: a red tick where a count grew.
    const QColor red = palette::loss(SidebandLanes::Loss::LostRecords);
    for (int x = 0; x < W; ++x) {
        if (!lost[size_t(x)]) continue;
        p.fillRect(QRect(kLabelWidth + x - 1, y + 1, 2, height - 2), red);
        const QPointF tri[3] = {QPointF(kLabelWidth + x - 4, y + 1), QPointF(kLabelWidth + x + 4, y + 1),
                                QPointF(kLabelWidth + x, y + 7)};
        p.setPen(Qt::NoPen);
        p.setBrush(red);
        p.drawPolygon(tri, 3);
        p.setBrush(Qt::NoBrush);
    }
    p.restore();
}

TimelineHit HealthTrack::hit(const TrackHitContext& ctx, int, uint64_t t, uint64_t tolerance) const {
    const TimelineData& data = ctx.data;
    TimelineHit hit;
    if (!data.lanes) return hit;
    const auto found = data.lanes->health.find(cpu);
    if (found == data.lanes->health.end() || found->second.empty()) return hit;
    const auto& points = found->second;
    auto lostAt = [&](size_t i) {
        const auto& h = points[i];
        return h.lostRecords + h.lostSamples + h.auxLost;
    };
    auto grew = [&](size_t i) { return i == 0 ? lostAt(0) > 0 : lostAt(i) > lostAt(i - 1); };
    // The point whose interval (previous point, point] holds `t` (the first's
    // from the recording's start); a red tick
    // within reach wins (the nearest), as it is drawn over the fill.
    size_t i =
        size_t(std::lower_bound(points.begin(), points.end(), t,
                                [](const SidebandLanes::Health& h, uint64_t v) { return h.time < v; }) -
               points.begin());
    const uint64_t reach = tolerance * 2;
    auto near = std::lower_bound(points.begin(), points.end(), t > reach ? t - reach : 0,
                                 [](const SidebandLanes::Health& h, uint64_t v) { return h.time < v; });
    uint64_t bestDistance = UINT64_MAX;
    for (; near != points.end() && near->time <= t + reach; ++near) {
        const size_t k = size_t(near - points.begin());
        const uint64_t d = near->time > t ? near->time - t : t - near->time;
        if (grew(k) && d < bestDistance) bestDistance = d, i = k;
    }
    if (i == points.size()) {
        if (t - points.back().time > tolerance) return hit;  // after the last point
        i = points.size() - 1;
    }
    const uint64_t first = std::min(points[0].time, data.begin);  // the first point's interval begins here
    if (i == 0 && t + tolerance < first && bestDistance == UINT64_MAX) return hit;
    const SidebandLanes::Health& h = points[i];
    hit.kind = TimelineHit::Health;
    hit.cpu = cpu;
    hit.health = h;
    hit.start = i > 0 ? points[i - 1].time : first;
    hit.end = h.time;
    const SidebandLanes::Health none;
    const SidebandLanes::Health& prev = i > 0 ? points[i - 1] : none;
    hit.lostRecordsHere = h.lostRecords - std::min(h.lostRecords, prev.lostRecords);
    hit.lostSamplesHere = h.lostSamples - std::min(h.lostSamples, prev.lostSamples);
    hit.auxLostHere = h.auxLost - std::min(h.auxLost, prev.auxLost);
    return hit;
}

}  // namespace auxscope
