// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A capture over simulated CPUs: one SimulatedAuxProducer per CPU stands in for
// an AUX PMU event and its rings, and the real DrainThread drains them (data
// records, AUX bytes, re-enabling the event when its AUX area filled up), with
// the same consumers, sinks and statistics as a CaptureSession. For tests and
// demonstrations on machines without trace hardware.
//
// Each CPU's ring: DataRing::view over the producer's data pages, AuxRing::view
// over its AUX area; its wakeup eventfd stands for the perf fd in the drain
// thread's epoll set. Every record the producer writes carries auxscope's
// sample_id layout (TID, TIME, CPU, IDENTIFIER) with the id `firstId + index`.
//
// The producers are driven by the caller (producer(i).step() before start(), or
// producer(i).start(plan) for a background "hardware" thread); the capture only
// consumes. Stop the producers before destroying this object.
#include <linux/perf_event.h>

#include <memory>
#include <string>
#include <vector>

#include "CaptureStats.h"
#include "DrainThread.h"
#include "RecordParser.h"
#include "RecordSink.h"
#include "Result.h"
#include "SimulatedAuxProducer.h"

namespace auxscope {

struct SimulatedCaptureOptions {
    unsigned cpus = 4;
    // Applied to every producer; `id` and `cpu` are set per CPU.
    SimulatedAuxConfig producer;
    uint64_t firstId = 1000;
    unsigned publishHz = 20;
    bool realtimeDrain = false;
};

class SimulatedCapture {
public:
    // The sample_type of the simulated event (the layout of its sample_id trailers).
    static constexpr uint64_t kSampleType =
        PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

    ~SimulatedCapture();
    SimulatedCapture(const SimulatedCapture&) = delete;
    SimulatedCapture& operator=(const SimulatedCapture&) = delete;

    // Full-trace AUX mode only (the drain thread does not take snapshots yet).
    static Expected<std::unique_ptr<SimulatedCapture>> create(const SimulatedCaptureOptions& options);

    // Before start(). Consumers see every data record; sinks also hear the end of
    // every pass and receive the AUX bytes, and may stop the capture.
    void addConsumer(RecordConsumer* consumer) { consumers_.push_back(consumer); }
    void addSink(RecordSink* sink);

    Expected<void> start();
    void requestStop();  // async-signal-safe
    bool finished() const;
    void wait();

    size_t cpuCount() const { return producers_.size(); }
    const std::vector<int>& cpus() const { return cpus_; }
    SimulatedAuxProducer& producer(size_t index) { return *producers_[index]; }
    const IdTable& ids() const { return ids_; }
    uint64_t eventId(size_t index) const { return options_.firstId + index; }
    // The simulated event's perf_event_attr, as a perf.data writer describes it.
    perf_event_attr eventAttr() const;
    const CaptureStats& stats() const { return *stats_; }
    std::vector<std::string> messages() const;

private:
    SimulatedCapture() = default;
    struct Control;

    SimulatedCaptureOptions options_;
    std::vector<int> cpus_;
    std::vector<std::unique_ptr<SimulatedAuxProducer>> producers_;
    std::vector<std::unique_ptr<Control>> controls_;
    std::vector<RingSlot> rings_;
    IdTable ids_;
    std::unique_ptr<CaptureStats> stats_;
    std::vector<RecordConsumer*> consumers_;
    std::vector<RecordSink*> sinks_;
    std::unique_ptr<DrainThread> drain_;
};

}  // namespace auxscope
