// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/RangeStatsPane.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "gui/analysis/CallTreeModel.h"
#include "gui/analysis/CostColumns.h"
#include "gui/analysis/FlameGraphWidget.h"
#include "gui/timeline/TimelineState.h"
#include "samples/SampleProfile.h"

namespace auxscope {
namespace {

// A tree's rows as tab-separated lines, depth first: column 0's text indented
// two spaces a level, then the numbers under Qt::UserRole of columns 1..last
// (empty where a row has none).
QString treeRowsText(const QTreeWidget* tree, int last) {
    QString out;
    std::function<void(const QTreeWidgetItem*, int)> walk = [&](const QTreeWidgetItem* item, int depth) {
        out += QString(depth * 2, ' ') + item->text(0);
        for (int c = 1; c <= last; ++c) {
            const QVariant v = item->data(c, Qt::UserRole);
            out += "\t" + (v.isValid() ? QString::number(v.toULongLong()) : QString());
        }
        out += "\n";
        for (int k = 0; k < item->childCount(); ++k)
            walk(item->child(k), depth + 1);
    };
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        walk(tree->topLevelItem(i), 0);
    return out;
}

// A row sorted by the number under Qt::UserRole of the sort column (names: by text).
class NumericItem : public QTreeWidgetItem {
public:
    using QTreeWidgetItem::QTreeWidgetItem;
    bool operator<(const QTreeWidgetItem& other) const override {
        const int c = treeWidget() ? treeWidget()->sortColumn() : 0;
        const QVariant a = data(c, Qt::UserRole), b = other.data(c, Qt::UserRole);
        if (a.isValid() && b.isValid()) return a.toULongLong() < b.toULongLong();
        return text(c).localeAwareCompare(other.text(c)) < 0;
    }
};

void setNumber(QTreeWidgetItem* item, int column, uint64_t value, const QString& text) {
    item->setText(column, text);
    item->setData(column, Qt::UserRole, QVariant::fromValue<qulonglong>(value));
    item->setTextAlignment(column, Qt::AlignRight | Qt::AlignVCenter);
}

// Per thread, per CPU: how long the sideband says it ran in [a, b) (tid 0: the
// CPU idle, -1: a thread the sideband did not name).
using CpuTimes = std::map<int32_t, std::map<int, uint64_t>>;
CpuTimes cpuTimes(const TimelineData& data, uint64_t a, uint64_t b) {
    CpuTimes out;
    for (const auto& [cpu, slices] : data.cpus) {
        auto it = std::lower_bound(slices.begin(), slices.end(), a,
                                   [](const TimelineData::CpuSlice& s, uint64_t t) { return s.end <= t; });
        for (; it != slices.end() && it->start < b; ++it) {
            const uint64_t from = std::max(it->start, a), to = std::min(it->end, b);
            if (to > from) out[it->tid][cpu] += to - from;
        }
    }
    return out;
}

// The source combo's item data: the decoded trace, off-CPU time, or a sampled event's index.
constexpr int kTraceSource = -2;
constexpr int kOffCpuSource = -1;

const char* kNoOffCpuStacks =
    "No stacks at switch-outs: the off-CPU time is shown under “[off-CPU: no stack]”. For the stacks "
    "threads block in, record the switches with call stacks: perf record -e sched:sched_switch -g "
    "(or auxscope record -g -e sched:sched_switch).";

}  // namespace

RangeStatsPane::RangeStatsPane(QWidget* parent) : QWidget(parent) {
    summary_ = new QLabel("Select a time range: Shift+drag on the timeline, or drag on its time axis.");
    summary_->setObjectName("rangeSummary");
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    threadCombo_ = new QComboBox;
    threadCombo_->setObjectName("rangeThread");
    threadCombo_->addItem("All threads", -1);
    threadCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    // What answers the range, where the file has more than one source (setSources).
    sourceCombo_ = new QComboBox;
    sourceCombo_->setObjectName("rangeSource");
    sourceCombo_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    sourceCombo_->setToolTip("What answers the range: the decoded trace, a sampled event, or off-CPU time");
    sourceCombo_->setVisible(false);
    note_ = new QLabel;
    note_->setObjectName("rangeNote");
    note_->setWordWrap(true);
    note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    note_->setStyleSheet("color: #8a5a00;");
    note_->setVisible(false);
    metric_ = new QComboBox;
    metric_->setObjectName("flameMetric");
    metric_->addItems({"by time", "by instructions"});
    progress_ = new QProgressBar;
    progress_->setObjectName("rangeProgress");
    progress_->setMaximumWidth(160);
    progress_->setVisible(false);
    cancel_ = new QPushButton("Cancel");
    cancel_->setObjectName("rangeCancel");
    cancel_->setVisible(false);
    copy_ = new QPushButton("Copy");
    copy_->setObjectName("rangeCopy");
    copy_->setToolTip("Copy the shown table as text (tab-separated)");
    exportCsv_ = new QPushButton("Export range CSV…");
    exportCsv_->setObjectName("rangeExportCsv");
    exportPerfetto_ = new QPushButton("Export range to Perfetto…");
    exportPerfetto_->setObjectName("rangeExportPerfetto");
    compare_ = new QPushButton("Compare with another range");
    compare_->setObjectName("rangeCompare");
    compare_->setToolTip("This range is A; the next range you select (Shift+drag) is B: both compared");
    for (auto* b : {copy_, exportCsv_, exportPerfetto_, compare_})
        b->setEnabled(false);

    top_ = new QTreeWidget;
    top_->setObjectName("rangeTopFunctions");
    top_->setRootIsDecorated(false);
    top_->setUniformRowHeights(true);
    top_->setHeaderLabels(
        {"Function", "Total time", "Self time", "Calls", "Total insns", "Self insns", "Image"});
    top_->setSortingEnabled(true);
    top_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
    top_->setColumnWidth(0, 320);
    top_->setColumnWidth(1, 130);
    top_->setColumnWidth(2, 130);
    callTree_ = new CallTreeModel(this);
    bottomUp_ = new CallTreeModel(this);
    auto makeView = [](CallTreeModel* model, const char* name) {
        auto* v = new QTreeView;
        v->setObjectName(name);
        v->setModel(model);
        v->setUniformRowHeights(true);
        v->header()->setSectionResizeMode(0, QHeaderView::Interactive);
        v->setColumnWidth(0, 360);
        v->setColumnWidth(1, 130);
        v->setColumnWidth(2, 110);
        return v;
    };
    callTreeView_ = makeView(callTree_, "rangeCallTree");
    bottomUpView_ = makeView(bottomUp_, "rangeBottomUp");
    flame_ = new FlameGraphWidget;
    flame_->setObjectName("rangeFlameGraph");
    flameScroll_ = new QScrollArea;
    auto* flameScroll = flameScroll_;
    flameScroll->setWidget(flame_);
    flameScroll->setWidgetResizable(true);
    auto* flamePage = new QWidget;
    auto* flameLayout = new QVBoxLayout(flamePage);
    flameLayout->setContentsMargins(0, 0, 0, 0);
    auto* flameBar = new QHBoxLayout;
    flameBar->addWidget(new QLabel("Widths"));
    flameBar->addWidget(metric_);
    flameBar->addWidget(new QLabel("· click a box to zoom to it, click it again or Esc to zoom out"), 1);
    flameLayout->addLayout(flameBar);
    flameLayout->addWidget(flameScroll, 1);
    threadsTable_ = new QTreeWidget;
    threadsTable_->setObjectName("rangeThreads");
    threadsTable_->setHeaderLabels(
        {"Thread / gap", "Time in frames", "On CPU", "Instructions", "Calls", "Spans"});
    threadsTable_->setColumnWidth(0, 300);
    tabs_ = new QTabWidget;
    tabs_->setObjectName("rangeTabs");
    tabs_->setDocumentMode(true);
    tabs_->addTab(top_, "Top functions");
    tabs_->addTab(callTreeView_, "Call tree");
    tabs_->addTab(bottomUpView_, "Bottom-up");
    tabs_->addTab(flamePage, "Flame graph");
    tabs_->addTab(threadsTable_, "Threads && gaps");
    // Samples: who called the function clicked last, and what it called (hidden for decoded spans).
    callerCallee_ = new QTreeWidget;
    callerCallee_->setObjectName("rangeCallerCallee");
    callerCallee_->setColumnWidth(0, 360);
    callerCallee_->setColumnWidth(1, 150);
    callerCallee_->setHeaderLabels({"Function", "Total", "Samples"});
    new QTreeWidgetItem(callerCallee_, {"Click a function in any view to see its callers and callees."});
    tabs_->addTab(callerCallee_, "Caller / callee");
    tabs_->setTabVisible(tabs_->indexOf(callerCallee_), false);

    auto* bar = new QHBoxLayout;
    bar->addWidget(summary_, 1);
    bar->addWidget(progress_);
    bar->addWidget(cancel_);
    bar->addWidget(sourceCombo_);
    bar->addWidget(threadCombo_);
    bar->addWidget(copy_);
    bar->addWidget(compare_);
    bar->addWidget(exportCsv_);
    bar->addWidget(exportPerfetto_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(note_);
    layout->addWidget(tabs_, 1);

    connect(cancel_, &QPushButton::clicked, this, &RangeStatsPane::cancel);
    connect(tabs_, &QTabWidget::currentChanged, this, [this] {
        if (!flameAtBottom_ && tabs_->currentWidget() == flameScroll_->parentWidget()) scrollFlameToBottom();
    });
    connect(copy_, &QPushButton::clicked, this,
            [this] { QApplication::clipboard()->setText(currentText()); });
    connect(compare_, &QPushButton::clicked, this, [this] { compareWithNextRange(); });
    connect(exportCsv_, &QPushButton::clicked, this, [this] { emit exportRequested("csv", begin_, end_); });
    connect(exportPerfetto_, &QPushButton::clicked, this,
            [this] { emit exportRequested("perfetto", begin_, end_); });
    connect(threadCombo_, &QComboBox::activated, this,
            [this](int i) { showThread(threadCombo_->itemData(i).toInt()); });
    connect(sourceCombo_, &QComboBox::activated, this, [this](int i) {
        const int v = sourceCombo_->itemData(i).toInt();
        setSource(v == kTraceSource    ? RangeSource::Spans
                  : v == kOffCpuSource ? RangeSource::OffCpu
                                       : RangeSource::Samples,
                  v);
    });
    connect(metric_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (sampled())
            flame_->setMetric(i == 1 ? FlameGraphWidget::Metric::Samples : FlameGraphWidget::Metric::Period);
        else
            flame_->setMetric(i == 1 ? FlameGraphWidget::Metric::Instructions
                                     : FlameGraphWidget::Metric::Time);
    });
    connect(top_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* item) {
        emit functionActivated(item->data(0, Qt::UserRole + 1).toUInt());
    });
    for (auto* view : {callTreeView_, bottomUpView_})
        connect(view, &QTreeView::doubleClicked, this, [this, view](const QModelIndex& index) {
            auto* model = static_cast<CallTreeModel*>(view->model());
            emit functionActivated(model->tree().nodes[model->nodeOf(index)].function);
        });
    // A function clicked in any view: its callers and callees (samples).
    connect(top_, &QTreeWidget::itemClicked, this,
            [this](QTreeWidgetItem* item) { showCallerCallee(item->data(0, Qt::UserRole + 1).toUInt()); });
    for (auto* view : {callTreeView_, bottomUpView_})
        connect(view, &QTreeView::clicked, this, [this, view](const QModelIndex& index) {
            auto* model = static_cast<CallTreeModel*>(view->model());
            const uint32_t node = model->nodeOf(index);
            if (node != 0) showCallerCallee(model->tree().nodes[node].function);
        });
    connect(flame_, &FlameGraphWidget::nodeClicked, this, [this](uint32_t node) {
        if (node != 0 && node < flame_->tree().nodes.size())
            showCallerCallee(flame_->tree().nodes[node].function);
    });
}

