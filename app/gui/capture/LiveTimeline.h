// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture page's live timeline: CPU lanes, threads with their runs and
// samples, and loss markers of the newest 30 s of every capture run here
// (LiveSideband's worker builds each TimelineData with the pipeline a file's
// timeline takes and leaves it in a feed the page's timer reads), with, for
// Intel PT and CoreSight captures, the instruction flow decoded while
// capturing (LiveTraceDecoder). Samples name their function: the code files the
// capture's mappings name are loaded on a thread of their own and kept across
// ticks (LiveSymbols). Its view follows the newest data through its own
// TimelineState, and a status line says what it shows and what was left out.
#include <QObject>
#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "images/ImageResolver.h"
#include "record/PerfDataWriterCapture.h"

class QLabel;

namespace auxscope {

class CaptureSession;
class LiveSideband;
class LiveTraceDecoder;
class TimelineState;
class TimelineView;
struct LiveTimelineFeed;
struct TimelineData;

class LiveTimeline : public QObject {
    Q_OBJECT
public:
    explicit LiveTimeline(QObject* parent = nullptr);
    ~LiveTimeline() override;

    QLabel* status() const { return status_; }
    TimelineView* view() const { return view_; }
    TimelineState* state() const { return state_; }
    // The decoder while an AUX capture runs (null otherwise), and the live sideband behind the lanes.
    const LiveTraceDecoder* decoder() const { return decoder_.get(); }
    const LiveSideband* lanes() const { return lanes_.get(); }

    // A capture on `session` is about to start: its flow decoded when `decode` (and it has
    // AUX trace; `auxtraceInfo`: the file's AUXTRACE_INFO), its lanes built, the view
    // emptied and following the newest data.
    void attach(CaptureSession& session, bool decode,
                const std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>& auxtraceInfo);
    // The capture did not start: the decoder and the lanes stop.
    void abort();
    // Where the samples' code files are looked for (issue 27): the GUI's
    // Symbols & binaries defaults for all files, asked at each attach (unset:
    // the recorded paths alone). The live timeline never asks debuginfod, and
    // its kernel is the running one (/proc/kallsyms), whatever the defaults say.
    void setImageOptions(std::function<ImageOptions()> provider) { imageOptions_ = std::move(provider); }
    // What the next attach resolves with (the provider's folders, debuginfod off).
    ImageOptions liveImageOptions(bool simulated) const;
    // The timer's tick: the newest timeline the worker built, and the status line.
    void tick();
    // The capture's drain thread has ended: the ticks from now on (the flush that
    // completes the timeline) wait for the symbols still loading, so the last
    // timeline names every sample it can.
    void captureEnded();
    // The capture ends: what the file-completing thread flushes and stops.
    const std::shared_ptr<LiveTraceDecoder>& decoderToFinish() const { return decoder_; }
    const std::shared_ptr<LiveSideband>& lanesToFinish() const { return lanes_; }
    // The file is complete: the last timeline is shown (no longer following) and the capture forgotten.
    void finish();
    // A capture in the capture helper: its records stay in that process, there is no live timeline.
    void helperCapture();

private:
    void attachLanes(CaptureSession& session);
    std::function<ImageOptions()> imageOptions_;
    void show(bool final);

    QLabel* status_ = nullptr;
    TimelineState* state_ = nullptr;
    TimelineView* view_ = nullptr;
    std::shared_ptr<LiveTraceDecoder> decoder_;
    std::shared_ptr<const TimelineData> shown_;
    // LiveSideband's worker builds each TimelineData (and joins the decoder's spans to it)
    // and leaves it in the feed for the timer.
    std::shared_ptr<LiveSideband> lanes_;
    std::shared_ptr<LiveTimelineFeed> feed_;
    std::shared_ptr<std::atomic<bool>> ended_;  // captureEnded(), for the worker
    QString decodeNote_;                        // why the flow is not decoded (empty: it is, or no capture)
};

}  // namespace auxscope
