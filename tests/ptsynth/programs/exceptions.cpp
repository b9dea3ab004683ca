// SPDX-License-Identifier: GPL-3.0-or-later
// C++ exceptions: a function four frames below run_test throws; the frames in
// between hold RAII objects whose destructors run during unwinding (the
// unwinder's landing pads re-enter those frames and _Unwind_Resume leaves them
// again, never by a return); run_test catches. One catch rethrows to an outer
// handler. Everything not inlined (noinline) so every frame is a real call.
#include <cstdio>
#include <stdexcept>

static volatile unsigned destroyed, work;

struct Guard {
    unsigned id;
    explicit Guard(unsigned i) : id(i) {}
    ~Guard() { destroyed = destroyed + id; }
};

__attribute__((noinline)) static void thrower(unsigned n) {
    work = work + n;
    if (n != 0) throw std::runtime_error("ptsynth");
}

__attribute__((noinline)) static void level3(unsigned n) {
    Guard g(3);
    thrower(n);
    work = work + g.id;
}

__attribute__((noinline)) static void level2(unsigned n) {
    Guard g(2);
    level3(n);
    work = work + g.id;
}

__attribute__((noinline)) static void level1(unsigned n) {
    Guard g(1);
    level2(n);
    work = work + g.id;
}

// Catches and rethrows: the handler's frame is left by __cxa_rethrow's unwind.
__attribute__((noinline)) static void rethrower(unsigned n) {
    Guard g(4);
    try {
        level1(n);
    } catch (const std::runtime_error&) {
        work = work + 100;
        throw;
    }
}

extern "C" __attribute__((noinline)) int run_test() {
    unsigned caught = 0;
    for (unsigned i = 1; i <= 3; ++i) {
        try {
            level1(i);
        } catch (const std::runtime_error&) {
            ++caught;
        }
    }
    try {
        rethrower(1);
    } catch (const std::exception&) {
        ++caught;
    }
    level1(0);  // the same frames left by returns, for contrast
    // Guards 1+2+3 left five times (three throws, the rethrow, the return), 4 once.
    return caught == 4 && destroyed == 5 * 6 + 4 ? 0 : 1;
}

int main() {
    const int status = run_test();
    if (status != 0) std::puts("exceptions: wrong count");
    return status;
}
