// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/SpeMemoryMapWidget.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace auxscope {
namespace {

// Dark blue (few, fast) to yellow (many, slow), as a heat map reads.
QColor heat(double v) {
    v = std::clamp(v, 0.0, 1.0);
    static const QColor stops[] = {QColor(0x30123b), QColor(0x4662d7), QColor(0x1ae4b6), QColor(0xfaba39),
                                   QColor(0xf2f226)};
    const double x = v * 4;
    const int i = std::min(3, int(x));
    const double f = x - i;
    const QColor a = stops[i], b = stops[i + 1];
    return QColor(int(a.red() + (b.red() - a.red()) * f), int(a.green() + (b.green() - a.green()) * f),
                  int(a.blue() + (b.blue() - a.blue()) * f));
}

QString hex(uint64_t v) {
    return "0x" + QString::number(v, 16);
}

}  // namespace

SpeMemoryMapWidget::SpeMemoryMapWidget(QWidget* parent) : QWidget(parent) {
    setObjectName("speMemoryMap");
    setMinimumHeight(200);
    setMouseTracking(true);
}

void SpeMemoryMapWidget::setMap(SpeMemoryMap map, std::shared_ptr<const SpeAddressAxis> axis,
                                std::shared_ptr<const SpeAddressSpace> space, int32_t pid) {
    map_ = std::move(map);
    axis_ = std::move(axis);
    space_ = std::move(space);
    pid_ = pid;
    selectedTime_ = selectedAddress_ = -1;
    update();
}

void SpeMemoryMapWidget::setColour(Colour c) {
    colour_ = c;
    update();
}

QRect SpeMemoryMapWidget::plotRect() const {
    const int left =
        std::min(width() / 2, fontMetrics().horizontalAdvance("0x00007ffc12345000 [stack]+0x0000") + 8);
    const int bottom = fontMetrics().height() + 6;
    return QRect(left, 4, std::max(10, width() - left - 8), std::max(10, height() - bottom - 8));
}

bool SpeMemoryMapWidget::cellAt(QPoint p, int& timeBin, int& addressBin) const {
    const QRect r = plotRect();
    const SpeMemoryMapQuery& q = map_.query;
    if (!r.contains(p) || q.timeBins <= 0 || q.addressBins <= 0) return false;
    timeBin = std::clamp(int(double(p.x() - r.left()) * q.timeBins / r.width()), 0, q.timeBins - 1);
    // Low addresses at the bottom.
    addressBin =
        std::clamp(int(double(r.bottom() - p.y()) * q.addressBins / r.height()), 0, q.addressBins - 1);
    return true;
}

QRect SpeMemoryMapWidget::cellRect(int timeBin, int addressBin) const {
    const QRect r = plotRect();
    const SpeMemoryMapQuery& q = map_.query;
    if (q.timeBins <= 0 || q.addressBins <= 0) return {};
    const int x0 = r.left() + int(double(timeBin) * r.width() / q.timeBins);
    const int x1 = r.left() + int(double(timeBin + 1) * r.width() / q.timeBins);
    const int y0 = r.bottom() + 1 - int(double(addressBin + 1) * r.height() / q.addressBins);
    const int y1 = r.bottom() + 1 - int(double(addressBin) * r.height() / q.addressBins);
    return QRect(x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0));
}

void SpeMemoryMapWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    const QRect r = plotRect();
    p.fillRect(r, QColor(0x20, 0x20, 0x24));
    const SpeMemoryMapQuery& q = map_.query;
    for (int a = 0; a < q.addressBins; ++a)
        for (int t = 0; t < q.timeBins; ++t) {
            const size_t c = size_t(a) * size_t(q.timeBins) + size_t(t);
            if (c >= map_.count.size() || !map_.count[c]) continue;
            double v = 0;
            if (colour_ == Colour::Count)
                v = map_.maxCount ? std::log1p(map_.count[c]) / std::log1p(map_.maxCount) : 0;
            else
                v = map_.maxMeanLatency > 0 ? double(map_.latencySum[c]) / map_.count[c] / map_.maxMeanLatency
                                            : 0;
            p.fillRect(cellRect(t, a), heat(0.15 + 0.85 * v));
        }
    if (selectedTime_ >= 0) {
        p.setPen(QPen(Qt::white, 2));
        p.drawRect(cellRect(selectedTime_, selectedAddress_).adjusted(0, 0, -1, -1));
    }
    p.setPen(palette().text().color());
    // The address axis: where a mapping or a symbol starts (or the axis jumps over
    // untouched pages), its name; labels kept a line apart.
    if (axis_ && !axis_->empty() && q.posEnd > q.posBegin) {
        const int line = fontMetrics().height();
        int lastY = INT32_MAX;
        // A label and a tick on the axis where there is room for its text; a line
        // across the plot where a mapping begins.
        auto label = [&](uint64_t pos, const QString& text, bool strong) {
            if (pos < q.posBegin || pos >= q.posEnd) return;
            const int y =
                r.bottom() - int(double(pos - q.posBegin) * r.height() / double(q.posEnd - q.posBegin));
            if (lastY != INT32_MAX && lastY - y < line) return;
            p.setPen(strong ? QColor(0x90, 0x90, 0x90) : QColor(0x60, 0x60, 0x60));
            p.drawLine(r.left() - 4, y, strong ? r.right() : r.left() + 6, y);
            p.setPen(palette().text().color());
            p.drawText(QRect(0, y - line / 2, r.left() - 6, line), Qt::AlignRight | Qt::AlignVCenter, text);
            lastY = y;
        };
        const uint64_t pageBegin = q.posBegin / SpeAddressAxis::kPage;
        const uint64_t pageEnd = std::min<uint64_t>(
            (q.posEnd + SpeAddressAxis::kPage - 1) / SpeAddressAxis::kPage, axis_->pages().size());
        const SpeRegion* lastMap = nullptr;
        const SpeRegion* lastSym = nullptr;
        const bool fine = pageEnd - pageBegin <= 64;  // zoomed in: symbols by address, not per page
        for (uint64_t k = pageBegin; k < pageEnd; ++k) {
            const uint64_t page = axis_->pages()[k];
            const bool jump = k == pageBegin || axis_->pages()[k - 1] + 1 != page;
            const uint64_t addr = page * SpeAddressAxis::kPage;
            const SpeRegion* m = space_ ? space_->mappingAt(pid_, addr) : nullptr;
            // Each label names its mapping: the first of a mapping may have had no room.
            const QString text =
                hex(addr) + (m ? " " + QString::fromStdString(m->name).section('/', -1) : QString());
            if (m != lastMap || (jump && !m))
                label(k * SpeAddressAxis::kPage, text, true);
            else if (jump)
                label(k * SpeAddressAxis::kPage, text, false);
            lastMap = m;
            if (!space_) continue;
            const auto& syms = space_->symbols(pid_);
            auto it = std::lower_bound(syms.begin(), syms.end(), addr,
                                       [](const SpeRegion& s, uint64_t a) { return s.start < a; });
            for (; it != syms.end() && it->start < addr + SpeAddressAxis::kPage; ++it) {
                if (&*it == lastSym) continue;
                if (!fine && it->end - it->start < 256) continue;  // small globals: when zoomed in
                label(k * SpeAddressAxis::kPage + (it->start - addr), QString::fromStdString(it->name),
                      false);
                lastSym = &*it;
            }
        }
    }
    p.setPen(palette().text().color());
    p.drawRect(r.adjusted(0, 0, -1, -1));
    p.drawText(
        QRect(r.left(), r.bottom() + 2, r.width(), fontMetrics().height() + 4), Qt::AlignCenter,
        QString("time → (%1 loads and stores; %2; wheel zooms the addresses, click a cell for its accesses)")
            .arg(map_.accesses)
            .arg(colour_ == Colour::Count ? "colour: count" : "colour: mean total latency"));
}

void SpeMemoryMapWidget::mousePressEvent(QMouseEvent* e) {
    int t = 0, a = 0;
    if (e->button() == Qt::LeftButton && cellAt(e->position().toPoint(), t, a)) {
        selectedTime_ = t, selectedAddress_ = a;
        update();
        emit cellClicked(t, a);
    }
}

void SpeMemoryMapWidget::wheelEvent(QWheelEvent* e) {
    const SpeMemoryMapQuery& q = map_.query;
    const QRect r = plotRect();
    if (!axis_ || q.posEnd <= q.posBegin || !r.height()) return;
    const double at = std::clamp(double(r.bottom() - e->position().y()) / r.height(), 0.0, 1.0);
    const double span = double(q.posEnd - q.posBegin);
    const double factor = e->angleDelta().y() > 0 ? 0.5 : 2.0;
    const double newSpan = std::clamp(span * factor, double(q.addressBins), double(axis_->size()));
    double lo = double(q.posBegin) + at * span - at * newSpan;
    lo = std::clamp(lo, 0.0, double(axis_->size()) - newSpan);
    emit addressRangeRequested(quint64(lo), quint64(lo + newSpan));
    e->accept();
}

bool SpeMemoryMapWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* h = static_cast<QHelpEvent*>(e);
        int t = 0, a = 0;
        const SpeMemoryMapQuery& q = map_.query;
        if (!axis_ || !cellAt(h->pos(), t, a)) {
            QToolTip::hideText();
            return true;
        }
        const size_t c = size_t(a) * size_t(q.timeBins) + size_t(t);
        const uint64_t lo = q.posBegin + (q.posEnd - q.posBegin) * uint64_t(a) / uint64_t(q.addressBins);
        const uint64_t addr = axis_->address(lo);
        QString text = QString("%1 accesses").arg(c < map_.count.size() ? map_.count[c] : 0);
        if (c < map_.count.size() && map_.count[c])
            text += QString(", mean latency %1 cycles")
                        .arg(double(map_.latencySum[c]) / map_.count[c], 0, 'f', 1);
        text += "\nfrom " + (space_ ? QString::fromStdString(space_->name(pid_, addr)) : hex(addr));
        QToolTip::showText(h->globalPos(), text, this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace auxscope
