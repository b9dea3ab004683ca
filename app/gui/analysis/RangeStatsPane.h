// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/analysis/: the answers for a timeline's selection. It owns the
// selection pane (RangeStatsPane, this: top functions, call tree, bottom-up,
// flame graph, threads, caller / callee), its item model (CallTreeModel), the
// cost columns of each source (CostColumns: spans, samples, off-CPU time), the
// flame graph (FlameGraphWidget), the span pane (SpanDetailsPane) and the code
// view (CodeView). The panes obey a TimelineState (setState). It may include
// timeline/ (and decode/), not trace/, capture/ or the main window.
//
// What a selected time range holds, computed by computeRangeStats
// (spans/RangeStats.h, the code `auxscope report` prints through) over the
// timeline's decoded spans on a worker thread, with a progress bar and Cancel:
//   - Top functions: every function with its total and self time, calls,
//     total and self instructions (sortable by any column);
//   - Call tree (top-down) and Bottom-up (the callers of each function), the
//     rows being RangeStats' nodes (CallTreeModel);
//   - Flame graph of the aggregated stacks (FlameGraphWidget), by time or
//     instructions;
//   - Threads: per thread its time in frames, instructions, calls and spans,
//     which CPUs ran it and for how long (from the sideband's CPU slices), and
//     the gaps in the range per reason.
// One aggregation serves every thread: it keeps each thread's own tree
// (RangeQuery::perThreadTrees), so choosing a thread (or "All threads") in the
// pane switches every tab at once without aggregating again.
// "Copy" puts the shown tab as text on the clipboard; the export buttons ask the
// page to export the range (exportRequested). Given a timeline's TimelineState
// (setState), the pane aggregates the range selected there, over its data.
//
// A sampled capture answers in the same views (setSources): its sampled
// profile (samples/SampleProfile.h) aggregated by computeSampleRangeStats, the
// code `auxscope report` prints samples through. The source is chosen where
// the file has more than one: "Decoded trace (Intel PT)", "Samples: EVENT"
// (each sampled event with samples), "Off-CPU time" (where threads were
// switched out, by the stack they blocked in); the default is the trace when
// there is one, else the first sampled event that is not a switch event (as
// auxscope report --source auto chooses). The columns follow the source
// (CostColumns.h: samples and their period, cpu-clock's as CPU time; no calls
// or instructions for samples), the flame graph's widths are by period or
// samples, and the Threads tab gives each thread's samples, its time on CPU,
// off CPU and their sum (wall-clock) in the range. For samples a
// "Caller / callee" tab shows the callers and callees of the function
// clicked in any view.
#include <QWidget>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "gui/analysis/CompareLoader.h"
#include "spans/RangeStats.h"
#include "spans/TimelineData.h"

class QTreeWidgetItem;

class QComboBox;
class QLabel;
class QProgressBar;
class QScrollArea;
class QPushButton;
class QTabWidget;
class QTreeView;
class QTreeWidget;

namespace auxscope {

class CallTreeModel;
class FlameGraphWidget;
class SampleProfile;
class TimelineState;

class RangeStatsPane : public QWidget {
    Q_OBJECT
public:
    explicit RangeStatsPane(QWidget* parent = nullptr);
    ~RangeStatsPane() override;

    // The timeline state whose selected range (over its data) the pane aggregates.
    void setState(TimelineState* state);
    // The spans to aggregate (the timeline's data); a range being computed is recomputed.
    void setData(std::shared_ptr<const TimelineData> data);
    // Aggregates [begin, end) (clipped to the decoded window) on a worker thread;
    // begin >= end clears the pane. A computation still running is cancelled.
    void setRange(uint64_t begin, uint64_t end);
    // Stops the computation running (the Cancel button).
    void cancel();
    // Aggregation threads (0: every core, the default).
    void setThreads(unsigned n) { threads_ = n; }
    // What the range can be answered from: a decoded trace of kind `traceKind`
    // ("Intel PT"; empty: none) and a sampled profile (null: none). Chooses the
    // default source; a range shown is aggregated again.
    void setSources(const QString& traceKind, std::shared_ptr<const SampleProfile> profile);
    // The source shown: RangeSource::Spans (the decoded trace), Samples (of
    // `sourceEvent()`, an index into the profile's events) or OffCpu.
    RangeSource::Kind sourceKind() const { return sourceKind_; }
    int sourceEvent() const { return sourceEvent_; }
    // Chooses a source (a range shown is aggregated again); false when the pane has no such source.
    bool setSource(RangeSource::Kind kind, int event = -1);
    const SampleProfile* profile() const { return profile_.get(); }
    // The function names of what is shown (the profile's for samples, else the data's).
    std::shared_ptr<const FunctionTable> functions() const;

