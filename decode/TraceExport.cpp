// SPDX-License-Identifier: GPL-3.0-or-later
#include "TraceExport.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

#include "ProtoWriter.h"

namespace auxscope {
namespace {

// Field numbers of Perfetto's trace protos (protos/perfetto/trace/...).
namespace pf {
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kTimestamp = 8, kSequenceId = 10, kTrackEvent = 11, kSequenceFlags = 13,
                   kTrackDescriptor = 60;
constexpr uint64_t kSeqIncrementalStateCleared = 1;
// TrackDescriptor
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kCounter = 8;
// ProcessDescriptor / ThreadDescriptor
constexpr uint32_t kPid = 1, kProcessName = 6, kTid = 2, kThreadName = 5;
// CounterDescriptor
constexpr uint32_t kUnit = 3;
constexpr uint64_t kUnitCount = 2;
// TrackEvent
constexpr uint32_t kDebugAnnotation = 4, kType = 9, kTrackUuid = 11, kCategories = 22, kEventName = 23,
                   kCounterValue = 30, kDoubleCounterValue = 44;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3, kCounterEvent = 4;
// DebugAnnotation
constexpr uint32_t kAnnName = 10, kAnnInt = 4, kAnnPointer = 7;
}  // namespace pf

constexpr uint64_t kSpaceProcess = 1ull << 40, kSpaceThread = 2ull << 40, kSpaceCpu = 3ull << 40,
                   kSpaceCounter = 4ull << 40;

class PacketStream {
public:
    explicit PacketStream(const std::string& path)
        : path_(path), out_(path, std::ios::binary | std::ios::trunc) {}
    bool opened() const { return bool(out_); }
    void write(ProtoWriter& packet) {
        packet.u64(pf::kSequenceId, 1);
        if (first_) {
            packet.u64(pf::kSequenceFlags, pf::kSeqIncrementalStateCleared);
            first_ = false;
        }
        frame_.clear();
        frame_.msg(pf::kTracePacket, packet);
        out_.write(frame_.bytes().data(), std::streamsize(frame_.bytes().size()));
    }
    Expected<void> close() {
        out_.close();
        if (!out_) return makeError(path_ + ": write failed: " + std::strerror(errno));
        return {};
    }

private:
    std::string path_;
    std::ofstream out_;
    ProtoWriter frame_;
    bool first_ = true;
};

void annotate(ProtoWriter& ev, const char* name, int64_t value, bool pointer = false) {
    ProtoWriter a;
    a.str(pf::kAnnName, name);
    if (pointer)
        a.u64(pf::kAnnPointer, uint64_t(value));
    else
        a.i64(pf::kAnnInt, value);
    ev.msg(pf::kDebugAnnotation, a);
}

struct Event {
    uint64_t ts;
    int rank;  // at equal time: slice ends, then counters/instants, then slice begins
    uint32_t kind;
    size_t index;
};

enum Kind : uint32_t { CpuBegin, CpuEnd, ThreadBegin, ThreadEnd, Sample, Loss, LossCounter, Counter };

}  // namespace

uint64_t perfettoProcessTrack(int32_t pid) {
    return kSpaceProcess | uint32_t(pid);
}
uint64_t perfettoThreadTrack(int32_t tid) {
    return kSpaceThread | uint32_t(tid);
}
uint64_t perfettoCpuTrack(int cpu) {
    return kSpaceCpu | uint32_t(cpu);
}

Expected<void> exportPerfetto(const TraceModel& model, const std::string& path,
                              const ExportOptions& options) {
    PacketStream stream(path);
    if (!stream.opened()) return makeError(path + ": cannot create: " + std::strerror(errno));
    const auto& slices = model.runSlices();
    const auto& samples = model.samples();
    const auto& losses = model.losses();
    const auto& counters = model.counters();
    auto pidOf = [&](int32_t tid, int32_t fallback) {
        auto it = model.processOf().find(tid);
        return it != model.processOf().end() ? it->second : (fallback > 0 ? fallback : tid);
    };

    // Descriptors first: every track an event refers to is defined before it.
    std::set<int32_t> tids, pids;
    for (auto& s : slices)
        tids.insert(s.tid);
    if (options.includeSamples)
        for (auto& s : samples)
            if (s.tid > 0) tids.insert(s.tid);
    for (int32_t tid : tids)
        pids.insert(pidOf(tid, -1));
    ProtoWriter packet, desc, sub;
    auto emitDescriptor = [&]() {
        packet.clear();
        packet.msg(pf::kTrackDescriptor, desc);
        stream.write(packet);
    };
    for (int32_t pid : pids) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, perfettoProcessTrack(pid));
        sub.i64(pf::kPid, pid);
        sub.str(pf::kProcessName, model.processName(pid));
        desc.msg(pf::kProcess, sub);
        emitDescriptor();
    }
    for (int32_t tid : tids) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, perfettoThreadTrack(tid));
        sub.i64(pf::kPid, pidOf(tid, -1));
        sub.i64(pf::kTid, tid);
        sub.str(pf::kThreadName, model.threadName(tid));
        desc.msg(pf::kThread, sub);
        emitDescriptor();
    }
    const auto cpus = model.cpus();
    for (int cpu : cpus) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoCpuTrack(cpu));
        desc.str(pf::kName, "CPU " + std::to_string(cpu));
        emitDescriptor();
    }
    // Idle-task samples from a file that records no CPU still need a track.
    if (options.includeSamples && std::any_of(samples.begin(), samples.end(),
                                              [](const SampleEvent& s) { return s.tid <= 0 && s.cpu < 0; })) {
        desc.clear();
        desc.u64(pf::kUuid, perfettoCpuTrack(-1));
        desc.str(pf::kName, "no CPU recorded");
        emitDescriptor();
    }
    // Counter tracks: lost records and lost samples per CPU, then the model's series.
    auto counterTrack = [](size_t n) { return kSpaceCounter | n; };
    std::vector<std::string> counterNames;
    for (int cpu : cpus)
        for (const char* what : {"lost records", "lost samples"})
            counterNames.push_back("CPU " + std::to_string(cpu) + " " + what);
    for (auto& c : counters)
        counterNames.push_back("CPU " + std::to_string(c.cpu) + " " + c.name);
    for (size_t i = 0; i < counterNames.size(); ++i) {
        desc.clear(), sub.clear();
        desc.u64(pf::kUuid, counterTrack(i));
        desc.str(pf::kName, counterNames[i]);
        if (i < 2 * cpus.size()) sub.u64(pf::kUnit, pf::kUnitCount);
        desc.msg(pf::kCounter, sub);
        emitDescriptor();
    }
    auto cpuIndex = [&](int cpu) { return size_t(std::find(cpus.begin(), cpus.end(), cpu) - cpus.begin()); };

    // A thread's run on one CPU may appear to start before its run on another
    // ended when the CPUs' clocks differ slightly; start the later one where the
    // earlier ended, so each thread track stays well nested.
    std::vector<uint64_t> threadStart(slices.size());
    {
        std::unordered_map<int32_t, uint64_t> lastEnd;
        for (size_t i = 0; i < slices.size(); ++i) {  // slices are sorted by start
            uint64_t& end = lastEnd[slices[i].tid];
            threadStart[i] = std::max(slices[i].start, end);
            end = std::max(end, slices[i].end);
        }
    }

    // Events, in time order.
    std::vector<Event> events;
    events.reserve(slices.size() * 4 + samples.size() + losses.size() * 2);
    for (size_t i = 0; i < slices.size(); ++i) {
        // A zero-length run cannot be nested unambiguously among slices that end
        // and begin at the same instant; it carries no duration, so it is left out
        // here (the CSV export keeps it).
        if (slices[i].end > slices[i].start) {
            events.push_back({slices[i].start, 2, CpuBegin, i});
            events.push_back({slices[i].end, 0, CpuEnd, i});
        }
        if (slices[i].end > threadStart[i]) {
            events.push_back({threadStart[i], 2, ThreadBegin, i});
            events.push_back({slices[i].end, 0, ThreadEnd, i});
        }
    }
    if (options.includeSamples)
        for (size_t i = 0; i < samples.size(); ++i)
            events.push_back({samples[i].time, 1, Sample, i});
    for (size_t i = 0; i < losses.size(); ++i) {
        events.push_back({losses[i].time, 1, Loss, i});
        events.push_back({losses[i].time, 1, LossCounter, i});
    }
    std::vector<std::pair<size_t, size_t>> counterPoints;  // (series, point)
    for (size_t s = 0; s < counters.size(); ++s)
        for (size_t p = 0; p < counters[s].points.size(); ++p) {
            events.push_back({counters[s].points[p].time, 1, Counter, counterPoints.size()});
            counterPoints.push_back({s, p});
        }
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return a.ts < b.ts || (a.ts == b.ts && a.rank < b.rank);
    });

    // Lost counters are cumulative per CPU and kind.
    std::vector<uint64_t> lostSoFar(2 * cpus.size(), 0);
    ProtoWriter ev;
    for (const Event& e : events) {
        packet.clear(), ev.clear();
        packet.u64(pf::kTimestamp, e.ts);
        switch (e.kind) {
            case CpuBegin:
            case ThreadBegin: {
                const RunSlice& s = slices[e.index];
                ev.u64(pf::kType, pf::kSliceBegin);
                if (e.kind == CpuBegin) {
                    ev.u64(pf::kTrackUuid, perfettoCpuTrack(s.cpu));
                    ev.str(pf::kEventName, model.threadName(s.tid));
                    annotate(ev, "pid", pidOf(s.tid, s.pid));
                    annotate(ev, "tid", s.tid);
                } else {
                    ev.u64(pf::kTrackUuid, perfettoThreadTrack(s.tid));
                    ev.str(pf::kEventName, "running on CPU " + std::to_string(s.cpu));
                    annotate(ev, "cpu", s.cpu);
                }
                ev.str(pf::kCategories, "sched");
                break;
            }
            case CpuEnd:
            case ThreadEnd: {
                const RunSlice& s = slices[e.index];
                ev.u64(pf::kType, pf::kSliceEnd);
                ev.u64(pf::kTrackUuid,
                       e.kind == CpuEnd ? perfettoCpuTrack(s.cpu) : perfettoThreadTrack(s.tid));
                break;
            }
            case Sample: {
                const SampleEvent& s = samples[e.index];
                ev.u64(pf::kType, pf::kInstant);
                // Samples of the idle task (tid 0) have no thread track: they go on
                // their CPU's track.
                const bool idle = s.tid <= 0;
                ev.u64(pf::kTrackUuid, idle ? perfettoCpuTrack(s.cpu) : perfettoThreadTrack(s.tid));
                ev.str(pf::kEventName, idle ? "sample (idle)" : "sample");
                ev.str(pf::kCategories, "sample");
                annotate(ev, "ip", int64_t(s.ip), true);
                annotate(ev, "cpu", s.cpu);
                break;
            }
            case Loss: {
                const LossEvent& l = losses[e.index];
                ev.u64(pf::kType, pf::kInstant);
                ev.u64(pf::kTrackUuid, perfettoCpuTrack(l.cpu));
                ev.str(pf::kEventName, (l.kind == LossEvent::Records ? "LOST records: " : "LOST samples: ") +
                                           std::to_string(l.count));
                ev.str(pf::kCategories, "loss");
                annotate(ev, "count", int64_t(l.count));
                break;
            }
            case LossCounter: {
                const LossEvent& l = losses[e.index];
                size_t n = 2 * cpuIndex(l.cpu) + (l.kind == LossEvent::Samples ? 1 : 0);
                lostSoFar[n] += l.count;
                ev.u64(pf::kType, pf::kCounterEvent);
                ev.u64(pf::kTrackUuid, counterTrack(n));
                ev.i64(pf::kCounterValue, int64_t(lostSoFar[n]));
                break;
            }
            case Counter: {
                auto [s, p] = counterPoints[e.index];
                ev.u64(pf::kType, pf::kCounterEvent);
                ev.u64(pf::kTrackUuid, counterTrack(2 * cpus.size() + s));
                ev.dbl(pf::kDoubleCounterValue, counters[s].points[p].value);
                break;
            }
        }
        packet.msg(pf::kTrackEvent, ev);
        stream.write(packet);
    }
    return stream.close();
}

