// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The whole recording at a glance, without decoding anything: the recording cut
// into N equal time buckets and, per bucket, how busy each CPU was (the part of
// the bucket its switch timeline shows a thread other than idle), how many
// samples each CPU took, how many bytes of AUX trace were written (from the
// trace's sync-point index: each independently decodable segment's bytes spread
// evenly over its time) and whether the kernel reported a loss there.
// app/gui/OverviewStrip draws it above the timeline's lanes.
//
// Built in one pass over the switch slices, samples, losses and trace segments
// (a few milliseconds for a million switches); Qt-free, immutable once built.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace auxscope {

struct TimelineData;

// A stretch of AUX trace on one CPU: `bytes` written between `start` and `end`
// (perf clock ns). AuxTraceSession::segments() gives these, cut at sync points.
struct OverviewTraceChunk {
    int cpu = -1;
    uint64_t start = 0, end = 0;
    uint64_t bytes = 0;
};

struct TimelineOverview {
    uint64_t begin = 0, end = 0;  // the recording (TimelineData::begin / end)
    size_t buckets = 0;

    struct Cpu {
        int cpu = -1;
        bool switches = false;          // the CPU has a switch timeline (busy means something)
        std::vector<float> busy;        // per bucket, 0..1: the part of it a thread (not idle) ran
        std::vector<uint32_t> samples;  // per bucket: samples taken on this CPU (idle's not counted)
        std::vector<uint32_t> losses;   // per bucket: loss markers (LOST, LOST_SAMPLES, THROTTLE, AUX)
        std::vector<float> traceBytes;  // per bucket: AUX bytes written on this CPU
    };
    std::vector<Cpu> cpus;  // by CPU number: every CPU of TimelineData::cpus, losses or trace

    // Over every CPU, per bucket.
    std::vector<float> busyCpus;    // sum of the CPUs' busy fractions (0 .. number of CPUs)
    std::vector<uint32_t> samples;  // samples
    std::vector<uint32_t> losses;   // loss markers
    std::vector<float> traceBytes;  // AUX bytes written
    float maxBusyCpus = 0, maxTraceBytes = 0;
    uint32_t maxSamples = 0;
    uint64_t totalTraceBytes = 0, totalSamples = 0, totalLosses = 0;
    uint64_t untimedTraceBytes = 0;  // in chunks without a time (not in any bucket)
    bool hasTrace() const { return totalTraceBytes > 0; }

    // Bucket geometry: bucket i covers [bucketBegin(i), bucketBegin(i + 1)).
    uint64_t bucketBegin(size_t i) const;
    // The bucket holding perf time `t` (clamped into the recording).
    size_t bucketOf(uint64_t t) const;
    const Cpu* cpu(int number) const;
};

// Cuts [data.begin, data.end) into `buckets` buckets (at least 1; fewer when the
// recording is shorter than `buckets` ns) and fills them from data.cpus (busy:
// slices of any thread but tid 0), data.lanes (samples and losses, when set)
// and `trace` (AUX bytes; empty for a capture without AUX trace).
std::shared_ptr<const TimelineOverview> buildTimelineOverview(const TimelineData& data,
                                                              const std::vector<OverviewTraceChunk>& trace,
                                                              size_t buckets = 2048);

}  // namespace auxscope
