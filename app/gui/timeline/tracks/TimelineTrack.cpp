// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/TimelineTrack.h"

#include <QMenu>
#include <QPainter>
#include <QPolygonF>

#include "gui/timeline/TimelineState.h"

namespace auxscope {

TimelineTrack::TimelineTrack(Kind kind, const LaneEntry& entry, int y, int height)
    : contentY(y),
      height(height),
      pinned(entry.pinned),
      cpu(entry.cpu),
      thread(entry.thread),
      lane(entry.lane),
      process(entry.process),
      pid(entry.pid),
      kind_(kind) {}

TimelineHit TimelineTrack::hit(const TrackHitContext&, int, uint64_t, uint64_t) const {
    return {};
}

void TimelineTrack::addMenuItems(TrackMenuContext&) const {}

void TimelineTrack::addThreadMenuItems(TrackMenuContext& m) const {
    using Pin = TimelineLaneState::Pin;
    if (tid == -1) return;
    m.menu.setTitle(QString("tid %1").arg(tid));
    addPin(m, Pin::Thread, tid, QString("tid %1").arg(tid));
    TimelineState* state = &m.state;
    const int32_t pid = this->pid;
    if (m.processShown(pid)) {
        const bool pinned = state->laneState().isPinned(Pin::Process, pid);
        QAction* a = m.menu.addAction(pinned ? "Unpin its process" : "Pin its process to top");
        QObject::connect(a, &QAction::triggered, state,
                         [state, pid, pinned] { state->setPinned(Pin::Process, pid, !pinned); });
    }
    addCollapseAction(m, pid);
}

void TimelineTrack::addCollapseAction(TrackMenuContext& m, int32_t pid) {
    if (pid == -1 || !m.processShown(pid)) return;
    TimelineState* state = &m.state;
    const bool collapsed = state->processCollapsed(pid);
    QAction* a = m.menu.addAction(collapsed ? "Expand process" : "Collapse process");
    QObject::connect(a, &QAction::triggered, state,
                     [state, pid, collapsed] { state->setProcessCollapsed(pid, !collapsed); });
}

void TimelineTrack::addPin(TrackMenuContext& m, TimelineLaneState::Pin::Kind kind, int32_t id,
                           const QString& what) {
    const bool pinned = m.state.laneState().isPinned(kind, id);
    QAction* a = m.menu.addAction(pinned ? "Unpin" : "Pin to top");
    a->setToolTip(what);
    a->setData(what);
    TimelineState* state = &m.state;
    QObject::connect(a, &QAction::triggered, state,
                     [state, kind, id, pinned] { state->setPinned(kind, id, !pinned); });
}

void TimelineTrack::drawPin(QPainter& p, int x, int y) {
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(QColor(90, 90, 100), 1.2));
    p.drawLine(QPointF(x, y + 5), QPointF(x, y + 11));
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(200, 60, 60));
    p.drawEllipse(QPointF(x, y + 4), 3, 3);
    p.restore();
}

void TimelineTrack::drawDisclosure(QPainter& p, int x, int y, int height, bool open) {
    const double cy = y + height / 2.0;
    QPolygonF tri;
    if (open)
        tri << QPointF(x, cy - 2.5) << QPointF(x + 9, cy - 2.5) << QPointF(x + 4.5, cy + 3);
    else
        tri << QPointF(x + 2, cy - 4.5) << QPointF(x + 2, cy + 4.5) << QPointF(x + 7.5, cy);
    p.save();
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(70, 75, 85));
    p.setRenderHint(QPainter::Antialiasing);
    p.drawPolygon(tri);
    p.restore();
}

}  // namespace auxscope
