// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A thread's flame chart: a row per call depth (depth 0 on top, callees below,
// as Perfetto's slices), each span a box coloured by its function and named
// where it is wide enough, gaps hatched in red, the time outside the decoded
// window shaded (with the hint the page gives: "zoom in to decode"). A frame
// paints at most about one box per pixel column per row: zoomed out it reads
// the thread's SpanLod, zoomed in to less than a bucket per pixel it walks the
// spans in view from the bucket where the view begins, merging sub-pixel
// spans per row; depths too sparse to summarize walk their own span lists.
// A search fades every span whose function is not a hit; the selected span is
// outlined. Only the rows in the painted section are drawn, in one walk.
#include <optional>

#include "gui/timeline/tracks/TimelineTrack.h"

namespace auxscope {

class FlameChartTrack : public TimelineTrack {
public:
    FlameChartTrack(const LaneEntry& entry, int y, int rows)
        : TimelineTrack(FlameChart, entry, y, rows * timeline_metrics::kRowHeight), rows_(rows) {}
    int rows() const { return rows_; }

    void paint(TrackPaintContext& ctx, int top) const override;
    TimelineHit hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const override;
    void addMenuItems(TrackMenuContext& m) const override { addThreadMenuItems(m); }

private:
    void paintRows(TrackPaintContext& ctx, int firstRow, int lastRow, int y0) const;
    std::optional<size_t> findSpan(const TrackHitContext& ctx, int depth, uint64_t t,
                                   uint64_t tolerance) const;

    int rows_ = 1;
};

}  // namespace auxscope
