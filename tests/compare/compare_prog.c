// SPDX-License-Identifier: GPL-3.0-or-later
// The program `auxscope compare` is tested on: built twice, once with
// COMPARE_SLOW=2, which makes slow_part do twice the work; fixed_part is the
// same in both builds. Recorded by perf record -e cpu-clock, each build's
// per-symbol samples are what perf diff compares.
#include <stdint.h>
#include <stdlib.h>

#ifndef COMPARE_SLOW
#define COMPARE_SLOW 1
#endif

volatile uint64_t compare_sink;

__attribute__((noinline)) void slow_part(unsigned n) {
    uint64_t x = 1;
    for (unsigned i = 0; i < n * COMPARE_SLOW; ++i)
        x = x * 6364136223846793005ull + i;
    compare_sink = x;
}

__attribute__((noinline)) void fixed_part(unsigned n) {
    uint64_t x = 1;
    for (unsigned i = 0; i < n; ++i)
        x = x * 2862933555777941757ull + i;
    compare_sink = x;
}

int main(int argc, char** argv) {
    const unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 100;
    for (unsigned r = 0; r < rounds; ++r) {
        slow_part(1000000);
        fixed_part(1000000);
    }
    return 0;
}
