// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceTimelineTab.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

#include "gui/analysis/CodeView.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/analysis/SpanDetailsPane.h"
#include "gui/analysis/SpePane.h"
#include "gui/common/WindowMemory.h"
#include "gui/timeline/HitDescription.h"
#include "gui/timeline/LaneBar.h"
#include "gui/timeline/OverviewStrip.h"
#include "gui/timeline/SearchBar.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceText.h"

namespace auxscope {

TraceTimelineTab::TraceTimelineTab(const QString& path, const QString& opening, QWidget* parent)
    : QWidget(parent) {
    status_ = new QLabel(opening);
    status_->setObjectName("timelineStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // The one state every pane of the timeline obeys (window, selection, marks, search, lanes).
    state_ = new TimelineState(this);
    view_ = new TimelineView(state_);
    view_->setObjectName("timeline");
    auto* selection = new QLabel;
    selection->setObjectName("timelineSelection");
    selection->setTextInteractionFlags(Qt::TextSelectableByMouse);
    selectionLine_ = selection;
    search_ = new SearchBar(state_);
    search_->hide();
    rangeStats_ = new RangeStatsPane;
    rangeStats_->setObjectName("rangeStats");
    rangeStats_->setState(state_);
    spanDetails_ = new SpanDetailsPane;
    spanDetails_->setObjectName("spanDetailsPane");
    spanDetails_->setState(state_);
    codeView_ = new CodeView;
    codeView_->setObjectName("codeView");
    analysisTabs_ = new QTabWidget;
    analysisTabs_->setObjectName("analysisTabs");
    analysisTabs_->setDocumentMode(true);
    analysisTabs_->addTab(rangeStats_, "Selection");
    analysisTabs_->addTab(spanDetails_, "Span");
    analysisTabs_->addTab(codeView_, "Code");
    progress_ = new QProgressBar;
    progress_->setObjectName("timelineProgress");
    progress_->setRange(0, 100);
    progress_->setMaximumWidth(220);
    progress_->setTextVisible(true);
    cancel_ = new QPushButton("Cancel");
    cancel_->setObjectName("timelineCancel");
    cancel_->setToolTip("Stop opening the timeline, or decoding the window in view");
    cancel_->setVisible(false);
    connect(cancel_, &QPushButton::clicked, this, &TraceTimelineTab::cancelRequested);
    overview_ = new OverviewStrip;
    overview_->setObjectName("overviewStrip");
    overview_->setState(state_);
    // The strip's plot lines up with the view's (its label column and scroll bar).
    overview_->setPlotMargins(view_->plotLeft(), view_->width() - view_->plotLeft() - view_->plotWidth());
    connect(view_, &TimelineView::plotMarginsChanged, overview_, &OverviewStrip::setPlotMargins);
    auto* statusRow = new QHBoxLayout;
    statusRow->addWidget(status_, 1);
    statusRow->addWidget(progress_);
    statusRow->addWidget(cancel_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 4, 0, 0);
    layout->addLayout(statusRow);
    layout->addWidget(search_);
    auto* top = new QWidget;
    auto* topLayout = new QVBoxLayout(top);
    topLayout->setContentsMargins(0, 0, 0, 0);
    topLayout->setSpacing(2);
    topLayout->addWidget(overview_);
    // Filter, order, collapse and pin lanes; the choice is kept per file (QSettings).
    auto* laneBar = new LaneBar(state_);
    laneBar->setObjectName("laneBar");
    laneBar->setFile(path);
    topLayout->addWidget(laneBar);
    topLayout->addWidget(view_, 1);
    topLayout->addWidget(selection);
    auto* split = new QSplitter(Qt::Vertical);
    split->setObjectName("timelineSplit");
    split->addWidget(top);
    split->addWidget(analysisTabs_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    window_memory::rememberSplitter(split, "timelineSplit");
    selection->setText("Shift+drag or drag on the time axis: select a range · / search · ? keys");
    layout->addWidget(split, 1);
    auto* find = new QShortcut(QKeySequence("/"), this);
    find->setContext(Qt::WidgetWithChildrenShortcut);
    connect(find, &QShortcut::activated, search_, &SearchBar::activate);
    connect(view_, &TimelineView::searchRequested, search_, &SearchBar::activate);
    connect(search_, &SearchBar::closed, view_, qOverload<>(&QWidget::setFocus));

    // The panes follow the state; the tab shows the one that answers what was chosen last.
    connect(state_, &TimelineState::spanSelected, this, [this](const TimelineHit& hit) {
        if (hit.kind == TimelineHit::ThreadSpan && analysisTabs_->currentWidget() != codeView_)
            analysisTabs_->setCurrentWidget(spanDetails_);
        updateSelectionLine();
    });
    connect(state_, &TimelineState::rangeCompareRequested, this, [this] {
        if (!rangeStats_->waitingForRangeB()) rangeStats_->compareWithNextRange();
    });
    connect(state_, &TimelineState::timeSelectionDragged, this, &TraceTimelineTab::updateSelectionLine);
    connect(state_, &TimelineState::timeSelectionChanged, this, [this](quint64 begin, quint64 end) {
        updateSelectionLine();
        if (end > begin) analysisTabs_->setCurrentWidget(rangeStats_);
    });
    connect(state_, &TimelineState::marksChanged, this, &TraceTimelineTab::updateSelectionLine);
    connect(rangeStats_, &RangeStatsPane::exportRequested, this, &TraceTimelineTab::exportRequested);
    connect(rangeStats_, &RangeStatsPane::functionActivated, this, [this](uint32_t function) {
        if (rangeStats_->sourceKind() != RangeSource::Spans) {
            // The function is the sampled profile's: its code with the samples taken in it.
            if (rangeStats_->end() > rangeStats_->begin())
                emit sampleCodeRequested(
                    rangeStats_->sourceKind() == RangeSource::Samples ? rangeStats_->sourceEvent() : -1,
                    rangeStats_->shownThread(), function, rangeStats_->begin(), rangeStats_->end());
            return;
        }
        if (auto r = state_->timeSelection())
            emit codeRequested(rangeStats_->shownThread(), function, r->begin, r->end);
    });
    connect(spanDetails_, &SpanDetailsPane::codeRequested, this,
            [this](int32_t tid, uint32_t function, quint64 begin, quint64 end) {
                // The selected range when there is one (counts over it), else the span's own time.
                if (auto r = state_->timeSelection(); r && r->begin <= begin && r->end >= end)
                    emit codeRequested(tid, function, r->begin, r->end);
                else
                    emit codeRequested(tid, function, begin, end);
            });
}

void TraceTimelineTab::showSpe(std::shared_ptr<const SpeViewData> data) {
    if (!spePane_) {
        spePane_ = new SpePane;
        spePane_->setState(state_);
        analysisTabs_->addTab(spePane_, "SPE");
    }
    spePane_->setData(std::move(data));
}

void TraceTimelineTab::updateSelectionLine() {
    const uint64_t origin = state_->data() ? state_->data()->begin : 0;
    QStringList parts;
    if (auto r = state_->timeSelection())
        parts << QString("Selection: +%1 … +%2, %3 (F zooms to it, M marks it, Esc clears)")
                     .arg(relativeTime(r->begin, origin))
                     .arg(relativeTime(r->end, origin))
                     .arg(formatNs(double(r->end - r->begin)));
    const TimelineHit& hit = state_->selection();
    if (hit.valid()) parts << describeHit(hit, origin).replace('\n', "  ·  ");
    if (const size_t n = state_->marks().size()) parts << QString("%1 mark%2").arg(n).arg(n == 1 ? "" : "s");
    if (parts.isEmpty()) parts << "Shift+drag: select a range · / search · ? keys";
    selectionLine_->setText(parts.join("   |   "));
}

void TraceTimelineTab::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #b00020;" : "");
}

void TraceTimelineTab::setProgress(int percent, const QString& phase) {
    progress_->setRange(0, 100);
    progress_->setValue(percent);
    progress_->setFormat(phase + " %p%");
}

void TraceTimelineTab::setBusyProgress(const QString& format) {
    progress_->setRange(0, 0);  // busy until the first report
    progress_->setFormat(format);
}

void TraceTimelineTab::showBusy(bool on) {
    progress_->setVisible(on);
    cancel_->setVisible(on);
}

void TraceTimelineTab::showCodeTab() {
    analysisTabs_->setCurrentWidget(codeView_);
}

}  // namespace auxscope
