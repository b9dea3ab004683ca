// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/pt/ is the Intel PT decoder (libipt): configuration, the PSB index,
// the flow walker (PtFlowWalker) and block decode to flow, packet dumps, and
// libipt's view of the images (PtImages). It includes images/, spans/,
// sideband/, record/ and perfdata/; nothing in decode/ but auxtrace/ includes it.
//
// Intel PT decode of a perf.data into per-thread call-stack spans.
//
// A PtSession opens the file once: the trace per CPU (PtTraceSource), the
// sideband (threads, maps, switch timeline), the code images and symbols
// (ImageResolver) and a PSB index per CPU. The trace is cut into segments at
// PSBs (about `segmentBytes` each), each decodable on its own: the flow walker
// over libipt's query decoder (pt/PtFlowWalker.h; libipt's block decoder where
// the walker hands a segment back, and for listings) runs over a segment with
// the image of the thread the switch timeline says is running, switching image
// and thread as the decoded time passes switches, and feeds FlowToSpans. Trouble never stops the decode: a
// libipt error becomes a gap naming the error and the trace offset, and decoding resumes at the next PSB.
// decodeSpans() decodes only the segments a time window and CPU set need, through spans/SegmentedDecode: on
// the session's worker pool, cached, and merged per thread in time order.
//
// Each segment starts with an empty call stack; frames that cross a cut are
// joined when segments are merged (spans/SegmentedDecode.h).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PsbIndex.h"
#include "pt/PtImages.h"
#include "pt/PtTraceSource.h"
#include "sideband/Sideband.h"
#include "spans/DecodeTypes.h"
#include "spans/FlowToSpans.h"
#include "spans/FunctionTable.h"
#include "spans/SegmentedDecode.h"
#include "spans/SpanStore.h"

namespace auxscope {

struct PtSessionOptions {
    ImageOptions images;
    uint64_t segmentBytes = 1 << 20;
    // Decoded segments kept for later calls (packed spans): a busy trace decodes
    // to ~10 bytes of spans per byte of PT, so a whole large file does not fit.
    uint64_t cacheBytes = uint64_t(2) << 30;
    // Spans through the flow walker over libipt's query decoder (pt/PtFlowWalker.h);
    // false: through libipt's block decoder (what the walker is checked against).
    bool flowWalker = true;
    // Decode in worker processes: a crash or hang of libipt ends only its segment
    // (spans/IsolatedDecode.h).
    DecoderIsolation isolation = DecoderIsolation::fromEnvironment();
    // Caps on each decodeSpans() call (spans/DecodeLimits.h); none by default.
    DecodeLimits limits;
};

class PtSession {
public:
    // With `carry` (a session on an earlier piece of the same recording, opened
    // with the same image options: the live decoder's previous tick), the new
    // session takes over what that one loaded -- code images, symbols (the
    // kernel's too), the function table (ids stay valid) and the block shapes of
    // processes whose code did not change -- and loads only what the new
    // sideband adds; *carry is then reset. On failure *carry is left as it was.
    static Expected<std::unique_ptr<PtSession>> open(const PerfDataReader& file,
                                                     PtSessionOptions options = {},
                                                     std::unique_ptr<PtSession>* carry = nullptr);
    // Files looked up and loaded by open() (all of them, or only the new ones
    // when it carried a session's images).
    size_t filesLoaded() const { return filesLoaded_; }
    bool carried() const { return carried_; }
    // What PtSessionOptions::limits did to the last decodeSpans() call.
    DecodeLimitReport lastDecodeLimit() const { return decode_->lastLimitReport(); }
    const DecodeLimits& limits() const { return decode_->limits(); }
    ~PtSession();

    const PtTraceSource& trace() const { return *trace_; }
    const Sideband& sideband() const { return *sideband_; }
    const ImageResolver& images() const { return *images_; }
    const PtImages& ptImages() const { return *ptImages_; }
    const FunctionTable& functions() const { return *functions_; }
    const PsbIndex& psbIndex(int cpu) const;

    struct Segment {
        int cpu = -1;
        size_t run = 0;
        uint64_t begin = 0, end = 0;  // in the CPU's PtCpuTrace::bytes
        uint64_t startTime = 0, endTime = 0;
        bool firstOfRun = false;
        // Lost-AUX causes told here besides the run's own: before the segment, those
        // of earlier runs without a PSB (nothing of them decodes); after it (the
        // last segment of a CPU), AUX data missing after its trace.
        std::vector<std::string> lostBefore, lostAfter;
        // The first segment of a run after a loss: where the CPU's trace before the
        // loss ended (its lost-AUX gaps start there); 0 when unknown.
        uint64_t lossFrom = 0;
    };
    const std::vector<Segment>& segments() const { return segments_; }

    // Spans of the threads (and CPUs) in `window`, decoding on `threads` threads
    // (0: hardware_concurrency) what is not cached yet.
    DecodedSpans decodeSpans(const DecodeWindow& window, unsigned threads = 0);

    // Every block in `window`, CPU by CPU in trace order, to `visit` on the calling
    // thread; isolated, decoded on up to `threads` worker processes (0: one per
    // CPU), a segment libipt dies on being a gap (*failures, where given) --
    // SegmentedDecode::forEachBlock.
    DecodeStats forEachBlock(const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit,
                             unsigned threads = 1, std::vector<Gap>* failures = nullptr);

    // Whether (and how) decoding runs in worker processes (spans/IsolatedDecode.h).
    const DecoderIsolation& isolation() const { return decode_->isolation(); }

    // Runs task(0) .. task(n - 1) on up to `threads` threads (0: hardware_concurrency),
    // the calling thread being one of them.
    void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& task);

private:
    PtSession() = default;
    SegmentSpans decodeSegment(const Segment& segment,
                               const std::function<void(const FlowBlock&)>* visit) const;
    // What stands for segment `index` when libipt died on it: a gap over it.
    SegmentSpans failedSegment(size_t index, GapReason reason, const std::string& detail) const;
    // `walk`: with the flow walker (pt/PtFlowWalker.h), setting *unhandled when it
    // met what it does not handle (the result is then to be thrown away); else
    // with libipt's block decoder.
    SegmentSpans decodeSegmentWith(const Segment& segment, const std::function<void(const FlowBlock&)>* visit,
                                   bool walk, bool* unhandled) const;

    // Where the blocks of libipt's default flags change function (see PtSpanDecoder.cpp).
    struct BlockShapes;
    std::unique_ptr<BlockShapes> shapes_;

    const PerfDataReader* file_ = nullptr;
    std::unique_ptr<PtTraceSource> trace_;
    std::unique_ptr<Sideband> sideband_;
    std::unique_ptr<FunctionTable> functions_;
    std::unique_ptr<ImageResolver> images_;
    std::unique_ptr<PtImages> ptImages_;
    // The flow walker's code tables, kept between segments (see PtSpanDecoder.cpp).
    struct WalkTables;
    struct WalkTablePool;
    std::unique_ptr<WalkTablePool> walkTables_;
    std::unique_ptr<SegmentedDecode> decode_;
    std::map<int, PsbIndex> psbs_;
    std::vector<Segment> segments_;
    bool flowWalker_ = true;
    size_t filesLoaded_ = 0;
    bool carried_ = false;
};

// How an x86 instruction leaves its block, from its bytes (for blocks whose
// class libipt did not report).
BranchClass classifyX86Branch(const uint8_t* bytes, size_t size, bool is64Bit);

}  // namespace auxscope
