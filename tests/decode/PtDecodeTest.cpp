// SPDX-License-Identifier: GPL-3.0-or-later
// Intel PT decode of perf.data into per-thread call-stack spans: the
// decoder-independent FlowToSpans builder on hand-made flows, the span store's
// packing, a real perf-recorded Skylake trace (binaries absent: all gaps; packet
// and PSB counts checked against perf's own dump), and a synthetic perf.data
// whose trace, encoded here with libipt's encoder, runs through a tiny ELF
// built by CMake, with exact spans and instruction counts.
#include <gtest/gtest.h>
#include <intel-pt.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "TestData.h"
#include "images/ElfSymbols.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "pt/PsbIndex.h"
#include "pt/PtSpanDecoder.h"
#include "spans/FlowToSpans.h"

namespace auxscope {
namespace {

// The shared test data: the PtDecodeSkylake tests start with AUXSCOPE_NEED_TEST_DATA().
const std::string kSkylake =
    test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");

// ---------------------------------------------------------------- FlowToSpans

using Spans = std::map<int32_t, std::vector<Span>>;

struct Built {
    Spans spans;
    std::map<int32_t, std::vector<Gap>> gaps;
};

Built build(FlowToSpans& flow, uint64_t end) {
    flow.finish(end);
    auto taken = flow.take();
    std::map<int32_t, SpanStore> stores;
    storeSpans(taken, stores);
    Built b;
    for (auto& [tid, store] : stores) {
        for (size_t i = 0; i < store.size(); ++i) {
            // How frames were entered (Span::foundRunning, outermost) is checked
            // by FlowToSpansOrderTest; these compare times, depths and counts.
            Span s = store.at(i);
            s.foundRunning = s.outermost = false;
            b.spans[tid].push_back(s);
        }
        b.gaps[tid] = store.gaps();
    }
    return b;
}

Span fn(uint64_t start, uint64_t end, uint32_t function, int32_t depth, uint64_t insns) {
    return {start, end, function, depth, insns, -1};
}
Span gapSpan(uint64_t start, uint64_t end, int32_t depth, int32_t index) {
    return {start, end, 0, depth, 0, index};
}

enum : uint32_t { A = 1, B, C, X, Isr };

TEST(FlowToSpans, NestedCallsAndReturns) {
    FlowToSpans flow;
    flow.instructions(10, A, 2, BranchClass::Call);
    flow.instructions(20, B, 3, BranchClass::Call);
    flow.instructions(30, C, 1, BranchClass::Return);
    flow.instructions(40, B, 2, BranchClass::Return);
    flow.instructions(50, A, 1, BranchClass::Other);
    Built b = build(flow, 60);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 60, A, 0, 3), fn(20, 50, B, 1, 5), fn(30, 40, C, 2, 1)}));
}

TEST(FlowToSpans, ReturnsWithoutCallsGrowTheStackDownward) {
    FlowToSpans flow;
    flow.instructions(10, C, 2, BranchClass::Return);
    flow.instructions(20, B, 1, BranchClass::Return);
    flow.instructions(30, A, 4, BranchClass::Other);
    Built b = build(flow, 40);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 20, C, 2, 2), fn(20, 30, B, 1, 1), fn(30, 40, A, 0, 4)}));
}

TEST(FlowToSpans, JumpToAnotherFunctionIsATailCall) {
    FlowToSpans flow;
    flow.instructions(10, A, 2, BranchClass::Call);
    flow.instructions(20, B, 2, BranchClass::Jump);
    flow.instructions(30, C, 3, BranchClass::Return);
    flow.instructions(40, A, 1, BranchClass::Other);
    Built b = build(flow, 50);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 50, A, 0, 3), fn(20, 30, B, 1, 2), fn(30, 40, C, 1, 3)}));
}

// x86-64 exception unwinding and longjmp: the stack pointer is restored and
// control jumps into a function further down the stack; the frames above close.
TEST(FlowToSpans, JumpIntoAFunctionDownTheStackUnwinds) {
    FlowToSpans flow;
    flow.instructions(10, A, 2, BranchClass::Call);
    flow.instructions(20, B, 3, BranchClass::Call);
    flow.instructions(30, C, 1, BranchClass::Jump);  // the unwinder's jmp *%rcx
    flow.instructions(40, A, 4, BranchClass::Call);  // the landing pad in A
    flow.instructions(50, B, 1, BranchClass::Return);
    flow.instructions(60, A, 1, BranchClass::Other);
    Built b = build(flow, 70);
    EXPECT_EQ(b.spans[-1], (std::vector<Span>{fn(10, 70, A, 0, 7), fn(20, 40, B, 1, 3), fn(30, 40, C, 2, 1),
                                              fn(50, 60, B, 1, 1)}));
}

