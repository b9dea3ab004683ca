// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the keys, the wheel and the mouse do on a TimelineView, as in Perfetto:
// Ctrl+wheel or W/S zoom around the mouse (following the newest data: keeping
// it at the right edge), A/D, Shift+wheel or a drag pan, the wheel and the
// arrow keys scroll the tracks, 0 or Home shows everything, a click selects
// what is there (on a header: collapses it), a double-click zooms to it,
// Shift+drag in the tracks or a drag on the axis selects a time range, F, M,
// Esc, ?, / and C as the keys help says. It writes into the view's
// TimelineState; the view repaints from it.
#include <QPoint>

#include <cstdint>

class QKeyEvent;
class QMouseEvent;
class QWheelEvent;

namespace auxscope {

class TimelineView;

class TimelineInput {
public:
    explicit TimelineInput(TimelineView& view) : view_(view) {}

    void wheel(QWheelEvent* e);
    // False: not a timeline key (the widget passes it on).
    bool key(QKeyEvent* e);
    void press(QMouseEvent* e);
    void move(QMouseEvent* e);
    void release(QMouseEvent* e);
    void doubleClick(QMouseEvent* e);
    void leave() { lastMouse_ = {-1, -1}; }

private:
    void zoomAround(double x, double factor);
    void panBy(double pixels);

    TimelineView& view_;
    // Dragging (rangeDrag_: selecting a range from pressTime_).
    bool pressed_ = false, dragged_ = false, rangeDrag_ = false;
    uint64_t pressTime_ = 0;
    QPoint pressPos_;
    uint64_t pressBegin_ = 0, pressEnd_ = 0;
    int pressScroll_ = 0;
    QPoint lastMouse_{-1, -1};
};

}  // namespace auxscope
