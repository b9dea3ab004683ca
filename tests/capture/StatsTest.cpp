// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <thread>

#include "CaptureStats.h"
#include "PerfEvent.h"

using namespace auxscope;

TEST(CaptureStats, PublishedCountersReachReaders) {
    CaptureStats stats({0, 3});
    CpuStatsSnapshot s;
    s.cpu = 3;
    s.totals.records = 10;
    s.totals.lostRecords = 4;
    s.totals.kernelLost = 5;
    s.totals.byType[PERF_RECORD_SAMPLE] = 7;
    s.fillPeakPercent = 42.5;
    s.bytesPerSecond = 1e6;
    stats.publish(1, s);
    stats.bumpGeneration();
    auto all = stats.snapshotAll();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].cpu, 0);
    EXPECT_EQ(all[0].totals.records, 0u);
    EXPECT_EQ(all[1].cpu, 3);
    EXPECT_EQ(all[1].totals.records, 10u);
    EXPECT_EQ(all[1].totals.lostRecords, 4u);
    EXPECT_EQ(all[1].totals.kernelLost, 5u);
    EXPECT_EQ(all[1].totals.byType[PERF_RECORD_SAMPLE], 7u);
    EXPECT_DOUBLE_EQ(all[1].fillPeakPercent, 42.5);
    EXPECT_EQ(stats.generation(), 1u);
}

TEST(CaptureStats, ConcurrentReaderSeesMonotonicCounters) {
    CaptureStats stats({0});
    std::atomic<bool> done{false};
    std::thread writer([&] {
        CpuStatsSnapshot s;
        for (uint64_t i = 1; i <= 20000; ++i) {
            s.totals.records = i;
            stats.publish(0, s);
            stats.bumpGeneration();
        }
        done = true;
    });
    uint64_t last = 0;
    while (!done) {
        uint64_t now = stats.snapshot(0).totals.records;
        ASSERT_GE(now, last);
        last = now;
    }
    writer.join();
    EXPECT_EQ(stats.snapshot(0).totals.records, 20000u);
}

TEST(Permissions, DeniedOpenSaysWhatToChange) {
    perf_event_attr a{};
    a.type = PERF_TYPE_TRACEPOINT;
    std::string msg = explainPerfOpenError(EACCES, a, -1, 0);
    EXPECT_NE(msg.find("perf_event_paranoid"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CAP_PERFMON"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sysctl kernel.perf_event_paranoid=-1"), std::string::npos) << msg;
}
