// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/TimelineData.h"

#include <algorithm>
#include <set>

#include "sideband/Sideband.h"

namespace auxscope {

void setTimelineCpus(TimelineData& data, const Sideband& sideband) {
    const TraceModel& model = sideband.model();
    uint64_t begin = model.firstTime(), end = model.lastTime();
    data.cpus.clear();
    for (const auto& [cpu, slices] : sideband.switchSlices()) {
        if (cpu < 0) continue;
        std::vector<TimelineData::CpuSlice>& lane = data.cpus[cpu];
        lane.reserve(slices.size());
        for (const Sideband::Slice& s : slices) {
            if (s.end < s.start) continue;
            // The last ITRACE_START of a CPU without switches runs to the end of the recording.
            const uint64_t sEnd = s.end == UINT64_MAX ? std::max(model.lastTime(), s.start) : s.end;
            const int32_t pid = s.pid > 0 ? s.pid : (s.tid == 0 ? 0 : sideband.pidOf(s.tid));
            // Slices by start, not overlapping: a slice that starts inside the
            // previous one (a lost switch record) cuts it short.
            if (!lane.empty() && lane.back().end > s.start) lane.back().end = s.start;
            lane.push_back({s.start, sEnd, pid, s.tid});
            if (s.tid > 0 && !data.threadNames.count(s.tid))
                data.threadNames[s.tid] = model.threadName(s.tid);
            if (s.start && (!begin || s.start < begin)) begin = s.start;
            end = std::max(end, sEnd);
        }
    }
    if (begin || end) {
        data.begin = begin;
        data.end = std::max(begin, end);
    }
}

void addTimelineThreads(TimelineData& data, std::map<int32_t, SpanStore> threads, const Sideband& sideband,
                        const std::vector<int32_t>& alsoTids) {
    std::set<int32_t> present;
    for (const TimelineData::Thread& t : data.threads)
        present.insert(t.tid);
    auto add = [&](int32_t tid, SpanStore spans) {
        if (!present.insert(tid).second) return;
        TimelineData::Thread t;
        t.tid = tid;
        t.pid = tid == 0 ? 0 : sideband.pidOf(tid);
        t.name = sideband.model().threadName(tid);
        t.spans = std::move(spans);
        if (!data.threadNames.count(tid)) data.threadNames[tid] = t.name;
        data.threads.push_back(std::move(t));
    };
    for (auto& [tid, store] : threads)
        add(tid, std::move(store));
    for (int32_t tid : alsoTids)
        add(tid, SpanStore{});
    std::sort(data.threads.begin(), data.threads.end(),
              [](const TimelineData::Thread& a, const TimelineData::Thread& b) {
                  return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
              });
}

}  // namespace auxscope
