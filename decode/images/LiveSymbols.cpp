// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/LiveSymbols.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace auxscope {

namespace {

// Distinct (pid, address) pairs remembered at most; past that the cache starts
// over (a long system-wide capture of many short-lived processes).
constexpr size_t kMaxCached = size_t(1) << 22;
// Functions in the lanes' table at most, likewise.
constexpr size_t kMaxFunctions = size_t(1) << 20;
// The share of a core the loads after the first may take (a capture of many
// short-lived programs asks for one nearly every tick).
constexpr double kLoaderShare = 0.25;

// Fibonacci hashing: the product's top bits, which every bit of the key reaches.
size_t slotOf(int32_t pid, uint64_t ip, size_t mask) {
    const uint64_t h =
        (ip ^ (uint64_t(uint32_t(pid)) << 47 | uint64_t(uint32_t(pid)) >> 17)) * 0x9e3779b97f4a7c15ull;
    return size_t(h >> 32 ^ h >> 45) & mask;
}

}  // namespace

struct LiveSymbols::Loaded {
    ImageResolver::Update update;
    bool first = false;
};

LiveSymbols::LiveSymbols(ImageOptions options) : options_(std::move(options)) {
    // No debuginfod while capturing: its downloads (and their disk writes) would
    // land in the capture, and names come when the capture is opened.
    options_.debuginfod = false;
    cache_.resize(size_t(1) << 16);
    loader_ = std::thread([this] { loaderLoop(); });
}

LiveSymbols::~LiveSymbols() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    loader_.join();
}

void LiveSymbols::loaderLoop() {
    // Below the capture and the traced workload, as LiveSideband's worker.
    (void)setpriority(PRIO_PROCESS, uint32_t(gettid()), 10);
    for (;;) {
        std::shared_ptr<const Sideband> sideband;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || wanted_; });
            if (stopping_) return;
            sideband = std::move(wanted_);
            wanted_.reset();
        }
        // busy_ was set by the worker when it asked: the resolver is this thread's now.
        load(std::move(sideband));
    }
}

void LiveSymbols::load(std::shared_ptr<const Sideband> sideband) {
    const auto t0 = std::chrono::steady_clock::now();
    auto loaded = std::make_unique<Loaded>();
    if (!resolver_) {
        resolver_ = std::make_unique<ImageResolver>(*sideband, functions_, options_);
        resolver_->prepare();
        loaded->first = true;
    } else {
        loaded->update = resolver_->update(*sideband);
    }
    sideband_ = std::move(sideband);  // what the resolver reads from now on
    const auto t1 = std::chrono::steady_clock::now();
    const double took = std::chrono::duration<double>(t1 - t0).count();
    {
        std::lock_guard lock(mutex_);
        // Later loads take at most kLoaderShare of a core: the next one waits
        // (the first, every file at once, is a one-time cost and does not count).
        if (!loaded->first)
            nextLoadAt_ = t1 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(took * (1 / kLoaderShare - 1)));
        if (loaded->first) stats_.firstLoadSeconds = took;
        stats_.lastLoadSeconds = took;
        ++stats_.loads;
        stats_.files = resolver_->files().size();
        stats_.missing = resolver_->missingFiles();
        stats_.symbols = functions_.size() - 1;
        loaded_ = std::move(loaded);
        busy_ = false;
    }
    wake_.notify_all();  // a worker waiting for the last tick's load
}

void LiveSymbols::takeLoaded() {
    std::unique_ptr<Loaded> loaded;
    {
        std::lock_guard lock(mutex_);
        loaded = std::move(loaded_);
    }
    if (!loaded) return;
    clearCache(loaded->update.pids, loaded->first || loaded->update.all);
}

void LiveSymbols::clearCache(const std::vector<int32_t>& pids, bool all) {
    // Kept: what no load can change, a function found in a process whose image is
    // the same. Forgotten: the rest, looked up again when next sampled.
    std::vector<CacheEntry> kept;
    if (!all)
        for (const CacheEntry& e : cache_)
            if (e.used && e.function != FunctionTable::kUnknown &&
                !std::binary_search(pids.begin(), pids.end(), e.pid))
                kept.push_back(e);
    std::fill(cache_.begin(), cache_.end(), CacheEntry{});
    cacheUsed_ = 0;
    const size_t mask = cache_.size() - 1;
    for (const CacheEntry& e : kept) {
        size_t i = slotOf(e.pid, e.ip, mask);
        while (cache_[i].used)
            i = (i + 1) & mask;
        cache_[i] = e;
        ++cacheUsed_;
    }
}

