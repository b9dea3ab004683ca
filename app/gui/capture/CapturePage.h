// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/capture/: capturing from the GUI. It owns the capture page (the form,
// Start and Stop, snapshots, replays), its live statistics (LiveStatsView,
// LiveHistory), its live timeline (LiveTimeline, with a TimelineState of its
// own), the capture helper the page starts through pkexec (HelperCapture) and
// the AUX options panel. It may include timeline/ (and capture/, decode/), not
// analysis/, trace/ or the main window.
//
// The capture page: target, events and buffer size; Start and Stop; live
// per-CPU ring fill bars and lost counters; charts of throughput and lost
// records per CPU over the last 60 s. A 10 Hz timer reads lock-free statistics
// snapshots, so the GUI thread never waits on the drain thread. Below them, the
// live timeline of every capture run here: CPU lanes, threads with their runs
// and samples, and loss markers of the newest 30 s (LiveSideband's worker builds
// it with the pipeline a file's timeline takes), with, for Intel PT and CoreSight
// captures, the instruction flow decoded while capturing (LiveTraceDecoder).
// Snapshot triggers (TriggerEditor, issue 29) are checked before Start and
// armed on the session as `auxscope record --trigger` arms them; the timer
// counts their firings under Start and marks each on the live timeline.
#include <QWidget>

#include <atomic>
#include <memory>
#include <thread>

#include "CaptureSession.h"
#include "TriggerReport.h"
#include "gui/capture/LiveHistory.h"
#include "gui/common/ExampleMaker.h"
#include "record/PerfDataWriterCapture.h"
#include "record/ReplaySource.h"

class QCheckBox;
class QComboBox;
class QShortcut;
class QSplitter;
class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTimer;

namespace auxscope {

class CaptureForm;
class HelperCapture;
class LiveSideband;
class LiveStatsView;
class LiveTimeline;
class LiveTraceDecoder;
class TimelineView;
class TriggerEditor;

class CapturePage : public QWidget {
    Q_OBJECT
public:
    explicit CapturePage(QWidget* parent = nullptr);
    ~CapturePage() override;

    // True from Start until the capture's perf.data is complete.
    bool capturing() const { return session_ != nullptr || helperCapture_; }
    // The privileged capture helper this page uses when a capture needs
    // privileges the GUI has not (null until the first such capture).
    const HelperCapture* helper() const { return helper_.get(); }
    // The perf.data of the last finished capture (in the captures folder, where
    // it stays until the person discards it).
    const QString& lastCaptureFile() const { return lastCaptureFile_; }
    // The perf.data the running (or last started) capture writes.
    const QString& currentCaptureFile() const { return captureFile_; }
    // Where the next capture is written (CaptureFiles::capturesFolder(); shown
    // on the page, object name "capturesFolder", with "Change…").
    QString capturesFolder() const;
    void setCapturesFolder(const QString& folder);
    // Rebuilds the page's recent list (object name "recentList") from CaptureFiles.
    void refreshRecent();
    bool saveCaptureAs(const QString& path);
    const LiveHistory& history() const;
    // The summary of the last finished capture (empty target before the first).
    const CaptureSummary& lastSummary() const { return lastSummary_; }
    // The live timeline: sideband lanes of every capture, and the instruction
    // flow decoded while capturing (Intel PT, CoreSight).
    // The live timeline itself (where its code files are looked for: LiveTimeline::setImageOptions).
    LiveTimeline* live() const { return live_; }
    TimelineView* liveTimeline() const;
    // Its decoder while an AUX capture runs (null otherwise).
    const LiveTraceDecoder* liveDecoder() const;
    // The live sideband behind its lanes while a capture runs here (null otherwise,
    // and for captures in the capture helper).
    const LiveSideband* liveLanes() const;

