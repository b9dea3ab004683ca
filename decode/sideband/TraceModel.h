// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a capture says about scheduling, built from perf records: for each CPU
// which thread ran when (from context-switch records), each thread's run
// intervals, thread names, samples, every loss the kernel reported, and any
// counter series the caller adds (e.g. ring fill). Exporters read this model;
// it is fed the same way from a live capture or from a perf.data file.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "RecordParser.h"

namespace auxscope {

struct RunSlice {
    uint64_t start = 0, end = 0;  // perf clock, ns
    int cpu = -1;
    int32_t pid = -1, tid = -1;
};

struct SampleEvent {
    uint64_t time = 0;
    int cpu = -1;
    int32_t pid = -1, tid = -1;
    uint64_t ip = 0;
    int event = -1;  // index of the event (attr) that sampled
};

struct LossEvent {
    uint64_t time = 0;
    int cpu = -1;
    uint64_t count = 0;
    enum Kind { Records, Samples } kind = Records;
};

// What else the kernel said about loss, beside the LOST / LOST_SAMPLES counts
// in losses() (which the exporters count): an event throttled (no samples until
// its UNTHROTTLE), and AUX records flagged TRUNCATED (the AUX area was full and
// the trace stopped), PARTIAL (the record's trace has holes) or COLLISION (a
// sample collided with another). An AUX record flagged only OVERWRITE (snapshot
// mode, overwriting by design) is not a loss and is not kept.
struct LossMarker {
    enum Kind { Throttle, Aux } kind = Throttle;
    uint64_t time = 0;
    uint64_t end = 0;  // Throttle: the UNTHROTTLE's time (0: none came)
    int cpu = -1;
    int32_t pid = -1, tid = -1;  // as the record's sample_id says (-1: it did not)
    uint64_t auxFlags = 0;       // Aux: PERF_AUX_FLAG_*
    uint64_t auxOffset = 0, auxSize = 0;
};

struct CounterPoint {
    uint64_t time = 0;
    double value = 0;
};

struct CounterSeries {
    std::string name;  // e.g. "data ring fill %"
    int cpu = -1;
    std::string unit;
    std::vector<CounterPoint> points;
};

class TraceModel {
public:
    // `cpu` is the ring (CPU) the record came from.
    void addRecord(int cpu, const ParsedRecord& r);
    void addCounter(const std::string& name, int cpu, const std::string& unit, uint64_t time, double value);
    // Closes the slices still running at the last time seen.
    void finish();

    const std::vector<RunSlice>& runSlices() const { return slices_; }
    const std::vector<SampleEvent>& samples() const { return samples_; }
    const std::vector<LossEvent>& losses() const { return losses_; }
    const std::vector<LossMarker>& lossMarkers() const { return markers_; }
    const std::vector<CounterSeries>& counters() const { return counters_; }
    std::vector<int> cpus() const;
    // Thread id -> process id, from any record that named both.
    const std::unordered_map<int32_t, int32_t>& processOf() const { return pidOfTid_; }
    std::string threadName(int32_t tid) const;
    std::string processName(int32_t pid) const;
    uint64_t firstTime() const { return first_; }
    uint64_t lastTime() const { return last_; }

private:
    struct CpuState {
        bool running = false;
        int32_t pid = -1, tid = -1;
        uint64_t since = 0;
    };
    void see(uint64_t t);
    void noteThread(int32_t pid, int32_t tid);
    void closeSlice(int cpu, uint64_t t);
    void openSlice(int cpu, int32_t pid, int32_t tid, uint64_t t);

    std::map<int, CpuState> cpuState_;
    std::vector<RunSlice> slices_;
    std::vector<SampleEvent> samples_;
    std::vector<LossEvent> losses_;
    std::vector<LossMarker> markers_;
    std::vector<CounterSeries> counters_;
    std::unordered_map<int32_t, std::string> names_;
    std::unordered_map<int32_t, int32_t> pidOfTid_;
    uint64_t first_ = UINT64_MAX, last_ = 0;
};

}  // namespace auxscope
