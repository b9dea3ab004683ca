// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/PerfDataWriterCapture.h"

#include <unistd.h>

#include <chrono>

#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/TriggerFeature.h"
#include "record/CaptureAuxtraceInfo.h"

namespace auxscope {

PerfDataWriterCapture::~PerfDataWriterCapture() {
    // A capture abandoned without finish(): stop the writer thread; the file keeps
    // its data-size-0 header (readers recover it by scanning).
    if (queue_ && !finished_) (void)queue_->finish();
}

Expected<CaptureFileLayout> captureFileLayout(const CaptureSession& session, const std::string& what) {
    CaptureFileLayout out;
    const OpenedEventGroup* tracking = nullptr;
    for (auto& g : session.eventGroups()) {
        if (g.instances.empty()) continue;
        PerfDataEventAttr a{g.name, g.attr, {}};
        for (auto& i : g.instances) {
            a.ids.push_back(i.id);
            out.idIndex.push_back({i.id, i.ringIndex, uint64_t(int64_t(i.cpu)), uint64_t(int64_t(i.tid))});
        }
        out.attrs.push_back(std::move(a));
        if (g.tracking) tracking = &g;
    }
    if (!tracking) return makeError(what + ": the capture has no tracking event to attribute records to");
    for (auto& i : tracking->instances)
        out.trackingIdByCpu.try_emplace(i.cpu,
                                        SampleIdSpec{tracking->attr.sample_type, i.id, uint32_t(i.cpu)});
    const auto& first = tracking->instances.front();
    out.fallbackId = {tracking->attr.sample_type, first.id, uint32_t(first.cpu)};
    return out;
}

Expected<void> synthesizeCaptureSideband(const CaptureSession& session, ProcSynth& synth,
                                         std::vector<std::string>& notes, bool* kernelMap,
                                         SidebandPart part) {
    // A simulated or replayed capture does not run on this host's processes:
    // its sideband comes from its source, not from /proc.
    if (session.simulated()) return {};
    const CaptureOptions& co = session.options();
    if (part != SidebandPart::Later && co.target == TargetKind::Command && session.commandPid() > 0)
        // Stopped before its exec: only its name; the exec's COMM and MMAP2 come from the kernel.
        if (auto r = synth.commOnly(session.commandPid()); !r) return r;
    if (part == SidebandPart::Now) return {};
    std::string note;
    auto km = synth.kernelMmap(&note);
    if (!km) return km.error();
    if (kernelMap) *kernelMap = *km;
    if (!note.empty()) notes.push_back(note);
    switch (co.target) {
        case TargetKind::SystemWide:
        case TargetKind::CpuList:
            return synth.allProcesses();
        case TargetKind::Process:
            return synth.process(co.pid, true);
        case TargetKind::Command:
            return {};
    }
    return {};
}

Expected<std::unique_ptr<PerfDataWriterCapture>> PerfDataWriterCapture::open(
    CaptureSession& session, PerfDataWriterCaptureOptions options) {
    std::unique_ptr<PerfDataWriterCapture> c(new PerfDataWriterCapture);
    c->session_ = &session;
    c->options_ = options;
    auto& rep = c->report_;
    rep.path = options.path;
    rep.compressed = options.compress;

    auto layout = captureFileLayout(session, options.path);
    if (!layout) {
        if (options.fd >= 0) close(options.fd);
        return layout.error();
    }
    c->attrs_ = layout->attrs;

    PerfDataWriterOptions wo;
    wo.compress = options.compress;
    wo.adoptFd = options.fd;
    auto writer = PerfDataWriter::create(options.path, c->attrs_, wo);
    if (!writer) return writer.error();
    c->writer_ = std::move(writer.value());
    PerfDataWriter& w = *c->writer_;

    PerfDataWriterSinkConfig sc;
    sc.ids = &session.ids();
    sc.lostIdByCpu.insert(layout->trackingIdByCpu.begin(), layout->trackingIdByCpu.end());
    sc.fallbackLostId = layout->fallbackId;
    c->sinkWriter_ = std::make_unique<PerfDataWriterSink>(w, sc);

    // What perf record writes before the first ring record.
    if (auto r = w.writeIdIndex(layout->idIndex); !r) return r.error();
    if (session.ringCount()) {
        auto tc = w.writeTimeConv(*session.ringMetaPage(0));
        if (!tc) return tc.error();
        rep.timeConvWritten = *tc;
        if (!*tc)
            rep.notes.push_back(
                "the kernel offers no user-space time conversion (cap_user_time_zero): no TIME_CONV");
    }
    // A kernel capture with an AUX event describes it as perf record does.
    if (!c->options_.auxtraceInfo && session.auxPlan()) {
        auto info = captureAuxtraceInfo(session);
        if (!info) return makeError(options.path + ": " + info.error().message);
        c->options_.auxtraceInfo = std::move(info.value());
    }
    if (c->options_.auxtraceInfo)
        if (auto r = w.writeAuxtraceInfo(c->options_.auxtraceInfo->type, c->options_.auxtraceInfo->priv); !r)
            return r.error();
    // A launched command is still stopped before its exec: its name is read now.
    {
        ProcSynth now(sc.fallbackLostId, [&](std::span<const uint8_t> rec) -> Expected<void> {
            c->sinkWriter_->observe(rec);
            return w.writeRecord(rec);
        });
        if (auto r = synthesizeCaptureSideband(session, now, rep.notes, nullptr, SidebandPart::Now); !r)
            return r.error();
        rep.synthesized = now.counts();
    }
    // Everything else from /proc (the kernel map from kallsyms, every running
    // process) takes tens of milliseconds, so it is gathered on the writer thread
    // while the capture already runs: the ring records wait in the queue behind
    // it, and the file still starts with the synthesized records, as perf's does.
    PerfDataWriterCapture* self = c.get();
    auto synthesize = [self, &session]() -> Expected<void> {
        auto& rep = self->report_;
        const auto t0 = std::chrono::steady_clock::now();
        PerfDataWriter& w = *self->writer_;
        ProcSynth synth(self->fallbackId_, [self, &w](std::span<const uint8_t> rec) -> Expected<void> {
            self->sinkWriter_->observe(rec);
            return w.writeRecord(rec);
        });
        if (auto r = synthesizeCaptureSideband(session, synth, rep.notes, &rep.kernelMapSynthesized,
                                               SidebandPart::Later);
            !r)
            return makeError(self->options_.path + ": /proc synthesis: " + r.error().message);
        const ProcSynthCounts later = synth.counts();
        rep.synthesized.processes += later.processes, rep.synthesized.threads += later.threads;
        rep.synthesized.comm += later.comm, rep.synthesized.fork += later.fork;
        rep.synthesized.mmap += later.mmap, rep.synthesized.mmap2 += later.mmap2;
        rep.synthesisSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        // Everything so far is a round of its own.
        if (auto r = w.writeFinishedRound(); !r) return r;
        return w.flush();
    };
    c->fallbackId_ = sc.fallbackLostId;
    if (auto r = w.flush(); !r) return r.error();

    std::vector<int> cpus;
    for (size_t i = 0; i < session.ringCount(); ++i)
        cpus.push_back(session.ringCpu(i));
    QueuedSinkOptions qo;
    qo.queueBytes = options.queueBytes;
    qo.budgetBytes = options.writerBudget ? *options.writerBudget : defaultWriterBudget(options.queueBytes);
    qo.name = "perf.data writer";
    qo.prelude = synthesize;
    c->queue_ = std::make_unique<QueuedSink>(cpus, *c->sinkWriter_, qo);
    c->queue_->start();
    session.addSink(c->queue_.get());
    return c;
}

Expected<void> PerfDataWriterCapture::finish() {
    if (finished_) return makeError(options_.path + ": already finished");
    finished_ = true;
    auto& rep = report_;
    Expected<void> result = queue_->finish();
    PerfDataWriter& w = *writer_;

    std::vector<std::string> notes;
    for (auto& [bit, body] : FeatureWriter::hostFeatures(options_.cmdline, options_.version, &notes))
        w.setFeature(bit, std::move(body));
    w.setFeature(perfdata::kFeatEventDesc, FeatureWriter::eventDesc(attrs_));
    if (sinkWriter_->samples())
        w.setFeature(perfdata::kFeatSampleTime, FeatureWriter::sampleTime(sinkWriter_->firstSampleTime(),
                                                                          sinkWriter_->lastSampleTime()));
    // auxscope's own section: each CPU's ring fill and loss over time.
    if (!session_->statsHistory().empty())
        w.setFeature(kFeatAuxscopeCaptureStats, encodeCaptureStatsFeature(session_->statsHistory()));
    // And the snapshot triggers' firings.
    if (const TriggerEngine* te = session_->triggerEngine()) {
        TriggerFileData td{te->report(), te->settings().postNs, te->settings().max, te->settings().gapNs};
        w.setFeature(kFeatAuxscopeTriggers, encodeTriggerFeature(td));
    }
    auto ids = sinkWriter_->hitBuildIds(&notes);
    rep.buildIds = ids.size();
    if (!ids.empty()) w.setFeature(perfdata::kFeatBuildId, FeatureWriter::buildIds(ids));
    std::vector<std::string> tracepoints;
    for (auto& a : attrs_)
        if (a.attr.type == PERF_TYPE_TRACEPOINT) {
            // "system:event" (drop any ":modifiers")
            auto first = a.name.find(':');
            auto second = first == std::string::npos ? first : a.name.find(':', first + 1);
            tracepoints.push_back(a.name.substr(0, second));
        }
    if (!tracepoints.empty()) {
        auto td = FeatureWriter::tracingData(tracepoints);
        if (td)
            w.setFeature(perfdata::kFeatTracingData, std::move(td.value()));
        else
            notes.push_back("no tracing data feature: " + td.error().message);
    }
    for (auto& n : notes)
        rep.notes.push_back(n);

    auto fr = w.finish();
    if (result && !fr) result = fr;
    sinkWriter_->noteWriterState();  // what the final flush could not write, if it failed

    auto st = queue_->stats();
    rep.fileBytes = w.fileSize();
    rep.dataBytes = w.dataSize();
    rep.records = w.stats().recordsOnDisk;
    rep.streamBytes = w.stats().streamBytes;
    rep.compressedBytes = w.stats().compressedBytes;
    rep.samples = sinkWriter_->samples();
    rep.droppedRecords = st.droppedRecords;
    rep.queueFullRecords = st.queueFullRecords;
    rep.writerStoppedRecords = st.writerStoppedRecords;
    rep.lostRecordsWritten = sinkWriter_->lostRecordsWritten();
    rep.recordsHeldBack = st.recordsHeldBack;
    rep.auxHeldBack = st.auxHeldBack;
    rep.auxBytes = sinkWriter_->auxtraceBytesWritten();
    rep.queueCapacity = st.queueCapacity;
    rep.maxQueuedBytes = st.maxQueuedBytes;
    rep.maxBacklogBytes = st.maxBacklogBytes;
    rep.backlogBudget = st.backlogBudget;
    rep.maxSpilledBytes = st.maxSpilledBytes;
    rep.maxSpillMemory = st.maxSpillHeldBytes;
    rep.spillRuns = st.spillRuns;
    rep.auxCopiedBytes = st.auxCopiedBytes;
    rep.heldBackAtBudget = st.heldBackAtBudget;
    return result;
}

PerfDataWriterCaptureReport PerfDataWriterCapture::report() const {
    return report_;
}

}  // namespace auxscope
