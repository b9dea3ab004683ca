// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Synthetic spans for the benchmarks of range statistics and the flame graph
// (bench_report, bench_flamegraph), made the way a decode makes them: per
// thread, call stacks walked depth first over one program's call graph (a few
// thousand functions, stacks up to ~40 deep, some recursion, hot paths taken
// more often than others, an untraced gap now and then), packed into
// SpanStores in start order.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "spans/SpanStore.h"

namespace auxscope::bench {

struct Generator {
    std::mt19937_64 rng;
    uint32_t functions = 4000;
    uint64_t time = 1'000'000'000;
    std::vector<Span> batch;
    std::vector<Gap> gaps;
    // A program's call graph: each function calls a few fixed functions further
    // down (higher ids; the last ones are leaves), some call themselves.
    std::vector<std::vector<uint32_t>> callees;
    std::vector<bool> recursive;

    void makeProgram() {
        callees.assign(functions + 1, {});
        recursive.assign(functions + 1, false);
        for (uint32_t f = 1; f <= functions; ++f) {
            const uint32_t level = f * 10 / (functions + 1);
            if (level >= 9) continue;  // leaves
            const unsigned n = 1 + unsigned(rng() % 5);
            for (unsigned k = 0; k < n; ++k) {
                const uint32_t lo = std::max<uint32_t>(f + 1, (level + 1) * (functions + 1) / 10);
                callees[f].push_back(lo + uint32_t(rng() % (functions + 1 - lo)));
            }
            recursive[f] = rng() % 8 == 0;
        }
    }

    // One frame and its callees, depth first; spans are emitted in start order.
    void frame(uint32_t function, int32_t depth, size_t& budget) {
        const size_t at = batch.size();
        batch.push_back({time, 0, function, depth, 0, -1});
        uint64_t insns = 1 + rng() % 40;
        time += 1 + rng() % 30;
        const auto& graph = callees[function];
        const unsigned calls =
            graph.empty() || depth >= 40 ? 0 : unsigned(rng() % (2 * graph.size() + 1)) + (depth < 3);
        for (unsigned c = 0; c < calls && budget > 0; ++c) {
            --budget;
            if (rng() % 200 == 0) {
                // Untraced time below the frame (a syscall in a user-only trace).
                gaps.push_back({GapReason::Untraced, "tracing disabled", 0, 0});
                const uint64_t d = 100 + rng() % 2000;
                batch.push_back({time, time + d, 0, depth + 1, 0, int32_t(gaps.size() - 1)});
                time += d;
                continue;
            }
            // Recursion now and then; otherwise a callee from a skewed distribution.
            // Skewed towards a function's first callees, as hot paths are.
            const size_t n = graph.size(), k = (rng() % n) * (rng() % n) / n;
            const uint32_t callee = recursive[function] && rng() % 4 == 0 ? function : graph[k];
            frame(callee, depth + 1, budget);
            const uint64_t more = rng() % 20;
            insns += more;
            time += more;
        }
        batch[at].end = time;
        batch[at].instructions = insns;
    }
};

// `programSeed` (0: `seed`) makes the program, `seed` the paths taken through it.
inline std::map<int32_t, SpanStore> makeSpans(uint64_t total, unsigned threadCount, uint64_t seed,
                                              uint64_t programSeed = 0) {
    std::map<int32_t, SpanStore> stores;
    for (unsigned t = 0; t < threadCount; ++t) {
        Generator g;
        g.rng.seed(programSeed ? programSeed : seed);
        g.makeProgram();  // every thread runs the same program
        g.rng.seed(seed * 1000 + t);
        SpanStore& store = stores[int32_t(1000 + t)];
        const uint64_t want = total / threadCount + (t < total % threadCount ? 1 : 0);
        store.reserve(want);
        uint64_t made = 0;
        while (made < want) {
            g.batch.clear();
            g.gaps.clear();
            while (g.batch.size() < (1u << 20) && made + g.batch.size() < want) {
                size_t budget = std::min<uint64_t>(4000, want - made - g.batch.size() - 1);
                g.frame(1 + uint32_t(g.rng() % 40), 0, budget);
            }
            if (made + g.batch.size() > want) g.batch.resize(want - made);
            store.append(g.batch, g.gaps);
            made += g.batch.size();
        }
    }
    return stores;
}

}  // namespace auxscope::bench
