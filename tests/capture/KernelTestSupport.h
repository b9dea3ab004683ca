// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "CaptureSession.h"
#include "PerfEvent.h"
#include "RecordConsumer.h"

namespace auxscope::test {

#define SKIP_WITHOUT_PERF()                                                       \
    do {                                                                          \
        if (auto reason = ::auxscope::perfCaptureUnavailableReason())             \
            GTEST_SKIP() << "perf_event_open is not permitted here: " << *reason; \
    } while (0)

struct SeenRecord {
    int ringCpu;
    uint32_t type;
    uint16_t misc;
    int32_t pid, tid;
    uint32_t cpu;
    uint64_t time;
    int32_t nextPrevPid, nextPrevTid;
    bool switchOut;
    uint64_t lost;
    int descIndex;
    bool hasSampleId;
    std::string comm;
    std::vector<uint8_t> raw;
};

// Keeps a copy of every record (called on the drain thread).
class CollectingConsumer : public RecordConsumer {
public:
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& r) override;
    std::vector<SeenRecord> records() const {
        std::lock_guard lock(mutex_);
        return records_;
    }

private:
    mutable std::mutex mutex_;
    std::vector<SeenRecord> records_;
};

// Byte offset of a field in a tracepoint's raw sample, from tracefs' format file.
std::optional<unsigned> tracepointFieldOffset(const std::string& system, const std::string& event,
                                              const std::string& field);

// Runs fn on a thread pinned to `cpu` and waits for it.
void runPinned(int cpu, const std::function<void()>& fn);

}  // namespace auxscope::test
