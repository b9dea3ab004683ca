// SPDX-License-Identifier: GPL-3.0-or-later
#include "AuxEventConfig.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "AddressFilter.h"
#include "EventSpec.h"

namespace auxscope {
namespace fs = std::filesystem;

namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string sizeText(uint64_t bytes) {
    if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
    if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
    return std::to_string(bytes) + " bytes";
}

bool parseUnsigned(std::string_view s, uint64_t& out, int base) {
    if (base == 0) {
        base = 10;
        if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
            s.remove_prefix(2);
            base = 16;
        }
    } else if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
    }
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
    return ec == std::errc() && p == s.data() + s.size();
}

// The Intel PT driver prints every cap with "%x" (no 0x), so "249" means 0x249.
std::optional<uint64_t> capHex(const PmuInfo& pmu, const std::string& name) {
    auto it = pmu.caps.find(name);
    uint64_t v = 0;
    if (it == pmu.caps.end() || !parseUnsigned(it->second, v, 16)) return std::nullopt;
    return v;
}

// The SPE driver prints its caps with "%u".
std::optional<uint64_t> capDec(const PmuInfo& pmu, const std::string& name) {
    auto it = pmu.caps.find(name);
    uint64_t v = 0;
    if (it == pmu.caps.end() || !parseUnsigned(it->second, v, 10)) return std::nullopt;
    return v;
}

std::string capShown(const PmuInfo& pmu, const std::string& name) {
    auto it = pmu.caps.find(name);
    return it == pmu.caps.end() ? "missing" : it->second;
}

// "0,3,6,9" or "0-13": the values a caps bitmask allows (bit n set: value n allowed).
std::string allowedValues(uint64_t mask) {
    std::string s;
    for (unsigned v = 0; v < 64;) {
        if (!(mask >> v & 1)) {
            ++v;
            continue;
        }
        unsigned end = v;
        while (end + 1 < 64 && (mask >> (end + 1) & 1))
            ++end;
        if (!s.empty()) s += ',';
        if (end >= v + 2)
            s += std::to_string(v) + "-" + std::to_string(end);
        else if (end == v + 1)
            s += std::to_string(v) + "," + std::to_string(end);
        else
            s += std::to_string(v);
        v = end + 1;
    }
    return s.empty() ? "none" : s;
}

const char* targetName(FormatField::Target t) {
    switch (t) {
        case FormatField::Target::Config:
            return "config";
        case FormatField::Target::Config1:
            return "config1";
        case FormatField::Target::Config2:
            return "config2";
        case FormatField::Target::Config3:
            return "config3";
    }
    return "?";
}

std::string fieldText(const FormatField& f) {
    std::string s = std::string(targetName(f.target)) + ":";
    for (size_t i = 0; i < f.ranges.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(f.ranges[i].lo);
        if (f.ranges[i].hi != f.ranges[i].lo) s += "-" + std::to_string(f.ranges[i].hi);
    }
    return s;
}

__u64* configWord(perf_event_attr& a, FormatField::Target t) {
    switch (t) {
        case FormatField::Target::Config:
            return &a.config;
        case FormatField::Target::Config1:
            return &a.config1;
        case FormatField::Target::Config2:
            return &a.config2;
        case FormatField::Target::Config3:
            return nullptr;  // not in this build's uapi header
    }
    return nullptr;
}

// The bits a field covers in its config word.
uint64_t fieldBits(const FormatField& f) {
    uint64_t m = 0;
    for (auto& r : f.ranges) {
        unsigned n = r.hi - r.lo + 1;
        m |= (n == 64 ? ~0ull : ((1ull << n) - 1)) << r.lo;
    }
    return m;
}

// The value a field holds in `a`, low ranges first (the inverse of FormatField::apply).
uint64_t fieldValue(const FormatField& f, const perf_event_attr& a) {
    const __u64* w = configWord(const_cast<perf_event_attr&>(a), f.target);
    if (!w) return 0;
    uint64_t v = 0;
    unsigned shift = 0;
    for (auto& r : f.ranges) {
        unsigned n = r.hi - r.lo + 1;
        uint64_t mask = n == 64 ? ~0ull : ((1ull << n) - 1);
        v |= ((*w >> r.lo) & mask) << shift;
        shift += n;
    }
    return v;
}

void setField(const FormatField& f, perf_event_attr& a, uint64_t value) {
    uint64_t c0 = a.config, c1 = a.config1, c2 = a.config2, c3 = 0;
    if (f.apply(value, c0, c1, c2, c3)) {
        a.config = c0;
        a.config1 = c1;
        a.config2 = c2;
    }
}

AuxPmuKind kindOf(const std::string& name) {
    if (name == "intel_pt") return AuxPmuKind::IntelPt;
    if (name == "intel_bts") return AuxPmuKind::IntelBts;
    if (name == "cs_etm") return AuxPmuKind::CsEtm;
    return AuxPmuKind::ArmSpe;
}

