// SPDX-License-Identifier: GPL-3.0-or-later
// Capture against the real kernel: software events, context switches and
// tracepoints all work in this VM. Each test skips (printing why) only when
// perf_event_open is denied.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstring>
#include <set>
#include <thread>

#include "CaptureSession.h"
#include "KernelTestSupport.h"
#include "Tracefs.h"

using namespace auxscope;
using namespace auxscope::test;

namespace {

const PmuRegistry& pmus() {
    static PmuRegistry reg = PmuRegistry::discover();
    return reg;
}

std::unique_ptr<CaptureSession> openOrFail(const CaptureOptions& o) {
    auto s = CaptureSession::open(o, pmus());
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? std::move(s.value()) : nullptr;
}

// Opens and starts a capture whose every record `consumer` keeps.
std::unique_ptr<CaptureSession> startCapture(const CaptureOptions& o, CollectingConsumer& consumer) {
    auto session = openOrFail(o);
    if (!session) return nullptr;
    session->addConsumer(&consumer);
    auto started = session->start();
    EXPECT_TRUE(started) << (started ? "" : started.error().message);
    return started ? std::move(session) : nullptr;
}

uint64_t rawU64(const SeenRecord& r, unsigned offset) {
    uint64_t v = 0;
    if (r.raw.size() >= offset + 8) std::memcpy(&v, r.raw.data() + offset, 8);
    return v;
}

}  // namespace

TEST(KernelCapture, RecordsArriveOnEveryCpu) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    CollectingConsumer consumer;
    auto session = startCapture(o, consumer);
    ASSERT_TRUE(session);
    // Keep every CPU busy for a while so cpu-clock samples it.
    std::vector<std::thread> load;
    for (int cpu : session->cpus())
        load.emplace_back([cpu] {
            runPinned(cpu, [] {
                auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
                volatile uint64_t x = 0;
                while (std::chrono::steady_clock::now() < until)
                    x = x + 1;
            });
        });
    for (auto& t : load)
        t.join();
    session->requestStop();
    session->wait();
    auto summary = session->summary();
    ASSERT_EQ(summary.cpus.size(), session->cpus().size());
    for (auto& c : summary.cpus) {
        EXPECT_GT(c.totals.samples, 50u) << "cpu " << c.cpu;
        EXPECT_EQ(c.totals.parseErrors, 0u) << "cpu " << c.cpu;
        EXPECT_EQ(c.totals.corruptBytes, 0u);
    }
    // Every sample came from the CPU whose ring it was in.
    for (auto& r : consumer.records())
        if (r.type == PERF_RECORD_SAMPLE) {
            ASSERT_EQ(int(r.cpu), r.ringCpu);
        }
    // The consumer saw exactly what the statistics counted.
    EXPECT_EQ(consumer.records().size(), summary.total().records);
}

TEST(KernelCapture, SwitchEventsCarrySanePids) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    CollectingConsumer consumer;
    auto session = startCapture(o, consumer);
    ASSERT_TRUE(session);
    pid_t sleeperTid = 0;
    std::thread sleeper([&] {
        sleeperTid = pid_t(syscall(SYS_gettid));
        for (int i = 0; i < 50; ++i)
            usleep(1000);
    });
    sleeper.join();
    session->requestStop();
    session->wait();

    const long pidMax = std::stol(readSmallFile("/proc/sys/kernel/pid_max").value_or("4194304"));
    int sleeperOut = 0, sleeperIn = 0, switches = 0, deadTasks = 0;
    for (auto& r : consumer.records()) {
        if (r.type != PERF_RECORD_SWITCH_CPU_WIDE) continue;
        ++switches;
        ASSERT_TRUE(r.hasSampleId);
        ASSERT_EQ(int(r.cpu), r.ringCpu);
        // The kernel reports -1 for a task that is no longer alive: only the last
        // switch-out of an exiting task (or the switch-in after it) carries it.
        // A thread of a live process that exits keeps its tgid but loses its tid.
        ASSERT_TRUE(r.tid == -1 || r.pid != -1) << "pid " << r.pid << " tid " << r.tid;
        ASSERT_TRUE(r.nextPrevTid == -1 || r.nextPrevPid != -1);
        if (r.tid == -1) {
            ASSERT_TRUE(r.switchOut) << "a task switched in must be alive";
            ++deadTasks;
        } else {
            ASSERT_GE(r.pid, 0);
            ASSERT_LT(r.pid, pidMax);
            ASSERT_GE(r.tid, r.pid == 0 ? 0 : r.pid);
        }
        if (r.nextPrevTid == -1) {
            ASSERT_FALSE(r.switchOut) << "the next task of a switch-out must be alive";
        } else {
            ASSERT_GE(r.nextPrevPid, 0);
            ASSERT_LT(r.nextPrevPid, pidMax);
            ASSERT_GE(r.nextPrevTid, r.nextPrevPid);
        }
        if (r.tid == sleeperTid) {
            EXPECT_EQ(r.pid, getpid());
            (r.switchOut ? sleeperOut : sleeperIn)++;
        }
    }
    EXPECT_GT(switches, 100);
    EXPECT_LT(deadTasks, switches / 4) << "only exiting tasks may be reported as -1";
    // 50 sleeps: the sleeper was switched out (and back in) at least 50 times.
    EXPECT_GE(sleeperOut, 50);
    EXPECT_GE(sleeperIn, 50);
}

