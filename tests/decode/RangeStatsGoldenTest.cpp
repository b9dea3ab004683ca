// SPDX-License-Identifier: GPL-3.0-or-later
// spans/RangeStats golden tests: the statistics of decoded auxscope-ptsynth
// traces equal the truth the generator (or the single-stepped program) wrote.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "PtSynthTruth.h"
#include "TestData.h"
#include "TestSupport.h"
#include "TruthCosts.h"
#include "auxtrace/AuxTraceDecode.h"
#include "perfdata/PerfDataReader.h"
#include "spans/RangeStats.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------- ptsynth golden

int run(const std::string& command, std::string* output = nullptr) {
    return test_support::runCommand(command, output, true);
}

using test_support::TempDir;

ptsynth::Truth synthesize(const std::string& args, const fs::path& out) {
    std::string log;
    EXPECT_EQ(run(std::string(AUXSCOPE_PTSYNTH) + " -q -o " + out.string() + " " + args, &log), 0) << log;
    auto truth = ptsynth::Truth::read(out.string() + ".truth");
    EXPECT_TRUE(truth.ok()) << (truth.ok() ? "" : truth.error().message);
    return truth.ok() ? std::move(truth.value()) : ptsynth::Truth{};
}

using test_support::addTruthCosts;
using test_support::costsByName;
using test_support::describeCosts;
using test_support::nonZero;
using test_support::TruthCosts;
using test_support::TruthProgram;

