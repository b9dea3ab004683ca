// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the snapshot triggers did in a capture: every firing and every skip by
// reason (TriggerEngine fills it; perf.data's trigger section stores it).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace auxscope {

struct TriggerFiring {
    uint32_t trigger = 0;  // index into the capture's triggers
    int32_t pid = -1, tid = -1;
    int32_t cpu = -1;
    uint64_t start = 0;              // perf time of the entry (== time for an entry trigger)
    uint64_t time = 0;               // perf time it fired (the return, the exit, the entry)
    uint64_t duration = 0;           // time - start
    uint64_t snapshot = UINT64_MAX;  // index of the snapshot it asked for (UINT64_MAX: none taken)
    uint64_t snapshotTime = 0;       // perf time the snapshot started (0: unknown)
    // Perf times of the oldest and newest sideband record the snapshot delivered
    // (0: none, e.g. an AUX-only snapshot).
    uint64_t windowStart = 0, windowEnd = 0;
    // CLOCK_MONOTONIC (ns) when the drain thread saw the firing, and when its
    // snapshot started (0: none): the trigger latency where the perf clock cannot
    // be read from user space (no cap_user_time_zero, e.g. in many VMs).
    uint64_t seenMono = 0, snapshotMono = 0;
};

enum class TriggerSkip : unsigned { Thread, Limit, Gap, Pending, Count };
inline const char* triggerSkipName(TriggerSkip s) {
    switch (s) {
        case TriggerSkip::Thread:
            return "another thread than those selected";
        case TriggerSkip::Limit:
            return "--trigger-max reached";
        case TriggerSkip::Gap:
            return "within --trigger-gap of the previous snapshot's firing";
        case TriggerSkip::Pending:
            return "a snapshot asked for was still pending (it is taken after this firing too)";
        case TriggerSkip::Count:
            break;
    }
    return "?";
}

struct TriggerReport {
    std::vector<std::string> triggers;  // names, in --trigger order
    std::vector<TriggerFiring> firings;
    std::array<uint64_t, size_t(TriggerSkip::Count)> skipped{};
    uint64_t samples = 0;         // trigger samples seen
    uint64_t unmatchedEnds = 0;   // a return/exit without its entry (entry before the capture, or lost)
    uint64_t lost = 0;            // trigger samples the kernel could not write (LOST)
    uint64_t depthOverflows = 0;  // entries dropped past kMaxDepth nesting levels
    uint64_t snapshotsRequested = 0;
    uint64_t snapshotsTaken = 0;  // requested ones served
    // Uprobe hits in other processes running the binary (a process or command target:
    // uprobes are opened system-wide, see CaptureSession::armTriggers), ignored; and
    // a tracepoint pair's firings whose key names another process's thread (a
    // kernel worker the target woke or switched to).
    uint64_t otherProcesses = 0;
    // Firing's time -> its snapshot's start, in ns (where the perf clock can be read).
    std::vector<uint64_t> latenciesNs;
    std::vector<uint64_t> perTrigger;  // firings per trigger
};

}  // namespace auxscope
