// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture backend thread. It waits on every ring's fd with epoll (woken by
// the rings' wakeup watermark, a stop request, the launched command's exit, or
// the statistics publish period), drains each ring from data_tail to data_head,
// parses every record, hands it to the consumers, and publishes per-CPU
// statistics. Under sustained load it polls the rings on a short timer instead.
//
// Snapshot (flight-recorder) mode, for the rings whose AUX area is mapped
// read-only (AuxMode::Snapshot): the hardware overwrites the area and aux_tail
// is never written (the mapping is read-only: a store would fault). The data
// ring (sideband) is drained as always; an AuxSnapshotTracker per ring follows
// the PERF_RECORD_AUX and LOST records. A snapshot (requestSnapshot(), a command
// source, or the stop with DrainControl::snapshotOnStop) drains the data rings,
// disables every snapshot-mode AUX event (as perf does, so that all CPUs' copies
// end at the same moment), drains the data rings again for the records those
// disables flushed, copies the newest bytes of each area (wrap decided by the
// tracker when it is certain, else by ZeroScan), re-enables the events, and only
// then hands each copy to the AUX sinks as one chunk.
//
// Back-pressure: before a record goes to any consumer, every consumer is asked
// whether it has room (RecordConsumer::hasRoom); when one has not, the pass
// leaves that record and the rest of the ring in the kernel's ring. AUX bytes
// are handed to the sinks as views of the AUX area (RecordSink::onAux) and
// aux_tail moves only as far as every sink released them, so a slow file writer
// fills the AUX area and the kernel stops the trace (TRUNCATED), never us.
//
// Sideband flight recorder (--overwrite), for the rings mapped as a BackwardRing:
// the kernel overwrites the oldest records and the drain thread does not read
// the ring on its passes (it only publishes how much history the ring holds).
// Every snapshot trigger, and the stop, pauses all backward rings, waits one RCU
// grace period, copies each, and hands the records written since the previous
// snapshot of that ring to the consumers, oldest first, as a drain pass would.
//
// Stopping is bounded: the passes at stop wait for sinks without room until they
// have taken nothing for kStopDeliveryTimeout (or kStopDeliveryLimit in all),
// then count what is left (records in the data rings, AUX bytes, snapshot
// copies) as not delivered, per CPU, with the reason;
// a launched command that outlives the capture gets SIGTERM, and SIGKILL after
// kChildTermTimeout. The wait itself (epoll_pwait2, epoll_pwait where the kernel
// or libc lacks it) never spins: EINTR is retried, any other failure ends the
// capture with its error (failure()).
#include <sys/epoll.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "AuxRing.h"
#include "BackwardRing.h"
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
    // A ring of trigger events (TriggerEngine): its records go to DrainControl::trigger
    // only, never to the consumers, and it has no statistics row of its own.
    bool triggerRing = false;
    size_t statsIndex = 0;
    int ownerFd = -1;  // the fd the ring is mapped from (registered with epoll)
    DataRing ring;     // unmapped when `backward` is used
    // Sideband flight recorder (--overwrite): the data ring, written backward and
    // mapped read-only; read only at snapshots.
    BackwardRing backward;
    std::vector<const PerfEventFd*> members;  // every event writing into this ring
    uint64_t readFormat = 0;
    // Simulated rings signal an eventfd instead of a perf fd: the drain thread
    // reads it when it fires so that it does not stay readable.
    bool ownerFdIsEventfd = false;
    // Optional AUX area (full-trace or snapshot mode) and the control that
    // enables and disables its event; both set or neither. The control is not owned.
    AuxRing aux;
    AuxEventControl* auxControl = nullptr;
    // Snapshot mode: aux_head runs free (CoreSight ETM) rather than wrapping inside
    // the area (Intel PT, SPE). Set by whoever maps the area.
    bool auxFreeRunningHead = false;
    // Snapshot mode: false when PERF_RECORD_AUX sizes do not say what was written
    // (Intel PT reports the whole buffer every time).
    bool auxRecordSizesReliable = true;
    // Drain-thread state.
    CpuCounters counters;
    // The first record of this ring that did not parse: where, and why (said in
    // the summary with the count, when the capture stops).
    std::string firstParseError;
    double fillPercent = 0, fillPeakPercent = 0, fillMaxPercent = 0;
    uint64_t publishedBytes = 0, publishedRecords = 0;
    bool hungUp = false;
    // The last pass left something for a sink that had no room (records in the
    // ring, AUX bytes in the area, a snapshot in memory).
    bool heldBack = false;
    // AUX: the fill found by the last pass; aux_tail before the last pass that
    // moved it (the kernel may have judged the space against that one); the stall
    // being resolved: the AUX position at which the event stopped for want of
    // space, kept until aux_head moves past it.
    double auxFillPercent = 0;
    uint64_t auxPrevTail = 0;
    // Full mode: the AUX position up to which bytes were handed to the sinks
    // (at or past aux_tail: a sink that writes them later releases them later).
    uint64_t auxHanded = 0;
    bool auxStalled = false, auxStallCounted = false, auxErrorNoted = false, auxEnableErrorNoted = false;
    uint64_t auxStallPos = 0, auxLastCountedPos = ~0ull;
    std::chrono::steady_clock::time_point auxRetryAt{};
    // Snapshot mode: the wrap tracker (set at start for snapshot-mode areas); the
    // copy taken, until it is handed to the sinks; what the previous snapshot saw,
    // so that an area with nothing new since adds no copy (perf writes none either).
    std::optional<AuxSnapshotTracker> auxTracker;
    std::shared_ptr<std::vector<uint8_t>> snapshotCopy;
    uint64_t snapshotOffset = 0;
    bool snapshotPending = false, snapshotDisabled = false, snapshotWasEnabled = false;
    bool snapshotTakenBefore = false, lostSinceSnapshot = false, snapshotErrorNoted = false;
    uint64_t snapshotLastHead = 0, snapshotLastReported = 0;
    // Backward ring: data_head at the previous snapshot (records at or past it, in
    // the ring's backward direction, were delivered then); whether the ring was
    // paused for the snapshot in progress.
    uint64_t backwardPrevHead = 0;
    bool backwardPaused = false, backwardErrorNoted = false;
    // A backward snapshot whose records a sink had no room for yet: delivered
    // from record `backwardNext` on later passes (the ring is not snapshotted
    // again until then).
    std::optional<BackwardSnapshot> backwardPending;
    size_t backwardNext = 0;
};