TEST(FlowToSpans, InterruptsAndFarTransfersNest) {
    FlowToSpans flow;
    flow.instructions(10, A, 2, BranchClass::Other);
    flow.interrupt(15);
    flow.instructions(20, Isr, 3, BranchClass::FarReturn);
    flow.instructions(30, A, 1, BranchClass::FarCall);  // syscall
    flow.instructions(40, X, 2, BranchClass::FarReturn);
    flow.instructions(50, A, 1, BranchClass::Other);
    Built b = build(flow, 60);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 60, A, 0, 4), fn(20, 30, Isr, 1, 3), fn(40, 50, X, 1, 2)}));
}

TEST(FlowToSpans, ReturnPastSeveralFramesClosesThemAll) {
    FlowToSpans flow;
    flow.instructions(10, A, 1, BranchClass::Call);
    flow.instructions(20, B, 1, BranchClass::Call);
    flow.instructions(30, C, 1, BranchClass::Return);  // e.g. longjmp back into A
    flow.instructions(40, A, 1, BranchClass::Other);
    Built b = build(flow, 50);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 50, A, 0, 2), fn(20, 40, B, 1, 1), fn(30, 40, C, 2, 1)}));
}

TEST(FlowToSpans, LossyGapClosesOpenSpans) {
    FlowToSpans flow;
    flow.instructions(10, A, 1, BranchClass::Call);
    flow.instructions(20, B, 1, BranchClass::Other);
    flow.gap(25, GapReason::Overflow, "trace overflow (OVF)", 0x40, 0);
    flow.instructions(40, C, 2, BranchClass::Return);
    flow.instructions(45, X, 1, BranchClass::Other);
    Built b = build(flow, 50);
    // After the gap the stack starts afresh: C's caller X grows it downward, and
    // that stretch is normalised on its own.
    EXPECT_EQ(b.spans[-1], (std::vector<Span>{fn(10, 25, A, 0, 1), fn(20, 25, B, 1, 1), gapSpan(25, 40, 0, 0),
                                              fn(40, 45, C, 1, 2), fn(45, 50, X, 0, 1)}));
    ASSERT_EQ(b.gaps[-1].size(), 1u);
    EXPECT_EQ(b.gaps[-1][0].reason, GapReason::Overflow);
    EXPECT_EQ(b.gaps[-1][0].traceOffset, 0x40u);
}

TEST(FlowToSpans, UntracedGapKeepsTheStack) {
    FlowToSpans flow;
    flow.instructions(10, A, 1, BranchClass::Call);
    flow.instructions(12, B, 1, BranchClass::FarCall);  // syscall into an untraced kernel
    flow.gap(15, GapReason::Untraced, "tracing disabled");
    flow.instructions(30, B, 1, BranchClass::Return);
    flow.instructions(35, A, 1, BranchClass::Other);
    Built b = build(flow, 40);
    EXPECT_EQ(b.spans[-1],
              (std::vector<Span>{fn(10, 40, A, 0, 2), fn(12, 35, B, 1, 2), gapSpan(15, 30, 2, 0)}));
}

// A user-only trace interrupted (FUP + TIP.PGD) right after a call or a return:
// the thread resumes, after untraced time in which another thread ran, at the
// callee's first instruction (at the caller's next one), and the branch still
// holds there: the callee is a call, the return closes its frame.
TEST(FlowToSpans, InterruptRightAfterABranchKeepsItAcrossASwitch) {
    FlowToSpans flow;
    flow.switchThread(0, 1);
    flow.instructions(10, A, 2, BranchClass::Call);
    flow.interruptedGap(12, "tracing disabled");
    flow.switchThread(14, 2);  // scheduled out in the gap; thread 2 resumes from a syscall
    flow.instructions(20, X, 1, BranchClass::FarCall);
    flow.gap(22, GapReason::Untraced, "tracing disabled");
    flow.switchThread(24, 1);
    flow.instructions(30, B, 3, BranchClass::Return);
    flow.interruptedGap(33, "tracing disabled");
    flow.instructions(40, A, 1, BranchClass::Other);
    Built b = build(flow, 50);
    EXPECT_EQ(b.spans[1],
              (std::vector<Span>{fn(10, 50, A, 0, 3), gapSpan(12, 14, 1, 0), gapSpan(24, 30, 1, 1),
                                 fn(30, 40, B, 1, 3), gapSpan(33, 40, 2, 2)}));
    for (const Span& s : b.spans[1])
        EXPECT_FALSE(!s.isGap() && s.function == B && s.foundRunning) << "B was called";
    // Thread 2's syscall forgot its branch: it resumes in X, the same frame.
    EXPECT_EQ(b.spans[2],
              (std::vector<Span>{gapSpan(14, 20, 0, 0), fn(20, 50, X, 0, 1), gapSpan(22, 24, 1, 1)}));
}

