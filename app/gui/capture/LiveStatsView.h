// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture page's live statistics: a row per CPU (data ring and AUX ring
// fill bars, AUX loss, throughput, records, lost records and samples, the
// kernel's own lost count, throttles) and two charts over the last 60 s
// (throughput, and cumulative losses; AUX series dashed), fed the lock-free
// statistics snapshots the page's 10 Hz timer reads.
#include <QObject>
#include <QString>

#include <vector>

#include "CaptureStats.h"
#include "gui/capture/LiveHistory.h"

class QChartView;
class QLineSeries;
class QSplitter;
class QTableWidget;
class QValueAxis;

namespace auxscope {

// 1536 -> "1.5 KiB/s" (binary units).
QString humanRate(double bytesPerSecond);

class LiveStatsView : public QObject {
    Q_OBJECT
public:
    explicit LiveStatsView(QObject* parent = nullptr);

    QTableWidget* table() const { return cpuTable_; }
    QChartView* throughputChart() const { return throughputView_; }
    QChartView* lostChart() const { return lostView_; }
    const LiveHistory& history() const { return history_; }

    // The rows of `cpus` (before any capture: the online CPUs), their history cleared; the
    // table is no taller than its rows and `split` hands the rest to its last pane.
    void showCpus(const std::vector<int>& cpus, QSplitter* split);
    // A capture of `cpus` begins: rows, history and chart series afresh (`aux`: AUX series too).
    void begin(const std::vector<int>& cpus, bool aux, QSplitter* split);
    // The snapshots at `t` seconds since the capture began.
    void show(const std::vector<CpuStatsSnapshot>& snaps, double t);

private:
    void rebuildRows(const std::vector<int>& cpus, QSplitter* split);
    void rebuildSeries(const std::vector<int>& cpus);

    QTableWidget* cpuTable_ = nullptr;
    QChartView* throughputView_ = nullptr;
    QChartView* lostView_ = nullptr;
    QValueAxis* throughputX_ = nullptr;
    QValueAxis* throughputY_ = nullptr;
    QValueAxis* lostX_ = nullptr;
    QValueAxis* lostY_ = nullptr;
    std::vector<QLineSeries*> throughputSeries_;
    std::vector<QLineSeries*> lostSeries_;
    std::vector<QLineSeries*> auxThroughputSeries_;
    std::vector<QLineSeries*> auxLostSeries_;
    bool hasAux_ = false;
    LiveHistory history_;
};

}  // namespace auxscope
