// SPDX-License-Identifier: GPL-3.0-or-later
// Decode while capturing. No Intel PT hardware here: recorded traces go through
// the replay (simulated CPUs following the kernel's AUX protocol) into a real
// CaptureSession and drain thread, with the live decoder attached as a sink, as
// the GUI does for a live capture.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "EtmSnapPerfData.h"
#include "TestData.h"
#include "TestSupport.h"
#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/EtmAuxTrace.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "auxtrace/PtAuxTrace.h"
#include "auxtrace/SpeAuxTrace.h"
#include "etm/EtmSyncIndex.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PsbIndex.h"
#include "pt/PtSpanDecoder.h"
#include "record/ReplaySource.h"

using namespace auxscope;

namespace {

// From the shared test data: the tests that read it start with AUXSCOPE_NEED_TEST_DATA().
const std::string kSkylake =
    auxscope::test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
const std::string kEtm = auxscope::test_support::testDataPath("coresight/simpleperf-etm/perf_etm.data");
const std::string kEtmSymfs = auxscope::test_support::testDataPath("coresight/simpleperf-etm/symfs");

// A ptsynth trace of a generated program (its code on disk): decodable here.
const std::string& generatedTrace() {
    static std::string path = [] {
        std::string dir =
            (std::filesystem::temp_directory_path() / ("auxscope-live-decode-" + std::to_string(::getpid())))
                .string();
        std::filesystem::create_directories(dir);
        std::string data = dir + "/gen.data";
        std::string cmd =
            std::string("'") + AUXSCOPE_PTSYNTH + "' --generate 2 --seed 5 -q -o '" + data + "'";
        if (std::system(cmd.c_str()) != 0) return std::string();
        return data;
    }();
    return path;
}

struct LiveRun {
    LiveDecodeStats stats;
    LiveDecodeStats beforeStop;  // after the last flush, with bytes still pending
    std::shared_ptr<const TimelineData> timeline;
    std::vector<std::shared_ptr<const TimelineData>> seenWhileRunning;
    ReplayProgress progress;
    std::shared_ptr<const std::vector<spe::SpeRecord>> spe;  // Arm SPE: the records kept
};

LiveRun replayWithLiveDecode(const std::string& path, LiveDecoderOptions lo, ReplayOptions ro) {
    LiveRun run;
    auto src = ReplaySource::open(path);
    EXPECT_TRUE(src) << src.error().message;
    if (!src) return run;
    auto session = (*src)->openSession(ro);
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return run;
    lo.auxtraceInfo = (*src)->auxtraceInfo(ro);
    auto live = LiveTraceDecoder::attach(**session, lo);
    EXPECT_TRUE(live) << live.error().message;
    if (!live) return run;
    EXPECT_TRUE((*session)->start());
    EXPECT_TRUE((*src)->start(**session, ro));
    // What a timeline polling the decoder sees while the capture runs.
    while (!(*session)->finished()) {
        if (auto t = (*live)->latest();
            t && (run.seenWhileRunning.empty() || run.seenWhileRunning.back() != t))
            run.seenWhileRunning.push_back(t);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    (*src)->wait();
    (*session)->wait();
    (*live)->flush();  // what came in after the last tick
    run.beforeStop = (*live)->stats();
    EXPECT_EQ(run.beforeStop.decodedBytes + run.beforeStop.skippedBytes + run.beforeStop.pendingBytes,
              run.beforeStop.auxBytes)
        << "held bytes are pending";
    (*live)->stop();
    run.stats = (*live)->stats();
    EXPECT_EQ(run.stats.pendingBytes, 0u) << "what no tick reached is skipped once the decoder stops";
    run.timeline = (*live)->latest();
    run.spe = (*live)->latestSpe();
    run.progress = (*src)->progress();
    return run;
}

std::set<std::string> functionNames(const TimelineData& t) {
    std::set<std::string> names;
    for (const auto& th : t.threads)
        for (size_t i = 0; i < th.spans.size(); ++i) {
            Span s = th.spans.at(i);
            if (!s.isGap()) names.insert((*t.functions)[s.function].name);
        }
    return names;
}

}  // namespace

// The whole trace fits the rate bound: every byte after the first PSB is decoded
// live, the PSB index built while draining equals the file's, and the spans
// name the same functions the offline decode finds.
TEST(LiveDecode, GeneratedTraceDecodesWhileReplaying) {
    const std::string& path = generatedTrace();
    ASSERT_FALSE(path.empty()) << "auxscope-ptsynth --generate failed";
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto offline = decodeAuxTraceSpans(*file, {}, {}, 1);
    ASSERT_TRUE(offline) << offline.error().message;
    uint64_t filePsbs = 0, fileBytes = 0;
    PtSession& pt = static_cast<PtAuxTraceSession&>(*offline->session).pt();
    for (const PtCpuTrace& cpu : pt.trace().cpus()) {
        filePsbs += pt.psbIndex(cpu.cpu).psbCount();
        fileBytes += cpu.bytes.size();
    }
    std::set<std::string> offlineNames;
    for (const auto& [tid, store] : offline->result.threads)
        for (size_t i = 0; i < store.size(); ++i)
            if (Span s = store.at(i); !s.isGap())
                offlineNames.insert(offline->session->functions()[s.function].name);

    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.bytesPerCpuPerTick = 8 << 20;
    lo.keepTicks = 1000;
    ReplayOptions ro;
    ro.speed.max = true;
    LiveRun run = replayWithLiveDecode(path, lo, ro);
    ASSERT_TRUE(run.timeline);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_EQ(run.stats.auxBytes, fileBytes);
    EXPECT_EQ(run.stats.syncPoints, filePsbs) << "PSBs found while draining";
    EXPECT_EQ(run.stats.decodedBytes + run.stats.skippedBytes, fileBytes)
        << "every byte is decoded or counted as skipped";
    EXPECT_EQ(run.stats.decodeErrors, 0u);
    EXPECT_GT(run.stats.instructions, 0u);
    EXPECT_GE(run.stats.ticks, 1u);

    ASSERT_FALSE(run.timeline->threads.empty());
    const std::set<std::string> liveNames = functionNames(*run.timeline);
    EXPECT_GT(liveNames.size(), 3u);
    for (const std::string& n : liveNames)
        EXPECT_TRUE(offlineNames.count(n)) << n << " is not in the offline decode";
    EXPECT_LE(run.timeline->decodedBegin, run.timeline->decodedEnd);
    EXPECT_GT(run.timeline->decodedEnd, 0u);
    ASSERT_TRUE(run.timeline->functions);
    for (const auto& th : run.timeline->threads) {
        EXPECT_GT(th.tid, 0);
        EXPECT_FALSE(th.name.empty()) << "tid " << th.tid;
    }
}

// A tight rate bound: the decoder never falls behind, it decodes the newest
// bytes it can reach and counts the rest as skipped; the timeline still shows flow.
TEST(LiveDecode, RateBoundSkipsAndCountsWhatItCannotDecode) {
    const std::string& path = generatedTrace();
    ASSERT_FALSE(path.empty());
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.02;
    lo.bytesPerCpuPerTick = 32 << 10;
    ReplayOptions ro;
    ro.speed.max = true;
    LiveRun run = replayWithLiveDecode(path, lo, ro);
    ASSERT_TRUE(run.timeline);
    EXPECT_GT(run.stats.skippedBytes, 0u);
    EXPECT_LE(run.stats.decodedBytes, run.stats.ticks * (32u << 10));
    EXPECT_LE(run.stats.decodedBytes + run.stats.skippedBytes, run.stats.auxBytes);
    EXPECT_GT(run.stats.instructions, 0u);
    EXPECT_FALSE(functionNames(*run.timeline).empty());
}

// Paced replay of a real recording whose AUX data came in many transactions:
// timelines are published while the capture is still running, each reaching at
// least as far as the one before.
TEST(LiveDecode, PublishesTimelinesWhileCapturing) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(std::filesystem::exists(kSkylake)) << kSkylake << " is missing";
    auto src = ReplaySource::open(kSkylake);
    ASSERT_TRUE(src) << src.error().message;
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.bytesPerCpuPerTick = 256 << 10;
    ReplayOptions ro;
    // About 1.5 s of wall time for the file's 2 ms.
    ro.speed.factor = (*src)->recordedSeconds() / 1.5;
    LiveRun run = replayWithLiveDecode(kSkylake, lo, ro);
    ASSERT_GE(run.seenWhileRunning.size(), 3u) << "timelines published during a 1.5 s capture";
    for (size_t i = 1; i < run.seenWhileRunning.size(); ++i)
        EXPECT_GE(run.seenWhileRunning[i]->decodedEnd, run.seenWhileRunning[i - 1]->decodedEnd);
    EXPECT_GT(run.seenWhileRunning.back()->decodedEnd, run.seenWhileRunning.front()->decodedEnd);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_GE(run.stats.ticks, 3u);
}

