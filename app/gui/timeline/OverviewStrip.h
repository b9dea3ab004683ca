// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The whole recording at once, above the timeline's lanes (a TimelineOverview,
// computed from the sideband and the trace's sync-point index, nothing decoded):
// per CPU a heat row of how busy it was (with many CPUs: one stacked area of
// how many CPUs were busy), the AUX trace written over time as an area below,
// and every loss the kernel reported as a red tick. The timeline's visible
// window is marked as a bracket, the rest dimmed.
//
// Mouse: a click centres the window where it was clicked, a drag (on the
// bracket or off it) moves the window, Shift+drag selects a new window, the
// wheel zooms the window around the mouse, a double-click shows the whole
// recording. Each asks for a range (rangeRequested). Given the timeline's
// TimelineState (setState), the strip brackets its window as it moves (at
// once, not only once it settles) and moves it there itself.
#include <QPointer>
#include <QWidget>

#include <cstdint>
#include <memory>

#include "spans/TimelineOverview.h"

namespace auxscope {

class TimelineState;

class OverviewStrip : public QWidget {
    Q_OBJECT
public:
    explicit OverviewStrip(QWidget* parent = nullptr);

    // The timeline state whose window the strip shows and moves.
    void setState(TimelineState* state);
    void setOverview(std::shared_ptr<const TimelineOverview> overview);
    const std::shared_ptr<const TimelineOverview>& overview() const { return overview_; }
    // The window the timeline shows (perf clock ns), drawn as the bracket.
    void setVisibleRange(uint64_t begin, uint64_t end);
    uint64_t visibleBegin() const { return viewBegin_; }
    uint64_t visibleEnd() const { return viewEnd_; }
    // The plot's left and right margins, to line up with the timeline's plot
    // (its label column and scroll bar).
    void setPlotMargins(int left, int right);

    // Geometry: the x of perf time `t`, the time at `x` (widget coordinates).
    double xOf(uint64_t t) const;
    uint64_t timeAt(double x) const;
    int plotLeft() const { return left_; }
    int plotWidth() const;
    // Rows drawn: one per CPU (heat), or a stacked area when there are more than kMaxCpuRows.
    bool stacked() const;
    int cpuRowCount() const;
    // The y range of the trace density area (empty when the recording has no AUX trace).
    QRect traceArea() const;
    static constexpr int kMaxCpuRows = 16;

    QString toolTipAt(QPoint pos) const;
    QSize sizeHint() const override;  // as tall as its rows need
    QSize minimumSizeHint() const override;

signals:
    // The user asks the timeline to show [begin, end).
    void rangeRequested(quint64 begin, quint64 end);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mouseReleaseEvent(QMouseEvent*) override;
    void mouseDoubleClickEvent(QMouseEvent*) override;
    void wheelEvent(QWheelEvent*) override;
    bool event(QEvent*) override;

private:
    struct Layout {
        QRect plot;      // everything drawn over time
        QRect activity;  // CPU rows or the stacked area
        QRect trace;     // AUX density (empty: none)
        int rows = 0, rowHeight = 0;
    };
    Layout layout() const;
    void request(uint64_t begin, uint64_t end);
    void centreAt(double x);
    std::vector<int> shownCpus() const;  // indexes into overview_->cpus drawn as rows

    std::shared_ptr<const TimelineOverview> overview_;
    QPointer<TimelineState> state_;
    uint64_t viewBegin_ = 0, viewEnd_ = 0;
    int left_ = 170, right_ = 0;
    // Dragging: moving the window (grab: where in it the mouse held it), or
    // selecting a new one (Shift) from selectFrom_.
    enum class Drag { None, Move, Select } drag_ = Drag::None;
    double grab_ = 0;
    uint64_t selectFrom_ = 0, selectTo_ = 0;
};

}  // namespace auxscope
