// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/timeline/: the timeline of a TimelineData and the panes that follow
// it. It owns TimelineState (the one state every pane obeys), this view (a
// thin widget), the track layout (LaneOrder: which lanes in what order;
// TrackLayout: where), the tracks (tracks/: a small class per kind behind
// TimelineTrack), level of detail (lod/), input (TimelineInput), overlays
// (TimelineOverlays: axis, selection, marks, search outlines, keys), colours
// (TimelinePalette), hits and their descriptions, the overview strip, the
// lane bar and the search bar. It may include decode/ (spans/, sideband/) and
// Qt, nothing else of app/gui: analysis/, trace/ and capture/ build on it
// (tests/layout/check_layers.sh checks it).
//
// TimelineView paints a TimelineState's timeline with QPainter: a time axis
// (relative to the recording's start), the pinned tracks under it, then the
// tracks that scroll: a lane per CPU with the thread that ran there, the
// capture-health group, and per process a header and per thread its lane and
// flame chart (tracks/ says what each draws, lod/ how a frame stays within
// about one rectangle per pixel column per row, however many spans). Data of
// more than a few million spans is summarized on a worker thread, the view
// showing what it had until then.
//
// Interaction as in Perfetto (TimelineInput): Ctrl+wheel or W/S zoom around
// the mouse, A/D or a drag pan, the wheel scrolls the tracks, a double-click
// zooms to a span, a click selects it, hovering shows what is there;
// Shift+drag in the tracks or a drag on the axis selects a time range, F zooms
// to the selection, Esc clears it, M marks it, ? shows the keys, / asks for
// the search, C or a click on a header collapses a process, the context menu
// pins a lane. Everything it is told or does goes through its TimelineState;
// its public API (and its signals, the state's re-emitted) is what the pages
// and tests use.
#include <QPointer>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "gui/timeline/TimelineHit.h"
#include "gui/timeline/TimelineLabels.h"
#include "gui/timeline/TimelineLaneState.h"
#include "gui/timeline/TimelineMetrics.h"
#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TrackLayout.h"
#include "gui/timeline/lod/TimelineSummaries.h"
#include "gui/timeline/tracks/TimelineTrack.h"
#include "spans/TimelineData.h"

class QMenu;
class QScrollBar;

namespace auxscope {

class TimelineInput;
struct TriggerReport;

class TimelineView : public QWidget {
    Q_OBJECT
public:
    // A view with a state of its own, or one obeying `state` (a page's, shared with its panes).
    explicit TimelineView(QWidget* parent = nullptr);
    explicit TimelineView(TimelineState* state, QWidget* parent = nullptr);
    ~TimelineView() override;
    TimelineState* state() const { return state_; }

    // Shows `data`, keeping the current zoom (or, following, the newest part;
    // the first data shows whole).
    void setData(std::shared_ptr<const TimelineData> data);
    const std::shared_ptr<const TimelineData>& data() const { return state_->data(); }
    // Data of more than `minSpans` spans (a few million) is summarized on a
    // worker thread, the view showing what it had until then; off: at once.
    void setAsyncSummaries(bool on, size_t minSpans = 4'000'000) {
        asyncSummaries_ = on;
        asyncMinSpans_ = minSpans;
    }
    bool preparing() const { return preparing_; }

    // Live capture: keep the newest `seconds` in view as data grows (0: all the data, until
    // the user zooms, which sets the width kept).
    void setFollowLatest(bool follow, double seconds = 0) { state_->setFollowLatest(follow, seconds); }
    bool followLatest() const { return state_->followLatest(); }

    using Range = TimelineState::Range;
    Range visibleRange() const { return state_->window(); }
    void setVisibleRange(uint64_t begin, uint64_t end) { state_->setWindow(begin, end); }
    // Shows [begin, end) with `margin` of its width on either side.
    void zoomTo(uint64_t begin, uint64_t end, double margin = 0.05) { state_->zoomTo(begin, end, margin); }

