// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/LaneOrder.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace auxscope {

LaneOrder arrangeLanes(const TimelineData& data, const TimelineLaneState& state) {
    constexpr size_t kNoThread = LaneEntry::kNoThread;
    LaneOrder order;
    auto& out = order.entries;
    const SidebandLanes* lanes = data.lanes.get();
    bool pinning = false;  // laying out the pinned section
    auto space = [&](int pixels) {
        LaneEntry e;
        e.space = pixels;
        e.pinned = pinning;
        out.push_back(e);
    };
    // A thread: its lane (with sideband lanes: its runs and samples), then its flame chart.
    auto addThread = [&](long lane, size_t span) {
        LaneEntry e;
        e.kind = LaneEntry::Thread;
        e.thread = span;
        e.lane = lane;
        e.pinned = pinning;
        out.push_back(e);
        ++order.threadsShown;
    };
    // The CPUs: those with lanes, and those the file names as offline or not traced.
    std::set<int> cpus;
    for (const auto& [cpu, slices] : data.cpus)
        cpus.insert(cpu);
    if (lanes)
        for (const auto& [cpu, note] : lanes->cpuNotes)
            cpus.insert(cpu);
    auto addCpu = [&](int cpu) {
        LaneEntry e;
        e.kind = LaneEntry::Cpu;
        e.cpu = cpu;
        e.pinned = pinning;
        out.push_back(e);
    };

    // Threads in groups: a process (its lanes' threads, and threads with spans
    // the sideband has no lane for) or, without lanes, one flat group.
    struct Member {
        int32_t tid = -1, pid = -1;
        long lane = -1;
        size_t span = kNoThread;
        bool operator<(const Member& o) const { return tid < o.tid; }
    };
    struct Group {
        int32_t pid = -1;
        long process = -1;  // index into lanes->processes
        std::string name;
        bool header = true;
        std::vector<Member> members;
    };
    std::vector<Group> groups;
    if (!lanes) {
        Group flat;
        flat.header = false;
        for (size_t i = 0; i < data.threads.size(); ++i)
            flat.members.push_back({data.threads[i].tid, data.threads[i].pid, -1, i});
        groups.push_back(std::move(flat));
    } else {
        // Grouped by process, in the lanes' order; threads with spans join their
        // process's lane, or a group of their own when the sideband has none for them.
        std::unordered_map<int32_t, size_t> spanOf;
        std::map<int32_t, std::vector<size_t>> spanOnly;  // by pid
        for (size_t i = 0; i < data.threads.size(); ++i) {
            spanOf[data.threads[i].tid] = i;
            if (lanes->threadIndex(data.threads[i].tid) < 0) spanOnly[data.threads[i].pid].push_back(i);
        }
        for (size_t p = 0; p < lanes->processes.size(); ++p) {
            const SidebandLanes::Process& proc = lanes->processes[p];
            Group g;
            g.pid = proc.pid, g.process = long(p), g.name = proc.name;
            for (size_t li : proc.threads) {
                const int32_t tid = lanes->threads[li].tid;
                auto found = spanOf.find(tid);
                g.members.push_back(
                    {tid, proc.pid, long(li), found == spanOf.end() ? kNoThread : found->second});
            }
            if (auto extra = spanOnly.find(proc.pid); extra != spanOnly.end()) {
                for (size_t i : extra->second)
                    g.members.push_back({data.threads[i].tid, proc.pid, -1, i});
                spanOnly.erase(extra);
            }
            std::sort(g.members.begin(), g.members.end());
            groups.push_back(std::move(g));
        }
        for (const auto& [pid, spans] : spanOnly) {
            Group g;
            g.pid = pid;
            for (size_t i : spans)
                g.members.push_back({data.threads[i].tid, pid, -1, i});
            groups.push_back(std::move(g));
        }
    }
    auto threadName = [&](const Member& m) -> const std::string& {
        return m.lane >= 0 ? lanes->threads[size_t(m.lane)].name : data.threads[m.span].name;
    };
    for (const Group& g : groups)
        order.threadsTotal += int(g.members.size());
    if (state.sort == TimelineLaneState::Sort::Pid) {
        std::stable_sort(groups.begin(), groups.end(),
                         [](const Group& a, const Group& b) { return a.pid < b.pid; });
    } else if (state.sort == TimelineLaneState::Sort::Name) {
        std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
            const int c =
                QString::fromStdString(a.name).compare(QString::fromStdString(b.name), Qt::CaseInsensitive);
            return c != 0 ? c < 0 : a.pid < b.pid;
        });
    }

    // The filter: a name substring in any case, or a number naming a pid or tid.
    const QString filter = state.filter.trimmed();
    bool isNumber = false;
    const int32_t number = filter.toInt(&isNumber);
    auto nameMatches = [&](const std::string& name) {
        return QString::fromStdString(name).contains(filter, Qt::CaseInsensitive);
    };
    auto memberMatches = [&](const Member& m) {
        return filter.isEmpty() || nameMatches(threadName(m)) ||
               (isNumber && (m.tid == number || m.pid == number));
    };
    auto groupMatches = [&](const Group& g) {
        if (filter.isEmpty() || !g.header) return true;
        if (nameMatches(g.name) || (isNumber && g.pid == number)) return true;
        return std::any_of(g.members.begin(), g.members.end(), memberMatches);
    };

    std::set<int32_t> placedTids, placedPids;
    std::set<int> placedCpus;
    auto addGroup = [&](const Group& g) {
        if (g.header) {
            LaneEntry e;
            e.kind = LaneEntry::ProcessHeader;
            e.pid = g.pid;
            e.process = g.process;
            e.pinned = pinning;
            out.push_back(e);
            placedPids.insert(g.pid);
            if (state.collapsed.count(g.pid)) {
                space(2);
                return;
            }
        }
        bool any = false;
        for (const Member& m : g.members) {
            if (placedTids.count(m.tid)) continue;
            // A flat list (no process headers) is filtered thread by thread.
            if (!g.header && !pinning && !memberMatches(m)) continue;
            placedTids.insert(m.tid);
            addThread(m.lane, m.span);
            any = true;
        }
        if (g.header || any) space(2);
    };

    // Pinned lanes first, in the order pinned; they are not repeated below.
    pinning = true;
    for (const TimelineLaneState::Pin& pin : state.pinned) {
        if (pin.kind == TimelineLaneState::Pin::Cpu) {
            if (cpus.count(pin.id) && placedCpus.insert(pin.id).second) addCpu(pin.id);
        } else if (pin.kind == TimelineLaneState::Pin::Process) {
            for (const Group& g : groups)
                if (g.header && g.pid == pin.id && !placedPids.count(g.pid)) {
                    addGroup(g);
                    break;
                }
        } else if (!placedTids.count(pin.id)) {
            for (const Group& g : groups)
                for (const Member& m : g.members)
                    if (m.tid == pin.id && placedTids.insert(m.tid).second) addThread(m.lane, m.span);
        }
    }
    if (!out.empty()) space(6);
    pinning = false;

    for (int cpu : cpus)
        if (!placedCpus.count(cpu)) addCpu(cpu);
    space(4);
    // Capture health: a group with a lane per CPU.
    if (lanes && !lanes->health.empty()) {
        LaneEntry header;
        header.kind = LaneEntry::HealthHeader;
        out.push_back(header);
        if (!state.healthCollapsed)
            for (const auto& [cpu, points] : lanes->health) {
                LaneEntry e;
                e.kind = LaneEntry::Health;
                e.cpu = cpu;
                out.push_back(e);
            }
        space(6);
    }
    for (const Group& g : groups) {
        if (g.header && placedPids.count(g.pid)) continue;
        if (!groupMatches(g)) continue;
        addGroup(g);
    }
    return order;
}

}  // namespace auxscope
