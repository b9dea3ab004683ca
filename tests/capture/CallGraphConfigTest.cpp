// SPDX-License-Identifier: GPL-3.0-or-later
// Call-graph set-up without the kernel: perf's --call-graph spellings and their
// refusals, the attr bits each mode sets (perf's evsel__config_callchain), the
// per-architecture user register masks (perf's PERF_REGS_MASK), and where
// --call-graph lbr is refused, against fake sysfs trees: a software event, an
// event excluding user space, no core PMU (a VM), an AMD CPU, an Intel PMU without
// LBR; accepted on an Intel PMU that has it.
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <filesystem>
#include <fstream>

#include "CallGraphConfig.h"
#include "EventSpec.h"
#include "Pmu.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

std::string refusal(std::string_view text) {
    auto r = parseCallGraph(text);
    EXPECT_FALSE(r.ok()) << text << " was accepted";
    return r ? std::string() : r.error().message;
}

}  // namespace

TEST(CallGraphConfig, ParsesPerfsSpellings) {
    EXPECT_EQ(parseCallGraph("fp").value(), CallGraphOptions{CallGraphMode::FramePointer});
    EXPECT_EQ(parseCallGraph("lbr").value(), CallGraphOptions{CallGraphMode::Lbr});
    const auto dwarf = parseCallGraph("dwarf").value();
    EXPECT_EQ(dwarf.mode, CallGraphMode::Dwarf);
    EXPECT_EQ(dwarf.dwarfStackBytes, 8192u);  // perf's default
    EXPECT_EQ(parseCallGraph("dwarf,4096").value().dwarfStackBytes, 4096u);
    EXPECT_EQ(parseCallGraph("dwarf,0x2000").value().dwarfStackBytes, 8192u);
    EXPECT_EQ(parseCallGraph("dwarf,8").value().dwarfStackBytes, 8u);
    EXPECT_EQ(parseCallGraph("dwarf,65528").value().dwarfStackBytes, 65528u);
    for (const char* s : {"fp", "lbr", "dwarf,8192", "dwarf,16", "dwarf,65528"})
        EXPECT_EQ(formatCallGraph(parseCallGraph(s).value()), s);
    EXPECT_EQ(formatCallGraph(CallGraphOptions{}), "none");
    EXPECT_FALSE(CallGraphOptions{}.enabled());
}

TEST(CallGraphConfig, RefusalsNameTheOptionAndTheRange) {
    EXPECT_EQ(refusal("dwarf,7"),
              "--call-graph 'dwarf,7': the user stack size 7 must be a multiple of 8 from 8 to 65528 bytes "
              "(the kernel copies the stack in u64s into a sample of at most 64 KiB)");
    EXPECT_NE(refusal("dwarf,99999999")
                  .find("--call-graph 'dwarf,99999999': the user stack size 99999999 must "
                        "be a multiple of 8 from 8 to 65528 bytes"),
              std::string::npos);
    EXPECT_NE(refusal("dwarf,65536").find("65536 must be a multiple of 8 from 8 to 65528"),
              std::string::npos);
    EXPECT_NE(refusal("dwarf,0").find("size 0 must be"), std::string::npos);
    EXPECT_NE(refusal("dwarf,12x").find("'12x' is not a number"), std::string::npos);
    EXPECT_NE(refusal("dwarf,").find("'' is not a number"), std::string::npos);
    EXPECT_NE(refusal("dwarf,-8").find("'-8' is not a number"), std::string::npos);
    EXPECT_NE(refusal("dwarf,8,8").find("'8,8' is not a number"), std::string::npos);
    EXPECT_EQ(
        refusal("foo"),
        "--call-graph 'foo': unknown mode 'foo' (fp, dwarf[,SIZE] or lbr, as perf record --call-graph takes "
        "them)");
    EXPECT_NE(refusal("").find("unknown mode ''"), std::string::npos);
    EXPECT_NE(refusal("fp,8").find("fp takes no size"), std::string::npos);
    EXPECT_NE(refusal("lbr,8").find("lbr takes no size"), std::string::npos);
    // The option's name as the caller spells it (the helper's key).
    auto r = parseCallGraph("nope", "call-graph");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message.rfind("call-graph 'nope'", 0), 0u) << r.error().message;
}

