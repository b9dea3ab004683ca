// SPDX-License-Identifier: GPL-3.0-or-later
#include "Pmu.h"

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace auxscope {
namespace fs = std::filesystem;

std::optional<std::string> readSmallFile(const fs::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t'))
        s.pop_back();
    return s;
}

static bool parseUnsigned(std::string_view s, uint64_t& out, int base = 10) {
    if (base == 0) {
        base = 10;
        if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
            s.remove_prefix(2);
            base = 16;
        }
    }
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
    return ec == std::errc() && p == s.data() + s.size();
}

unsigned FormatField::width() const {
    unsigned w = 0;
    for (auto& r : ranges)
        w += r.hi - r.lo + 1;
    return w;
}

Expected<FormatField> FormatField::parse(const std::string& spec) {
    FormatField f;
    auto colon = spec.find(':');
    if (colon == std::string::npos) return makeError("format spec '" + spec + "' has no ':'");
    std::string target = spec.substr(0, colon);
    if (target == "config")
        f.target = Target::Config;
    else if (target == "config1")
        f.target = Target::Config1;
    else if (target == "config2")
        f.target = Target::Config2;
    else if (target == "config3")
        f.target = Target::Config3;
    else
        return makeError("format spec '" + spec + "' targets unknown field '" + target + "'");
    std::stringstream ss(spec.substr(colon + 1));
    std::string part;
    while (std::getline(ss, part, ',')) {
        uint64_t lo = 0, hi = 0;
        auto dash = part.find('-');
        if (dash == std::string::npos) {
            if (!parseUnsigned(part, lo))
                return makeError("bad bit '" + part + "' in format spec '" + spec + "'");
            hi = lo;
        } else if (!parseUnsigned(part.substr(0, dash), lo) || !parseUnsigned(part.substr(dash + 1), hi)) {
            return makeError("bad bit range '" + part + "' in format spec '" + spec + "'");
        }
        if (lo > hi || hi > 63) return makeError("bit range '" + part + "' out of 0-63 in '" + spec + "'");
        f.ranges.push_back({unsigned(lo), unsigned(hi)});
    }
    if (f.ranges.empty()) return makeError("format spec '" + spec + "' names no bits");
    return f;
}

Expected<void> FormatField::apply(uint64_t value, uint64_t& config, uint64_t& config1, uint64_t& config2,
                                  uint64_t& config3) const {
    unsigned w = width();
    if (w < 64 && (value >> w) != 0)
        return makeError("value " + std::to_string(value) + " does not fit in " + std::to_string(w) +
                         " bits");
    uint64_t& dst = target == Target::Config    ? config
                    : target == Target::Config1 ? config1
                    : target == Target::Config2 ? config2
                                                : config3;
    for (auto& r : ranges) {
        unsigned n = r.hi - r.lo + 1;
        uint64_t mask = n == 64 ? ~0ull : ((1ull << n) - 1);
        dst = (dst & ~(mask << r.lo)) | ((value & mask) << r.lo);
        value = n == 64 ? 0 : value >> n;
    }
    return {};
}

std::optional<uint64_t> PmuInfo::capValue(const std::string& cap) const {
    auto it = caps.find(cap);
    if (it == caps.end()) return std::nullopt;
    uint64_t v = 0;
    if (parseUnsigned(it->second, v, 0)) return v;
    return std::nullopt;
}

bool PmuInfo::isAuxPmu() const {
    return name == "intel_pt" || name == "cs_etm" || name == "intel_bts" || name.rfind("arm_spe", 0) == 0;
}

PmuRegistry PmuRegistry::discover(const fs::path& root) {
    PmuRegistry reg;
    std::error_code ec;
    for (auto& entry : fs::directory_iterator(root, ec)) {
        PmuInfo pmu;
        pmu.name = entry.path().filename().string();
        auto type = readSmallFile(entry.path() / "type");
        uint64_t t = 0;
        if (!type || !parseUnsigned(*type, t)) continue;
        pmu.type = uint32_t(t);
        std::error_code ec2;
        for (auto& f : fs::directory_iterator(entry.path() / "format", ec2)) {
            auto spec = readSmallFile(f.path());
            if (!spec) continue;
            auto field = FormatField::parse(*spec);
            if (field) pmu.format.emplace(f.path().filename().string(), std::move(field.value()));
        }
        for (auto& f : fs::directory_iterator(entry.path() / "caps", ec2)) {
            if (auto v = readSmallFile(f.path())) pmu.caps.emplace(f.path().filename().string(), *v);
        }
        for (auto& f : fs::directory_iterator(entry.path() / "events", ec2)) {
            auto name = f.path().filename().string();
            if (name.find('.') != std::string::npos) continue;  // .scale/.unit companions
            if (auto v = readSmallFile(f.path())) pmu.events.emplace(name, *v);
        }
        uint64_t n = 0;
        if (auto v = readSmallFile(entry.path() / "nr_addr_filters"); v && parseUnsigned(*v, n))
            pmu.nrAddrFilters = int(n);
        for (const char* maskFile : {"cpumask", "cpus"}) {
            if (auto v = readSmallFile(entry.path() / maskFile)) {
                if (auto cpus = parseCpuList(*v)) pmu.cpus = cpus.value();
                break;
            }
        }
        reg.pmus_.push_back(std::move(pmu));
    }
    std::sort(reg.pmus_.begin(), reg.pmus_.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return reg;
}

const PmuInfo* PmuRegistry::find(const std::string& name) const {
    for (auto& p : pmus_)
        if (p.name == name) return &p;
    return nullptr;
}

std::string PmuRegistry::names() const {
    std::string s;
    for (auto& p : pmus_)
        s += (s.empty() ? "" : ", ") + p.name;
    return s;
}

const PmuInfo* PmuRegistry::firstAuxPmu() const {
    for (auto& p : pmus_)
        if (p.isAuxPmu()) return &p;
    return nullptr;
}

Expected<std::vector<int>> parseCpuList(const std::string& text) {
    std::vector<int> cpus;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, ',')) {
        if (part.empty()) continue;
        uint64_t lo = 0, hi = 0;
        auto dash = part.find('-');
        if (dash == std::string::npos) {
            if (!parseUnsigned(part, lo))
                return makeError("bad CPU '" + part + "' in CPU list '" + text + "'");
            hi = lo;
        } else if (!parseUnsigned(part.substr(0, dash), lo) || !parseUnsigned(part.substr(dash + 1), hi) ||
                   lo > hi) {
            return makeError("bad CPU range '" + part + "' in CPU list '" + text + "'");
        }
        if (hi > 65535) return makeError("CPU " + std::to_string(hi) + " out of range in '" + text + "'");
        for (uint64_t c = lo; c <= hi; ++c)
            cpus.push_back(int(c));
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    if (cpus.empty()) return makeError("CPU list '" + text + "' is empty");
    return cpus;
}

std::string formatCpuList(const std::vector<int>& cpus) {
    std::string s;
    for (size_t i = 0; i < cpus.size();) {
        size_t j = i;
        while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
            ++j;
        if (!s.empty()) s += ',';
        s += std::to_string(cpus[i]);
        if (j > i) s += '-' + std::to_string(cpus[j]);
        i = j + 1;
    }
    return s;
}

std::vector<int> onlineCpus() {
    if (auto v = readSmallFile("/sys/devices/system/cpu/online"))
        if (auto cpus = parseCpuList(*v)) return cpus.value();
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    std::vector<int> cpus;
    for (long i = 0; i < std::max(1L, n); ++i)
        cpus.push_back(int(i));
    return cpus;
}

}  // namespace auxscope