// A real Skylake recording without its binaries: the flow is all missing-image
// gaps, which the live timeline shows with their cause rather than nothing.
TEST(LiveDecode, SkylakeWithoutBinariesShowsExplainedGaps) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(std::filesystem::exists(kSkylake)) << kSkylake << " is missing";
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    ReplayOptions ro;
    ro.speed.max = true;
    LiveRun run = replayWithLiveDecode(kSkylake, lo, ro);
    ASSERT_TRUE(run.timeline);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_EQ(run.stats.auxBytes, 12240u + 137728u);
    uint64_t gaps = 0;
    bool named = false;
    for (const auto& th : run.timeline->threads)
        for (size_t i = 0; i < th.spans.size(); ++i)
            if (Span s = th.spans.at(i); s.isGap()) {
                ++gaps;
                named |= th.spans.gaps()[size_t(s.gap)].detail.find("missing image") != std::string::npos;
            }
    EXPECT_GT(gaps, 0u);
    EXPECT_TRUE(named);
    EXPECT_FALSE(run.timeline->cpus.empty()) << "which thread ran, from the switch sideband";
}

// simpleperf's CoreSight ETM recording (cpu 7, 384 trace bytes, one AUX
// transaction) replayed with the live decoder attached: the replay is paced so
// that the decode thread publishes a timeline before the capture ends, every
// byte is decoded (far under the rate bound), the live spans are the loop's
// (etm_test_loop has only .dynsym: "[unknown] etm_test_loop", "[plt] ...") on
// its thread, and the instructions decoded live equal the offline decode's.
TEST(LiveDecode, CoreSightReplayDecodesWhileReplaying) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(std::filesystem::exists(kEtm)) << kEtm << " is missing";
    AuxTraceOptions oo;
    oo.images.symfs = kEtmSymfs;
    auto file = PerfDataReader::open(kEtm);
    ASSERT_TRUE(file) << file.error().message;
    auto offline = decodeAuxTraceSpans(*file, {}, oo, 1);
    ASSERT_TRUE(offline) << offline.error().message;
    ASSERT_GT(offline->result.stats.instructions, 0u);
    std::set<int32_t> offlineTids;
    for (const auto& [tid, store] : offline->result.threads)
        if (tid > 0 && store.size()) offlineTids.insert(tid);
    ASSERT_FALSE(offlineTids.empty());

    auto src = ReplaySource::open(kEtm);
    ASSERT_TRUE(src) << src.error().message;
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.keepTicks = 1000;
    lo.images.symfs = kEtmSymfs;
    ReplayOptions ro;
    // About 1 s of wall time for the whole recording: several ticks while it runs.
    ro.speed.factor = (*src)->recordedSeconds() / 1.0;
    LiveRun run = replayWithLiveDecode(kEtm, lo, ro);
    ASSERT_TRUE(run.timeline);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_EQ(run.stats.decodeErrors, 0u);
    EXPECT_EQ(run.stats.auxBytes, (*src)->auxBytes());
    EXPECT_EQ(run.stats.decodedBytes + run.stats.skippedBytes, run.stats.auxBytes);
    EXPECT_EQ(run.stats.skippedBytes, 0u) << "384 bytes are far under the rate bound";
    EXPECT_EQ(run.stats.instructions, offline->result.stats.instructions)
        << "instructions decoded live and offline";
    EXPECT_GE(run.seenWhileRunning.size(), 1u) << "a timeline published while the replay ran";
    uint64_t fileSyncs = 0;
    etm::EtmSession& etmSession = static_cast<EtmAuxTraceSession&>(*offline->session).etm();
    for (size_t ring = 0; ring < etmSession.trace().cpus().size(); ++ring)
        for (const auto& [id, n] : etmSession.syncIndex(ring).syncsById())
            fileSyncs += n;
    EXPECT_GT(fileSyncs, 0u);
    EXPECT_EQ(run.stats.syncPoints, fileSyncs) << "A-syncs found while draining";
    std::printf(
        "CoreSight live decode: %llu instructions live, %llu offline, %zu timelines while running, "
        "%llu ticks, %llu bytes decoded\n",
        (unsigned long long)run.stats.instructions, (unsigned long long)offline->result.stats.instructions,
        run.seenWhileRunning.size(), (unsigned long long)run.stats.ticks,
        (unsigned long long)run.stats.decodedBytes);

    // The loop's thread, with the loop's functions.
    bool loopThread = false;
    std::set<std::string> loopNames;
    for (const auto& th : run.timeline->threads) {
        if (!offlineTids.count(th.tid)) continue;
        for (size_t i = 0; i < th.spans.size(); ++i)
            if (Span s = th.spans.at(i); !s.isGap()) {
                loopThread = true;
                const FunctionInfo& f = (*run.timeline->functions)[s.function];
                if (f.file.find("etm_test_loop") != std::string::npos ||
                    f.name.find("etm_test_loop") != std::string::npos)
                    loopNames.insert(f.name);
            }
    }
    EXPECT_TRUE(loopThread) << "no spans on the recorded thread";
    EXPECT_FALSE(loopNames.empty()) << "no function of etm_test_loop";
    // The stripped binary's names come from its MiniDebugInfo (.gnu_debugdata),
    // as `auxscope report --symfs` names them.
    EXPECT_TRUE(loopNames.count("Loop()")) << ::testing::PrintToString(loopNames);
    EXPECT_TRUE(loopNames.count("main")) << ::testing::PrintToString(loopNames);
}

