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
// [--threads-list 1,4,8,16]: per thread count wall and process CPU, the phases
// (RangePhases), serial fraction, CPU inflation and the Amdahl 16-core figure.
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

#include "LoadAverage.h"
#include "ScalingFigures.h"
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

double processCpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t spans = 10'000'000, seed = 1;
    unsigned threads = 4, rounds = 5;
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<unsigned> threadsList{1, cores};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_report: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto next = [&]() -> uint64_t { return std::strtoull(value(), nullptr, 0); };
        if (a == "--spans")
            spans = next();
        else if (a == "--threads")
            threads = unsigned(std::max<uint64_t>(1, next()));
        else if (a == "--rounds")
            rounds = unsigned(std::max<uint64_t>(1, next()));
        else if (a == "--seed")
            seed = next();
        else if (a == "--threads-list")
            threadsList = bench::threadsListOption(value(), "bench_report");
        else {
            std::fprintf(stderr,
                         "usage: bench_report [--spans N (10000000)] [--threads T (4 traced threads)] "
                         "[--rounds R (5)] [--seed S] [--threads-list 1,4,8,16 (1,cores)]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    if (std::find(threadsList.begin(), threadsList.end(), 1u) == threadsList.end())
        threadsList.insert(threadsList.begin(), 1u);  // the figures are relative to one thread
    std::printf("bench_report: %" PRIu64 " synthetic spans in %u threads, %u rounds (median), %u cores, %s\n",
                spans, threads, rounds, cores, bench::loadAverage().c_str());
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
    };
    const uint64_t mid = first + (last - first) / 4;
    const std::vector<Case> cases = {
        {"whole trace", 0, UINT64_MAX},
        {"middle half", mid, mid + (last - first) / 2},
    };
    const double perTen = 10e6 / double(spans);
    for (const Case& c : cases) {
        std::printf("  %s:\n", c.name);
        double wall1 = 0, cpu1 = 0, serial1 = 0;
        size_t nodes1 = 0;
        uint64_t insns1 = 0;
        std::vector<RangeCost> functions1;
        for (unsigned n : threadsList) {
            std::vector<double> walls, cpus, threadCpus;
            RangePhases phases;  // of the round with the median wall time (serial: its serial phases)
            std::vector<std::pair<double, RangePhases>> byWall;
            size_t nodes = 0, functions = 0;
            uint64_t insns = 0;
            bool same = true;
            for (unsigned r = 0; r < rounds; ++r) {
                RangeQuery q;
                q.begin = c.begin;
                q.end = c.end;
                q.threads = n;
                RangePhases p;
                q.phases = &p;
                const auto start = std::chrono::steady_clock::now();
                const double cpuStart = processCpuMs(), threadStart = threadCpuMs();
                auto stats = computeRangeStats(stores, q);
                // What a report shows: the top functions sorted.
                auto top = stats->topFunctions(RangeSort::SelfTime, 50);
                const double wall = ms(std::chrono::steady_clock::now() - start);
                walls.push_back(wall);
                cpus.push_back(processCpuMs() - cpuStart);
                threadCpus.push_back(threadCpuMs() - threadStart);
                byWall.push_back({wall, p});
                nodes = stats->tree.size();
                functions = stats->functions.size();
                insns = stats->instructions();
                (void)top;
                // Identical statistics at every thread count.
                if (n == 1 && r == 0) {
                    functions1.clear();
                    for (const auto& f : stats->functions)
                        functions1.push_back(f.cost);
                    nodes1 = nodes;
                    insns1 = insns;
                } else {
                    same = same && nodes == nodes1 && insns == insns1 && functions == functions1.size();
                    for (size_t k = 0; same && k < functions; ++k)
                        same = stats->functions[k].cost == functions1[k];
                }
            }
            std::sort(byWall.begin(), byWall.end(),
                      [](const auto& x, const auto& y) { return x.first < y.first; });
            phases = byWall[byWall.size() / 2].second;
            const double wall = median(walls), cpu = median(cpus), serial = phases.serial();
            if (n == 1) wall1 = wall, cpu1 = cpu, serial1 = serial;
            std::printf(
                "    %2u thread%s %8.1f ms wall (min %.1f), cpu %8.1f ms process, %.1f ms caller%s; "
                "speed-up %.2fx, cpu inflation %.2f\n",
                n, n == 1 ? " " : "s", wall, *std::min_element(walls.begin(), walls.end()), cpu,
                median(threadCpus), same ? "" : "  MISMATCH with 1 thread", wall1 / wall, cpu / cpu1);
            std::printf(
                "       phases (ms): prepare %.1f, summarize %.1f, link %.1f, aggregate %.1f, merge %.1f, "
                "last merge %.1f, finish %.1f; %zu pieces; serial %.1f ms\n",
                phases.prepare, phases.summarize, phases.link, phases.aggregate, phases.merge,
                phases.mergeLast, phases.finish, phases.pieces, phases.serial());
            if (n == threadsList.back())
                std::printf("       %zu tree nodes, %zu functions, %" PRIu64 " instructions\n", nodes,
                            functions, insns);
            if (n != 1 && n == threadsList.back()) {
                // Amdahl from this machine: the serial phases at N threads over the
                // whole at 1 thread, the parallel part inflated as measured.
                const double s = std::min(1.0, serial / wall1), infl = cpu / cpu1;
                const double s16 = bench::amdahl(s, infl, 16);
                // The prediction from the CPU time at 1 thread: what its wall time is on
                // a quiet machine (on a loaded one the wall time waits for a core).
                std::printf(
                    "    serial fraction %.3f (%.1f ms serial at %u threads, %.1f ms at 1 / %.1f ms wall at "
                    "1), cpu inflation %.2f at %u: Amdahl 16-core speed-up %.1fx -> %.0f ms predicted "
                    "(%.0f ms cpu at 1 thread / %.1f)\n",
                    s, serial, n, serial1, wall1, infl, n, s16, cpu1 / s16, cpu1, s16);
            }
        }
        if (c.begin == 0)
            std::printf(
                "    targets (issue 34, 100 M spans): <= 2000 ms on 2 cores, <= 1000 ms on 16 (x%.2f here: "
                "%.0f / %.0f ms)\n",
                perTen * 10, 2000 / (perTen * 10), 1000 / (perTen * 10));
    }
    std::printf(
        "targets (issue 14): 10 M spans <= 200 ms on one core; 100 M spans <= 1 s on all cores (scale: x%.2f "
        "to 10 M)\n",
        perTen);
    std::printf("  max RSS %ld MB\n", maxRssMb());
    return 0;
}
