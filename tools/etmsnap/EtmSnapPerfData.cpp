// SPDX-License-Identifier: GPL-3.0-or-later
#include "EtmSnapPerfData.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "PtSynthElf.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::etmsnap {

using namespace auxscope::etm;

namespace {

constexpr uint32_t kCsEtmPmuType = 11;  // a PMU type number, as sysfs would give it
constexpr uint64_t kEtmId = 1, kTrackingId = 2;
constexpr uint64_t kSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
constexpr uint64_t kClusterGap = 1 << 20;  // dumps farther apart than this get ELF files of their own

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

CsEtmCpuInfo csEtmCpu(const EtmSourceConfig& c, int cpu, uint32_t authStatus) {
    CsEtmCpuInfo i;
    i.cpu = uint64_t(cpu);
    switch (c.protocol) {
        case EtmProtocol::EtmV3:
        case EtmProtocol::Ptm:
            i.tracer = CsEtmTracer::EtmV3;
            i.etmcr = c.etmcr;
            i.etmtraceidr = c.etmtraceidr;
            i.etmccer = c.etmccer;
            i.etmidr = c.etmidr;
            return i;
        case EtmProtocol::Ete:
            i.tracer = CsEtmTracer::Ete;
            i.trcdevarch = c.trcdevarch;
            break;
        default:
            i.tracer = CsEtmTracer::EtmV4;
            break;
    }
    i.trcconfigr = c.trcconfigr;
    i.trctraceidr = c.trctraceidr;
    i.trcidr0 = c.trcidr0;
    i.trcidr1 = c.trcidr1;
    i.trcidr2 = c.trcidr2;
    i.trcidr8 = c.trcidr8;
    i.trcauthstatus = authStatus;
    return i;
}

}  // namespace

Expected<SnapshotTrace> readSnapshotTrace(const std::string& dir, const std::string& bufferName) {
    auto snap = EtmSnapshot::read(dir);
    if (!snap) return snap.error();
    const SnapshotBuffer* buffer = nullptr;
    std::vector<SnapshotSource> sources;
    for (const SnapshotBuffer& b : snap->buffers()) {
        if (!bufferName.empty() && b.name != bufferName) continue;
        auto srcs = snap->sources(b.name);
        if (!srcs) return srcs.error();
        std::vector<SnapshotSource> usable;
        for (SnapshotSource& src : *srcs)
            if (src.config && !src.core.empty()) usable.push_back(std::move(src));
        if (usable.empty()) {
            if (!bufferName.empty())
                return makeError(dir + ": buffer " + b.name + " has no decodable ETM source");
            continue;
        }
        if (buffer) return makeError(dir + ": several buffers with ETM sources; name one");
        buffer = &b;
        sources = std::move(usable);
    }
    if (!buffer)
        return makeError(dir + ": " +
                         (bufferName.empty() ? std::string("no buffer with a decodable ETM source")
                                             : "no buffer named " + bufferName));
    SnapshotTrace s;
    s.dir = dir;
    s.bufferName = buffer->name;
    s.input = buffer->input;
    {
        std::ifstream in(buffer->path, std::ios::binary);
        s.buffer.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (s.buffer.empty())
            return makeError(buffer->path + ": cannot read the trace buffer (or it is empty)");
    }
    for (SnapshotSource& src : sources) {
        const size_t digits = src.core.find_last_not_of("0123456789");
        if (digits == std::string::npos || digits + 1 == src.core.size())
            return makeError(dir + ": source " + src.name + ": core \"" + src.core +
                             "\" does not end in a CPU number");
        s.cpus.push_back(std::atoi(src.core.c_str() + digits + 1));
        const SnapshotDevice* dev = snap->device(src.name);
        const SnapshotRegister* auth = dev ? dev->reg("TRCAUTHSTATUS") : nullptr;
        s.authStatus.push_back(auth ? uint32_t(auth->value) : 0);
        s.sources.push_back(std::move(src));
    }
    std::map<std::pair<uint64_t, std::string>, bool> seen;
    for (const SnapshotDump& d : snap->dumps(buffer->name)) {
        if (!seen.emplace(std::make_pair(d.address, d.path), true).second) continue;
        std::ifstream in(d.path, std::ios::binary);
        if (!in) return makeError(d.where + ": cannot open " + d.path);
        std::vector<uint8_t> all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (d.offset > all.size()) return makeError(d.where + ": offset past the end of " + d.path);
        const uint64_t n =
            d.length ? std::min<uint64_t>(d.length, all.size() - d.offset) : all.size() - d.offset;
        s.dumps.push_back({d.address, std::vector<uint8_t>(all.begin() + long(d.offset),
                                                           all.begin() + long(d.offset + n))});
    }
    std::sort(s.dumps.begin(), s.dumps.end(),
              [](const Dump& a, const Dump& b) { return a.address < b.address; });
    for (size_t i = 1; i < s.dumps.size(); ++i)
        if (s.dumps[i - 1].address + s.dumps[i - 1].bytes.size() > s.dumps[i].address)
            return makeError(dir + ": memory dumps overlap at " + hex(s.dumps[i].address));
    if (s.dumps.empty()) return makeError(dir + ": no memory dump");
    return s;
}

