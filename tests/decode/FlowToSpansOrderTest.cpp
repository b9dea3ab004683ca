// SPDX-License-Identifier: GPL-3.0-or-later
// FlowToSpans gives spans in pre-order and marks the frames it found running;
// SpanStore keeps both in 16 bytes a span; RangeStats takes callers from the
// order (not from times) and counts no call for a frame found running.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "spans/FlowToSpans.h"
#include "spans/RangeStats.h"
#include "spans/SpanStore.h"

using namespace auxscope;

namespace {

enum : uint32_t { Main = 1, A, B, C, H };

std::map<int32_t, SpanStore> store(FlowToSpans& flow, uint64_t end) {
    flow.finish(end);
    auto taken = flow.take();
    std::map<int32_t, SpanStore> stores;
    storeSpans(taken, stores);
    return stores;
}

std::vector<Span> spansOf(const SpanStore& s) {
    std::vector<Span> out;
    for (size_t i = 0; i < s.size(); ++i)
        out.push_back(s.at(i));
    return out;
}

const RangeCost& costOf(const RangeStats& s, uint32_t f) {
    static RangeCost none;
    for (const auto& fs : s.functions)
        if (fs.function == f) return fs.cost;
    return none;
}

// Frames that open and close within one tick: main calls A, A calls B, both
// return, main calls C, all at time 10. Ordered by start then depth, C would
// come before B and B would read as C's callee.
TEST(FlowToSpansOrder, FramesOfOneTickComeInPreOrder) {
    FlowToSpans flow;
    flow.instructions(10, Main, 1, BranchClass::Call);
    flow.instructions(10, A, 1, BranchClass::Call);
    flow.instructions(10, B, 2, BranchClass::Return);
    flow.instructions(10, A, 1, BranchClass::Return);
    flow.instructions(10, Main, 1, BranchClass::Call);
    flow.instructions(10, C, 3, BranchClass::Return);
    flow.instructions(20, Main, 1, BranchClass::Other);
    auto stores = store(flow, 30);
    const std::vector<Span> spans = spansOf(stores[-1]);
    ASSERT_EQ(spans.size(), 4u);
    EXPECT_EQ(spans[0].function, Main);
    EXPECT_EQ(spans[1].function, A);
    EXPECT_EQ(spans[2].function, B);
    EXPECT_EQ(spans[3].function, C);
    EXPECT_EQ(spans[2].depth, 2);
    EXPECT_EQ(spans[3].depth, 1);

    auto stats = computeRangeStats(stores, {});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(costOf(*stats, B).calls, 1u);
    EXPECT_EQ(costOf(*stats, C).calls, 1u);
    EXPECT_EQ(costOf(*stats, C).totalInsns, 3u);  // not B's as well
    EXPECT_EQ(costOf(*stats, A).totalInsns, 4u);
    EXPECT_EQ(costOf(*stats, Main).totalInsns, 10u);
    EXPECT_EQ(stats->tree.stack(stats->tree.size() - 1), (std::vector<uint32_t>{Main, C}));
}

TEST(FlowToSpansOrder, FramesFoundRunningAreMarkedAndAreNoCalls) {
    FlowToSpans flow;
    flow.instructions(10, A, 2, BranchClass::Return);   // found running, returns past it:
    flow.instructions(20, Main, 1, BranchClass::Call);  // its caller is found running too
    flow.instructions(30, B, 1, BranchClass::FarCall);  // a system call, untraced
    flow.gap(35, GapReason::Untraced, "tracing disabled");
    flow.instructions(40, H, 2, BranchClass::Jump);    // resumes in a signal handler
    flow.instructions(50, C, 1, BranchClass::Return);  // a tail call from it
    flow.instructions(60, Main, 1, BranchClass::Other);
    auto stores = store(flow, 70);
    const std::vector<Span> spans = spansOf(stores[-1]);
    ASSERT_EQ(spans.size(), 6u);
    // A (depth 1, the caller found later is 0), Main, B, the gap, H, C.
    EXPECT_EQ(spans[0].function, A);
    EXPECT_TRUE(spans[0].outermost && spans[0].foundRunning);
    EXPECT_EQ(spans[1].function, Main);
    EXPECT_TRUE(spans[1].outermost && spans[1].foundRunning);
    EXPECT_EQ(spans[2].function, B);
    EXPECT_FALSE(spans[2].foundRunning || spans[2].outermost);
    EXPECT_TRUE(spans[3].isGap());
    EXPECT_FALSE(spans[3].foundRunning || spans[3].outermost);
    EXPECT_EQ(spans[4].function, H);
    EXPECT_TRUE(spans[4].foundRunning);
    EXPECT_FALSE(spans[4].outermost);
    EXPECT_EQ(spans[5].function, C);
    EXPECT_FALSE(spans[5].foundRunning || spans[5].outermost);
    for (size_t i = 1; i < spans.size(); ++i)
        EXPECT_LE(spans[i - 1].start, spans[i].start);

    auto stats = computeRangeStats(stores, {});
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(costOf(*stats, A).calls, 0u);
    EXPECT_EQ(costOf(*stats, Main).calls, 0u);
    EXPECT_EQ(costOf(*stats, B).calls, 1u);
    EXPECT_EQ(costOf(*stats, H).calls, 0u);  // entered by the kernel
    EXPECT_EQ(costOf(*stats, C).calls, 1u);  // a tail call is a call
    EXPECT_EQ(stats->instructions(), 8u);
}

// The flags ride in PackedSpan::function below the gap flag: 16 bytes a span.
TEST(FlowToSpansOrder, SpanStoreKeepsTheFlagsInSixteenBytes) {
    std::vector<Span> in;
    for (uint32_t k = 0; k < 64; ++k) {
        Span s{100 + k, 110 + k, (SpanStore::kFunctionMask - 64) + k, int32_t(k % 5), k, -1};
        s.foundRunning = k % 2;
        s.outermost = k % 4 == 1;
        in.push_back(s);
    }
    in.push_back({200, 300, 0, 0, 0, 0});  // a gap
    std::vector<Gap> gaps{{GapReason::LostAux, "lost", 0, 0}};
    SpanStore s;
    s.append(in, gaps);
    EXPECT_EQ(spansOf(s), in);
    EXPECT_LE(s.spanBytes(), 16 * s.size() + 64);
    SpanStore copy;
    ASSERT_TRUE(copy.appendStore(s));
    EXPECT_EQ(spansOf(copy), in);
    std::vector<Span> visited;
    s.forEach(3, s.size(), [&](size_t i, const Span& span) {
        EXPECT_EQ(span, in[i]);
        visited.push_back(span);
    });
    EXPECT_EQ(visited.size(), in.size() - 3);
}

// take() before finish() hands over the spans before the first one still open.
TEST(FlowToSpansOrder, TakeBeforeFinishKeepsOpenFrames) {
    FlowToSpans flow;
    flow.instructions(10, Main, 1, BranchClass::Call);
    flow.instructions(20, A, 1, BranchClass::Return);
    flow.instructions(30, Main, 1, BranchClass::Other);
    flow.gap(40, GapReason::LostAux, "lost");  // closes the stretch
    flow.instructions(50, B, 1, BranchClass::Call);
    flow.instructions(60, C, 1, BranchClass::Other);
    auto first = flow.take();
    ASSERT_EQ(first.count(-1), 1u);
    ASSERT_EQ(first[-1].spans.size(), 2u);  // main and A; the gap is still open
    EXPECT_EQ(first[-1].spans[1].function, A);
    EXPECT_EQ(first[-1].spans[1].end, 30u);
    flow.finish(70);
    auto rest = flow.take();
    ASSERT_EQ(rest[-1].spans.size(), 3u);  // the gap, B, C
    EXPECT_TRUE(rest[-1].spans[0].isGap());
    EXPECT_EQ(rest[-1].gaps[size_t(rest[-1].spans[0].gap)].reason, GapReason::LostAux);
    EXPECT_EQ(rest[-1].spans[2].function, C);
    EXPECT_EQ(rest[-1].spans[2].end, 70u);
}

}  // namespace