TEST(KernelCapture, LostRecordsSumEqualsKernelLostCount) {
    SKIP_WITHOUT_PERF();
    if (auto tp = Tracefs::locate(); !tp) GTEST_SKIP() << "tracefs unavailable: " << tp.error().message;
    CaptureOptions o;
    o.target = TargetKind::CpuList;
    o.cpus = {0};
    o.events = {"raw_syscalls:sys_enter"};
    o.dataPages = 1;  // a 4 KiB ring cannot keep up with a syscall storm
    CollectingConsumer consumer;
    auto session = startCapture(o, consumer);
    ASSERT_TRUE(session);
    runPinned(0, [] {
        for (int i = 0; i < 400000; ++i)
            close(-1);
    });
    session->requestStop();
    session->wait();
    auto summary = session->summary();
    ASSERT_EQ(summary.cpus.size(), 1u);
    const auto& c = summary.cpus[0];
    ASSERT_TRUE(c.kernelLostAvailable) << "kernel lacks PERF_FORMAT_LOST";
    EXPECT_GT(c.totals.lostRecords, 1000u) << "the tiny ring should have overflowed";
    EXPECT_EQ(c.totals.lostRecords, c.totals.kernelLost)
        << "sum of PERF_RECORD_LOST.lost must equal the kernel's PERF_FORMAT_LOST count";
    uint64_t fromRecords = 0;
    for (auto& r : consumer.records())
        if (r.type == PERF_RECORD_LOST) fromRecords += r.lost;
    EXPECT_EQ(fromRecords, c.totals.lostRecords);
    // Nothing vanished: samples written + samples lost covers the storm.
    EXPECT_GE(c.totals.samples + c.totals.lostRecords, 400000u);
}

TEST(KernelCapture, LaunchedCommandIsTracedFromItsFirstRecord) {
    SKIP_WITHOUT_PERF();
    if (auto tp = Tracefs::locate(); !tp) GTEST_SKIP() << "tracefs unavailable: " << tp.error().message;
    auto idOffset = tracepointFieldOffset("raw_syscalls", "sys_exit", "id");
    ASSERT_TRUE(idOffset);
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {"/bin/true"};
    o.events = {"raw_syscalls:sys_enter,raw_syscalls:sys_exit"};
    CollectingConsumer consumer;
    auto session = startCapture(o, consumer);
    ASSERT_TRUE(session);
    const pid_t child = session->commandPid();
    session->wait();  // ends by itself when the command exits
    auto summary = session->summary();
    ASSERT_TRUE(summary.commandExited);
    EXPECT_TRUE(WIFEXITED(summary.commandStatus) && WEXITSTATUS(summary.commandStatus) == 0);

    std::vector<SeenRecord> mine;
    for (auto& r : consumer.records())
        if (r.pid == child) mine.push_back(r);
    std::sort(mine.begin(), mine.end(), [](auto& a, auto& b) { return a.time < b.time; });
    ASSERT_FALSE(mine.empty());
    // enable_on_exec: the first thing seen is the exec itself...
    const int enterIdx = 0, exitIdx = 1;  // order of the events given above
    size_t firstExit = 0;
    while (firstExit < mine.size() &&
           !(mine[firstExit].type == PERF_RECORD_SAMPLE && mine[firstExit].descIndex == exitIdx))
        ++firstExit;
    ASSERT_LT(firstExit, mine.size());
    EXPECT_EQ(rawU64(mine[firstExit], *idOffset), uint64_t(SYS_execve))
        << "first syscall exit must be execve's";
    for (size_t i = 0; i < firstExit; ++i)
        EXPECT_FALSE(mine[i].type == PERF_RECORD_SAMPLE && mine[i].descIndex == enterIdx)
            << "a syscall entry before execve returned: events were enabled too early";
    bool sawExecComm = false;
    for (auto& r : mine)
        if (r.type == PERF_RECORD_COMM && (r.misc & PERF_RECORD_MISC_COMM_EXEC) && r.comm == "true")
            sawExecComm = true;
    EXPECT_TRUE(sawExecComm);
    // ...and nothing after it is missed: every syscall that returned was entered,
    // except execve (entered before exec) and exit_group (never returns).
    int enters = 0, exits = 0;
    for (auto& r : mine)
        if (r.type == PERF_RECORD_SAMPLE) (r.descIndex == enterIdx ? enters : exits)++;
    EXPECT_GT(enters, 5);
    EXPECT_EQ(enters, exits);
    EXPECT_EQ(summary.total().lostRecords, 0u);
}

