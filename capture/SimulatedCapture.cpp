// SPDX-License-Identifier: GPL-3.0-or-later
#include "SimulatedCapture.h"

namespace auxscope {

// The simulator's equivalent of PERF_EVENT_IOC_ENABLE; its state is exact.
struct SimulatedCapture::Control : AuxEventControl {
    explicit Control(SimulatedAuxProducer& p) : producer(p) {}
    Expected<void> enable() override {
        producer.enable();
        return {};
    }
    std::optional<bool> enabled() const override { return producer.enabled(); }
    SimulatedAuxProducer& producer;
};

SimulatedCapture::~SimulatedCapture() {
    if (drain_) {
        drain_->requestStop();
        drain_->join();
    }
    for (auto& p : producers_)
        p->stop();
}

Expected<std::unique_ptr<SimulatedCapture>> SimulatedCapture::create(const SimulatedCaptureOptions& options) {
    if (options.producer.mode != AuxMode::Full)
        return makeError("simulated capture: only full-trace AUX mode is drained so far");
    if (options.cpus == 0) return makeError("simulated capture: no CPUs");
    std::unique_ptr<SimulatedCapture> c(new SimulatedCapture());
    c->options_ = options;
    for (unsigned i = 0; i < options.cpus; ++i) {
        SimulatedAuxConfig cfg = options.producer;
        cfg.cpu = i;
        cfg.id = options.firstId + i;
        auto p = SimulatedAuxProducer::create(cfg);
        if (!p) return makeError("simulated cpu " + std::to_string(i) + ": " + p.error().message);
        c->cpus_.push_back(int(i));
        c->controls_.push_back(std::make_unique<Control>(**p));
        c->ids_.add(cfg.id, EventLayout{kSampleType, PERF_FORMAT_ID, 0, int(i)});

        RingSlot slot;
        slot.cpu = int(i);
        slot.statsIndex = i;
        slot.ownerFd = (*p)->wakeupFd();
        slot.ownerFdIsEventfd = true;
        slot.ring = (*p)->dataRing();
        slot.aux = (*p)->auxRing();
        slot.auxControl = c->controls_.back().get();
        c->rings_.push_back(std::move(slot));
        c->producers_.push_back(std::move(*p));
    }
    c->stats_ = std::make_unique<CaptureStats>(c->cpus_);
    return c;
}

void SimulatedCapture::addSink(RecordSink* sink) {
    consumers_.push_back(sink);
    sinks_.push_back(sink);
    sink->setStopRequest([this] { requestStop(); });
}

perf_event_attr SimulatedCapture::eventAttr() const {
    perf_event_attr a{};
    a.size = sizeof a;
    // An AUX PMU has a dynamic type; a software event keeps perf's tools from
    // looking for a PMU this machine does not have.
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kSampleType;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    a.disabled = 1;
    return a;
}

Expected<void> SimulatedCapture::start() {
    if (drain_) return makeError("simulated capture already started");
    DrainControl ctl;
    ctl.realtime = options_.realtimeDrain;
    ctl.publishHz = options_.publishHz;
    ctl.auxSinks = sinks_;
    if (!sinks_.empty())
        ctl.afterPass = [sinks = sinks_] {
            for (RecordSink* sink : sinks)
                sink->onDrainPassEnd();
        };
    drain_ = std::make_unique<DrainThread>(rings_, ids_, *stats_, std::move(ctl), consumers_);
    return drain_->start();
}

void SimulatedCapture::requestStop() {
    if (drain_) drain_->requestStop();
}

bool SimulatedCapture::finished() const {
    return drain_ && drain_->finished();
}

void SimulatedCapture::wait() {
    if (drain_) drain_->join();
}

std::vector<std::string> SimulatedCapture::messages() const {
    return drain_ ? drain_->messages() : std::vector<std::string>{};
}

}  // namespace auxscope
