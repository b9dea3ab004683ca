// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/LiveStatsView.h"

#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLineSeries>
#include <QProgressBar>
#include <QSplitter>
#include <QTableWidget>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace auxscope {
namespace {

enum Column {
    ColCpu,
    ColFill,
    ColAuxFill,
    ColAuxLoss,
    ColRate,
    ColRecords,
    ColLost,
    ColLostSamples,
    ColKernelLost,
    ColThrottle,
    ColErrors,
    ColCount
};

QChartView* makeChart(const QString& title, const QString& yTitle, QValueAxis*& x, QValueAxis*& y) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignRight);
    x = new QValueAxis;
    x->setTitleText("seconds since start");
    x->setLabelFormat("%.0f");
    x->setRange(0, 60);
    y = new QValueAxis;
    y->setTitleText(yTitle);
    y->setRange(0, 1);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(180);
    return view;
}

// Rounds an axis maximum up to 1, 2 or 5 times a power of ten.
double niceCeil(double v) {
    if (v <= 0) return 1;
    double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (v <= m * p) return m * p;
    return 10 * p;
}

}  // namespace

QString humanRate(double bytesPerSecond) {
    const char* units[] = {"B/s", "KiB/s", "MiB/s", "GiB/s"};
    int u = 0;
    while (bytesPerSecond >= 1024 && u < 3)
        bytesPerSecond /= 1024, ++u;
    return QString::number(bytesPerSecond, 'f', u ? 1 : 0) + " " + units[u];
}

LiveStatsView::LiveStatsView(QObject* parent) : QObject(parent) {
    cpuTable_ = new QTableWidget(0, ColCount);
    cpuTable_->setObjectName("cpuTable");
    cpuTable_->setHorizontalHeaderLabels({"CPU", "Data ring fill", "AUX ring fill", "AUX loss", "Throughput",
                                          "Records", "Lost records", "Lost samples", "Kernel lost",
                                          "Throttles", "Errors"});
    cpuTable_->horizontalHeaderItem(ColAuxLoss)
        ->setToolTip(
            "PERF_RECORD_AUX flags that mean lost trace: TRUNCATED (the AUX area was full; the event "
            "paused until re-enabled), PARTIAL and COLLISION; the tooltip of each cell splits them.");
    cpuTable_->horizontalHeaderItem(ColKernelLost)
        ->setToolTip(
            "The kernel's own count of records it could not write (PERF_FORMAT_LOST). It leads the "
            "LOST records, which the kernel writes once space is free again.");
    cpuTable_->horizontalHeaderItem(ColErrors)->setToolTip(
        "Records that did not parse (too short for their type, or a sample of no event of this "
        "capture: counted, and written to the file as they came), plus records a stop had to leave "
        "undelivered because the writer took nothing for 5 s. The tooltip of each cell splits them.");
    cpuTable_->verticalHeader()->setVisible(false);
    cpuTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    cpuTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);

    throughputView_ = makeChart("Throughput per CPU (last 60 s)", "MiB/s", throughputX_, throughputY_);
    throughputView_->setObjectName("throughputChart");
    lostView_ = makeChart("Lost records + samples, and AUX losses (dashed), per CPU (cumulative)", "lost",
                          lostX_, lostY_);
    lostView_->setObjectName("lostChart");
}

void LiveStatsView::showCpus(const std::vector<int>& cpus, QSplitter* split) {
    history_.reset(cpus.size());
    rebuildRows(cpus, split);
}

void LiveStatsView::begin(const std::vector<int>& cpus, bool aux, QSplitter* split) {
    history_.reset(cpus.size());
    hasAux_ = aux;
    rebuildRows(cpus, split);
    rebuildSeries(cpus);
}

void LiveStatsView::rebuildRows(const std::vector<int>& cpus, QSplitter* split) {
    cpuTable_->setRowCount(int(cpus.size()));
    for (int row = 0; row < int(cpus.size()); ++row) {
        cpuTable_->setItem(row, ColCpu, new QTableWidgetItem(QString::number(cpus[size_t(row)])));
        auto* fill = new QProgressBar;
        fill->setRange(0, 1000);
        fill->setFormat("%p%");
        fill->setValue(0);
        cpuTable_->setCellWidget(row, ColFill, fill);
        auto* aux = new QProgressBar;
        aux->setRange(0, 1000);
        aux->setValue(0);
        aux->setEnabled(false);
        aux->setFormat("no AUX event");
        aux->setTextVisible(true);
        cpuTable_->setCellWidget(row, ColAuxFill, aux);
        cpuTable_->setItem(row, ColAuxLoss, new QTableWidgetItem("-"));
        for (int col = ColRate; col < ColCount; ++col)
            cpuTable_->setItem(row, col, new QTableWidgetItem("0"));
    }
    // No taller than its rows: the rest of the page goes to the charts and the timeline.
    int height = cpuTable_->horizontalHeader()->height() + 2 * cpuTable_->frameWidth() + 2;
    for (int row = 0; row < cpuTable_->rowCount(); ++row)
        height += cpuTable_->rowHeight(row);
    cpuTable_->setMaximumHeight(height);
    // The splitter keeps the table's old share: hand what it cannot use to the timeline.
    if (split) {
        QList<int> sizes = split->sizes();
        if (sizes.size() == 3 && sizes[0] > height) {
            sizes[2] += sizes[0] - height;
            sizes[0] = height;
            split->setSizes(sizes);
        }
    }
}

