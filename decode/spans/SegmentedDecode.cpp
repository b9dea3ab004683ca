// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/SegmentedDecode.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>

#include "spans/FlowToSpans.h"

namespace auxscope {

struct WorkerPool::Batch {
    size_t n = 0;
    const std::function<void(size_t)>* task = nullptr;  // valid while an index is unfinished
    std::atomic<size_t> next{0};
    std::mutex mutex;
    std::condition_variable done;
    size_t finished = 0;
};

WorkerPool::~WorkerPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_)
        t.join();
}

void WorkerPool::run(size_t n, unsigned threads, const std::function<void(size_t)>& task) {
    if (!threads) threads = std::max(1u, std::thread::hardware_concurrency());
    threads = unsigned(std::min<size_t>(threads, n));
    if (threads <= 1) {
        for (size_t i = 0; i < n; ++i)
            task(i);
        return;
    }
    auto batch = std::make_shared<Batch>();
    batch->n = n;
    batch->task = &task;
    {
        std::lock_guard lock(mutex_);
        while (threads_.size() < threads - 1)
            threads_.emplace_back([this] { loop(); });
        for (unsigned t = 1; t < threads; ++t)
            queue_.push_back(batch);
    }
    wake_.notify_all();
    work(*batch);
    std::unique_lock lock(batch->mutex);
    batch->done.wait(lock, [&] { return batch->finished == batch->n; });
}

void WorkerPool::work(Batch& batch) {
    size_t ran = 0;
    for (size_t i; (i = batch.next.fetch_add(1)) < batch.n; ++ran)
        (*batch.task)(i);
    if (!ran) return;
    std::lock_guard lock(batch.mutex);
    batch.finished += ran;
    if (batch.finished == batch.n) batch.done.notify_all();
}

void WorkerPool::loop() {
    for (;;) {
        std::shared_ptr<Batch> batch;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (stop_) return;
            batch = std::move(queue_.front());
            queue_.pop_front();
        }
        work(*batch);
    }
}