RangeStatsPane::~RangeStatsPane() {
    if (cancel_flag_) *cancel_flag_ = true;
}

void RangeStatsPane::setState(TimelineState* state) {
    connect(state, &TimelineState::dataChanged, this, [this, state] { setData(state->data()); });
    connect(state, &TimelineState::timeSelectionChanged, this, [this, state](quint64 begin, quint64 end) {
        setData(state->data());
        setRange(begin, end);
    });
}

void RangeStatsPane::setData(std::shared_ptr<const TimelineData> data) {
    data_ = std::move(data);
    // A range wider than the old decoded window may now be covered further
    // (samples are not clipped to a decoded window).
    if (!sampled() && askedEnd_ > askedBegin_ && data_ &&
        (std::max(askedBegin_, data_->decodedBegin) != begin_ ||
         std::min(askedEnd_, data_->decodedEnd) != end_))
        setRange(askedBegin_, askedEnd_);
}

void RangeStatsPane::cancel() {
    if (cancel_flag_) *cancel_flag_ = true;
}

std::shared_ptr<const FunctionTable> RangeStatsPane::functions() const {
    if (sampled() && profile_) return profile_->sharedFunctions();
    return data_ ? data_->functions : nullptr;
}

QString RangeStatsPane::functionName(uint32_t id) const {
    const auto table = functions();
    if (table && id < table->size()) return QString::fromStdString((*table)[id].name);
    return QString("[function %1]").arg(id);
}

