// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/CapturePage.h"

#include <QApplication>
#include <QChartView>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "PerfEvent.h"
#include "TriggerEngine.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "gui/capture/AuxOptionsPanel.h"
#include "gui/capture/CaptureFiles.h"
#include "gui/capture/CaptureForm.h"
#include "gui/capture/HelperCapture.h"
#include "gui/capture/LiveStatsView.h"
#include "gui/capture/LiveTimeline.h"
#include "gui/capture/TriggerEditor.h"
#include "gui/common/WindowMemory.h"
#include "gui/timeline/TimelineView.h"
#include "perfdata/TracingData.h"
#include "record/ProcSynth.h"
#include "sideband/LiveSideband.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"

namespace auxscope {

CapturePage::CapturePage(QWidget* parent) : QWidget(parent), pmus_(PmuRegistry::discover()) {
    form_ = new CaptureForm(pmus_, this);
    startButton_ = new QPushButton("Start");
    startButton_->setObjectName("startButton");
    stopButton_ = new QPushButton("Stop");
    stopButton_->setObjectName("stopButton");
    stopButton_->setEnabled(false);
    status_ = new QLabel("Idle.");
    status_->setObjectName("status");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* buttons = new QHBoxLayout;
    snapshotButton_ = new QPushButton("Take snapshot");
    snapshotButton_->setObjectName("snapshotButton");
    snapshotButton_->setEnabled(false);
    snapshotButton_->setToolTip(
        "Snapshot mode: copy the newest AUX bytes of every CPU (with the sideband flight recorder: the "
        "records new since the last snapshot) into the capture (Ctrl+Shift+S; "
        "also SIGUSR2 or `snapshot` on a control FIFO from the command line)");
    snapshotLabel_ = new QLabel;
    snapshotLabel_->setObjectName("snapshotLabel");
    auto* shortcut = new QShortcut(QKeySequence("Ctrl+Shift+S"), this);
    connect(shortcut, &QShortcut::activated, this, &CapturePage::takeSnapshot);
    connect(snapshotButton_, &QPushButton::clicked, this, &CapturePage::takeSnapshot);
    buttons->addWidget(startButton_);
    buttons->addWidget(stopButton_);
    buttons->addWidget(snapshotButton_);
    buttons->addWidget(snapshotLabel_);
    backlogLabel_ = new QLabel;
    backlogLabel_->setObjectName("writerBacklogLabel");
    backlogLabel_->setToolTip(
        "Writer backlog: what the file writer holds in memory because the disk is slower than the capture "
        "(now, peak, budget). Past the budget records wait in the kernel's rings, which lose them when full");
    buttons->addWidget(backlogLabel_);
    triggerLabel_ = new QLabel;
    triggerLabel_->setObjectName("triggerLabel");
    triggerLabel_->setVisible(false);
    replayOpenProgress_ = new QProgressBar;
    replayOpenProgress_->setObjectName("replayOpenProgress");
    replayOpenProgress_->setMaximumWidth(200);
    replayOpenProgress_->setVisible(false);
    replayOpenCancel_ = new QPushButton("Cancel");
    replayOpenCancel_->setObjectName("replayOpenCancel");
    replayOpenCancel_->setToolTip("Stop reading the recording to replay");
    replayOpenCancel_->setVisible(false);
    connect(replayOpenCancel_, &QPushButton::clicked, this, [this] {
        if (replayOpening_) replayOpening_->cancel = true;
        replayOpenCancel_->setEnabled(false);
        setStatus("Cancelling…");
    });
    replayOpenTimer_ = new QTimer(this);
    replayOpenTimer_->setInterval(100);
    connect(replayOpenTimer_, &QTimer::timeout, this, [this] {
        if (!replayOpening_) return;
        const uint64_t total = replayOpening_->total.load(), done = replayOpening_->done.load();
        if (!total) return;  // the reader's open, before the walk: busy
        replayOpenProgress_->setRange(0, 1000);
        replayOpenProgress_->setValue(int(1000.0 * double(done) / double(total)));
    });
    buttons->addWidget(status_, 1);
    buttons->addWidget(replayOpenProgress_);
    buttons->addWidget(replayOpenCancel_);

    auto* controls = new QGroupBox("Capture");
    auto* controlsLayout = new QVBoxLayout(controls);
    controlsLayout->addLayout(form_->layout());
    controlsLayout->addWidget(form_->auxPanel());
    triggers_ = new TriggerEditor;
    controlsLayout->addWidget(triggers_);
    connect(form_, &CaptureForm::statusMessage, this, &CapturePage::setStatus);
    connect(form_->auxPanel(), &AuxOptionsPanel::exampleRequested, this, &CapturePage::openExampleRequested);
    connect(form_->auxPanel(), &AuxOptionsPanel::replayExampleRequested, form_, &CaptureForm::replayExample);
    controlsLayout->addLayout(buttons);
    triggerLabel_->setWordWrap(true);
    controlsLayout->addWidget(triggerLabel_);  // under Start: the firings, skips and snapshots

    stats_ = new LiveStatsView(this);

    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(stats_->throughputChart());
    charts->addWidget(stats_->lostChart());
    auto* flow = new QGroupBox("Live timeline: the newest 30 s of the capture");
    auto* flowLayout = new QVBoxLayout(flow);
    live_ = new LiveTimeline(this);
    flowLayout->addWidget(live_->status());
    flowLayout->addWidget(live_->view(), 1);

    auto* split = split_ = new QSplitter(Qt::Vertical);
    split->addWidget(stats_->table());
    split->addWidget(charts);
    split->addWidget(flow);
    // The live timeline gets most of the room: the table needs no more than its
    // rows (rebuildCpuRows caps it), the charts are read at a glance.
    split->setStretchFactor(0, 0);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 3);
    window_memory::rememberSplitter(split, "captureSplit");
    window_memory::rememberSplitter(charts, "captureCharts");

