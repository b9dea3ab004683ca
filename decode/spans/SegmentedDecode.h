// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The decoder-neutral half of decoding a trace in segments, which every trace
// decoder (pt/PtSession, etm/EtmSession) shares. A decoder cuts its trace into
// segments at sync points, each decodable on its own, and describes each by
// the CPU whose trace it is and the perf time it covers (cpu, startTime,
// endTime). SegmentedDecode then
//   - selects the segments a window (time, CPU) needs (select()),
//   - decodes those it has not cached through the decoder's callback on its
//     worker pool (threads started once, on first need, and reused by every
//     call, the calling thread being one of them),
//   - keeps decoded segments in a cache with a byte budget (oldest out first:
//     a timeline revisits what it just showed),
//   - and merges the segments' spans per thread in time order, also on the pool.
//
// Frames across cuts. Each segment is decoded on its own, so its flow starts
// on an empty stack: a frame running at a cut shows as a span that ends there
// and one found running after it. A decoder that gives each segment's
// FlowToSpans::StackEnds (and says which segments resume exactly where the one
// before them stopped) has them joined when the merge sees both sides: per
// thread, the frames open at the end of its previous part (its stack when it
// last ran) are matched to the frames its next part found running (the first
// one, then the callers found by returning past it), after how the last run
// before the cut left (a call: the first frame found is its callee, entered by
// that call; a return: it is the caller). Where the functions agree the later
// span is folded into the earlier one (its end and instructions), the later
// part's depths move under the earlier stack, and the frames below the match
// stay open through it: the span tree of a decode is the one a decode without
// cuts would give, whether the segments were decoded in one call, in several
// or from the cache. Nothing is joined where the match fails (a tail call or
// longjmp across the cut, a return past the earlier part's outermost frame),
// across a segment that does not resume its predecessor (lost trace), for a
// thread that ran on several CPUs, or at the first segment of a window (its
// predecessor is not decoded): those cuts stay as they were.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "sideband/Sideband.h"
#include "spans/DecodeLimits.h"
#include "spans/DecodeTypes.h"
#include "spans/FlowToSpans.h"
#include "spans/IsolatedDecode.h"
#include "spans/SpanStore.h"

namespace auxscope {

// Threads started once and kept: starting threads per call costs more than a
// small window's decode. Work comes in batches (one per run() call; several
// calls may run at once): the caller and the helpers it woke claim indices
// from the batch until none is left, and the caller waits only for indices
// already claimed, so a batch never waits on a busy pool.
class WorkerPool {
public:
    WorkerPool() = default;
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Runs task(0) .. task(n - 1) on up to `threads` threads (0: hardware_concurrency),
    // the calling thread being one of them.
    void run(size_t n, unsigned threads, const std::function<void(size_t)>& task);

private:
    struct Batch;
    static void work(Batch& batch);
    void loop();
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Batch>> queue_;
    std::vector<std::thread> threads_;
    bool stop_ = false;
};

// One decoded segment: its spans per thread, each thread's sorted by start.
struct SegmentSpans {
    std::map<int32_t, SpanStore> threads;
    DecodeStats stats;
    // For joining frames across cuts (see the top); empty: never joined.
    std::map<int32_t, FlowToSpans::StackEnds> stackEnds;
    int cpu = -1;
    bool resumesPrevious = false;  // starts where the segment before it in the decoder's list stopped
};

class SegmentedDecode {
public:
    // Decodes segment `index` (called on the pool, several at once).
    using DecodeOne = std::function<SegmentSpans(size_t index)>;
    // What stands for segment `index` when its decoder died on it (a gap of
    // `reason` over the segment for the threads that ran in it).
    using FailedOne = FailedOneFn;

    // `isolation`: decode in worker processes (spans/IsolatedDecode.h), the
    // decoding library named `library` in the gaps of segments it crashed or hung on.
    explicit SegmentedDecode(uint64_t cacheBudget, DecoderIsolation isolation = {}, std::string library = {})
        : cacheBudget_(cacheBudget), isolation_(isolation), library_(std::move(library)) {}

    // The indices of the `segments` (anything with cpu, startTime and endTime)
    // that `window` needs, in order.
    template <typename Segment>
    static std::vector<size_t> select(const std::vector<Segment>& segments, const DecodeWindow& window) {
        std::vector<size_t> chosen;
        for (size_t i = 0; i < segments.size(); ++i) {
            const Segment& s = segments[i];
            if (window.cpu && s.cpu != *window.cpu) continue;
            if (s.endTime < window.begin || s.startTime > window.end) continue;
            chosen.push_back(i);
        }
        return chosen;
    }

    // The spans of the segments `chosen` (in trace order per CPU) of the threads
    // in `window`, decoding on `threads` threads (0: hardware_concurrency) what
    // is not cached yet: in worker processes when isolated (a segment whose
    // worker died is failedOne's gap), else on the pool.
    DecodedSpans decode(const std::vector<size_t>& chosen, const DecodeWindow& window, unsigned threads,
                        const DecodeOne& decodeOne, const FailedOne& failedOne = {});
    const DecoderIsolation& isolation() const { return isolation_; }

