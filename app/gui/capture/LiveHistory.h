// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The last N seconds of per-CPU statistics, as chart points. Fed from
// CaptureStats snapshots on the GUI thread; never touches the drain thread.
#include <QList>
#include <QPointF>

#include <deque>
#include <vector>

#include "CaptureStats.h"

namespace auxscope {

class LiveHistory {
public:
    explicit LiveHistory(double windowSeconds = 60) : window_(windowSeconds) {}

    void reset(size_t cpuCount);
    // `t` is seconds since capture start.
    void add(double t, const std::vector<CpuStatsSnapshot>& cpus);

    size_t cpuCount() const { return cpus_.size(); }
    // Points (t, MiB/s) and (t, lost records + lost samples, cumulative).
    QList<QPointF> throughput(size_t cpu) const;
    QList<QPointF> lost(size_t cpu) const;
    // AUX: (t, MiB/s drained) and (t, TRUNCATED + PARTIAL + COLLISION records, cumulative).
    QList<QPointF> auxThroughput(size_t cpu) const;
    QList<QPointF> auxLost(size_t cpu) const;
    double latest() const { return latest_; }
    double window() const { return window_; }
    double maxThroughput() const;
    double maxLost() const;

private:
    struct Point {
        double t, mibps, lost, auxMibps, auxLost;
    };
    QList<QPointF> series(size_t cpu, double Point::*value) const;

    double window_;
    double latest_ = 0;
    std::vector<std::deque<Point>> cpus_;
    std::vector<uint64_t> lastAuxBytes_;
    double lastT_ = 0;
};

}  // namespace auxscope
