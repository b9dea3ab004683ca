// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One TimelineState per trace page (and one for the capture page's live
// timeline), as Qt Creator's TimelineZoomControl and Perfetto's TimelineImpl:
// the timeline shown (data() and its bounds), the visible window (a signal at
// once and a settled one), the selected time range, the selected span, marks,
// the search highlight, following the newest data, and the lanes shown
// (TimelineLaneState, and the LaneOrder they make). Every pane is given it and
// obeys it: the view paints what it says and writes what the mouse and keys
// do into it, the overview strip brackets its window and moves it, the lane bar
// edits its lane state, the search bar highlights and selects through it, the
// selection panes read its range and span. No pane reaches into another.
#include <QObject>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "gui/timeline/LaneOrder.h"
#include "gui/timeline/TimelineHit.h"
#include "gui/timeline/TimelineLaneState.h"
#include "spans/TimelineData.h"

class QTimer;

namespace auxscope {

class TimelineState : public QObject {
    Q_OBJECT
public:
    struct Range {
        uint64_t begin = 0, end = 0;
    };
    explicit TimelineState(QObject* parent = nullptr);

    // ---- The timeline shown (the view sets it once it can draw it) and the recording's bounds.
    const std::shared_ptr<const TimelineData>& data() const { return data_; }
    // Clears the selected span (a span of older data), then emits dataChanged.
    void setData(std::shared_ptr<const TimelineData> data);
    Range bounds() const;

    // ---- The visible window [begin, end) of the perf clock.
    Range window() const { return window_; }
    // Clamped to the bounds and to at least minimumWindow() ns; windowChanged at once,
    // windowSettled once it has rested settleMs() (a decode waits for that).
    void setWindow(uint64_t begin, uint64_t end);
    // The window a view puts new data in, as it is (already clamped): `quiet` (the first data
    // shown whole) settles nothing, so nothing is asked for until the window moves.
    void placeWindow(uint64_t begin, uint64_t end, bool quiet);
    // Shows [begin, end) with `margin` of its width on either side (and stops following).
    void zoomTo(uint64_t begin, uint64_t end, double margin = 0.05);
    // The narrowest window, in ns, as the view says (its width: 1 ns per 10 pixels, at least 50).
    void setMinimumWindow(std::function<uint64_t()> narrowest) { narrowest_ = std::move(narrowest); }
    uint64_t minimumWindow() const;
    void setSettleMs(int ms);

    // ---- Live capture: keep the newest `seconds` in view as data grows (0: all of it).
    bool followLatest() const { return follow_; }
    double followSeconds() const { return followSeconds_; }
    void setFollowLatest(bool follow, double seconds = 0);
    // Zooming while following keeps the newest time at the right edge, `seconds` wide.
    void setFollowSeconds(double seconds) { followSeconds_ = seconds; }
    void stopFollowing() { follow_ = false; }

    // ---- The selected time range (nullopt: none); begin >= end clears it.
    std::optional<Range> timeSelection() const;
    void setTimeSelection(uint64_t begin, uint64_t end);
    void clearTimeSelection() { setTimeSelection(0, 0); }
    // While a range is dragged (timeSelectionDragged), and when the drag ends (timeSelectionChanged).
    void dragTimeSelection(uint64_t begin, uint64_t end);
    void endTimeSelectionDrag();
    // Ctrl+Shift+drag: the range selected now is to be compared with the one
    // selected before it (the selection pane answers: rangeCompareRequested).
    void requestRangeCompare() { emit rangeCompareRequested(); }
    // Whether the range was chosen after the span (F and M act on the one chosen last).
    bool rangeChosenLast() const { return rangeChosenLast_; }

    // ---- The selected span (or other hit): a click, the search, a caller's double-click.
    const TimelineHit& selection() const { return selected_; }
    // An invalid hit clears the selection quietly; a valid one emits spanSelected.
    void select(const TimelineHit& hit);
    // Selects span `index` of thread `tid`; false when there is none.
    bool selectSpan(int32_t tid, size_t index);
    // F: zooms to the selected range, or the selected span when that was chosen last.
    void focusSelection();
    // M: marks the selected range (or span) or, when that exact range is marked, unmarks it.
    // True when a mark was added.
    bool toggleMark();
    const std::vector<Range>& marks() const { return marks_; }

    // ---- Search results: flags per function id (empty: no search) and threads whose label matched.
    void setHighlight(std::vector<bool> functions, std::set<int32_t> threads);
    bool highlighting() const { return !highlight_.empty(); }
    const std::vector<bool>& highlightedFunctions() const { return highlight_; }
    const std::set<int32_t>& highlightedThreads() const { return highlightThreads_; }
    // Asks the views to scroll a thread's row at `depth` (its lane: -1) into view.
    void revealThread(int32_t tid, int depth) { emit threadRevealRequested(tid, depth); }

    // ---- How thread lanes colour the ticks of samples that carry a value and a
    // key (Arm SPE: latency, data source); emits highlightChanged.
    enum class SampleShading { Plain, Value, Key };
    void setSampleShading(SampleShading shading);
    SampleShading sampleShading() const { return shading_; }

    // ---- The lanes shown: every change emits laneStateChanged.
    const TimelineLaneState& laneState() const { return laneState_; }
    void setLaneState(const TimelineLaneState& state);
    void setProcessCollapsed(int32_t pid, bool collapsed);
    bool processCollapsed(int32_t pid) const { return laneState_.collapsed.count(pid) > 0; }
    // Every process of the data collapsed (or none).
    void setAllProcessesCollapsed(bool collapsed);
    void setPinned(TimelineLaneState::Pin::Kind kind, int32_t id, bool pinned);
    void setLaneFilter(const QString& text);
    void setLaneSort(TimelineLaneState::Sort sort);
    void setHealthCollapsed(bool collapsed);
    // The lanes the data and the lane state make, in order (made on first need), and a count
    // that changes whenever they may have (new data, another lane state).
    const LaneOrder& lanes() const;
    uint64_t lanesGeneration() const { return lanesGeneration_; }

signals:
    void dataChanged();
    void windowChanged(quint64 begin, quint64 end);
    void windowSettled(quint64 begin, quint64 end);
    // The selected time range changed (begin == end: cleared); while dragging, timeSelectionDragged.
    void timeSelectionChanged(quint64 begin, quint64 end);
    void timeSelectionDragged(quint64 begin, quint64 end);
    void rangeCompareRequested();
    void spanSelected(const auxscope::TimelineHit& hit);
    void marksChanged();
    void highlightChanged();
    void laneStateChanged();
    void threadRevealRequested(int tid, int depth);

private:
    void laneStateEdited();

    std::shared_ptr<const TimelineData> data_;
    Range window_, settled_;
    QTimer* settle_ = nullptr;
    std::function<uint64_t()> narrowest_;
    bool follow_ = false;
    double followSeconds_ = 0;
    uint64_t selBegin_ = 0, selEnd_ = 0;
    bool rangeChosenLast_ = false;
    TimelineHit selected_;
    std::vector<Range> marks_;
    std::vector<bool> highlight_;
    std::set<int32_t> highlightThreads_;
    SampleShading shading_ = SampleShading::Value;
    TimelineLaneState laneState_;
    mutable std::optional<LaneOrder> lanes_;  // of data_ and laneState_, made on first need
    uint64_t lanesGeneration_ = 1;
};

}  // namespace auxscope