    // The snapshot triggers (object name "triggerEditor"): armed at Start with
    // CaptureSession::armTriggers, as `auxscope record --trigger` arms them.
    TriggerEditor* triggerEditor() const { return triggers_; }
    // The triggers' firings and skips: of the running capture as the refresh timer
    // last read them, then of the last capture (empty without triggers). Each
    // firing is marked on the live timeline; the line "triggerLabel" counts them.
    const TriggerReport& triggerReport() const { return triggerReport_; }
    QLabel* triggerLabel() const { return triggerLabel_; }

public slots:
    void start();
    void stop();
    // Snapshot mode: copy the newest AUX bytes of every CPU now (also Ctrl+Shift+S).
    void takeSnapshot();

signals:
    void captureStarted();
    void captureFinished();
    void statusMessage(const QString& text);
    void captureFileReady(const QString& path);
    // The person picked an entry of the recent list.
    void openRequested(const QString& path);
    // The person asked to open an example (the AUX panel's "Open an example").
    void openExampleRequested(ExampleKind kind);

private slots:
    void refresh();

private:
    void setStatus(const QString& text, bool error = false);
    // What this user may capture live (the helper asks for permission, or nothing
    // may), or that a replay needs no privileges: the page's line before a capture.
    void showAccessHint(bool replay);
    void setFormEnabled(bool enabled);  // the form and Start
    // Opens the session for the form: the kernel's, or a replay's simulated CPUs.
    Expected<std::unique_ptr<CaptureSession>> openSession(const CaptureOptions& options,
                                                          PerfDataWriterCaptureOptions& fileOptions);
    void beginFinishing();
    // The file writer's figures shown when a capture ends.
    struct FileFigures {
        uint64_t fileBytes = 0, auxBytes = 0, heldBack = 0;
        uint64_t maxBacklog = 0, backlogBudget = 0;  // the writer backlog's peak and budget
    };
    void fileFinished(const QString& error, const FileFigures& figures);
    // Whether this capture goes through the capture helper: the process is not
    // privileged and the kernel refused (`openError`), or a helper was handed over.
    bool needsHelper(const std::string& openError) const;
    void startWithHelper(const CaptureOptions& options, const QString& path,
                         const TriggerSettings& triggers = {});
    void refreshHelper();
    // The target's binary for triggers that name none (a command's, a process's).
    void updateTriggerBinary();
    // Shows `report` (the label, and a marker per firing on the live timeline).
    void showTriggerReport(const TriggerReport& report);
    std::unique_ptr<HelperCapture> helper_;
    bool helperCapture_ = false, helperRowsBuilt_ = false;
    bool stopWhenRunning_ = false;      // Stop came while the helper was still starting
    CallGraphOptions helperCallGraph_;  // what the helper's capture was asked for (its status line)

    TriggerEditor* triggers_ = nullptr;
    QLabel* triggerLabel_ = nullptr;
    TriggerReport triggerReport_;
    size_t markedFirings_ = 0;     // firings marked on the live timeline
    unsigned triggerTicks_ = 0;    // refreshes since the start (the skips are read every 5th)
    CaptureForm* form_ = nullptr;  // target, events, ring, AUX, decode while capturing
    std::unique_ptr<ReplaySource> replay_;
    ReplayOptions replayOptions_;
    LiveTimeline* live_ = nullptr;    // decoded while capturing (Intel PT, CoreSight) too
    LiveStatsView* stats_ = nullptr;  // the CPU table and the charts
    QPushButton* snapshotButton_ = nullptr;
    QLabel* snapshotLabel_ = nullptr;
    QLabel* backlogLabel_ = nullptr;  // the file writer's backlog, live
    QPushButton* startButton_ = nullptr;
    QPushButton* stopButton_ = nullptr;
    QLabel* status_ = nullptr;
    QSplitter* split_ = nullptr;  // table, charts, live timeline
    QLabel* folderLabel_ = nullptr;
    QListWidget* recentList_ = nullptr;
    QTimer* timer_ = nullptr;

    PmuRegistry pmus_;
    // Shared with the thread that completes the file after a capture.
    std::shared_ptr<CaptureSession> session_;
    std::shared_ptr<PerfDataWriterCapture> file_;
    std::thread finishThread_;
    // A replay's recording is read on a worker (ReplaySource::open walks the whole
    // file) with a progress bar and Cancel; start() goes on once it is open.
    void openReplayThenStart(const QString& path);
    void replayOpened(Expected<std::unique_ptr<ReplaySource>> source);
    struct ReplayOpening {
        std::atomic<bool> cancel{false};
        std::atomic<uint64_t> done{0}, total{0};
    };
    std::shared_ptr<ReplayOpening> replayOpening_;
    std::thread replayOpenThread_;
    std::unique_ptr<ReplaySource> openedReplay_;  // for the start() it was opened for
    QProgressBar* replayOpenProgress_ = nullptr;
    QPushButton* replayOpenCancel_ = nullptr;
    QTimer* replayOpenTimer_ = nullptr;
    bool finishing_ = false;
    QString captureFile_, lastCaptureFile_;
    CaptureSummary lastSummary_;
    bool stopping_ = false;
};

}  // namespace auxscope
