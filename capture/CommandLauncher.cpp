// SPDX-License-Identifier: GPL-3.0-or-later
#include "CommandLauncher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace auxscope {

LaunchedCommand& LaunchedCommand::operator=(LaunchedCommand&& o) noexcept {
    if (this != &o) {
        pid_ = o.pid_, goFd_ = o.goFd_, errFd_ = o.errFd_, released_ = o.released_, reaped_ = o.reaped_;
        name_ = std::move(o.name_);
        o.pid_ = o.goFd_ = o.errFd_ = -1;
    }
    return *this;
}

LaunchedCommand::~LaunchedCommand() {
    if (!released_) abort();
    if (goFd_ >= 0) close(goFd_);
    if (errFd_ >= 0) close(errFd_);
}

Expected<LaunchedCommand> LaunchedCommand::start(const std::vector<std::string>& argv) {
    if (argv.empty()) return makeError("no command given to launch");
    int go[2], err[2];
    if (pipe2(go, O_CLOEXEC) != 0) return makeError(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(go[0]), close(go[1]);
        return makeError(std::string("pipe: ") + std::strerror(errno));
    }
    // Build argv before fork: the child may only call async-signal-safe functions.
    std::vector<char*> args;
    for (auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(go[0]), close(go[1]), close(err[0]), close(err[1]);
        return makeError(std::string("fork: ") + std::strerror(e));
    }
    if (pid == 0) {
        close(go[1]);
        close(err[0]);
        char c;
        ssize_t n;
        do
            n = read(go[0], &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1) _exit(127);  // parent gave up before release
        close(go[0]);
        execvp(args[0], args.data());
        int e = errno;
        (void)!write(err[1], &e, sizeof e);
        _exit(127);
    }
    close(go[0]);
    close(err[1]);
    LaunchedCommand cmd;
    cmd.pid_ = pid;
    cmd.goFd_ = go[1];
    cmd.errFd_ = err[0];
    cmd.name_ = argv[0];
    return cmd;
}

Expected<void> LaunchedCommand::release() {
    if (released_) return {};
    released_ = true;
    char c = 1;
    if (write(goFd_, &c, 1) != 1)
        return makeError(std::string("cannot release command: ") + std::strerror(errno));
    close(goFd_);
    goFd_ = -1;
    int e = 0;
    ssize_t n;
    do
        n = read(errFd_, &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(errFd_);
    errFd_ = -1;
    if (n == sizeof e) return makeError("cannot run '" + name_ + "': " + std::strerror(e));
    return {};
}

void LaunchedCommand::abort() {
    if (pid_ <= 0 || reaped_) return;
    if (goFd_ >= 0) {
        close(goFd_);  // child reads EOF and exits 127 without exec
        goFd_ = -1;
    } else {
        kill(pid_, SIGKILL);
    }
    int status;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    released_ = true;
}

}  // namespace auxscope
