// SPDX-License-Identifier: GPL-3.0-or-later
// bench_live_sideband (issue 28): what a LiveSideband tick costs the allocator.
// Feeds LiveSideband the records of a busy machine made in memory
// (tests/support/LiveSidebandFeed.h: COMM / FORK / MMAP2 for the names and code
// mappings of --processes x --threads threads, then context switches and samples on
// --cpus CPUs, 10 us apart), --batch records per tick, --records in all, with a
// window of --window-seconds (the default keeps 1.5 M records), and prints per
// tick, for the ticks that only added records and for those that built the
// builder again (rebuild): the worker's operator new / delete calls and bytes
// allocated, the tick's CPU time, and what dropping the previous snapshot freed
// on the reading thread (as the GUI thread drops it). Counts come from a replaced
// global operator new (tests/support/AllocationCounter.h): every container and
// string of the model allocates through it. Not a test.
//
// usage: bench_live_sideband [--records N] [--batch N] [--window-seconds S]
//                            [--processes N] [--threads N] [--maps N] [--cpus N]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "AllocationCounter.h"
#include "LiveSidebandFeed.h"
#include "sideband/LiveSideband.h"

using namespace auxscope;
using testsupport::AllocationCount;

namespace {

double cpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Tick {
    AllocationCount worker;  // during the tick (the feeding thread waits in flush())
    uint64_t dropFrees = 0;  // what dropping the previous snapshot freed on this thread
    double cpu = 0;
};

template <typename T, typename F>
double median(std::vector<T> v, F f) {
    if (v.empty()) return 0;
    std::vector<double> x;
    for (const T& t : v)
        x.push_back(f(t));
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
}

template <typename T, typename F>
double maximum(const std::vector<T>& v, F f) {
    double m = 0;
    for (const T& t : v)
        m = std::max(m, double(f(t)));
    return m;
}

void print(const char* what, const std::vector<Tick>& ticks) {
    if (ticks.empty()) {
        std::printf("%-9s (none)\n", what);
        return;
    }
    auto calls = [](const Tick& t) { return double(t.worker.news + t.worker.deletes); };
    auto mib = [](const Tick& t) { return double(t.worker.bytes) / (1 << 20); };
    auto frees = [](const Tick& t) { return double(t.dropFrees); };
    auto ms = [](const Tick& t) { return t.cpu * 1e3; };
    std::printf("%-9s %6zu %14.0f %14.0f %12.1f %12.1f %12.0f %12.0f %10.1f %10.1f\n", what, ticks.size(),
                median(ticks, calls), maximum(ticks, calls), median(ticks, mib), maximum(ticks, mib),
                median(ticks, frees), maximum(ticks, frees), median(ticks, ms), maximum(ticks, ms));
}

}  // namespace

int main(int argc, char** argv) {
    size_t records = 4'000'000, batch = 100'000;
    double windowSeconds = 15;
    int processes = 200, threads = 20, maps = 30, cpus = 8;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_live_sideband: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--records")
            records = std::stoull(next());
        else if (a == "--batch")
            batch = std::max<size_t>(1, std::stoull(next()));
        else if (a == "--window-seconds")
            windowSeconds = std::stod(next());
        else if (a == "--processes")
            processes = std::stoi(next());
        else if (a == "--threads")
            threads = std::stoi(next());
        else if (a == "--maps")
            maps = std::stoi(next());
        else if (a == "--cpus")
            cpus = std::stoi(next());
        else {
            std::printf(
                "usage: bench_live_sideband [--records N] [--batch N] [--window-seconds S] [--processes N] "
                "[--threads N] [--maps N] [--cpus N]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    testsupport::LiveSidebandFeed feed(cpus, processes, threads, maps, 10'000);
    std::mutex mutex;
    std::shared_ptr<const Sideband> published;
    LiveSidebandStats stats;
    LiveSidebandOptions options;
    options.windowSeconds = windowSeconds;
    options.adaptWindow = false;  // the same window whatever the tick costs, old build and new
    options.maxRateHz = 1000;     // ticks when flushed
    options.cpuShare = 1;
    auto live = LiveSideband::start(
        feed.ids(),
        [&](std::shared_ptr<const Sideband> sb, bool, const LiveSidebandStats& s) {
            std::lock_guard lock(mutex);
            published = std::move(sb);
            stats = s;
        },
        options);
    auto hand = [&](int cpu, std::span<const uint8_t> bytes, const ParsedRecord& r) {
        live->onRecord(cpu, bytes, r);
    };
    std::printf(
        "bench_live_sideband: %d processes x %d threads, %d code mappings each, %d CPUs; %zu records, %zu "
        "a tick, window %.0f s (%.0f records)\n",
        processes, threads, maps, cpus, records, batch, windowSeconds, windowSeconds * 1e5);
    feed.identity(hand);
    std::vector<Tick> plain, rebuilt;
    std::shared_ptr<const Sideband> held;
    uint64_t rebuilds = 0;
    size_t kept = 0;
    for (size_t done = 0; done < records; done += batch) {
        feed.window(std::min(batch, records - done), hand);
        Tick t;
        const AllocationCount before = testsupport::allocations();
        const double cpu0 = cpuSeconds();
        live->flush();
        t.cpu = cpuSeconds() - cpu0;
        t.worker = testsupport::allocations() - before;
        std::shared_ptr<const Sideband> next;
        {
            std::lock_guard lock(mutex);
            next = published;
            kept = stats.kept;
            const bool rebuild = stats.rebuilds != rebuilds;
            rebuilds = stats.rebuilds;
            published.reset();
            // The previous snapshot, dropped here as the GUI thread drops it.
            const AllocationCount own = testsupport::threadAllocations();
            held = std::move(next);
            t.dropFrees = (testsupport::threadAllocations() - own).deletes;
            (rebuild ? rebuilt : plain).push_back(t);
        }
    }
    live->stop();
    std::printf("kept in the window at the end: %zu records; %zu rebuilds\n", kept, rebuilt.size());
    std::printf("%-9s %6s %14s %14s %12s %12s %12s %12s %10s %10s\n", "tick", "n", "new+del_p50",
                "new+del_max", "MiB_new_p50", "MiB_new_max", "drop_free50", "drop_freemax", "cpu_ms_p50",
                "cpu_ms_max");
    print("add", plain);
    print("rebuild", rebuilt);
    return 0;
}
