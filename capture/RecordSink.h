// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A RecordSink is a RecordConsumer that keeps what it receives somewhere slow
// (a file, a network peer). It sees every record on the drain thread, hears when
// each drain pass ends (perf.data's FINISHED_ROUND), and says per CPU what it had
// to drop and why, so the capture summary can show the sink's loss beside the
// kernel's. CaptureSession::addSink() registers one.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "RecordConsumer.h"

namespace auxscope {

// Records a sink dropped on one CPU for one reason.
struct SinkLoss {
    std::string sink;  // which sink ("perf.data writer")
    int cpu = -1;      // the ring's CPU
    uint64_t records = 0;
    uint64_t bytes = 0;
    std::string reason;  // "queue full", "writer stopped: <cause>", ...
};

class RecordSink : public RecordConsumer {
public:
    // Called on the drain thread after every pass over all rings (also the final
    // passes at stop). Must not block.
    virtual void onDrainPassEnd() {}
    // AUX area bytes of ring `ringIndex` (on `cpu`), on the drain thread: `bytes`
    // start at free-running position `auxOffset` of that AUX area (perf.data's
    // PERF_RECORD_AUXTRACE offset). Each call continues the previous one of that
    // ring, unless the sink reports a loss. Valid during the call only; must not
    // block. Sinks that keep no AUX data ignore it.
    // Snapshot (flight-recorder) mode: each call is one whole snapshot of that
    // ring's AUX area, the newest bytes oldest first, and does not continue the
    // previous call (snapshots overlap or leave gaps). `auxOffset` is then what
    // perf record writes for a snapshot: the end of the copy minus its size, the
    // end being aux_head for a free-running head (CoreSight), or for a head that
    // wraps inside the area (Intel PT, SPE) its offset plus the area's size once
    // the area has wrapped. perf's decoders find the overlap between snapshots
    // from the bytes themselves.
    virtual void onAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> bytes) {
        (void)cpu, (void)ringIndex, (void)auxOffset, (void)bytes;
    }
    // Thread-safe: what was dropped so far, one entry per (CPU, reason) with a
    // non-zero count.
    virtual std::vector<SinkLoss> losses() const = 0;
    // Thread-safe: problems worth a line in the capture summary (e.g. the disk filled up).
    virtual std::vector<std::string> messages() const { return {}; }

    // The session installs how the sink asks the capture to stop (when the sink
    // can no longer keep anything, e.g. the disk is full). Async-signal-safe to call.
    void setStopRequest(std::function<void()> stop) { stopRequest_ = std::move(stop); }

protected:
    void requestCaptureStop() const {
        if (stopRequest_) stopRequest_();
    }

private:
    std::function<void()> stopRequest_;
};

}  // namespace auxscope
