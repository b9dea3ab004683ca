// SPDX-License-Identifier: GPL-3.0-or-later
// bench_report: the range statistics of a selection (spans/RangeStats: call tree
// and top functions) over N synthetic spans, on one core and on every core,
// beside the targets of issue 14: 10 M spans <= 200 ms on one core, 100 M spans
// <= 1 s on all cores.
//
// The spans are made the way a decode makes them: per thread, call stacks
// walked depth first (a few thousand functions, stacks up to ~40 deep, some
// recursion, hot paths taken more often than others, an untraced gap now
// and then), packed into SpanStores in start
// order. Usage: bench_report [--spans N] [--threads T] [--rounds R] [--seed S]
#include <sys/resource.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "SyntheticSpans.h"
#include "spans/RangeStats.h"
#include "spans/SpanStore.h"

using namespace auxscope;
using auxscope::bench::makeSpans;

namespace {

double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

double threadCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

long maxRssMb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t spans = 10'000'000, seed = 1;
    unsigned threads = 4, rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> uint64_t {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_report: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return std::strtoull(argv[++i], nullptr, 0);
        };
        if (a == "--spans")
            spans = next();
        else if (a == "--threads")
            threads = unsigned(std::max<uint64_t>(1, next()));
        else if (a == "--rounds")
            rounds = unsigned(std::max<uint64_t>(1, next()));
        else if (a == "--seed")
            seed = next();
        else {
            std::fprintf(stderr,
                         "usage: bench_report [--spans N (10000000)] [--threads T (4 traced threads)] "
                         "[--rounds R (5)] [--seed S]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::printf("bench_report: %" PRIu64 " synthetic spans in %u threads, %u rounds (median), %u cores\n",
                spans, threads, rounds, cores);
    auto t0 = std::chrono::steady_clock::now();
    const auto stores = makeSpans(spans, threads, seed);
    size_t bytes = 0, count = 0;
    for (const auto& [tid, s] : stores)
        bytes += s.spanBytes(), count += s.size();
    std::printf("  spans made in %.0f ms: %zu spans, %.1f bytes/span, max RSS %ld MB\n",
                ms(std::chrono::steady_clock::now() - t0), count, double(bytes) / double(count), maxRssMb());

    uint64_t first = UINT64_MAX, last = 0;
    for (const auto& [tid, s] : stores) {
        first = std::min(first, s.firstStart());
        last = std::max(last, s.lastStart());
    }
    struct Case {
        const char* name;
        uint64_t begin, end;
        unsigned threads;
    };
    const uint64_t mid = first + (last - first) / 4;
    const std::vector<Case> cases = {
        {"whole trace, 1 core", 0, UINT64_MAX, 1},
        {"whole trace, all cores", 0, UINT64_MAX, 0},
        {"middle half, 1 core", mid, mid + (last - first) / 2, 1},
        {"middle half, all cores", mid, mid + (last - first) / 2, 0},
    };
    uint64_t reference = 0;
    for (const Case& c : cases) {
        std::vector<double> times, cpuTimes;  // wall; CPU time of the calling thread
        size_t nodes = 0, functions = 0;
        uint64_t insns = 0;
        for (unsigned r = 0; r < rounds; ++r) {
            RangeQuery q;
            q.begin = c.begin;
            q.end = c.end;
            q.threads = c.threads;
            auto start = std::chrono::steady_clock::now();
            const double cpuStart = threadCpuMs();
            auto stats = computeRangeStats(stores, q);
            // What a report shows: the top functions sorted, the bottom-up view made.
            auto top = stats->topFunctions(RangeSort::SelfTime, 50);
            times.push_back(ms(std::chrono::steady_clock::now() - start));
            cpuTimes.push_back(threadCpuMs() - cpuStart);
            nodes = stats->tree.size();
            functions = stats->functions.size();
            insns = stats->instructions();
            (void)top;
        }
        std::sort(times.begin(), times.end());
        std::sort(cpuTimes.begin(), cpuTimes.end());
        if (c.begin == 0) {
            if (reference && insns != reference)
                std::printf("  MISMATCH: instructions differ between runs\n");
            reference = insns;
        }
        // On one core the aggregation runs on the calling thread: its CPU time
        // is the figure a busy machine does not inflate.
        char cpu[64] = "";
        if (c.threads == 1) std::snprintf(cpu, sizeof cpu, ", cpu %.1f ms", cpuTimes[cpuTimes.size() / 2]);
        std::printf("  %-26s %8.1f ms (min %.1f%s)  %zu tree nodes, %zu functions, %" PRIu64
                    " instructions\n",
                    c.name, times[times.size() / 2], times.front(), cpu, nodes, functions, insns);
    }
    const double perTen = 10e6 / double(spans);
    std::printf(
        "targets: 10 M spans <= 200 ms on one core; 100 M spans <= 1 s on all cores "
        "(scale: x%.2f to 10 M)\n",
        perTen);
    std::printf("  max RSS %ld MB\n", maxRssMb());
    return 0;
}
