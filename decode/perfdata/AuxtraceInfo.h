// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The private u64 block of PERF_RECORD_AUXTRACE_INFO for Intel PT, Arm
// CoreSight ETM/ETE and Arm SPE (at the end), laid out word for word the way perf (tools/perf, 6.1)
// writes it at record time and reads it back in perf report / perf script.
// Pure functions: encode a struct to the block PerfDataWriter::writeAuxtraceInfo()
// takes, and decode the block PerfDataReader hands back
// (summary().auxtraceInfo[i].priv) to the struct. Qt-free; errors are values.
//
// Intel PT (PERF_AUXTRACE_INTEL_PT = 1), one u64 per word:
//   0 PMU type          1 time shift        2 time mult          3 time zero
//   4 cap_user_time_zero 5 TSC bit          6 noretcomp bit      7 have sched_switch
//   8 snapshot mode     9 per-cpu mmaps    10 MTC bit           11 MTC freq bits
//  12 TSC:CTC n        13 TSC:CTC d        14 CYC bit           15 max non-turbo ratio
//  16 filter string length (strlen), then the filter string NUL-padded to whole
//     u64s (strlen + 1 rounded up to 8 bytes; nothing when the length is 0),
//  then one u64: Event Trace capability (caps/event_trace).
// Readers take whatever prefix a file holds: words 0-9 always, 10-14 as a group,
// 15, then 16 with its string, then the Event Trace word when one follows.
//
// CoreSight (PERF_AUXTRACE_CS_ETM = 3):
//   header: 0 version, 1 (PMU type << 32) | number of CPUs, 2 snapshot mode;
//   then one block per traced CPU, in CPU order:
//     version >= 1: magic, cpu, number of trace params N, then N params;
//     version 0:    magic, cpu, then a fixed set of params (ETMv3 4, ETMv4 7).
//   ETMv3/PTM params: ETMCR, ETMTRACEIDR, ETMCCER, ETMIDR.
//   ETMv4 params:     TRCCONFIGR, TRCTRACEIDR, TRCIDR0, TRCIDR1, TRCIDR2,
//                     TRCIDR8, TRCAUTHSTATUS (perf 6.x after 6.1 appends TS_SOURCE).
//   ETE params:       the ETMv4 seven plus TRCDEVARCH (then TS_SOURCE in newer perf).
// perf 6.1 writes and reads version 1; it refuses a version above 1, a block
// whose words do not add up to the record exactly, and two CPUs with the same
// trace ID. Version 2 (newer perf) keeps the version 1 layout but the trace IDs
// then come from PERF_RECORD_AUX_OUTPUT_HW_ID; this decoder reads it too.
#include <linux/perf_event.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

struct PmuInfo;

// PERF_AUXTRACE_* (the type word of PERF_RECORD_AUXTRACE_INFO).
namespace auxtrace {
constexpr uint32_t kTypeIntelPt = 1;
constexpr uint32_t kTypeIntelBts = 2;
constexpr uint32_t kTypeCsEtm = 3;
constexpr uint32_t kTypeArmSpe = 4;
}  // namespace auxtrace

// ---------------------------------------------------------------- Intel PT

// How much of the Intel PT block is present, each level including the ones
// before it (older perf wrote shorter blocks; perf 6.1 writes EventTrace).
enum class IntelPtInfoLayout {
    Base,         // words 0-9
    Timing,       // + MTC bit .. CYC bit (10-14)
    MaxNonTurbo,  // + max non-turbo ratio (15)
    Filter,       // + filter string length and string (16...)
    EventTrace,   // + the Event Trace capability word after the string
};

