// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceExporter.h"

#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>

#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAuxTrace.h"
#include "auxtrace/SpeExportNames.h"
#include "export/TraceExport.h"
#include "gui/common/WindowMemory.h"
#include "gui/trace/TraceText.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/TraceModelLoader.h"
#include "spans/TimelineData.h"

namespace auxscope {

TraceExporter::TraceExporter(QWidget* owner, const QString& input)
    : QObject(owner), owner_(owner), input_(input) {
    progress_ = new QProgressBar;
    progress_->setObjectName("exportProgress");
    progress_->setMaximumWidth(160);
    progress_->setFormat("Export %p%");
    progress_->setVisible(false);
    cancel_ = new QPushButton("Cancel export");
    cancel_->setObjectName("exportCancel");
    cancel_->setVisible(false);
    connect(cancel_, &QPushButton::clicked, this, &TraceExporter::cancel);
}

void TraceExporter::cancel() {
    if (cancelFlag_) cancelFlag_->store(true);
}

bool TraceExporter::exportRange(const QString& format, uint64_t begin, uint64_t end, QString outPath,
                                std::shared_ptr<PerfDataReader> reader,
                                std::shared_ptr<const TimelineData> data,
                                std::shared_ptr<AuxTraceSession> session, Done done) {
    if (!reader || end <= begin || exporting_) return false;
    const bool csv = format == "csv";
    const uint64_t origin = data ? data->begin : 0;
    if (outPath.isEmpty()) {
        QFileInfo in(input_);
        const QString suffix = QString("-%1-%2ms")
                                   .arg(double(begin - origin) / 1e6, 0, 'f', 3)
                                   .arg(double(end - origin) / 1e6, 0, 'f', 3);
        QString suggestion = in.dir().filePath(in.completeBaseName() + suffix + (csv ? ".csv" : ".pftrace"));
        outPath = QFileDialog::getSaveFileName(
            owner_, csv ? "Export the range as CSV" : "Export the range to Perfetto",
            window_memory::inLastFolder("export", suggestion),
            csv ? "CSV (*.csv)" : "Perfetto trace (*.pftrace *.perfetto-trace)");
        if (outPath.isEmpty()) return false;
        window_memory::setLastFolder("export", outPath);
    }
    // The worker keeps what it reads alive: the reader, the timeline's data, the session.
    auto loadedError = std::make_shared<QString>();
    auto spanCount = std::make_shared<uint64_t>(0);
    ExportJob job = [reader, data, session, begin, end, csv, loadedError, spanCount,
                     out = outPath.toStdString()](const std::function<bool(uint64_t, uint64_t)>& progress) {
        TraceModel model;
        auto loaded = loadTraceModel(*reader, model);
        if (!loaded) *loadedError = QString::fromStdString(loaded.error().message);
        ExportOptions options;
        options.begin = begin, options.end = end;
        options.progress = progress;
        // The timeline's decoded spans that overlap the range (the exporter clips them).
        std::map<int32_t, SpanStore> threads;
        ExportSpans spans;
        if (data && data->functions) {
            for (const auto& t : data->threads)
                if (!t.spans.empty()) threads[t.tid].appendStore(t.spans, begin, end);
            for (const auto& [tid, store] : threads)
                *spanCount += store.size();
            spans.threads = &threads;
            spans.functions = data->functions.get();
            spans.pidOf = [session](int32_t tid) { return session ? session->sideband().pidOf(tid) : -1; };
            options.spans = &spans;
        }
        return csv ? exportCsv(model, out, options) : exportPerfetto(model, out, options);
    };
    return start(std::move(job), [done, begin, end, origin, outPath, loadedError,
                                  spanCount](const Expected<void>& written) {
        QString text = written ? QString("Exported +%1 … +%2 (%3 spans overlapping it, clipped) to %4")
                                     .arg(relativeTime(begin, origin))
                                     .arg(relativeTime(end, origin))
                                     .arg(*spanCount)
                                     .arg(outPath)
                               : "Export failed: " + QString::fromStdString(written.error().message);
        if (written && !loadedError->isEmpty()) text += " (stopped early: " + *loadedError + ")";
        done(text, written.ok(), !written || !loadedError->isEmpty());
    });
}

bool TraceExporter::start(ExportJob job, std::function<void(const Expected<void>&)> done) {
    if (exporting_) return false;
    exporting_ = true;
    cancelFlag_ = std::make_shared<std::atomic<bool>>(false);
    progress_->setRange(0, 0);  // busy until the first report
    progress_->setVisible(true);
    cancel_->setVisible(true);
    emit busyChanged(true);
    QPointer<TraceExporter> self(this);
    std::thread([self, job = std::move(job), done = std::move(done), cancel = cancelFlag_] {
        auto progress = [self, cancel](uint64_t written, uint64_t total) {
            const int permille = total ? int(std::min<uint64_t>(1000, written * 1000 / total)) : 0;
            QMetaObject::invokeMethod(
                qApp,
                [self, permille] {
                    if (!self || !self->exporting_) return;
                    self->progress_->setRange(0, 1000);
                    self->progress_->setValue(permille);
                },
                Qt::QueuedConnection);
            return !cancel->load();
        };
        auto written = job(progress);  // cancelled after its last report: it is complete, and kept
        QMetaObject::invokeMethod(
            qApp,
            [self, done, written = std::move(written)] {
                if (!self) return;
                self->exporting_ = false;
                self->progress_->setVisible(false);
                self->cancel_->setVisible(false);
                emit self->busyChanged(false);
                done(written);
            },
            Qt::QueuedConnection);
    }).detach();
    return true;
}

bool TraceExporter::exportFile(const QString& format, QString outPath, std::shared_ptr<PerfDataReader> reader,
                               std::shared_ptr<const AuxTraceSpans> decoded, const QString& traceKind,
                               Done done) {
    if (!reader || exporting_) return false;
    const bool csv = format == "csv";
    if (outPath.isEmpty()) {
        QFileInfo in(input_);
        QString suggestion = in.dir().filePath(in.completeBaseName() + (csv ? ".csv" : ".pftrace"));
        outPath =
            QFileDialog::getSaveFileName(owner_, csv ? "Export CSV" : "Export to Perfetto",
                                         window_memory::inLastFolder("export", suggestion),
                                         csv ? "CSV (*.csv)" : "Perfetto trace (*.pftrace *.perfetto-trace)");
        if (outPath.isEmpty()) return false;
        window_memory::setLastFolder("export", outPath);
    }
    struct Counts {
        size_t runSlices = 0, samples = 0, speRecords = 0;
        QString loadedError;
    };
    auto counts = std::make_shared<Counts>();
    ExportJob job = [reader, decoded, csv, counts, out = outPath.toStdString(),
                     folder = QFileInfo(input_).absolutePath().toStdString()](
                        const std::function<bool(uint64_t, uint64_t)>& progress) {
        TraceModel model;
        auto loaded = loadTraceModel(*reader, model);
        if (!loaded) counts->loadedError = QString::fromStdString(loaded.error().message);
        counts->runSlices = model.runSlices().size();
        counts->samples = model.samples().size();
        ExportOptions options;
        options.progress = progress;
        ExportSpans spans;
        if (decoded) {
            spans = decoded->exportView();
            options.spans = &spans;
        }
        // Arm SPE (no spans): the records, decoded here as `auxscope export` does, with their names.
        Expected<std::unique_ptr<AuxTraceSession>> spe = std::unique_ptr<AuxTraceSession>();
        std::optional<SpeExportNames> speNames;
        if (!decoded && auxTraceKind(*reader) == AuxTraceKind::ArmSpe) {
            AuxTraceOptions so;
            so.images.binaryDirs = {folder};
            spe = AuxTraceSession::open(*reader, so);
            if (!spe) return Expected<void>(spe.error());
            if (const auto* session = dynamic_cast<const SpeAuxTraceSession*>(spe->get())) {
                speNames.emplace(speExportNames(session->records(), session->images(), session->functions(),
                                                *reader, {folder}));
                options.spe = &speNames->spe;
                counts->speRecords = session->records().records.size();
            }
        }
        return csv ? exportCsv(model, out, options) : exportPerfetto(model, out, options);
    };
    return start(std::move(job), [done, counts, outPath, decoded, traceKind](const Expected<void>& written) {
        QString text;
        if (!written) {
            text = "Export failed: " + QString::fromStdString(written.error().message);
        } else {
            text = QString("Exported %1 run slices, %2 samples%3 to %4")
                       .arg(counts->runSlices)
                       .arg(counts->samples)
                       .arg(decoded ? QString(" and %1 %2 spans").arg(decoded->spanCount()).arg(traceKind)
                            : counts->speRecords ? QString(" and %1 Arm SPE records").arg(counts->speRecords)
                                                 : QString())
                       .arg(outPath);
            if (!counts->loadedError.isEmpty()) text += " (stopped early: " + counts->loadedError + ")";
        }
        done(text, written.ok(), !written || !counts->loadedError.isEmpty());
    });
}

}  // namespace auxscope
