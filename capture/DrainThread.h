// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture backend thread. It waits on every ring's fd with epoll (woken by
// the rings' wakeup watermark, a stop request, the launched command's exit, or
// the statistics publish period), drains each ring from data_tail to data_head,
// parses every record, hands it to the consumers, and publishes per-CPU
// statistics. Under sustained load it polls the rings on a short timer instead.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "AuxRing.h"
#include "CaptureStats.h"
#include "DataRing.h"
#include "PerfEvent.h"
#include "RecordConsumer.h"
#include "RecordParser.h"
#include "RecordSink.h"
#include "RingReader.h"

namespace auxscope {

// Re-enables the event that writes an AUX area after the kernel (or the
// simulator) disabled it because the area was full.
struct AuxEventControl {
    virtual ~AuxEventControl() = default;
    // PERF_EVENT_IOC_ENABLE or its equivalent; enabling an enabled event is harmless.
    virtual Expected<void> enable() = 0;
    // PERF_EVENT_IOC_DISABLE: once it returns the hardware has stopped writing
    // (snapshot mode disables around the copy of the newest bytes).
    virtual Expected<void> disable() = 0;
    // Whether the event is enabled now, where that is cheap to know exactly (the
    // simulator); nullopt for a perf fd, whose state the kernel does not expose.
    virtual std::optional<bool> enabled() const { return std::nullopt; }
};

// AuxEventControl over a perf fd (PERF_EVENT_IOC_ENABLE). Does not own the fd.
class PerfFdAuxControl : public AuxEventControl {
public:
    explicit PerfFdAuxControl(const PerfEventFd& fd) : fd_(fd) {}
    Expected<void> enable() override { return fd_.enable(); }
    Expected<void> disable() override { return fd_.disable(); }

private:
    const PerfEventFd& fd_;
};

struct RingSlot {
    int cpu = -1;
    size_t statsIndex = 0;
    int ownerFd = -1;  // the fd the ring is mapped from (registered with epoll)
    DataRing ring;
    std::vector<const PerfEventFd*> members;  // every event writing into this ring
    uint64_t readFormat = 0;
    // Simulated rings signal an eventfd instead of a perf fd: the drain thread
    // reads it when it fires so that it does not stay readable.
    bool ownerFdIsEventfd = false;
    // Optional AUX area (full-trace mode only for now) and the control that
    // re-enables its event; both set or neither. The control is not owned.
    AuxRing aux;
    AuxEventControl* auxControl = nullptr;
    // Drain-thread state.
    CpuCounters counters;
    double fillPercent = 0, fillPeakPercent = 0, fillMaxPercent = 0;
    uint64_t publishedBytes = 0, publishedRecords = 0;
    bool hungUp = false;
    // AUX: the fill found by the last pass; aux_tail before the last pass that
    // moved it (the kernel may have judged the space against that one); the stall
    // being resolved: the AUX position at which the event stopped for want of
    // space, kept until aux_head moves past it.
    double auxFillPercent = 0;
    uint64_t auxPrevTail = 0;
    bool auxStalled = false, auxStallCounted = false, auxErrorNoted = false, auxEnableErrorNoted = false;
    uint64_t auxStallPos = 0, auxLastCountedPos = ~0ull;
    std::chrono::steady_clock::time_point auxRetryAt{};
};

struct DrainControl {
    std::vector<const PerfEventFd*> primaryEvents;   // disabled first at stop
    std::vector<const PerfEventFd*> trackingEvents;  // disabled last (they flush pending LOST)
    bool canProvokeFlush = false;                    // CPU-wide context switch records exist on every ring
    pid_t childPid = -1;                             // launched command, or -1
    int childPidFd = -1;
    bool stopWhenAllRingsHangUp = false;
    bool realtime = true;  // run the drain thread SCHED_FIFO where permitted  // per-task capture: every
                           // traced task has exited
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    unsigned publishHz = 20;
    // Called on the drain thread after every pass over all rings (sinks write
    // perf.data's FINISHED_ROUND there). Must not block.
    std::function<void()> afterPass;
    // Receive the AUX bytes of the rings that have an AUX area (onAux), in ring
    // order within a pass and in AUX order per ring. Must not block.
    std::vector<RecordSink*> auxSinks;
};

class DrainThread {
public:
    DrainThread(std::vector<RingSlot>& rings, const IdTable& ids, CaptureStats& stats, DrainControl control,
                std::vector<RecordConsumer*> consumers);
    ~DrainThread();

    Expected<void> start();
    void requestStop();  // async-signal-safe (writes an eventfd)
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    void join();

    int childExitStatus() const { return childStatus_; }
    bool childExited() const { return childExited_; }
    std::vector<std::string> messages() const;
    // Every CPU's statistics at every publish (thinned out on very long
    // captures). Read it only after join().
    const std::vector<StatsSample>& statsHistory() const { return history_; }

private:
    void run();
    bool drainRing(RingSlot& r);
    bool drainAux(RingSlot& r, bool sawTruncated, uint64_t truncatedEnd, bool sawLost);
    void reenableAux(RingSlot& r);
    void noteAuxEnableError(RingSlot& r, const std::string& why);
    void publish(double seconds);
    void readKernelLost(RingSlot& r);
    void finishCapture();
    void reapChild(bool kill);
    void note(std::string msg);

    std::vector<RingSlot>& rings_;
    const IdTable& ids_;
    CaptureStats& stats_;
    DrainControl ctl_;
    std::vector<RecordConsumer*> consumers_;
    RingReader reader_;
    int epollFd_ = -1;         // rings + control
    int controlEpollFd_ = -1;  // stop request + launched command only
    int stopFd_ = -1;
    std::thread thread_;
    std::atomic<bool> finished_{false};
    int childStatus_ = -1;
    bool childExited_ = false;
    std::chrono::steady_clock::time_point lastPublish_;
    mutable std::mutex msgMutex_;
    std::vector<std::string> messages_;
    std::vector<StatsSample> history_;
    uint64_t newestRecordTime_ = 0;
    bool auxReenableAllowed_ = true;  // false once the capture is stopping
    std::chrono::microseconds publishPeriod_{50'000};
};

}  // namespace auxscope
