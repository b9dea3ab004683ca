// SPDX-License-Identifier: GPL-3.0-or-later
#include "CaptureSession.h"

#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "AuxPause.h"

namespace auxscope {
namespace {

// Fields every record carries so it can be attributed: the identifier first
// (samples) or last (other records), plus thread, time and CPU.
constexpr uint64_t kIdFields = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

perf_event_attr trackingAttr(bool contextSwitches) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kIdFields;
    a.mmap = 1;
    a.mmap2 = 1;
    a.mmap_data = 1;
    a.comm = 1;
    a.comm_exec = 1;
    a.task = 1;
    a.context_switch = contextSwitches;
    a.ksymbol = 1;
    return a;
}

}  // namespace

std::string describeTarget(const CaptureOptions& o) {
    switch (o.target) {
        case TargetKind::SystemWide:
            return "system-wide";
        case TargetKind::CpuList:
            return "CPUs " + formatCpuList(o.cpus);
        case TargetKind::Process:
            return "process " + std::to_string(o.pid);
        case TargetKind::Command: {
            std::string s = "command:";
            for (auto& a : o.command)
                s += " " + a;
            return s;
        }
    }
    return "?";
}

Expected<std::vector<pid_t>> threadsOf(pid_t pid) {
    namespace fs = std::filesystem;
    std::vector<pid_t> tids;
    std::error_code ec;
    for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
        tids.push_back(pid_t(std::stol(e.path().filename().string())));
    if (ec || tids.empty()) return makeError("no process with pid " + std::to_string(pid));
    std::sort(tids.begin(), tids.end());
    return tids;
}

Expected<void> checkCallGraphFor(const CaptureOptions& opts, const PmuRegistry& pmus) {
    if (!opts.callGraph.enabled()) return {};
    EventParser parser(pmus, EventDefaults{opts.sampleFreq});
    std::vector<EventDesc> descs;
    for (auto& spec : opts.events.empty() ? std::vector<std::string>{"cpu-clock"} : opts.events) {
        auto parsed = parser.parse(spec);
        // An event that does not parse is refused, with its reason, when the capture opens.
        if (!parsed) return {};
        for (auto& d : *parsed)
            descs.push_back(std::move(d));
    }
    return checkCallGraphEvents(opts.callGraph, descs, pmus, thisCpuVendor());
}

CpuCounters CaptureSummary::total() const {
    CpuCounters t;
    for (auto& c : cpus) {
        const auto& x = c.totals;
        t.bytes += x.bytes, t.records += x.records, t.samples += x.samples;
        t.lostRecords += x.lostRecords, t.lostSamples += x.lostSamples, t.kernelLost += x.kernelLost;
        t.throttles += x.throttles, t.unthrottles += x.unthrottles, t.parseErrors += x.parseErrors;
        t.corruptBytes += x.corruptBytes, t.unknownTypes += x.unknownTypes, t.auxBytes += x.auxBytes;
        t.auxChunks += x.auxChunks, t.auxTruncated += x.auxTruncated, t.auxOverwrite += x.auxOverwrite;
        t.auxPartial += x.auxPartial, t.auxCollision += x.auxCollision, t.auxReenables += x.auxReenables;
        t.auxErrors += x.auxErrors, t.auxSnapshots += x.auxSnapshots;
        t.sinkHeldBack += x.sinkHeldBack, t.auxSinkHeldBack += x.auxSinkHeldBack;
        t.auxSnapshotBytes += x.auxSnapshotBytes, t.auxSnapshotsTracked += x.auxSnapshotsTracked;
        t.auxSnapshotsZeroScan += x.auxSnapshotsZeroScan;
        t.backwardSnapshots += x.backwardSnapshots, t.backwardRecords += x.backwardRecords;
        t.backwardBytes += x.backwardBytes, t.backwardOverwrittenBytes += x.backwardOverwrittenBytes;
        t.backwardTornBytes += x.backwardTornBytes, t.backwardErrors += x.backwardErrors;
        t.parseErrorsUnknownEvent += x.parseErrorsUnknownEvent;
        t.undeliveredRecords += x.undeliveredRecords, t.undeliveredBytes += x.undeliveredBytes;
        t.undeliveredAuxBytes += x.undeliveredAuxBytes;
        for (size_t i = 0; i < t.byType.size(); ++i)
            t.byType[i] += x.byType[i];
    }
    return t;
}

