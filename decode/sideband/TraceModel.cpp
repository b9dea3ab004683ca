// SPDX-License-Identifier: GPL-3.0-or-later
#include "sideband/TraceModel.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TracingData.h"
#include "sideband/SortPieces.h"

namespace auxscope {

uint32_t SchedSwitchLayout::minSize() const {
    return std::max({prevPid + 4, prevState + prevStateSize, nextComm + nextCommSize, nextPid + 4});
}

namespace {

// "0-3,6" (sysfs and perf's sibling lists); what does not parse is skipped.
void addCpuList(const std::string& list, std::set<int>& out) {
    size_t i = 0;
    while (i < list.size()) {
        size_t end = list.find(',', i);
        if (end == std::string::npos) end = list.size();
        const std::string part = list.substr(i, end - i);
        i = end + 1;
        int a = -1, b = -1;
        if (std::sscanf(part.c_str(), "%d-%d", &a, &b) == 2) {
            for (int c = a; c <= b && c - a < 65536; ++c)
                out.insert(c);
        } else if (std::sscanf(part.c_str(), "%d", &a) == 1) {
            out.insert(a);
        }
    }
}

bool namesSchedSwitch(const std::string& name) {
    static constexpr std::string_view kName = "sched:sched_switch";
    return name.compare(0, kName.size(), kName) == 0 &&
           (name.size() == kName.size() || name[kName.size()] == ':');
}

template <typename T>
T readAt(std::span<const uint8_t> b, size_t at) {
    T v{};
    if (at + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + at, sizeof(T));
    return v;
}

}  // namespace

Expected<SchedSwitchLayout> schedSwitchLayout(const TraceEventFormat& fmt) {
    const TraceField *prevPid = fmt.field("prev_pid"), *prevState = fmt.field("prev_state"),
                     *nextComm = fmt.field("next_comm"), *nextPid = fmt.field("next_pid");
    std::string missing;
    for (auto [field, name] : {std::pair{prevPid, "prev_pid"}, std::pair{prevState, "prev_state"},
                               std::pair{nextComm, "next_comm"}, std::pair{nextPid, "next_pid"}})
        if (!field) missing += std::string(missing.empty() ? "" : ", ") + name;
    if (!missing.empty()) return makeError("its format lacks " + missing);
    if (prevPid->size != 4 || nextPid->size != 4 || prevState->size == 0 || prevState->size > 8 ||
        nextComm->size == 0)
        return makeError("its fields have sizes this reader does not know (prev_pid " +
                         std::to_string(prevPid->size) + ", next_pid " + std::to_string(nextPid->size) +
                         ", prev_state " + std::to_string(prevState->size) + ", next_comm " +
                         std::to_string(nextComm->size) + " bytes)");
    SchedSwitchLayout l;
    l.prevPid = prevPid->offset, l.nextPid = nextPid->offset;
    l.prevState = prevState->offset, l.prevStateSize = prevState->size;
    l.nextComm = nextComm->offset, l.nextCommSize = nextComm->size;
    return l;
}

void TraceModel::readHeaders(const PerfDataReader& file) {
    const PerfFeatures& f = file.features();
    std::optional<TracingData> tracing;
    std::string tracingProblem = "the file has no tracing data";
    auto parseTracing = [&](std::span<const uint8_t> bytes, const std::string& where) {
        auto td = parseTracingData(bytes, where);
        if (td)
            tracing = std::move(td.value());
        else
            tracingProblem = td.error().message;
    };
    for (const PerfRawFeature& raw : f.raw) {
        if (raw.id == perfdata::kFeatTracingData && !tracing)
            parseTracing(raw.bytes,
                         file.path() + ": HEADER_TRACING_DATA at offset " + std::to_string(raw.offset));
        if (raw.id == kFeatAuxscopeCaptureStats) {
            auto history =
                decodeCaptureStatsFeature(raw.bytes, file.path() + ": offset " + std::to_string(raw.offset));
            if (history)
                stats_ = std::move(history.value());
            else
                notes_.push_back(history.error().message);
        }
    }
    // The records perf and auxscope write before the first kernel record: the
    // tracing data in pipe mode, which CPUs each event was opened on (ID_INDEX),
    // the capture's CPU list (CPU_MAP).
    std::set<int> traced;
    auto walked = file.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type < perfdata::kRecordHeaderAttr) return false;
        const auto body = rec.bytes.size() >= 8 ? rec.bytes.subspan(8) : std::span<const uint8_t>();
        switch (rec.header.type) {
            case perfdata::kRecordHeaderTracingData:
                if (!tracing)
                    parseTracing(rec.payload, file.path() + ": TRACING_DATA record at offset " +
                                                  std::to_string(rec.fileOffset));
                break;
            case perfdata::kRecordIdIndex: {
                const uint64_t nr = readAt<uint64_t>(body, 0);
                for (uint64_t i = 0; i < nr && 8 + (i + 1) * sizeof(perfdata::IdIndexEntry) <= body.size();
                     ++i) {
                    const auto e =
                        readAt<perfdata::IdIndexEntry>(body, size_t(8 + i * sizeof(perfdata::IdIndexEntry)));
                    if (e.cpu != UINT64_MAX && e.cpu < 65536) traced.insert(int(e.cpu));
                }
                break;
            }
            case perfdata::kRecordCpuMap: {
                // perf_record_cpu_map_data: u16 type; 0: u16 nr, u16 cpu[nr]; 2: u8 any_cpu,
                // u8 pad, u16 first, u16 last. (1, a bit mask, changed layout across perf
                // versions: left to ID_INDEX.)
                const uint16_t type = readAt<uint16_t>(body, 0);
                if (type == 0) {
                    const uint16_t nr = readAt<uint16_t>(body, 2);
                    for (size_t i = 0; i < nr && 4 + (i + 1) * 2 <= body.size(); ++i) {
                        const uint16_t cpu = readAt<uint16_t>(body, 4 + i * 2);
                        if (cpu != UINT16_MAX) traced.insert(cpu);
                    }
                } else if (type == 2 && body.size() >= 8) {
                    const uint16_t first = readAt<uint16_t>(body, 4), last = readAt<uint16_t>(body, 6);
                    for (int c = first; c <= last; ++c)
                        traced.insert(c);
                }
                break;
            }
            default:
                break;
        }
        return true;
    });
    (void)walked;  // damage is the record walk's to report
    {
        const auto& byType = file.summary().recordsByType;
        auto count = [&](uint32_t type) {
            auto it = byType.find(type);
            return it == byType.end() ? size_t(0) : size_t(it->second);
        };
        const size_t samples = count(PERF_RECORD_SAMPLE);
        samples_.reserve(samples_.size() + samples);
        // The run slices, reserved too: grown by doubling, their copies took fresh
        // pages from the kernel at every step (a sixth of a sideband load's time on
        // a capture of context switches). A switch-in and a switch-out make a
        // slice; a sched_switch sample makes one (which samples those are is not
        // counted: all of them, address space only, for pages never touched are
        // never faulted in).
        const size_t fromRecords = (count(PERF_RECORD_SWITCH) + count(PERF_RECORD_SWITCH_CPU_WIDE)) / 2 + 64;
        const bool schedSwitch =
            std::find(isSwitchEvent_.begin(), isSwitchEvent_.end(), true) != isSwitchEvent_.end();
        slices_.reserve(slices_.size() + fromRecords + (schedSwitch ? samples : 0));
        if (schedSwitch) tpSlices_.reserve(tpSlices_.size() + samples);
    }
    for (const StatsSample& s : stats_)
        if (s.cpu >= 0) traced.insert(s.cpu);
    cpuInfo_.traced.assign(traced.begin(), traced.end());

    if (f.nrCpus) {
        cpuInfo_.available = int(f.nrCpus->available);
        cpuInfo_.onlineCount = int(f.nrCpus->online);
    }
    std::set<int> online;
    if (f.cpuTopology)
        for (const std::string& list : f.cpuTopology->threadSiblings)
            addCpuList(list, online);
    if (online.empty() && f.nrCpus && f.nrCpus->online == f.nrCpus->available)
        for (uint32_t c = 0; c < f.nrCpus->available && c < 65536; ++c)
            online.insert(int(c));
    cpuInfo_.online.assign(online.begin(), online.end());

    // sched:sched_switch events: their field layout from the tracing data, else
    // the kernel's (stable since 4.x on 64-bit machines).
    const auto& attrs = file.attrs();
    for (size_t i = 0; i < attrs.size(); ++i) {
        const PerfAttr& a = attrs[i];
        if (a.attr.type != PERF_TYPE_TRACEPOINT) continue;
        const TraceEventFormat* fmt = tracing ? tracing->findId(a.attr.config) : nullptr;
        if (fmt ? !(fmt->system == "sched" && fmt->name == "sched_switch") : !namesSchedSwitch(a.name))
            continue;
        SchedSwitchLayout l;
        std::string problem = tracingProblem;
        if (fmt) {
            auto fromFormat = schedSwitchLayout(*fmt);
            if (fromFormat)
                l = fromFormat.value(), problem.clear();
            else
                problem = fromFormat.error().message;
        }
        if (!problem.empty())
            notes_.push_back(file.path() + ": sched:sched_switch (event " + std::to_string(i) +
                             "): " + problem +
                             "; its fields are read where the kernel puts them on 64-bit machines "
                             "(prev_pid at 24, prev_state at 32, next_comm at 40, next_pid at 56)");
        setSchedSwitchEvent(int(i), l);
    }
}