namespace {

using PhaseClock = std::chrono::steady_clock;

double secondsSince(PhaseClock::time_point t0) {
    return std::chrono::duration<double>(PhaseClock::now() - t0).count();
}

// ---------------------------------------------------------------- frames across cuts

struct Patch {
    uint64_t end = 0;
    uint64_t addInstructions = 0;
};

// What joining changes in one part (one segment's spans of a thread).
struct PartFix {
    // Added to the depths of spans [0, shiftEnd) and [lastBegin, end), lossy
    // gaps excepted (the part's first and last stretch; one range when no lossy
    // gap parts them).
    int32_t shift = 0;
    uint32_t shiftEnd = 0;
    int32_t lastShift = 0;
    uint32_t lastBegin = UINT32_MAX;
    std::vector<uint32_t> drop;         // spans folded into an earlier part's
    int64_t called = -1;                // a span found running that the cut's call entered
    std::map<uint32_t, Patch> patches;  // frames that go on in later parts
    bool any() const { return shift || lastShift || !drop.empty() || called >= 0 || !patches.empty(); }
};

// A frame open at the end of a thread's previous part, in the merged spans' terms.
struct Carried {
    size_t part;
    uint32_t index;
    int32_t depth;  // after that part's shift
    uint32_t function;
};

Patch& patchOf(std::vector<PartFix>& fixes, const Carried& c) {
    return fixes[c.part].patches[c.index];
}

// The fixes that join a thread's parts (in time order); ends[k] null: part k is
// never joined, joins[k]: part k may be joined to the one before it.
std::vector<PartFix> joinParts(const std::vector<const SpanStore*>& parts,
                               const std::vector<const FlowToSpans::StackEnds*>& ends,
                               const std::vector<bool>& joins) {
    std::vector<PartFix> fixes(parts.size());
    std::vector<Carried> carry;  // the thread's stack after the previous part
    BranchClass pending = BranchClass::Other;
    // The parts of the stretch `carry` is in: a return past its outermost frame
    // in a later part moves all of it one level down (as within a segment).
    // Second: its last stretch only (the part has a lossy gap).
    std::vector<std::pair<size_t, bool>> stretch;
    auto lower = [&](int32_t by) {
        for (auto [part, last] : stretch)
            (last ? fixes[part].lastShift : fixes[part].shift) += by;
        for (Carried& c : carry)
            c.depth += by;
    };
    for (size_t k = 0; k < parts.size(); ++k) {
        const SpanStore& store = *parts[k];
        const FlowToSpans::StackEnds* e = ends[k];
        auto ownExit = [&](int32_t shift) {
            std::vector<Carried> out;
            if (e)
                for (uint32_t idx : e->exit) {
                    const Span s = store.at(idx);
                    out.push_back({k, idx, s.depth + shift, s.function});
                }
            return out;
        };
        // Tries to fold part k's found frames into `carry`; false: nothing changed.
        auto join = [&]() {
            if (!e || !joins[k] || carry.empty() || e->entry.empty() || e->entryBroken) return false;
            std::vector<Span> found;
            for (uint32_t idx : e->entry) {
                if (idx >= store.size()) return false;
                found.push_back(store.at(idx));
            }
            const ptrdiff_t n = ptrdiff_t(carry.size()) - 1;
            // The first frame found is: after a call, its callee (a new frame);
            // after a return, the caller of the frame on top; else the frame on top.
            const bool callFirst = pending == BranchClass::Call;
            const size_t first = callFirst ? 1 : 0;
            const ptrdiff_t top = pending == BranchClass::Return ? n - 1 : n;
            if (top < 0) return false;
            // Found frames past the earlier part's outermost one are callers
            // found by returning past it, one level further out each.
            const size_t matched = std::min(found.size() - first, size_t(top + 1));
            const size_t beyond = found.size() - first - matched;
            const int32_t shift0 = callFirst ? carry[size_t(n)].depth + 1 - found[0].depth
                                             : carry[size_t(top)].depth - found[0].depth;
            for (size_t j = first; j < first + matched; ++j) {
                const Carried& c = carry[size_t(top - ptrdiff_t(j - first))];
                if (c.function != found[j].function || c.depth != found[j].depth + shift0) return false;
            }
            if (beyond) {
                const int32_t outermost = found.back().depth + shift0;
                if (outermost < 0) lower(-outermost);
            }
            const int32_t shift = callFirst ? carry[size_t(n)].depth + 1 - found[0].depth
                                            : carry[size_t(top)].depth - found[0].depth;
            for (size_t j = first; j < first + matched; ++j) {
                const Carried& c = carry[size_t(top - ptrdiff_t(j - first))];
                if (c.function != found[j].function || c.depth != found[j].depth + shift) return false;
            }
            PartFix& fix = fixes[k];
            fix.shift = shift;
            fix.shiftEnd = e->firstStretchEnd;
            std::map<uint32_t, Carried> folded;  // found frame -> the earlier frame it continues
            for (size_t j = first; j < first + matched; ++j) {
                const Carried& c = carry[size_t(top - ptrdiff_t(j - first))];
                fix.drop.push_back(e->entry[j]);
                Patch& p = patchOf(fixes, c);
                p.end = std::max(p.end, found[j].end);
                p.addInstructions += found[j].instructions;
                folded[e->entry[j]] = c;
            }
            if (callFirst) fix.called = e->entry[0];
            std::sort(fix.drop.begin(), fix.drop.end());
            // The frames below the deepest one matched stay open through the
            // part's first stretch (and after it, when no lossy gap ends it).
            const size_t below = size_t(top + 1) - matched;
            const bool wholePart = e->firstStretchEnd >= store.size();
            if (wholePart) {
                stretch.push_back({k, false});
            } else {
                fixes[k].lastBegin = e->lastStretchBegin;
                stretch = {{k, true}};
            }
            const uint64_t lowerEnd = wholePart ? e->finishTime : e->firstStretchEndTime;
            for (size_t q = 0; q < below; ++q) {
                Patch& p = patchOf(fixes, carry[q]);
                p.end = std::max(p.end, lowerEnd);
            }
            if (!wholePart) {
                carry = ownExit(0);  // the exit lies after a lossy gap: a stack of its own
                return true;
            }
            std::vector<Carried> next(carry.begin(), carry.begin() + ptrdiff_t(below));
            for (uint32_t idx : e->exit) {
                if (auto it = folded.find(idx); it != folded.end()) {
                    next.push_back(it->second);
                } else {
                    const Span s = store.at(idx);
                    next.push_back({k, idx, s.depth + shift, s.function});
                }
            }
            carry = std::move(next);
            return true;
        };
        if (!join()) {
            carry = ownExit(0);
            if (e) fixes[k].lastBegin = e->lastStretchBegin;
            stretch = {{k, true}};
        }
        pending = e ? e->exitBranch : BranchClass::Other;
    }
    return fixes;
}

// The edit that applies `fix` to `in` (its replaced spans kept in `replace`).
SpanStore::Edit makeEdit(const SpanStore& in, const PartFix& fix,
                         std::vector<std::pair<uint32_t, Span>>& replace) {
    std::set<uint32_t> changed;
    for (const auto& [index, patch] : fix.patches)
        changed.insert(index);
    if (fix.called >= 0) changed.insert(uint32_t(fix.called));
    for (uint32_t index : changed) {
        Span s = in.at(index);
        if (auto it = fix.patches.find(index); it != fix.patches.end()) {
            s.end = std::max(s.end, it->second.end);
            s.instructions += it->second.addInstructions;
        }
        if (int64_t(index) == fix.called) s.foundRunning = s.outermost = false;
        replace.push_back({index, s});
    }
    SpanStore::Edit edit;
    edit.drop = fix.drop;
    edit.shift = fix.shift;
    edit.shiftEnd = fix.shiftEnd;
    edit.lastShift = fix.lastShift;
    edit.lastBegin = fix.lastBegin;
    edit.replace = replace;
    return edit;
}

}  // namespace