Expected<std::vector<ptsynth::PtSynthMapping>> writeDumpElfs(const SnapshotTrace& s,
                                                             const std::string& pathPrefix,
                                                             const std::vector<ptsynth::ElfSymbol>& symbols) {
    std::vector<ptsynth::PtSynthMapping> maps;
    for (size_t i = 0; i < s.dumps.size();) {
        size_t j = i + 1;
        while (j < s.dumps.size() &&
               s.dumps[j].address - (s.dumps[j - 1].address + s.dumps[j - 1].bytes.size()) < kClusterGap)
            ++j;
        // Dumps [i, j) as one executable: one PT_LOAD from the page below the
        // first, the dumps at their addresses, zeros between them.
        const uint64_t first = s.dumps[i].address;
        const uint64_t last = s.dumps[j - 1].address + s.dumps[j - 1].bytes.size();
        uint64_t base = first & ~uint64_t(0xfff);
        if (first - base < 0x100) base -= 0x1000;  // room for the ELF headers and the build-id note
        std::vector<uint8_t> code(last - first, 0);
        for (size_t k = i; k < j; ++k)
            std::copy(s.dumps[k].bytes.begin(), s.dumps[k].bytes.end(),
                      code.begin() + long(s.dumps[k].address - first));
        ptsynth::ElfImage image;
        image.path = pathPrefix + "-" + std::to_string(maps.size()) + ".elf";
        image.machine = 183;  // EM_AARCH64
        image.base = base;
        image.codeOffset = first - base;
        image.code = code;
        image.textSize = code.size();
        image.entry = first;
        for (const ptsynth::ElfSymbol& sym : symbols)
            if (sym.value >= first && sym.value + sym.size <= last) image.symbols.push_back(sym);
        for (int b = 0; b < 5; ++b) {  // a build-id: FNV-1a of the code, 4 bytes at a time
            uint64_t h = 0xcbf29ce484222325ULL + uint64_t(b) * 0x9e3779b97f4a7c15ULL + first;
            for (uint8_t c : code)
                h = (h ^ c) * 0x100000001b3ULL;
            std::memcpy(image.buildId + 4 * b, &h, 4);
        }
        auto map = ptsynth::writeElfImage(image);
        if (!map) return map.error();
        maps.push_back(*map);
        i = j;
    }
    return maps;
}