// What a command source (the --control FIFO) may ask of the capture. Called on
// the drain thread only, from DrainCommandSource::onReadable().
class DrainActions {
public:
    // Takes a snapshot of every snapshot-mode AUX area and backward data ring
    // before returning. False (nothing done) when there is neither.
    virtual bool snapshotNow() = 0;
    // The capture stops after the current pass.
    virtual void stop() = 0;
    // PERF_EVENT_IOC_ENABLE/DISABLE of the capture's events (the tracking events
    // keep running, so the sideband stays complete). While disabled, neither a
    // snapshot nor a full AUX area re-enables anything.
    virtual Expected<void> setEventsEnabled(bool enabled) = 0;

protected:
    ~DrainActions() = default;
};

// An fd the drain thread watches beside the rings (both its wait sets), e.g. the
// control FIFO. Level-triggered: read everything available in onReadable().
class DrainCommandSource {
public:
    virtual ~DrainCommandSource() = default;
    virtual int fd() const = 0;
    // fd() is readable, or hung up. On the drain thread: must never block.
    virtual void onReadable(DrainActions& actions) = 0;
};

// Sees the trigger rings' records and says when a triggered snapshot is due
// (TriggerEngine). Called on the drain thread only; must not block.
class DrainTrigger {
public:
    virtual ~DrainTrigger() = default;
    virtual void onTriggerRecord(const ParsedRecord& record) = 0;
    // After every pass over the rings (before a snapshot it may ask for).
    virtual void onPassEnd() = 0;
    // When the next triggered snapshot is due; time_point::max(): none pending.
    virtual std::chrono::steady_clock::time_point snapshotDue() const = 0;
    // How long the drain thread may sleep at most while triggers are armed (their
    // rings do not wake it for every sample).
    virtual std::chrono::nanoseconds pollInterval() const = 0;
    // Around every snapshot taken (whatever asked for it). The window: the perf
    // times of the oldest and newest sideband record it delivered (0: none).
    virtual void onSnapshotStart() = 0;
    // The capture stops: a pending snapshot is taken now rather than after its delay.
    virtual void makeDueNow() = 0;
    virtual void onSnapshotEnd(uint64_t windowStart, uint64_t windowEnd) = 0;
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
    // Real per-CPU rings: watch /sys/devices/system/cpu/online at every publish and
    // at stop, and say when a traced CPU goes offline (the kernel detaches its
    // events for good: they stay silent even once it is back) and comes back.
    bool watchCpuHotplug = false;
    // Called on the drain thread after every pass over all rings (sinks write
    // perf.data's FINISHED_ROUND there). Must not block.
    std::function<void()> afterPass;
    // Receive the AUX bytes of the rings that have an AUX area (onAux), in ring
    // order within a pass and in AUX order per ring. Must not block.
    std::vector<RecordSink*> auxSinks;
    // Snapshot mode: newest bytes copied per AUX area and snapshot; 0: the whole area.
    uint64_t snapshotBytes = 0;
    // One more snapshot when the capture stops (perf record --snapshot=e); the
    // events are left disabled after it.
    bool snapshotOnStop = false;
    // Watched on the drain thread (not owned; they outlive the drain thread).
    std::vector<DrainCommandSource*> commandSources;
    // Trigger rings' records go here; it may ask for snapshots (not owned).
    DrainTrigger* trigger = nullptr;
};