TEST(FlowToSpans, ThreadsKeepTheirOwnStacks) {
    FlowToSpans flow;
    flow.switchThread(0, 1);
    flow.instructions(10, A, 1, BranchClass::Call);
    flow.switchThread(15, 2);
    flow.instructions(20, X, 1, BranchClass::Other);
    flow.switchThread(25, 1);
    flow.instructions(30, B, 1, BranchClass::Return);
    flow.instructions(40, A, 1, BranchClass::Other);
    Built b = build(flow, 50);
    EXPECT_EQ(b.spans[1], (std::vector<Span>{fn(10, 50, A, 0, 2), fn(30, 40, B, 1, 1)}));
    EXPECT_EQ(b.spans[2], (std::vector<Span>{fn(20, 50, X, 0, 1)}));
}

TEST(FlowToSpans, GapFollowsTheThreadSwitchingInDuringIt) {
    FlowToSpans flow;
    flow.switchThread(0, 1);
    flow.instructions(10, A, 1, BranchClass::Other);
    flow.gap(12, GapReason::LostAux, "AUX data 0x1000-0x2000 missing");
    flow.switchThread(15, 2);
    flow.instructions(20, X, 1, BranchClass::Other);
    Built b = build(flow, 30);
    EXPECT_EQ(b.spans[1], (std::vector<Span>{fn(10, 12, A, 0, 1), gapSpan(12, 15, 0, 0)}));
    EXPECT_EQ(b.spans[2], (std::vector<Span>{gapSpan(15, 20, 0, 0), fn(20, 30, X, 0, 1)}));
    EXPECT_EQ(b.gaps[2].at(0).reason, GapReason::LostAux);
}

// ---------------------------------------------------------------- SpanStore

