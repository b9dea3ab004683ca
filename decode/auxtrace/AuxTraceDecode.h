// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one entry point for decoding a perf.data's AUX trace, whatever its kind.
//
// auxtrace/ sits above the trace decoders (pt/, and etm/ next to it): it reads
// which kind of trace a file holds from its AUXTRACE_INFO and opens the matching
// decoder behind AuxTraceSession, so the command line, the GUI and the
// exporters never branch on the trace kind. Everything it hands out is
// decoder-neutral: windows, spans, statistics (spans/DecodeTypes.h), the
// sideband (sideband/), the code images (images/) and the timeline
// (spans/TimelineData.h). It may include every folder of decode/; nothing in
// decode/ includes it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "export/TraceExport.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"
#include "spans/DecodeLimits.h"
#include "spans/DecodeTypes.h"
#include "spans/FunctionTable.h"
#include "spans/IsolatedDecode.h"
#include "spans/TimelineData.h"

namespace auxscope {

enum class AuxTraceKind {
    None,       // no AUXTRACE_INFO
    IntelPt,    // Intel PT (libipt)
    CoreSight,  // Arm CoreSight ETM/ETE
    ArmSpe,     // Arm SPE (records, no flow: auxtrace/SpeAuxTrace.h)
    Other,      // an AUXTRACE_INFO auxscope has no decoder for (Intel BTS, ...)
};
// The kind of the file's first AUXTRACE_INFO.
AuxTraceKind auxTraceKind(const PerfDataReader& file);
// "Intel PT", "CoreSight ETM", "Arm SPE", ...
const char* auxTraceKindName(AuxTraceKind kind);
// Whether auxscope decodes the file's AUX trace: a decoder for its kind exists and
// the file holds trace bytes.
bool hasDecodableAuxTrace(const PerfDataReader& file);
// AUX trace bytes in the file (every AUXTRACE buffer).
uint64_t auxTraceBytes(const PerfDataReader& file);

struct AuxTraceOptions {
    ImageOptions images;
    // Trace bytes per independently decodable segment (cut at sync points).
    uint64_t segmentBytes = 1 << 20;
    // Decoded segments kept for later calls (packed spans).
    uint64_t cacheBytes = uint64_t(2) << 30;
    // Intel PT spans through the flow walker (pt/PtFlowWalker.h); false: through
    // libipt's block decoder (`--pt-decoder block`), for comparison.
    bool ptFlowWalker = true;
    // Span decoding in worker processes, so that a crash or hang of libipt or
    // OpenCSD ends only the segment it was on, shown as a gap "decoder crashed
    // (OpenCSD, SIGSEGV)" (spans/IsolatedDecode.h). AUXSCOPE_DECODE_IN_PROCESS=1: off.
    DecoderIsolation isolation = DecoderIsolation::fromEnvironment();
    // Caps on the trace bytes, instructions and spans of each decodeSpans() call
    // (spans/DecodeLimits.h): none by default; the fuzzers bound an input with
    // them. Intel PT and CoreSight; Arm SPE decodes no spans.
    DecodeLimits limits;
};

// One decoder over one file: opened once, asked for windows of spans as often
// as a view needs them (decoded segments are cached), from any one thread at a
// time; the accessors are safe from any thread.
class AuxTraceSession {
public:
    // Opens the decoder for the file's kind; `file` must outlive the session.
    // Errors name the file, offset and cause (or that the kind has no decoder).
    static Expected<std::unique_ptr<AuxTraceSession>> open(const PerfDataReader& file,
                                                           const AuxTraceOptions& options = {});
    // Opens a session on `file`, a later piece of the recording `*carry` decoded
    // (the live decoder's next tick, written with the same image options): the
    // new session takes over what that one loaded -- code images, symbols (the
    // kernel's too), the function table, whose ids stay valid, and decoder
    // caches of code that did not change -- and loads only what the new
    // sideband adds; *carry is reset then. A carry of another kind, or none, is
    // a plain open; on failure *carry is left as it was.
    static Expected<std::unique_ptr<AuxTraceSession>> open(const PerfDataReader& file,
                                                           const AuxTraceOptions& options,
                                                           std::unique_ptr<AuxTraceSession>* carry);
    // Code files open() looked up and loaded: every mapped file of the sideband,
    // or only the new ones when it carried a session's images.
    virtual size_t filesLoaded() const = 0;
    // Whether open() took over a carried session's images.
    virtual bool carried() const = 0;
    // What AuxTraceOptions::limits did to the last decodeSpans() call (its
    // note() is also among traceNotes() then).
    virtual DecodeLimitReport lastDecodeLimit() const { return {}; }
    virtual ~AuxTraceSession() = default;

