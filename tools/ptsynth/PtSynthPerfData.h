// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The perf.data a synthesized Intel PT trace goes into, shaped like what
// `perf record -e intel_pt//u -- CMD` writes on a per-CPU capture, so that perf
// script and auxscope decode it like a hardware one:
//
//   attrs     intel_pt//u (type kPmuType, config: pt, branch, tsc, mtc,
//             mtc_period, noretcomp when returns are not compressed) and a
//             dummy:u tracking event (mmap2, comm, task); ids 1 and 2, both with
//             sample_type IDENTIFIER|IP|TID|TIME|CPU and sample_id_all
//   records   ID_INDEX, TIME_CONV, AUXTRACE_INFO (Intel PT block, per-CPU
//             mmaps, TSC:CTC ratio), COMM, ITRACE_START, MMAP2 for every
//             executable mapping (at the time it appeared), AUXTRACE chunks
//             (cpu 0, idx 0, the traced tid), EXIT
//   features  the host's (hostname, os release, ...) except CPUID and CPUDESC,
//             which name a Skylake-SP ("GenuineIntel,6,85,4": libipt and perf
//             choose their errata workarounds from it), PMU_MAPPINGS with
//             intel_pt, EVENT_DESC, BUILD_ID of the mapped files, AUXTRACE
//
// Time: TSC ticks are perf nanoseconds (time_shift 31, time_mult 2^31,
// time_zero 0), so perf time == virtual TSC.
#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "PtSynthEncoder.h"
#include "Result.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::ptsynth {

constexpr uint32_t kPmuType = 10;  // a PMU type the host does not use
constexpr const char* kCpuId = "GenuineIntel,6,85,4";

// intel_pt format bits (Skylake's sysfs format/ files).
constexpr uint64_t kConfigPt = 1ull << 0;
constexpr uint64_t kConfigCyc = 1ull << 1;
constexpr uint64_t kConfigMtc = 1ull << 9;
constexpr uint64_t kConfigTsc = 1ull << 10;
constexpr uint64_t kConfigNoRetComp = 1ull << 11;
constexpr uint64_t kConfigBranch = 1ull << 13;
constexpr unsigned kConfigMtcPeriodShift = 14;  // config:14-17

struct PtSynthFileOptions {
    std::string path;
    int32_t pid = 0, tid = 0;
    std::string comm;
    std::vector<std::string> cmdline;  // HEADER_CMDLINE
    PtEncoderOptions encoder;          // what the AUXTRACE_INFO and config describe
};

struct PtSynthMapping {
    uint64_t start = 0, end = 0, pgoff = 0;
    uint32_t major = 0, minor = 0;
    uint64_t inode = 0;
    uint32_t prot = 0, flags = 0;
    std::string path;
};

// A user-space event as perf record sets one up: sampling `sampleType` every
// `period`, sample_id_all, disabled until exec; no ids yet.
PerfDataEventAttr userEventAttr(const std::string& name, uint32_t type, uint64_t config, uint64_t sampleType,
                                uint64_t period = 1);

// The two events of a user-space AUX trace recording as perf sets them up: the
// AUX event (`name`, PMU `type`, `config`, ids {traceId}) and the dummy event
// that tracks mmaps, comms and tasks (ids {trackingId}); both sample
// `sampleType` with sample_id_all, user only, enabled on exec.
std::vector<PerfDataEventAttr> userAuxTraceAttrs(const std::string& name, uint32_t type, uint64_t config,
                                                 uint64_t sampleType, uint64_t traceId, uint64_t trackingId);

// The TIME_CONV and AUXTRACE_INFO every synthesized Intel PT file carries: perf
// time == virtual TSC (time_shift 31, time_mult 2^31, time_zero 0), Skylake's
// intel_pt format bits, per-CPU mmaps, the encoder's TSC:CTC ratio and CBR.
// `haveSchedSwitch`: 0 without context-switch records, 3 with CPU-wide ones.
perf_event_mmap_page synthTimeConv();
IntelPtInfo synthIntelPtInfo(const PtEncoderOptions& encoder, uint32_t haveSchedSwitch);

class PtSynthPerfData {
public:
    static Expected<std::unique_ptr<PtSynthPerfData>> create(const PtSynthFileOptions& options);

    // perf time of a virtual TSC value.
    static uint64_t perfTime(uint64_t tsc) { return tsc; }

    Expected<void> comm(uint64_t tsc);
    Expected<void> mmap2(const PtSynthMapping& map, uint64_t tsc);
    // The kernel's map as perf record synthesizes it: PERF_RECORD_MMAP, cpumode
    // kernel, pid -1, named "[kernel.kallsyms]" + the reference symbol ("_text"),
    // pgoff = that symbol's runtime address. A non-empty `buildId` goes into
    // HEADER_BUILD_ID as the kernel's.
    Expected<void> kernelMmap(uint64_t start, uint64_t length, uint64_t refAddress, uint64_t tsc,
                              const std::string& refSymbol = "_text", std::vector<uint8_t> buildId = {});
    // One AUXTRACE record. `referenceTsc` goes into its reference field, as perf
    // record puts the TSC at the time it read the AUX area there: perf's decoder
    // takes the upper bits of 7-byte TSC packets from it and ignores TSC
    // packets without it.
    Expected<void> auxtrace(std::span<const uint8_t> chunk, uint64_t referenceTsc);
    Expected<void> exit(uint64_t tsc);
    // Features (BUILD_ID for the files of every MMAP2 written) and the header.
    Expected<void> finish();

    uint64_t auxBytes() const { return auxOffset_; }
    const std::string& path() const { return options_.path; }

private:
    explicit PtSynthPerfData(const PtSynthFileOptions& o) : options_(o) {}
    SampleIdSpec trackingId() const;
    SampleIdSpec ptId() const;

    PtSynthFileOptions options_;
    std::unique_ptr<PerfDataWriter> writer_;
    std::vector<PerfDataEventAttr> attrs_;
    std::vector<std::string> mappedFiles_;
    std::vector<uint8_t> kernelBuildId_;
    uint64_t auxOffset_ = 0;
    uint64_t chunks_ = 0;
};

}  // namespace auxscope::ptsynth
