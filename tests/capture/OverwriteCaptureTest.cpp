// SPDX-License-Identifier: GPL-3.0-or-later
// The sideband flight recorder (record --overwrite) on the real kernel: backward
// rings read only at snapshots, records oldest first, each delivered once, the
// overwritten history counted, the tail at stop, and the perf.data it makes read
// back with the counts the summary gives.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "CaptureSession.h"
#include "PerfEvent.h"
#include "WriterTestSupport.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"

using namespace auxscope;

namespace {

#define SKIP_WITHOUT_PERF()                                                       \
    do {                                                                          \
        if (auto reason = ::auxscope::perfCaptureUnavailableReason())             \
            GTEST_SKIP() << "perf_event_open is not permitted here: " << *reason; \
    } while (0)

struct Seen {
    int ringCpu;
    uint32_t type;
    uint64_t time, id;
    uint32_t size;
};

// Keeps what identifies each record (called on the drain thread).
class Collector : public RecordConsumer {
public:
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& r) override {
        std::lock_guard lock(mutex_);
        seen_.push_back({cpu, r.type, r.hasSampleId ? r.time : 0, r.id, uint32_t(bytes.size())});
    }
    std::vector<Seen> all() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<Seen> seen_;
};

// Context switches and cpu-clock samples on every CPU, for `ms` milliseconds.
void load(int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < std::max(2u, std::thread::hardware_concurrency()); ++i)
        threads.emplace_back([until] {
            while (std::chrono::steady_clock::now() < until) {
                for (int k = 0; k < 200; ++k)
                    (void)getppid();
                sched_yield();
                usleep(20);
            }
        });
    for (auto& t : threads)
        t.join();
}

CaptureOptions smallRecorder() {
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    o.events = {"cpu-clock"};
    o.dataPages = 4;  // 16 KiB per CPU: overwritten within a few hundred ms
    o.overwrite = true;
    o.realtimeDrain = false;
    return o;
}

void snapshotAndWait(CaptureSession& s) {
    const uint64_t before = s.snapshotCount();
    s.requestSnapshot();
    for (int i = 0; i < 400 && s.snapshotCount() == before; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_GT(s.snapshotCount(), before) << "the drain thread did not take the snapshot";
}

// Per ring: records in delivery order are oldest first (samples' times never go
// down), their bytes fit the ring, and no sample is delivered twice.
void checkBatch(const std::vector<Seen>& batch, uint64_t ringBytes, std::map<int, uint64_t>& lastSampleTime,
                std::set<std::tuple<int, uint64_t, uint64_t>>& samples, const char* what) {
    std::map<int, uint64_t> bytes;
    for (const Seen& r : batch) {
        bytes[r.ringCpu] += r.size;
        if (r.type != PERF_RECORD_SAMPLE) continue;
        uint64_t& last = lastSampleTime[r.ringCpu];
        EXPECT_GE(r.time, last) << what << ": cpu " << r.ringCpu << " sample out of time order";
        last = std::max(last, r.time);
        EXPECT_TRUE(samples.insert({r.ringCpu, r.time, r.id}).second)
            << what << ": cpu " << r.ringCpu << " sample at " << r.time << " delivered twice";
    }
    for (auto& [cpu, n] : bytes)
        EXPECT_LE(n, ringBytes) << what << ": cpu " << cpu << " got more than the ring holds";
}

TEST(OverwriteCapture, RecordsOnlyAtSnapshotsOldestFirstEachOnce) {
    SKIP_WITHOUT_PERF();
    auto pmus = PmuRegistry::discover();
    auto s = CaptureSession::open(smallRecorder(), pmus);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    Collector c;
    session.addConsumer(&c);
    ASSERT_TRUE(session.start());
    load(300);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));  // a few drain passes and publishes
    EXPECT_TRUE(c.all().empty()) << "a flight recorder delivers nothing before a snapshot";
    const auto live = session.stats().snapshotAll();
    ASSERT_FALSE(live.empty());
    uint64_t written = 0;
    for (auto& cpu : live) {
        EXPECT_TRUE(cpu.backwardMode);
        written += cpu.backwardWrittenBytes;
    }
    EXPECT_GT(written, 0u);
    const uint64_t ringBytes = live[0].ringBytes;
    ASSERT_EQ(ringBytes, 4 * pageSize());

    std::map<int, uint64_t> lastTime;
    std::set<std::tuple<int, uint64_t, uint64_t>> samples;
    ASSERT_NO_FATAL_FAILURE(snapshotAndWait(session));
    const auto first = c.all();
    ASSERT_FALSE(first.empty());
    checkBatch(first, ringBytes, lastTime, samples, "snapshot 1");

    load(250);
    ASSERT_NO_FATAL_FAILURE(snapshotAndWait(session));
    const auto upToSecond = c.all();
    ASSERT_GT(upToSecond.size(), first.size()) << "the second snapshot delivers what is new since the first";
    checkBatch({upToSecond.begin() + long(first.size()), upToSecond.end()}, ringBytes, lastTime, samples,
               "snapshot 2");

    load(100);
    session.requestStop();
    session.wait();
    const auto all = c.all();
    ASSERT_GT(all.size(), upToSecond.size()) << "the stop delivers the tail";
    checkBatch({all.begin() + long(upToSecond.size()), all.end()}, ringBytes, lastTime, samples, "stop");

    const CaptureSummary sum = session.summary();
    const CpuCounters t = sum.total();
    EXPECT_EQ(sum.snapshots, 3u);
    EXPECT_EQ(t.records, all.size());
    EXPECT_EQ(t.backwardRecords, all.size());
    EXPECT_GT(t.backwardOverwrittenBytes, 0u) << "the workload wrote more than the 16 KiB rings";
    EXPECT_EQ(t.backwardErrors, 0u);
    uint64_t writtenTotal = 0;
    for (auto& cpu : sum.cpus) {
        EXPECT_EQ(cpu.totals.backwardSnapshots, 3u) << "cpu " << cpu.cpu;
        writtenTotal += cpu.backwardWrittenBytes;
    }
    // Every byte the kernel wrote was delivered once, overwritten, or skipped.
    EXPECT_EQ(t.backwardBytes + t.backwardOverwrittenBytes + t.corruptBytes, writtenTotal);
    for (auto& m : sum.messages)
        EXPECT_EQ(m.find("flight recorder"), std::string::npos) << m;
}

