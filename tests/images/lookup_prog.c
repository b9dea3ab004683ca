// SPDX-License-Identifier: GPL-3.0-or-later
// The image look-up tests' program (tests/images/image_lookup_tests.cmake):
// built with -g, then split into a stripped copy (names only in .dynsym, a
// .gnu_debuglink) and its debug file, and built once more as "another build"
// (LOOKUP_OTHER_BUILD: another build-id) for the build-id checks. With an
// argument MS it spins that many milliseconds in lookup_beta and lookup_alpha
// (for perf record); without, it returns at once.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef LOOKUP_OTHER_BUILD
#define LOOKUP_SCALE 5
#else
#define LOOKUP_SCALE 3
#endif

volatile int lookup_sink;

__attribute__((noinline)) int lookup_alpha(int x) {
    int y = x * LOOKUP_SCALE;
    y += 1;
    return y;
}

__attribute__((noinline)) int lookup_beta(int x) {
    int sum = 0;
    for (int i = 0; i < x; ++i)
        sum += lookup_alpha(i);
    return sum;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
    if (argc < 2) return lookup_beta(argc) == 0;
    const double end = now_ms() + atof(argv[1]);
    while (now_ms() < end)
        lookup_sink = lookup_beta(100000);
    printf("%d\n", lookup_sink);
    return 0;
}
