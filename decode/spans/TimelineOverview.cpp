// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/TimelineOverview.h"

#include <algorithm>

#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"

namespace auxscope {

uint64_t TimelineOverview::bucketBegin(size_t i) const {
    if (i >= buckets) return end;
    // Rounded up, so that bucketOf(bucketBegin(i)) == i (buckets are at least 1 ns wide).
    const unsigned __int128 w = end - begin;
    return begin + uint64_t((w * i + buckets - 1) / buckets);
}

size_t TimelineOverview::bucketOf(uint64_t t) const {
    if (!buckets || t <= begin) return 0;
    if (t >= end) return buckets - 1;
    const unsigned __int128 off = t - begin;
    return std::min(buckets - 1, size_t(off * buckets / (end - begin)));
}

const TimelineOverview::Cpu* TimelineOverview::cpu(int number) const {
    auto it =
        std::lower_bound(cpus.begin(), cpus.end(), number, [](const Cpu& c, int n) { return c.cpu < n; });
    return it != cpus.end() && it->cpu == number ? &*it : nullptr;
}

namespace {

// Calls add(bucket, overlap ns, bucket width ns) for every bucket [s, e) overlaps
// (clipped to the recording).
template <typename Add>
void spread(const TimelineOverview& o, uint64_t s, uint64_t e, Add add) {
    s = std::max(s, o.begin);
    e = std::min(e, o.end);
    if (e <= s) return;
    size_t i = o.bucketOf(s);
    const size_t last = o.bucketOf(e - 1);
    for (; i <= last; ++i) {
        const uint64_t bb = o.bucketBegin(i), be = o.bucketBegin(i + 1);
        const uint64_t from = std::max(s, bb), to = std::min(e, be);
        if (to > from) add(i, to - from, be - bb);
    }
}

}  // namespace

std::shared_ptr<const TimelineOverview> buildTimelineOverview(const TimelineData& data,
                                                              const std::vector<OverviewTraceChunk>& trace,
                                                              size_t buckets) {
    auto out = std::make_shared<TimelineOverview>();
    TimelineOverview& o = *out;
    o.begin = data.begin;
    o.end = std::max(data.end, data.begin + 1);
    o.buckets = size_t(std::clamp<uint64_t>(o.end - o.begin, 1, std::max<size_t>(buckets, 1)));
    const size_t n = o.buckets;

    // Every CPU anything names, by number.
    std::map<int, TimelineOverview::Cpu> cpus;
    auto cpuOf = [&](int number) -> TimelineOverview::Cpu& {
        auto [it, added] = cpus.try_emplace(number);
        if (added) {
            it->second.cpu = number;
            it->second.busy.assign(n, 0.f);
            it->second.samples.assign(n, 0);
            it->second.losses.assign(n, 0);
            it->second.traceBytes.assign(n, 0.f);
        }
        return it->second;
    };
    for (const auto& [number, slices] : data.cpus) {
        TimelineOverview::Cpu& c = cpuOf(number);
        c.switches = !slices.empty();
        for (const TimelineData::CpuSlice& s : slices) {
            if (s.tid == 0) continue;  // idle
            spread(o, s.start, s.end, [&](size_t i, uint64_t ns, uint64_t width) {
                c.busy[i] += float(double(ns) / double(width));
            });
        }
        for (float& b : c.busy)
            b = std::min(b, 1.f);  // rounding
    }
    if (data.lanes) {
        const SidebandLanes& lanes = *data.lanes;
        for (const SidebandLanes::Thread& t : lanes.threads)
            for (const SidebandLanes::Sample& s : t.samples) {
                if (s.time < o.begin || s.time > o.end) continue;
                ++cpuOf(s.cpu).samples[o.bucketOf(s.time)];
            }
        for (const auto& [number, losses] : lanes.losses)
            for (const SidebandLanes::Loss& l : losses)
                ++cpuOf(number).losses[o.bucketOf(l.time)];
    }
    for (const OverviewTraceChunk& chunk : trace) {
        o.totalTraceBytes += chunk.bytes;
        if (!chunk.start || !chunk.bytes) {
            o.untimedTraceBytes += chunk.bytes;
            continue;
        }
        TimelineOverview::Cpu& c = cpuOf(chunk.cpu);
        if (chunk.end <= chunk.start || chunk.end <= o.begin || chunk.start >= o.end) {
            c.traceBytes[o.bucketOf(chunk.start)] += float(chunk.bytes);
            continue;
        }
        const double perNs = double(chunk.bytes) / double(chunk.end - chunk.start);
        // The part outside the recording's extent goes to its first or last bucket.
        if (chunk.start < o.begin) c.traceBytes[0] += float(perNs * double(o.begin - chunk.start));
        if (chunk.end > o.end) c.traceBytes[n - 1] += float(perNs * double(chunk.end - o.end));
        spread(o, chunk.start, chunk.end,
               [&](size_t i, uint64_t ns, uint64_t) { c.traceBytes[i] += float(perNs * double(ns)); });
    }

    o.busyCpus.assign(n, 0.f);
    o.samples.assign(n, 0);
    o.losses.assign(n, 0);
    o.traceBytes.assign(n, 0.f);
    o.cpus.reserve(cpus.size());
    for (auto& [number, c] : cpus) {
        for (size_t i = 0; i < n; ++i) {
            o.busyCpus[i] += c.busy[i];
            o.samples[i] += c.samples[i];
            o.losses[i] += c.losses[i];
            o.traceBytes[i] += c.traceBytes[i];
        }
        o.cpus.push_back(std::move(c));
    }
    for (size_t i = 0; i < n; ++i) {
        o.maxBusyCpus = std::max(o.maxBusyCpus, o.busyCpus[i]);
        o.maxSamples = std::max(o.maxSamples, o.samples[i]);
        o.maxTraceBytes = std::max(o.maxTraceBytes, o.traceBytes[i]);
        o.totalSamples += o.samples[i];
        o.totalLosses += o.losses[i];
    }
    return out;
}

}  // namespace auxscope
