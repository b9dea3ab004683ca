// SPDX-License-Identifier: GPL-3.0-or-later
// A 32-bit (i386) program for the unwinder's ABI_32 path: a 32-bit task on an
// x86_64 kernel records PERF_SAMPLE_REGS_ABI_32 registers in the x86_64 bit
// layout. Freestanding (no 32-bit libc needed to build it): _start -> hot32 ->
// mid32 (recursive, depth 3) -> leaf32, then exit(0) by int $0x80. _start's CFI
// marks the return address undefined, as glibc's _start does: the outermost frame.
static volatile double sink;

__attribute__((noinline)) double leaf32(double x) {
    double s = 0;
    for (int i = 0; i < 2000; ++i)
        s += x * i / (i + 1.0);
    return s;
}

__attribute__((noinline)) double mid32(double x, int depth) {
    if (depth > 0) return mid32(x + 1, depth - 1) + 1;
    return leaf32(x);
}

__attribute__((noinline)) void hot32(double x) {
    sink += mid32(x, 3);
}

void _start(void) {
    __asm__ volatile(".cfi_undefined %eip");
    for (long n = 0; n < 100000; ++n)
        hot32(n);
    __asm__ volatile("movl $1, %%eax; xorl %%ebx, %%ebx; int $0x80" ::: "eax", "ebx");
}
