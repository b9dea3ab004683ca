// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Thin, owning wrapper around a perf_event_open file descriptor, and the
// explanations users need when the kernel refuses one.
#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "Result.h"

namespace auxscope {

class PerfEventFd {
public:
    PerfEventFd() = default;
    explicit PerfEventFd(int fd) : fd_(fd) {}
    PerfEventFd(PerfEventFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
    PerfEventFd& operator=(PerfEventFd&& o) noexcept;
    PerfEventFd(const PerfEventFd&) = delete;
    PerfEventFd& operator=(const PerfEventFd&) = delete;
    ~PerfEventFd();

    // `what` names the event in error messages.
    static Expected<PerfEventFd> open(perf_event_attr attr, pid_t pid, int cpu, int groupFd,
                                      const std::string& what);

    int fd() const { return fd_; }
    Expected<uint64_t> id() const;
    Expected<void> enable() const;
    Expected<void> disable() const;
    Expected<void> setOutput(int targetFd) const;
    // PERF_EVENT_IOC_SET_FILTER: address filters of an AUX event (kernel syntax), or a tracepoint filter.
    Expected<void> setFilter(const std::string& filter) const;
    Expected<void> pauseOutput(bool pause) const;

    // One non-group read with PERF_FORMAT_ID|PERF_FORMAT_LOST.
    struct Reading {
        uint64_t value = 0, id = 0, lost = 0;
        bool hasLost = false;
    };
    Expected<Reading> read(uint64_t readFormat) const;

private:
    int fd_ = -1;
};

// What to change when perf_event_open fails with `err` (paranoid level, capabilities, limits).
std::string explainPerfOpenError(int err, const perf_event_attr& attr, pid_t pid, int cpu);
int perfEventParanoid();
// Why this process cannot capture system-wide here (the kernel's refusal with what
// to change), or nullopt when it can.
std::optional<std::string> perfCaptureUnavailableReason();
bool hasPerfmonCapability();

}  // namespace auxscope
