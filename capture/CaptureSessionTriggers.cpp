// SPDX-License-Identifier: GPL-3.0-or-later
// CaptureSession::armTriggers: the trigger events and their rings.
#include <cstring>
#include <fstream>

#include "AuxPause.h"
#include "CaptureSession.h"

namespace auxscope {
namespace {

// A sample is 40 bytes (48 with a tracepoint's key): 4 MiB per CPU hold about
// 100,000 of them, 3 s of a function hit 33,000 times a second on each CPU, the
// slack for a drain thread kept waiting on a loaded machine (1 MiB lost samples
// with two test suites running side by side).
constexpr size_t kTriggerRingPages = 1024;  // 4 MiB per CPU with 4 KiB pages

Expected<uint32_t> uprobePmuType() {
    const char* path = "/sys/bus/event_source/devices/uprobe/type";
    std::ifstream in(path);
    uint32_t type = 0;
    if (!(in >> type))
        return makeError(std::string("uprobes are not available: cannot read ") + path +
                         " (a kernel without CONFIG_UPROBE_EVENTS)");
    return type;
}

}  // namespace

Expected<void> CaptureSession::armTriggers(std::vector<ResolvedTrigger> triggers,
                                           const TriggerSettings& settings) {
    if (drain_) return makeError("triggers are armed before the capture starts");
    if (triggerEngine_) return makeError("triggers are already armed");
    if (triggers.empty()) return {};
    if (!options_.takesSnapshots())
        return makeError(
            "a trigger takes snapshots: give -S with an AUX-area event (or --replay), or --overwrite (the "
            "sideband flight recorder)");

    const bool pauseMode = settings.mode == TriggerMode::Pause;
    if (pauseMode) {
        if (simulated() || !auxPlan_ || !options_.auxStartPaused)
            return makeError(
                "--trigger-mode pause pauses and resumes an AUX-area trace: give -S with an AUX event opened "
                "paused (auxscope record does), not a replay or --overwrite alone");
        if (options_.target != TargetKind::SystemWide)
            return makeError(
                "--trigger-mode pause needs a system-wide capture (-a): the triggers' uprobes join each "
                "CPU's AUX event group, and uprobes are opened per CPU for every task");
        for (auto& t : triggers)
            if (t.spec.kind != TriggerKind::FunctionEntry && t.spec.kind != TriggerKind::FunctionSlow)
                return makeError("trigger '" + t.name +
                                 "': --trigger-mode pause takes function triggers (the entry resumes the "
                                 "AUX trace, the return pauses it)");
    }
    std::optional<uint32_t> uprobeType;
    for (auto& t : triggers)
        if (t.spec.kind == TriggerKind::FunctionEntry || t.spec.kind == TriggerKind::FunctionSlow) {
            auto type = uprobePmuType();
            if (!type) return makeError("trigger '" + t.name + "': " + type.error().message);
            uprobeType = *type;
            break;
        }

    // Where: the target's threads, else every CPU (a replay's CPUs are not this
    // machine's: its triggers watch this machine system-wide).
    std::vector<int> cpus = simulated() ? onlineCpus() : cpus_;
    std::vector<pid_t> tids{-1};
    const bool perTask =
        !simulated() && (options_.target == TargetKind::Process || options_.target == TargetKind::Command);
    if (!simulated() && options_.target == TargetKind::Process) {
        auto t = threadsOf(options_.pid);
        if (!t) return t.error();
        tids = t.value();
    } else if (!simulated() && options_.target == TargetKind::Command) {
        tids = {command_->pid()};
    }

    auto engine = std::make_unique<TriggerEngine>(triggers, settings);
    // Uprobes are opened per CPU for every process (the engine keeps the target's
    // hits): a per-task uprobe with attr.inherit makes the kernel (seen on 6.18)
    // corrupt the traced threads' computation, and without inherit it would see
    // the main thread only.
    if (perTask)
        engine->setTargetPid(options_.target == TargetKind::Process ? options_.pid : command_->pid());
    std::vector<pid_t> everyTask{-1};
    const size_t pages = kTriggerRingPages;
    for (int cpu : cpus) {
        RingSlot slot;
        slot.cpu = cpu;
        slot.triggerRing = true;
        // Pause mode: the CPU's AUX event leads the group the trigger probes join.
        int auxLeader = -1;
        if (pauseMode) {
            for (const RingSlot& r : rings_)
                if (!r.triggerRing && r.cpu == cpu && r.aux.mapped()) auxLeader = r.ownerFd;
            if (auxLeader < 0)
                return makeError("--trigger-mode pause: no AUX event on cpu " + std::to_string(cpu));
        }
        for (uint32_t ti = 0; ti < triggers.size(); ++ti) {
            const ResolvedTrigger& t = triggers[ti];
            const bool uprobe =
                t.spec.kind == TriggerKind::FunctionEntry || t.spec.kind == TriggerKind::FunctionSlow;
            // A pair keyed by fields that name a thread (sched_wakeup's pid,
            // sched_switch's next_pid) is about a thread other than the one the
            // event happens on: the switch to a target's thread happens in the
            // context of whatever ran before it, often another process, which a
            // per-task event never sees. Such pairs are opened per CPU for every
            // task too; the engine keeps the target's threads.
            const bool keyedPair = t.spec.kind == TriggerKind::TracepointPair &&
                                   (t.firstKeyOffset >= 0 || t.secondKeyOffset >= 0);
            const bool everywhere = uprobe || keyedPair;
            for (pid_t tid : everywhere ? everyTask : tids) {
                struct Probe {
                    perf_event_attr attr;
                    TriggerEngine::Role role;
                    std::string what;
                };
                std::vector<Probe> probes;
                perf_event_attr base{};
                base.size = sizeof base;
                base.sample_period = 1;
                base.sample_type =
                    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
                base.read_format = PERF_FORMAT_ID;
                base.sample_id_all = 1;
                base.disabled = 1;
                // No wakeup per hit (a function called a million times a second would
                // wake the drain thread as often): a quarter-full ring wakes it, and while
                // triggers are armed it looks at the rings every TriggerEngine::kPollInterval.
                base.watermark = 1;
                base.wakeup_watermark = uint32_t(pages * pageSize() / 4);
                if (perTask && !everywhere) base.inherit = 1;
                if (options_.target == TargetKind::Command && !everywhere) base.enable_on_exec = 1;
                if (t.spec.kind == TriggerKind::FunctionEntry || t.spec.kind == TriggerKind::FunctionSlow) {
                    perf_event_attr a = base;
                    a.type = *uprobeType;
                    a.config1 = uint64_t(uintptr_t(t.path.c_str()));
                    a.config2 = t.offset;
                    // A USDT probe's semaphore: format/ref_ctr_offset is config:32-63.
                    a.config = t.refCtrOffset << 32;
                    if (pauseMode) setAuxAction(a, kAuxResume);
                    probes.push_back({a, TriggerEngine::Role::Entry, "uprobe"});
                    for (uint64_t more : t.moreOffsets) {
                        perf_event_attr m = a;
                        m.config2 = more;
                        probes.push_back({m, TriggerEngine::Role::Entry, "uprobe"});
                    }
                    if (t.spec.kind == TriggerKind::FunctionSlow || pauseMode) {
                        a.config = 1;  // format/retprobe: config:0
                        if (pauseMode) setAuxAction(a, kAuxPause);
                        // An entry trigger's return only pauses: the engine does not see it.
                        probes.push_back(
                            {a, TriggerEngine::Role::Return,
                             t.spec.kind == TriggerKind::FunctionSlow ? "uretprobe" : "pausing uretprobe"});
                    }
                } else {
                    perf_event_attr a = base;
                    a.type = PERF_TYPE_TRACEPOINT;
                    if (t.firstKeyOffset >= 0 || t.secondKeyOffset >= 0) a.sample_type |= PERF_SAMPLE_RAW;
                    a.config = t.firstTracepoint;
                    probes.push_back({a, TriggerEngine::Role::Begin, "first tracepoint"});
                    a.config = t.secondTracepoint;
                    probes.push_back({a, TriggerEngine::Role::End, "second tracepoint"});
                }
                for (auto& p : probes) {
                    auto fd = PerfEventFd::open(p.attr, tid, cpu, auxAction(p.attr) ? auxLeader : -1,
                                                "trigger '" + t.name + "' " + p.what);
                    if (!fd) return makeError("trigger '" + t.name + "': " + fd.error().message);
                    auto ev = std::make_unique<OpenEvent>();
                    ev->fd = std::move(fd.value());
                    ev->cpu = cpu;
                    ev->onExec = p.attr.enable_on_exec;
                    if (!slot.ring.mapped()) {
                        auto ring = DataRing::map(ev->fd.fd(), pages);
                        if (!ring)
                            return makeError("trigger ring of cpu " + std::to_string(cpu) + ": " +
                                             ring.error().message);
                        slot.ring = std::move(ring.value());
                        slot.ownerFd = ev->fd.fd();
                    } else if (auto r = ev->fd.setOutput(slot.ownerFd); !r) {
                        return makeError("trigger '" + t.name + "', cpu " + std::to_string(cpu) + ": " +
                                         r.error().message);
                    }
                    auto id = ev->fd.id();
                    if (!id) return makeError("trigger '" + t.name + "': " + id.error().message);
                    ids_.add(*id, eventLayoutOf(p.attr, -1, cpu));
                    if (p.what != "pausing uretprobe") engine->addProbe(*id, ti, p.role);
                    slot.members.push_back(&ev->fd);
                    slot.readFormat = PERF_FORMAT_ID;
                    triggerEvents_.push_back(std::move(ev));
                }
            }
        }
        rings_.push_back(std::move(slot));
        ++triggerRingCount_;
    }
    if (triggerRingCount_) engine->setClockPage(rings_.back().ring.meta());
    triggerEngine_ = std::move(engine);
    return {};
}

}  // namespace auxscope
