// SPDX-License-Identifier: GPL-3.0-or-later
// The writer backlog against the real kernel: a syscall storm captured through a
// QueuedSink whose writer is slower than the storm (it sleeps). With a budget the
// backlog spills past its small queue and the kernel loses nothing; with budget 0
// (the queue alone) the records wait in a small kernel ring, which loses them,
// and the sink's counters say the writer was behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "CaptureSession.h"
#include "KernelTestSupport.h"
#include "Pmu.h"
#include "QueuedSink.h"
#include "Tracefs.h"

using namespace auxscope;

namespace {

bool inCi() {
    const char* ci = std::getenv("CI");
    return ci && std::strcmp(ci, "true") == 0;
}

#define SKIP_OR_FAIL_IN_CI(why)      \
    do {                             \
        if (inCi()) FAIL() << (why); \
        GTEST_SKIP() << (why);       \
    } while (0)

// Counts what it is handed and sleeps 1 ms every 32 records: at most ~32,000
// records a second, far below what a 1-byte dd makes of raw_syscalls.
class SlowCountingWriter : public SinkWriter {
public:
    Expected<void> writeRecord(int, std::span<const uint8_t>) override {
        if (++records % 32 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return {};
    }
    Expected<void> writeLost(int, uint64_t n, uint64_t) override {
        lost += n;
        return {};
    }
    Expected<void> endRound() override { return {}; }
    uint64_t records = 0, lost = 0;  // writer thread; read after finish()
};

struct Outcome {
    uint64_t drained = 0, kernelLost = 0, lostRecords = 0;
    QueuedSink::Stats stats;
    uint64_t written = 0;
};

// dd copies 40,000 single bytes: ~160,000 raw_syscalls records.
std::optional<Outcome> storm(uint64_t budget, size_t dataPages, std::string& error) {
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {"/bin/dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=40000", "status=none"};
    o.events = {"raw_syscalls:*"};
    o.dataPages = dataPages;
    auto pmus = PmuRegistry::discover();
    auto session = CaptureSession::open(o, pmus);
    if (!session) {
        error = session.error().message;
        return std::nullopt;
    }
    SlowCountingWriter w;
    std::vector<int> cpus;
    for (size_t i = 0; i < (*session)->ringCount(); ++i)
        cpus.push_back((*session)->ringCpu(i));
    QueuedSinkOptions qo;
    qo.queueBytes = size_t(1) << 20;
    qo.budgetBytes = budget;
    qo.name = "slow writer";
    QueuedSink sink(cpus, w, qo);
    sink.start();
    (*session)->addSink(&sink);
    if (auto r = (*session)->start(); !r) {
        error = r.error().message;
        return std::nullopt;
    }
    (*session)->wait();
    if (auto r = sink.finish(); !r) {
        error = r.error().message;
        return std::nullopt;
    }
    Outcome out;
    const auto t = (*session)->summary().total();
    out.drained = t.records;
    out.kernelLost = t.kernelLost;
    out.lostRecords = t.lostRecords;
    out.stats = sink.stats();
    out.written = w.records;
    std::printf(
        "budget %llu MiB, ring %zu pages: %llu records drained, %llu written, kernel lost %llu (LOST records "
        "%llu); backlog peak %.1f MiB, spill peak %.1f MiB, %llu spill runs, held back %llu times\n",
        (unsigned long long)(budget >> 20), dataPages, (unsigned long long)out.drained,
        (unsigned long long)out.written, (unsigned long long)out.kernelLost,
        (unsigned long long)out.lostRecords, double(out.stats.maxBacklogBytes) / 1048576.0,
        double(out.stats.maxSpillHeldBytes) / 1048576.0, (unsigned long long)out.stats.spillRuns,
        (unsigned long long)out.stats.recordsHeldBack);
    return out;
}

TEST(SpillKernel, SlowWriterWithinTheBudgetLosesNothing) {
    SKIP_WITHOUT_PERF();
    if (auto tp = Tracefs::locate(); !tp) SKIP_OR_FAIL_IN_CI("tracefs unavailable: " + tp.error().message);
    std::string error;
    auto r = storm(uint64_t(512) << 20, 2048, error);
    ASSERT_TRUE(r) << error;
    EXPECT_GT(r->drained, 100000u) << "dd made ~160,000 raw_syscalls records";
    EXPECT_EQ(r->kernelLost, 0u) << "the backlog took what the slow writer could not write yet";
    EXPECT_EQ(r->lostRecords, 0u);
    EXPECT_EQ(r->stats.droppedRecords, 0u);
    EXPECT_EQ(r->stats.recordsHeldBack, 0u) << "the budget was never used up";
    EXPECT_GE(r->stats.spillRuns, 1u) << "the 1 MiB queue alone could not hold the backlog";
    EXPECT_GT(r->stats.maxBacklogBytes, uint64_t(1) << 20);
    EXPECT_LE(r->stats.maxSpillHeldBytes, (uint64_t(512) << 20) - (uint64_t(1) << 20));
    EXPECT_EQ(r->written, r->stats.queuedRecords) << "every record queued was written";
}

TEST(SpillKernel, BudgetZeroKeepsTheOldBackPressureAndTheKernelLoses) {
    SKIP_WITHOUT_PERF();
    if (auto tp = Tracefs::locate(); !tp) SKIP_OR_FAIL_IN_CI("tracefs unavailable: " + tp.error().message);
    std::string error;
    auto r = storm(0, 16, error);  // 64 KiB rings
    ASSERT_TRUE(r) << error;
    EXPECT_EQ(r->stats.spillRuns, 0u);
    EXPECT_EQ(r->stats.maxSpillHeldBytes, 0u);
    EXPECT_LE(r->stats.maxBacklogBytes, uint64_t(1) << 20);
    EXPECT_GT(r->stats.recordsHeldBack, 0u) << "the writer was behind: records waited in the kernel's ring";
    EXPECT_GT(std::max(r->kernelLost, r->lostRecords), 0u)
        << "a 64 KiB ring behind a 1 MiB queue and a slow writer";
    EXPECT_EQ(r->stats.droppedRecords, 0u) << "auxscope itself dropped nothing: the loss is the kernel's";
    EXPECT_EQ(r->written, r->stats.queuedRecords);
}

}  // namespace
