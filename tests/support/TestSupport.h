// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small things many tests need: a scratch directory that goes away with the
// test (kept when the test failed, to look at), and a shell command's exit
// status and output.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

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

}  // namespace auxscope::test_support
