// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One capture: opens the per-CPU event sets for a target, maps one data ring per
// CPU (every other event on that CPU redirected into it with SET_OUTPUT), runs
// the drain thread, and stops cleanly. The GUI and the CLI both use this class.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "AuxEventConfig.h"
#include "CallGraphConfig.h"
#include "CaptureOptions.h"
#include "CaptureStats.h"
#include "CommandLauncher.h"
#include "DrainThread.h"
#include "EventSpec.h"
#include "PerfEvent.h"
#include "Pmu.h"
#include "RecordParser.h"
#include "RecordSink.h"
#include "SimulatedAuxProducer.h"
#include "TriggerEngine.h"

namespace auxscope {

struct CaptureSummary {
    std::string target;
    std::vector<std::string> events;
    std::vector<CpuStatsSnapshot> cpus;
    double seconds = 0;
    bool commandExited = false;
    int commandStatus = -1;  // wait status of the launched command
    std::vector<std::string> messages;
    // Why the capture ended on its own error (the drain thread's wait failed); empty otherwise.
    std::string failure;
    // What sinks (e.g. the perf.data writer) had to drop, per CPU and reason.
    std::vector<SinkLoss> sinkLosses;
    uint64_t snapshots = 0;      // snapshot requests served (per-CPU copies: cpus[i].totals.auxSnapshots)
    CallGraphOptions callGraph;  // call stacks on the samples (-g, --call-graph)

    CpuCounters total() const;
};

// One event as opened on every CPU (and task): what a file writer needs to
// describe the capture (perf.data attrs with their ids, PERF_RECORD_ID_INDEX).
struct OpenedEventGroup {
    std::string name;
    perf_event_attr attr{};  // exactly as passed to perf_event_open
    bool tracking = false;   // the dummy event carrying MMAP2/COMM/task/switch records
    struct Instance {
        uint64_t id = 0;
        int cpu = -1;
        size_t ringIndex = 0;  // index of the data ring it writes into (perf's mmap index)
        pid_t tid = -1;        // -1: every task on the CPU
    };
    std::vector<Instance> instances;
};

// A capture whose CPUs are simulated: one SimulatedAuxProducer per CPU stands in
// for an AUX PMU event and its rings (tests, benchmarks, replay of recorded
// trace on machines without trace hardware). Everything downstream of the rings
// (drain thread, sinks, statistics, perf.data writer, GUI) is the real one.
struct SimulatedCaptureOptions {
    unsigned cpus = 4;
    // Applied to every producer; `id` and `cpu` are set per CPU.
    SimulatedAuxConfig producer;
    uint64_t firstId = 1000;
    unsigned publishHz = 20;
    bool realtimeDrain = false;
    // How the capture is described (summary, GUI, perf.data): e.g. "replay of FILE".
    std::string label = "simulated AUX producers";
    std::string eventName = "simulated-aux";
    // The attr the file writer records for the simulated event. Unset: a software
    // dummy event, so that perf's tools do not look for a PMU that is not there;
    // a replay passes the recorded event's attr (e.g. intel_pt) so the file decodes.
    std::optional<perf_event_attr> eventAttr;
    // Snapshot mode (producer.mode == AuxMode::Snapshot): newest bytes per snapshot; 0: the whole area.
    uint64_t snapshotBytes = 0;
};

class CaptureSession {
public:
    ~CaptureSession();

    // Opens everything; nothing is enabled yet. Errors say what to change.
    static Expected<std::unique_ptr<CaptureSession>> open(const CaptureOptions& options,
                                                          const PmuRegistry& pmus);

    // Simulated CPUs (see SimulatedCaptureOptions). The producers are driven by
    // the caller (simulatedProducer(i).step(), or .start(plan) for a background
    // "hardware" thread); stop them before destroying the session.
    static Expected<std::unique_ptr<CaptureSession>> openSimulated(const SimulatedCaptureOptions& options);
    // The sample_type of the simulated event (the layout of its sample_id trailers).
    static constexpr uint64_t kSimulatedSampleType =
        PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    static perf_event_attr simulatedEventAttr();
    bool simulated() const { return !producers_.empty(); }
    size_t simulatedCount() const { return producers_.size(); }
    SimulatedAuxProducer& simulatedProducer(size_t index) { return *producers_[index]; }
    // The AUX-area trace event, when one was given (-e intel_pt//, cs_etm//, ...).
    const std::optional<AuxEventPlan>& auxPlan() const { return auxPlan_; }
    // What the capture reads from: "kernel", or the simulated source's label.
    const std::string& sourceLabel() const { return sourceLabel_; }

    // Consumers see every record on the drain thread; add them before start().
    void addConsumer(RecordConsumer* consumer) { consumers_.push_back(consumer); }
    // A sink is a consumer that also hears the end of each drain pass, may stop the
    // capture when it fails, and reports its drops in summary(). Add before start().
    void addSink(RecordSink* sink);

