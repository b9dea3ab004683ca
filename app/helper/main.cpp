// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-capture-helper: started by the auxscope GUI through pkexec with its
// socket as standard input; takes no arguments (see CaptureHelper.h).
#include <sys/stat.h>

#include <csignal>
#include <cstdio>

#include "CaptureHelper.h"

int main(int argc, char**) {
    using namespace auxscope::helper;
    if (argc != 1) {
        std::fprintf(stderr, "auxscope-capture-helper: takes no arguments; the auxscope GUI starts it\n");
        return 2;
    }
    struct stat st {};
    if (fstat(0, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        std::fprintf(stderr,
                     "auxscope-capture-helper: standard input is not a socket: the auxscope GUI starts this "
                     "helper (through pkexec) when a capture needs privileges; it is not run by hand\n");
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN);
    auto user = invokingUser();
    if (!user) {
        std::fprintf(stderr, "auxscope-capture-helper: %s\n", user.error().message.c_str());
        return 2;
    }
    HelperConfig config;
    config.user = *user;
    return serveCaptureHelper(0, config);
}
