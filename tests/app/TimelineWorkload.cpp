// SPDX-License-Identifier: GPL-3.0-or-later
// The workload the sideband-timeline tests capture (tests/app/TimelineSidebandTest.cpp):
//   tl_workload spin MS   two threads named "tl-spin-a" and "tl-spin-b" spin in
//                          tl_spin_a() / tl_spin_b() for MS milliseconds each while
//                          the main thread waits for them;
//   tl_workload storm MS CPU   pins itself to CPU and makes close(-1) syscalls for MS
//                          milliseconds (a tiny ring under raw_syscalls loses records).
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

std::chrono::milliseconds g_duration{500};
volatile unsigned long g_sink;

bool over(std::chrono::steady_clock::time_point start) {
    return std::chrono::steady_clock::now() - start >= g_duration;
}

}  // namespace

extern "C" __attribute__((noinline)) void tl_spin_a() {
    const auto start = std::chrono::steady_clock::now();
    unsigned long x = 1;
    while (!over(start))
        for (int i = 0; i < 10000; ++i)
            x = x * 6364136223846793005ul + 1442695040888963407ul;
    g_sink = x;
}

extern "C" __attribute__((noinline)) void tl_spin_b() {
    const auto start = std::chrono::steady_clock::now();
    unsigned long x = 3;
    while (!over(start))
        for (int i = 0; i < 10000; ++i)
            x = x * 2862933555777941757ul + 3037000493ul;
    g_sink = x;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s spin MS | storm MS CPU\n", argv[0]);
        return 2;
    }
    g_duration = std::chrono::milliseconds(std::atoi(argv[2]));
    if (std::strcmp(argv[1], "spin") == 0) {
        std::thread a([] {
            pthread_setname_np(pthread_self(), "tl-spin-a");
            tl_spin_a();
        });
        std::thread b([] {
            pthread_setname_np(pthread_self(), "tl-spin-b");
            tl_spin_b();
        });
        a.join();
        b.join();
        return 0;
    }
    if (std::strcmp(argv[1], "storm") == 0 && argc >= 4) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(std::atoi(argv[3]), &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            std::perror("sched_setaffinity");
            return 1;
        }
        const auto start = std::chrono::steady_clock::now();
        while (!over(start))
            for (int i = 0; i < 1000; ++i)
                close(-1);
        return 0;
    }
    std::fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
