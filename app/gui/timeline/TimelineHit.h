// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What is at a point of a timeline (a track's hit test answers with one), and
// the span of a thread as a hit (what a click, the search or a caller's
// double-click selects). HitDescription.h puts a hit into words.
#include <QString>
#include <QStringList>

#include <cstddef>
#include <cstdint>

#include "spans/TimelineData.h"

namespace auxscope {

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
    // Its call stack when the lanes carry stacks (SidebandLanes::stacks): the
    // functions leaf first, at most kStackShown, and how many more there are.
    QStringList stack;
    size_t stackMore = 0;
    static constexpr size_t kStackShown = 12;
    // Loss: what describeLoss() says (kind, how much, why). CpuNote: the note ("offline").
    QString loss;
    // Health: the statistics point whose interval [start, end] holds the time
    // (start: the previous point), and what was lost in that interval (> 0: a red tick).
    SidebandLanes::Health health;
    uint64_t lostRecordsHere = 0, lostSamplesHere = 0, auxLostHere = 0;
    bool valid() const { return kind != None; }
};

// The name of function `id` of `data`'s table ("[unknown]", "function N" when it has none).
QString functionNameOf(const TimelineData* data, uint32_t id);
// The hit for span `index` of `th` (a thread of `data`): its function and image, or its gap's reason.
TimelineHit spanHit(const TimelineData& data, const TimelineData::Thread& th, size_t index);

}  // namespace auxscope
