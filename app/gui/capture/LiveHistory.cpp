// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/LiveHistory.h"

#include <algorithm>

namespace auxscope {

void LiveHistory::reset(size_t cpuCount) {
    cpus_.assign(cpuCount, {});
    lastAuxBytes_.assign(cpuCount, 0);
    latest_ = 0;
    lastT_ = 0;
}

void LiveHistory::add(double t, const std::vector<CpuStatsSnapshot>& cpus) {
    if (cpus_.size() != cpus.size()) reset(cpus.size());
    latest_ = t;
    const double dt = t - lastT_;
    lastT_ = t;
    for (size_t i = 0; i < cpus.size(); ++i) {
        const auto& s = cpus[i];
        const auto& x = s.totals;
        // AUX rate from the byte count between two refreshes.
        const double auxMibps =
            dt > 0 ? double(x.auxBytes - std::min(x.auxBytes, lastAuxBytes_[i])) / dt / (1024.0 * 1024.0) : 0;
        lastAuxBytes_[i] = x.auxBytes;
        cpus_[i].push_back({t, s.bytesPerSecond / (1024.0 * 1024.0), double(x.lostRecords + x.lostSamples),
                            auxMibps, double(x.auxTruncated + x.auxPartial + x.auxCollision)});
        while (!cpus_[i].empty() && cpus_[i].front().t < t - window_)
            cpus_[i].pop_front();
    }
}

QList<QPointF> LiveHistory::series(size_t cpu, double Point::*value) const {
    QList<QPointF> pts;
    pts.reserve(qsizetype(cpus_[cpu].size()));
    for (auto& p : cpus_[cpu])
        pts.append({p.t, p.*value});
    return pts;
}

QList<QPointF> LiveHistory::throughput(size_t cpu) const {
    return series(cpu, &Point::mibps);
}

QList<QPointF> LiveHistory::lost(size_t cpu) const {
    return series(cpu, &Point::lost);
}

QList<QPointF> LiveHistory::auxThroughput(size_t cpu) const {
    return series(cpu, &Point::auxMibps);
}

QList<QPointF> LiveHistory::auxLost(size_t cpu) const {
    return series(cpu, &Point::auxLost);
}

double LiveHistory::maxThroughput() const {
    double m = 0;
    for (auto& c : cpus_)
        for (auto& p : c)
            m = std::max({m, p.mibps, p.auxMibps});
    return m;
}

double LiveHistory::maxLost() const {
    double m = 0;
    for (auto& c : cpus_)
        for (auto& p : c)
            m = std::max({m, p.lost, p.auxLost});
    return m;
}

}  // namespace auxscope
