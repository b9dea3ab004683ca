// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineView.h"

#include "TriggerReport.h"

#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QHelpEvent>
#include <QMenu>
#include <QPainter>
#include <QPointer>
#include <QScrollBar>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <thread>

#include "gui/timeline/HitDescription.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineInput.h"
#include "gui/timeline/TimelineOverlays.h"
#include "gui/timeline/tracks/CpuTrack.h"
#include "gui/timeline/tracks/FlameChartTrack.h"

namespace auxscope {

TimelineView::TimelineView(QWidget* parent) : TimelineView(nullptr, parent) {}

TimelineView::TimelineView(TimelineState* state, QWidget* parent)
    : QWidget(parent), state_(state ? state : new TimelineState(this)) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(300, 150);
    input_ = std::make_unique<TimelineInput>(*this);
    vbar_ = new QScrollBar(Qt::Vertical, this);
    vbar_->setObjectName("timelineScroll");
    connect(vbar_, &QScrollBar::valueChanged, this, [this] { update(); });
    // The narrowest window: 1 ns per 10 pixels of the plot, at least 50 ns.
    state_->setMinimumWindow([self = QPointer<TimelineView>(this)] { return self ? self->minWidth() : 50; });
    // The state says what to paint; its signals are this view's (the pages' and tests' API).
    TimelineState* s = state_;
    for (auto signal : {&TimelineState::windowChanged, &TimelineState::timeSelectionChanged,
                        &TimelineState::timeSelectionDragged})
        connect(s, signal, this, [this] { update(); });
    for (auto signal : {&TimelineState::marksChanged, &TimelineState::highlightChanged})
        connect(s, signal, this, [this] { update(); });
    connect(s, &TimelineState::spanSelected, this, [this] { update(); });
    connect(s, &TimelineState::dataChanged, this, [this] {
        layout();
        update();
        emit dataShown();
    });
    connect(s, &TimelineState::laneStateChanged, this, [this] {
        layout();
        update();
        emit laneStateChanged();
    });
    connect(s, &TimelineState::threadRevealRequested, this, &TimelineView::scrollToThread);
    connect(s, &TimelineState::windowSettled, this, &TimelineView::visibleRangeChanged);
    connect(s, &TimelineState::spanSelected, this, &TimelineView::spanSelected);
    connect(s, &TimelineState::timeSelectionChanged, this, &TimelineView::timeSelectionChanged);
    connect(s, &TimelineState::timeSelectionDragged, this, &TimelineView::timeSelectionDragged);
    connect(s, &TimelineState::marksChanged, this, &TimelineView::marksChanged);
}

TimelineView::~TimelineView() {
    if (state_ && state_->parent() != this) state_->setMinimumWindow({});
}

QString TimelineView::describe(const TimelineHit& hit, uint64_t recordingBegin) {
    return describeHit(hit, recordingBegin);
}

QString TimelineView::cpuNoteText(const QString& note) {
    return auxscope::cpuNoteText(note);
}

