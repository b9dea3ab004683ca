// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a timeline's tracks are: the LaneOrder's entries placed one under the
// other (content coordinates, before scrolling) as track objects (tracks/), a
// thread's lane followed by its flame chart (a row per depth of its SpanLod),
// the pinned section's height (it stays under the axis while the rest scrolls,
// as in Perfetto), and for each thread the index of its first track.
#include <memory>
#include <vector>

#include "gui/timeline/LaneOrder.h"
#include "gui/timeline/lod/TimelineSummaries.h"
#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

struct TrackLayout {
    std::vector<std::unique_ptr<TimelineTrack>> tracks;  // by y
    std::vector<size_t> threadFirstTrack;  // per data.threads: its lane's index (kNoThread: none)
    int pinnedHeight = 0;                  // the pinned section, spacing included
    int contentHeight = 0;

    static TrackLayout place(const LaneOrder& order, const TimelineData& data,
                             const TimelineSummaries& summaries);
    // The track at content y `cy` (nullptr: none).
    const TimelineTrack* at(int cy) const;
};

}  // namespace auxscope
