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
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/SymbolsDialog.h"
#include "gui/trace/TimelineDecodeController.h"
#include "gui/trace/TraceExporter.h"
#include "gui/trace/TraceSummaryTree.h"
#include "gui/trace/TraceTimelineTab.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"

namespace auxscope {

namespace {

// Recorded names that stand for no file to look for (anonymous memory, memfds,
// deleted files): not "missing".
bool namesNoFile(const std::string& recorded) {
    return recorded.empty() || recorded.rfind("//anon", 0) == 0 || recorded.rfind("/memfd:", 0) == 0 ||
           recorded.rfind("/dev/", 0) == 0 || recorded.rfind("anon_inode:", 0) == 0 ||
           recorded.find(" (deleted)") != std::string::npos;
}

}  // namespace

TraceFilePage::TraceFilePage(const QString& path, QWidget* parent)
    : QWidget(parent), path_(path), symbols_(SymbolSettings::forFile(path)) {
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
    symbolsButton_ = new QPushButton("Symbols && binaries…");
    symbolsButton_->setObjectName("symbolsButton");
    symbolsButton_->setToolTip(
        "Where the file's code and names come from: sysroot, binary and debug folders, kernel images, "
        "debuginfod, JIT maps");
    connect(symbolsButton_, &QPushButton::clicked, this, [this] { openSymbolsDialog(); });
    missing_ = new QLabel;
    missing_->setObjectName("missingImages");
    missing_->setWordWrap(true);
    missing_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    missing_->setStyleSheet("color: #b00020;");
    missing_->setVisible(false);
    auto* header = new QVBoxLayout;
    header->setSpacing(2);
    header->addWidget(status_);
    header->addWidget(missing_);
    auto* buttons = new QHBoxLayout;
    buttons->addLayout(header, 1);
    buttons->addWidget(progress_);
    buttons->addWidget(symbolsButton_);
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
    AuxTraceOptions options;
    options.images = imageOptions();
    const uint64_t generation = ++decodeGeneration_;
    std::thread([self, reader = reader_, cancel = cancel_, options, generation] {
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
        auto decoded = decodeAuxTraceSpans(*reader, {}, options, 0, report);
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
            [self, spans, summary, error, seconds, generation] {
                if (!self || generation != self->decodeGeneration_) return;  // a later decode replaced it
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
    ++timelineOpens_;
    imagesResolved_ = false;
    decoder_ = new TimelineDecodeController(timeline_, reader_, hasPt_, traceKind_, imageOptions(), this);
    decoder_->setBudget(timelineBudget_);
    connect(decoder_, &TimelineDecodeController::opened, this, &TraceFilePage::updateMissingImages);
    connect(decoder_, &TimelineDecodeController::opened, this, &TraceFilePage::timelineOpened);
    connect(decoder_, &TimelineDecodeController::updated, this, &TraceFilePage::timelineUpdated);
    connect(timeline_, &TraceTimelineTab::exportRequested, this,
            [this](const QString& format, quint64 begin, quint64 end) { exportRange(format, begin, end); });
    connect(timeline_, &TraceTimelineTab::codeRequested, this, &TraceFilePage::showCode);
    connect(timeline_, &TraceTimelineTab::sampleCodeRequested, decoder_,
            &TimelineDecodeController::showSampleCode);
    decoder_->open();
}

// ---- Symbols & binaries ----

SymbolsDialog* TraceFilePage::openSymbolsDialog() {
    if (dialog_) {
        dialog_->raise();
        dialog_->activateWindow();
        return dialog_;
    }
    dialog_ = new SymbolsDialog(path_, symbols_, this);
    dialog_->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog_, &QDialog::accepted, this, [this, dialog = dialog_] {
        if (dialog) setSymbolSettings(dialog->settings(), dialog->saveAsDefaults());
    });
    dialog_->open();
    return dialog_;
}

SymbolsDialog* TraceFilePage::symbolsDialog() const {
    return dialog_;
}

void TraceFilePage::setSymbolSettings(const SymbolSettings& s, bool asDefaults) {
    const bool changed = !(s == symbols_) || !symbols_.ownEntry;
    symbols_ = s;
    symbols_.ownEntry = true;
    SymbolSettings::saveForFile(path_, symbols_);
    if (asDefaults) SymbolSettings::saveDefaults(symbols_);
    if (changed) resolveAgain();
}

void TraceFilePage::resolveAgain() {
    if (!reader_) return;  // not read yet: the timeline opens with the new settings
    const QString note = "Symbols & binaries changed: resolving " + QFileInfo(path_).fileName() + " again…";
    emit statusMessage(note);
    if (timeline_) {
        // The view comes back to the window it showed.
        const auto window = timeline_->state()->window();
        const bool hadData = timeline()->data() != nullptr;
        const int index = tabs_->indexOf(timeline_);
        const bool current = tabs_->currentWidget() == timeline_;
        delete decoder_;  // stops its workers (they check the controller before touching the tab)
        decoder_ = nullptr;
        tabs_->removeTab(index);
        timeline_->deleteLater();
        timeline_ = nullptr;
        missingImages_.clear();
        missing_->setVisible(false);
        openTimeline();
        timeline_->setStatus(note);
        if (!current) tabs_->setCurrentIndex(1);
        if (hadData && window.end > window.begin) {
            connect(
                decoder_, &TimelineDecodeController::opened, this,
                [this, window] {
                    if (timeline_) timeline_->state()->setWindow(window.begin, window.end);
                },
                Qt::SingleShotConnection);
        }
    }
    if (decoded_ || decoding_) {
        decoding_ = false;
        decoded_.reset();
        startDecode();
    }
}

void TraceFilePage::updateMissingImages() {
    missingImages_.clear();
    QStringList tips, notes;
    if (const ImageResolver* images = decoder_ ? decoder_->images() : nullptr) {
        // What the settings gave that could not be used ("vmlinux X: not an ELF file").
        for (const std::string& note : images->notes())
            notes << QString::fromStdString(note);
        for (const ImageResolver::FileStatus& f : images->files()) {
            if (!f.resolved.empty() || !f.mappings || namesNoFile(f.recorded)) continue;
            // Kernel maps say how to provide their code; other pseudo names ([vdso]) are no file.
            if (f.recorded[0] != '/' && f.hint.empty()) continue;
            missingImages_ << QString::fromStdString(f.recorded);
            // The resolver's hint names the CLI's options; here they are the dialog's fields.
            QString hint = QString::fromStdString(f.hint);
            hint.replace("pass ", "set ").replace("--symfs", "a sysroot").replace("--", "");
            tips << QString::fromStdString(f.recorded) + (hint.isEmpty() ? QString() : " — " + hint);
        }
    }
    imagesResolved_ = true;
    QStringList lines;
    if (!missingImages_.isEmpty()) {
        const int n = int(missingImages_.size());
        lines << QString("%1 image%2 missing: %3%4 — Symbols & binaries… says where to look")
                     .arg(n)
                     .arg(n == 1 ? "" : "s")
                     .arg(missingImages_.mid(0, 3).join(", "))
                     .arg(n > 3 ? QString(" … (%1 more)").arg(n - 3) : QString());
    }
    lines << notes;
    missing_->setText(lines.join('\n'));
    missing_->setToolTip((tips + notes).join('\n'));
    missing_->setVisible(!lines.isEmpty());
    emit imagesChanged();
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