// An OpenCSD snapshot's shared ETB buffer (juno_r1_1: six ETMv4 trace IDs in
// one buffer), written as a cs_etm perf.data by tools/etmsnap, three copies,
// replayed with the live decoder attached: the A-syncs found while draining
// are those the index finds on open, and every instruction the offline decode
// finds (per trace ID, on its own CPU's segments) is decoded live.
TEST(LiveDecode, CoreSightSharedSinkDecodesWhileReplaying) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string snap = auxscope::test_support::testDataPath("coresight/opencsd-snapshots/juno_r1_1");
    const test_support::TempDir tmp("live-etm");
    const std::filesystem::path& dir = tmp.path;
    etmsnap::SnapPerfDataOptions so;
    so.copies = 3;
    const std::string path = (dir / "juno.data").string();
    auto trace = etmsnap::snapshotToPerfData(snap, path, so);
    ASSERT_TRUE(trace) << trace.error().message;

    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto offline = decodeAuxTraceSpans(*file, {}, {}, 1);
    ASSERT_TRUE(offline) << offline.error().message;
    ASSERT_GT(offline->result.stats.instructions, 0u);
    etm::EtmSession& etmSession = static_cast<EtmAuxTraceSession&>(*offline->session).etm();
    uint64_t fileSyncs = 0;
    std::set<uint64_t> frames;
    for (const etm::EtmBufferSyncs& b : etmSession.syncIndex(0).buffers)
        for (const auto& [id, points] : b.byId)
            for (const etm::EtmSyncPoint& p : points)
                frames.insert(p.offset);
    fileSyncs = frames.size();

    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.keepTicks = 1000;
    ReplayOptions ro;
    ro.speed.max = true;
    LiveRun run = replayWithLiveDecode(path, lo, ro);
    ASSERT_TRUE(run.timeline);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_EQ(run.stats.syncPoints, fileSyncs) << "A-syncs (their frames) found while draining";
    EXPECT_EQ(run.stats.decodedBytes + run.stats.skippedBytes, run.stats.auxBytes);
    std::printf("aux %llu decoded %llu skipped %llu\n", (unsigned long long)run.stats.auxBytes,
                (unsigned long long)run.stats.decodedBytes, (unsigned long long)run.stats.skippedBytes);
    EXPECT_EQ(run.stats.instructions, offline->result.stats.instructions) << "instructions live and offline";
    std::printf(
        "CoreSight shared sink live: %zu sync frames found while draining (%llu on open), %llu "
        "instructions live, %llu offline, %llu ticks\n",
        size_t(run.stats.syncPoints), (unsigned long long)fileSyncs,
        (unsigned long long)run.stats.instructions, (unsigned long long)offline->result.stats.instructions,
        (unsigned long long)run.stats.ticks);
}