    // Where captures go and what was made or opened lately (issue 27): captures
    // are written into a folder the person sees and can change, and stay there.
    auto* files = new QGroupBox("Captures and recent files");
    files->setMaximumWidth(420);
    auto* filesLayout = new QVBoxLayout(files);
    auto* folderRow = new QHBoxLayout;
    folderLabel_ = new QLabel;
    folderLabel_->setObjectName("capturesFolder");
    folderLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    folderLabel_->setWordWrap(true);
    auto* change = new QPushButton("Change…");
    change->setObjectName("capturesFolderChange");
    change->setToolTip("Choose the folder new captures are written to (kept in the settings)");
    connect(change, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, "Folder for captures", capturesFolder());
        if (!dir.isEmpty()) setCapturesFolder(dir);
    });
    folderRow->addWidget(folderLabel_, 1);
    folderRow->addWidget(change);
    filesLayout->addLayout(folderRow);
    recentList_ = new QListWidget;
    recentList_->setObjectName("recentList");
    recentList_->setToolTip("Captures made and files opened, newest first (double-click opens)");
    connect(recentList_, &QListWidget::itemActivated, this, [this](QListWidgetItem* item) {
        if (!(item->flags() & Qt::ItemIsEnabled)) return;
        // Queued: opening rebuilds this list, which must not happen inside its own signal.
        const QString path = item->data(Qt::UserRole).toString();
        QMetaObject::invokeMethod(
            this, [this, path] { emit openRequested(path); }, Qt::QueuedConnection);
    });
    filesLayout->addWidget(recentList_, 1);
    setCapturesFolder(CaptureFiles::capturesFolder());
    refreshRecent();

    auto* top = new QHBoxLayout;
    top->addWidget(controls, 1);
    top->addWidget(files);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(split, 1);

    timer_ = new QTimer(this);
    timer_->setInterval(100);  // 10 Hz: the charts are replaced at most this often
    connect(timer_, &QTimer::timeout, this, &CapturePage::refresh);
    connect(startButton_, &QPushButton::clicked, this, &CapturePage::start);
    connect(stopButton_, &QPushButton::clicked, this, &CapturePage::stop);
    form_->showTargetKind();

    // Show the CPUs before the first capture so the page is not empty.
    stats_->showCpus(onlineCpus(), split_);
    showAccessHint(form_->replaySelected());
    connect(form_, &CaptureForm::replayChosen, this, &CapturePage::showAccessHint);

    // Triggers resolve against the target's binary: follow the target.
    if (auto* kind = findChild<QComboBox*>("targetKind"))
        connect(kind, &QComboBox::currentIndexChanged, this, &CapturePage::updateTriggerBinary);
    if (auto* value = findChild<QLineEdit*>("targetValue"))
        connect(value, &QLineEdit::textChanged, this, &CapturePage::updateTriggerBinary);
    connect(triggers_, &TriggerEditor::validityChanged, this, [this](bool ok) {
        if (capturing() || replayOpening_) return;
        startButton_->setEnabled(ok);
        const QString wrong = triggers_->firstError();
        startButton_->setToolTip(ok                ? QString()
                                 : wrong.isEmpty() ? "Checking the triggers…"
                                                   : "A trigger is wrong: " + wrong);
    });
    updateTriggerBinary();
}

void CapturePage::updateTriggerBinary() {
    auto o = form_->options();
    triggers_->setDefaultBinary(
        o && !form_->replaySelected() ? QString::fromStdString(triggerDefaultBinary(*o)) : QString());
}

