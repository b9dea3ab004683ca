// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Replays the AUX trace of a perf.data (perf's or simpleperf's) through the
// simulated AUX producers, so the whole live path (drain thread, statistics,
// perf.data writer, decode, timeline) runs and can be shown on a machine without
// trace hardware. The capture it drives is labelled "replay of FILE" everywhere.
//
// What is replayed, per recorded AUX ring (PERF_RECORD_AUXTRACE idx/cpu/tid):
// - the AUX bytes, split into the recorded AUX transactions where the file has
//   PERF_RECORD_AUX records for that ring (each record's end is a transaction
//   end, its flags PARTIAL/COLLISION/CoreSight-raw are re-issued, its time is the
//   transaction's), else into fixed chunks; the producer writes its own
//   PERF_RECORD_AUX for each transaction;
// - the sideband (MMAP, MMAP2, COMM, FORK, EXIT, SWITCH, SWITCH_CPU_WIDE,
//   ITRACE_START, LOST, NAMESPACES, KSYMBOL, ...): the record body as recorded,
//   with the simulated sample_id trailer (TID, TIME, CPU, IDENTIFIER = the
//   simulated event's id on that CPU) and the recorded TID and TIME.
// Not replayed, and counted by type and reason (skipped()): samples and other
// records of events the replay does not have, perf's own records (the writer
// writes its own FINISHED_ROUND, TIME_CONV, ...), and records no event claims.
//
// CPUs keep their recorded numbers: a file with rings on cpu 0 and 3 replays on
// simulated CPUs 0..3 (1 and 2 carry only their sideband), so the output's
// AUXTRACE cpu/idx and every sample_id CPU match the source's and perf's
// CoreSight decoder finds each CPU's trace parameters. A per-thread recording
// (AUXTRACE cpu -1) gets one simulated CPU per ring instead.
//
// Items are fed in recorded-time order (records without a time inherit the newest
// time before them in the file). Pace: recorded speed (sleeping by the recorded
// time deltas), a factor of it, or max (as fast as the drain frees ring space). In
// full mode the driver never makes the simulated hardware lose data: it waits for
// AUX and data ring space, and waits while an event is disabled (the drain thread
// re-enables it). Looping shifts each pass's times past the previous pass.
//
// Use (the CLI and the GUI alike):
//   auto src = ReplaySource::open(path);          // reads and indexes the file
//   auto session = src->openSession(options);     // openSimulated, recorded TIME_CONV
//   ... add sinks; PerfDataWriterCaptureOptions::auxtraceInfo = src->auxtraceInfo()
//   session->start(); src->start(*session, options);
//   src->progress() ...                           // from any thread
//   src->stop(); session->requestStop(); session->wait();
// With options.stopSessionAtEnd the driver asks the session to stop once it fed
// everything (and, with options.durationSeconds, once that much time passed).
// Stop the replay (stop() or destruction) before destroying the session.
#include <linux/perf_event.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "CaptureSession.h"
#include "Result.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"

namespace auxscope {

struct ReplaySpeed {
    bool max = false;     // as fast as the drain frees ring space
    double factor = 1.0;  // recorded seconds per wall second: 1 as recorded, 10 ten times faster
};
// "max", or a positive factor ("1", "10", "0.5").
Expected<ReplaySpeed> parseReplaySpeed(std::string_view text);
// "max speed", "recorded speed", "10x recorded speed".
std::string describeReplaySpeed(const ReplaySpeed& speed);

struct ReplayOptions {
    ReplaySpeed speed;
    bool loop = false;
    // Full: the drain thread drains the AUX area; snapshot: the producers
    // overwrite it, as a flight recorder's hardware does.
    AuxMode mode = AuxMode::Full;
    uint64_t auxSize = 0;   // bytes per simulated CPU, power of two; 0: chosen from the data
    size_t dataPages = 64;  // data ring pages per simulated CPU, power of two
    unsigned publishHz = 20;
    bool realtimeDrain = false;
    double durationSeconds = 0;    // > 0: stop after this long (wall time)
    bool stopSessionAtEnd = true;  // session.requestStop() when done (end of data, duration, stop())
};

// One recorded AUX ring.
struct ReplayStream {
    int64_t sourceCpu = -1;  // AUXTRACE cpu (-1: per-thread ring)
    uint32_t sourceIdx = 0;  // AUXTRACE idx
    uint32_t sourceTid = 0;  // AUXTRACE tid
    unsigned simulatedCpu = 0;
    uint64_t bytes = 0;         // AUX bytes (sum of its AUXTRACE payloads)
    uint64_t buffers = 0;       // AUXTRACE records
    uint64_t transactions = 0;  // transactions the replay makes of them
    uint64_t auxRecords = 0;    // recorded PERF_RECORD_AUX that split them (0: fixed chunks)
};

struct ReplaySkip {
    uint32_t type = 0;  // record type
    uint64_t records = 0;
    std::string reason;
};

struct ReplayProgress {
    uint64_t auxBytesFed = 0;    // over all passes
    uint64_t auxBytesTotal = 0;  // of one pass
    uint64_t recordsFed = 0;     // sideband records, over all passes
    uint64_t recordsTotal = 0;   // of one pass
    uint64_t transactionsFed = 0;
    double recordedSecondsFed = 0;  // recorded time covered by what was fed, this pass
    double recordedSeconds = 0;     // recorded time span of the file
    uint64_t passesDone = 0;        // complete passes (looping)
    uint64_t spaceWaits = 0;        // times the driver waited for ring space or a re-enable
    uint64_t recordsDropped = 0;    // sideband records the data ring refused (0: the driver waits for room)
    bool running = false;
    bool finished = false;  // the driver ended (all fed, stopped, or the session ended)
    bool stoppedEarly = false;
};

class ReplaySource {
public:
    // Reads the file and prepares the replay. Errors name the file, the offset and
    // the cause: not a perf.data, damage (any error the reader reports), no AUX data.
    // `progress` (optional) hears how far the walk of the data section is, in bytes,
    // every few thousand records; returning false stops it and open() fails with
    // "cancelled" (the reader's own open, before the walk, is not interrupted).
    using Progress = std::function<bool(uint64_t done, uint64_t total)>;
    static Expected<std::unique_ptr<ReplaySource>> open(const std::string& path,
                                                        const Progress& progress = {});
    ~ReplaySource();
    ReplaySource(const ReplaySource&) = delete;
    ReplaySource& operator=(const ReplaySource&) = delete;