std::string auxPmuNames(const PmuRegistry& pmus) {
    std::string s;
    for (auto& p : pmus.pmus())
        if (p.isAuxPmu()) s += (s.empty() ? "" : ", ") + p.name;
    return s.empty() ? "none on this machine" : s;
}

std::string termList(const PmuInfo& pmu) {
    std::string s;
    for (auto& [name, _] : pmu.format)
        s += (s.empty() ? "" : ", ") + name;
    return s.empty() ? "none" : s;
}

// Everything the per-PMU steps share.
struct Ctx {
    const PmuInfo& pmu;
    const AuxEventOptions& opts;
    AuxEventPlan& plan;
    perf_event_attr& attr;
    uint64_t userMask[3] = {0, 0, 0};  // bits the user's terms wrote, per config word
    bool userPeriod = false;
    bool userFreq = false;
    std::string sink;  // cs_etm "@sink"

    const FormatField* field(const std::string& term) const {
        auto it = pmu.format.find(term);
        return it == pmu.format.end() ? nullptr : &it->second;
    }
    bool has(const std::string& term) const { return field(term) != nullptr; }
    uint64_t value(const std::string& term) const {
        auto* f = field(term);
        return f ? fieldValue(*f, attr) : 0;
    }
    // perf's "changed by the user" test: did any user term write this term's bits?
    bool userSet(const std::string& term) const {
        auto* f = field(term);
        if (!f || f->target == FormatField::Target::Config3) return false;
        return (userMask[int(f->target)] & fieldBits(*f)) != 0;
    }
    // "term" for flags, "term=N" for fields, as the user would write it.
    std::string shown(const std::string& term) const {
        auto* f = field(term);
        if (f && f->width() == 1) return term;
        return term + "=" + std::to_string(value(term));
    }
    Error refuse(const std::string& what) const { return makeError(pmu.name + ": " + what); }
    void addDefault(const std::string& term, uint64_t value) {
        auto* f = field(term);
        if (!f) return;
        setField(*f, attr, value);
        std::string t = f->width() == 1 && value == 1 ? term : term + "=" + std::to_string(value);
        plan.defaultTerms += (plan.defaultTerms.empty() ? "" : ",") + t;
    }
};

// --- Intel PT -----------------------------------------------------------------------------

// perf's choice among allowed values: the largest one not above `target`, else the smallest.
int pickAllowed(uint64_t mask, int target) {
    int pick = -1;
    for (int pos = 0; pos < 64; ++pos) {
        if (!(mask >> pos & 1)) continue;
        if (pos <= target || pick < 0) pick = pos;
        if (pos >= target) break;
    }
    return pick;
}

struct DefaultTerm {
    std::string name;
    uint64_t value;
};

std::vector<DefaultTerm> intelPtDefaultTerms(const PmuInfo& pmu) {
    std::vector<DefaultTerm> t{{"tsc", 1}};
    // Missing caps files mean a kernel older than the cap: perf assumes MTC and CYC/PSB exist
    // then, but adds periods only when their bitmasks are published.
    uint64_t mtc = capHex(pmu, "mtc").value_or(1);
    uint64_t mtcPeriods = mtc ? capHex(pmu, "mtc_periods").value_or(0) : 0;
    if (mtcPeriods) {
        t.push_back({"mtc", 1});
        t.push_back({"mtc_period", uint64_t(pickAllowed(mtcPeriods, 3))});
    }
    uint64_t psbCyc = capHex(pmu, "psb_cyc").value_or(1);
    if (psbCyc && mtcPeriods) {
        if (uint64_t psbPeriods = capHex(pmu, "psb_periods").value_or(0))
            t.push_back({"psb_period", uint64_t(pickAllowed(psbPeriods, 3))});
    }
    if (pmu.format.count("pt") && pmu.format.count("branch")) {
        t.push_back({"pt", 1});
        t.push_back({"branch", 1});
    }
    std::vector<DefaultTerm> present;
    for (auto& d : t)
        if (pmu.format.count(d.name)) present.push_back(d);
    return present;
}

// A feature flag the hardware must advertise in caps/<cap>.
Expected<void> requireCap(const Ctx& c, const std::string& term, const std::string& cap) {
    if (!c.has(term) || c.value(term) == 0) return {};
    if (capHex(c.pmu, cap).value_or(0) != 0) return {};
    return c.refuse(c.shown(term) + " is not supported: caps/" + cap + " is " + capShown(c.pmu, cap));
}

// A field whose value must be a bit of the caps/<cap> bitmask, and that needs caps/<gate>.
Expected<void> requireAllowed(const Ctx& c, const std::string& term, const std::string& cap,
                              const std::string& gate, bool zeroAlwaysOk) {
    if (!c.has(term)) return {};
    uint64_t v = c.value(term);
    if (v == 0 && zeroAlwaysOk) return {};
    std::string who = c.userSet(term) ? term + "=" + std::to_string(v)
                                      : term + "=" + std::to_string(v) + " (perf's default)";
    if (capHex(c.pmu, gate).value_or(0) == 0)
        return c.refuse(who + " is not supported: caps/" + gate + " is " + capShown(c.pmu, gate));
    uint64_t allowed = capHex(c.pmu, cap).value_or(0);
    if (v < 64 && (allowed >> v & 1)) return {};
    return c.refuse(who + " is not supported: caps/" + cap + " is " + hex(allowed) +
                    " (allowed: " + allowedValues(allowed) + ")");
}

