// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which lanes a timeline shows and in what order, as a value: the processes
// collapsed, the CPUs, processes and threads pinned on top (in the order
// pinned), a filter (a name substring in any case, or a pid / tid), the
// processes' order, and whether the capture-health group is collapsed.
// TimelineState holds the one a timeline obeys; LaneBar keeps it per file.
#include <QString>
#include <QVariantMap>

#include <cstdint>
#include <set>
#include <vector>

namespace auxscope {

struct TimelineLaneState {
    enum class Sort { CpuTime, Pid, Name };
    struct Pin {
        enum Kind { Cpu, Process, Thread } kind = Thread;
        int32_t id = -1;  // CPU, pid or tid
        bool operator==(const Pin& o) const { return kind == o.kind && id == o.id; }
    };
    std::set<int32_t> collapsed;  // pids of collapsed processes
    std::vector<Pin> pinned;      // in the order pinned, shown in that order on top
    QString filter;               // name substring (any case) or a pid / tid
    Sort sort = Sort::CpuTime;
    bool healthCollapsed = false;  // the "Capture health" group

    bool isPinned(Pin::Kind kind, int32_t id) const;
    bool operator==(const TimelineLaneState& o) const {
        return collapsed == o.collapsed && pinned == o.pinned && filter == o.filter && sort == o.sort &&
               healthCollapsed == o.healthCollapsed;
    }
    bool operator!=(const TimelineLaneState& o) const { return !(*this == o); }
    // {"collapsed": [pids], "pinned": ["cpu:3", "pid:100", "tid:101"], "filter", "sort":
    // "cpu-time" | "pid" | "name", "healthCollapsed"}; fromVariant skips what it cannot read.
    QVariantMap toVariant() const;
    static TimelineLaneState fromVariant(const QVariantMap& map);
    static QString sortName(Sort sort);  // "CPU time", "pid", "name"
};

}  // namespace auxscope