    // The selected time range (none: nullopt). setTimeSelection with begin >= end clears it.
    std::optional<Range> timeSelection() const { return state_->timeSelection(); }
    void setTimeSelection(uint64_t begin, uint64_t end) { state_->setTimeSelection(begin, end); }
    void clearTimeSelection() { state_->clearTimeSelection(); }
    // F: zooms to the selected range, or the selected span when that was chosen last.
    void focusSelection() { state_->focusSelection(); }
    // M: marks the selected range (or span) or, when that exact range is marked, unmarks it.
    // True when a mark was added.
    bool toggleMark() { return state_->toggleMark(); }
    const std::vector<Range>& marks() const { return state_->marks(); }
    // Events marked over the tracks (snapshot triggers' firings): a red line at
    // `time` with a flag on the axis and, on the thread's lane (else its CPU's),
    // a band from `start` to `time` (a slow call's whole span).
    struct EventMarker {
        uint64_t start = 0, time = 0;
        int32_t tid = -1, cpu = -1;
        QString label;
    };
    void setEventMarkers(std::vector<EventMarker> markers);
    // A snapshot trigger's firings as markers: a slow call from its start to
    // its end, on its thread and CPU, labelled with the trigger's name.
    static std::vector<EventMarker> firingMarkers(const TriggerReport& report);
    const std::vector<EventMarker>& eventMarkers() const { return eventMarkers_; }
    // How many of them the last frame drew (those in the visible range).
    int eventMarkersDrawn() const { return eventMarkersDrawn_; }
    // ?: the keys, as the overlay lists them.
    static QString keysHelp();
    bool keysHelpVisible() const { return helpVisible_; }
    void setKeysHelpVisible(bool on);
    // Selects span `index` of thread `tid` as a click does (spanSelected); false when there is none.
    bool selectSpan(int32_t tid, size_t index) { return state_->selectSpan(tid, index); }
    // Scrolls the tracks so that a thread's row at `depth` (its lane: depth -1) is in view.
    void scrollToThread(int32_t tid, int depth = 0);
    // Search results: flags per function id (empty: no search) and threads whose label matched.
    void setHighlight(std::vector<bool> functions, std::set<int32_t> threads) {
        state_->setHighlight(std::move(functions), std::move(threads));
    }
    bool highlighting() const { return state_->highlighting(); }
    // Shown in the shaded parts that were not decoded ("zoom in to decode (80 MB of trace in view)").
    void setUndecodedHint(const QString& text);
    const QString& undecodedHint() const { return hint_; }
    void setDebounceMs(int ms) { state_->setSettleMs(ms); }

    // What is under `pos` (widget coordinates), and its tooltip text.
    TimelineHit hitAt(QPoint pos) const;
    QString toolTipAt(QPoint pos) const;
    static QString describe(const TimelineHit& hit, uint64_t recordingBegin);
    const TimelineHit& selection() const { return state_->selection(); }

    // Geometry, for callers and tests: the x of perf time `t`, the time at `x`,
    // and the top y of a thread's depth row (-1 when not shown), all in widget
    // coordinates, before scrolling out of view.
    double xOf(uint64_t t) const;
    uint64_t timeAt(double x) const;
    int rowY(int32_t tid, int depth) const;
    int cpuLaneY(int cpu) const;
    // With sideband lanes: the top y of a thread's lane (runs and samples) and of
    // a process's header, -1 when not shown.
    int threadLaneY(int32_t tid) const;
    int processHeaderY(int32_t pid) const;
    // The "Capture health" group's header and a CPU's health lane, -1 when not shown.
    int healthHeaderY() const;
    int healthLaneY(int cpu) const;

    // Lane management (TimelineState's lane state). Every change emits laneStateChanged.
    const TimelineLaneState& laneState() const { return state_->laneState(); }
    void setLaneState(const TimelineLaneState& state) { state_->setLaneState(state); }
    void setProcessCollapsed(int32_t pid, bool collapsed) { state_->setProcessCollapsed(pid, collapsed); }
    bool processCollapsed(int32_t pid) const { return state_->processCollapsed(pid); }
    // Every process of the data collapsed (or none).
    void setAllProcessesCollapsed(bool collapsed) { state_->setAllProcessesCollapsed(collapsed); }
    void setPinned(TimelineLaneState::Pin::Kind kind, int32_t id, bool pinned) {
        state_->setPinned(kind, id, pinned);
    }
    void setLaneFilter(const QString& text) { state_->setLaneFilter(text); }
    void setLaneSort(TimelineLaneState::Sort sort) { state_->setLaneSort(sort); }
    void setHealthCollapsed(bool collapsed) { state_->setHealthCollapsed(collapsed); }
    // Threads with a lane (or a flame chart) shown, and in all.
    int shownThreadCount() const { return state_->lanes().threadsShown; }
    int threadCount() const { return state_->lanes().threadsTotal; }
    // The context menu of the lane at `pos` ("Pin to top" / "Unpin", collapse,
    // expand all...); empty where there is no lane. The caller owns it.
    QMenu* laneMenu(QPoint pos);
    // What a CPU note means, for its lane's hover.
    static QString cpuNoteText(const QString& note);
    int plotLeft() const { return kLabelWidth; }
    int plotWidth() const;
    static constexpr int kAxisHeight = timeline_metrics::kAxisHeight,
                         kLaneHeight = timeline_metrics::kLaneHeight,
                         kHeaderHeight = timeline_metrics::kHeaderHeight,
                         kRowHeight = timeline_metrics::kRowHeight,
                         kLabelWidth = timeline_metrics::kLabelWidth,
                         kProcessHeight = timeline_metrics::kProcessHeight,
                         kHealthHeight = timeline_metrics::kHealthHeight;