// A kind without a decoder: a clear refusal, nothing attached.
TEST(LiveDecode, RefusesOtherTraceKinds) {
    SimulatedCaptureOptions so;
    so.cpus = 1;
    auto session = CaptureSession::openSimulated(so);
    ASSERT_TRUE(session) << session.error().message;
    LiveDecoderOptions lo;
    lo.auxtraceInfo = PerfDataWriterCaptureOptions::AuxtraceInfoBlock{2, {}};  // Intel BTS: no decoder
    auto live = LiveTraceDecoder::attach(**session, lo);
    ASSERT_FALSE(live);
    EXPECT_NE(live.error().message.find("only Intel PT, CoreSight ETM and Arm SPE"), std::string::npos)
        << live.error().message;
}

namespace {

// A second generated program, beside the first (its code in a file of its own).
std::string generatedTrace(uint64_t seed) {
    const std::string& first = generatedTrace();
    if (first.empty()) return {};
    std::string data =
        std::filesystem::path(first).parent_path().string() + "/gen-seed" + std::to_string(seed) + ".data";
    if (std::filesystem::exists(data)) return data;
    std::string cmd = std::string("'") + AUXSCOPE_PTSYNTH + "' --generate 2 --seed " + std::to_string(seed) +
                      " -q -o '" + data + "'";
    return std::system(cmd.c_str()) == 0 ? data : std::string();
}

// Every span of a decode, functions by name: equal across function tables.
std::vector<std::string> spanLines(const AuxTraceSession& session, const DecodedSpans& result) {
    std::vector<std::string> lines;
    for (const auto& [tid, store] : result.threads)
        for (size_t i = 0; i < store.size(); ++i) {
            Span s = store.at(i);
            lines.push_back(std::to_string(tid) + " " + std::to_string(s.start) + " " +
                            std::to_string(s.end) + " " + std::to_string(s.depth) + " " +
                            std::to_string(s.instructions) + " " +
                            (s.isGap() ? "gap" : session.functions()[s.function].name));
        }
    return lines;
}

}  // namespace

