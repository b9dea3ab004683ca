// SPDX-License-Identifier: GPL-3.0-or-later
// The traced program of the trigger tests and bench_trigger.
//   trigger_prog calls [THREADS [CALLS [SLOW_EVERY [SLOW_MS]]]]
//     THREADS workers (8) call handle() CALLS times in all (100000, shared
//     evenly); the calls are numbered across all threads (an atomic counter) and
//     every SLOW_EVERY'th (5000) sleeps SLOW_MS (7) ms inside handle(): 20 slow
//     calls by default, about 100 ms apart, so they never overlap. Each worker
//     sleeps 2 ms every 10 calls, so that the workers keep well under the CPUs
//     (a uprobe hit costs microseconds in a VM): a fast call is then hardly ever
//     preempted for milliseconds. Prints "slow N" at the end.
//   trigger_prog sleeps [THREADS [SLEEPS [SLOW_EVERY]]]
//     THREADS workers (4) each call clock_nanosleep SLEEPS times (50): 1 ms, and
//     every SLOW_EVERY'th (10) sleep of a thread 15 ms.
//   trigger_prog rate CALLS
//     one thread calls handle() CALLS times as fast as it can; prints the seconds
//     (and writes them to $TRIGGER_PROG_REPORT).
//   trigger_prog marker N
//     calls auxscope_trigger() N times, 20 ms apart.
//   trigger_prog wakelat [ROUNDS [BUSY_MS]]
//     wake-up latency on demand, every thread pinned to one CPU: a SCHED_FIFO
//     "hog" thread wakes the thread "late" (a pipe write), spins BUSY_MS (12)
//     ms, so that "late" cannot run, then wakes "prompt" and sleeps 20 ms: each
//     round, "late" waits BUSY_MS for the CPU, "prompt" hardly at all. The
//     report has a line per wake-up (call = round, slow 1 for "late", 2 where it
//     was not blocked in read() yet when woken, ns = from before the write to
//     after the read). Exits 77 when it may not use
//     SCHED_FIFO or pin itself.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_long g_calls;
static atomic_long g_slow;
static long g_perThread = 100000, g_slowEvery = 5000, g_slowMs = 7, g_sleeps = 50;
static volatile long g_sink;

static void sleepMs(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0) {
    }
}

