// SPDX-License-Identifier: GPL-3.0-or-later
// Event strings to perf_event_attr. AUX PMUs are absent on this machine, so
// their sysfs layout is laid out in a temporary directory exactly as the kernel
// publishes it (type, format/*, caps/*, nr_addr_filters); the real sysfs is used
// for software events and tracepoints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "EventSpec.h"
#include "FakeSysfs.h"
#include "Tracefs.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

class FakeSysfs : public ::testing::Test {
protected:
    void SetUp() override {
        tree = std::make_unique<test_support::FakeSysfsTree>("sysfs");
        root = tree->root();
        // Intel PT's format terms as Skylake kernels publish them.
        tree->pmu("intel_pt", 8,
                  {{"pt", "config:0"},
                   {"cyc", "config:1"},
                   {"pwr_evt", "config:4"},
                   {"tsc", "config:10"},
                   {"noretcomp", "config:11"},
                   {"ptw", "config:12"},
                   {"branch", "config:13"},
                   {"mtc_period", "config:14-17"},
                   {"mtc", "config:9"},
                   {"cyc_thresh", "config:19-22"},
                   {"psb_period", "config:24-27"}},
                  {{"mtc", "1"}, {"mtc_periods", "249"}, {"psb_cyc", "1"}, {"ip_filtering", "1"}}, 2);
        tree->pmu("software", 1);
        tree->pmu("cpu", 4, {{"event", "config:0-7"}, {"umask", "config:8-15"}, {"cmask", "config:24-31"}});
        tree->write("cpu/events/cache-misses", "event=0x2e,umask=0x41");
        reg = PmuRegistry::discover(root);
    }
    void TearDown() override { tree.reset(); }

    std::unique_ptr<test_support::FakeSysfsTree> tree;
    fs::path root;
    PmuRegistry reg;
};

}  // namespace

TEST_F(FakeSysfs, DiscoversTypeFormatCapsAndFilters) {
    const PmuInfo* pt = reg.find("intel_pt");
    ASSERT_NE(pt, nullptr);
    EXPECT_EQ(pt->type, 8u);
    EXPECT_TRUE(pt->isAuxPmu());
    EXPECT_EQ(pt->nrAddrFilters, 2);
    EXPECT_EQ(pt->capValue("mtc_periods"), 249u);
    ASSERT_TRUE(pt->format.count("mtc_period"));
    EXPECT_EQ(pt->format.at("mtc_period").width(), 4u);
    EXPECT_EQ(reg.firstAuxPmu(), pt);
}

TEST_F(FakeSysfs, IntelPtTermsAndModifiers) {
    EventParser parser(reg);
    auto ev = parser.parse("intel_pt/cyc,mtc_period=3/u");
    ASSERT_TRUE(ev) << ev.error().message;
    ASSERT_EQ(ev->size(), 1u);
    const auto& a = (*ev)[0].attr;
    EXPECT_EQ(a.type, 8u);
    EXPECT_EQ(a.config, (1ull << 1) | (3ull << 14));
    EXPECT_TRUE(a.exclude_kernel);
    EXPECT_FALSE(a.exclude_user);
    EXPECT_TRUE((*ev)[0].isAux);
    EXPECT_EQ(a.sample_period, 1u);
}

TEST_F(FakeSysfs, ValueTooWideForTerm) {
    EventParser parser(reg);
    auto ev = parser.parse("intel_pt/mtc_period=16/");
    ASSERT_FALSE(ev);
    EXPECT_NE(ev.error().message.find("does not fit in 4 bits"), std::string::npos) << ev.error().message;
}

TEST_F(FakeSysfs, UnknownTermListsTheKnownOnes) {
    EventParser parser(reg);
    auto ev = parser.parse("intel_pt/cycles/");
    ASSERT_FALSE(ev);
    EXPECT_NE(ev.error().message.find("has no term 'cycles'"), std::string::npos) << ev.error().message;
    EXPECT_NE(ev.error().message.find("mtc_period"), std::string::npos);
}

