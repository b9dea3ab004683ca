// SPDX-License-Identifier: GPL-3.0-or-later
// A program with stacks whose shape is known, for the sampled-profile tests
// (perf record -g / --call-graph dwarf; perf report as the oracle):
//   main -> hot -> mid (recursive, depth 3) -> leaf -> sin, with scale()
//   inlined into leaf; main -> hot -> lib_work (a shared library) -> lib_inner;
//   a SIGPROF handler doing work on the same thread (handler_work), so stacks
//   run through the kernel's signal frame; a second thread (worker_thread ->
//   spin) and a thread that blocks (blocker_thread -> wait_on_pipe -> read),
//   for off-CPU time.
// usage: stacks_prog MILLISECONDS
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

double lib_work(double x);

static volatile double sink;
static volatile int done;
static int pipefd[2];

static inline __attribute__((always_inline)) double scale(double x) {
    double s = 0;
    for (int i = 0; i < 8; ++i)
        s += x * (i + 1) / (i + 2);
    return s;
}

__attribute__((noinline)) double leaf(double x) {
    double s = 0;
    for (int i = 0; i < 200; ++i)
        s += sin(x + i) + scale(x);
    return s;
}

__attribute__((noinline)) double mid(double x, int depth) {
    if (depth > 0) return mid(x + 1, depth - 1) + 1;
    return leaf(x);
}

__attribute__((noinline)) void hot(double x) {
    sink += mid(x, 3);
    sink += lib_work(x);
}

__attribute__((noinline)) void handler_work(void) {
    double s = 0;
    for (int i = 0; i < 20000; ++i)
        s += cos(i);
    sink += s;
}

static void on_prof(int sig) {
    (void)sig;
    handler_work();
}

__attribute__((noinline)) void spin(void) {
    double s = 0;
    for (int i = 0; i < 100000; ++i)
        s += sqrt((double)i);
    sink += s;
}

static void* worker_thread(void* arg) {
    (void)arg;
    while (!done)
        spin();
    return NULL;
}

__attribute__((noinline)) void wait_on_pipe(void) {
    char c;
    if (read(pipefd[0], &c, 1) < 0) perror("read");
}

static void* blocker_thread(void* arg) {
    (void)arg;
    while (!done)
        wait_on_pipe();
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
    const double ms = argc > 1 ? atof(argv[1]) : 500;
    if (pipe(pipefd) != 0) return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 20000}, {0, 20000}};  // every 20 ms of CPU time
    setitimer(ITIMER_PROF, &it, NULL);
    pthread_t worker, blocker;
    pthread_create(&worker, NULL, worker_thread, NULL);
    pthread_create(&blocker, NULL, blocker_thread, NULL);
    const double end = now_ms() + ms;
    int n = 0;
    while (now_ms() < end) {
        hot(n++);
        if (n % 50 == 0) {
            if (write(pipefd[1], "x", 1) != 1) perror("write");  // wake the blocker now and then
            usleep(1000);
        }
    }
    done = 1;
    if (write(pipefd[1], "x", 1) != 1) perror("write");
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    pthread_join(worker, NULL);
    pthread_join(blocker, NULL);
    printf("%d\n", n);
    return 0;
}
