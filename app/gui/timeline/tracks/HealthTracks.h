// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Capture health (SidebandLanes::health, auxscope's statistics section): a
// collapsible group whose header carries a legend, and a lane per CPU with its
// data ring's fill as a filled area (0-100 %, orange where it reached 95 %),
// the AUX area's fill as a line, and a red tick where the lost counts grew.
// Hovering says the time, both fills, MiB/s and what was lost so far (on a
// tick: how much between which times).
#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

class HealthHeaderTrack : public TimelineTrack {
public:
    HealthHeaderTrack(const LaneEntry& entry, int y)
        : TimelineTrack(HealthHeader, entry, y, timeline_metrics::kProcessHeight) {}
    void paint(TrackPaintContext& ctx, int top) const override;
    void addMenuItems(TrackMenuContext& m) const override;
};

class HealthTrack : public TimelineTrack {
public:
    // `data` has the CPU's health points: its peak ring fill is found once.
    HealthTrack(const LaneEntry& entry, int y, const TimelineData& data);
    void paint(TrackPaintContext& ctx, int top) const override;
    TimelineHit hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const override;
    void addMenuItems(TrackMenuContext& m) const override;

private:
    float peak_ = 0;  // the highest ring fill of the recording
};

}  // namespace auxscope
