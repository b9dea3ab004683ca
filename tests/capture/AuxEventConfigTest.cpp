// SPDX-License-Identifier: GPL-3.0-or-later
// AUX event planning. No trace PMU exists on this machine, so each one is laid out in a
// temporary directory exactly as its kernel driver publishes it (type, format/*, caps/* with the
// driver's number format, nr_addr_filters, cs_etm's sinks/ and cpuN/trcidr/); address filters are
// resolved against a real ELF built with the tests and against this machine's /proc/kallsyms.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "AddressFilter.h"
#include "AuxEventConfig.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

// Intel PT format terms as current kernels publish them (arch/x86/events/intel/pt.c).
const Pairs kPtFormat = {
    {"pt", "config:0"},
    {"cyc", "config:1"},
    {"pwr_evt", "config:4"},
    {"fup_on_ptw", "config:5"},
    {"mtc", "config:9"},
    {"tsc", "config:10"},
    {"noretcomp", "config:11"},
    {"ptw", "config:12"},
    {"branch", "config:13"},
    {"event", "config:31"},
    {"notnt", "config:55"},
    {"mtc_period", "config:14-17"},
    {"cyc_thresh", "config:19-22"},
    {"psb_period", "config:24-27"},
};

// A Skylake client: the driver prints every cap with %x, so "249" is 0x249.
const Pairs kSkylakeCaps = {
    {"max_subleaf", "1"},
    {"cr3_filtering", "1"},
    {"psb_cyc", "1"},
    {"ip_filtering", "1"},
    {"mtc", "1"},
    {"ptwrite", "0"},
    {"power_event_trace", "0"},
    {"event_trace", "0"},
    {"tnt_disable", "0"},
    {"topa_output", "1"},
    {"topa_multiple_entries", "1"},
    {"single_range_output", "1"},
    {"output_subsys", "0"},
    {"payloads_lip", "0"},
    {"num_address_ranges", "2"},
    {"mtc_periods", "249"},
    {"cycle_thresholds", "3fff"},
    {"psb_periods", "3f"},
};

// Broadwell: first-generation PT, no MTC, no CYC, no IP filtering (so no nr_addr_filters file).
const Pairs kBroadwellCaps = {
    {"max_subleaf", "0"},
    {"cr3_filtering", "1"},
    {"psb_cyc", "0"},
    {"ip_filtering", "0"},
    {"mtc", "0"},
    {"ptwrite", "0"},
    {"power_event_trace", "0"},
    {"topa_output", "1"},
    {"topa_multiple_entries", "1"},
    {"single_range_output", "0"},
    {"num_address_ranges", "0"},
    {"mtc_periods", "0"},
    {"cycle_thresholds", "0"},
    {"psb_periods", "0"},
};

// drivers/hwtracing/coresight/coresight-etm-perf.c, kernel running at EL1.
const Pairs kEtmFormat = {
    {"cycacc", "config:12"},          {"contextid", "config:14"},       {"contextid1", "config:14"},
    {"contextid2", "config:15"},      {"timestamp", "config:28"},       {"retstack", "config:29"},
    {"sinkid", "config2:0-31"},       {"preset", "config:0-3"},         {"configid", "config2:32-63"},
    {"branch_broadcast", "config:8"}, {"cc_threshold", "config3:0-11"},
};

// drivers/perf/arm_spe_pmu.c; its caps are printed with %u.
const Pairs kSpeFormat = {
    {"ts_enable", "config:0"},     {"pa_enable", "config:1"},        {"pct_enable", "config:2"},
    {"jitter", "config:16"},       {"branch_filter", "config:32"},   {"load_filter", "config:33"},
    {"store_filter", "config:34"}, {"event_filter", "config1:0-63"}, {"min_latency", "config2:0-11"},
};
const Pairs kSpeCaps = {{"arch_inst", "1"}, {"ernd", "0"}, {"count_size", "12"}, {"min_interval", "1024"}};

constexpr uint64_t kSkylakeDefault = 0x300e601;  // tsc,mtc,mtc_period=3,psb_period=3,pt,branch

