// SPDX-License-Identifier: GPL-3.0-or-later
// Workload for the perf.data writer tests: burns CPU in its own code (so cpu-clock
// samples land in this binary) and makes a system call every few microseconds
// (so raw_syscalls:* has something to record). Usage: writer_spin [milliseconds]
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace {

volatile uint64_t gSink;

__attribute__((noinline)) uint64_t spinWork(uint64_t x) {
    for (int i = 0; i < 20000; ++i)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

double now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
    const double ms = argc > 1 ? std::atof(argv[1]) : 300;
    const double end = now() + ms / 1000;
    uint64_t x = 1;
    while (now() < end) {
        x = spinWork(x);
        gSink = uint64_t(syscall(SYS_getppid));
    }
    gSink = x;
    return 0;
}