TEST(CallGraphConfig, RegisterMasksArePerfsPerArchitecture) {
    // perf 6.1 records sample_regs_user 0xff0fff on x86_64 (perf evlist -v of a
    // perf record --call-graph dwarf file): AX..R15 without DS, ES, FS, GS.
    EXPECT_EQ(dwarfUserRegsMaskFor("x86_64"), 0xff0fffu);
    EXPECT_EQ(std::popcount(dwarfUserRegsMaskFor("x86_64")), 20);
    EXPECT_EQ(dwarfUserRegsMaskFor("i686"), 0xffffu);
    EXPECT_EQ(dwarfUserRegsMaskFor("i386"), 0xffffu);
    EXPECT_EQ(dwarfUserRegsMaskFor("aarch64"), 0x1ffffffffu);  // X0..X30, SP, PC
    EXPECT_EQ(dwarfUserRegsMaskFor("armv7l"), 0xffffu);
    EXPECT_EQ(dwarfUserRegsMaskFor("riscv64"), 0xffffffffu);
    EXPECT_EQ(dwarfUserRegsMaskFor("sparc64"), 0u);
    const uint64_t host = dwarfUserRegsMaskFor(hostArch());
#if defined(__aarch64__)
    EXPECT_EQ(dwarfUserRegsMask() & ~(uint64_t(1) << 46), host);  // VG where SVE is there
#else
    EXPECT_EQ(dwarfUserRegsMask(), host);
#endif
}

