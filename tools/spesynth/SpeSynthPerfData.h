// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The perf.data a synthesized Arm SPE trace goes into, shaped like what
// `perf record -e arm_spe_0/ts_enable=1,pa_enable=1/u -a` writes on a Neoverse
// machine, so that perf (6.1 and newer) and auxscope read it as a hardware one:
//
//   attrs     arm_spe_0// (type kSpePmuType, config ts_enable|pa_enable, period
//             1024, sample_type with DATA_SRC and PHYS_ADDR as perf sets them)
//             and a dummy:u tracking event (mmap2, comm, task, context_switch);
//             one id per CPU each
//   records   ID_INDEX, TIME_CONV (the generic timer: kTimerHz; perf converts
//             TIMESTAMP packets with it), AUXTRACE_INFO (arm_spe: the v1 block
//             {PMU type, per-CPU mmaps}, or v2: {2, 4, PMU type, CPUs} then per
//             CPU {0x1010101010101010, cpu, 4, MIDR, PMU type, min interval,
//             event filter}), FORK + COMM per thread, MMAP2 of the program's
//             text and data (the ELF beside the file) and of [heap], [stack] and
//             each other thread's stack (//anon), SWITCH_CPU_WIDE out/in
//             records, per-CPU AUX + AUXTRACE (idx = cpu, tid -1) records holding
//             the packets, EXIT
//   features  the host's (hostname, os release, ...) except ARCH "aarch64",
//             NRCPUS, CPUID (the MIDR as perf writes it: "0x%016x", which is
//             how perf picks the MIDR-dependent data-source meaning), CPUDESC,
//             PMU_MAPPINGS with arm_spe_0, EVENT_DESC, BUILD_ID of the ELF,
//             SAMPLE_TIME (the first and last record's time);
//             no CPU_TOPOLOGY (the host's would not match)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "Result.h"
#include "SpeSynthElf.h"
#include "SpeSynthEncoder.h"
#include "perfdata/PerfDataWriter.h"
#include "spe/SpeRecord.h"

namespace auxscope::spesynth {

constexpr uint32_t kSpePmuType = 8;               // arm_spe_0's type on a typical Neoverse host
constexpr uint64_t kNeoverseN1Midr = 0x413fd0c1;  // Neoverse N1 r3p1
constexpr uint64_t kSpeMinInterval = 1024;        // caps/min_interval
constexpr uint64_t kSpeEventFilter = 0x60aaa;     // caps/event_filter (v2 metadata)
// arm_spe format bits (sysfs format/: ts_enable config:0, pa_enable config:1).
constexpr uint64_t kSpeTsEnable = 1ull << 0;
constexpr uint64_t kSpePaEnable = 1ull << 1;

// The generic timer's counter to perf time, as the kernel publishes it in the
// ring's user page and perf writes it in TIME_CONV: a 24 MHz counter.
struct SpeTimeConv {
    uint16_t shift = 24;
    uint32_t mult = 699050667;  // 1e9 / 24e6 * 2^24, rounded
    uint64_t zero = 1000000;
    // perf's tsc_to_perf_time() (no cap_user_time_short).
    uint64_t perfTime(uint64_t ticks) const {
        const uint64_t quot = ticks >> shift, rem = ticks & ((uint64_t(1) << shift) - 1);
        return zero + quot * mult + ((rem * mult) >> shift);
    }
};

struct SpeThread {
    int32_t pid = 0, tid = 0;
    std::string comm;
    uint64_t stackStart = 0, stackEnd = 0;  // [stack] for the main thread, //anon for others
};

struct SpeProcess {
    int32_t pid = 0;
    std::string comm;
    uint64_t heapStart = 0, heapEnd = 0;
    std::vector<SpeThread> threads;  // threads[0] is the main thread (tid == pid)
};

struct SpeFileOptions {
    std::string path;
    int cpus = 1;
    int infoVersion = 1;  // AUXTRACE_INFO layout: 1 or 2
    uint64_t midr = kNeoverseN1Midr;
    SpeTimeConv timeConv;
    size_t auxChunkBytes = 256 << 10;  // an AUX record once a CPU holds this much
    std::vector<std::string> cmdline;  // HEADER_CMDLINE
};

class SpePerfDataWriter {
public:
    // Writes the header, ID_INDEX, TIME_CONV, AUXTRACE_INFO and, at `startTick`,
    // each process's FORK, COMM and MMAP2 records (the ELF's two mappings, heap,
    // stacks).
    static Expected<std::unique_ptr<SpePerfDataWriter>> create(const SpeFileOptions& options,
                                                               const WrittenElf& elf,
                                                               const std::vector<SpeProcess>& processes,
                                                               uint64_t startTick);
    ~SpePerfDataWriter();

    struct Task {
        int32_t pid = 0, tid = 0;  // 0/0: idle
        bool operator==(const Task&) const = default;
    };
    // The CPU switches from `prev` to `next`: SWITCH_CPU_WIDE out (at `tick`,
    // about prev, naming next) and in (at tick + 1, about next, naming prev).
    Expected<void> contextSwitch(uint64_t tick, int cpu, Task prev, Task next);
    // Appends the record's packets to its CPU's AUX data.
    void record(const spe::SpeRecord& r, const SpeEncodeStyle& style);
    // Writes AUX + AUXTRACE records (at `tick`) for every CPU that holds at least
    // the chunk size, or any data when `all`. Each chunk is padded with PAD
    // bytes to a multiple of 64, as the kernel's driver pads the buffer.
    Expected<void> flushAux(uint64_t tick, bool all = false);
    // Flushes, writes every thread's EXIT at `endTick`, the features and the header.
    Expected<void> finish(uint64_t endTick);

    uint64_t auxBytes() const { return auxBytes_; }
    uint64_t padBytes() const { return padBytes_; }

private:
    SpePerfDataWriter() = default;
    SampleIdSpec speId(int cpu) const;
    SampleIdSpec trackId(int cpu) const;
    uint64_t perfTime(uint64_t tick) const { return options_.timeConv.perfTime(tick); }

    SpeFileOptions options_;
    WrittenElf elf_;
    std::vector<SpeProcess> processes_;
    std::unique_ptr<PerfDataWriter> writer_;
    std::vector<PerfDataEventAttr> attrs_;
    std::vector<std::vector<uint8_t>> pending_;  // per CPU
    std::vector<uint64_t> auxOffset_;            // per CPU
    std::vector<Task> current_;                  // per CPU
    uint64_t auxBytes_ = 0, padBytes_ = 0;
    uint64_t firstTime_ = UINT64_MAX, lastTime_ = 0;  // of the records with a timestamp (HEADER_SAMPLE_TIME)
};

}  // namespace auxscope::spesynth