namespace {

std::string csvField(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s)
        q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

}  // namespace

Expected<void> exportCsv(const TraceModel& model, const std::string& path, const ExportOptions& options) {
    std::ofstream out(path, std::ios::trunc);
    if (!out) return makeError(path + ": cannot create: " + std::strerror(errno));
    out << "kind,cpu,time_ns,end_ns,pid,tid,name,value,detail\n";
    auto pidOf = [&](int32_t tid, int32_t fallback) {
        auto it = model.processOf().find(tid);
        return it != model.processOf().end() ? it->second : fallback;
    };
    for (auto& s : model.runSlices())
        out << "run," << s.cpu << ',' << s.start << ',' << s.end << ',' << pidOf(s.tid, s.pid) << ',' << s.tid
            << ',' << csvField(model.threadName(s.tid)) << ",,\n";
    if (options.includeSamples)
        for (auto& s : model.samples()) {
            char ip[32];
            std::snprintf(ip, sizeof ip, "0x%llx", (unsigned long long)s.ip);
            out << "sample," << s.cpu << ',' << s.time << ",," << s.pid << ',' << s.tid << ','
                << csvField(s.tid > 0 ? model.threadName(s.tid) : std::string()) << ',' << s.event << ','
                << ip << '\n';
        }
    for (auto& l : model.losses())
        out << "lost," << l.cpu << ',' << l.time << ",,,,," << l.count << ','
            << (l.kind == LossEvent::Records ? "records" : "samples") << '\n';
    for (auto& c : model.counters())
        for (auto& p : c.points)
            out << "counter," << c.cpu << ',' << p.time << ",,,," << csvField(c.name) << ',' << p.value << ','
                << csvField(c.unit) << '\n';
    out.close();
    if (!out) return makeError(path + ": write failed: " + std::strerror(errno));
    return {};
}

}  // namespace auxscope