    // Every record (a FlowBlock, an etm::EtmRange: anything trivially copyable) of
    // the segments `chosen`, in their order, to `visit` on the calling thread;
    // decodeRecords(index, to) decodes segment `index`, each record to `to`, and
    // returns its statistics. Isolated, the segments decode on up to `threads`
    // worker processes (0: hardware_concurrency) that stream their records back
    // in batches (streamIsolated); a segment whose worker died or hung ends there
    // (the records it had handed over stay visited) and counts as failedOne's
    // gap in the statistics, the gap (cpu, trace offset, "decoder crashed
    // (OpenCSD, SIGSEGV)") appended to *failures where given; the other segments
    // go on. Not isolated: decodeRecords(index, visit) for each, here.
    template <typename Record>
    DecodeStats forEachRecord(
        const std::vector<size_t>& chosen, unsigned threads,
        const std::function<DecodeStats(size_t index, const std::function<void(const Record&)>& to)>&
            decodeRecords,
        const FailedOne& failedOne, const std::function<void(const Record&)>& visit,
        std::vector<Gap>* failures = nullptr);

    // Caps on each decode() call (spans/DecodeLimits.h; none by default). With
    // any set, the segments not cached are decoded one after another, each in a
    // worker process of its own when isolated (a crashed one is failedOne's gap
    // and counts as decoded, with its statistics), else on the calling thread;
    // those after the cap is reached are neither decoded nor cached: the call's
    // spans are those of the segments before.
    void setLimits(const DecodeLimits& limits) { limits_ = limits; }
    const DecodeLimits& limits() const { return limits_; }
    // What the caps did to the last decode() call.
    DecodeLimitReport lastLimitReport() const {
        std::lock_guard lock(cacheMutex_);
        return lastLimit_;
    }

    // `visit` for the blocks in `window`'s time and thread only.
    static std::function<void(const FlowBlock&)> windowFilter(
        const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit);

    // Runs task(0) .. task(n - 1) on the pool (see WorkerPool::run).
    void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& task) {
        pool_.run(n, threads, task);
    }

private:
    WorkerPool pool_;
    mutable std::mutex cacheMutex_;
    std::map<size_t, std::shared_ptr<const SegmentSpans>> cache_;
    std::deque<std::pair<size_t, size_t>> cacheOrder_;  // segment, bytes; oldest first
    uint64_t cacheBytes_ = 0, cacheBudget_ = 0;
    DecoderIsolation isolation_;
    std::string library_;
    DecodeLimits limits_;
    DecodeLimitReport lastLimit_;  // under cacheMutex_
};

namespace segmented_detail {
// The worker's side and the parent's side of forEachRecord, for any record size.
using AppendRecord = std::function<void(const void* record)>;
DecodeStats forEachRecordBytes(
    const std::vector<size_t>& chosen, unsigned threads, const DecoderIsolation& isolation,
    const std::string& library, size_t recordBytes,
    const std::function<DecodeStats(size_t index, const AppendRecord& append)>& decode,
    const std::function<void(const uint8_t* record)>& visit, const SegmentedDecode::FailedOne& failedOne,
    std::vector<Gap>* failures);
}  // namespace segmented_detail

template <typename Record>
DecodeStats SegmentedDecode::forEachRecord(
    const std::vector<size_t>& chosen, unsigned threads,
    const std::function<DecodeStats(size_t index, const std::function<void(const Record&)>& to)>&
        decodeRecords,
    const FailedOne& failedOne, const std::function<void(const Record&)>& visit, std::vector<Gap>* failures) {
    static_assert(std::is_trivially_copyable_v<Record>, "records cross the workers' pipes as bytes");
    if (!isolation_.enabled) {
        DecodeStats stats;
        for (size_t i : chosen)
            stats += decodeRecords(i, visit);
        return stats;
    }
    return segmented_detail::forEachRecordBytes(
        chosen, threads, isolation_, library_, sizeof(Record),
        [&](size_t i, const segmented_detail::AppendRecord& append) {
            return decodeRecords(i, [&append](const Record& r) { append(&r); });
        },
        [&](const uint8_t* bytes) {
            Record r;
            std::memcpy(static_cast<void*>(&r), bytes, sizeof r);
            visit(r);
        },
        failedOne, failures);
}

// A segment nothing of which was decoded: a gap of `reason` from `start` to
// `end` for each thread the sideband says ran on `cpu` then (`tid` when it
// knows none, or for a per-thread trace, cpu -1), the segment counted once.
SegmentSpans segmentGap(const Sideband& sideband, int cpu, int32_t tid, uint64_t start, uint64_t end,
                        GapReason reason, const std::string& detail, uint64_t traceOffset,
                        uint64_t traceBytes);

}  // namespace auxscope
