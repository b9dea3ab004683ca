// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A timeline's tracks: one small class per kind behind TimelineTrack (as
// Perfetto UI's Track and Qt Creator's TimelineModel): its height, how it
// paints with a paint context, what its hit test finds there, and its items in
// the lane menu. TrackLayout makes them from a LaneOrder; the view asks them
// to paint the part in view, to say what is under the mouse, and for the menu.
// A new kind (samples with stacks, SPE memory operations, trigger markers) is
// a class in its own file here and a LaneEntry kind that TrackLayout places.
//   CpuTrack          a CPU: which thread ran, idle as a line, losses (or the CPU's note)
//   ThreadTrack       a thread: its runs and samples (sideband lanes) or its title
//   FlameChartTrack   a thread's decoded spans, a row per depth, gaps hatched
//   ProcessTrack      a process's header (collapse, pin, what it ran)
//   HealthTracks      the capture-health group's header and a CPU's ring and AUX fill
#include <QRect>
#include <QString>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "gui/timeline/LaneOrder.h"
#include "gui/timeline/TimelineHit.h"
#include "gui/timeline/TimelineMetrics.h"
#include "gui/timeline/lod/TimelineSummaries.h"

class QMenu;
class QPainter;

namespace auxscope {

class FunctionColors;
class TimelineLabels;
class TimelineState;

// Last frame's work, for benchmarks and tests.
struct TimelineFrameStats {
    uint64_t rects = 0;         // rectangles painted in flame charts and CPU lanes
    uint64_t spansWalked = 0;   // spans read from stores
    uint64_t summaryCells = 0;  // summary cells read
    int maxRectsPerRow = 0;     // the most rectangles in one flame-chart row
    uint64_t labels = 0;        // names drawn in spans and CPU slices
};

// What a track paints with: the window in view over the plot's width, the data, its
// summaries and the state (lanes pinned and collapsed, selection, search highlight).
struct TrackPaintContext {
    QPainter& p;
    const TimelineData& data;
    const TimelineState& state;
    const TimelineSummaries& summaries;
    FunctionColors& colors;
    TimelineLabels& labels;  // span and slice names, laid out once
    uint64_t viewBegin = 0, viewEnd = 0;
    int plotWidth = 1;
    const QString& hint;  // shown where nothing is decoded
    TimelineFrameStats& frame;
    QRect clip;  // the section being painted (pinned on top, or the tracks that scroll)
    double pxDur() const { return double(viewEnd - viewBegin) / plotWidth; }
    int plotRight() const { return timeline_metrics::kLabelWidth + plotWidth; }
};

// What a track's hit test reads.
struct TrackHitContext {
    const TimelineData& data;
    const TimelineSummaries& summaries;
};

// What a track adds its items to in the lane menu (the view adds the common ones after).
struct TrackMenuContext {
    QMenu& menu;
    TimelineState& state;
    std::function<bool(int32_t)> processShown;  // a pid's header is in the layout
};

// Of the events in [begin, end) (sorted by `time`) within `reach` ns of `t`, the nearest
// (end: none); `visit` sees each of them, in time order.
template <typename It, typename Visit>
It nearestInReach(It begin, It end, uint64_t t, uint64_t reach, const Visit& visit) {
    auto it = std::lower_bound(begin, end, t > reach ? t - reach : 0,
                               [](const auto& e, uint64_t v) { return e.time < v; });
    It best = end;
    uint64_t bestDistance = UINT64_MAX;
    for (; it != end && it->time <= t + reach; ++it) {
        visit(*it);
        const uint64_t d = it->time > t ? it->time - t : t - it->time;
        if (d < bestDistance) bestDistance = d, best = it;
    }
    return best;
}

class TimelineTrack {
public:
    enum Kind { Cpu, ThreadHeader, FlameChart, ProcessHeader, HealthHeader, Health };
    static constexpr size_t kNoThread = LaneEntry::kNoThread;

    TimelineTrack(Kind kind, const LaneEntry& entry, int y, int height);
    virtual ~TimelineTrack() = default;
    Kind kind() const { return kind_; }

    // Paints the track with its top at `top` (widget coordinates).
    virtual void paint(TrackPaintContext& ctx, int top) const = 0;
    // What is at time `t` (within `tolerance` ns), `dy` pixels below the track's top.
    virtual TimelineHit hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const;
    // The lane menu's items for this track (its title, pin, collapse).
    virtual void addMenuItems(TrackMenuContext& m) const;

    int contentY = 0, height = 0;  // its top in content coordinates (before scrolling), its height
    bool pinned = false;           // in the pinned section on top
    int cpu = -1;
    size_t thread = kNoThread;  // index into data.threads (kNoThread: none)
    long lane = -1;             // index into data.lanes->threads (-1: none)
    long process = -1;          // ProcessHeader: index into data.lanes->processes (-1: none)
    int32_t pid = -1;           // the process (of a thread's tracks, or the header's)
    int32_t tid = -1;           // a thread's tracks: the thread

protected:
    // A thread's items: pin it, pin its process, collapse its process.
    void addThreadMenuItems(TrackMenuContext& m) const;
    // "Pin to top" / "Unpin" (its tooltip and data: `what`), and "Collapse process" / "Expand process".
    static void addPin(TrackMenuContext& m, TimelineLaneState::Pin::Kind kind, int32_t id,
                       const QString& what);
    static void addCollapseAction(TrackMenuContext& m, int32_t pid);
    // A pinned lane's mark in its label column.
    static void drawPin(QPainter& p, int x, int y);
    // A group's triangle: pointing down when open, right when collapsed.
    static void drawDisclosure(QPainter& p, int x, int y, int height, bool open);

private:
    Kind kind_;
};

}  // namespace auxscope