void CapturePage::showTriggerReport(const TriggerReport& r) {
    triggerReport_ = r;
    uint64_t skipped = 0;
    QStringList reasons;
    static const char* const shortReasons[] = {"thread", "limit", "gap", "pending"};
    for (size_t i = 0; i < r.skipped.size(); ++i) {
        skipped += r.skipped[i];
        if (r.skipped[i]) reasons << QString("%1 %2").arg(shortReasons[i]).arg(r.skipped[i]);
    }
    QStringList per;
    for (size_t i = 0; i < r.triggers.size(); ++i)
        per << QString("%1: %2")
                   .arg(QString::fromStdString(r.triggers[i]))
                   .arg(i < r.perTrigger.size() ? r.perTrigger[i] : 0);
    triggerLabel_->setText(QString("Triggers: %1 firings (%2); %3 skipped%4; %5 of %6 snapshots taken")
                               .arg(r.firings.size())
                               .arg(per.join(", "))
                               .arg(skipped)
                               .arg(reasons.isEmpty() ? QString() : " (" + reasons.join(", ") + ")")
                               .arg(r.snapshotsTaken)
                               .arg(r.snapshotsRequested));
    QString tip;
    for (size_t i = 0; i < r.skipped.size(); ++i)
        tip += QString("skipped, %1: %2\n").arg(triggerSkipName(TriggerSkip(i))).arg(r.skipped[i]);
    tip += QString("trigger samples %1, lost %2, returns without their entry %3")
               .arg(r.samples)
               .arg(r.lost)
               .arg(r.unmatchedEnds);
    triggerLabel_->setToolTip(tip);
    if (r.firings.size() == markedFirings_) return;
    std::vector<TimelineView::EventMarker> markers = TimelineView::firingMarkers(r);
    markedFirings_ = markers.size();
    live_->view()->setEventMarkers(std::move(markers));
}

void CapturePage::showAccessHint(bool replay) {
    const auto denied = perfCaptureUnavailableReason();
    if (!denied) return;
    if (replay)
        setStatus("A replay needs no privileges: Start feeds the recording through simulated CPUs.");
    else if (geteuid() != 0 && access(HelperCapture::helperPath().c_str(), X_OK) == 0)
        setStatus(
            QString("Capturing system-wide needs privileges this user lacks (perf_event_paranoid is %1, "
                    "no CAP_PERFMON): Start runs the capture in auxscope's capture helper, asking for "
                    "permission through pkexec.")
                .arg(perfEventParanoid()));
    else
        setStatus("Capture is not permitted here: " + QString::fromStdString(*denied), true);
}

CapturePage::~CapturePage() {
    helper_.reset();  // the helper stops its capture and completes the file
    if (replay_) replay_->stop();
    if (session_) {
        session_->requestStop();
        session_->wait();
    }
    if (finishThread_.joinable()) finishThread_.join();
    // A capture the page goes away with (no Stop, no window close: the
    // application quit under it) is completed here, never left half written.
    if (file_ && !finishing_) {
        if (auto done = file_->finish(); !done)
            std::fprintf(stderr, "auxscope: the capture file %s could not be completed: %s\n",
                         qPrintable(captureFile_), done.error().message.c_str());
    }
    if (replayOpening_) replayOpening_->cancel = true;
    if (replayOpenThread_.joinable()) replayOpenThread_.join();
    live_->abort();  // before the session its lanes read goes
    // Captures stay in the captures folder: nothing is deleted here.
}

QString CapturePage::capturesFolder() const {
    return CaptureFiles::capturesFolder();
}

void CapturePage::setCapturesFolder(const QString& folder) {
    CaptureFiles::setCapturesFolder(folder);
    const QString shown = CaptureFiles::capturesFolder();
    folderLabel_->setText("New captures go to " + shown);
    folderLabel_->setToolTip(shown);
    emit statusMessage("New captures go to " + shown);
}

void CapturePage::refreshRecent() {
    recentList_->clear();
    for (const QString& f : CaptureFiles::recentFiles()) {
        const bool exists = QFileInfo::exists(f);
        auto* item = new QListWidgetItem(QFileInfo(f).fileName() + (exists ? QString() : "  (missing)"));
        item->setData(Qt::UserRole, f);
        item->setToolTip(f);
        if (!exists) item->setFlags(item->flags() & ~Qt::ItemIsEnabled);  // greyed
        recentList_->addItem(item);
    }
    if (recentList_->count() == 0) {
        auto* item = new QListWidgetItem("No captures or files yet");
        item->setFlags(Qt::NoItemFlags);
        recentList_->addItem(item);
    }
}

void CapturePage::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #b00020;" : "");
    emit statusMessage(text);
}

