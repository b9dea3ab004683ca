// SPDX-License-Identifier: GPL-3.0-or-later
// A dense switch (a jump table: an indirect jump) and calls through a table of
// function pointers (indirect calls), driven by a small pseudo-random sequence.
#include <stdlib.h>

typedef unsigned (*op_fn)(unsigned);

__attribute__((noinline)) static unsigned op_add(unsigned x) {
    return x + 7;
}
__attribute__((noinline)) static unsigned op_mul(unsigned x) {
    return x * 3;
}
__attribute__((noinline)) static unsigned op_xor(unsigned x) {
    return x ^ 0x5a5a;
}
__attribute__((noinline)) static unsigned op_rot(unsigned x) {
    return (x << 5) | (x >> 27);
}

static op_fn const ops[4] = {op_add, op_mul, op_xor, op_rot};
static volatile unsigned sink;

__attribute__((noinline)) static unsigned dispatch(unsigned state, unsigned k) {
    switch (k % 9) {
        case 0:
            return state + 1;
        case 1:
            return state * 5;
        case 2:
            return state ^ 0x1234;
        case 3:
            return state - 99;
        case 4:
            return state >> 3;
        case 5:
            return state << 2;
        case 6:
            return ~state;
        case 7:
            return state | 0x101;
        default:
            return state & 0xfff0f;
    }
}

int main(int argc, char** argv) {
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 200;
    unsigned state = 12345;
    for (unsigned i = 0; i < rounds; ++i) {
        state = state * 1103515245u + 12345u;
        state = dispatch(state, state >> 16);
        state = ops[(state >> 8) & 3](state);
    }
    sink = state;
    return 0;
}