void CaptureSession::addSink(RecordSink* sink) {
    consumers_.push_back(sink);
    sinks_.push_back(sink);
    // requestStop() only writes an eventfd once the drain thread exists.
    sink->setStopRequest([this] { requestStop(); });
}

CaptureSession::~CaptureSession() {
    if (drain_) {
        drain_->requestStop();
        drain_->join();
    }
    for (auto& p : producers_)
        p->stop();
    if (command_) command_->abort();
    if (childPidFd_ >= 0) close(childPidFd_);
}

Expected<std::unique_ptr<CaptureSession>> CaptureSession::open(const CaptureOptions& opts,
                                                               const PmuRegistry& pmus) {
    std::unique_ptr<CaptureSession> s(new CaptureSession);
    s->options_ = opts;

    // CPUs
    auto online = onlineCpus();
    if (opts.target == TargetKind::CpuList) {
        if (opts.cpus.empty()) return makeError("no CPUs given");
        for (int c : opts.cpus)
            if (std::find(online.begin(), online.end(), c) == online.end())
                return makeError("CPU " + std::to_string(c) +
                                 " is not online (online: " + formatCpuList(online) + ")");
        s->cpus_ = opts.cpus;
    } else {
        s->cpus_ = online;
    }

    // Events
    EventParser parser(pmus, EventDefaults{opts.sampleFreq});
    std::vector<std::string> specs =
        opts.events.empty() ? std::vector<std::string>{"cpu-clock"} : opts.events;
    const bool perCpu = opts.target == TargetKind::SystemWide || opts.target == TargetKind::CpuList;
    for (auto& spec : specs) {
        auto parsed = parser.parse(spec);
        if (!parsed) return parsed.error();
        for (auto& d : parsed.value()) {
            if (!d.isAux) {
                s->descs_.push_back(std::move(d));
                continue;
            }
            // One AUX event per capture, as with perf: each CPU's ring has one AUX area.
            if (s->auxPlan_)
                return makeError("event '" + d.name + "': only one AUX-area trace event per capture ('" +
                                 s->auxPlan_->eventName + "' is already given)");
            AuxEventOptions ao;
            ao.snapshot = opts.auxSnapshot;
            ao.perCpu = perCpu;
            ao.auxPages = opts.auxPages;
            ao.filter = opts.auxFilter;
            auto plan = planAuxEvent(pmus, spec, ao);
            if (!plan) return plan.error();
            s->auxPlan_ = std::move(plan.value());
            d.attr = s->auxPlan_->attr;
            // The AUX event comes first: it owns each CPU's ring (its AUX area can only
            // be mapped through it), and every other event is redirected into it.
            s->descs_.insert(s->descs_.begin(), std::move(d));
        }
    }
    if (!s->auxPlan_ && opts.auxSnapshot)
        return makeError("snapshot mode needs an AUX-area trace event (-e intel_pt//, cs_etm//, arm_spe//)");
    if (opts.overwrite && s->auxPlan_)
        // Both PERF_RECORD_AUX (where the AUX bytes lie, with their loss flags) and
        // the MMAP/COMM/switch records the decoder needs would sit in a ring that is
        // overwritten and read only at snapshots: full mode could not advance
        // aux_tail in time, snapshot mode could not follow the area's wrap, and an
        // AUX snapshot would outlive the sideband it needs. -S alone already keeps
        // the sideband complete for the AUX flight recorder.
        return makeError(
            "--overwrite (sideband flight recorder) cannot be combined with the AUX-area event '" +
            s->auxPlan_->eventName +
            "': its PERF_RECORD_AUX and sideband records must be drained continuously; use -S "
            "for an AUX flight recorder (its sideband stays complete)");
    if (!s->auxPlan_ && !opts.auxFilter.empty())
        return makeError("address filters apply to an AUX-area trace event, and none is given");
    if (opts.callGraph.enabled()) {
        // Checked before anything is opened, so a refusal names what is missing
        // rather than the kernel's EOPNOTSUPP from the first CPU.
        if (auto r = checkCallGraphEvents(opts.callGraph, s->descs_, pmus, thisCpuVendor()); !r)
            return r.error();
        for (auto& d : s->descs_)
            if (takesCallGraph(d))
                if (auto r = applyCallGraph(opts.callGraph, d.attr); !r) return r.error();
    }

    const size_t pages = roundUpPow2(std::max<size_t>(1, opts.dataPages));
    const uint64_t ringBytes = pages * pageSize();

    // Threads to attach to
    std::vector<pid_t> tids{-1};
    if (opts.target == TargetKind::Process) {
        auto t = threadsOf(opts.pid);
        if (!t) return t.error();
        tids = t.value();
    } else if (opts.target == TargetKind::Command) {
        std::optional<RunAs> runAs;
        if (opts.commandUser) {
            auto r = RunAs::forUser(*opts.commandUser);
            if (!r) return r.error();
            r->cwd = opts.commandCwd;
            runAs = std::move(r.value());
        }
        auto cmd = LaunchedCommand::start(opts.command, runAs ? &*runAs : nullptr);
        if (!cmd) return cmd.error();
        s->command_ = std::move(cmd.value());
        tids = {s->command_->pid()};
        s->childPidFd_ = int(syscall(SYS_pidfd_open, s->command_->pid(), 0));
    }
    const bool perTask = opts.target == TargetKind::Process || opts.target == TargetKind::Command;

    // What every auxscope event needs to be attributed and drained. The AUX event
    // keeps the sample bits of its plan (perf's, checked against caps/); other
    // non-dummy events also sample IP and period.
    auto finalizeWith = [&](perf_event_attr a, bool isAux) {
        a.sample_type |= kIdFields;
        if (!isAux && !(a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_DUMMY))
            a.sample_type |= PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD;
        a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
        a.sample_id_all = 1;
        a.disabled = 1;
        if (opts.overwrite) {
            // The kernel refuses to mix directions in one ring: every event that
            // SET_OUTPUTs into it writes backward too. No wakeups wanted: the
            // drain thread reads the ring only at snapshots.
            a.write_backward = 1;
            a.watermark = 0;
            a.wakeup_events = 0;
        } else {
            a.watermark = 1;
            a.wakeup_watermark = uint32_t(std::max<uint64_t>(ringBytes / 4, 1));
        }
        if (perTask) a.inherit = 1;
        if (opts.target == TargetKind::Command) a.enable_on_exec = 1;
        return a;
    };
    auto finalize = [&](perf_event_attr a) { return finalizeWith(a, false); };
    auto finalizeAux = [&](perf_event_attr a) {
        if (opts.auxStartPaused) setAuxAction(a, kAuxStartPaused);
        return finalizeWith(a, true);
    };

    bool formatLost = true;
    // `a` is updated to what was finally opened (PERF_FORMAT_LOST may be dropped).
    auto openOne = [&](perf_event_attr& a, pid_t tid, int cpu,
                       const std::string& name) -> Expected<PerfEventFd> {
        if (!formatLost) a.read_format &= ~uint64_t(PERF_FORMAT_LOST);
        auto fd = PerfEventFd::open(a, tid, cpu, -1, name);
        if (!fd && formatLost && (a.read_format & PERF_FORMAT_LOST)) {
            // Kernels before 6.0 reject PERF_FORMAT_LOST with EINVAL: count from LOST records only.
            a.read_format &= ~uint64_t(PERF_FORMAT_LOST);
            auto retry = PerfEventFd::open(a, tid, cpu, -1, name);
            if (retry) {
                formatLost = false;
                s->setupMessages_.push_back(
                    "this kernel lacks PERF_FORMAT_LOST: lost counts come from LOST records only");
                return retry;
            }
        }
        return fd;
    };

    // Primary events in -e order, then the tracking event (perf's order too).
    s->groups_.resize(s->descs_.size() + 1);
    for (size_t i = 0; i < s->descs_.size(); ++i)
        s->groups_[i].name = s->descs_[i].name;
    s->groups_.back().name = "dummy";
    s->groups_.back().tracking = true;

    std::vector<int> statsCpus;
    for (int cpu : s->cpus_) {
        RingSlot slot;
        slot.cpu = cpu;
        for (pid_t tid : tids) {
            struct Pending {
                perf_event_attr attr;
                std::string name;
                int descIndex;
                bool tracking;
            };
            std::vector<Pending> toOpen;
            // The AUX event (first in descs_) owns the ring; otherwise the tracking event does.
            size_t first = 0;
            if (s->auxPlan_)
                toOpen.push_back({finalizeAux(s->descs_[0].attr), s->descs_[0].name, 0, false}), first = 1;
            toOpen.push_back({finalize(trackingAttr(opts.contextSwitches)), "tracking (dummy)", -1, true});
            for (size_t i = first; i < s->descs_.size(); ++i)
                toOpen.push_back({finalize(s->descs_[i].attr), s->descs_[i].name, int(i), false});
            for (auto& p : toOpen) {
                auto fd = openOne(p.attr, tid, cpu, p.name);
                if (!fd) return fd.error();
                auto ev = std::make_unique<OpenEvent>();
                ev->fd = std::move(fd.value());
                ev->cpu = cpu;
                ev->tracking = p.tracking;
                const bool isAux = p.descIndex >= 0 && s->descs_[size_t(p.descIndex)].isAux;
                if (opts.overwrite && !slot.backward.mapped()) {
                    // Read-only, so the kernel overwrites the oldest records instead of stopping.
                    auto ring = BackwardRing::map(ev->fd.fd(), pages);
                    if (!ring) return makeError("cpu " + std::to_string(cpu) + ": " + ring.error().message);
                    slot.backward = std::move(ring.value());
                    slot.ownerFd = ev->fd.fd();
                } else if (!opts.overwrite && !slot.ring.mapped()) {
                    auto ring = DataRing::map(ev->fd.fd(), pages);
                    if (!ring) return makeError("cpu " + std::to_string(cpu) + ": " + ring.error().message);
                    slot.ring = std::move(ring.value());
                    slot.ownerFd = ev->fd.fd();
                    if (isAux) {
                        auto aux = AuxRing::map(ev->fd.fd(), slot.ring, s->auxPlan_->auxPages,
                                                opts.auxSnapshot ? AuxMode::Snapshot : AuxMode::Full);
                        if (!aux)
                            return makeError("cpu " + std::to_string(cpu) + ", event '" + p.name +
                                             "': " + aux.error().message);
                        slot.aux = std::move(aux.value());
                        // CoreSight reports a free-running snapshot head, PT and SPE one
                        // that wraps; PT's snapshot records all claim the whole buffer.
                        slot.auxFreeRunningHead = s->auxPlan_->kind == AuxPmuKind::CsEtm;
                        slot.auxRecordSizesReliable = s->auxPlan_->kind != AuxPmuKind::IntelPt;
                        s->auxControls_.push_back(std::make_unique<PerfFdAuxControl>(ev->fd));
                        slot.auxControl = s->auxControls_.back().get();
                    }
                } else if (auto r = ev->fd.setOutput(slot.ownerFd); !r) {
                    return makeError("cpu " + std::to_string(cpu) + ", event '" + p.name +
                                     "': " + r.error().message);
                }
                if (isAux && !s->auxPlan_->addrFilter.empty())
                    if (auto r = ev->fd.setFilter(s->auxPlan_->addrFilter); !r)
                        return makeError("cpu " + std::to_string(cpu) + ", event '" + p.name +
                                         "': address filter '" + s->auxPlan_->addrFilter +
                                         "': " + r.error().message);
                auto id = ev->fd.id();
                if (!id) return makeError("event '" + p.name + "': " + id.error().message);
                s->ids_.add(*id, eventLayoutOf(p.attr, p.descIndex, cpu));
                OpenedEventGroup& g = s->groups_[p.tracking ? s->groups_.size() - 1 : size_t(p.descIndex)];
                if (g.instances.empty()) g.attr = p.attr;
                g.instances.push_back({*id, cpu, s->rings_.size(), perTask ? tid : -1});
                slot.members.push_back(&ev->fd);
                slot.readFormat = formatLost ? (PERF_FORMAT_ID | PERF_FORMAT_LOST) : PERF_FORMAT_ID;
                s->events_.push_back(std::move(ev));
            }
        }
        slot.statsIndex = statsCpus.size();
        statsCpus.push_back(cpu);
        s->rings_.push_back(std::move(slot));
    }
    s->stats_ = std::make_unique<CaptureStats>(statsCpus);
    return s;
}