void CapturePage::start() {
    if (session_ || helperCapture_ || replayOpening_) return;
    auto opts = form_->options();
    if (!opts) {
        setStatus("Cannot start: " + QString::fromStdString(opts.error().message), true);
        return;
    }
    // Snapshot triggers are checked (parsed, resolved) before anything opens.
    std::optional<TriggerEditor::Armed> armed;
    if (triggers_->count()) {
        updateTriggerBinary();
        if (!triggers_->validate()) {
            openedReplay_.reset();
            setStatus("Cannot start: " + triggers_->firstError(), true);
            return;
        }
        if (form_->replaySelected() && !form_->replayFlightRecorder()) {
            openedReplay_.reset();
            setStatus(
                "Cannot start: the triggers take snapshots: tick the replay's \u201cflight-recorder "
                "(snapshot) "
                "mode\u201d (or remove the triggers)",
                true);
            return;
        }
        if (!form_->replaySelected() && !opts->takesSnapshots()) {
            setStatus(
                "Cannot start: the triggers take snapshots: tick \u201cSideband flight recorder\u201d or "
                "choose the AUX snapshot mode (or remove the triggers)",
                true);
            return;
        }
        auto a = triggers_->resolved();
        if (!a) {
            openedReplay_.reset();
            setStatus("Cannot start: " + QString::fromStdString(a.error().message), true);
            return;
        }
        armed = std::move(a.value());
    }
    if (form_->replaySelected() && !openedReplay_) return openReplayThenStart(form_->target());
    // Every capture streams into a perf.data while it runs (File > Save capture as
    // keeps it); the drain thread only hands records to the file's queue.
    // It goes straight into the captures folder, named by date, time and target.
    // A folder that cannot be made (a home that is not writable) does not stop a
    // capture: it goes to a folder of this user's in the temporary folder, and
    // the status line says so.
    // A replay is named after its recording, less a ".data" the capture's own name adds back.
    QString replayed = QFileInfo(form_->target()).fileName();
    if (replayed.endsWith(".data")) replayed.chop(5);
    const QString target =
        form_->replaySelected() ? "replay-" + replayed : QString::fromStdString(describeTarget(*opts));
    QString folderError, folderNote;
    QString path = CaptureFiles::newCapturePath(CaptureFiles::capturesFolder(), target, &folderError);
    if (path.isEmpty()) {
        const QString fallback = QDir::temp().filePath(QString("auxscope-captures-%1").arg(::getuid()));
        QString fallbackError;
        path = CaptureFiles::newCapturePath(fallback, target, &fallbackError);
        if (path.isEmpty()) {
            openedReplay_.reset();
            setStatus("Cannot start: " + folderError + ", nor " + fallback +
                          " (choose another folder with Change…)",
                      true);
            return;
        }
        folderNote = " (" + folderError + ": this capture goes to " + fallback + ")";
    }
    PerfDataWriterCaptureOptions fileOptions;
    fileOptions.path = path.toStdString();
    fileOptions.version = std::string("auxscope ") + AUXSCOPE_VERSION;
    fileOptions.cmdline = {"auxscope", "(GUI capture)", describeTarget(*opts)};
    // Without the privileges, the capture helper opens everything, the triggers' uprobes and
    // tracepoints too (it resolves them again for this user, then arms them as here).
    const TriggerSettings helperTriggers = armed ? armed->settings : TriggerSettings{};
    if (!form_->replaySelected() && needsHelper({})) return startWithHelper(*opts, path, helperTriggers);
    auto session = openSession(*opts, fileOptions);
    if (!session && !form_->replaySelected() && needsHelper(session.error().message)) {
        QFile::remove(path);
        return startWithHelper(*opts, path, helperTriggers);
    }
    if (!session) {
        replay_.reset();
        setStatus("Cannot start: " + QString::fromStdString(session.error().message), true);
        return;
    }
    // Armed as `auxscope record --trigger` arms them: the same objects, before the file.
    if (armed)
        if (auto r = (*session)->armTriggers(std::move(armed->triggers), armed->settings); !r) {
            replay_.reset();
            QFile::remove(path);
            setStatus("Cannot start: " + QString::fromStdString(r.error().message), true);
            return;
        }
    auto file = PerfDataWriterCapture::open(**session, fileOptions);
    if (!file) {
        replay_.reset();
        setStatus("Cannot start: " + QString::fromStdString(file.error().message), true);
        return;
    }
    // The live timeline (its flow decoded while capturing, for Intel PT and CoreSight).
    live_->attach(**session, form_->decodeWhileCapturing(), fileOptions.auxtraceInfo);
    if (auto r = (*session)->start(); !r) {
        live_->abort();
        replay_.reset();
        setStatus("Cannot start: " + QString::fromStdString(r.error().message), true);
        return;
    }
    if (replay_) {
        if (auto r = replay_->start(**session, replayOptions_); !r) {
            (*session)->requestStop();
            (*session)->wait();
            (void)(*file)->finish();
            live_->abort();
            replay_.reset();
            setStatus("Cannot start the replay: " + QString::fromStdString(r.error().message), true);
            return;
        }
    }
    session_ = std::move(session.value());
    file_ = std::move(file.value());
    captureFile_ = path;
    stopping_ = false;
    stats_->begin(session_->cpus(), session_->auxPlan().has_value() || session_->simulated(), split_);
    setFormEnabled(false);
    stopButton_->setEnabled(true);
    const bool flightRecorder = session_->options().takesSnapshots();
    snapshotButton_->setEnabled(flightRecorder);
    snapshotLabel_->setText(flightRecorder ? "Snapshots: 0" : QString());
    backlogLabel_->setText(QString());
    markedFirings_ = 0;
    live_->view()->setEventMarkers({});
    triggerReport_ = {};
    triggerLabel_->setVisible(session_->triggerEngine() != nullptr);
    if (session_->triggerEngine()) showTriggerReport(session_->triggerEngine()->report());
    if (replay_)
        setStatus("Replaying " + QString::fromStdString(replay_->path()) + " at " +
                  QString::fromStdString(describeReplaySpeed(replayOptions_.speed)) +
                  " — a REPLAY of recorded trace through simulated CPUs, not live hardware — into " + path +
                  "…" + folderNote);
    else
        setStatus("Capturing " + QString::fromStdString(describeTarget(*opts)) +
                  (opts->callGraph.enabled()
                       ? ", call stacks: " + QString::fromStdString(describeCallGraph(opts->callGraph))
                       : QString()) +
                  " into " + path + "…" + folderNote);
    timer_->start();
    emit captureStarted();
}

