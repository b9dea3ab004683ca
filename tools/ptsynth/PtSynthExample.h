// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// auxscope-ptsynth --example: a small Intel PT recording that shows the product
// on a machine without trace hardware. A generated program (PtSynthGenerator,
// with recursion and named functions) runs as one process of four threads on
// three CPUs, written as `perf record -e intel_pt//u -e cpu-clock/period=10000/u -g`
// with context-switch records would write it:
//
//   CPU 0  the main thread (pid = tid), from _start to its exit
//   CPU 1  worker-1, which sleeps now and then (its CPU idles meanwhile)
//   CPU 2  worker-2 and worker-3, taking turns (preempted every 200 us)
//
// Each CPU has its own AUX stream (AUXTRACE records with that cpu, idx = cpu,
// tid -1) encoded by its own PtFlowEncoder: a thread leaving the CPU ends its
// trace with FUP + TIP.PGD (an interrupt), and coming back starts it with TSC +
// TIP.PGE. The sideband is perf's: COMM (exec) and MMAP2 of the program, FORK
// and COMM of each worker, ITRACE_START of each thread on its CPU,
// PERF_RECORD_SWITCH_CPU_WIDE out/in at every switch (the tracking event has
// context_switch set, AUXTRACE_INFO says have_sched_switch 3), PERF_RECORD_AUX
// where an AUX transaction ends (a switch-out, or before perf reads a chunk),
// EXIT of each thread. cpu-clock samples (IDENTIFIER|IP|TID|TIME|CPU|PERIOD|CALLCHAIN) come
// every 10 us of a thread's time on CPU, with the user call chain the kernel
// would take (PERF_CONTEXT_USER, the IP, the return addresses) from the walk
// itself. Records are written in time order.
//
// Virtual time: one TSC tick is one perf nanosecond, and an instruction takes
// kExampleTicksPerInsn ticks. The threads are created before the main thread's
// first traced instruction: the program itself has no clone (the example
// imagines them, each starting at its entry function, thread_main_N).
//
// OUT.truth has the totals and one `thread` line per thread (PtSynthTruth.h).
#include <cstdint>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::ptsynth {

constexpr uint64_t kExampleTicksPerInsn = 8;
constexpr uint64_t kExampleSamplePeriodNs = 10000;

struct ExampleOptions {
    std::string path;  // the perf.data; the program goes beside it (OUT without extension + "-code.elf")
    uint64_t seed = 1;
    std::vector<std::string> cmdline;  // HEADER_CMDLINE
};

struct ExampleSummary {
    std::string elfPath, truthPath;
    unsigned threads = 0, cpus = 0;
    uint64_t instructions = 0, ptBytes = 0, auxRecords = 0, samples = 0, switches = 0, calls = 0;
    uint64_t firstTime = 0, lastTime = 0;  // perf time (ns)
};

Expected<ExampleSummary> writeExample(const ExampleOptions& options);

}  // namespace auxscope::ptsynth