class AuxConfig : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> n{0};
        root = fs::temp_directory_path() /
               ("auxscope-auxcfg-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        fs::create_directories(root);
        pmu(root, "intel_pt", 8, kPtFormat, kSkylakeCaps, 2);
        pmu(root, "intel_bts", 7, {}, {}, 0);
        pmu(root, "cs_etm", 9, kEtmFormat, {}, 8);
        fs::create_directories(root / "cs_etm" / "sinks");
        write(root / "cs_etm" / "sinks" / "tmc_etr0", "0x2f3b1a4c");
        for (const char* cpu : {"cpu0", "cpu1"}) {
            fs::create_directories(root / "cs_etm" / cpu / "trcidr");
            write(root / "cs_etm" / cpu / "trcidr" / "trcidr0", "0x28000ea1");  // TSSIZE 8: 64-bit
            write(root / "cs_etm" / cpu / "trcidr" / "trcidr2", "0x20001080");  // CIDSIZE 4, VMID ok
        }
        pmu(root, "arm_spe_0", 10, kSpeFormat, kSpeCaps, 0);
        pmu(root, "cpu", 4, {{"event", "config:0-7"}}, {}, 0);
        reg = PmuRegistry::discover(root);
        opts.sysfsRoot = root;
        opts.pageSize = 4096;
    }
    void TearDown() override { fs::remove_all(root); }

    static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text << "\n"; }
    static void pmu(const fs::path& at, const std::string& name, int type, const Pairs& format,
                    const Pairs& caps, int filters) {
        fs::create_directories(at / name);
        write(at / name / "type", std::to_string(type));
        if (!format.empty()) fs::create_directories(at / name / "format");
        for (auto& [k, v] : format)
            write(at / name / "format" / k, v);
        if (!caps.empty()) fs::create_directories(at / name / "caps");
        for (auto& [k, v] : caps)
            write(at / name / "caps" / k, v);
        if (filters) write(at / name / "nr_addr_filters", std::to_string(filters));
    }

    AuxEventPlan plan(const std::string& spec) {
        auto p = planAuxEvent(reg, spec, opts);
        EXPECT_TRUE(p) << spec << ": " << p.error().message;
        return p ? p.value() : AuxEventPlan{};
    }
    std::string refusal(const std::string& spec) {
        auto p = planAuxEvent(reg, spec, opts);
        EXPECT_FALSE(p) << spec << " was accepted";
        return p ? std::string() : p.error().message;
    }

    fs::path root;
    PmuRegistry reg;
    AuxEventOptions opts;
};

}  // namespace

// --- Intel PT ---------------------------------------------------------------------------------

TEST_F(AuxConfig, IntelPtDefaultIsPerfsDefault) {
    auto p = plan("intel_pt//");
    EXPECT_EQ(p.kind, AuxPmuKind::IntelPt);
    EXPECT_EQ(p.attr.type, 8u);
    EXPECT_EQ(p.attr.size, sizeof(perf_event_attr));
    EXPECT_EQ(p.attr.config, kSkylakeDefault);
    EXPECT_EQ(p.defaultConfig, kSkylakeDefault);
    EXPECT_EQ(p.defaultTerms, "tsc,mtc,mtc_period=3,psb_period=3,pt,branch");
    EXPECT_EQ(p.attr.config1, 0u);
    EXPECT_EQ(p.attr.sample_period, 1u);
    EXPECT_FALSE(p.attr.freq);
    EXPECT_EQ(p.attr.sample_type, uint64_t(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                           PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER));
    EXPECT_EQ(p.attr.read_format, uint64_t(PERF_FORMAT_ID));
    EXPECT_TRUE(p.attr.disabled);
    EXPECT_TRUE(p.attr.sample_id_all);
    EXPECT_TRUE(p.attr.exclude_guest);
    EXPECT_FALSE(p.attr.exclude_user);
    EXPECT_FALSE(p.attr.exclude_kernel);
    // 4 MiB ring (perf's privileged default), woken each quarter.
    EXPECT_EQ(p.auxPages, 1024u);
    EXPECT_EQ(p.attr.aux_watermark, 1024u * 1024u);
    EXPECT_TRUE(p.addrFilter.empty());
    EXPECT_TRUE(p.userTerms.empty());
    EXPECT_EQ(auxDefaultTerms(*reg.find("intel_pt")), p.defaultTerms);
}

TEST_F(AuxConfig, IntelPtUserTermsOverrideOnlyTheirFields) {
    auto p = plan("intel_pt/cyc,cyc_thresh=2,mtc_period=6,noretcomp/u");
    const uint64_t mtcPeriodBits = 0xfull << 14;
    uint64_t want =
        (kSkylakeDefault & ~mtcPeriodBits) | (6ull << 14) | (1ull << 1) | (2ull << 19) | (1ull << 11);
    EXPECT_EQ(p.attr.config, want) << hex(p.attr.config);
    EXPECT_TRUE(p.attr.exclude_kernel);
    EXPECT_FALSE(p.attr.exclude_user);
    EXPECT_TRUE(p.attr.exclude_hv);
    EXPECT_EQ(p.userTerms.at("cyc_thresh"), 2u);
    EXPECT_EQ(p.userTerms.at("cyc"), 1u);

    // Turning a default off clears exactly its bit; perf keeps the default period.
    auto noMtc = plan("intel_pt/mtc=0/");
    EXPECT_EQ(noMtc.attr.config, kSkylakeDefault & ~(1ull << 9));
    auto noBranch = plan("intel_pt/branch=0/");
    EXPECT_EQ(noBranch.attr.config, kSkylakeDefault & ~(1ull << 13));
    bool noted = false;
    for (auto& n : noBranch.notes)
        noted |= contains(n, "branch=0");
    EXPECT_TRUE(noted);
}

