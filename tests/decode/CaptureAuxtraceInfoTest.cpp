// SPDX-License-Identifier: GPL-3.0-or-later
// The AUXTRACE_INFO a live capture writes for its AUX event, built from the
// PMU's sysfs files and the event's plan. No trace PMU exists here, so the PMUs
// are laid out in a temporary sysfs tree as the kernel publishes them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "FakeSysfs.h"
#include "perfdata/AuxtraceInfo.h"
#include "record/CaptureAuxtraceInfo.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

class CaptureAuxtraceInfoTest : public ::testing::Test {
protected:
    void SetUp() override {
        root = tree.root();
        tree.pmu("intel_pt", 8,
                 {{"pt", "config:0"},
                  {"cyc", "config:1"},
                  {"tsc", "config:10"},
                  {"noretcomp", "config:11"},
                  {"branch", "config:13"},
                  {"mtc_period", "config:14-17"},
                  {"mtc", "config:9"},
                  {"cyc_thresh", "config:19-22"},
                  {"psb_period", "config:24-27"}},
                 {{"mtc", "1"},
                  {"mtc_periods", "249"},
                  {"psb_cyc", "1"},
                  {"psb_periods", "3f"},
                  {"cycle_thresholds", "3fff"},
                  {"ip_filtering", "1"},
                  {"event_trace", "0"}});
        tree.write("intel_pt/max_nonturbo_ratio", "22");
        tree.pmu("cs_etm", 9,
                 {{"cycacc", "config:12"}, {"timestamp", "config:28"}, {"retstack", "config:29"}}, {});
        for (int cpu : {0, 1}) {
            const std::string d = "cs_etm/cpu" + std::to_string(cpu);
            tree.write(d + "/trcidr/trcidr0", "0x28000ea1");
            tree.write(d + "/trcidr/trcidr1", "0x4100f421");
            tree.write(d + "/trcidr/trcidr2", "0x20001088");
            tree.write(d + "/trcidr/trcidr8", "0x0");
            tree.write(d + "/mgmt/trcauthstatus", "0xcc");
        }
        tree.pmu("arm_spe_0", 10, {{"ts_enable", "config:0"}},
                 {{"min_interval", "1024"}, {"count_size", "12"}});
        tree.pmu("intel_bts", 7, {}, {});
        reg = PmuRegistry::discover(root);
        opts.sysfsRoot = root;
        opts.pageSize = 4096;
    }
    CaptureAuxtraceInputs inputs(const AuxEventPlan& plan) {
        CaptureAuxtraceInputs in;
        in.plan = &plan;
        in.pmu = reg.find(plan.pmuName);
        in.userPage = &page;
        in.cpus = {0, 1};
        in.sysfsRoot = root;
        return in;
    }

    test_support::FakeSysfsTree tree{"capinfo"};
    fs::path root;
    PmuRegistry reg;
    AuxEventOptions opts;
    perf_event_mmap_page page{};
};

}  // namespace

TEST_F(CaptureAuxtraceInfoTest, IntelPtBlockCarriesThePmuThePlanAndTheUserPage) {
    opts.snapshot = true;
    auto plan = planAuxEvent(reg, "intel_pt/cyc/u", opts);
    ASSERT_TRUE(plan) << plan.error().message;
    page.cap_user_time_zero = 1;
    page.time_shift = 31;
    page.time_mult = 1234567;
    page.time_zero = 987654321;
    auto in = inputs(*plan);
    in.filter = "filter main @ /bin/true";
    auto block = captureAuxtraceInfo(in);
    ASSERT_TRUE(block) << block.error().message;
    EXPECT_EQ(block->type, auxtrace::kTypeIntelPt);
    auto info = decodeIntelPtInfo(block->priv);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->pmuType, 8u);
    EXPECT_EQ(info->tscBit, 1u << 10);
    EXPECT_EQ(info->noretcompBit, 1u << 11);
    EXPECT_EQ(info->mtcBit, 1u << 9);
    EXPECT_EQ(info->mtcFreqBits, 0xfu << 14);
    EXPECT_EQ(info->cycBit, 1u << 1);
    EXPECT_EQ(info->timeShift, 31u);
    EXPECT_EQ(info->timeMult, 1234567u);
    EXPECT_EQ(info->timeZero, 987654321u);
    EXPECT_EQ(info->capUserTimeZero, 1u);
    EXPECT_EQ(info->snapshotMode, 1u);
    EXPECT_EQ(info->perCpuMmaps, 1u);
    EXPECT_EQ(info->haveSchedSwitch, 3u) << "CPU-wide context switch records";
    EXPECT_EQ(info->maxNonTurboRatio, 22u);
    EXPECT_EQ(info->filter, "filter main @ /bin/true");

    // Per-thread capture without switch records; no user-space time conversion.
    in.perCpu = false;
    in.contextSwitches = false;
    page.cap_user_time_zero = 0;
    auto perThread = captureAuxtraceInfo(in);
    ASSERT_TRUE(perThread);
    auto info2 = decodeIntelPtInfo(perThread->priv);
    ASSERT_TRUE(info2);
    EXPECT_EQ(info2->perCpuMmaps, 0u);
    EXPECT_EQ(info2->haveSchedSwitch, 0u);
    EXPECT_EQ(info2->capUserTimeZero, 0u);
    EXPECT_EQ(info2->timeMult, 0u);
}

