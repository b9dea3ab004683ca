// SPDX-License-Identifier: GPL-3.0-or-later
// The replay source over the shared real traces: a recorded perf.data fed through
// the simulated producers and the real drain thread into a new perf.data, which
// must carry the same AUX bytes per CPU (byte for byte), the same sideband records
// per type, and decode in perf report -D to the same Intel PT packets. Also the
// pacing at a chosen speed, looping, and the errors for damaged files. The shared
// data and perf are required: a missing one fails the test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "TestData.h"
#include "WriterTestSupport.h"
#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"
#include "record/ReplaySource.h"

namespace auxscope {
namespace {

using writertest::makeTempDir;
using writertest::perfBinary;
using writertest::runCommand;

// The shared test data: each test that reads it starts with AUXSCOPE_NEED_TEST_DATA().
const std::string kSkylake =
    test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
const std::string kEtm = test_support::testDataPath("coresight/simpleperf-etm/perf_etm.data");
const std::string kMissingAux =
    test_support::testDataPath("coresight/simpleperf-etm/perf_with_missing_aux_data.data");

// A file missing from a data folder that is there is a failure, not a skip.
std::string requireFile(const std::string& path) {
    if (!std::filesystem::exists(path)) ADD_FAILURE() << "shared trace data missing: " << path;
    return path;
}

// Each CPU's AUX bytes: its AUXTRACE payloads in file order (checked contiguous).
std::map<int64_t, std::vector<uint8_t>> auxBytesPerCpu(const PerfDataReader& r) {
    std::map<int64_t, std::vector<uint8_t>> out;
    std::map<int64_t, uint64_t> next;
    for (const PerfAuxtraceBuffer& b : r.summary().auxtrace) {
        auto bytes = r.fileBytes(b.dataOffset, b.size);
        EXPECT_EQ(bytes.size(), b.size) << r.path() << ": AUXTRACE at " << b.fileOffset;
        auto [it, first] = next.try_emplace(b.cpu, b.auxOffset);
        EXPECT_EQ(b.auxOffset, it->second) << r.path() << ": cpu " << b.cpu << " AUXTRACE at " << b.fileOffset
                                           << " does not continue the previous one";
        it->second = b.auxOffset + b.size;
        auto& v = out[b.cpu];
        v.insert(v.end(), bytes.begin(), bytes.end());
    }
    return out;
}

// perf report -D: Intel PT / CoreSight packets per CPU and packet name, from the
// dump of each AUXTRACE record's data.
std::map<int64_t, std::map<std::string, uint64_t>> perfPacketCounts(const std::string& file,
                                                                    std::string* why) {
    std::map<int64_t, std::map<std::string, uint64_t>> out;
    auto perf = perfBinary();
    if (!perf) {
        *why = "perf is not installed (Debian: apt install linux-perf); it is the oracle here";
        return out;
    }
    auto r = runCommand({*perf, "report", "-D", "-i", file}, 120);
    if (!r.exitedZero()) {
        *why = "perf report -D -i " + file + " failed: " + r.err.substr(0, 2000);
        return out;
    }
    static const std::regex auxtrace(R"(PERF_RECORD_AUXTRACE size: .* cpu: (-?\d+))");
    // Intel PT: ".  00000017:  7d 00 d3 60 b9 ff ff 00     FUP 0x...";
    // CoreSight: "\tIdx:258; ID:1e;\tI_ADDR_CTXT_L_64IS0 : Address & Context, ...".
    static const std::regex packet(R"(^\.\s+[0-9a-f]{8}:\s+(?:[0-9a-f]{2} )+\s*(\S+))");
    static const std::regex etmPacket(R"(^\tIdx:\d+; ID:[0-9a-f]+;\t(\S+))");
    std::istringstream in(r.out);
    std::string line;
    int64_t cpu = 0;
    bool inDump = false;  // between a buffer's AUXTRACE line and the next record
    std::smatch m;
    while (std::getline(in, line)) {
        if (std::regex_search(line, m, auxtrace)) {
            cpu = std::stoll(m[1]);
            inDump = true;
            continue;
        }
        if (!inDump) continue;
        if (std::regex_search(line, m, packet) || std::regex_search(line, m, etmPacket))
            ++out[cpu][m[1]];
        else if (line.find("PERF_RECORD_") != std::string::npos)
            inDump = false;  // the next record: the dump of this buffer ended
    }
    return out;
}

// Kernel sideband types a replay carries over.
const std::vector<uint32_t> kSidebandTypes = {
    PERF_RECORD_MMAP,
    PERF_RECORD_MMAP2,
    PERF_RECORD_COMM,
    PERF_RECORD_FORK,
    PERF_RECORD_EXIT,
    PERF_RECORD_SWITCH,
    PERF_RECORD_SWITCH_CPU_WIDE,
    PERF_RECORD_ITRACE_START,
    PERF_RECORD_LOST,
    PERF_RECORD_AUX,
};

uint64_t count(const std::map<uint32_t, uint64_t>& m, uint32_t type) {
    auto it = m.find(type);
    return it == m.end() ? 0 : it->second;
}

struct ReplayRun {
    std::string out;
    double seconds = 0;
    ReplayProgress progress;
    CaptureSummary summary;
    PerfDataWriterCaptureReport report;
};

// Replays `file` into `out` (perf.data) through a real session and file writer.
ReplayRun replayInto(ReplaySource& src, const std::string& out, const ReplayOptions& options) {
    ReplayRun run;
    run.out = out;
    auto session = src.openSession(options);
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return run;
    PerfDataWriterCaptureOptions fo;
    fo.path = out;
    fo.auxtraceInfo = src.auxtraceInfo(options);
    auto writer = PerfDataWriterCapture::open(**session, fo);
    EXPECT_TRUE(writer) << writer.error().message;
    if (!writer) return run;
    EXPECT_TRUE((*session)->start());
    const auto t0 = std::chrono::steady_clock::now();
    auto started = src.start(**session, options);
    EXPECT_TRUE(started) << started.error().message;
    src.wait();  // stopSessionAtEnd: the driver stops the session when done
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    (*session)->wait();
    auto fin = (*writer)->finish();
    EXPECT_TRUE(fin) << fin.error().message;
    run.progress = src.progress();
    run.summary = (*session)->summary();
    run.report = (*writer)->report();
    return run;
}

TEST(Replay, ParsesSpeeds) {
    auto max = parseReplaySpeed("max");
    ASSERT_TRUE(max);
    EXPECT_TRUE(max->max);
    auto ten = parseReplaySpeed("10");
    ASSERT_TRUE(ten);
    EXPECT_FALSE(ten->max);
    EXPECT_EQ(ten->factor, 10.0);
    EXPECT_EQ(describeReplaySpeed(*ten), "10x recorded speed");
    EXPECT_EQ(describeReplaySpeed(ReplaySpeed{}), "recorded speed");
    for (const char* bad : {"", "0", "-2", "fast", "nan", "inf", "1x"}) {
        auto r = parseReplaySpeed(bad);
        EXPECT_FALSE(r) << bad;
        if (!r) {
            EXPECT_NE(r.error().message.find("max"), std::string::npos);
        }
    }
}

// open() reports how far its walk is and stops when told (the capture page reads a
// recording on a worker, with a progress bar and Cancel).
TEST(Replay, OpenReportsProgressAndCancels) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string path = requireFile(kSkylake);
    size_t calls = 0;
    uint64_t lastDone = 0, lastTotal = 0;
    auto src = ReplaySource::open(path, [&](uint64_t done, uint64_t total) {
        ++calls;
        EXPECT_LE(done, total);
        EXPECT_GE(done, lastDone);
        lastDone = done, lastTotal = total;
        return true;
    });
    ASSERT_TRUE(src) << src.error().message;
    EXPECT_GE(calls, 1u);
    EXPECT_GT(lastTotal, 0u);
    auto cancelled = ReplaySource::open(path, [](uint64_t, uint64_t) { return false; });
    ASSERT_FALSE(cancelled);
    EXPECT_EQ(cancelled.error().message, path + ": cancelled");
}

TEST(Replay, ReadsTheSkylakeRecording) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    const auto& s = (*src)->streams();
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].sourceCpu, 0);
    EXPECT_EQ(s[0].bytes, 12240u);
    EXPECT_EQ(s[0].auxRecords, 1u);
    EXPECT_EQ(s[0].transactions, 1u);
    EXPECT_EQ(s[1].sourceCpu, 3);
    EXPECT_EQ(s[1].sourceIdx, 3u);
    EXPECT_EQ(s[1].bytes, 137728u);
    EXPECT_EQ(s[1].auxRecords, 9u);
    EXPECT_EQ(s[1].transactions, 9u);
    EXPECT_EQ((*src)->simulatedCpus(), 4u) << "CPUs keep their numbers: 0..3";
    EXPECT_EQ((*src)->auxBytes(), 149968u);
    EXPECT_EQ((*src)->auxEventName(), "intel_pt//");
    EXPECT_EQ((*src)->auxEventAttr().type, 6u);
    ASSERT_TRUE((*src)->auxtraceInfo());
    EXPECT_EQ((*src)->auxtraceInfo()->type, 1u);
    EXPECT_EQ((*src)->auxtraceInfo()->priv.size(), 17u);
    // 2.24 ms between the first and the last timed record.
    EXPECT_GT((*src)->recordedSeconds(), 0.0022);
    EXPECT_LT((*src)->recordedSeconds(), 0.0023);
    const auto& side = (*src)->sidebandByType();
    EXPECT_EQ(count(side, PERF_RECORD_MMAP), 56u);
    EXPECT_EQ(count(side, PERF_RECORD_SWITCH_CPU_WIDE), 152u);
    bool samplesCounted = false;
    for (const ReplaySkip& k : (*src)->skipped()) {
        if (k.type == PERF_RECORD_SAMPLE) {
            samplesCounted = true;
            EXPECT_EQ(k.records, 15u);
            EXPECT_NE(k.reason.find("samples"), std::string::npos) << k.reason;
        }
    }
    EXPECT_TRUE(samplesCounted) << "the 15 cycles samples are counted as not replayed";
    const SimulatedCaptureOptions co = (*src)->captureOptions({});
    EXPECT_EQ(co.label, "replay of " + kSkylake);
    EXPECT_EQ(co.cpus, 4u);
    EXPECT_GE(co.producer.auxSize, 137728u + 1) << "a small file never wraps the AUX area";
    EXPECT_EQ(co.producer.mode, AuxMode::Full);
    ReplayOptions snap;
    snap.mode = AuxMode::Snapshot;
    EXPECT_EQ((*src)->captureOptions(snap).producer.mode, AuxMode::Snapshot);
    // The output's AUXTRACE_INFO says how the replay ran: Intel PT word 8 is snapshot mode.
    EXPECT_EQ((*src)->auxtraceInfo({})->priv, (*src)->auxtraceInfo()->priv);
    EXPECT_EQ((*src)->auxtraceInfo()->priv[8], 0u);
    EXPECT_EQ((*src)->auxtraceInfo(snap)->priv[8], 1u);
}