std::function<void(const FlowBlock&)> SegmentedDecode::windowFilter(
    const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit) {
    return [&window, &visit](const FlowBlock& b) {
        if (b.time < window.begin || b.time > window.end) return;
        if (window.tid && b.tid != *window.tid) return;
        visit(b);
    };
}

DecodeStats segmented_detail::forEachRecordBytes(
    const std::vector<size_t>& chosen, unsigned threads, const DecoderIsolation& isolation,
    const std::string& library, size_t recordBytes,
    const std::function<DecodeStats(size_t index, const AppendRecord& append)>& decode,
    const std::function<void(const uint8_t* record)>& visit, const SegmentedDecode::FailedOne& failedOne,
    std::vector<Gap>* failures) {
    enum : uint8_t { kRecords = 0, kStats = 1 };
    DecodeStats stats;
    if (!threads) threads = std::max(1u, std::thread::hardware_concurrency());
    streamIsolated(
        chosen, threads, isolation, library,
        [&](size_t i, IsolatedOutput& out) {
            // Records gathered here and appended to the ring 16 KiB at a time
            // (one append per record cost more than the copy).
            constexpr size_t kGather = 16 << 10;
            const size_t room = std::max(recordBytes, kGather / recordBytes * recordBytes);
            std::unique_ptr<uint8_t[]> gathered(new uint8_t[room]);
            size_t used = 0;
            const DecodeStats s = decode(i, [&](const void* r) {
                std::memcpy(gathered.get() + used, r, recordBytes);
                used += recordBytes;
                if (used == room) out.append(kRecords, gathered.get(), used), used = 0;
            });
            if (used) out.append(kRecords, gathered.get(), used);
            std::string bytes;
            serializeDecodeStats(s, bytes);
            out.append(kStats, bytes.data(), bytes.size());
        },
        [&](size_t, uint8_t kind, const uint8_t* data, size_t n) {
            if (kind == kRecords) {
                for (size_t at = 0; at + recordBytes <= n; at += recordBytes)
                    visit(data + at);
            } else if (kind == kStats) {
                DecodeStats s;
                if (deserializeDecodeStats(data, n, s)) stats += s;
            }
        },
        [&](size_t i, const DecoderFailure& f) {
            const SegmentSpans gap = failedOne(i, f.reason, f.detail);
            stats += gap.stats;
            if (!failures) return;
            for (const auto& [tid, store] : gap.threads)
                if (!store.gaps().empty()) {
                    failures->push_back(store.gaps().front());
                    return;
                }
            failures->push_back(Gap{f.reason, f.detail, 0, gap.cpu});
        });
    return stats;
}

