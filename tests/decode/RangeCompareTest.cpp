// SPDX-License-Identifier: GPL-3.0-or-later
// spans/RangeCompare on hand-made call trees: matching by name and binary or by
// name only, one-side functions, merged top-down and bottom-up trees, recursion
// counted once per stack, and the three normalisations.
#include <gtest/gtest.h>

#include <cmath>

#include "spans/RangeCompare.h"

using namespace auxscope;

namespace {

struct Side {
    FunctionTable functions;
    RangeStats stats;
    uint32_t fn(const std::string& name, const std::string& file) {
        for (uint32_t i = 0; i < functions.size(); ++i)
            if (functions[i].name == name && functions[i].file == file) return i;
        return functions.add({name, file, 0x1000 + functions.size() * 16, false});
    }
    // Adds a stack (outermost first) with the innermost frame's own cost.
    void stack(std::vector<uint32_t> path, uint64_t calls, uint64_t selfTime, uint64_t selfInsns) {
        uint32_t at = 0;
        for (uint32_t f : path) {
            at = stats.tree.child(at, f);
            stats.tree.nodes[at].cost.totalTime += selfTime;
        }
        stats.tree.nodes[at].cost.calls += calls;
        stats.tree.nodes[at].cost.selfTime += selfTime;
        stats.tree.nodes[at].cost.selfInsns += selfInsns;
    }
    CompareSide side() {
        finishTree(stats.tree);
        stats.functions = functionStatsOf(stats.tree);
        return {&stats, &functions};
    }
};

const ComparedFunction& named(const CompareResult& r, const std::string& name) {
    auto all = r.byName(name);
    EXPECT_EQ(all.size(), 1u) << name;
    return *all.at(0);
}

}  // namespace

