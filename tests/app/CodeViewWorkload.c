// SPDX-License-Identifier: GPL-3.0-or-later
// The code view test's workload (tests/app/RangeAnalysisTest.cpp): a loop in a
// function of its own, compiled with debug information, traced by
// auxscope-ptsynth in step mode from main. Its lines are what the source pane
// shows with counts.
volatile unsigned long cv_sink;

__attribute__((noinline)) unsigned long cv_hot(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; ++i) {
        if (i % 3 == 0)
            x = x * 6364136223846793005ul + 1;
        else
            x ^= x >> 7;
    }
    return x;
}

int main(void) {
    for (int k = 0; k < 20; ++k)
        cv_sink += cv_hot(50);
    return 0;
}