void CapturePage::openReplayThenStart(const QString& path) {
    if (path.isEmpty()) {
        setStatus("Cannot start: choose a recording to replay (Browse…)", true);
        return;
    }
    if (replayOpenThread_.joinable()) replayOpenThread_.join();  // the last one has reported
    auto opening = std::make_shared<ReplayOpening>();
    replayOpening_ = opening;
    setFormEnabled(false);
    replayOpenProgress_->setRange(0, 0);  // busy until the walk reports
    replayOpenProgress_->setVisible(true);
    replayOpenCancel_->setEnabled(true);
    replayOpenCancel_->setVisible(true);
    replayOpenTimer_->start();
    setStatus("Reading " + path + " to replay it…");
    QPointer<CapturePage> self(this);
    replayOpenThread_ = std::thread([self, opening, path = path.toStdString()] {
        auto source = ReplaySource::open(path, [&](uint64_t done, uint64_t total) {
            opening->done = done;
            opening->total = total;
            return !opening->cancel.load();
        });
        auto result = std::make_shared<Expected<std::unique_ptr<ReplaySource>>>(std::move(source));
        QMetaObject::invokeMethod(
            qApp,
            [self, result] {
                if (self) self->replayOpened(std::move(*result));
            },
            Qt::QueuedConnection);
    });
}

void CapturePage::replayOpened(Expected<std::unique_ptr<ReplaySource>> source) {
    const bool cancelled = replayOpening_ && replayOpening_->cancel.load();
    replayOpening_.reset();
    replayOpenTimer_->stop();
    replayOpenProgress_->setVisible(false);
    replayOpenCancel_->setVisible(false);
    setFormEnabled(true);
    if (cancelled) {
        setStatus("Replay not started: reading the recording was cancelled.");
        return;
    }
    if (!source) {
        setStatus("Cannot start: " + QString::fromStdString(source.error().message), true);
        return;
    }
    openedReplay_ = std::move(source.value());
    start();
    openedReplay_.reset();  // a start that failed before taking it: the next Start reads the file again
}

void CapturePage::setFormEnabled(bool enabled) {
    form_->setEnabled(enabled);
    triggers_->setEditable(enabled);
    startButton_->setEnabled(enabled && (triggers_->valid() || !triggers_->count()));
}

Expected<std::unique_ptr<CaptureSession>> CapturePage::openSession(
    const CaptureOptions& options, PerfDataWriterCaptureOptions& fileOptions) {
    if (!form_->replaySelected()) return CaptureSession::open(options, pmus_);
    // Opened on a worker by openReplayThenStart().
    if (!openedReplay_) return makeError("no recording to replay was opened");
    Expected<std::unique_ptr<ReplaySource>> source = std::move(openedReplay_);
    openedReplay_.reset();
    const std::string path = (*source)->path();
    auto replayOptions = form_->replayOptions((*source)->recordedSeconds());
    if (!replayOptions) return replayOptions.error();
    replayOptions_ = *replayOptions;
    auto session = (*source)->openSession(replayOptions_);
    if (!session) return session.error();
    fileOptions.auxtraceInfo = (*source)->auxtraceInfo(replayOptions_);
    fileOptions.cmdline = {"auxscope", "(GUI replay)", path};
    replay_ = std::move(source.value());
    return session;
}