SegmentSpans segmentGap(const Sideband& sideband, int cpu, int32_t tid, uint64_t start, uint64_t end,
                        GapReason reason, const std::string& detail, uint64_t traceOffset,
                        uint64_t traceBytes) {
    SegmentSpans result;
    result.cpu = cpu;
    result.stats.segments = 1;
    result.stats.traceBytes = traceBytes;
    ++result.stats.gaps[reason];
    FlowToSpans flow;
    RunningThread r = cpu >= 0 ? sideband.runningAt(cpu, start) : RunningThread{};
    if (r.tid < 0) r.tid = tid;
    flow.switchThread(start, r.tid);
    flow.gap(start, reason, detail, traceOffset, cpu);
    if (cpu >= 0)
        for (uint64_t t = sideband.nextSwitchAfter(cpu, start); t <= end && t != UINT64_MAX;
             t = sideband.nextSwitchAfter(cpu, t)) {
            flow.switchThread(t, sideband.runningAt(cpu, t).tid);
            flow.gap(t, reason, detail, traceOffset, cpu);
        }
    flow.finish(std::max(start, end));
    std::map<int32_t, FlowToSpans::ThreadSpans> spans = flow.take();
    storeSpans(spans, result.threads);
    return result;
}

std::string DecodeLimitReport::note() const {
    if (!stopped) return {};
    return "decode stopped at the cap of " + std::to_string(limit) + " " + cap + ": " +
           std::to_string(segmentsDecoded) + " of " + std::to_string(segmentsDecoded + segmentsLeft) +
           " segments decoded (" + std::to_string(traceBytes) + " trace bytes, " +
           std::to_string(instructions) + " instructions, " + std::to_string(spans) + " spans), " +
           std::to_string(segmentsLeft) + " not decoded";
}