TEST(SpanStore, PacksSixteenBytesPerSpanAndKeepsWideValues) {
    SpanStore store;
    std::vector<Span> spans;
    const size_t n = 1'000'000;
    for (size_t i = 0; i < n; ++i)
        spans.push_back(fn(1'000'000'000'000 + i * 37, 1'000'000'000'000 + i * 37 + 20, uint32_t(i % 5000),
                           int32_t(i % 64), i % 300));
    // Wide ones: a long duration, a deep stack, a huge instruction count, a start 10 s later.
    spans.push_back(fn(spans.back().start, spans.back().start + 10'000'000'000, 7, 3, 5));
    spans.push_back(fn(spans.back().start, spans.back().start + 1, 7, 5000, 5));
    spans.push_back(fn(spans.back().start, spans.back().start + 1, 7, 3, 5'000'000'000));
    spans.push_back(fn(spans.back().start + 10'000'000'000, spans.back().start + 10'000'000'001, 8, 1, 1));
    std::vector<Gap> gaps{{GapReason::DecodeError, "decode error", 3, 0}};
    spans.push_back(gapSpan(spans.back().end, spans.back().end + 5, 0, 0));
    store.append(spans, gaps);
    ASSERT_EQ(store.size(), spans.size());
    for (size_t i = 0; i < spans.size(); i += (i < n ? 9973 : 1))
        EXPECT_EQ(store.at(i), spans[i]) << i;
    EXPECT_EQ(store.gaps().at(0).detail, "decode error");
    double perSpan = double(store.spanBytes()) / double(store.size());
    std::printf("span store: %zu spans, %zu bytes, %.3f bytes/span\n", store.size(), store.spanBytes(),
                perSpan);
    EXPECT_LE(perSpan, 16.5);
    EXPECT_EQ(store.lowerBound(spans[500].start), 500u);
}

TEST(PtSpanDecoder, ClassifiesBranchBytes) {
    const uint8_t ret[] = {0xc3}, syscall[] = {0x0f, 0x05}, sysret[] = {0x48, 0x0f, 0x07},
                  iret[] = {0x48, 0xcf}, jmpRax[] = {0xff, 0xe0}, callRax[] = {0xff, 0xd0},
                  notrackJmp[] = {0x3e, 0xff, 0xe0};
    EXPECT_EQ(classifyX86Branch(ret, 1, true), BranchClass::Return);
    EXPECT_EQ(classifyX86Branch(syscall, 2, true), BranchClass::FarCall);
    EXPECT_EQ(classifyX86Branch(sysret, 3, true), BranchClass::FarReturn);
    EXPECT_EQ(classifyX86Branch(iret, 2, true), BranchClass::FarReturn);
    EXPECT_EQ(classifyX86Branch(jmpRax, 2, true), BranchClass::Jump);
    EXPECT_EQ(classifyX86Branch(callRax, 2, true), BranchClass::Call);
    EXPECT_EQ(classifyX86Branch(notrackJmp, 3, true), BranchClass::Jump);
}

// ---------------------------------------------------------------- perf's Skylake trace

// perf report -D's packet lines of each CPU's AUXTRACE buffer: name -> count.
std::map<int, std::map<std::string, uint64_t>> perfPacketCounts(const std::string& path) {
    std::map<int, std::map<std::string, uint64_t>> counts;
    std::string command = "perf report -D -i '" + path + "' 2>/dev/null";
    FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) return counts;
    static const std::regex auxtrace(R"(PERF_RECORD_AUXTRACE size: .* cpu: (-?\d+))");
    static const std::regex packet(R"(^\.  [0-9a-f]{8}:  (?:[0-9a-f]{2} )+\s*([A-Z][A-Za-z0-9.]*))");
    int cpu = -2;
    char line[4096];
    while (std::fgets(line, sizeof line, pipe)) {
        std::cmatch m;
        if (std::regex_search(line, m, auxtrace)) {
            cpu = std::stoi(m[1]);
        } else if (cpu != -2 && std::regex_search(line, m, packet)) {
            ++counts[cpu][m[1]];
        } else if (std::strstr(line, "PERF_RECORD_")) {
            cpu = -2;
        }
    }
    ::pclose(pipe);
    return counts;
}

TEST(PtDecodeSkylake, EverySpanIsAGapWithoutTheBinaries) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(kSkylake);
    ASSERT_TRUE(file) << file.error().message;
    auto session = PtSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    PtSession& s = **session;
    ASSERT_EQ(s.trace().cpus().size(), 2u);
    EXPECT_EQ(s.trace().cpu(0)->bytes.size(), 12240u);
    EXPECT_EQ(s.trace().cpu(3)->bytes.size(), 137728u);
    ASSERT_TRUE(s.trace().configOptions().cpu);
    EXPECT_EQ(s.trace().configOptions().cpu->model, 78);
    EXPECT_TRUE(s.trace().time().valid);

    DecodedSpans result = s.decodeSpans({}, 2);
    // Both CPUs' buffers, whole.
    EXPECT_EQ(result.stats.traceBytes, 12240u + 137728u);
    std::set<int> cpusWithGaps;
    size_t spans = 0, missing = 0;
    for (const auto& [tid, store] : result.threads) {
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            ASSERT_TRUE(span.isGap()) << "tid " << tid << " span " << i;
            const Gap& gap = store.gaps().at(size_t(span.gap));
            EXPECT_TRUE(gap.reason == GapReason::MissingImage || gap.reason == GapReason::Untraced)
                << gapReasonName(gap.reason) << ": " << gap.detail;
            if (gap.reason == GapReason::MissingImage) {
                ++missing;
                cpusWithGaps.insert(gap.cpu);
                EXPECT_EQ(gap.detail.rfind("missing image ", 0), 0u) << gap.detail;
            }
            EXPECT_LE(span.start, span.end);
            ++spans;
        }
    }
    EXPECT_GT(spans, 0u);
    EXPECT_GT(missing, 0u);
    EXPECT_EQ(cpusWithGaps, (std::set<int>{0, 3}));
    EXPECT_EQ(result.stats.missingImages.count("[kernel.kallsyms]_text"), 1u);
    EXPECT_EQ(result.stats.blocks, 0u);

    // A second request for cpu 0 comes from the cache.
    DecodeWindow cpu0;
    cpu0.cpu = 0;
    DecodedSpans again = s.decodeSpans(cpu0, 1);
    EXPECT_EQ(again.decodedNow, 0u);
    EXPECT_EQ(again.fromCache, 1u);
}

TEST(PtDecodeSkylake, PacketAndPsbCountsMatchPerfReport) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(kSkylake);
    ASSERT_TRUE(file) << file.error().message;
    auto session = PtSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    auto perf = perfPacketCounts(kSkylake);
    ASSERT_EQ(perf.size(), 2u) << "perf report -D gave no Intel PT packet dump (is perf installed?)";
    // The data folder's README states cpu 0's counts.
    EXPECT_EQ(perf[0]["TNT"], 8242u);
    EXPECT_EQ(perf[0]["TIP"], 505u);
    EXPECT_EQ(perf[0]["MTC"], 325u);
    EXPECT_EQ(perf[0]["PIP"], 15u);
    EXPECT_EQ(perf[0]["FUP"], 10u);
    for (int cpu : {0, 3}) {
        SCOPED_TRACE("cpu " + std::to_string(cpu));
        const PsbIndex& index = (*session)->psbIndex(cpu);
        PtPacketCounts ours = index.counts();
        auto& theirs = perf[cpu];
        EXPECT_EQ(index.psbCount(), theirs["PSB"]);
        EXPECT_EQ(ours[ppt_psb], theirs["PSB"]);
        EXPECT_EQ(ours[ppt_psbend], theirs["PSBEND"]);
        EXPECT_EQ(ours.tnt(), theirs["TNT"]);
        EXPECT_EQ(ours[ppt_tip], theirs["TIP"]);
        EXPECT_EQ(ours[ppt_tip_pge], theirs["TIP.PGE"]);
        EXPECT_EQ(ours[ppt_tip_pgd], theirs["TIP.PGD"]);
        EXPECT_EQ(ours[ppt_fup], theirs["FUP"]);
        EXPECT_EQ(ours[ppt_mtc], theirs["MTC"]);
        EXPECT_EQ(ours[ppt_pip], theirs["PIP"]);
        EXPECT_EQ(ours[ppt_tsc], theirs["TSC"]);
        EXPECT_EQ(ours[ppt_tma], theirs["TMA"]);
        EXPECT_EQ(ours[ppt_cbr], theirs["CBR"]);
        EXPECT_EQ(ours[ppt_mode], theirs["MODE.Exec"] + theirs["MODE.TSX"]);
        // Each PSB carries a TSC here, so every segment has a start time.
        for (const PsbEntry& psb : index.runs.at(0).psbs)
            EXPECT_NE(psb.tsc, 0u) << psb.offset;
    }
}

