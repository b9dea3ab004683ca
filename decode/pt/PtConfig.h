// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What libipt needs to know about the machine that recorded an Intel PT trace,
// kept apart from where it comes from: today the command line (`--cpu 6/85/4
// --mtc-freq 3 ...`, the same spelling ptdump and ptxed use), later a perf.data
// (the CPUID header feature gives family/model/stepping, AUXTRACE_INFO the MTC
// period bits, TSC:CTC ratio and max non-turbo ratio). Both fill PtConfigOptions;
// makePtConfig() turns it plus a trace buffer into libipt's pt_config.
#include <intel-pt.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope {

// CPUID family/model/stepping of the recording CPU: libipt derives its errata
// workarounds from it (pt_cpu_errata), so a wrong value changes the decode.
struct PtCpuIdentity {
    uint16_t family = 0;
    uint8_t model = 0;
    uint8_t stepping = 0;
};

// One IA32_RTIT_ADDRn_{CFG,A,B} triple (address range filtering, ptxed --filter:addrN_*).
struct PtAddressRange {
    uint8_t config = 0;  // 0 off, 1 filter (trace only inside), 2 stop
    uint64_t begin = 0;
    uint64_t end = 0;
};

struct PtConfigOptions {
    // Unset: decode by the specification only (ptdump's `--cpu none`).
    std::optional<PtCpuIdentity> cpu;
    // IA32_RTIT_CTL.MTCFreq: MTC packets come every 2^mtcFreq CTC ticks.
    uint8_t mtcFreq = 0;
    // MSR_PLATFORM_INFO[15:8], the max non-turbo ratio: calibrates CYC from CBR.
    uint8_t nomFreq = 0;
    // CPUID leaf 0x15: TSC = CTC * ebx / eax (0 when unknown: no MTC-based time).
    uint32_t cpuid15Eax = 0;
    uint32_t cpuid15Ebx = 0;
    PtAddressRange addressRanges[4];
};

// An unsigned number in C syntax (decimal, 0x hex, 0 octal) as strtoull(.., 0)
// reads it, the whole text; nullopt for anything else.
std::optional<uint64_t> parsePtNumber(std::string_view text);

// "F/M" or "F/M/S", numbers in C syntax (decimal, 0x.., 0..), as pt_cpu_parse takes them.
Expected<PtCpuIdentity> parsePtCpu(std::string_view text);

// Takes `flag` ("--name" as the command line's parser normalized it) with its
// `value` if it is one of PtConfigOptions' flags (--cpu, --mtc-freq, --nom-freq,
// --cpuid-0x15.eax/.ebx, --cpuid-15 EAX,EBX, --filter:addrN_cfg/_a/_b). Returns
// false for any other option; an error names the option and the bad value.
Expected<bool> parsePtConfigFlag(PtConfigOptions& options, const std::string& flag,
                                 const std::optional<std::string>& value);

struct IntelPtInfo;

// From a perf.data: the AUXTRACE_INFO block of the intel_pt event, that event's
// perf_event_attr.config (the MTC period is a field of it, at info.mtcFreqBits),
// and the HEADER_CPUID string ("GenuineIntel,6,78,3"). The CPU stays unset when
// the string is not an Intel family,model,stepping triple.
PtConfigOptions ptConfigFromPerf(const IntelPtInfo& info, uint64_t attrConfig, std::string_view cpuid);

// A pt_config ready for a libipt decoder, over [begin, end) which must outlive it.
struct PtConfig {
    pt_config config{};
    // Negative pt_error_code when options.cpu is set but libipt knows no errata
    // for it (pt_cpu_errata failed): decoding goes on without workarounds, and
    // the tools print this as a diagnostic.
    int errataError = 0;
};

PtConfig makePtConfig(const PtConfigOptions& options, const uint8_t* begin, const uint8_t* end);

// Something a decoder reported about the trace, where it happened. The packet dump
// and the instruction flow both print these inline, as ptdump and ptxed do, and
// also hand them back so a caller can tell a clean decode from a damaged one.
struct PtDecodeIssue {
    enum class Severity {
        Warning,  // decoding went on with full information (e.g. no time calibration yet)
        Error,    // trace was lost: a packet or instruction could not be decoded
    };
    Severity severity = Severity::Error;
    uint64_t offset = 0;  // byte offset into the trace buffer
    std::string what;     // the diagnostic, e.g. "error decoding packet: unknown opcode"
};

// libipt's error name for a (possibly negative) pt_error_code, e.g. "no memory mapped at this address".
std::string ptErrorName(int errorCode);

}  // namespace auxscope