// Values stay u64 as perf stores them, so a decoded block re-encodes to the same words.
struct IntelPtInfo {
    // perf_event_attr.type of the intel_pt PMU (/sys/bus/event_source/devices/intel_pt/type).
    uint64_t pmuType = 0;
    // perf time <-> TSC, from the AUX event's perf_event_mmap_page (time_shift,
    // time_mult, time_zero) when the kernel offers cap_user_time_zero; else all 0.
    uint64_t timeShift = 0;
    uint64_t timeMult = 0;
    uint64_t timeZero = 0;
    // 1 when the three above are valid (perf: time_mult != 0).
    uint64_t capUserTimeZero = 0;
    // attr.config bits of the format terms (format/tsc "config:10" -> 0x400): the
    // value 1 written into the term, i.e. the term's lowest bit.
    uint64_t tscBit = 0;        // format/tsc
    uint64_t noretcompBit = 0;  // format/noretcomp
    // How context switches were recorded: 0 not at all, 1 sched:sched_switch
    // tracepoint, 2 attr.context_switch per thread, 3 attr.context_switch CPU-wide.
    uint64_t haveSchedSwitch = 0;
    uint64_t snapshotMode = 0;  // 1: AUX snapshot mode (perf record -S)
    uint64_t perCpuMmaps = 0;   // 1: one AUX ring per CPU (CPU-wide capture), 0: per thread
    uint64_t mtcBit = 0;        // format/mtc, as tscBit
    // Every attr.config bit of format/mtc_period (e.g. "config:14-17" -> 0x3c000).
    uint64_t mtcFreqBits = 0;
    // TSC:CTC ratio from CPUID leaf 0x15: numerator EBX, denominator EAX (0 when absent).
    uint64_t tscCtcRatioN = 0;
    uint64_t tscCtcRatioD = 0;
    uint64_t cycBit = 0;  // format/cyc, as tscBit
    // /sys/bus/event_source/devices/intel_pt/max_nonturbo_ratio (0 when unreadable).
    uint64_t maxNonTurboRatio = 0;
    // The address filter of the intel_pt event as perf --filter takes it
    // ("filter main @ /bin/ls"); empty for none. Written up to its first NUL.
    std::string filter;
    // /sys/bus/event_source/devices/intel_pt/caps/event_trace (0 or 1).
    uint64_t capEventTrace = 0;

    // decode: what the block held; encode: what to write.
    IntelPtInfoLayout layout = IntelPtInfoLayout::EventTrace;
    // decode: words after the last known one (a newer writer's), ignored as perf does.
    size_t unknownTrailingWords = 0;

    bool operator==(const IntelPtInfo&) const = default;
};

// The private block, `info.layout` deep (perf 6.1's full layout by default).
std::vector<uint64_t> encodeIntelPtInfo(const IntelPtInfo& info);
// Reads a block as perf does. Fails, naming the word, on what perf refuses: fewer
// than 10 words, a filter string running past the block or not NUL-terminated.
Expected<IntelPtInfo> decodeIntelPtInfo(std::span<const uint64_t> priv);

// Inputs from a discovered intel_pt PMU: pmuType, tscBit, noretcompBit, mtcBit,
// mtcFreqBits, cycBit (0 for terms the PMU lacks) and capEventTrace.
void setIntelPtPmuFields(IntelPtInfo& info, const PmuInfo& pmu);
// timeShift/timeMult/timeZero/capUserTimeZero from an AUX ring's user page, as
// perf record reads them (all 0 unless the kernel sets cap_user_time_zero).
void setIntelPtTimeFields(IntelPtInfo& info, const perf_event_mmap_page& page);

// ---------------------------------------------------------------- CoreSight

constexpr uint64_t kCsEtmV3Magic = 0x3030303030303030ULL;
constexpr uint64_t kCsEtmV4Magic = 0x4040404040404040ULL;
constexpr uint64_t kCsEteMagic = 0x5050505050505050ULL;
// The header version perf 6.1 writes and the highest it reads.
constexpr uint64_t kCsEtmHeaderVersion = 1;

enum class CsEtmTracer { EtmV3, EtmV4, Ete };

// One CPU's trace unit. Register values as the sysfs files of
// /sys/bus/event_source/devices/cs_etm/cpuN/ give them (hex text), except the two
// perf derives itself (TRCCONFIGR/ETMCR from the event config, the trace ID).
struct CsEtmCpuInfo {
    CsEtmTracer tracer = CsEtmTracer::EtmV4;
    uint64_t cpu = 0;

    // ETMv4 and ETE.
    uint64_t trcconfigr = 0;     // csEtmV4ConfigR(attr.config)
    uint64_t trctraceidr = 0;    // trace ID (perf 6.1: csEtmLegacyTraceId(cpu))
    uint64_t trcidr0 = 0;        // trcidr/trcidr0
    uint64_t trcidr1 = 0;        // trcidr/trcidr1
    uint64_t trcidr2 = 0;        // trcidr/trcidr2
    uint64_t trcidr8 = 0;        // trcidr/trcidr8
    uint64_t trcauthstatus = 0;  // mgmt/trcauthstatus
    uint64_t trcdevarch = 0;     // ETE only: mgmt/trcdevarch
    // ETMv4 and ETE, newer perf only (not read by 6.1): the timestamp source
    // (ts_source). Written when set; 6.1 tolerates it as an extra parameter.
    std::optional<uint64_t> tsSource;