// Without its binaries every segment of the Skylake file meets a decode error:
// the flow walker hands each such segment to libipt's block decoder, so the
// spans, gaps and statistics are exactly the block decoder's, and the handing
// back is counted.
TEST(PtDecodeSkylake, WalkerHandsSegmentsWithErrorsToTheBlockDecoder) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(kSkylake);
    ASSERT_TRUE(file) << file.error().message;
    auto decode = [&](bool walker, DecodedSpans& out) {
        PtSessionOptions options;
        options.flowWalker = walker;
        options.segmentBytes = 4096;
        auto session = PtSession::open(*file, options);
        ASSERT_TRUE(session) << session.error().message;
        out = (*session)->decodeSpans({}, 2);
    };
    DecodedSpans walked, blocked;
    decode(true, walked);
    decode(false, blocked);
    EXPECT_GT(walked.stats.segments, 2u);
    EXPECT_GT(walked.stats.segmentsRedecoded, 0u);
    EXPECT_LE(walked.stats.segmentsRedecoded, walked.stats.segments);
    EXPECT_EQ(blocked.stats.segmentsRedecoded, 0u);
    EXPECT_EQ(walked.stats.decodeErrors, blocked.stats.decodeErrors);
    EXPECT_EQ(walked.stats.gaps, blocked.stats.gaps);
    EXPECT_EQ(walked.stats.missingImages, blocked.stats.missingImages);
    ASSERT_EQ(walked.threads.size(), blocked.threads.size());
    for (const auto& [tid, store] : blocked.threads) {
        ASSERT_TRUE(walked.threads.count(tid)) << tid;
        const SpanStore& other = walked.threads.at(tid);
        ASSERT_EQ(other.size(), store.size()) << "tid " << tid;
        for (size_t i = 0; i < store.size(); ++i) {
            const Span a = store.at(i), b = other.at(i);
            EXPECT_TRUE(a.start == b.start && a.end == b.end && a.depth == b.depth && a.gap == b.gap &&
                        a.instructions == b.instructions)
                << "tid " << tid << " span " << i;
            if (a.isGap()) EXPECT_EQ(store.gaps()[size_t(a.gap)].detail, other.gaps()[size_t(b.gap)].detail);
        }
    }
}

// ---------------------------------------------------------------- synthetic perf.data

constexpr uint32_t kPtPmuType = 8;
constexpr int32_t kPid = 1234;
constexpr uint64_t kTsc0 = 1'000'000;

struct Fixture {
    std::string path;
    std::map<std::string, uint64_t> addresses;
};