void TraceModel::setSchedSwitchEvent(int eventIndex, const SchedSwitchLayout& layout) {
    if (eventIndex < 0) return;
    if (size_t(eventIndex) >= switchEvents_.size()) {
        switchEvents_.resize(size_t(eventIndex) + 1);
        isSwitchEvent_.resize(size_t(eventIndex) + 1);
    }
    switchEvents_[size_t(eventIndex)] = layout;
    isSwitchEvent_[size_t(eventIndex)] = true;
}

void TraceModel::tracepointSwitch(int cpu, const ParsedRecord& r, const SchedSwitchLayout& l) {
    if (r.raw.size() < l.minSize()) {
        ++tpShort_;
        return;
    }
    ++tpSwitches_;
    noteThread(r.pid, r.tid);  // the sample's own TID: the task switching out
    const int32_t nextPid = readAt<int32_t>(r.raw, l.nextPid);
    if (nextPid > 0 && nextPid != lastNamed_ && !names_->count(nextPid)) {
        lastNamed_ = nextPid;
        const char* comm = reinterpret_cast<const char*>(r.raw.data() + l.nextComm);
        assignIfChanged(switchNames_, nextPid, std::string_view(comm, strnlen(comm, l.nextCommSize)));
    }
    if (cpu < 0) return;
    CpuState& s = tpState_[cpu];
    if (s.running) {
        // The switch away from the thread this CPU's last switch named. When it
        // names another (a capture of some tasks only, or switches lost), the
        // switches between were not recorded: when that thread stopped is unknown.
        if (readAt<int32_t>(r.raw, l.prevPid) == s.tid)
            tpSlices_.push_back({s.since, std::max(r.time, s.since), cpu, s.pid, s.tid});
        else
            ++tpBroken_;
        s.running = false;
    }
    if (nextPid > 0) s = CpuState{true, -1, nextPid, r.time};
}