TEST_F(AuxConfig, IntelPtPtZeroIsForcedBackOn) {
    auto p = plan("intel_pt/pt=0/");
    EXPECT_EQ(p.attr.config & 1, 1u);
    bool noted = false;
    for (auto& n : p.notes)
        noted |= contains(n, "pt=0");
    EXPECT_TRUE(noted);
}

TEST_F(AuxConfig, IntelPtRefusalsNameTermAndCapsFile) {
    EXPECT_EQ(refusal("intel_pt/mtc_period=5/"),
              "intel_pt: mtc_period=5 is not supported: caps/mtc_periods is 0x249 (allowed: 0,3,6,9)");
    EXPECT_EQ(refusal("intel_pt/cyc,cyc_thresh=14/"),
              "intel_pt: cyc_thresh=14 is not supported: caps/cycle_thresholds is 0x3fff (allowed: 0-13)");
    EXPECT_EQ(refusal("intel_pt/psb_period=6/"),
              "intel_pt: psb_period=6 is not supported: caps/psb_periods is 0x3f (allowed: 0-5)");
    EXPECT_EQ(refusal("intel_pt/ptw/"), "intel_pt: ptw is not supported: caps/ptwrite is 0");
    EXPECT_EQ(refusal("intel_pt/pwr_evt/"),
              "intel_pt: pwr_evt is not supported: caps/power_event_trace is 0");
    EXPECT_EQ(refusal("intel_pt/notnt/"), "intel_pt: notnt is not supported: caps/tnt_disable is 0");
    auto tooWide = refusal("intel_pt/mtc_period=16/");
    EXPECT_TRUE(contains(tooWide, "mtc_period=16 does not fit: format/mtc_period is config:14-17"))
        << tooWide;
    auto unknown = refusal("intel_pt/cycles/");
    EXPECT_TRUE(contains(unknown, "unknown term 'cycles' (no intel_pt/format/cycles")) << unknown;
    EXPECT_TRUE(contains(unknown, "cyc_thresh, event, fup_on_ptw, mtc, mtc_period")) << unknown;
    auto stray = refusal("intel_pt/config=0x40000000000/");
    EXPECT_TRUE(contains(stray, "config bits 0x40000000000 belong to no term")) << stray;
}

TEST_F(AuxConfig, IntelPtOnBroadwellHasOnlyTscAndBranchByDefault) {
    fs::path bdw = root / "bdw";
    pmu(bdw, "intel_pt", 8, kPtFormat, kBroadwellCaps, 0);
    reg = PmuRegistry::discover(bdw);
    auto p = plan("intel_pt//");
    EXPECT_EQ(p.defaultTerms, "tsc,pt,branch");
    EXPECT_EQ(p.attr.config, (1ull << 10) | 1ull | (1ull << 13));
    EXPECT_EQ(refusal("intel_pt/cyc/"), "intel_pt: cyc is not supported: caps/psb_cyc is 0");
    EXPECT_EQ(refusal("intel_pt/mtc/"), "intel_pt: mtc is not supported: caps/mtc is 0");
    EXPECT_EQ(refusal("intel_pt/psb_period=1/"),
              "intel_pt: psb_period=1 is not supported: caps/psb_cyc is 0");
    opts.filter = "filter 0x1000/0x100 @ /bin/true";
    EXPECT_EQ(refusal("intel_pt//"), "intel_pt: address filters are not supported: caps/ip_filtering is 0");
}

TEST_F(AuxConfig, IntelPtDefaultPicksPeriodsAsPerfDoes) {
    // Only periods above 3 allowed: perf takes the smallest; psb_periods with only bit 1: takes 1.
    fs::path other = root / "other";
    Pairs caps = kSkylakeCaps;
    for (auto& [k, v] : caps) {
        if (k == "mtc_periods") v = "30";
        if (k == "psb_periods") v = "2";
    }
    pmu(other, "intel_pt", 8, kPtFormat, caps, 2);
    auto r = PmuRegistry::discover(other);
    EXPECT_EQ(auxDefaultTerms(*r.find("intel_pt")), "tsc,mtc,mtc_period=4,psb_period=1,pt,branch");
}

