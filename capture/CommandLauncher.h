// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Starts a command stopped before exec, so events can be attached to its pid
// with enable_on_exec before it runs a single instruction of the new image;
// release() lets it exec. Exec failures come back through a close-on-exec pipe.
#include <sys/types.h>

#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

// Who a launched command runs as, when that is not the launcher (the privileged
// capture helper runs the GUI user's command as that user, never as root): its
// ids and supplementary groups, an environment of its own (HOME, USER, LOGNAME,
// SHELL, PATH from the user's passwd entry) and a working directory it enters
// with its own permissions (empty: its home).
struct RunAs {
    uid_t uid = 0;
    gid_t gid = 0;
    std::string cwd;
    // The user's passwd entry (ids, groups, environment); an error names the uid.
    static Expected<RunAs> forUser(uid_t uid);
    std::vector<gid_t> groups;
    std::vector<std::string> env;
    std::string home;
};

class LaunchedCommand {
public:
    LaunchedCommand() = default;
    LaunchedCommand(LaunchedCommand&& o) noexcept { *this = static_cast<LaunchedCommand&&>(o); }
    LaunchedCommand& operator=(LaunchedCommand&& o) noexcept;
    ~LaunchedCommand();

    static Expected<LaunchedCommand> start(const std::vector<std::string>& argv,
                                           const RunAs* runAs = nullptr);
    // Lets the child exec; returns once exec succeeded or with exec's error.
    Expected<void> release();
    // Kills a child that was never released (capture set-up failed).
    void abort();

    pid_t pid() const { return pid_; }
    // Marks the child reaped (by whoever waited for it).
    void setReaped() { reaped_ = true; }

private:
    pid_t pid_ = -1;
    int goFd_ = -1;   // parent writes one byte to release the child
    int errFd_ = -1;  // child writes errno if exec fails; EOF means exec succeeded
    bool released_ = false;
    bool reaped_ = false;
    std::string name_;
};

}  // namespace auxscope