class DrainThread : private DrainActions {
public:
    // How long the stop keeps offering records and AUX bytes to sinks that have no
    // room and take nothing (a writer stuck on a hung disk): the stop gives up once
    // the sinks have taken nothing for kStopDeliveryTimeout, or once it has waited
    // for them kStopDeliveryLimit in all (a writer slower than the records still
    // arriving). What is left then is counted as not delivered
    // (CpuCounters::undelivered*) and said, per CPU, with the reason. A writer that
    // keeps taking data is not cut short for being slow before the limit.
    static constexpr std::chrono::seconds kStopDeliveryTimeout{5};
    static constexpr std::chrono::seconds kStopDeliveryLimit{60};
    // A launched command still running at stop gets SIGTERM, then SIGKILL if it
    // has not exited this long after; the wait for it after SIGKILL is bounded too.
    static constexpr std::chrono::seconds kChildTermTimeout{2};
    static constexpr std::chrono::seconds kChildKillTimeout{2};

    DrainThread(std::vector<RingSlot>& rings, const IdTable& ids, CaptureStats& stats, DrainControl control,
                std::vector<RecordConsumer*> consumers);
    ~DrainThread();

    Expected<void> start();
    void requestStop();  // async-signal-safe (writes an eventfd)
    // Async-signal-safe (writes an eventfd): the drain thread takes a snapshot of
    // every snapshot-mode AUX area at its next wake. Requests made before it got
    // to them are served by one snapshot. Ignored before start().
    void requestSnapshot();
    // Snapshots taken so far (requests served, the one at stop included); any thread.
    uint64_t snapshotsTaken() const { return snapshotsTaken_.load(std::memory_order_acquire); }
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    void join();

