// SPDX-License-Identifier: GPL-3.0-or-later
// The image look-up tests' program (tests/images/image_lookup_tests.cmake):
// built with -g, then split into a stripped copy (names only in .dynsym, a
// .gnu_debuglink) and its debug file, and built once more as "another build"
// (LOOKUP_OTHER_BUILD: another build-id) for the build-id checks. Never run.
#include <stdio.h>

#ifdef LOOKUP_OTHER_BUILD
#define LOOKUP_SCALE 5
#else
#define LOOKUP_SCALE 3
#endif

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

int main(int argc, char** argv) {
    (void)argv;
    printf("%d\n", lookup_beta(argc));
    return 0;
}
