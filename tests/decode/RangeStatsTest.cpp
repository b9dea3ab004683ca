// SPDX-License-Identifier: GPL-3.0-or-later
// spans/RangeStats on hand-made spans with known answers: costs, clipping,
// recursion, gaps, bottom-up, and parallel pieces equal to one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "spans/FlowToSpans.h"
#include "spans/RangeStats.h"

using namespace auxscope;

namespace {

// ---------------------------------------------------------------- hand-made spans

SpanStore storeOf(std::vector<Span> spans, std::vector<Gap> gaps = {}) {
    sortSpans(spans);
    SpanStore store;
    store.append(spans, gaps);
    return store;
}

Span frame(uint64_t start, uint64_t end, uint32_t function, int32_t depth, uint64_t insns) {
    return {start, end, function, depth, insns, -1};
}

const RangeCost& costOf(const RangeStats& s, uint32_t f) {
    static RangeCost none;
    for (const auto& fs : s.functions)
        if (fs.function == f) return fs.cost;
    return none;
}

// main(1) [0,100) 10 insns; f(2) [10,40) 6; g(3) [20,30) 4; f(2) [50,60) 2.
std::map<int32_t, SpanStore> simpleThread() {
    std::map<int32_t, SpanStore> t;
    t[7] = storeOf(
        {frame(0, 100, 1, 0, 10), frame(10, 40, 2, 1, 6), frame(20, 30, 3, 2, 4), frame(50, 60, 2, 1, 2)});
    return t;
}

TEST(RangeStats, WholeRangeOfASimpleStack) {
    auto stats = computeRangeStats(simpleThread(), {});
    ASSERT_TRUE(stats.ok()) << stats.error().message;
    EXPECT_EQ(stats->spans, 4u);
    EXPECT_EQ(stats->instructions(), 22u);
    EXPECT_EQ(costOf(*stats, 1), (RangeCost{0, 100, 60, 22, 10}));  // a root: found running, not a call
    EXPECT_EQ(costOf(*stats, 2), (RangeCost{2, 40, 30, 12, 8}));
    EXPECT_EQ(costOf(*stats, 3), (RangeCost{1, 10, 10, 4, 4}));
    // Tree: main -> f -> g.
    ASSERT_EQ(stats->tree.size(), 4u);
    EXPECT_EQ(stats->tree.stack(3), (std::vector<uint32_t>{1, 2, 3}));
    EXPECT_EQ(stats->tree.nodes[0].cost.totalTime, 100u);
    // Bottom-up: g's callers are f, then main.
    CallTree bu = stats->bottomUp();
    uint32_t g = bu.child(0, 3), gf = bu.child(g, 2), gfm = bu.child(gf, 1);
    EXPECT_EQ(bu.nodes[gfm].cost.selfTime, 10u);
    EXPECT_EQ(bu.nodes[bu.child(0, 2)].cost.calls, 2u);
    auto flames = stats->flameStacks();
    uint64_t self = 0;
    for (const auto& f : flames)
        self += f.selfTime;
    EXPECT_EQ(self, 100u);  // the self times tile the outermost frame
    auto top = stats->topFunctions(RangeSort::SelfTime, 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].function, 1u);
    EXPECT_EQ(top[1].function, 2u);
}

TEST(RangeStats, ClippedSpansSplitInstructionsExactly) {
    const auto threads = simpleThread();
    // Ranges cutting every span, adding up to the whole.
    const std::vector<uint64_t> cuts{0, 7, 15, 25, 33, 55, 99, 100};
    RangeCost sum[4];
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        RangeQuery q;
        q.begin = cuts[i];
        q.end = cuts[i + 1];
        auto stats = computeRangeStats(threads, q);
        ASSERT_TRUE(stats.ok());
        for (uint32_t f = 1; f <= 3; ++f) {
            sum[f].selfInsns += costOf(*stats, f).selfInsns;
            sum[f].selfTime += costOf(*stats, f).selfTime;
            sum[f].calls += costOf(*stats, f).calls;
        }
    }
    EXPECT_EQ(sum[1].selfInsns, 10u);
    EXPECT_EQ(sum[2].selfInsns, 8u);
    EXPECT_EQ(sum[3].selfInsns, 4u);
    EXPECT_EQ(sum[1].selfTime, 60u);
    EXPECT_EQ(sum[2].calls, 2u);
    EXPECT_EQ(sum[3].calls, 1u);
    // [25, 33): g's second half (2 of 4 insns), f around it.
    RangeQuery q;
    q.begin = 25;
    q.end = 33;
    auto stats = computeRangeStats(threads, q);
    EXPECT_EQ(costOf(*stats, 3), (RangeCost{0, 5, 5, 2, 2}));  // entered before the range: no call
    EXPECT_EQ(costOf(*stats, 2).totalTime, 8u);
    EXPECT_EQ(costOf(*stats, 2).selfTime, 3u);
}