TEST_F(FakeSysfs, UnknownPmuNamesThoseThatExist) {
    EventParser parser(reg);
    auto ev = parser.parse("cs_etm/timestamp/");
    ASSERT_FALSE(ev);
    EXPECT_NE(ev.error().message.find("unknown PMU 'cs_etm'"), std::string::npos);
    EXPECT_NE(ev.error().message.find("intel_pt"), std::string::npos);
}

TEST_F(FakeSysfs, NamedPmuEventAndPeriod) {
    EventParser parser(reg);
    auto ev = parser.parse("cpu/cache-misses,period=10007/k");
    ASSERT_TRUE(ev) << ev.error().message;
    const auto& a = (*ev)[0].attr;
    EXPECT_EQ(a.config, 0x412eu);
    EXPECT_EQ(a.sample_period, 10007u);
    EXPECT_FALSE(a.freq);
    EXPECT_TRUE(a.exclude_user);
}

TEST_F(FakeSysfs, CommaListKeepsTermCommas) {
    auto parts = EventParser::splitList("intel_pt/cyc,tsc/u,cpu-clock,page-faults");
    ASSERT_EQ(parts.size(), 3u);
    EXPECT_EQ(parts[0], "intel_pt/cyc,tsc/u");
    EventParser parser(reg);
    auto ev = parser.parse("intel_pt/cyc,tsc/u,cpu-clock");
    ASSERT_TRUE(ev) << ev.error().message;
    EXPECT_EQ(ev->size(), 2u);
}

TEST(EventSpec, SymbolicSoftwareEvents) {
    auto reg = PmuRegistry::discover();
    EventParser parser(reg, EventDefaults{999});
    auto ev = parser.parse("cpu-clock:u");
    ASSERT_TRUE(ev) << ev.error().message;
    EXPECT_EQ((*ev)[0].attr.type, uint32_t(PERF_TYPE_SOFTWARE));
    EXPECT_EQ((*ev)[0].attr.config, uint64_t(PERF_COUNT_SW_CPU_CLOCK));
    EXPECT_TRUE((*ev)[0].attr.freq);
    EXPECT_EQ((*ev)[0].attr.sample_freq, 999u);
    EXPECT_TRUE((*ev)[0].attr.exclude_kernel);
    auto bad = parser.parse("cpu-clock:q");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("unknown modifier 'q'"), std::string::npos);
    auto unknown = parser.parse("no-such-event");
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().message.find("unknown event 'no-such-event'"), std::string::npos);
}

TEST(EventSpec, TracepointsAndGlobs) {
    if (auto tp = Tracefs::locate(); !tp) GTEST_SKIP() << "tracefs unavailable: " << tp.error().message;
    auto reg = PmuRegistry::discover();
    EventParser parser(reg);
    auto one = parser.parse("raw_syscalls:sys_enter");
    ASSERT_TRUE(one) << one.error().message;
    ASSERT_EQ(one->size(), 1u);
    EXPECT_EQ((*one)[0].attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
    EXPECT_TRUE((*one)[0].attr.sample_type & PERF_SAMPLE_RAW);
    EXPECT_EQ((*one)[0].attr.sample_period, 1u);
    auto id = readSmallFile(*Tracefs::locate() / "events/raw_syscalls/sys_enter/id");
    ASSERT_TRUE(id);
    EXPECT_EQ((*one)[0].attr.config, std::stoull(*id));

    auto glob = parser.parse("raw_syscalls:*");
    ASSERT_TRUE(glob) << glob.error().message;
    ASSERT_EQ(glob->size(), 2u);
    EXPECT_EQ((*glob)[0].name, "raw_syscalls:sys_enter");
    EXPECT_EQ((*glob)[1].name, "raw_syscalls:sys_exit");

    auto none = parser.parse("raw_syscalls:nothing_here");
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no tracepoint matches"), std::string::npos);
}

TEST(CpuList, ParseAndFormat) {
    auto cpus = parseCpuList("0-3,8,10-11");
    ASSERT_TRUE(cpus);
    EXPECT_EQ(cpus.value(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
    EXPECT_EQ(formatCpuList(cpus.value()), "0-3,8,10-11");
    EXPECT_FALSE(parseCpuList("3-1"));
    EXPECT_FALSE(parseCpuList("x"));
    EXPECT_FALSE(parseCpuList(""));
}