void CapturePage::takeSnapshot() {
    if (helperCapture_) {
        if (stopping_ || !helper_->takesSnapshots() || helper_->state() != HelperCapture::State::Running)
            return;
        helper_->requestSnapshot();
        setStatus("Snapshot requested…");
        return;
    }
    if (!session_ || stopping_ || !session_->options().takesSnapshots()) return;
    session_->requestSnapshot();  // async: the drain thread copies, the timer shows the count
    setStatus("Snapshot requested…");
}

void CapturePage::stop() {
    if (helperCapture_) {
        // Still authenticating or starting: stop as soon as it runs (or ends
        // there if it fails), so that a window closing meanwhile still closes.
        if (!stopping_ && (helper_->state() == HelperCapture::State::Connecting ||
                           helper_->state() == HelperCapture::State::Starting))
            stopWhenRunning_ = true;
        if (stopping_ || helper_->state() != HelperCapture::State::Running) return;
        stopping_ = true;
        stopButton_->setEnabled(false);
        snapshotButton_->setEnabled(false);
        helper_->requestStop();
        setStatus("Stopping…");
        return;
    }
    if (!session_ || stopping_) return;
    stopping_ = true;
    stopButton_->setEnabled(false);
    snapshotButton_->setEnabled(false);
    if (replay_) replay_->requestStop();
    session_->requestStop();  // returns at once; refresh() notices when the drain thread is done
    setStatus("Stopping…");
}

void CapturePage::refresh() {
    if (helperCapture_) {
        refreshHelper();
        return;
    }
    if (!session_) return;
    const auto snaps = session_->stats().snapshotAll();
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - session_->startTime()).count();
    stats_->show(snaps, t);
    if (file_) {
        const auto st = file_->sink().stats();
        const auto mib = [](uint64_t b) { return QString::number(double(b) / double(1 << 20), 'f', 1); };
        QString text = QString("Writer backlog: %1 MiB (peak %2 of %3 MiB)")
                           .arg(mib(st.backlogBytes))
                           .arg(mib(st.maxBacklogBytes))
                           .arg(mib(st.backlogBudget));
        if (st.recordsHeldBack + st.auxHeldBack)
            text += QString("; at its budget %1 times: records wait in the kernel's rings")
                        .arg(st.recordsHeldBack + st.auxHeldBack);
        backlogLabel_->setText(text);
        backlogLabel_->setStyleSheet(st.recordsHeldBack + st.auxHeldBack ? "color: #b00000" : QString());
    }
    if (session_->options().takesSnapshots()) {
        uint64_t bytes = 0;
        for (auto& c : snaps)
            bytes += c.totals.auxSnapshotBytes + c.totals.backwardBytes;
        snapshotLabel_->setText(QString("Snapshots: %1 (%2)")
                                    .arg(session_->snapshotCount())
                                    .arg(humanRate(double(bytes)).chopped(2)));
    }
    if (replay_ && !stopping_) {
        const auto p = replay_->progress();
        status_->setText(QString("REPLAY of %1 (recorded trace through simulated CPUs, not live hardware): "
                                 "%2 of %3 AUX bytes fed, %4 of %5 s of recorded time%6; writing %7")
                             .arg(QString::fromStdString(replay_->path()))
                             .arg(p.auxBytesFed)
                             .arg(p.auxBytesTotal)
                             .arg(p.recordedSecondsFed, 0, 'f', 3)
                             .arg(p.recordedSeconds, 0, 'f', 3)
                             .arg(p.passesDone ? QString(", pass %1").arg(p.passesDone + 1) : QString())
                             .arg(captureFile_));
    }
    // The triggers' firings: the engine's report is a copy under its lock, never a wait.
    // Read when there are new firings, and twice a second for the skips' counts.
    if (const TriggerEngine* te = session_->triggerEngine())
        if (te->firingCount() != triggerReport_.firings.size() || ++triggerTicks_ % 5 == 0)
            showTriggerReport(te->report());
    live_->tick();
    if (session_->finished() && !finishing_) beginFinishing();
}

bool CapturePage::needsHelper(const std::string& openError) const {
    if (helper_ && helper_->inherited()) return true;
    if (std::getenv("AUXSCOPE_CAPTURE_HELPER_FD")) return true;
    if (geteuid() == 0) return false;
    // The kernel or tracefs refused what an unprivileged user may not do.
    const std::string& e = openError;
    return e.find("perf_event_paranoid") != std::string::npos ||
           e.find("ermission denied") != std::string::npos || e.find("not permitted") != std::string::npos ||
           e.find("CAP_PERFMON") != std::string::npos;
}

