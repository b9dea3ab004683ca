// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/ProcessTrack.h"

#include <QMenu>
#include <QPainter>

#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"

namespace auxscope {

using namespace timeline_metrics;

void ProcessTrack::paint(TrackPaintContext& ctx, int y) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const int plotRight = kLabelWidth + ctx.plotWidth;
    p.fillRect(QRect(0, y, plotRight, height), QColor(228, 233, 240));
    p.fillRect(QRect(0, y, 4, height), palette::process(pid));
    drawDisclosure(p, 7, y, height, !ctx.state.processCollapsed(pid));
    QFont bold = p.font();
    bold.setBold(true);
    const QFont normal = p.font();
    p.setFont(bold);
    p.setPen(QColor(25, 25, 35));
    QString title;
    const SidebandLanes* lanes = data.lanes.get();
    if (lanes && process >= 0) {
        const SidebandLanes::Process& proc = lanes->processes[size_t(process)];
        // A process the sideband never named is called "pid N" once, not "pid N  pid N".
        const QString name = QString::fromStdString(proc.name), byPid = QString("pid %1").arg(proc.pid);
        title = proc.pid <= 0                     ? name
                : name.isEmpty() || name == byPid ? byPid
                                                  : QString("%1  pid %2").arg(name).arg(proc.pid);
        title += QString("  ·  %1 %2  ·  %3 on CPU  ·  %4 samples")
                     .arg(proc.threads.size())
                     .arg(proc.threads.size() == 1 ? "thread" : "threads")
                     .arg(formatNs(double(proc.runTime)))
                     .arg(proc.samples);
    } else {
        title = pid > 0 ? QString("pid %1").arg(pid) : QString("unknown process");
    }
    if (ctx.state.processCollapsed(pid)) title += "  ·  collapsed";
    if (lanes && process >= 0 && !ctx.state.laneState().pinned.empty() && !pinned) {
        // Its threads pinned on top are not repeated here.
        int pinned = 0;
        for (size_t li : lanes->processes[size_t(process)].threads)
            pinned += ctx.state.laneState().isPinned(TimelineLaneState::Pin::Thread, lanes->threads[li].tid);
        if (pinned) title += QString("  ·  %1 pinned on top").arg(pinned);
    }
    int left = 20;
    if (pinned && ctx.state.laneState().isPinned(TimelineLaneState::Pin::Process, pid)) {
        drawPin(p, 23, y + (height - 12) / 2);
        left += 10;
    }
    p.drawText(QRect(left, y, plotRight - left - 6, height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(title, Qt::ElideRight, plotRight - left - 6));
    p.setFont(normal);
}

void ProcessTrack::addMenuItems(TrackMenuContext& m) const {
    m.menu.setTitle(QString("pid %1").arg(pid));
    addPin(m, TimelineLaneState::Pin::Process, pid, QString("pid %1").arg(pid));
    addCollapseAction(m, pid);
}

}  // namespace auxscope
