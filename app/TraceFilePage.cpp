// SPDX-License-Identifier: GPL-3.0-or-later
#include "TraceFilePage.h"

#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <map>
#include <thread>

#include "CaptureStatsFeature.h"
#include "PerfDataReader.h"
#include "TraceExport.h"
#include "TraceModelLoader.h"

namespace auxscope {
namespace {

QString hex(uint64_t v) {
    return "0x" + QString::number(v, 16);
}

QString auxFlags(const PerfAuxStats& a) {
    QStringList parts;
    if (a.truncated) parts << QString("truncated %1").arg(a.truncated);
    if (a.partial) parts << QString("partial %1").arg(a.partial);
    if (a.collision) parts << QString("collision %1").arg(a.collision);
    if (a.overwrite) parts << QString("overwrite %1").arg(a.overwrite);
    if (a.formatRaw) parts << QString("raw CoreSight %1").arg(a.formatRaw);
    return parts.isEmpty() ? "no loss flags" : parts.join(", ");
}

}  // namespace

TraceFilePage::TraceFilePage(const QString& path, QWidget* parent) : QWidget(parent), path_(path) {
    status_ = new QLabel("Reading " + path + "…");
    status_->setObjectName("traceStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tree_ = new QTreeWidget;
    tree_->setObjectName("traceTree");
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({"", "Value"});
    tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    exportPerfetto_ = new QPushButton("Export to Perfetto…");
    exportPerfetto_->setObjectName("exportPerfetto");
    exportCsv_ = new QPushButton("Export CSV…");
    exportCsv_->setObjectName("exportCsv");
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(false);
    connect(exportPerfetto_, &QPushButton::clicked, this, [this] { exportTo("perfetto"); });
    connect(exportCsv_, &QPushButton::clicked, this, [this] { exportTo("csv"); });
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(status_, 1);
    buttons->addWidget(exportPerfetto_);
    buttons->addWidget(exportCsv_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(tree_, 1);

    // Read on a worker thread; hand the result back through the event loop.
    QPointer<TraceFilePage> self(this);
    const std::string file = path.toStdString();
    std::thread([self, file] {
        auto opened = PerfDataReader::open(file);
        auto result = std::make_shared<Expected<PerfDataReader>>(std::move(opened));
        QMetaObject::invokeMethod(
            qApp,
            [self, result] {
                if (!self) return;
                if (!result->ok()) {
                    self->failed_ = true;
                    self->status_->setText("Cannot open: " + QString::fromStdString(result->error().message));
                    self->status_->setStyleSheet("color: #b00020;");
                    emit self->statusMessage(self->status_->text());
                    emit self->loadFinished(false);
                    return;
                }
                self->reader_ = std::make_unique<PerfDataReader>(std::move(result->value()));
                self->populate();
                emit self->loadFinished(true);
            },
            Qt::QueuedConnection);
    }).detach();
}

TraceFilePage::~TraceFilePage() = default;

QTreeWidgetItem* TraceFilePage::section(const QString& title) {
    auto* item = new QTreeWidgetItem(tree_, {title});
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    return item;
}

void TraceFilePage::populate() {
    const PerfDataReader& r = *reader_;
    tree_->clear();
    auto add = [](QTreeWidgetItem* parent, const QString& key, const QString& value) {
        return new QTreeWidgetItem(parent, {key, value});
    };

    auto* file = section("File");
    add(file, "path", path_);
    add(file, "format", r.mode() == PerfDataMode::File ? "perf.data (file mode)" : "perf.data (pipe mode)");
    add(file, "size", QString::number(r.fileSize()) + " bytes");
    add(file, "data section",
        QString("%1 bytes at offset %2%3")
            .arg(r.dataSize())
            .arg(r.dataOffset())
            .arg(r.dataSizeRecovered() ? " (size recovered by scanning: the capture did "
                                         "not finish the file)"
                                       : ""));
    auto* issues = section(QString("Problems (%1)").arg(r.issues().size()));
    for (auto& issue : r.issues()) {
        auto* item = add(issues, issue.error ? "error" : "warning", QString::fromStdString(issue.message));
        if (issue.error) item->setForeground(1, QColor("#b00020"));
    }

    auto* events = section(QString("Events (%1)").arg(r.attrs().size()));
    for (auto& a : r.attrs()) {
        QString name = a.name.empty() ? QString("type %1 config %2").arg(a.attr.type).arg(hex(a.attr.config))
                                      : QString::fromStdString(a.name);
        add(events, name,
            QString("type %1, config %2, sample_type %3, %4 ids")
                .arg(a.attr.type)
                .arg(hex(a.attr.config))
                .arg(hex(a.attr.sample_type))
                .arg(a.ids.size()));
    }

    const PerfFeatures& f = r.features();
    auto* features = section(QString("Features (%1)").arg(f.present.size()));
    auto opt = [&](const char* key, const std::optional<std::string>& v) {
        if (v) add(features, key, QString::fromStdString(*v));
    };
    opt("hostname", f.hostname);
    opt("os release", f.osRelease);
    opt("perf version", f.version);
    opt("arch", f.arch);
    opt("cpu", f.cpuDesc);
    opt("cpuid", f.cpuId);
    if (f.nrCpus)
        add(features, "cpus", QString("%1 online of %2").arg(f.nrCpus->online).arg(f.nrCpus->available));
    if (f.totalMemKb) add(features, "memory", QString("%1 kB").arg(*f.totalMemKb));
    if (f.cmdline) {
        QStringList words;
        for (auto& w : *f.cmdline)
            words << QString::fromStdString(w);
        add(features, "command line", words.join(' '));
    }
    if (f.buildIds) add(features, "build ids", QString::number(f.buildIds->size()));
    if (f.auxtraceIndex) add(features, "AUXTRACE index", QString("%1 buffers").arg(f.auxtraceIndex->size()));
    if (f.compressed) add(features, "compressed", "zstd");
    QStringList present;
    for (unsigned id : f.present)
        present << QString::fromStdString(perfFeatureName(id));
    add(features, "sections", present.join(", "));

    const PerfDataSummary& s = r.summary();
    auto* records = section(QString("Records (%1)").arg(s.records));
    for (auto& [type, n] : s.recordsByType)
        add(records, QString::fromStdString(perfRecordTypeName(type)), QString::number(n));

    auto* cpus = section(QString("Per CPU (%1)").arg(s.cpus.size()));
    uint64_t lost = 0, lostSamples = 0;
    for (auto& [cpu, c] : s.cpus) {
        auto* item = add(cpus, cpu < 0 ? "no CPU" : QString("CPU %1").arg(cpu),
                         QString("%1 lost records, %2 lost samples").arg(c.lost).arg(c.lostSamples));
        lost += c.lost, lostSamples += c.lostSamples;
        if (c.lost || c.lostSamples) item->setForeground(1, QColor("#b00020"));
        for (auto& [type, n] : c.recordsByType)
            add(item, QString::fromStdString(perfRecordTypeName(type)), QString::number(n));
        if (c.aux.records)
            add(item, "AUX records",
                QString("%1 (%2 bytes): %3").arg(c.aux.records).arg(c.aux.bytes).arg(auxFlags(c.aux)));
        if (c.auxtraceBuffers)
            add(item, "AUXTRACE buffers",
                QString("%1 (%2 bytes)").arg(c.auxtraceBuffers).arg(c.auxtraceBytes));
    }
    for (const PerfRawFeature& raw : f.raw) {
        if (raw.id != kFeatAuxscopeCaptureStats) continue;
        auto history =
            decodeCaptureStatsFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        auto* stats = section("Capture statistics");
        if (!history) {
            add(stats, "error", QString::fromStdString(history.error().message))
                ->setForeground(1, QColor("#b00020"));
            continue;
        }
        std::map<int32_t, StatsSample> last;
        std::map<int32_t, float> maxFill;
        for (const StatsSample& st : *history) {
            last[st.cpu] = st;
            maxFill[st.cpu] = std::max(maxFill[st.cpu], st.fillPeakPercent);
        }
        for (auto& [cpu, st] : last)
            add(stats, QString("CPU %1").arg(cpu),
                QString("max data ring fill %1%, %2 lost records, kernel count of lost %3")
                    .arg(double(maxFill[cpu]), 0, 'f', 1)
                    .arg(st.lostRecords)
                    .arg(st.kernelLost));
    }
    if (!s.auxtraceErrors.empty()) {
        auto* errs = section(QString("AUX trace errors (%1)").arg(s.auxtraceErrors.size()));
        for (auto& e : s.auxtraceErrors)
            add(errs, QString("offset %1").arg(e.fileOffset), QString::fromStdString(e.message));
    }
    tree_->expandToDepth(0);
    QString text = QString("%1: %2 records on %3 CPUs, %4 lost records, %5 lost samples, %6 problems")
                       .arg(QFileInfo(path_).fileName())
                       .arg(s.records)
                       .arg(std::count_if(s.cpus.begin(), s.cpus.end(), [](auto& c) { return c.first >= 0; }))
                       .arg(lost)
                       .arg(lostSamples)
                       .arg(r.issues().size());
    status_->setText(text);
    if (r.hasErrors()) status_->setStyleSheet("color: #b00020;");
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(true);
    emit statusMessage(text);
}

bool TraceFilePage::exportTo(const QString& format, QString outPath) {
    if (!reader_) return false;
    const bool csv = format == "csv";
    if (outPath.isEmpty()) {
        QFileInfo in(path_);
        QString suggestion = in.dir().filePath(in.completeBaseName() + (csv ? ".csv" : ".pftrace"));
        outPath =
            QFileDialog::getSaveFileName(this, csv ? "Export CSV" : "Export to Perfetto", suggestion,
                                         csv ? "CSV (*.csv)" : "Perfetto trace (*.pftrace *.perfetto-trace)");
        if (outPath.isEmpty()) return false;
    }
    TraceModel model;
    auto loaded = loadTraceModel(*reader_, model);
    auto written =
        csv ? exportCsv(model, outPath.toStdString()) : exportPerfetto(model, outPath.toStdString());
    QString text;
    if (!written) {
        text = "Export failed: " + QString::fromStdString(written.error().message);
    } else {
        text = QString("Exported %1 run slices and %2 samples to %3")
                   .arg(model.runSlices().size())
                   .arg(model.samples().size())
                   .arg(outPath);
        if (!loaded) text += " (stopped early: " + QString::fromStdString(loaded.error().message) + ")";
    }
    status_->setText(text);
    status_->setStyleSheet(written && loaded ? "" : "color: #b00020;");
    emit statusMessage(text);
    return written.ok();
}

}  // namespace auxscope
