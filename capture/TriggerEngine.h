// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Decides, on the drain thread, when a trigger fires and a snapshot is due.
//
// The trigger events (uprobes, uretprobes, tracepoints; CaptureSession::armTriggers
// opens them) sample every hit with TID, TIME and CPU into a forward data ring per
// CPU of their own that the drain thread drains in its one epoll loop with every
// other ring (their records reach this engine only, not the file: the firings go
// to the file instead, see TriggerFeature). Entries are matched with returns per
// thread and per nesting level (a stack per thread and trigger), a syscall's exit
// with its entry per thread, a tracepoint pair's second event with the first by
// thread (or by the key fields that name the thread, e.g. sched_wakeup's pid and
// sched_switch's next_pid). A call that reaches its threshold fires at its
// return, so the whole slow call precedes the snapshot.
//
// A firing asks for a snapshot --trigger-post after the firing's time. Skipped
// firings are counted by reason: another thread than the ones selected, a
// snapshot still pending, the --trigger-max limit, the --trigger-gap since the
// previous snapshot's firing. Only firings that ask for a snapshot are kept.
#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "DrainThread.h"
#include "TriggerReport.h"
#include "TriggerSpec.h"

namespace auxscope {

class TriggerEngine : public DrainTrigger {
public:
    enum class Role : uint8_t { Entry, Return, Begin, End };
    static constexpr size_t kMaxDepth = 256;
    // The drain thread looks at the trigger rings at least this often: half of it is
    // the median delay before a firing is seen (the trigger latency's bulk).
    static constexpr std::chrono::microseconds kPollInterval{500};

    TriggerEngine(std::vector<ResolvedTrigger> triggers, const TriggerSettings& settings);

    // Set up (before the capture starts) for every event opened.
    void addProbe(uint64_t id, uint32_t trigger, Role role);
    // The meta page of a trigger ring: the perf clock is read through it (x86 TSC).
    void setClockPage(const perf_event_mmap_page* page) { clockPage_ = page; }
    // Uprobe samples of other processes, and a keyed pair's firings for other
    // processes' threads, are ignored (counted) when set.
    void setTargetPid(pid_t pid) { targetPid_ = pid; }
    const std::vector<ResolvedTrigger>& triggers() const { return triggers_; }
    const TriggerSettings& settings() const { return settings_; }

    // DrainTrigger (drain thread)
    void onTriggerRecord(const ParsedRecord& rec) override;
    void onPassEnd() override;
    std::chrono::steady_clock::time_point snapshotDue() const override { return due_; }
    std::chrono::nanoseconds pollInterval() const override { return kPollInterval; }
    void onSnapshotStart() override;
    void makeDueNow() override {
        if (pending_) due_ = std::chrono::steady_clock::now();
    }
    void onSnapshotEnd(uint64_t windowStart, uint64_t windowEnd) override;

    // Any thread; complete after the capture finished.
    TriggerReport report() const;
    uint64_t firingCount() const { return fired_.load(std::memory_order_relaxed); }
    // CLOCK_MONOTONIC (ns) when the latest snapshot of any cause started (0: none yet).
    uint64_t lastSnapshotStartMono() const { return lastSnapshotMono_.load(std::memory_order_acquire); }

    // The perf clock now, through a ring's meta page (0 when it cannot be read here).
    static uint64_t perfClockNow(const perf_event_mmap_page* page);

private:
    struct Probe {
        uint32_t trigger;
        Role role;
    };
    // A trigger sample of the current drain pass.
    struct Pending {
        uint32_t trigger = 0;
        Role role = Role::Entry;
        int32_t pid = -1, tid = -1, cpu = -1;
        uint64_t time = 0;
        uint64_t key = 0;                // the thread (or the tracepoint's key field)
        uint64_t clearKey = UINT64_MAX;  // a pair's thread switched out (secondClearField)
    };
    static constexpr size_t kMaxEarlyEnds = 16;
    void process(const Pending& s);
    void fire(const Pending& s, uint64_t start);
    uint64_t keyOf(const ResolvedTrigger& t, const ParsedRecord& rec, bool first) const;

    std::vector<ResolvedTrigger> triggers_;
    TriggerSettings settings_;
    std::unordered_map<uint64_t, Probe> probes_;
    // (trigger, thread key) -> entry times, innermost last.
    std::unordered_map<uint64_t, std::vector<uint64_t>> stacks_;
    // Returns/exits seen before any entry of theirs, per (trigger, key), newest last.
    std::unordered_map<uint64_t, std::vector<Pending>> earlyEnds_;
    std::vector<Pending> batch_;
    const perf_event_mmap_page* clockPage_ = nullptr;
    pid_t targetPid_ = -1;
    std::unordered_set<int32_t> targetTids_;  // threads seen running in the target (keyed pairs only)
    bool keyedPairs_ = false;
    std::chrono::steady_clock::time_point due_ = std::chrono::steady_clock::time_point::max();
    bool pending_ = false;
    uint64_t pendingFrom_ = 0;  // first firing index waiting for the snapshot
    uint64_t lastSnapshotFiring_ = 0;
    bool anySnapshotFiring_ = false;
    uint64_t snapshotIndex_ = 0;  // snapshots seen (any cause)
    uint64_t snapshotStartTime_ = 0, snapshotStartMono_ = 0;
    bool inTriggeredSnapshot_ = false;
    size_t servingUpTo_ = 0;
    std::atomic<uint64_t> fired_{0};
    std::atomic<uint64_t> lastSnapshotMono_{0};
    mutable std::mutex mutex_;  // guards report_ against report() from other threads
    TriggerReport report_;
};

}  // namespace auxscope
