// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The timeline of a TimelineData, painted with QPainter: a time axis (relative
// to the recording's start), one lane per CPU with the thread that ran there,
// then per thread a header and its flame chart (depth 0 on top, callees below,
// as Perfetto's slices), gaps hatched in red with their reason, and the time
// outside the decoded window shaded ("not decoded here").
//
// Level of detail: a frame paints at most about one rectangle per pixel column
// per row. Each thread's store gets, once, a per-depth summary at a few
// resolutions (the span covering most of each time bucket, whether a gap is in
// it, and which span covers each bucket's start): zoomed out, a frame reads
// the summary; zoomed in to less than a bucket per pixel, it walks the spans
// in view from the bucket where the view begins (lowerBound), merging
// sub-pixel spans per row. No frame walks every span of a large store. Depths
// with too few spans to summarize (a deep stack's rare frames) keep a list of
// their spans instead, walked in view, so a stack of any depth is drawn (the
// tracks scroll) without a summary per depth at full resolution. CPU lanes
// get the same: per bucket the process that ran most of it and how busy the
// CPU was; a pixel column of many slices shows the process that ran most of
// it, over the lane's height when threads ran half of it or more, over its
// lower third when the CPU was mostly idle (zoomed out from the summary,
// zoomed in from the slices in view: the same picture).
//
// With sideband lanes (TimelineData::lanes, any perf.data): CPU lanes coloured
// by process with idle drawn as a thin line and the kernel's losses marked on
// them (red LOST / LOST_SAMPLES, an orange THROTTLE band, purple AUX flags),
// then per process a header and per thread a lane of its run slices and sample
// ticks, a thread's flame chart (when decoded) under its lane.
//
// Interaction as in Perfetto: Ctrl+wheel or W/S zoom around the mouse, A/D or
// a drag pan, the wheel scrolls the tracks, a double-click zooms to a span, a
// click selects it (spanSelected), hovering shows what is there.
//
// A time range is selected with Shift+drag in the tracks or a drag on the time
// axis (timeSelectionChanged; the one range every statistics pane obeys),
// drawn as a blue band with its length on the axis. F zooms to the selection,
// or to the selected span when that was chosen last; Esc clears both; M marks
// (or unmarks) the selection or the selected span, marks drawn as amber flags
// on the axis and areas over the tracks; ? shows the keys. A search marks the
// functions it matches (setHighlightedFunctions): other spans are drawn faded,
// and threads whose names match get their label outlined.
//
// Capture health (SidebandLanes::health, auxscope's statistics section): a
// collapsible group with a lane per CPU, its data ring's fill as a filled area
// (0-100 %), the AUX area's fill as a line, and a red tick where the lost
// counts grew; hovering says the time, both fills, MiB/s and what was lost so
// far (on a tick: how much between which times). CPUs the file names as
// offline or not traced (SidebandLanes::cpuNotes) get a hatched lane saying so.
//
// Lanes people manage (TimelineLaneState): a click on a process's header (or
// C over it) collapses or expands it, the context menu pins a CPU, process or
// thread to the top (pinned lanes stay in place while the rest scrolls, as in
// Perfetto), a filter keeps the processes whose name, pid or any thread's
// name or tid matches, and processes sort by CPU time, pid or name. The state
// is the view's, kept across setData (zoom, reload); app/gui/LaneBar edits it
// and keeps it per file.
#include <QString>
#include <QVariantMap>
#include <QWidget>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "spans/TimelineData.h"

class QMenu;
class QScrollBar;
class QTimer;

namespace auxscope {

// Which lanes a TimelineView shows and in what order; a value (saved per file by LaneBar).
struct TimelineLaneState {
    enum class Sort { CpuTime, Pid, Name };
    struct Pin {
        enum Kind { Cpu, Process, Thread } kind = Thread;
        int32_t id = -1;  // CPU, pid or tid
        bool operator==(const Pin& o) const { return kind == o.kind && id == o.id; }
    };
    std::set<int32_t> collapsed;  // pids of collapsed processes
    std::vector<Pin> pinned;      // in the order pinned, shown in that order on top
    QString filter;               // name substring (any case) or a pid / tid
    Sort sort = Sort::CpuTime;
    bool healthCollapsed = false;  // the "Capture health" group

