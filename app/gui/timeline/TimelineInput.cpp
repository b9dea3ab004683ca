// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineInput.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "gui/timeline/TimelineView.h"

namespace auxscope {

using namespace timeline_metrics;

void TimelineInput::zoomAround(double x, double factor) {
    TimelineState& s = *view_.state();
    const uint64_t viewBegin = s.window().begin, viewEnd = s.window().end;
    if (!s.data() || viewEnd <= viewBegin) return;
    if (s.followLatest()) {
        // Following: zoom keeps the newest time at the right edge.
        const double w = std::max(double(view_.minWidth()), double(viewEnd - viewBegin) * factor);
        s.setFollowSeconds(w / 1e9);
        s.setWindow(viewEnd > uint64_t(w) ? viewEnd - uint64_t(w) : 0, viewEnd);
        return;
    }
    const int plotWidth = view_.plotWidth();
    x = std::clamp(x, double(kLabelWidth), double(kLabelWidth + plotWidth));
    const double t = double(viewBegin) + (x - kLabelWidth) * double(viewEnd - viewBegin) / plotWidth;
    double w = double(viewEnd - viewBegin) * factor;
    w = std::max(w, double(view_.minWidth()));
    const double begin = t - (t - double(viewBegin)) * w / double(viewEnd - viewBegin);
    s.setWindow(uint64_t(std::max(0.0, std::round(begin))), uint64_t(std::max(0.0, std::round(begin + w))));
}

void TimelineInput::panBy(double pixels) {
    TimelineState& s = *view_.state();
    const uint64_t viewBegin = s.window().begin, viewEnd = s.window().end;
    if (!s.data() || viewEnd <= viewBegin) return;
    s.stopFollowing();
    const double dt = pixels * double(viewEnd - viewBegin) / view_.plotWidth();
    const double begin = std::max(0.0, double(viewBegin) + dt);
    const uint64_t w = viewEnd - viewBegin;
    s.setWindow(uint64_t(begin), uint64_t(begin) + w);
}

void TimelineInput::wheel(QWheelEvent* e) {
    const QPoint d = e->angleDelta();
    const double x = e->position().x();
    if (e->modifiers() & Qt::ControlModifier) {
        zoomAround(x, std::pow(0.8, d.y() / 120.0));
    } else if (d.x() != 0 || (e->modifiers() & Qt::ShiftModifier)) {
        panBy(-(d.x() != 0 ? d.x() : d.y()) / 120.0 * view_.plotWidth() * 0.1);
    } else {
        view_.vbar_->setValue(view_.vbar_->value() - d.y() / 120 * 3 * kRowHeight);
    }
    e->accept();
}

bool TimelineInput::key(QKeyEvent* e) {
    TimelineState& s = *view_.state();
    QScrollBar* vbar = view_.vbar_;
    const int plotWidth = view_.plotWidth();
    const double x = lastMouse_.x() >= kLabelWidth && lastMouse_.x() < kLabelWidth + plotWidth
                         ? lastMouse_.x()
                         : kLabelWidth + plotWidth / 2.0;
    switch (e->key()) {
        case Qt::Key_W:
            zoomAround(x, 0.8);
            break;
        case Qt::Key_S:
            zoomAround(x, 1.25);
            break;
        case Qt::Key_A:
            panBy(-plotWidth * 0.1);
            break;
        case Qt::Key_D:
            panBy(plotWidth * 0.1);
            break;
        case Qt::Key_Home:
        case Qt::Key_0:
            if (s.data()) s.setWindow(s.data()->begin, s.data()->end);
            break;
        case Qt::Key_Up:
            vbar->setValue(vbar->value() - kRowHeight);
            break;
        case Qt::Key_Down:
            vbar->setValue(vbar->value() + kRowHeight);
            break;
        case Qt::Key_PageUp:
            vbar->setValue(vbar->value() - vbar->pageStep());
            break;
        case Qt::Key_PageDown:
            vbar->setValue(vbar->value() + vbar->pageStep());
            break;
        case Qt::Key_Escape:
            // Perfetto: Esc clears the selection, whatever it is (and the keys' overlay).
            view_.helpVisible_ = false;
            s.select({});
            s.clearTimeSelection();
            view_.update();
            break;
        case Qt::Key_F:
            s.focusSelection();
            break;
        case Qt::Key_M:
            s.toggleMark();
            break;
        case Qt::Key_Question:
            view_.setKeysHelpVisible(!view_.helpVisible_);
            break;
        case Qt::Key_Slash:
            emit view_.searchRequested();
            break;
        case Qt::Key_C: {
            // The process under the mouse (its header or a thread's lane), else the selected thread's.
            const TimelineHit& selected = s.selection();
            if (!view_.toggleProcessAt(lastMouse_.y()) && selected.valid() && selected.pid >= 0 && s.data() &&
                s.data()->lanes && view_.processHeaderY(selected.pid) >= 0)
                s.setProcessCollapsed(selected.pid, !s.processCollapsed(selected.pid));
            break;
        }
        default:
            if (e->text() == "?") {
                view_.setKeysHelpVisible(!view_.helpVisible_);
                break;
            }
            return false;
    }
    e->accept();
    return true;
}

void TimelineInput::press(QMouseEvent* e) {
    view_.setFocus(Qt::MouseFocusReason);
    if (e->button() != Qt::LeftButton) return;
    const TimelineState& s = *view_.state();
    pressed_ = true;
    dragged_ = false;
    pressPos_ = e->position().toPoint();
    // Shift+drag in the tracks or any drag on the time axis selects a range (Perfetto).
    rangeDrag_ = s.data() && pressPos_.x() >= kLabelWidth &&
                 ((e->modifiers() & Qt::ShiftModifier) || pressPos_.y() < kAxisHeight);
    // Ctrl+Shift+drag over a selected range: the new range (B) is compared with it (A).
    if (rangeDrag_ && (e->modifiers() & Qt::ShiftModifier) && (e->modifiers() & Qt::ControlModifier) &&
        s.timeSelection())
        view_.state()->requestRangeCompare();
    pressTime_ = view_.timeAt(
        std::clamp(double(pressPos_.x()), double(kLabelWidth), double(kLabelWidth + view_.plotWidth())));
    pressBegin_ = s.window().begin, pressEnd_ = s.window().end;
    pressScroll_ = view_.vbar_->value();
}

void TimelineInput::move(QMouseEvent* e) {
    const QPoint pos = e->position().toPoint();
    lastMouse_ = pos;
    if (!pressed_) return;
    TimelineState& s = *view_.state();
    const QPoint delta = pos - pressPos_;
    if (!dragged_ && delta.manhattanLength() < 4) return;
    dragged_ = true;
    if (rangeDrag_) {
        view_.setCursor(Qt::IBeamCursor);
        const uint64_t t = view_.timeAt(
            std::clamp(double(pos.x()), double(kLabelWidth), double(kLabelWidth + view_.plotWidth())));
        uint64_t begin = std::min(t, pressTime_), end = std::max(t, pressTime_);
        if (end == begin) ++end;
        s.dragTimeSelection(begin, end);
        view_.update();
        return;
    }
    view_.setCursor(Qt::ClosedHandCursor);
    const double dt = double(delta.x()) * double(pressEnd_ - pressBegin_) / view_.plotWidth();
    const double begin = std::max(0.0, double(pressBegin_) - dt);
    if (delta.x() != 0) {
        s.stopFollowing();
        s.setWindow(uint64_t(begin), uint64_t(begin) + (pressEnd_ - pressBegin_));
    }
    view_.vbar_->setValue(pressScroll_ - delta.y());
}

void TimelineInput::release(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || !pressed_) return;
    TimelineState& s = *view_.state();
    pressed_ = false;
    view_.unsetCursor();
    if (dragged_ && rangeDrag_) {
        rangeDrag_ = false;
        s.endTimeSelectionDrag();
        return;
    }
    rangeDrag_ = false;
    if (dragged_) return;
    if (e->position().y() < kAxisHeight) return;  // a click on the axis selects nothing
    if (const TimelineTrack* t = view_.trackAt(int(e->position().y()));
        t && (t->kind() == TimelineTrack::ProcessHeader || t->kind() == TimelineTrack::HealthHeader)) {
        // A group's header: collapses or expands it.
        if (t->kind() == TimelineTrack::HealthHeader)
            s.setHealthCollapsed(!s.laneState().healthCollapsed);
        else
            s.setProcessCollapsed(t->pid, !s.processCollapsed(t->pid));
        return;
    }
    s.select(view_.hitAt(e->position().toPoint()));
    view_.update();
}

void TimelineInput::doubleClick(QMouseEvent* e) {
    const TimelineHit hit = view_.hitAt(e->position().toPoint());
    if (!hit.valid()) return;
    const uint64_t w = std::max<uint64_t>(hit.end - hit.start, 1);
    const uint64_t margin = std::max<uint64_t>(w / 20, 1);
    TimelineState& s = *view_.state();
    s.stopFollowing();
    s.setWindow(hit.start > margin ? hit.start - margin : 0, hit.end + margin);
}

}  // namespace auxscope