Expected<void> planIntelPt(Ctx& c) {
    const PmuInfo& pmu = c.pmu;
    // perf's default config first; the user's terms then overwrite exactly the fields they name.
    perf_event_attr d{};
    Ctx dc{pmu, c.opts, c.plan, d};
    for (auto& t : intelPtDefaultTerms(pmu))
        dc.addDefault(t.name, t.value);
    c.plan.defaultConfig = d.config;
    c.attr.config = (d.config & ~c.userMask[0]) | (c.attr.config & c.userMask[0]);
    if (!c.plan.defaultTerms.empty())
        c.plan.notes.push_back(
            "perf's default for intel_pt: " + c.plan.defaultTerms + " (config " + hex(d.config) +
            ", from caps/mtc, caps/mtc_periods, caps/psb_cyc, caps/psb_periods)" +
            (c.plan.userTerms.empty() ? "" : "; your terms override the fields they name"));

    // Bit 0 tells the driver to honour 'branch' instead of forcing it on; perf always sets it.
    if (auto* pt = c.field("pt"); pt && c.value("pt") == 0) {
        setField(*pt, c.attr, 1);
        c.plan.notes.push_back(
            "pt=0 makes no sense (it only lets 'branch' be honoured): set back to pt=1, as perf does");
    }

    // Bits no format term covers make the driver refuse the event.
    uint64_t known = 0;
    for (auto& [_, f] : pmu.format)
        if (f.target == FormatField::Target::Config) known |= fieldBits(f);
    if (uint64_t stray = c.attr.config & ~known)
        return c.refuse("config bits " + hex(stray) + " belong to no term in format/ (" + termList(pmu) +
                        "): the driver refuses them");
    if (c.attr.config1 || c.attr.config2)
        return c.refuse("config1/config2 are not used by intel_pt: the driver refuses them");

    // Cycle-accurate mode, its threshold and the PSB period all hang on caps/psb_cyc.
    if (auto r = requireCap(c, "cyc", "psb_cyc"); !r) return r;
    if (auto r = requireAllowed(c, "cyc_thresh", "cycle_thresholds", "psb_cyc", true); !r) return r;
    if (auto r = requireAllowed(c, "psb_period", "psb_periods", "psb_cyc", true); !r) return r;
    // Any MTC bit, even only a period, needs caps/mtc; the period must then be an allowed one.
    bool mtcOn = c.value("mtc") != 0 || c.value("mtc_period") != 0;
    if (mtcOn) {
        std::string term = c.value("mtc") ? "mtc" : "mtc_period";
        if (capHex(pmu, "mtc").value_or(0) == 0)
            return c.refuse(c.shown(term) + (c.userSet(term) ? "" : " (perf's default)") +
                            " is not supported: caps/mtc is " + capShown(pmu, "mtc"));
        if (auto r = requireAllowed(c, "mtc_period", "mtc_periods", "mtc", false); !r) return r;
    }
    if (auto r = requireCap(c, "ptw", "ptwrite"); !r) return r;
    if (auto r = requireCap(c, "fup_on_ptw", "ptwrite"); !r) return r;
    if (c.value("fup_on_ptw") && !c.value("ptw"))
        return c.refuse(
            "fup_on_ptw needs ptw (a FUP after each PTWRITE packet): the driver refuses it alone");
    if (auto r = requireCap(c, "pwr_evt", "power_event_trace"); !r) return r;
    if (auto r = requireCap(c, "event", "event_trace"); !r) return r;
    if (auto r = requireCap(c, "notnt", "tnt_disable"); !r) return r;

    if (c.has("branch") && c.value("branch") == 0)
        c.plan.notes.push_back(
            "branch=0: no control-flow packets (TNT/TIP/FUP), only what other terms enable; Broadwell "
            "kernels refuse "
            "it (erratum BDM106), which sysfs does not show");
    if (c.has("tsc") && c.value("tsc") == 0)
        c.plan.notes.push_back(
            "tsc=0: no timestamps, so trace cannot be matched to sideband (context switches, mmaps)");
    return {};
}

// --- CoreSight ETM ------------------------------------------------------------------------

// TRCIDRn of one CPU's ETMv4/ETE, or nullopt (ETMv3/PTM or no such file).
std::optional<uint64_t> readTrcidr(const fs::path& cpuDir, const char* reg) {
    auto text = readSmallFile(cpuDir / "trcidr" / reg);
    uint64_t v = 0;
    if (!text || !parseUnsigned(*text, v, 16)) return std::nullopt;
    return v;
}