// The acceptance test: max speed into a perf.data that perf decodes like the source.
TEST(Replay, SkylakeAtMaxSpeedGivesTheSameAuxBytesSidebandAndPackets) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    const std::string dir = makeTempDir("replay");
    ReplayOptions o;
    o.speed.max = true;
    const ReplayRun run = replayInto(**src, dir + "/replay.data", o);
    EXPECT_TRUE(run.progress.finished);
    EXPECT_FALSE(run.progress.stoppedEarly);
    EXPECT_EQ(run.progress.auxBytesFed, 149968u);
    EXPECT_EQ(run.progress.recordsFed, run.progress.recordsTotal);
    EXPECT_EQ(run.progress.recordsDropped, 0u);
    EXPECT_EQ(run.progress.passesDone, 1u);
    EXPECT_EQ(run.summary.target, "replay of " + kSkylake);
    EXPECT_EQ(run.report.droppedRecords, 0u);

    auto in = PerfDataReader::open(kSkylake);
    auto out = PerfDataReader::open(run.out);
    ASSERT_TRUE(in && out);
    EXPECT_FALSE(out->hasErrors());
    for (const auto& i : out->issues())
        ADD_FAILURE() << i.message;

    // AUX bytes, per CPU, byte for byte (what auxscope info reports, too).
    const auto a = auxBytesPerCpu(*in), b = auxBytesPerCpu(*out);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), a.size());
    for (const auto& [cpu, bytes] : a) {
        SCOPED_TRACE("cpu " + std::to_string(cpu));
        ASSERT_TRUE(b.count(cpu));
        EXPECT_EQ(b.at(cpu).size(), bytes.size());
        EXPECT_TRUE(b.at(cpu) == bytes) << "AUX bytes differ";
        EXPECT_EQ(out->summary().cpus.at(cpu).auxtraceBytes, in->summary().cpus.at(cpu).auxtraceBytes);
    }
    // AUXTRACE idx = the recorded mmap index (the CPU here), AUXTRACE_INFO unchanged.
    for (const PerfAuxtraceBuffer& buf : out->summary().auxtrace)
        EXPECT_EQ(int64_t(buf.idx), buf.cpu);
    ASSERT_EQ(out->summary().auxtraceInfo.size(), 1u);
    EXPECT_EQ(out->summary().auxtraceInfo[0].priv, in->summary().auxtraceInfo[0].priv);
    ASSERT_TRUE(out->summary().timeConv);
    EXPECT_EQ(out->summary().timeConv->timeMult, in->summary().timeConv->timeMult);
    EXPECT_EQ(out->summary().timeConv->timeZero, in->summary().timeConv->timeZero);
    // The recorded AUX event's attr, but for the sample_id layout.
    ASSERT_EQ(out->attrs().size(), 1u);
    EXPECT_EQ(out->attrs()[0].attr.type, in->attrs()[0].attr.type);
    EXPECT_EQ(out->attrs()[0].attr.config, in->attrs()[0].attr.config);

    // Sideband per type (AUX: one regenerated record per recorded transaction), and
    // per CPU. The 56 MMAP and 1 COMM perf synthesized carry id 0 and CPU 0 (perf
    // reads them as the first event's, on cpu 0; auxscope's reader as no event's,
    // no CPU): the replay writes them on cpu 0 with the simulated event's id.
    const auto& inCpus = in->summary().cpus;
    for (uint32_t t : kSidebandTypes) {
        SCOPED_TRACE(perfRecordTypeName(t));
        EXPECT_EQ(count(out->summary().recordsByType, t), count(in->summary().recordsByType, t));
        for (const auto& [cpu, st] : inCpus) {
            if (cpu < 0) continue;
            uint64_t want = count(st.recordsByType, t);
            if (cpu == 0 && inCpus.count(-1)) want += count(inCpus.at(-1).recordsByType, t);
            EXPECT_EQ(count(out->summary().cpus.at(cpu).recordsByType, t), want) << "cpu " << cpu;
        }
    }
    EXPECT_EQ(
        out->summary().cpus.count(-1) ? out->summary().cpus.at(-1).recordsByType.count(PERF_RECORD_MMAP) : 0u,
        0u);
    EXPECT_EQ(count(out->summary().recordsByType, PERF_RECORD_SAMPLE), 0u);
    // The recorded timestamps: the first and last switch on cpu 1 as in the source.
    auto switchTimes = [](const PerfDataReader& r) {
        std::vector<uint64_t> t;
        (void)r.forEachRecord([&](const PerfRecord& rec) {
            if (rec.header.type == PERF_RECORD_SWITCH_CPU_WIDE && rec.cpu == 1) t.push_back(rec.parsed.time);
            return true;
        });
        return t;
    };
    EXPECT_EQ(switchTimes(*out), switchTimes(*in));

    // perf as the oracle: the same Intel PT packets per CPU and type.
    std::string why;
    const auto pin = perfPacketCounts(kSkylake, &why);
    ASSERT_TRUE(why.empty()) << why;
    const auto pout = perfPacketCounts(run.out, &why);
    ASSERT_TRUE(why.empty()) << why;
    ASSERT_TRUE(pin.count(0) && pout.count(0));
    const std::map<std::string, uint64_t> readme = {
        {"TNT", 8242}, {"TIP", 505}, {"MTC", 325}, {"PIP", 15}, {"FUP", 10}};
    for (const auto& [name, n] : readme) {
        EXPECT_EQ(pin.at(0).at(name), n) << name << " (source, per the data README)";
        EXPECT_EQ(pout.at(0).count(name) ? pout.at(0).at(name) : 0, n) << name << " (replay)";
    }
    EXPECT_EQ(pout, pin) << "every CPU's packet counts, every type";
    std::filesystem::remove_all(dir);
}