TEST(RangeStats, RecursionCountsTotalsOncePerStack) {
    std::map<int32_t, SpanStore> t;
    // f [0,100) -> f [10,90) -> f [20,80) -> g [30,40)
    t[1] = storeOf(
        {frame(0, 100, 5, 0, 3), frame(10, 90, 5, 1, 3), frame(20, 80, 5, 2, 3), frame(30, 40, 6, 3, 1)});
    auto stats = computeRangeStats(t, {});
    EXPECT_EQ(costOf(*stats, 5), (RangeCost{2, 100, 90, 10, 9}));
    EXPECT_EQ(costOf(*stats, 6), (RangeCost{1, 10, 10, 1, 1}));
    CallTree bu = stats->bottomUp();
    EXPECT_EQ(bu.nodes[bu.child(0, 5)].cost.totalTime, 100u);
}

TEST(RangeStats, GapsAreSummedPerReasonAndTakenFromSelfTime) {
    std::vector<Gap> gaps{{GapReason::Untraced, "syscall", 0, 0}, {GapReason::LostAux, "lost", 0, 0}};
    std::map<int32_t, SpanStore> t;
    t[1] = storeOf(
        {frame(0, 50, 1, 0, 5), {20, 30, 0, 1, 0, 0}, {50, 70, 0, 0, 0, 1}, frame(70, 80, 2, 0, 1)}, gaps);
    auto stats = computeRangeStats(t, {});
    EXPECT_EQ(stats->gaps.at(GapReason::Untraced).time, 10u);
    EXPECT_EQ(stats->gaps.at(GapReason::LostAux).time, 20u);
    EXPECT_EQ(stats->gaps.at(GapReason::LostAux).count, 1u);
    EXPECT_EQ(costOf(*stats, 1).selfTime, 40u);
    EXPECT_EQ(stats->threads.at(1).frameTime, 60u);
}

// Many spans: split over threads and pieces equals one thread; cancel stops it.
std::map<int32_t, SpanStore> manySpans(size_t n) {
    std::map<int32_t, SpanStore> t;
    std::vector<Span> spans;
    uint64_t time = 1000;
    uint32_t next = 0;
    while (spans.size() < n) {
        const uint64_t start = time;
        spans.push_back(frame(start, 0, 1 + next % 3, 0, 5));
        const size_t root = spans.size() - 1;
        for (int k = 0; k < 3; ++k) {
            spans.push_back(frame(time + 1, time + 5, 10 + (next + k) % 7, 1, 3));
            spans.push_back(frame(time + 2, time + 4, 20 + k, 2, 2));
            time += 6;
        }
        spans[root].end = time++;
        ++next;
    }
    SpanStore& s = t[1];
    s.append(spans);
    t[2] = storeOf({frame(1000, 5000, 1, 0, 7)});
    return t;
}

