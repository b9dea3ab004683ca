// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtConfig.h"

#include <cerrno>
#include <cstdlib>

#include "perfdata/AuxtraceInfo.h"

namespace auxscope {

std::optional<uint64_t> parsePtNumber(std::string_view text) {
    // strtoull would skip leading blanks and accept a sign; a flag value must be a plain number.
    if (text.empty() || !(text[0] >= '0' && text[0] <= '9')) return std::nullopt;
    std::string copy(text);
    char* rest = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(copy.c_str(), &rest, 0);
    if (errno != 0 || *rest != '\0') return std::nullopt;
    return static_cast<uint64_t>(value);
}

Expected<PtCpuIdentity> parsePtCpu(std::string_view text) {
    auto bad = [&] {
        return makeError("cpu '" + std::string(text) +
                         "' must be given as family/model[/stepping], e.g. 6/85/4");
    };
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (true) {
        size_t slash = text.find('/', start);
        parts.push_back(text.substr(start, slash == std::string_view::npos ? slash : slash - start));
        if (slash == std::string_view::npos) break;
        start = slash + 1;
    }
    if (parts.size() < 2 || parts.size() > 3) return bad();
    auto family = parsePtNumber(parts[0]);
    auto model = parsePtNumber(parts[1]);
    auto stepping = parts.size() == 3 ? parsePtNumber(parts[2]) : std::optional<uint64_t>(0);
    if (!family || !model || !stepping || *family > 0xffff || *model > 0xff || *stepping > 0xff) return bad();
    return PtCpuIdentity{static_cast<uint16_t>(*family), static_cast<uint8_t>(*model),
                         static_cast<uint8_t>(*stepping)};
}

namespace {

Expected<uint64_t> flagValue(const std::string& flag, const std::optional<std::string>& text, uint64_t max) {
    if (!text) return makeError(flag + ": missing value");
    auto value = parsePtNumber(*text);
    if (!value) return makeError(flag + ": bad value '" + *text + "' (a number is expected)");
    if (*value > max)
        return makeError(flag + ": value " + *text + " too big (at most " + std::to_string(max) + ")");
    return *value;
}

}  // namespace

Expected<bool> parsePtConfigFlag(PtConfigOptions& options, const std::string& flag,
                                 const std::optional<std::string>& value) {
    if (flag == "--cpu") {
        if (!value) return makeError("--cpu: missing value");
        if (*value == "none") {
            options.cpu.reset();
        } else {
            auto cpu = parsePtCpu(*value);
            if (!cpu) return cpu.error();
            options.cpu = *cpu;
        }
        return true;
    }
    struct NumberFlag {
        const char* name;
        uint64_t max;
        void (*store)(PtConfigOptions&, uint64_t);
    };
    static const NumberFlag kNumberFlags[] = {
        {"--mtc-freq", 0xff, [](PtConfigOptions& o, uint64_t v) { o.mtcFreq = static_cast<uint8_t>(v); }},
        {"--nom-freq", 0xff, [](PtConfigOptions& o, uint64_t v) { o.nomFreq = static_cast<uint8_t>(v); }},
        {"--cpuid-0x15.eax", 0xffffffff,
         [](PtConfigOptions& o, uint64_t v) { o.cpuid15Eax = static_cast<uint32_t>(v); }},
        {"--cpuid-0x15.ebx", 0xffffffff,
         [](PtConfigOptions& o, uint64_t v) { o.cpuid15Ebx = static_cast<uint32_t>(v); }},
    };
    for (const NumberFlag& number : kNumberFlags) {
        if (flag != number.name) continue;
        auto n = flagValue(flag, value, number.max);
        if (!n) return n.error();
        number.store(options, *n);
        return true;
    }
    if (flag == "--cpuid-15") {
        // One flag for the pair, as perf.data stores it: "EAX,EBX".
        if (!value) return makeError("--cpuid-15: missing value EAX,EBX");
        const std::string& pair = *value;
        size_t comma = pair.find(',');
        auto eax = comma == std::string::npos ? std::nullopt : parsePtNumber(pair.substr(0, comma));
        auto ebx = comma == std::string::npos ? std::nullopt : parsePtNumber(pair.substr(comma + 1));
        if (!eax || !ebx || *eax > 0xffffffff || *ebx > 0xffffffff)
            return makeError("--cpuid-15: bad value '" + pair + "' (EAX,EBX expected, e.g. 2,308)");
        options.cpuid15Eax = static_cast<uint32_t>(*eax);
        options.cpuid15Ebx = static_cast<uint32_t>(*ebx);
        return true;
    }
    // --filter:addrN_cfg / _a / _b with N in 0..3.
    const std::string prefix = "--filter:addr";
    if (flag.rfind(prefix, 0) == 0 && flag.size() > prefix.size() + 2 && flag[prefix.size()] >= '0' &&
        flag[prefix.size()] <= '3' && flag[prefix.size() + 1] == '_') {
        PtAddressRange& range = options.addressRanges[flag[prefix.size()] - '0'];
        std::string field = flag.substr(prefix.size() + 2);
        if (field == "cfg") {
            auto n = flagValue(flag, value, 15);
            if (!n) return n.error();
            range.config = static_cast<uint8_t>(*n);
        } else if (field == "a" || field == "b") {
            auto n = flagValue(flag, value, UINT64_MAX);
            if (!n) return n.error();
            (field == "a" ? range.begin : range.end) = *n;
        } else {
            return false;
        }
        return true;
    }
    return false;
}

PtConfigOptions ptConfigFromPerf(const IntelPtInfo& info, uint64_t attrConfig, std::string_view cpuid) {
    PtConfigOptions options;
    if (info.mtcFreqBits) {
        // The field's value, shifted down from where the PMU's format puts it.
        uint64_t field = attrConfig & info.mtcFreqBits;
        uint64_t lowest = info.mtcFreqBits & (~info.mtcFreqBits + 1);
        options.mtcFreq = static_cast<uint8_t>(field / lowest);
    }
    // CPUID 0x15 gives TSC/CTC as EBX/EAX; perf stores them as n/d.
    options.cpuid15Eax = static_cast<uint32_t>(info.tscCtcRatioD);
    options.cpuid15Ebx = static_cast<uint32_t>(info.tscCtcRatioN);
    options.nomFreq = static_cast<uint8_t>(info.maxNonTurboRatio);
    // perf's x86 HEADER_CPUID: "vendor,family,model,stepping".
    std::vector<std::string_view> parts;
    for (size_t start = 0;;) {
        size_t comma = cpuid.find(',', start);
        parts.push_back(cpuid.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    if (parts.size() == 4 && parts[0] == "GenuineIntel") {
        auto family = parsePtNumber(parts[1]), model = parsePtNumber(parts[2]),
             stepping = parsePtNumber(parts[3]);
        if (family && model && stepping && *family <= 0xffff && *model <= 0xff && *stepping <= 0xff)
            options.cpu = PtCpuIdentity{static_cast<uint16_t>(*family), static_cast<uint8_t>(*model),
                                        static_cast<uint8_t>(*stepping)};
    }
    return options;
}

PtConfig makePtConfig(const PtConfigOptions& options, const uint8_t* begin, const uint8_t* end) {
    PtConfig result;
    pt_config& config = result.config;
    pt_config_init(&config);
    // libipt never writes through begin/end; its struct just is not const-correct.
    config.begin = const_cast<uint8_t*>(begin);
    config.end = const_cast<uint8_t*>(end);
    if (options.cpu) {
        config.cpu.vendor = pcv_intel;
        config.cpu.family = options.cpu->family;
        config.cpu.model = options.cpu->model;
        config.cpu.stepping = options.cpu->stepping;
        int status = pt_cpu_errata(&config.errata, &config.cpu);
        if (status < 0) result.errataError = status;
    }
    config.mtc_freq = options.mtcFreq;
    config.nom_freq = options.nomFreq;
    config.cpuid_0x15_eax = options.cpuid15Eax;
    config.cpuid_0x15_ebx = options.cpuid15Ebx;
    pt_conf_addr_filter& filter = config.addr_filter;
    filter.config.addr_cfg = 0;
    for (int n = 0; n < 4; ++n)
        filter.config.addr_cfg |= static_cast<uint64_t>(options.addressRanges[n].config & 0xf) << (4 * n);
    filter.addr0_a = options.addressRanges[0].begin;
    filter.addr0_b = options.addressRanges[0].end;
    filter.addr1_a = options.addressRanges[1].begin;
    filter.addr1_b = options.addressRanges[1].end;
    filter.addr2_a = options.addressRanges[2].begin;
    filter.addr2_b = options.addressRanges[2].end;
    filter.addr3_a = options.addressRanges[3].begin;
    filter.addr3_b = options.addressRanges[3].end;
    return result;
}

std::string ptErrorName(int errorCode) {
    const char* name = pt_errstr(pt_errcode(errorCode));
    return name ? name : "unknown error " + std::to_string(errorCode);
}

}  // namespace auxscope