    virtual AuxTraceKind kind() const = 0;
    virtual const Sideband& sideband() const = 0;
    virtual const FunctionTable& functions() const = 0;
    virtual const ImageResolver& images() const = 0;
    // What the trace itself says worth telling (loss, configuration), one line each.
    virtual std::vector<std::string> traceNotes() const = 0;
    // What the code images say (mismatches, refusals), one line each.
    virtual std::vector<std::string> imageNotes() const = 0;
    // Per traced CPU (or for `cpu` only): the AUX loss the kernel flagged, one line
    // each ("cpu N: AUX records with TRUNCATED 2 ...\n"), none when nothing was lost.
    virtual std::vector<std::string> lossLines(std::optional<int> cpu) const = 0;

    // The independently decodable pieces of the trace, in trace order per CPU.
    struct Segment {
        int cpu = -1;
        uint64_t startTime = 0, endTime = 0;
        uint64_t bytes = 0;
    };
    virtual std::vector<Segment> segments() const = 0;

    // Spans of the threads (and CPUs) in `window`, decoding on `threads` threads
    // (0: all CPUs) what is not cached yet.
    virtual DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads = 0) = 0;
    // Every block of flow in `window`, CPU by CPU in trace order, to `visit` on the
    // calling thread. Isolated (AuxTraceOptions::isolation), the segments decode on
    // up to `threads` worker processes (0: one per CPU) that stream their blocks
    // back; a segment the library crashed or hung on ends there and is counted as
    // a gap in the statistics, its gap (cpu, trace offset, "decoder crashed
    // (OpenCSD, SIGSEGV)") appended to *failures where given; the rest goes on.
    virtual DecodeStats forEachBlock(const DecodeWindow& window,
                                     const std::function<void(const FlowBlock&)>& visit, unsigned threads = 1,
                                     std::vector<Gap>* failures = nullptr) = 0;
    // The protocol's packets, per CPU buffer (or `cpu` only), with counts per
    // packet type; problems to `err`. Returns 0, or 1 when a buffer could not be listed.
    // Intel PT: with AuxTraceOptions::limits.traceBytes, the listing stops after
    // that many trace bytes (the last packet may be cut) and says so.
    virtual int listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) = 0;
    // The executed instruction ranges, one per line ("CPU TRACE_ID FIRST LAST COUNT ISA",
    // as `auxscope decode SNAPSHOT_DIR` lists a snapshot's), per CPU buffer (or `cpu`
    // only), a summary to `err`. Trace kinds without ranges (Intel PT decodes to
    // blocks: --format insn) say so to `err` and return 1.
    virtual int listRanges(std::optional<int> cpu, std::ostream& out, std::ostream& err);
};

// A decoded file: the session (which owns the function table the spans refer
// to) and the spans of one window.
struct AuxTraceSpans {
    std::unique_ptr<AuxTraceSession> session;
    DecodedSpans result;
    uint64_t spanCount() const;
    // A view for exportPerfetto/exportCsv; valid while this object lives.
    ExportSpans exportView() const;
};

// Opens a session on `file` (which must outlive the result) and decodes the
// spans of `window` on `threads` threads (0: all CPUs), reporting progress
// between batches of segments (returning false cancels: the result is then an
// error saying so).
Expected<AuxTraceSpans> decodeAuxTraceSpans(const PerfDataReader& file, const DecodeWindow& window = {},
                                            const AuxTraceOptions& options = {}, unsigned threads = 0,
                                            const DecodeProgress& progress = {});

// Decodes the segments `window` needs into `session`'s cache in time-ordered
// batches (about 20, each of at least 2 segments per worker) on `threads`
// threads (0: all CPUs), calling `progress(done, total)` in segments before the
// first batch and after each; false stops there and returns false. A
// decodeSpans(window) afterwards only merges what is cached. Used where a
// decode reports progress and can be cancelled (decodeAuxTraceSpans, the trace
// page's timeline).
bool decodeInBatches(AuxTraceSession& session, const DecodeWindow& window, unsigned threads,
                     const DecodeProgress& progress);

// --- The timeline of a session (app/gui/TimelineView draws it) ---

// The recording's extent: the sideband's and every trace segment's times.
TimeExtent recordingExtent(const AuxTraceSession& session);
// The window a timeline decodes before its first frame: the first 1/1000 of
// the recording (as bench_pt_decode's "(e) first frame").
DecodeWindow firstFrameWindow(const AuxTraceSession& session);
// Trace bytes a decode of `window` reads: the sizes of the segments it selects.
uint64_t windowTraceBytes(const AuxTraceSession& session, const DecodeWindow& window);

// The CPU lanes, extent and function table of a session's timeline, without
// spans: what every window's TimelineData shares. `functions` aliases `session`.
TimelineData timelineBase(const std::shared_ptr<const AuxTraceSession>& session);
// A timeline of `result`, decoded for [decodedBegin, decodedEnd): a copy of
// `base` with the threads of `result` (and empty ones for `alsoTids`).
std::shared_ptr<TimelineData> makeTimeline(const TimelineData& base, const AuxTraceSession& session,
                                           DecodedSpans&& result, uint64_t decodedBegin, uint64_t decodedEnd,
                                           const std::vector<int32_t>& alsoTids = {});

}  // namespace auxscope