std::vector<uint8_t> encodeTrace(const std::map<std::string, uint64_t>& at) {
    std::vector<uint8_t> buffer(4096);
    pt_config config;
    pt_config_init(&config);
    config.begin = buffer.data();
    config.end = buffer.data() + buffer.size();
    pt_encoder* encoder = pt_alloc_encoder(&config);
    auto put = [&](pt_packet p) {
        int n = pt_enc_next(encoder, &p);
        EXPECT_GT(n, 0) << "packet type " << p.type << ": " << pt_errstr(pt_errcode(n));
    };
    pt_packet p{};
    p.type = ppt_psb;
    put(p);
    p = {};
    p.type = ppt_mode;
    p.payload.mode.leaf = pt_mol_exec;
    p.payload.mode.bits.exec.csl = 1;
    put(p);
    p = {};
    p.type = ppt_tsc;
    p.payload.tsc.tsc = kTsc0;
    put(p);
    p = {};
    p.type = ppt_psbend;
    put(p);
    // Tracing starts at main; the direct calls and the jump need no packets.
    p = {};
    p.type = ppt_tip_pge;
    p.payload.ip.ipc = pt_ipc_sext_48;
    p.payload.ip.ip = at.at("main");
    put(p);
    // h returns to f (a compressed return: one taken bit) ...
    p = {};
    p.type = ppt_tsc;
    p.payload.tsc.tsc = kTsc0 + 100;
    put(p);
    p = {};
    p.type = ppt_tnt_8;
    p.payload.tnt.bit_size = 1;
    p.payload.tnt.payload = 1;
    put(p);
    // ... f returns to main ...
    p = {};
    p.type = ppt_tsc;
    p.payload.tsc.tsc = kTsc0 + 200;
    put(p);
    p = {};
    p.type = ppt_tnt_8;
    p.payload.tnt.bit_size = 1;
    p.payload.tnt.payload = 1;
    put(p);
    // ... and main's return leaves the traced code: tracing stops there.
    p = {};
    p.type = ppt_tsc;
    p.payload.tsc.tsc = kTsc0 + 300;
    put(p);
    p = {};
    p.type = ppt_tip_pgd;
    p.payload.ip.ipc = pt_ipc_suppressed;
    put(p);
    uint64_t size = 0;
    pt_enc_get_offset(encoder, &size);
    pt_free_encoder(encoder);
    buffer.resize(size);
    return buffer;
}

Fixture writeFixture() {
    Fixture fx;
    const std::string elf = AUXSCOPE_PT_FIXTURE_ELF;
    FunctionTable scratch;
    auto symbols = ElfSymbols::load(elf, scratch, elf);
    EXPECT_TRUE(symbols) << symbols.error().message;
    if (!symbols) return fx;
    for (const char* name : {"main", "f", "g", "h"}) {
        auto a = (*symbols)->symbolAddress(name);
        EXPECT_TRUE(a) << name;
        fx.addresses[name] = a.value_or(0);
    }
    fx.path = (std::filesystem::temp_directory_path() /
               ("auxscope-pt-fixture-" + std::to_string(::getpid()) + ".data"))
                  .string();

    PerfDataEventAttr tracking;
    tracking.name = "dummy:u";
    tracking.attr.type = PERF_TYPE_SOFTWARE;
    tracking.attr.config = PERF_COUNT_SW_DUMMY;
    tracking.attr.size = sizeof(perf_event_attr);
    tracking.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
    tracking.attr.sample_id_all = 1;
    tracking.ids = {1};
    PerfDataEventAttr pt = tracking;
    pt.name = "intel_pt//u";
    pt.attr.type = kPtPmuType;
    pt.attr.config = 0;
    pt.ids = {2};
    auto writer = PerfDataWriter::create(fx.path, {pt, tracking});
    EXPECT_TRUE(writer) << writer.error().message;
    if (!writer) return fx;
    PerfDataWriter& w = **writer;
    SampleIdSpec id{tracking.attr.sample_type, 1, 0};
    // The ELF is mapped whole at the link address of its first byte, as the
    // loader does for a static position-dependent executable.
    const uint64_t base = fx.addresses["main"] & ~uint64_t(0x3fffff);
    const uint64_t size = std::filesystem::file_size(elf);
    auto add = [&](RecordBuilder&& b) {
        auto bytes = b.finish();
        EXPECT_TRUE(w.writeRecord(bytes));
    };
    add(std::move(
        RecordBuilder(PERF_RECORD_COMM).u32(kPid).u32(kPid).str("fixture").sampleId(id, kPid, kPid, 10)));
    add(std::move(RecordBuilder(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER)
                      .u32(kPid)
                      .u32(kPid)
                      .u64(base)
                      .u64((size + 0xfff) & ~uint64_t(0xfff))
                      .u64(0)
                      .u32(0)
                      .u32(0)
                      .u64(0)
                      .u64(0)
                      .u32(PROT_READ | PROT_EXEC)
                      .u32(MAP_PRIVATE)
                      .str(elf)
                      .sampleId(id, kPid, kPid, 20)));
    // The fixture's thread comes onto cpu 0 just before tracing starts.
    add(std::move(
        RecordBuilder(PERF_RECORD_SWITCH_CPU_WIDE).u32(0).u32(0).sampleId(id, kPid, kPid, kTsc0 - 10)));
    IntelPtInfo info;
    info.pmuType = kPtPmuType;
    info.timeShift = 0;
    info.timeMult = 1;  // perf time == TSC: the expectations read directly
    info.timeZero = 0;
    info.capUserTimeZero = 1;
    info.perCpuMmaps = 1;
    info.haveSchedSwitch = 3;
    EXPECT_TRUE(w.writeAuxtraceInfo(auxtrace::kTypeIntelPt, encodeIntelPtInfo(info)));
    std::vector<uint8_t> trace = encodeTrace(fx.addresses);
    perfdata::AuxtraceRecord head{};
    head.offset = 0;
    head.idx = 0;
    head.tid = uint32_t(-1);
    head.cpu = 0;
    EXPECT_TRUE(w.writeAuxtrace(head, trace));
    EXPECT_TRUE(w.finish());
    return fx;
}

