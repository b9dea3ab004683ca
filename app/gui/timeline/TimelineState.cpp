// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineState.h"

#include <QTimer>

#include <algorithm>

namespace auxscope {

TimelineState::TimelineState(QObject* parent) : QObject(parent) {
    settle_ = new QTimer(this);
    settle_->setSingleShot(true);
    settle_->setInterval(150);
    connect(settle_, &QTimer::timeout, this, [this] {
        if (window_.begin == settled_.begin && window_.end == settled_.end) return;
        settled_ = window_;
        emit windowSettled(window_.begin, window_.end);
    });
}

void TimelineState::setData(std::shared_ptr<const TimelineData> data) {
    selected_ = {};
    data_ = std::move(data);
    lanes_.reset();
    ++lanesGeneration_;
    emit dataChanged();
}

TimelineState::Range TimelineState::bounds() const {
    return data_ ? Range{data_->begin, data_->end} : Range{};
}

void TimelineState::setSettleMs(int ms) {
    settle_->setInterval(ms);
}

uint64_t TimelineState::minimumWindow() const {
    return narrowest_ ? narrowest_() : 50;
}

void TimelineState::setWindow(uint64_t begin, uint64_t end) {
    if (end <= begin) end = begin + 1;
    uint64_t w = std::max(end - begin, minimumWindow());
    if (data_ && data_->end > data_->begin) {
        const uint64_t b = data_->begin, e = data_->end;
        w = std::min(w, e - b);
        begin = std::clamp(begin, b, e - w);
    }
    if (begin == window_.begin && begin + w == window_.end) return;
    window_ = {begin, begin + w};
    emit windowChanged(window_.begin, window_.end);
    settle_->start();
}

void TimelineState::placeWindow(uint64_t begin, uint64_t end, bool quiet) {
    const bool moved = begin != window_.begin || end != window_.end;
    window_ = {begin, end};
    if (quiet) settled_ = {};
    if (moved) emit windowChanged(begin, end);
    if (moved && !quiet) settle_->start();
}

void TimelineState::zoomTo(uint64_t begin, uint64_t end, double margin) {
    if (!data_) return;
    const uint64_t w = std::max<uint64_t>(end > begin ? end - begin : 1, 1);
    const uint64_t m = std::max<uint64_t>(uint64_t(double(w) * margin), 1);
    follow_ = false;
    setWindow(begin > m ? begin - m : 0, end + m);
}

void TimelineState::setFollowLatest(bool follow, double seconds) {
    follow_ = follow;
    followSeconds_ = seconds;
    if (follow_ && data_) {
        const uint64_t b = data_->begin, e = std::max(data_->end, data_->begin + 1);
        const uint64_t w = followSeconds_ > 0 ? std::min(uint64_t(followSeconds_ * 1e9), e - b) : e - b;
        setWindow(e - w, e);
    }
}

std::optional<TimelineState::Range> TimelineState::timeSelection() const {
    if (selEnd_ <= selBegin_) return std::nullopt;
    return Range{selBegin_, selEnd_};
}

void TimelineState::setTimeSelection(uint64_t begin, uint64_t end) {
    if (end <= begin) begin = end = 0;
    if (begin == selBegin_ && end == selEnd_) return;
    selBegin_ = begin, selEnd_ = end;
    if (end > begin) rangeChosenLast_ = true;
    emit timeSelectionChanged(begin, end);
}

void TimelineState::dragTimeSelection(uint64_t begin, uint64_t end) {
    selBegin_ = begin, selEnd_ = end;
    rangeChosenLast_ = true;
    emit timeSelectionDragged(begin, end);
}

void TimelineState::endTimeSelectionDrag() {
    emit timeSelectionChanged(selBegin_, selEnd_);
}

void TimelineState::select(const TimelineHit& hit) {
    selected_ = hit;
    if (!selected_.valid()) return;
    rangeChosenLast_ = false;
    emit spanSelected(selected_);
}

bool TimelineState::selectSpan(int32_t tid, size_t index) {
    if (!data_) return false;
    for (const auto& th : data_->threads) {
        if (th.tid != tid || index >= th.spans.size()) continue;
        select(spanHit(*data_, th, index));
        return true;
    }
    return false;
}

void TimelineState::focusSelection() {
    if (rangeChosenLast_ || !selected_.valid()) {
        if (auto r = timeSelection()) return zoomTo(r->begin, r->end);
    }
    if (selected_.valid()) zoomTo(selected_.start, std::max(selected_.end, selected_.start + 1));
}

bool TimelineState::toggleMark() {
    Range r;
    if (auto sel = timeSelection(); sel && (rangeChosenLast_ || !selected_.valid()))
        r = *sel;
    else if (selected_.valid())
        r = {selected_.start, selected_.end};
    else
        return false;
    auto same = std::find_if(marks_.begin(), marks_.end(),
                             [&](const Range& m) { return m.begin == r.begin && m.end == r.end; });
    const bool added = same == marks_.end();
    if (added)
        marks_.push_back(r);
    else
        marks_.erase(same);
    emit marksChanged();
    return added;
}

void TimelineState::setHighlight(std::vector<bool> functions, std::set<int32_t> threads) {
    highlight_ = std::move(functions);
    highlightThreads_ = std::move(threads);
    emit highlightChanged();
}

// ---- Lanes

const LaneOrder& TimelineState::lanes() const {
    if (!lanes_) lanes_ = data_ ? arrangeLanes(*data_, laneState_) : LaneOrder{};
    return *lanes_;
}

void TimelineState::laneStateEdited() {
    lanes_.reset();
    ++lanesGeneration_;
    emit laneStateChanged();
}

void TimelineState::setLaneState(const TimelineLaneState& state) {
    if (state == laneState_) return;
    laneState_ = state;
    laneStateEdited();
}

void TimelineState::setProcessCollapsed(int32_t pid, bool collapsed) {
    if (collapsed == processCollapsed(pid)) return;
    if (collapsed)
        laneState_.collapsed.insert(pid);
    else
        laneState_.collapsed.erase(pid);
    laneStateEdited();
}

void TimelineState::setAllProcessesCollapsed(bool collapsed) {
    std::set<int32_t> pids;
    if (collapsed && data_ && data_->lanes) {
        for (const SidebandLanes::Process& proc : data_->lanes->processes)
            pids.insert(proc.pid);
        for (const auto& th : data_->threads)
            if (data_->lanes->threadIndex(th.tid) < 0) pids.insert(th.pid);
    }
    if (pids == laneState_.collapsed) return;
    laneState_.collapsed = std::move(pids);
    laneStateEdited();
}

void TimelineState::setPinned(TimelineLaneState::Pin::Kind kind, int32_t id, bool pinned) {
    if (pinned == laneState_.isPinned(kind, id)) return;
    auto& pins = laneState_.pinned;
    if (pinned)
        pins.push_back({kind, id});
    else
        pins.erase(std::remove(pins.begin(), pins.end(), TimelineLaneState::Pin{kind, id}), pins.end());
    laneStateEdited();
}

void TimelineState::setLaneFilter(const QString& text) {
    if (text == laneState_.filter) return;
    laneState_.filter = text;
    laneStateEdited();
}

void TimelineState::setLaneSort(TimelineLaneState::Sort sort) {
    if (sort == laneState_.sort) return;
    laneState_.sort = sort;
    laneStateEdited();
}

void TimelineState::setHealthCollapsed(bool collapsed) {
    if (collapsed == laneState_.healthCollapsed) return;
    laneState_.healthCollapsed = collapsed;
    laneStateEdited();
}

void TimelineState::setSampleShading(SampleShading shading) {
    if (shading_ == shading) return;
    shading_ = shading;
    emit highlightChanged();
}

}  // namespace auxscope