TEST_F(CaptureAuxtraceInfoTest, CoreSightBlockReadsEachCpusIdRegisters) {
    auto plan = planAuxEvent(reg, "cs_etm/cycacc,timestamp/", opts);
    ASSERT_TRUE(plan) << plan.error().message;
    auto block = captureAuxtraceInfo(inputs(*plan));
    ASSERT_TRUE(block) << block.error().message;
    EXPECT_EQ(block->type, auxtrace::kTypeCsEtm);
    auto info = decodeCsEtmInfo(block->priv);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->pmuType, 9u);
    ASSERT_EQ(info->cpus.size(), 2u);
    for (unsigned i = 0; i < 2; ++i) {
        const auto& c = info->cpus[i];
        EXPECT_EQ(c.cpu, i);
        EXPECT_EQ(c.tracer, CsEtmTracer::EtmV4);
        EXPECT_EQ(c.trcidr0, 0x28000ea1u);
        EXPECT_EQ(c.trcidr1, 0x4100f421u);
        EXPECT_EQ(c.trcidr2, 0x20001088u);
        EXPECT_EQ(c.trcauthstatus, 0xccu);
        EXPECT_EQ(c.trctraceidr, csEtmLegacyTraceId(i));
        EXPECT_EQ(c.trcconfigr, csEtmV4ConfigR(plan->attr.config));
    }

    // A register file that cannot be read is named.
    fs::remove(root / "cs_etm" / "cpu1" / "trcidr" / "trcidr8");
    auto broken = captureAuxtraceInfo(inputs(*plan));
    ASSERT_FALSE(broken);
    EXPECT_NE(broken.error().message.find("cs_etm/cpu1/trcidr/trcidr8"), std::string::npos)
        << broken.error().message;
}

TEST_F(CaptureAuxtraceInfoTest, SpeAndBtsBlocksArePerfsWords) {
    auto spe = planAuxEvent(reg, "arm_spe_0//", opts);
    ASSERT_TRUE(spe) << spe.error().message;
    auto speBlock = captureAuxtraceInfo(inputs(*spe));
    ASSERT_TRUE(speBlock) << speBlock.error().message;
    EXPECT_EQ(speBlock->type, auxtrace::kTypeArmSpe);
    EXPECT_EQ(speBlock->priv, std::vector<uint64_t>{10});

    AuxEventOptions perThread = opts;
    perThread.perCpu = false;  // perf refuses per-CPU intel_bts
    auto bts = planAuxEvent(reg, "intel_bts//u", perThread);
    ASSERT_TRUE(bts) << bts.error().message;
    page.cap_user_time_zero = 1;
    page.time_shift = 10, page.time_mult = 20, page.time_zero = 30;
    auto btsBlock = captureAuxtraceInfo(inputs(*bts));
    ASSERT_TRUE(btsBlock) << btsBlock.error().message;
    EXPECT_EQ(btsBlock->type, auxtrace::kTypeIntelBts);
    EXPECT_EQ(btsBlock->priv, (std::vector<uint64_t>{7, 10, 20, 30, 1, 0}));
}
