// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// For tests only: the epoll calls the drain thread makes, replaceable so that a
// test can make the real drain thread, over real rings, meet what some kernels
// and libcs do (epoll_pwait2 missing: ENOSYS) or a wait that keeps failing.
// A replacement usually counts its calls and forwards to the real call
// (realDrainEpoll()). Not for production code: nothing but tests sets them.
#include <signal.h>
#include <sys/epoll.h>
#include <time.h>

namespace auxscope {

struct DrainEpollCalls {
    // epoll_pwait2 (nanosecond timeout) and epoll_pwait (millisecond timeout);
    // both return what the syscall returns and set errno.
    int (*pwait2)(int epfd, epoll_event* events, int maxevents, const timespec* timeout,
                  const sigset_t* sigmask) = nullptr;
    int (*pwait)(int epfd, epoll_event* events, int maxevents, int timeoutMs,
                 const sigset_t* sigmask) = nullptr;
    int (*ctl)(int epfd, int op, int fd, epoll_event* event) = nullptr;
};

// The calls used when nothing is replaced (the syscalls themselves).
DrainEpollCalls realDrainEpoll();
// Replaces the calls for drain threads from now on (a member left null: the real
// call); returns what was there. Set it before DrainThread::start(), restore it
// after join().
DrainEpollCalls setDrainEpollForTesting(DrainEpollCalls calls);

}  // namespace auxscope
