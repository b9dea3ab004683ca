// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Decode while capturing, for every AUX trace kind auxscope decodes (Intel PT,
// CoreSight ETM/ETE, Arm SPE): a RecordSink on a capture with an AUX event that keeps the
// newest trace bytes of every CPU and the sideband, finds the trace's ways in
// (sync points: Intel PT's PSBs; CoreSight's A-syncs, etm/EtmSyncScanner, per
// trace ID across frames) as the bytes arrive, and on a
// thread of its own decodes, at a bounded rate, the newest segments of each CPU
// into call-stack spans a timeline shows while the capture runs.
//
// Each tick (every `intervalSeconds`):
// - per CPU, the trace since the last tick's end, entered at the earliest sync
//   point that keeps it within `bytesPerCpuPerTick` (the rate bound: what does
//   not fit is skipped, and counted, never queued up); CoreSight's ways in
//   being sparse, a tick instead decodes again from the previous tick's ways
//   in through the newest bytes while that fits the bound, and replaces it;
// - those bytes, the sideband so far (address spaces always, switches of the
//   last `keepSeconds`), the capture's attrs, TIME_CONV and AUXTRACE_INFO are
//   written as a small perf.data in memory (memfd) and decoded by
//   AuxTraceSession, the one decoder entry point the files, the CLI and the
//   GUI use;
// - Arm SPE has no flow: a tick's records (and what they say: operations,
//   latency) join those of the earlier ticks still kept (latestSpe());
// - the spans join those of the earlier ticks still kept (`keepTicks`), their
//   function ids mapped into one table that lives as long as the decoder, and
//   a new TimelineData is published (latest()).
// The drain thread only copies bytes into bounded buffers (onAux, onRecord):
// a slow decode never slows the capture, it decodes less (and the decode
// thread takes at most `cpuShare` of a core, at a lower priority). Snapshot mode: each
// snapshot replaces the CPU's bytes (snapshots do not continue each other).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "CaptureSession.h"
#include "RecordSink.h"
#include "Result.h"
#include "etm/EtmSourceConfig.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "record/PerfDataWriterCapture.h"
#include "spans/TimelineData.h"
#include "spe/SpeRecord.h"

namespace auxscope {
class AuxTraceSession;
namespace etm {
class EtmSyncScanner;
}

struct LiveDecoderOptions {
    double intervalSeconds = 0.5;
    uint64_t bytesPerCpuPerTick = 1 << 20;  // trace decoded per CPU per tick, at most
    unsigned keepTicks = 16;                // decoded ticks kept for the timeline
    // At most this share of one core on decoding: after a tick that took d
    // seconds the next waits at least d * (1 / cpuShare - 1). The thread also
    // runs at nice 10, below the capture and the workload.
    double cpuShare = 0.25;
    double keepSeconds = 30;                      // switch sideband kept (perf time) before the newest record
    uint64_t sidebandBytes = uint64_t(64) << 20;  // address-space records kept, at most
    ImageOptions images;
    // Each tick's session takes over the previous tick's code images, symbols
    // (the kernel's: kallsyms, vmlinux, kcore), function table and block shapes,
    // loading only files new mappings name (AuxTraceSession::open with a carry);
    // false opens every tick afresh (what bench_live_decode compares against).
    bool carrySession = true;
    // The AUXTRACE_INFO block to decode with: a replay passes its source's; unset:
    // built from the capture (captureAuxtraceInfo), as the perf.data writer does.
    std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> auxtraceInfo;
    bool synthesizeFromProc = true;  // existing processes' maps from /proc (kernel captures only)
};

struct LiveDecodeStats {
    uint64_t ticks = 0;         // decodes run
    uint64_t auxBytes = 0;      // trace bytes the capture handed over
    uint64_t decodedBytes = 0;  // trace bytes decoded
    uint64_t skippedBytes = 0;  // trace bytes not decoded: over the rate bound, before a PSB, or gone
                                // from the newest-bytes buffer before a tick reached them, or
                                // still waiting when the decoder stopped
    uint64_t pendingBytes = 0;  // held, waiting for the next tick (or a way in): decoded + skipped +
                                // pending = auxBytes outside snapshot mode
    uint64_t syncPoints = 0;    // ways into the trace found while draining (Intel PT: PSBs)
    uint64_t instructions = 0;  // decoded
    uint64_t spans = 0;         // in the newest published timeline
    uint64_t decodeErrors = 0;
    uint64_t gaps = 0;
    uint64_t sidebandRecords = 0;  // kept now
    uint64_t sidebandDropped = 0;  // address-space records over sidebandBytes (decode may miss images)
    double lastTickSeconds = 0;    // wall time of the newest decode
    double tickSeconds = 0;        // wall time of every decode so far
    double openSeconds = 0;        // of which opening the tick's session (images, symbols, sync index)
    uint64_t filesLoaded = 0;      // code files looked up and loaded, over all ticks
    uint64_t sessionsCarried = 0;  // ticks whose session took over the previous one's images
    std::string lastError;         // the newest tick's failure, if it failed
    bool spe = false;              // the capture's trace is Arm SPE (records, not instructions and spans)
    // Arm SPE: records decoded, by what they sampled, and the total latency of
    // those that carry one (cycles; mean = speLatencyCycles / speWithLatency).
    uint64_t speRecords = 0, speLoads = 0, speStores = 0, speBranches = 0, speOther = 0;
    uint64_t speLatencyCycles = 0, speWithLatency = 0;
    uint64_t speGapBytes = 0;  // bytes that were no packet (counted by reason in the decode)
};

class LiveTraceDecoder : public RecordSink {
public:
    // Registers itself as a sink of `session` (before start()) and starts its
    // thread. Errors: the capture has no AUX event of a kind auxscope decodes,
    // or no tracking event.
    static Expected<std::unique_ptr<LiveTraceDecoder>> attach(CaptureSession& session,
                                                              LiveDecoderOptions options = {});
    ~LiveTraceDecoder() override;

