// SPDX-License-Identifier: GPL-3.0-or-later
#include "Tracefs.h"

#include <fnmatch.h>
#include <sys/mount.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "Pmu.h"

namespace auxscope {
namespace fs = std::filesystem;

Expected<fs::path> Tracefs::locate() {
    static std::mutex mountMutex;
    std::lock_guard lock(mountMutex);
    std::error_code ec;
    for (const char* p : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
        if (fs::exists(fs::path(p) / "events", ec)) return fs::path(p);
    }
    const fs::path mountPoint = "/sys/kernel/tracing";
    if (geteuid() != 0)
        return makeError("tracefs is not mounted and mounting it needs root: run 'mount -t tracefs nodev " +
                         mountPoint.string() + "' as root");
    if (mount("nodev", mountPoint.c_str(), "tracefs", 0, nullptr) != 0)
        return makeError("tracefs is not mounted and mounting it at " + mountPoint.string() +
                         " failed: " + std::strerror(errno));
    if (fs::exists(mountPoint / "events", ec)) return mountPoint;
    return makeError("tracefs mounted at " + mountPoint.string() + " but has no events/ directory");
}

Expected<std::vector<TracepointId>> Tracefs::resolve(const std::string& system, const std::string& event) {
    auto root = locate();
    if (!root) return root.error();
    std::vector<TracepointId> out;
    std::error_code ec;
    fs::path events = *root / "events";
    for (auto& sys : fs::directory_iterator(events, ec)) {
        if (!sys.is_directory()) continue;
        std::string sysName = sys.path().filename().string();
        if (fnmatch(system.c_str(), sysName.c_str(), 0) != 0) continue;
        std::error_code ec2;
        for (auto& ev : fs::directory_iterator(sys.path(), ec2)) {
            if (!ev.is_directory()) continue;
            std::string evName = ev.path().filename().string();
            if (fnmatch(event.c_str(), evName.c_str(), 0) != 0) continue;
            auto idText = readSmallFile(ev.path() / "id");
            if (!idText) continue;
            out.push_back({sysName + ":" + evName, std::stoull(*idText)});
        }
    }
    if (ec) return makeError("cannot read " + events.string() + ": " + ec.message());
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
    if (out.empty())
        return makeError("no tracepoint matches '" + system + ":" + event + "' in " + events.string() +
                         " (list them with 'auxscope record --list-events')");
    return out;
}

std::vector<std::string> Tracefs::listAll() {
    std::vector<std::string> out;
    auto all = resolve("*", "*");
    if (all)
        for (auto& t : all.value())
            out.push_back(t.name);
    return out;
}

}  // namespace auxscope