TEST(RangeCompare, MatchesByNameAndBinaryNotAddress) {
    Side a, b;
    // B's table lists the functions in another order and at other addresses.
    const uint32_t bParse = b.fn("parse", "/opt/new/bin/prog");
    const uint32_t bMain = b.fn("main", "/opt/new/bin/prog");
    const uint32_t bNew = b.fn("fastpath", "/opt/new/bin/prog");
    const uint32_t aMain = a.fn("main", "/home/x/prog");
    const uint32_t aParse = a.fn("parse", "/home/x/prog");
    const uint32_t aOld = a.fn("slowpath", "/home/x/prog");
    const uint32_t aLibParse = a.fn("parse", "/usr/lib/libother.so");
    a.stack({aMain}, 1, 100, 10);
    a.stack({aMain, aParse}, 4, 400, 40);
    a.stack({aMain, aOld}, 2, 50, 5);
    a.stack({aMain, aLibParse}, 1, 7, 3);
    b.stack({bMain}, 1, 100, 10);
    b.stack({bMain, bParse}, 10, 1000, 100);
    b.stack({bMain, bNew}, 3, 30, 3);
    auto r = compareRanges(a.side(), b.side(), {});
    ASSERT_TRUE(r) << r.error().message;
    // parse of prog and parse of libother.so are two functions.
    auto parses = r->byName("parse");
    ASSERT_EQ(parses.size(), 2u);
    const ComparedFunction* prog = r->keys[parses[0]->key].file == "prog" ? parses[0] : parses[1];
    EXPECT_TRUE(prog->inA && prog->inB);
    EXPECT_EQ(prog->a.calls, 4u);
    EXPECT_EQ(prog->b.calls, 10u);
    EXPECT_DOUBLE_EQ(r->delta(prog->a, prog->b, CompareMetric::Calls), 6);
    EXPECT_DOUBLE_EQ(r->delta(prog->a, prog->b, CompareMetric::SelfInsns), 60);
    EXPECT_DOUBLE_EQ(r->deltaPercent(prog->a, prog->b, CompareMetric::SelfTime), 150);
    const ComparedFunction& m = named(*r, "main");
    EXPECT_EQ(m.a.totalTime, 557u);
    EXPECT_EQ(m.b.totalTime, 1130u);
    EXPECT_EQ(m.a.totalInsns, 58u);
    EXPECT_EQ(m.b.totalInsns, 113u);
    // One side only.
    auto onlyA = r->onlyInA();
    auto onlyB = r->onlyInB();
    ASSERT_EQ(onlyA.size(), 2u);  // slowpath, parse of libother.so
    ASSERT_EQ(onlyB.size(), 1u);
    EXPECT_EQ(r->keys[onlyB[0].key].name, "fastpath");
    EXPECT_TRUE(std::isnan(r->deltaPercent(onlyB[0].a, onlyB[0].b, CompareMetric::Calls)));
    // Sorted by |delta| of self time: parse (+600), slowpath (-50), fastpath (+30), ...
    auto top = r->sorted(CompareMetric::SelfTime, 'd', 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(r->keys[top[0].key].name, "parse");
    EXPECT_EQ(r->keys[top[1].key].name, "slowpath");
    EXPECT_EQ(r->keys[top[2].key].name, "fastpath");

    // By name only, the two parse functions of A become one.
    CompareOptions byName;
    byName.match = MatchBy::Name;
    auto rn = compareRanges(a.side(), b.side(), byName);
    ASSERT_TRUE(rn);
    const ComparedFunction& p = named(*rn, "parse");
    EXPECT_EQ(p.a.calls, 5u);
    EXPECT_EQ(p.a.selfInsns, 43u);
    EXPECT_EQ(p.b.calls, 10u);
}

TEST(RangeCompare, MergedTreesCarryBothSides) {
    Side a, b;
    const uint32_t am = a.fn("main", "p"), af = a.fn("f", "p"), ag = a.fn("g", "p");
    const uint32_t bm = b.fn("main", "p"), bf = b.fn("f", "p"), bh = b.fn("h", "p");
    a.stack({am, af, ag}, 2, 20, 200);
    a.stack({am, ag}, 1, 5, 50);
    b.stack({bm, bf, b.fn("g", "p")}, 3, 33, 300);
    b.stack({bm, bh}, 1, 9, 90);
    auto r = compareRanges(a.side(), b.side(), {});
    ASSERT_TRUE(r);
    const CompareTree& t = r->tree;
    // Nodes: main, main>f, main>f>g, main>g, main>h.
    ASSERT_EQ(t.size(), 6u);
    auto find = [&](const CompareTree& tree, std::vector<std::string> path) {
        uint32_t at = 0;
        for (const std::string& name : path) {
            uint32_t next = CallTree::kNone;
            for (uint32_t c : tree.shape.children(at))
                if (r->keys[tree.shape.nodes[c].function].name == name) next = c;
            if (next == CallTree::kNone) return CallTree::kNone;
            at = next;
        }
        return at;
    };
    const uint32_t fg = find(t, {"main", "f", "g"});
    ASSERT_NE(fg, CallTree::kNone);
    EXPECT_EQ(t.a[fg].calls, 2u);
    EXPECT_EQ(t.b[fg].calls, 3u);
    EXPECT_EQ(t.b[fg].selfInsns, 300u);
    const uint32_t mg = find(t, {"main", "g"});
    EXPECT_EQ(t.a[mg].calls, 1u);
    EXPECT_EQ(t.b[mg], RangeCost{});
    const uint32_t mh = find(t, {"main", "h"});
    EXPECT_EQ(t.a[mh], RangeCost{});
    EXPECT_EQ(t.b[mh].selfTime, 9u);
    EXPECT_EQ(t.a[0].totalInsns, 250u);
    EXPECT_EQ(t.b[0].totalInsns, 390u);
    // Bottom-up: g at the root, reached from f (and main) and from main.
    const CompareTree up = r->bottomUp();
    const uint32_t bg = find(up, {"g"});
    ASSERT_NE(bg, CallTree::kNone);
    EXPECT_EQ(up.a[bg].calls, 3u);
    EXPECT_EQ(up.b[bg].calls, 3u);
    const uint32_t bgf = find(up, {"g", "f"});
    EXPECT_EQ(up.a[bgf].selfInsns, 200u);
    EXPECT_EQ(up.b[bgf].selfInsns, 300u);
    EXPECT_EQ(find(up, {"h", "main"}) != CallTree::kNone, true);
}

TEST(RangeCompare, RecursionCountsOncePerStack) {
    Side a, b;
    const uint32_t am = a.fn("main", "p"), ar = a.fn("rec", "p");
    const uint32_t bm = b.fn("main", "p"), br = b.fn("rec", "p");
    a.stack({am, ar, ar, ar}, 3, 30, 3);
    b.stack({bm, br}, 1, 10, 1);
    auto r = compareRanges(a.side(), b.side(), {});
    ASSERT_TRUE(r);
    const ComparedFunction& rec = named(*r, "rec");
    EXPECT_EQ(rec.a.totalTime, 30u);  // not 90
    EXPECT_EQ(rec.a.calls, 3u);
    EXPECT_EQ(rec.b.totalTime, 10u);
}

TEST(RangeCompare, Normalisation) {
    Side a, b;
    const uint32_t am = a.fn("main", "p"), ah = a.fn("handle", "p");
    const uint32_t bm = b.fn("main", "p"), bh = b.fn("handle", "p");
    a.stack({am}, 1, 100, 0);
    a.stack({am, ah}, 10, 1000, 500);
    b.stack({bm}, 1, 200, 0);
    b.stack({bm, bh}, 40, 2000, 4000);
    // Per run: B (2200 ns) scaled to A's 1100 ns.
    CompareOptions total;
    total.normalize.kind = CompareNormalize::Total;
    auto r = compareRanges(a.side(), b.side(), total);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->totalA, 1100u);
    EXPECT_EQ(r->totalB, 2200u);
    const ComparedFunction& h = named(*r, "handle");
    EXPECT_DOUBLE_EQ(r->scaledB(h.b, CompareMetric::SelfTime), 1000);
    EXPECT_DOUBLE_EQ(r->delta(h.a, h.b, CompareMetric::SelfTime), 0);
    // Per call of handle: A 100 ns and 50 insns a call, B 50 ns and 100.
    CompareOptions perCall;
    perCall.normalize = {CompareNormalize::PerCall, "handle"};
    auto p = compareRanges(a.side(), b.side(), perCall);
    ASSERT_TRUE(p) << p.error().message;
    const ComparedFunction& hp = named(*p, "handle");
    EXPECT_DOUBLE_EQ(p->scaledA(hp.a, CompareMetric::SelfTime), 100);
    EXPECT_DOUBLE_EQ(p->scaledB(hp.b, CompareMetric::SelfTime), 50);
    EXPECT_DOUBLE_EQ(p->delta(hp.a, hp.b, CompareMetric::SelfInsns), 50);
    EXPECT_DOUBLE_EQ(p->deltaPercent(hp.a, hp.b, CompareMetric::SelfInsns), 100);
    perCall.normalize.function = "nothing";
    auto bad = compareRanges(a.side(), b.side(), perCall);
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("nothing"), std::string::npos);
}

TEST(RangeCompare, RefusesDifferentSources) {
    Side a, b;
    a.stats.source.kind = RangeSource::Samples;
    a.stats.source.event = "cpu-clock";
    b.stats.source.kind = RangeSource::Samples;
    b.stats.source.event = "cycles";
    auto r = compareRanges(a.side(), b.side(), {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cpu-clock"), std::string::npos);
    EXPECT_NE(r.error().message.find("cycles"), std::string::npos);
    b.stats.source = RangeSource{};
    EXPECT_FALSE(compareRanges(a.side(), b.side(), {}));
}

// A tree naming an id its table lacks (not from one decode) counts it as unknown code, no throw.
TEST(RangeCompare, IdOutsideTheTableIsUnknown) {
    Side a, b;
    const uint32_t am = a.fn("main", "p");
    const uint32_t bm = b.fn("main", "p");
    a.stack({am, 99}, 1, 10, 1);
    b.stack({bm}, 1, 10, 1);
    auto r = compareRanges(a.side(), b.side(), {});
    ASSERT_TRUE(r);
    const ComparedFunction& u = named(*r, "[unknown]");
    EXPECT_EQ(u.a.calls, 1u);
    EXPECT_TRUE(u.inA && !u.inB);
}
