// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A process's header: its name and pid, its threads, CPU time and samples, a
// triangle that says whether it is collapsed (a click or C toggles it), a pin
// when it is pinned on top, and how many of its threads are pinned there.
#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

class ProcessTrack : public TimelineTrack {
public:
    ProcessTrack(const LaneEntry& entry, int y)
        : TimelineTrack(ProcessHeader, entry, y, timeline_metrics::kProcessHeight) {}

    void paint(TrackPaintContext& ctx, int top) const override;
    void addMenuItems(TrackMenuContext& m) const override;
};

}  // namespace auxscope
