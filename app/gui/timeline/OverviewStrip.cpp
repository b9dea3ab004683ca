// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/OverviewStrip.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/timeline/TimelineState.h"

namespace auxscope {
namespace {

constexpr int kPad = 3, kTraceHeight = 16, kActivityHeight = 40, kMinBracket = 4;

QColor heat(double busy) {
    // Idle: the background; busy: a deep blue (the lanes colour threads, this only says how busy).
    const QColor idle(0xf2, 0xf3, 0xf5), full(0x1f, 0x4e, 0x9a);
    const double f = std::clamp(busy, 0.0, 1.0);
    auto mix = [f](int a, int b) { return int(std::lround(a + (b - a) * f)); };
    return QColor(mix(idle.red(), full.red()), mix(idle.green(), full.green()),
                  mix(idle.blue(), full.blue()));
}

const QColor kTraceColor(0x1b, 0x9e, 0x77), kLossColor(0xd6, 0x27, 0x28), kSampleColor(0xe0, 0x8a, 0x1e);

QString duration(double ns) {
    if (ns < 1e3) return QString("%1 ns").arg(ns, 0, 'f', 0);
    if (ns < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 1);
    if (ns < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 1);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 2);
}

QString bytes(double n) {
    if (n < 1e3) return QString("%1 bytes").arg(n, 0, 'f', 0);
    if (n < 1e6) return QString("%1 kB").arg(n / 1e3, 0, 'f', 1);
    return QString("%1 MB").arg(n / 1e6, 0, 'f', 1);
}

}  // namespace

OverviewStrip::OverviewStrip(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    setMouseTracking(true);
    setToolTip({});  // per position (event())
}

void OverviewStrip::setState(TimelineState* state) {
    if (state_) disconnect(state_, nullptr, this, nullptr);
    state_ = state;
    if (!state_) return;
    connect(state_, &TimelineState::windowChanged, this, &OverviewStrip::setVisibleRange);
    const TimelineState::Range w = state_->window();
    if (w.end > w.begin) setVisibleRange(w.begin, w.end);
}

void OverviewStrip::setOverview(std::shared_ptr<const TimelineOverview> overview) {
    overview_ = std::move(overview);
    if (overview_ && (viewEnd_ <= viewBegin_ || viewBegin_ < overview_->begin || viewEnd_ > overview_->end)) {
        viewBegin_ = overview_->begin;
        viewEnd_ = overview_->end;
    }
    updateGeometry();
    update();
}

void OverviewStrip::setVisibleRange(uint64_t begin, uint64_t end) {
    if (begin == viewBegin_ && end == viewEnd_) return;
    viewBegin_ = begin;
    viewEnd_ = std::max(end, begin);
    update();
}

void OverviewStrip::setPlotMargins(int left, int right) {
    if (left == left_ && right == right_) return;
    left_ = std::max(0, left);
    right_ = std::max(0, right);
    update();
}

int OverviewStrip::plotWidth() const {
    return std::max(1, width() - left_ - right_);
}

double OverviewStrip::xOf(uint64_t t) const {
    if (!overview_) return left_;
    const double w = double(overview_->end - overview_->begin);
    return left_ + (double(t) - double(overview_->begin)) * plotWidth() / (w > 0 ? w : 1);
}

uint64_t OverviewStrip::timeAt(double x) const {
    if (!overview_) return 0;
    const double w = double(overview_->end - overview_->begin);
    const double t = double(overview_->begin) + (x - left_) * w / plotWidth();
    return uint64_t(std::clamp(t, double(overview_->begin), double(overview_->end)));
}

std::vector<int> OverviewStrip::shownCpus() const {
    std::vector<int> out;
    if (!overview_) return out;
    for (size_t i = 0; i < overview_->cpus.size(); ++i) {
        const TimelineOverview::Cpu& c = overview_->cpus[i];
        if (c.cpu < 0) continue;  // losses no CPU named: ticks only
        bool any = c.switches;
        for (size_t b = 0; !any && b < c.samples.size(); ++b)
            any = c.samples[b] || c.traceBytes[b] > 0;
        if (any) out.push_back(int(i));
    }
    return out;
}

