// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TrackLayout.h"

#include <algorithm>

#include "gui/timeline/tracks/CpuTrack.h"
#include "gui/timeline/tracks/FlameChartTrack.h"
#include "gui/timeline/tracks/HealthTracks.h"
#include "gui/timeline/tracks/ProcessTrack.h"
#include "gui/timeline/tracks/ThreadTrack.h"

namespace auxscope {

using namespace timeline_metrics;

TrackLayout TrackLayout::place(const LaneOrder& order, const TimelineData& data,
                               const TimelineSummaries& summaries) {
    TrackLayout out;
    out.threadFirstTrack.assign(data.threads.size(), TimelineTrack::kNoThread);
    const SidebandLanes* lanes = data.lanes.get();
    int y = 0;
    auto add = [&](std::unique_ptr<TimelineTrack> track) {
        y += track->height;
        out.tracks.push_back(std::move(track));
    };
    for (const LaneEntry& e : order.entries) {
        switch (e.kind) {
            case LaneEntry::Space:
                y += e.space;
                break;
            case LaneEntry::Cpu:
                add(std::make_unique<CpuTrack>(e, y));
                break;
            case LaneEntry::ProcessHeader:
                add(std::make_unique<ProcessTrack>(e, y));
                break;
            case LaneEntry::HealthHeader:
                add(std::make_unique<HealthHeaderTrack>(e, y));
                break;
            case LaneEntry::Health:
                add(std::make_unique<HealthTrack>(e, y, data));
                break;
            case LaneEntry::Thread: {
                // Its lane (runs and samples, or its title), then its flame chart when it has spans.
                auto header = std::make_unique<ThreadTrack>(e, y);
                header->tid = e.lane >= 0 ? lanes->threads[size_t(e.lane)].tid : data.threads[e.thread].tid;
                header->pid = e.lane >= 0 ? lanes->threads[size_t(e.lane)].pid : data.threads[e.thread].pid;
                if (e.thread != TimelineTrack::kNoThread) out.threadFirstTrack[e.thread] = out.tracks.size();
                add(std::move(header));
                if (e.thread == TimelineTrack::kNoThread) break;
                const SpanLod* lod = summaries.threads[e.thread].get();
                auto chart = std::make_unique<FlameChartTrack>(e, y, lod ? std::max(1, lod->rows) : 1);
                chart->tid = data.threads[e.thread].tid, chart->pid = data.threads[e.thread].pid;
                add(std::move(chart));
                y += 2;
                break;
            }
        }
        if (e.pinned) out.pinnedHeight = y;
    }
    out.contentHeight = y;
    return out;
}

const TimelineTrack* TrackLayout::at(int cy) const {
    auto it =
        std::upper_bound(tracks.begin(), tracks.end(), cy,
                         [](int v, const std::unique_ptr<TimelineTrack>& t) { return v < t->contentY; });
    if (it == tracks.begin()) return nullptr;
    const TimelineTrack& t = **(it - 1);
    return cy < t.contentY + t.height ? &t : nullptr;
}

}  // namespace auxscope