// A session opened with the previous one's images (the live decoder's next
// tick) decodes exactly as a fresh one, also when the code at the same
// addresses in the same process changed (another program): the images of the
// changed process are built again and its block shapes dropped. Files known
// already are not loaded again; function ids handed out before stay valid.
TEST(LiveDecode, CarriedSessionDecodesAsAFreshOne) {
    const std::string a = generatedTrace(), b = generatedTrace(6);
    ASSERT_FALSE(a.empty());
    ASSERT_FALSE(b.empty()) << "auxscope-ptsynth --generate --seed 6 failed";
    auto fileA = PerfDataReader::open(a), fileB = PerfDataReader::open(b);
    ASSERT_TRUE(fileA) << fileA.error().message;
    ASSERT_TRUE(fileB) << fileB.error().message;
    auto freshA = AuxTraceSession::open(*fileA), freshB = AuxTraceSession::open(*fileB);
    ASSERT_TRUE(freshA && freshB);
    EXPECT_FALSE((*freshA)->carried());
    EXPECT_EQ((*freshA)->filesLoaded(), (*freshA)->images().files().size());
    const std::vector<std::string> linesA = spanLines(**freshA, (*freshA)->decodeSpans({}, 1));
    const std::vector<std::string> linesB = spanLines(**freshB, (*freshB)->decodeSpans({}, 1));
    ASSERT_GT(linesA.size(), 1000u);
    ASSERT_NE(linesA, linesB) << "two programs";

    // A, then B carried from A, then A again carried from that.
    auto first = AuxTraceSession::open(*fileA);
    ASSERT_TRUE(first);
    std::unique_ptr<AuxTraceSession> carry = std::move(*first);
    DecodedSpans firstSpans = carry->decodeSpans({}, 1);
    const uint32_t someFunction = firstSpans.threads.begin()->second.at(0).function;
    const std::string someName = carry->functions()[someFunction].name;
    auto second = AuxTraceSession::open(*fileB, {}, &carry);
    ASSERT_TRUE(second) << second.error().message;
    EXPECT_FALSE(carry) << "the carried session is taken over";
    EXPECT_TRUE((*second)->carried());
    EXPECT_EQ((*second)->filesLoaded(), 1u) << "B's program only";
    EXPECT_EQ(spanLines(**second, (*second)->decodeSpans({}, 1)), linesB);
    EXPECT_EQ((*second)->functions()[someFunction].name, someName) << "ids handed out before stay valid";
    carry = std::move(*second);
    auto third = AuxTraceSession::open(*fileA, {}, &carry);
    ASSERT_TRUE(third) << third.error().message;
    EXPECT_EQ((*third)->filesLoaded(), 0u) << "A's program was loaded by the first session";
    EXPECT_EQ(spanLines(**third, (*third)->decodeSpans({}, 1)), linesA);
}