TEST(PtDecodeSynthetic, CallChainThroughARealElfGivesExactSpans) {
    Fixture fx = writeFixture();
    ASSERT_FALSE(fx.path.empty());
    auto file = PerfDataReader::open(fx.path);
    ASSERT_TRUE(file) << file.error().message;
    auto session = PtSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    PtSession& s = **session;
    EXPECT_EQ(s.images().missingFiles(), 0u);

    std::vector<FlowBlock> blocks;
    s.forEachBlock({}, [&](const FlowBlock& b) { blocks.push_back(b); });
    ASSERT_EQ(blocks.size(), 6u);
    const FunctionTable& functions = s.functions();
    std::vector<std::string> names;
    for (const FlowBlock& b : blocks)
        names.push_back(functions[b.function].name + ":" + std::to_string(b.instructions));
    EXPECT_EQ(names, (std::vector<std::string>{"main:2", "f:2", "g:2", "h:2", "f:2", "main:2"}));
    EXPECT_EQ(blocks[0].tid, kPid);
    EXPECT_EQ(blocks[2].last, BranchClass::Jump);
    EXPECT_EQ(blocks[3].last, BranchClass::Return);

    DecodedSpans result = s.decodeSpans({});
    ASSERT_EQ(result.threads.count(kPid), 1u);
    const SpanStore& store = result.threads.at(kPid);
    std::vector<std::string> got;
    for (size_t i = 0; i < store.size(); ++i) {
        Span span = store.at(i);
        std::string name = span.isGap()
                               ? std::string("[") + gapReasonName(store.gaps()[span.gap].reason) + "]"
                               : functions[span.function].name;
        got.push_back(name + " depth " + std::to_string(span.depth) + " insns " +
                      std::to_string(span.instructions) + " " + std::to_string(span.start - kTsc0) + "-" +
                      std::to_string(span.end - kTsc0));
    }
    // Times are as exact as the trace's timing packets and libipt allow: f's
    // return comes with TSC +200, but the decoder has read ahead to the disable
    // at +300 (an event it must report) by the time it hands out f's last block.
    EXPECT_EQ(got, (std::vector<std::string>{
                       "main depth 0 insns 4 0-300",
                       "f depth 1 insns 4 0-300",
                       "g depth 2 insns 2 0-0",
                       "h depth 2 insns 2 0-100",
                       "[untraced] depth 1 insns 0 300-300",
                   }));
    std::filesystem::remove(fx.path);
}

// ---------------------------------------------------------------- auxscope-ptsynth

std::map<std::string, std::string> readTruthHeader(const std::string& path) {
    std::map<std::string, std::string> values;
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return values;
    char line[1024];
    while (std::fgets(line, sizeof line, f)) {
        std::string l(line);
        if (l.rfind("ips ", 0) == 0 || l.rfind("events ", 0) == 0) break;
        size_t space = l.find(' ');
        if (space == std::string::npos || l[0] == '#') continue;
        values.emplace(l.substr(0, space), l.substr(space + 1, l.find_last_not_of("\n") - space));
    }
    std::fclose(f);
    return values;
}