TEST(RangeStats, ParallelPiecesEqualOneThread) {
    const auto threads = manySpans(3'500'000);
    RangeQuery one;
    one.begin = 5000;
    one.end = 3'000'000;
    RangeQuery all = one;
    all.threads = 4;
    std::atomic<uint64_t> last{0}, total{0};
    all.progress = [&](uint64_t done, uint64_t of) {
        last = done;
        total = of;
    };
    auto a = computeRangeStats(threads, one);
    auto b = computeRangeStats(threads, all);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->functions.size(), b->functions.size());
    for (size_t i = 0; i < a->functions.size(); ++i) {
        EXPECT_EQ(a->functions[i].function, b->functions[i].function);
        EXPECT_EQ(a->functions[i].cost, b->functions[i].cost) << a->functions[i].function;
    }
    EXPECT_EQ(a->tree.size(), b->tree.size());
    EXPECT_EQ(a->instructions(), b->instructions());
    EXPECT_GT(total.load(), 1'000'000u);
    EXPECT_EQ(last.load(), total.load());

    std::atomic<bool> cancel{true};
    RangeQuery cancelled = all;
    cancelled.cancel = &cancel;
    auto c = computeRangeStats(threads, cancelled);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message, "cancelled");
}

// ---------------------------------------------------------------- against a naive recount

// Spans the way a decode makes them, per thread: stretches of calls walked depth
// first with recursion, untraced gaps below frames, lost trace between
// stretches, outermost frames at depth > 0 (a segment starting inside a call)
// and found-running frames; one thread under a single long frame at depth 0
// (main), so a piece's open frames reach back to the thread's first span.
struct Walk {
    std::mt19937_64 rng;
    uint64_t time = 1000;
    std::vector<Span> spans;
    std::vector<Gap> gaps;

    void frame(uint32_t function, int32_t depth, bool outermost, int budget) {
        const size_t at = spans.size();
        Span s{time, 0, function, depth, 1 + rng() % 9, -1};
        s.outermost = outermost;
        s.foundRunning = outermost || rng() % 50 == 0;
        spans.push_back(s);
        time += 1 + rng() % 5;
        const int calls = depth > 12 ? 0 : int(rng() % 4);
        for (int c = 0; c < calls && budget > 0; ++c) {
            if (rng() % 25 == 0) {
                gaps.push_back({GapReason::Untraced, "syscall", 0, 0});
                const uint64_t d = 1 + rng() % 20;
                spans.push_back({time, time + d, 0, depth + 1, 0, int32_t(gaps.size() - 1)});
                time += d + 1;
                continue;
            }
            const uint32_t callee = rng() % 5 == 0 ? function : 1 + uint32_t(rng() % 40);
            frame(callee, depth + 1, false, budget / 2);
            time += rng() % 3;
        }
        spans[at].end = time;
        time += 1;
    }
};

std::map<int32_t, SpanStore> walkedThreads(uint64_t seed) {
    std::map<int32_t, SpanStore> out;
    for (int t = 0; t < 3; ++t) {
        Walk w;
        w.rng.seed(seed * 10 + uint64_t(t));
        const bool underMain = t == 1;
        if (underMain) {
            w.spans.push_back({w.time, 0, 99, 0, 3, -1, true, true});
            w.time += 2;
        }
        while (w.spans.size() < 6000) {
            if (w.rng() % 30 == 0) {
                w.gaps.push_back({GapReason::LostAux, "lost", 0, 0});
                const uint64_t d = 5 + w.rng() % 50;
                w.spans.push_back({w.time, w.time + d, 0, underMain ? 1 : 0, 0, int32_t(w.gaps.size() - 1)});
                w.time += d + 1;
            }
            // A stretch: from the outermost frame, at depth 0 or (a segment that
            // starts inside a call) deeper.
            const int32_t depth = underMain ? 1 : w.rng() % 4 == 0 ? int32_t(1 + w.rng() % 3) : 0;
            // (Under main no frame is outermost: an outermost frame means every
            // frame before it has ended, as in a decode.)
            w.frame(1 + uint32_t(w.rng() % 40), depth, !underMain, 64);
        }
        if (underMain) w.spans[0].end = w.time++;
        SpanStore& store = out[int32_t(100 + t)];
        store.append(w.spans, w.gaps);
    }
    return out;
}

// The statistics counted naively: every span of every thread in order, a stack
// of open frames with their whole stacks, costs in a map keyed by stack.
struct Naive {
    std::map<std::vector<uint32_t>, RangeCost> stacks;
    std::map<int32_t, ThreadRangeStats> threads;
    std::map<GapReason, GapTotal> gaps;
    uint64_t spans = 0;
};

