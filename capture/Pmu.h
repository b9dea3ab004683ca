// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// PMU discovery from /sys/bus/event_source/devices: each PMU's perf type, the
// bit layout of its format terms (format/*), its capabilities (caps/*) and the
// number of address filters it supports.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

// One field of perf_event_attr a format term writes to, e.g. "config:0-7,16".
struct FormatField {
    enum class Target { Config, Config1, Config2, Config3 };
    Target target = Target::Config;
    struct Range {
        unsigned lo, hi;  // inclusive bit range
    };
    std::vector<Range> ranges;

    unsigned width() const;
    // Spreads `value` over the ranges, low bits first. Fails if the value does not fit.
    Expected<void> apply(uint64_t value, uint64_t& config, uint64_t& config1, uint64_t& config2,
                         uint64_t& config3) const;
    static Expected<FormatField> parse(const std::string& spec);
};

struct PmuInfo {
    std::string name;
    uint32_t type = 0;
    std::map<std::string, FormatField> format;
    std::map<std::string, std::string> caps;
    // Named events the PMU publishes under events/ (e.g. "cycles" -> "event=0x3c").
    std::map<std::string, std::string> events;
    int nrAddrFilters = 0;
    std::vector<int> cpus;  // from cpumask/cpus when present (uncore, hybrid PMUs)

    std::optional<uint64_t> capValue(const std::string& cap) const;
    // AUX-area PMUs we know how to capture.
    bool isAuxPmu() const;
};

class PmuRegistry {
public:
    // Reads every PMU below `root` (the default is the real sysfs path).
    static PmuRegistry discover(const std::filesystem::path& root = "/sys/bus/event_source/devices");

    const PmuInfo* find(const std::string& name) const;
    const std::vector<PmuInfo>& pmus() const { return pmus_; }
    std::string names() const;  // comma-separated, for error messages
    const PmuInfo* firstAuxPmu() const;

private:
    std::vector<PmuInfo> pmus_;
};

// Reads a small sysfs/procfs text file, trimmed; nullopt if unreadable.
std::optional<std::string> readSmallFile(const std::filesystem::path& path);

// Parses a CPU list like "0-3,8,10-11".
Expected<std::vector<int>> parseCpuList(const std::string& text);
std::string formatCpuList(const std::vector<int>& cpus);
std::vector<int> onlineCpus();

}  // namespace auxscope