    int childExitStatus() const { return childStatus_; }
    bool childExited() const { return childExited_; }
    // The launched command did not end within kChildTermTimeout of SIGTERM and was killed.
    bool childKilled() const { return childKilled_; }
    // Why the drain thread ended the capture on its own (its wait for events
    // failed); empty when it did not. Read it after join().
    const std::string& failure() const { return failure_; }
    std::vector<std::string> messages() const;
    // Every CPU's statistics at every publish (thinned out on very long
    // captures). Read it only after join().
    const std::vector<StatsSample>& statsHistory() const { return history_; }

private:
    void run();
    // What one pass learnt from a ring's records (for its AUX area).
    struct PassFlags {
        bool sawTruncated = false, sawLost = false;
        uint64_t truncatedEnd = 0;
    };
    // Parses and counts one record and gives it to the consumers.
    // `offset`: where the record sat, for a parse error's message (the data ring
    // position, or the byte in a backward ring's snapshot when `backward`).
    void handleRecord(RingSlot& r, const perf_event_header& h, std::span<const uint8_t> bytes,
                      ParsedRecord& rec, PassFlags& f, uint64_t offset, bool backward);
    bool drainRing(RingSlot& r);
    // Whether every consumer can take a record of `bytes` bytes of this ring now.
    bool consumersHaveRoom(RingSlot& r, size_t bytes);
    // Hands the pending backward snapshot's records out while there is room; true
    // when none is left pending.
    bool continueBackward(RingSlot& r);
    // Hands a pending snapshot copy to the AUX sinks if they have room; true when
    // none is left pending.
    bool deliverSnapshot(RingSlot& r);
    // Whether anything taken from the rings still waits for a sink.
    bool sinksOwed() const;
    // Passes over every ring until nothing is left waiting for a sink (used while
    // the capture stops: records and AUX bytes end up in the sinks, not dropped),
    // or until the stop gives up on the sinks (kStopDeliveryTimeout); false then.
    bool drainUntilDelivered();
    // After a stop that gave up on the sinks: counts what is left for them as not
    // delivered (per CPU, with a note saying why).
    void countUndelivered();
    // Waits for events on `epfd` until `timeout`: epoll_pwait2, or epoll_pwait
    // (milliseconds) once the former is known to be missing. Returns the number
    // of events, 0 on timeout or EINTR, -1 after a failure that ends the capture.
    int waitForEvents(int epfd, epoll_event* events, int max, const timespec& timeout);
    // Snapshots every backward ring (one shared grace period) and delivers their
    // new records; false if there is none.
    bool snapshotBackwardRings();
    void deliverBackward(RingSlot& r, BackwardSnapshot s);
    bool drainAux(RingSlot& r, bool sawTruncated, uint64_t truncatedEnd, bool sawLost);
    void reenableAux(RingSlot& r);
    bool takeSnapshot(bool reenable);
    void snapshotAuxAreas(bool reenable);
    void copySnapshot(RingSlot& r);
    // DrainActions
    bool snapshotNow() override { return takeSnapshot(auxReenableAllowed_); }
    void stop() override { requestStop(); }
    Expected<void> setEventsEnabled(bool enabled) override;
    void publish(double seconds);
    void readKernelLost(RingSlot& r);
    void finishCapture();
    // Collects the launched command's exit status if it has exited (never blocks).
    void reapChild();
    // Waits (bounded) until the launched command has exited; false at `until`.
    bool waitChildUntil(std::chrono::steady_clock::time_point until);
    // SIGTERM to a launched command still running at stop, SIGKILL after kChildTermTimeout.
    void endChild();
    void noteParseErrors();
    void checkCpusOnline();
    void note(std::string msg);
    void noteOnce(bool& noted, std::string msg);

    std::vector<RingSlot>& rings_;
    const IdTable& ids_;
    CaptureStats& stats_;
    DrainControl ctl_;
    std::vector<RecordConsumer*> consumers_;
    RingReader reader_;
    int epollFd_ = -1;         // rings + control
    int controlEpollFd_ = -1;  // stop request + launched command only
    int stopFd_ = -1;
    int snapshotFd_ = -1;
    std::thread thread_;
    std::atomic<bool> finished_{false};
    int childStatus_ = -1;
    bool childExited_ = false;
    bool childKilled_ = false;
    bool childGone_ = false;  // waitpid says it is not our child (reaped elsewhere)
    std::string failure_;
    bool epollPwait2Missing_ = false;  // ENOSYS once: epoll_pwait for the rest of the capture
    unsigned waitErrors_ = 0;          // consecutive failed waits
    // Delivery progress (records, AUX bytes handed over or released, snapshots
    // delivered), and what the stop made of it: when it last moved, when the stop
    // began, whether the stop gave up on the sinks (and why).
    uint64_t progress_ = 0, stopProgress_ = 0;
    std::chrono::steady_clock::time_point stopProgressAt_{}, stopBegan_{};
    bool stopGaveUp_ = false, stopHitLimit_ = false;
    std::chrono::steady_clock::time_point lastPublish_;
    std::chrono::steady_clock::time_point started_;
    // ctl_.watchCpuHotplug: traced CPUs seen offline (true once back online was said too).
    std::map<int, bool> cpusOffline_;
    mutable std::mutex msgMutex_;
    std::vector<std::string> messages_;
    std::vector<StatsSample> history_;
    uint64_t newestRecordTime_ = 0;
    bool auxReenableAllowed_ = true;  // false once the capture is stopping
    bool eventsPaused_ = false;       // a command disabled the events
    bool snapshotDeferred_ = false;   // a snapshot waits for the sinks to take the previous one
    std::atomic<uint64_t> snapshotsTaken_{0};
    std::chrono::microseconds publishPeriod_{50'000};
    // Perf times of the sideband records the snapshot in progress delivered.
    bool inSnapshot_ = false;
    uint64_t snapshotWindowStart_ = 0, snapshotWindowEnd_ = 0;
};

}  // namespace auxscope