bool OverviewStrip::stacked() const {
    return int(shownCpus().size()) > kMaxCpuRows;
}

int OverviewStrip::cpuRowCount() const {
    const int n = int(shownCpus().size());
    return n > kMaxCpuRows ? 0 : n;
}

OverviewStrip::Layout OverviewStrip::layout() const {
    Layout l;
    const int rows = cpuRowCount();
    l.rows = rows;
    // Rows of at most 14 px, at least 3, and together tall enough for the label's two lines.
    l.rowHeight = rows ? std::max(std::clamp(kActivityHeight / rows, 3, 14), (28 + rows - 1) / rows) : 0;
    const int activity = rows ? rows * l.rowHeight : kActivityHeight;
    const bool trace = overview_ && overview_->hasTrace();
    l.plot = QRect(left_, kPad, plotWidth(), activity + (trace ? kTraceHeight + 2 : 0));
    l.activity = QRect(left_, kPad, plotWidth(), activity);
    if (trace) l.trace = QRect(left_, kPad + activity + 2, plotWidth(), kTraceHeight);
    return l;
}

QRect OverviewStrip::traceArea() const {
    return layout().trace;
}

QSize OverviewStrip::sizeHint() const {
    return {900, layout().plot.height() + 2 * kPad};
}

QSize OverviewStrip::minimumSizeHint() const {
    return {300, sizeHint().height()};
}