QString RangeStatsPane::threadName(int32_t tid) const {
    if (!data_) return {};
    if (auto it = data_->threadNames.find(tid); it != data_->threadNames.end())
        return QString::fromStdString(it->second);
    for (const auto& th : data_->threads)
        if (th.tid == tid) return QString::fromStdString(th.name);
    if (profile_) return QString::fromStdString(profile_->sideband().model().threadName(tid));
    return {};
}

RangeSource RangeStatsPane::shownSource() const {
    if (sourceKind_ == RangeSource::OffCpu) return {RangeSource::OffCpu, "off-CPU time", true, "ns"};
    if (sourceKind_ == RangeSource::Samples && profile_ && sourceEvent_ >= 0 &&
        size_t(sourceEvent_) < profile_->events().size()) {
        const SampledEvent& e = profile_->events()[size_t(sourceEvent_)];
        return {RangeSource::Samples, e.name, e.periodIsTime, e.periodUnit};
    }
    return {};
}

void RangeStatsPane::setSources(const QString& traceKind, std::shared_ptr<const SampleProfile> profile) {
    traceKind_ = traceKind;
    profile_ = std::move(profile);
    sourceCombo_->clear();
    if (!traceKind_.isEmpty()) {
        sourceCombo_->addItem("Decoded trace (" + traceKind_ + ")", kTraceSource);
        sourceCombo_->setItemData(
            sourceCombo_->count() - 1,
            "The call-stack spans decoded from the " + traceKind_ + " trace: time, calls and instructions",
            Qt::ToolTipRole);
    }
    // The default, as auxscope report --source auto: the trace, else the first
    // sampled event that is not a switch event, else the first with samples.
    RangeSource::Kind kind = RangeSource::Spans;
    int event = -1;
    if (profile_) {
        for (const SampledEvent& e : profile_->events()) {
            if (e.samples == 0) continue;
            sourceCombo_->addItem("Samples: " + QString::fromStdString(e.name), e.index);
            sourceCombo_->setItemData(sourceCombo_->count() - 1,
                                      QString("%1 samples%2, by the stack each was taken in")
                                          .arg(formatCount(e.samples))
                                          .arg(e.withCallchain ? QString(" with call stacks")
                                                               : QString(" (no call stacks: the sampled "
                                                                         "function alone)")),
                                      Qt::ToolTipRole);
            if (traceKind_.isEmpty() && event < 0 && !e.switchEvent)
                kind = RangeSource::Samples, event = e.index;
        }
        if (traceKind_.isEmpty() && event < 0)
            for (const SampledEvent& e : profile_->events())
                if (e.samples > 0) {
                    kind = RangeSource::Samples, event = e.index;
                    break;
                }
        if (!profile_->offCpu().empty()) {
            sourceCombo_->addItem("Off-CPU time", kOffCpuSource);
            sourceCombo_->setItemData(sourceCombo_->count() - 1,
                                      "Where threads were switched out (blocked, waiting, preempted), by the "
                                      "stack they were switched out in",
                                      Qt::ToolTipRole);
            if (traceKind_.isEmpty() && event < 0) kind = RangeSource::OffCpu;
        }
    }
    sourceCombo_->setVisible(sourceCombo_->count() > 1);
    setSource(kind, event);
}

