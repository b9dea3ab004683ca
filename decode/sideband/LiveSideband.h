// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The sideband of a capture while it runs, for the live timeline of every
// capture (software events, tracepoints, AUX trace alike): a RecordSink that
// takes the records a timeline needs on the drain thread, and a thread of its
// own that feeds them to a Sideband::Builder (the one code path a file's
// Sideband::load takes) and, at most `maxRateHz` times a second, publishes an
// immutable Sideband of the newest `windowSeconds` of perf time.
//
// - The drain thread only appends the record's bytes to a chunk of its own under
//   a short lock (no parsing, no allocation beyond a chunk per MiB): it never
//   waits on the worker, and nobody waits on it longer than that append.
// - Bounded: what the worker has not taken yet is at most `pendingBytes`; past
//   that, records are not kept for the live view (counted: droppedBehind; the
//   capture file has them). The window keeps `windowSeconds` of perf time and at
//   most `maxRecords` records; older ones leave it (counted: agedOut).
// - Kept: samples (any event: cpu-clock, tracepoints, ...), context switches,
//   ITRACE_START (the window, by time and count), LOST / LOST_SAMPLES,
//   THROTTLE / UNTHROTTLE and AUX records flagged as loss (the window's time,
//   whatever the count); COMM, FORK and EXIT since the start (names and processes; at most
//   `identityBytes`, counted past that); executable MMAP / MMAP2 since the start,
//   in order with COMM and FORK (an exec's COMM clears the maps before it), so the
//   snapshot's processes have their mappings and the live lanes can resolve
//   sample addresses to functions (at most `mappingBytes`, counted past that;
//   data mappings are not kept).
// - The preamble (names and mappings from /proc) runs on a thread of its own, so
//   the first timelines do not wait for it; what it brings shows once it is done,
//   placed before the capture's own records (the builder is built again once), so
//   a name or mapping the capture recorded since is not overwritten by it.
// - The window: the builder takes every new record; once it holds more than a
//   quarter window (or a quarter of maxRecords) beyond the window, it is built
//   again from the names and the records still in the window, so a snapshot
//   costs O(window), never O(capture).
// - The allocator (issue 28): a snapshot shares the parts made of many small
//   blocks (processes, mappings, names, thread -> process) with the builder until
//   a record changes them (CopyOnWrite), so a tick allocates a few blocks (the
//   model's arrays), not one per thread or mapping. A rebuild starts from a copy
//   of a builder that took the names and mappings only (sharing them again), not
//   from feeding them once more. Published snapshots are freed on the worker: it
//   keeps each one until the readers dropped theirs, so the GUI thread never
//   frees a snapshot's blocks (nor waits on the allocator's lock for them).
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "RecordSink.h"
#include "sideband/Sideband.h"

namespace auxscope {

class CaptureSession;

struct LiveSidebandOptions {
    double windowSeconds = 30;  // perf time kept before the newest record
    double maxRateHz = 10;      // snapshots published per second, at most
    // At most this share of one core on the worker: after a tick (snapshot and
    // publish) of d seconds the next waits at least d * (1 / cpuShare - 1). The
    // thread runs at nice 10, below the capture and the workload.
    double cpuShare = 0.5;
    size_t maxRecords = 2'000'000;  // in the window, at most
    // Keeps maxRateHz: a tick (snapshot, publish) costs O(window), so when a tick
    // takes longer than the cpuShare of 1 / maxRateHz the window holds fewer
    // records (down to minRecords), and more again when ticks are cheap. A fast
    // capture then shows its newest seconds at the full rate instead of 30 s at
    // a fraction of it. 0: the window is bounded by maxRecords only.
    size_t minRecords = 20'000;
    bool adaptWindow = true;
    size_t pendingBytes = size_t(64) << 20;   // handed over, not yet taken by the worker
    size_t identityBytes = size_t(16) << 20;  // COMM / FORK / EXIT kept for names
    size_t mappingBytes = size_t(32) << 20;   // executable MMAP / MMAP2 kept for symbols
    // Records of what existed before the capture (COMM / FORK from /proc): run on
    // a thread of its own at attach; it hands each record to `emit`.
    std::function<void(const std::function<void(std::span<const uint8_t>)>& emit)> preamble;
    // Settings for each new builder's model before it is fed (what a file's
    // readHeaders() would say: e.g. which event is sched:sched_switch). Worker thread.
    std::function<void(TraceModel&)> configure;
};

struct LiveSidebandStats {
    uint64_t records = 0;          // taken for the live view
    uint64_t kept = 0;             // in the window now
    uint64_t agedOut = 0;          // left the window (older than windowSeconds, or over the record bound)
    uint64_t recordBound = 0;      // records the window may hold now (adaptWindow: what keeps the rate)
    uint64_t droppedBehind = 0;    // not kept: the worker was pendingBytes behind
    uint64_t identityDropped = 0;  // COMM / FORK / EXIT over identityBytes (names may be missing)
    uint64_t mappingsDropped = 0;  // executable MMAP / MMAP2 over mappingBytes (functions may be missing)
    // COMM / FORK / EXIT and executable MMAP / MMAP2 fed to the builder so far (the
    // preamble's too): when it has not changed, neither have the snapshot's processes
    // and mappings.
    uint64_t identity = 0;
    uint64_t parseErrors = 0;                 // records the parser refused (not in the view)
    uint64_t snapshots = 0;                   // published
    uint64_t rebuilds = 0;                    // times the builder was built again for the window
    uint64_t windowBegin = 0, windowEnd = 0;  // perf time the window holds
    double lastTickSeconds = 0;               // wall time of the newest snapshot and publish
    double preambleSeconds = 0;               // wall time of the preamble (reading /proc; 0: not done)
};

class LiveSideband : public RecordSink {
public:
    // Runs on the worker thread every tick (never concurrently with itself), with
    // the newest snapshot (null before the first records) and whether it is new
    // since the previous call: a caller that joins other live data (the decoder's
    // spans) hears of every tick, also when the sideband did not change.
    using Publish =
        std::function<void(std::shared_ptr<const Sideband>, bool changed, const LiveSidebandStats&)>;

