// SPDX-License-Identifier: GPL-3.0-or-later
// Recursion: naive Fibonacci (calls and compressed returns nest deeply).
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned fib(unsigned n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char** argv) {
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 12;
    unsigned r = fib(n);
    return (int)(r & 0x7f);
}
