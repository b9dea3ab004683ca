// SPDX-License-Identifier: GPL-3.0-or-later
// Intel PT call stacks across segment cuts (spans/SegmentedDecode.h, "Frames
// across cuts"): a trace cut at every PSB decodes to the span tree of the same
// trace decoded as one segment, and its range statistics equal the generator's
// truth of the whole flow -- whole, windowed, from the cache, on one thread or
// several.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "PtSynthTruth.h"
#include "TestSupport.h"
#include "TruthCosts.h"
#include "auxtrace/AuxTraceDecode.h"
#include "perfdata/PerfDataReader.h"
#include "spans/RangeStats.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

using test_support::TruthCosts;
using test_support::TruthProgram;
using Costs = TruthCosts;

// The truth's costs of instructions [from, to) when the stack is rebuilt from
// `from` on, with no restart in between (test_support::addTruthCosts).
Costs truthCosts(const ptsynth::Truth& truth, const TruthProgram& program, size_t from, size_t to) {
    Costs out;
    test_support::addTruthCosts(truth, program, from, to, out);
    return test_support::nonZero(out);
}

Costs decodedCosts(const DecodedSpans& decoded, const AuxTraceSession& session) {
    auto stats = computeRangeStats(decoded.threads, {});
    EXPECT_TRUE(stats.ok());
    if (!stats.ok()) return {};
    return test_support::nonZero(test_support::costsByName(*stats, session.functions()));
}

// The frames of one thread's spans as (function, depth, instructions, found
// running, outermost) in order: the span tree without its times (near a cut
// they are estimates: a segment keeps its time below the next one's PSB, and
// a frame that closes at a cut ends where its segment ends).
struct Frame {
    uint32_t function;
    int32_t depth;
    uint64_t instructions;
    bool foundRunning, outermost;
    bool operator==(const Frame&) const = default;
};
std::vector<Frame> frames(const DecodedSpans& decoded) {
    std::vector<Frame> out;
    for (const auto& [tid, store] : decoded.threads)
        for (size_t i = 0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (!s.isGap()) out.push_back({s.function, s.depth, s.instructions, s.foundRunning, s.outermost});
        }
    return out;
}

std::string firstDifference(const std::vector<Frame>& got, const std::vector<Frame>& want) {
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        if (!(got[i] == want[i]))
            return "span " + std::to_string(i) + ": function " + std::to_string(got[i].function) + "/" +
                   std::to_string(want[i].function) + " depth " + std::to_string(got[i].depth) + "/" +
                   std::to_string(want[i].depth) + " insns " + std::to_string(got[i].instructions) + "/" +
                   std::to_string(want[i].instructions);
    return "sizes " + std::to_string(got.size()) + "/" + std::to_string(want.size());
}