void OverviewStrip::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().window());
    const Layout l = layout();
    p.setPen(palette().color(QPalette::WindowText));
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    p.setFont(small);
    if (!overview_ || !overview_->buckets) {
        p.drawText(rect().adjusted(6, 0, 0, 0), Qt::AlignVCenter | Qt::AlignLeft, "Overview: building…");
        return;
    }
    const TimelineOverview& o = *overview_;
    const std::vector<int> cpus = shownCpus();
    // The label column: what the strip shows.
    const QString what =
        l.rows ? QString("Overview · %1 CPU%2").arg(cpus.size()).arg(cpus.size() == 1 ? "" : "s")
               : QString("Overview · busy CPUs of %1").arg(cpus.size());
    p.drawText(QRect(6, l.activity.top(), left_ - 10, l.activity.height()), Qt::AlignLeft | Qt::AlignVCenter,
               what + "\n" + duration(double(o.end - o.begin)));
    if (!l.trace.isEmpty())
        p.drawText(QRect(6, l.trace.top(), left_ - 10, l.trace.height()), Qt::AlignLeft | Qt::AlignVCenter,
                   "AUX trace " + bytes(double(o.totalTraceBytes)));
    p.fillRect(l.plot, QColor(0xf2, 0xf3, 0xf5));

    // Per pixel column: the buckets under it.
    const int W = l.plot.width();
    std::vector<size_t> first(size_t(W) + 1);
    for (int x = 0; x <= W; ++x)
        first[size_t(x)] = std::min(o.buckets, size_t(std::llround(double(x) * double(o.buckets) / W)));
    auto columnMean = [&](const std::vector<float>& v, int x) {
        size_t a = first[size_t(x)], b = std::max(first[size_t(x) + 1], a + 1);
        b = std::min(b, v.size());
        double s = 0;
        for (size_t i = a; i < b; ++i)
            s += v[i];
        return b > a ? s / double(b - a) : 0.0;
    };
    auto columnSum = [&](const std::vector<uint32_t>& v, int x) {
        size_t a = first[size_t(x)], b = std::max(first[size_t(x) + 1], a + 1);
        b = std::min(b, v.size());
        uint64_t s = 0;
        for (size_t i = a; i < b; ++i)
            s += v[i];
        return s;
    };

    if (l.rows) {
        // A heat row per CPU: busy from its switch timeline, or its samples when it has none.
        for (int r = 0; r < l.rows; ++r) {
            const TimelineOverview::Cpu& c = o.cpus[size_t(cpus[size_t(r)])];
            const int y = l.activity.top() + r * l.rowHeight;
            const int h = std::max(1, l.rowHeight - (l.rowHeight > 4 ? 1 : 0));
            uint64_t maxSamples = 1;
            if (!c.switches)
                for (int x = 0; x < W; ++x)
                    maxSamples = std::max(maxSamples, columnSum(c.samples, x));
            for (int x = 0; x < W; ++x) {
                const double v =
                    c.switches ? columnMean(c.busy, x) : double(columnSum(c.samples, x)) / double(maxSamples);
                if (v <= 0.004) continue;
                p.fillRect(QRect(l.plot.left() + x, y, 1, h),
                           c.switches ? heat(v)
                                      : QColor(kSampleColor.red(), kSampleColor.green(), kSampleColor.blue(),
                                               60 + int(195 * v)));
            }
        }
    } else {
        // Many CPUs: how many were busy, as an area (full height: every CPU shown busy).
        const double full = std::max<double>(1.0, double(cpus.size()));
        QPainterPath area;
        const int bottom = l.activity.bottom() + 1;
        area.moveTo(l.plot.left(), bottom);
        for (int x = 0; x < W; ++x) {
            const double v = columnMean(o.busyCpus, x) / full;
            const double y = bottom - v * l.activity.height();
            area.lineTo(l.plot.left() + x, y);
            area.lineTo(l.plot.left() + x + 1, y);
        }
        area.lineTo(l.plot.left() + W, bottom);
        area.closeSubpath();
        p.fillPath(area, heat(0.75));
    }
    if (!l.trace.isEmpty()) {
        // AUX bytes written per column, against the fullest column.
        std::vector<double> col(size_t(W), 0.0);
        double peak = 0;
        for (int x = 0; x < W; ++x) {
            col[size_t(x)] = columnMean(o.traceBytes, x);
            peak = std::max(peak, col[size_t(x)]);
        }
        QPainterPath area;
        const int bottom = l.trace.bottom() + 1;
        area.moveTo(l.trace.left(), bottom);
        for (int x = 0; x < W; ++x) {
            const double v = peak > 0 ? col[size_t(x)] / peak : 0;
            const double y = bottom - v * l.trace.height();
            area.lineTo(l.trace.left() + x, y);
            area.lineTo(l.trace.left() + x + 1, y);
        }
        area.lineTo(l.trace.left() + W, bottom);
        area.closeSubpath();
        p.fillPath(area, kTraceColor);
    }
    // Losses: a red tick through the strip where any CPU reported one.
    for (int x = 0; x < W; ++x)
        if (columnSum(o.losses, x)) {
            p.fillRect(QRect(l.plot.left() + x, l.plot.top(), 1, l.plot.height()),
                       QColor(kLossColor.red(), kLossColor.green(), kLossColor.blue(), 110));
            p.fillRect(QRect(l.plot.left() + x - 1, l.plot.top(), 3, 5), kLossColor);
        }

    // The timeline's window: the rest dimmed, the window bracketed.
    if (viewEnd_ > viewBegin_) {
        double x0 = xOf(viewBegin_), x1 = xOf(viewEnd_);
        if (x1 - x0 < kMinBracket) {
            const double mid = (x0 + x1) / 2;
            x0 = mid - kMinBracket / 2.0;
            x1 = mid + kMinBracket / 2.0;
        }
        const QColor dim(255, 255, 255, 150);
        const int top = l.plot.top(), h = l.plot.height();
        if (x0 > l.plot.left()) p.fillRect(QRectF(l.plot.left(), top, x0 - l.plot.left(), h), dim);
        if (x1 < l.plot.right() + 1) p.fillRect(QRectF(x1, top, l.plot.right() + 1 - x1, h), dim);
        QPen pen(QColor(0x20, 0x20, 0x20), 2);
        p.setPen(pen);
        p.setRenderHint(QPainter::Antialiasing, false);
        const double yt = top - 1, yb = top + h;
        // [ ... ]: the ends with serifs, thin lines along the top and bottom.
        p.drawLine(QPointF(x0, yt), QPointF(x0, yb));
        p.drawLine(QPointF(x1, yt), QPointF(x1, yb));
        p.drawLine(QPointF(x0, yt), QPointF(x0 + 4, yt));
        p.drawLine(QPointF(x0, yb), QPointF(x0 + 4, yb));
        p.drawLine(QPointF(x1, yt), QPointF(x1 - 4, yt));
        p.drawLine(QPointF(x1, yb), QPointF(x1 - 4, yb));
        p.setPen(QPen(QColor(0x20, 0x20, 0x20, 90), 1));
        p.drawLine(QPointF(x0, yt), QPointF(x1, yt));
        p.drawLine(QPointF(x0, yb), QPointF(x1, yb));
    }
    if (drag_ == Drag::Select && selectTo_ != selectFrom_) {
        const double a = xOf(std::min(selectFrom_, selectTo_)), b = xOf(std::max(selectFrom_, selectTo_));
        p.fillRect(QRectF(a, l.plot.top(), b - a, l.plot.height()), QColor(0x33, 0x77, 0xdd, 70));
        p.setPen(QColor(0x33, 0x77, 0xdd));
        p.drawRect(QRectF(a, l.plot.top(), b - a, l.plot.height() - 1));
    }
}

