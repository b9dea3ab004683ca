// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/SegmentedDecode.h"

#include <algorithm>
#include <atomic>

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

std::function<void(const FlowBlock&)> SegmentedDecode::windowFilter(
    const DecodeWindow& window, const std::function<void(const FlowBlock&)>& visit) {
    return [&window, &visit](const FlowBlock& b) {
        if (b.time < window.begin || b.time > window.end) return;
        if (window.tid && b.tid != *window.tid) return;
        visit(b);
    };
}

DecodedSpans SegmentedDecode::decode(const std::vector<size_t>& chosen, const DecodeWindow& window,
                                     unsigned threads, const DecodeOne& decodeOne) {
    DecodedSpans out;
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
    parallelFor(todo.size(), threads, [&](size_t k) {
        const size_t i = todo[k];
        results[i] = std::make_shared<const SegmentSpans>(decodeOne(chosen[i]));
    });
    out.decodedNow = todo.size();
    {
        std::lock_guard lock(cacheMutex_);
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
    std::vector<bool> decodedNow(results.size());
    for (size_t i : todo)
        decodedNow[i] = true;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        out.stats += r->stats;
        if (decodedNow[i]) out.decodedStats += r->stats;
        for (const auto& [tid, store] : r->threads)
            if (!window.tid || tid == *window.tid) parts[tid].push_back(&store);
    }
    // Threads in parallel when there are several; a thread's in-order parts are
    // copied in parallel themselves (one thread's spans can be most of a window).
    std::vector<std::pair<int32_t, std::vector<const SpanStore*>>> work(parts.begin(), parts.end());
    std::vector<SpanStore*> merged(work.size());
    for (size_t k = 0; k < work.size(); ++k)
        merged[k] = &out.threads[work[k].first];
    const ParallelRun inner = [&](size_t n, const std::function<void(size_t)>& task) {
        parallelFor(n, work.size() == 1 ? threads : 1, task);
    };
    parallelFor(work.size(), threads, [&](size_t k) {
        const auto& [tid, stores] = work[k];
        if (merged[k]->appendStores(stores, window.begin, window.end, inner)) return;
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
    return out;
}

}  // namespace auxscope