bool RangeStatsPane::setSource(RangeSource::Kind kind, int event) {
    const int data = kind == RangeSource::Spans    ? kTraceSource
                     : kind == RangeSource::OffCpu ? kOffCpuSource
                                                   : event;
    const int at = sourceCombo_->findData(data);
    if (at < 0 && !(kind == RangeSource::Spans && sourceCombo_->count() == 0)) return false;
    if (at >= 0) sourceCombo_->setCurrentIndex(at);
    const bool changed = kind != sourceKind_ || event != sourceEvent_;
    sourceKind_ = kind;
    sourceEvent_ = kind == RangeSource::Samples ? event : -1;
    setHeaders();
    const bool noStacks = kind == RangeSource::OffCpu && profile_ && !profile_->hasOffCpuStacks();
    note_->setText(noStacks ? QString(kNoOffCpuStacks) : QString());
    note_->setVisible(noStacks);
    tabs_->setTabVisible(tabs_->indexOf(callerCallee_), sampled());
    tabs_->setTabText(tabs_->indexOf(threadsTable_), sampled() ? "Threads" : "Threads && gaps");
    if (!changed) return true;
    // Nothing of the other source stays shown under this one's headers.
    stats_.reset();
    shown_.reset();
    refreshViews();
    if (askedEnd_ > askedBegin_) setRange(askedBegin_, askedEnd_);
    return true;
}

// The headers and the flame graph's widths of the source shown.
void RangeStatsPane::setHeaders() {
    const RangeSource source = shownSource();
    QStringList top{"Function"};
    for (CostColumn c : costColumns(source))
        top << costLabel(c, source);
    top << "Image";
    top_->setColumnCount(int(top.size()));
    top_->setHeaderLabels(top);
    if (sampled())
        threadsTable_->setHeaderLabels({"Thread",
                                        source.kind == RangeSource::OffCpu ? "Switch-outs" : "Samples",
                                        periodName(source).replace(0, 1, periodName(source)[0].toUpper()),
                                        "On CPU", "Off CPU", "Wall-clock (on + off)"});
    else
        threadsTable_->setHeaderLabels(
            {"Thread / gap", "Time in frames", "On CPU", "Instructions", "Calls", "Spans"});
    callTree_->setSource(source);
    bottomUp_->setSource(source);
    flame_->setSource(source);
    const QSignalBlocker block(metric_);
    const int metric = metric_->currentIndex();
    metric_->clear();
    if (sampled()) {
        metric_->addItems({"by " + periodName(source), "by " + samplesName(source)});
        flame_->setMetric(metric == 1 ? FlameGraphWidget::Metric::Samples : FlameGraphWidget::Metric::Period);
    } else {
        metric_->addItems({"by time", "by instructions"});
        flame_->setMetric(metric == 1 ? FlameGraphWidget::Metric::Instructions
                                      : FlameGraphWidget::Metric::Time);
    }
    metric_->setCurrentIndex(std::max(metric, 0));
}

void RangeStatsPane::setRange(uint64_t begin, uint64_t end) {
    cancel();
    ++generation_;
    askedBegin_ = begin, askedEnd_ = end;
    if (end <= begin || (!sampled() && !data_) || (sampled() && !profile_)) {
        busy_ = false;
        progress_->setVisible(false);
        cancel_->setVisible(false);
        stats_.reset();
        shown_.reset();
        begin_ = end_ = 0;
        summary_->setText("Select a time range: Shift+drag on the timeline, or drag on its time axis.");
        refreshViews();
        return;
    }
    // Only what is decoded has spans (samples are all there).
    uint64_t a = begin, b = end;
    if (!sampled() && data_->decodedEnd > data_->decodedBegin)
        a = std::max(a, data_->decodedBegin), b = std::min(b, data_->decodedEnd);
    begin_ = a, end_ = std::max(a, b);
    busy_ = true;
    // Samples are aggregated in one pass without reports: busy until done.
    progress_->setRange(0, sampled() ? 0 : 1000);
    progress_->setValue(0);
    progress_->setVisible(true);
    cancel_->setVisible(true);
    cancel_->setEnabled(true);
    summary_->setText(QString("Aggregating %1 of %2…")
                          .arg(formatNs(double(end_ - begin_)))
                          .arg(sourceKind_ == RangeSource::Samples  ? QString("samples")
                               : sourceKind_ == RangeSource::OffCpu ? QString("off-CPU time")
                                                                    : QString("spans")));
    cancel_flag_ = std::make_shared<std::atomic<bool>>(false);
    QPointer<RangeStatsPane> self(this);
    const uint64_t generation = generation_;
    std::thread([self, data = data_, a = begin_, b = end_, cancel = cancel_flag_, generation,
                 threads = threads_, profile = sampled() ? profile_ : nullptr,
                 event = sourceKind_ == RangeSource::OffCpu ? SampleQuery::kOffCpu : sourceEvent_] {
        const auto started = std::chrono::steady_clock::now();
        // A sampled profile's samples or off-CPU time: the same statistics, from its stacks.
        auto sampledStats = [&]() -> Expected<RangeStats> {
            SampleQuery q;
            q.begin = a, q.end = b;
            q.event = event;
            q.perThreadTrees = true;
            q.cancel = cancel.get();
            return computeSampleRangeStats(*profile, q);
        };
        ThreadStores stores;
        if (data && !profile)
            for (const auto& t : data->threads)
                stores.emplace_back(t.tid, &t.spans);
        std::sort(stores.begin(), stores.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        stores.erase(std::unique(stores.begin(), stores.end(),
                                 [](const auto& x, const auto& y) { return x.first == y.first; }),
                     stores.end());
        RangeQuery q;
        q.begin = a, q.end = b;
        q.threads = threads;
        q.perThreadTrees = true;
        q.cancel = cancel.get();
        auto last = std::make_shared<std::atomic<int64_t>>(0);
        q.progress = [self, generation, last, started](uint64_t done, uint64_t total) {
            const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - started)
                                    .count();
            if (now - last->load() < 40 && done < total) return;
            *last = now;
            const int value = total ? int(1000 * done / total) : 0;
            QMetaObject::invokeMethod(
                qApp,
                [self, generation, value] {
                    if (self && self->generation_ == generation) self->progress_->setValue(value);
                },
                Qt::QueuedConnection);
        };
        auto result = profile ? sampledStats() : computeRangeStats(stores, q);
        std::shared_ptr<const RangeStats> stats;
        std::string error;
        CpuTimes times;
        if (result) {
            stats = std::make_shared<const RangeStats>(std::move(*result));
            if (data) times = cpuTimes(*data, a, b);
        } else {
            error = result.error().message;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, stats, error, generation, seconds, times = std::move(times)]() mutable {
                if (!self || self->generation_ != generation) return;
                self->busy_ = false;
                self->progress_->setVisible(false);
                self->cancel_->setVisible(false);
                if (!stats) {
                    self->summary_->setText(QString("Statistics of %1: %2")
                                                .arg(formatNs(double(self->end_ - self->begin_)))
                                                .arg(error == "cancelled" ? QString("cancelled")
                                                                          : QString::fromStdString(error)));
                    self->stats_.reset();
                    self->shown_.reset();
                    self->refreshViews();
                    emit self->computed(false);
                    return;
                }
                self->cpuTimes_ = std::move(times);
                self->show(stats, seconds);
                emit self->computed(true);
            },
            Qt::QueuedConnection);
    }).detach();
}

