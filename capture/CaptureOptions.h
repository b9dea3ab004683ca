// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "CallGraphConfig.h"

namespace auxscope {

enum class TargetKind {
    SystemWide,  // every online CPU, every task
    CpuList,     // the given CPUs, every task
    Process,     // the threads of an existing process (and what they spawn), on every CPU
    Command,     // a command auxscope launches, traced from its first instruction
};

// Data ring size per CPU when none is given: large enough that a syscall storm
// (one tracepoint sample per syscall on a busy core) drains without loss here.
// It also holds --call-graph dwarf (~8.5 KiB per sample, 32 MiB/s per busy CPU
// at 4000 Hz) without loss: system-wide, both CPUs busy, 5 s into a file, the
// peak fill was 20% (with -m 128, perf's 512 KiB, 36%; perf record itself lost
// 28 samples there), so dwarf gets no larger default. Larger stack copies
// (dwarf,65528: ~490 MB/s here) are bounded by the disk, not by the ring
// (no loss without -o, heavy loss with it).
constexpr size_t kDefaultDataPages = 2048;  // 8 MiB with 4 KiB pages
// perf record's own default for root (512 KiB), for comparisons.
constexpr size_t kPerfDefaultDataPages = 128;
// AUX area per CPU when none is given: perf's default for a privileged Intel PT
// capture (4 MiB), in both full-trace and snapshot mode.
constexpr size_t kDefaultAuxPages = 1024;

struct CaptureOptions {
    TargetKind target = TargetKind::SystemWide;
    std::vector<int> cpus;             // CpuList
    pid_t pid = -1;                    // Process
    std::vector<std::string> command;  // Command: argv
    // Command: run it as this user (uid, with its groups, environment and home as
    // working directory unless commandCwd names one), not as the capturing process.
    // The privileged capture helper sets it to the user it serves.
    std::optional<uid_t> commandUser;
    std::string commandCwd;
    // -e specifications; empty means the default set (cpu-clock sampling). Context
    // switches, MMAP2, COMM and task records always come from a tracking event.
    std::vector<std::string> events;
    size_t dataPages = kDefaultDataPages;  // per CPU, rounded up to a power of two
    uint64_t sampleFreq = 4000;            // Hz for counting events without period/freq
    bool contextSwitches = true;
    // Call stacks on every sampling event's samples (-g, --call-graph; see
    // CallGraphConfig.h). The GUI's choice sets this field; the helper takes it as
    // the Start key call-graph (formatCallGraph's spelling).
    CallGraphOptions callGraph;
    double durationSeconds = 0;  // 0: until stopped or until the launched command exits
    unsigned publishHz = 20;     // statistics publish rate (>= 10)
    // Run the drain thread SCHED_FIFO (like perf record -r) where permitted, so it
    // is never kept waiting behind the workload it traces.
    bool realtimeDrain = true;

    // AUX-area trace (an -e event on intel_pt, cs_etm, arm_spe or intel_bts).
    size_t auxPages = kDefaultAuxPages;  // per CPU, a power of two
    // Full: every byte (the event stops when the area fills; the drain thread
    // re-enables it). Snapshot: flight recorder, the hardware overwrites and a
    // trigger copies the newest bytes.
    bool auxSnapshot = false;
    uint64_t snapshotBytes = 0;  // newest bytes per snapshot; 0: the whole AUX area
    // Sideband flight recorder (perf record --overwrite): every event writes
    // backward into a read-only data ring that the kernel overwrites; records
    // reach the consumers only at snapshots (requestSnapshot, SIGUSR2, the control
    // FIFO) and at stop. Not combinable with an AUX event.
    bool overwrite = false;
    // The AUX event starts paused (aux_start_paused, Linux 6.13): the triggers of
    // --trigger-mode pause resume and pause it (see AuxPause.h).
    bool auxStartPaused = false;
    // Address filters in perf's --filter syntax ("filter main @ /bin/ls"), applied to the AUX event.
    std::string auxFilter;

    // Whether snapshot triggers (button, SIGUSR2, control FIFO) mean anything:
    // an AUX flight recorder or a sideband one.
    bool takesSnapshots() const { return auxSnapshot || overwrite; }
};

std::string describeTarget(const CaptureOptions& o);

}  // namespace auxscope
