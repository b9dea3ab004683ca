// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/SpeHistogramWidget.h"

#include "gui/timeline/TimelinePalette.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>

namespace auxscope {

SpeHistogramWidget::SpeHistogramWidget(QWidget* parent) : QWidget(parent) {
    setObjectName("speHistogram");
    setMinimumHeight(160);
    setMouseTracking(true);
}

void SpeHistogramWidget::setHistogram(SpeHistogram histogram, const QString& title) {
    histogram_ = std::move(histogram);
    title_ = title;
    update();
}

QColor SpeHistogramWidget::seriesColor(const SpeHistogramSeries& series) {
    // As the thread lanes colour SPE ticks by source.
    return series.hasSource ? palette::sampleKey(uint16_t(series.source + 1)) : QColor(0x8c, 0x8c, 0x96);
}

QRect SpeHistogramWidget::plotRect() const {
    const int left = fontMetrics().horizontalAdvance("0000000") + 8;
    const int bottom = fontMetrics().height() * 2 + 8;
    const int top = fontMetrics().height() + 10;
    return QRect(left, top, std::max(10, width() - left - 12), std::max(10, height() - top - bottom));
}

int SpeHistogramWidget::bucketAt(QPoint p) const {
    const QRect r = plotRect();
    if (!r.contains(p)) return -1;
    return std::clamp(int(double(p.x() - r.left()) * kSpeLatencyBuckets / r.width()), 0,
                      kSpeLatencyBuckets - 1);
}

void SpeHistogramWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    p.setPen(palette().text().color());
    const QRect r = plotRect();
    p.drawText(QRect(r.left(), 2, r.width(), fontMetrics().height() + 4), Qt::AlignLeft | Qt::AlignVCenter,
               title_);
    uint64_t top = 0;
    for (int b = 0; b < kSpeLatencyBuckets; ++b) {
        uint64_t sum = 0;
        for (const SpeHistogramSeries& s : histogram_.series)
            sum += s.counts[size_t(b)];
        top = std::max(top, sum);
    }
    p.drawLine(r.bottomLeft(), r.bottomRight());
    p.drawLine(r.bottomLeft(), r.topLeft());
    // The count axis: 0, half, the top.
    for (int k = 0; k <= 2; ++k) {
        const int y = r.bottom() - r.height() * k / 2;
        p.drawText(QRect(0, y - 8, r.left() - 4, 16), Qt::AlignRight | Qt::AlignVCenter,
                   QString::number(top * uint64_t(k) / 2));
    }
    const double w = double(r.width()) / kSpeLatencyBuckets;
    for (int b = 0; b < kSpeLatencyBuckets; ++b) {
        const int x0 = r.left() + int(b * w);
        const int x1 = r.left() + int((b + 1) * w);
        if (top) {
            double y = r.bottom();
            for (size_t s = 0; s < histogram_.series.size(); ++s) {
                const uint64_t c = histogram_.series[s].counts[size_t(b)];
                if (!c) continue;
                const double h = double(c) * r.height() / double(top);
                p.fillRect(QRectF(x0 + 1, y - h, std::max(1, x1 - x0 - 2), h),
                           seriesColor(histogram_.series[s]));
                y -= h;
            }
        }
        // Every other bucket labelled (they are narrow), the cycles under them.
        if (b % 2 == 0 || w > fontMetrics().horizontalAdvance("16384-32767"))
            p.drawText(QRect(x0 - 20, r.bottom() + 2, x1 - x0 + 40, fontMetrics().height()), Qt::AlignCenter,
                       QString::fromStdString(speLatencyBucketLabel(b)));
    }
    p.drawText(
        QRect(r.left(), r.bottom() + fontMetrics().height() + 2, r.width(), fontMetrics().height() + 2),
        Qt::AlignCenter,
        QString("%1 latency, cycles (log2 buckets)").arg(speLatencyKindName(histogram_.kind)));
    // Legend, top right.
    int y = r.top() + 2;
    for (size_t s = 0; s < histogram_.series.size(); ++s) {
        const QString text = QString("%1 (%2)")
                                 .arg(QString::fromStdString(histogram_.series[s].name))
                                 .arg(histogram_.series[s].records);
        const int tw = fontMetrics().horizontalAdvance(text);
        p.fillRect(QRect(r.right() - tw - 20, y + 3, 10, 10), seriesColor(histogram_.series[s]));
        p.drawText(QRect(r.right() - tw - 6, y, tw + 4, fontMetrics().height()), Qt::AlignLeft, text);
        y += fontMetrics().height();
    }
    if (!histogram_.records)
        p.drawText(r, Qt::AlignCenter, "No SPE record with this latency in the selection");
}

bool SpeHistogramWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* h = static_cast<QHelpEvent*>(e);
        const int b = bucketAt(h->pos());
        if (b < 0) {
            QToolTip::hideText();
            return true;
        }
        QStringList lines{QString("%1 cycles").arg(QString::fromStdString(speLatencyBucketLabel(b)))};
        for (const SpeHistogramSeries& s : histogram_.series)
            if (s.counts[size_t(b)])
                lines << QString("%1: %2").arg(QString::fromStdString(s.name)).arg(s.counts[size_t(b)]);
        QToolTip::showText(h->globalPos(), lines.join("\n"), this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace auxscope
