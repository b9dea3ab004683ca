// SPDX-License-Identifier: GPL-3.0-or-later
// The drain thread's bounds (issue 32), on the real kernel (software cpu-clock
// events) wherever the kernel is what matters:
//  - epoll_pwait2 missing (ENOSYS, as before Linux 5.11): epoll_pwait from then
//    on, the capture records and stops, the drain thread's CPU time stays small;
//  - a wait that keeps failing ends the capture with its error instead of spinning;
//  - a watch that cannot be added fails the start (Stop would not be heard);
//  - a sink that never frees room: the stop ends within kStopDeliveryTimeout,
//    and what it did not take is counted as not delivered, with the reason;
//  - a launched command that ignores SIGTERM is SIGKILLed after kChildTermTimeout;
//  - records that do not parse (written into a simulated ring: the kernel writes
//    none) are counted by kind with the first one's place and cause.
// The epoll calls are replaced through DrainThreadTesting.h by functions that
// count the calls and fail or forward to the real syscalls.
#include <gtest/gtest.h>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "CaptureSession.h"
#include "DrainThreadTesting.h"
#include "KernelTestSupport.h"

using namespace auxscope;
using namespace auxscope::test;
using Clock = std::chrono::steady_clock;

namespace {

const PmuRegistry& pmus() {
    static PmuRegistry reg = PmuRegistry::discover();
    return reg;
}

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool hasMessage(const CaptureSummary& s, const std::string& part) {
    for (auto& m : s.messages)
        if (m.find(part) != std::string::npos) return true;
    return false;
}

std::string allMessages(const CaptureSummary& s) {
    std::string out;
    for (auto& m : s.messages)
        out += m + "\n";
    return out;
}

// What the replaced calls saw; reset by each test.
std::atomic<int> gPwait2Calls{0}, gPwaitCalls{0}, gCtlCalls{0};
std::atomic<int> gFailCtlCall{-1};  // the ADD (counting from 0) that fails with ENOMEM
std::atomic<clockid_t> gDrainClock{0};
std::atomic<bool> gHaveDrainClock{false};

// The drain thread is the caller: note its CPU-time clock.
void noteCaller() {
    if (gHaveDrainClock.load()) return;
    clockid_t id;
    if (pthread_getcpuclockid(pthread_self(), &id) == 0) {
        gDrainClock = id;
        gHaveDrainClock = true;
    }
}

int pwait2Enosys(int, epoll_event*, int, const timespec*, const sigset_t*) {
    noteCaller();
    ++gPwait2Calls;
    errno = ENOSYS;
    return -1;
}

int pwait2Ebadf(int, epoll_event*, int, const timespec*, const sigset_t*) {
    noteCaller();
    ++gPwait2Calls;
    errno = EBADF;
    return -1;
}

int pwaitCounting(int epfd, epoll_event* events, int max, int timeoutMs, const sigset_t* mask) {
    noteCaller();
    ++gPwaitCalls;
    return realDrainEpoll().pwait(epfd, events, max, timeoutMs, mask);
}

int ctlFailing(int epfd, int op, int fd, epoll_event* ev) {
    if (op == EPOLL_CTL_ADD && gCtlCalls++ == gFailCtlCall.load()) {
        errno = ENOMEM;
        return -1;
    }
    return realDrainEpoll().ctl(epfd, op, fd, ev);
}

double threadCpuSeconds(clockid_t id) {
    timespec ts{};
    if (clock_gettime(id, &ts) != 0) return -1;
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

// Installs replacements for one test and puts the real calls back after it.
class DrainBounds : public ::testing::Test {
protected:
    void SetUp() override {
        gPwait2Calls = gPwaitCalls = gCtlCalls = 0;
        gFailCtlCall = -1;
        gHaveDrainClock = false;
    }
    void TearDown() override { setDrainEpollForTesting({}); }
};

std::unique_ptr<CaptureSession> openOrFail(const CaptureOptions& o) {
    auto s = CaptureSession::open(o, pmus());
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    return s ? std::move(s.value()) : nullptr;
}

// Takes `room` records, then never has room again (a writer stuck for good).
class StuckConsumer : public RecordConsumer {
public:
    explicit StuckConsumer(uint64_t room) : room_(room) {}
    bool hasRoom(int, size_t) override { return taken_.load() < room_; }
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override { ++taken_; }
    uint64_t taken() const { return taken_.load(); }

private:
    const uint64_t room_;
    std::atomic<uint64_t> taken_{0};
};

// Takes one record per `gap` (a slow writer that keeps going).
class SlowConsumer : public RecordConsumer {
public:
    explicit SlowConsumer(std::chrono::milliseconds gap) : gap_(gap) {}
    bool hasRoom(int, size_t) override { return Clock::now() >= next_; }
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override {
        next_ = Clock::now() + gap_;
        ++taken_;
    }
    uint64_t taken() const { return taken_.load(); }

private:
    const std::chrono::milliseconds gap_;
    Clock::time_point next_{};  // drain thread only
    std::atomic<uint64_t> taken_{0};
};

// A COMM record of the simulated capture's event (pid, tid, "x", then the
// sample_id trailer: TID, TIME, CPU, IDENTIFIER).
struct CommRecord {
    perf_event_header h{PERF_RECORD_COMM, 0, 56};
    uint32_t pid = 100, tid = 101;
    char comm[8] = "x";
    uint64_t trailer[4] = {uint64_t(101) << 32 | 100, 5000, 0, 0};
};
static_assert(sizeof(CommRecord) == 56);

}  // namespace

TEST_F(DrainBounds, MissingEpollPwait2FallsBackToEpollPwaitWithoutSpinning) {
    SKIP_WITHOUT_PERF();
    DrainEpollCalls calls;
    calls.pwait2 = pwait2Enosys;
    calls.pwait = pwaitCounting;
    setDrainEpollForTesting(calls);
    CaptureOptions o;  // every CPU, cpu-clock at 4 kHz: an almost idle capture
    CollectingConsumer consumer;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    session->addConsumer(&consumer);
    ASSERT_TRUE(session->start().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past the start
    ASSERT_TRUE(gHaveDrainClock.load());
    const double cpu0 = threadCpuSeconds(gDrainClock);
    const int waits0 = gPwaitCalls;
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double cpu = threadCpuSeconds(gDrainClock) - cpu0, wall = secondsSince(t0);
    const int waits = gPwaitCalls - waits0;
    const auto stopAt = Clock::now();
    session->requestStop();
    session->wait();
    EXPECT_LT(secondsSince(stopAt), 1.0);
    const auto s = session->summary();
    // epoll_pwait2 was asked once; every later wait was epoll_pwait's.
    std::printf("drain thread with epoll_pwait: %.4f s CPU over %.3f s (%.2f %%), %d waits\n", cpu, wall,
                100 * cpu / wall, waits);
    EXPECT_EQ(gPwait2Calls.load(), 1);
    EXPECT_GE(waits, 10) << "publishes at 20 Hz wake the drain thread";
    EXPECT_LT(waits, 2000) << "a wait per millisecond or more is a spin";
    EXPECT_GE(cpu, 0);
    EXPECT_LT(cpu, 0.2 * wall) << "drain thread CPU " << cpu << " s over " << wall << " s";
    EXPECT_GT(s.total().samples, 100u);
    EXPECT_FALSE(consumer.records().empty());
    EXPECT_TRUE(s.failure.empty()) << s.failure;
    EXPECT_TRUE(hasMessage(s, "epoll_pwait2 is not available")) << allMessages(s);
}

TEST_F(DrainBounds, PersistentWaitFailureEndsTheCaptureWithItsError) {
    SKIP_WITHOUT_PERF();
    DrainEpollCalls calls;
    calls.pwait2 = pwait2Ebadf;
    setDrainEpollForTesting(calls);
    CaptureOptions o;
    o.durationSeconds = 30;  // the failure must end it long before
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    const auto t0 = Clock::now();
    ASSERT_TRUE(session->start().ok());
    session->wait();  // ends on its own
    const double took = secondsSince(t0);
    EXPECT_LT(took, 2.0);
    const auto s = session->summary();
    EXPECT_EQ(gPwait2Calls.load(), 3) << "tried a few times, then stopped: no spin";
    EXPECT_NE(s.failure.find("epoll_pwait2 failed"), std::string::npos) << s.failure;
    EXPECT_NE(s.failure.find(std::strerror(EBADF)), std::string::npos) << s.failure;
    EXPECT_TRUE(hasMessage(s, "the capture stopped")) << allMessages(s);
    ASSERT_TRUE(gHaveDrainClock.load());
}

TEST_F(DrainBounds, AWatchThatCannotBeAddedFailsTheStart) {
    SKIP_WITHOUT_PERF();
    DrainEpollCalls calls;
    calls.ctl = ctlFailing;
    // 0: the stop request in the rings' wait set; 2: the stop request in the
    // control wait set; a later one: a ring.
    for (int failing : {0, 2, 4}) {
        gCtlCalls = 0;
        gFailCtlCall = failing;
        setDrainEpollForTesting(calls);
        CaptureOptions o;
        auto session = openOrFail(o);
        ASSERT_TRUE(session);
        auto started = session->start();
        setDrainEpollForTesting({});
        ASSERT_FALSE(started) << "add " << failing << " failed, yet the capture started";
        const std::string& m = started.error().message;
        EXPECT_NE(m.find("epoll_ctl"), std::string::npos) << m;
        EXPECT_NE(m.find(std::strerror(ENOMEM)), std::string::npos) << m;
        EXPECT_NE(m.find(failing < 4 ? "stop request" : "ring"), std::string::npos) << m;
    }
    // And with every add working, the same capture starts and stops.
    CaptureOptions o;
    o.durationSeconds = 0.2;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    ASSERT_TRUE(session->start().ok());
    session->wait();
    EXPECT_GT(session->summary().total().records, 0u);
}

TEST_F(DrainBounds, StopEndsWithinItsBoundWhenASinkNeverFreesRoom) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    o.durationSeconds = 0.3;
    StuckConsumer stuck(20);
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    session->addConsumer(&stuck);
    const auto t0 = Clock::now();
    ASSERT_TRUE(session->start().ok());
    session->wait();
    const double took = secondsSince(t0);
    const double bound = std::chrono::duration<double>(DrainThread::kStopDeliveryTimeout).count();
    // It waited for the sink (the bound), and not much longer.
    EXPECT_GE(took, o.durationSeconds + bound - 0.05);
    EXPECT_LT(took, o.durationSeconds + bound + 1.5);
    const auto s = session->summary();
    const CpuCounters t = s.total();
    EXPECT_EQ(stuck.taken(), 20u);
    EXPECT_EQ(t.records, 20u) << "records counts what reached the consumers";
    EXPECT_GT(t.undeliveredRecords, 0u);
    EXPECT_GE(t.undeliveredBytes, t.undeliveredRecords * sizeof(perf_event_header));
    EXPECT_TRUE(hasMessage(s, "not delivered: a sink (the file writer) took nothing for 5 s during the stop"))
        << allMessages(s);
    // Per CPU, the counter and the note agree.
    for (auto& c : s.cpus) {
        if (!c.totals.undeliveredRecords) continue;
        EXPECT_TRUE(hasMessage(s, "cpu " + std::to_string(c.cpu) + ": " +
                                      std::to_string(c.totals.undeliveredRecords) + " records"))
            << allMessages(s);
    }
}

TEST_F(DrainBounds, CommandIgnoringSigtermIsKilledAfterTheBound) {
    SKIP_WITHOUT_PERF();
    // SIG_IGN survives exec: the sleep ignores SIGTERM.
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {"/bin/sh", "-c", "trap '' TERM; exec sleep 30"};
    o.durationSeconds = 0.3;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    const auto t0 = Clock::now();
    ASSERT_TRUE(session->start().ok());
    session->wait();
    const double took = secondsSince(t0);
    const double bound = std::chrono::duration<double>(DrainThread::kChildTermTimeout).count();
    EXPECT_GE(took, o.durationSeconds + bound - 0.05);
    EXPECT_LT(took, o.durationSeconds + bound + 1.5);
    const auto s = session->summary();
    ASSERT_TRUE(s.commandExited);
    EXPECT_TRUE(WIFSIGNALED(s.commandStatus) && WTERMSIG(s.commandStatus) == SIGKILL) << s.commandStatus;
    EXPECT_TRUE(hasMessage(
        s, "did not exit within 2 s of SIGTERM at the end of the capture: it was killed (SIGKILL)"))
        << allMessages(s);
}

TEST_F(DrainBounds, CommandThatHonoursSigtermEndsWithoutSigkill) {
    SKIP_WITHOUT_PERF();
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {"sleep", "30"};
    o.durationSeconds = 0.3;
    auto session = openOrFail(o);
    ASSERT_TRUE(session);
    const auto t0 = Clock::now();
    ASSERT_TRUE(session->start().ok());
    session->wait();
    EXPECT_LT(secondsSince(t0), o.durationSeconds + 1.0);
    const auto s = session->summary();
    ASSERT_TRUE(s.commandExited);
    EXPECT_TRUE(WIFSIGNALED(s.commandStatus) && WTERMSIG(s.commandStatus) == SIGTERM) << s.commandStatus;
    EXPECT_FALSE(hasMessage(s, "SIGKILL")) << allMessages(s);
}

TEST_F(DrainBounds, RecordsThatDoNotParseAreCountedByKindWithTheFirstCause) {
    // The kernel writes no malformed records: they are written into a simulated
    // CPU's data ring, which the real drain thread reads as it reads the kernel's.
    SimulatedCaptureOptions so;
    so.cpus = 1;
    auto opened = CaptureSession::openSimulated(so);
    ASSERT_TRUE(opened) << opened.error().message;
    CaptureSession& session = **opened;
    CollectingConsumer consumer;
    session.addConsumer(&consumer);
    ASSERT_TRUE(session.start().ok());
    SimulatedAuxProducer& p = session.simulatedProducer(0);
    // A good COMM first (pid, tid, "x\0" padded to 8, then the trailer: TID, TIME, CPU, IDENTIFIER).
    CommRecord comm;
    comm.trailer[3] = so.firstId;
    ASSERT_TRUE(p.writeRecord(&comm, sizeof comm));
    // A LOST record of 16 bytes: too short for its id and lost count.
    struct {
        perf_event_header h{PERF_RECORD_LOST, 0, 16};
        uint64_t id = 1;
    } lost;
    ASSERT_TRUE(p.writeRecord(&lost, sizeof lost));
    // Two samples whose identifier names no event of the capture.
    struct {
        perf_event_header h{PERF_RECORD_SAMPLE, 0, 16};
        uint64_t id = 987654;
    } sample;
    ASSERT_TRUE(p.writeRecord(&sample, sizeof sample));
    ASSERT_TRUE(p.writeRecord(&sample, sizeof sample));
    session.requestStop();
    session.wait();
    const auto s = session.summary();
    const CpuCounters t = s.total();
    EXPECT_EQ(t.records, 4u);
    EXPECT_EQ(t.parseErrors, 3u);
    EXPECT_EQ(t.parseErrorsUnknownEvent, 2u);
    EXPECT_EQ(consumer.records().size(), 4u) << "kept and handed on";
    EXPECT_TRUE(hasMessage(s,
                           "cpu 0: 3 records did not parse (1 too short for their type, 2 samples of an "
                           "unknown event id; kept and counted); the first, at data ring offset 56 (LOST, "
                           "16 bytes): LOST record too short for id and lost count"))
        << allMessages(s);
}

TEST_F(DrainBounds, SlowWriterThatKeepsTakingIsNotCutShortAtStop) {
    // The stop gives up on a sink that takes nothing for kStopDeliveryTimeout, not
    // on one that is slow: 80 records taken one per 70 ms (5.6 s) all arrive.
    SimulatedCaptureOptions so;
    so.cpus = 1;
    auto opened = CaptureSession::openSimulated(so);
    ASSERT_TRUE(opened) << opened.error().message;
    CaptureSession& session = **opened;
    SlowConsumer slow(std::chrono::milliseconds(70));
    session.addConsumer(&slow);
    ASSERT_TRUE(session.start().ok());
    CommRecord comm;
    comm.trailer[3] = so.firstId;
    for (int i = 0; i < 80; ++i)
        ASSERT_TRUE(session.simulatedProducer(0).writeRecord(&comm, sizeof comm));
    const auto t0 = Clock::now();
    session.requestStop();
    session.wait();
    const double took = secondsSince(t0);
    const auto s = session.summary();
    EXPECT_GT(took, std::chrono::duration<double>(DrainThread::kStopDeliveryTimeout).count());
    EXPECT_EQ(slow.taken(), 80u);
    EXPECT_EQ(s.total().undeliveredRecords, 0u);
    EXPECT_FALSE(hasMessage(s, "not delivered")) << allMessages(s);
}