// perf turns on timestamp and contextid per CPU where the ETM can produce them; the user's
// explicit request is an error where it cannot, a default is dropped with a note.
Expected<void> checkEtmPerCpu(Ctx& c, const std::string& term, bool (*supported)(uint64_t), const char* reg,
                              const char* why) {
    if (!c.has(term) || c.value(term) == 0) return {};
    fs::path dir = c.opts.sysfsRoot / c.pmu.name;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(dir, ec)) {
        std::string n = e.path().filename().string();
        if (n.rfind("cpu", 0) != 0 || n.size() < 4 || !std::isdigit(static_cast<unsigned char>(n[3])))
            continue;
        auto v = readTrcidr(e.path(), reg);
        if (!v || supported(*v)) continue;
        std::string file = c.pmu.name + "/" + n + "/trcidr/" + reg;
        if (c.userSet(term))
            return c.refuse(term + " is not supported on " + n + ": " + file + " is " + hex(*v) + " (" + why +
                            ")");
        setField(*c.field(term), c.attr, 0);
        c.plan.notes.push_back(term + " left off: " + file + " is " + hex(*v) + " (" + why + ")");
        return {};
    }
    return {};
}

Expected<void> planCsEtm(Ctx& c) {
    if (!c.sink.empty()) {
        if (c.attr.config2 & 0xffffffffull) {
            c.plan.notes.push_back("@" + c.sink + " ignored: sinkid= already selects the sink");
        } else {
            fs::path sinks = c.opts.sysfsRoot / c.pmu.name / "sinks";
            auto text = readSmallFile(sinks / c.sink);
            uint64_t id = 0;
            if (!text || !parseUnsigned(*text, id, 16) || id > 0xffffffffull) {
                std::string have;
                std::error_code ec;
                for (auto& e : fs::directory_iterator(sinks, ec))
                    have += (have.empty() ? "" : ", ") + e.path().filename().string();
                return c.refuse("sink '@" + c.sink + "' not found: no readable " + c.pmu.name + "/sinks/" +
                                c.sink + " (sinks here: " + (have.empty() ? "none" : have) + ")");
            }
            c.attr.config2 |= id;
            c.plan.notes.push_back("sink @" + c.sink + ": sinkid " + hex(id) + " from " + c.pmu.name +
                                   "/sinks/" + c.sink);
        }
    }
    if (c.opts.perCpu) {
        // Per-CPU trace needs timestamps to interleave with sideband and the PID to follow switches.
        for (const char* t : {"timestamp", "contextid"})
            if (!c.userSet(t)) c.addDefault(t, 1);
    }
    auto tsOk = [](uint64_t trcidr0) { return ((trcidr0 >> 24) & 0x1f) != 0; };
    if (auto r =
            checkEtmPerCpu(c, "timestamp", tsOk, "trcidr0", "TSSIZE, bits 28:24, is 0: no global timestamps");
        !r)
        return r;
    // Which CONTEXTIDR the "contextid" alias selects depends on the kernel's exception level.
    auto ctx1Ok = [](uint64_t trcidr2) { return ((trcidr2 >> 5) & 0x1f) == 4; };
    auto ctx2Ok = [](uint64_t trcidr2) {
        return ((trcidr2 >> 29) & 3) != 0 && ((trcidr2 >> 10) & 0x1f) >= 4;
    };
    if (auto r = checkEtmPerCpu(c, "contextid1", ctx1Ok, "trcidr2",
                                "CIDSIZE, bits 9:5, is not 4: no 32-bit CONTEXTIDR_EL1");
        !r)
        return r;
    if (auto r = checkEtmPerCpu(c, "contextid2", ctx2Ok, "trcidr2",
                                "VMIDOPT/VMIDSIZE cannot carry CONTEXTIDR_EL2");
        !r)
        return r;
    if (!c.plan.defaultTerms.empty())
        c.plan.notes.push_back("per-CPU defaults perf adds when unset: " + c.plan.defaultTerms);
    return {};
}

// --- Arm SPE ------------------------------------------------------------------------------

Expected<void> planArmSpe(Ctx& c) {
    if (c.userFreq)
        return c.refuse(
            "freq= is not supported: the SPE driver refuses frequency-based sampling; give period=N");
    auto minInterval = capDec(c.pmu, "min_interval");
    if (!c.userPeriod) {
        c.attr.sample_period = minInterval.value_or(4096);
        c.plan.notes.push_back("sampling interval " + std::to_string(c.attr.sample_period) +
                               (minInterval ? " operations (caps/min_interval)"
                                            : " operations (caps/min_interval missing: perf's fallback)"));
    } else if (minInterval && c.attr.sample_period < *minInterval) {
        c.plan.notes.push_back("period=" + std::to_string(c.attr.sample_period) +
                               " is below caps/min_interval (" + std::to_string(*minInterval) +
                               "): the driver raises it to " + std::to_string(*minInterval));
    }
    if (c.opts.perCpu && !c.userSet("ts_enable")) c.addDefault("ts_enable", 1);
    if (!c.plan.defaultTerms.empty())
        c.plan.notes.push_back("per-CPU default perf adds when unset: " + c.plan.defaultTerms);
    for (const char* t : {"pa_enable", "pct_enable"})
        if (c.value(t) && !c.opts.privileged)
            return c.refuse(std::string(t) +
                            " needs CAP_PERFMON (or root): the driver answers EACCES otherwise");
    // The filter capabilities (PMSIDR_EL1.FE/FT/FL) are not published in sysfs.
    std::string filters;
    for (const char* t : {"branch_filter", "load_filter", "store_filter", "event_filter", "min_latency"})
        if (c.value(t)) filters += (filters.empty() ? "" : ", ") + c.shown(t);
    if (!filters.empty())
        c.plan.notes.push_back(
            filters +
            ": needs the hardware's filtering support (PMSIDR_EL1), which sysfs does not show; "
            "the driver answers EOPNOTSUPP without it");
    c.attr.sample_type |= PERF_SAMPLE_DATA_SRC;
    if (c.value("pa_enable")) c.attr.sample_type |= PERF_SAMPLE_PHYS_ADDR;
    return {};
}

