// SPDX-License-Identifier: GPL-3.0-or-later
// Flight-recorder (snapshot) mode over CaptureSession::openSimulated: the real
// drain thread takes snapshots of simulated AUX areas in overwrite mode, with
// Intel PT-style (wrapping) and CoreSight-style (free-running) heads. Each
// snapshot must be the producer's newest bytes exactly (patternByte of their
// stream positions), the wrap decided by tracking or by zero-scan after a LOST,
// consistent while a producer runs (the disable waits for its transaction), the
// sideband drained without loss in between, the per-CPU counts exact, and the
// perf.data written must hold one AUXTRACE record per CPU and snapshot. Then the
// triggers: the control FIFO (real FIFOs, acks read back) and SIGUSR2.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "CaptureControl.h"
#include "CaptureSession.h"
#include "WaitFor.h"
#include "WriterTestSupport.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"

namespace auxscope {
namespace {

using namespace std::chrono_literals;

using test_support::waitFor;

// Keeps every snapshot (one onAux call) per CPU. Written on the drain thread
// before it counts the snapshot as taken: read after snapshotCount() moved on.
class SnapshotCollector : public RecordSink {
public:
    struct Snap {
        uint32_t ringIndex;
        uint64_t offset;
        std::vector<uint8_t> bytes;
    };
    explicit SnapshotCollector(size_t cpus) : snaps(cpus) {}
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override {}
    void onAux(int cpu, uint32_t ringIndex, const AuxBytes& b) override {
        std::vector<uint8_t> bytes(b.first.begin(), b.first.end());
        bytes.insert(bytes.end(), b.second.begin(), b.second.end());
        snaps[size_t(cpu)].push_back({ringIndex, b.offset, std::move(bytes)});
    }
    std::vector<SinkLoss> losses() const override { return {}; }
    std::vector<std::vector<Snap>> snaps;
};

SimulatedCaptureOptions flightRecorder(unsigned cpus, uint64_t auxSize, bool freeRunning) {
    SimulatedCaptureOptions o;
    o.cpus = cpus;
    o.producer.auxSize = auxSize;
    o.producer.mode = AuxMode::Snapshot;
    o.producer.freeRunningOverwriteHead = freeRunning;
    // 64 KiB of data ring: 1024 PERF_RECORD_AUX (64 bytes each) between two passes.
    o.producer.dataPages = 16;
    o.publishHz = 50;
    return o;
}

// The byte the producer wrote at stream position p is patternByte(p).
int64_t firstMismatch(const std::vector<uint8_t>& bytes, uint64_t from) {
    for (size_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] != SimulatedAuxProducer::patternByte(from + i)) return int64_t(i);
    return -1;
}

// The copy a snapshot must hold after `written` bytes, and the AUXTRACE offset
// perf would give it.
struct Want {
    uint64_t bytes, from, offset;
};
Want expectedSnapshot(uint64_t written, uint64_t size, uint64_t want, bool freeRunning) {
    const bool wrapped = written >= size;
    const uint64_t headOffset = written & (size - 1);
    const uint64_t n = std::min(want ? want : size, wrapped ? size : headOffset);
    const uint64_t end = freeRunning ? written : headOffset + (wrapped ? size : 0);
    return {n, written - n, end - n};
}

// Requests a snapshot and waits until the drain thread has served it.
void snapshotAndWait(CaptureSession& s) {
    const uint64_t before = s.snapshotCount();
    s.requestSnapshot();
    ASSERT_TRUE(waitFor([&] { return s.snapshotCount() > before; })) << "the snapshot was never taken";
}

struct Params {
    bool freeRunning;
    uint64_t want;  // DrainControl::snapshotBytes
};

class SnapshotModes : public ::testing::TestWithParam<Params> {};

// Several snapshots per session after the heads wrapped many times; exact bytes,
// offsets and counts.
TEST_P(SnapshotModes, SnapshotsAfterManyWrapsHoldTheNewestBytes) {
    const Params prm = GetParam();
    constexpr unsigned kCpus = 2;
    constexpr uint64_t kSize = 16384;
    SimulatedCaptureOptions o = flightRecorder(kCpus, kSize, prm.freeRunning);
    o.snapshotBytes = prm.want;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    SnapshotCollector col(kCpus);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    constexpr int kSnapshots = 5;
    std::vector<std::vector<uint64_t>> writtenAt(kCpus);
    uint64_t seed = 7;
    for (int k = 0; k < kSnapshots; ++k) {
        for (unsigned c = 0; c < kCpus; ++c) {
            // About ten times round the area, in transactions of 1..3000 bytes.
            auto& p = session.simulatedProducer(c);
            const uint64_t target = p.counts().bytesWritten + 10 * kSize + 1234 * c + 77 * uint64_t(k);
            while (p.counts().bytesWritten < target) {
                seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
                ASSERT_TRUE(p.step(1 + seed % 3000).started);
            }
            writtenAt[c].push_back(p.counts().bytesWritten);
        }
        snapshotAndWait(session);
    }
    session.requestStop();
    session.wait();
    EXPECT_EQ(session.snapshotCount(), uint64_t(kSnapshots));
    for (unsigned c = 0; c < kCpus; ++c) {
        SCOPED_TRACE("cpu " + std::to_string(c));
        auto& p = session.simulatedProducer(c);
        const SimulatedAuxCounts n = p.counts();
        ASSERT_EQ(col.snaps[c].size(), size_t(kSnapshots));
        uint64_t bytes = 0;
        for (int k = 0; k < kSnapshots; ++k) {
            SCOPED_TRACE("snapshot " + std::to_string(k));
            const auto& snap = col.snaps[c][size_t(k)];
            const Want e = expectedSnapshot(writtenAt[c][size_t(k)], kSize, prm.want, prm.freeRunning);
            ASSERT_EQ(snap.bytes.size(), e.bytes);
            EXPECT_EQ(firstMismatch(snap.bytes, e.from), -1);
            EXPECT_EQ(snap.offset, e.offset);
            EXPECT_EQ(snap.ringIndex, c);
            bytes += e.bytes;
        }
        // The data ring was drained between snapshots: no record lost.
        EXPECT_EQ(n.recordsDropped, 0u);
        // One disable per snapshot, each followed by the re-enable.
        EXPECT_EQ(n.userDisables, uint64_t(kSnapshots));
        EXPECT_EQ(n.enables, uint64_t(kSnapshots));
        EXPECT_TRUE(p.enabled());
        const CpuStatsSnapshot st = session.stats().snapshot(c);
        EXPECT_TRUE(st.auxSnapshotMode);
        EXPECT_EQ(st.totals.auxSnapshots, uint64_t(kSnapshots));
        EXPECT_EQ(st.totals.auxSnapshotBytes, bytes);
        EXPECT_EQ(st.totals.auxSnapshotsTracked, uint64_t(kSnapshots));
        EXPECT_EQ(st.totals.auxSnapshotsZeroScan, 0u);
        EXPECT_EQ(st.totals.byType[PERF_RECORD_AUX], n.auxRecords);
        EXPECT_EQ(st.totals.auxOverwrite, n.auxRecords);
        EXPECT_EQ(st.totals.lostRecords, 0u);
        EXPECT_EQ(st.totals.auxBytes, 0u) << "snapshots are not counted as drained AUX bytes";
        EXPECT_DOUBLE_EQ(st.auxFillPercent, 100.0);
    }
    const CpuCounters total = session.summary().total();
    EXPECT_EQ(total.auxSnapshots, uint64_t(kSnapshots) * kCpus);
    EXPECT_EQ(total.auxSnapshotsTracked, uint64_t(kSnapshots) * kCpus);
}

// Before the first wrap only what was written is copied, from the start of the
// area; a snapshot with nothing new since the previous one adds no copy.
TEST_P(SnapshotModes, BeforeAnyWrapOnlyWhatWasWrittenIsCopied) {
    const Params prm = GetParam();
    constexpr uint64_t kSize = 65536;
    SimulatedCaptureOptions o = flightRecorder(1, kSize, prm.freeRunning);
    o.snapshotBytes = prm.want;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    SnapshotCollector col(1);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    auto& p = session.simulatedProducer(0);
    snapshotAndWait(session);  // nothing written yet: no copy
    EXPECT_TRUE(col.snaps[0].empty());
    p.step(1000);
    snapshotAndWait(session);
    p.step(500);
    p.step(6000);
    snapshotAndWait(session);
    snapshotAndWait(session);  // nothing new
    session.requestStop();
    session.wait();
    ASSERT_EQ(col.snaps[0].size(), 2u);
    const uint64_t written[2] = {1000, 7500};
    for (size_t k = 0; k < 2; ++k) {
        const Want e = expectedSnapshot(written[k], kSize, prm.want, prm.freeRunning);
        EXPECT_EQ(col.snaps[0][k].bytes.size(), e.bytes);
        EXPECT_EQ(firstMismatch(col.snaps[0][k].bytes, e.from), -1);
        EXPECT_EQ(col.snaps[0][k].offset, e.offset);
    }
    const CpuStatsSnapshot st = session.stats().snapshot(0);
    EXPECT_EQ(st.totals.auxSnapshots, 2u);
    EXPECT_EQ(st.totals.auxSnapshotsTracked, 2u);
    EXPECT_EQ(session.snapshotCount(), 4u) << "every request is served, with or without new data";
    EXPECT_EQ(p.counts().userDisables, 4u);
    EXPECT_NEAR(st.auxFillPercent, 100.0 * 7500 / kSize, 1e-9);
}

// A LOST record on the data ring hides a transaction that wrapped the area: the
// tracker is no longer certain, and the zero-scan finds the wrap.
TEST_P(SnapshotModes, LostRecordHidingAWrapFallsBackToZeroScan) {
    const Params prm = GetParam();
    constexpr uint64_t kSize = 16384;
    SimulatedCaptureOptions o = flightRecorder(1, kSize, prm.freeRunning);
    o.snapshotBytes = prm.want;
    o.producer.dataPages = 1;  // 4 KiB: 63 PERF_RECORD_AUX fit
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    auto& p = session.simulatedProducer(0);
    for (int i = 0; i < 63; ++i)
        ASSERT_TRUE(p.step(10).recordWritten);
    // Wraps the area, but its record finds the data ring full.
    const auto big = p.step(20000);
    ASSERT_TRUE(big.recordDropped);
    SnapshotCollector col(1);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    ASSERT_TRUE(waitFor([&] { return session.stats().snapshot(0).totals.byType[PERF_RECORD_AUX] == 63; }));
    ASSERT_TRUE(p.flushLost());  // the LOST record, now that the ring has room
    ASSERT_TRUE(waitFor([&] { return session.stats().snapshot(0).totals.lostRecords == 1; }));
    snapshotAndWait(session);
    session.requestStop();
    session.wait();
    const uint64_t written = 630 + 20000;
    ASSERT_EQ(col.snaps[0].size(), 1u);
    const Want e = expectedSnapshot(written, kSize, prm.want, prm.freeRunning);
    EXPECT_EQ(col.snaps[0][0].bytes.size(), e.bytes);
    EXPECT_EQ(firstMismatch(col.snaps[0][0].bytes, e.from), -1);
    EXPECT_EQ(col.snaps[0][0].offset, e.offset);
    const CpuCounters t = session.stats().snapshot(0).totals;
    EXPECT_EQ(t.auxSnapshots, 1u);
    if (prm.freeRunning) {
        // aux_head (20630) >= the area's size proves the wrap: still tracked.
        EXPECT_EQ(t.auxSnapshotsTracked, 1u);
    } else {
        EXPECT_EQ(t.auxSnapshotsZeroScan, 1u);
    }
}

// A LOST record before any wrap: zero-scan must say "not wrapped" and copy only
// what was written.
TEST_P(SnapshotModes, LostRecordBeforeAnyWrapZeroScanCopiesOnlyWhatWasWritten) {
    const Params prm = GetParam();
    constexpr uint64_t kSize = 65536;
    SimulatedCaptureOptions o = flightRecorder(1, kSize, prm.freeRunning);
    o.snapshotBytes = prm.want;
    o.producer.dataPages = 1;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    auto& p = session.simulatedProducer(0);
    for (int i = 0; i < 100; ++i)
        p.step(100);  // 37 records dropped
    ASSERT_GT(p.counts().recordsDropped, 0u);
    SnapshotCollector col(1);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    ASSERT_TRUE(waitFor([&] { return session.stats().snapshot(0).totals.byType[PERF_RECORD_AUX] == 63; }));
    ASSERT_TRUE(p.flushLost());
    ASSERT_TRUE(waitFor([&] { return session.stats().snapshot(0).totals.lostRecords == 37; }));
    snapshotAndWait(session);
    session.requestStop();
    session.wait();
    ASSERT_EQ(col.snaps[0].size(), 1u);
    const Want e = expectedSnapshot(10000, kSize, prm.want, prm.freeRunning);
    EXPECT_EQ(col.snaps[0][0].bytes.size(), e.bytes);
    EXPECT_EQ(firstMismatch(col.snaps[0][0].bytes, e.from), -1);
    EXPECT_EQ(session.stats().snapshot(0).totals.auxSnapshotsZeroScan, 1u);
}

INSTANTIATE_TEST_SUITE_P(HeadsAndSizes, SnapshotModes,
                         ::testing::Values(Params{false, 0}, Params{true, 0}, Params{false, 5000},
                                           Params{true, 5000}),
                         [](const ::testing::TestParamInfo<Params>& i) {
                             return std::string(i.param.freeRunning ? "CoreSightHead" : "PtHead") +
                                    (i.param.want ? "Newest5000" : "WholeArea");
                         });

// A producer thread writes all the time (paced, so that the data ring never
// overflows) while snapshots are taken: each copy must be one contiguous run of
// the pattern (a torn copy, hardware writing during the copy, breaks the run),
// as long as the area once it wrapped, and later copies must end later.
class ConcurrentSnapshots : public ::testing::TestWithParam<bool> {};

TEST_P(ConcurrentSnapshots, CopiesAreConsistentWhileTheHardwareRuns) {
    const bool freeRunning = GetParam();
    constexpr unsigned kCpus = 2;
    constexpr uint64_t kSize = 32768;
    SimulatedCaptureOptions o = flightRecorder(kCpus, kSize, freeRunning);
    o.producer.dataPages = 64;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    SnapshotCollector col(kCpus);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    std::atomic<bool> stop{false};
    std::vector<std::thread> producers;
    for (unsigned c = 0; c < kCpus; ++c)
        producers.emplace_back([&, c] {
            auto& p = session.simulatedProducer(c);
            uint64_t x = 99 + c;
            while (!stop.load(std::memory_order_relaxed)) {
                for (int i = 0; i < 16; ++i) {
                    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                    p.step(64 + x % 2048);  // nothing while a snapshot has it disabled
                }
                std::this_thread::sleep_for(200us);
            }
        });
    // Let the areas wrap, then take snapshots while the producers run.
    ASSERT_TRUE(waitFor([&] {
        for (unsigned c = 0; c < kCpus; ++c)
            if (session.simulatedProducer(c).counts().bytesWritten < 2 * kSize) return false;
        return true;
    }));
    constexpr int kSnapshots = 20;
    for (int k = 0; k < kSnapshots; ++k) {
        snapshotAndWait(session);
        // The producers write again before the next one (on 2 busy cores a fixed
        // pause is no guarantee), so that every snapshot has something new.
        std::vector<uint64_t> at;
        for (unsigned c = 0; c < kCpus; ++c)
            at.push_back(session.simulatedProducer(c).counts().bytesWritten);
        ASSERT_TRUE(waitFor([&] {
            for (unsigned c = 0; c < kCpus; ++c)
                if (session.simulatedProducer(c).counts().bytesWritten < at[c] + 4096) return false;
            return true;
        }));
    }
    stop = true;
    for (auto& t : producers)
        t.join();
    session.requestStop();
    session.wait();
    for (unsigned c = 0; c < kCpus; ++c) {
        SCOPED_TRACE("cpu " + std::to_string(c));
        auto& p = session.simulatedProducer(c);
        const SimulatedAuxCounts n = p.counts();
        ASSERT_EQ(col.snaps[c].size(), size_t(kSnapshots))
            << "the producer wrote between every two snapshots";
        uint64_t lastEnd = 0;
        for (size_t k = 0; k < col.snaps[c].size(); ++k) {
            SCOPED_TRACE("snapshot " + std::to_string(k));
            const auto& snap = col.snaps[c][k];
            ASSERT_EQ(snap.bytes.size(), kSize);
            // The stream position of the first byte, from its pattern phase.
            const uint64_t phase = (snap.bytes[0] + SimulatedAuxProducer::kPatternPeriod - 1) %
                                   SimulatedAuxProducer::kPatternPeriod;
            EXPECT_EQ(firstMismatch(snap.bytes, phase), -1) << "torn copy";
            if (freeRunning) {
                // The offset is the stream position of the first byte.
                EXPECT_EQ(snap.offset % SimulatedAuxProducer::kPatternPeriod, phase);
                EXPECT_GT(snap.offset + kSize, lastEnd);
                lastEnd = snap.offset + kSize;
            } else {
                EXPECT_LT(snap.offset, kSize);  // headOffset + size - size
            }
        }
        EXPECT_EQ(n.recordsDropped, 0u) << "the data ring kept draining between snapshots";
        EXPECT_EQ(n.userDisables, uint64_t(kSnapshots));
        EXPECT_EQ(n.enables, uint64_t(kSnapshots));
        const CpuCounters t = session.stats().snapshot(c).totals;
        EXPECT_EQ(t.auxSnapshots, uint64_t(kSnapshots));
        EXPECT_EQ(t.auxSnapshotBytes, uint64_t(kSnapshots) * kSize);
        EXPECT_EQ(t.auxSnapshotsTracked, uint64_t(kSnapshots));
        EXPECT_EQ(t.byType[PERF_RECORD_AUX], n.auxRecords);
        EXPECT_EQ(t.lostRecords, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Heads, ConcurrentSnapshots, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) {
                             return std::string(i.param ? "CoreSightHead" : "PtHead");
                         });

// perf.data written over the session: one AUXTRACE record per CPU and snapshot
// (the one at stop included), with perf's snapshot offsets; perf report -D reads it.
TEST(SnapshotFile, OneAuxtraceRecordPerCpuPerSnapshot) {
    constexpr unsigned kCpus = 2;
    constexpr uint64_t kSize = 16384;
    auto s = CaptureSession::openSimulated(flightRecorder(kCpus, kSize, false));
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    session.setSnapshotOnStop(true);
    const std::string dir = writertest::makeTempDir("snapshot");
    const std::string path = dir + "/snap.data";
    PerfDataWriterCaptureOptions fo;
    fo.path = path;
    // Intel BTS's block (pmu type, time shift, time mult, time zero,
    // cap_user_time_zero, snapshot mode = 1): perf accepts AUXTRACE after it.
    fo.auxtraceInfo =
        PerfDataWriterCaptureOptions::AuxtraceInfoBlock{auxtrace::kTypeIntelBts, {8, 0, 1, 0, 0, 1}};
    auto file = PerfDataWriterCapture::open(session, fo);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_TRUE(session.start());
    constexpr int kRequested = 3;
    std::vector<std::vector<uint64_t>> writtenAt(kCpus);
    auto produce = [&](uint64_t bytes) {
        for (unsigned c = 0; c < kCpus; ++c) {
            auto& p = session.simulatedProducer(c);
            for (uint64_t done = 0; done < bytes + 100 * c; done += 700)
                p.step(700);
            writtenAt[c].push_back(p.counts().bytesWritten);
        }
    };
    produce(3000);  // before the first wrap
    snapshotAndWait(session);
    produce(40000);
    snapshotAndWait(session);
    produce(9000);
    snapshotAndWait(session);
    produce(1000);  // the snapshot at stop takes this
    session.requestStop();
    session.wait();
    EXPECT_EQ(session.snapshotCount(), uint64_t(kRequested + 1));
    ASSERT_TRUE((*file)->finish());
    EXPECT_TRUE(session.summary().sinkLosses.empty());

    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    const PerfDataSummary& sum = reader->summary();
    ASSERT_EQ(sum.auxtrace.size(), size_t(kCpus * (kRequested + 1)));
    std::vector<size_t> seen(kCpus);
    for (const PerfAuxtraceBuffer& b : sum.auxtrace) {
        ASSERT_GE(b.cpu, 0);
        ASSERT_LT(b.cpu, int64_t(kCpus));
        const size_t c = size_t(b.cpu), k = seen[c]++;
        SCOPED_TRACE("cpu " + std::to_string(c) + " snapshot " + std::to_string(k));
        ASSERT_LT(k, writtenAt[c].size());
        const Want e = expectedSnapshot(writtenAt[c][k], kSize, 0, false);
        EXPECT_EQ(b.size, (e.bytes + 7) / 8 * 8) << "the payload, padded to 8 bytes as perf does";
        EXPECT_EQ(b.auxOffset, e.offset);
        EXPECT_EQ(b.idx, uint32_t(c));
        ASSERT_EQ(b.available, b.size);
        auto bytes = reader->fileBytes(b.dataOffset, e.bytes);
        EXPECT_EQ(firstMismatch(std::vector<uint8_t>(bytes.begin(), bytes.end()), e.from), -1);
    }
    for (unsigned c = 0; c < kCpus; ++c) {
        EXPECT_EQ(seen[c], size_t(kRequested + 1));
        EXPECT_EQ(session.stats().snapshot(c).totals.auxSnapshots, uint64_t(kRequested + 1));
        // The snapshot at stop leaves the event disabled, as the capture has ended.
        EXPECT_FALSE(session.simulatedProducer(c).enabled());
    }
    ASSERT_EQ(sum.auxtraceInfo.size(), 1u);

    auto perf = writertest::perfBinary();
    if (!perf) {
        std::filesystem::remove_all(dir);
        GTEST_SKIP() << "perf is not installed";
    }
    auto dump = writertest::runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(dump.exitedZero()) << dump.err.substr(0, 2000);
    EXPECT_EQ(writertest::countMatches(dump.out, R"(PERF_RECORD_AUXTRACE size: )"), sum.auxtrace.size());
    std::filesystem::remove_all(dir);
}

// ---------------------------------------------------------------- control FIFO

struct Fifos {
    std::string dir, ctl, ack;
    Fifos() {
        dir = writertest::makeTempDir("ctlfifo");
        ctl = dir + "/ctl";
        ack = dir + "/ack";
        EXPECT_EQ(mkfifo(ctl.c_str(), 0600), 0) << std::strerror(errno);
        EXPECT_EQ(mkfifo(ack.c_str(), 0600), 0) << std::strerror(errno);
    }
    ~Fifos() { std::filesystem::remove_all(dir); }
};

// A client as a shell script would be: writes commands, reads answers.
struct Client {
    int w = -1, r = -1;
    Client(const Fifos& f) {
        // The capture holds both FIFOs open read-write: neither open waits.
        w = ::open(f.ctl.c_str(), O_WRONLY | O_CLOEXEC);
        r = ::open(f.ack.c_str(), O_RDONLY | O_CLOEXEC);
    }
    ~Client() {
        if (w >= 0) close(w);
        if (r >= 0) close(r);
    }
    void send(const std::string& cmd) { ASSERT_EQ(write(w, cmd.data(), cmd.size()), ssize_t(cmd.size())); }
    // One answer line (blocking read; the capture answers every command).
    std::string answer() {
        std::string line;
        char ch;
        while (read(r, &ch, 1) == 1 && ch != '\n')
            line += ch;
        return line;
    }
};

TEST(ControlFifo, CommandsAreHandledAndAcked) {
    Fifos f;
    auto ctl = ControlFifo::open("fifo:" + f.ctl + "," + f.ack);
    ASSERT_TRUE(ctl) << ctl.error().message;
    auto s = CaptureSession::openSimulated(flightRecorder(1, 16384, false));
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    SnapshotCollector col(1);
    session.addSink(&col);
    session.addCommandSource(ctl->get());
    ASSERT_TRUE(session.start());
    auto& p = session.simulatedProducer(0);
    p.step(3000);
    Client client(f);
    ASSERT_GE(client.w, 0);
    ASSERT_GE(client.r, 0);
    client.send("ping\n");
    EXPECT_EQ(client.answer(), "ack");
    client.send("snapshot\n");
    EXPECT_EQ(client.answer(), "ack");
    // Acked once taken: the copy is with the sinks already.
    EXPECT_EQ(session.snapshotCount(), 1u);
    ASSERT_EQ(col.snaps[0].size(), 1u);
    EXPECT_EQ(col.snaps[0][0].bytes.size(), 3000u);
    client.send("bogus\n");
    EXPECT_EQ(client.answer().rfind("error: unknown command 'bogus'", 0), 0u);
    client.send("disable\n");
    EXPECT_EQ(client.answer(), "ack");
    EXPECT_FALSE(p.enabled());
    EXPECT_FALSE(p.step(100).started);
    // A snapshot while disabled does not enable the event again.
    client.send("snapshot");
    client.send(std::string(1, '\0'));  // a NUL ends a command too
    EXPECT_EQ(client.answer(), "ack");
    EXPECT_FALSE(p.enabled());
    client.send("enable\n");
    EXPECT_EQ(client.answer(), "ack");
    EXPECT_TRUE(p.enabled());
    client.send("enable intel_pt//\n");
    EXPECT_NE(client.answer().find("single events is not supported"), std::string::npos);
    client.send("\n  stop  \r\n");  // empty lines are ignored; blanks around a command too
    EXPECT_EQ(client.answer(), "ack");
    session.wait();
    EXPECT_TRUE(session.finished());
    const ControlFifoStats st = (*ctl)->stats();
    EXPECT_EQ(st.commands, 8u);
    EXPECT_EQ(st.acks, 6u);
    EXPECT_EQ(st.errors, 2u);
    EXPECT_EQ(st.snapshots, 2u);
    EXPECT_EQ(st.ackFailures, 0u);
    EXPECT_EQ((*ctl)->messages().size(), 2u);
}

TEST(ControlFifo, SnapshotWithoutAFlightRecorderIsAnError) {
    Fifos f;
    auto ctl = ControlFifo::open("fifo:" + f.ctl + "," + f.ack);
    ASSERT_TRUE(ctl) << ctl.error().message;
    SimulatedCaptureOptions o = flightRecorder(1, 16384, false);
    o.producer.mode = AuxMode::Full;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    (*s)->addCommandSource(ctl->get());
    ASSERT_TRUE((*s)->start());
    Client client(f);
    client.send("snapshot\n");
    EXPECT_NE(client.answer().find("no AUX area is in snapshot mode"), std::string::npos);
    (*s)->requestStop();
    (*s)->wait();
}

// Nobody reads the ACK FIFO: the drain thread never blocks on it; the acks that
// do not fit are dropped and counted, and everything else goes on.
TEST(ControlFifo, UnreadAckFifoNeverBlocksTheDrainThread) {
    Fifos f;
    auto ctl = ControlFifo::open("fifo:" + f.ctl + "," + f.ack);
    ASSERT_TRUE(ctl) << ctl.error().message;
    auto s = CaptureSession::openSimulated(flightRecorder(1, 16384, false));
    ASSERT_TRUE(s) << s.error().message;
    (*s)->addCommandSource(ctl->get());
    ASSERT_TRUE((*s)->start());
    const int w = ::open(f.ctl.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(w, 0);
    // 64 KiB of pipe hold 16384 acks.
    constexpr uint64_t kPings = 20000;
    const std::string ping = "ping\n";
    for (uint64_t i = 0; i < kPings; ++i)
        ASSERT_EQ(write(w, ping.data(), ping.size()), ssize_t(ping.size()));
    close(w);
    ASSERT_TRUE(waitFor([&] { return (*ctl)->stats().commands == kPings; }));
    const ControlFifoStats st = (*ctl)->stats();
    EXPECT_GT(st.ackFailures, 0u);
    EXPECT_EQ(st.acks + st.ackFailures, kPings);
    // Still alive and answering.
    auto& p = (*s)->simulatedProducer(0);
    p.step(100);
    snapshotAndWait(**s);
    (*s)->requestStop();
    (*s)->wait();
    EXPECT_EQ((*s)->stats().snapshot(0).totals.auxSnapshots, 1u);
    bool noted = false;
    for (auto& m : (*ctl)->messages())
        noted |= m.find(f.ack) != std::string::npos && m.find("nobody reads it") != std::string::npos;
    EXPECT_TRUE(noted);
}

TEST(ControlFifo, BadSpecsNameThePathAndTheCause) {
    Fifos f;
    auto missing = ControlFifo::open("fifo:" + f.dir + "/nope," + f.ack);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find(f.dir + "/nope"), std::string::npos) << missing.error().message;
    EXPECT_NE(missing.error().message.find("No such file or directory"), std::string::npos)
        << missing.error().message;
    const std::string plain = f.dir + "/plain";
    {
        std::FILE* fp = std::fopen(plain.c_str(), "w");
        ASSERT_TRUE(fp);
        std::fclose(fp);
    }
    auto notFifo = ControlFifo::open("fifo:" + f.ctl + "," + plain);
    ASSERT_FALSE(notFifo);
    EXPECT_NE(notFifo.error().message.find("'" + plain + "' is not a FIFO (it is a regular file"),
              std::string::npos)
        << notFifo.error().message;
    auto fd = ControlFifo::open("fd:3,4");
    ASSERT_FALSE(fd);
    EXPECT_NE(fd.error().message.find("fifo:CTL[,ACK]"), std::string::npos) << fd.error().message;
    auto kind = ControlFifo::open("pipe:" + f.ctl);
    ASSERT_FALSE(kind);
    EXPECT_NE(kind.error().message.find("unknown kind"), std::string::npos) << kind.error().message;
    auto empty = ControlFifo::open("fifo:");
    ASSERT_FALSE(empty);
    EXPECT_NE(empty.error().message.find("no control FIFO"), std::string::npos) << empty.error().message;
    // One FIFO for both, by name or through a link, would read every answer
    // back as a command without end (found by control_fifo_fuzz, issue 17).
    auto same = ControlFifo::open("fifo:" + f.ctl + "," + f.ctl);
    ASSERT_FALSE(same);
    EXPECT_NE(same.error().message.find("are the same FIFO"), std::string::npos) << same.error().message;
    const std::string link = f.dir + "/ctl-link";
    ASSERT_EQ(::symlink(f.ctl.c_str(), link.c_str()), 0);
    auto linked = ControlFifo::open("fifo:" + f.ctl + "," + link);
    ASSERT_FALSE(linked);
    EXPECT_NE(linked.error().message.find("'" + link + "' are the same FIFO"), std::string::npos)
        << linked.error().message;
    ::unlink(link.c_str());
    // Without an ACK FIFO commands still work (nothing is answered).
    auto ctlOnly = ControlFifo::open("fifo:" + f.ctl);
    ASSERT_TRUE(ctlOnly) << ctlOnly.error().message;
    EXPECT_TRUE((*ctlOnly)->ackPath().empty());
}

// ---------------------------------------------------------------- SIGUSR2

TEST(SnapshotSignal, Sigusr2TakesASnapshot) {
    struct sigaction before {};
    sigaction(SIGUSR2, nullptr, &before);
    auto s = CaptureSession::openSimulated(flightRecorder(2, 16384, true));
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    SnapshotCollector col(2);
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    session.simulatedProducer(0).step(5000);
    session.simulatedProducer(1).step(40000);
    {
        auto sig = SnapshotSignal::install(session);
        ASSERT_TRUE(sig) << sig.error().message;
        auto second = SnapshotSignal::install(session);
        EXPECT_FALSE(second);
        ASSERT_EQ(raise(SIGUSR2), 0);
        ASSERT_TRUE(waitFor([&] { return session.snapshotCount() == 1; }));
        EXPECT_EQ((*sig)->received(), 1u);
    }
    struct sigaction after {};
    sigaction(SIGUSR2, nullptr, &after);
    EXPECT_EQ(after.sa_handler, before.sa_handler) << "the previous disposition is restored";
    session.requestStop();
    session.wait();
    ASSERT_EQ(col.snaps[0].size(), 1u);
    ASSERT_EQ(col.snaps[1].size(), 1u);
    EXPECT_EQ(col.snaps[0][0].bytes.size(), 5000u);
    EXPECT_EQ(col.snaps[1][0].bytes.size(), 16384u);
    EXPECT_EQ(firstMismatch(col.snaps[1][0].bytes, 40000 - 16384), -1);
    EXPECT_EQ(col.snaps[1][0].offset, 40000u - 16384u);
}

}  // namespace
}  // namespace auxscope
