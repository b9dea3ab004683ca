// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/trace/: the trace page, a perf.data opened in the GUI. It owns the
// page (TraceFilePage), its Summary tab (TraceSummaryTree), its Timeline tab
// (TraceTimelineTab: the panes and their one TimelineState), what fills the
// timeline (TimelineDecodeController: lanes, overview, windows decoded on
// demand) and the exports (TraceExporter). It may include timeline/ and
// analysis/ (and decode/), not capture/ or the main window.
//
// A perf.data opened in the GUI: what it holds (header, events, features, per-CPU
// record counts, losses, AUX flags, every problem the reader found with its
// offset) and export to Perfetto or CSV. The file is read on a worker thread so
// a large file never freezes the window. A file with Intel PT data can be
// decoded (on a worker thread, with progress; small files start by
// themselves): the page then lists each thread's top functions and its gaps,
// and the Perfetto export carries the call-stack spans.
//
// Every file opens on a Timeline tab built from its sideband on a worker thread
// (with a progress bar): which thread ran on which CPU, each process's threads
// with their run slices and samples, the kernel's losses where they happened.
// Above the lanes, an OverviewStrip shows the whole recording at once (per-CPU
// activity, AUX trace density, losses; TimelineOverview, nothing decoded) with
// the timeline's window bracketed on it: click or drag there to move.
//
// With an AUX trace, the page also keeps one AuxTraceSession (opened on a worker
// thread, with the lanes and the overview) for its Timeline tab. The first frame
// is the whole recording with its lanes and overview, before anything is
// decoded; then the whole recording is decoded when its trace is within the
// decode budget (else its first 1/1000), and afterwards whatever window the
// view settles on, on a worker thread with a progress bar and Cancel (stale
// results dropped); a window over the budget says "zoom in to decode".
//
// Under the timeline, the answers (issue 14): a time range selected on it
// (Shift+drag, or a drag on the axis) is aggregated by RangeStatsPane (top
// functions, call tree, bottom-up, flame graph, threads and gaps; exportable
// as CSV or Perfetto, just that range); a clicked span's details
// (SpanDetailsPane) and its function's code (CodeView: disassembly with the
// instructions executed and their counts, source lines); `/` searches the
// spans and threads (SearchBar). All read the timeline's decoded data, and
// every pane obeys the tab's one TimelineState.
//
// A file's samples (issue 25) are read into a sampled profile with the
// sideband (TimelineDecodeController): the selection answers from them in the
// same views (a source choice beside the trace where there is one, off-CPU
// time where the file has switches), the lanes' samples carry their stacks on
// hover, and a sampled function's code shows its samples per instruction and
// source line.
//
// A file with snapshot triggers' firings (issue 29: its AUXSCOPE_TRIGGERS
// section, TriggerFeature) opens its timeline on the first firing, marks each
// (TimelineView::setEventMarkers: the firing, and a slow call's whole span on
// its thread) and lists them in a Triggers tab under the timeline (trigger,
// thread, CPU, time, duration, snapshot): a row jumps the timeline to its firing.
//
// Where the file's code and names come from (issue 27): its Symbols & binaries
// (SymbolSettings, kept per file, defaults for all; the file's folder searched
// automatically) go to everything that resolves images (the timeline's
// session and profile, the summary's decode). The header names the images
// still missing ("2 images missing: /data/local/tmp/etm_test_loop, …") beside
// a button to the dialog (SymbolsDialog); OK there resolves the file again:
// the timeline and its panes are rebuilt, the summary's decode redone.
#include <QPointer>
#include <QWidget>

#include <atomic>
#include <cstdint>
#include <memory>

#include "gui/trace/SymbolSettings.h"
#include "gui/trace/TraceTimelineTab.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableWidget;
class QTreeWidget;

namespace auxscope {

class PerfDataReader;
class SampleProfile;
class TimelineView;
class OverviewStrip;
class RangeStatsPane;
class SpanDetailsPane;
class SearchBar;
class CodeView;
class TraceExporter;
class TraceSummaryTree;
class TimelineDecodeController;
class SymbolsDialog;
class TimelineTour;
struct AuxTraceSpans;
struct TriggerFileData;

class TraceFilePage : public QWidget {
    Q_OBJECT
public:
    explicit TraceFilePage(const QString& path, QWidget* parent = nullptr);
    ~TraceFilePage() override;

    const QString& path() const { return path_; }
    bool loaded() const { return reader_ != nullptr; }
    bool failed() const { return failed_; }
    QTreeWidget* tree() const;

    bool hasIntelPt() const { return hasPt_; }
    bool decoding() const { return decoding_; }
    bool decoded() const { return decoded_ != nullptr; }
    // Files with at most this many bytes of AUX trace decode as soon as they
    // are read (set it before the read finishes; 0: never by themselves).
    void setAutoDecodeLimit(uint64_t bytes) { autoDecodeBytes_ = bytes; }

