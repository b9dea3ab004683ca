// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a TimelineView draws over its tracks: the time axis (ticks relative to
// the recording's start, the width in view), the labels of threads a search
// matched (outlined), marks (amber areas, flags on the axis), event markers
// (snapshot triggers' firings: red lines, flags, a band on the thread's lane), the selected
// time range (a blue band, its ends, its length on the axis) and the keys
// overlay (?).
class QPainter;

namespace auxscope {

class TimelineView;

struct TimelineOverlays {
    static void paintAxis(QPainter& p, const TimelineView& view);
    static void paint(QPainter& p, const TimelineView& view);
};

}  // namespace auxscope