// Recorded-speed pacing: not a timing benchmark, just "it paced". The file spans
// 2.02 ms of recorded time; at 0.01x that is 0.2 s of wall time.
TEST(Replay, PacesByTheRecordedTimestamps) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    const std::string dir = makeTempDir("replay-pace");
    ReplayOptions o;
    o.speed.factor = 0.01;
    const double expected = (*src)->recordedSeconds() / o.speed.factor;
    const ReplayRun run = replayInto(**src, dir + "/paced.data", o);
    std::printf("recorded span %.6f s at 0.01x: expected %.3f s, took %.3f s\n", (*src)->recordedSeconds(),
                expected, run.seconds);
    EXPECT_GE(run.seconds, 0.9 * expected);
    EXPECT_LE(run.seconds, expected + 2.0);
    EXPECT_EQ(run.progress.auxBytesFed, 149968u);
    EXPECT_NEAR(run.progress.recordedSecondsFed, (*src)->recordedSeconds(), 1e-9);

    // Max speed is not paced: far quicker than the paced run.
    ReplayOptions fast;
    fast.speed.max = true;
    auto src2 = ReplaySource::open(kSkylake);
    ASSERT_TRUE(src2);
    const ReplayRun quick = replayInto(**src2, dir + "/fast.data", fast);
    EXPECT_LT(quick.seconds, run.seconds);
    std::filesystem::remove_all(dir);
}