    bool isPinned(Pin::Kind kind, int32_t id) const;
    bool operator==(const TimelineLaneState& o) const {
        return collapsed == o.collapsed && pinned == o.pinned && filter == o.filter && sort == o.sort &&
               healthCollapsed == o.healthCollapsed;
    }
    bool operator!=(const TimelineLaneState& o) const { return !(*this == o); }
    // {"collapsed": [pids], "pinned": ["cpu:3", "pid:100", "tid:101"], "filter", "sort":
    // "cpu-time" | "pid" | "name", "healthCollapsed"}; fromVariant skips what it cannot read.
    QVariantMap toVariant() const;
    static TimelineLaneState fromVariant(const QVariantMap& map);
    static QString sortName(Sort sort);  // "CPU time", "pid", "name"
};

// What is at a point of the view.
struct TimelineHit {
    // CpuIdle: a CPU between the threads it ran. ThreadRun, Sample: a thread
    // lane's run slice or sample tick; Loss: a loss marker on a CPU lane.
    // Health: a capture-health point of a CPU; CpuNote: a CPU the file names as offline or not traced.
    enum Kind { None, CpuSlice, ThreadSpan, CpuIdle, ThreadRun, Sample, Loss, Health, CpuNote } kind = None;
    int cpu = -1;
    int32_t pid = -1, tid = -1;
    uint64_t start = 0, end = 0;  // perf clock, ns
    // ThreadSpan:
    Span span;
    size_t index = 0;   // in the thread's SpanStore
    QString function;   // name ("" for a gap)
    QString file;       // the image it lives in
    QString gapReason;  // for a gap: gapReasonName()
    QString gapDetail;  // for a gap: what the decoder said
    QString threadName;
    QString processName;
    // Sample: the event, its IP (resolved into `function` and `file`) and how
    // many samples of the thread fall into the pixel hovered.
    QString event;
    uint64_t ip = 0;
    size_t samplesHere = 0;
    // Loss: what describeLoss() says (kind, how much, why). CpuNote: the note ("offline").
    QString loss;
    // Health: the statistics point whose interval [start, end] holds the time
    // (start: the previous point), and what was lost in that interval (> 0: a red tick).
    SidebandLanes::Health health;
    uint64_t lostRecordsHere = 0, lostSamplesHere = 0, auxLostHere = 0;
    bool valid() const { return kind != None; }
};

class TimelineView : public QWidget {
    Q_OBJECT
public:
    explicit TimelineView(QWidget* parent = nullptr);
    ~TimelineView() override;

    // Shows `data`, keeping the current zoom (or, following, the newest part;
    // the first data shows whole).
    void setData(std::shared_ptr<const TimelineData> data);
    const std::shared_ptr<const TimelineData>& data() const { return data_; }
    // Data of more than `minSpans` spans (a few million) is summarized on a
    // worker thread, the view showing what it had until then; off: at once.
    void setAsyncSummaries(bool on, size_t minSpans = 4'000'000) {
        asyncSummaries_ = on;
        asyncMinSpans_ = minSpans;
    }
    bool preparing() const { return preparing_; }

    // Live capture: keep the newest `seconds` in view as data grows (0: all the data, until
    // the user zooms, which sets the width kept).
    void setFollowLatest(bool follow, double seconds = 0);
    bool followLatest() const { return follow_; }

    struct Range {
        uint64_t begin = 0, end = 0;
    };
    Range visibleRange() const { return {viewBegin_, viewEnd_}; }
    void setVisibleRange(uint64_t begin, uint64_t end);
    // Shows [begin, end) with `margin` of its width on either side.
    void zoomTo(uint64_t begin, uint64_t end, double margin = 0.05);

    // The selected time range (none: nullopt). setTimeSelection with begin >= end clears it.
    std::optional<Range> timeSelection() const;
    void setTimeSelection(uint64_t begin, uint64_t end);
    void clearTimeSelection() { setTimeSelection(0, 0); }
    // F: zooms to the selected range, or the selected span when that was chosen last.
    void focusSelection();
    // M: marks the selected range (or span) or, when that exact range is marked, unmarks it.
    // True when a mark was added.
    bool toggleMark();
    const std::vector<Range>& marks() const { return marks_; }
    // ?: the keys, as the overlay lists them.
    static QString keysHelp();
    bool keysHelpVisible() const { return helpVisible_; }
    void setKeysHelpVisible(bool on);
    // Selects span `index` of thread `tid` as a click does (spanSelected); false when there is none.
    bool selectSpan(int32_t tid, size_t index);
    // Scrolls the tracks so that a thread's row at `depth` (its lane: depth -1) is in view.
    void scrollToThread(int32_t tid, int depth = 0);
    // Search results: flags per function id (empty: no search) and threads whose label matched.
    void setHighlight(std::vector<bool> functions, std::set<int32_t> threads);
    bool highlighting() const { return !highlight_.empty(); }
    // Shown in the shaded parts that were not decoded ("zoom in to decode (80 MB of trace in view)").
    void setUndecodedHint(const QString& text);
    const QString& undecodedHint() const { return hint_; }
    void setDebounceMs(int ms);