    // Registers itself as a sink of `session` (before start()) and starts its thread.
    static std::unique_ptr<LiveSideband> attach(CaptureSession& session, Publish publish,
                                                LiveSidebandOptions options = {});
    // The same for records handed to onRecord() by another source than a
    // CaptureSession (benchmarks, tests): `ids` are the events the records name.
    static std::unique_ptr<LiveSideband> start(const IdTable& ids, Publish publish,
                                               LiveSidebandOptions options = {});
    ~LiveSideband() override;

    // One more tick now, waiting for it (end of capture, tests).
    void flush();
    // Stops the thread (also done by the destructor). Call once the capture has
    // stopped, before the session goes.
    void stop();
    // Thread-safe; takes the lock the drain thread appends under (not for the GUI
    // thread: the published stats come with each snapshot).
    LiveSidebandStats stats() const;

    // RecordSink, on the drain thread.
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) override;
    std::vector<SinkLoss> losses() const override { return {}; }

private:
    LiveSideband() = default;
    struct Entry {
        uint32_t offset;
        int32_t cpu;
    };
    // Records stored flat, as the drain thread handed them over.
    struct Chunk {
        std::vector<uint8_t> bytes;
        std::vector<Entry> entries;
        uint64_t minTime = UINT64_MAX, maxTime = 0;  // of records with a time
        size_t size() const { return entries.size(); }
    };
    static void append(std::vector<Chunk>& to, int cpu, std::span<const uint8_t> bytes, uint64_t time);
    void loop();
    void tick();
    void runPreamble();
    // f(cpu, parsed, bytes) for each record of `chunk` the parser takes; returns how many it refused.
    template <typename F>
    uint64_t forEachParsed(const Chunk& chunk, F&& f) const;
    void feed(const Chunk& chunk);          // to builder_
    void feedIdentity(const Chunk& chunk);  // to identityBuilder_
    void rebuild();

    IdTable ids_;
    LiveSidebandOptions options_;
    Publish publish_;

    // Shared with the drain thread.
    mutable std::mutex mutex_;
    std::vector<Chunk> pending_, pendingIdentity_, pendingLoss_;
    std::vector<Chunk> pendingPreamble_;  // the preamble's, once it is done
    size_t pendingSize_ = 0, identityTaken_ = 0, mappingTaken_ = 0;
    LiveSidebandStats stats_;
    std::condition_variable wake_;
    bool stopping_ = false;
    uint64_t flushRequests_ = 0, flushesDone_ = 0;
    std::condition_variable flushed_;

    // The worker's own.
    std::unique_ptr<Sideband::Builder> builder_;
    // Fed identity_ only (what builder_ is fed first): rebuild() starts from a copy of it.
    std::unique_ptr<Sideband::Builder> identityBuilder_;
    uint64_t identityParseErrors_ =
        0;  // identity_'s records the parser refused (counted again per rebuild, as fed)
    // Snapshots published and replaced since, until the readers dropped them: freed here.
    std::vector<std::shared_ptr<const Sideband>> retired_;
    std::deque<Chunk> window_;     // by arrival, the oldest first
    std::deque<Chunk> losses_;     // LOST, THROTTLE, AUX loss...: aged by time only
    std::vector<Chunk> identity_;  // COMM / FORK / EXIT and executable MMAP / MMAP2 since the start
    size_t identitySize_ = 0, windowRecords_ = 0, builderRecords_ = 0;
    size_t recordBound_ = 0;  // the window's record bound now (options_.maxRecords, or less: adaptWindow)
    uint64_t builderFrom_ = UINT64_MAX;  // the oldest record time the builder holds
    uint64_t newest_ = 0;
    bool changed_ = false;
    LiveSidebandStats own_;
    std::shared_ptr<const Sideband>
        snapshot_;  // the newest  // the worker's counters (merged into stats_ each tick)
    std::thread thread_;
    std::function<void(const std::function<void(std::span<const uint8_t>)>&)> preamble_;
    std::thread preambleThread_;
};

}  // namespace auxscope