TEST(RangeStatsGolden, GeneratedTraceEqualsTruthWholeAndPerSyncPoint) {
    TempDir dir{"rangestats"};
    const fs::path file = dir.path / "gen.data";
    const ptsynth::Truth truth =
        synthesize("--generate 1 --seed 3 --max-insns 400000 --truth-list --fine-time", file);
    ASSERT_EQ(truth.ips.size(), truth.instructions);
    ASSERT_GT(truth.psbs.size(), 10u) << "the generator should write many PSBs";
    const TruthProgram program(truth);

    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    // Segments of one PSB each: every sync point is a place a range may start.
    AuxTraceOptions options;
    options.segmentBytes = 1;
    auto session = AuxTraceSession::open(*reader, options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    DecodedSpans decoded = (*session)->decodeSpans({}, 0);
    ASSERT_EQ(decoded.stats.decodeErrors, 0u);
    ASSERT_EQ(decoded.threads.size(), 1u);
    std::map<uint64_t, size_t> psbAt;  // perf time (== TSC here) -> instructions before it
    for (const auto& p : truth.psbs)
        psbAt[p.tsc] = p.instructions;
    std::vector<std::pair<uint64_t, size_t>> cuts;  // segment start: time, instruction index
    for (const auto& s : (*session)->segments()) {
        auto it = psbAt.find(s.startTime);
        ASSERT_NE(it, psbAt.end()) << "segment at " << s.startTime << " is not at a PSB of the truth";
        cuts.push_back({s.startTime, it->second});
    }
    ASSERT_GT(cuts.size(), 10u);
    cuts.push_back({UINT64_MAX, truth.ips.size()});
    // Whole trace: segments decode on their own but the merge joins the frames
    // that cross a cut (spans/SegmentedDecode.h), so the truth is the whole
    // flow's, with no restart at the cuts; calls equal the generator's own
    // counts, less _start's one entry from the kernel (which the trace begins
    // inside of) -- also the calls whose target is where a segment starts.
    const TruthCosts whole = [&] {
        TruthCosts w;
        addTruthCosts(truth, program, 0, truth.ips.size(), w);
        return w;
    }();
    auto all = computeRangeStats(decoded.threads, {});
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(all->instructions(), truth.instructions);
    const TruthCosts got = costsByName(*all, (*session)->functions());
    EXPECT_TRUE(nonZero(got) == nonZero(whole)) << describeCosts(nonZero(got), nonZero(whole));
    size_t called = 0;
    for (const auto& f : truth.functions) {
        const uint64_t want = f.calls - (f.name == "_start" ? 1 : 0);
        EXPECT_EQ(got.count(f.name) ? got.at(f.name).calls : 0, want) << f.name;
        called += want > 0;
    }
    EXPECT_GT(called, 10u);

    // Sub-ranges from one sync point to another (one segment, a few, many),
    // each decoded as a window of its own: its first segment starts the stack
    // afresh at its sync point, the cuts after it are joined.
    const size_t n = cuts.size() - 1;
    const std::vector<std::pair<size_t, size_t>> ranges{{0, 1},     {1, 2},     {2, 5},    {n / 3, n / 2},
                                                        {n / 2, n}, {5, n - 3}, {n - 1, n}};
    for (auto [a, b] : ranges) {
        TruthCosts want;
        addTruthCosts(truth, program, cuts[a].second, cuts[b].second, want);
        auto windowed = AuxTraceSession::open(*reader, options);
        ASSERT_TRUE(windowed.ok());
        DecodeWindow window;
        window.begin = cuts[a].first + 1;  // after the end of the segment before
        window.end = cuts[b].first - 1;
        DecodedSpans part = (*windowed)->decodeSpans(window, 2);
        RangeQuery q;
        q.begin = cuts[a].first;
        q.end = cuts[b].first;
        q.threads = 2;
        auto stats = computeRangeStats(part.threads, q);
        ASSERT_TRUE(stats.ok());
        EXPECT_EQ(stats->instructions(), cuts[b].second - cuts[a].second) << "segments " << a << "-" << b;
        const TruthCosts costs = costsByName(*stats, (*windowed)->functions());
        EXPECT_TRUE(nonZero(costs) == nonZero(want))
            << "segments " << a << "-" << b << ": " << describeCosts(nonZero(costs), nonZero(want));
    }

    // Decoded as one segment the whole stack is known: _start holds every instruction.
    AuxTraceOptions one;
    one.segmentBytes = uint64_t(1) << 40;
    auto whole1 = AuxTraceSession::open(*reader, one);
    ASSERT_TRUE(whole1.ok());
    DecodedSpans decoded1 = (*whole1)->decodeSpans({}, 1);
    auto stats1 = computeRangeStats(decoded1.threads, {});
    ASSERT_TRUE(stats1.ok());
    TruthCosts want1;
    addTruthCosts(truth, program, 0, truth.ips.size(), want1);
    EXPECT_EQ(want1["_start"].totalInsns, truth.instructions);
    const TruthCosts got1 = costsByName(*stats1, (*whole1)->functions());
    EXPECT_TRUE(nonZero(got1) == nonZero(want1)) << describeCosts(nonZero(got1), nonZero(want1));
}

// ---------------------------------------------------------------- step mode: call trees

// The text symbols of `exe` (nm), at the addresses the truth's mapping puts them.
std::map<uint64_t, std::pair<uint64_t, std::string>> exeSymbols(const std::string& exe,
                                                                const ptsynth::Truth& truth) {
    std::map<uint64_t, std::pair<uint64_t, std::string>> symbols;
    // A position-independent executable (ET_DYN) is moved by its mapping (its
    // text's addresses equal their file offsets); a static one (ET_EXEC) runs
    // at the addresses nm prints.
    uint64_t bias = 0;
    uint16_t type = 0;
    if (FILE* f = std::fopen(exe.c_str(), "rb")) {
        if (std::fseek(f, 16, SEEK_SET) != 0 || std::fread(&type, sizeof type, 1, f) != 1) type = 0;
        std::fclose(f);
    }
    if (type == 3 /* ET_DYN */)
        for (const auto& m : truth.maps)
            if (m.path == exe) bias = m.start - m.pgoff;
    std::string text;
    EXPECT_EQ(run("nm -C --defined-only -S " + exe, &text), 0) << text;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t eol = std::min(text.find('\n', pos), text.size());
        const std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        unsigned long long value = 0, size = 0;
        char type = 0;
        int name = 0;
        if (std::sscanf(line.c_str(), "%llx %llx %c %n", &value, &size, &type, &name) == 3 &&
            (type == 't' || type == 'T') && size > 0) {
            std::string n = line.substr(size_t(name));
            if (n.find('(') != std::string::npos) n.resize(n.find('('));
            symbols[bias + value] = {bias + value + size, n};
        }
    }
    return symbols;
}

std::string baseName(std::string name) {
    if (name.find('(') != std::string::npos) name.resize(name.find('('));
    return name;
}

// Call tree as {stack of the program's functions (others left out) -> calls}.
using TreeCalls = std::map<std::vector<std::string>, uint64_t>;

