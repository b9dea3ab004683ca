// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/IntelPtSpans.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "perfdata/AuxtraceInfo.h"

namespace auxscope {

uint64_t IntelPtSpans::spanCount() const {
    uint64_t n = 0;
    for (const auto& [tid, store] : result.threads)
        n += store.size();
    return n;
}

ExportSpans IntelPtSpans::exportView() const {
    ExportSpans view;
    view.threads = &result.threads;
    view.functions = session ? &session->functions() : nullptr;
    if (session) {
        const Sideband* sideband = &session->sideband();
        view.pidOf = [sideband](int32_t tid) { return sideband->pidOf(tid); };
    }
    return view;
}

bool hasIntelPtData(const PerfDataReader& file) {
    const auto& infos = file.summary().auxtraceInfo;
    const bool pt = std::any_of(infos.begin(), infos.end(),
                                [](const PerfAuxtraceInfo& i) { return i.type == auxtrace::kTypeIntelPt; });
    return pt && auxTraceBytes(file) > 0;
}

uint64_t auxTraceBytes(const PerfDataReader& file) {
    uint64_t bytes = 0;
    for (const auto& [cpu, stats] : file.summary().cpus)
        bytes += stats.auxtraceBytes;
    return bytes;
}

Expected<IntelPtSpans> decodeIntelPtSpans(const PerfDataReader& file, const PtDecodeWindow& window,
                                          const PtSessionOptions& options, unsigned threads,
                                          const PtDecodeProgress& progress) {
    auto session = PtSession::open(file, options);
    if (!session) return session.error();
    IntelPtSpans out;
    out.session = std::move(*session);
    PtSession& s = *out.session;
    if (progress) {
        // The session decodes what a window needs and caches it: decoding the
        // window in time-ordered batches first gives progress to report, and
        // the final call below then only merges cached segments.
        std::vector<const PtSession::Segment*> chosen;
        for (const PtSession::Segment& seg : s.segments()) {
            if (window.cpu && seg.cpu != *window.cpu) continue;
            if (seg.endTime < window.begin || seg.startTime > window.end) continue;
            chosen.push_back(&seg);
        }
        std::sort(chosen.begin(), chosen.end(),
                  [](const auto* a, const auto* b) { return a->startTime < b->startTime; });
        const size_t total = chosen.size();
        const unsigned workers = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
        const size_t batch = std::max<size_t>(2 * workers, total / 20);
        if (!progress(0, total)) return makeError(file.path() + ": decode cancelled");
        for (size_t first = 0; total > batch && first < total; first += batch) {
            const size_t last = std::min(total, first + batch);
            PtDecodeWindow part = window;
            part.begin = std::max(window.begin, chosen[first]->startTime);
            uint64_t end = 0;
            for (size_t i = first; i < last; ++i)
                end = std::max(end, chosen[i]->endTime);
            part.end = std::min(window.end, end);
            s.decodeSpans(part, threads);
            if (!progress(last, total)) return makeError(file.path() + ": decode cancelled");
        }
        out.result = s.decodeSpans(window, threads);
        progress(total, total);
        return out;
    }
    out.result = s.decodeSpans(window, threads);
    return out;
}

PtTimeExtent ptRecordingExtent(const PtSession& session) {
    const TraceModel& model = session.sideband().model();
    uint64_t begin = model.firstTime(), end = model.lastTime();
    for (const PtSession::Segment& s : session.segments()) {
        if (s.startTime && (!begin || s.startTime < begin)) begin = s.startTime;
        end = std::max(end, s.endTime);
    }
    return {begin, std::max(begin, end)};
}

PtDecodeWindow ptFirstFrameWindow(const PtSession& session) {
    uint64_t begin = UINT64_MAX, end = 0;
    for (const PtSession::Segment& s : session.segments()) {
        if (s.startTime) begin = std::min(begin, s.startTime);
        end = std::max(end, s.endTime);
    }
    PtDecodeWindow window;
    if (begin == UINT64_MAX) {
        const PtTimeExtent all = ptRecordingExtent(session);
        begin = all.begin, end = all.end;
    }
    window.begin = begin;
    window.end = begin + (end > begin ? std::max<uint64_t>((end - begin) / 1000, 1) : 1);
    return window;
}

uint64_t ptWindowTraceBytes(const PtSession& session, const PtDecodeWindow& window) {
    // As PtSession selects: the segments of the window's CPUs whose time overlaps it.
    uint64_t bytes = 0;
    for (const PtSession::Segment& s : session.segments()) {
        if (window.cpu && s.cpu != *window.cpu) continue;
        if (s.endTime < window.begin || s.startTime > window.end) continue;
        bytes += s.end - s.begin;
    }
    return bytes;
}

TimelineData ptTimelineBase(const std::shared_ptr<const PtSession>& session) {
    TimelineData data;
    setTimelineCpus(data, session->sideband());
    const PtTimeExtent extent = ptRecordingExtent(*session);
    data.begin = extent.begin;
    data.end = extent.end;
    data.functions = std::shared_ptr<const FunctionTable>(session, &session->functions());
    for (const std::string& note : session->trace().notes())
        data.notes.push_back(note);
    return data;
}

std::shared_ptr<TimelineData> makePtTimeline(const TimelineData& base, const PtSession& session,
                                             PtSession::SpanResult&& result, uint64_t decodedBegin,
                                             uint64_t decodedEnd, const std::vector<int32_t>& alsoTids) {
    auto data = std::make_shared<TimelineData>(base);
    data->threads.clear();
    addTimelineThreads(*data, std::move(result.threads), session.sideband(), alsoTids);
    data->decodedBegin = decodedBegin;
    data->decodedEnd = decodedEnd;
    return data;
}

}  // namespace auxscope