    // The timeline (null until the file is read): every file's CPU lanes, thread
    // lanes grouped by process with samples and loss markers, built from the
    // sideband on a worker thread; with a decodable AUX trace also its flame charts.
    TimelineView* timeline() const { return tab(&TraceTimelineTab::view); }
    // The whole recording above the lanes (null until the file is read; its
    // overview is set with the lanes).
    OverviewStrip* overviewStrip() const { return tab(&TraceTimelineTab::overview); }
    // Opening, building the lanes, or decoding a window: the progress bar shows
    // how far, and this button stops it (timelineCancelled tells).
    QPushButton* timelineCancelButton() const { return tab(&TraceTimelineTab::cancelButton); }
    void cancelTimeline();
    QProgressBar* timelineProgress() const { return tab(&TraceTimelineTab::progress); }
    QLabel* timelineStatus() const { return tab(&TraceTimelineTab::status); }
    bool timelineDecoding() const;
    // Windows with more trace than this are not decoded (the view asks to zoom in).
    void setTimelineDecodeBudget(uint64_t bytes);
    // The panes under the timeline (null until the file is read).
    RangeStatsPane* rangeStats() const { return tab(&TraceTimelineTab::rangeStats); }
    SpanDetailsPane* spanDetails() const { return tab(&TraceTimelineTab::spanDetails); }
    SearchBar* searchBar() const { return tab(&TraceTimelineTab::searchBar); }
    CodeView* codeView() const { return tab(&TraceTimelineTab::codeView); }
    QTabWidget* analysisTabs() const { return tab(&TraceTimelineTab::analysisTabs); }
    QLabel* selectionLine() const { return tab(&TraceTimelineTab::selectionLine); }
    // Exports [begin, end) of the timeline's data (run slices, samples, losses and
    // decoded spans overlapping it, clipped to it); without a path, asks for one.
    // Like exportTo, it runs on a worker thread (false: not started).
    bool exportRange(const QString& format, uint64_t begin, uint64_t end, QString outPath = {});
    // An export (exportTo, exportRange) runs on a worker thread with a progress
    // bar and a Cancel button beside the export buttons; one at a time. Cancel
    // leaves no file (the exporter removes what it wrote). exportFinished tells the end.
    bool exporting() const;
    QProgressBar* exportProgress() const;
    QPushButton* exportCancelButton() const;
    void cancelExport();
    // Shows the code of `function` as executed by `tid` (-1: any thread) in [begin, end).
    void showCode(int32_t tid, uint32_t function, uint64_t begin, uint64_t end);
    // The file's sampled profile (null until the timeline opened, or without samples beside a trace).
    std::shared_ptr<const SampleProfile> sampleProfile() const;

