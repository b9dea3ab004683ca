// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/AuxTraceDecode.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "auxtrace/EtmAuxTrace.h"
#include "auxtrace/PtAuxTrace.h"
#include "auxtrace/SpeAuxTrace.h"
#include "perfdata/AuxtraceInfo.h"

namespace auxscope {

AuxTraceKind auxTraceKind(const PerfDataReader& file) {
    const auto& infos = file.summary().auxtraceInfo;
    if (infos.empty()) return AuxTraceKind::None;
    switch (infos.front().type) {
        case auxtrace::kTypeIntelPt:
            return AuxTraceKind::IntelPt;
        case auxtrace::kTypeCsEtm:
            return AuxTraceKind::CoreSight;
        case auxtrace::kTypeArmSpe:
            return AuxTraceKind::ArmSpe;
        default:
            return AuxTraceKind::Other;
    }
}

const char* auxTraceKindName(AuxTraceKind kind) {
    switch (kind) {
        case AuxTraceKind::None:
            return "no AUX trace";
        case AuxTraceKind::IntelPt:
            return "Intel PT";
        case AuxTraceKind::CoreSight:
            return "CoreSight ETM";
        case AuxTraceKind::ArmSpe:
            return "Arm SPE";
        case AuxTraceKind::Other:
            return "AUX trace";
    }
    return "AUX trace";
}

bool hasDecodableAuxTrace(const PerfDataReader& file) {
    const auto& infos = file.summary().auxtraceInfo;
    const bool decodable = std::any_of(infos.begin(), infos.end(), [](const PerfAuxtraceInfo& i) {
        return i.type == auxtrace::kTypeIntelPt || i.type == auxtrace::kTypeCsEtm ||
               i.type == auxtrace::kTypeArmSpe;
    });
    return decodable && auxTraceBytes(file) > 0;
}

uint64_t auxTraceBytes(const PerfDataReader& file) {
    uint64_t bytes = 0;
    for (const auto& [cpu, stats] : file.summary().cpus)
        bytes += stats.auxtraceBytes;
    return bytes;
}

Expected<std::unique_ptr<AuxTraceSession>> AuxTraceSession::open(const PerfDataReader& file,
                                                                 const AuxTraceOptions& options) {
    return open(file, options, nullptr);
}

Expected<std::unique_ptr<AuxTraceSession>> AuxTraceSession::open(const PerfDataReader& file,
                                                                 const AuxTraceOptions& options,
                                                                 std::unique_ptr<AuxTraceSession>* carry) {
    switch (auxTraceKind(file)) {
        case AuxTraceKind::IntelPt:
            return PtAuxTraceSession::open(file, options, carry);
        case AuxTraceKind::CoreSight:
            return EtmAuxTraceSession::open(file, options, carry);
        case AuxTraceKind::ArmSpe:
            return SpeAuxTraceSession::open(file, options, carry);
        default:
            // PtSession::open says what the file lacks ("no Intel PT AUXTRACE_INFO record").
            return PtAuxTraceSession::open(file, options);
    }
}

int AuxTraceSession::listRanges(std::optional<int>, std::ostream&, std::ostream& err) {
    err << "auxscope decode: --format ranges lists CoreSight's executed instruction ranges; "
        << auxTraceKindName(kind()) << " decodes to blocks (use --format insn)\n";
    return 1;
}

uint64_t AuxTraceSpans::spanCount() const {
    uint64_t n = 0;
    for (const auto& [tid, store] : result.threads)
        n += store.size();
    return n;
}

ExportSpans AuxTraceSpans::exportView() const {
    ExportSpans view;
    view.threads = &result.threads;
    view.functions = session ? &session->functions() : nullptr;
    if (session) {
        const Sideband* sideband = &session->sideband();
        view.pidOf = [sideband](int32_t tid) { return sideband->pidOf(tid); };
    }
    return view;
}

Expected<AuxTraceSpans> decodeAuxTraceSpans(const PerfDataReader& file, const DecodeWindow& window,
                                            const AuxTraceOptions& options, unsigned threads,
                                            const DecodeProgress& progress) {
    auto session = AuxTraceSession::open(file, options);
    if (!session) return session.error();
    AuxTraceSpans out;
    out.session = std::move(*session);
    AuxTraceSession& s = *out.session;
    if (progress) {
        // The session decodes what a window needs and caches it: decoding the
        // window in batches first gives progress to report, and the final call
        // below then only merges cached segments.
        size_t total = 0;
        if (!decodeInBatches(s, window, threads, [&](size_t done, size_t all) {
                total = all;
                return progress(done, all);
            }))
            return makeError(file.path() + ": decode cancelled");
        out.result = s.decodeSpans(window, threads);
        progress(total, total);
        return out;
    }
    out.result = s.decodeSpans(window, threads);
    return out;
}

bool decodeInBatches(AuxTraceSession& session, const DecodeWindow& window, unsigned threads,
                     const DecodeProgress& progress) {
    std::vector<AuxTraceSession::Segment> chosen;
    for (const AuxTraceSession::Segment& seg : session.segments()) {
        if (window.cpu && seg.cpu != *window.cpu) continue;
        if (seg.endTime < window.begin || seg.startTime > window.end) continue;
        chosen.push_back(seg);
    }
    std::sort(chosen.begin(), chosen.end(),
              [](const auto& a, const auto& b) { return a.startTime < b.startTime; });
    const size_t total = chosen.size();
    const unsigned workers = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    const size_t batch = std::max<size_t>(2 * workers, total / 20);
    if (!progress(0, total)) return false;
    for (size_t first = 0; total > batch && first < total; first += batch) {
        const size_t last = std::min(total, first + batch);
        DecodeWindow part = window;
        part.begin = std::max(window.begin, chosen[first].startTime);
        uint64_t end = 0;
        for (size_t i = first; i < last; ++i)
            end = std::max(end, chosen[i].endTime);
        part.end = std::min(window.end, end);
        session.decodeSpans(part, threads);
        if (!progress(last, total)) return false;
    }
    return true;
}

TimeExtent recordingExtent(const AuxTraceSession& session) {
    const TraceModel& model = session.sideband().model();
    uint64_t begin = model.firstTime(), end = model.lastTime();
    for (const AuxTraceSession::Segment& s : session.segments()) {
        if (s.startTime && (!begin || s.startTime < begin)) begin = s.startTime;
        end = std::max(end, s.endTime);
    }
    return {begin, std::max(begin, end)};
}

DecodeWindow firstFrameWindow(const AuxTraceSession& session) {
    uint64_t begin = UINT64_MAX, end = 0;
    for (const AuxTraceSession::Segment& s : session.segments()) {
        if (s.startTime) begin = std::min(begin, s.startTime);
        end = std::max(end, s.endTime);
    }
    DecodeWindow window;
    if (begin == UINT64_MAX) {
        const TimeExtent all = recordingExtent(session);
        begin = all.begin, end = all.end;
    }
    window.begin = begin;
    window.end = begin + (end > begin ? std::max<uint64_t>((end - begin) / 1000, 1) : 1);
    return window;
}

uint64_t windowTraceBytes(const AuxTraceSession& session, const DecodeWindow& window) {
    // As the session selects: the segments of the window's CPUs whose time overlaps it.
    uint64_t bytes = 0;
    for (const AuxTraceSession::Segment& s : session.segments()) {
        if (window.cpu && s.cpu != *window.cpu) continue;
        if (s.endTime < window.begin || s.startTime > window.end) continue;
        bytes += s.bytes;
    }
    return bytes;
}

TimelineData timelineBase(const std::shared_ptr<const AuxTraceSession>& session) {
    TimelineData data;
    setTimelineCpus(data, session->sideband());
    const TimeExtent extent = recordingExtent(*session);
    data.begin = extent.begin;
    data.end = extent.end;
    data.functions = std::shared_ptr<const FunctionTable>(session, &session->functions());
    for (const std::string& note : session->traceNotes())
        data.notes.push_back(note);
    return data;
}

std::shared_ptr<TimelineData> makeTimeline(const TimelineData& base, const AuxTraceSession& session,
                                           DecodedSpans&& result, uint64_t decodedBegin, uint64_t decodedEnd,
                                           const std::vector<int32_t>& alsoTids) {
    auto data = std::make_shared<TimelineData>(base);
    data->threads.clear();
    addTimelineThreads(*data, std::move(result.threads), session.sideband(), alsoTids);
    data->decodedBegin = decodedBegin;
    data->decodedEnd = decodedEnd;
    return data;
}

}  // namespace auxscope