TEST_F(AuxConfig, PrivilegeFromOptionsUnlessModifiersSayOtherwise) {
    opts.traceKernel = false;
    auto userOnly = plan("intel_pt//");
    EXPECT_TRUE(userOnly.attr.exclude_kernel);
    EXPECT_FALSE(userOnly.attr.exclude_user);
    auto explicitKernel = plan("intel_pt//k");
    EXPECT_FALSE(explicitKernel.attr.exclude_kernel);
    EXPECT_TRUE(explicitKernel.attr.exclude_user);
    opts.traceKernel = true;
    auto guest = plan("intel_pt//G");
    EXPECT_FALSE(guest.attr.exclude_guest);
    EXPECT_TRUE(guest.attr.exclude_host);
    opts.traceUser = opts.traceKernel = false;
    EXPECT_TRUE(contains(refusal("intel_pt//"), "neither user nor kernel"));
}

TEST_F(AuxConfig, SnapshotAndRingSize) {
    opts.snapshot = true;
    auto p = plan("intel_pt//");
    EXPECT_TRUE(p.snapshot);
    EXPECT_EQ(p.attr.aux_watermark, 0u);
    opts.auxPages = 1;  // 4 KiB: enough for a snapshot, not for full trace
    EXPECT_EQ(plan("intel_pt//").auxBytes, 4096u);
    opts.snapshot = false;
    EXPECT_EQ(refusal("intel_pt//"), "intel_pt: AUX ring of 4 KiB is too small: at least 8 KiB");
    opts.auxPages = 3;
    EXPECT_EQ(refusal("intel_pt//"), "intel_pt: AUX ring of 3 pages is not a power of two");
    opts.auxPages = 0;
    opts.privileged = false;
    auto small = plan("intel_pt//");
    EXPECT_EQ(small.auxBytes, 128u * 1024);
    EXPECT_EQ(small.attr.aux_watermark, 32u * 1024);
}

TEST_F(AuxConfig, IntelPtAddressFilters) {
    const std::string trueBin = fs::canonical("/bin/true").string();
    opts.filter = "filter 0x1000/0x200 @ /bin/true";
    EXPECT_EQ(plan("intel_pt//").addrFilter, "filter 0x1000/0x200@" + trueBin);
    opts.filter = "tracestop 0x1000/0x10@/bin/true";
    EXPECT_EQ(plan("intel_pt//").addrFilter, "stop 0x1000/0x10@" + trueBin);
    opts.filter = "filter 0x1000/0x10@/bin/true, filter 0x2000/0x10@/bin/true filter 0x3000/0x10@/bin/true";
    EXPECT_EQ(refusal("intel_pt//"), "intel_pt: 3 address filters given but nr_addr_filters is 2");
    opts.filter = "start 0x1000 @ /bin/true";
    EXPECT_TRUE(contains(refusal("intel_pt//"), "Intel PT has no 'start' filters"));
    opts.filter = "stop 0x1000 @ /bin/true";
    EXPECT_TRUE(contains(refusal("intel_pt//"), "Intel PT filters regions only"));
}

// --- other PMUs -------------------------------------------------------------------------------

TEST_F(AuxConfig, CsEtmPerCpuDefaultsAndSink) {
    auto p = plan("cs_etm/cycacc,timestamp/");
    EXPECT_EQ(p.kind, AuxPmuKind::CsEtm);
    EXPECT_EQ(p.attr.type, 9u);
    EXPECT_EQ(p.attr.config, (1ull << 12) | (1ull << 28) | (1ull << 14));  // contextid added by default
    EXPECT_EQ(p.defaultTerms, "contextid");
    EXPECT_EQ(p.attr.sample_period, 1u);
    EXPECT_TRUE(p.attr.sample_type & PERF_SAMPLE_CPU);
    EXPECT_EQ(p.attr.aux_watermark, 0u);

    opts.perCpu = false;
    auto perThread = plan("cs_etm//u");
    EXPECT_EQ(perThread.attr.config, 0u);
    EXPECT_FALSE(perThread.attr.sample_type & PERF_SAMPLE_CPU);
    EXPECT_TRUE(perThread.attr.exclude_kernel);

    auto sink = plan("cs_etm/@tmc_etr0/");
    EXPECT_EQ(sink.attr.config2, 0x2f3b1a4cu);
    auto noSink = refusal("cs_etm/@tmc_etf9/");
    EXPECT_TRUE(contains(
        noSink, "sink '@tmc_etf9' not found: no readable cs_etm/sinks/tmc_etf9 (sinks here: tmc_etr0)"))
        << noSink;
    auto cc = refusal("cs_etm/cc_threshold=5/");
    EXPECT_TRUE(contains(cc, "format/cc_threshold is config3:0-11")) << cc;
    auto cyc = refusal("cs_etm/cyc/");
    EXPECT_TRUE(contains(cyc,
                         "unknown term 'cyc' (no cs_etm/format/cyc; cs_etm's terms: branch_broadcast, "
                         "cc_threshold, configid, contextid, contextid1, contextid2, cycacc"))
        << cyc;
}