void CapturePage::startWithHelper(const CaptureOptions& options, const QString& path,
                                  const TriggerSettings& triggers) {
    if (!helper_) helper_ = std::make_unique<HelperCapture>();
    helperCapture_ = true;
    helperRowsBuilt_ = false;
    stopWhenRunning_ = false;
    helperCallGraph_ = options.callGraph;
    stopping_ = false;
    captureFile_ = path;
    live_->helperCapture();
    setFormEnabled(false);
    stopButton_->setEnabled(false);
    snapshotButton_->setEnabled(false);
    // A launched command runs where auxscope was started, as it does without the
    // helper (the helper would otherwise use the user's home).
    CaptureOptions o = options;
    if (o.target == TargetKind::Command && o.commandCwd.empty())
        o.commandCwd = QDir::currentPath().toStdString();
    helper_->begin(o, path.toStdString(), triggers);
    setStatus(helper_->state() == HelperCapture::State::Connecting
                  ? "Capture needs privileges: starting the capture helper through pkexec (authenticate in "
                    "the dialog that opens)…"
                  : "Starting the capture in the capture helper…");
    timer_->start();
}

void CapturePage::refreshHelper() {
    for (auto& note : helper_->takeNotes())
        setStatus(status_->text() + "\n" + QString::fromStdString(note));
    const auto state = helper_->state();
    if (state == HelperCapture::State::Running || state == HelperCapture::State::Finished) {
        if (!helperRowsBuilt_) {
            helperRowsBuilt_ = true;
            stats_->begin(helper_->cpus(), helper_->hasAux(), split_);
            stopButton_->setEnabled(true);
            snapshotButton_->setEnabled(helper_->takesSnapshots());
            snapshotLabel_->setText(helper_->takesSnapshots() ? "Snapshots: 0" : QString());
            setStatus(QString("Capturing %1 in the capture helper (running as %2, writing into a file owned "
                              "by uid %3) into %4…")
                          .arg(QString::fromStdString(helper_->target()) +
                               (helperCallGraph_.enabled()
                                    ? ", call stacks: " +
                                          QString::fromStdString(describeCallGraph(helperCallGraph_))
                                    : QString()))
                          .arg(helper_->helperEuid() == 0 ? QString("root")
                                                          : QString("uid %1").arg(helper_->helperEuid()))
                          .arg(helper_->helperUid())
                          .arg(captureFile_));
            emit captureStarted();
            if (stopWhenRunning_) stop();
        }
        if (auto* stats = helper_->stats()) {
            const double t =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - helper_->startTime())
                    .count();
            stats_->show(stats->snapshotAll(), t);
        }
    }
    if (state == HelperCapture::State::Failed) {
        timer_->stop();
        helperCapture_ = false;
        const bool started = helperRowsBuilt_;
        setFormEnabled(true);
        stopButton_->setEnabled(false);
        snapshotButton_->setEnabled(false);
        // A capture that never started leaves its empty file behind: not a capture.
        if (!started) QFile::remove(captureFile_);
        setStatus((started ? "The capture ended with an error: " : "Cannot start: ") +
                      QString::fromStdString(helper_->failure()),
                  true);
        if (started || stopWhenRunning_) emit captureFinished();
        stopWhenRunning_ = false;
        return;
    }
    if (state == HelperCapture::State::Finished) {
        timer_->stop();
        helperCapture_ = false;
        const auto rep = helper_->report();
        lastSummary_ = rep->summary;
        FileFigures f;
        f.fileBytes = rep->fileBytes;
        f.auxBytes = rep->auxBytes;
        f.heldBack = rep->recordsHeldBack + rep->auxHeldBack;
        f.maxBacklog = rep->maxBacklogBytes;
        f.backlogBudget = rep->backlogBudget;
        finishing_ = true;
        fileFinished(QString::fromStdString(rep->fileError), f);
    }
}

void CapturePage::beginFinishing() {
    timer_->stop();
    finishing_ = true;
    if (replay_) replay_->stop();  // its driver thread feeds the session's producers
    session_->wait();              // the drain thread has ended: this returns at once
    lastSummary_ = session_->summary();
    if (const TriggerEngine* te = session_->triggerEngine()) showTriggerReport(te->report());
    live_->captureEnded();
    // A replay says so to the end (the replay of a short recording can be over
    // before anyone reads its first status line).
    setStatus(replay_ ? "Completing " + captureFile_ + ", the REPLAY of " +
                            QString::fromStdString(replay_->path()) +
                            " (recorded trace through simulated CPUs, not live hardware)…"
                      : "Completing " + captureFile_ + "…");
    // Completing the file (queued records, features, build-ids) touches the disk:
    // not on the GUI thread.
    if (finishThread_.joinable()) finishThread_.join();
    QPointer<CapturePage> self(this);
    finishThread_ =
        std::thread([self, file = file_, live = live_->decoderToFinish(), lanes = live_->lanesToFinish()] {
            if (live) {
                live->flush();  // what came in after the last tick
                live->stop();
            }
            if (lanes) {
                lanes->flush();  // every record of the capture, with the decoder's last spans
                lanes->stop();
            }
            auto done = file->finish();
            QString error = done ? QString() : QString::fromStdString(done.error().message);
            const auto report = file->report();
            FileFigures f;
            f.fileBytes = report.fileBytes;
            f.auxBytes = report.auxBytes;
            f.heldBack = report.recordsHeldBack + report.auxHeldBack;
            f.maxBacklog = report.maxBacklogBytes;
            f.backlogBudget = report.backlogBudget;
            QMetaObject::invokeMethod(
                qApp,
                [self, error, f] {
                    if (self) self->fileFinished(error, f);
                },
                Qt::QueuedConnection);
        });
}

