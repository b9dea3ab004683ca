// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeSynthPerfData.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "PtSynthPerfData.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataFormat.h"

namespace auxscope::spesynth {
namespace {

constexpr uint64_t kTrackSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
// perf record sets DATA_SRC and PHYS_ADDR on the SPE event (only to say what
// its synthesized samples carry); the sample_id trailer is the same.
constexpr uint64_t kSpeSampleType = kTrackSampleType | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR;
constexpr uint64_t kSpeIdBase = 100, kTrackIdBase = 200;
constexpr int32_t kParentPid = 1000;  // the shell the processes were started from

#define AUXSCOPE_TRY(expr)       \
    if (auto r_ = (expr); !r_) { \
        return r_.error();       \
    }

}  // namespace

SampleIdSpec SpePerfDataWriter::speId(int cpu) const {
    return {kSpeSampleType, kSpeIdBase + uint64_t(cpu), uint32_t(cpu)};
}
SampleIdSpec SpePerfDataWriter::trackId(int cpu) const {
    return {kTrackSampleType, kTrackIdBase + uint64_t(cpu), uint32_t(cpu)};
}

SpePerfDataWriter::~SpePerfDataWriter() = default;

Expected<std::unique_ptr<SpePerfDataWriter>> SpePerfDataWriter::create(
    const SpeFileOptions& options, const WrittenElf& elf, const std::vector<SpeProcess>& processes,
    uint64_t startTick) {
    std::unique_ptr<SpePerfDataWriter> p(new SpePerfDataWriter);
    p->options_ = options;
    p->elf_ = elf;
    p->processes_ = processes;
    const int cpus = options.cpus;
    p->pending_.resize(size_t(cpus));
    p->auxOffset_.assign(size_t(cpus), 0);
    p->current_.assign(size_t(cpus), Task{});

    std::vector<uint64_t> speIds, trackIds;
    for (int c = 0; c < cpus; ++c) {
        speIds.push_back(kSpeIdBase + uint64_t(c));
        trackIds.push_back(kTrackIdBase + uint64_t(c));
    }
    p->attrs_ = ptsynth::userAuxTraceAttrs("arm_spe_0//u", kSpePmuType, kSpeTsEnable | kSpePaEnable,
                                           kSpeSampleType, 0, 0);
    p->attrs_[0].attr.sample_period = kSpeMinInterval;
    p->attrs_[0].attr.enable_on_exec = 0;  // a system-wide recording
    p->attrs_[0].ids = speIds;
    p->attrs_[1].attr.sample_type = kTrackSampleType;
    p->attrs_[1].attr.context_switch = 1;
    p->attrs_[1].attr.enable_on_exec = 0;
    p->attrs_[1].ids = trackIds;

    auto w = PerfDataWriter::create(options.path, p->attrs_);
    if (!w) return w.error();
    p->writer_ = std::move(w.value());
    PerfDataWriter& writer = *p->writer_;

    std::vector<perfdata::IdIndexEntry> index;
    for (int c = 0; c < cpus; ++c)
        index.push_back({speIds[size_t(c)], uint64_t(c), uint64_t(c), uint64_t(-1)});
    for (int c = 0; c < cpus; ++c)
        index.push_back({trackIds[size_t(c)], uint64_t(c), uint64_t(c), uint64_t(-1)});
    AUXSCOPE_TRY(writer.writeIdIndex(index));

    // TIME_CONV before AUXTRACE_INFO: perf's arm_spe reads the conversion when
    // it meets the info record.
    perf_event_mmap_page page{};
    page.time_shift = options.timeConv.shift;
    page.time_mult = options.timeConv.mult;
    page.time_zero = options.timeConv.zero;
    page.cap_user_time_zero = 1;
    page.cap_user_time = 1;
    auto tc = writer.writeTimeConv(page);
    if (!tc) return tc.error();

    std::vector<uint64_t> priv;
    if (options.infoVersion == 2) {
        priv = {2, 4, kSpePmuType, uint64_t(cpus)};
        for (int c = 0; c < cpus; ++c)
            priv.insert(priv.end(), {0x1010101010101010ull, uint64_t(c), 4, options.midr, kSpePmuType,
                                     kSpeMinInterval, kSpeEventFilter});
    } else {
        priv = {kSpePmuType, 1};
    }
    AUXSCOPE_TRY(writer.writeAuxtraceInfo(auxtrace::kTypeArmSpe, priv));

    const uint64_t t = p->perfTime(startTick);
    const SampleIdSpec track = p->trackId(0);
    for (const SpeProcess& proc : processes) {
        for (size_t i = 0; i < proc.threads.size(); ++i) {
            const SpeThread& th = proc.threads[i];
            const int32_t parent = i == 0 ? kParentPid : proc.pid;
            RecordBuilder fork(PERF_RECORD_FORK);
            fork.u32(uint32_t(proc.pid))
                .u32(uint32_t(parent))
                .u32(uint32_t(th.tid))
                .u32(uint32_t(parent))
                .u64(t);
            fork.sampleId(track, proc.pid, th.tid, t);
            AUXSCOPE_TRY(writer.writeRecord(fork.finish()));
            RecordBuilder comm(PERF_RECORD_COMM, i == 0 ? PERF_RECORD_MISC_COMM_EXEC : 0);
            comm.u32(uint32_t(proc.pid)).u32(uint32_t(th.tid)).str(th.comm.substr(0, 15));
            comm.sampleId(track, proc.pid, th.tid, t);
            AUXSCOPE_TRY(writer.writeRecord(comm.finish()));
        }
        auto mmap2 = [&](uint64_t start, uint64_t end, uint64_t pgoff, bool file, uint32_t prot,
                         const std::string& name) -> Expected<void> {
            RecordBuilder b(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
            b.u32(uint32_t(proc.pid)).u32(uint32_t(proc.pid)).u64(start).u64(end - start).u64(pgoff);
            b.u32(file ? elf.major : 0).u32(file ? elf.minor : 0).u64(file ? elf.inode : 0).u64(0);
            b.u32(prot).u32(file ? MAP_PRIVATE : MAP_PRIVATE | MAP_ANONYMOUS);
            b.str(name).sampleId(track, proc.pid, proc.pid, t);
            return writer.writeRecord(b.finish());
        };
        AUXSCOPE_TRY(mmap2(elf.text.start, elf.text.end, elf.text.pgoff, true, elf.text.prot, elf.path));
        AUXSCOPE_TRY(mmap2(elf.data.start, elf.data.end, elf.data.pgoff, true, elf.data.prot, elf.path));
        AUXSCOPE_TRY(mmap2(proc.heapStart, proc.heapEnd, 0, false, PROT_READ | PROT_WRITE, "[heap]"));
        for (size_t i = 0; i < proc.threads.size(); ++i)
            AUXSCOPE_TRY(mmap2(proc.threads[i].stackStart, proc.threads[i].stackEnd, 0, false,
                               PROT_READ | PROT_WRITE, i == 0 ? "[stack]" : "//anon"));
    }
    AUXSCOPE_TRY(writer.writeFinishedRound());
    return p;
}

Expected<void> SpePerfDataWriter::contextSwitch(uint64_t tick, int cpu, Task prev, Task next) {
    PerfDataWriter& w = *writer_;
    const SampleIdSpec id = trackId(cpu);
    uint16_t misc = PERF_RECORD_MISC_SWITCH_OUT;
    if (prev.tid != 0) misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
    RecordBuilder out(PERF_RECORD_SWITCH_CPU_WIDE, misc);
    out.u32(uint32_t(next.pid)).u32(uint32_t(next.tid)).sampleId(id, prev.pid, prev.tid, perfTime(tick));
    AUXSCOPE_TRY(w.writeRecord(out.finish()));
    RecordBuilder in(PERF_RECORD_SWITCH_CPU_WIDE, 0);
    in.u32(uint32_t(prev.pid)).u32(uint32_t(prev.tid)).sampleId(id, next.pid, next.tid, perfTime(tick + 1));
    AUXSCOPE_TRY(w.writeRecord(in.finish()));
    current_[size_t(cpu)] = next;
    return {};
}

void SpePerfDataWriter::record(const spe::SpeRecord& r, const SpeEncodeStyle& style) {
    encodeRecord(r, style, pending_[size_t(r.cpu)]);
    if (r.timestamp) {
        const uint64_t t = perfTime(r.timestamp);
        firstTime_ = std::min(firstTime_, t);
        lastTime_ = std::max(lastTime_, t);
    }
}

Expected<void> SpePerfDataWriter::flushAux(uint64_t tick, bool all) {
    PerfDataWriter& w = *writer_;
    bool wrote = false;
    for (size_t c = 0; c < pending_.size(); ++c) {
        std::vector<uint8_t>& buf = pending_[c];
        if (buf.empty() || (!all && buf.size() < options_.auxChunkBytes)) continue;
        const size_t padded = (buf.size() + 63) / 64 * 64;
        padBytes_ += padded - buf.size();
        buf.resize(padded, packet::kPad);
        const Task cur = current_[c];
        RecordBuilder aux(PERF_RECORD_AUX);
        aux.u64(auxOffset_[c])
            .u64(buf.size())
            .u64(0)
            .sampleId(speId(int(c)), cur.pid, cur.tid, perfTime(tick));
        AUXSCOPE_TRY(w.writeRecord(aux.finish()));
        perfdata::AuxtraceRecord head{};
        head.offset = auxOffset_[c];
        head.reference = perfTime(tick);
        head.idx = uint32_t(c);
        head.tid = uint32_t(-1);
        head.cpu = uint32_t(c);
        AUXSCOPE_TRY(w.writeAuxtrace(head, buf));
        auxOffset_[c] += buf.size();
        auxBytes_ += buf.size();
        buf.clear();
        wrote = true;
    }
    if (wrote) AUXSCOPE_TRY(w.writeFinishedRound());
    return {};
}

Expected<void> SpePerfDataWriter::finish(uint64_t endTick) {
    AUXSCOPE_TRY(flushAux(endTick, true));
    PerfDataWriter& w = *writer_;
    const uint64_t t = perfTime(endTick + 1);
    for (const SpeProcess& proc : processes_)
        for (auto it = proc.threads.rbegin(); it != proc.threads.rend(); ++it) {
            RecordBuilder b(PERF_RECORD_EXIT);
            b.u32(uint32_t(proc.pid))
                .u32(uint32_t(proc.pid))
                .u32(uint32_t(it->tid))
                .u32(uint32_t(proc.pid))
                .u64(t);
            b.sampleId(trackId(0), proc.pid, it->tid, t);
            AUXSCOPE_TRY(w.writeRecord(b.finish()));
        }
    AUXSCOPE_TRY(w.writeFinishedRound());

    auto features = FeatureWriter::hostFeatures(options_.cmdline, "auxscope-spesynth");
    features.erase(perfdata::kFeatCpuTopology);
    for (auto& [bit, body] : features)
        w.setFeature(bit, std::move(body));
    const uint32_t cpus = uint32_t(options_.cpus);
    w.setFeature(perfdata::kFeatArch, FeatureBlob().str("aarch64").take());
    w.setFeature(perfdata::kFeatNrCpus, FeatureBlob().u32(cpus).u32(cpus).take());
    char midr[32];
    std::snprintf(midr, sizeof midr, "0x%016" PRIx64, options_.midr);
    w.setFeature(perfdata::kFeatCpuId, FeatureBlob().str(midr).take());
    w.setFeature(perfdata::kFeatCpuDesc,
                 FeatureBlob().str("Neoverse-N1 (synthesized by auxscope-spesynth)").take());
    w.setFeature(perfdata::kFeatPmuMappings, FeatureWriter::pmuMappings({{PERF_TYPE_SOFTWARE, "software"},
                                                                         {PERF_TYPE_TRACEPOINT, "tracepoint"},
                                                                         {PERF_TYPE_BREAKPOINT, "breakpoint"},
                                                                         {kSpePmuType, "arm_spe_0"}}));
    w.setFeature(perfdata::kFeatEventDesc, FeatureWriter::eventDesc(attrs_));
    if (firstTime_ <= lastTime_)
        w.setFeature(perfdata::kFeatSampleTime, FeatureWriter::sampleTime(firstTime_, lastTime_));
    if (auto id = FeatureWriter::elfBuildId(elf_.path))
        w.setFeature(perfdata::kFeatBuildId, FeatureWriter::buildIds({{elf_.path, *id, false}}));
    return w.finish();
}

#undef AUXSCOPE_TRY

}  // namespace auxscope::spesynth
