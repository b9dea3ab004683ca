// SPDX-License-Identifier: GPL-3.0-or-later
// A tiny static, position-dependent program for the SPE sample tests
// (tests/samples/SpeSamplesTest.cpp): functions whose PCs SPE records name,
// and globals (STT_OBJECT in .data and .bss) their data addresses fall in.
// Never run; only its symbols are read.
long spe_counters[64] = {1};
char spe_buffer[8192];

long spe_load_loop(long n) {
    long s = 0;
    for (long i = 0; i < n; ++i)
        s += spe_counters[i & 63] + spe_buffer[i & 8191];
    return s;
}

void spe_store_loop(long n) {
    for (long i = 0; i < n; ++i)
        spe_buffer[i & 8191] = (char)i;
}

void main(void) {
    spe_store_loop(10);
    spe_load_loop(10);
    for (;;) {
    }
}
