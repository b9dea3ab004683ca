// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmTraceSource.h"

#include <algorithm>
#include <map>

#include "perfdata/PerfDataFormat.h"

namespace auxscope::etm {

uint64_t EtmCpuTrace::timeAt(uint64_t offset) const {
    return TimeCursor(*this).at(offset);
}

int EtmCpuTrace::cpuOfTraceId(uint8_t id) const {
    for (size_t i = 0; i < sources.size(); ++i)
        if (sources[i].traceId() == id) return i < sourceCpus.size() ? sourceCpus[i] : -1;
    return -1;
}

const EtmSourceConfig* EtmCpuTrace::sourceOfTraceId(uint8_t id) const {
    for (const EtmSourceConfig& s : sources)
        if (s.traceId() == id) return &s;
    return nullptr;
}

void EtmCpuTrace::TimeCursor::seek(uint64_t offset) {
    const EtmCpuTrace& t = *trace_;
    constant_ = true;
    lo_ = 0;
    hi_ = UINT64_MAX;
    if (t.writes.empty()) {
        value_ = t.startTime;
        return;
    }
    const std::vector<AuxBufferPlace>& places = t.stream.places;
    auto place = std::upper_bound(places.begin(), places.end(), offset,
                                  [](uint64_t off, const AuxBufferPlace& p) { return off < p.begin; });
    if (place == places.begin()) {
        value_ = t.writes.front().time;
        if (!places.empty()) hi_ = places.front().begin;
        return;
    }
    if (place != places.end()) hi_ = place->begin;
    --place;
    lo_ = place->begin;
    placeBegin_ = place->begin;
    placeAux_ = place->auxOffset;
    // The stream offsets of AUX offset bounds within this buffer.
    auto streamOf = [&](uint64_t aux) {
        return aux <= place->auxOffset ? place->begin : place->begin + (aux - place->auxOffset);
    };
    const uint64_t aux = place->auxOffset + (offset - place->begin);
    auto w = std::upper_bound(t.writes.begin(), t.writes.end(), aux,
                              [](uint64_t a, const AuxWrite& x) { return a < x.auxOffset + x.size; });
    if (w != t.writes.begin()) {
        const AuxWrite& prev = *(w - 1);
        lo_ = std::max(lo_, streamOf(prev.auxOffset + prev.size));
    }
    if (w == t.writes.end()) {
        value_ = t.writes.back().time;
        return;
    }
    hi_ = std::min(hi_, streamOf(w->auxOffset + w->size));
    value_ = w == t.writes.begin() ? std::min(t.startTime ? t.startTime : w->time, w->time)
                                   : std::min((w - 1)->time, w->time);
    constant_ = false;
    wAux_ = w->auxOffset;
    scale_ = w->size ? double(w->time - value_) / double(w->size) : 0;
}

void EtmTraceSource::setStartTime(uint64_t time) {
    for (EtmCpuTrace& c : cpus_)
        c.startTime = time;
}

const EtmCpuTrace* EtmTraceSource::cpu(int cpu) const {
    for (const EtmCpuTrace& c : cpus_)
        if (c.stream.cpu == cpu) return &c;
    return nullptr;
}

int EtmTraceSource::cpuOfTraceId(uint8_t traceId) const {
    for (const auto& [id, cpu] : traceIdCpus_)
        if (id == traceId) return cpu;
    return -1;
}

Expected<EtmTraceSource> EtmTraceSource::fromPerfData(const PerfDataReader& file) {
    EtmTraceSource source;
    const PerfAuxtraceInfo* block = nullptr;
    for (const PerfAuxtraceInfo& i : file.summary().auxtraceInfo)
        if (i.type == auxtrace::kTypeCsEtm) block = &i;
    if (!block) return makeError(file.path() + ": no CoreSight AUXTRACE_INFO record (not a cs_etm capture)");
    auto info = decodeCsEtmInfo(block->priv);
    if (!info)
        return makeError(file.path() + ": offset " + std::to_string(block->fileOffset) +
                         ": CoreSight AUXTRACE_INFO: " + info.error().message);
    source.info_ = std::move(*info);
    std::map<uint64_t, EtmSourceConfig> byCpu;
    bool anyTimestamps = false;
    for (const CsEtmCpuInfo& cpu : source.info_.cpus) {
        EtmSourceConfig config = fromCsEtmCpuInfo(cpu);
        byCpu[cpu.cpu] = config;
        source.traceIdCpus_.push_back({config.traceId(), int(cpu.cpu)});
        if (cpu.tracer == CsEtmTracer::EtmV3 ? (cpu.etmcr >> 28) & 1 : (cpu.trcconfigr >> 11) & 1)
            anyTimestamps = true;
    }
    if (const auto& tc = file.summary().timeConv; tc && tc->timeMult) {
        source.time_ = {true, tc->timeShift, tc->timeMult, tc->timeZero};
        if (tc->hasCycles && tc->capUserTimeShort)
            source.time_.shortCounter = true, source.time_.cycles = tc->timeCycles,
            source.time_.mask = tc->timeMask;
    }
    source.timestamps_ = anyTimestamps && source.time_.valid;
    if (!source.timestamps_)
        source.notes_.push_back(
            std::string(anyTimestamps ? "the trace's timestamps do not convert to perf time (no TIME_CONV)"
                                      : "the trace has no timestamps") +
            ": times are interpolated between the PERF_RECORD_AUX records of each AUX buffer");

    std::vector<AuxStream> streams = collectAuxStreams(file, "sync point", source.notes_);
    for (AuxStream& s : streams) {
        EtmCpuTrace trace;
        // The ring's AUX records: their flags say raw or formatted, their times when bytes were written.
        bool raw = false;
        for (const PerfAuxRecord& a : file.summary().aux) {
            const bool mine = s.cpu >= 0 ? a.cpu == s.cpu : (streams.size() == 1 || a.tid == s.tid);
            if (!mine) continue;
            if (a.flags & perfdata::kAuxFlagCoresightFormatRaw) raw = true;
            if (a.auxSize) trace.writes.push_back({a.auxOffset, a.auxSize, a.time});
        }
        std::stable_sort(trace.writes.begin(), trace.writes.end(),
                         [](const auto& a, const auto& b) { return a.auxOffset < b.auxOffset; });
        trace.input = raw ? EtmInput::Raw : EtmInput::Formatted;
        if (raw) {
            auto it = byCpu.find(uint64_t(s.cpu));
            if (it == byCpu.end() && !byCpu.empty()) it = byCpu.begin();
            if (it != byCpu.end()) {
                trace.sources.push_back(it->second);
                trace.sourceCpus.push_back(int(it->first));
            }
        } else {
            for (const auto& [cpu, config] : byCpu) {
                trace.sources.push_back(config);
                trace.sourceCpus.push_back(int(cpu));
            }
        }
        if (trace.sources.empty())
            source.notes_.push_back("cpu " + std::to_string(s.cpu) +
                                    ": no trace unit in the AUXTRACE_INFO block: not decoded");
        trace.stream = std::move(s);
        source.cpus_.push_back(std::move(trace));
    }
    // Rings with announced AUX data and none of it in the file.
    for (const PerfAuxArea& a : file.summary().auxAreas) {
        if (!a.missingBytes || a.presentBytes) continue;
        EtmLostRing lost;
        lost.cpu = int(a.cpu);
        lost.tid = a.tid;
        for (const PerfAuxRecord& r : file.summary().aux) {
            if (a.cpu >= 0 ? r.cpu != a.cpu : r.tid != a.tid) continue;
            if (!lost.firstTime || r.time < lost.firstTime) lost.firstTime = r.time;
            lost.lastTime = std::max(lost.lastTime, r.time);
        }
        lost.cause = std::to_string(a.missingBytes) + " announced AUX bytes of " + perfAuxAreaName(a) +
                     " missing from the file (no AUXTRACE data: nothing of it decodes)";
        source.lost_.push_back(std::move(lost));
    }
    return source;
}

}  // namespace auxscope::etm