// SpanStore::edited (what the join does to a part, on packed spans) equals the
// same edit on unpacked spans: drops, depth shifts of two ranges (lossy gaps
// kept), replaced spans, wide values both ways, a chunk boundary, a dropped
// chunk head.
TEST(SpanStoreEdit, EditedEqualsTheEditOnUnpackedSpans) {
    std::vector<Span> spans;
    std::vector<Gap> gaps{{GapReason::Untraced, "untraced", 0, 0}, {GapReason::Overflow, "overflow", 0, 0}};
    uint64_t t = 1000;
    for (uint32_t i = 0; i < 40; ++i) {
        Span s;
        s.start = t;
        s.end = t + 50 + i;
        s.function = 7 + i % 5;
        s.depth = int32_t(i % 6);
        s.instructions = 10 + i;
        s.foundRunning = i % 7 == 0;
        s.outermost = i % 14 == 0;
        if (i == 5) s.instructions = 5'000'000;               // wide: instructions
        if (i == 9) s.end = s.start + (uint64_t(1) << 33);    // wide: duration
        if (i == 12) s.gap = 0, s.depth = 2, s.function = 0;  // untraced gap: shifted
        if (i == 20) s.gap = 1, s.depth = 0, s.function = 0;  // overflow: never shifted
        if (i == 30) s.depth = 4094;                          // goes wide when shifted
        spans.push_back(s);
        t += i == 24 ? (uint64_t(5) << 30) : 10;  // a new chunk from span 25
    }
    SpanStore store;
    store.append(spans, gaps);
    const std::vector<uint32_t> drop{3, 9, 25};
    std::vector<std::pair<uint32_t, Span>> replace;
    Span r = spans[5];
    r.instructions = 7, r.end = r.start + 1, r.foundRunning = r.outermost = false;
    replace.push_back({5, r});
    r = spans[31];
    r.instructions = 3'000'000, r.end = r.start + (uint64_t(1) << 34);
    replace.push_back({31, r});
    SpanStore::Edit edit;
    edit.drop = drop;
    edit.shift = 3;
    edit.shiftEnd = 22;
    edit.lastShift = 2;
    edit.lastBegin = 18;
    edit.replace = replace;
    const SpanStore got = store.edited(edit);
    std::vector<Span> want;
    for (uint32_t i = 0; i < spans.size(); ++i) {
        if (std::find(drop.begin(), drop.end(), i) != drop.end()) continue;
        Span s = spans[i];
        for (const auto& [index, with] : replace)
            if (index == i) {
                s.end = with.end, s.instructions = with.instructions;
                s.foundRunning = with.foundRunning, s.outermost = with.outermost;
            }
        if (s.gap != 1) s.depth += (i < 22 ? 3 : 0) + (i >= 18 ? 2 : 0);
        want.push_back(s);
    }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        EXPECT_EQ(got.at(i), want[i]) << "span " << i;
    std::vector<Span> visited;
    got.forEach(0, got.size(), [&](size_t, const Span& s) { visited.push_back(s); });
    EXPECT_EQ(visited, want);
    EXPECT_EQ(got.gaps().size(), gaps.size());

    // The same edit read through a store that refers to the part (appendStores
    // with an owner, as a window of cached segments does), after a part it
    // copies, whole and in a window that holds all of the part; then a window
    // that cuts the part (copied). Each equals the edited copy appended.
    const ParallelRun oneThread = [](size_t n, const std::function<void(size_t)>& task) {
        for (size_t k = 0; k < n; ++k)
            task(k);
    };
    std::vector<Span> head{spans[0], spans[1]};
    for (Span& s : head)
        s.start -= 900, s.end = s.start + 5;
    SpanStore before;
    before.append(head, gaps);
    auto owner = std::make_shared<SpanStore>(store);
    for (const auto& [from, to, refers] :
         {std::tuple{uint64_t(0), UINT64_MAX, true}, std::tuple{uint64_t(100), UINT64_MAX - 1, true},
          std::tuple{uint64_t(1150), UINT64_MAX - 1, false}}) {
        SCOPED_TRACE("window from " + std::to_string(from));
        const SpanStore* both[] = {&before, owner.get()};
        const SpanStore::Edit* edits[] = {nullptr, &edit};
        const std::shared_ptr<const void> owners[] = {nullptr, owner};
        SpanStore referring;
        ASSERT_TRUE(referring.appendStores(both, from, to, oneThread, edits, owners));
        EXPECT_EQ(referring.referencedSpans() > 0, refers);
        SpanStore copied;
        const SpanStore editedPart = store.edited(edit);
        const SpanStore* plain[] = {&before, &editedPart};
        ASSERT_TRUE(copied.appendStores(plain, from, to, oneThread));
        ASSERT_EQ(referring.size(), copied.size());
        EXPECT_EQ(referring.firstStart(), copied.firstStart());
        EXPECT_EQ(referring.lastStart(), copied.lastStart());
        for (size_t i = 0; i < copied.size(); ++i)
            EXPECT_EQ(referring.at(i), copied.at(i)) << "span " << i;
        std::vector<Span> a, b;
        referring.forEach(0, referring.size(), [&](size_t, const Span& s) { a.push_back(s); });
        copied.forEach(0, copied.size(), [&](size_t, const Span& s) { b.push_back(s); });
        EXPECT_EQ(a, b);
        for (uint64_t time : {uint64_t(0), uint64_t(1000), uint64_t(1105), uint64_t(1250), UINT64_MAX})
            EXPECT_EQ(referring.lowerBound(time), copied.lowerBound(time)) << "time " << time;
        // What reads it by copying (appendStore, edited, another merge) sees the same spans.
        SpanStore again;
        ASSERT_TRUE(again.appendStore(referring));
        EXPECT_EQ(again.referencedSpans(), 0u);
        for (size_t i = 0; i < copied.size(); ++i)
            EXPECT_EQ(again.at(i), copied.at(i)) << "span " << i;
        // Appending after a referred part starts a chunk of this store's own.
        Span tail = spans.back();
        tail.start += uint64_t(6) << 30, tail.end = tail.start + 3, tail.depth = 1;
        referring.append(std::span<const Span>(&tail, 1));
        EXPECT_EQ(referring.at(referring.size() - 1), tail);
    }
}

