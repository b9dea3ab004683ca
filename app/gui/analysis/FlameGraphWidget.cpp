// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/FlameGraphWidget.h"

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gui/analysis/CallTreeModel.h"
#include "gui/analysis/CostColumns.h"
#include "gui/timeline/TimelinePalette.h"

namespace auxscope {

FlameGraphWidget::FlameGraphWidget(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumHeight(120);
}

void FlameGraphWidget::setDiff(const CompareResult& r, CompareMetric m) {
    // The keys as a function table (id = key + 1; id 0 is the table's "[unknown]").
    auto table = std::make_shared<FunctionTable>();
    for (const CompareKey& k : r.keys)
        table->add({k.inlined ? k.name + " (inlined)" : k.name, k.file, 0});
    CallTree tree = r.tree.shape;
    const size_t n = tree.nodes.size();
    std::vector<double> a(n), b(n);
    for (size_t k = 0; k < n; ++k) {
        if (k != 0) tree.nodes[k].function += 1;
        tree.nodes[k].cost = r.tree.b[k];
        a[k] = r.scaledA(r.tree.a[k], m);
        b[k] = r.scaledB(r.tree.b[k], m);
    }
    Metric metric = Metric::Time;
    switch (m) {
        case CompareMetric::TotalInsns:
        case CompareMetric::SelfInsns:
        case CompareMetric::Calls:
            metric = Metric::Instructions;
            break;
        case CompareMetric::TotalSamples:
        case CompareMetric::SelfSamples:
            metric = Metric::Samples;
            break;
        case CompareMetric::TotalPeriod:
        case CompareMetric::SelfPeriod:
            metric = Metric::Period;
            break;
        default:
            break;
    }
    source_ = r.source;
    metric_ = metric;
    setTree(std::move(tree), std::move(table));
    diffA_ = std::move(a);
    diffB_ = std::move(b);
}

double FlameGraphWidget::diffChange(uint32_t node) const {
    const double a = diffA(node), b = diffB(node);
    if (a == 0) return b == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    return (b - a) / a;
}

QColor FlameGraphWidget::diffColor(double change) {
    const double t = std::isinf(change) ? 1.0 : std::min(1.0, std::abs(change) / kDiffFullScale);
    const QColor neutral(228, 228, 228);
    const QColor full = change > 0 ? QColor(214, 39, 40) : QColor(38, 92, 214);
    auto mix = [t](int x, int y) { return int(std::lround(x + (y - x) * t)); };
    if (change == 0) return neutral;
    return QColor(mix(neutral.red(), full.red()), mix(neutral.green(), full.green()),
                  mix(neutral.blue(), full.blue()));
}

QRect FlameGraphWidget::legendRect() const {
    if (!isDiff()) return {};
    const int w = std::min(260, std::max(120, width() / 3));
    return QRect(width() - w - 6, 4, w, 30);
}

QString FlameGraphWidget::valueText(double v) const {
    switch (metric_) {
        case Metric::Time:
            return formatNs(v);
        case Metric::Instructions:
            return formatCount(uint64_t(std::llround(std::max(0.0, v)))) + " instructions";
        case Metric::Samples:
            return formatCount(uint64_t(std::llround(std::max(0.0, v)))) + " " + samplesName(source_);
        case Metric::Period:
            return periodText(uint64_t(std::llround(std::max(0.0, v))), source_) +
                   (source_.periodIsTime ? QString(" %1").arg(periodName(source_)) : QString());
    }
    return {};
}

void FlameGraphWidget::setTree(CallTree tree, std::shared_ptr<const FunctionTable> functions) {
    diffA_.clear();
    diffB_.clear();
    tree_ = std::move(tree);
    functions_ = std::move(functions);
    const size_t n = tree_.nodes.size();
    children_.assign(n, {});
    depth_.assign(n, 0);
    for (uint32_t k = 1; k < n; ++k) {  // parents come before children
        const uint32_t p = tree_.nodes[k].parent;
        if (p >= n) continue;
        children_[p].push_back(k);
        depth_[k] = depth_[p] + 1;
    }
    auto name = [&](uint32_t node) -> const std::string& {
        static const std::string none;
        const uint32_t f = tree_.nodes[node].function;
        return functions_ && f < functions_->size() ? (*functions_)[f].name : none;
    };
    for (auto& c : children_)
        std::sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
            const int cmp = name(a).compare(name(b));
            return cmp < 0 || (cmp == 0 && a < b);
        });
    zoom_ = 0;
    dirty_ = true;
    setMinimumHeight(std::max(120, (maxDepth() + 2) * kRowHeight + 4));
    update();
}