QString OverviewStrip::toolTipAt(QPoint pos) const {
    if (!overview_ || pos.x() < left_ || pos.x() >= left_ + plotWidth()) return {};
    const TimelineOverview& o = *overview_;
    const Layout l = layout();
    const uint64_t t0 = timeAt(pos.x()), t1 = std::max(timeAt(pos.x() + 1), t0 + 1);
    const size_t a = o.bucketOf(t0), b = std::max(o.bucketOf(t1 - 1) + 1, a + 1);
    double busy = 0, trace = 0;
    uint64_t samples = 0, losses = 0;
    for (size_t i = a; i < b; ++i) {
        busy += o.busyCpus[i];
        trace += o.traceBytes[i];
        samples += o.samples[i];
        losses += o.losses[i];
    }
    const double n = double(b - a);
    QStringList lines;
    lines << QString("+%1").arg(duration(double(t0 - o.begin)));
    if (l.rows && pos.y() >= l.activity.top() && pos.y() <= l.activity.bottom()) {
        const int r = (pos.y() - l.activity.top()) / std::max(1, l.rowHeight);
        const std::vector<int> cpus = shownCpus();
        if (r >= 0 && r < int(cpus.size())) {
            const TimelineOverview::Cpu& c = o.cpus[size_t(cpus[size_t(r)])];
            double cb = 0;
            uint64_t cs = 0;
            for (size_t i = a; i < b; ++i)
                cb += c.busy[i], cs += c.samples[i];
            lines
                << (c.switches
                        ? QString("CPU %1: %2% busy, %3 samples").arg(c.cpu).arg(qRound(100 * cb / n)).arg(cs)
                        : QString("CPU %1: %2 samples (no switch records)").arg(c.cpu).arg(cs));
        }
    }
    lines << QString("%1 CPUs busy on average, %2 samples").arg(busy / n, 0, 'f', 1).arg(samples);
    if (o.hasTrace()) lines << QString("AUX trace written: %1").arg(bytes(trace));
    if (losses)
        lines << QString("%1 loss marker%2 (the lanes say what was lost)")
                     .arg(losses)
                     .arg(losses == 1 ? "" : "s");
    lines << "click: centre here · drag: move · Shift+drag: new window · wheel: zoom";
    return lines.join('\n');
}

bool OverviewStrip::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(e);
}