DecodedSpans SegmentedDecode::decode(const std::vector<size_t>& requested, const DecodeWindow& window,
                                     unsigned threads, const DecodeOne& decodeOne,
                                     const FailedOne& failedOne) {
    DecodedSpans out;
    std::vector<size_t> chosen = requested;  // cut short by the caps, when set
    const auto tLookup = PhaseClock::now();
    std::vector<std::shared_ptr<const SegmentSpans>> results(chosen.size());
    std::vector<size_t> todo;
    {
        std::lock_guard lock(cacheMutex_);
        for (size_t i = 0; i < chosen.size(); ++i) {
            auto it = cache_.find(chosen[i]);
            if (it != cache_.end())
                results[i] = it->second, ++out.fromCache;
            else
                todo.push_back(i);
        }
    }
    out.phases.lookupSeconds = secondsSince(tLookup);
    const auto tDecode = PhaseClock::now();
    DecodeLimitReport limit;
    if (limits_.any()) {
        // One segment after another in trace order, each begun only while every
        // count is below its cap (spans/DecodeLimits.h); cached segments count
        // as when they were decoded.
        auto reached = [&]() -> bool {
            const std::pair<const char*, std::pair<uint64_t, uint64_t>> caps[] = {
                {"trace bytes", {limits_.traceBytes, limit.traceBytes}},
                {"instructions", {limits_.instructions, limit.instructions}},
                {"spans", {limits_.spans, limit.spans}}};
            for (const auto& [name, c] : caps)
                if (c.first && c.second >= c.first) {
                    limit.cap = name;
                    limit.limit = c.first;
                    return true;
                }
            return false;
        };
        const bool isolated = isolation_.enabled && failedOne;
        size_t n = 0;
        for (; n < chosen.size() && !reached(); ++n) {
            if (!results[n] && isolated) {
                // A worker process of its own, as without caps: a crash or hang
                // of the decoder ends this segment only (its failedOne gap).
                std::vector<std::shared_ptr<const SegmentSpans>> got;
                decodeIsolated(
                    {chosen[n]}, 1, isolation_, library_, decodeOne, failedOne,
                    [&](size_t k, const std::function<void(size_t)>& task) { parallelFor(k, 1, task); }, got);
                results[n] = std::move(got.at(0));
            } else if (!results[n]) {
                results[n] = std::make_shared<const SegmentSpans>(decodeOne(chosen[n]));
            }
            const SegmentSpans& r = *results[n];
            limit.traceBytes += r.stats.traceBytes;
            limit.instructions += r.stats.instructions;
            for (const auto& [tid, store] : r.threads)
                limit.spans += store.size();
        }
        limit.segmentsDecoded = n;
        limit.segmentsLeft = chosen.size() - n;
        limit.stopped = n < chosen.size();
        if (!limit.stopped) limit.cap.clear(), limit.limit = 0;
        chosen.resize(n);
        results.resize(n);
        std::erase_if(todo, [&](size_t i) { return i >= n; });
        out.fromCache = n - todo.size();
    } else if (isolation_.enabled && failedOne && !todo.empty()) {
        std::vector<size_t> segments(todo.size());
        for (size_t k = 0; k < todo.size(); ++k)
            segments[k] = chosen[todo[k]];
        std::vector<std::shared_ptr<const SegmentSpans>> got;
        const unsigned workers = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
        decodeIsolated(
            segments, workers, isolation_, library_, decodeOne, failedOne,
            [&](size_t n, const std::function<void(size_t)>& task) { parallelFor(n, threads, task); }, got);
        for (size_t k = 0; k < todo.size(); ++k)
            results[todo[k]] = std::move(got[k]);
    } else {
        parallelFor(todo.size(), threads, [&](size_t k) {
            const size_t i = todo[k];
            results[i] = std::make_shared<const SegmentSpans>(decodeOne(chosen[i]));
        });
    }
    out.decodedNow = todo.size();
    out.phases.decodeSeconds = secondsSince(tDecode);
    const auto tCache = PhaseClock::now();
    {
        std::lock_guard lock(cacheMutex_);
        lastLimit_ = limit;
        for (size_t i : todo) {
            size_t bytes = sizeof(SegmentSpans);
            for (const auto& [tid, store] : results[i]->threads)
                bytes += store.spanBytes();
            if (cache_.emplace(chosen[i], results[i]).second) {
                cacheOrder_.push_back({chosen[i], bytes});
                cacheBytes_ += bytes;
            }
        }
        while (cacheBytes_ > cacheBudget_ && !cacheOrder_.empty()) {
            cache_.erase(cacheOrder_.front().first);
            cacheBytes_ -= cacheOrder_.front().second;
            cacheOrder_.pop_front();
        }
    }
    // Merge per thread. One CPU's segments come in time order and are sorted
    // each: their packed spans are copied as they are. A thread that ran on
    // several CPUs has segments interleaving in time: its spans are unpacked and
    // sorted once more (stable, so the result is the same either way).
    std::map<int32_t, std::vector<const SpanStore*>> parts;
    std::map<int32_t, std::vector<size_t>> partResult;  // the result each part comes from
    std::vector<bool> decodedNow(results.size());
    for (size_t i : todo)
        decodedNow[i] = true;
    // Chains of segments each of which resumes where the one before it stopped.
    std::vector<size_t> chain(results.size());
    for (size_t i = 0; i < results.size(); ++i) {
        const bool resumes = i > 0 && results[i]->resumesPrevious && chosen[i] == chosen[i - 1] + 1 &&
                             results[i]->cpu == results[i - 1]->cpu;
        chain[i] = resumes ? chain[i - 1] : i;
    }
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        out.stats += r->stats;
        if (decodedNow[i]) out.decodedStats += r->stats;
        for (const auto& [tid, store] : r->threads)
            if (!window.tid || tid == *window.tid) {
                parts[tid].push_back(&store);
                partResult[tid].push_back(i);
            }
    }
    // Threads in parallel when there are several; a thread's in-order parts are
    // copied in parallel themselves (one thread's spans can be most of a window).
    out.phases.lookupSeconds += secondsSince(tCache);
    const auto tMerge = PhaseClock::now();
    std::atomic<int64_t> joinNs{0};
    std::vector<std::pair<int32_t, std::vector<const SpanStore*>>> work(parts.begin(), parts.end());
    std::vector<SpanStore*> merged(work.size());
    for (size_t k = 0; k < work.size(); ++k)
        merged[k] = &out.threads[work[k].first];
    const ParallelRun inner = [&](size_t n, const std::function<void(size_t)>& task) {
        parallelFor(n, work.size() == 1 ? threads : 1, task);
    };
    parallelFor(work.size(), threads, [&](size_t k) {
        const int32_t tid = work[k].first;
        std::vector<const SpanStore*> stores = work[k].second;
        // Frames across cuts (see the header): a thread that ran on one CPU only.
        const std::vector<size_t>& from = partResult[tid];
        std::vector<const FlowToSpans::StackEnds*> ends(stores.size());
        std::vector<bool> joins(stores.size());
        bool oneCpu = true, anyEnds = false;
        for (size_t p = 0; p < stores.size(); ++p) {
            const SegmentSpans& r = *results[from[p]];
            oneCpu = oneCpu && r.cpu == results[from[0]]->cpu;
            if (auto it = r.stackEnds.find(tid); it != r.stackEnds.end())
                ends[p] = &it->second, anyEnds = true;
            joins[p] = p > 0 && chain[from[p]] == chain[from[p - 1]];
        }
        // The fixes are applied as the parts are copied into the merged store.
        std::vector<PartFix> fixes;
        std::vector<std::vector<std::pair<uint32_t, Span>>> replaced(stores.size());
        std::vector<SpanStore::Edit> edits(stores.size());
        std::vector<const SpanStore::Edit*> editOf;
        if (oneCpu && anyEnds) {
            const auto tJoin = PhaseClock::now();
            fixes = joinParts(stores, ends, joins);
            editOf.assign(stores.size(), nullptr);
            for (size_t p = 0; p < stores.size(); ++p)
                if (fixes[p].any())
                    edits[p] = makeEdit(*stores[p], fixes[p], replaced[p]), editOf[p] = &edits[p];
            joinNs += std::chrono::duration_cast<std::chrono::nanoseconds>(PhaseClock::now() - tJoin).count();
        }
        // The window refers to the segments' spans (the cache's, kept alive by
        // the window) rather than copying them, where it holds all of a part.
        std::vector<std::shared_ptr<const void>> owners(stores.size());
        for (size_t p = 0; p < stores.size(); ++p)
            owners[p] = results[from[p]];
        if (merged[k]->appendStores(stores, window.begin, window.end, inner, editOf, owners)) return;
        // (Not in start order: the parts as edited, for the sort below.)
        std::vector<SpanStore> fixed(stores.size());
        for (size_t p = 0; p < editOf.size(); ++p)
            if (editOf[p]) fixed[p] = stores[p]->edited(*editOf[p]), stores[p] = &fixed[p];
        // Interleaving in time (a thread on several CPUs): unpack and sort once more.
        FlowToSpans::ThreadSpans all;
        for (const SpanStore* st : stores) {
            const int32_t gapBase = int32_t(all.gaps.size());
            all.gaps.insert(all.gaps.end(), st->gaps().begin(), st->gaps().end());
            for (size_t i = 0; i < st->size(); ++i) {
                Span sp = st->at(i);
                if (sp.end < window.begin || sp.start > window.end) continue;
                if (sp.isGap()) sp.gap += gapBase;
                all.spans.push_back(sp);
            }
        }
        std::map<int32_t, FlowToSpans::ThreadSpans> one;
        one.emplace(tid, std::move(all));
        std::map<int32_t, SpanStore> sorted;
        storeSpans(one, sorted);
        *merged[k] = std::move(sorted[tid]);
    });
    out.phases.mergeSeconds = secondsSince(tMerge);
    out.phases.joinSeconds = double(joinNs.load()) * 1e-9;
    return out;
}

}  // namespace auxscope
