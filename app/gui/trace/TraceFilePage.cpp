// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceFilePage.h"

#include <QApplication>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <thread>

#include "auxtrace/AuxTraceDecode.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TimelineDecodeController.h"
#include "gui/trace/TraceExporter.h"
#include "gui/trace/TraceSummaryTree.h"
#include "gui/trace/TraceTimelineTab.h"
#include "perfdata/PerfDataReader.h"

namespace auxscope {

TraceFilePage::TraceFilePage(const QString& path, QWidget* parent) : QWidget(parent), path_(path) {
    status_ = new QLabel("Reading " + path + "…");
    status_->setObjectName("traceStatus");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    tree_ = new TraceSummaryTree;
    decode_ = new QPushButton("Decode Intel PT");
    decode_->setObjectName("decodeIntelPt");
    decode_->setToolTip("Decode the Intel PT trace into per-thread call stacks (on a worker thread)");
    decode_->setVisible(false);
    connect(decode_, &QPushButton::clicked, this, [this] { startDecode(); });
    progress_ = new QProgressBar;
    progress_->setObjectName("decodeProgress");
    progress_->setVisible(false);
    progress_->setMaximumWidth(160);
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
    buttons->addWidget(progress_);
    buttons->addWidget(decode_);
    buttons->addWidget(exportPerfetto_);
    buttons->addWidget(exportCsv_);
    exporter_ = new TraceExporter(this, path);
    // The export buttons wait while an export runs.
    connect(exporter_, &TraceExporter::busyChanged, this, [this](bool busy) {
        for (auto* b : {exportPerfetto_, exportCsv_})
            b->setEnabled(!busy && loaded());
    });
    buttons->addWidget(exporter_->progress());
    buttons->addWidget(exporter_->cancelButton());
    tabs_ = new QTabWidget;
    tabs_->setObjectName("traceTabs");
    tabs_->setDocumentMode(true);
    tabs_->addTab(tree_, "Summary");
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(tabs_, 1);

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
                self->reader_ = std::make_shared<PerfDataReader>(std::move(result->value()));
                self->populate();
                emit self->loadFinished(true);
            },
            Qt::QueuedConnection);
    }).detach();
}

TraceFilePage::~TraceFilePage() {
    // A decode still running stops at its next batch of segments; it keeps the
    // reader alive until then. So does a timeline being built (its controller stops it).
    if (cancel_) *cancel_ = true;
}

void TraceFilePage::populate() {
    const PerfDataReader& r = *reader_;
    QString text = tree_->showFile(r, path_);
    auxMissing_ = auxMissingLine(r.summary());
    if (!auxMissing_.isEmpty()) text += "; " + auxMissing_;
    status_->setText(text);
    if (r.hasErrors()) status_->setStyleSheet("color: #b00020;");
    for (auto* b : {exportPerfetto_, exportCsv_})
        b->setEnabled(true);
    emit statusMessage(text);

    hasPt_ = hasDecodableAuxTrace(r);
    traceKind_ = auxTraceKindName(auxTraceKind(r));
    decode_->setText("Decode " + traceKind_);
    decode_->setToolTip("Decode the " + traceKind_ +
                        " trace into per-thread call stacks (on a worker thread)");
    decode_->setVisible(hasPt_);
    decode_->setEnabled(hasPt_);
    openTimeline();
    if (hasPt_ && autoDecodeBytes_ && auxTraceBytes(r) <= autoDecodeBytes_) {
        // Let the caller see the page first (and change the limit) before deciding.
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (!decoding_ && !decoded_ && autoDecodeBytes_ &&
                    auxTraceBytes(*reader_) <= autoDecodeBytes_)
                    startDecode();
            },
            Qt::QueuedConnection);
    }
}

