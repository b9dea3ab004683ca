// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthPerfData.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "perfdata/AuxtraceInfo.h"
#include "perfdata/FeatureWriter.h"

namespace auxscope::ptsynth {
namespace {

constexpr uint64_t kSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
constexpr uint64_t kPtId = 1, kTrackingId = 2;
// time_shift / time_mult: one TSC tick is one nanosecond.
constexpr uint16_t kTimeShift = 31;
constexpr uint32_t kTimeMult = 1u << 31;

uint64_t ptConfig(const PtEncoderOptions& e) {
    uint64_t c = kConfigPt | kConfigBranch | kConfigTsc;
    if (e.mtc) c |= kConfigMtc | (uint64_t(e.mtcFreq) << kConfigMtcPeriodShift);
    if (!e.retCompression) c |= kConfigNoRetComp;
    return c;
}

}  // namespace

SampleIdSpec PtSynthPerfData::trackingId() const {
    return {kSampleType, kTrackingId, 0};
}
SampleIdSpec PtSynthPerfData::ptId() const {
    return {kSampleType, kPtId, 0};
}

PerfDataEventAttr userEventAttr(const std::string& name, uint32_t type, uint64_t config, uint64_t sampleType,
                                uint64_t period) {
    PerfDataEventAttr e;
    e.name = name;
    e.attr.size = sizeof(perf_event_attr);
    e.attr.type = type;
    e.attr.config = config;
    e.attr.sample_period = period;
    e.attr.sample_type = sampleType;
    e.attr.disabled = 1;
    e.attr.exclude_kernel = 1;
    e.attr.exclude_hv = 1;
    e.attr.enable_on_exec = 1;
    e.attr.sample_id_all = 1;
    return e;
}

std::vector<PerfDataEventAttr> userAuxTraceAttrs(const std::string& name, uint32_t type, uint64_t config,
                                                 uint64_t sampleType, uint64_t traceId, uint64_t trackingId) {
    PerfDataEventAttr trace = userEventAttr(name, type, config, sampleType);
    trace.ids = {traceId};
    PerfDataEventAttr tracking =
        userEventAttr("dummy:u", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, sampleType);
    tracking.attr.mmap = 1;
    tracking.attr.mmap2 = 1;
    tracking.attr.comm = 1;
    tracking.attr.comm_exec = 1;
    tracking.attr.task = 1;
    tracking.ids = {trackingId};
    return {trace, tracking};
}

Expected<std::unique_ptr<PtSynthPerfData>> PtSynthPerfData::create(const PtSynthFileOptions& options) {
    std::unique_ptr<PtSynthPerfData> p(new PtSynthPerfData(options));
    p->attrs_ = userAuxTraceAttrs("intel_pt//u", kPmuType, ptConfig(options.encoder), kSampleType, kPtId,
                                  kTrackingId);

    auto w = PerfDataWriter::create(options.path, p->attrs_);
    if (!w) return w.error();
    p->writer_ = std::move(w.value());
    PerfDataWriter& writer = *p->writer_;

    const uint32_t tid = uint32_t(options.tid);
    const perfdata::IdIndexEntry index[] = {{kPtId, 0, 0, tid}, {kTrackingId, 0, 0, tid}};
    if (auto r = writer.writeIdIndex(index); !r) return r.error();

    if (auto r = writer.writeTimeConv(synthTimeConv()); !r) return r.error();
    const auto priv = encodeIntelPtInfo(synthIntelPtInfo(options.encoder, 0));
    if (auto r = writer.writeAuxtraceInfo(auxtrace::kTypeIntelPt, priv); !r) return r.error();
    return p;
}

perf_event_mmap_page synthTimeConv() {
    perf_event_mmap_page page;
    std::memset(&page, 0, sizeof page);
    page.time_shift = kTimeShift;
    page.time_mult = kTimeMult;
    page.time_zero = 0;
    page.cap_user_time_zero = 1;
    return page;
}

IntelPtInfo synthIntelPtInfo(const PtEncoderOptions& encoder, uint32_t haveSchedSwitch) {
    IntelPtInfo info;
    info.pmuType = kPmuType;
    info.timeShift = kTimeShift;
    info.timeMult = kTimeMult;
    info.timeZero = 0;
    info.capUserTimeZero = 1;
    info.tscBit = kConfigTsc;
    info.noretcompBit = kConfigNoRetComp;
    info.haveSchedSwitch = haveSchedSwitch;
    info.snapshotMode = 0;
    info.perCpuMmaps = 1;
    info.mtcBit = kConfigMtc;
    info.mtcFreqBits = uint64_t(0xf) << kConfigMtcPeriodShift;
    info.tscCtcRatioN = encoder.ctcEbx;
    info.tscCtcRatioD = encoder.ctcEax;
    info.cycBit = kConfigCyc;
    info.maxNonTurboRatio = encoder.cbr;
    return info;
}

Expected<void> PtSynthPerfData::comm(uint64_t tsc) {
    RecordBuilder b(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
    b.u32(uint32_t(options_.pid)).u32(uint32_t(options_.tid)).str(options_.comm.substr(0, 15));
    b.sampleId(trackingId(), options_.pid, options_.tid, perfTime(tsc));
    if (auto r = writer_->writeRecord(b.finish()); !r) return r;
    // perf attributes AUX data to a thread from ITRACE_START on a per-CPU trace.
    RecordBuilder it(PERF_RECORD_ITRACE_START);
    it.u32(uint32_t(options_.pid)).u32(uint32_t(options_.tid));
    it.sampleId(ptId(), options_.pid, options_.tid, perfTime(tsc));
    return writer_->writeRecord(it.finish());
}

Expected<void> PtSynthPerfData::mmap2(const PtSynthMapping& m, uint64_t tsc) {
    RecordBuilder b(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
    b.u32(uint32_t(options_.pid)).u32(uint32_t(options_.tid)).u64(m.start).u64(m.end - m.start).u64(m.pgoff);
    b.u32(m.major).u32(m.minor).u64(m.inode).u64(0).u32(m.prot).u32(m.flags);
    b.str(m.path).sampleId(trackingId(), options_.pid, options_.tid, perfTime(tsc));
    if (!m.path.empty() && m.path[0] == '/' &&
        std::find(mappedFiles_.begin(), mappedFiles_.end(), m.path) == mappedFiles_.end())
        mappedFiles_.push_back(m.path);
    return writer_->writeRecord(b.finish());
}

Expected<void> PtSynthPerfData::kernelMmap(uint64_t start, uint64_t length, uint64_t refAddress, uint64_t tsc,
                                           const std::string& refSymbol, std::vector<uint8_t> buildId) {
    RecordBuilder b(PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
    b.u32(uint32_t(-1)).u32(0).u64(start).u64(length).u64(refAddress);
    b.str("[kernel.kallsyms]" + refSymbol).sampleId(trackingId(), -1, 0, perfTime(tsc));
    if (!buildId.empty()) kernelBuildId_ = std::move(buildId);
    return writer_->writeRecord(b.finish());
}

Expected<void> PtSynthPerfData::auxtrace(std::span<const uint8_t> chunk, uint64_t referenceTsc) {
    perfdata::AuxtraceRecord head{};
    head.size = chunk.size();
    head.offset = auxOffset_;
    head.reference = referenceTsc;
    head.idx = 0;
    head.tid = uint32_t(options_.tid);
    head.cpu = 0;
    auxOffset_ += chunk.size();
    ++chunks_;
    return writer_->writeAuxtrace(head, chunk);
}

Expected<void> PtSynthPerfData::exit(uint64_t tsc) {
    RecordBuilder b(PERF_RECORD_EXIT);
    b.u32(uint32_t(options_.pid))
        .u32(uint32_t(options_.pid))
        .u32(uint32_t(options_.tid))
        .u32(uint32_t(options_.tid))
        .u64(perfTime(tsc));
    b.sampleId(trackingId(), options_.pid, options_.tid, perfTime(tsc));
    return writer_->writeRecord(b.finish());
}

Expected<void> PtSynthPerfData::finish() {
    PerfDataWriter& w = *writer_;
    for (auto& [bit, body] : FeatureWriter::hostFeatures(options_.cmdline, "auxscope-ptsynth"))
        w.setFeature(bit, std::move(body));
    // The machine the trace claims to come from, not this host.
    w.setFeature(perfdata::kFeatCpuId, FeatureBlob().str(kCpuId).take());
    w.setFeature(perfdata::kFeatCpuDesc,
                 FeatureBlob().str("Intel(R) Xeon(R) (Skylake-SP, synthesized by auxscope-ptsynth)").take());
    w.setFeature(perfdata::kFeatPmuMappings, FeatureWriter::auxPmuMappings(kPmuType, "intel_pt"));
    w.setFeature(perfdata::kFeatEventDesc, FeatureWriter::eventDesc(attrs_));
    std::vector<BuildIdEntry> ids;
    for (const auto& path : mappedFiles_)
        if (auto id = FeatureWriter::elfBuildId(path)) ids.push_back({path, *id, false});
    if (!kernelBuildId_.empty()) ids.push_back({"[kernel.kallsyms]", kernelBuildId_, true});
    if (!ids.empty()) w.setFeature(perfdata::kFeatBuildId, FeatureWriter::buildIds(ids));
    return w.finish();
}

}  // namespace auxscope::ptsynth