    // The newest timeline (null before the first tick with trace). Any thread.
    std::shared_ptr<const TimelineData> latest() const;
    // Arm SPE: the records of the ticks kept (keepTicks), by time; null before
    // the first. Any thread.
    std::shared_ptr<const std::vector<spe::SpeRecord>> latestSpe() const;
    LiveDecodeStats stats() const;
    // Runs one more tick now and waits for it (end of capture, tests).
    void flush();
    // Stops the decode thread (also done by the destructor). Call once the
    // capture has stopped, before destroying the session.
    void stop();

    // RecordSink, on the drain thread.
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) override;
    void onAux(int cpu, uint32_t ringIndex, const AuxBytes& bytes) override;
    std::vector<SinkLoss> losses() const override { return {}; }

private:
    // One contiguous piece of a CPU's AUX bytes (mutex_ held).
    void appendAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> bytes);
    struct CpuTrace;
    // Arm SPE: follows the packets of `bytes` (at stream offset t.end) from
    // t.speNext, adding the offset after each END and TIMESTAMP to `found`.
    static void findSpeRecordEnds(CpuTrace& t, std::span<const uint8_t> bytes, std::vector<uint64_t>& found);
    LiveTraceDecoder() = default;
    struct CpuTrace {
        int cpu = -1;
        uint32_t ringIndex = 0;
        std::deque<std::vector<uint8_t>> chunks;       // the newest bytes, oldest first
        uint64_t begin = 0, end = 0;                   // stream offsets they cover
        uint64_t auxOffsetAtBegin = 0;                 // AUX area offset of `begin`
        std::vector<uint64_t> syncPoints;              // stream offsets, >= begin
        std::shared_ptr<etm::EtmSyncScanner> scanner;  // CoreSight: finds the A-syncs as bytes arrive
        uint64_t decodedTo = 0;                        // the previous tick's end
        uint64_t tickBegin = UINT64_MAX;               // where the previous tick entered (CoreSight)
        // Arm SPE: the stream offset of the next packet to follow, and the first
        // bytes of a packet cut by the end of the previous transfer.
        uint64_t speNext = 0;
        std::vector<uint8_t> speCarry;
        uint64_t speRecordEnd = 0;  // the newest record end (or the stream's start)
        // The first byte neither decoded nor skipped; [undecoded(), end) is pending.
        uint64_t undecoded() const { return std::max(begin, decodedTo); }
    };
    // One CPU's trace for a tick, copied out under the lock.
    struct TickTrace {
        uint32_t ringIndex = 0;
        uint64_t auxOffset = 0;  // AUX area offset of bytes[0]
        std::vector<uint8_t> bytes;
    };
    struct TickSpans {
        uint64_t begin = 0, end = 0;
        std::map<int32_t, SpanStore> threads;
    };
    // What one tick added to the statistics (taken back when a tick is redone).
    struct TickCounts {
        uint64_t instructions = 0, decodeErrors = 0, gaps = 0;
        bool kept = false;  // its spans are kept_.back()
    };
    void loop();
    void tick();
    // `redo`: the tick decodes again, from the same ways in, everything the
    // previous tick decoded and more (CoreSight): its result replaces that tick's.
    Expected<void> decodeTick(const std::map<int, TickTrace>& trace, const std::vector<uint8_t>& sideband,
                              bool redo);
    uint32_t liveFunction(const FunctionTable& table, uint32_t id, std::vector<uint32_t>& remap);
    // Arm SPE: a tick's records into keptSpe_, latestSpe_ and the statistics.
    void collectSpe(AuxTraceSession& session);

    CaptureSession* session_ = nullptr;
    LiveDecoderOptions options_;
    std::vector<PerfDataEventAttr> attrs_;
    std::vector<perfdata::IdIndexEntry> idIndex_;
    perf_event_mmap_page timePage_{};
    bool haveTimePage_ = false;
    PerfDataWriterCaptureOptions::AuxtraceInfoBlock auxtraceInfo_;
    std::vector<uint8_t> synthesized_;  // from /proc at attach
    bool snapshotMode_ = false;
    bool intelPt_ = true;  // PSBs are the sync points; else CoreSight's A-syncs (or SPE's record ends)
    bool spe_ = false;     // Arm SPE: record ends are the sync points, and ticks give records
    // CoreSight: every CPU's trace unit (AUXTRACE_INFO), and the CPUs whose AUX
    // records say raw data (ETE through TRBE) rather than frame formatted.
    std::map<int, etm::EtmSourceConfig> etmSources_;
    std::map<int, bool> etmRaw_;

    // Shared with the drain thread.
    mutable std::mutex mutex_;
    std::map<int, CpuTrace> cpus_;
    std::vector<uint8_t> addressSpace_;  // MMAP, MMAP2, COMM, FORK, EXIT, KSYMBOL, ... as recorded
    // SWITCH, SWITCH_CPU_WIDE, ITRACE_START and AUX records of a CPU, in blocks
    // of records stored flat. A tick seals the newest block and takes shared
    // references to the blocks under the lock (no copy, however many records
    // keepSeconds holds); later records go to a new block, and dropping old
    // records only moves `first` or releases whole blocks.
    struct SwitchBlock {
        std::vector<uint64_t> times;
        std::vector<uint32_t> ends;  // each record's end in `bytes`
        std::vector<uint8_t> bytes;
        size_t size() const { return times.size(); }
    };
    struct SwitchQueue {
        std::deque<std::shared_ptr<SwitchBlock>> blocks;
        size_t first = 0;  // records of blocks.front() before it are dropped
        size_t size = 0;   // records kept
        bool backSealed = false;
        uint64_t timeAt(size_t i) const;  // of the i-th kept record
        void push(uint64_t time, std::span<const uint8_t> bytes);
        void dropFront();
    };
    std::map<int, SwitchQueue> switches_;
    uint64_t newestTime_ = 0, firstTime_ = 0;
    LiveDecodeStats stats_;

    // The decode thread's own.
    FunctionTable functions_;
    std::unordered_map<std::string, uint32_t> functionIds_;
    std::shared_ptr<const FunctionTable> publishedFunctions_;
    size_t publishedFunctionCount_ = 0;
    std::deque<TickSpans> kept_;
    // The previous tick's file and session, whose images the next tick's takes
    // over (the session reads its file: the file goes after it).
    std::unique_ptr<PerfDataReader> carryFile_;
    std::unique_ptr<AuxTraceSession> carry_;
    TickCounts lastTick_;
    std::vector<int> lastTickCpus_;  // the CPUs the previous tick decoded (mutex_)

    std::shared_ptr<const TimelineData> latest_;
    std::deque<std::vector<spe::SpeRecord>> keptSpe_;  // the decode thread's
    std::shared_ptr<const std::vector<spe::SpeRecord>> latestSpe_;
    std::thread thread_;
    std::condition_variable wake_;
    bool stopping_ = false;
    uint64_t flushRequests_ = 0, flushesDone_ = 0;
    std::condition_variable flushed_;
};

}  // namespace auxscope
