// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Two timelines kept in step (two captures side by side, issue 30): zooming or
// panning one moves the other to the same width, at the same distance from its
// anchor. The anchors are each timeline's recording start unless set (an event
// chosen in each: then those two moments line up). Each window stays clamped to
// its own recording (TimelineState::setWindow), so near the end of the shorter
// one the two can part; the next move of either lines them up again.
#include <QObject>
#include <QPointer>

#include <cstdint>

namespace auxscope {

class TimelineState;

class TimelineLink : public QObject {
    Q_OBJECT
public:
    TimelineLink(TimelineState* a, TimelineState* b, QObject* parent = nullptr);

    // The moments that line up (perf clock of each side's recording).
    void setAnchors(uint64_t a, uint64_t b);
    uint64_t anchorA() const { return anchorA_; }
    uint64_t anchorB() const { return anchorB_; }
    // In step (the default) or each moved alone.
    void setEnabled(bool on);
    bool enabled() const { return enabled_; }
    // Moves B to where A's window says (after the anchors changed, or the data arrived).
    void syncFromA();

    // The time on B that lines up with `t` on A, and the reverse (0 below the start).
    uint64_t toB(uint64_t t) const { return shift(t, anchorA_, anchorB_); }
    uint64_t toA(uint64_t t) const { return shift(t, anchorB_, anchorA_); }

private:
    static uint64_t shift(uint64_t t, uint64_t from, uint64_t to) {
        return t >= from ? to + (t - from) : (from - t > to ? 0 : to - (from - t));
    }
    void follow(TimelineState* from, TimelineState* to, bool toIsB, uint64_t begin, uint64_t end);

    QPointer<TimelineState> a_, b_;
    uint64_t anchorA_ = 0, anchorB_ = 0;
    bool enabled_ = true;
    bool moving_ = false;  // a window set by the link: its own windowChanged is not followed back
};

}  // namespace auxscope