    // Starts the drain thread, enables the events and releases a launched command.
    Expected<void> start();
    // Non-blocking and async-signal-safe: the drain thread finishes on its own.
    void requestStop();
    // Non-blocking and async-signal-safe (SIGUSR2, a GUI button, a hotkey): the
    // drain thread copies the newest bytes of every snapshot-mode AUX area to the
    // sinks at its next wake, and (--overwrite) hands the records each backward
    // ring gained since the previous snapshot to the consumers. Ignored before start().
    void requestSnapshot();
    // Snapshot requests served so far (any thread); per-CPU counts are in stats().
    uint64_t snapshotCount() const;
    // Take one more snapshot when the capture stops (perf record --snapshot=e). Before start().
    void setSnapshotOnStop(bool on) { snapshotOnStop_ = on; }
    // Newest bytes per snapshot (0: the whole AUX area), overriding what the
    // options gave (a replay's session, say). Before start().
    void setSnapshotBytes(uint64_t bytes) { options_.snapshotBytes = bytes; }
    // An fd the drain thread watches and hands to `source` (the control FIFO). Not
    // owned: it must outlive the capture. Before start().
    void addCommandSource(DrainCommandSource* source) { commandSources_.push_back(source); }
    // Snapshot triggers (TriggerSpec.h): opens their uprobes, uretprobes and
    // tracepoints on every CPU (or on the target's threads) with a forward data
    // ring per CPU of their own, drained by the same drain thread, whose
    // TriggerEngine asks for the snapshots. The capture must take snapshots (an
    // AUX flight recorder, a replay in snapshot mode, or --overwrite). A replay's
    // triggers watch the real machine, system-wide. Before start().
    Expected<void> armTriggers(std::vector<ResolvedTrigger> triggers, const TriggerSettings& settings);
    // The engine (nullptr without triggers): its report() lists the firings.
    const TriggerEngine* triggerEngine() const { return triggerEngine_.get(); }
    bool finished() const;
    // Waits for the drain thread (returns at once once finished() is true).
    void wait();

    const CaptureStats& stats() const { return *stats_; }
    const std::vector<int>& cpus() const { return cpus_; }
    const std::vector<EventDesc>& events() const { return descs_; }
    const IdTable& ids() const { return ids_; }
    const CaptureOptions& options() const { return options_; }
    // Every event opened, primary events first (in -e order), the tracking event last.
    const std::vector<OpenedEventGroup>& eventGroups() const { return groups_; }
    // The data rings (one per CPU); the trigger rings are not counted.
    size_t ringCount() const { return rings_.size() - triggerRingCount_; }
    int ringCpu(size_t ringIndex) const { return rings_[ringIndex].cpu; }
    // The ring's perf_event_mmap_page (time_shift/time_mult/time_zero for TIME_CONV).
    const perf_event_mmap_page* ringMetaPage(size_t ringIndex) const {
        const RingSlot& r = rings_[ringIndex];
        return r.backward.mapped() ? r.backward.meta() : r.ring.meta();
    }
    pid_t commandPid() const { return command_ ? command_->pid() : -1; }
    std::chrono::steady_clock::time_point startTime() const { return started_; }
    CaptureSummary summary() const;
    // Per-CPU statistics over time; complete once the capture has finished.
    const std::vector<StatsSample>& statsHistory() const;

private:
    CaptureSession() = default;

    struct OpenEvent {
        PerfEventFd fd;
        int cpu = -1;
        bool tracking = false;
        bool onExec = false;  // enable_on_exec: switched on by the launched command's exec
    };

    CaptureOptions options_;
    std::vector<int> cpus_;
    std::vector<EventDesc> descs_;
    std::vector<std::unique_ptr<OpenEvent>> events_;
    std::vector<RingSlot> rings_;
    IdTable ids_;
    std::unique_ptr<CaptureStats> stats_;
    std::optional<LaunchedCommand> command_;
    int childPidFd_ = -1;
    std::unique_ptr<DrainThread> drain_;
    std::vector<RecordConsumer*> consumers_;
    std::vector<RecordSink*> sinks_;
    std::vector<OpenedEventGroup> groups_;
    std::chrono::steady_clock::time_point started_, stopped_;
    std::vector<std::string> setupMessages_;
    // Simulated CPUs: the producers and the controls that re-enable them.
    std::vector<std::unique_ptr<SimulatedAuxProducer>> producers_;
    std::vector<std::unique_ptr<AuxEventControl>> auxControls_;
    std::string sourceLabel_ = "kernel";
    std::optional<AuxEventPlan> auxPlan_;
    bool snapshotOnStop_ = false;
    std::vector<DrainCommandSource*> commandSources_;
    // Trigger events and their rings (the last triggerRingCount_ of rings_).
    std::vector<std::unique_ptr<OpenEvent>> triggerEvents_;
    std::unique_ptr<TriggerEngine> triggerEngine_;
    size_t triggerRingCount_ = 0;
};

// Whether the capture's call-graph choice can be honoured for its events on this
// machine (checkCallGraphEvents over the parsed -e list), so that a command line
// can refuse it as a usage error before anything starts. CaptureSession::open
// checks the same again.
Expected<void> checkCallGraphFor(const CaptureOptions& options, const PmuRegistry& pmus);

// Reads the thread ids of a process from /proc/PID/task.
Expected<std::vector<pid_t>> threadsOf(pid_t pid);

}  // namespace auxscope
