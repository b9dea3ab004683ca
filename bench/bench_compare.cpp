// SPDX-License-Identifier: GPL-3.0-or-later
// bench_compare: before and after over N synthetic spans against N more (issue
// 30's target: 10 M spans against 10 M spans, the comparison's first tables
// <= 500 ms on one core), printed beside a single-trace report of the same data
// in the same run.
//
// A and B are two runs of one program (SyntheticSpans.h, program seed 1; path
// seeds 1 and 2): the same call graph, other paths through it, so the merged
// tree is larger than either. What is timed, on one core (the calling thread):
//   report     computeRangeStats(A) and its top functions (what auxscope report
//              and the selection pane compute);
//   compare    computeRangeStats(A) and (B), compareRanges (functions matched by
//              name and binary, the merged top-down tree), the functions
//              sorted by the change of self time: what auxscope compare and a
//              comparison view show first;
//   bottom-up  the merged bottom-up tree, made when a view asks for it;
//   of which   compareRanges and the sort alone, on the two RangeStats.
// Usage: bench_compare [--spans N (each side)] [--threads T] [--rounds R]
#include <sys/resource.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "SyntheticSpans.h"
#include "spans/RangeCompare.h"
#include "spans/RangeStats.h"

using namespace auxscope;

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

struct Timing {
    std::vector<double> wall, cpu;
    void add(double w, double c) {
        wall.push_back(w);
        cpu.push_back(c);
    }
    void print(const char* name, const std::string& what) {
        std::sort(wall.begin(), wall.end());
        std::sort(cpu.begin(), cpu.end());
        std::printf("  %-34s %8.1f ms (min %.1f, cpu %.1f ms)  %s\n", name, wall[wall.size() / 2],
                    wall.front(), cpu[cpu.size() / 2], what.c_str());
    }
};

}  // namespace

int main(int argc, char** argv) {
    uint64_t spans = 10'000'000;
    unsigned threads = 4, rounds = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> uint64_t {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_compare: %s needs a value\n", a.c_str());
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
        else {
            std::fprintf(
                stderr,
                "usage: bench_compare [--spans N (10000000 a side)] [--threads T (4)] [--rounds R (5)]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    std::printf("bench_compare: %" PRIu64 " synthetic spans against %" PRIu64
                " in %u threads each, %u rounds (median), one core\n",
                spans, spans, threads, rounds);
    auto t0 = std::chrono::steady_clock::now();
    const auto a = bench::makeSpans(spans, threads, 1);
    const auto b = bench::makeSpans(spans, threads, 2, 1);
    std::printf("  spans made in %.0f ms, max RSS %ld MB\n", ms(std::chrono::steady_clock::now() - t0),
                maxRssMb());
    // Both sides' functions: the same names in one binary (ids as the generator gives them).
    FunctionTable functions;
    for (uint32_t f = 1; f <= 4001; ++f)
        functions.add({"function_" + std::to_string(f), "/usr/bin/bench", 0x1000 + 64 * uint64_t(f), false});

    RangeQuery q;
    q.threads = 1;
    Timing report, compare, compareOnly, bottomUpTime;
    size_t nodes = 0, merged = 0, bottomUp = 0, matched = 0, onlyA = 0, onlyB = 0;
    double topDelta = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        {
            auto w = std::chrono::steady_clock::now();
            const double c = threadCpuMs();
            auto stats = computeRangeStats(a, q);
            auto top = stats->topFunctions(RangeSort::SelfTime, 50);
            report.add(ms(std::chrono::steady_clock::now() - w), threadCpuMs() - c);
            nodes = stats->tree.size();
            (void)top;
        }
        auto w = std::chrono::steady_clock::now();
        const double c = threadCpuMs();
        auto sa = computeRangeStats(a, q);
        auto sb = computeRangeStats(b, q);
        auto w2 = std::chrono::steady_clock::now();
        const double c2 = threadCpuMs();
        auto result = compareRanges({&*sa, &functions}, {&*sb, &functions}, {});
        auto top = result->sorted(CompareMetric::SelfTime, 'd', 50);
        const auto end = std::chrono::steady_clock::now();
        const double cEnd = threadCpuMs();
        compare.add(ms(end - w), cEnd - c);
        compareOnly.add(ms(end - w2), cEnd - c2);
        merged = result->tree.size();
        const auto w3 = std::chrono::steady_clock::now();
        const double c3 = threadCpuMs();
        bottomUp = result->bottomUp().size();
        bottomUpTime.add(ms(std::chrono::steady_clock::now() - w3), threadCpuMs() - c3);
        matched = onlyA = onlyB = 0;
        for (const ComparedFunction& f : result->functions) {
            matched += f.inA && f.inB;
            onlyA += f.inA && !f.inB;
            onlyB += f.inB && !f.inA;
        }
        topDelta = top.empty() ? 0 : result->delta(top[0].a, top[0].b, CompareMetric::SelfTime);
    }
    char what[256];
    std::snprintf(what, sizeof what, "%zu tree nodes", nodes);
    report.print("report (A alone)", what);
    std::snprintf(what, sizeof what, "%zu merged nodes, %zu functions matched, %zu A only, %zu B only",
                  merged, matched, onlyA, onlyB);
    compare.print("compare (A and B, tables, trees)", what);
    std::snprintf(what, sizeof what, "largest change of self time %+.0f ns", topDelta);
    compareOnly.print("  of which compareRanges + sort", what);
    std::snprintf(what, sizeof what, "%zu nodes", bottomUp);
    bottomUpTime.print("merged bottom-up (on demand)", what);
    std::printf("target: 10 M spans against 10 M spans <= 500 ms on one core (scale: x%.2f to 10 M)\n",
                10e6 / double(spans));
    std::printf("  max RSS %ld MB\n", maxRssMb());
    return 0;
}
