// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small things many tests need: a scratch directory that goes away with the
// test (kept when the test failed, to look at), and a shell command's exit
// status and output.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace auxscope::test_support {

struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& what = "test") {
        std::string tmpl = "/tmp/auxscope-" + what + "-XXXXXX";
        if (const char* made = mkdtemp(tmpl.data())) path = made;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path.empty() && !::testing::Test::HasFailure()) std::filesystem::remove_all(path, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

// Runs `command` through the shell: its exit status (-1 when it did not exit),
// its stdout (and stderr with withStderr; else stderr is discarded) in *output.
inline int runCommand(const std::string& command, std::string* output = nullptr, bool withStderr = true) {
    FILE* p = popen((command + (withStderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
    if (!p) return -1;
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, p)) > 0)
        text.append(buffer, n);
    const int status = pclose(p);
    if (output) *output = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A connected AF_UNIX stream socket pair (a, b), closed at the end of scope.
struct SocketPair {
    int a = -1, b = -1;
    SocketPair() {
        int sv[2];
        EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        a = sv[0], b = sv[1];
    }
    ~SocketPair() {
        if (a >= 0) close(a);
        if (b >= 0) close(b);
    }
    SocketPair(const SocketPair&) = delete;
    SocketPair& operator=(const SocketPair&) = delete;
};

}  // namespace auxscope::test_support
