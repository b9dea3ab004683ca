// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Per-CPU capture statistics. The drain thread is the only writer; it publishes
// its counters into relaxed atomics at a fixed rate (>= 10 Hz), so any number of
// readers (GUI timer, CLI) take snapshots without locks and without ever making
// the drain thread wait.
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "RecordParser.h"

namespace auxscope {

// Plain counters, as kept by the drain thread and as returned to readers.
struct CpuCounters {
    uint64_t bytes = 0;         // record bytes drained
    uint64_t records = 0;       // records drained
    uint64_t samples = 0;       // PERF_RECORD_SAMPLE
    uint64_t lostRecords = 0;   // sum of PERF_RECORD_LOST.lost: records the kernel could not write
    uint64_t lostSamples = 0;   // sum of PERF_RECORD_LOST_SAMPLES.lost
    uint64_t kernelLost = 0;    // PERF_FORMAT_LOST summed over the ring's events (the kernel's own count)
    uint64_t throttles = 0;     // PERF_RECORD_THROTTLE
    uint64_t unthrottles = 0;   // PERF_RECORD_UNTHROTTLE
    uint64_t parseErrors = 0;   // records that did not parse (kept, counted), of either kind
    uint64_t corruptBytes = 0;  // bytes skipped after a corrupt header
    uint64_t unknownTypes = 0;  // record types beyond kRecordTypeSlots
    uint64_t auxBytes = 0;      // AUX area bytes drained (AUX capture)
    uint64_t auxChunks = 0;     // AUX pieces handed to the consumers (one or two per drain pass)
    // PERF_RECORD_AUX records by flag (a record may carry several).
    uint64_t auxTruncated = 0;  // PERF_AUX_FLAG_TRUNCATED: the AUX area filled up, the event was disabled
    uint64_t auxOverwrite = 0;  // PERF_AUX_FLAG_OVERWRITE (snapshot mode)
    uint64_t auxPartial = 0;    // PERF_AUX_FLAG_PARTIAL: the record holds partial hardware samples
    uint64_t auxCollision = 0;  // PERF_AUX_FLAG_COLLISION: samples collided (SPE)
    uint64_t auxReenables = 0;  // times the drain thread re-enabled a disabled AUX event
    uint64_t auxErrors = 0;     // drain passes that found aux_head inconsistent with aux_tail
    // Back-pressure: passes that left data where it was because a sink (the file
    // writer) had no room for it yet. Nothing is dropped for it: records stay in the
    // kernel's data ring, AUX bytes in the AUX area (aux_tail waits for the writer).
    uint64_t sinkHeldBack = 0;     // data ring passes cut short
    uint64_t auxSinkHeldBack = 0;  // AUX chunks (or snapshot copies) offered again later
    // Snapshot (flight-recorder) mode: each snapshot is one AUX chunk handed to the
    // sinks, apart from auxBytes/auxChunks (which count full-mode draining only).
    uint64_t auxSnapshots = 0;          // snapshots taken of this CPU's AUX area
    uint64_t auxSnapshotBytes = 0;      // bytes they copied
    uint64_t auxSnapshotsTracked = 0;   // of those, the wrap decided from PERF_RECORD_AUX records and heads
    uint64_t auxSnapshotsZeroScan = 0;  // ... from zero bytes past the head (a LOST made tracking uncertain)
    // Sideband flight recorder (--overwrite): the backward data ring is read only
    // at snapshots. Its records also count in records/bytes/byType above.
    uint64_t backwardSnapshots = 0;  // snapshots taken of this CPU's backward ring
    uint64_t backwardRecords = 0;    // records they delivered (each once)
    uint64_t backwardBytes = 0;      // their bytes
    uint64_t backwardOverwrittenBytes =
        0;                           // history overwritten before a snapshot reached it (expected loss)
    uint64_t backwardTornBytes = 0;  // of those, a torn oldest record or a writer racing the copy
    uint64_t backwardErrors = 0;     // snapshots that found a corrupt header (bytes in corruptBytes)
    // Of parseErrors, the samples whose id names no event of the capture (the
    // others are records too short for their type).
    uint64_t parseErrorsUnknownEvent = 0;
    // The stop gave up on a sink that took nothing for kStopDeliveryTimeout
    // (DrainThread.h): what was left for it, never delivered.
    uint64_t undeliveredRecords = 0;   // records left in the data ring (or a backward snapshot)
    uint64_t undeliveredBytes = 0;     // their bytes
    uint64_t undeliveredAuxBytes = 0;  // AUX bytes never handed over (area or snapshot copy)
    std::array<uint64_t, kRecordTypeSlots> byType{};
};

struct CpuStatsSnapshot {
    int cpu = -1;
    CpuCounters totals;
    uint64_t ringBytes = 0;      // data ring size
    double fillPercent = 0;      // data ring fill at the last drain pass
    double fillPeakPercent = 0;  // highest fill seen during the last publish interval
    double fillMaxPercent = 0;   // highest fill seen since the capture started
    double bytesPerSecond = 0;   // over the last publish interval
    double recordsPerSecond = 0;
    bool hasAux = false;
    uint64_t auxRingBytes = 0;
    double auxFillPercent = 0;         // AUX area fill found by the last drain pass
    bool auxSnapshotMode = false;      // the AUX area is a flight recorder (fill: how much of it holds trace)
    bool kernelLostAvailable = false;  // PERF_FORMAT_LOST supported by this kernel
    // The data ring is a backward flight recorder (fill: how much history it holds).
    bool backwardMode = false;
    uint64_t backwardWrittenBytes = 0;  // bytes the kernel has written into it so far
};

// One CPU's statistics at one publish, kept for the whole capture so that the
// trace file can carry them (buffer fill and loss over time). `perfTime` is the
// newest record time seen when it was taken (the events' clock), so the samples
// line up with the records.
struct StatsSample {
    uint64_t perfTime = 0;
    uint64_t monotonicNs = 0;
    int32_t cpu = -1;
    float fillPeakPercent = 0;  // highest fill since the previous sample
    uint64_t bytes = 0, records = 0, lostRecords = 0, lostSamples = 0, kernelLost = 0;
    // AUX area (cumulative): fill at the publish, bytes drained or snapshotted,
    // PERF_RECORD_AUX loss flags, re-enables after a full area, snapshots.
    bool hasAux = false;
    float auxFillPercent = 0;
    uint64_t auxBytes = 0, auxTruncated = 0, auxPartial = 0, auxCollision = 0, auxReenables = 0;
    uint64_t auxSnapshots = 0, auxSnapshotBytes = 0;
};

class CaptureStats {
public:
    explicit CaptureStats(std::vector<int> cpus);

    size_t cpuCount() const { return slots_.size(); }
    CpuStatsSnapshot snapshot(size_t index) const;
    std::vector<CpuStatsSnapshot> snapshotAll() const;
    // Increments once per publish; readers can tell whether anything changed.
    uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

    // Drain-thread side.
    void publish(size_t index, const CpuStatsSnapshot& s);
    void bumpGeneration() { generation_.fetch_add(1, std::memory_order_release); }

private:
    // One cache line-aligned block of atomics per CPU, so readers never share a
    // line with another CPU's writer updates.
    struct alignas(64) Slot {
        int cpu = -1;
        std::atomic<uint64_t> counters[sizeof(CpuCounters) / 8];
        std::atomic<uint64_t> ringBytes{0}, auxRingBytes{0}, backwardWritten{0};
        std::atomic<double> fill{0}, fillPeak{0}, fillMax{0}, bps{0}, rps{0}, auxFill{0};
        std::atomic<bool> hasAux{false}, kernelLostAvailable{false}, auxSnapshotMode{false},
            backwardMode{false};
    };
    std::vector<std::unique_ptr<Slot>> slots_;
    std::atomic<uint64_t> generation_{0};
};

}  // namespace auxscope