int FlameGraphWidget::maxDepth() const {
    uint32_t d = 0;
    for (uint32_t v : depth_)
        d = std::max(d, v);
    return int(d);
}

void FlameGraphWidget::setMetric(Metric metric) {
    if (metric_ == metric) return;
    metric_ = metric;
    dirty_ = true;
    update();
}

void FlameGraphWidget::zoomTo(uint32_t node) {
    if (node >= tree_.nodes.size()) node = 0;
    zoom_ = node;
    dirty_ = true;
    update();
}

uint64_t FlameGraphWidget::value(uint32_t node) const {
    const RangeCost& c = tree_.nodes[node].cost;
    switch (metric_) {
        case Metric::Time:
            return c.totalTime;
        case Metric::Instructions:
            return c.totalInsns;
        case Metric::Samples:
            return c.totalSamples;
        case Metric::Period:
            return c.totalPeriod;
    }
    return 0;
}

const std::vector<FlameGraphWidget::Box>& FlameGraphWidget::boxes() const {
    if (dirty_ || layoutWidth_ != width()) layout();
    return boxes_;
}

void FlameGraphWidget::layout() const {
    dirty_ = false;
    layoutWidth_ = width();
    boxes_.clear();
    const double W = std::max(1, width());
    boxes_.push_back({0, 0, 0, W});
    if (tree_.nodes.size() <= 1) return;
    // The zoomed node's callers: full width below it.
    std::vector<uint32_t> path;
    for (uint32_t k = zoom_; k != 0 && k != CallTree::kNone; k = tree_.nodes[k].parent)
        path.push_back(k);
    std::reverse(path.begin(), path.end());
    for (size_t i = 0; i + 1 < path.size(); ++i)
        boxes_.push_back({path[i], int(i) + 1, 0, W});
    // From the zoomed node (or the root's children) up, children laid out left to right.
    const uint64_t total = value(zoom_);
    if (total == 0) return;
    const double scale = W / double(total);
    struct Item {
        uint32_t node;
        double x;
    };
    std::vector<Item> stack;
    if (zoom_ == 0) {
        double x = 0;
        for (uint32_t c : children_[0]) {
            stack.push_back({c, x});
            x += double(value(c)) * scale;
        }
    } else {
        stack.push_back({zoom_, 0});
    }
    std::reverse(stack.begin(), stack.end());
    while (!stack.empty()) {
        const Item it = stack.back();
        stack.pop_back();
        const double w = double(value(it.node)) * scale;
        if (w < 0.5) continue;  // narrower than a pixel: its callees are too
        boxes_.push_back({it.node, int(depth_[it.node]), it.x, w});
        double x = it.x;
        const size_t mark = stack.size();
        for (uint32_t c : children_[it.node]) {
            const double cw = double(value(c)) * scale;
            if (cw >= 0.5) stack.push_back({c, x});
            x += cw;
        }
        std::reverse(stack.begin() + ptrdiff_t(mark), stack.end());
    }
}

QRect FlameGraphWidget::boxRect(const Box& b) const {
    const int y = height() - (b.depth + 1) * kRowHeight;
    const int x0 = int(b.x), x1 = std::max(x0 + 1, int(b.x + b.width));
    return QRect(x0, y, x1 - x0 - (x1 - x0 > 2 ? 1 : 0), kRowHeight - 1);
}

