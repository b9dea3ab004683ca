// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What fills a trace page's timeline, on worker threads with a progress bar
// and Cancel. Every file gets its sideband's lanes (which thread ran on which
// CPU, each process's threads with their runs and samples, the kernel's
// losses) and an overview (TimelineOverview, nothing decoded). With an AUX
// trace, one AuxTraceSession is opened with them: the first frame is the whole
// recording with its lanes and overview before anything is decoded; then the
// whole recording is decoded when its trace is within the decode budget (else
// its first 1/1000), and afterwards whatever window the view settles on
// (TimelineState::windowSettled), stale results dropped; a window over the
// budget says "zoom in to decode". The code view's flow is decoded on the same
// session.
//
// A file's samples are read into one SampleProfile (samples/SampleProfile.h)
// on the same worker, with the sideband (the session's, with a trace), with
// the progress bar and Cancel: every sample's stack and the off-CPU time. Its
// symbol load names the lanes' samples (no second ImageResolver), its stacks
// go with the lane samples (hover), and the selection pane answers from it
// (RangeStatsPane::setSources). The code view of a sampled function counts
// the profile's samples whose leaf is in it (showSampleCode).
#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "images/ImageResolver.h"

class QPushButton;

namespace auxscope {

class AuxTraceSession;
class PerfDataReader;
class SampleProfile;
class TraceTimelineTab;
struct TimelineData;

class TimelineDecodeController : public QObject {
    Q_OBJECT
public:
    // `hasTrace`: the file has a decodable AUX trace, of kind `traceKind` ("Intel PT");
    // `images`: where its code and names come from (the page's Symbols & binaries).
    TimelineDecodeController(TraceTimelineTab* tab, std::shared_ptr<PerfDataReader> reader, bool hasTrace,
                             const QString& traceKind, ImageOptions images, QObject* parent = nullptr);
    ~TimelineDecodeController() override;

    // Builds the first frame (and, with a trace, decodes its first window).
    void open();
    // Opening, building the lanes, or decoding a window: stops it (the status line says so).
    void cancel();
    bool busy() const { return timelineBusy_; }
    // Windows with more trace than this are not decoded (the view asks to zoom in).
    void setBudget(uint64_t bytes) { timelineBudget_ = bytes; }
    // The AUX session (null without a trace, or before it opened); its reader lives as long.
    const std::shared_ptr<AuxTraceSession>& session() const { return session_; }
    // Shows the code of `function` as executed by `tid` (-1: any thread) in [begin, end).
    void showCode(int32_t tid, uint32_t function, uint64_t begin, uint64_t end);
    // The file's sampled profile (null: none read, or the file has no samples beside its trace).
    const std::shared_ptr<const SampleProfile>& profile() const { return profile_; }
    // The images the timeline resolved (the session's, else the profile's): null
    // until opened, and for a file without either.
    const ImageResolver* images() const;
    // Shows the code of the profile's `function` with the samples of `event`
    // (an index into its events) whose leaf is in it, of `tid` (-1: any thread)
    // in [begin, end): per instruction and per source line.
    void showSampleCode(int event, int32_t tid, uint32_t function, uint64_t begin, uint64_t end);

signals:
    // The first frame is shown: the whole recording's lanes and overview.
    void opened();
    // The timeline got new data (the first frame, or a window decoded).
    void updated();

private:
    void buildSidebandTimeline();
    void timelineRangeChanged(quint64 begin, quint64 end);
    void runTimelineDecode();
    // Whatever a window's decode runs now is stale (the worker stops between batches).
    void staleTimeline();

    TraceTimelineTab* tab_;
    std::shared_ptr<PerfDataReader> reader_;
    bool hasTrace_ = false;
    QString traceKind_;
    ImageOptions images_;
    bool ptOpening_ = false;
    QString timelineNote_;  // shown above the timeline's status (the AUX session could not open)
    std::shared_ptr<std::atomic<bool>> timelineCancel_ = std::make_shared<std::atomic<bool>>(false);
    std::shared_ptr<AuxTraceSession> session_;  // owns the reader it reads, through its deleter
    std::shared_ptr<const SampleProfile> profile_;
    std::shared_ptr<const TimelineData> timelineBase_;  // CPU lanes, extent, functions
    std::set<int32_t> seenTids_;                        // threads keep their place across windows
    struct Window {
        uint64_t begin = 0, end = 0;
    };
    std::optional<Window> pendingWindow_;
    Window decodedWindow_;
    uint64_t timelineGeneration_ = 0;
    // timelineGeneration_ for workers: a window's decode stops when it moves on.
    std::shared_ptr<std::atomic<uint64_t>> liveGeneration_ = std::make_shared<std::atomic<uint64_t>>(0);
    uint64_t timelineBudget_ = uint64_t(64) << 20;
    bool timelineBusy_ = false;
    // Decodes on the session from other threads (the code view's flow) wait for this.
    std::shared_ptr<std::mutex> sessionLock_ = std::make_shared<std::mutex>();
    uint64_t codeGeneration_ = 0;
};

}  // namespace auxscope
