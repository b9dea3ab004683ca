// SPDX-License-Identifier: GPL-3.0-or-later
// Signals: raise() enters a handler asynchronously (kernel delivery on the way
// back from the tgkill system call); the handler returns through rt_sigreturn.
#include <signal.h>
#include <string.h>

static volatile unsigned handled, work;

static void on_usr1(int sig) {
    for (unsigned i = 0; i < 10; ++i)
        work += (unsigned)sig * i;
    ++handled;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, 0) != 0) return 2;
    for (int i = 0; i < 4; ++i) {
        raise(SIGUSR1);
        for (unsigned j = 0; j < 20; ++j)
            work += j;
    }
    return handled == 4 ? 0 : 1;
}
