// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineLink.h"

#include "gui/timeline/TimelineState.h"

namespace auxscope {

TimelineLink::TimelineLink(TimelineState* a, TimelineState* b, QObject* parent)
    : QObject(parent), a_(a), b_(b) {
    if (a) anchorA_ = a->bounds().begin;
    if (b) anchorB_ = b->bounds().begin;
    connect(a, &TimelineState::windowChanged, this,
            [this](quint64 begin, quint64 end) { follow(a_, b_, true, begin, end); });
    connect(b, &TimelineState::windowChanged, this,
            [this](quint64 begin, quint64 end) { follow(b_, a_, false, begin, end); });
}

void TimelineLink::setAnchors(uint64_t a, uint64_t b) {
    anchorA_ = a;
    anchorB_ = b;
    syncFromA();
}

void TimelineLink::setEnabled(bool on) {
    enabled_ = on;
    if (on) syncFromA();
}

void TimelineLink::syncFromA() {
    if (!a_) return;
    follow(a_, b_, true, a_->window().begin, a_->window().end);
}

void TimelineLink::follow(TimelineState* from, TimelineState* to, bool toIsB, uint64_t begin, uint64_t end) {
    if (!enabled_ || moving_ || !from || !to || !to->data() || end <= begin) return;
    const uint64_t at = toIsB ? toB(begin) : toA(begin);
    moving_ = true;
    to->stopFollowing();
    to->setWindow(at, at + (end - begin));
    moving_ = false;
}

}  // namespace auxscope
