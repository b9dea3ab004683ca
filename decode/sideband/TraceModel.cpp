// SPDX-License-Identifier: GPL-3.0-or-later
#include "sideband/TraceModel.h"

#include <algorithm>

#include "perfdata/PerfDataFormat.h"

namespace auxscope {

void TraceModel::see(uint64_t t) {
    if (t == 0) return;
    first_ = std::min(first_, t);
    last_ = std::max(last_, t);
}

void TraceModel::noteThread(int32_t pid, int32_t tid) {
    if (pid > 0 && tid > 0) pidOfTid_[tid] = pid;
}

void TraceModel::closeSlice(int cpu, uint64_t t) {
    CpuState& s = cpuState_[cpu];
    if (!s.running) return;
    s.running = false;
    if (t < s.since) t = s.since;  // records of one CPU are time-ordered; guard anyway
    slices_.push_back({s.since, t, cpu, s.pid, s.tid});
}

void TraceModel::openSlice(int cpu, int32_t pid, int32_t tid, uint64_t t) {
    closeSlice(cpu, t);
    CpuState& s = cpuState_[cpu];
    if (tid <= 0) return;  // the idle task (0) and tasks already gone (-1) get no slice
    s = CpuState{true, pid, tid, t};
}

void TraceModel::addRecord(int cpu, const ParsedRecord& r) {
    if (r.hasSampleId) see(r.time);
    // Records that name no CPU (files recorded without PERF_SAMPLE_CPU) still
    // give names and samples, but cannot place a thread on a CPU.
    if (cpu >= 0) cpuState_.try_emplace(cpu);
    switch (r.type) {
        case PERF_RECORD_SWITCH_CPU_WIDE:
        case PERF_RECORD_SWITCH:
            noteThread(r.pid, r.tid);
            if (r.type == PERF_RECORD_SWITCH_CPU_WIDE) noteThread(r.nextPrevPid, r.nextPrevTid);
            if (cpu < 0) break;
            if (r.switchOut) {
                closeSlice(cpu, r.time);
            } else {
                openSlice(cpu, r.pid, r.tid, r.time);
            }
            break;
        case PERF_RECORD_COMM:
            noteThread(r.pid, r.tid);
            names_[r.tid] = std::string(r.comm);
            break;
        case PERF_RECORD_FORK:
            noteThread(r.pid, r.tid);
            noteThread(r.ppid, r.ptid);
            if (!names_.count(r.tid)) {
                auto parent = names_.find(r.ptid);
                if (parent != names_.end()) names_[r.tid] = parent->second;  // a new thread inherits its name
            }
            see(r.time);
            break;
        case PERF_RECORD_SAMPLE:
            noteThread(r.pid, r.tid);
            samples_.push_back({r.time, cpu, r.pid, r.tid, r.ip, r.event ? r.event->descIndex : -1});
            break;
        case PERF_RECORD_LOST:
            losses_.push_back({r.time, cpu, r.lost, LossEvent::Records});
            break;
        case PERF_RECORD_LOST_SAMPLES:
            losses_.push_back({r.time, cpu, r.lost, LossEvent::Samples});
            break;
        case PERF_RECORD_THROTTLE:
            markers_.push_back({LossMarker::Throttle, r.time, 0, cpu, r.pid, r.tid, 0, 0, 0});
            break;
        case PERF_RECORD_UNTHROTTLE:
            // Ends the newest throttle of this CPU (and event) still open.
            for (auto it = markers_.rbegin(); it != markers_.rend(); ++it)
                if (it->kind == LossMarker::Throttle && it->cpu == cpu && !it->end) {
                    it->end = std::max(r.time, it->time);
                    break;
                }
            break;
        case PERF_RECORD_AUX: {
            constexpr uint64_t kLossFlags =
                perfdata::kAuxFlagTruncated | perfdata::kAuxFlagPartial | perfdata::kAuxFlagCollision;
            if (r.auxFlags & kLossFlags)
                markers_.push_back(
                    {LossMarker::Aux, r.time, 0, cpu, r.pid, r.tid, r.auxFlags, r.auxOffset, r.auxSize});
            break;
        }
        default:
            break;
    }
}

void TraceModel::addCounter(const std::string& name, int cpu, const std::string& unit, uint64_t time,
                            double value) {
    see(time);
    auto it = std::find_if(counters_.begin(), counters_.end(),
                           [&](const CounterSeries& c) { return c.name == name && c.cpu == cpu; });
    if (it == counters_.end()) {
        counters_.push_back({name, cpu, unit, {}});
        it = counters_.end() - 1;
    }
    it->points.push_back({time, value});
}

void TraceModel::finish() {
    for (auto& [cpu, s] : cpuState_)
        closeSlice(cpu, last_);
    std::sort(slices_.begin(), slices_.end(), [](const RunSlice& a, const RunSlice& b) {
        return a.start < b.start || (a.start == b.start && a.cpu < b.cpu);
    });
}

std::vector<int> TraceModel::cpus() const {
    std::vector<int> v;
    for (auto& [cpu, _] : cpuState_)
        v.push_back(cpu);
    return v;
}

std::string TraceModel::threadName(int32_t tid) const {
    auto it = names_.find(tid);
    return it != names_.end() ? it->second : "tid " + std::to_string(tid);
}

std::string TraceModel::processName(int32_t pid) const {
    auto it = names_.find(pid);
    return it != names_.end() ? it->second : "pid " + std::to_string(pid);
}

}  // namespace auxscope