TEST_F(AuxConfig, CsEtmTimestampCheckedAgainstEachCpusTrcidr) {
    write(root / "cs_etm" / "cpu1" / "trcidr" / "trcidr0", "0xea1");  // TSSIZE 0
    EXPECT_EQ(refusal("cs_etm/timestamp/"),
              "cs_etm: timestamp is not supported on cpu1: cs_etm/cpu1/trcidr/trcidr0 is 0xea1 (TSSIZE, bits "
              "28:24, is 0: no global timestamps)");
    // perf's per-CPU default is dropped instead.
    auto p = plan("cs_etm//");
    EXPECT_EQ(p.attr.config, 1ull << 14);
    bool noted = false;
    for (auto& n : p.notes)
        noted |= contains(n, "timestamp left off: cs_etm/cpu1/trcidr/trcidr0");
    EXPECT_TRUE(noted);
}

TEST_F(AuxConfig, CsEtmAddressFiltersAllowStartStop) {
    const std::string trueBin = fs::canonical("/bin/true").string();
    opts.filter = "start 0x1000 @ /bin/true, stop 0x2000 @ /bin/true";
    EXPECT_EQ(plan("cs_etm//").addrFilter, "start 0x1000@" + trueBin + ",stop 0x2000@" + trueBin);
}

TEST_F(AuxConfig, ArmSpe) {
    auto p = plan("arm_spe_0/load_filter=1,event_filter=0x2/");
    EXPECT_EQ(p.kind, AuxPmuKind::ArmSpe);
    EXPECT_EQ(p.attr.type, 10u);
    EXPECT_EQ(p.attr.config, (1ull << 33) | 1ull);  // ts_enable added per CPU
    EXPECT_EQ(p.attr.config1, 2u);
    EXPECT_EQ(p.attr.sample_period, 1024u);  // caps/min_interval
    EXPECT_FALSE(p.attr.freq);
    EXPECT_TRUE(p.attr.sample_type & PERF_SAMPLE_DATA_SRC);
    EXPECT_FALSE(p.attr.sample_type & PERF_SAMPLE_PHYS_ADDR);
    EXPECT_EQ(p.attr.aux_watermark, 0u);

    EXPECT_EQ(plan("arm_spe_0/ts_enable=0/").attr.config, 0u);
    EXPECT_TRUE(plan("arm_spe_0/pa_enable/").attr.sample_type & PERF_SAMPLE_PHYS_ADDR);
    EXPECT_EQ(plan("arm_spe_0/period=512/").attr.sample_period, 512u);
    EXPECT_EQ(plan("arm_spe_0/min_latency=20/").attr.config2, 20u);
    EXPECT_TRUE(contains(refusal("arm_spe_0/freq=100/"), "freq= is not supported"));
    EXPECT_TRUE(contains(refusal("arm_spe_0/min_latency=5000/"), "format/min_latency is config2:0-11"));
    auto cyc = refusal("arm_spe_0/cyc/");
    EXPECT_TRUE(
        contains(cyc, "unknown term 'cyc' (no arm_spe_0/format/cyc; arm_spe_0's terms: branch_filter"))
        << cyc;
    opts.privileged = false;
    EXPECT_EQ(refusal("arm_spe_0/pa_enable/"),
              "arm_spe_0: pa_enable needs CAP_PERFMON (or root): the driver answers EACCES otherwise");
    opts.privileged = true;
    opts.filter = "filter 0x1000/0x10 @ /bin/true";
    EXPECT_EQ(refusal("arm_spe_0//"),
              "arm_spe_0: address filters are not supported: nr_addr_filters is 0 or missing");
}

TEST_F(AuxConfig, IntelBts) {
    EXPECT_TRUE(contains(refusal("intel_bts//"), "per-CPU recording is not supported"));
    opts.perCpu = false;
    auto p = plan("intel_bts//u");
    EXPECT_EQ(p.kind, AuxPmuKind::IntelBts);
    EXPECT_EQ(p.attr.type, 7u);
    EXPECT_EQ(p.attr.config, 0u);
    EXPECT_EQ(p.attr.sample_period, 1u);
    EXPECT_FALSE(p.attr.sample_type & PERF_SAMPLE_CPU);
    EXPECT_TRUE(contains(refusal("intel_bts/cyc/"), "intel_bts's terms: none"));
}