void LiveStatsView::rebuildSeries(const std::vector<int>& cpus) {
    for (QChartView* view : {throughputView_, lostView_})
        view->chart()->removeAllSeries();
    throughputSeries_.clear();
    lostSeries_.clear();
    auxThroughputSeries_.clear();
    auxLostSeries_.clear();
    for (int cpu : cpus) {
        if (hasAux_) {
            auto dashed = [](QLineSeries* series) {
                QPen pen = series->pen();
                pen.setStyle(Qt::DashLine);
                series->setPen(pen);
            };
            auto* at = new QLineSeries;
            at->setName(QString("cpu %1 AUX").arg(cpu));
            throughputView_->chart()->addSeries(at);
            at->attachAxis(throughputX_);
            at->attachAxis(throughputY_);
            dashed(at);
            auxThroughputSeries_.push_back(at);
            auto* al = new QLineSeries;
            al->setName(QString("cpu %1 AUX").arg(cpu));
            lostView_->chart()->addSeries(al);
            al->attachAxis(lostX_);
            al->attachAxis(lostY_);
            dashed(al);
            auxLostSeries_.push_back(al);
        }
        auto* t = new QLineSeries;
        t->setName(QString("cpu %1").arg(cpu));
        throughputView_->chart()->addSeries(t);
        t->attachAxis(throughputX_);
        t->attachAxis(throughputY_);
        throughputSeries_.push_back(t);
        auto* l = new QLineSeries;
        l->setName(QString("cpu %1").arg(cpu));
        lostView_->chart()->addSeries(l);
        l->attachAxis(lostX_);
        l->attachAxis(lostY_);
        lostSeries_.push_back(l);
    }
}

void LiveStatsView::show(const std::vector<CpuStatsSnapshot>& snaps, double t) {
    history_.add(t, snaps);

    for (int row = 0; row < int(snaps.size()) && row < cpuTable_->rowCount(); ++row) {
        const auto& s = snaps[size_t(row)];
        if (auto* bar = qobject_cast<QProgressBar*>(cpuTable_->cellWidget(row, ColFill))) {
            bar->setValue(int(s.fillPeakPercent * 10));
            bar->setToolTip(QString("peak fill in the last interval of a %1 ring")
                                .arg(humanRate(double(s.ringBytes)).chopped(2)));
        }
        if (auto* bar = qobject_cast<QProgressBar*>(cpuTable_->cellWidget(row, ColAuxFill));
            bar && s.hasAux) {
            bar->setEnabled(true);
            bar->setFormat("%p%");
            bar->setValue(int(s.auxFillPercent * 10));
            bar->setToolTip(QString("%1 of a %2 AUX area; %3 chunks drained, %4 re-enables")
                                .arg(humanRate(double(s.totals.auxBytes)).chopped(2))
                                .arg(humanRate(double(s.auxRingBytes)).chopped(2))
                                .arg(s.totals.auxChunks)
                                .arg(s.totals.auxReenables));
        }
        const auto& x = s.totals;
        auto* auxLoss = cpuTable_->item(row, ColAuxLoss);
        auxLoss->setText(s.hasAux ? QString::number(x.auxTruncated + x.auxPartial + x.auxCollision) : "-");
        auxLoss->setToolTip(QString("TRUNCATED %1, PARTIAL %2, COLLISION %3, OVERWRITE %4 (snapshot mode), "
                                    "AUX errors %5")
                                .arg(x.auxTruncated)
                                .arg(x.auxPartial)
                                .arg(x.auxCollision)
                                .arg(x.auxOverwrite)
                                .arg(x.auxErrors));
        cpuTable_->item(row, ColRate)->setText(humanRate(s.bytesPerSecond));
        cpuTable_->item(row, ColRecords)->setText(QString::number(s.totals.records));
        cpuTable_->item(row, ColLost)->setText(QString::number(s.totals.lostRecords));
        cpuTable_->item(row, ColLostSamples)->setText(QString::number(s.totals.lostSamples));
        cpuTable_->item(row, ColKernelLost)
            ->setText(s.kernelLostAvailable ? QString::number(s.totals.kernelLost) : "n/a");
        cpuTable_->item(row, ColThrottle)->setText(QString::number(s.totals.throttles));
        auto* errors = cpuTable_->item(row, ColErrors);
        errors->setText(QString::number(x.parseErrors + x.undeliveredRecords));
        errors->setToolTip(QString("did not parse: %1 (a sample of no event of the capture: %2, too short "
                                   "for its type: %3); corrupt bytes skipped: %4; unknown record types: %5\n"
                                   "left undelivered at the stop (the writer took nothing for 5 s): %6 "
                                   "records, %7 bytes, %8 AUX bytes")
                               .arg(x.parseErrors)
                               .arg(x.parseErrorsUnknownEvent)
                               .arg(x.parseErrors - std::min(x.parseErrors, x.parseErrorsUnknownEvent))
                               .arg(x.corruptBytes)
                               .arg(x.unknownTypes)
                               .arg(x.undeliveredRecords)
                               .arg(x.undeliveredBytes)
                               .arg(x.undeliveredAuxBytes));
    }
    for (size_t i = 0; i < throughputSeries_.size() && i < history_.cpuCount(); ++i) {
        throughputSeries_[i]->replace(history_.throughput(i));
        lostSeries_[i]->replace(history_.lost(i));
    }
    for (size_t i = 0; i < auxThroughputSeries_.size() && i < history_.cpuCount(); ++i) {
        auxThroughputSeries_[i]->replace(history_.auxThroughput(i));
        auxLostSeries_[i]->replace(history_.auxLost(i));
    }
    const double lo = std::max(0.0, t - history_.window());
    const double hi = std::max(history_.window(), t);
    throughputX_->setRange(lo, hi);
    lostX_->setRange(lo, hi);
    throughputY_->setRange(0, niceCeil(history_.maxThroughput()));
    lostY_->setRange(0, niceCeil(history_.maxLost()));
}

}  // namespace auxscope
