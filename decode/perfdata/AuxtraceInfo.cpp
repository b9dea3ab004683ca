// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/AuxtraceInfo.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "Pmu.h"

namespace auxscope {

namespace {

// Word positions of the Intel PT block.
enum IntelPtWord : size_t {
    kPtPmuType,
    kPtTimeShift,
    kPtTimeMult,
    kPtTimeZero,
    kPtCapUserTimeZero,
    kPtTscBit,
    kPtNoretcompBit,
    kPtHaveSchedSwitch,
    kPtSnapshotMode,
    kPtPerCpuMmaps,
    kPtMtcBit,
    kPtMtcFreqBits,
    kPtTscCtcN,
    kPtTscCtcD,
    kPtCycBit,
    kPtMaxNonTurboRatio,
    kPtFilterStrLen,
};

// Words each layout level needs at least (the filter string comes on top).
constexpr size_t kPtBaseWords = kPtPerCpuMmaps + 1;
constexpr size_t kPtTimingWords = kPtCycBit + 1;
constexpr size_t kPtMaxNonTurboWords = kPtMaxNonTurboRatio + 1;
constexpr size_t kPtFilterWords = kPtFilterStrLen + 1;

// Bytes the filter string takes: strlen + its NUL, rounded up to whole u64s; none when empty.
size_t filterBytes(size_t len) {
    return len ? (len + 1 + 7) / 8 * 8 : 0;
}

std::string wordError(const char* what, size_t word, const std::string& cause) {
    return std::string(what) + " AUXTRACE_INFO: word " + std::to_string(word) + ": " + cause;
}

// Per-CPU block layout of the CoreSight block.
constexpr size_t kCsHeaderWords = 3;    // version, pmu type / nr cpus, snapshot
constexpr size_t kCsCommonWordsV0 = 2;  // magic, cpu
constexpr size_t kCsCommonWordsV1 = 3;  // magic, cpu, nr trace params
constexpr size_t kCsEtmV3Params = 4;    // ETMCR ETMTRACEIDR ETMCCER ETMIDR
constexpr size_t kCsEtmV4Params = 7;    // TRCCONFIGR .. TRCAUTHSTATUS
constexpr size_t kCsEteParams = 8;      // ETMv4 + TRCDEVARCH

uint64_t magicOf(CsEtmTracer t) {
    switch (t) {
        case CsEtmTracer::EtmV3:
            return kCsEtmV3Magic;
        case CsEtmTracer::EtmV4:
            return kCsEtmV4Magic;
        case CsEtmTracer::Ete:
            return kCsEteMagic;
    }
    return 0;
}

// The known parameters of a CPU block, in file order.
std::vector<uint64_t> knownParams(const CsEtmCpuInfo& c) {
    if (c.tracer == CsEtmTracer::EtmV3) return {c.etmcr, c.etmtraceidr, c.etmccer, c.etmidr};
    std::vector<uint64_t> p = {c.trcconfigr, c.trctraceidr, c.trcidr0,      c.trcidr1,
                               c.trcidr2,    c.trcidr8,     c.trcauthstatus};
    if (c.tracer == CsEtmTracer::Ete) p.push_back(c.trcdevarch);
    if (c.tsSource) p.push_back(*c.tsSource);
    return p;
}

// Assigns params (in file order) to the named fields; the rest become extraParams.
void assignParams(CsEtmCpuInfo& c, std::span<const uint64_t> p) {
    size_t i = 0;
    auto next = [&](uint64_t& field) {
        if (i < p.size()) field = p[i++];
    };
    if (c.tracer == CsEtmTracer::EtmV3) {
        next(c.etmcr), next(c.etmtraceidr), next(c.etmccer), next(c.etmidr);
    } else {
        next(c.trcconfigr), next(c.trctraceidr), next(c.trcidr0), next(c.trcidr1);
        next(c.trcidr2), next(c.trcidr8), next(c.trcauthstatus);
        if (c.tracer == CsEtmTracer::Ete) next(c.trcdevarch);
        if (i < p.size()) c.tsSource = p[i++];
    }
    c.extraParams.assign(p.begin() + std::ptrdiff_t(i), p.end());
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
    return buf;
}

// The bits a format term's value occupies in attr.config once `value` is written
// into it; 0 when the PMU lacks the term or it writes another config word.
uint64_t configBits(const PmuInfo& pmu, const char* term, bool wholeField) {
    auto it = pmu.format.find(term);
    if (it == pmu.format.end() || it->second.target != FormatField::Target::Config) return 0;
    uint64_t config = 0, c1 = 0, c2 = 0, c3 = 0;
    const unsigned w = it->second.width();
    const uint64_t value = wholeField ? (w >= 64 ? ~0ull : (1ull << w) - 1) : 1;
    if (!it->second.apply(value, config, c1, c2, c3)) return 0;
    return config;
}

}  // namespace

// ---------------------------------------------------------------- Intel PT

std::vector<uint64_t> encodeIntelPtInfo(const IntelPtInfo& info) {
    std::vector<uint64_t> w = {info.pmuType,         info.timeShift,  info.timeMult,     info.timeZero,
                               info.capUserTimeZero, info.tscBit,     info.noretcompBit, info.haveSchedSwitch,
                               info.snapshotMode,    info.perCpuMmaps};
    if (info.layout >= IntelPtInfoLayout::Timing)
        w.insert(w.end(), {info.mtcBit, info.mtcFreqBits, info.tscCtcRatioN, info.tscCtcRatioD, info.cycBit});
    if (info.layout >= IntelPtInfoLayout::MaxNonTurbo) w.push_back(info.maxNonTurboRatio);
    if (info.layout >= IntelPtInfoLayout::Filter) {
        const size_t len = ::strnlen(info.filter.c_str(), info.filter.size());
        w.push_back(len);
        const size_t bytes = filterBytes(len);
        const size_t at = w.size();
        w.resize(at + bytes / 8, 0);
        if (len) std::memcpy(w.data() + at, info.filter.data(), len);
    }
    if (info.layout >= IntelPtInfoLayout::EventTrace) w.push_back(info.capEventTrace);
    return w;
}

Expected<IntelPtInfo> decodeIntelPtInfo(std::span<const uint64_t> priv) {
    const size_t n = priv.size();
    if (n < kPtBaseWords)
        return makeError(wordError(
            "Intel PT", n,
            "block of " + std::to_string(n) + " words; perf needs at least " + std::to_string(kPtBaseWords)));
    IntelPtInfo info;
    info.pmuType = priv[kPtPmuType];
    info.timeShift = priv[kPtTimeShift];
    info.timeMult = priv[kPtTimeMult];
    info.timeZero = priv[kPtTimeZero];
    info.capUserTimeZero = priv[kPtCapUserTimeZero];
    info.tscBit = priv[kPtTscBit];
    info.noretcompBit = priv[kPtNoretcompBit];
    info.haveSchedSwitch = priv[kPtHaveSchedSwitch];
    info.snapshotMode = priv[kPtSnapshotMode];
    info.perCpuMmaps = priv[kPtPerCpuMmaps];
    info.layout = IntelPtInfoLayout::Base;
    size_t used = kPtBaseWords;
    if (n >= kPtTimingWords) {
        info.mtcBit = priv[kPtMtcBit];
        info.mtcFreqBits = priv[kPtMtcFreqBits];
        info.tscCtcRatioN = priv[kPtTscCtcN];
        info.tscCtcRatioD = priv[kPtTscCtcD];
        info.cycBit = priv[kPtCycBit];
        info.layout = IntelPtInfoLayout::Timing;
        used = kPtTimingWords;
    }
    if (n >= kPtMaxNonTurboWords) {
        info.maxNonTurboRatio = priv[kPtMaxNonTurboRatio];
        info.layout = IntelPtInfoLayout::MaxNonTurbo;
        used = kPtMaxNonTurboWords;
    }
    if (n >= kPtFilterWords) {
        const uint64_t len = priv[kPtFilterStrLen];
        used = kPtFilterWords;
        if (len) {
            // perf: the string takes strlen + 1 bytes rounded up to u64s and must end in NUL.
            if (len > (n - used) * 8)
                return makeError(wordError("Intel PT", kPtFilterStrLen,
                                           "filter string length " + std::to_string(len) +
                                               " runs past the block (" + std::to_string((n - used) * 8) +
                                               " bytes follow)"));
            const size_t bytes = filterBytes(size_t(len));
            if (bytes > (n - used) * 8)
                return makeError(wordError(
                    "Intel PT", kPtFilterStrLen,
                    "filter string of " + std::to_string(len) + " bytes leaves no room for its NUL padding"));
            const char* s = reinterpret_cast<const char*>(priv.data() + used);
            if (s[bytes - 1] != 0)
                return makeError(
                    wordError("Intel PT", used + bytes / 8 - 1, "filter string not NUL-terminated"));
            info.filter.assign(s, ::strnlen(s, bytes));
            used += bytes / 8;
        }
        info.layout = IntelPtInfoLayout::Filter;
        if (used < n) {
            info.capEventTrace = priv[used++];
            info.layout = IntelPtInfoLayout::EventTrace;
        }
    }
    info.unknownTrailingWords = n - used;
    return info;
}

void setIntelPtPmuFields(IntelPtInfo& info, const PmuInfo& pmu) {
    info.pmuType = pmu.type;
    info.tscBit = configBits(pmu, "tsc", false);
    info.noretcompBit = configBits(pmu, "noretcomp", false);
    info.mtcBit = configBits(pmu, "mtc", false);
    info.mtcFreqBits = configBits(pmu, "mtc_period", true);
    info.cycBit = configBits(pmu, "cyc", false);
    info.capEventTrace = pmu.capValue("event_trace").value_or(0);
}

void setIntelPtTimeFields(IntelPtInfo& info, const perf_event_mmap_page& page) {
    // perf record takes the conversion only with cap_user_time_zero (time_mult then
    // tells whether it is valid); otherwise the words stay 0.
    if (page.cap_user_time_zero && page.time_mult) {
        info.timeShift = page.time_shift;
        info.timeMult = page.time_mult;
        info.timeZero = page.time_zero;
        info.capUserTimeZero = 1;
    } else {
        info.timeShift = info.timeMult = info.timeZero = info.capUserTimeZero = 0;
    }
}

// ---------------------------------------------------------------- CoreSight

Expected<std::vector<uint64_t>> encodeCsEtmInfo(const CsEtmInfo& info) {
    if (info.headerVersion > 2)
        return makeError("CoreSight AUXTRACE_INFO: header version " + std::to_string(info.headerVersion) +
                         " is not one perf defines (0, 1, 2)");
    if (info.cpus.size() > 0xffffffffull) return makeError("CoreSight AUXTRACE_INFO: too many CPUs");
    std::map<uint64_t, uint64_t> cpuByTraceId;
    std::vector<uint64_t> w = {info.headerVersion,
                               (uint64_t(info.pmuType) << 32) | uint64_t(info.cpus.size()), info.snapshot};
    for (const auto& c : info.cpus) {
        const std::string who = "CoreSight AUXTRACE_INFO: cpu " + std::to_string(c.cpu) + ": ";
        if (info.headerVersion <= 1) {
            auto [it, fresh] = cpuByTraceId.emplace(c.traceId(), c.cpu);
            if (!fresh)
                return makeError(who + "trace ID " + hex(c.traceId()) + " already used by cpu " +
                                 std::to_string(it->second) + " (perf refuses the block)");
        }
        if (c.tracer != CsEtmTracer::EtmV3 && !c.tsSource && !c.extraParams.empty())
            return makeError(who + "extra parameters follow TS_SOURCE: set tsSource too");
        auto params = knownParams(c);
        if (info.headerVersion == 0) {
            if (c.tracer == CsEtmTracer::Ete) return makeError(who + "ETE needs header version 1 or later");
            if (c.tsSource || !c.extraParams.empty())
                return makeError(who + "a version 0 block holds no parameters beyond the fixed set");
            w.push_back(magicOf(c.tracer));
            w.push_back(c.cpu);
        } else {
            params.insert(params.end(), c.extraParams.begin(), c.extraParams.end());
            w.push_back(magicOf(c.tracer));
            w.push_back(c.cpu);
            w.push_back(params.size());
        }
        w.insert(w.end(), params.begin(), params.end());
    }
    return w;
}

Expected<CsEtmInfo> decodeCsEtmInfo(std::span<const uint64_t> priv) {
    const size_t n = priv.size();
    auto fail = [](size_t word, const std::string& cause) {
        return makeError(wordError("CoreSight", word, cause));
    };
    if (n < kCsHeaderWords)
        return fail(n, "block of " + std::to_string(n) + " words is shorter than the 3-word header");
    CsEtmInfo info;
    info.headerVersion = priv[0];
    if (info.headerVersion > 2)
        return fail(
            0, "unknown header version " + std::to_string(info.headerVersion) + " (perf 6.1 reads up to 1)");
    info.pmuType = uint32_t(priv[1] >> 32);
    const uint64_t nrCpus = priv[1] & 0xffffffffu;
    info.snapshot = priv[2];
    size_t i = kCsHeaderWords;
    for (uint64_t k = 0; k < nrCpus; ++k) {
        const std::string which = "cpu block " + std::to_string(k) + " of " + std::to_string(nrCpus);
        const size_t common = info.headerVersion == 0 ? kCsCommonWordsV0 : kCsCommonWordsV1;
        if (n - i < common) return fail(i, which + " cut short: the block ends");
        CsEtmCpuInfo c;
        const uint64_t magic = priv[i];
        if (magic == kCsEtmV3Magic)
            c.tracer = CsEtmTracer::EtmV3;
        else if (magic == kCsEtmV4Magic)
            c.tracer = CsEtmTracer::EtmV4;
        else if (magic == kCsEteMagic)
            c.tracer = CsEtmTracer::Ete;
        else
            return fail(i, which + ": unknown magic " + hex(magic));
        c.cpu = priv[i + 1];
        uint64_t nrParams;
        if (info.headerVersion == 0) {
            if (c.tracer == CsEtmTracer::Ete) return fail(i, which + ": ETE in a version 0 header");
            nrParams = c.tracer == CsEtmTracer::EtmV3 ? kCsEtmV3Params : kCsEtmV4Params;
        } else {
            nrParams = priv[i + 2];
        }
        i += common;
        if (nrParams > n - i)
            return fail(i, which + " (cpu " + std::to_string(c.cpu) + "): " + std::to_string(nrParams) +
                               " parameters, " + std::to_string(n - i) + " words left");
        assignParams(c, priv.subspan(i, size_t(nrParams)));
        i += size_t(nrParams);
        info.cpus.push_back(std::move(c));
    }
    if (i != n)
        return fail(i, std::to_string(n - i) + " words left after the last of " + std::to_string(nrCpus) +
                           " cpu blocks (perf refuses the block)");
    return info;
}

bool csEtmIsEte(uint64_t trcdevarch) {
    const uint64_t archPart = trcdevarch & 0xfff;
    const uint64_t archVer = (trcdevarch >> 12) & 0xf;
    return archVer == 5 && archPart == 0xa13;
}

uint64_t csEtmV4ConfigR(uint64_t attrConfig) {
    // attr.config option bits (the cs_etm format terms) -> TRCCONFIGR bits.
    struct Map {
        unsigned opt;
        uint64_t bits;
    };
    static constexpr Map kMap[] = {
        {8, 1ull << 3},                    // branch_broadcast -> BB
        {12, 1ull << 4},                   // cycacc -> CCI
        {14, 1ull << 6},                   // contextid (contextid1) -> CID
        {15, (1ull << 7) | (1ull << 15)},  // contextid2 -> VMID + VMIDOPT
        {28, 1ull << 11},                  // timestamp -> TS
        {29, 1ull << 12},                  // retstack -> RS
    };
    uint64_t r = 0;
    for (const auto& m : kMap)
        if (attrConfig & (1ull << m.opt)) r |= m.bits;
    return r;
}

uint64_t csEtmLegacyTraceId(unsigned cpu) {
    return 0x10 + uint64_t(cpu) * 2;
}

const char* csEtmTracerName(CsEtmTracer tracer) {
    switch (tracer) {
        case CsEtmTracer::EtmV3:
            return "ETMv3";
        case CsEtmTracer::EtmV4:
            return "ETMv4";
        case CsEtmTracer::Ete:
            return "ETE";
    }
    return "?";
}

// ---------------------------------------------------------------- Arm SPE

namespace {
constexpr size_t kSpeV1Words = 2;         // PMU type, per-CPU mmaps
constexpr size_t kSpeV2HeaderWords = 4;   // version, header size, PMU type, nr CPUs
constexpr size_t kSpeCpuCommonWords = 3;  // magic, cpu, nr params
}  // namespace

uint64_t ArmSpeInfo::midrOf(int cpu) const {
    for (const ArmSpeCpuInfo& c : cpus)
        if (c.cpu == uint64_t(cpu)) return c.midr;
    return 0;
}

std::vector<uint64_t> encodeArmSpeInfo(const ArmSpeInfo& info) {
    if (info.version <= 1) return {info.pmuType, info.perCpuMmaps};
    std::vector<uint64_t> w = {info.version, std::max<uint64_t>(info.headerWords, kSpeV2HeaderWords),
                               info.pmuType, info.cpus.size()};
    w.resize(size_t(w[1]), 0);
    for (const ArmSpeCpuInfo& c : info.cpus) {
        std::vector<uint64_t> params = {c.midr, c.pmuType, c.minInterval};
        params.insert(params.end(), c.extraParams.begin(), c.extraParams.end());
        w.push_back(kArmSpeCpuMagic);
        w.push_back(c.cpu);
        w.push_back(params.size());
        w.insert(w.end(), params.begin(), params.end());
    }
    return w;
}

Expected<ArmSpeInfo> decodeArmSpeInfo(std::span<const uint64_t> priv) {
    const size_t n = priv.size();
    auto fail = [](size_t word, const std::string& cause) {
        return makeError(wordError("Arm SPE", word, cause));
    };
    ArmSpeInfo info;
    if (n < kSpeV1Words)
        return fail(n, "block of " + std::to_string(n) + " words is shorter than the 2-word version 1 block");
    if (n == kSpeV1Words) {
        info.version = 1;
        info.pmuType = priv[0];
        info.perCpuMmaps = priv[1];
        return info;
    }
    if (n < kSpeV2HeaderWords)
        return fail(n, "block of " + std::to_string(n) +
                           " words: neither version 1 (2 words) nor a version 2 header (4)");
    info.version = priv[0];
    if (info.version < 2)
        return fail(0, "header version " + std::to_string(info.version) + " in a block of " +
                           std::to_string(n) + " words (version 1 blocks are 2 words)");
    info.headerWords = priv[1];
    if (info.headerWords < kSpeV2HeaderWords || info.headerWords > n)
        return fail(1, "header size " + std::to_string(info.headerWords) + " words (block of " +
                           std::to_string(n) + ", at least 4)");
    info.pmuType = priv[2];
    const uint64_t nrCpus = priv[3];
    size_t i = size_t(info.headerWords);
    for (uint64_t k = 0; k < nrCpus; ++k) {
        const std::string which = "cpu block " + std::to_string(k) + " of " + std::to_string(nrCpus);
        if (n - i < kSpeCpuCommonWords) return fail(i, which + " cut short: the block ends");
        if (priv[i] != kArmSpeCpuMagic)
            return fail(i, which + ": magic " + hex(priv[i]) + ", expected " + hex(kArmSpeCpuMagic));
        ArmSpeCpuInfo c;
        c.cpu = priv[i + 1];
        const uint64_t nrParams = priv[i + 2];
        i += kSpeCpuCommonWords;
        if (nrParams > n - i)
            return fail(i, which + " (cpu " + std::to_string(c.cpu) + "): " + std::to_string(nrParams) +
                               " parameters, " + std::to_string(n - i) + " words left");
        c.params = size_t(nrParams);
        const std::span<const uint64_t> p = priv.subspan(i, size_t(nrParams));
        if (p.size() > 0) c.midr = p[0];
        if (p.size() > 1) c.pmuType = p[1];
        if (p.size() > 2) c.minInterval = p[2];
        if (p.size() > 3) c.extraParams.assign(p.begin() + 3, p.end());
        i += size_t(nrParams);
        info.cpus.push_back(std::move(c));
    }
    if (i != n)
        return fail(i, std::to_string(n - i) + " words left after the last of " + std::to_string(nrCpus) +
                           " cpu blocks");
    return info;
}

}  // namespace auxscope
