// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A thread's lane: with sideband lanes its run slices (coloured by its process,
// merged where narrower than a pixel) on top and its samples as ticks below
// (a tick per pixel column that has any); without, a title bar over its flame
// chart. Hovering a tick names the sample's event and function.
#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

class ThreadTrack : public TimelineTrack {
public:
    ThreadTrack(const LaneEntry& entry, int y)
        : TimelineTrack(ThreadHeader, entry, y, timeline_metrics::kHeaderHeight) {}

    void paint(TrackPaintContext& ctx, int top) const override;
    TimelineHit hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const override;
    void addMenuItems(TrackMenuContext& m) const override { addThreadMenuItems(m); }

private:
    void paintLane(TrackPaintContext& ctx, int y) const;
    void paintTitle(TrackPaintContext& ctx, int y) const;
};

}  // namespace auxscope