namespace {
// The simulator's PERF_EVENT_IOC_ENABLE/DISABLE; its state is exact.
struct SimulatedAuxControl : AuxEventControl {
    explicit SimulatedAuxControl(SimulatedAuxProducer& p) : producer(p) {}
    Expected<void> enable() override {
        producer.enable();
        return {};
    }
    Expected<void> disable() override {
        producer.disable();
        return {};
    }
    std::optional<bool> enabled() const override { return producer.enabled(); }
    SimulatedAuxProducer& producer;
};
}  // namespace

perf_event_attr CaptureSession::simulatedEventAttr() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kSimulatedSampleType;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    a.disabled = 1;
    return a;
}

Expected<std::unique_ptr<CaptureSession>> CaptureSession::openSimulated(const SimulatedCaptureOptions& o) {
    if (o.cpus == 0) return makeError("simulated capture: no CPUs");
    std::unique_ptr<CaptureSession> s(new CaptureSession);
    s->sourceLabel_ = o.label;
    s->options_.publishHz = o.publishHz;
    s->options_.realtimeDrain = o.realtimeDrain;
    s->options_.contextSwitches = false;
    s->options_.auxSnapshot = o.producer.mode == AuxMode::Snapshot;
    s->options_.snapshotBytes = o.snapshotBytes;
    EventDesc desc;
    desc.name = o.eventName;
    desc.attr = o.eventAttr ? *o.eventAttr : simulatedEventAttr();
    desc.isAux = true;
    s->descs_.push_back(desc);
    OpenedEventGroup group;
    group.name = o.eventName;
    // The simulated event also carries the sideband (as perf's AUX event does
    // when no dummy is added): the file writer attributes LOST records to it.
    group.tracking = true;
    group.attr = desc.attr;
    // Every record the producers write carries this sample_id layout, whatever attr is recorded.
    group.attr.sample_type = kSimulatedSampleType;
    group.attr.sample_id_all = 1;
    group.attr.read_format = PERF_FORMAT_ID;
    for (unsigned i = 0; i < o.cpus; ++i) {
        SimulatedAuxConfig cfg = o.producer;
        cfg.cpu = i;
        cfg.id = o.firstId + i;
        auto p = SimulatedAuxProducer::create(cfg);
        if (!p) return makeError("simulated cpu " + std::to_string(i) + ": " + p.error().message);
        s->cpus_.push_back(int(i));
        s->auxControls_.push_back(std::make_unique<SimulatedAuxControl>(**p));
        s->ids_.add(cfg.id, EventLayout{kSimulatedSampleType, PERF_FORMAT_ID, 0, int(i)});
        group.instances.push_back({cfg.id, int(i), i, -1});

        RingSlot slot;
        slot.cpu = int(i);
        slot.statsIndex = i;
        slot.ownerFd = (*p)->wakeupFd();
        slot.ownerFdIsEventfd = true;
        slot.ring = (*p)->dataRing();
        slot.aux = (*p)->auxRing();
        slot.auxControl = s->auxControls_.back().get();
        slot.auxFreeRunningHead = cfg.freeRunningOverwriteHead;
        s->rings_.push_back(std::move(slot));
        s->producers_.push_back(std::move(*p));
    }
    s->groups_.push_back(std::move(group));
    s->stats_ = std::make_unique<CaptureStats>(s->cpus_);
    return s;
}

