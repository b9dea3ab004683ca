// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The flame graph of a selection: RangeStats' call tree (its aggregated stacks)
// drawn with the outermost frames at the bottom and callees stacked above them,
// each box as wide as its total time (or total instructions) and siblings
// ordered by name, as Brendan Gregg's flame graphs. A click zooms to a box (it
// and its callees fill the width, its callers stay below it, full width); a
// click on the bottom row ("all") or Esc zooms out; hovering tells a box's
// costs. Boxes narrower than a pixel are not drawn (their share of the parent
// stays empty), so a frame costs the boxes that can be seen, not the tree's
// size: the layout is computed once per tree, zoom or width and painted from it.
// A tree of samples or off-CPU time (setSource) is drawn by its samples or by
// their period (time for cpu-clock and off-CPU time, else cycles or events).
//
// A differential flame graph (setDiff) draws a comparison's merged tree
// (spans/RangeCompare) with the same layout: widths from B (after the
// comparison's normalisation), each box coloured by its change from A to B (red
// grew, blue shrank, stronger the larger the relative change, full at
// kDiffFullScale; a box only B has is full red), a legend with the scale at the
// top right, and the hover gives A's value, B's and the delta.
#include <QColor>
#include <QWidget>

#include <memory>
#include <vector>

#include "spans/FunctionTable.h"
#include "spans/RangeCompare.h"
#include "spans/RangeStats.h"

namespace auxscope {

class FlameGraphWidget : public QWidget {
    Q_OBJECT
public:
    enum class Metric { Time, Instructions, Samples, Period };
    explicit FlameGraphWidget(QWidget* parent = nullptr);

    void setTree(CallTree tree, std::shared_ptr<const FunctionTable> functions);
    // The differential flame graph of `r` by `m` (TotalTime, TotalInsns,
    // TotalSamples or TotalPeriod): its merged top-down tree, widths from B.
    void setDiff(const CompareResult& r, CompareMetric m);
    bool isDiff() const { return !diffA_.empty(); }
    // Differential: a node's value on either side (scaled as the comparison says).
    double diffA(uint32_t node) const { return node < diffA_.size() ? diffA_[node] : 0; }
    double diffB(uint32_t node) const { return node < diffB_.size() ? diffB_[node] : 0; }
    // The relative change of a node (B - A) / A; +inf when only B has it, 0 when neither.
    double diffChange(uint32_t node) const;
    // The colour of a relative change: red for growth, blue for shrinking, the
    // intensity |change| / kDiffFullScale (at most 1); +inf is full red.
    static QColor diffColor(double change);
    static constexpr double kDiffFullScale = 0.5;
    // The legend's rectangle (widget coordinates; empty unless differential).
    QRect legendRect() const;
    const CallTree& tree() const { return tree_; }
    void setMetric(Metric metric);
    // What the costs count (the tooltip's words); default: decoded spans.
    void setSource(const RangeSource& source) { source_ = source; }
    Metric metric() const { return metric_; }
    // Zooms to a node (0: everything).
    void zoomTo(uint32_t node);
    uint32_t zoomNode() const { return zoom_; }

    // The laid-out boxes (widget coordinates), for painting, hit tests and tests.
    struct Box {
        uint32_t node = 0;  // 0: the "all" box
        int depth = 0;      // 0: the bottom row
        double x = 0, width = 0;
    };
    const std::vector<Box>& boxes() const;
    uint32_t nodeAt(QPoint pos) const;
    QRect boxRect(const Box& box) const;
    static constexpr int kRowHeight = 17;
    // The number of boxes the last paint drew.
    size_t lastPainted() const { return painted_; }

signals:
    void nodeClicked(uint32_t node);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void keyPressEvent(QKeyEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    bool event(QEvent*) override;
    QSize sizeHint() const override { return {800, 300}; }

private:
    uint64_t value(uint32_t node) const;
    void layout() const;
    int maxDepth() const;

    QString valueText(double v) const;

    CallTree tree_;
    std::shared_ptr<const FunctionTable> functions_;
    std::vector<double> diffA_, diffB_;            // differential: per node, scaled
    std::vector<std::vector<uint32_t>> children_;  // per node, by function name
    std::vector<uint32_t> depth_;
    Metric metric_ = Metric::Time;
    RangeSource source_;
    uint32_t zoom_ = 0;
    mutable std::vector<Box> boxes_;
    mutable bool dirty_ = true;
    mutable int layoutWidth_ = -1;
    size_t painted_ = 0;
};

}  // namespace auxscope