    // Colours (TimelinePalette): per function (stable: a hash of its name), per thread, and gaps.
    static QColor functionColor(const std::string& name) { return palette::function(name); }
    static QColor threadColor(int32_t tid) { return palette::thread(tid); }
    // CPU lanes and run slices are coloured by process (a thread of no known process: by thread).
    static QColor processColor(int32_t pid) { return palette::process(pid); }
    static QColor sampleColor() { return palette::sample; }
    // Loss markers: LOST / LOST_SAMPLES, THROTTLE, AUX flags.
    static QColor lossColor(int kind) { return palette::loss(kind); }
    static QColor gapColor() { return palette::gap; }
    static QColor gapHatchColor() { return palette::gapHatch; }
    // Health lanes: the ring's fill area (where it reached 95 %: healthFullColor), the AUX fill line.
    static QColor healthRingColor() { return palette::healthRing; }
    static QColor healthFullColor() { return palette::healthFull; }
    static QColor healthAuxColor() { return palette::healthAux; }

    // Last frame's work, for benchmarks and tests.
    using FrameStats = TimelineFrameStats;
    const FrameStats& lastFrame() const { return frame_; }
    // The names drawn in spans and slices (for benchmarks and tests: its mode and log).
    TimelineLabels& labels() { return labels_; }
    // The summaries built with the data (for benchmarks): time taken and heap bytes.
    using SummaryStats = TimelineSummaryStats;
    const SummaryStats& summaryStats() const { return summaries_.stats; }

signals:
    // The visible range, ~150 ms after zooming or panning settles.
    void visibleRangeChanged(quint64 begin, quint64 end);
    void spanSelected(const auxscope::TimelineHit& hit);
    // The selected time range changed (begin == end: cleared); while dragging, timeSelectionDragged.
    void timeSelectionChanged(quint64 begin, quint64 end);
    void timeSelectionDragged(quint64 begin, quint64 end);
    void marksChanged();
    // `/` pressed on the view: the page opens its search.
    void searchRequested();
    // setData's data is shown (at once, or once its summaries are built).
    void dataShown();
    // The lanes shown changed (collapsed, pinned, filtered, sorted): laneState() says how.
    void laneStateChanged();
    // The plot's margins changed (its label column, and the scroll bar on the right):
    // a strip above lines its plot up with them.
    void plotMarginsChanged(int left, int right);

protected:
    void paintEvent(QPaintEvent*) override;
    void resizeEvent(QResizeEvent*) override;
    void wheelEvent(QWheelEvent*) override;
    void keyPressEvent(QKeyEvent*) override;
    void mousePressEvent(QMouseEvent*) override;
    void mouseMoveEvent(QMouseEvent*) override;
    void mouseReleaseEvent(QMouseEvent*) override;
    void mouseDoubleClickEvent(QMouseEvent*) override;
    void contextMenuEvent(QContextMenuEvent*) override;
    bool event(QEvent*) override;
    QSize sizeHint() const override { return {900, 500}; }

private:
    friend class TimelineInput;
    friend struct TimelineOverlays;
    void install(std::shared_ptr<const TimelineData> data, TimelineSummaries summaries);
    // The tracks of the state's lanes, placed again when the data or the lanes changed.
    const TrackLayout& layout() const;
    void updateScrollBar() const;
    uint64_t minWidth() const;
    int contentTop() const;
    // The track at widget y (nullptr: none), and how far below its top `y` is.
    const TimelineTrack* trackAt(int y, int* dy = nullptr) const;
    // Where a track is drawn (pinned ones stay under the axis), and the height they keep there.
    int trackY(const TimelineTrack& t) const;
    int stickyHeight() const;
    // Tracks [begin, end) with their top at `top` + y, clipped to `clip`.
    void paintTracks(QPainter& p, size_t begin, size_t end, int top, const QRect& clip);
    // Collapses or expands the process whose header (or thread) is at `y`; false where none.
    bool toggleProcessAt(int y);
    // Where a thread's row at `depth` (its lane: -1) is in content coordinates.
    struct Place {
        int y = 0, height = 0;
        bool pinned = false;
    };
    std::optional<Place> placeOfThread(int32_t tid, int depth) const;

    QPointer<TimelineState> state_;
    TimelineSummaries summaries_;
    mutable TrackLayout layout_;
    mutable uint64_t layoutGeneration_ = 0;  // of the state's lanes it was placed for
    uint64_t dataGeneration_ = 0;
    size_t asyncMinSpans_ = 4'000'000;
    bool asyncSummaries_ = true, preparing_ = false;
    FunctionColors colors_;
    TimelineLabels labels_;
    QString hint_;
    QScrollBar* vbar_ = nullptr;
    FrameStats frame_;
    bool helpVisible_ = false;
    std::vector<EventMarker> eventMarkers_;
    mutable int eventMarkersDrawn_ = 0;
    std::unique_ptr<TimelineInput> input_;
};

}  // namespace auxscope
