// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A RecordSink is a RecordConsumer that keeps what it receives somewhere slow
// (a file, a network peer). It sees every record on the drain thread, hears when
// each drain pass ends (perf.data's FINISHED_ROUND), and says per CPU what it had
// to drop and why, so the capture summary can show the sink's loss beside the
// kernel's. CaptureSession::addSink() registers one.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "RecordConsumer.h"

namespace auxscope {

// AUX area bytes handed to a sink: [offset, offset + size()) of one ring's AUX
// area (perf.data's PERF_RECORD_AUXTRACE offset), in at most two pieces (two when
// a full-mode window wraps around the end of the area).
// - Full mode: the pieces are views into the mapped AUX area. They stay valid,
//   and unchanged, until the sink releases them (see RecordSink::auxReleased);
//   a sink that copies what it wants during onAux() needs to do nothing.
// - Snapshot mode: the bytes are a copy owned by `owner`; a sink that keeps them
//   past the call keeps a reference to it instead of copying.
struct AuxBytes {
    uint64_t offset = 0;
    std::span<const uint8_t> first, second;
    std::shared_ptr<const std::vector<uint8_t>> owner;
    uint64_t size() const { return first.size() + second.size(); }
};

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
    // AUX area bytes of ring `ringIndex` (on `cpu`), on the drain thread; see
    // AuxBytes. Each call continues the previous one of that ring. Must not block.
    // Sinks that keep no AUX data ignore it.
    // Snapshot (flight-recorder) mode: each call is one whole snapshot of that
    // ring's AUX area, the newest bytes oldest first, and does not continue the
    // previous call (snapshots overlap or leave gaps). `offset` is then what
    // perf record writes for a snapshot: the end of the copy minus its size, the
    // end being aux_head for a free-running head (CoreSight), or for a head that
    // wraps inside the area (Intel PT, SPE) its offset plus the area's size once
    // the area has wrapped. perf's decoders find the overlap between snapshots
    // from the bytes themselves.
    virtual void onAux(int cpu, uint32_t ringIndex, const AuxBytes& bytes) {
        (void)cpu, (void)ringIndex, (void)bytes;
    }
    // Back-pressure for AUX bytes, asked before onAux(): false when the sink cannot
    // take a chunk of ring `ringIndex` now. The drain thread then hands the same
    // bytes (with whatever came after them) again on a later pass: full-mode bytes
    // stay in the AUX area meanwhile, a snapshot copy waits in memory. Must not block.
    virtual bool hasAuxRoom(uint32_t ringIndex, const AuxBytes& bytes) {
        (void)ringIndex, (void)bytes;
        return true;
    }
    // Full mode: a sink that keeps referring to the AUX area's bytes after onAux()
    // returns (writes them later, from the mapping, on a thread of its own) says how
    // far it is done with them: every byte of ring `ringIndex` it was handed before
    // this position has been used, or kAuxAllReleased when it holds none. The drain
    // thread moves aux_tail (which lets the hardware overwrite the bytes) only up to
    // the smallest position every sink released. Any thread; must not block.
    static constexpr uint64_t kAuxAllReleased = ~uint64_t(0);
    virtual uint64_t auxReleased(uint32_t ringIndex) const {
        (void)ringIndex;
        return kAuxAllReleased;
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