TEST_F(AuxConfig, EventStringErrors) {
    EXPECT_TRUE(contains(refusal("cpu/event=1/"), "'cpu' is not an AUX-area trace PMU"));
    auto unknown = refusal("nosuch//");
    EXPECT_TRUE(contains(unknown, "unknown PMU 'nosuch'")) << unknown;
    EXPECT_TRUE(contains(unknown, "AUX PMUs here: arm_spe_0, cs_etm, intel_bts, intel_pt")) << unknown;
    EXPECT_TRUE(contains(refusal("intel_pt//,cpu-clock"), "exactly one event"));
    EXPECT_TRUE(contains(refusal("intel_pt"), "expected PMU/terms/"));
    EXPECT_TRUE(contains(refusal("intel_pt/mtc_period=x/"), "needs a number"));
    EXPECT_TRUE(contains(refusal("intel_pt//q"), "unknown modifier 'q'"));
    EXPECT_TRUE(contains(refusal("intel_pt/@sink/"), "only applies to cs_etm"));
}

TEST_F(AuxConfig, HelpListsTermsAndWhatCapsAllow) {
    std::string h = auxEventHelp(*reg.find("intel_pt"));
    EXPECT_TRUE(contains(h, "intel_pt (perf type 8)")) << h;
    EXPECT_TRUE(contains(h, "config:14-17")) << h;
    EXPECT_TRUE(contains(h, "allowed: 0,3,6,9 (caps/mtc_periods 0x249)")) << h;
    EXPECT_TRUE(contains(h, "allowed: 0-13 (caps/cycle_thresholds 0x3fff)")) << h;
    EXPECT_TRUE(contains(h, "NOT SUPPORTED here (caps/ptwrite is 0)")) << h;
    EXPECT_TRUE(contains(h, "default: tsc,mtc,mtc_period=3,psb_period=3,pt,branch")) << h;
    EXPECT_TRUE(contains(h, "address filters: up to 2")) << h;
    std::string spe = auxEventHelp(*reg.find("arm_spe_0"));
    EXPECT_TRUE(contains(spe, "min_interval=1024")) << spe;
    EXPECT_TRUE(contains(spe, "address filters: not supported")) << spe;
}

TEST_F(AuxConfig, TogglesShareTheCommandLinePath) {
    AuxToggles t;
    t.kernel = false;
    t.branch = false;
    t.mtcPeriod = 3;
    t.cyc = true;
    t.cycThresh = 2;
    t.noretcomp = true;
    auto s = auxEventStringFromToggles(t);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s, "intel_pt/branch=0,mtc_period=3,cyc,cyc_thresh=2,noretcomp/u");
    t.filter = "filter 0x1000/0x40 @ /bin/true";
    auto p = planAuxEventFromToggles(reg, t, opts);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->attr.config, (kSkylakeDefault & ~(1ull << 13)) | 2ull | (2ull << 19) | (1ull << 11));
    EXPECT_EQ(p->addrFilter, "filter 0x1000/0x40@" + fs::canonical("/bin/true").string());
    AuxToggles defaults;
    EXPECT_EQ(*auxEventStringFromToggles(defaults), "intel_pt//");
    t.ptwrite = true;
    auto refused = planAuxEventFromToggles(reg, t, opts);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().message, "intel_pt: ptw is not supported: caps/ptwrite is 0");
    defaults.user = defaults.kernel = false;
    EXPECT_FALSE(auxEventStringFromToggles(defaults));
}

// --- address filters --------------------------------------------------------------------------

namespace {

// Where the target's functions sit in its file, as its own mappings show them.
std::map<std::string, uint64_t> targetOffsets() {
    std::map<std::string, uint64_t> out;
    FILE* f = popen((std::string(AUX_FILTER_TARGET) + " --offsets").c_str(), "r");
    if (!f) return out;
    char name[128];
    unsigned long long off = 0;
    while (std::fscanf(f, "%127s %llx", name, &off) == 2)
        out[name] = off;
    pclose(f);
    return out;
}

// st_size of each function symbol according to nm (binutils), independent of libelf.
std::map<std::string, uint64_t> nmSizes(const std::string& path) {
    std::map<std::string, uint64_t> out;
    FILE* f = popen(("nm -S --defined-only " + path + " 2>/dev/null").c_str(), "r");
    if (!f) return out;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        unsigned long long value = 0, size = 0;
        char type = 0;
        char name[256];
        if (std::sscanf(line, "%llx %llx %c %255s", &value, &size, &type, name) == 4 &&
            (type == 'T' || type == 't') && !out.count(name))
            out[name] = size;
    }
    pclose(f);
    return out;
}