    // ETMv3 / PTM.
    uint64_t etmcr = 0;        // attr.config as is
    uint64_t etmtraceidr = 0;  // trace ID
    uint64_t etmccer = 0;      // mgmt/etmccer
    uint64_t etmidr = 0;       // mgmt/etmidr

    // Parameters after the ones above (a newer writer's), kept in order.
    std::vector<uint64_t> extraParams;

    // The trace ID whichever the tracer.
    uint64_t traceId() const { return tracer == CsEtmTracer::EtmV3 ? etmtraceidr : trctraceidr; }
    bool operator==(const CsEtmCpuInfo&) const = default;
};

struct CsEtmInfo {
    uint64_t headerVersion = kCsEtmHeaderVersion;  // 0, 1 or 2 (see the top of this file)
    uint32_t pmuType = 0;                          // /sys/bus/event_source/devices/cs_etm/type
    uint64_t snapshot = 0;                         // 1: AUX snapshot mode (perf record -S)
    std::vector<CsEtmCpuInfo> cpus;                // one per traced CPU, ascending CPU

    bool operator==(const CsEtmInfo&) const = default;
};

// The private block. Fails on what perf could not read back: a version other than
// 0-2, ETE or extra parameters in a version 0 block, two CPUs sharing a trace ID
// (perf 6.1 refuses the file), more CPUs than 32 bits count.
Expected<std::vector<uint64_t>> encodeCsEtmInfo(const CsEtmInfo& info);
// Reads a block as perf does (a version 1 block with fewer parameters than known
// leaves the rest 0). Fails, naming the word, on an unknown version or magic, a
// block cut short, or words left over after the last CPU.
Expected<CsEtmInfo> decodeCsEtmInfo(std::span<const uint64_t> priv);

// Whether TRCDEVARCH names an ETE (ARCHVER 5, ARCHPART 0xA13), as perf decides.
bool csEtmIsEte(uint64_t trcdevarch);
// TRCCONFIGR as perf 6.1 derives it from the cs_etm event's attr.config
// (cycacc, contextid, contextid2, timestamp, retstack, branch broadcast).
uint64_t csEtmV4ConfigR(uint64_t attrConfig);
// The trace ID perf 6.1 assumes for a CPU (0x10 + 2 * cpu).
uint64_t csEtmLegacyTraceId(unsigned cpu);

const char* csEtmTracerName(CsEtmTracer tracer);  // "ETMv3", "ETMv4", "ETE"

// ---------------------------------------------------------------- Arm SPE
//
// PERF_AUXTRACE_ARM_SPE = 4. Two layouts, told apart by size as perf does:
//   version 1 (perf 6.1 writes and reads only this): exactly 2 words,
//     0 PMU type, 1 per-CPU mmaps.
//   version 2 (newer perf): header 0 version (2), 1 header size in words (4),
//     2 PMU type, 3 number of CPUs; then per CPU: magic 0x1010101010101010,
//     cpu, number of parameters N, then N parameters: MIDR, PMU type of the
//     CPU's SPE (~0 when it has none), caps/min_interval (newer perf appends
//     more, kept in extraParams).
constexpr uint64_t kArmSpeCpuMagic = 0x1010101010101010ULL;

struct ArmSpeCpuInfo {
    uint64_t cpu = 0;
    uint64_t midr = 0;
    uint64_t pmuType = 0;
    uint64_t minInterval = 0;
    size_t params = 3;                  // parameters the block held (N)
    std::vector<uint64_t> extraParams;  // after the three known ones
    bool operator==(const ArmSpeCpuInfo&) const = default;
};

struct ArmSpeInfo {
    uint64_t version = 1;  // 1: the two-word block; 2: header + per-CPU blocks
    uint64_t pmuType = 0;
    uint64_t perCpuMmaps = 0;         // version 1 only
    uint64_t headerWords = 4;         // version 2: the header size word
    std::vector<ArmSpeCpuInfo> cpus;  // version 2 only, in block order
    // MIDR of `cpu` (0 when the block does not say: version 1).
    uint64_t midrOf(int cpu) const;
    bool operator==(const ArmSpeInfo&) const = default;
};

std::vector<uint64_t> encodeArmSpeInfo(const ArmSpeInfo& info);
// Reads a block as perf does. Fails, naming the word, on a block shorter than 2
// words, a version 2 header cut short or with a header size under 4, a CPU
// block with the wrong magic or running past the block, or words left over.
Expected<ArmSpeInfo> decodeArmSpeInfo(std::span<const uint64_t> priv);

}  // namespace auxscope
