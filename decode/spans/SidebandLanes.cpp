// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/SidebandLanes.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "perfdata/PerfDataFormat.h"
#include "sideband/Sideband.h"
#include "sideband/SortPieces.h"
#include "spans/TimelineData.h"

namespace auxscope {

long SidebandLanes::threadIndex(int32_t tid) const {
    auto it = byTid_.find(tid);
    return it == byTid_.end() ? -1 : long(it->second);
}

const SidebandLanes::Process* SidebandLanes::process(int32_t pid) const {
    auto it = byPid_.find(pid);
    return it == byPid_.end() ? nullptr : &processes[it->second];
}

std::shared_ptr<const SidebandLanes> buildSidebandLanes(const Sideband& sideband,
                                                        const SidebandLanesOptions& options) {
    auto lanes = std::make_shared<SidebandLanes>();
    const TraceModel& model = sideband.model();
    lanes->events = options.events;
    lanes->functions = options.functions;
    if (options.stackAt) lanes->stacks = options.stacks;
    lanes->cpus = model.cpus();
    for (const auto& [cpu, slices] : sideband.switchSlices())
        if (!slices.empty()) lanes->cpusWithSwitches.push_back(cpu);

    auto pidOf = [&](int32_t pid, int32_t tid) {
        const int32_t known = sideband.pidOf(tid);
        return known > 0 ? known : (pid > 0 ? pid : -1);
    };
    struct Building {
        SidebandLanes::Thread thread;
        size_t runs = 0, samples = 0;  // counted first, so each vector is allocated once
        std::vector<const SidebandLanesOptions::ExtraSample*> extra;
    };
    std::unordered_map<int32_t, Building> threads;  // by tid (nodes: stable addresses)
    Building* last = nullptr;                       // consecutive records mostly name the same thread
    auto thread = [&](int32_t pid, int32_t tid) -> Building& {
        if (last && last->thread.tid == tid) return *last;
        auto [it, added] = threads.try_emplace(tid);
        if (added) {
            it->second.thread.tid = tid;
            it->second.thread.pid = pidOf(pid, tid);
            it->second.thread.name = model.threadName(tid);
        }
        last = &it->second;
        return it->second;
    };
    const auto& samples = model.samples();
    const uint64_t total = samples.size();
    for (const auto& [cpu, slices] : sideband.switchSlices())
        for (const Sideband::Slice& s : slices)
            if (s.tid > 0 && s.end >= s.start) ++thread(s.pid, s.tid).runs;
    for (const SampleEvent& s : samples)
        if (s.tid > 0) ++thread(s.pid, s.tid).samples;
    for (auto& [tid, b] : threads) {
        b.thread.runs.reserve(b.runs);
        b.thread.samples.reserve(b.samples);
    }
    // Runs: the switch timeline (or ITRACE_START's) as the decoders see it.
    for (const auto& [cpu, slices] : sideband.switchSlices()) {
        for (const Sideband::Slice& s : slices) {
            if (s.tid <= 0 || s.end < s.start) continue;
            SidebandLanes::Thread& t = thread(s.pid, s.tid).thread;
            const uint64_t end = s.end == UINT64_MAX ? std::max(model.lastTime(), s.start) : s.end;
            t.runs.push_back({s.start, end, cpu});
            t.runTime += end - s.start;
        }
    }
    // Samples, their IP resolved with the decoders' symbol code. Most samples
    // repeat an IP seen shortly before (a loop, a tracepoint's call site): a
    // small direct-mapped cache saves the lookups.
    struct CachedFunction {
        int32_t pid = 0;
        uint64_t ip = UINT64_MAX;
        uint32_t function = FunctionTable::kUnknown;
    };
    std::vector<CachedFunction> cache(options.functionAt ? 4096 : 0);
    for (uint64_t i = 0; i < total; ++i) {
        if (options.progress && i % 8192 == 0 && !options.progress(i, total)) return nullptr;
        const SampleEvent& s = samples[size_t(i)];
        ++lanes->sampleCount;
        if (s.tid <= 0) {
            ++lanes->idleSamples;
            continue;
        }
        SidebandLanes::Thread& t = thread(s.pid, s.tid).thread;
        SidebandLanes::Sample out;
        out.time = s.time;
        out.ip = s.ip;
        out.cpu = int16_t(s.cpu);
        out.event = int16_t(s.event);
        if (options.functionAt) {
            CachedFunction& c = cache[(s.ip ^ (s.ip >> 12) ^ uint64_t(uint32_t(t.pid)) * 0x9e3779b1u) & 4095];
            if (c.ip != s.ip || c.pid != t.pid) c = {t.pid, s.ip, options.functionAt(t.pid, s.ip)};
            out.function = c.function;
        }
        t.samples.push_back(out);
    }
    if (options.progress && !options.progress(total, total)) return nullptr;
    // Samples from outside the sideband, an event of their own.
    if (!options.extraSamples.empty()) {
        lanes->extraEvent = int(lanes->events.size());
        lanes->events.push_back(options.extraEvent);
        lanes->extraValueName = options.extraValueName;
        lanes->extraKeyNames = options.extraKeyNames;
        for (const SidebandLanesOptions::ExtraSample& s : options.extraSamples) {
            ++lanes->sampleCount;
            if (s.tid <= 0) {
                ++lanes->idleSamples;
                continue;
            }
            thread(s.pid, s.tid).extra.push_back(&s);
        }
    }

    // Threads by pid, then tid; processes by CPU time. Runs and samples come in
    // order per CPU: the CPUs' are merged.
    lanes->threads.reserve(threads.size());
    for (auto& [tid, b] : threads) {
        SidebandLanes::Thread& t = b.thread;
        sortCpuStreams(
            t.runs, [](const SidebandLanes::Run& r) { return r.cpu; },
            [](const SidebandLanes::Run& x, const SidebandLanes::Run& y) { return x.start < y.start; });
        sortCpuStreams(
            t.samples, [](const SidebandLanes::Sample& x) { return x.cpu; },
            [](const SidebandLanes::Sample& x, const SidebandLanes::Sample& y) { return x.time < y.time; });
        if (!b.extra.empty()) {
            // Merged in by time, with their values and keys beside them.
            std::stable_sort(b.extra.begin(), b.extra.end(),
                             [](const auto* x, const auto* y) { return x->time < y->time; });
            std::vector<SidebandLanes::Sample> merged;
            merged.reserve(t.samples.size() + b.extra.size());
            t.sampleValue.reserve(merged.capacity());
            t.sampleKey.reserve(merged.capacity());
            size_t i = 0;
            for (const SidebandLanesOptions::ExtraSample* e : b.extra) {
                for (; i < t.samples.size() && t.samples[i].time <= e->time; ++i) {
                    merged.push_back(t.samples[i]);
                    t.sampleValue.push_back(0);
                    t.sampleKey.push_back(0);
                }
                SidebandLanes::Sample out;
                out.time = e->time;
                out.ip = e->ip;
                out.cpu = e->cpu;
                out.event = int16_t(lanes->extraEvent);
                if (options.functionAt) out.function = options.functionAt(t.pid, e->ip);
                merged.push_back(out);
                t.sampleValue.push_back(e->value);
                t.sampleKey.push_back(e->key);
            }
            for (; i < t.samples.size(); ++i) {
                merged.push_back(t.samples[i]);
                t.sampleValue.push_back(0);
                t.sampleKey.push_back(0);
            }
            t.samples = std::move(merged);
        }
        if (options.stackAt && options.stacks) {
            t.sampleStacks.reserve(t.samples.size());
            for (const SidebandLanes::Sample& s : t.samples)
                t.sampleStacks.push_back(options.stackAt(t.tid, s.time, s.event));
        }
        lanes->threads.push_back(std::move(t));
    }
    std::sort(lanes->threads.begin(), lanes->threads.end(),
              [](const SidebandLanes::Thread& a, const SidebandLanes::Thread& b) {
                  return a.pid != b.pid ? a.pid < b.pid : a.tid < b.tid;
              });
    for (size_t i = 0; i < lanes->threads.size(); ++i) {
        const SidebandLanes::Thread& t = lanes->threads[i];
        lanes->byTid_[t.tid] = i;
        if (lanes->processes.empty() || lanes->processes.back().pid != t.pid) {
            SidebandLanes::Process p;
            p.pid = t.pid;
            if (t.pid > 0) {
                const ProcessSideband* ps = sideband.process(t.pid);
                p.name = ps && !ps->name.empty() ? ps->name : model.processName(t.pid);
            } else {
                p.name = "unknown process";
            }
            lanes->processes.push_back(std::move(p));
        }
        SidebandLanes::Process& p = lanes->processes.back();
        p.threads.push_back(i);
        p.runTime += t.runTime;
        p.samples += t.samples.size();
    }
    std::stable_sort(lanes->processes.begin(), lanes->processes.end(),
                     [](const SidebandLanes::Process& a, const SidebandLanes::Process& b) {
                         const uint64_t wa = a.runTime + a.samples, wb = b.runTime + b.samples;
                         if ((a.pid < 0) != (b.pid < 0)) return b.pid < 0;  // the unknown last
                         return wa != wb ? wa > wb : a.pid < b.pid;
                     });
    for (size_t i = 0; i < lanes->processes.size(); ++i)
        lanes->byPid_[lanes->processes[i].pid] = i;

    // Losses, per CPU by time.
    for (const LossEvent& l : model.losses()) {
        SidebandLanes::Loss out;
        out.kind = l.kind == LossEvent::Samples ? SidebandLanes::Loss::LostSamples
                                                : SidebandLanes::Loss::LostRecords;
        out.time = l.time;
        out.count = l.count;
        lanes->losses[l.cpu].push_back(out);
    }
    for (const LossMarker& m : model.lossMarkers()) {
        SidebandLanes::Loss out;
        out.kind = m.kind == LossMarker::Throttle ? SidebandLanes::Loss::Throttle : SidebandLanes::Loss::Aux;
        out.time = m.time;
        out.end = m.end;
        out.auxFlags = m.auxFlags, out.auxOffset = m.auxOffset, out.auxSize = m.auxSize;
        out.pid = m.pid, out.tid = m.tid;
        lanes->losses[m.cpu].push_back(out);
    }
    for (auto& [cpu, v] : lanes->losses)
        std::stable_sort(v.begin(), v.end(), [](const SidebandLanes::Loss& a, const SidebandLanes::Loss& b) {
            return a.time < b.time;
        });
    lanes->health = captureHealth(model.statsHistory());
    lanes->cpuNotes = cpuNotes(model.captureCpus());
    return lanes;
}

std::map<int, std::vector<SidebandLanes::Health>> captureHealth(const std::vector<StatsSample>& history) {
    std::map<int, std::vector<SidebandLanes::Health>> health;
    for (const StatsSample& s : history) {
        SidebandLanes::Health h;
        h.time = s.perfTime;
        h.ringFill = s.fillPeakPercent;
        h.auxFill = s.hasAux ? s.auxFillPercent : -1.0f;
        h.bytes = s.bytes;
        h.auxBytes = s.hasAux ? s.auxBytes : 0;
        h.lostRecords = s.lostRecords;
        h.lostSamples = s.lostSamples;
        h.auxLost = s.hasAux ? s.auxTruncated + s.auxPartial + s.auxCollision : 0;
        health[s.cpu].push_back(h);
    }
    for (auto& [cpu, points] : health) {
        std::stable_sort(
            points.begin(), points.end(),
            [](const SidebandLanes::Health& a, const SidebandLanes::Health& b) { return a.time < b.time; });
        for (size_t i = 1; i < points.size(); ++i) {
            const SidebandLanes::Health& p = points[i - 1];
            SidebandLanes::Health& h = points[i];
            const uint64_t before = p.bytes + p.auxBytes, now = h.bytes + h.auxBytes;
            if (h.time > p.time && now >= before)
                h.mibPerSec =
                    float(double(now - before) / (double(h.time - p.time) / 1e9) / (1024.0 * 1024.0));
        }
    }
    return health;
}

std::map<int, std::string> cpuNotes(const CaptureCpus& cpus) {
    std::map<int, std::string> notes;
    const std::set<int> online(cpus.online.begin(), cpus.online.end());
    if (!online.empty())
        for (int cpu = 0; cpu < cpus.available; ++cpu)
            if (!online.count(cpu)) notes[cpu] = "offline";
    if (!cpus.traced.empty()) {
        const std::set<int> traced(cpus.traced.begin(), cpus.traced.end());
        for (int cpu : online)
            if (!traced.count(cpu)) notes[cpu] = "not traced";
    }
    return notes;
}

void setTimelineLanes(TimelineData& data, std::shared_ptr<const SidebandLanes> lanes) {
    data.lanes = std::move(lanes);
    if (!data.lanes) return;
    for (const SidebandLanes::Thread& t : data.lanes->threads)
        if (!data.threadNames.count(t.tid)) data.threadNames[t.tid] = t.name;
    for (int cpu : data.lanes->cpus)
        if (cpu >= 0) data.cpus.try_emplace(cpu);
    for (const auto& [cpu, losses] : data.lanes->losses)
        if (!losses.empty()) data.cpus.try_emplace(cpu);
    // CPUs the capture did not see (offline, not traced) get a lane that says so.
    for (const auto& [cpu, note] : data.lanes->cpuNotes)
        if (cpu >= 0) data.cpus.try_emplace(cpu);
}

namespace {

std::string withCommas(uint64_t n) {
    std::string s = std::to_string(n);
    for (int i = int(s.size()) - 3; i > 0; i -= 3)
        s.insert(size_t(i), ",");
    return s;
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    return buf;
}

std::string duration(uint64_t ns) {
    char buf[48];
    if (ns < 1000)
        std::snprintf(buf, sizeof buf, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        std::snprintf(buf, sizeof buf, "%.2f µs", double(ns) / 1e3);
    else if (ns < 1000000000)
        std::snprintf(buf, sizeof buf, "%.3f ms", double(ns) / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%.4f s", double(ns) / 1e9);
    return buf;
}

}  // namespace

std::string lossKindName(const SidebandLanes::Loss& loss) {
    switch (loss.kind) {
        case SidebandLanes::Loss::LostRecords:
            return "LOST";
        case SidebandLanes::Loss::LostSamples:
            return "LOST_SAMPLES";
        case SidebandLanes::Loss::Throttle:
            return "THROTTLE";
        case SidebandLanes::Loss::Aux: {
            std::string s = "AUX ";
            bool first = true;
            auto flag = [&](uint64_t bit, const char* name) {
                if (!(loss.auxFlags & bit)) return;
                if (!first) s += "+";
                s += name;
                first = false;
            };
            flag(perfdata::kAuxFlagTruncated, "TRUNCATED");
            flag(perfdata::kAuxFlagPartial, "PARTIAL");
            flag(perfdata::kAuxFlagCollision, "COLLISION");
            return s;
        }
    }
    return "loss";
}

std::string describeLoss(const SidebandLanes::Loss& loss) {
    std::string s = lossKindName(loss) + ": ";
    switch (loss.kind) {
        case SidebandLanes::Loss::LostRecords:
            s += withCommas(loss.count) + (loss.count == 1 ? " record" : " records") +
                 " lost\nthe data ring was full: the kernel dropped what it could not write "
                 "(a bigger ring, -m, or fewer events)";
            break;
        case SidebandLanes::Loss::LostSamples:
            s += withCommas(loss.count) + (loss.count == 1 ? " sample" : " samples") +
                 " lost\nthe kernel could not record them (e.g. a sample too large for the ring)";
            break;
        case SidebandLanes::Loss::Throttle:
            s += loss.end ? "no samples for " + duration(loss.end - loss.time)
                          : std::string("no samples from here to the end of the recording");
            s += "\nthe kernel throttled the event: sampling took more CPU time than "
                 "kernel.perf_cpu_time_max_percent allows";
            break;
        case SidebandLanes::Loss::Aux:
            s += withCommas(loss.auxSize) + " AUX bytes at AUX offset " + hex(loss.auxOffset);
            if (loss.auxFlags & perfdata::kAuxFlagTruncated)
                s += "\nTRUNCATED: the AUX area was full, the trace stopped until there was room";
            if (loss.auxFlags & perfdata::kAuxFlagPartial)
                s += "\nPARTIAL: the hardware's trace in this record has holes";
            if (loss.auxFlags & perfdata::kAuxFlagCollision)
                s += "\nCOLLISION: samples collided, some were dropped";
            break;
    }
    return s;
}

}  // namespace auxscope