void RangeStatsPane::show(std::shared_ptr<const RangeStats> stats, double seconds) {
    stats_ = std::move(stats);
    seconds_ = seconds;
    // The thread choice: every thread with spans in the range.
    const int32_t keep = shownTid_;
    threadCombo_->clear();
    threadCombo_->addItem("All threads", -1);
    for (const auto& [tid, t] : stats_->threads) {
        if (sampled()) {
            // Samples: every thread sampled (off-CPU: switched out) in the range.
            if (t.samples) threadCombo_->addItem(QString("%1 (%2)").arg(threadName(tid)).arg(tid), tid);
            continue;
        }
        if (!t.spans) continue;
        QString name;
        if (data_)
            for (const auto& th : data_->threads)
                if (th.tid == tid) name = QString::fromStdString(th.name);
        threadCombo_->addItem(QString("%1 (%2)").arg(name).arg(tid), tid);
    }
    const int at = threadCombo_->findData(keep);
    shownTid_ = at >= 0 ? keep : -1;
    threadCombo_->setCurrentIndex(std::max(at, 0));
    refreshViews();
    if (compareA_ && (begin_ != compareBegin_ || end_ != compareEnd_)) {
        const CompareSideData a = std::move(*compareA_);
        compareA_.reset();
        compare_->setText("Compare with another range");
        emit compareRequested(a, currentSide());
    }
}

CompareSideData RangeStatsPane::currentSide() const {
    // What the pane shows: every thread, or the one chosen.
    CompareSideData side;
    side.stats = shownTid_ >= 0 && shown_ ? std::make_shared<const RangeStats>(*shown_) : stats_;
    side.functions = functions();
    side.label = QString("range %1-%2 ns (%3)%4")
                     .arg(begin_)
                     .arg(end_)
                     .arg(formatNs(double(end_ - begin_)))
                     .arg(shownTid_ >= 0 ? QString(", thread %1").arg(shownTid_) : QString());
    return side;
}

bool RangeStatsPane::compareWithNextRange() {
    if (compareA_) {
        compareA_.reset();
        compare_->setText("Compare with another range");
        compare_->setEnabled(stats_ != nullptr);
        return true;
    }
    if (!stats_ || busy_) return false;
    compareA_ = currentSide();
    compareBegin_ = begin_, compareEnd_ = end_;
    compare_->setText("Now select range B (Shift+drag)… (click: stop)");
    return true;
}

void RangeStatsPane::showThread(int32_t tid) {
    shownTid_ = tid;
    const int at = threadCombo_->findData(tid);
    if (at >= 0) threadCombo_->setCurrentIndex(at);
    refreshViews();
}