    // What is under `pos` (widget coordinates), and its tooltip text.
    TimelineHit hitAt(QPoint pos) const;
    QString toolTipAt(QPoint pos) const;
    static QString describe(const TimelineHit& hit, uint64_t recordingBegin);
    const TimelineHit& selection() const { return selected_; }

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

    // Lane management (see the header comment). Every change emits laneStateChanged.
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
    // Threads with a lane (or a flame chart) shown, and in all.
    int shownThreadCount() const { return threadsShown_; }
    int threadCount() const { return threadsTotal_; }
    // The context menu of the lane at `pos` ("Pin to top" / "Unpin", collapse,
    // expand all...); empty where there is no lane. The caller owns it.
    QMenu* laneMenu(QPoint pos);
    // What a CPU note means, for its lane's hover.
    static QString cpuNoteText(const QString& note);
    int plotLeft() const { return kLabelWidth; }
    int plotWidth() const;
    static constexpr int kAxisHeight = 26, kLaneHeight = 20, kHeaderHeight = 22, kRowHeight = 18,
                         kLabelWidth = 170, kProcessHeight = 20, kHealthHeight = 32;

    // Colours: per function (stable: a hash of its name), per thread, and gaps.
    static QColor functionColor(const std::string& name);
    static QColor threadColor(int32_t tid);
    // CPU lanes and run slices are coloured by process (a thread of no known process: by thread).
    static QColor processColor(int32_t pid);
    static QColor sampleColor();
    // Loss markers: LOST / LOST_SAMPLES, THROTTLE, AUX flags.
    static QColor lossColor(int kind);
    static QColor gapColor();
    static QColor gapHatchColor();
    // Health lanes: the ring's fill area (where it reached 95 %: healthFullColor), the AUX fill line.
    static QColor healthRingColor();
    static QColor healthFullColor();
    static QColor healthAuxColor();

    // Last frame's work, for benchmarks and tests.
    struct FrameStats {
        uint64_t rects = 0;         // rectangles painted in flame charts and CPU lanes
        uint64_t spansWalked = 0;   // spans read from stores
        uint64_t summaryCells = 0;  // summary cells read
        int maxRectsPerRow = 0;     // the most rectangles in one flame-chart row
    };
    const FrameStats& lastFrame() const { return frame_; }

