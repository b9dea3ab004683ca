// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Tracepoint lookup through tracefs. When tracefs is not mounted and we run as
// root, it is mounted at /sys/kernel/tracing (as perf does through libtraceevent).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

struct TracepointId {
    std::string name;  // "sys:event"
    uint64_t id = 0;
};

class Tracefs {
public:
    // Finds (and, as root, mounts) tracefs. The error says what to do when it cannot.
    static Expected<std::filesystem::path> locate();
    // Resolves "sys:event" where both parts may be shell globs ("raw_syscalls:*").
    static Expected<std::vector<TracepointId>> resolve(const std::string& system, const std::string& event);
    // Every tracepoint as "sys:event", sorted; empty when tracefs is unavailable.
    static std::vector<std::string> listAll();
};

}  // namespace auxscope
