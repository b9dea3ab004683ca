// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Intel PT call-stack spans of a whole perf.data (or a window of it), as
// the exporters and the GUI's summary want them: `auxscope export` and the
// trace page both decode through here, so they agree on what a file holds.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "export/TraceExport.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtSpanDecoder.h"
#include "spans/TimelineData.h"

namespace auxscope {

struct IntelPtSpans {
    std::unique_ptr<PtSession> session;  // owns the function table the spans refer to
    PtSession::SpanResult result;
    uint64_t spanCount() const;
    // A view for exportPerfetto/exportCsv; valid while this object lives.
    ExportSpans exportView() const;
};

// Whether the file has an Intel PT AUXTRACE_INFO and any AUX trace bytes.
bool hasIntelPtData(const PerfDataReader& file);
// AUX trace bytes in the file (every AUXTRACE buffer).
uint64_t auxTraceBytes(const PerfDataReader& file);

// Called between batches of segments: `done` of `total` segments decoded.
// Returning false stops the decode (the result is then an error saying so).
using PtDecodeProgress = std::function<bool(size_t done, size_t total)>;

// Opens a PtSession on `file` (which must outlive the result) and decodes the
// spans of `window` on `threads` threads (0: all CPUs). Errors name the file,
// offset and cause as PtSession::open gives them.
Expected<IntelPtSpans> decodeIntelPtSpans(const PerfDataReader& file, const PtDecodeWindow& window = {},
                                          const PtSessionOptions& options = {}, unsigned threads = 0,
                                          const PtDecodeProgress& progress = {});

// --- The timeline of a PtSession (app/TimelineView draws it) ---

// The recording's extent: the sideband's and every trace segment's times.
struct PtTimeExtent {
    uint64_t begin = 0, end = 0;
};
PtTimeExtent ptRecordingExtent(const PtSession& session);
// The window a timeline decodes before its first frame: the first 1/1000 of
// the recording (as bench_pt_decode's "(e) first frame").
PtDecodeWindow ptFirstFrameWindow(const PtSession& session);
// Trace bytes a decode of `window` reads: the sizes of the segments it selects.
uint64_t ptWindowTraceBytes(const PtSession& session, const PtDecodeWindow& window);

// The CPU lanes, extent and function table of a session's timeline, without
// spans: what every window's TimelineData shares. `functions` aliases `session`.
TimelineData ptTimelineBase(const std::shared_ptr<const PtSession>& session);
// A timeline of `result`, decoded for [decodedBegin, decodedEnd): a copy of
// `base` with the threads of `result` (and empty ones for `alsoTids`).
std::shared_ptr<TimelineData> makePtTimeline(const TimelineData& base, const PtSession& session,
                                             PtSession::SpanResult&& result, uint64_t decodedBegin,
                                             uint64_t decodedEnd, const std::vector<int32_t>& alsoTids = {});

}  // namespace auxscope