TEST(OverwriteCapture, PerfDataHoldsWhatTheSnapshotsDelivered) {
    SKIP_WITHOUT_PERF();
    auto pmus = PmuRegistry::discover();
    auto s = CaptureSession::open(smallRecorder(), pmus);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    const std::string dir = writertest::makeTempDir("overwrite");
    const std::string path = dir + "/ow.data";
    PerfDataWriterCaptureOptions fo;
    fo.path = path;
    auto file = PerfDataWriterCapture::open(session, fo);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_TRUE(session.start());
    load(200);
    ASSERT_NO_FATAL_FAILURE(snapshotAndWait(session));
    load(150);
    session.requestStop();
    session.wait();
    ASSERT_TRUE((*file)->finish());
    const CaptureSummary sum = session.summary();
    EXPECT_TRUE(sum.sinkLosses.empty());
    const CpuCounters t = sum.total();
    ASSERT_GT(t.samples, 0u);

    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    auto count = [&](uint32_t type) {
        auto it = reader->summary().recordsByType.find(type);
        return it == reader->summary().recordsByType.end() ? uint64_t(0) : it->second;
    };
    EXPECT_EQ(count(PERF_RECORD_SAMPLE), t.samples);
    EXPECT_EQ(count(PERF_RECORD_SWITCH_CPU_WIDE), t.byType[PERF_RECORD_SWITCH_CPU_WIDE]);
    EXPECT_EQ(count(PERF_RECORD_LOST), t.byType[PERF_RECORD_LOST]);

    auto perf = writertest::perfBinary();
    if (!perf) {
        std::filesystem::remove_all(dir);
        GTEST_SKIP() << "perf is not installed";
    }
    auto dump = writertest::runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(dump.exitedZero()) << dump.err.substr(0, 2000);
    EXPECT_EQ(writertest::countMatches(dump.out, R"(PERF_RECORD_SAMPLE\()"), t.samples);
    std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// An AUX event cannot share the flight recorder: refused before anything opens
// (a fake sysfs stands in for a machine with Intel BTS).
TEST(OverwriteCapture, RefusedWithAnAuxEvent) {
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("auxscope-overwrite-pmus-" + std::to_string(getpid()));
    fs::create_directories(root / "intel_bts" / "format");
    fs::create_directories(root / "intel_bts" / "caps");
    std::ofstream(root / "intel_bts" / "type") << "7\n";
    auto pmus = PmuRegistry::discover(root);
    CaptureOptions o = smallRecorder();
    o.events = {"intel_bts//"};
    o.target = TargetKind::Process;  // BTS traces tasks only
    o.pid = getpid();
    auto s = CaptureSession::open(o, pmus);
    fs::remove_all(root);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("--overwrite (sideband flight recorder) cannot be combined with the "
                                     "AUX-area event 'intel_bts//'"),
              std::string::npos)
        << s.error().message;
}

}  // namespace
