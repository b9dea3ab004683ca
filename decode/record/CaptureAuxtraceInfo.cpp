// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/CaptureAuxtraceInfo.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "perfdata/AuxtraceInfo.h"

namespace auxscope {
namespace {

// CPUID leaf 0x15: the TSC/core crystal clock ratio Intel PT's MTC packets need
// (EBX/EAX). 0/0 where the leaf is absent (other vendors, old CPUs), as perf does.
void tscCtcRatio(uint64_t& n, uint64_t& d) {
    n = d = 0;
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_max(0, nullptr) >= 0x15 && __get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx)) {
        n = ebx;
        d = eax;
    }
#endif
}

Expected<uint64_t> readHexFile(const std::filesystem::path& p) {
    auto text = readSmallFile(p);
    if (!text) return makeError(p.string() + ": cannot read (needed for the CoreSight AUXTRACE_INFO)");
    try {
        return uint64_t(std::stoull(*text, nullptr, 16));
    } catch (...) {
        return makeError(p.string() + ": not a hex number: '" + *text + "'");
    }
}

// perf's rule for every AUX PMU's time words (valid only with cap_user_time_zero).
void timeWords(const perf_event_mmap_page* page, std::vector<uint64_t>& w) {
    IntelPtInfo t;
    if (page) setIntelPtTimeFields(t, *page);
    w.insert(w.end(), {t.timeShift, t.timeMult, t.timeZero, t.capUserTimeZero});
}

}  // namespace

Expected<PerfDataWriterCaptureOptions::AuxtraceInfoBlock> captureAuxtraceInfo(
    const CaptureAuxtraceInputs& in) {
    if (!in.plan || !in.pmu) return makeError("AUXTRACE_INFO: no AUX event");
    const AuxEventPlan& plan = *in.plan;
    PerfDataWriterCaptureOptions::AuxtraceInfoBlock b;
    switch (plan.kind) {
        case AuxPmuKind::IntelPt: {
            IntelPtInfo info;
            setIntelPtPmuFields(info, *in.pmu);
            if (in.userPage) setIntelPtTimeFields(info, *in.userPage);
            info.haveSchedSwitch = in.contextSwitches ? (in.perCpu ? 3 : 2) : 0;
            info.snapshotMode = plan.snapshot ? 1 : 0;
            info.perCpuMmaps = in.perCpu ? 1 : 0;
            tscCtcRatio(info.tscCtcRatioN, info.tscCtcRatioD);
            if (auto r = readSmallFile(in.sysfsRoot / in.pmu->name / "max_nonturbo_ratio"))
                info.maxNonTurboRatio = std::strtoull(r->c_str(), nullptr, 10);
            info.filter = in.filter;
            b.type = auxtrace::kTypeIntelPt;
            b.priv = encodeIntelPtInfo(info);
            return b;
        }
        case AuxPmuKind::IntelBts:
            // perf's intel-bts block: PMU type, time conversion, snapshot mode.
            b.type = auxtrace::kTypeIntelBts;
            b.priv.push_back(in.pmu->type);
            timeWords(in.userPage, b.priv);
            b.priv.push_back(plan.snapshot ? 1 : 0);
            return b;
        case AuxPmuKind::ArmSpe:
            // perf 6.1's arm_spe block is the PMU type alone.
            b.type = auxtrace::kTypeArmSpe;
            b.priv.push_back(in.pmu->type);
            return b;
        case AuxPmuKind::CsEtm: {
            CsEtmInfo info;
            info.pmuType = in.pmu->type;
            info.snapshot = plan.snapshot ? 1 : 0;
            for (int cpu : in.cpus) {
                const auto dir = in.sysfsRoot / in.pmu->name / ("cpu" + std::to_string(cpu));
                CsEtmCpuInfo c;
                c.cpu = uint64_t(cpu);
                auto reg = [&](const char* rel, uint64_t& out) -> Expected<void> {
                    auto v = readHexFile(dir / rel);
                    if (!v) return v.error();
                    out = *v;
                    return {};
                };
                if (std::filesystem::exists(dir / "trcidr")) {
                    uint64_t devarch = 0;
                    if (std::filesystem::exists(dir / "mgmt" / "trcdevarch"))
                        if (auto r = reg("mgmt/trcdevarch", devarch); !r) return r.error();
                    c.tracer = csEtmIsEte(devarch) ? CsEtmTracer::Ete : CsEtmTracer::EtmV4;
                    c.trcdevarch = devarch;
                    c.trcconfigr = csEtmV4ConfigR(plan.attr.config);
                    c.trctraceidr = csEtmLegacyTraceId(unsigned(cpu));
                    for (auto [rel, out] : {std::pair{"trcidr/trcidr0", &c.trcidr0},
                                            {"trcidr/trcidr1", &c.trcidr1},
                                            {"trcidr/trcidr2", &c.trcidr2},
                                            {"trcidr/trcidr8", &c.trcidr8},
                                            {"mgmt/trcauthstatus", &c.trcauthstatus}})
                        if (auto r = reg(rel, *out); !r) return r.error();
                } else {
                    c.tracer = CsEtmTracer::EtmV3;
                    c.etmcr = plan.attr.config;
                    c.etmtraceidr = csEtmLegacyTraceId(unsigned(cpu));
                    for (auto [rel, out] :
                         {std::pair{"mgmt/etmccer", &c.etmccer}, {"mgmt/etmidr", &c.etmidr}})
                        if (auto r = reg(rel, *out); !r) return r.error();
                }
                info.cpus.push_back(c);
            }
            auto priv = encodeCsEtmInfo(info);
            if (!priv) return priv.error();
            b.type = auxtrace::kTypeCsEtm;
            b.priv = std::move(priv.value());
            return b;
        }
    }
    return makeError("AUXTRACE_INFO: unknown AUX PMU kind");
}

Expected<std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>> captureAuxtraceInfo(
    const CaptureSession& session) {
    const auto& plan = session.auxPlan();
    if (!plan) return std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>{};
    const PmuRegistry pmus = PmuRegistry::discover();
    const PmuInfo* pmu = pmus.find(plan->pmuName);
    if (!pmu) return makeError("AUXTRACE_INFO: PMU '" + plan->pmuName + "' is gone from sysfs");
    CaptureAuxtraceInputs in;
    in.plan = &*plan;
    in.pmu = pmu;
    in.userPage = session.ringCount() ? session.ringMetaPage(0) : nullptr;
    in.cpus = session.cpus();
    const auto& o = session.options();
    in.perCpu = o.target == TargetKind::SystemWide || o.target == TargetKind::CpuList;
    in.contextSwitches = o.contextSwitches;
    in.filter = o.auxFilter;
    auto b = captureAuxtraceInfo(in);
    if (!b) return b.error();
    return std::optional<PerfDataWriterCaptureOptions::AuxtraceInfoBlock>(std::move(b.value()));
}

}  // namespace auxscope
