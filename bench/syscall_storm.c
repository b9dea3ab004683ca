// SPDX-License-Identifier: GPL-3.0-or-later
// syscall_storm: the seed benchmark's workload. Calls close(-1) N times (argv[1],
// default 3,000,000), i.e. 2N raw_syscalls records (sys_enter + sys_exit) under a
// tracer, and almost no other system calls.
//
// The very first thing main does is read CLOCK_MONOTONIC through the vDSO (no system
// call), so that timestamp marks the moment just before the workload's first system
// call; bench_record subtracts its own launch timestamp from it to get the tracer's
// start-up cost. After the loop, and only then, the result goes to the file named by
// $AUXSCOPE_BENCH_OUT (when set) as one line:
//   main_ns=<CLOCK_MONOTONIC at main> loop_ns=<loop duration> calls=<N> cpu_ns=<own user+sys time>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static long long nowNs(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long timevalNs(struct timeval tv) {
    return (long long)tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
}

int main(int argc, char** argv) {
    const long long mainNs = nowNs();

    long calls = 3000000;
    if (argc > 1) {
        char* end = NULL;
        calls = strtol(argv[1], &end, 10);
        if (*argv[1] == '\0' || *end != '\0' || calls < 0) {
            fprintf(stderr, "usage: %s [calls]\n", argv[0]);
            return 2;
        }
    }

    const long long loopStart = nowNs();
    for (long i = 0; i < calls; ++i)
        close(-1);
    const long long loopNs = nowNs() - loopStart;

    const char* outPath = getenv("AUXSCOPE_BENCH_OUT");
    if (outPath == NULL || *outPath == '\0') return 0;

    struct rusage self;
    getrusage(RUSAGE_SELF, &self);
    const long long cpuNs = timevalNs(self.ru_utime) + timevalNs(self.ru_stime);

    char line[160];
    int len = snprintf(line, sizeof line, "main_ns=%lld loop_ns=%lld calls=%ld cpu_ns=%lld\n", mainNs, loopNs,
                       calls, cpuNs);
    int fd = open(outPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(outPath);
        return 1;
    }
    int ok = write(fd, line, (size_t)len) == len;
    if (close(fd) != 0) ok = 0;
    if (!ok) {
        fprintf(stderr, "%s: write failed: %d\n", outPath, errno);
        return 1;
    }
    return 0;
}