uint32_t FlameGraphWidget::nodeAt(QPoint pos) const {
    for (const Box& b : boxes())
        if (boxRect(b).adjusted(0, 0, 1, 1).contains(pos)) return b.node;
    return CallTree::kNone;
}

void FlameGraphWidget::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), QColor(252, 252, 250));
    painted_ = 0;
    if (tree_.nodes.size() <= 1 || value(0) == 0) {
        p.setPen(Qt::gray);
        p.drawText(rect(), Qt::AlignCenter,
                   tree_.nodes.size() <= 1 ? QString("Select a time range (Shift+drag on the timeline)")
                                           : QString("Nothing ran in the selected range"));
        return;
    }
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    const QFontMetrics fm(small);
    const QRect visible = rect();
    for (const Box& b : boxes()) {
        const QRect r = boxRect(b);
        if (!r.intersects(visible)) continue;
        ++painted_;
        QColor c;
        QString text;
        if (b.node == 0 && isDiff()) {
            c = diffColor(diffChange(0));
            const double pct = 100.0 * diffChange(0);
            text = QString("all: %1 (A %2, %3)")
                       .arg(valueText(diffB(0)), valueText(diffA(0)),
                            std::isinf(pct) ? QString("new") : QString("%1%").arg(pct, 0, 'f', 1));
        } else if (b.node == 0) {
            c = QColor(200, 200, 205);
            switch (metric_) {
                case Metric::Time:
                    text = QString("all: %1").arg(formatNs(double(value(0))));
                    break;
                case Metric::Instructions:
                    text = QString("all: %1").arg(formatCount(value(0)) + " instructions");
                    break;
                case Metric::Samples:
                    text = QString("all: %1 %2").arg(formatCount(value(0)), samplesName(source_));
                    break;
                case Metric::Period:
                    text = QString("all: %1").arg(periodText(value(0), source_)) +
                           (source_.periodIsTime ? QString(" %1").arg(periodName(source_)) : QString());
                    break;
            }
        } else {
            const uint32_t f = tree_.nodes[b.node].function;
            const std::string& name =
                functions_ && f < functions_->size() ? (*functions_)[f].name : std::string();
            c = isDiff() ? diffColor(diffChange(b.node)) : palette::function(name);
            if (zoom_ != 0 && b.width >= width() - 1 && b.node != zoom_ && depth_[b.node] < depth_[zoom_])
                c = c.lighter(125);  // the zoomed node's callers
            if (r.width() >= 30) text = QString::fromStdString(name);
        }
        p.fillRect(r, c);
        if (!text.isEmpty() && r.width() >= 30) {
            p.setPen(QColor(20, 20, 20));
            p.drawText(r.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       fm.elidedText(text, Qt::ElideRight, r.width() - 5));
        }
    }
    if (isDiff()) {
        // The legend: the colour scale from -kDiffFullScale (blue, shrank) to +kDiffFullScale (red, grew).
        const QRect L = legendRect();
        p.fillRect(L.adjusted(-4, -2, 4, 2), QColor(252, 252, 250, 235));
        const QRect bar(L.left(), L.top(), L.width(), 12);
        for (int x = 0; x < bar.width(); ++x) {
            const double change = kDiffFullScale * (2.0 * (x + 0.5) / bar.width() - 1.0);
            p.fillRect(QRect(bar.left() + x, bar.top(), 1, bar.height()), diffColor(change));
        }
        p.setPen(QColor(90, 90, 90));
        p.drawRect(bar.adjusted(0, 0, -1, -1));
        p.setPen(QColor(20, 20, 20));
        const QRect labels(L.left(), bar.bottom() + 1, L.width(), L.height() - bar.height());
        const int pct = int(std::lround(100 * kDiffFullScale));
        p.drawText(labels, Qt::AlignLeft | Qt::AlignVCenter, QString("-%1% shrank").arg(pct));
        p.drawText(labels, Qt::AlignHCenter | Qt::AlignVCenter, "0");
        p.drawText(labels, Qt::AlignRight | Qt::AlignVCenter, QString("grew +%1%").arg(pct));
    }
    if (hasFocus()) {
        p.setPen(QPen(palette().highlight().color(), 1));
        p.drawRect(rect().adjusted(0, 0, -1, -1));
    }
}