bool TraceFilePage::startDecode() {
    if (!reader_ || !hasPt_ || decoding_) return false;
    decoding_ = true;
    decode_->setEnabled(false);
    progress_->setRange(0, 0);  // busy until the first report
    progress_->setVisible(true);
    status_->setText("Decoding " + traceKind_ + "…");
    status_->setStyleSheet("");
    emit statusMessage(status_->text());
    if (cancel_) *cancel_ = true;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    QPointer<TraceFilePage> self(this);
    std::thread([self, reader = reader_, cancel = cancel_] {
        const auto started = std::chrono::steady_clock::now();
        auto report = [&](size_t done, size_t total) {
            QMetaObject::invokeMethod(
                qApp,
                [self, done, total] {
                    if (!self || !self->decoding_) return;
                    self->progress_->setRange(0, int(std::max<size_t>(total, 1)));
                    self->progress_->setValue(int(done));
                },
                Qt::QueuedConnection);
            return !*cancel;
        };
        auto decoded = decodeAuxTraceSpans(*reader, {}, {}, 0, report);
        auto spans = std::make_shared<std::shared_ptr<const AuxTraceSpans>>();
        auto summary = std::make_shared<PtSpanSummary>();
        std::string error;
        if (decoded) {
            *summary = summarize(*decoded);
            *spans = std::make_shared<const AuxTraceSpans>(std::move(*decoded));
        } else {
            error = decoded.error().message;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        QMetaObject::invokeMethod(
            qApp,
            [self, spans, summary, error, seconds] {
                if (!self) return;
                self->decoding_ = false;
                self->progress_->setVisible(false);
                self->decode_->setEnabled(true);
                if (!*spans) {
                    const QString text =
                        self->traceKind_ + " decode failed: " + QString::fromStdString(error);
                    self->status_->setText(text);
                    self->status_->setStyleSheet("color: #b00020;");
                    emit self->statusMessage(text);
                    emit self->decodeFinished(false);
                    return;
                }
                self->decoded_ = *spans;
                QString text = self->tree_->showDecoded(*summary, self->traceKind_, seconds,
                                                        QFileInfo(self->path_).fileName());
                if (!self->auxMissing_.isEmpty()) text += "; " + self->auxMissing_;
                self->status_->setText(text);
                self->status_->setStyleSheet(
                    summary->stats.decodeErrors || !self->auxMissing_.isEmpty() ? "color: #b00020;" : "");
                emit self->statusMessage(text);
                emit self->decodeFinished(true);
            },
            Qt::QueuedConnection);
    }).detach();
    return true;
}

// ---- The timeline ----

void TraceFilePage::openTimeline() {
    if (timeline_) return;
    timeline_ = new TraceTimelineTab(
        path_, hasPt_ ? "Opening the " + traceKind_ + " trace…" : QString("Building the timeline…"));
    tabs_->insertTab(0, timeline_, "Timeline");
    tabs_->setCurrentIndex(0);
    decoder_ = new TimelineDecodeController(timeline_, reader_, hasPt_, traceKind_, this);
    decoder_->setBudget(timelineBudget_);
    connect(decoder_, &TimelineDecodeController::opened, this, &TraceFilePage::timelineOpened);
    connect(decoder_, &TimelineDecodeController::updated, this, &TraceFilePage::timelineUpdated);
    connect(timeline_, &TraceTimelineTab::exportRequested, this,
            [this](const QString& format, quint64 begin, quint64 end) { exportRange(format, begin, end); });
    connect(timeline_, &TraceTimelineTab::codeRequested, this, &TraceFilePage::showCode);
    connect(timeline_, &TraceTimelineTab::sampleCodeRequested, decoder_,
            &TimelineDecodeController::showSampleCode);
    decoder_->open();
}

void TraceFilePage::cancelTimeline() {
    if (decoder_) decoder_->cancel();
}

bool TraceFilePage::timelineDecoding() const {
    return decoder_ && decoder_->busy();
}

void TraceFilePage::setTimelineDecodeBudget(uint64_t bytes) {
    timelineBudget_ = bytes;
    if (decoder_) decoder_->setBudget(bytes);
}

QTreeWidget* TraceFilePage::tree() const {
    return tree_;
}

void TraceFilePage::showCode(int32_t tid, uint32_t function, uint64_t begin, uint64_t end) {
    if (decoder_) decoder_->showCode(tid, function, begin, end);
}

std::shared_ptr<const SampleProfile> TraceFilePage::sampleProfile() const {
    return decoder_ ? decoder_->profile() : nullptr;
}

// ---- Exports (TraceExporter) ----

bool TraceFilePage::exporting() const {
    return exporter_->exporting();
}

QProgressBar* TraceFilePage::exportProgress() const {
    return exporter_->progress();
}

QPushButton* TraceFilePage::exportCancelButton() const {
    return exporter_->cancelButton();
}

void TraceFilePage::cancelExport() {
    exporter_->cancel();
}

bool TraceFilePage::exportRange(const QString& format, uint64_t begin, uint64_t end, QString outPath) {
    return exporter_->exportRange(
        format, begin, end, outPath, reader_, timeline() ? timeline()->data() : nullptr,
        decoder_ ? decoder_->session() : nullptr, [this](const QString& text, bool ok, bool error) {
            timeline_->setStatus(text, error);
            emit statusMessage(text);
            emit exportFinished(ok, text);
        });
}

bool TraceFilePage::exportTo(const QString& format, QString outPath) {
    return exporter_->exportFile(format, outPath, reader_, decoded_, traceKind_,
                                 [this](const QString& text, bool ok, bool error) {
                                     status_->setText(text);
                                     status_->setStyleSheet(error ? "color: #b00020;" : "");
                                     emit statusMessage(text);
                                     emit exportFinished(ok, text);
                                 });
}

}  // namespace auxscope