// --- Intel BTS ----------------------------------------------------------------------------

Expected<void> planIntelBts(Ctx& c) {
    if (c.opts.perCpu)
        return c.refuse(
            "per-CPU recording is not supported (perf refuses it too): trace a process or a command instead");
    if (!c.attr.exclude_kernel && !c.opts.privileged)
        return c.refuse("kernel tracing needs CAP_PERFMON (BTS leaks kernel addresses): add the u modifier");
    return {};
}

// --- AUX ring ----------------------------------------------------------------------------

Expected<void> planAuxRing(Ctx& c) {
    const size_t page = c.opts.pageSize ? c.opts.pageSize : size_t(sysconf(_SC_PAGESIZE));
    size_t pages = c.opts.auxPages;
    if (!pages) {
        pages = (c.opts.privileged ? 4 * kMiB : 128 * kKiB) / page;
        c.plan.notes.push_back("AUX ring " + sizeText(pages * page) + " per CPU (perf's default when " +
                               (c.opts.privileged ? "privileged" : "unprivileged") + ")");
    }
    const size_t bytes = pages * page;
    if (pages & (pages - 1))
        return c.refuse("AUX ring of " + std::to_string(pages) + " pages is not a power of two");
    size_t minBytes = 0;
    switch (c.plan.kind) {
        case AuxPmuKind::IntelPt:
        case AuxPmuKind::IntelBts:
            minBytes = c.opts.snapshot ? 4 * kKiB : 8 * kKiB;
            break;
        case AuxPmuKind::ArmSpe:
            minBytes = std::max<size_t>(8 * kKiB, 2 * page);  // the driver needs two pages at least
            break;
        case AuxPmuKind::CsEtm:
            minBytes = page;
            break;
    }
    if (bytes < minBytes)
        return c.refuse("AUX ring of " + sizeText(bytes) + " is too small: at least " + sizeText(minBytes));
    c.plan.auxPages = pages;
    c.plan.auxBytes = bytes;
    if (c.plan.kind == AuxPmuKind::IntelPt && !c.opts.snapshot) {
        // Wake the reader each quarter ring, as perf does, so trace is drained before it fills.
        uint64_t wm = bytes / 4;
        c.attr.aux_watermark = uint32_t(std::min<uint64_t>(wm, UINT32_MAX));
    }
    if (c.plan.kind == AuxPmuKind::IntelPt && c.opts.snapshot) {
        // Decoding starts at a PSB: a snapshot smaller than the PSB period may hold none.
        uint64_t psbBytes = 256;
        if (capHex(c.pmu, "topa_multiple_entries").value_or(0))
            psbBytes = 1ull << (c.value("psb_period") + 11);
        if (bytes <= psbBytes + 256)
            c.plan.notes.push_back("snapshot of " + sizeText(bytes) +
                                   " may be too small for the PSB period (" + std::to_string(psbBytes) +
                                   " bytes): it may hold no sync point");
    }
    if (c.opts.snapshot)
        c.plan.notes.push_back("snapshot mode: map the AUX ring read-only so the hardware overwrites it");
    return {};
}

// --- address filters ----------------------------------------------------------------------

