// SPDX-License-Identifier: GPL-3.0-or-later
#include "TriggerEngine.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace auxscope {
namespace {
uint64_t monoNow() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}
// The process of a thread (-1: gone, or not readable).
int32_t tgidOf(int32_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/status", tid);
    FILE* f = std::fopen(path, "re");
    if (!f) return -1;
    char line[256];
    int32_t tgid = -1;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "Tgid: %d", &tgid) == 1) break;
    std::fclose(f);
    return tgid;
}

}  // namespace

TriggerEngine::TriggerEngine(std::vector<ResolvedTrigger> triggers, const TriggerSettings& settings)
    : triggers_(std::move(triggers)), settings_(settings) {
    for (auto& t : triggers_) {
        report_.triggers.push_back(t.name);
        keyedPairs_ |= t.spec.kind == TriggerKind::TracepointPair && t.secondKeyOffset >= 0;
    }
    report_.perTrigger.assign(triggers_.size(), 0);
}

void TriggerEngine::addProbe(uint64_t id, uint32_t trigger, Role role) {
    probes_[id] = Probe{trigger, role};
}

uint64_t TriggerEngine::perfClockNow(const perf_event_mmap_page* page) {
#if defined(__x86_64__) || defined(__i386__)
    // perf's own conversion (perf_event_mmap_page's comment): the perf clock from the TSC.
    if (!page) return 0;
    uint64_t zero = 0, cyc = 0;
    uint32_t mult = 0, seq = 0;
    uint16_t shift = 0;
    do {
        seq = __atomic_load_n(&page->lock, __ATOMIC_ACQUIRE);
        if (!page->cap_user_time_zero) return 0;
        zero = page->time_zero;
        mult = page->time_mult;
        shift = page->time_shift;
        cyc = __rdtsc();
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while (__atomic_load_n(&page->lock, __ATOMIC_ACQUIRE) != seq);
    const uint64_t quot = cyc >> shift, rem = cyc & ((uint64_t(1) << shift) - 1);
    return zero + quot * mult + ((rem * mult) >> shift);
#else
    (void)page;
    return 0;
#endif
}

uint64_t TriggerEngine::keyOf(const ResolvedTrigger& t, const ParsedRecord& rec, bool first) const {
    const int offset = first ? t.firstKeyOffset : t.secondKeyOffset;
    const int size = first ? t.firstKeySize : t.secondKeySize;
    if (offset < 0 || size <= 0 || rec.raw.size() < size_t(offset + size)) return uint32_t(rec.tid);
    uint64_t v = 0;
    std::memcpy(&v, rec.raw.data() + offset, size_t(size));
    return size == 4 ? uint64_t(uint32_t(v)) : v;
}

void TriggerEngine::onTriggerRecord(const ParsedRecord& rec) {
    if (rec.type == PERF_RECORD_LOST || rec.type == PERF_RECORD_LOST_SAMPLES) {
        std::lock_guard lock(mutex_);
        report_.lost += rec.lost;
        return;
    }
    if (rec.type != PERF_RECORD_SAMPLE) return;
    auto it = probes_.find(rec.id);
    if (it == probes_.end()) return;
    const Probe p = it->second;
    const ResolvedTrigger& t = triggers_[p.trigger];
    if (targetPid_ > 0 && (p.role == Role::Entry || p.role == Role::Return) && rec.pid != targetPid_) {
        std::lock_guard lock(mutex_);
        ++report_.otherProcesses;
        return;
    }
    if (keyedPairs_ && targetPid_ > 0 && rec.pid == targetPid_) targetTids_.insert(int32_t(rec.tid));
    Pending s;
    s.trigger = p.trigger;
    s.role = p.role;
    s.pid = rec.pid, s.tid = rec.tid;
    s.cpu = rec.cpu == UINT32_MAX ? -1 : int32_t(rec.cpu);
    s.time = rec.time;
    s.key = (p.role == Role::Begin || p.role == Role::End) ? keyOf(t, rec, p.role == Role::Begin)
                                                           : uint32_t(rec.tid);
    if (p.role == Role::End && t.secondClearOffset >= 0 && t.secondClearSize > 0 &&
        rec.raw.size() >= size_t(t.secondClearOffset + t.secondClearSize)) {
        uint64_t v = 0;
        std::memcpy(&v, rec.raw.data() + t.secondClearOffset, size_t(t.secondClearSize));
        s.clearKey = t.secondClearSize == 4 ? uint64_t(uint32_t(v)) : v;
    }
    batch_.push_back(s);
}

void TriggerEngine::onPassEnd() {
    if (batch_.empty()) return;
    // Each CPU's ring is in time order, the rings of one pass are not with each
    // other: a thread that moved between CPUs may have its return drained before
    // its entry. Sorted by time, the pass's samples pair as they happened.
    std::stable_sort(batch_.begin(), batch_.end(),
                     [](const Pending& a, const Pending& b) { return a.time < b.time; });
    {
        std::lock_guard lock(mutex_);
        report_.samples += batch_.size();
    }
    for (const Pending& s : batch_)
        process(s);
    batch_.clear();
}

void TriggerEngine::process(const Pending& s) {
    const ResolvedTrigger& t = triggers_[s.trigger];
    const uint64_t key = (uint64_t(s.trigger) << 40) ^ s.key;
    const bool opens = s.role == Role::Entry || s.role == Role::Begin;
    if (opens && t.spec.kind == TriggerKind::FunctionEntry) {
        fire(s, s.time);
        return;
    }
    if (opens) {
        // An end drained in an earlier pass than its start (the rare migration
        // across a pass boundary): pair them now.
        if (auto e = earlyEnds_.find(key); e != earlyEnds_.end()) {
            auto& ends = e->second;
            for (size_t i = 0; i < ends.size(); ++i)
                if (ends[i].time > s.time) {
                    const Pending end = ends[i];
                    ends.erase(ends.begin() + long(i));
                    {
                        std::lock_guard lock(mutex_);
                        if (report_.unmatchedEnds) --report_.unmatchedEnds;
                    }
                    if (end.time - s.time >= t.spec.thresholdNs) fire(end, s.time);
                    return;
                }
        }
        auto& stack = stacks_[key];
        if (t.spec.kind == TriggerKind::TracepointPair && !stack.empty()) return;  // the first wakeup counts
        if (t.spec.kind == TriggerKind::SyscallSlow && !stack.empty()) {
            // One system call at a time per thread: an entry over an entry means an exit was lost.
            std::lock_guard lock(mutex_);
            ++report_.unmatchedEnds;
            stack.clear();
        }
        if (stack.size() >= kMaxDepth) {
            std::lock_guard lock(mutex_);
            ++report_.depthOverflows;
            return;
        }
        stack.push_back(s.time);
        return;
    }
    if (s.clearKey != UINT64_MAX)
        if (auto c = stacks_.find((uint64_t(s.trigger) << 40) ^ s.clearKey); c != stacks_.end())
            c->second.clear();
    auto st = stacks_.find(key);
    if (st == stacks_.end() || st->second.empty() || st->second.back() > s.time) {
        // A switch to a thread nobody woke is the rule for a pair, not an error.
        if (t.spec.kind == TriggerKind::TracepointPair) return;
        std::lock_guard lock(mutex_);
        ++report_.unmatchedEnds;
        auto& ends = earlyEnds_[key];
        if (ends.size() >= kMaxEarlyEnds) ends.erase(ends.begin());
        ends.push_back(s);
        return;
    }
    const uint64_t start = st->second.back();
    if (t.spec.kind == TriggerKind::TracepointPair)
        st->second.clear();
    else
        st->second.pop_back();
    if (s.time - start >= t.spec.thresholdNs) fire(s, start);
}

void TriggerEngine::fire(const Pending& rec, uint64_t start) {
    const uint32_t trigger = rec.trigger;
    // A pair keyed by a field names its thread there (sched_switch's next_pid: the
    // thread that waited), not in the sample's thread (the one switched out).
    int32_t tid = rec.tid, pid = rec.pid;
    if (rec.role == Role::End && triggers_[trigger].secondKeyOffset >= 0 && int32_t(rec.key) != rec.tid) {
        tid = int32_t(rec.key);
        // A thread seen running in the target is the target's (it may have
        // exited since: /proc no longer knows it); else ask /proc.
        pid = targetPid_ > 0 && targetTids_.count(tid) ? targetPid_ : tgidOf(tid);
        // A process or command target: its own threads' latency counts, not that
        // of another process's thread it happened to wake or switch to.
        if (targetPid_ > 0 && pid != targetPid_) {
            std::lock_guard lock(mutex_);
            ++report_.otherProcesses;
            return;
        }
    }
    std::lock_guard lock(mutex_);
    if (!settings_.tids.empty() &&
        std::find(settings_.tids.begin(), settings_.tids.end(), pid_t(tid)) == settings_.tids.end()) {
        ++report_.skipped[size_t(TriggerSkip::Thread)];
        return;
    }
    TriggerFiring f;
    f.trigger = trigger;
    f.pid = pid, f.tid = tid;
    f.cpu = rec.cpu;
    f.start = start, f.time = rec.time, f.duration = rec.time - start;
    f.seenMono = monoNow();
    if (pending_) {
        ++report_.skipped[size_t(TriggerSkip::Pending)];
        return;
    }
    if (settings_.max && report_.snapshotsRequested >= settings_.max) {
        ++report_.skipped[size_t(TriggerSkip::Limit)];
        return;
    }
    if (anySnapshotFiring_ && settings_.gapNs && rec.time - lastSnapshotFiring_ < settings_.gapNs) {
        ++report_.skipped[size_t(TriggerSkip::Gap)];
        return;
    }
    pending_ = true;
    pendingFrom_ = report_.firings.size();
    lastSnapshotFiring_ = rec.time;
    anySnapshotFiring_ = true;
    ++report_.snapshotsRequested;
    // --trigger-post counts from the firing, not from when the drain thread saw it.
    const uint64_t now = perfClockNow(clockPage_);
    const uint64_t elapsed = now > rec.time ? now - rec.time : 0;
    const uint64_t wait = settings_.postNs > elapsed ? settings_.postNs - elapsed : 0;
    due_ = std::chrono::steady_clock::now() + std::chrono::nanoseconds(wait);
    report_.firings.push_back(f);
    ++report_.perTrigger[trigger];
    fired_.fetch_add(1, std::memory_order_relaxed);
}

void TriggerEngine::onSnapshotStart() {
    snapshotStartTime_ = perfClockNow(clockPage_);
    snapshotStartMono_ = monoNow();
    lastSnapshotMono_.store(snapshotStartMono_, std::memory_order_release);
    inTriggeredSnapshot_ = pending_ && std::chrono::steady_clock::now() >= due_;
    if (!inTriggeredSnapshot_) return;
    std::lock_guard lock(mutex_);
    servingUpTo_ = report_.firings.size();
    pending_ = false;
    due_ = std::chrono::steady_clock::time_point::max();
}

void TriggerEngine::onSnapshotEnd(uint64_t windowStart, uint64_t windowEnd) {
    const uint64_t index = snapshotIndex_++;
    if (!inTriggeredSnapshot_) return;
    inTriggeredSnapshot_ = false;
    std::lock_guard lock(mutex_);
    ++report_.snapshotsTaken;
    for (size_t i = pendingFrom_; i < servingUpTo_ && i < report_.firings.size(); ++i) {
        TriggerFiring& f = report_.firings[i];
        f.snapshot = index;
        f.snapshotTime = snapshotStartTime_;
        f.snapshotMono = snapshotStartMono_;
        f.windowStart = windowStart, f.windowEnd = windowEnd;
        if (i == pendingFrom_ && snapshotStartTime_ > f.time)
            report_.latenciesNs.push_back(snapshotStartTime_ - f.time);
    }
}

TriggerReport TriggerEngine::report() const {
    std::lock_guard lock(mutex_);
    return report_;
}

}  // namespace auxscope