void RangeStatsPane::refreshViews() {
    const auto functions = this->functions();
    if (!stats_) {
        shown_.reset();
        top_->clear();
        threadsTable_->clear();
        showCallerCallee(UINT32_MAX);
        callTree_->setTree({}, functions);
        bottomUp_->setTree({}, functions);
        flame_->setTree({}, functions);
        for (auto* b : {copy_, exportCsv_, exportPerfetto_})
            b->setEnabled(false);
        compare_->setEnabled(compareA_.has_value());
        return;
    }
    shown_ = shownTid_ >= 0 ? stats_->ofThread(shownTid_) : *stats_;
    const RangeStats& s = *shown_;
    for (auto* b : {copy_, exportCsv_, exportPerfetto_, compare_})
        b->setEnabled(true);
    if (sampled()) {
        refreshSampleViews();
        return;
    }
    uint64_t calls = 0;
    for (const FunctionStats& f : s.functions)
        calls += f.cost.calls;
    uint64_t gapTime = 0;
    for (const auto& [reason, g] : s.gaps)
        gapTime += g.time;
    const uint64_t origin = data_ ? data_->begin : 0;
    QString text = QString("+%1 … +%2 (%3)%4: %5 spans, %6 instructions, %7 calls, %8 functions")
                       .arg(formatNs(double(begin_ - origin)))
                       .arg(formatNs(double(end_ - origin)))
                       .arg(formatNs(double(end_ - begin_)))
                       .arg(shownTid_ >= 0 ? QString(", thread %1").arg(shownTid_) : QString())
                       .arg(formatCount(s.spans))
                       .arg(formatCount(s.instructions()))
                       .arg(formatCount(calls))
                       .arg(s.functions.size());
    if (gapTime) text += QString(", %1 in gaps").arg(formatNs(double(gapTime)));
    text += QString(" · aggregated in %1 ms").arg(seconds_ * 1e3, 0, 'f', 0);
    if (askedBegin_ < begin_ || askedEnd_ > end_) text += " · clipped to the decoded window";
    summary_->setText(text);

    // Top functions.
    top_->setSortingEnabled(false);
    top_->clear();
    QList<QTreeWidgetItem*> rows;
    const double all = double(std::max<uint64_t>(s.tree.nodes[0].cost.totalTime, 1));
    for (const FunctionStats& f : s.functions) {
        auto* item = new NumericItem;
        const RangeCost& c = f.cost;
        item->setText(0, functionName(f.function));
        item->setData(0, Qt::UserRole + 1, f.function);
        item->setToolTip(0, item->text(0));
        setNumber(item, 1, c.totalTime,
                  QString("%1  %2%")
                      .arg(formatNs(double(c.totalTime)))
                      .arg(100.0 * double(c.totalTime) / all, 0, 'f', 1));
        setNumber(item, 2, c.selfTime,
                  QString("%1  %2%")
                      .arg(formatNs(double(c.selfTime)))
                      .arg(100.0 * double(c.selfTime) / all, 0, 'f', 1));
        setNumber(item, 3, c.calls, formatCount(c.calls));
        setNumber(item, 4, c.totalInsns, formatCount(c.totalInsns));
        setNumber(item, 5, c.selfInsns, formatCount(c.selfInsns));
        if (data_ && data_->functions && f.function < data_->functions->size())
            item->setText(6, QString::fromStdString((*data_->functions)[f.function].file));
        rows << item;
    }
    top_->addTopLevelItems(rows);
    top_->setSortingEnabled(true);
    top_->sortByColumn(2, Qt::DescendingOrder);

    // Trees and flame graph: RangeStats' own.
    callTree_->setTree(s.tree, functions);
    bottomUp_->setTree(s.bottomUp(), functions);
    flame_->setTree(s.tree, functions);
    // The outermost frames are at the bottom: show them.
    scrollFlameToBottom();
    if (callTree_->rowCount() == 1) callTreeView_->expand(callTree_->index(0, 0));

    // Threads and gaps.
    threadsTable_->clear();
    const CpuTimes& times = cpuTimes_;
    fillCpus(2);
    for (const auto& [tid, t] : s.threads) {
        if (!t.spans) continue;
        QString name;
        if (data_)
            for (const auto& th : data_->threads)
                if (th.tid == tid) name = QString::fromStdString(th.name);
        auto* item = new NumericItem(threadsTable_);
        item->setText(0, QString("%1 (tid %2)").arg(name).arg(tid));
        setNumber(item, 1, t.frameTime, formatNs(double(t.frameTime)));
        uint64_t onCpu = 0;
        QStringList cpus;
        if (auto it = times.find(tid); tid > 0 && it != times.end())
            for (const auto& [cpu, ns] : it->second) {
                onCpu += ns;
                cpus << QString("cpu %1: %2").arg(cpu).arg(formatNs(double(ns)));
            }
        setNumber(item, 2, onCpu, tid > 0 && times.count(tid) ? formatNs(double(onCpu)) : QString("—"));
        item->setToolTip(2, cpus.join('\n'));
        setNumber(item, 3, t.instructions, formatCount(t.instructions));
        setNumber(item, 4, t.calls, formatCount(t.calls));
        setNumber(item, 5, t.spans, formatCount(t.spans));
        for (const auto& cpu : cpus)
            new QTreeWidgetItem(item, {cpu});
        for (const auto& [reason, g] : t.gaps) {
            auto* gap = new NumericItem(item);
            gap->setText(0, QString("gap: %1 (%2)").arg(gapReasonName(reason)).arg(g.count));
            setNumber(gap, 1, g.time, formatNs(double(g.time)));
            if (reason != GapReason::Untraced) gap->setForeground(0, QColor("#b00020"));
        }
    }
    if (!s.gaps.empty()) {
        auto* gaps = new QTreeWidgetItem(threadsTable_, {"Gaps in the range, all threads shown"});
        for (const auto& [reason, g] : s.gaps) {
            auto* gap = new NumericItem(gaps);
            gap->setText(0, QString("%1: %2 gaps").arg(gapReasonName(reason)).arg(g.count));
            setNumber(gap, 1, g.time, formatNs(double(g.time)));
        }
    }
    threadsTable_->expandAll();
}

// The flame graph's outermost frames (its bottom) in view: now when its tab is
// shown, else when it is (a scroll area out of view has no height to scroll yet).
void RangeStatsPane::scrollFlameToBottom() {
    flameAtBottom_ = false;
    QTimer::singleShot(0, this, [this] {
        if (!flameScroll_->isVisible()) return;
        if (auto* bar = flameScroll_->verticalScrollBar()) bar->setValue(bar->maximum());
        flameAtBottom_ = true;
    });
}