Expected<void> CaptureSession::start() {
    if (drain_) return makeError("capture already started");
    DrainControl ctl;
    ctl.auxSinks = sinks_;
    ctl.snapshotBytes = options_.snapshotBytes;
    ctl.snapshotOnStop = snapshotOnStop_;
    ctl.commandSources = commandSources_;
    for (auto& e : events_)
        (e->tracking ? ctl.trackingEvents : ctl.primaryEvents).push_back(&e->fd);
    for (auto& e : triggerEvents_)
        ctl.primaryEvents.push_back(&e->fd);
    ctl.trigger = triggerEngine_.get();
    // A backward ring is not drained at stop, so a provoked LOST record would not be seen.
    ctl.canProvokeFlush =
        !options_.overwrite && options_.contextSwitches &&
        (options_.target == TargetKind::SystemWide || options_.target == TargetKind::CpuList);
    ctl.childPid = command_ ? command_->pid() : -1;
    ctl.childPidFd = childPidFd_;
    ctl.stopWhenAllRingsHangUp = options_.target == TargetKind::Process;
    ctl.realtime = options_.realtimeDrain;
    ctl.publishHz = options_.publishHz;
    ctl.watchCpuHotplug = !simulated();  // real CPUs only: a simulated CPU need not exist
    if (!sinks_.empty())
        ctl.afterPass = [sinks = sinks_] {
            for (RecordSink* sink : sinks)
                sink->onDrainPassEnd();
        };
    started_ = std::chrono::steady_clock::now();
    if (options_.durationSeconds > 0)
        ctl.deadline = started_ + std::chrono::microseconds(int64_t(options_.durationSeconds * 1e6));
    drain_ = std::make_unique<DrainThread>(rings_, ids_, *stats_, ctl, consumers_);
    if (auto r = drain_->start(); !r) return r;
    // Trigger events on a launched command's threads switch on at its exec
    // (enable_on_exec); the system-wide ones (uprobes) now.
    for (auto& e : triggerEvents_)
        if (!e->onExec)
            if (auto r = e->fd.enable(); !r) {
                drain_->requestStop();
                drain_->join();
                return makeError("trigger event on cpu " + std::to_string(e->cpu) + ": " + r.error().message);
            }

    if (simulated()) return {};  // the producers are driven by their owner
    if (command_) {
        // Events carry enable_on_exec: they switch on at the exec below.
        command_->setReaped();  // from now on the drain thread waits for it
        if (auto r = command_->release(); !r) {
            drain_->requestStop();
            drain_->join();
            return r;
        }
        return {};
    }
    for (bool tracking : {true, false})
        for (auto& e : events_)
            if (e->tracking == tracking)
                if (auto r = e->fd.enable(); !r) {
                    drain_->requestStop();
                    drain_->join();
                    return makeError("cpu " + std::to_string(e->cpu) + ": " + r.error().message);
                }
    return {};
}

