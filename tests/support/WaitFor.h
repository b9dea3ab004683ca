// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Polling helper for tests that wait on another thread (a drain thread, a
// simulated producer): never a timing assertion, only a bound on a hang.
#include <chrono>
#include <functional>
#include <thread>

namespace auxscope::test_support {

// Polls `cond` every millisecond for up to `limit`; true once it holds.
inline bool waitFor(const std::function<bool()>& cond,
                    std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

}  // namespace auxscope::test_support
