// SPDX-License-Identifier: GPL-3.0-or-later
#include "CommandLauncher.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>

namespace auxscope {

namespace {
// What the child reports through the error pipe: errno, plus where it failed.
constexpr int kChdirFailed = 10000, kDropFailed = 20000;
}  // namespace

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

Expected<RunAs> RunAs::forUser(uid_t uid) {
    std::vector<char> buf(16384);
    passwd pw{}, *found = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found)
        return makeError("user " + std::to_string(uid) + " has no passwd entry");
    RunAs r;
    r.uid = pw.pw_uid;
    r.gid = pw.pw_gid;
    r.home = pw.pw_dir ? pw.pw_dir : "/";
    int n = 64;
    std::vector<gid_t> groups(static_cast<size_t>(n));
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0) {
        groups.resize(size_t(n));
        if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &n) < 0)
            return makeError(std::string("cannot list the groups of ") + pw.pw_name);
    }
    groups.resize(size_t(n));
    r.groups = std::move(groups);
    r.env = {"HOME=" + r.home, std::string("USER=") + pw.pw_name, std::string("LOGNAME=") + pw.pw_name,
             std::string("SHELL=") + (pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh"),
             "PATH=/usr/local/bin:/usr/bin:/bin"};
    for (const char* keep : {"LANG", "LC_ALL", "TERM"})
        if (const char* v = getenv(keep)) r.env.push_back(std::string(keep) + "=" + v);
    return r;
}

Expected<LaunchedCommand> LaunchedCommand::start(const std::vector<std::string>& argv, const RunAs* runAs) {
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
    std::vector<char*> env;
    if (runAs) {
        for (auto& e : runAs->env)
            env.push_back(const_cast<char*>(e.c_str()));
        env.push_back(nullptr);
    }
    const char* cwd = runAs ? (runAs->cwd.empty() ? runAs->home.c_str() : runAs->cwd.c_str()) : nullptr;

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
        if (runAs) {
            // Drop to the user before anything of theirs runs: groups, then gid, then uid
            // (after setresuid the others could not be changed any more).
            if (setgroups(runAs->groups.size(), runAs->groups.data()) != 0 ||
                setresgid(runAs->gid, runAs->gid, runAs->gid) != 0 ||
                setresuid(runAs->uid, runAs->uid, runAs->uid) != 0 || (runAs->uid != 0 && setuid(0) == 0)) {
                int e = (errno ? errno : EPERM) + kDropFailed;
                (void)!write(err[1], &e, sizeof e);
                _exit(127);
            }
            if (chdir(cwd) != 0) {
                int e = errno + kChdirFailed;
                (void)!write(err[1], &e, sizeof e);
                _exit(127);
            }
            execvpe(args[0], args.data(), env.data());
        } else {
            execvp(args[0], args.data());
        }
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
    if (n == sizeof e && e >= kDropFailed)
        return makeError("cannot run '" + name_ + "' as its user: " + std::strerror(e - kDropFailed));
    if (n == sizeof e && e >= kChdirFailed)
        return makeError("cannot run '" + name_ +
                         "': cannot enter its working directory: " + std::strerror(e - kChdirFailed));
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
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    released_ = true;
}

}  // namespace auxscope