// Span arrays of 4 MiB and more go through SpanStore::allocateBig (operator
// new; mappings of their own in huge pages with AUXSCOPE_SPAN_ARRAYS_HUGE=1,
// the ctest SpanStoreBig.HugePages): stores that cross that size while
// growing, merged in parts on several threads, copied, moved and edited keep
// every span, as the unpacked spans say.
TEST(SpanStoreBig, StoresOfMegabytesKeepEverySpanThroughAppendMergeCopyAndEdit) {
    constexpr size_t kParts = 3, kPerPart = 300'000;  // 4.8 MB a part, 14.4 MB merged
    std::vector<std::vector<Span>> parts(kParts);
    std::vector<Gap> gaps{{GapReason::Overflow, "overflow", 0, 0}};
    uint64_t t = 5000;
    for (size_t p = 0; p < kParts; ++p)
        for (size_t i = 0; i < kPerPart; ++i) {
            Span s;
            s.start = t;
            s.end = t + 3 + i % 97;
            s.function = uint32_t(1 + (i * 7 + p) % 1000);
            s.depth = int32_t(i % 9);
            s.instructions = i % 50;
            if (i % 100'003 == 17) s.instructions = 9'000'000;  // wide
            if (i % 150'001 == 5) s.gap = 0, s.function = 0, s.depth = 0;
            parts[p].push_back(s);
            t += (i == kPerPart / 2) ? (uint64_t(5) << 30) : 4;  // a new chunk in each part
        }
    std::vector<SpanStore> stores(kParts);
    for (size_t p = 0; p < kParts; ++p)
        stores[p].append(parts[p], gaps);
    std::vector<Span> all;
    for (size_t p = 0; p < kParts; ++p)
        for (Span s : parts[p]) {
            if (s.isGap()) s.gap = int32_t(p);  // each part brings its own copy of the gap
            all.push_back(s);
        }
    auto expectSpans = [&](const SpanStore& got, const std::vector<Span>& want, const char* what) {
        ASSERT_EQ(got.size(), want.size()) << what;
        size_t bad = 0;
        got.forEach(0, got.size(), [&](size_t i, const Span& s) { bad += !(s == want[i]); });
        EXPECT_EQ(bad, 0u) << what;
        for (size_t i : {size_t(0), want.size() / 3, want.size() - 1})
            EXPECT_EQ(got.at(i), want[i]) << what << ", span " << i;
    };
    // Merged by appendStores (the parts copied on threads of their own).
    std::vector<const SpanStore*> ptrs;
    for (const SpanStore& s : stores)
        ptrs.push_back(&s);
    SpanStore merged;
    const ParallelRun threads = [](size_t n, const std::function<void(size_t)>& task) {
        std::vector<std::thread> ts;
        for (size_t k = 0; k < n; ++k)
            ts.emplace_back([&task, k] { task(k); });
        for (std::thread& th : ts)
            th.join();
    };
    ASSERT_TRUE(merged.appendStores(ptrs, 0, UINT64_MAX, threads));
    expectSpans(merged, all, "appendStores");
    {  // Referred to rather than copied (owners given): the same spans, none held.
        std::vector<std::shared_ptr<const void>> owners;
        for (const SpanStore& s : stores)
            owners.push_back(std::make_shared<SpanStore>(s));
        std::vector<const SpanStore*> owned;
        for (const auto& o : owners)
            owned.push_back(static_cast<const SpanStore*>(o.get()));
        SpanStore referring;
        ASSERT_TRUE(referring.appendStores(owned, 0, UINT64_MAX, threads, {}, owners));
        owners.clear();  // the store keeps them
        EXPECT_EQ(referring.referencedSpans(), all.size());
        expectSpans(referring, all, "appendStores referring");
        SpanStore copied = referring;
        expectSpans(copied, all, "a referring store copied");
    }
    // Grown one part at a time (small, then past 4 MiB, then reallocated).
    SpanStore grown;
    for (const SpanStore& s : stores)
        ASSERT_TRUE(grown.appendStore(s));
    expectSpans(grown, all, "appendStore");
    // Copied, moved, edited.
    SpanStore copy = merged;
    expectSpans(copy, all, "copy");
    SpanStore moved = std::move(copy);
    expectSpans(moved, all, "move");
    const std::vector<uint32_t> drop{1, 400'000};
    SpanStore::Edit edit;
    edit.drop = drop;
    edit.shift = 1;
    edit.shiftEnd = 10;
    std::vector<Span> want;
    for (size_t i = 0; i < all.size(); ++i) {
        if (i == 1 || i == 400'000) continue;
        Span s = all[i];
        if (i < 10 && !s.isGap()) s.depth += 1;
        want.push_back(s);
    }
    expectSpans(merged.edited(edit), want, "edited");
    EXPECT_GE(merged.spanBytes(), all.size() * sizeof(PackedSpan));
}

class PtSegmentStacks : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new test_support::TempDir{"ptsegstack"};
        file_ = (dir_->path / "gen.data").string();
        std::string log;
        ASSERT_EQ(test_support::runCommand(std::string(AUXSCOPE_PTSYNTH) + " -q -o " + file_ +
                                               " --generate 1 --seed 5 --max-insns 300000 --truth-list"
                                               " --fine-time --psb-period 512",
                                           &log, true),
                  0)
            << log;
        auto truth = ptsynth::Truth::read(file_ + ".truth");
        ASSERT_TRUE(truth.ok());
        truth_ = new ptsynth::Truth(std::move(truth.value()));
        program_ = new TruthProgram(*truth_);
    }
    static void TearDownTestSuite() {
        delete program_;
        delete truth_;
        delete dir_;
    }

    // A session cut at every PSB (segmentBytes 1), or one segment for the whole trace.
    static std::unique_ptr<AuxTraceSession> session(const PerfDataReader& reader, bool cut) {
        AuxTraceOptions options;
        options.segmentBytes = cut ? 1 : uint64_t(1) << 40;
        auto s = AuxTraceSession::open(reader, options);
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
        return s.ok() ? std::move(s.value()) : nullptr;
    }

    static test_support::TempDir* dir_;
    static std::string file_;
    static ptsynth::Truth* truth_;
    static TruthProgram* program_;
};
test_support::TempDir* PtSegmentStacks::dir_ = nullptr;
std::string PtSegmentStacks::file_;
ptsynth::Truth* PtSegmentStacks::truth_ = nullptr;
TruthProgram* PtSegmentStacks::program_ = nullptr;

TEST_F(PtSegmentStacks, WholeDecodeCutAtEveryPsbIsTheUncutSpanTreeAndTheTruth) {
    ASSERT_TRUE(truth_);
    auto reader = PerfDataReader::open(file_);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto cut = session(*reader, true);
    auto whole = session(*reader, false);
    ASSERT_TRUE(cut && whole);
    ASSERT_GT(cut->segments().size(), 100u) << "a small --psb-period should give many cuts";
    ASSERT_EQ(whole->segments().size(), 1u);
    const DecodedSpans one = whole->decodeSpans({}, 1);
    const DecodedSpans two = cut->decodeSpans({}, 2);
    ASSERT_EQ(two.stats.decodeErrors, 0u);
    EXPECT_EQ(two.stats.instructions, truth_->instructions);
    // One span per frame: the cut decode has exactly the uncut decode's frames.
    const std::vector<Frame> want = frames(one), got = frames(two);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want) << firstDifference(got, want);
    // And the truth: every call counted once (the trace starts inside _start),
    // every instruction under _start.
    const Costs truth = truthCosts(*truth_, *program_, 0, truth_->ips.size());
    const Costs costs = decodedCosts(two, *cut);
    EXPECT_TRUE(costs == truth) << test_support::describeCosts(costs, truth);
    EXPECT_EQ(costs.count("_start") ? costs.at("_start").totalInsns : 0, truth_->instructions);
    size_t called = 0;
    for (const auto& f : truth_->functions) {
        const uint64_t want = f.calls - (f.name == "_start" ? 1 : 0);
        EXPECT_EQ(costs.count(f.name) ? costs.at(f.name).calls : 0, want) << f.name;
        called += want > 0;
    }
    EXPECT_GT(called, 10u);
    // The same on one thread, and again from the cache.
    EXPECT_TRUE(frames(cut->decodeSpans({}, 1)) == got);
    const DecodedSpans cached = cut->decodeSpans({}, 2);
    EXPECT_EQ(cached.decodedNow, 0u);
    EXPECT_TRUE(frames(cached) == got);
}

TEST_F(PtSegmentStacks, WindowsJoinTheirCutsAndStartFromTheirFirstSyncPoint) {
    ASSERT_TRUE(truth_);
    auto reader = PerfDataReader::open(file_);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto probe = session(*reader, true);
    ASSERT_TRUE(probe);
    std::map<uint64_t, size_t> psbAt;  // perf time (== TSC here) -> instructions before it
    for (const auto& p : truth_->psbs)
        psbAt[p.tsc] = p.instructions;
    std::vector<std::pair<uint64_t, size_t>> cuts;
    for (const auto& s : probe->segments()) {
        auto it = psbAt.find(s.startTime);
        ASSERT_NE(it, psbAt.end()) << "segment at " << s.startTime << " is not at a PSB of the truth";
        cuts.push_back({s.startTime, it->second});
    }
    const size_t n = cuts.size();
    ASSERT_GT(n, 100u);
    cuts.push_back({UINT64_MAX, truth_->ips.size()});
    for (auto [a, b] :
         std::vector<std::pair<size_t, size_t>>{{0, 3}, {5, 40}, {n / 2, n}, {n / 3, 2 * n / 3}}) {
        // A fresh session: the window's segments only, its first one found running.
        auto s = session(*reader, true);
        ASSERT_TRUE(s);
        // From just after the window's first PSB (the segment before it ends
        // there) to just before its last one.
        DecodeWindow window;
        window.begin = cuts[a].first + 1;
        window.end = cuts[b].first - 1;
        const DecodedSpans decoded = s->decodeSpans(window, 2);
        ASSERT_EQ(decoded.decodedNow, b - a) << "window " << a << "-" << b;
        const Costs want = truthCosts(*truth_, *program_, cuts[a].second, cuts[b].second);
        const Costs got = decodedCosts(decoded, *s);
        EXPECT_TRUE(got == want) << "window " << a << "-" << b << ": "
                                 << test_support::describeCosts(got, want);
    }
    // Windows decoded first, the whole trace after them (their segments from the
    // cache, joined to the ones decoded now): the same as a whole decode.
    auto fresh = session(*reader, true);
    auto later = session(*reader, true);
    ASSERT_TRUE(fresh && later);
    for (auto [a, b] : std::vector<std::pair<size_t, size_t>>{{10, 20}, {n / 2, n / 2 + 7}}) {
        DecodeWindow window;
        window.begin = cuts[a].first + 1;
        window.end = cuts[b].first - 1;
        later->decodeSpans(window, 2);
    }
    const DecodedSpans all = later->decodeSpans({}, 2);
    EXPECT_EQ(all.fromCache, 17u);
    const std::vector<Frame> got = frames(all), want = frames(fresh->decodeSpans({}, 2));
    EXPECT_TRUE(got == want) << firstDifference(got, want);
}

// AuxTraceOptions::limits (spans/DecodeLimits.h, issue 28: the fuzzers' bound
// on an input): a decode stops at the first segment boundary at or past a cap,
// says which cap and how much was left in lastDecodeLimit() and the trace
// notes; without caps (the default) everything is decoded and nothing is said.
TEST_F(PtSegmentStacks, DecodeLimitsStopAtTheFirstSegmentPastACapAndSaySo) {
    ASSERT_TRUE(truth_);
    auto reader = PerfDataReader::open(file_);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto limited = [&](const DecodeLimits& limits) {
        AuxTraceOptions options;
        options.segmentBytes = 1;
        options.limits = limits;
        auto s = AuxTraceSession::open(*reader, options);
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
        return s.ok() ? std::move(s.value()) : nullptr;
    };
    auto countSpans = [](const DecodedSpans& d) {
        uint64_t n = 0;
        for (const auto& [tid, store] : d.threads)
            n += store.size();
        return n;
    };
    auto hasNote = [](const AuxTraceSession& s) {
        for (const std::string& note : s.traceNotes())
            if (note.find("decode stopped at the cap") != std::string::npos) return true;
        return false;
    };
    // No caps: the whole trace, no report, no note.
    auto whole = limited({});
    ASSERT_TRUE(whole);
    const size_t segments = whole->segments().size();
    ASSERT_GT(segments, 100u);
    const DecodedSpans all = whole->decodeSpans({}, 1);
    EXPECT_EQ(all.stats.instructions, truth_->instructions);
    EXPECT_FALSE(whole->lastDecodeLimit().stopped);
    EXPECT_FALSE(hasNote(*whole));
    const uint64_t allSpans = countSpans(all);

    // One trace byte: the first segment only.
    auto bytes = limited({.traceBytes = 1});
    ASSERT_TRUE(bytes);
    const DecodedSpans first = bytes->decodeSpans({}, 1);
    DecodeLimitReport r = bytes->lastDecodeLimit();
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.cap, "trace bytes");
    EXPECT_EQ(r.limit, 1u);
    EXPECT_EQ(r.segmentsDecoded, 1u);
    EXPECT_EQ(r.segmentsLeft, segments - 1);
    EXPECT_EQ(first.stats.traceBytes, bytes->segments().front().bytes);
    EXPECT_EQ(r.traceBytes, first.stats.traceBytes);
    EXPECT_EQ(first.stats.segments, 1u);
    EXPECT_TRUE(hasNote(*bytes));
    EXPECT_EQ(r.note().rfind("decode stopped at the cap of 1 trace bytes: 1 of " + std::to_string(segments) +
                                 " segments decoded",
                             0),
              0u)
        << r.note();
    // What was not decoded was not cached either: a second call, capped again,
    // takes the first segment from the cache and decodes nothing.
    const DecodedSpans again = bytes->decodeSpans({}, 1);
    EXPECT_EQ(again.fromCache, 1u);
    EXPECT_EQ(again.decodedNow, 0u);

    // Isolated sessions keep their workers under caps: each segment a capped
    // call decodes runs in a worker process of its own, so a decoder crash (the
    // test double: the worker of segment 0 dies of SIGSEGV) ends that segment
    // as a gap, counted as decoded, and this process lives; in process the same
    // cap decodes the segment here.
    for (const bool isolated : {true, false}) {
        AuxTraceOptions options;
        options.segmentBytes = 1;
        options.limits = {.traceBytes = 1};
        options.isolation.enabled = isolated;
        options.isolation.testCrashSegment = 0;
        auto s = AuxTraceSession::open(*reader, options);
        ASSERT_TRUE(s.ok()) << s.error().message;
        DecodedSpans d = (*s)->decodeSpans({}, 1);
        const DecodeLimitReport c = (*s)->lastDecodeLimit();
        EXPECT_TRUE(c.stopped) << isolated;
        EXPECT_EQ(c.segmentsDecoded, 1u) << isolated;
        EXPECT_EQ(d.stats.gaps[GapReason::DecoderCrashed], isolated ? 1u : 0u);
        EXPECT_EQ(d.stats.instructions, isolated ? 0u : first.stats.instructions);
    }

    // Half the instructions: stops past the cap, before the end; the segment
    // before the last one decoded was still below it.
    const uint64_t half = truth_->instructions / 2;
    auto insns = limited({.instructions = half});
    ASSERT_TRUE(insns);
    const DecodedSpans part = insns->decodeSpans({}, 1);
    r = insns->lastDecodeLimit();
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.cap, "instructions");
    EXPECT_GE(part.stats.instructions, half);
    EXPECT_LT(part.stats.instructions, truth_->instructions);
    EXPECT_EQ(r.instructions, part.stats.instructions);
    EXPECT_EQ(r.segmentsDecoded + r.segmentsLeft, segments);
    ASSERT_GT(r.segmentsDecoded, 1u);
    // One segment fewer stays below the cap: the decode did not stop early.
    uint64_t below = 0;
    {
        // The instructions of the first segmentsDecoded - 1 segments.
        uint64_t bytesBefore = 0;
        const auto segs = insns->segments();
        for (size_t k = 0; k + 1 < r.segmentsDecoded; ++k)
            bytesBefore += segs[k].bytes;
        auto upTo = limited({.traceBytes = bytesBefore});
        below = upTo->decodeSpans({}, 1).stats.instructions;
        EXPECT_EQ(upTo->lastDecodeLimit().segmentsDecoded, r.segmentsDecoded - 1);
    }
    EXPECT_LT(below, half);

    // Spans: counted as the segments made them (the merge then joins frames
    // across cuts into fewer).
    auto spans = limited({.spans = allSpans / 3});
    ASSERT_TRUE(spans);
    const DecodedSpans third = spans->decodeSpans({}, 1);
    r = spans->lastDecodeLimit();
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.cap, "spans");
    EXPECT_GE(r.spans, allSpans / 3);
    EXPECT_LE(countSpans(third), r.spans);
    EXPECT_LT(countSpans(third), allSpans);
    EXPECT_LT(r.segmentsDecoded, segments);

    // A cap the whole trace stays below stops nothing.
    auto roomy = limited({.traceBytes = uint64_t(1) << 40, .instructions = truth_->instructions + 1});
    const DecodedSpans everything = roomy->decodeSpans({}, 1);
    EXPECT_FALSE(roomy->lastDecodeLimit().stopped);
    EXPECT_EQ(roomy->lastDecodeLimit().segmentsDecoded, segments);
    EXPECT_EQ(everything.stats.instructions, truth_->instructions);
    EXPECT_FALSE(hasNote(*roomy));

    // The packet listing stops after the cap's trace bytes and says so.
    std::ostringstream fullOut, fullErr, cutOut, cutErr;
    ASSERT_EQ(whole->listPackets(std::nullopt, fullOut, fullErr), 0) << fullErr.str();
    EXPECT_EQ(fullOut.str().find("[listing stopped"), std::string::npos);
    auto listed = limited({.traceBytes = 256});
    (void)listed->listPackets(std::nullopt, cutOut, cutErr);
    EXPECT_NE(cutOut.str().find("[listing stopped at the cap of 256 trace bytes"), std::string::npos);
    EXPECT_LT(cutOut.str().size() * 4, fullOut.str().size());
}

}  // namespace