void TimelineView::setData(std::shared_ptr<const TimelineData> data) {
    const uint64_t generation = ++dataGeneration_;
    size_t total = 0;
    if (data)
        for (const auto& t : data->threads)
            total += t.spans.size();
    if (!data || !asyncSummaries_ || total < asyncMinSpans_) {
        TimelineSummaries summaries;
        if (data) summaries = buildTimelineSummaries(*data);
        install(std::move(data), std::move(summaries));
        return;
    }
    // Large: summarize on a worker thread, showing the current data until then.
    preparing_ = true;
    QPointer<TimelineView> self(this);
    std::thread([self, data = std::move(data), generation] {
        auto lods = std::make_shared<TimelineSummaries>(buildTimelineSummaries(*data));
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, data, lods, generation] {
                if (!self || generation != self->dataGeneration_) return;  // a newer setData won
                self->preparing_ = false;
                self->install(data, std::move(*lods));
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineView::install(std::shared_ptr<const TimelineData> data, TimelineSummaries summaries) {
    preparing_ = false;
    const std::shared_ptr<const TimelineData> old = state_->data();
    const bool first = !old || state_->window().end <= state_->window().begin;
    if (!old || !data || old->functions != data->functions) {
        colors_.clear();
        labels_.clear();
    }
    summaries_ = std::move(summaries);
    state_->setData(data);  // the panes hear of it; this view lays it out (dataShown)
    if (!data) {
        update();
        return;
    }
    // The window: kept (inside the recording), the newest part when following, or all of the first data.
    uint64_t viewBegin = state_->window().begin, viewEnd = state_->window().end;
    const uint64_t b = data->begin, e = std::max(data->end, data->begin + 1);
    if (state_->followLatest()) {
        // The newest `followSeconds`, or everything kept until the user zooms.
        const double seconds = state_->followSeconds();
        const uint64_t w = seconds > 0 ? uint64_t(seconds * 1e9) : e - b;
        viewEnd = e;
        viewBegin = e - std::min(w, e - b);
    } else if (first) {
        viewBegin = b, viewEnd = e;
    } else {
        // Keep the zoom; only keep it inside the recording.
        const uint64_t w = std::min(viewEnd - viewBegin, e - b);
        if (viewBegin < b) viewBegin = b;
        if (viewBegin + w > e) viewBegin = e - w;
        viewEnd = viewBegin + w;
    }
    // The first data shows whole: nothing to ask for until the window moves.
    state_->placeWindow(viewBegin, viewEnd, first && !state_->followLatest());
    update();
}

void TimelineView::setUndecodedHint(const QString& text) {
    if (hint_ == text) return;
    hint_ = text;
    update();
}

uint64_t TimelineView::minWidth() const {
    return std::max<uint64_t>(50, uint64_t(plotWidth()) / 10);
}

int TimelineView::plotWidth() const {
    return std::max(1, width() - kLabelWidth - (vbar_ ? vbar_->sizeHint().width() : 0));
}

double TimelineView::xOf(uint64_t t) const {
    const Range v = state_->window();
    const double w = double(v.end - v.begin);
    return kLabelWidth + (double(t) - double(v.begin)) * plotWidth() / (w > 0 ? w : 1);
}

uint64_t TimelineView::timeAt(double x) const {
    const Range v = state_->window();
    const double w = double(v.end - v.begin);
    const double t = double(v.begin) + (x - kLabelWidth) * w / plotWidth();
    return t <= 0 ? 0 : uint64_t(t);
}

int TimelineView::contentTop() const {
    return kAxisHeight - vbar_->value();
}

// ---- Tracks and where they are

const TrackLayout& TimelineView::layout() const {
    if (layoutGeneration_ != state_->lanesGeneration()) {
        layoutGeneration_ = state_->lanesGeneration();
        layout_ =
            state_->data() ? TrackLayout::place(state_->lanes(), *state_->data(), summaries_) : TrackLayout{};
        updateScrollBar();
    }
    return layout_;
}

void TimelineView::updateScrollBar() const {
    const int visible = std::max(0, height() - kAxisHeight);
    vbar_->setRange(0, std::max(0, layout_.contentHeight - visible));
    vbar_->setPageStep(visible);
    vbar_->setSingleStep(kRowHeight);
}

void TimelineView::resizeEvent(QResizeEvent*) {
    const int w = vbar_->sizeHint().width();
    vbar_->setGeometry(width() - w, kAxisHeight, w, height() - kAxisHeight);
    layout();
    updateScrollBar();
    emit plotMarginsChanged(plotLeft(), width() - plotLeft() - plotWidth());
}

int TimelineView::stickyHeight() const {
    // Pinned lanes stay under the axis while the rest scrolls, unless they would take most of the view.
    const int visible = height() - kAxisHeight;
    const int pinnedHeight = layout().pinnedHeight;
    return pinnedHeight > 0 && pinnedHeight * 5 <= visible * 3 ? pinnedHeight : 0;
}

int TimelineView::trackY(const TimelineTrack& t) const {
    return t.pinned && stickyHeight() > 0 ? kAxisHeight + t.contentY : contentTop() + t.contentY;
}

int TimelineView::rowY(int32_t tid, int depth) const {
    const auto& data = state_->data();
    if (!data) return -1;
    const TrackLayout& l = layout();
    for (size_t i = 0; i < data->threads.size(); ++i) {
        if (data->threads[i].tid != tid) continue;
        if (l.threadFirstTrack[i] == TimelineTrack::kNoThread || depth < 0)
            return -1;  // collapsed or filtered out
        const size_t chart = l.threadFirstTrack[i] + 1;
        if (chart >= l.tracks.size() || l.tracks[chart]->kind() != TimelineTrack::FlameChart ||
            l.tracks[chart]->thread != i ||
            depth >= static_cast<const FlameChartTrack&>(*l.tracks[chart]).rows())
            return -1;
        return trackY(*l.tracks[chart]) + depth * kRowHeight;
    }
    return -1;
}

int TimelineView::threadLaneY(int32_t tid) const {
    for (const auto& t : layout().tracks)
        if (t->kind() == TimelineTrack::ThreadHeader && t->tid == tid) return trackY(*t);
    return -1;
}

int TimelineView::processHeaderY(int32_t pid) const {
    for (const auto& t : layout().tracks)
        if (t->kind() == TimelineTrack::ProcessHeader && t->pid == pid) return trackY(*t);
    return -1;
}

int TimelineView::cpuLaneY(int cpu) const {
    for (const auto& t : layout().tracks)
        if (t->kind() == TimelineTrack::Cpu && t->cpu == cpu) return trackY(*t);
    return -1;
}

int TimelineView::healthHeaderY() const {
    for (const auto& t : layout().tracks)
        if (t->kind() == TimelineTrack::HealthHeader) return trackY(*t);
    return -1;
}

int TimelineView::healthLaneY(int cpu) const {
    for (const auto& t : layout().tracks)
        if (t->kind() == TimelineTrack::Health && t->cpu == cpu) return trackY(*t);
    return -1;
}

const TimelineTrack* TimelineView::trackAt(int y, int* dy) const {
    if (y < kAxisHeight) return nullptr;
    const int sticky = stickyHeight();
    const int cy = y < kAxisHeight + sticky ? y - kAxisHeight : y - contentTop();
    const TimelineTrack* t = layout().at(cy);
    if (t && dy) *dy = cy - t->contentY;
    return t;
}

std::optional<TimelineView::Place> TimelineView::placeOfThread(int32_t tid, int depth) const {
    std::optional<Place> header;
    for (const auto& t : layout().tracks) {
        if (t->tid != tid) continue;
        if (t->kind() == TimelineTrack::ThreadHeader) header = Place{t->contentY, t->height, t->pinned};
        if (t->kind() == TimelineTrack::FlameChart && depth >= 0 &&
            depth < static_cast<const FlameChartTrack&>(*t).rows())
            return Place{t->contentY + depth * kRowHeight, kRowHeight, t->pinned};
    }
    return header;
}

void TimelineView::scrollToThread(int32_t tid, int depth) {
    std::optional<Place> t = placeOfThread(tid, depth);
    const auto& data = state_->data();
    if (!t && data && data->lanes) {
        // In a collapsed process: expanded to show it.
        const long lane = data->lanes->threadIndex(tid);
        int32_t pid = lane >= 0 ? data->lanes->threads[size_t(lane)].pid : -1;
        for (const auto& th : data->threads)
            if (th.tid == tid) pid = th.pid;
        if (pid != -1 && processCollapsed(pid)) {
            setProcessCollapsed(pid, false);
            t = placeOfThread(tid, depth);
        }
    }
    if (!t || (t->pinned && stickyHeight() > 0)) return;
    const int visible = std::max(0, height() - kAxisHeight), sticky = stickyHeight();
    const int y = t->y, v = vbar_->value();
    if (y < v + sticky || y + t->height > v + visible)
        vbar_->setValue(std::max(0, y - sticky - (visible - sticky) / 3));
}

// ---- Painting

void TimelineView::paintEvent(QPaintEvent*) {
    frame_ = {};
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (!data()) {
        p.setPen(Qt::gray);
        p.drawText(rect(), Qt::AlignCenter, hint_.isEmpty() ? QString("No timeline yet") : hint_);
        return;
    }
    const int plotRight = kLabelWidth + plotWidth();
    const int top = contentTop();
    const int sticky = stickyHeight();
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    // The tracks in view that scroll, below the pinned ones that stay.
    const int scrolledTop = kAxisHeight + sticky;
    const auto& tracks = layout().tracks;
    auto first = std::upper_bound(tracks.begin(), tracks.end(), scrolledTop - top,
                                  [](int v, const auto& t) { return v < t->contentY + t->height; });
    paintTracks(p, size_t(first - tracks.begin()), tracks.size(), top,
                QRect(0, scrolledTop, plotRight, height() - scrolledTop));
    if (sticky > 0) {
        // Lanes painted under the pinned ones are covered: they clip to their own rectangles.
        p.setClipping(false);
        p.fillRect(QRect(0, kAxisHeight, plotRight, sticky), Qt::white);
        auto end = std::find_if(tracks.begin(), tracks.end(), [](const auto& t) { return !t->pinned; });
        paintTracks(p, 0, size_t(end - tracks.begin()), kAxisHeight,
                    QRect(0, kAxisHeight, plotRight, sticky));
        p.setClipping(false);
        p.fillRect(QRect(0, kAxisHeight + sticky - 4, plotRight, 4), QColor(236, 238, 242));
        p.setPen(QColor(170, 175, 185));
        p.drawLine(0, kAxisHeight + sticky - 1, plotRight, kAxisHeight + sticky - 1);
    }
    p.setClipping(false);
    TimelineOverlays::paintAxis(p, *this);
    TimelineOverlays::paint(p, *this);
    if (hasFocus()) {
        p.setPen(QPen(palette().highlight().color(), 1));
        p.drawRect(rect().adjusted(0, 0, -1, -1));
    }
}

void TimelineView::paintTracks(QPainter& p, size_t begin, size_t end, int top, const QRect& clip) {
    const auto& tracks = layout().tracks;
    const int bottom = clip.y() + clip.height();
    p.setClipRect(clip);
    TrackPaintContext ctx{p,
                          *state_->data(),
                          *state_,
                          summaries_,
                          colors_,
                          labels_,
                          state_->window().begin,
                          state_->window().end,
                          plotWidth(),
                          hint_,
                          frame_,
                          clip};
    for (size_t i = begin; i < end && top + tracks[i]->contentY < bottom; ++i)
        tracks[i]->paint(ctx, top + tracks[i]->contentY);
}

// ---- What is where

TimelineHit TimelineView::hitAt(QPoint pos) const {
    if (!data() || pos.x() < kLabelWidth || pos.x() >= kLabelWidth + plotWidth()) return {};
    int dy = 0;
    const TimelineTrack* track = trackAt(pos.y(), &dy);
    if (!track || track->kind() == TimelineTrack::ProcessHeader ||
        track->kind() == TimelineTrack::HealthHeader)
        return {};
    const uint64_t t = timeAt(pos.x() + 0.5);
    const Range v = state_->window();
    const uint64_t tolerance = uint64_t(2.0 * double(v.end - v.begin) / plotWidth());
    return track->hit(TrackHitContext{*data(), summaries_}, dy, t, tolerance);
}

QString TimelineView::toolTipAt(QPoint pos) const {
    // An event marker's flag on the axis, or its band on a lane: what fired, where, how long.
    if (pos.x() >= kLabelWidth && data())
        for (const EventMarker& e : eventMarkers_) {
            const double x = xOf(e.time), x0 = std::min(xOf(e.start), x);
            const bool onFlag = pos.y() < kAxisHeight && std::abs(pos.x() - x) <= 5;
            int laneY = e.tid >= 0 ? threadLaneY(e.tid) : -1;
            if (laneY < 0 && e.cpu >= 0) laneY = cpuLaneY(e.cpu);
            const bool onBand = laneY >= kAxisHeight && pos.y() >= laneY && pos.y() < laneY + kLaneHeight &&
                                pos.x() >= x0 - 2 && pos.x() <= std::max(x, x0 + 2) + 2;
            if (!onFlag && !onBand) continue;
            QString text = e.label.isEmpty() ? QString("Fired") : e.label + " fired";
            text += QString(" at +%1").arg(formatNs(double(e.time - std::min(e.time, data()->begin))));
            if (e.tid >= 0) text += QString(" on thread %1").arg(e.tid);
            if (e.cpu >= 0) text += QString(", CPU %1").arg(e.cpu);
            if (e.time > e.start)
                text += QString(", %1 after its start").arg(formatNs(double(e.time - e.start)));
            return text;
        }
    const TimelineHit hit = hitAt(pos);
    if (!hit.valid()) {
        if (!data()) return {};
        const TimelineTrack* track = trackAt(pos.y());
        if (track && track->kind() == TimelineTrack::Cpu && pos.x() < kLabelWidth)
            if (const std::string* note = CpuTrack::noteOf(*data(), track->cpu))
                return QString("CPU %1: %2").arg(track->cpu).arg(cpuNoteText(QString::fromStdString(*note)));
        if (track &&
            (track->kind() == TimelineTrack::ProcessHeader || track->kind() == TimelineTrack::HealthHeader) &&
            pos.x() < kLabelWidth)
            return QString("Click (or C) to collapse or expand; right-click to pin");
        if (!data() || hint_.isEmpty()) return {};
        const uint64_t t = timeAt(pos.x());
        if (track && track->kind() == TimelineTrack::FlameChart && pos.x() >= kLabelWidth &&
            (t < data()->decodedBegin || t >= data()->decodedEnd))
            return hint_;
        return {};
    }
    return describe(hit, data() ? data()->begin : 0);
}

bool TimelineView::toggleProcessAt(int y) {
    const TimelineTrack* t = y >= 0 ? trackAt(y) : nullptr;
    if (!t || !data()) return false;
    if (t->kind() == TimelineTrack::HealthHeader || t->kind() == TimelineTrack::Health) {
        setHealthCollapsed(!laneState().healthCollapsed);
        return true;
    }
    int32_t pid = -1;
    if (t->kind() == TimelineTrack::ProcessHeader) {
        pid = t->pid;
    } else if (t->kind() == TimelineTrack::ThreadHeader || t->kind() == TimelineTrack::FlameChart) {
        if (!data()->lanes) return false;
        pid = t->pid;
    } else {
        return false;
    }
    if (processHeaderY(pid) < 0) return false;
    setProcessCollapsed(pid, !processCollapsed(pid));
    return true;
}

QMenu* TimelineView::laneMenu(QPoint pos) {
    auto* menu = new QMenu(this);
    const TimelineTrack* t = data() ? trackAt(pos.y()) : nullptr;
    if (!t) return menu;
    // The track's own items (what it is: a CPU, a process, a thread; pin, collapse), then the view's.
    TrackMenuContext items{*menu, *state_, [this](int32_t pid) { return processHeaderY(pid) >= 0; }};
    t->addMenuItems(items);
    if (data()->lanes) {
        menu->addSeparator();
        connect(menu->addAction("Expand all"), &QAction::triggered, this,
                [this] { setAllProcessesCollapsed(false); });
        connect(menu->addAction("Collapse all"), &QAction::triggered, this,
                [this] { setAllProcessesCollapsed(true); });
    }
    if (!laneState().pinned.empty())
        connect(menu->addAction("Unpin all"), &QAction::triggered, this, [this] {
            TimelineLaneState state = laneState();
            state.pinned.clear();
            setLaneState(state);
        });
    return menu;
}

// ---- Input (TimelineInput)

void TimelineView::wheelEvent(QWheelEvent* e) {
    input_->wheel(e);
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
    if (!input_->key(e)) QWidget::keyPressEvent(e);
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
    input_->press(e);
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
    input_->move(e);
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
    input_->release(e);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* e) {
    input_->doubleClick(e);
}

void TimelineView::contextMenuEvent(QContextMenuEvent* e) {
    QMenu* menu = laneMenu(e->pos());
    if (!menu->isEmpty()) menu->exec(e->globalPos());
    delete menu;
    e->accept();
}

bool TimelineView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            e->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    if (e->type() == QEvent::Leave) input_->leave();
    if (e->type() == QEvent::FocusIn || e->type() == QEvent::FocusOut) update();
    return QWidget::event(e);
}

QString TimelineView::keysHelp() {
    return QStringLiteral(
        "Ctrl+wheel, W / S\tzoom around the mouse\n"
        "A / D, drag\tpan\n"
        "wheel, Up / Down\tscroll the tracks\n"
        "0, Home\tshow everything\n"
        "click\tselect a span (details, code)\n"
        "double-click\tzoom to a span\n"
        "Shift+drag, drag on the axis\tselect a time range (statistics)\n"
        "F\tzoom to the selection\n"
        "M\tmark / unmark the selection\n"
        "Esc\tclear the selection\n"
        "click a header, C\tcollapse / expand a process\n"
        "right-click a lane\tpin it to the top\n"
        "/\tsearch functions and threads\n"
        "Enter / Shift+Enter\tnext / previous hit\n"
        "?\tthis help");
}

std::vector<TimelineView::EventMarker> TimelineView::firingMarkers(const TriggerReport& r) {
    std::vector<EventMarker> markers;
    markers.reserve(r.firings.size());
    for (const TriggerFiring& f : r.firings) {
        EventMarker m;
        m.start = f.start ? std::min(f.start, f.time) : f.time;
        m.time = f.time;
        m.tid = f.tid;
        m.cpu = f.cpu;
        m.label = f.trigger < r.triggers.size() ? QString::fromStdString(r.triggers[f.trigger]) : QString();
        markers.push_back(m);
    }
    return markers;
}

void TimelineView::setEventMarkers(std::vector<EventMarker> markers) {
    eventMarkers_ = std::move(markers);
    update();
}

void TimelineView::setKeysHelpVisible(bool on) {
    if (helpVisible_ == on) return;
    helpVisible_ = on;
    update();
}

}  // namespace auxscope
