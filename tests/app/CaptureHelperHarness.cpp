// SPDX-License-Identifier: GPL-3.0-or-later
// capture_helper_harness USER HELPER -- PROGRAM ARGS...
// Stands in for pkexec in the tests of the privileged capture helper (issue 17):
// run as root, it starts HELPER as root with one end of a socket pair as its
// standard input and PKEXEC_UID set to USER's uid, as pkexec does, and PROGRAM
// as USER (groups, gid, uid dropped as setpriv does) with the other end as
// descriptor 3 and AUXSCOPE_CAPTURE_HELPER_FD=3. Exits with PROGRAM's status, or
// 1 when the helper did not exit cleanly; 77 (skip) when not run as root or the
// user is unknown. PROGRAM gets a home of its own (HOME, XDG_DATA_HOME,
// XDG_CONFIG_HOME in a temporary folder owned by USER), removed afterwards:
// the GUI keeps its captures in the captures folder there.
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
    if (argc < 5 || std::strcmp(argv[3], "--") != 0) {
        std::fprintf(stderr, "usage: capture_helper_harness USER HELPER -- PROGRAM ARGS...\n");
        return 2;
    }
    if (geteuid() != 0) {
        std::printf("SKIPPED: not root: cannot run the helper as root and the GUI as another user\n");
        return 77;
    }
    const passwd* pw = getpwnam(argv[1]);
    if (!pw) {
        std::printf("SKIPPED: no user %s on this machine\n", argv[1]);
        return 77;
    }
    const uid_t uid = pw->pw_uid;
    const gid_t gid = pw->pw_gid;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        std::perror("socketpair");
        return 1;
    }
    const pid_t helper = fork();
    if (helper == 0) {
        close(sv[1]);
        dup2(sv[0], 0);
        close(sv[0]);
        setenv("PKEXEC_UID", std::to_string(uid).c_str(), 1);
        execl(argv[2], argv[2], static_cast<char*>(nullptr));
        std::perror(argv[2]);
        _exit(127);
    }
    close(sv[0]);
    char home[] = "/tmp/auxscope-harness-home-XXXXXX";
    if (!mkdtemp(home) || chown(home, uid, gid) != 0) {
        std::perror("a home for the program");
        return 1;
    }
    const pid_t gui = fork();
    if (gui == 0) {
        dup2(sv[1], 3);
        if (sv[1] != 3) close(sv[1]);
        setenv("AUXSCOPE_CAPTURE_HELPER_FD", "3", 1);
        setenv("HOME", home, 1);
        setenv("XDG_DATA_HOME", (std::string(home) + "/data").c_str(), 1);
        setenv("XDG_CONFIG_HOME", (std::string(home) + "/config").c_str(), 1);
        unsetenv("XDG_RUNTIME_DIR");
        if (setgroups(0, nullptr) != 0 || setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
            std::perror("dropping to the user");
            _exit(127);
        }
        execv(argv[4], argv + 4);
        std::perror(argv[4]);
        _exit(127);
    }
    close(sv[1]);
    int guiStatus = 0, helperStatus = 0;
    waitpid(gui, &guiStatus, 0);
    waitpid(helper, &helperStatus, 0);  // the GUI's end is closed: the helper ends
    std::error_code ignored;
    std::filesystem::remove_all(home, ignored);
    if (!WIFEXITED(helperStatus) || WEXITSTATUS(helperStatus) != 0) {
        std::fprintf(stderr, "capture_helper_harness: the helper ended with status %d\n", helperStatus);
        return 1;
    }
    if (WIFEXITED(guiStatus)) return WEXITSTATUS(guiStatus);
    std::fprintf(stderr, "capture_helper_harness: %s was killed by signal %d\n", argv[4],
                 WTERMSIG(guiStatus));
    return 1;
}