// Looping for demos: passes follow one another until the duration ends, every
// byte fed reaches the file, and the times keep increasing across passes.
TEST(Replay, LoopsUntilTheDurationEnds) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    const std::string dir = makeTempDir("replay-loop");
    ReplayOptions o;
    // 2.24 ms of recorded time per pass at 0.05x: 45 ms. (At max speed a loop
    // outruns the disk: the writer's queue then drops chunks, and says so.)
    o.speed.factor = 0.05;
    o.loop = true;
    o.durationSeconds = 0.4;
    const ReplayRun run = replayInto(**src, dir + "/loop.data", o);
    EXPECT_GE(run.progress.passesDone, 3u);
    EXPECT_EQ(run.report.droppedRecords, 0u);
    EXPECT_TRUE(run.progress.stoppedEarly);
    EXPECT_GE(run.seconds, 0.35);
    EXPECT_LT(run.seconds, 5.0);
    auto out = PerfDataReader::open(run.out);
    ASSERT_TRUE(out);
    uint64_t bytes = 0;
    for (const auto& b : out->summary().auxtrace)
        bytes += b.size;
    EXPECT_EQ(bytes, run.progress.auxBytesFed) << "every byte fed reaches the file";
    uint64_t last = 0, backwards = 0;
    (void)out->forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type == PERF_RECORD_SWITCH_CPU_WIDE && rec.cpu == 1) {
            backwards += rec.parsed.time < last;
            last = rec.parsed.time;
        }
        return true;
    });
    EXPECT_EQ(backwards, 0u);
    std::filesystem::remove_all(dir);
}