Naive naiveStats(const std::map<int32_t, SpanStore>& threads, uint64_t a, uint64_t b) {
    Naive out;
    for (const auto& [tid, store] : threads) {
        ThreadRangeStats& thread = out.threads[tid];
        std::vector<std::pair<int32_t, std::vector<uint32_t>>> open;  // depth, stack
        for (size_t i = 0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (s.outermost)
                open.clear();
            else
                while (!open.empty() && open.back().first >= s.depth)
                    open.pop_back();
            const bool hasCaller = !open.empty() && open.back().first == s.depth - 1;
            const bool inside = s.start < b && (s.start >= a || s.end > a);
            const uint64_t from = std::max(s.start, a), to = std::min(s.end, b);
            const uint64_t t = to > from ? to - from : 0;
            if (s.isGap()) {
                if (!inside) continue;
                GapTotal& g = thread.gaps[store.gaps()[size_t(s.gap)].reason];
                ++g.count;
                g.time += t;
                ++thread.spans;
                ++out.spans;
                if (hasCaller) out.stacks[open.back().second].selfTime -= t;
                continue;
            }
            std::vector<uint32_t> stack = hasCaller ? open.back().second : std::vector<uint32_t>{};
            stack.push_back(s.function);
            open.push_back({s.depth, stack});
            if (!inside) continue;
            // Instructions spread evenly over the span's time.
            uint64_t n = s.instructions;
            if ((s.start < a || s.end > b) && s.end > s.start) {
                auto f = [&](uint64_t x) {
                    return uint64_t((unsigned __int128)s.instructions * (x - s.start) / (s.end - s.start));
                };
                n = f(std::min(s.end, b)) - f(std::max(s.start, a));
            }
            RangeCost& c = out.stacks[stack];
            c.totalTime += t;
            c.selfTime += t;
            c.selfInsns += n;
            ++thread.spans;
            ++out.spans;
            thread.instructions += n;
            if (hasCaller) {
                out.stacks[open[open.size() - 2].second].selfTime -= t;
                if (s.start >= a && !s.foundRunning) {
                    ++c.calls;
                    ++thread.calls;
                }
            } else {
                thread.frameTime += t;
            }
        }
        for (const auto& [reason, g] : thread.gaps) {
            out.gaps[reason].count += g.count;
            out.gaps[reason].time += g.time;
        }
    }
    return out;
}

// Every stack of `tree` with its costs (but the instruction totals).
std::map<std::vector<uint32_t>, RangeCost> stacksOf(const CallTree& tree) {
    std::map<std::vector<uint32_t>, RangeCost> out;
    for (uint32_t n = 1; n < tree.size(); ++n) {
        RangeCost c = tree.nodes[n].cost;
        c.totalInsns = 0;
        if (c != RangeCost{}) out[tree.stack(n)] = c;
    }
    return out;
}

void expectSameThreads(const std::map<int32_t, ThreadRangeStats>& got,
                       const std::map<int32_t, ThreadRangeStats>& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (const auto& [tid, w] : want) {
        const ThreadRangeStats& g = got.at(tid);
        EXPECT_EQ(g.spans, w.spans) << what << " tid " << tid;
        EXPECT_EQ(g.frameTime, w.frameTime) << what << " tid " << tid;
        EXPECT_EQ(g.instructions, w.instructions) << what << " tid " << tid;
        EXPECT_EQ(g.calls, w.calls) << what << " tid " << tid;
        ASSERT_EQ(g.gaps.size(), w.gaps.size()) << what << " tid " << tid;
        for (const auto& [reason, gt] : w.gaps) {
            EXPECT_EQ(g.gaps.at(reason).count, gt.count) << what;
            EXPECT_EQ(g.gaps.at(reason).time, gt.time) << what;
        }
    }
}

