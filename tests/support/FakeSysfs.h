// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A PMU tree laid out in a temporary directory exactly as the kernel publishes
// /sys/bus/event_source/devices (type, format/*, caps/*, nr_addr_filters), for
// tests of trace PMUs this machine does not have. Header-only; each test
// executable that uses it includes it.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace auxscope::test_support {

using SysfsPairs = std::vector<std::pair<std::string, std::string>>;

class FakeSysfsTree {
public:
    explicit FakeSysfsTree(const std::string& tag) {
        static std::atomic<int> n{0};
        root_ = std::filesystem::temp_directory_path() /
                ("auxscope-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        std::filesystem::remove_all(root_);
        std::filesystem::create_directories(root_);
    }
    ~FakeSysfsTree() { std::filesystem::remove_all(root_); }
    FakeSysfsTree(const FakeSysfsTree&) = delete;
    FakeSysfsTree& operator=(const FakeSysfsTree&) = delete;

    const std::filesystem::path& root() const { return root_; }

    // Writes `text` and a newline, as sysfs prints its values, creating the folders.
    void write(const std::filesystem::path& relative, const std::string& text) const {
        const auto p = root_ / relative;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p) << text << "\n";
    }
    // One PMU: type, format terms, caps and (when non-zero) nr_addr_filters.
    void pmu(const std::string& name, int type, const SysfsPairs& format = {}, const SysfsPairs& caps = {},
             int addrFilters = 0) const {
        std::filesystem::create_directories(root_ / name);
        write(name + "/type", std::to_string(type));
        if (!format.empty()) std::filesystem::create_directories(root_ / name / "format");
        for (auto& [k, v] : format)
            write(name + "/format/" + k, v);
        if (!caps.empty()) std::filesystem::create_directories(root_ / name / "caps");
        for (auto& [k, v] : caps)
            write(name + "/caps/" + k, v);
        if (addrFilters) write(name + "/nr_addr_filters", std::to_string(addrFilters));
    }

private:
    std::filesystem::path root_;
};

}  // namespace auxscope::test_support
