// SPDX-License-Identifier: GPL-3.0-or-later
#include "IntelPtSpans.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "AuxtraceInfo.h"

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

}  // namespace auxscope
