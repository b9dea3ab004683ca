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

class LaunchedCommand {
public:
    LaunchedCommand() = default;
    LaunchedCommand(LaunchedCommand&& o) noexcept { *this = static_cast<LaunchedCommand&&>(o); }
    LaunchedCommand& operator=(LaunchedCommand&& o) noexcept;
    ~LaunchedCommand();

    static Expected<LaunchedCommand> start(const std::vector<std::string>& argv);
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
