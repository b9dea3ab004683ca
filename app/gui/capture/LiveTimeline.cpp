// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/LiveTimeline.h"

#include <QFile>
#include <QLabel>

#include <chrono>
#include <cstdio>
#include <mutex>

#include "CaptureSession.h"
#include "Tracefs.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "images/LiveSymbols.h"
#include "perfdata/TracingData.h"
#include "record/ProcSynth.h"
#include "sideband/LiveSideband.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"

namespace auxscope {

// What LiveSideband's worker leaves for the GUI's timer: the newest live
// timeline and the figures behind it. The lock is held only to swap these (by
// the worker, and by the timer to read them): the GUI never waits on the drain
// thread or on a build.
struct LiveTimelineFeed {
    std::mutex mutex;
    std::shared_ptr<const TimelineData> data;
    LiveSidebandStats lanes;
    std::optional<LiveDecodeStats> decode;
    size_t cpus = 0, processes = 0, threads = 0, samples = 0, losses = 0;
    double buildSeconds = 0;   // the newest timeline's build (lanes, and joining the decoded spans)
    LiveSymbolsStats symbols;  // the samples' functions (code files loaded, a load running)
    bool ready = false;
};

LiveTimeline::LiveTimeline(QObject* parent) : QObject(parent) {
    status_ = new QLabel(
        "While capturing: which thread ran on each CPU, the threads' runs and samples, and every loss the "
        "kernel reports; Intel PT, CoreSight and Arm SPE captures are also decoded here as they run.");
    status_->setObjectName("liveStatus");
    status_->setWordWrap(true);
    state_ = new TimelineState(this);
    view_ = new TimelineView(state_);
    view_->setObjectName("liveTimeline");
    view_->setMinimumHeight(160);
    // A new live timeline comes every tick: summarizing a few hundred thousand
    // spans on the GUI thread would stall the charts (bench_soak --replay).
    view_->setAsyncSummaries(true, 100'000);
}

LiveTimeline::~LiveTimeline() {
    if (decoder_) decoder_->stop();
    if (lanes_) lanes_->stop();  // before the session it reads goes
}

void LiveTimeline::attach(
    CaptureSession& session, bool decode,
    const std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>& auxtraceInfo) {
    // Decode while capturing: Intel PT, CoreSight and Arm SPE (the decoder says why not otherwise).
    decoder_.reset();
    shown_.reset();
    decodeNote_.clear();
    if (decode && (session.auxPlan() || session.simulated())) {
        LiveDecoderOptions lo;
        lo.auxtraceInfo = auxtraceInfo;
        auto live = LiveTraceDecoder::attach(session, lo);
        if (live)
            decoder_ = std::move(live.value());
        else
            decodeNote_ = "Not decoded while capturing: " + QString::fromStdString(live.error().message);
    } else if (session.auxPlan() || session.simulated()) {
        decodeNote_ = "Decoding while capturing is off.";
    }
    // The live lanes of every capture (after the decoder: they join its spans).
    attachLanes(session);
    status_->setText(decoder_ ? "Decoding the newest trace of each CPU while capturing…"
                              : "Building the live timeline…");
    view_->setData(nullptr);
    view_->setFollowLatest(true);
}

void LiveTimeline::abort() {
    if (decoder_) decoder_->stop();
    decoder_.reset();
    if (lanes_) lanes_->stop();
    lanes_.reset();
}

ImageOptions LiveTimeline::liveImageOptions(bool simulated) const {
    ImageOptions o;
    if (imageOptions_) {
        // The person's folders for code, debug files and JIT maps; the kernel is this one.
        const ImageOptions d = imageOptions_();
        o.symfs = d.symfs;
        o.binaryDirs = d.binaryDirs;
        o.debugDirs = d.debugDirs;
        o.jitDumps = d.jitDumps;
        o.perfMaps = d.perfMaps;
    }
    o.debuginfod = false;  // never a server while capturing (LiveSymbols loads on its own thread, but
                           // a capture's symbols must not wait on the network)
    o.debuginfodUrls.clear();
    o.runningKernel = false;
    if (!simulated) o.kallsyms = "/proc/kallsyms";
    return o;
}

void LiveTimeline::captureEnded() {
    if (ended_) ended_->store(true, std::memory_order_release);
}

void LiveTimeline::tick() {
    if (feed_) show(false);
}

void LiveTimeline::finish() {
    if (feed_) {
        show(true);
        view_->setFollowLatest(false);
    }
    decoder_.reset();
    lanes_.reset();
    feed_.reset();
}

void LiveTimeline::helperCapture() {
    decoder_.reset();
    lanes_.reset();
    feed_.reset();
    status_->setText(
        "No live timeline: this capture runs in the privileged capture helper (its records stay in that "
        "process); the file opens on a timeline when it is done.");
}

void LiveTimeline::attachLanes(CaptureSession& session) {
    auto feed = std::make_shared<LiveTimelineFeed>();
    std::vector<std::string> events;
    for (const EventDesc& e : session.events())
        events.push_back(e.name);
    LiveSidebandOptions options;
    // sched:sched_switch samples are switches, as in a file (TraceModel::readHeaders):
    // their fields where tracefs says (else the kernel's 64-bit layout).
    std::vector<std::pair<int, SchedSwitchLayout>> switchEvents;
    for (size_t i = 0; i < session.events().size(); ++i) {
        const EventDesc& e = session.events()[i];
        if (!e.isTracepoint || e.name != "sched:sched_switch") continue;
        SchedSwitchLayout l;
        if (auto root = Tracefs::locate()) {
            QFile f(QString::fromStdString((*root / "events/sched/sched_switch/format").string()));
            if (f.open(QIODevice::ReadOnly)) {
                const QByteArray text = f.readAll();
                // The same reading of the format as a file's tracing data gets.
                if (auto fromFormat = schedSwitchLayout(
                        parseTraceEventFormat(std::string_view(text.data(), text.size()), "sched")))
                    l = *fromFormat;
            }
        }
        switchEvents.emplace_back(int(i), l);
    }
    if (!switchEvents.empty())
        options.configure = [switchEvents](TraceModel& model) {
            for (const auto& [index, layout] : switchEvents)
                model.setSchedSwitchEvent(index, layout);
        };
    // Names of what already ran when the capture started, from /proc as the file
    // writer synthesizes them (nothing for a replay: its source has them).
    if (!session.simulated())
        if (auto layout = captureFileLayout(session, "live timeline"))
            // (The parameter is not called `emit`: Qt defines that name away.)
            options.preamble = [&session, id = layout->fallbackId](const auto& hand) {
                ProcSynth synth(id, [&](std::span<const uint8_t> rec) -> Expected<void> {
                    hand(rec);
                    return {};
                });
                std::vector<std::string> notes;
                (void)synthesizeCaptureSideband(session, synth, notes);  // what it missed: tids shown
            };
    // On LiveSideband's worker: the lanes a file's timeline gets (Sideband ->
    // buildSidebandLanes -> TimelineData), joined to the newest decoded spans.
    // Decoded spans are copied into each timeline: with many of them, a new
    // timeline is made only when the decoder has new spans or once a second.
    struct Joined {
        std::shared_ptr<const TimelineData> decoded;
        std::chrono::steady_clock::time_point at;
        bool pendingLanes = false;  // the sideband changed since the timeline shown
    };
    auto joined = std::make_shared<Joined>();
    // The samples' functions: the code files the live sideband's mappings name,
    // loaded on a thread of their own and kept across ticks (LiveSymbols). The running
    // kernel's names come from /proc/kallsyms (it is the kernel that records; its
    // code is not needed here, so /proc/kcore is not copied); a replay's
    // recording is of another boot: no kernel names for it.
    ImageOptions imageOptions = liveImageOptions(session.simulated());
    auto symbols = std::make_shared<LiveSymbols>(imageOptions);
    auto ended = ended_ = std::make_shared<std::atomic<bool>>(false);
    auto publish = [feed, joined, symbols, ended, decoder = decoder_, events, window = options.windowSeconds](
                       std::shared_ptr<const Sideband> sideband, bool changed,
                       const LiveSidebandStats& stats) {
        using Clock = std::chrono::steady_clock;
        const auto t0 = Clock::now();
        std::shared_ptr<const TimelineData> decoded;
        std::optional<LiveDecodeStats> decodeStats;
        if (decoder) {
            decoded = decoder->latest();
            decodeStats = decoder->stats();
        }
        size_t spans = 0;
        if (decoded)
            for (const auto& t : decoded->threads)
                spans += t.spans.size();
        joined->pendingLanes |= changed;
        const bool newSpans = decoded && decoded != joined->decoded;
        // The capture ended: its last timeline stays on the page, with every sample named.
        const bool last = ended->load(std::memory_order_acquire);
        const bool due = (joined->pendingLanes &&
                          (!decoded || spans < 100'000 || t0 - joined->at >= std::chrono::seconds(1))) ||
                         (last && sideband && !symbols->complete(stats.identity));
        if (!newSpans && !due) {
            std::lock_guard lock(feed->mutex);
            feed->lanes = stats;
            feed->decode = decodeStats;
            return;
        }
        joined->pendingLanes = false;
        auto data = std::make_shared<TimelineData>();
        std::shared_ptr<const SidebandLanes> lanes;
        if (sideband) {
            setTimelineCpus(*data, *sideband);
            SidebandLanesOptions lo;
            lo.events = events;
            // Samples named through LiveSymbols (its loads run on a thread of their own).
            lanes = symbols->lanes(sideband, stats.identity, std::move(lo), last);
        }
        uint64_t begin = stats.windowBegin, end = stats.windowEnd;
        if (decoded) {
            auto withSpans = std::make_shared<TimelineData>(*decoded);
            if (sideband) withSpans->cpus = std::move(data->cpus);  // the newer switch timeline
            for (auto& [tid, name] : data->threadNames)
                withSpans->threadNames.try_emplace(tid, std::move(name));
            if (decoded->decodedEnd > decoded->decodedBegin) {
                begin = begin ? std::min(begin, decoded->decodedBegin) : decoded->decodedBegin;
                end = std::max(end, decoded->decodedEnd);
            }
            data = std::move(withSpans);
            joined->decoded = decoded;
            joined->at = t0;
        }
        if (lanes) setTimelineLanes(*data, lanes);
        if (begin || end) data->begin = begin, data->end = std::max(begin, end);
        char note[320];
        const double shown =
            stats.windowEnd > stats.windowBegin ? double(stats.windowEnd - stats.windowBegin) / 1e9 : 0;
        std::snprintf(
            note, sizeof note,
            "live: the newest %.1f s of sideband (%llu records; at most %.0f s, %llu records to keep "
            "10 updates a second), %llu older records left the view (the capture file keeps them)",
            std::min(shown, window), (unsigned long long)stats.kept, window,
            (unsigned long long)stats.recordBound, (unsigned long long)stats.agedOut);
        data->notes.push_back(note);
        if (stats.droppedBehind)
            data->notes.push_back("live: " + std::to_string(stats.droppedBehind) +
                                  " records not shown: the live timeline fell behind (the capture file "
                                  "keeps them)");
        size_t losses = 0;
        if (lanes)
            for (const auto& [cpu, v] : lanes->losses)
                losses += v.size();
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        std::lock_guard lock(feed->mutex);
        feed->data = std::move(data);
        feed->lanes = stats;
        feed->decode = decodeStats;
        feed->cpus = feed->data->cpus.size();
        feed->processes = lanes ? lanes->processes.size() : 0;
        feed->threads = lanes ? lanes->threads.size() : 0;
        feed->samples = lanes ? lanes->sampleCount : 0;
        feed->losses = losses;
        feed->buildSeconds = took;
        feed->symbols = symbols->stats();
        feed->ready = true;
    };
    feed_ = feed;
    lanes_ = LiveSideband::attach(session, std::move(publish), std::move(options));
}

void LiveTimeline::show(bool final) {
    if (!feed_) return;
    std::shared_ptr<const TimelineData> data;
    LiveSidebandStats lanes;
    std::optional<LiveDecodeStats> decode;
    size_t cpus, processes, threads, samples, losses;
    double build;
    LiveSymbolsStats symbols;
    bool ready;
    {
        std::lock_guard lock(feed_->mutex);
        data = feed_->data;
        lanes = feed_->lanes;
        decode = feed_->decode;
        cpus = feed_->cpus, processes = feed_->processes, threads = feed_->threads;
        samples = feed_->samples, losses = feed_->losses;
        build = feed_->buildSeconds;
        symbols = feed_->symbols;
        ready = feed_->ready;
    }
    if (data && data != shown_) {
        shown_ = data;
        view_->setData(data);
    }
    QString text;
    if (ready) {
        const double seconds =
            lanes.windowEnd > lanes.windowBegin ? double(lanes.windowEnd - lanes.windowBegin) / 1e9 : 0;
        text = QString(
                   "%1 %2 CPUs, %3 processes, %4 threads, %5 samples, %6 loss markers over the newest %7 s "
                   "(%8 records; built in %9 ms)")
                   .arg(final ? "Captured:" : "Live:")
                   .arg(cpus)
                   .arg(processes)
                   .arg(threads)
                   .arg(samples)
                   .arg(losses)
                   .arg(seconds, 0, 'f', 1)
                   .arg(lanes.kept)
                   .arg((build + lanes.lastTickSeconds) * 1e3, 0, 'f', 0);
        if (symbols.loads)
            text += QString("; samples in %1 functions, from %2 code files (%3 not found)")
                        .arg(symbols.functions)
                        .arg(symbols.files)
                        .arg(symbols.missing);
        else if (symbols.loading)
            text += "; loading the code files the capture maps, to name the samples' functions…";
        if (lanes.mappingsDropped)
            text += QString("; %1 mappings over the live budget (their samples show addresses)")
                        .arg(lanes.mappingsDropped);
        if (lanes.agedOut)
            text += QString("; %1 older records left the live view (the capture file keeps them)")
                        .arg(lanes.agedOut);
        if (lanes.droppedBehind)
            text += QString("; %1 records not shown, the live timeline fell behind (the file keeps them)")
                        .arg(lanes.droppedBehind);
        if (lanes.identityDropped)
            text += QString("; %1 COMM/FORK/EXIT records over the live budget (names may be missing)")
                        .arg(lanes.identityDropped);
    } else {
        text = final ? "The capture ended before the live timeline had any records."
                     : "Building the live timeline…";
    }
    if (decode) {
        const LiveDecodeStats& st = *decode;
        if (st.spe)
            text +=
                QString(
                    "\n%1 %2 of %3 MB of Arm SPE decoded (%4 MB skipped, %5 MB waiting): %6 records: %7 "
                    "loads, %8 stores, %9 branches, %10 other; mean total latency %11 cycles; %12 bytes "
                    "were no packet; last decode %13 ms")
                    .arg(final ? "Decoded while capturing:" : "Decoding while capturing:")
                    .arg(double(st.decodedBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.auxBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.skippedBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.pendingBytes) / 1e6, 0, 'f', 1)
                    .arg(st.speRecords)
                    .arg(st.speLoads)
                    .arg(st.speStores)
                    .arg(st.speBranches)
                    .arg(st.speOther)
                    .arg(st.speWithLatency ? double(st.speLatencyCycles) / double(st.speWithLatency) : 0.0, 0,
                         'f', 1)
                    .arg(st.speGapBytes)
                    .arg(st.lastTickSeconds * 1e3, 0, 'f', 0);
        else
            text +=
                QString(
                    "\n%1 %2 of %3 MB of trace decoded (%4 MB skipped: over the rate bound, before a sync "
                    "point, or overrun; %10 MB waiting), %5 M instructions, "
                    "%6 spans shown, %7 gaps, %8 decode errors; last decode %9 ms")
                    .arg(final ? "Decoded while capturing:" : "Decoding while capturing:")
                    .arg(double(st.decodedBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.auxBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.skippedBytes) / 1e6, 0, 'f', 1)
                    .arg(double(st.instructions) / 1e6, 0, 'f', 1)
                    .arg(st.spans)
                    .arg(st.gaps)
                    .arg(st.decodeErrors)
                    .arg(st.lastTickSeconds * 1e3, 0, 'f', 0)
                    .arg(double(st.pendingBytes) / 1e6, 0, 'f', 1);
        if (!st.lastError.empty()) text += "\nLast decode failed: " + QString::fromStdString(st.lastError);
        if (st.sidebandDropped)
            text += QString(
                        "\n%1 sideband records over the live decoder's budget were not kept (images may be "
                        "missing in the live view; the capture file has them)")
                        .arg(st.sidebandDropped);
        if (final) text += "\nOpen the capture file for the decode of every byte.";
    } else if (!decodeNote_.isEmpty()) {
        text += "\n" + decodeNote_;
    }
    status_->setText(text);
}

}  // namespace auxscope