// The truth's call tree, with the rules of PtSynthTest's truthCallTree: a call
// opens a frame; a return closes the frame whose call precedes the return
// address (and every frame above it); control entering a function further
// down the stack without a call or return (a landing pad) closes the frames
// above it; a return past the first frame finds its caller one level out.
TreeCalls truthTree(const std::string& exe, const ptsynth::Truth& truth,
                    const std::set<std::string>& program) {
    const auto symbols = exeSymbols(exe, truth);
    auto nameOf = [&](uint64_t ip) -> std::string {
        auto it = symbols.upper_bound(ip);
        if (it == symbols.begin()) return "";
        --it;
        return ip < it->second.first ? it->second.second : "";
    };
    struct Open {
        std::string name;
        uint64_t callSite;
    };
    std::vector<Open> stack{{nameOf(truth.ips.front()), 0}};
    TreeCalls out;
    auto key = [&] {
        std::vector<std::string> k;
        for (const auto& o : stack)
            if (program.count(o.name)) k.push_back(o.name);
        return k;
    };
    using Kind = ptsynth::TruthEvent::Kind;
    auto isCallOrRet = [](const ptsynth::TruthEvent& e) {
        return e.kind == Kind::Call || e.kind == Kind::Ret;
    };
    size_t next = 0;
    while (next < truth.events.size() && !isCallOrRet(truth.events[next]))
        ++next;
    for (size_t i = 0; i + 1 < truth.ips.size(); ++i) {
        const uint64_t from = truth.ips[i], to = truth.ips[i + 1];
        if (next < truth.events.size() && truth.events[next].from == from && truth.events[next].to == to) {
            const auto& e = truth.events[next];
            do
                ++next;
            while (next < truth.events.size() && !isCallOrRet(truth.events[next]));
            if (e.kind == Kind::Call) {
                stack.push_back({nameOf(to), from});
                if (program.count(stack.back().name)) ++out[key()];
                continue;
            }
            size_t k = stack.size();
            while (k > 0 && !(stack[k - 1].callSite < to && to - stack[k - 1].callSite <= 15))
                --k;
            if (k > 0)
                stack.resize(k - 1);
            else
                stack.assign(1, {nameOf(to), 0});
            if (stack.empty()) stack.push_back({nameOf(to), 0});
            continue;
        }
        const std::string target = nameOf(to);
        if (target.empty() || nameOf(from) == target) continue;
        size_t k = stack.size();
        while (k > 0 && stack[k - 1].name != target)
            --k;
        if (k > 0) stack.resize(k);
    }
    return out;
}

TreeCalls statsTree(const RangeStats& stats, const AuxTraceSession& session,
                    const std::set<std::string>& program) {
    TreeCalls out;
    for (uint32_t n = 1; n < stats.tree.size(); ++n) {
        const auto& node = stats.tree.nodes[n];
        if (!node.cost.calls || !program.count(baseName(session.functions()[node.function].name))) continue;
        std::vector<std::string> k;
        for (uint32_t f : stats.tree.stack(n)) {
            const std::string name = baseName(session.functions()[f].name);
            if (program.count(name)) k.push_back(name);
        }
        out[k] += node.cost.calls;
    }
    return out;
}

std::string describe(const TreeCalls& t) {
    std::string text;
    for (const auto& [k, n] : t) {
        for (const auto& f : k)
            text += f + ">";
        text += " x" + std::to_string(n) + "  ";
    }
    return text;
}

void expectCallTreeEqualsTruth(const std::string& exe, const std::string& args, const std::string& exeArgs,
                               const std::set<std::string>& program) {
    TempDir dir{"rangestats"};
    const fs::path file = dir.path / "step.data";
    const ptsynth::Truth truth = synthesize(args + " -- " + exe + exeArgs, file);
    ASSERT_FALSE(truth.ips.empty());
    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto session = AuxTraceSession::open(*reader);
    ASSERT_TRUE(session.ok()) << session.error().message;
    DecodedSpans decoded = (*session)->decodeSpans({}, 1);
    EXPECT_EQ(decoded.stats.decodeErrors, 0u);
    auto stats = computeRangeStats(decoded.threads, {});
    ASSERT_TRUE(stats.ok());
    const TreeCalls want = truthTree(exe, truth, program);
    const TreeCalls got = statsTree(*stats, **session, program);
    ASSERT_FALSE(want.empty());
    EXPECT_TRUE(got == want) << "stats: " << describe(got) << "\ntruth: " << describe(want);
}

TEST(RangeStatsGolden, StepRecursionCallTreeEqualsTruth) {
    expectCallTreeEqualsTruth(AUXSCOPE_PTSYNTH_FIB, "--start main --max-insns 30000", " 9", {"main", "fib"});
}

TEST(RangeStatsGolden, StepExceptionsCallTreeEqualsTruth) {
    expectCallTreeEqualsTruth(AUXSCOPE_PTSYNTH_EXCEPTIONS, "--start run_test --max-insns 400000", "",
                              {"run_test", "main", "level1", "level2", "level3", "thrower", "rethrower"});
}

TEST(RangeStatsGolden, StepSignalsCallTreeEqualsTruth) {
    // The handler is entered by the kernel, not by a call: it is no call in
    // either tree (the decoder finds it running after the untraced system call).
    expectCallTreeEqualsTruth(AUXSCOPE_PTSYNTH_SIGNALS, "--start main --max-insns 30000", "",
                              {"main", "on_usr1", "raise", "sigemptyset"});
}

// ---------------------------------------------------------------- pieces on real traces

