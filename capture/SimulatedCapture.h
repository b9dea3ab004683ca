// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A capture over simulated CPUs, for tests and benchmarks: a thin handle on
// CaptureSession::openSimulated(), so that the drain thread, sinks, statistics
// and file writer exercised are exactly the ones a kernel capture uses.
//
// Each CPU's ring: DataRing::view over the producer's data pages, AuxRing::view
// over its AUX area; its wakeup eventfd stands for the perf fd in the drain
// thread's epoll set. Every record the producer writes carries auxscope's
// sample_id layout (TID, TIME, CPU, IDENTIFIER) with the id `firstId + index`.
//
// The producers are driven by the caller (producer(i).step() before start(), or
// producer(i).start(plan) for a background "hardware" thread); the capture only
// consumes.
#include <linux/perf_event.h>

#include <memory>
#include <string>
#include <vector>

#include "CaptureSession.h"

namespace auxscope {

class SimulatedCapture {
public:
    static constexpr uint64_t kSampleType = CaptureSession::kSimulatedSampleType;

    static Expected<std::unique_ptr<SimulatedCapture>> create(const SimulatedCaptureOptions& options);

    void addConsumer(RecordConsumer* consumer) { session_->addConsumer(consumer); }
    void addSink(RecordSink* sink) { session_->addSink(sink); }
    Expected<void> start() { return session_->start(); }
    void requestStop() { session_->requestStop(); }
    bool finished() const { return session_->finished(); }
    void wait() { session_->wait(); }

    size_t cpuCount() const { return session_->simulatedCount(); }
    const std::vector<int>& cpus() const { return session_->cpus(); }
    SimulatedAuxProducer& producer(size_t index) { return session_->simulatedProducer(index); }
    const IdTable& ids() const { return session_->ids(); }
    uint64_t eventId(size_t index) const { return firstId_ + index; }
    perf_event_attr eventAttr() const { return session_->eventGroups().front().attr; }
    const CaptureStats& stats() const { return session_->stats(); }
    std::vector<std::string> messages() const { return session_->summary().messages; }
    CaptureSession& session() { return *session_; }

private:
    SimulatedCapture() = default;
    std::unique_ptr<CaptureSession> session_;
    uint64_t firstId_ = 0;
};

}  // namespace auxscope
