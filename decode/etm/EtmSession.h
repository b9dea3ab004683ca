// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// CoreSight ETM/ETE decode of a perf.data into per-thread call-stack spans,
// the counterpart of pt/PtSession.
//
// An EtmSession opens the file once: the trace per AUX ring (EtmTraceSource),
// the sideband (threads, maps, switch timeline), the code images and symbols
// (ImageResolver, read by OpenCSD through an EtmMemoryCache) and an index of
// every ring's sync points (etm/EtmSyncIndex: the A-syncs per trace ID in every
// AUX buffer). The trace is cut into segments at sync points: every AUXTRACE
// buffer starts one (perf resets its decoder there), and inside a buffer with
// one trace ID every A-sync the index found is one. A segment holds about
// `segmentBytes` (whole small buffers, resetting the decoder between them, or
// the piece of a big buffer from one A-sync to a later one). A segment that ends
// at an A-sync inside a buffer decodes on past it until OpenCSD hands out an
// element of a packet at or after it (what it still held of the packets before),
// and keeps only the elements before it: the next segment, which starts a fresh
// decoder there, has the rest, so nothing is lost or doubled at the cut. Segments
// decode on their own, in parallel, and are cached (spans/SegmentedDecode, as
// Intel PT's). OpenCSD's elements feed FlowToSpans: instruction ranges
// (function of the range's start, branch class from the last instruction),
// exceptions as interrupts, ERET as a return, and trace-on, overflow, no-sync
// and address-not-accessible as gaps with their reasons (a missing image names
// its file, as for Intel PT). The thread is the PE context's CONTEXTIDR (perf
// traces the tid there) and else the switch timeline; the time is the trace's
// timestamps through TIME_CONV, or when it has none, the byte's AUX write time
// interpolated between AUX records.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "etm/EtmElement.h"
#include "etm/EtmSyncIndex.h"
#include "etm/EtmTraceSource.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"
#include "spans/DecodeTypes.h"
#include "spans/FunctionTable.h"
#include "spans/SegmentedDecode.h"
#include "spans/SpanStore.h"

namespace auxscope::etm {

struct EtmSessionOptions {
    ImageOptions images;
    uint64_t segmentBytes = 1 << 20;
    uint64_t cacheBytes = uint64_t(2) << 30;
    // Decode in worker processes: a crash or hang of OpenCSD ends only its segment
    // (spans/IsolatedDecode.h).
    DecoderIsolation isolation = DecoderIsolation::fromEnvironment();
    // Caps on each decodeSpans() call (spans/DecodeLimits.h); none by default.
    DecodeLimits limits;
};

// One executed instruction range, for listings (auxscope decode --format ranges).
struct EtmRange {
    int cpu = -1;
    uint8_t traceId = 0;
    uint64_t start = 0, last = 0;  // first and last instruction
    uint32_t instructions = 0;
    EtmIsa isa = EtmIsa::Unknown;
    EtmBranch branch = EtmBranch::None;
    uint64_t time = 0;
    int32_t tid = -1;
    // The flow continues from the range before (no trace on, sync loss,
    // exception or inaccessible code in between, same buffer).
    bool continues = false;
};

class EtmSession {
public:
    // `carry`: as PtSession::open's (a session on an earlier piece of the same
    // recording, whose code images, symbols and function table the new one takes
    // over, loading only what the new sideband adds; *carry is reset then).
    static Expected<std::unique_ptr<EtmSession>> open(const PerfDataReader& file,
                                                      EtmSessionOptions options = {},
                                                      std::unique_ptr<EtmSession>* carry = nullptr);
    size_t filesLoaded() const { return filesLoaded_; }
    bool carried() const { return carried_; }
    // What EtmSessionOptions::limits did to the last decodeSpans() call.
    DecodeLimitReport lastDecodeLimit() const { return decode_->lastLimitReport(); }
    ~EtmSession();

    const EtmTraceSource& trace() const { return *trace_; }
    const Sideband& sideband() const { return *sideband_; }
    const ImageResolver& images() const { return *images_; }
    const FunctionTable& functions() const { return *functions_; }
    // The sync points of ring `ring` (trace().cpus()[ring]).
    const EtmSyncIndex& syncIndex(size_t ring) const { return syncs_.at(ring); }

    struct Segment {
        int cpu = -1;  // the ring's CPU (-1: a per-thread ring); of a trace ID's segment: its CPU
        // A ring several trace IDs share is decoded per ID: the one this segment
        // decodes (-1: every ID of the ring).
        int traceId = -1;
        bool countBytes = true;  // its bytes count in DecodeStats::traceBytes (the first ID's segments)
        size_t ring = 0;
        size_t run = 0;
        uint64_t begin = 0, end = 0;   // in the ring's stream
        std::vector<uint64_t> resets;  // buffer starts in (begin, end): the decoder restarts there
        // When `end` is a sync point inside a buffer: that buffer's end. The decode goes on
        // past `end` (up to here) until an element at or after `end` comes out, and keeps
        // only those before it. 0: `end` ends a buffer or a run.
        uint64_t feedEnd = 0;
        uint64_t startTime = 0, endTime = 0;
        bool firstOfRun = false;
        uint64_t lossFrom = 0;  // after a loss: where the ring's trace before it ended
        // A ring with no trace bytes at all (EtmTraceSource::lostRings): only this lost-AUX gap.
        std::string lostOnly;
        int32_t tid = -1;
    };
    const std::vector<Segment>& segments() const { return segments_; }

    DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads = 0);
    // Every block in `window`, as PtSession::forEachBlock.
    DecodeStats forEachBlock(const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr);
    // Every executed range of `cpu`'s ring (every ring when unset), in trace order;
    // isolated as forEachBlock.
    DecodeStats forEachRange(std::optional<int> cpu, const std::function<void(const EtmRange&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr);
    // The protocol packets per ring (OpenCSD's printers); 1 when a ring failed.
    int listPackets(std::optional<int> cpu, std::ostream& out, std::ostream& err) const;

private:
    EtmSession() = default;
    SegmentSpans decodeSegment(const Segment& segment, const std::function<void(const FlowBlock&)>* visit,
                               const std::function<void(const EtmRange&)>* ranges) const;
    // What stands for segment `index` when OpenCSD died on it: a gap over it.
    SegmentSpans failedSegment(size_t index, GapReason reason, const std::string& detail) const;

    std::unique_ptr<EtmTraceSource> trace_;
    std::unique_ptr<Sideband> sideband_;
    std::unique_ptr<FunctionTable> functions_;
    std::unique_ptr<ImageResolver> images_;
    std::vector<EtmSyncIndex> syncs_;  // per ring
    std::vector<Segment> segments_;
    std::unique_ptr<SegmentedDecode> decode_;
    size_t filesLoaded_ = 0;
    bool carried_ = false;
};

}  // namespace auxscope::etm