Expected<void> writeSnapshotPerfData(const SnapshotTrace& s, const std::vector<ptsynth::PtSynthMapping>& elfs,
                                     const SnapPerfDataOptions& o, const std::string& path) {
    const std::vector<PerfDataEventAttr> attrs =
        ptsynth::userAuxTraceAttrs("cs_etm//u", kCsEtmPmuType, 0, kSampleType, kEtmId, kTrackingId);
    auto created = PerfDataWriter::create(path, attrs);
    if (!created) return created.error();
    PerfDataWriter& w = **created;
    const int32_t pid = o.pid;
    const SampleIdSpec etmId{kSampleType, kEtmId, uint32_t(o.cpu)};
    const SampleIdSpec trackId{kSampleType, kTrackingId, uint32_t(o.cpu)};
#define AUXSCOPE_TRY(expr)       \
    if (auto r_ = (expr); !r_) { \
        return r_.error();       \
    }
    const perfdata::IdIndexEntry index[] = {{kEtmId, 0, uint64_t(o.cpu), uint64_t(pid)},
                                            {kTrackingId, 0, uint64_t(o.cpu), uint64_t(pid)}};
    AUXSCOPE_TRY(w.writeIdIndex(index));
    CsEtmInfo info;
    info.pmuType = kCsEtmPmuType;
    std::vector<std::pair<int, CsEtmCpuInfo>> byCpu;
    for (size_t i = 0; i < s.sources.size(); ++i)
        byCpu.push_back({s.cpus[i], csEtmCpu(*s.sources[i].config, s.cpus[i], s.authStatus[i])});
    std::sort(byCpu.begin(), byCpu.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [c, i] : byCpu)
        info.cpus.push_back(i);
    auto priv = encodeCsEtmInfo(info);
    if (!priv) return makeError("AUXTRACE_INFO: " + priv.error().message);
    AUXSCOPE_TRY(w.writeAuxtraceInfo(auxtrace::kTypeCsEtm, *priv));
    if (o.timestampsArePerfTime) {
        perf_event_mmap_page page{};
        page.cap_user_time_zero = 1;
        page.cap_user_time = 1;
        page.time_mult = 1;
        page.time_shift = 0;
        page.time_zero = 0;
        auto written = w.writeTimeConv(page);
        if (!written) return written.error();
    }

    uint64_t t = o.startTime;
    {
        RecordBuilder b(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
        b.u32(uint32_t(pid)).u32(uint32_t(pid)).str(o.comm).sampleId(trackId, pid, pid, t);
        AUXSCOPE_TRY(w.writeRecord(b.finish()));
    }
    for (const ptsynth::PtSynthMapping& elf : elfs) {
        RecordBuilder b(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
        b.u32(uint32_t(pid)).u32(uint32_t(pid)).u64(elf.start).u64(elf.end - elf.start).u64(elf.pgoff);
        b.u32(elf.major).u32(elf.minor).u64(elf.inode).u64(0).u32(elf.prot).u32(elf.flags);
        b.str(elf.path).sampleId(trackId, pid, pid, t);
        AUXSCOPE_TRY(w.writeRecord(b.finish()));
    }
    // The kernel's ITRACE_START: from now on the trace is this thread's, on the
    // ring's CPU and on every CPU whose trace unit writes into the buffer (the
    // snapshot is one address space: each core ran the process).
    std::vector<int> traceCpus{o.cpu};
    for (int c : s.cpus)
        if (std::find(traceCpus.begin(), traceCpus.end(), c) == traceCpus.end()) traceCpus.push_back(c);
    for (int c : traceCpus) {
        RecordBuilder b(PERF_RECORD_ITRACE_START);
        b.u32(uint32_t(pid))
            .u32(uint32_t(pid))
            .sampleId(SampleIdSpec{kSampleType, kEtmId, uint32_t(c)}, pid, pid, t);
        AUXSCOPE_TRY(w.writeRecord(b.finish()));
    }
    AUXSCOPE_TRY(w.writeFinishedRound());
    // Each copy after the first follows trace that is not there: as the kernel's
    // CoreSight sink drivers do after a gap, it starts with a barrier (four frame
    // syncs, 0x7fffffff each), where a decoder resets its deformatter, so a
    // reader that takes the AUX data as one stream (a live decoder) decodes each
    // copy as the snapshot decode does.
    static const uint8_t kBarrier[16] = {0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f,
                                         0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f};
    std::vector<std::vector<uint8_t>> withBarrier(o.copies);
    for (unsigned k = 1; k < o.copies && s.input == EtmInput::Formatted; ++k) {
        const std::vector<uint8_t>& own =
            k < o.copyBytes.size() && !o.copyBytes[k].empty() ? o.copyBytes[k] : s.buffer;
        withBarrier[k].assign(std::begin(kBarrier), std::end(kBarrier));
        withBarrier[k].insert(withBarrier[k].end(), own.begin(), own.end());
    }
    uint64_t auxOffset = 0;
    std::vector<uint8_t> all;
    const unsigned pieces = std::max(1u, o.auxRecords);
    for (unsigned k = 0; k < o.copies; ++k) {
        const std::vector<uint8_t>& bytes = !withBarrier[k].empty() ? withBarrier[k]
                                            : k < o.copyBytes.size() && !o.copyBytes[k].empty()
                                                ? o.copyBytes[k]
                                                : s.buffer;
        // The copy in `pieces` AUX records, cut at frame boundaries (16 bytes) when formatted.
        const uint64_t unit = s.input == EtmInput::Formatted ? 16 : 1;
        const uint64_t units = (bytes.size() + unit - 1) / unit;
        for (unsigned j = 0; j < pieces; ++j) {
            const uint64_t from = std::min<uint64_t>(bytes.size(), units * j / pieces * unit);
            const uint64_t to = std::min<uint64_t>(bytes.size(), units * (j + 1) / pieces * unit);
            if (to == from) continue;
            const std::span<const uint8_t> piece(bytes.data() + from, to - from);
            t = o.startTime + k * o.bufferNs + o.bufferNs * (j + 1) / pieces;
            RecordBuilder aux(PERF_RECORD_AUX);
            aux.u64(auxOffset).u64(piece.size()).u64(0).sampleId(etmId, pid, pid, t);
            AUXSCOPE_TRY(w.writeRecord(aux.finish()));
            if (o.oneAuxtrace) {
                all.insert(all.end(), piece.begin(), piece.end());
                auxOffset += piece.size();
                if (k + 1 < o.copies || j + 1 < pieces) continue;
            }
            perfdata::AuxtraceRecord head{};
            head.offset = o.oneAuxtrace ? 0 : auxOffset;
            head.reference = t;
            head.idx = 0;
            head.tid = uint32_t(pid);
            head.cpu = uint32_t(o.cpu);
            AUXSCOPE_TRY(w.writeAuxtrace(head, o.oneAuxtrace ? std::span<const uint8_t>(all) : piece));
            AUXSCOPE_TRY(w.writeFinishedRound());
            if (!o.oneAuxtrace) auxOffset += piece.size();
        }
    }
    {
        RecordBuilder b(PERF_RECORD_EXIT);
        b.u32(uint32_t(pid)).u32(uint32_t(pid)).u32(uint32_t(pid)).u32(uint32_t(pid)).u64(t + 1);
        b.sampleId(trackId, pid, pid, t + 1);
        AUXSCOPE_TRY(w.writeRecord(b.finish()));
    }
    w.setFeature(perfdata::kFeatArch, FeatureBlob().str("aarch64").take());
    w.setFeature(perfdata::kFeatNrCpus,
                 FeatureBlob().u32(uint32_t(byCpu.size())).u32(uint32_t(byCpu.size())).take());
    w.setFeature(perfdata::kFeatPmuMappings, FeatureWriter::auxPmuMappings(kCsEtmPmuType, "cs_etm"));
    w.setFeature(perfdata::kFeatEventDesc, FeatureWriter::eventDesc(attrs));
    std::vector<BuildIdEntry> ids;
    for (const ptsynth::PtSynthMapping& elf : elfs)
        if (auto id = FeatureWriter::elfBuildId(elf.path)) ids.push_back({elf.path, *id, false});
    if (!ids.empty()) w.setFeature(perfdata::kFeatBuildId, FeatureWriter::buildIds(ids));
#undef AUXSCOPE_TRY
    return w.finish();
}

Expected<SnapshotTrace> snapshotToPerfData(const std::string& dir, const std::string& out,
                                           const SnapPerfDataOptions& options,
                                           const std::string& bufferName) {
    auto s = readSnapshotTrace(dir, bufferName);
    if (!s) return s.error();
    std::string prefix = out;
    if (prefix.size() > 5 && prefix.ends_with(".data")) prefix.resize(prefix.size() - 5);
    auto elfs = writeDumpElfs(*s, prefix + "-dump");
    if (!elfs) return elfs.error();
    if (auto w = writeSnapshotPerfData(*s, *elfs, options, out); !w)
        return makeError(out + ": " + w.error().message);
    return s;
}

}  // namespace auxscope::etmsnap