// Who ran on each CPU in the range, and how long, in the Threads tab's `column`
// (all threads shown only: the sideband's switches, whatever the source).
void RangeStatsPane::fillCpus(int column) {
    std::map<int, std::vector<std::pair<uint64_t, int32_t>>> perCpu;
    for (const auto& [tid, cpus] : cpuTimes_)
        for (const auto& [cpu, ns] : cpus)
            perCpu[cpu].push_back({ns, tid});
    if (!perCpu.empty() && shownTid_ < 0) {
        auto* cpusItem = new QTreeWidgetItem(threadsTable_, {"CPUs: who ran in the range (sideband)"});
        const uint64_t length = end_ - begin_;
        for (auto& [cpu, list] : perCpu) {
            std::sort(list.rbegin(), list.rend());
            uint64_t busy = 0;
            for (const auto& [ns, tid] : list)
                if (tid > 0) busy += ns;
            auto* item = new NumericItem(cpusItem);
            item->setText(0,
                          QString("CPU %1: %2% busy")
                              .arg(cpu)
                              .arg(100.0 * double(busy) / double(std::max<uint64_t>(length, 1)), 0, 'f', 1));
            setNumber(item, column, busy, formatNs(double(busy)));
            for (const auto& [ns, tid] : list) {
                auto* t = new NumericItem(item);
                t->setText(0, tid == 0  ? QString("idle")
                              : tid < 0 ? QString("unknown thread")
                                        : QString("%1 (tid %2)").arg(threadName(tid)).arg(tid));
                setNumber(t, column, ns, formatNs(double(ns)));
            }
        }
    }
}

// The views of a sampled source: samples and their period per function and
// stack (as auxscope report prints them), and per thread its samples, time on
// CPU, off CPU and their sum (wall-clock) in the range.
void RangeStatsPane::refreshSampleViews() {
    const RangeStats& s = *shown_;
    const RangeSource& source = s.source;
    const auto functions = this->functions();
    const RangeCost& all = s.tree.nodes[0].cost;
    const uint64_t origin = data_ ? data_->begin : 0;
    const bool offCpu = source.kind == RangeSource::OffCpu;
    size_t threads = 0;
    for (const auto& [tid, t] : s.threads)
        threads += t.samples > 0;
    QString text =
        QString("+%1 … +%2 (%3)%4: %5: %6 %7, %8 %9, %10 functions, %11 threads")
            .arg(formatNs(double(begin_ - origin)))
            .arg(formatNs(double(end_ - origin)))
            .arg(formatNs(double(end_ - begin_)))
            .arg(shownTid_ >= 0 ? QString(", thread %1").arg(shownTid_) : QString())
            .arg(offCpu ? QString("off-CPU time") : "samples of " + QString::fromStdString(source.event))
            .arg(formatCount(all.totalSamples))
            .arg(samplesName(source))
            .arg(periodText(all.totalPeriod, source))
            .arg(periodName(source))
            .arg(s.functions.size())
            .arg(threads);
    text += QString(" · aggregated in %1 ms").arg(seconds_ * 1e3, 0, 'f', 0);
    summary_->setText(text);

    // Top functions: the period and the samples, self and total; % of the period, as auxscope report.
    const std::vector<CostColumn> columns = costColumns(source);
    top_->setSortingEnabled(false);
    top_->clear();
    QList<QTreeWidgetItem*> rows;
    for (const FunctionStats& f : s.functions) {
        auto* item = new NumericItem;
        item->setText(0, functionName(f.function));
        item->setData(0, Qt::UserRole + 1, f.function);
        item->setToolTip(0, item->text(0));
        for (size_t c = 0; c < columns.size(); ++c) {
            const bool period = columns[c] == CostColumn::TotalPeriod || columns[c] == CostColumn::SelfPeriod;
            setNumber(item, int(c) + 1, costValue(columns[c], f.cost),
                      costText(columns[c], f.cost, source, period ? int64_t(all.totalPeriod) : -1));
        }
        if (functions && f.function < functions->size())
            item->setText(int(columns.size()) + 1, QString::fromStdString((*functions)[f.function].file));
        rows << item;
    }
    top_->addTopLevelItems(rows);
    top_->setSortingEnabled(true);
    top_->sortByColumn(2, Qt::DescendingOrder);  // self period: auxscope report's default order

    callTree_->setTree(s.tree, functions);
    bottomUp_->setTree(s.bottomUp(), functions);
    flame_->setTree(s.tree, functions);
    scrollFlameToBottom();
    if (callTree_->rowCount() == 1) callTreeView_->expand(callTree_->index(0, 0));

    // Threads: samples, period, on CPU, off CPU, wall-clock.
    threadsTable_->clear();
    fillCpus(3);
    // The busiest first (samples, then time on CPU); each thread's CPUs one click away.
    std::vector<std::pair<int32_t, const ThreadRangeStats*>> threadRows;
    for (const auto& [tid, t] : s.threads)
        if (t.samples || t.onCpuTime || t.offCpuTime) threadRows.push_back({tid, &t});
    std::stable_sort(threadRows.begin(), threadRows.end(), [](const auto& a, const auto& b) {
        return a.second->samples != b.second->samples ? a.second->samples > b.second->samples
                                                      : a.second->onCpuTime > b.second->onCpuTime;
    });
    for (const auto& [tid, threadStats] : threadRows) {
        const ThreadRangeStats& t = *threadStats;
        auto* item = new NumericItem(threadsTable_);
        item->setText(0, QString("%1 (tid %2)").arg(threadName(tid)).arg(tid));
        setNumber(item, 1, t.samples, formatCount(t.samples));
        setNumber(item, 2, t.period, periodText(t.period, source));
        setNumber(item, 3, t.onCpuTime, formatNs(double(t.onCpuTime)));
        setNumber(item, 4, t.offCpuTime, formatNs(double(t.offCpuTime)));
        setNumber(item, 5, t.onCpuTime + t.offCpuTime, formatNs(double(t.onCpuTime + t.offCpuTime)));
        item->setToolTip(5, "On CPU + off CPU: the thread's wall-clock time in the range (while it existed)");
        if (auto it = cpuTimes_.find(tid); tid > 0 && it != cpuTimes_.end())
            for (const auto& [cpu, ns] : it->second)
                new QTreeWidgetItem(item, {QString("cpu %1: %2").arg(cpu).arg(formatNs(double(ns)))});
    }
    showCallerCallee(callerCalleeFunction_);
}