// stop() ends a slow replay at once, and the session with it.
TEST(Replay, StopsOnRequest) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    ReplayOptions o;
    o.speed.factor = 0.0001;  // 20 s
    auto session = (*src)->openSession(o);
    ASSERT_TRUE(session) << session.error().message;
    ASSERT_TRUE((*session)->start());
    ASSERT_TRUE((*src)->start(**session, o));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto mid = (*src)->progress();
    EXPECT_TRUE(mid.running);
    EXPECT_LT(mid.auxBytesFed, mid.auxBytesTotal);
    const auto t0 = std::chrono::steady_clock::now();
    (*src)->stop();
    (*session)->wait();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
    EXPECT_TRUE((*src)->progress().stoppedEarly);
    EXPECT_TRUE((*src)->finished());
}

// Snapshot mode: the producers overwrite their AUX area (every PERF_RECORD_AUX
// carries OVERWRITE) and the driver never waits for the drain to free AUX space.
TEST(Replay, SnapshotModeProducersOverwrite) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    ReplayOptions o;
    o.speed.max = true;
    o.mode = AuxMode::Snapshot;
    o.auxSize = 64 * 1024;  // smaller than cpu 3's 134 KiB: it wraps
    auto session = (*src)->openSession(o);
    ASSERT_TRUE(session) << session.error().message;
    ASSERT_TRUE((*session)->start());
    ASSERT_TRUE((*src)->start(**session, o));
    (*src)->wait();
    (*session)->wait();
    const ReplayProgress p = (*src)->progress();
    EXPECT_FALSE(p.stoppedEarly);
    EXPECT_EQ(p.auxBytesFed, 149968u);
    const SimulatedAuxCounts c3 = (*session)->simulatedProducer(3).counts();
    EXPECT_EQ(c3.bytesWritten, 137728u);
    EXPECT_EQ(c3.bytesTruncated, 0u);
    EXPECT_GE(c3.auxRecords, 9u);
    EXPECT_EQ((*session)->simulatedProducer(3).config().mode, AuxMode::Snapshot);
}