TEST(CallGraphConfig, AttrBitsAreWhatPerfSets) {
    perf_event_attr base{};
    base.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;

    perf_event_attr none = base;
    applyCallGraph(CallGraphOptions{}, none, 0xff0fff);
    EXPECT_EQ(none.sample_type, base.sample_type);

    perf_event_attr fp = base;
    applyCallGraph(CallGraphOptions{CallGraphMode::FramePointer}, fp, 0xff0fff);
    EXPECT_EQ(fp.sample_type, base.sample_type | PERF_SAMPLE_CALLCHAIN);
    EXPECT_EQ(fp.exclude_callchain_user, 0u);
    EXPECT_EQ(fp.exclude_callchain_kernel, 0u);
    EXPECT_EQ(fp.sample_max_stack, 0u);  // perf leaves it to kernel.perf_event_max_stack

    perf_event_attr dw = base;
    applyCallGraph(CallGraphOptions{CallGraphMode::Dwarf, 4096}, dw, 0xff0fff);
    EXPECT_EQ(dw.sample_type,
              base.sample_type | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
    EXPECT_EQ(dw.sample_regs_user, 0xff0fffu);
    EXPECT_EQ(dw.sample_stack_user, 4096u);
    EXPECT_EQ(dw.exclude_callchain_user, 1u);  // the kernel part stays in the callchain
    EXPECT_EQ(dw.exclude_callchain_kernel, 0u);
    EXPECT_EQ(dw.sample_max_stack, 0u);

    perf_event_attr lbr = base;
    applyCallGraph(CallGraphOptions{CallGraphMode::Lbr}, lbr, 0xff0fff);
    EXPECT_EQ(lbr.sample_type, base.sample_type | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_BRANCH_STACK);
    EXPECT_EQ(lbr.branch_sample_type, uint64_t(PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
                                               PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS |
                                               PERF_SAMPLE_BRANCH_HW_INDEX));
    EXPECT_EQ(lbr.sample_regs_user, 0u);
    EXPECT_EQ(lbr.exclude_callchain_user, 0u);
}

namespace {

// A sysfs tree with the PMUs a machine shows: always software and tracepoint;
// the core PMU "cpu" only where there is a hardware PMU, with caps/branches
// where the kernel exposes LBR.
class LbrCheck : public ::testing::Test {
protected:
    void SetUp() override {
        static std::atomic<int> n{0};
        root = fs::temp_directory_path() /
               ("auxscope-callgraph-" + std::to_string(getpid()) + "-" + std::to_string(n++));
        pmu("software", 1);
        pmu("tracepoint", 2);
    }
    void TearDown() override { fs::remove_all(root); }

    void pmu(const std::string& name, int type) {
        fs::create_directories(root / name);
        std::ofstream(root / name / "type") << type << "\n";
    }
    void cap(const std::string& name, const std::string& key, const std::string& value) {
        fs::create_directories(root / name / "caps");
        std::ofstream(root / name / "caps" / key) << value << "\n";
    }
    void intelCorePmu(bool lbr) {
        pmu("cpu", 4);
        fs::create_directories(root / "cpu" / "format");
        std::ofstream(root / "cpu" / "format" / "event") << "config:0-7\n";
        cap("cpu", "pmu_name", "skylake");
        if (lbr) cap("cpu", "branches", "32");
    }
    std::vector<EventDesc> events(const std::vector<std::string>& specs) {
        reg = PmuRegistry::discover(root);
        EventParser parser(reg);
        std::vector<EventDesc> out;
        for (auto& s : specs) {
            auto d = parser.parse(s);
            EXPECT_TRUE(d.ok()) << s << ": " << d.error().message;
            if (d)
                for (auto& e : *d)
                    out.push_back(e);
        }
        return out;
    }
    Expected<void> check(const std::vector<std::string>& specs, std::string_view vendor,
                         CallGraphOptions o = CallGraphOptions{CallGraphMode::Lbr}) {
        auto ev = events(specs);
        return checkCallGraphEvents(o, ev, reg, vendor);
    }
    std::string refused(const std::vector<std::string>& specs, std::string_view vendor) {
        auto r = check(specs, vendor);
        EXPECT_FALSE(r.ok()) << "accepted";
        return r ? std::string() : r.error().message;
    }

    fs::path root;
    PmuRegistry reg;
};

}  // namespace

TEST_F(LbrCheck, AcceptedOnAHardwareEventOfAnIntelPmuWithLbr) {
    intelCorePmu(true);
    auto r = check({"cycles"}, "GenuineIntel");
    EXPECT_TRUE(r.ok()) << r.error().message;
    r = check({"cpu/event=0x3c/"}, "GenuineIntel");
    EXPECT_TRUE(r.ok()) << r.error().message;
}

TEST_F(LbrCheck, RefusedOnASoftwareEventNamingIt) {
    intelCorePmu(true);
    const std::string why = refused({"cpu-clock"}, "GenuineIntel");
    EXPECT_EQ(
        why.rfind("--call-graph lbr: event 'cpu-clock' is a software event; LBR call stacks come from the "
                  "CPU's Last Branch Records",
                  0),
        0u)
        << why;
    EXPECT_NE(refused({"cycles", "page-faults"}, "GenuineIntel").find("'page-faults' is a software event"),
              std::string::npos);
}

TEST_F(LbrCheck, RefusedWhereUserSpaceIsExcluded) {
    intelCorePmu(true);
    EXPECT_NE(refused({"cycles:k"}, "GenuineIntel").find("'cycles:k' excludes user space"),
              std::string::npos);
}

TEST_F(LbrCheck, RefusedWithoutACorePmuAsInAVm) {
    const std::string why = refused({"cycles"}, "AuthenticAMD");
    EXPECT_NE(why.find("this machine has no core PMU (no /sys/bus/event_source/devices/cpu)"),
              std::string::npos)
        << why;
}

TEST_F(LbrCheck, RefusedOnAnAmdPmu) {
    pmu("cpu", 4);
    cap("cpu", "branches", "16");  // Zen 4's LBRv2: branches, but no call-stack mode
    const std::string why = refused({"cycles"}, "AuthenticAMD");
    EXPECT_NE(
        why.find("LBR call stacks are an Intel PMU feature (Haswell and later); this CPU is AuthenticAMD "
                 "(AMD's branch sampling has no call-stack mode)"),
        std::string::npos)
        << why;
    EXPECT_NE(refused({"cycles"}, "").find("this CPU is not an x86 CPU"), std::string::npos);
}

TEST_F(LbrCheck, RefusedOnAnIntelPmuWithoutLbr) {
    intelCorePmu(false);
    const std::string why = refused({"cycles"}, "GenuineIntel");
    EXPECT_NE(why.find("the Intel PMU 'cpu' has no Last Branch Records (caps/branches is absent"),
              std::string::npos)
        << why;
}

TEST_F(LbrCheck, OtherModesNeedASamplingEventOnly) {
    auto r = check({"cpu-clock"}, "AuthenticAMD", CallGraphOptions{CallGraphMode::Dwarf});
    EXPECT_TRUE(r.ok()) << r.error().message;
    r = check({"dummy"}, "AuthenticAMD", CallGraphOptions{CallGraphMode::FramePointer});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("--call-graph fp: no event here takes samples"), std::string::npos)
        << r.error().message;
    r = check({"cpu-clock"}, "AuthenticAMD", CallGraphOptions{});
    EXPECT_TRUE(r.ok());
}
