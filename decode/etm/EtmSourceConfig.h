// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What OpenCSD needs to decode one trace source (one trace ID): the protocol,
// the core's architecture and profile, and the trace unit's registers. Filled
// from a snapshot's device_*.ini (EtmSnapshot) or from perf's AUXTRACE_INFO
// (fromCsEtmCpuInfo). OpenCSD's own types stay inside decode/etm.
#include <cstdint>
#include <string>

#include "perfdata/AuxtraceInfo.h"

namespace auxscope::etm {

enum class EtmProtocol : uint8_t {
    EtmV3,  // ETMv3.x (ARMv7 cores: Cortex-A7, -A9 ...)
    Ptm,    // PTM / PFT 1.x (Cortex-A15 ...)
    EtmV4,  // ETMv4 instruction trace (ARMv8 cores)
    Ete,    // ETE (ARMv9, with TRBE)
    Stm,    // System Trace Macrocell: packets only, no instruction flow
};
const char* etmProtocolName(EtmProtocol p);  // "ETMv3", "PTM", "ETMv4", "ETE", "STM"

// The values of OpenCSD's ocsd_arch_version_t and ocsd_core_profile_t.
enum class EtmArch : uint16_t { Unknown = 0, V7 = 0x0700, V8 = 0x0800, V8r3 = 0x0803, AA64 = 0x0864 };
enum class EtmProfile : uint8_t { Unknown = 0, CortexM = 1, CortexR = 2, CortexA = 3 };

struct EtmCoreArch {
    EtmArch arch = EtmArch::Unknown;
    EtmProfile profile = EtmProfile::Unknown;
    bool known() const { return arch != EtmArch::Unknown && profile != EtmProfile::Unknown; }
};
// A core's name as a snapshot gives it ("Cortex-A53", "ARMv8.2-A", "ARM-AA64"),
// by OpenCSD's table and patterns; Unknown where it has no idea.
EtmCoreArch etmCoreArchFromName(const std::string& coreName);

struct EtmSourceConfig {
    EtmProtocol protocol = EtmProtocol::EtmV4;
    EtmCoreArch core{EtmArch::V8, EtmProfile::CortexA};

    // ETMv4 and ETE.
    uint32_t trcconfigr = 0;
    uint32_t trctraceidr = 0;
    uint32_t trcidr0 = 0;
    uint32_t trcidr1 = 0x4100F403;  // OpenCSD's default when a snapshot lacks it
    uint32_t trcidr2 = 0;
    uint32_t trcidr8 = 0, trcidr9 = 0, trcidr10 = 0, trcidr11 = 0, trcidr12 = 0, trcidr13 = 0;
    uint32_t trcdevarch = 0x47705A13;  // ETE only; OpenCSD's default

    // ETMv3 and PTM.
    uint32_t etmcr = 0;
    uint32_t etmidr = 0;
    uint32_t etmccer = 0;
    uint32_t etmtraceidr = 0;

    // STM.
    uint32_t stmtcsr = 0;

    // The CoreSight trace ID (7 bits) the source's packets carry in a formatted stream.
    uint8_t traceId() const;
    // "ETMv4 trace ID 0x10 (ARMv8-A)"
    std::string describe() const;
};

// perf's per-CPU metadata: ETMv3 magic is ETMv3 or PTM by ETMIDR (as perf
// decides), ETMv4 magic is ETMv4, ETE is ETE; cores are taken as Cortex-A of
// ARMv7 (ETMv3/PTM), ARMv8 (ETMv4) or ARMv8.3+ AArch64 (ETE), as perf does.
EtmSourceConfig fromCsEtmCpuInfo(const CsEtmCpuInfo& cpu);

}  // namespace auxscope::etm