class AddrFilterElf : public ::testing::Test {
protected:
    void SetUp() override {
        path = fs::canonical(AUX_FILTER_TARGET).string();
        offsets = targetOffsets();
        ASSERT_EQ(offsets.size(), 4u) << "the target did not report its function offsets";
        sizes = nmSizes(path);
        if (!sizes.count("aux_filter_global")) GTEST_SKIP() << "nm (binutils) is not available";
    }
    std::string path;
    std::map<std::string, uint64_t> offsets, sizes;
};

}  // namespace

TEST_F(AddrFilterElf, SymbolBecomesFileOffsetAndSymbolSize) {
    auto s = buildKernelAddrFilter("filter aux_filter_global @ " + path);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s, "filter " + hex(offsets["aux_filter_global"]) + "/" + hex(sizes["aux_filter_global"]) +
                      "@" + path);
    auto start = buildKernelAddrFilter("start b_entry@" + path);
    ASSERT_TRUE(start) << start.error().message;
    EXPECT_EQ(*start, "start " + hex(offsets["b_entry"]) + "@" + path);
}

TEST_F(AddrFilterElf, SeveralFiltersAndEndSymbol) {
    auto s = buildKernelAddrFilter("filter aux_filter_global @ " + path + " , tracestop b_entry @" + path +
                                   " stop 0x10/0x20");
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s, "filter " + hex(offsets["aux_filter_global"]) + "/" + hex(sizes["aux_filter_global"]) +
                      "@" + path + ",stop " + hex(offsets["b_entry"]) + "/" + hex(sizes["b_entry"]) + "@" +
                      path + ",stop 0x10/0x20");
    // From one symbol to the end of another (a.c links before b.c).
    ASSERT_LT(offsets["aux_filter_global"], offsets["b_entry"]);
    auto range = buildKernelAddrFilter("filter aux_filter_global / b_entry @ " + path);
    ASSERT_TRUE(range) << range.error().message;
    uint64_t size = offsets["b_entry"] + sizes["b_entry"] - offsets["aux_filter_global"];
    EXPECT_EQ(*range, "filter " + hex(offsets["aux_filter_global"]) + "/" + hex(size) + "@" + path);
}

TEST_F(AddrFilterElf, AmbiguousSymbolsAndDisambiguation) {
    auto amb = buildKernelAddrFilter("filter helper @ " + path);
    ASSERT_FALSE(amb);
    EXPECT_TRUE(
        contains(amb.error().message, "symbol 'helper' is ambiguous in '" + path + "': 2 function symbols"))
        << amb.error().message;
    EXPECT_TRUE(contains(amb.error().message, "#2")) << amb.error().message;
    uint64_t second = std::max(offsets["helper_a"], offsets["helper_b"]);
    auto pick = buildKernelAddrFilter("filter helper #2 @ " + path);
    ASSERT_TRUE(pick) << pick.error().message;
    EXPECT_TRUE(contains(*pick, "filter " + hex(second) + "/")) << *pick;
    auto global = buildKernelAddrFilter("filter helper #g @ " + path);
    ASSERT_FALSE(global);
    EXPECT_TRUE(contains(global.error().message, "no global function symbol 'helper'"))
        << global.error().message;
    auto third = buildKernelAddrFilter("filter helper #3 @ " + path);
    ASSERT_FALSE(third);
    EXPECT_TRUE(contains(third.error().message, "has only 2 function symbol(s) named 'helper'"));
}

TEST_F(AddrFilterElf, MissingSymbolOrFile) {
    auto missing = buildKernelAddrFilter("filter no_such_function @ " + path);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "address filter 'filter no_such_function @ " + path +
                                           "': no function symbol 'no_such_function' in '" + path +
                                           "' (only function symbols count)");
    auto noFile = buildKernelAddrFilter("filter main @ /nonexistent/prog");
    ASSERT_FALSE(noFile);
    EXPECT_TRUE(
        contains(noFile.error().message, "cannot use '/nonexistent/prog': No such file or directory"));
}

TEST_F(AddrFilterElf, WholeObject) {
    auto syms = readElfFunctionSymbols(path);
    ASSERT_TRUE(syms) << syms.error().message;
    ASSERT_FALSE(syms->empty());
    auto s = buildKernelAddrFilter("filter * @ " + path);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_TRUE(contains(*s, "filter " + hex(syms->front().fileOffset) + "/")) << *s;
}

