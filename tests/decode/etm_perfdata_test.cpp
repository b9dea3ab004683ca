// SPDX-License-Identifier: GPL-3.0-or-later
// CoreSight perf.data decode (issue 12) over simpleperf's cs_etm test files in
// coresight/simpleperf-etm: the executed ranges against simpleperf's expected
// range counts, the branches against `perf script --itrace=b` (run here), spans
// and timelines through the decoder-neutral AuxTraceSession, lost AUX data and
// kernel module code.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "TestData.h"
#include "auxtrace/AuxTraceDecode.h"
#include "etm/EtmSession.h"
#include "perfdata/PerfDataReader.h"

namespace auxscope {
namespace {

constexpr uint64_t kLoopBase = 0x582b2b0000;  // where etm_test_loop is mapped in perf_etm.data

std::string dataDir() {
    return test_support::testDataPath("coresight/simpleperf-etm");
}

AuxTraceOptions withSymfs() {
    AuxTraceOptions o;
    o.images.symfs = dataDir() + "/symfs";
    return o;
}

// "start-last:count" per range, relative to the ELF, from a ranges listing.
std::map<std::string, uint64_t> rangeCounts(const std::string& listing) {
    std::map<std::string, uint64_t> counts;
    std::istringstream in(listing);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        int cpu = 0;
        unsigned id = 0, n = 0;
        uint64_t first = 0, last = 0;
        char isa[16] = {};
        if (std::sscanf(line.c_str(), "%d %x %" SCNx64 " %" SCNx64 " %u %15s", &cpu, &id, &first, &last, &n,
                        isa) != 6)
            continue;
        char key[64];
        std::snprintf(key, sizeof key, "%" PRIx64 "-%" PRIx64, first - kLoopBase, last - kLoopBase);
        ++counts[key];
    }
    return counts;
}

TEST(EtmPerfData, RangesEqualSimpleperfExpectedCounts) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(dataDir() + "/perf_etm.data");
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_EQ(auxTraceKind(*file), AuxTraceKind::CoreSight);
    ASSERT_TRUE(hasDecodableAuxTrace(*file));
    auto session = AuxTraceSession::open(*file, withSymfs());
    ASSERT_TRUE(session) << session.error().message;
    std::ostringstream out, err;
    ASSERT_EQ((*session)->listRanges(std::nullopt, out, err), 0) << err.str();
    const auto ours = rangeCounts(out.str());

    std::map<std::string, uint64_t> expected;
    std::ifstream in(dataDir() + "/expected.snapshot_formatted_etmv4_cpu7.range-counts.txt");
    ASSERT_TRUE(in);
    std::string line;
    while (std::getline(in, line)) {
        const size_t colon = line.rfind(':');
        if (colon == std::string::npos) continue;
        expected[line.substr(0, colon)] = std::stoull(line.substr(colon + 1));
    }
    ASSERT_EQ(expected.size(), 10u);
    EXPECT_EQ(ours, expected);
    uint64_t total = 0;
    for (const auto& [k, n] : ours)
        total += n;
    std::printf("compared %zu address ranges (%" PRIu64 " executions) with the expected counts\n",
                ours.size(), total);
}

// (from, to) of every taken branch the flow continues through.
using Branches = std::vector<std::pair<uint64_t, uint64_t>>;

TEST(EtmPerfData, BranchesEqualPerfScript) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(dataDir() + "/perf_etm.data");
    ASSERT_TRUE(file) << file.error().message;
    etm::EtmSessionOptions options;
    options.images.symfs = dataDir() + "/symfs";
    auto session = etm::EtmSession::open(*file, options);
    ASSERT_TRUE(session) << session.error().message;
    Branches ours;
    etm::EtmRange prev;
    bool havePrev = false;
    (*session)->forEachRange(std::nullopt, [&](const etm::EtmRange& r) {
        if (havePrev && r.continues && prev.branch != etm::EtmBranch::None)
            ours.push_back({prev.last, r.start});
        prev = r, havePrev = true;
    });
    ASSERT_FALSE(ours.empty());

    if (std::system("perf --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "perf is not installed";
    const std::string cmd =
        "cd '" + dataDir() +
        "' && perf script -i perf_etm.data --symfs symfs --itrace=b -F ip,addr 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    Branches perf;
    size_t perfLines = 0;
    char buf[256];
    while (std::fgets(buf, sizeof buf, pipe)) {
        uint64_t from = 0, to = 0;
        if (std::sscanf(buf, " %" SCNx64 " => %" SCNx64, &from, &to) != 2) continue;
        ++perfLines;
        if (from && to) perf.push_back({from, to});  // 0: trace on / off, not a branch between ranges
    }
    pclose(pipe);
    if (perfLines == 0)
        GTEST_SKIP() << "this perf does not decode cs_etm (built without OpenCSD?): branches not compared";
    EXPECT_EQ(ours, perf);
    std::printf("compared %zu branches with perf script --itrace=b (%zu lines)\n", ours.size(), perfLines);
}

TEST(EtmPerfData, SpansWithFunctionsOfTheLoopAndATimeline) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(dataDir() + "/perf_etm.data");
    ASSERT_TRUE(file) << file.error().message;
    auto decoded = decodeAuxTraceSpans(*file, {}, withSymfs(), 2);
    ASSERT_TRUE(decoded) << decoded.error().message;
    ASSERT_GT(decoded->spanCount(), 0u);
    EXPECT_EQ(decoded->result.stats.instructions, 944u);
    const FunctionTable& functions = decoded->session->functions();
    std::set<std::string> files;
    for (const auto& [tid, store] : decoded->result.threads)
        for (size_t i = 0; i < store.size(); ++i)
            if (const Span s = store.at(i); !s.isGap()) files.insert(functions[s.function].file);
    bool loop = false;
    for (const std::string& f : files)
        loop = loop || f.find("etm_test_loop") != std::string::npos;
    EXPECT_TRUE(loop) << "no span in etm_test_loop";

    std::shared_ptr<const AuxTraceSession> shared(std::move(decoded->session));
    const TimelineData base = timelineBase(shared);
    EXPECT_LT(base.begin, base.end);
    auto spans = const_cast<AuxTraceSession&>(*shared).decodeSpans(DecodeWindow{}, 2);
    auto timeline = makeTimeline(base, *shared, std::move(spans), base.begin, base.end);
    ASSERT_FALSE(timeline->threads.empty());
}

