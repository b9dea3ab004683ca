// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineOverlays.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineView.h"

namespace auxscope {

using namespace timeline_metrics;

void TimelineOverlays::paintAxis(QPainter& p, const TimelineView& view) {
    const uint64_t viewBegin = view.visibleRange().begin, viewEnd = view.visibleRange().end;
    const int width = view.width();
    const int plotRight = kLabelWidth + view.plotWidth();
    p.fillRect(QRect(0, 0, width, kAxisHeight), QColor(248, 248, 248));
    p.setPen(QColor(190, 190, 190));
    p.drawLine(0, kAxisHeight - 1, width, kAxisHeight - 1);
    const double span = double(viewEnd - viewBegin);
    if (span <= 0) return;
    const double pxDur = span / view.plotWidth();
    double step = std::pow(10.0, std::floor(std::log10(std::max(1.0, pxDur * 90))));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (step * m >= pxDur * 90) {
            step *= m;
            break;
        }
    step = std::max(step, 1.0);
    const double origin = double(view.data()->begin);
    const double rel0 = double(viewBegin) - origin;
    double tick = std::ceil(rel0 / step) * step;
    p.setPen(QColor(60, 60, 60));
    p.drawText(QRect(4, 0, kLabelWidth - 8, kAxisHeight), Qt::AlignVCenter | Qt::AlignLeft,
               "+" + formatNs(span) + " in view");
    for (int guard = 0; guard < 1000 && tick <= rel0 + span; ++guard, tick += step) {
        const double x = kLabelWidth + (tick - rel0) / pxDur;
        if (x > plotRight) break;
        p.setPen(QColor(120, 120, 120));
        p.drawLine(QPointF(x, kAxisHeight - 7), QPointF(x, kAxisHeight - 1));
        p.setPen(QColor(40, 40, 40));
        p.drawText(QRectF(x + 3, 0, 120, kAxisHeight - 4), Qt::AlignVCenter | Qt::AlignLeft,
                   formatTick(tick, step));
    }
}

void TimelineOverlays::paint(QPainter& p, const TimelineView& view) {
    const TimelineState& state = *view.state();
    const int height = view.height();
    const int plotRight = kLabelWidth + view.plotWidth();
    const QRect plot(kLabelWidth, 0, view.plotWidth(), height);
    p.save();
    p.setClipRect(plot);
    // Threads whose names a search matched: their labels outlined.
    if (!state.highlightedThreads().empty() && state.data()) {
        p.setClipping(false);
        for (const auto& track : view.layout().tracks) {
            const TimelineTrack& t = *track;
            if (t.kind() != TimelineTrack::ThreadHeader) continue;
            if (!state.highlightedThreads().count(t.tid)) continue;
            const int y = view.trackY(t);
            if (y + t.height < kAxisHeight || y > height) continue;
            p.setPen(QPen(QColor(255, 140, 0), 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRect(1, std::max(y, kAxisHeight) + 1, kLabelWidth - 3, t.height - 2));
        }
        p.setClipRect(plot);
    }
    // Marks: amber areas over the tracks, flags on the axis.
    const QColor amber(230, 150, 0);
    for (const TimelineState::Range& m : state.marks()) {
        const double x0 = view.xOf(m.begin), x1 = view.xOf(m.end);
        if (x1 < kLabelWidth || x0 > plotRight) continue;
        if (x1 - x0 >= 1) {
            QColor area = amber;
            area.setAlpha(40);
            p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height - kAxisHeight), area);
        }
        p.setPen(QPen(amber, 1, Qt::DashLine));
        p.drawLine(QPointF(x0, kAxisHeight), QPointF(x0, height));
        if (x1 - x0 >= 1) p.drawLine(QPointF(x1, kAxisHeight), QPointF(x1, height));
        QPolygonF flag;
        flag << QPointF(x0, 2) << QPointF(x0 + 9, 6) << QPointF(x0, 10);
        p.setPen(QPen(amber.darker(120), 1));
        p.setBrush(amber);
        p.drawLine(QPointF(x0, 2), QPointF(x0, kAxisHeight - 1));
        p.drawPolygon(flag);
        p.setBrush(Qt::NoBrush);
    }
    // Events (snapshot triggers' firings): a red line and a flag on the axis at
    // the firing, and a band over the thread's lane (else the CPU's) from its start.
    view.eventMarkersDrawn_ = 0;
    const QColor red(210, 30, 40);
    for (const TimelineView::EventMarker& e : view.eventMarkers()) {
        const double x = view.xOf(e.time), x0 = std::min(view.xOf(e.start), x);
        if (x < kLabelWidth - 1 || x0 > plotRight + 1) continue;
        ++view.eventMarkersDrawn_;
        int laneY = e.tid >= 0 ? view.threadLaneY(e.tid) : -1;
        int laneH = kLaneHeight;
        if (laneY < 0 && e.cpu >= 0) laneY = view.cpuLaneY(e.cpu);
        if (laneY >= kAxisHeight && laneY < height) {
            QColor band = red;
            band.setAlpha(70);
            p.fillRect(QRectF(x0, laneY, std::max(2.0, x - x0), laneH), band);
            p.setPen(QPen(red, 1));
            p.drawRect(QRectF(x0, laneY, std::max(2.0, x - x0), laneH));
        }
        QColor line = red;
        line.setAlpha(150);
        p.setPen(QPen(line, 1));
        p.drawLine(QPointF(x, kAxisHeight), QPointF(x, height));
        QPolygonF flag;
        flag << QPointF(x, kAxisHeight - 12) << QPointF(x - 5, kAxisHeight - 2)
             << QPointF(x + 5, kAxisHeight - 2);
        p.setBrush(red);
        p.drawPolygon(flag);
        p.setBrush(Qt::NoBrush);
    }
    // The selected range: a blue band, its ends, and its length on the axis.
    if (auto sel = state.timeSelection()) {
        const double x0 = view.xOf(sel->begin), x1 = std::max(view.xOf(sel->end), x0 + 1);
        const QColor blue(40, 110, 220);
        QColor band = blue;
        band.setAlpha(45);
        p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height - kAxisHeight), band);
        QColor shade(0, 0, 0, 22);
        p.fillRect(QRectF(kLabelWidth, kAxisHeight, std::max(0.0, x0 - kLabelWidth), height), shade);
        p.fillRect(QRectF(x1, kAxisHeight, std::max(0.0, plotRight - x1), height), shade);
        p.setPen(QPen(blue, 1));
        p.drawLine(QPointF(x0, 0), QPointF(x0, height));
        p.drawLine(QPointF(x1, 0), QPointF(x1, height));
        const QRectF bar(x0, kAxisHeight - 12, x1 - x0, 11);
        p.fillRect(bar, QColor(40, 110, 220, 200));
        const QString text = formatNs(double(sel->end - sel->begin));
        QFont f = view.font();
        f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
        f.setBold(true);
        p.setFont(f);
        const int tw = p.fontMetrics().horizontalAdvance(text) + 8;
        QRectF label = bar;
        if (label.width() < tw) label = QRectF((x0 + x1 - tw) / 2, bar.y(), tw, bar.height());
        p.fillRect(label, QColor(40, 110, 220));
        p.setPen(Qt::white);
        p.drawText(label, Qt::AlignCenter, text);
    }
    p.restore();
    if (view.keysHelpVisible()) {
        const QStringList lines = TimelineView::keysHelp().split('\n');
        QFont f = view.font();
        p.setFont(f);
        const QFontMetrics fm(f);
        QFont boldKeys = f;
        boldKeys.setBold(true);
        const QFontMetrics bm(boldKeys);
        int keyW = 0, descW = 0;
        for (const QString& l : lines) {
            const QStringList kv = l.split('\t');
            keyW = std::max(keyW, bm.horizontalAdvance(kv[0]));
            descW = std::max(descW, fm.horizontalAdvance(kv.value(1)));
        }
        const int lh = fm.height() + 2;
        const QRect box(0, 0, keyW + descW + 48, lh * (int(lines.size()) + 1) + 16);
        QRect r = box;
        r.moveCenter(view.rect().center());
        p.setPen(QColor(120, 120, 120));
        p.setBrush(QColor(255, 255, 255, 240));
        p.drawRoundedRect(r, 6, 6);
        p.setPen(QColor(20, 20, 20));
        QFont bold = f;
        bold.setBold(true);
        p.setFont(bold);
        p.drawText(QRect(r.x() + 12, r.y() + 8, r.width() - 24, lh), Qt::AlignLeft, "Keys (? or Esc closes)");
        for (int i = 0; i < lines.size(); ++i) {
            const QStringList kv = lines[i].split('\t');
            const int y = r.y() + 8 + lh * (i + 1);
            p.setFont(bold);
            p.drawText(QRect(r.x() + 12, y, keyW + 8, lh), Qt::AlignLeft, kv[0]);
            p.setFont(f);
            p.drawText(QRect(r.x() + 24 + keyW, y, descW + 8, lh), Qt::AlignLeft, kv.value(1));
        }
        p.setBrush(Qt::NoBrush);
    }
}

}  // namespace auxscope
