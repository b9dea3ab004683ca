// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The functions behind the live timeline's samples while a capture runs: one
// ImageResolver over the live sideband, kept for the whole capture, and the
// sideband lanes built with its functionAt.
//
// - Loading runs on a thread of its own (nice 10), never on the thread that
//   builds the lanes (LiveSideband's worker), the GUI thread or the drain thread.
//   The first load reads every code file the mappings name and the running
//   kernel's names (/proc/kallsyms); later loads move the resolver onto the
//   newest snapshot with ImageResolver::update(), which reads only files no
//   earlier mapping named. A load is asked for only when mappings or processes
//   came in since the last one (LiveSidebandStats::identity), and only after a
//   tick's lanes are built, so it runs while the worker waits for its next tick.
//   Loads after the first take at most a quarter of a core: after one of d
//   seconds the next waits 3d (the new mappings' samples show addresses meanwhile).
// - Each tick resolves a sample through a cache of (pid, address) -> function
//   kept across ticks: only addresses not seen before are looked up. While a load
//   runs, the resolver is not touched: samples the cache does not know show their
//   address for that tick (not cached, so the next tick names them). A finished
//   load forgets what it may change: the processes whose image changed, and
//   addresses no function was found for.
// - The lanes get a FunctionTable of just the functions samples were found in
//   (copied when it grew; ids never change), not the resolver's table of every
//   symbol loaded (hundreds of thousands with the kernel's).
// A tick's cost on the worker is thus one cache probe per sample the lanes'
// own small cache misses, plus a lookup per new address; see bench_live_symbols.
//
// Qt-free. lanes() is for one thread at a time (LiveSideband's worker).
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "images/ImageResolver.h"
#include "spans/SidebandLanes.h"

namespace auxscope {

struct LiveSymbolsStats {
    size_t files = 0, missing = 0;  // code files looked up so far, and those not found
    size_t symbols = 0;             // functions the loaded symbol tables hold
    size_t functions = 0;           // distinct functions samples were found in so far
    size_t notYet = 0;              // the newest tick's samples left as addresses: a load was running
    bool loading = false;           // a load runs now
    double firstLoadSeconds = 0;    // the first load (every mapped file, the kernel's names)
    double lastLoadSeconds = 0;     // the newest load
    uint64_t loads = 0;             // finished
};

class LiveSymbols {
public:
    // `options` as for ImageResolver, but debuginfod is never asked while capturing.
    explicit LiveSymbols(ImageOptions options);
    // Waits for a load that runs (its files are being read).
    ~LiveSymbols();
    LiveSymbols(const LiveSymbols&) = delete;
    LiveSymbols& operator=(const LiveSymbols&) = delete;

    // The lanes of `sideband` (buildSidebandLanes with `options`, their
    // functionAt and functions set here); then, when `identity` (LiveSidebandStats::identity)
    // differs from the last load's and no load runs, a load onto `sideband` starts.
    // `last` (the capture's last timeline): every load is waited for first, so
    // every sample the mappings cover is named.
    std::shared_ptr<const SidebandLanes> lanes(std::shared_ptr<const Sideband> sideband, uint64_t identity,
                                               SidebandLanesOptions options, bool last = false);
    // Whether lanes built now for `identity` would name every sample they can:
    // no load runs or waits to be taken, none is due, and the last lanes left none
    // for later. The worker's (it reads what lanes() left).
    bool complete(uint64_t identity) const;
    LiveSymbolsStats stats() const;

private:
    struct Loaded;  // what a finished load changed
    void loaderLoop();
    void load(std::shared_ptr<const Sideband> sideband);  // with busy_ set by the caller
    void takeLoaded();  // the worker: a finished load into use, the cache cleaned
    uint32_t resolve(int32_t pid, uint64_t ip, bool resolverFree);
    void clearCache(const std::vector<int32_t>& pids, bool all);

    ImageOptions options_;
    FunctionTable functions_;                   // every symbol loaded (the resolver adds to it)
    std::unique_ptr<ImageResolver> resolver_;   // the loader's while a load runs, else the worker's
    std::shared_ptr<const Sideband> sideband_;  // the one resolver_ reads

    // Shared by the worker and the loader.
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::shared_ptr<const Sideband> wanted_;  // a load asked for
    uint64_t loadedIdentity_ = UINT64_MAX;    // of the newest load asked for
    bool busy_ = false, stopping_ = false;
    std::unique_ptr<Loaded> loaded_;                      // finished, not yet taken into use
    std::chrono::steady_clock::time_point nextLoadAt_{};  // loads after the first: a share of a core
    LiveSymbolsStats stats_;
    std::thread loader_;

    // The worker's own: (pid, address) -> id in compact_, open addressing.
    struct CacheEntry {
        uint64_t ip = 0;
        int32_t pid = 0;
        uint32_t function : 31 = 0;
        uint32_t used : 1 = 0;
    };
    std::vector<CacheEntry> cache_;
    size_t cacheUsed_ = 0;
    FunctionTable compact_;                           // the functions samples were found in
    std::vector<uint32_t> compactOf_;                 // functions_ id -> compact_ id (0: none yet)
    std::shared_ptr<const FunctionTable> published_;  // compact_ as the newest lanes got it
    size_t notYet_ = 0;
};

}  // namespace auxscope