void CaptureSession::requestStop() {
    if (drain_) drain_->requestStop();
}

void CaptureSession::requestSnapshot() {
    if (drain_) drain_->requestSnapshot();
}

uint64_t CaptureSession::snapshotCount() const {
    return drain_ ? drain_->snapshotsTaken() : 0;
}

bool CaptureSession::finished() const {
    return drain_ && drain_->finished();
}

void CaptureSession::wait() {
    if (!drain_) return;
    drain_->join();
    if (stopped_ == std::chrono::steady_clock::time_point{}) stopped_ = std::chrono::steady_clock::now();
}

const std::vector<StatsSample>& CaptureSession::statsHistory() const {
    static const std::vector<StatsSample> none;
    return drain_ ? drain_->statsHistory() : none;
}

CaptureSummary CaptureSession::summary() const {
    CaptureSummary s;
    s.target = simulated() ? sourceLabel_ : describeTarget(options_);
    s.callGraph = options_.callGraph;
    for (auto& d : descs_)
        s.events.push_back(d.name);
    s.cpus = stats_->snapshotAll();
    auto end =
        stopped_ == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now() : stopped_;
    s.seconds = std::chrono::duration<double>(end - started_).count();
    s.messages = setupMessages_;
    if (drain_) {
        for (auto& m : drain_->messages())
            s.messages.push_back(m);
        s.commandExited = drain_->childExited();
        s.commandStatus = drain_->childExitStatus();
        s.snapshots = drain_->snapshotsTaken();
        if (drain_->finished()) s.failure = drain_->failure();  // written before finished()
    }
    for (RecordSink* sink : sinks_) {
        for (auto& loss : sink->losses())
            s.sinkLosses.push_back(loss);
        for (auto& m : sink->messages())
            s.messages.push_back(m);
    }
    return s;
}

}  // namespace auxscope
