// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/QuitSignals.h"

#include <QPointer>
#include <QSocketNotifier>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gui/MainWindow.h"

namespace auxscope {
namespace {

int quitFds[2] = {-1, -1};

void onQuitSignal(int signo) {
    const int saved = errno;
    const char byte = char(signo);
    [[maybe_unused]] ssize_t n = ::write(quitFds[0], &byte, 1);  // full socket: a quit is already pending
    errno = saved;
}

}  // namespace

bool installQuitSignals(MainWindow& window) {
    if (quitFds[0] >= 0) return false;
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, quitFds) != 0) {
        std::fprintf(stderr,
                     "auxscope: cannot catch SIGTERM (socketpair: %s); a kill ends captures unfinished\n",
                     std::strerror(errno));
        return false;
    }
    auto* notifier = new QSocketNotifier(quitFds[1], QSocketNotifier::Read, &window);
    QPointer<MainWindow> target(&window);
    QObject::connect(notifier, &QSocketNotifier::activated, &window, [target] {
        char bytes[16];
        while (::read(quitFds[1], bytes, sizeof bytes) > 0) {
        }
        if (target) target->quitKeepingCaptures();
    });
    struct sigaction sa {};
    sa.sa_handler = onQuitSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int signo : {SIGTERM, SIGINT, SIGHUP})
        ::sigaction(signo, &sa, nullptr);
    return true;
}

}  // namespace auxscope
