// SPDX-License-Identifier: GPL-3.0-or-later
#include "LiveHistory.h"

#include <algorithm>

namespace auxscope {

void LiveHistory::reset(size_t cpuCount) {
    cpus_.assign(cpuCount, {});
    latest_ = 0;
}

void LiveHistory::add(double t, const std::vector<CpuStatsSnapshot>& cpus) {
    if (cpus_.size() != cpus.size()) reset(cpus.size());
    latest_ = t;
    for (size_t i = 0; i < cpus.size(); ++i) {
        const auto& s = cpus[i];
        cpus_[i].push_back(
            {t, s.bytesPerSecond / (1024.0 * 1024.0), double(s.totals.lostRecords + s.totals.lostSamples)});
        while (!cpus_[i].empty() && cpus_[i].front().t < t - window_)
            cpus_[i].pop_front();
    }
}

QList<QPointF> LiveHistory::throughput(size_t cpu) const {
    QList<QPointF> pts;
    pts.reserve(qsizetype(cpus_[cpu].size()));
    for (auto& p : cpus_[cpu])
        pts.append({p.t, p.mibps});
    return pts;
}

QList<QPointF> LiveHistory::lost(size_t cpu) const {
    QList<QPointF> pts;
    pts.reserve(qsizetype(cpus_[cpu].size()));
    for (auto& p : cpus_[cpu])
        pts.append({p.t, p.lost});
    return pts;
}

double LiveHistory::maxThroughput() const {
    double m = 0;
    for (auto& c : cpus_)
        for (auto& p : c)
            m = std::max(m, p.mibps);
    return m;
}

double LiveHistory::maxLost() const {
    double m = 0;
    for (auto& c : cpus_)
        for (auto& p : c)
            m = std::max(m, p.lost);
    return m;
}

}  // namespace auxscope