    // Where its code and names come from (the file's settings, else the defaults),
    // and what the resolver gets (the file's folder added when searched automatically).
    const SymbolSettings& symbolSettings() const { return symbols_; }
    // debuginfod (issue 27) never delays the first frame: the file opens without
    // it; then, when a URL is configured (the dialog's, else $DEBUGINFOD_URLS)
    // and debuginfod is on, it is resolved again in the background asking the
    // server only for the images it maps that lack code or names, with the
    // fetch's file and bytes and a Cancel button on the page; the timeline is
    // rebuilt with what came (names, source lines). The workers ask, never the
    // GUI thread.
    ImageOptions imageOptions() const;
    enum class Debuginfod { Off, Pending, Fetching, Done, Cancelled };
    Debuginfod debuginfodState() const { return debuginfodState_; }
    // The recorded names debuginfod may be asked for (set when the fetch starts).
    const QStringList& debuginfodWanted() const { return debuginfodWanted_; }
    QLabel* debuginfodLine() const { return fetchLine_; }
    QPushButton* debuginfodCancelButton() const { return fetchCancel_; }
    void cancelDebuginfod();
    // Keeps `s` for this file (and as the defaults for every file with
    // `asDefaults`), then resolves and decodes the file again with it.
    void setSymbolSettings(const SymbolSettings& s, bool asDefaults = false);
    // Opens the Symbols & binaries dialog (not blocking; OK applies it): the one
    // open, or a new one.
    SymbolsDialog* openSymbolsDialog();
    SymbolsDialog* symbolsDialog() const;
    QPushButton* symbolsButton() const { return symbolsButton_; }
    // The header's line naming the images still missing, and what the resolver
    // could not use of the settings (its notes); hidden when there is neither.
    QLabel* missingImagesLine() const { return missing_; }
    // The recorded names of the mapped files not found (kernel maps by their
    // recorded name), once the timeline resolved them (imagesResolved()).
    const QStringList& missingImages() const { return missingImages_; }
    bool imagesResolved() const { return imagesResolved_; }
    // How many times the Timeline tab was built (1 after the first open; each
    // change of the Symbols & binaries adds one).
    int timelineOpens() const { return timelineOpens_; }
    // The tour of the timeline's keys above the page's tabs (an example opened:
    // issue 33), unless the person asked not to see it again (null then); one per page.
    TimelineTour* showTimelineTour();
    TimelineTour* timelineTour() const;
    // The file's snapshot triggers and their firings (null without, or until read;
    // triggersError() says why a section could not be read).
    const TriggerFileData* triggers() const { return triggers_.get(); }
    const QString& triggersError() const { return triggersError_; }
    // The Triggers tab's list (object name "triggerFirings"; null without firings).
    QTableWidget* firingsList() const;
    // Shows firing `i` on the timeline (its span, or a few ms around it; its thread
    // scrolled into view) and selects its row. False when there is no such firing.
    bool jumpToFiring(int i);

public slots:
    // Without a path, ask for one. Runs on a worker thread (false: not started).
    bool exportTo(const QString& format, QString outPath = {});
    // Decodes the Intel PT trace on a worker thread; false when there is none
    // or a decode is running.
    bool startDecode();

signals:
    void loadFinished(bool ok);
    void decodeFinished(bool ok);
    void statusMessage(const QString& text);
    // The timeline got new data (the first frame, or a window decoded).
    void timelineUpdated();
    // The first frame is shown: the whole recording's lanes and overview.
    void timelineOpened();
    // An export ended: written (ok), failed or cancelled; `message` says which and where.
    void exportFinished(bool ok, const QString& message);
    // The images were resolved (again): missingImages() says what is missing.
    void imagesChanged();
    // The background debuginfod fetch ended (done or cancelled): the page shows what it fetched.
    void debuginfodFinished();

private:
    // A part of the Timeline tab (null until the file is read).
    template <typename T>
    T* tab(T* (TraceTimelineTab::*part)() const) const {
        return timeline_ ? (timeline_->*part)() : nullptr;
    }
    void populate();
    void openTimeline();
    // The Timeline tab and the summary's decode again, with the current settings.
    void resolveAgain();
    void updateMissingImages();
    // After a resolve: starts the debuginfod fetch (Pending), or ends it (Fetching).
    void debuginfodStep();

    QString path_;
    QLabel* status_ = nullptr;
    TraceSummaryTree* tree_ = nullptr;
    QPushButton* decode_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* exportPerfetto_ = nullptr;
    QPushButton* exportCsv_ = nullptr;
    TraceExporter* exporter_ = nullptr;
    // Shared with decode workers, which may outlive the page.
    std::shared_ptr<PerfDataReader> reader_;
    std::shared_ptr<const AuxTraceSpans> decoded_;
    std::shared_ptr<std::atomic<bool>> cancel_;
    uint64_t autoDecodeBytes_ = 4u << 20;
    uint64_t timelineBudget_ = uint64_t(64) << 20;
    // "AUX: 75% of the trace missing from the file (50.3 MB in 2 gaps on cpu 0)"; empty when none is.
    QString auxMissing_;
    QString traceKind_ = "Intel PT";  // the file's AUX trace kind, as the page names it
    bool failed_ = false;
    bool hasPt_ = false;
    bool spe_ = false;  // an Arm SPE file: no spans to decode (startDecode refuses)
    bool decoding_ = false;
    uint64_t decodeGeneration_ = 0;  // a summary decode's result is dropped when it moved on

    SymbolSettings symbols_;
    QPushButton* symbolsButton_ = nullptr;
    QLabel* missing_ = nullptr;
    QPointer<SymbolsDialog> dialog_;
    QStringList missingImages_;
    bool imagesResolved_ = false;
    int timelineOpens_ = 0;
    Debuginfod debuginfodState_ = Debuginfod::Off;
    QStringList debuginfodWanted_;
    QLabel* fetchLine_ = nullptr;
    QPushButton* fetchCancel_ = nullptr;
    std::shared_ptr<std::atomic<bool>> fetchCancelled_ = std::make_shared<std::atomic<bool>>(false);

    QTabWidget* tabs_ = nullptr;
    TraceTimelineTab* timeline_ = nullptr;  // the Timeline tab (null until the file is read)
    std::shared_ptr<const TriggerFileData> triggers_;
    QString triggersError_;
    QPointer<QTableWidget> firings_;  // in the Timeline tab, which a new resolve replaces
    // The Triggers tab under the timeline, its markers, and the first firing in view.
    void showTriggers();
    TimelineDecodeController* decoder_ = nullptr;
    QPointer<TimelineTour> tour_;
};

}  // namespace auxscope
