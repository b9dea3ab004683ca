// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmSourceConfig.h"

#include <cstdio>
#include <map>

namespace auxscope::etm {

const char* etmProtocolName(EtmProtocol p) {
    switch (p) {
        case EtmProtocol::EtmV3:
            return "ETMv3";
        case EtmProtocol::Ptm:
            return "PTM";
        case EtmProtocol::EtmV4:
            return "ETMv4";
        case EtmProtocol::Ete:
            return "ETE";
        case EtmProtocol::Stm:
            return "STM";
    }
    return "?";
}

EtmCoreArch etmCoreArchFromName(const std::string& name) {
    using A = EtmArch;
    using P = EtmProfile;
    // The cores OpenCSD 1.3 knows by name.
    static const std::map<std::string, EtmCoreArch> cores = {
        {"Cortex-A78", {A::V8, P::CortexA}},   {"Cortex-A77", {A::V8r3, P::CortexA}},
        {"Cortex-A76", {A::V8r3, P::CortexA}}, {"Cortex-A75", {A::V8r3, P::CortexA}},
        {"Cortex-A73", {A::V8, P::CortexA}},   {"Cortex-A72", {A::V8, P::CortexA}},
        {"Cortex-A65", {A::V8r3, P::CortexA}}, {"Cortex-A57", {A::V8, P::CortexA}},
        {"Cortex-A55", {A::V8r3, P::CortexA}}, {"Cortex-A53", {A::V8, P::CortexA}},
        {"Cortex-A35", {A::V8, P::CortexA}},   {"Cortex-A32", {A::V8, P::CortexA}},
        {"Cortex-A17", {A::V7, P::CortexA}},   {"Cortex-A15", {A::V7, P::CortexA}},
        {"Cortex-A12", {A::V7, P::CortexA}},   {"Cortex-A9", {A::V7, P::CortexA}},
        {"Cortex-A8", {A::V7, P::CortexA}},    {"Cortex-A7", {A::V7, P::CortexA}},
        {"Cortex-A5", {A::V7, P::CortexA}},    {"Cortex-R52", {A::V8, P::CortexR}},
        {"Cortex-R8", {A::V7, P::CortexR}},    {"Cortex-R7", {A::V7, P::CortexR}},
        {"Cortex-R5", {A::V7, P::CortexR}},    {"Cortex-R4", {A::V7, P::CortexR}},
        {"Cortex-M33", {A::V8, P::CortexM}},   {"Cortex-M23", {A::V8, P::CortexM}},
        {"Cortex-M0", {A::V7, P::CortexM}},    {"Cortex-M0+", {A::V7, P::CortexM}},
        {"Cortex-M3", {A::V7, P::CortexM}},    {"Cortex-M4", {A::V7, P::CortexM}},
    };
    if (auto it = cores.find(name); it != cores.end()) return it->second;
    auto profileOf = [](char c) {
        return c == 'A' ? P::CortexA : c == 'R' ? P::CortexR : c == 'M' ? P::CortexM : P::Unknown;
    };
    // "ARMv<major>[.<minor>]-<profile>"
    if (name.rfind("ARMv", 0) == 0 && name.size() >= 7 && name[4] >= '0' && name[4] <= '9') {
        const int major = name[4] - '0';
        int minor = 0;
        size_t dash = 5;
        if (name[5] == '.') {
            if (name.size() < 9 || name[6] < '0' || name[6] > '9') return {};
            minor = name[6] - '0';
            dash = 7;
        }
        if (dash + 1 >= name.size() || name[dash] != '-') return {};
        EtmCoreArch out;
        if (major == 7)
            out.arch = A::V7;
        else if (major == 8)
            out.arch = minor < 3 ? A::V8 : minor == 3 ? A::V8r3 : A::AA64;
        else if (major > 8)
            out.arch = A::AA64;
        else
            return {};
        out.profile = profileOf(name[dash + 1]);
        if (out.profile == P::Unknown) return {};
        return out;
    }
    // "ARM-AA64[-<profile>]" / "ARM-aa64[-<profile>]"
    if (name.rfind("ARM-AA64", 0) == 0 || name.rfind("ARM-aa64", 0) == 0) {
        EtmCoreArch out{A::AA64, P::CortexA};
        if (name.size() > 9 && name[8] == '-' && profileOf(name[9]) != P::Unknown)
            out.profile = profileOf(name[9]);
        return out;
    }
    return {};
}

uint8_t EtmSourceConfig::traceId() const {
    switch (protocol) {
        case EtmProtocol::EtmV3:
        case EtmProtocol::Ptm:
            return static_cast<uint8_t>(etmtraceidr & 0x7f);
        case EtmProtocol::EtmV4:
        case EtmProtocol::Ete:
            return static_cast<uint8_t>(trctraceidr & 0x7f);
        case EtmProtocol::Stm:
            return static_cast<uint8_t>((stmtcsr >> 16) & 0x7f);
    }
    return 0;
}

std::string EtmSourceConfig::describe() const {
    char buf[96];
    const char* arch = core.arch == EtmArch::V7     ? "ARMv7"
                       : core.arch == EtmArch::V8   ? "ARMv8"
                       : core.arch == EtmArch::V8r3 ? "ARMv8.3"
                       : core.arch == EtmArch::AA64 ? "ARMv8.3+ AArch64"
                                                    : "unknown architecture";
    const char* prof = core.profile == EtmProfile::CortexA   ? "-A"
                       : core.profile == EtmProfile::CortexR ? "-R"
                       : core.profile == EtmProfile::CortexM ? "-M"
                                                             : "";
    if (protocol == EtmProtocol::Stm)
        std::snprintf(buf, sizeof buf, "STM trace ID 0x%x", traceId());
    else
        std::snprintf(buf, sizeof buf, "%s trace ID 0x%x (%s%s)", etmProtocolName(protocol), traceId(), arch,
                      prof);
    return buf;
}

EtmSourceConfig fromCsEtmCpuInfo(const CsEtmCpuInfo& cpu) {
    EtmSourceConfig c;
    switch (cpu.tracer) {
        case CsEtmTracer::EtmV3:
            // ETMIDR bits 11:8 = 0b0011 is a PTM (PFT) (perf: ETMIDR_PTM_VERSION).
            c.protocol = (cpu.etmidr & 0xf00) == 0x300 ? EtmProtocol::Ptm : EtmProtocol::EtmV3;
            c.core = {EtmArch::V7, EtmProfile::CortexA};
            c.etmcr = static_cast<uint32_t>(cpu.etmcr);
            c.etmidr = static_cast<uint32_t>(cpu.etmidr);
            c.etmccer = static_cast<uint32_t>(cpu.etmccer);
            c.etmtraceidr = static_cast<uint32_t>(cpu.etmtraceidr);
            break;
        case CsEtmTracer::EtmV4:
        case CsEtmTracer::Ete:
            c.protocol = cpu.tracer == CsEtmTracer::Ete ? EtmProtocol::Ete : EtmProtocol::EtmV4;
            c.core = {cpu.tracer == CsEtmTracer::Ete ? EtmArch::AA64 : EtmArch::V8, EtmProfile::CortexA};
            c.trcconfigr = static_cast<uint32_t>(cpu.trcconfigr);
            c.trctraceidr = static_cast<uint32_t>(cpu.trctraceidr);
            c.trcidr0 = static_cast<uint32_t>(cpu.trcidr0);
            c.trcidr1 = static_cast<uint32_t>(cpu.trcidr1);
            c.trcidr2 = static_cast<uint32_t>(cpu.trcidr2);
            c.trcidr8 = static_cast<uint32_t>(cpu.trcidr8);
            if (cpu.tracer == CsEtmTracer::Ete) c.trcdevarch = static_cast<uint32_t>(cpu.trcdevarch);
            break;
    }
    return c;
}

}  // namespace auxscope::etm