Expected<void> planFilters(Ctx& c) {
    if (c.opts.filter.empty()) return {};
    auto specs = parseAddrFilters(c.opts.filter);
    if (!specs) return c.refuse(specs.error().message);
    if (c.plan.kind == AuxPmuKind::IntelPt && capHex(c.pmu, "ip_filtering").value_or(0) == 0)
        return c.refuse("address filters are not supported: caps/ip_filtering is " +
                        capShown(c.pmu, "ip_filtering"));
    if (c.pmu.nrAddrFilters <= 0)
        return c.refuse(
            "address filters are not supported: nr_addr_filters is " +
            std::string(c.pmu.nrAddrFilters ? std::to_string(c.pmu.nrAddrFilters) : "0 or missing"));
    if (int(specs->size()) > c.pmu.nrAddrFilters)
        return c.refuse(std::to_string(specs->size()) + " address filters given but nr_addr_filters is " +
                        std::to_string(c.pmu.nrAddrFilters));
    std::vector<ResolvedAddrFilter> resolved;
    for (auto& s : *specs) {
        if (c.plan.kind == AuxPmuKind::IntelPt) {
            // Intel PT compares against address ranges only: no single-address triggers, no 'start'.
            if (s.action == AddrFilterAction::Start)
                return c.refuse(
                    "address filter '" + s.text +
                    "' is not supported: Intel PT has no 'start' filters (use 'filter' for a region)");
            if (s.action == AddrFilterAction::Stop && !s.hasSize)
                return c.refuse(
                    "address filter '" + s.text +
                    "' is not supported: Intel PT filters regions only (use 'tracestop' or stop ADDR/SIZE)");
        }
        auto r = resolveAddrFilter(s, AddrFilterResolveOptions{c.opts.kallsyms});
        if (!r) return c.refuse(r.error().message);
        resolved.push_back(std::move(r.value()));
    }
    c.plan.addrFilter = kernelFilterString(resolved);
    c.plan.notes.push_back("address filter for PERF_EVENT_IOC_SET_FILTER: " + c.plan.addrFilter);
    return {};
}

struct SplitEvent {
    std::string pmu, terms, mods;
};

}  // namespace

std::string auxDefaultTerms(const PmuInfo& pmu) {
    if (pmu.name != "intel_pt") return {};
    std::string s;
    for (auto& t : intelPtDefaultTerms(pmu)) {
        auto& f = pmu.format.at(t.name);
        s += (s.empty() ? "" : ",") +
             (f.width() == 1 && t.value == 1 ? t.name : t.name + "=" + std::to_string(t.value));
    }
    return s;
}

Expected<AuxEventPlan> planAuxEvent(const PmuRegistry& pmus, const std::string& eventSpecIn,
                                    const AuxEventOptions& options) {
    std::string spec = eventSpecIn;
    while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back())))
        spec.pop_back();
    while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front())))
        spec.erase(spec.begin());
    if (EventParser::splitList(spec).size() != 1)
        return makeError("AUX event '" + spec + "': give exactly one event (PMU/terms/modifiers)");
    auto first = spec.find('/');
    auto second = first == std::string::npos ? first : spec.find('/', first + 1);
    if (second == std::string::npos)
        return makeError("AUX event '" + spec +
                         "': expected PMU/terms/[modifiers], e.g. intel_pt// or cs_etm/timestamp/u");
    SplitEvent ev{spec.substr(0, first), spec.substr(first + 1, second - first - 1), spec.substr(second + 1)};

    const PmuInfo* pmu = pmus.find(ev.pmu);
    if (!pmu)
        return makeError("AUX event '" + spec + "': unknown PMU '" + ev.pmu + "' (no " +
                         (options.sysfsRoot / ev.pmu).string() +
                         " on this machine; AUX PMUs here: " + auxPmuNames(pmus) + ")");
    if (!pmu->isAuxPmu())
        return makeError(
            "AUX event '" + spec + "': '" + ev.pmu +
            "' is not an AUX-area trace PMU (those are intel_pt, intel_bts, cs_etm, arm_spe_N; here: " +
            auxPmuNames(pmus) + ")");
    if (!options.traceUser && !options.traceKernel)
        return makeError("AUX event '" + spec + "': neither user nor kernel tracing is selected");

    AuxEventPlan plan;
    plan.pmuName = pmu->name;
    plan.kind = kindOf(pmu->name);
    plan.eventName = spec;
    plan.snapshot = options.snapshot;
    Ctx c{*pmu, options, plan, plan.attr};

    // Check each term against format/ first so refusals name the term and its file; the bits
    // themselves are then computed by the shared EventParser.
    std::string parserTerms;
    {
        std::stringstream ss(ev.terms);
        std::string t;
        while (std::getline(ss, t, ',')) {
            while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back())))
                t.pop_back();
            while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front())))
                t.erase(t.begin());
            if (t.empty()) continue;
            if (t[0] == '@') {
                if (plan.kind != AuxPmuKind::CsEtm)
                    return c.refuse("term '" + t +
                                    "': '@sink' selects a CoreSight sink and only applies to cs_etm");
                c.sink = t.substr(1);
                continue;
            }
            auto eq = t.find('=');
            std::string key = t.substr(0, eq);
            std::string valueText = eq == std::string::npos ? "" : t.substr(eq + 1);
            uint64_t value = 1;
            if (eq != std::string::npos && !parseUnsigned(valueText, value, 0) && key != "name")
                return c.refuse("term '" + t + "' needs a number (decimal or 0x hex)");
            if (key == "name") {
                parserTerms += (parserTerms.empty() ? "" : ",") + t;
                continue;
            }
            if (key == "period" || key == "freq") {
                (key == "period" ? c.userPeriod : c.userFreq) = true;
            } else if (key == "config" || key == "config1" || key == "config2") {
                c.userMask[key == "config" ? 0 : key == "config1" ? 1 : 2] = ~0ull;
            } else if (auto* f = c.field(key)) {
                if (f->target == FormatField::Target::Config3)
                    return c.refuse("term '" + key + "' is not supported by this build: format/" + key +
                                    " is " + fieldText(*f) +
                                    " and this build's perf_event_attr has no config3");
                unsigned w = f->width();
                if (w < 64 && (value >> w) != 0)
                    return c.refuse(key + "=" + valueText + " does not fit: format/" + key + " is " +
                                    fieldText(*f) + " (" + std::to_string(w) + " bits, at most " +
                                    std::to_string((1ull << w) - 1) + ")");
                c.userMask[int(f->target)] |= fieldBits(*f);
            } else {
                return c.refuse("unknown term '" + key + "' (no " + pmu->name + "/format/" + key + "; " +
                                pmu->name + "'s terms: " + termList(*pmu) + ")");
            }
            plan.userTerms[key] = value;
            parserTerms += (parserTerms.empty() ? "" : ",") + t;
        }
    }
    EventParser parser(pmus);
    auto parsed = parser.parse(pmu->name + "/" + parserTerms + "/" + ev.mods);
    if (!parsed) return makeError("AUX event '" + spec + "': " + parsed.error().message);
    plan.attr = parsed->front().attr;

    // Privilege levels: modifiers in the string win; otherwise the options decide.
    const bool modsChoose = ev.mods.find_first_of("ukh") != std::string::npos;
    if (!modsChoose && !(options.traceUser && options.traceKernel)) {
        plan.attr.exclude_user = !options.traceUser;
        plan.attr.exclude_kernel = !options.traceKernel;
        plan.attr.exclude_hv = 1;
    }
    // perf traces the host only unless asked for the guest (G modifier).
    if (ev.mods.find('G') == std::string::npos) plan.attr.exclude_guest = 1;

    // AUX events produce trace, not samples: perf fixes the period at 1 (SPE: its interval).
    if (plan.kind != AuxPmuKind::ArmSpe) {
        if (c.userPeriod || c.userFreq)
            plan.notes.push_back("period=/freq= ignored: " + pmu->name + " samples nothing");
        plan.attr.freq = 0;
        plan.attr.sample_period = 1;
    }
    plan.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_IDENTIFIER;
    if (options.perCpu) plan.attr.sample_type |= PERF_SAMPLE_CPU;
    plan.attr.read_format = PERF_FORMAT_ID;
    plan.attr.sample_id_all = 1;
    plan.attr.disabled = 1;

    Expected<void> r;
    switch (plan.kind) {
        case AuxPmuKind::IntelPt:
            r = planIntelPt(c);
            break;
        case AuxPmuKind::CsEtm:
            r = planCsEtm(c);
            break;
        case AuxPmuKind::ArmSpe:
            r = planArmSpe(c);
            break;
        case AuxPmuKind::IntelBts:
            r = planIntelBts(c);
            break;
    }
    if (!r) return r.error();
    if (auto a = planAuxRing(c); !a) return a.error();
    if (auto f = planFilters(c); !f) return f.error();
    return plan;
}

