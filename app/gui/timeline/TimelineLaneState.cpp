// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineLaneState.h"

#include <QStringList>
#include <QVariantList>

#include <algorithm>

namespace auxscope {

bool TimelineLaneState::isPinned(Pin::Kind kind, int32_t id) const {
    return std::find(pinned.begin(), pinned.end(), Pin{kind, id}) != pinned.end();
}

QString TimelineLaneState::sortName(Sort sort) {
    switch (sort) {
        case Sort::Pid:
            return "pid";
        case Sort::Name:
            return "name";
        case Sort::CpuTime:
            break;
    }
    return "CPU time";
}

QVariantMap TimelineLaneState::toVariant() const {
    QVariantMap map;
    QVariantList pids;
    for (int32_t pid : collapsed)
        pids << pid;
    map["collapsed"] = pids;
    QStringList pins;
    for (const Pin& pin : pinned)
        pins << QString("%1:%2")
                    .arg(pin.kind == Pin::Cpu       ? "cpu"
                         : pin.kind == Pin::Process ? "pid"
                                                    : "tid")
                    .arg(pin.id);
    map["pinned"] = pins;
    map["filter"] = filter;
    map["sort"] = sort == Sort::Pid ? "pid" : sort == Sort::Name ? "name" : "cpu-time";
    map["healthCollapsed"] = healthCollapsed;
    return map;
}

TimelineLaneState TimelineLaneState::fromVariant(const QVariantMap& map) {
    TimelineLaneState state;
    for (const QVariant& v : map.value("collapsed").toList()) {
        bool ok = false;
        const int pid = v.toInt(&ok);
        if (ok) state.collapsed.insert(pid);
    }
    for (const QString& text : map.value("pinned").toStringList()) {
        const QString kind = text.section(':', 0, 0);
        bool ok = false;
        const int id = text.section(':', 1).toInt(&ok);
        if (!ok) continue;
        Pin pin;
        if (kind == "cpu")
            pin.kind = Pin::Cpu;
        else if (kind == "pid")
            pin.kind = Pin::Process;
        else if (kind == "tid")
            pin.kind = Pin::Thread;
        else
            continue;
        pin.id = id;
        if (!state.isPinned(pin.kind, pin.id)) state.pinned.push_back(pin);
    }
    state.filter = map.value("filter").toString();
    const QString sort = map.value("sort").toString();
    state.sort = sort == "pid" ? Sort::Pid : sort == "name" ? Sort::Name : Sort::CpuTime;
    state.healthCollapsed = map.value("healthCollapsed").toBool();
    return state;
}

}  // namespace auxscope
