// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The scaling figures every bench of issue 34 prints beside its measured
// speed-ups, so that a run on a machine with few cores says what 16 cores
// would give:
//   serial fraction s = (wall time of the phases that run on one thread) /
//                       (total wall time) at 1 thread
//   CPU inflation     = process CPU seconds at N threads / at 1 thread
//                       (the same work costing more CPU when spread: memory
//                       traffic, page faults, locks, false sharing)
//   measured speed-up = wall at 1 thread / wall at N threads
//   Amdahl for 16     S16 = 1 / (s + (1 - s) * inflation / 16)
// Process CPU seconds: getrusage(RUSAGE_SELF) user + system, plus the waited-for
// children's (RUSAGE_CHILDREN) where a bench's work runs in child processes
// (decode workers, spans/IsolatedDecode.h).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "LoadAverage.h"

namespace auxscope::bench {

// Process CPU seconds so far (user + system), with the waited-for children's
// when `children`.
// CPU seconds (user + system) of RUSAGE_SELF or RUSAGE_CHILDREN so far.
inline double rusageCpuSeconds(int who) {
    rusage ru{};
    getrusage(who, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

inline double processCpuSeconds(bool children = false) {
    return rusageCpuSeconds(RUSAGE_SELF) + (children ? rusageCpuSeconds(RUSAGE_CHILDREN) : 0.0);
}

// Minor page faults so far (each a page the kernel had to find, zero and map),
// with the waited-for children's when `children`.
inline double processMinorFaults(bool children = false) {
    double n = 0;
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
        if (who == RUSAGE_CHILDREN && !children) continue;
        rusage ru{};
        getrusage(who, &ru);
        n += double(ru.ru_minflt);
    }
    return n;
}

// "1,4,8,16" -> {1, 4, 8, 16}; 0 stands for every core. Empty on a bad list.
inline std::vector<unsigned> parseThreadsList(const std::string& text) {
    std::vector<unsigned> out;
    size_t at = 0;
    while (at <= text.size()) {
        const size_t comma = text.find(',', at);
        const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        char* end = nullptr;
        const unsigned long n = std::strtoul(item.c_str(), &end, 10);
        if (item.empty() || *end || n > 4096) return {};
        out.push_back(unsigned(n));
        if (comma == std::string::npos) break;
        at = comma + 1;
    }
    return out;
}

// --threads-list's value for `program`: the counts, or a message and exit
// status 2 on a bad list.
inline std::vector<unsigned> threadsListOption(const std::string& text, const char* program) {
    std::vector<unsigned> out = parseThreadsList(text);
    if (out.empty()) {
        std::fprintf(stderr, "%s: --threads-list wants counts such as 1,4,8,16, not '%s'\n", program,
                     text.c_str());
        std::exit(2);
    }
    return out;
}

// One phase of a run: its wall seconds, and whether it runs on one thread only
// (whatever the thread count).
struct Phase {
    std::string name;
    double seconds = 0;
    bool serial = false;
};

// One run at `threads` threads.
struct ScalingRun {
    unsigned threads = 1;
    double wallSeconds = 0;
    double cpuSeconds = 0;
    double minorFaults = -1;    // -1: not measured
    std::vector<Phase> phases;  // optional breakdown of wallSeconds
};

inline double amdahl(double serialFraction, double inflation, double cores) {
    const double d = serialFraction + (1 - serialFraction) * inflation / cores;
    return d > 0 ? 1 / d : 0;
}

// Serial fraction from the 1-thread run's phases: the serial phases' wall over
// the total wall. Wall time not covered by any phase counts as serial (it ran
// on the calling thread).
inline double serialFraction(const ScalingRun& one) {
    if (one.wallSeconds <= 0) return 0;
    double parallel = 0;
    for (const Phase& p : one.phases)
        if (!p.serial) parallel += p.seconds;
    if (one.phases.empty()) return 0;
    const double s = (one.wallSeconds - parallel) / one.wallSeconds;
    return s < 0 ? 0 : s > 1 ? 1 : s;
}

// Prints the phases of each run, then for each run at N > 1 threads: measured
// speed-up, CPU inflation, the serial fraction (from the 1-thread run) and the
// Amdahl prediction for 16 cores with that run's inflation. `runs` must start
// with the 1-thread run. `what` names the work ("PT decode (c)").
inline void printScaling(const char* what, const std::vector<ScalingRun>& runs) {
    std::printf("  scaling %s [%s]\n", what, loadAverage().c_str());
    for (const ScalingRun& r : runs) {
        std::printf("    -j %-3u wall %8.3f s  cpu %8.3f s", r.threads, r.wallSeconds, r.cpuSeconds);
        if (r.minorFaults >= 0) std::printf("  page faults %.0f k", r.minorFaults / 1e3);
        if (!r.phases.empty()) {
            std::printf("  phases:");
            for (const Phase& p : r.phases)
                std::printf(" %s%s %.3f", p.name.c_str(), p.serial ? "(serial)" : "", p.seconds);
        }
        std::printf("\n");
    }
    if (runs.empty() || runs.front().threads != 1) {
        std::printf("    no 1-thread run first: no serial fraction, inflation or prediction\n");
        std::fflush(stdout);
        return;
    }
    const ScalingRun& one = runs.front();
    const double s = serialFraction(one);
    std::printf("    serial fraction s = %.4f (1-thread wall of the serial phases / total)\n", s);
    std::printf("    Amdahl S16 with no inflation: %.2fx\n", amdahl(s, 1, 16));
    for (const ScalingRun& r : runs) {
        if (r.threads == 1) continue;
        const double speedUp = r.wallSeconds > 0 ? one.wallSeconds / r.wallSeconds : 0;
        const double inflation = one.cpuSeconds > 0 ? r.cpuSeconds / one.cpuSeconds : 0;
        std::printf(
            "    -j %-3u measured speed-up %.2fx (of %u), CPU inflation %.3f, Amdahl S16 = 1/(s + "
            "(1-s)*infl/16) "
            "= %.2fx (target >= %.1fx)\n",
            r.threads, speedUp, r.threads, inflation, amdahl(s, inflation, 16), 0.8 * 16);
    }
    std::fflush(stdout);
}

}  // namespace auxscope::bench