TEST(EtmPerfData, MissingAuxDataIsAnExplainedGap) {
    AUXSCOPE_NEED_TEST_DATA();
    auto file = PerfDataReader::open(dataDir() + "/perf_with_missing_aux_data.data");
    ASSERT_TRUE(file) << file.error().message;
    auto session = AuxTraceSession::open(*file, withSymfs());
    ASSERT_TRUE(session) << session.error().message;
    AuxTraceSession& s = **session;
    const auto lines = s.lossLines(std::nullopt);
    ASSERT_FALSE(lines.empty());
    EXPECT_NE(lines.front().find("missing from the file"), std::string::npos) << lines.front();
    // What the file does hold stays: its threads and mappings.
    EXPECT_FALSE(s.sideband().model().processOf().empty());
    DecodedSpans spans = s.decodeSpans(DecodeWindow{}, 2);
    EXPECT_GT(spans.stats.gaps[GapReason::LostAux], 0u);
    bool told = false;
    for (const auto& [tid, store] : spans.threads)
        for (const Gap& g : store.gaps())
            told = told || (g.reason == GapReason::LostAux &&
                            g.detail.find("missing from the file") != std::string::npos);
    EXPECT_TRUE(told);
}

TEST(EtmPerfData, KernelModuleDecodesAndTheKernelIsAMissingImage) {
    AUXSCOPE_NEED_TEST_DATA();
    // simpleperf records the module by its path on the device: give it a symfs holding it there.
    namespace fs = std::filesystem;
    const fs::path symfs = fs::temp_directory_path() / ("auxscope-etm-symfs-" + std::to_string(::getpid()));
    fs::create_directories(symfs / "vendor/lib/modules");
    fs::copy_file(dataDir() + "/rq_stats.ko", symfs / "vendor/lib/modules/rq_stats.ko",
                  fs::copy_options::overwrite_existing);
    auto file = PerfDataReader::open(dataDir() + "/perf_kernel.data");
    ASSERT_TRUE(file) << file.error().message;
    AuxTraceOptions options;
    options.images.symfs = symfs.string();
    auto session = AuxTraceSession::open(*file, options);
    ASSERT_TRUE(session) << session.error().message;
    const FunctionTable& functions = (*session)->functions();
    uint64_t moduleInstructions = 0;
    std::set<std::string> moduleFunctions;
    const DecodeStats stats = (*session)->forEachBlock(DecodeWindow{}, [&](const FlowBlock& b) {
        if (functions[b.function].file.find("rq_stats.ko") != std::string::npos) {
            moduleInstructions += b.instructions;
            moduleFunctions.insert(functions[b.function].name);
        }
    });
    fs::remove_all(symfs);
    // The kernel without --vmlinux/--kcore: explained missing-image gaps naming it.
    bool kernelMissing = false;
    for (const auto& [f, n] : stats.missingImages)
        kernelMissing = kernelMissing || f.find("[kernel.kallsyms]") != std::string::npos;
    EXPECT_TRUE(kernelMissing);
    ASSERT_GT(stats.gaps.count(GapReason::MissingImage), 0u);
    std::printf("rq_stats.ko: %" PRIu64 " instructions decoded; %" PRIu64 " missing-image gaps\n",
                moduleInstructions, stats.gaps.at(GapReason::MissingImage));
    // The module's .ko laid out at its map as the kernel lays it out: its code
    // decodes (34 instructions, from its first function on) and it is not missing.
    EXPECT_GT(moduleInstructions, 0u);
    EXPECT_EQ(stats.missingImages.count("/vendor/lib/modules/rq_stats.ko"), 0u);
    EXPECT_TRUE(moduleFunctions.count("__cfi_check")) << "no rq_stats.ko function named";
}

}  // namespace
}  // namespace auxscope