void CapturePage::fileFinished(const QString& error, const FileFigures& report) {
    const CpuCounters total = lastSummary_.total();
    QString text = QString("Stopped after %1 s: %2 records, %3 lost records, %4 lost samples.")
                       .arg(lastSummary_.seconds, 0, 'f', 1)
                       .arg(total.records)
                       .arg(total.lostRecords)
                       .arg(total.lostSamples);
    // The call-graph mode the samples carry (the helper reports its own).
    text.chop(1);
    text += lastSummary_.callGraph.enabled()
                ? "; call stacks: " + QString::fromStdString(describeCallGraph(lastSummary_.callGraph)) + "."
                : "; no call stacks.";
    for (auto& m : lastSummary_.messages)
        text += "\n" + QString::fromStdString(m);
    for (auto& l : lastSummary_.sinkLosses)
        text += QString("\nfile writer dropped %1 records of cpu %2: %3")
                    .arg(l.records)
                    .arg(l.cpu)
                    .arg(QString::fromStdString(l.reason));
    if (report.auxBytes || total.auxTruncated)
        text += QString(
                    "\nAUX trace in the file: %1 MB; the AUX area filled and the kernel stopped the trace %2 "
                    "times (TRUNCATED, marked in the file)")
                    .arg(double(report.auxBytes) / 1e6, 0, 'f', 1)
                    .arg(total.auxTruncated);
    if (report.backlogBudget)
        text += QString("\nWriter backlog: peak %1 of a %2 MiB budget.")
                    .arg(double(report.maxBacklog) / double(1 << 20), 0, 'f', 1)
                    .arg(double(report.backlogBudget) / double(1 << 20), 0, 'f', 1);
    if (report.heldBack && (total.lostRecords || total.auxTruncated))
        text += QString(
                    "\nThe kernel lost %1 records while the file writer was behind: its backlog was at its "
                    "budget (a slow disk)")
                    .arg(total.lostRecords);
    if (report.heldBack)
        text += QString("\nThe file writer was behind %1 times: the data waited in the kernel's rings%2")
                    .arg(report.heldBack)
                    .arg(total.undeliveredRecords + total.undeliveredAuxBytes
                             ? QString("; %1 records and %2 AUX bytes were never taken (see above)")
                                   .arg(total.undeliveredRecords)
                                   .arg(total.undeliveredAuxBytes)
                             : QString(", nothing was dropped by auxscope"));
    if (error.isEmpty()) {
        lastCaptureFile_ = captureFile_;
        text +=
            QString(
                "\nCapture written to %1 (%2 bytes); it stays in the captures folder until you discard it "
                "(File > Save capture as… copies it elsewhere).")
                .arg(captureFile_)
                .arg(report.fileBytes);
    } else {
        text += "\nThe capture file " + captureFile_ + " could not be completed (it is left there): " + error;
    }
    live_->finish();
    session_.reset();
    file_.reset();
    replay_.reset();
    finishing_ = false;
    setFormEnabled(true);
    stopButton_->setEnabled(false);
    setStatus(text, !error.isEmpty());
    emit captureFinished();
    if (error.isEmpty()) emit captureFileReady(lastCaptureFile_);
}

const LiveHistory& CapturePage::history() const {
    return stats_->history();
}

TimelineView* CapturePage::liveTimeline() const {
    return live_->view();
}

const LiveTraceDecoder* CapturePage::liveDecoder() const {
    return live_->decoder();
}

const LiveSideband* CapturePage::liveLanes() const {
    return live_->lanes();
}

bool CapturePage::saveCaptureAs(const QString& path) {
    if (lastCaptureFile_.isEmpty()) return false;
    if (QFileInfo(path).absoluteFilePath() == QFileInfo(lastCaptureFile_).absoluteFilePath()) return true;
    QFile::remove(path);
    if (!QFile::copy(lastCaptureFile_, path)) {
        setStatus("Cannot save the capture to " + path, true);
        return false;
    }
    setStatus("Capture saved to " + path);
    return true;
}

}  // namespace auxscope