void FlameGraphWidget::mousePressEvent(QMouseEvent* e) {
    setFocus(Qt::MouseFocusReason);
    if (e->button() != Qt::LeftButton) return;
    const uint32_t node = nodeAt(e->position().toPoint());
    if (node == CallTree::kNone) return;
    zoomTo(node == zoom_ ? tree_.nodes[node].parent == CallTree::kNone ? 0 : tree_.nodes[node].parent : node);
    emit nodeClicked(node);
}

void FlameGraphWidget::keyPressEvent(QKeyEvent* e) {
    if (e->key() == Qt::Key_Escape && zoom_ != 0) {
        zoomTo(0);
        e->accept();
        return;
    }
    QWidget::keyPressEvent(e);
}

void FlameGraphWidget::resizeEvent(QResizeEvent*) {
    dirty_ = true;
}

bool FlameGraphWidget::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const uint32_t node = nodeAt(help->pos());
        if (node == CallTree::kNone || node == 0) {
            QToolTip::hideText();
            return true;
        }
        const CallTree::Node& n = tree_.nodes[node];
        const RangeCost& c = n.cost;
        if (isDiff()) {
            const std::string name = functions_ && n.function < functions_->size()
                                         ? (*functions_)[n.function].name
                                         : std::string("?");
            const double a = diffA(node), b = diffB(node), change = diffChange(node);
            const QString pct =
                a == 0 && b == 0 ? QString("0.0%")
                : std::isinf(change)
                    ? QString("new in B")
                    : QString("%1%2%").arg(change >= 0 ? "+" : "").arg(100.0 * change, 0, 'f', 1);
            const double d = b - a;
            QToolTip::showText(help->globalPos(),
                               QString("%1\nA: %2\nB: %3\ndelta: %4%5 (%6)\n"
                                       "click: zoom here, click again: zoom out")
                                   .arg(QString::fromStdString(name), valueText(a), valueText(b),
                                        d < 0 ? QString("-") : QString("+"), valueText(std::abs(d)), pct),
                               this);
            return true;
        }
        const std::string name =
            functions_ && n.function < functions_->size() ? (*functions_)[n.function].name : std::string("?");
        const double all = double(std::max<uint64_t>(value(0), 1));
        if (isSampled(source_)) {
            // Samples: their count and period (time for cpu-clock and off-CPU time), self and total.
            QToolTip::showText(help->globalPos(),
                               QString("%1\ntotal %2 %3, %4 (%5%)\nself %6 %3, %7\n"
                                       "click: zoom here, click again: zoom out")
                                   .arg(QString::fromStdString(name))
                                   .arg(formatCount(c.totalSamples))
                                   .arg(samplesName(source_))
                                   .arg(periodText(c.totalPeriod, source_) + " " + periodName(source_))
                                   .arg(100.0 * double(value(node)) / all, 0, 'f', 1)
                                   .arg(formatCount(c.selfSamples))
                                   .arg(periodText(c.selfPeriod, source_)),
                               this);
            return true;
        }
        QToolTip::showText(help->globalPos(),
                           QString("%1\ntotal %2 (%3%), self %4\n%5 calls, %6 instructions (%7 self)\n"
                                   "click: zoom here, click again: zoom out")
                               .arg(QString::fromStdString(name))
                               .arg(formatNs(double(c.totalTime)))
                               .arg(100.0 * double(value(node)) / all, 0, 'f', 1)
                               .arg(formatNs(double(c.selfTime)))
                               .arg(formatCount(c.calls))
                               .arg(formatCount(c.totalInsns))
                               .arg(formatCount(c.selfInsns)),
                           this);
        return true;
    }
    return QWidget::event(e);
}

}  // namespace auxscope
