// SPDX-License-Identifier: GPL-3.0-or-later
// The shared library of the sampled-stacks test program: samples land here
// through a call across the PLT, and its code lies at a load bias of its own.
#include <math.h>

__attribute__((noinline)) double lib_inner(double x) {
    double s = 0;
    for (int i = 0; i < 2000; ++i)
        s += sqrt(x + i);
    return s;
}

__attribute__((noinline)) double lib_work(double x) {
    return lib_inner(x) + lib_inner(x * 0.5);
}
