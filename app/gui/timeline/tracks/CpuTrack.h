// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CPU's lane: which thread ran when, coloured by process, idle as a thin
// line, and the kernel's losses on it (red LOST / LOST_SAMPLES, an orange
// THROTTLE band, purple AUX flags). A pixel column of many slices shows the
// process that ran most of it, over the lane's height when threads ran half of
// it or more, over its lower third when the CPU was mostly idle (zoomed out
// from the lane's CpuLod, zoomed in from the slices in view: the same picture).
// A CPU the file names as offline or not traced gets a hatched lane saying so.
#include <string>

#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

class CpuTrack : public TimelineTrack {
public:
    CpuTrack(const LaneEntry& entry, int y) : TimelineTrack(Cpu, entry, y, timeline_metrics::kLaneHeight) {}

    void paint(TrackPaintContext& ctx, int top) const override;
    TimelineHit hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const override;
    void addMenuItems(TrackMenuContext& m) const override;

    // The note the file has on `cpu` ("offline", "not traced"; nullptr: none).
    static const std::string* noteOf(const TimelineData& data, int cpu);

private:
    void paintLane(TrackPaintContext& ctx, int y) const;
    void paintLosses(TrackPaintContext& ctx, int y) const;
    void paintNote(TrackPaintContext& ctx, int y, const std::string& note) const;
};

}  // namespace auxscope