// The aggregation in pieces (many, small, on several threads, ranges cutting
// through spans) equals a naive recount, and its tree's nodes come in the same
// order as one thread's.
TEST(RangeStats, PiecesEqualANaiveRecount) {
    const auto threads = walkedThreads(7);
    uint64_t lastEnd = 0;
    for (const auto& [tid, store] : threads) {
        ASSERT_GT(store.size(), 5000u);
        lastEnd = std::max(lastEnd, store.lastStart());
    }
    const std::vector<std::pair<uint64_t, uint64_t>> windows = {
        {0, UINT64_MAX},                         // whole trace
        {lastEnd / 3 + 3, lastEnd / 3 * 2 + 1},  // through spans at both ends
        {lastEnd / 2, lastEnd / 2 + 40},         // a few spans, inside long ones
        {lastEnd - lastEnd / 10, UINT64_MAX},    // the end
        {1, 1000 + lastEnd / 7},                 // the start, cutting the first spans
    };
    for (const auto& [a, b] : windows) {
        const Naive naive = naiveStats(threads, a, b);
        ASSERT_GT(naive.spans, 10u);
        RangeQuery one;
        one.begin = a;
        one.end = b;
        one.threads = 1;
        auto reference = computeRangeStats(threads, one);
        ASSERT_TRUE(reference.ok());
        for (unsigned workers : {1u, 2u, 3u, 8u})
            for (size_t pieceSpans : {size_t(0), size_t(7), size_t(100), size_t(999)}) {
                const std::string what = "range [" + std::to_string(a) + ", " + std::to_string(b) + ") on " +
                                         std::to_string(workers) + " threads, pieces of " +
                                         std::to_string(pieceSpans);
                RangeQuery q = one;
                q.threads = workers;
                q.pieceSpans = pieceSpans;
                q.perThreadTrees = true;
                if (workers == 2) {
                    // A pool of one's own that runs the tasks last first: the
                    // result may not depend on the order pieces finish in.
                    q.parallel = [](size_t n, const std::function<void(size_t)>& task) {
                        for (size_t k = n; k-- > 0;)
                            task(k);
                    };
                }
                RangePhases phases;
                q.phases = &phases;
                auto stats = computeRangeStats(threads, q);
                ASSERT_TRUE(stats.ok()) << what;
                if (pieceSpans == 7 && naive.spans > 1000) {
                    EXPECT_GT(phases.pieces, 100u) << what;
                }
                EXPECT_EQ(stats->spans, naive.spans) << what;
                EXPECT_EQ(stacksOf(stats->tree), naive.stacks) << what;
                expectSameThreads(stats->threads, naive.threads, what);
                ASSERT_EQ(stats->gaps.size(), naive.gaps.size()) << what;
                for (const auto& [reason, g] : naive.gaps)
                    EXPECT_EQ(stats->gaps.at(reason).time, g.time) << what;
                // Same tree, node by node, as one thread; same functions.
                ASSERT_EQ(stats->tree.size(), reference->tree.size()) << what;
                for (uint32_t n = 0; n < stats->tree.size(); ++n) {
                    EXPECT_EQ(stats->tree.nodes[n].function, reference->tree.nodes[n].function) << what;
                    EXPECT_EQ(stats->tree.nodes[n].parent, reference->tree.nodes[n].parent) << what;
                    EXPECT_EQ(stats->tree.nodes[n].nextSibling, reference->tree.nodes[n].nextSibling) << what;
                    ASSERT_EQ(stats->tree.nodes[n].cost, reference->tree.nodes[n].cost)
                        << what << " node " << n;
                }
                ASSERT_EQ(stats->functions.size(), reference->functions.size()) << what;
                for (size_t k = 0; k < stats->functions.size(); ++k)
                    EXPECT_EQ(stats->functions[k].cost, reference->functions[k].cost) << what;
                // Each thread's tree: what that thread alone gives.
                for (const auto& [tid, t] : stats->threads) {
                    RangeQuery alone = one;
                    alone.tids = {tid};
                    auto single = computeRangeStats(threads, alone);
                    ASSERT_TRUE(single.ok());
                    EXPECT_EQ(stacksOf(t.tree), stacksOf(single->tree)) << what << " tid " << tid;
                    EXPECT_EQ(t.tree.size(), single->tree.size()) << what << " tid " << tid;
                }
            }
    }
}

}  // namespace