    const std::string& path() const { return path_; }
    std::string label() const { return "replay of " + path_; }
    const std::vector<ReplayStream>& streams() const { return streams_; }
    unsigned simulatedCpus() const { return simulatedCpus_; }
    // Sideband records replayed per pass, by type.
    const std::map<uint32_t, uint64_t>& sidebandByType() const { return sidebandByType_; }
    const std::vector<ReplaySkip>& skipped() const { return skipped_; }
    uint64_t auxBytes() const { return auxBytes_; }
    double recordedSeconds() const { return double(lastTime_ - firstTime_) * 1e-9; }
    // The recorded AUX event (its attr and name), recorded into the output unchanged
    // but for the sample_id layout, so that perf decodes the output like the source.
    const perf_event_attr& auxEventAttr() const { return auxAttr_; }
    const std::string& auxEventName() const { return auxName_; }
    // The source's PERF_RECORD_AUXTRACE_INFO, for PerfDataWriterCaptureOptions::auxtraceInfo.
    const std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>& auxtraceInfo() const {
        return auxtraceInfo_;
    }
    // The block for the output of a replay with `options`: the source's, with its
    // snapshot-mode word (Intel PT word 8, CoreSight word 2) saying how the replay
    // runs, since perf's decoders treat snapshot data (overlapping copies) apart.
    std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> auxtraceInfo(
        const ReplayOptions& options) const;
    // What the replay cannot reproduce (recorded TRUNCATED flags, ...), one line each.
    const std::vector<std::string>& notes() const { return notes_; }

    SimulatedCaptureOptions captureOptions(const ReplayOptions& options) const;
    // openSimulated(captureOptions(options)), with the source's TIME_CONV on the
    // producers' user pages (the file writer copies it into the output).
    Expected<std::unique_ptr<CaptureSession>> openSession(const ReplayOptions& options) const;
    // Starts the driver thread over `session`'s producers (a session from
    // openSession(), started). Once only.
    Expected<void> start(CaptureSession& session, const ReplayOptions& options);
    void requestStop();  // non-blocking
    void stop();         // requestStop() and wait for the driver
    void wait();         // until the driver ended
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    ReplayProgress progress() const;

private:
    ReplaySource() = default;
    struct Item;
    struct Piece;
    struct Sideband;
    void run();
    bool waitForSpace(size_t cpu, uint64_t auxBytes, uint64_t dataBytes);
    bool paceTo(uint64_t recordedTime);
    bool stopRequested() const;
    void feedSideband(const Sideband& s, uint64_t time);
    bool feedPiece(const Piece& p, uint64_t time);

    std::string path_;
    std::unique_ptr<PerfDataReader> reader_;
    std::vector<ReplayStream> streams_;
    unsigned simulatedCpus_ = 0;
    std::map<uint32_t, uint64_t> sidebandByType_;
    std::vector<ReplaySkip> skipped_;
    std::vector<std::string> notes_;
    uint64_t auxBytes_ = 0;
    uint64_t firstTime_ = 0, lastTime_ = 0;  // recorded span (non-zero times)
    uint64_t maxPiece_ = 0;
    uint64_t largestStream_ = 0;
    perf_event_attr auxAttr_{};
    std::string auxName_;
    std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> auxtraceInfo_;
    std::optional<PerfTimeConv> timeConv_;

    std::vector<Item> items_;  // in feed order
    std::vector<Piece> pieces_;
    std::vector<Sideband> sideband_;
    std::vector<uint8_t> bodies_;                 // sideband record bodies, back to back
    std::vector<std::vector<uint8_t>> ownedAux_;  // AUX payloads that were not file bytes (compressed)

    // Driver.
    CaptureSession* session_ = nullptr;
    ReplayOptions options_;
    std::vector<uint64_t> ids_;  // simulated event id per CPU
    std::thread thread_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<bool> stop_{false}, running_{false}, finished_{false}, stoppedEarly_{false};
    std::atomic<uint64_t> auxFed_{0}, recordsFed_{0}, transactionsFed_{0}, passes_{0}, spaceWaits_{0},
        recordsDropped_{0}, timeFed_{0};
    std::chrono::steady_clock::time_point wallStart_;
    uint64_t passShift_ = 0;
};

}  // namespace auxscope
