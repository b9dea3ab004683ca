// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Synthesizes the records perf record writes for what existed before the
// capture started, from /proc: FORK + COMM for every thread, MMAP2 for every
// executable mapping, and the kernel's own MMAP ("[kernel.kallsyms]_text", pid
// -1, from /proc/kallsyms). Without them perf's tools cannot name the threads or
// resolve the addresses of anything that was running already.
//
// The records carry timestamp 0 and a sample_id trailer naming the given event
// (normally the capture's tracking event), so readers attribute them like the
// kernel's own side-band records.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "Result.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope {

struct ProcSynthCounts {
    uint64_t processes = 0;
    uint64_t threads = 0;
    uint64_t comm = 0;
    uint64_t fork = 0;
    uint64_t mmap = 0;   // kernel
    uint64_t mmap2 = 0;  // user-space executable maps
};

class ProcSynth {
public:
    using Emit = std::function<Expected<void>(std::span<const uint8_t> record)>;
    ProcSynth(SampleIdSpec idSpec, Emit out, std::string procRoot = "/proc")
        : spec_(idSpec), emit_(std::move(out)), proc_(std::move(procRoot)) {}

    // The kernel text map. Returns false (and says why in `note`) when
    // /proc/kallsyms hides the addresses or lacks _text/_stext.
    Expected<bool> kernelMmap(std::string* note = nullptr);
    // FORK + COMM for every thread of process `pid`, then MMAP2 for its executable
    // maps when `withMaps`. A process that vanished meanwhile is skipped.
    Expected<void> process(pid_t pid, bool withMaps = true);
    // COMM only: a launched command stopped before its exec has no maps of its own yet.
    Expected<void> commOnly(pid_t pid);
    // process() for every process in /proc.
    Expected<void> allProcesses();

    const ProcSynthCounts& counts() const { return counts_; }

private:
    Expected<void> comm(pid_t pid, pid_t tid, const std::string& name);
    Expected<void> fork(pid_t pid, pid_t ppid, pid_t tid, pid_t ptid);
    Expected<void> maps(pid_t pid);

    SampleIdSpec spec_;
    Emit emit_;
    std::string proc_;
    ProcSynthCounts counts_;
    std::string scratch_;
};

}  // namespace auxscope