    struct Lod;     // a thread's summary (TimelineView.cpp)
    struct CpuLod;  // a CPU lane's summary (TimelineView.cpp)
    // The summaries built with the data (for benchmarks): time taken and heap bytes.
    struct SummaryStats {
        double threadMs = 0, cpuMs = 0;
        size_t threadBytes = 0, cpuBytes = 0;
        size_t spans = 0, cpuSlices = 0;
    };
    const SummaryStats& summaryStats() const { return summaryStats_; }

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
    static constexpr size_t kNoThread = SIZE_MAX;
    struct Track {
        enum Kind { Cpu, ThreadHeader, ThreadRow, ProcessHeader, HealthHeader, Health } kind;
        int cpu = -1;
        size_t thread = 0;  // index into data_->threads (kNoThread: a thread with no spans)
        int depth = 0;
        int y = 0, height = 0;  // content coordinates (before scrolling)
        long lane = -1;         // index into data_->lanes->threads (-1: none)
        int32_t pid = -1;       // ProcessHeader
        long process = -1;      // ProcessHeader: index into data_->lanes->processes (-1: none)
        bool pinned = false;    // in the pinned section on top
    };
    struct Summaries;  // per thread and per CPU lane (TimelineView.cpp)
    static Summaries buildLods(const TimelineData& data);
    void install(std::shared_ptr<const TimelineData> data, Summaries summaries);
    void layoutTracks();
    const Lod& lodOf(size_t thread) const;
    void zoomAround(double x, double factor);
    void panBy(double pixels);
    void rangeChanged();
    void updateScrollBar();
    uint64_t minWidth() const;
    int contentTop() const;
    const Track* trackAt(int y) const;
    std::optional<size_t> findSpan(size_t thread, int depth, uint64_t t, uint64_t tolerance) const;
    QString functionName(uint32_t id) const;
    QColor colorOf(uint32_t function) const;
    void paintAxis(QPainter& p);
    void paintCpuLane(QPainter& p, const Track& track, int y);
    void paintThreadRows(QPainter& p, size_t thread, int firstRow, int lastRow, int y0);
    void paintThreadLane(QPainter& p, const Track& track, int y);
    void paintProcessHeader(QPainter& p, const Track& track, int y);
    void paintLosses(QPainter& p, int cpu, int y, int height);
    void paintOverlays(QPainter& p);
    // Tracks [begin, end) with their top at `top` + Track::y, clipped to `clip`.
    void paintTracks(QPainter& p, std::vector<Track>::const_iterator begin,
                     std::vector<Track>::const_iterator end, int top, const QRect& clip);
    void paintCpuNote(QPainter& p, const Track& track, int y, const std::string& note);
    void paintHealthHeader(QPainter& p, const Track& track, int y);
    void paintHealthLane(QPainter& p, const Track& track, int y);
    TimelineHit healthHit(const Track& track, uint64_t t, uint64_t tolerance) const;
    // Where a track is drawn (pinned ones stay under the axis), and the height they keep there.
    int trackY(const Track& t) const;
    int stickyHeight() const;
    // The CPU note of `cpu` (nullptr: none).
    const std::string* cpuNote(int cpu) const;
    // Collapses or expands the process whose header (or thread) is at `y`; false where none.
    bool toggleProcessAt(int y);
    void laneStateEdited();
    const Track* trackOfThread(int32_t tid, int depth) const;
    TimelineHit cpuHit(const Track& track, uint64_t t, uint64_t tolerance) const;
    TimelineHit laneHit(const Track& track, uint64_t t, uint64_t tolerance) const;
    // The hit for span `index` of thread `th` (its function, image, or gap reason).
    TimelineHit spanHit(const TimelineData::Thread& th, size_t index) const;

    std::shared_ptr<const TimelineData> data_;
    std::vector<Track> tracks_;
    std::vector<size_t> threadFirstTrack_;            // per thread: its header's index in tracks_
    std::vector<std::unique_ptr<Lod>> lods_;          // per thread, built with the data
    std::map<int, std::unique_ptr<CpuLod>> cpuLods_;  // per CPU lane, built with the data
    SummaryStats summaryStats_;
    uint64_t dataGeneration_ = 0;
    size_t asyncMinSpans_ = 4'000'000;
    bool asyncSummaries_ = true, preparing_ = false;
    mutable std::vector<QColor> colors_;  // per function id, on first need
    int contentHeight_ = 0;
    uint64_t viewBegin_ = 0, viewEnd_ = 0;
    quint64 emittedBegin_ = 0, emittedEnd_ = 0;
    bool follow_ = false;
    double followSeconds_ = 0;
    QString hint_;
    QScrollBar* vbar_ = nullptr;
    QTimer* debounce_ = nullptr;
    TimelineHit selected_;
    FrameStats frame_;
    // The time range selection, marks, what was selected last (F), search highlights.
    uint64_t selBegin_ = 0, selEnd_ = 0;
    bool rangeChosenLast_ = false;
    std::vector<Range> marks_;
    bool helpVisible_ = false;
    std::vector<bool> highlight_;
    std::set<int32_t> highlightThreads_;
    // Dragging (rangeDrag_: selecting a range from pressTime_).
    bool pressed_ = false, dragged_ = false, rangeDrag_ = false;
    uint64_t pressTime_ = 0;
    QPoint pressPos_;
    uint64_t pressBegin_ = 0, pressEnd_ = 0;
    int pressScroll_ = 0;
    QPoint lastMouse_{-1, -1};
    // Lanes: what is shown, the pinned section's height, threads shown and in all.
    TimelineLaneState laneState_;
    int pinnedHeight_ = 0;
    int threadsShown_ = 0, threadsTotal_ = 0;
    std::map<int, float> healthPeak_;  // per CPU: the highest ring fill of the recording
};

}  // namespace auxscope