TEST(AddrFilter, Syntax) {
    auto specs =
        parseAddrFilters("filter 0x1000/0x200@/bin/true,start 4096 @ /bin/true stop sym #2 / end #g");
    ASSERT_TRUE(specs) << specs.error().message;
    ASSERT_EQ(specs->size(), 3u);
    EXPECT_EQ((*specs)[0].action, AddrFilterAction::Filter);
    EXPECT_EQ(*(*specs)[0].addr, 0x1000u);
    EXPECT_EQ(*(*specs)[0].size, 0x200u);
    EXPECT_EQ((*specs)[0].file, "/bin/true");
    EXPECT_EQ(*(*specs)[1].addr, 4096u);
    EXPECT_FALSE((*specs)[1].isRange());
    EXPECT_EQ((*specs)[2].symFrom, "sym");
    EXPECT_EQ((*specs)[2].symFromIdx, 2);
    EXPECT_EQ((*specs)[2].symTo, "end");
    EXPECT_EQ((*specs)[2].symToIdx, 0);
    EXPECT_TRUE((*specs)[2].file.empty());

    EXPECT_TRUE(contains(parseAddrFilters("bogus 0x10").error().message, "unknown action 'bogus'"));
    EXPECT_TRUE(contains(parseAddrFilters("filter").error().message, "expected a start address or symbol"));
    EXPECT_TRUE(
        contains(parseAddrFilters("filter 0x12zz").error().message, "'0x12zz' is not a valid number"));
    EXPECT_TRUE(
        contains(parseAddrFilters("filter 0x10/0x10 @").error().message, "expected a file name after '@'"));
    EXPECT_TRUE(contains(parseAddrFilters("").error().message, "is empty"));
    // A region needs a size; a single address trigger does not.
    auto noSize = buildKernelAddrFilter("filter 0x1000");
    ASSERT_FALSE(noSize);
    EXPECT_TRUE(contains(noSize.error().message, "'filter' needs a region")) << noSize.error().message;
    EXPECT_EQ(*buildKernelAddrFilter("stop 0xffffffff81000000"), "stop 0xffffffff81000000");
}

// --- kernel symbols -----------------------------------------------------------------------

namespace {

struct KallsymsLine {
    uint64_t addr;
    char type;
    std::string name;
};

std::vector<KallsymsLine> readKallsymsForTest() {
    std::vector<KallsymsLine> out;
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ss(line);
        KallsymsLine l;
        std::string addr;
        ss >> addr >> l.type >> l.name;
        l.addr = std::stoull(addr, nullptr, 16);
        out.push_back(l);
    }
    return out;
}

}  // namespace

TEST(AddrFilterKernel, ResolvesFromRealKallsyms) {
    auto lines = readKallsymsForTest();
    bool visible = false;
    for (auto& l : lines)
        visible |= l.addr != 0;
    if (!visible) GTEST_SKIP() << "/proc/kallsyms hides addresses here (kptr_restrict)";
    // A unique global function and where the next symbol starts.
    std::map<std::string, int> count;
    for (auto& l : lines)
        if (l.type == 'T' || l.type == 't' || l.type == 'W' || l.type == 'w') ++count[l.name];
    size_t at = lines.size();
    for (size_t i = 0; i + 1 < lines.size(); ++i)
        if (lines[i].name == "ksys_read" && count["ksys_read"] == 1) at = i;
    if (at == lines.size()) GTEST_SKIP() << "no unique ksys_read in /proc/kallsyms";
    auto s = buildKernelAddrFilter("filter ksys_read");
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(*s, "filter " + hex(lines[at].addr) + "/" + hex(lines[at + 1].addr - lines[at].addr));

    // Some static function names repeat in the kernel: they must be refused as ambiguous.
    std::string dup;
    for (auto& [name, n] : count)
        if (n > 1 && name.find('.') == std::string::npos && name.find('[') == std::string::npos) {
            dup = name;
            break;
        }
    ASSERT_FALSE(dup.empty());
    auto amb = buildKernelAddrFilter("filter " + dup);
    ASSERT_FALSE(amb);
    EXPECT_TRUE(
        contains(amb.error().message, "symbol '" + dup + "' is ambiguous in the kernel (/proc/kallsyms)"))
        << amb.error().message;
}

TEST(AddrFilterKernel, HiddenAddressesAreExplained) {
    fs::path f = fs::temp_directory_path() / ("auxscope-kallsyms-" + std::to_string(getpid()));
    std::ofstream(f) << "0000000000000000 T _text\n0000000000000000 T ksys_read\n";
    AddrFilterResolveOptions o;
    o.kallsyms = f.string();
    auto s = buildKernelAddrFilter("filter ksys_read", o);
    fs::remove(f);
    ASSERT_FALSE(s);
    EXPECT_TRUE(contains(s.error().message, "kptr_restrict")) << s.error().message;
}
