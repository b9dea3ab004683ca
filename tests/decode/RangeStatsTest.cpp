// SPDX-License-Identifier: GPL-3.0-or-later
// spans/RangeStats on hand-made spans with known answers: costs, clipping,
// recursion, gaps, bottom-up, and parallel pieces equal to one thread.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
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

}  // namespace