// The CoreSight ETM recording made by simpleperf (cpu 7 of 8, formatted ETMv4).
TEST(Replay, SimpleperfCoreSightRecording) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kEtm));
    ASSERT_TRUE(src) << src.error().message;
    ASSERT_EQ((*src)->streams().size(), 1u);
    EXPECT_EQ((*src)->streams()[0].sourceCpu, 7);
    EXPECT_EQ((*src)->streams()[0].auxRecords, 4u);
    EXPECT_EQ((*src)->simulatedCpus(), 8u);
    ASSERT_TRUE((*src)->auxtraceInfo());
    EXPECT_EQ((*src)->auxtraceInfo()->type, 3u);
    const std::string dir = makeTempDir("replay-etm");
    ReplayOptions o;
    o.speed.max = true;
    const ReplayRun run = replayInto(**src, dir + "/etm.data", o);
    auto in = PerfDataReader::open(kEtm);
    auto out = PerfDataReader::open(run.out);
    ASSERT_TRUE(in && out);
    for (const auto& i : out->issues())
        ADD_FAILURE() << i.message;
    const auto a = auxBytesPerCpu(*in), b = auxBytesPerCpu(*out);
    ASSERT_EQ(a.size(), 1u);
    EXPECT_TRUE(b == a) << "AUX bytes of cpu 7 differ";
    for (uint32_t t : kSidebandTypes)
        EXPECT_EQ(count(out->summary().recordsByType, t), count(in->summary().recordsByType, t))
            << perfRecordTypeName(t);
    std::string why;
    const auto pin = perfPacketCounts(kEtm, &why);
    ASSERT_TRUE(why.empty()) << why;
    const auto pout = perfPacketCounts(run.out, &why);
    ASSERT_TRUE(why.empty()) << why;
    EXPECT_FALSE(pin.empty()) << "perf dumps the source's ETM packets";
    EXPECT_EQ(pout, pin);
    std::filesystem::remove_all(dir);
}

TEST(Replay, TruncatedFileNamesTheOffset) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string dir = makeTempDir("replay-trunc");
    const std::string cut = dir + "/cut.data";
    {
        std::ifstream in(requireFile(kSkylake), std::ios::binary);
        std::vector<char> bytes(100000);
        in.read(bytes.data(), long(bytes.size()));
        ASSERT_EQ(in.gcount(), 100000);
        std::ofstream(cut, std::ios::binary).write(bytes.data(), long(bytes.size()));
    }
    auto src = ReplaySource::open(cut);
    ASSERT_FALSE(src);
    const std::string& m = src.error().message;
    EXPECT_NE(m.find(cut), std::string::npos) << m;
    // cpu 3's AUXTRACE record at 0x7788 lost its payload.
    EXPECT_NE(m.find("offset 30600 (0x7788)"), std::string::npos) << m;
    EXPECT_NE(m.find("AUXTRACE payload"), std::string::npos) << m;
    std::filesystem::remove_all(dir);
}

