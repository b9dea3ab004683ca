// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a capture says about scheduling, built from perf records: for each CPU
// which thread ran when (from context-switch records, or from sched:sched_switch
// tracepoint samples where a CPU has no switch records), each thread's run
// intervals, thread names, samples, every loss the kernel reported, and any
// counter series the caller adds (e.g. ring fill). Exporters read this model;
// it is fed the same way from a live capture or from a perf.data file.
//
// What the file's headers say is read first (readHeaders): the field layout of
// sched_switch (HEADER_TRACING_DATA), the CPUs the machine had and which of them
// the capture opened (HEADER_NRCPUS, CPU_TOPOLOGY, ID_INDEX / CPU_MAP records,
// auxscope's statistics section) and auxscope's capture statistics over time.
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "CaptureStats.h"
#include "RecordParser.h"
#include "Result.h"
#include "sideband/CopyOnWrite.h"

namespace auxscope {

class PerfDataReader;
struct TraceEventFormat;

struct RunSlice {
    uint64_t start = 0, end = 0;  // perf clock, ns
    int cpu = -1;
    int32_t pid = -1, tid = -1;
};

struct SampleEvent {
    uint64_t time = 0;
    uint64_t ip = 0;
    int cpu = -1;
    int32_t pid = -1, tid = -1;
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

// Where sched:sched_switch keeps the fields the switch timeline needs, in the
// sample's raw data (PERF_SAMPLE_RAW, without its u32 size).
struct SchedSwitchLayout {
    uint32_t prevPid = 24, prevState = 32, prevStateSize = 8, nextComm = 40, nextCommSize = 16, nextPid = 56;
    uint32_t minSize() const;  // raw bytes a sample needs to hold them all
};

// The layout a sched_switch format (tracefs events/sched/sched_switch/format,
// or a file's tracing data) gives, or why it gives none. A live capture reads
// the format from tracefs and hands the layout to TraceModel::setSchedSwitchEvent.
Expected<SchedSwitchLayout> schedSwitchLayout(const TraceEventFormat& fmt);

// The machine's CPUs and the capture's, as far as the file tells.
struct CaptureCpus {
    int available = -1;       // HEADER_NRCPUS nr_cpus_avail (-1: not said)
    int onlineCount = -1;     // HEADER_NRCPUS nr_cpus_online
    std::vector<int> online;  // which were online (HEADER_CPU_TOPOLOGY's sibling lists); empty: not said
    // The CPUs the capture opened a ring on (ID_INDEX / CPU_MAP records, the
    // statistics section), ascending; empty: not said (or a per-thread capture).
    std::vector<int> traced;
};

class TraceModel {
public:
    // Reads what the headers of `file` say before its records are fed: the
    // sched_switch events and their layout, the CPUs, auxscope's statistics.
    // What it cannot read becomes a note.
    void readHeaders(const PerfDataReader& file);
    // Room for `n` samples (e.g. the file's SAMPLE records), so a big file's are not copied as they grow.
    void reserveSamples(size_t n) { samples_.reserve(n); }
    // Marks event `eventIndex` (EventLayout::descIndex) as sched:sched_switch:
    // its samples become switches (on CPUs without switch records).
    void setSchedSwitchEvent(int eventIndex, const SchedSwitchLayout& layout);

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
    const std::unordered_map<int32_t, int32_t>& processOf() const { return *pidOfTid_; }
    std::string threadName(int32_t tid) const;
    std::string processName(int32_t pid) const;
    uint64_t firstTime() const { return first_; }
    uint64_t lastTime() const { return last_; }

    // auxscope's capture statistics (AUXSCOPE_CAPTURE_STATS) as decoded, in file order.
    const std::vector<StatsSample>& statsHistory() const { return stats_; }
    const CaptureCpus& captureCpus() const { return cpuInfo_; }
    // sched_switch samples turned into switches (also those not used because
    // their CPU had switch records), and samples too short for the layout.
    uint64_t tracepointSwitches() const { return tpSwitches_; }
    uint64_t tracepointShort() const { return tpShort_; }
    // sched_switch samples whose prev_pid is not the thread their CPU's previous
    // one switched to: the run that would end there is left out (its end is unknown).
    uint64_t tracepointBroken() const { return tpBroken_; }
    // Whether event `eventIndex` is sched:sched_switch (readHeaders, setSchedSwitchEvent).
    bool isSchedSwitchEvent(int eventIndex) const {
        return eventIndex >= 0 && size_t(eventIndex) < isSwitchEvent_.size() &&
               isSwitchEvent_[size_t(eventIndex)];
    }
    // CPUs whose timeline came from sched_switch tracepoints, after finish().
    const std::vector<int>& tracepointCpus() const { return tpCpus_; }
    // What readHeaders() and the records could not tell as asked, one line each.
    const std::vector<std::string>& notes() const { return notes_; }
    // The parts a copy shares with this model until one of them changes (names,
    // thread -> process): for a holder that wants to be the one that frees them.
    void sharedParts(std::vector<std::shared_ptr<const void>>& out) const;

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

    void tracepointSwitch(int cpu, const ParsedRecord& r, const SchedSwitchLayout& l);

    std::map<int, CpuState> cpuState_;
    int lastCpu_ = -1;                           // the CPU of the previous record (in cpuState_)
    int32_t lastTid_ = INT32_MIN, lastPid_ = 0;  // the previous noteThread()
    // sched_switch tracepoints: their own per-CPU state and slices, kept apart
    // from the switch records' so a CPU with both keeps the records' (finish()).
    std::vector<SchedSwitchLayout> switchEvents_;  // by event index
    std::vector<bool> isSwitchEvent_;
    std::map<int, CpuState> tpState_;
    std::vector<RunSlice> tpSlices_;
    // CPUs with SWITCH / SWITCH_CPU_WIDE records (a set: a file may name any CPU
    // number, and a vector by CPU would be as large as the largest).
    std::set<int> recordSwitchCpus_;
    std::vector<int> tpCpus_;
    // next_comm, where no COMM named the thread. The per-thread maps are shared
    // with copies (a live snapshot) until they change.
    CopyOnWrite<std::unordered_map<int32_t, std::string>> switchNames_;
    int32_t lastNamed_ = 0;  // the thread switchNames_ named last (not looked up again)
    uint64_t tpSwitches_ = 0, tpShort_ = 0, tpBroken_ = 0;
    bool brokenNoted_ = false;
    std::vector<StatsSample> stats_;
    CaptureCpus cpuInfo_;
    std::vector<std::string> notes_;
    std::vector<RunSlice> slices_;
    std::vector<SampleEvent> samples_;
    std::vector<LossEvent> losses_;
    std::vector<LossMarker> markers_;
    std::vector<CounterSeries> counters_;
    CopyOnWrite<std::unordered_map<int32_t, std::string>> names_;
    CopyOnWrite<std::unordered_map<int32_t, int32_t>> pidOfTid_;
    uint64_t first_ = UINT64_MAX, last_ = 0;
};

}  // namespace auxscope
