// SPDX-License-Identifier: GPL-3.0-or-later
#include "KernelTestSupport.h"

#include <sched.h>
#include <fstream>
#include <regex>
#include <thread>

#include "PerfEvent.h"
#include "Tracefs.h"

namespace auxscope::test {

void CollectingConsumer::onRecord(int cpu, std::span<const uint8_t>, const ParsedRecord& r) {
    SeenRecord s{cpu,
                 r.type,
                 r.misc,
                 r.pid,
                 r.tid,
                 r.cpu,
                 r.time,
                 r.nextPrevPid,
                 r.nextPrevTid,
                 r.switchOut,
                 r.lost,
                 r.event ? r.event->descIndex : -2,
                 r.hasSampleId,
                 std::string(r.comm),
                 std::vector<uint8_t>(r.raw.begin(), r.raw.end())};
    std::lock_guard lock(mutex_);
    records_.push_back(std::move(s));
}

std::optional<unsigned> tracepointFieldOffset(const std::string& system, const std::string& event,
                                              const std::string& field) {
    auto root = Tracefs::locate();
    if (!root) return std::nullopt;
    std::ifstream in(*root / "events" / system / event / "format");
    std::string line;
    std::regex re("field:[^;]*[ *]" + field + "(\\[[^\\]]*\\])?;\\s*offset:(\\d+);");
    std::smatch m;
    while (std::getline(in, line))
        if (std::regex_search(line, m, re)) return unsigned(std::stoul(m[2]));
    return std::nullopt;
}

void runPinned(int cpu, const std::function<void()>& fn) {
    std::thread t([&] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
        fn();
    });
    t.join();
}

}  // namespace auxscope::test