// The aggregation cut into many small pieces on several threads (the frames
// open where each starts found side by side) gives the same statistics, node
// by node, as one thread over each thread's spans in one go, on perf's Skylake
// recording (missing-image gaps) and a generated trace cut at every PSB, for
// the whole trace and windows cutting through spans.
void expectPiecesEqualOneThread(const std::map<int32_t, SpanStore>& threads, const std::string& name) {
    uint64_t first = UINT64_MAX, last = 0;
    size_t spans = 0;
    for (const auto& [tid, store] : threads) {
        if (store.empty()) continue;
        first = std::min(first, store.firstStart());
        last = std::max(last, store.lastStart());
        spans += store.size();
    }
    ASSERT_GT(spans, 20u) << name;
    const uint64_t d = last - first;
    const std::vector<std::pair<uint64_t, uint64_t>> windows{{0, UINT64_MAX},
                                                             {first + d / 3 + 1, first + d / 3 * 2 + 1},
                                                             {first + d / 2, first + d / 2 + d / 50 + 1},
                                                             {first + d / 7, UINT64_MAX}};
    for (const auto& [a, b] : windows) {
        RangeQuery one;
        one.begin = a;
        one.end = b;
        one.perThreadTrees = true;
        auto want = computeRangeStats(threads, one);
        ASSERT_TRUE(want.ok());
        for (unsigned workers : {2u, 4u}) {
            const std::string what = name + " [" + std::to_string(a) + ", " + std::to_string(b) + ") on " +
                                     std::to_string(workers) + " threads";
            RangeQuery q = one;
            q.threads = workers;
            q.pieceSpans = std::max<size_t>(5, spans / 97);
            auto got = computeRangeStats(threads, q);
            ASSERT_TRUE(got.ok()) << what;
            EXPECT_EQ(got->spans, want->spans) << what;
            ASSERT_EQ(got->tree.size(), want->tree.size()) << what;
            for (uint32_t n = 0; n < got->tree.size(); ++n) {
                ASSERT_EQ(got->tree.nodes[n].function, want->tree.nodes[n].function) << what << " node " << n;
                ASSERT_EQ(got->tree.nodes[n].parent, want->tree.nodes[n].parent) << what << " node " << n;
                ASSERT_EQ(got->tree.nodes[n].cost, want->tree.nodes[n].cost) << what << " node " << n;
            }
            ASSERT_EQ(got->functions.size(), want->functions.size()) << what;
            for (size_t k = 0; k < got->functions.size(); ++k)
                EXPECT_EQ(got->functions[k].cost, want->functions[k].cost) << what;
            ASSERT_EQ(got->threads.size(), want->threads.size()) << what;
            for (const auto& [tid, t] : want->threads) {
                const ThreadRangeStats& g = got->threads.at(tid);
                EXPECT_EQ(g.spans, t.spans) << what << " tid " << tid;
                EXPECT_EQ(g.frameTime, t.frameTime) << what << " tid " << tid;
                EXPECT_EQ(g.instructions, t.instructions) << what << " tid " << tid;
                EXPECT_EQ(g.calls, t.calls) << what << " tid " << tid;
                EXPECT_EQ(g.gaps.size(), t.gaps.size()) << what << " tid " << tid;
                EXPECT_EQ(g.tree.size(), t.tree.size()) << what << " tid " << tid;
                for (uint32_t n = 0; n < std::min(g.tree.size(), t.tree.size()); ++n)
                    ASSERT_EQ(g.tree.nodes[n].cost, t.tree.nodes[n].cost) << what << " tid " << tid;
            }
            ASSERT_EQ(got->gaps.size(), want->gaps.size()) << what;
            for (const auto& [reason, g] : want->gaps) {
                EXPECT_EQ(got->gaps.at(reason).count, g.count) << what;
                EXPECT_EQ(got->gaps.at(reason).time, g.time) << what;
            }
        }
    }
}

TEST(RangeStatsPieces, SkylakeTraceInPiecesEqualsOneThread) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string path =
        test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
    ASSERT_TRUE(fs::exists(path)) << path << " is missing";
    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto decoded = decodeAuxTraceSpans(*reader, {}, {}, 2);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    expectPiecesEqualOneThread(decoded->result.threads, "skylake");
}

TEST(RangeStatsPieces, GeneratedTraceInPiecesEqualsOneThread) {
    TempDir dir{"rangepieces"};
    const fs::path file = dir.path / "gen.data";
    synthesize("--generate 1 --seed 5 --max-insns 300000 --fine-time", file);
    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    AuxTraceOptions options;
    options.segmentBytes = 1;  // a segment per PSB: many outermost frames
    auto decoded = decodeAuxTraceSpans(*reader, {}, options, 2);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    expectPiecesEqualOneThread(decoded->result.threads, "ptsynth");
}

}  // namespace
