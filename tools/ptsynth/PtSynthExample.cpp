// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthExample.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "PtSynthEncoder.h"
#include "PtSynthGenerator.h"
#include "PtSynthPerfData.h"
#include "PtSynthTruth.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::ptsynth {
namespace {

constexpr int32_t kPid = 4242, kParentPid = 4241;
constexpr unsigned kCpus = 3;
constexpr uint64_t kStart = 1000000000;  // T0, perf time = TSC
constexpr uint64_t kKernelTicks = 1500;  // time in the kernel around a switch, exit or fork
constexpr uint64_t kChunkBytes = 32 << 10;
constexpr uint64_t kSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
constexpr uint64_t kClockSampleType = kSampleType | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;

uint64_t ptId(int cpu) {
    return 1 + uint64_t(cpu);
}
uint64_t trackingId(int cpu) {
    return 11 + uint64_t(cpu);
}
uint64_t clockId(int cpu) {
    return 21 + uint64_t(cpu);
}

// The example's threads: who, where, how long and how they leave the CPU.
struct ThreadPlan {
    const char* comm;
    int cpu;
    uint64_t insns;     // instructions before it exits (the loop count is fitted to it)
    uint64_t firstRun;  // perf time of its first switch-in
    uint64_t quantum;   // ns on CPU before it is preempted or sleeps (0: until it exits)
    uint64_t sleep;     // ns off CPU after each quantum (0: back in the run queue at once)
};

const ThreadPlan kPlan[] = {
    {"pt-example", 0, 1300000, kStart + 1000, 0, 0},
    {"worker-1", 1, 900000, kStart + 12000, 300000, 120000},
    {"worker-2", 2, 700000, kStart + 14000, 200000, 0},
    {"worker-3", 2, 700000, kStart + 16000, 200000, 0},
};
constexpr unsigned kThreads = std::size(kPlan);

struct Thread {
    const ThreadPlan* plan = nullptr;
    int32_t tid = 0;
    FlowLog log;
    Truth truth;
    size_t pos = 0;
    uint64_t nextIp = 0;
    bool started = false, done = false;
    uint64_t ready = 0;  // runnable from this time
    uint64_t samples = 0;
};

// A record of the data section, placed by time (seq keeps the order records of
// one time were made in).
struct Pending {
    uint64_t time = 0, seq = 0;
    std::vector<uint8_t> bytes;
    bool aux = false;
    perfdata::AuxtraceRecord head{};
};

class Recording {
public:
    uint64_t seq = 0;
    std::vector<Pending> records;
    uint64_t samples = 0, switches = 0, auxRecords = 0, ptBytes = 0, auxTransactions = 0;
    uint64_t auxOffset[kCpus] = {};

    void add(uint64_t time, RecordBuilder& b) {
        const auto bytes = b.finish();
        records.push_back({time, seq++, std::vector<uint8_t>(bytes.begin(), bytes.end()), false, {}});
    }
    SampleIdSpec tracking(int cpu) const { return {kSampleType, trackingId(cpu), uint32_t(cpu)}; }