void TraceModel::see(uint64_t t) {
    if (t == 0) return;
    first_ = std::min(first_, t);
    last_ = std::max(last_, t);
}

void TraceModel::noteThread(int32_t pid, int32_t tid) {
    if (pid <= 0 || tid <= 0 || (tid == lastTid_ && pid == lastPid_)) return;
    assignIfChanged(pidOfTid_, tid, pid);
    lastTid_ = tid, lastPid_ = pid;
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
    if (cpu >= 0 && cpu != lastCpu_) {
        cpuState_.try_emplace(cpu);
        lastCpu_ = cpu;
    }
    switch (r.type) {
        case PERF_RECORD_SWITCH_CPU_WIDE:
        case PERF_RECORD_SWITCH:
            if (cpu >= 0) recordSwitchCpus_.insert(cpu);
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
            lastNamed_ = 0;
            assignIfChanged(names_, r.tid, r.comm);
            break;
        case PERF_RECORD_FORK:
            noteThread(r.pid, r.tid);
            noteThread(r.ppid, r.ptid);
            if (!names_->count(r.tid)) {
                auto parent = names_->find(r.ptid);
                if (parent != names_->end())
                    names_.mutable_()[r.tid] = std::string(parent->second);  // a new thread inherits its name
            }
            see(r.time);
            break;
        case PERF_RECORD_SAMPLE:
            if (r.event && r.event->descIndex >= 0 && size_t(r.event->descIndex) < isSwitchEvent_.size() &&
                isSwitchEvent_[size_t(r.event->descIndex)]) {
                tracepointSwitch(cpu, r, switchEvents_[size_t(r.event->descIndex)]);
                break;
            }
            noteThread(r.pid, r.tid);
            samples_.push_back({r.time, r.ip, cpu, r.pid, r.tid, r.event ? r.event->descIndex : -1});
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
    // sched_switch slices, on the CPUs that had no switch records.
    for (auto& [cpu, s] : tpState_)
        if (s.running) {
            tpSlices_.push_back({s.since, std::max(s.since, last_), cpu, s.pid, s.tid});
            s.running = false;
        }
    std::vector<char> tpCpu;
    for (int cpu : tpCpus_)
        if (cpu >= 0) tpCpu.resize(std::max(tpCpu.size(), size_t(cpu) + 1)), tpCpu[size_t(cpu)] = 1;
    int32_t lastTid = 0, lastPid = -1;
    for (RunSlice& slice : tpSlices_) {
        if (slice.cpu < 0) continue;
        if (recordSwitchCpus_.count(slice.cpu)) continue;
        if (slice.pid <= 0) {
            if (slice.tid != lastTid) {
                auto it = pidOfTid_->find(slice.tid);
                lastTid = slice.tid, lastPid = it != pidOfTid_->end() ? it->second : -1;
            }
            slice.pid = lastPid;
        }
        slices_.push_back(slice);
        if (size_t(slice.cpu) >= tpCpu.size()) tpCpu.resize(size_t(slice.cpu) + 1);
        tpCpu[size_t(slice.cpu)] = 1;
    }
    tpSlices_.clear();
    if (tpBroken_ && !brokenNoted_) {
        notes_.push_back(
            std::to_string(tpBroken_) +
            " sched_switch samples switch away from another thread than the one their CPU's "
            "previous switch named (a capture of some tasks only, or switches lost): the runs they "
            "would end are left out, their end is unknown");
        brokenNoted_ = true;
    }
    tpCpus_.clear();
    for (size_t cpu = 0; cpu < tpCpu.size(); ++cpu)
        if (tpCpu[cpu]) tpCpus_.push_back(int(cpu));
    // Each CPU's slices are in order already: merge the CPUs.
    sortCpuStreams(
        slices_, [](const RunSlice& s) { return s.cpu; },
        [](const RunSlice& a, const RunSlice& b) {
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
    auto it = names_->find(tid);
    if (it != names_->end()) return it->second;
    it = switchNames_->find(tid);
    return it != switchNames_->end() ? it->second : "tid " + std::to_string(tid);
}

std::string TraceModel::processName(int32_t pid) const {
    auto it = names_->find(pid);
    if (it != names_->end()) return it->second;
    it = switchNames_->find(pid);
    return it != switchNames_->end() ? it->second : "pid " + std::to_string(pid);
}

void TraceModel::sharedParts(std::vector<std::shared_ptr<const void>>& out) const {
    for (auto part :
         {std::shared_ptr<const void>(names_.shared()), std::shared_ptr<const void>(switchNames_.shared()),
          std::shared_ptr<const void>(pidOfTid_.shared())})
        if (part) out.push_back(std::move(part));
}

}  // namespace auxscope