std::string auxEventHelp(const PmuInfo& pmu) {
    struct Desc {
        const char* term;
        const char* what;
        const char* gate;    // caps/ file that must be non-zero
        const char* values;  // caps/ bitmask of allowed values
    };
    static const Desc kDescs[] = {
        {"pt", "lets 'branch' be honoured (perf always sets it)", nullptr, nullptr},
        {"branch", "control-flow packets (TNT, TIP, FUP)", nullptr, nullptr},
        {"tsc", "TSC timestamp packets", nullptr, nullptr},
        {"mtc", "mini time counter packets", "mtc", nullptr},
        {"mtc_period", "MTC every 2^N crystal clock ticks", "mtc", "mtc_periods"},
        {"cyc", "cycle-accurate packets (CYC)", "psb_cyc", nullptr},
        {"cyc_thresh", "CYC at most every 2^(N-1) cycles", "psb_cyc", "cycle_thresholds"},
        {"psb_period", "PSB sync point every 2^(N+11) bytes", "psb_cyc", "psb_periods"},
        {"noretcomp", "no return compression: a TIP for every return", nullptr, nullptr},
        {"ptw", "PTWRITE packets", "ptwrite", nullptr},
        {"fup_on_ptw", "a FUP after each PTWRITE", "ptwrite", nullptr},
        {"pwr_evt", "power event packets", "power_event_trace", nullptr},
        {"event", "event trace packets", "event_trace", nullptr},
        {"notnt", "no TNT packets", "tnt_disable", nullptr},
        {"cycacc", "cycle-accurate trace", nullptr, nullptr},
        {"timestamp", "timestamps (perf adds it per CPU)", nullptr, nullptr},
        {"contextid", "PID tracing through the CONTEXTIDR the kernel uses (perf adds it per CPU)", nullptr,
         nullptr},
        {"contextid1", "trace CONTEXTIDR_EL1", nullptr, nullptr},
        {"contextid2", "trace CONTEXTIDR_EL2", nullptr, nullptr},
        {"retstack", "return stack", nullptr, nullptr},
        {"branch_broadcast", "broadcast every branch address", nullptr, nullptr},
        {"sinkid", "sink selector (or write @SINK)", nullptr, nullptr},
        {"configid", "CoreSight configuration selector", nullptr, nullptr},
        {"preset", "preset of the selected configuration", nullptr, nullptr},
        {"cc_threshold", "cycle count threshold", nullptr, nullptr},
        {"ts_enable", "timestamps (perf adds it per CPU)", nullptr, nullptr},
        {"pa_enable", "physical addresses (needs CAP_PERFMON)", nullptr, nullptr},
        {"pct_enable", "physical timestamps (needs CAP_PERFMON)", nullptr, nullptr},
        {"jitter", "randomise the sampling interval", nullptr, nullptr},
        {"branch_filter", "sample branches only", nullptr, nullptr},
        {"load_filter", "sample loads only", nullptr, nullptr},
        {"store_filter", "sample stores only", nullptr, nullptr},
        {"event_filter", "PMSEVFR_EL1 event mask", nullptr, nullptr},
        {"min_latency", "minimum latency to sample", nullptr, nullptr},
    };
    const bool pt = pmu.name == "intel_pt";
    std::ostringstream o;
    o << pmu.name << " (perf type " << pmu.type << "): AUX-area trace PMU\n";
    if (pmu.format.empty()) o << "  no format terms\n";
    size_t width = 0;
    for (auto& [name, _] : pmu.format)
        width = std::max(width, name.size());
    for (auto& [name, f] : pmu.format) {
        std::string line = "  " + name + std::string(width - name.size() + 2, ' ') + fieldText(f);
        line += std::string(line.size() < width + 20 ? width + 20 - line.size() : 1, ' ');
        const Desc* d = nullptr;
        for (auto& k : kDescs)
            if (name == k.term) d = &k;
        if (d) line += d->what;
        if (pt && d && d->gate) {
            uint64_t gate = capHex(pmu, d->gate).value_or(0);
            if (!gate)
                line += "; NOT SUPPORTED here (caps/" + std::string(d->gate) + " is " +
                        capShown(pmu, d->gate) + ")";
            else if (d->values) {
                uint64_t mask = capHex(pmu, d->values).value_or(0);
                line += "; allowed: " + allowedValues(mask) + " (caps/" + d->values + " " + hex(mask) + ")";
            }
        }
        if (f.target == FormatField::Target::Config3) line += "; not settable by this build (config3)";
        o << line << "\n";
    }
    if (auto def = auxDefaultTerms(pmu); !def.empty()) o << "  default: " << def << "\n";
    if (!pmu.caps.empty()) {
        o << "  caps:";
        for (auto& [k, v] : pmu.caps)
            o << " " << k << "=" << v;
        o << "\n";
    }
    bool filters = pmu.nrAddrFilters > 0 && (!pt || capHex(pmu, "ip_filtering").value_or(0));
    if (filters)
        o << "  address filters: up to " << pmu.nrAddrFilters
          << (pt ? " (regions only: 'filter' or 'tracestop')" : " (filter, start, stop, tracestop)") << "\n";
    else
        o << "  address filters: not supported\n";
    return o.str();
}