// A generated program's trace, synthesized with its ground truth by
// auxscope-ptsynth: every instruction and every call must come back as spans.
TEST(PtDecodePtSynth, GeneratedProgramMatchesItsTruth) {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("auxscope-ptsynth-" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(dir);
    const std::string data = dir + "/gen.data";
    std::string command =
        std::string("'") + AUXSCOPE_PTSYNTH + "' --generate 1 --seed 3 -q -o '" + data + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    auto truth = readTruthHeader(data + ".truth");
    ASSERT_TRUE(truth.count("instructions") && truth.count("calls")) << "no truth next to " << data;
    const uint64_t instructions = std::stoull(truth["instructions"]);
    const uint64_t calls = std::stoull(truth["calls"]);

    auto file = PerfDataReader::open(data);
    ASSERT_TRUE(file) << file.error().message;
    // One segment: one continuous call stack, so the spans are exactly the truth's calls.
    PtSessionOptions whole;
    whole.segmentBytes = UINT64_MAX;
    auto session = PtSession::open(*file, whole);
    ASSERT_TRUE(session) << session.error().message;
    auto started = std::chrono::steady_clock::now();
    DecodedSpans result = (*session)->decodeSpans({}, 1);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("ptsynth 1 MB: %llu bytes of PT decoded to spans in %.3f s (%.1f MB/s)\n",
                (unsigned long long)result.stats.traceBytes, seconds,
                double(result.stats.traceBytes) / seconds / 1e6);
    EXPECT_EQ(result.stats.instructions, instructions);
    EXPECT_EQ(result.stats.decodeErrors, 0u);
    ASSERT_EQ(result.threads.size(), 1u);
    const SpanStore& store = result.threads.begin()->second;
    uint64_t spanInsns = 0, functionSpans = 0, gaps = 0;
    for (size_t i = 0; i < store.size(); ++i) {
        Span s = store.at(i);
        if (s.isGap()) {
            ++gaps;
            EXPECT_EQ(store.gaps()[s.gap].reason, GapReason::Untraced);
            continue;
        }
        spanInsns += s.instructions;
        ++functionSpans;
    }
    EXPECT_EQ(spanInsns, instructions);
    // Every call opens a span, plus the outermost frame tracing started in.
    EXPECT_EQ(functionSpans, calls + 1);
    EXPECT_EQ(gaps, 1u);  // tracing disabled at the end

    // Cut into segments decoded in parallel: a frame crossing a cut becomes two
    // spans, but the instructions stay (nearly) the same.
    PtSessionOptions cut;
    cut.segmentBytes = 128 << 10;
    auto parallel = PtSession::open(*file, cut);
    ASSERT_TRUE(parallel) << parallel.error().message;
    DecodedSpans pieces = (*parallel)->decodeSpans({}, 2);
    EXPECT_GT(pieces.stats.segments, 4u);
    EXPECT_NEAR(double(pieces.stats.instructions), double(instructions), double(instructions) * 1e-5);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace auxscope

// PSBs are found by a byte search, one task per AUXTRACE buffer, each owning the
// PSBs that start inside it: a PSB cut by a buffer boundary (even one shorter
// than a PSB) must be found exactly once, whatever the cut.
TEST(PsbSearch, EveryCutFindsEachPsbOnce) {
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> expected;
    uint64_t x = 88172645463325252ull;
    auto filler = [&](size_t n) {
        for (size_t i = 0; i < n; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            bytes.push_back(uint8_t(0x10 + x % 0xe0));  // never 0x02 or 0x82: no stray PSB pattern
        }
    };
    for (size_t gap : {0u, 5u, 37u, 1u, 200u, 16u, 3u}) {
        filler(gap);
        expected.push_back(bytes.size());
        for (int i = 0; i < 8; ++i)
            bytes.insert(bytes.end(), {0x02, 0x82});
    }
    filler(9);
    std::vector<uint64_t> whole;
    auxscope::findPsbs(bytes, 0, bytes.size(), whole);
    ASSERT_EQ(whole, expected);
    for (size_t cut = 0; cut <= bytes.size(); ++cut) {
        std::vector<uint64_t> left, right;
        auxscope::findPsbs(bytes, 0, cut, left);
        auxscope::findPsbs(bytes, cut, bytes.size(), right);
        left.insert(left.end(), right.begin(), right.end());
        ASSERT_EQ(left, expected) << "cut at " << cut;
    }
    // Three cuts at once, two of them inside the same PSB.
    const size_t psb = expected[2];
    std::vector<uint64_t> a, b, c, d;
    auxscope::findPsbs(bytes, 0, psb + 3, a);
    auxscope::findPsbs(bytes, psb + 3, psb + 9, b);
    auxscope::findPsbs(bytes, psb + 9, psb + 100, c);
    auxscope::findPsbs(bytes, psb + 100, bytes.size(), d);
    for (auto* part : {&b, &c, &d})
        a.insert(a.end(), part->begin(), part->end());
    EXPECT_EQ(a, expected);
}