    bool busy() const { return busy_; }
    // The last result over every thread (null: none yet / cleared).
    const RangeStats* stats() const { return stats_.get(); }
    // What the pane shows: `stats()`, or one thread's part of it.
    const RangeStats* shown() const { return shown_ ? &*shown_ : nullptr; }
    // Chooses the thread the tabs show (-1: all threads).
    void showThread(int32_t tid);
    int32_t shownThread() const { return shownTid_; }
    // The range aggregated (after clipping).
    uint64_t begin() const { return begin_; }
    uint64_t end() const { return end_; }
    // The shown tab's content as text (tab-separated), what Copy puts on the clipboard.
    QString currentText() const;
    QString topFunctionsText() const;
    QString threadsText() const;
    QString callerCalleeText() const;

    QTabWidget* tabs() const { return tabs_; }
    QTreeWidget* topFunctions() const { return top_; }
    QTreeView* callTreeView() const { return callTreeView_; }
    QTreeView* bottomUpView() const { return bottomUpView_; }
    CallTreeModel* callTree() const { return callTree_; }
    CallTreeModel* bottomUp() const { return bottomUp_; }
    FlameGraphWidget* flameGraph() const { return flame_; }
    QTreeWidget* threadsTable() const { return threadsTable_; }
    QComboBox* threadChoice() const { return threadCombo_; }
    QComboBox* sourceChoice() const { return sourceCombo_; }
    QComboBox* flameMetric() const { return metric_; }
    // Samples: the callers and callees of the function clicked last (showCallerCallee).
    QTreeWidget* callerCallee() const { return callerCallee_; }
    void showCallerCallee(uint32_t function);
    // A note about the source shown (off-CPU time without stacks: how to record them), or hidden.
    QLabel* sourceNote() const { return note_; }
    QProgressBar* progress() const { return progress_; }
    QPushButton* cancelButton() const { return cancel_; }
    QLabel* summary() const { return summary_; }

    // Two ranges of one file: the range shown (every thread, or the thread the
    // tabs show) becomes side A, and the next
    // different range aggregated (the next Shift+drag selection) side B; then
    // compareRequested gives both. Called again while waiting: stops waiting.
    // False when no range is shown.
    bool compareWithNextRange();
    bool waitingForRangeB() const { return compareA_.has_value(); }
    QPushButton* compareButton() const { return compare_; }

signals:
    // Two ranges to compare (compareWithNextRange): A first, B the range selected after it.
    void compareRequested(const auxscope::CompareSideData& a, const auxscope::CompareSideData& b);
    // A result is shown (ok) or the computation failed or was cancelled.
    void computed(bool ok);
    // Export the range: "csv" or "perfetto".
    void exportRequested(const QString& format, quint64 begin, quint64 end);
    // A function was double-clicked (its code).
    void functionActivated(uint32_t function);

private:
    void show(std::shared_ptr<const RangeStats> stats, double seconds);
    CompareSideData currentSide() const;
    void refreshViews();
    void refreshSampleViews();
    void setHeaders();
    void fillCpus(int column);
    void scrollFlameToBottom();
    QString functionName(uint32_t id) const;
    QString threadName(int32_t tid) const;
    bool sampled() const { return sourceKind_ != RangeSource::Spans; }
    RangeSource shownSource() const;

    std::shared_ptr<const TimelineData> data_;
    std::shared_ptr<const SampleProfile> profile_;
    QString traceKind_;
    RangeSource::Kind sourceKind_ = RangeSource::Spans;
    int sourceEvent_ = -1;
    uint32_t callerCalleeFunction_ = UINT32_MAX;
    bool flameAtBottom_ = false;  // the flame graph's bottom was scrolled into view since its tree changed
    std::shared_ptr<const RangeStats> stats_;
    std::optional<CompareSideData> compareA_;
    uint64_t compareBegin_ = 0, compareEnd_ = 0;
    QPushButton* compare_ = nullptr;
    std::optional<RangeStats> shown_;
    std::map<int32_t, std::map<int, uint64_t>> cpuTimes_;  // per thread, per CPU: time it ran in the range
    std::shared_ptr<std::atomic<bool>> cancel_flag_;
    uint64_t generation_ = 0;
    uint64_t begin_ = 0, end_ = 0, askedBegin_ = 0, askedEnd_ = 0;
    unsigned threads_ = 0;
    int32_t shownTid_ = -1;
    bool busy_ = false;
    double seconds_ = 0;

    QLabel* summary_ = nullptr;
    QComboBox* threadCombo_ = nullptr;
    QComboBox* sourceCombo_ = nullptr;
    QLabel* note_ = nullptr;
    QTreeWidget* callerCallee_ = nullptr;
    QComboBox* metric_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* copy_ = nullptr;
    QPushButton* exportCsv_ = nullptr;
    QPushButton* exportPerfetto_ = nullptr;
    QTabWidget* tabs_ = nullptr;
    QTreeWidget* top_ = nullptr;
    QTreeView* callTreeView_ = nullptr;
    QTreeView* bottomUpView_ = nullptr;
    CallTreeModel* callTree_ = nullptr;
    CallTreeModel* bottomUp_ = nullptr;
    FlameGraphWidget* flame_ = nullptr;
    QScrollArea* flameScroll_ = nullptr;
    QTreeWidget* threadsTable_ = nullptr;
};

}  // namespace auxscope
