// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceFilePage.h"

#include <QApplication>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>

#include "auxtrace/AuxTraceDecode.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/SymbolsDialog.h"
#include "gui/trace/TimelineDecodeController.h"
#include "gui/trace/TimelineTour.h"
#include "gui/trace/TraceExporter.h"
#include "gui/trace/TraceSummaryTree.h"
#include "gui/trace/TraceTimelineTab.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TriggerFeature.h"
#include "samples/SampleProfile.h"

namespace auxscope {

namespace {

// Recorded names that stand for no file to look for (anonymous memory, memfds,
// deleted files): not "missing".
bool namesNoFile(const std::string& recorded) {
    return recorded.empty() || recorded.rfind("//anon", 0) == 0 || recorded.rfind("/memfd:", 0) == 0 ||
           recorded.rfind("/dev/", 0) == 0 || recorded.rfind("anon_inode:", 0) == 0 ||
           recorded.find(" (deleted)") != std::string::npos;
}

// debuginfod may be asked: it is on and a URL is configured (the settings', else $DEBUGINFOD_URLS).
bool debuginfodConfigured(const ImageOptions& o) {
    if (!o.debuginfod) return false;
    if (!o.debuginfodUrls.empty()) return true;
    const char* env = std::getenv("DEBUGINFOD_URLS");
    return env && QString::fromUtf8(env).trimmed().size() > 0;
}

QString kilobytes(int64_t bytes) {
    return bytes >= (1 << 20) ? QString("%1 MB").arg(double(bytes) / (1 << 20), 0, 'f', 1)
                              : QString("%1 kB").arg((bytes + 1023) / 1024);
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
    fetchLine_ = new QLabel;
    fetchLine_->setObjectName("debuginfodLine");
    fetchLine_->setWordWrap(true);
    fetchLine_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    fetchLine_->setVisible(false);
    fetchCancel_ = new QPushButton("Cancel debuginfod");
    fetchCancel_->setObjectName("debuginfodCancel");
    fetchCancel_->setToolTip("Stop asking the debuginfod servers (what came stays; the rest is not asked)");
    fetchCancel_->setVisible(false);
    connect(fetchCancel_, &QPushButton::clicked, this, [this] { cancelDebuginfod(); });
    if (debuginfodConfigured(symbols_.effective(path_))) debuginfodState_ = Debuginfod::Pending;
    auto* header = new QVBoxLayout;
    header->setSpacing(2);
    header->addWidget(status_);
    header->addWidget(missing_);
    header->addWidget(fetchLine_);
    auto* buttons = new QHBoxLayout;
    buttons->addLayout(header, 1);
    buttons->addWidget(progress_);
    buttons->addWidget(fetchCancel_);
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

TimelineTour* TraceFilePage::showTimelineTour() {
    if (tour_ || !TimelineTour::wanted()) return tour_;
    tour_ = new TimelineTour;
    // Under the header, above the Summary and Timeline tabs.
    static_cast<QVBoxLayout*>(layout())->insertWidget(1, tour_);
    tour_->setVisible(true);  // now, not when the layout gets to it
    return tour_;
}

TimelineTour* TraceFilePage::timelineTour() const {
    return tour_;
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

    // Snapshot triggers' firings (auxscope record --trigger, or the capture page's).
    for (const PerfRawFeature& raw : r.features().raw) {
        if (raw.id != kFeatAuxscopeTriggers) continue;
        auto t = decodeTriggerFeature(raw.bytes, r.path() + ": offset " + std::to_string(raw.offset));
        if (t)
            triggers_ = std::make_shared<const TriggerFileData>(std::move(t.value()));
        else
            triggersError_ = QString::fromStdString(t.error().message);
    }

    hasPt_ = hasDecodableAuxTrace(r);
    traceKind_ = auxTraceKindName(auxTraceKind(r));
    decode_->setText("Decode " + traceKind_);
    decode_->setToolTip("Decode the " + traceKind_ +
                        " trace into per-thread call stacks (on a worker thread)");
    // Arm SPE samples operations: no flow to decode into spans. Its records are
    // read with the timeline (its SPE tab and the arm_spe sample events).
    spe_ = auxTraceKind(r) == AuxTraceKind::ArmSpe;
    decode_->setVisible(hasPt_ && !spe_);
    decode_->setEnabled(hasPt_ && !spe_);
    openTimeline();
    if (hasPt_ && !spe_ && autoDecodeBytes_ && auxTraceBytes(r) <= autoDecodeBytes_) {
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
    if (!reader_ || !hasPt_ || spe_ || decoding_) return false;
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
    connect(decoder_, &TimelineDecodeController::opened, this, &TraceFilePage::showTriggers);
    connect(decoder_, &TimelineDecodeController::opened, this, &TraceFilePage::timelineOpened);
    connect(decoder_, &TimelineDecodeController::updated, this, &TraceFilePage::timelineUpdated);
    connect(timeline_, &TraceTimelineTab::exportRequested, this,
            [this](const QString& format, quint64 begin, quint64 end) { exportRange(format, begin, end); });
    connect(timeline_, &TraceTimelineTab::codeRequested, this, &TraceFilePage::showCode);
    connect(timeline_, &TraceTimelineTab::sampleCodeRequested, decoder_,
            &TimelineDecodeController::showSampleCode);
    decoder_->open();
}

// ---- Snapshot triggers ----

void TraceFilePage::showTriggers() {
    if (!timeline_ || (!triggers_ && triggersError_.isEmpty())) return;
    QTabWidget* tabs = timeline_->analysisTabs();
    if (firings_) {  // opened again in the same tab: one list
        if (const int i = tabs->indexOf(firings_); i >= 0) tabs->removeTab(i);
        firings_->deleteLater();
        firings_ = nullptr;
    }
    const TriggerReport empty;
    const TriggerReport& r = triggers_ ? triggers_->report : empty;
    std::vector<TimelineView::EventMarker> markers = TimelineView::firingMarkers(r);
    timeline_->view()->setEventMarkers(std::move(markers));

    firings_ = new QTableWidget(int(r.firings.size()), 7);
    firings_->setObjectName("triggerFirings");
    firings_->setHorizontalHeaderLabels({"#", "Trigger", "Thread", "CPU", "Time", "Duration", "Snapshot"});
    firings_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    firings_->setSelectionBehavior(QAbstractItemView::SelectRows);
    firings_->setSelectionMode(QAbstractItemView::SingleSelection);
    firings_->verticalHeader()->setVisible(false);
    const uint64_t origin = timeline_->view()->data() ? timeline_->view()->data()->begin : 0;
    for (int i = 0; i < int(r.firings.size()); ++i) {
        const TriggerFiring& f = r.firings[size_t(i)];
        auto set = [&](int col, const QString& text) {
            auto* item = new QTableWidgetItem(text);
            if (col != 1 && col != 6) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            firings_->setItem(i, col, item);
        };
        set(0, QString::number(i));
        set(1, f.trigger < r.triggers.size() ? QString::fromStdString(r.triggers[f.trigger])
                                             : QString("#%1").arg(f.trigger));
        set(2, QString("%1/%2").arg(f.pid).arg(f.tid));
        set(3, QString::number(f.cpu));
        set(4, "+" + formatNs(double(f.time >= origin ? f.time - origin : 0)));
        set(5, f.duration ? formatNs(double(f.duration)) : QString("—"));
        // The snapshot it asked for, and when that began after the firing (--trigger-post and the latency).
        QString snap = f.snapshot == UINT64_MAX ? QString("none") : QString("#%1").arg(f.snapshot);
        if (f.snapshot != UINT64_MAX && f.snapshotTime >= f.time && f.snapshotTime)
            snap += ", taken " + formatNs(double(f.snapshotTime - f.time)) + " after the firing";
        else if (f.snapshot != UINT64_MAX && f.seenMono && f.snapshotMono >= f.seenMono)
            snap += ", taken " + formatNs(double(f.snapshotMono - f.seenMono)) + " after the firing was seen";
        set(6, snap);
    }
    firings_->resizeColumnsToContents();
    firings_->horizontalHeader()->setStretchLastSection(true);
    firings_->setColumnWidth(1, std::max(firings_->columnWidth(1), 160));
    connect(firings_, &QTableWidget::cellClicked, this, [this](int row, int) { jumpToFiring(row); });
    connect(firings_, &QTableWidget::cellActivated, this, [this](int row, int) { jumpToFiring(row); });
    connect(firings_, &QTableWidget::currentCellChanged, this, [this](int row, int, int previous, int) {
        if (row >= 0 && row != previous) jumpToFiring(row);  // the arrow keys go from firing to firing
    });
    uint64_t skipped = 0;
    for (uint64_t n : r.skipped)
        skipped += n;
    QString tip = triggersError_.isEmpty()
                      ? QString("%1 firings, %2 skipped; %3 of %4 snapshots taken; a row shows its firing")
                            .arg(r.firings.size())
                            .arg(skipped)
                            .arg(r.snapshotsTaken)
                            .arg(r.snapshotsRequested)
                      : "The triggers' section could not be read: " + triggersError_;
    for (size_t i = 0; i < r.skipped.size(); ++i)
        if (r.skipped[i])
            tip += QString("\nskipped, %1: %2").arg(triggerSkipName(TriggerSkip(i))).arg(r.skipped[i]);
    firings_->setToolTip(tip);
    const int index = tabs->addTab(firings_, QString("Triggers (%1)").arg(r.firings.size()));
    tabs->setTabToolTip(index, tip);
    tabs->setCurrentIndex(index);
    jumpToFiring(0);  // the timeline opens on the first firing
}

QTableWidget* TraceFilePage::firingsList() const {
    return firings_;
}

bool TraceFilePage::jumpToFiring(int i) {
    if (!triggers_ || !timeline_ || i < 0 || size_t(i) >= triggers_->report.firings.size()) return false;
    const TriggerFiring& f = triggers_->report.firings[size_t(i)];
    TimelineView* view = timeline_->view();
    const uint64_t start = f.start ? std::min(f.start, f.time) : f.time;
    // The span with as much again around it (at least a few ms): what led to it and what followed.
    const uint64_t width = std::max<uint64_t>(f.time - start, 2'000'000);
    view->setFollowLatest(false);
    view->setVisibleRange(start > width ? start - width : 0, f.time + width);
    if (f.tid >= 0) view->scrollToThread(f.tid, -1);
    if (firings_ && firings_->currentRow() != i) {
        const QSignalBlocker block(firings_);
        firings_->selectRow(i);
    }
    return true;
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
    if (!changed) return;
    // New settings: resolved first without debuginfod, then (configured) fetched in the background.
    *fetchCancelled_ = true;  // a fetch running with the old ones stops
    fetchCancelled_ = std::make_shared<std::atomic<bool>>(false);
    fetchCancel_->setVisible(false);
    fetchLine_->setVisible(false);
    debuginfodWanted_.clear();
    debuginfodState_ =
        debuginfodConfigured(symbols_.effective(path_)) ? Debuginfod::Pending : Debuginfod::Off;
    resolveAgain();
}

ImageOptions TraceFilePage::imageOptions() const {
    ImageOptions o = symbols_.effective(path_);
    if (debuginfodState_ != Debuginfod::Fetching && debuginfodState_ != Debuginfod::Done) {
        o.debuginfod = false;  // first without it: the first frame never waits on a server
        return o;
    }
    auto wanted = std::make_shared<std::set<std::string>>();
    for (const QString& w : debuginfodWanted_)
        wanted->insert(w.toStdString());
    o.debuginfodWanted = [wanted](const std::string& recorded) { return wanted->count(recorded) != 0; };
    // On the resolving worker: the page shows the file and bytes (at most every 100 ms per file).
    QPointer<TraceFilePage> self(const_cast<TraceFilePage*>(this));
    struct Last {
        std::mutex mutex;
        std::string file;
        std::chrono::steady_clock::time_point at;
    };
    auto last = std::make_shared<Last>();
    o.debuginfodProgress = [self, cancel = fetchCancelled_, last](const std::string& file, int64_t done,
                                                                  int64_t total) {
        {
            std::lock_guard lock(last->mutex);
            const auto now = std::chrono::steady_clock::now();
            if (file == last->file && now - last->at < std::chrono::milliseconds(100)) return !*cancel;
            last->file = file, last->at = now;
        }
        QMetaObject::invokeMethod(
            qApp,
            [self, cancel, name = QString::fromStdString(file), done, total] {
                if (!self || self->debuginfodState_ != Debuginfod::Fetching || *cancel) return;
                QString text = "debuginfod: fetching " + name;
                if (done > 0 || total > 0)
                    text += total > 0 ? QString(" (%1 of %2)").arg(kilobytes(done), kilobytes(total))
                                      : QString(" (%1)").arg(kilobytes(done));
                text += "…";
                self->fetchLine_->setText(text);
            },
            Qt::QueuedConnection);
        return !*cancel;
    };
    return o;
}

void TraceFilePage::cancelDebuginfod() {
    if (debuginfodState_ != Debuginfod::Fetching) return;
    *fetchCancelled_ = true;
    fetchCancel_->setEnabled(false);
    fetchLine_->setText("debuginfod: cancelling…");
}

void TraceFilePage::debuginfodStep() {
    if (debuginfodState_ == Debuginfod::Fetching) {
        // The resolve with debuginfod is done: say what it did.
        const ImageResolver* images = decoder_ ? decoder_->images() : nullptr;
        const bool cancelled = *fetchCancelled_;
        debuginfodState_ = cancelled ? Debuginfod::Cancelled : Debuginfod::Done;
        fetchCancel_->setVisible(false);
        QString text;
        if (images) {
            const ImageResolver::DebuginfodStatus& d = images->debuginfod();
            text = QString("debuginfod (%1): %2 asked, %3 debug file%4, %5 executable%6")
                       .arg(QString::fromStdString(d.urls))
                       .arg(d.asked)
                       .arg(d.debugFiles)
                       .arg(d.debugFiles == 1 ? "" : "s")
                       .arg(d.executables)
                       .arg(d.executables == 1 ? "" : "s");
            if (d.failed) text += QString(", %1 failed").arg(d.failed);
            if (d.notAsked) text += QString(", %1 not asked").arg(d.notAsked);
            if (d.cancelled || cancelled) text += "; cancelled";
            // Why a file did not come (the server's answer, "cannot reach …"), and what was not asked.
            for (const std::string& note : images->notes()) {
                const QString n = QString::fromStdString(note);
                const bool ofWanted = std::any_of(debuginfodWanted_.begin(), debuginfodWanted_.end(),
                                                  [&](const QString& w) { return n.startsWith(w + ": "); });
                if (ofWanted || n.startsWith("debuginfod ")) text += "\n" + n;
            }
        } else {
            text = cancelled ? "debuginfod: cancelled" : "debuginfod: nothing resolved";
        }
        fetchLine_->setText(text);
        fetchLine_->setStyleSheet(images && images->debuginfod().failed ? "color: #b00020;" : "");
        fetchLine_->setVisible(true);
        emit statusMessage(text.section('\n', 0, 0));
        emit debuginfodFinished();
        return;
    }
    if (debuginfodState_ != Debuginfod::Pending || !decoder_ || !decoder_->images()) return;
    // Which images the view needs: those its samples fall in (every user-space
    // file mapped when there are none, e.g. a trace's), the missing ones too;
    // found on a worker (a profile may hold millions of samples).
    debuginfodState_ = Debuginfod::Fetching;
    fetchCancelled_ = std::make_shared<std::atomic<bool>>(false);
    fetchLine_->setText("debuginfod: finding the images the view needs…");
    fetchLine_->setStyleSheet("");
    fetchLine_->setVisible(true);
    fetchCancel_->setEnabled(true);
    fetchCancel_->setVisible(true);
    // Every mapped file (a few thousand at most: read here, where the resolver is not in use).
    std::vector<std::string> mapped;
    for (const ImageResolver::FileStatus& f : decoder_->images()->files())
        if (f.mappings) mapped.push_back(f.recorded);
    QPointer<TraceFilePage> self(this);
    std::thread([self, profile = decoder_->profile(), mapped = std::move(mapped), missing = missingImages_,
                 cancel = fetchCancelled_] {
        std::set<std::string> wanted;
        for (const QString& m : missing)
            wanted.insert(m.toStdString());
        if (profile && profile->size()) {
            std::unordered_set<uint64_t> seen;  // (pid, page) already looked at
            for (size_t i = 0; i < profile->size() && !*cancel; ++i) {
                const uint64_t ip = profile->ip(i);
                const uint64_t key = (uint64_t(uint32_t(profile->pid(i))) << 40) ^ (ip >> 12);
                if (!seen.insert(key).second) continue;
                std::string name = profile->images().mappingAt(profile->pid(i), ip);
                if (!name.empty()) wanted.insert(std::move(name));
            }
        } else {
            wanted.insert(mapped.begin(), mapped.end());
        }
        QStringList list;
        for (const std::string& w : wanted)
            if (!w.empty() && w[0] == '/' && !namesNoFile(w)) list << QString::fromStdString(w);
        QMetaObject::invokeMethod(
            qApp,
            [self, list, cancel] {
                if (!self || self->debuginfodState_ != Debuginfod::Fetching ||
                    cancel != self->fetchCancelled_)
                    return;
                self->debuginfodWanted_ = list;
                if (list.isEmpty() || *cancel) {
                    self->debuginfodState_ = *cancel ? Debuginfod::Cancelled : Debuginfod::Done;
                    self->fetchCancel_->setVisible(false);
                    self->fetchLine_->setText(*cancel ? "debuginfod: cancelled"
                                                      : "debuginfod: no image of this file needs it");
                    emit self->debuginfodFinished();
                    return;
                }
                self->fetchLine_->setText(QString("debuginfod: asking for %1 image%2…")
                                              .arg(list.size())
                                              .arg(list.size() == 1 ? "" : "s"));
                self->resolveAgain();
            },
            Qt::QueuedConnection);
    }).detach();
}

void TraceFilePage::resolveAgain() {
    if (!reader_) return;  // not read yet: the timeline opens with the new settings
    const QString note =
        (debuginfodState_ == Debuginfod::Fetching
             ? "debuginfod: resolving " + QFileInfo(path_).fileName() + " with the servers' files…"
             : "Symbols & binaries changed: resolving " + QFileInfo(path_).fileName() + " again…");
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
        // (debuginfod's own go to the debuginfod line, once.)
        for (const std::string& note : images->notes()) {
            const QString n = QString::fromStdString(note);
            if (debuginfodState_ == Debuginfod::Off || debuginfodState_ == Debuginfod::Pending ||
                (!n.startsWith("debuginfod ") && !n.contains(": debuginfod ")))
                notes << n;
        }
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
    debuginfodStep();
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