TEST(KernelCapture, ExistingProcessAllThreads) {
    SKIP_WITHOUT_PERF();
    if (auto tp = Tracefs::locate(); !tp) GTEST_SKIP() << "tracefs unavailable: " << tp.error().message;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        std::thread t([] {
            for (;;) {
                getppid();
                usleep(100);
            }
        });
        for (;;) {
            getppid();
            usleep(100);
        }
    }
    usleep(50000);  // let the second thread start
    CaptureOptions o;
    o.target = TargetKind::Process;
    o.pid = child;
    o.events = {"raw_syscalls:sys_enter"};
    o.durationSeconds = 0.3;
    CollectingConsumer consumer;
    auto session = startCapture(o, consumer);
    ASSERT_TRUE(session);
    session->wait();
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    std::set<pid_t> tids;
    int samples = 0;
    for (auto& r : consumer.records()) {
        if (r.type != PERF_RECORD_SAMPLE) continue;
        ++samples;
        EXPECT_EQ(r.pid, child);
        tids.insert(r.tid);
    }
    EXPECT_GT(samples, 100);
    EXPECT_EQ(tids.size(), 2u) << "both threads of the process are traced";
}

TEST(KernelCapture, ProcessCaptureEndsWhenTheProcessExits) {
    SKIP_WITHOUT_PERF();
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        usleep(200000);
        _exit(0);
    }
    CaptureOptions o;
    o.target = TargetKind::Process;
    o.pid = child;
    o.durationSeconds = 10;  // the exit must end it long before this
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(session->start().ok());
    std::thread reaper([child] { waitpid(child, nullptr, 0); });
    session->wait();
    reaper.join();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
    auto s = session->summary();
    EXPECT_NE(std::find(s.messages.begin(), s.messages.end(), "every traced task has exited"),
              s.messages.end());
}

TEST(KernelCapture, DurationStopsTheCapture) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    o.durationSeconds = 0.25;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(session->start().ok());
    session->wait();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(s, 0.25);
    EXPECT_LT(s, 2.0);
}

TEST(KernelCapture, StatisticsArePublishedAtLeastTenTimesASecond) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    ASSERT_TRUE(session->start().ok());
    const uint64_t g0 = session->stats().generation();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const uint64_t g1 = session->stats().generation();
    session->requestStop();
    session->wait();
    EXPECT_GE(g1 - g0, 10u);
}

TEST(KernelCapture, UnprivilegedUserIsToldWhatToChange) {
    SKIP_WITHOUT_PERF();
    if (getuid() != 0) GTEST_SKIP() << "needs root to switch to an unprivileged user for this check";
    if (perfEventParanoid() < 1)
        GTEST_SKIP() << "perf_event_paranoid < 1 allows system-wide capture to everyone";
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(fds[0]);
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0) _exit(3);
        CaptureOptions o;
        o.target = TargetKind::SystemWide;
        auto s = CaptureSession::open(o, PmuRegistry::discover());
        std::string msg = s ? "opened" : s.error().message;
        (void)!write(fds[1], msg.data(), msg.size());
        _exit(0);
    }
    close(fds[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        msg.append(buf, size_t(n));
    close(fds[0]);
    waitpid(child, nullptr, 0);
    EXPECT_NE(msg.find("perf_event_paranoid is"), std::string::npos) << msg;
    EXPECT_NE(msg.find("CAP_PERFMON"), std::string::npos) << msg;
    EXPECT_NE(msg.find("System-wide or per-CPU capture needs"), std::string::npos) << msg;
}