Expected<std::string> auxEventStringFromToggles(const AuxToggles& t) {
    if (!t.user && !t.kernel) return makeError("AUX event: neither user nor kernel tracing is selected");
    std::vector<std::string> terms;
    auto flag = [&](const char* name, const std::optional<bool>& v) {
        if (v) terms.push_back(*v ? std::string(name) : std::string(name) + "=0");
    };
    auto num = [&](const char* name, const std::optional<unsigned>& v) {
        if (v) terms.push_back(std::string(name) + "=" + std::to_string(*v));
    };
    flag("branch", t.branch);
    flag("tsc", t.tsc);
    flag("mtc", t.mtc);
    num("mtc_period", t.mtcPeriod);
    flag("cyc", t.cyc);
    num("cyc_thresh", t.cycThresh);
    flag("noretcomp", t.noretcomp);
    num("psb_period", t.psbPeriod);
    flag("ptw", t.ptwrite);
    for (const auto& term : t.terms)
        if (!term.empty()) terms.push_back(term);
    std::string s = t.pmu + "/";
    for (size_t i = 0; i < terms.size(); ++i)
        s += (i ? "," : "") + terms[i];
    s += "/";
    if (!(t.user && t.kernel)) s += t.user ? "u" : "k";
    return s;
}

Expected<AuxEventPlan> planAuxEventFromToggles(const PmuRegistry& pmus, const AuxToggles& toggles,
                                               AuxEventOptions options) {
    auto spec = auxEventStringFromToggles(toggles);
    if (!spec) return spec.error();
    options.filter = toggles.filter;
    return planAuxEvent(pmus, *spec, options);
}

}  // namespace auxscope