    void comm(uint64_t t, int cpu, int32_t tid, const std::string& name, bool exec) {
        RecordBuilder b(PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
        b.u32(uint32_t(kPid)).u32(uint32_t(tid)).str(name.substr(0, 15));
        b.sampleId(tracking(cpu), kPid, tid, t);
        add(t, b);
    }
    void mmap2(uint64_t t, const PtSynthMapping& m) {
        RecordBuilder b(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
        b.u32(uint32_t(kPid)).u32(uint32_t(kPid)).u64(m.start).u64(m.end - m.start).u64(m.pgoff);
        b.u32(m.major).u32(m.minor).u64(m.inode).u64(0).u32(m.prot).u32(m.flags);
        b.str(m.path).sampleId(tracking(0), kPid, kPid, t);
        add(t, b);
    }
    // FORK from the creating thread's context (current = the main thread);
    // EXIT names the process's parent as the thread's (its real_parent).
    void task(uint32_t type, uint64_t t, int cpu, int32_t tid) {
        RecordBuilder b(type);
        const int32_t parent = type == PERF_RECORD_FORK ? kPid : kParentPid;
        b.u32(uint32_t(kPid)).u32(uint32_t(parent)).u32(uint32_t(tid)).u32(uint32_t(parent)).u64(t);
        const int32_t current = type == PERF_RECORD_FORK ? kPid : tid;
        b.sampleId(tracking(cpu), kPid, current, t);
        add(t, b);
    }
    void itraceStart(uint64_t t, int cpu, int32_t tid) {
        RecordBuilder b(PERF_RECORD_ITRACE_START);
        b.u32(uint32_t(kPid)).u32(uint32_t(tid));
        b.sampleId({kSampleType, ptId(cpu), uint32_t(cpu)}, kPid, tid, t);
        add(t, b);
    }
    // `tid` is the task going out (out) or coming in; `other` the one coming in
    // or that went out (0: the idle task).
    void contextSwitch(uint64_t t, int cpu, int32_t tid, bool out, int32_t other, bool preempt) {
        uint16_t misc = 0;
        if (out) misc = PERF_RECORD_MISC_SWITCH_OUT | (preempt ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);
        RecordBuilder b(PERF_RECORD_SWITCH_CPU_WIDE, misc);
        b.u32(uint32_t(other ? kPid : 0)).u32(uint32_t(other));
        b.sampleId(tracking(cpu), kPid, tid, t);
        add(t, b);
        ++switches;
    }
    void sample(uint64_t t, int cpu, int32_t tid, const WalkSample& s) {
        RecordBuilder b(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
        b.u64(clockId(cpu)).u64(s.ip).u32(uint32_t(kPid)).u32(uint32_t(tid)).u64(t).u32(uint32_t(cpu)).u32(0);
        b.u64(kExampleSamplePeriodNs);
        b.u64(2 + s.returns.size()).u64(uint64_t(PERF_CONTEXT_USER)).u64(s.ip);
        for (uint64_t r : s.returns)
            b.u64(r);
        add(t, b);
        ++samples;
    }
    // PERF_RECORD_AUX: the kernel's word that [offset, offset + size) of the
    // CPU's AUX area holds new trace (an AUX transaction ended: the traced task
    // left the CPU, or a wakeup watermark was passed).
    void auxWritten(uint64_t t, int cpu, int32_t tid, uint64_t offset, uint64_t size) {
        RecordBuilder b(PERF_RECORD_AUX);
        b.u64(offset).u64(size).u64(0);
        b.sampleId({kSampleType, ptId(cpu), uint32_t(cpu)}, tid > 0 ? kPid : -1, tid > 0 ? tid : -1, t);
        add(t, b);
        ++auxTransactions;
    }
    void aux(uint64_t t, int cpu, std::span<const uint8_t> chunk) {
        Pending p;
        p.time = t, p.seq = seq++, p.aux = true;
        p.bytes.assign(chunk.begin(), chunk.end());
        p.head.size = chunk.size();
        p.head.offset = auxOffset[cpu];
        p.head.reference = t;
        p.head.idx = uint32_t(cpu);
        p.head.tid = uint32_t(-1);
        p.head.cpu = uint32_t(cpu);
        auxOffset[cpu] += chunk.size();
        ++auxRecords;
        ptBytes += chunk.size();
        records.push_back(std::move(p));
    }
};

PtEncoderOptions encoderOptions() {
    PtEncoderOptions e;
    e.chunkBytes = kChunkBytes;
    e.startTsc = kStart;
    return e;
}

std::vector<PerfDataEventAttr> exampleAttrs(const PtEncoderOptions& e) {
    uint64_t config = kConfigPt | kConfigBranch | kConfigTsc;
    if (e.mtc) config |= kConfigMtc | (uint64_t(e.mtcFreq) << kConfigMtcPeriodShift);
    auto attrs = userAuxTraceAttrs("intel_pt//u", kPmuType, config, kSampleType, 0, 0);
    attrs.push_back(userEventAttr("cpu-clock:u", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK,
                                  kClockSampleType, kExampleSamplePeriodNs));
    attrs[1].attr.context_switch = 1;  // the tracking event: PERF_RECORD_SWITCH_CPU_WIDE
    for (auto& a : attrs)
        a.ids.clear();
    for (int cpu = 0; cpu < int(kCpus); ++cpu) {
        attrs[0].ids.push_back(ptId(cpu));
        attrs[1].ids.push_back(trackingId(cpu));
        attrs[2].ids.push_back(clockId(cpu));
    }
    return attrs;
}

// Runs the threads of one CPU on its encoder, in turns, writing their trace,
// switches, samples and exits.
Expected<void> runCpu(int cpu, std::vector<Thread*> threads, Recording& rec) {
    uint64_t announced = 0;  // AUX bytes told by PERF_RECORD_AUX so far
    int32_t runningTid = -1;
    PtFlowEncoder enc(encoderOptions(), [&](std::span<const uint8_t> chunk) -> Expected<void> {
        // The AUX data up to the chunk's end is announced before perf reads it.
        const uint64_t end = rec.auxOffset[cpu] + chunk.size();
        if (end > announced) {
            rec.auxWritten(enc.tsc(), cpu, runningTid, announced, end - announced);
            announced = end;
        }
        rec.aux(enc.tsc(), cpu, chunk);
        return {};
    });
    if (!enc.ok()) return enc.error();
    int32_t previous = 0;  // the task that ran last (0: idle)
    size_t turn = 0;
    auto readyAt = [&](uint64_t t, const Thread* except) -> Thread* {
        for (size_t i = 0; i < threads.size(); ++i) {
            Thread* th = threads[(turn + i) % threads.size()];
            if (th != except && !th->done && th->ready <= t) return th;
        }
        return nullptr;
    };
    Thread* nextPick = nullptr;  // the task the last switch-out named
    for (;;) {
        Thread* th = nextPick && !nextPick->done ? nextPick : readyAt(enc.tsc(), nullptr);
        nextPick = nullptr;
        if (!th) {
            uint64_t wake = UINT64_MAX;
            for (Thread* t : threads)
                if (!t->done) wake = std::min(wake, t->ready);
            if (wake == UINT64_MAX) break;
            enc.addTime(wake - enc.tsc());
            previous = 0;  // the CPU idled
            continue;
        }
        turn = size_t(std::find(threads.begin(), threads.end(), th) - threads.begin()) + 1;
        // Switch in: the kernel runs a little, then user space resumes.
        if (!th->started) {
            rec.itraceStart(enc.tsc(), cpu, th->tid);
            if (th->tid != kPid) rec.comm(enc.tsc(), cpu, th->tid, th->plan->comm, false);
            if (th->log.ops.empty() || th->log.ops[0].kind != FlowOp::Start)
                return makeError("thread " + std::to_string(th->tid) + ": its walk does not start");
            th->nextIp = th->log.ops[0].ip;
            th->pos = 1;
            th->started = true;
        }
        rec.contextSwitch(enc.tsc(), cpu, th->tid, false, previous, false);
        runningTid = th->tid;
        enc.addTime(kKernelTicks);
        enc.enable(th->nextIp, true);
        uint64_t sliceStart = enc.tsc();
        bool preempted = false;
        const auto& ops = th->log.ops;
        while (th->pos < ops.size() && !th->done && !preempted) {
            const FlowOp& op = ops[th->pos++];
            switch (op.kind) {
                case FlowOp::Retire:
                    enc.retire(uint64_t(op.n) * kExampleTicksPerInsn);
                    continue;
                case FlowOp::Sample:
                    rec.sample(enc.tsc(), cpu, th->tid, th->log.samples[op.n]);
                    ++th->samples;
                    continue;
                case FlowOp::Cond:
                    enc.conditional(op.taken, op.ip);
                    break;
                case FlowOp::DirectCall:
                    enc.directCall(op.ret, op.ip);
                    break;
                case FlowOp::IndirectCall:
                    enc.indirectCall(op.ret, op.ip);
                    break;
                case FlowOp::IndirectJump:
                    enc.indirectJump(op.ip);
                    break;
                case FlowOp::Ret:
                    enc.ret(op.ip);
                    break;
                case FlowOp::Exit:
                    enc.farTransferOut();
                    th->done = true;
                    continue;
                case FlowOp::Halt:
                    enc.asyncDisable(op.ip);
                    th->done = true;
                    continue;
                case FlowOp::Start:
                    return makeError("thread " + std::to_string(th->tid) + ": its walk starts twice");
            }
            th->nextIp = op.ip;
            // The quantum is over: at a branch (the next IP known), unless
            // nothing else wants the CPU and the thread does not sleep.
            if (th->plan->quantum && enc.tsc() - sliceStart >= th->plan->quantum && th->pos < ops.size() &&
                ops[th->pos].kind != FlowOp::Exit && ops[th->pos].kind != FlowOp::Halt) {
                if (th->plan->sleep || readyAt(enc.tsc(), th)) {
                    preempted = true;
                } else {
                    sliceStart = enc.tsc();
                }
            }
        }
        if (!th->done && !preempted)
            return makeError("thread " + std::to_string(th->tid) + ": its walk ends early");
        if (preempted) enc.asyncDisable(th->nextIp);  // the timer interrupt: FUP + TIP.PGD
        enc.addTime(kKernelTicks);
        // Scheduled out, the PT event ends its AUX transaction.
        if (enc.bytes() > announced) {
            rec.auxWritten(enc.tsc(), cpu, th->tid, announced, enc.bytes() - announced);
            announced = enc.bytes();
        }
        if (th->done) {
            rec.task(PERF_RECORD_EXIT, enc.tsc(), cpu, th->tid);
            th->truth.tscLast = enc.tsc();
        } else {
            th->ready = enc.tsc() + th->plan->sleep;
        }
        Thread* next = readyAt(enc.tsc(), th);
        nextPick = next;
        rec.contextSwitch(enc.tsc(), cpu, th->tid, true, next ? next->tid : 0, preempted && !th->plan->sleep);
        previous = th->tid;
        runningTid = -1;
        // The next task comes in at the same instant (the kernel writes both
        // records in one context switch); an idle CPU waits a little.
        if (!next) enc.addTime(kKernelTicks / 2);
        if (!enc.ok()) return enc.error();
    }
    enc.finish();
    if (!enc.ok()) return enc.error();
    return {};
}

}  // namespace

Expected<ExampleSummary> writeExample(const ExampleOptions& options) {
    ExampleSummary summary;
    const std::filesystem::path outPath(options.path);
    summary.elfPath = (outPath.parent_path() / (outPath.stem().string() + "-code.elf")).string();
    summary.truthPath = options.path + ".truth";
    summary.threads = kThreads;
    summary.cpus = kCpus;
    // The program (absolute path: the MMAP2 names it for any reader).
    std::error_code ec;
    const auto absoluteElf = std::filesystem::absolute(summary.elfPath, ec);
    if (!ec) summary.elfPath = absoluteElf.string();
    if (std::filesystem::is_directory(outPath, ec) || outPath.filename().empty())
        return makeError(options.path + ": is a folder: give the perf.data's file name");
    const auto dir = std::filesystem::path(summary.elfPath).parent_path();
    if (!std::filesystem::is_directory(dir, ec))
        return makeError(options.path + ": cannot create: the folder " + dir.string() + " does not exist");

    GeneratorOptions go;
    go.seed = options.seed;
    go.functions = 40;
    go.threads = kThreads;
    go.friendlyNames = true;
    go.elfPath = summary.elfPath;
    for (const auto& p : kPlan)
        go.threadInsns.push_back(p.insns);
    auto generated = PtGenerator::create(go);
    if (!generated) return generated.error();
    PtGenerator& gen = **generated;

    // Each thread's walk, with its samples every period of its time on CPU.
    const uint64_t period = kExampleSamplePeriodNs / kExampleTicksPerInsn;
    std::vector<Thread> threads(kThreads);
    for (unsigned k = 0; k < kThreads; ++k) {
        Thread& th = threads[k];
        th.plan = &kPlan[k];
        th.tid = kPid + int32_t(k);
        th.ready = kPlan[k].firstRun;
        // Phases apart, so the threads' samples do not fall at the same instants.
        if (auto r = gen.walkThread(k, period, period / 2 + k * (period / 7), th.log, th.truth); !r)
            return r.error();
    }

    Recording rec;
    const PtSynthMapping& map = gen.mapping();
    rec.comm(kStart, 0, kPid, kPlan[0].comm, true);
    rec.mmap2(kStart, map);
    for (unsigned k = 1; k < kThreads; ++k)
        rec.task(PERF_RECORD_FORK, kStart + 200 * k, 0, threads[k].tid);
    for (int cpu = 0; cpu < int(kCpus); ++cpu) {
        std::vector<Thread*> mine;
        for (auto& th : threads)
            if (th.plan->cpu == cpu) mine.push_back(&th);
        if (auto r = runCpu(cpu, mine, rec); !r) return r.error();
    }
    std::stable_sort(rec.records.begin(), rec.records.end(), [](const Pending& a, const Pending& b) {
        return a.time != b.time ? a.time < b.time : a.seq < b.seq;
    });

    // The perf.data.
    PtEncoderOptions enc = encoderOptions();
    auto attrs = exampleAttrs(enc);
    auto created = PerfDataWriter::create(options.path, attrs);
    if (!created) return created.error();
    PerfDataWriter& w = **created;
    std::vector<perfdata::IdIndexEntry> index;
    for (const auto& a : attrs)
        for (size_t cpu = 0; cpu < a.ids.size(); ++cpu)
            index.push_back({a.ids[cpu], cpu, cpu, uint64_t(kPid)});
    if (auto r = w.writeIdIndex(index); !r) return r.error();
    if (auto r = w.writeTimeConv(synthTimeConv()); !r) return r.error();
    // Context-switch records, CPU-wide: have_sched_switch 3.
    if (auto r = w.writeAuxtraceInfo(auxtrace::kTypeIntelPt, encodeIntelPtInfo(synthIntelPtInfo(enc, 3))); !r)
        return r.error();
    for (const Pending& p : rec.records) {
        auto r = p.aux ? w.writeAuxtrace(p.head, p.bytes) : w.writeRecord(p.bytes);
        if (!r) return r.error();
    }

    auto host = FeatureWriter::hostFeatures(options.cmdline, "auxscope-ptsynth");
    host.erase(perfdata::kFeatCpuTopology);  // this host's CPUs, not the example's
    for (auto& [bit, body] : host)
        w.setFeature(bit, std::move(body));
    // The machine the example claims: three CPUs of a Skylake-SP (libipt and
    // perf choose their errata workarounds from the CPUID).
    w.setFeature(perfdata::kFeatNrCpus, FeatureBlob().u32(kCpus).u32(kCpus).take());
    w.setFeature(perfdata::kFeatCpuId, FeatureBlob().str(kCpuId).take());
    w.setFeature(perfdata::kFeatCpuDesc,
                 FeatureBlob().str("Intel(R) Xeon(R) (Skylake-SP, example by auxscope-ptsynth)").take());
    w.setFeature(perfdata::kFeatPmuMappings, FeatureWriter::auxPmuMappings(kPmuType, "intel_pt"));
    w.setFeature(perfdata::kFeatEventDesc, FeatureWriter::eventDesc(attrs));
    summary.firstTime = rec.records.empty() ? kStart : rec.records.front().time;
    summary.lastTime = rec.records.empty() ? kStart : rec.records.back().time;
    w.setFeature(perfdata::kFeatSampleTime, FeatureWriter::sampleTime(summary.firstTime, summary.lastTime));
    if (auto id = FeatureWriter::elfBuildId(map.path))
        w.setFeature(perfdata::kFeatBuildId, FeatureWriter::buildIds({{map.path, *id, false}}));
    if (auto r = w.finish(); !r) return r.error();

    // The truth: totals, and per thread.
    Truth truth;
    truth.mode = "example";
    truth.command = "--example --seed " + std::to_string(options.seed);
    truth.pid = truth.tid = kPid;
    truth.keepLists = false;
    truth.maps.push_back({map.start, map.end, map.pgoff, map.path});
    truth.functions = gen.functions();
    truth.tscFirst = UINT64_MAX;
    for (const auto& th : threads) {
        const Truth& t = th.truth;
        TruthThread tt;
        tt.tid = th.tid;
        tt.cpu = th.plan->cpu;
        tt.instructions = t.instructions;
        tt.hash = t.hash;
        tt.calls = t.calls;
        tt.returns = t.returns;
        tt.syscalls = t.syscalls;
        tt.samples = th.samples;
        tt.name = th.plan->comm;
        for (size_t i = 0; i < t.functions.size() && i < truth.functions.size(); ++i) {
            truth.functions[i].calls += t.functions[i].calls;
            if (t.functions[i].calls) tt.functionCalls[t.functions[i].entry] = t.functions[i].calls;
        }
        truth.instructions += t.instructions;
        truth.calls += t.calls;
        truth.returns += t.returns;
        truth.syscalls += t.syscalls;
        truth.tscFirst = std::min(truth.tscFirst, th.plan->firstRun);
        truth.tscLast = std::max(truth.tscLast, t.tscLast);
        truth.threads.push_back(std::move(tt));
    }
    // The hash of one sequence: the threads' hashes are per thread (thread lines).
    truth.hash = truth.threads.front().hash;
    if (auto r = truth.write(summary.truthPath); !r) return r.error();

    summary.instructions = truth.instructions;
    summary.calls = truth.calls;
    summary.ptBytes = rec.ptBytes;
    summary.auxRecords = rec.auxRecords;
    summary.samples = rec.samples;
    summary.switches = rec.switches;
    return summary;
}

}  // namespace auxscope::ptsynth