void OverviewStrip::request(uint64_t begin, uint64_t end) {
    if (!overview_) return;
    const uint64_t b = overview_->begin, e = overview_->end;
    uint64_t w = std::min(std::max<uint64_t>(end > begin ? end - begin : 1, 1), e - b);
    if (begin < b) begin = b;
    if (begin > e - w) begin = e - w;
    viewBegin_ = begin;
    viewEnd_ = begin + w;
    update();
    emit rangeRequested(viewBegin_, viewEnd_);
    // The timeline shows what it can of it (its narrowest window); the bracket follows (windowChanged).
    if (!state_) return;
    state_->setWindow(viewBegin_, viewEnd_);
    setVisibleRange(state_->window().begin, state_->window().end);
}

void OverviewStrip::centreAt(double x) {
    const uint64_t w = viewEnd_ > viewBegin_ ? viewEnd_ - viewBegin_ : 1;
    const uint64_t t = timeAt(x);
    request(t > w / 2 ? t - w / 2 : 0, (t > w / 2 ? t - w / 2 : 0) + w);
}

void OverviewStrip::mousePressEvent(QMouseEvent* e) {
    if (!overview_ || e->button() != Qt::LeftButton) return QWidget::mousePressEvent(e);
    const double x = e->position().x();
    if (e->modifiers() & Qt::ShiftModifier) {
        drag_ = Drag::Select;
        selectFrom_ = selectTo_ = timeAt(x);
        update();
        return;
    }
    drag_ = Drag::Move;
    const double x0 = xOf(viewBegin_), x1 = xOf(viewEnd_);
    if (x >= std::min(x0, (x0 + x1) / 2 - kMinBracket) && x <= std::max(x1, (x0 + x1) / 2 + kMinBracket)) {
        grab_ = x - x0;  // on the bracket: it moves with the mouse from where it was held
    } else {
        centreAt(x);
        grab_ = x - xOf(viewBegin_);
    }
}

void OverviewStrip::mouseMoveEvent(QMouseEvent* e) {
    const double x = e->position().x();
    if (drag_ == Drag::Move) {
        const uint64_t w = viewEnd_ - viewBegin_;
        // The time at the window's left edge, which may lie before the recording.
        const double left = double(overview_->begin) +
                            (x - grab_ - left_) * double(overview_->end - overview_->begin) / plotWidth();
        const uint64_t begin = left <= double(overview_->begin) ? overview_->begin : uint64_t(left);
        request(begin, begin + w);
    } else if (drag_ == Drag::Select) {
        selectTo_ = timeAt(x);
        update();
    }
}

void OverviewStrip::mouseReleaseEvent(QMouseEvent* e) {
    if (drag_ == Drag::Select) {
        drag_ = Drag::None;
        const double a = xOf(selectFrom_), b = xOf(selectTo_);
        if (std::abs(b - a) >= 3)
            request(std::min(selectFrom_, selectTo_), std::max(selectFrom_, selectTo_));
        else
            centreAt(e->position().x());
        update();
        return;
    }
    drag_ = Drag::None;
}

void OverviewStrip::mouseDoubleClickEvent(QMouseEvent* e) {
    if (!overview_ || e->button() != Qt::LeftButton) return;
    drag_ = Drag::None;
    request(overview_->begin, overview_->end);
}

void OverviewStrip::wheelEvent(QWheelEvent* e) {
    if (!overview_ || viewEnd_ <= viewBegin_) return;
    const double steps = e->angleDelta().y() / 120.0;
    if (steps == 0) return;
    const double factor = std::pow(1.25, -steps);  // up: zoom in
    const double t = double(timeAt(e->position().x()));
    const double b = double(viewBegin_), en = double(viewEnd_);
    const double nb = t - (t - b) * factor, ne = t + (en - t) * factor;
    const uint64_t begin = nb <= double(overview_->begin) ? overview_->begin : uint64_t(nb);
    const uint64_t end = std::max<uint64_t>(uint64_t(std::max(ne, nb + 1)), begin + 1);
    request(begin, end);
    e->accept();
}

}  // namespace auxscope
