// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/FeatureWriter.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace auxscope {
namespace {

namespace fs = std::filesystem;

constexpr size_t kNameAlign = 64;  // perf's NAME_ALIGN for header strings and build-id names

std::optional<std::string> readLine(const fs::path& p) {
    std::ifstream in(p);
    std::string s;
    if (!in || !std::getline(in, s)) return std::nullopt;
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    return s;
}

// "0-3,6" -> {0,1,2,3,6}
std::vector<int> parseList(const std::string& s) {
    std::vector<int> out;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        if (part.empty()) continue;
        auto dash = part.find('-');
        try {
            int a = std::stoi(part.substr(0, dash));
            int b = dash == std::string::npos ? a : std::stoi(part.substr(dash + 1));
            for (int i = a; i <= b; ++i)
                out.push_back(i);
        } catch (...) {
        }
    }
    return out;
}

// Value of the first "key : value" line of /proc/cpuinfo whose key starts with `key`.
std::optional<std::string> cpuinfoField(const std::string& key) {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0) continue;
        auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string v = line.substr(colon + 1);
        // Collapse runs of white space (branding strings pad with spaces) and trim.
        std::string out;
        bool space = true;
        for (char c : v) {
            if (std::isspace(uint8_t(c))) {
                if (!space) out += ' ';
                space = true;
            } else {
                out += c;
                space = false;
            }
        }
        while (!out.empty() && out.back() == ' ')
            out.pop_back();
        return out;
    }
    return std::nullopt;
}

std::optional<std::string> cpuId() {
    // x86: vendor,family,model,stepping (the display family/model /proc/cpuinfo shows).
    auto vendor = cpuinfoField("vendor_id");
    auto family = cpuinfoField("cpu family");
    auto model = cpuinfoField("model\t");
    auto stepping = cpuinfoField("stepping");
    if (vendor && family && model && stepping)
        return *vendor + "," + *family + "," + *model + "," + *stepping;
    // arm64: the MIDR register, as perf prints it.
    if (auto midr = readLine("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1")) return *midr;
    return std::nullopt;
}

}  // namespace

FeatureBlob& FeatureBlob::raw(const void* p, size_t n) {
    auto b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    return *this;
}

FeatureBlob& FeatureBlob::str(std::string_view s) {
    const uint32_t len = uint32_t((s.size() + 1 + kNameAlign - 1) / kNameAlign * kNameAlign);
    u32(len);
    raw(s.data(), s.size());
    buf_.resize(buf_.size() + (len - s.size()), 0);
    return *this;
}

std::map<unsigned, std::vector<uint8_t>> FeatureWriter::hostFeatures(const std::vector<std::string>& cmdline,
                                                                     const std::string& version,
                                                                     std::vector<std::string>* notes) {
    std::map<unsigned, std::vector<uint8_t>> f;
    auto note = [&](const std::string& m) {
        if (notes) notes->push_back(m);
    };
    auto one = [](std::string_view s) { return FeatureBlob().str(s).take(); };

    utsname uts{};
    if (uname(&uts) == 0) {
        f[perfdata::kFeatHostname] = one(uts.nodename);
        f[perfdata::kFeatOsRelease] = one(uts.release);
        f[perfdata::kFeatArch] = one(uts.machine);
    } else {
        note("uname failed: no hostname/osrelease/arch features");
    }
    f[perfdata::kFeatVersion] = one(version);

    // CPUs: "available" is one past the highest present CPU, as perf counts.
    const fs::path sys = "/sys/devices/system/cpu";
    std::vector<int> present = parseList(readLine(sys / "present").value_or(""));
    std::vector<int> online = parseList(readLine(sys / "online").value_or(""));
    const long onlineCount = sysconf(_SC_NPROCESSORS_ONLN);
    const uint32_t nrAvail = present.empty()
                                 ? uint32_t(std::max(1L, onlineCount))
                                 : uint32_t(*std::max_element(present.begin(), present.end()) + 1);
    f[perfdata::kFeatNrCpus] = FeatureBlob().u32(nrAvail).u32(uint32_t(std::max(1L, onlineCount))).take();

    if (auto desc = cpuinfoField("model name"))
        f[perfdata::kFeatCpuDesc] = one(*desc);
    else
        note("no 'model name' in /proc/cpuinfo: no cpudesc feature");
    if (auto id = cpuId())
        f[perfdata::kFeatCpuId] = one(*id);
    else
        note("cannot tell the CPU id: no cpuid feature");

    {
        std::ifstream in("/proc/meminfo");
        std::string key;
        uint64_t kb = 0;
        while (in >> key) {
            if (key == "MemTotal:") {
                in >> kb;
                break;
            }
            std::getline(in, key);
        }
        if (kb) f[perfdata::kFeatTotalMem] = FeatureBlob().u64(kb).take();
    }

    {
        FeatureBlob b;
        b.u32(uint32_t(cmdline.size()));
        for (auto& a : cmdline)
            b.str(a);
        f[perfdata::kFeatCmdline] = b.take();
    }

    // CPU topology: distinct package and core sibling lists of the online CPUs,
    // then core and socket id of every available CPU (-1 when offline), then the
    // same for dies where the kernel knows them.
    {
        std::vector<std::string> cores, threads, dies;
        auto addUnique = [](std::vector<std::string>& v, const std::optional<std::string>& s) {
            if (s && std::find(v.begin(), v.end(), *s) == v.end()) v.push_back(*s);
        };
        bool ok = !online.empty();
        for (int cpu : online) {
            fs::path t = sys / ("cpu" + std::to_string(cpu)) / "topology";
            auto pkg = readLine(t / "package_cpus_list");
            if (!pkg) pkg = readLine(t / "core_siblings_list");
            auto thr = readLine(t / "core_cpus_list");
            if (!thr) thr = readLine(t / "thread_siblings_list");
            if (!pkg || !thr) {
                ok = false;
                break;
            }
            addUnique(cores, pkg);
            addUnique(threads, thr);
            addUnique(dies, readLine(t / "die_cpus_list"));
        }
        if (ok) {
            FeatureBlob b;
            b.u32(uint32_t(cores.size()));
            for (auto& s : cores)
                b.str(s);
            b.u32(uint32_t(threads.size()));
            for (auto& s : threads)
                b.str(s);
            std::vector<uint32_t> dieIds;
            for (uint32_t cpu = 0; cpu < nrAvail; ++cpu) {
                fs::path t = sys / ("cpu" + std::to_string(cpu)) / "topology";
                bool on = std::find(online.begin(), online.end(), int(cpu)) != online.end();
                auto num = [&](const char* name) -> uint32_t {
                    if (!on) return uint32_t(-1);
                    auto v = readLine(t / name);
                    try {
                        return v ? uint32_t(std::stol(*v)) : uint32_t(-1);
                    } catch (...) {
                        return uint32_t(-1);
                    }
                };
                b.u32(num("core_id")).u32(num("physical_package_id"));
                dieIds.push_back(num("die_id"));
            }
            if (!dies.empty()) {
                b.u32(uint32_t(dies.size()));
                for (auto& s : dies)
                    b.str(s);
                for (uint32_t d : dieIds)
                    b.u32(d);
            }
            f[perfdata::kFeatCpuTopology] = b.take();
        } else {
            note("no CPU topology in sysfs: no cpu_topology feature");
        }
    }

    {
        std::vector<std::pair<uint32_t, std::string>> pmus;
        std::error_code ec;
        for (auto& e : fs::directory_iterator("/sys/bus/event_source/devices", ec)) {
            auto type = readLine(e.path() / "type");
            if (!type) continue;
            try {
                pmus.emplace_back(uint32_t(std::stoul(*type)), e.path().filename().string());
            } catch (...) {
            }
        }
        std::sort(pmus.begin(), pmus.end());
        f[perfdata::kFeatPmuMappings] = pmuMappings(pmus);
    }
    return f;
}