// Live ticks take over the previous tick's session: the program's file and
// the kernel's symbols (--kallsyms) are loaded once, not once per tick, and
// the timeline names the same functions as the offline decode. Trace bytes
// the newest-bytes buffer let go before a tick reached them are counted as
// skipped, and so are those still held when the decoder stops (past the last
// tick's rate bound): decoded + skipped = every byte handed over.
TEST(LiveDecode, TicksCarryTheSessionImagesAndSymbols) {
    const std::string& path = generatedTrace();
    ASSERT_FALSE(path.empty());
    test_support::TempDir dir;
    const std::string kallsyms = (dir.path / "kallsyms").string();
    {
        std::ofstream out(kallsyms);
        for (int i = 0; i < 20000; ++i)
            out << std::hex << (0xffffffff81000000ull + 0x40ull * unsigned(i)) << std::dec << " T ksym_" << i
                << "\n";
    }
    auto src = ReplaySource::open(path);
    ASSERT_TRUE(src) << src.error().message;
    for (bool carrySession : {true, false}) {
        SCOPED_TRACE(carrySession ? "carried" : "fresh every tick");
        LiveDecoderOptions lo;
        lo.intervalSeconds = 0.05;
        lo.bytesPerCpuPerTick = 256 << 10;
        lo.cpuShare = 1;
        lo.carrySession = carrySession;
        lo.images.kallsyms = kallsyms;
        lo.images.runningKernel = false;
        ReplayOptions ro;
        // The trace's bytes come at once: looped, a pass every 0.2 s for 1.2 s.
        ro.loop = true;
        ro.durationSeconds = 1.2;
        ro.speed.factor = std::max((*src)->recordedSeconds() / 0.2, 1e-9);
        LiveRun run = replayWithLiveDecode(path, lo, ro);
        ASSERT_TRUE(run.timeline);
        EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
        ASSERT_GE(run.stats.ticks, 2u) << "a tick that can carry the one before";
        if (carrySession) {
            EXPECT_EQ(run.stats.sessionsCarried, run.stats.ticks - 1);
            EXPECT_EQ(run.stats.filesLoaded, 1u) << "the program, at the first tick only";
        } else {
            EXPECT_EQ(run.stats.sessionsCarried, 0u);
            EXPECT_EQ(run.stats.filesLoaded, run.stats.ticks);
        }
        EXPECT_GT(run.stats.auxBytes, 2 * run.stats.decodedBytes) << "the loop offers more than is decoded";
        EXPECT_EQ(run.stats.decodedBytes + run.stats.skippedBytes, run.stats.auxBytes);
        EXPECT_GT(functionNames(*run.timeline).size(), 3u);
    }
}

// Trace bytes after the last way in wait for one; those still held when the
// decoder stops are counted as skipped, so nothing handed over goes uncounted.
TEST(LiveDecode, BytesStillHeldAtStopAreCountedAsSkipped) {
    const std::string& path = generatedTrace();
    ASSERT_FALSE(path.empty());
    auto src = ReplaySource::open(path);
    ASSERT_TRUE(src) << src.error().message;
    ReplayOptions ro;
    auto session = (*src)->openSession(ro);
    ASSERT_TRUE(session) << session.error().message;
    LiveDecoderOptions lo;
    lo.intervalSeconds = 60;  // ticks on flush() only
    lo.auxtraceInfo = (*src)->auxtraceInfo(ro);
    auto live = LiveTraceDecoder::attach(**session, lo);
    ASSERT_TRUE(live) << live.error().message;
    // A PSB, PSBEND and padding; then 8 pad bytes with no PSB of their own.
    std::vector<uint8_t> first;
    for (int i = 0; i < 8; ++i)
        first.insert(first.end(), {0x02, 0x82});
    first.insert(first.end(), {0x02, 0x23});
    first.resize(64, 0x00);
    const std::vector<uint8_t> second(8, 0x00);
    (*live)->onAux(0, 0, AuxBytes{0, first, {}, nullptr});
    (*live)->flush();
    LiveDecodeStats st = (*live)->stats();
    EXPECT_EQ(st.auxBytes, first.size());
    EXPECT_EQ(st.decodedBytes, first.size());
    EXPECT_EQ(st.pendingBytes, 0u);
    (*live)->onAux(0, 0, AuxBytes{first.size(), second, {}, nullptr});
    (*live)->flush();
    st = (*live)->stats();
    EXPECT_EQ(st.decodedBytes, first.size());
    EXPECT_EQ(st.skippedBytes, 0u);
    EXPECT_EQ(st.pendingBytes, second.size()) << "no way in after the decoded bytes";
    (*live)->stop();
    st = (*live)->stats();
    EXPECT_EQ(st.pendingBytes, 0u);
    EXPECT_EQ(st.skippedBytes, second.size());
    EXPECT_EQ(st.decodedBytes + st.skippedBytes, st.auxBytes);
}