static void sleepUs(long us) {
    struct timespec ts = {0, us * 1000L};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

__attribute__((noinline)) void handle(long n, int slow) {
    g_sink += n;
    if (slow) sleepMs(g_slowMs);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void auxscope_trigger(void) {
    __asm__ volatile("" ::: "memory");
}

static double now(void);
static FILE* g_report;  // TRIGGER_PROG_REPORT: a line per call that took over 4 ms
static pthread_mutex_t g_reportLock = PTHREAD_MUTEX_INITIALIZER;

static void* callsWorker(void* arg) {
    (void)arg;
    const long tid = (long)syscall(SYS_gettid);
    for (long i = 0; i < g_perThread; ++i) {
        if (i % 10 == 0) sleepUs(2000);
        const long k = atomic_fetch_add(&g_calls, 1) + 1;
        const int slow = k % g_slowEvery == 0;
        if (slow) atomic_fetch_add(&g_slow, 1);
        const double t0 = now();
        handle(k, slow);
        const double t1 = now();
        // The calls slower than 4 ms, meant to be or not (preempted): what a
        // trigger may fire on, with the CLOCK_MONOTONIC time of the return.
        if (g_report && t1 - t0 > 0.004) {
            pthread_mutex_lock(&g_reportLock);
            fprintf(g_report, "call %ld tid %ld slow %d ns %lld end %lld\n", k, tid, slow,
                    (long long)((t1 - t0) * 1e9), (long long)(t1 * 1e9));
            pthread_mutex_unlock(&g_reportLock);
        }
    }
    return NULL;
}

static void* sleepsWorker(void* arg) {
    (void)arg;
    const long tid = (long)syscall(SYS_gettid);
    for (long i = 1; i <= g_sleeps; ++i) {
        const int slow = i % g_slowEvery == 0;
        if (slow) atomic_fetch_add(&g_slow, 1);
        const double t0 = now();
        sleepMs(slow ? 15 : 1);
        const double t1 = now();
        if (g_report && t1 - t0 > 0.004) {
            pthread_mutex_lock(&g_reportLock);
            fprintf(g_report, "call %ld tid %ld slow %d ns %lld end %lld\n", i, tid, slow,
                    (long long)((t1 - t0) * 1e9), (long long)(t1 * 1e9));
            pthread_mutex_unlock(&g_reportLock);
        }
    }
    return NULL;
}

// wakelat
static int g_pipes[2][2];  // [0]: late, [1]: prompt
static long g_rounds = 20, g_busyMs = 12;
static _Atomic double g_wokenAt[2];

static void* wakeeWorker(void* arg) {
    const int which = (int)(long)arg;
    const long tid = (long)syscall(SYS_gettid);
    char c;
    for (long r = 1; r <= g_rounds; ++r) {
        const double t0 = now();
        if (read(g_pipes[which][0], &c, 1) != 1) return NULL;
        const double t1 = now();
        // slow 2: "late" was not yet waiting when it was woken (the machine kept
        // it from reaching read() for a round): no wake-up, nothing to fire on.
        const int slow = which == 0 ? (t0 > g_wokenAt[which] ? 2 : 1) : 0;
        if (g_report) {
            pthread_mutex_lock(&g_reportLock);
            fprintf(g_report, "call %ld tid %ld slow %d ns %lld end %lld\n", r, tid, slow,
                    (long long)((t1 - g_wokenAt[which]) * 1e9), (long long)(t1 * 1e9));
            pthread_mutex_unlock(&g_reportLock);
        }
    }
    return NULL;
}

static void wake(int which) {
    g_wokenAt[which] = now();
    if (write(g_pipes[which][1], "x", 1) != 1) abort();
}

static int wakelat(void) {
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return 77;
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed))
        ++cpu;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {  // inherited by the threads
        fprintf(stderr, "wakelat: cannot pin to cpu %d: %s\n", cpu, strerror(errno));
        return 77;
    }
    for (int i = 0; i < 2; ++i)
        if (pipe(g_pipes[i]) != 0) return 3;
    pthread_t wakees[2];
    for (long i = 0; i < 2; ++i)
        pthread_create(&wakees[i], NULL, wakeeWorker, (void*)i);
    const struct sched_param fifo = {.sched_priority = 1};
    const int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
    if (err != 0) {
        fprintf(stderr, "wakelat: no SCHED_FIFO: %s\n", strerror(err));
        return 77;
    }
    sleepMs(20);  // the wakees block in read()
    for (long r = 1; r <= g_rounds; ++r) {
        wake(0);
        const double until = now() + (double)g_busyMs / 1e3;
        while (now() < until) {
        }
        wake(1);
        sleepMs(20);
    }
    for (int i = 0; i < 2; ++i)
        pthread_join(wakees[i], NULL);
    printf("rounds %ld\n", g_rounds);
    return 0;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "calls";
    if (strcmp(mode, "rate") == 0) {
        const long n = argc > 2 ? atol(argv[2]) : 1000000;
        const double t0 = now();
        for (long i = 0; i < n; ++i)
            handle(i, 0);
        const double secs = now() - t0;
        printf("%.6f\n", secs);
        const char* out = getenv("TRIGGER_PROG_REPORT");
        FILE* f = out ? fopen(out, "w") : NULL;
        if (f) fprintf(f, "%.6f\n", secs), fclose(f);
        return 0;
    }
    if (strcmp(mode, "marker") == 0) {
        const long n = argc > 2 ? atol(argv[2]) : 5;
        for (long i = 0; i < n; ++i) {
            auxscope_trigger();
            sleepMs(20);
        }
        return 0;
    }
    if (strcmp(mode, "wakelat") == 0) {
        if (argc > 2) g_rounds = atol(argv[2]);
        if (argc > 3) g_busyMs = atol(argv[3]);
        const char* reportPath = getenv("TRIGGER_PROG_REPORT");
        if (reportPath && !(g_report = fopen(reportPath, "w"))) return 3;
        const int rc = wakelat();
        if (g_report) fclose(g_report);
        return rc;
    }
    int threads = argc > 2 ? atoi(argv[2]) : (strcmp(mode, "sleeps") == 0 ? 4 : 8);
    if (threads < 1 || threads > 256) return 2;
    void* (*worker)(void*) = callsWorker;
    if (strcmp(mode, "sleeps") == 0) {
        worker = sleepsWorker;
        if (argc > 3) g_sleeps = atol(argv[3]);
        g_slowEvery = argc > 4 ? atol(argv[4]) : 10;
    } else {
        g_perThread = (argc > 3 ? atol(argv[3]) : 100000) / threads;
        if (argc > 4) g_slowEvery = atol(argv[4]);
        if (argc > 5) g_slowMs = atol(argv[5]);
    }
    if (g_slowEvery < 1) return 2;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const char* reportPath = getenv("TRIGGER_PROG_REPORT");
    if (reportPath && !(g_report = fopen(reportPath, "w"))) return 3;
    pthread_t t[256];
    for (int i = 0; i < threads; ++i)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < threads; ++i)
        pthread_join(t[i], NULL);
    printf("slow %ld\n", (long)atomic_load(&g_slow));
    if (g_report) fclose(g_report);
    return 0;
}