std::vector<uint8_t> FeatureWriter::pmuMappings(const std::vector<std::pair<uint32_t, std::string>>& pmus) {
    FeatureBlob b;
    b.u32(uint32_t(pmus.size()));
    for (const auto& [type, name] : pmus)
        b.u32(type).str(name);
    return b.take();
}

std::vector<uint8_t> FeatureWriter::auxPmuMappings(uint32_t auxType, const std::string& auxName) {
    return pmuMappings(
        {{PERF_TYPE_SOFTWARE, "software"}, {PERF_TYPE_TRACEPOINT, "tracepoint"}, {auxType, auxName}});
}

std::vector<uint8_t> FeatureWriter::eventDesc(const std::vector<PerfDataEventAttr>& attrs) {
    FeatureBlob b;
    b.u32(uint32_t(attrs.size())).u32(uint32_t(sizeof(perf_event_attr)));
    for (auto& a : attrs) {
        perf_event_attr attr = a.attr;
        attr.size = sizeof attr;
        b.raw(&attr, sizeof attr).u32(uint32_t(a.ids.size())).str(a.name);
        b.raw(a.ids.data(), a.ids.size() * sizeof(uint64_t));
    }
    return b.take();
}

std::vector<uint8_t> FeatureWriter::sampleTime(uint64_t first, uint64_t last) {
    return FeatureBlob().u64(first).u64(last).take();
}

std::vector<uint8_t> FeatureWriter::buildIds(const std::vector<BuildIdEntry>& entries) {
    // Each entry: perf_event_header (misc: cpumode | "size is valid"), s32 pid (-1:
    // the host), 24 bytes holding up to 20 bytes of id and its length at byte 20,
    // then the file name NUL-padded to a multiple of 64.
    FeatureBlob b;
    auto emit = [&](const BuildIdEntry& e) {
        const size_t nameLen = (e.path.size() + 1 + kNameAlign - 1) / kNameAlign * kNameAlign;
        uint8_t id[24] = {};
        const size_t n = std::min<size_t>(e.buildId.size(), 20);
        std::memcpy(id, e.buildId.data(), n);
        id[20] = uint8_t(n);
        const uint16_t misc = uint16_t((e.kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
                                       perfdata::kBuildIdMiscSize);
        perf_event_header h{0, misc, uint16_t(sizeof h + 4 + sizeof id + nameLen)};
        const int32_t pid = -1;
        b.raw(&h, sizeof h).raw(&pid, 4).raw(id, sizeof id).raw(e.path.data(), e.path.size());
        std::vector<uint8_t> pad(nameLen - e.path.size(), 0);
        b.raw(pad.data(), pad.size());
    };
    for (auto& e : entries)
        if (e.kernel) emit(e);
    for (auto& e : entries)
        if (!e.kernel) emit(e);
    return b.take();
}

}  // namespace auxscope