namespace {

// An Arm SPE recording made by auxscope-spesynth (with its truth), in the test's folder.
std::string speTrace(const std::string& name, const std::string& args) {
    const std::string& first = generatedTrace();
    if (first.empty()) return {};
    const std::string data = std::filesystem::path(first).parent_path().string() + "/" + name + ".data";
    const std::string cmd = std::string("'") + AUXSCOPE_SPESYNTH + "' -q " + args + " -o '" + data + "'";
    return std::system(cmd.c_str()) == 0 ? data : std::string();
}

// The SPE records as the truth file's rows would print them: every field.
std::string speRow(const spe::SpeRecord& r) {
    char b[400];
    std::snprintf(b, sizeof b, "%llu %llu %d %d %d %u %d %llx %llx %llx %u %u %u %llx %u",
                  (unsigned long long)r.timestamp, (unsigned long long)r.time, r.cpu, r.pid, r.tid,
                  unsigned(r.opClass), unsigned(r.opPayload), (unsigned long long)r.pc,
                  (unsigned long long)r.dataVa, (unsigned long long)r.dataPa, unsigned(r.totalLatency),
                  unsigned(r.issueLatency), unsigned(r.translationLatency), (unsigned long long)r.events,
                  unsigned(r.dataSource));
    return b;
}

}  // namespace

// Arm SPE decoded while replaying: the record ends found while draining are the
// ways in, a tick ends at one, so every record is decoded once and whole, the
// AUX transfers cutting packets anywhere: the live records equal the file's.
TEST(LiveDecode, ArmSpeReplayDecodesEveryRecordWhileReplaying) {
    const std::string path = speTrace("spe-live", "--generate 20000 --seed 11 --chunk 4093");
    ASSERT_FALSE(path.empty());
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto offline = AuxTraceSession::open(*file);
    ASSERT_TRUE(offline) << offline.error().message;
    auto* speSession = dynamic_cast<SpeAuxTraceSession*>(offline->get());
    ASSERT_NE(speSession, nullptr);
    const auto& fileRecords = speSession->records().records;
    ASSERT_EQ(fileRecords.size(), 20000u);

    auto src = ReplaySource::open(path);
    ASSERT_TRUE(src) << src.error().message;
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.keepTicks = 100000;
    lo.bytesPerCpuPerTick = 64 << 10;  // several ticks per CPU, each ending at a record's end
    ReplayOptions ro;
    ro.speed.factor = (*src)->recordedSeconds() / 1.5;
    LiveRun run = replayWithLiveDecode(path, lo, ro);
    EXPECT_TRUE(run.stats.spe);
    EXPECT_TRUE(run.stats.lastError.empty()) << run.stats.lastError;
    EXPECT_EQ(run.stats.auxBytes, (*src)->auxBytes());
    EXPECT_EQ(run.stats.skippedBytes, 0u);
    EXPECT_EQ(run.stats.speGapBytes, 0u);
    EXPECT_GT(run.stats.ticks, 2u);
    EXPECT_EQ(run.stats.speRecords, fileRecords.size());
    EXPECT_EQ(run.stats.speLoads + run.stats.speStores + run.stats.speBranches + run.stats.speOther,
              fileRecords.size());
    EXPECT_GT(run.stats.syncPoints, fileRecords.size() / 2) << "record ends found while draining";
    // Field by field (the threads too: the live sideband is the file's).
    ASSERT_TRUE(run.spe);
    std::multiset<std::string> live, recorded;
    for (const spe::SpeRecord& r : *run.spe)
        live.insert(speRow(r));
    for (const spe::SpeRecord& r : fileRecords)
        recorded.insert(speRow(r));
    EXPECT_TRUE(live == recorded) << live.size() << " live records, " << recorded.size() << " in the file";
}