// Samples: the callers of `function` (the bottom-up tree below it: its cost
// when reached from each) and its callees (the children of its outermost
// frames, summed by function), with their period and samples.
void RangeStatsPane::showCallerCallee(uint32_t function) {
    callerCalleeFunction_ = function;
    callerCallee_->clear();
    const RangeSource source = shown_ ? shown_->source : shownSource();
    callerCallee_->setHeaderLabels(
        {"Function", "Total " + periodName(source), "Total " + samplesName(source)});
    if (!shown_ || !sampled() || function == UINT32_MAX) {
        new QTreeWidgetItem(callerCallee_, {"Click a function in any view to see its callers and callees."});
        return;
    }
    const RangeStats& s = *shown_;
    const FunctionStats f = s.function(function);
    const uint64_t whole = f.cost.totalPeriod;
    auto row = [&](QTreeWidgetItem* parent, uint32_t fn, const RangeCost& c) {
        auto* item = new NumericItem(parent);
        item->setText(0, functionName(fn));
        item->setData(0, Qt::UserRole + 1, fn);
        setNumber(item, 1, c.totalPeriod, costText(CostColumn::TotalPeriod, c, source, int64_t(whole)));
        setNumber(item, 2, c.totalSamples, formatCount(c.totalSamples));
        return item;
    };
    auto* title = row(nullptr, function, f.cost);
    callerCallee_->addTopLevelItem(title);
    title->setText(0, QString("%1 (self %2, %3 %4)")
                          .arg(functionName(function))
                          .arg(periodText(f.cost.selfPeriod, source))
                          .arg(formatCount(f.cost.selfSamples))
                          .arg(samplesName(source)));
    auto byPeriod = [](std::vector<std::pair<uint32_t, RangeCost>>& v) {
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
            return a.second.totalPeriod != b.second.totalPeriod ? a.second.totalPeriod > b.second.totalPeriod
                                                                : a.first < b.first;
        });
    };
    // Callers: the bottom-up tree's children of the function.
    std::vector<std::pair<uint32_t, RangeCost>> callers;
    const CallTree up = s.bottomUp();
    for (uint32_t n : up.children(0))
        if (up.nodes[n].function == function)
            for (uint32_t c : up.children(n))
                callers.push_back({up.nodes[c].function, up.nodes[c].cost});
    byPeriod(callers);
    auto* callersItem = new QTreeWidgetItem(
        title,
        {callers.empty() ? QString("Callers: none (an outermost frame)")
                         : QString("Callers (%1): its cost when called from each").arg(callers.size())});
    for (const auto& [fn, c] : callers)
        row(callersItem, fn, c);
    // Callees: children of its outermost frames (a recursive call is a callee, its own cost counted once).
    std::map<uint32_t, RangeCost> calleeCost;
    for (uint32_t n = 1; n < s.tree.nodes.size(); ++n) {
        if (s.tree.nodes[n].function != function) continue;
        bool outermost = true;
        for (uint32_t k = s.tree.nodes[n].parent; k != 0 && k != CallTree::kNone; k = s.tree.nodes[k].parent)
            if (s.tree.nodes[k].function == function) outermost = false;
        if (!outermost) continue;
        for (uint32_t c : s.tree.children(n))
            calleeCost[s.tree.nodes[c].function] += s.tree.nodes[c].cost;
    }
    std::vector<std::pair<uint32_t, RangeCost>> callees(calleeCost.begin(), calleeCost.end());
    byPeriod(callees);
    auto* calleesItem = new QTreeWidgetItem(
        title, {callees.empty() ? QString("Callees: none (all its cost is its own)")
                                : QString("Callees (%1): their cost under it").arg(callees.size())});
    for (const auto& [fn, c] : callees)
        row(calleesItem, fn, c);
    callerCallee_->expandAll();
}

QString RangeStatsPane::callerCalleeText() const {
    return "function\ttotal_period\ttotal_samples\n" + treeRowsText(callerCallee_, 2);
}

QString RangeStatsPane::topFunctionsText() const {
    const RangeSource source = shown_ ? shown_->source : shownSource();
    const std::vector<CostColumn> columns = costColumns(source);
    const int n = int(columns.size());
    QString out = "function";
    for (CostColumn c : columns)
        out += "\t" + costKey(c, source);
    out += "\timage\n";
    for (int i = 0; i < top_->topLevelItemCount(); ++i) {
        const QTreeWidgetItem* item = top_->topLevelItem(i);
        out += item->text(0);
        for (int c = 1; c <= n; ++c)
            out += "\t" + QString::number(item->data(c, Qt::UserRole).toULongLong());
        out += "\t" + item->text(n + 1) + "\n";
    }
    return out;
}

QString RangeStatsPane::threadsText() const {
    QString out = sampled() ? "thread\tsamples\tperiod\ton_cpu_ns\toff_cpu_ns\twall_ns\n"
                            : "thread\tframe_ns\ton_cpu_ns\tinstructions\tcalls\tspans\n";
    return out + treeRowsText(threadsTable_, 5);
}

QString RangeStatsPane::currentText() const {
    if (!shown_) return {};
    QString head = summary_->text() + "\n";
    switch (tabs_->currentIndex()) {
        case 1:
            return head + callTree_->toText();
        case 2:
            return head + bottomUp_->toText();
        case 3:
            return head + callTree_->toText();
        case 4:
            return head + threadsText();
        case 5:
            return head + callerCalleeText();
        default:
            return head + topFunctionsText();
    }
}

}  // namespace auxscope