TEST(Replay, CorruptAuxtraceSizeNamesTheOffset) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string dir = makeTempDir("replay-corrupt");
    const std::string bad = dir + "/bad.data";
    std::vector<char> bytes;
    {
        std::ifstream in(requireFile(kSkylake), std::ios::binary);
        bytes.assign(std::istreambuf_iterator<char>(in), {});
        ASSERT_EQ(bytes.size(), 181764u);
    }
    // cpu 0's AUXTRACE record at 0x29c0 announces 2 GiB of payload.
    const uint64_t huge = 0x80000000ull;
    std::memcpy(bytes.data() + 0x29c0 + 8, &huge, 8);
    std::ofstream(bad, std::ios::binary).write(bytes.data(), long(bytes.size()));
    auto src = ReplaySource::open(bad);
    ASSERT_FALSE(src);
    const std::string& m = src.error().message;
    EXPECT_NE(m.find(bad), std::string::npos) << m;
    EXPECT_NE(m.find("offset 10688 (0x29c0)"), std::string::npos) << m;
    std::filesystem::remove_all(dir);
}

TEST(Replay, FileWithoutAuxDataIsAClearError) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kMissingAux));
    ASSERT_FALSE(src);
    const std::string& m = src.error().message;
    EXPECT_NE(m.find(kMissingAux), std::string::npos) << m;
    EXPECT_NE(m.find("no AUX trace data"), std::string::npos) << m;
    auto none = ReplaySource::open("/nonexistent/file.data");
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("/nonexistent/file.data"), std::string::npos);
}

}  // namespace
// The file keeps the AUX counters per CPU over time (auxscope's statistics
// section, version 2): the last sample of each replayed CPU holds its AUX bytes.
TEST(Replay, CaptureStatisticsCarryTheAuxCounters) {
    AUXSCOPE_NEED_TEST_DATA();
    auto src = ReplaySource::open(requireFile(kSkylake));
    ASSERT_TRUE(src) << src.error().message;
    const std::string dir = makeTempDir("replay-stats");
    ReplayOptions o;
    o.speed.factor = 0.05;  // ~45 ms: a few statistics publishes
    const ReplayRun run = replayInto(**src, dir + "/stats.data", o);
    auto file = PerfDataReader::open(run.out);
    ASSERT_TRUE(file) << file.error().message;
    const PerfRawFeature* raw = nullptr;
    for (auto& f : file->features().raw)
        if (f.id == kFeatAuxscopeCaptureStats) raw = &f;
    ASSERT_NE(raw, nullptr);
    auto history = decodeCaptureStatsFeature(raw->bytes, run.out);
    ASSERT_TRUE(history) << history.error().message;
    std::map<int32_t, StatsSample> last;
    for (auto& st : *history)
        last[st.cpu] = st;
    ASSERT_TRUE(last.count(0) && last.count(3));
    EXPECT_TRUE(last[0].hasAux);
    EXPECT_EQ(last[0].auxBytes, 12240u);
    EXPECT_EQ(last[3].auxBytes, 137728u);
    EXPECT_EQ(last[1].auxBytes, 0u);
    EXPECT_EQ(last[0].auxTruncated + last[3].auxTruncated, 0u);
    EXPECT_EQ(last[0].auxBytes + last[3].auxBytes, run.summary.total().auxBytes);
}

// Files written before the AUX counters (version 1, 64-byte entries) still read.
TEST(Replay, CaptureStatisticsVersionOneStillReads) {
    std::vector<uint8_t> v1(16 + 64, 0);
    const uint32_t head[2] = {1, 64};
    const uint64_t count = 1;
    std::memcpy(v1.data(), head, 8);
    std::memcpy(v1.data() + 8, &count, 8);
    const int32_t cpu = 5;
    const uint64_t records = 77;
    std::memcpy(v1.data() + 16 + 16, &cpu, 4);
    std::memcpy(v1.data() + 16 + 32, &records, 8);
    auto h = decodeCaptureStatsFeature(v1, "v1");
    ASSERT_TRUE(h) << h.error().message;
    ASSERT_EQ(h->size(), 1u);
    EXPECT_EQ((*h)[0].cpu, 5);
    EXPECT_EQ((*h)[0].records, 77u);
    EXPECT_FALSE((*h)[0].hasAux);
    std::vector<uint8_t> v3 = v1;
    v3[0] = 3;
    auto bad = decodeCaptureStatsFeature(v3, "v3");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("unknown version 3"), std::string::npos);
}

}  // namespace auxscope