uint32_t LiveSymbols::resolve(int32_t pid, uint64_t ip, bool resolverFree) {
    size_t mask = cache_.size() - 1;
    size_t i = slotOf(pid, ip, mask);
    while (cache_[i].used) {
        if (cache_[i].ip == ip && cache_[i].pid == pid) return cache_[i].function;
        i = (i + 1) & mask;
    }
    if (!resolverFree || !resolver_) {
        ++notYet_;  // a load runs: named at the next tick
        return FunctionTable::kUnknown;
    }
    const uint32_t id = resolver_->functionAt(pid, ip);
    uint32_t function = FunctionTable::kUnknown;
    if (id != FunctionTable::kUnknown) {
        if (compactOf_.size() <= id) compactOf_.resize(size_t(id) + 1, FunctionTable::kUnknown);
        if (compactOf_[id] == FunctionTable::kUnknown) compactOf_[id] = compact_.add(functions_[id]);
        function = compactOf_[id];
    }
    if (cacheUsed_ + 1 > kMaxCached) {
        clearCache({}, true);
        i = slotOf(pid, ip, mask);
    } else if ((cacheUsed_ + 1) * 2 > cache_.size()) {
        // Half full: twice the slots, every entry placed again.
        std::vector<CacheEntry> old(cache_.size() * 2);
        old.swap(cache_);
        mask = cache_.size() - 1;
        for (const CacheEntry& e : old) {
            if (!e.used) continue;
            size_t j = slotOf(e.pid, e.ip, mask);
            while (cache_[j].used)
                j = (j + 1) & mask;
            cache_[j] = e;
        }
        i = slotOf(pid, ip, mask);
    }
    while (cache_[i].used)
        i = (i + 1) & mask;
    cache_[i] = {ip, pid, function, true};
    ++cacheUsed_;
    return function;
}

bool LiveSymbols::complete(uint64_t identity) const {
    std::lock_guard lock(mutex_);
    return !busy_ && !loaded_ && identity == loadedIdentity_ && !notYet_;
}

std::shared_ptr<const SidebandLanes> LiveSymbols::lanes(std::shared_ptr<const Sideband> sideband,
                                                        uint64_t identity, SidebandLanesOptions options,
                                                        bool last) {
    if (!sideband) return nullptr;
    if (last) {
        // The capture's last timeline stays on the page: the load that runs, and
        // one for mappings since, are waited for (on this worker: the capture is over).
        bool again;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return !busy_; });
            again = identity != loadedIdentity_;
            if (again) busy_ = true, loadedIdentity_ = identity;
        }
        takeLoaded();
        if (again) {
            load(sideband);
            takeLoaded();
        }
    }
    takeLoaded();
    bool resolverFree;
    {
        std::lock_guard lock(mutex_);
        resolverFree = !busy_;
    }
    notYet_ = 0;
    // A compact table past any use (a capture of very many short-lived programs): start over.
    if (compact_.size() > kMaxFunctions) {
        compact_ = FunctionTable();
        compactOf_.clear();
        published_.reset();
        clearCache({}, true);
    }
    options.functionAt = [this, resolverFree](int32_t pid, uint64_t ip) {
        return resolve(pid, ip, resolverFree);
    };
    options.functions = nullptr;  // set below: compact_ grows during the build
    auto built = buildSidebandLanes(*sideband, options);
    if (!built) return nullptr;
    // The lanes name functions by compact_'s ids: a copy of it as it is after the
    // build, made only when it grew (ids stay the same in later copies). The lanes
    // were just made and nobody else holds them yet: they may still be set.
    if (!published_ || published_->size() != compact_.size())
        published_ = std::make_shared<const FunctionTable>(compact_);
    std::const_pointer_cast<SidebandLanes>(built)->functions = published_;
    std::lock_guard lock(mutex_);
    stats_.functions = compact_.size() - 1;
    stats_.notYet = notYet_;
    if (!busy_ && identity != loadedIdentity_ && std::chrono::steady_clock::now() >= nextLoadAt_) {
        // Files the new mappings name load while this worker waits for its next tick.
        busy_ = true;
        loadedIdentity_ = identity;
        wanted_ = std::move(sideband);
        wake_.notify_all();
    }
    stats_.loading = busy_;
    return built;
}

LiveSymbolsStats LiveSymbols::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

}  // namespace auxscope
