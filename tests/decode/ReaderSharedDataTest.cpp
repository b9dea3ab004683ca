// SPDX-License-Identifier: GPL-3.0-or-later
// The reader on the real traces in ../shared/data: perf's Intel PT capture from a
// Skylake laptop and simpleperf's CoreSight captures from Pixel phones. Oracles:
// `perf report -D` run here, and (independent of perf) the summaries shipped
// beside the data.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "ReaderTestSupport.h"
#include "TestData.h"

using namespace auxscope;
using namespace auxscope::test;

namespace {

// Every test here reads the shared data: each starts with AUXSCOPE_NEED_TEST_DATA().
std::string dataFile(const std::string& rel) {
    return test_support::testDataPath(rel);
}

const char* kSkylake = "intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14";
const char* kEtm = "coresight/simpleperf-etm/perf_etm.data";
const char* kKernel = "coresight/simpleperf-etm/perf_kernel.data";
const char* kMissingAux = "coresight/simpleperf-etm/perf_with_missing_aux_data.data";
const char* kInject = "coresight/simpleperf-etm/perf_inject.data";

PerfDataReader mustOpen(const std::string& path) {
    auto r = PerfDataReader::open(path);
    if (!r.ok()) {
        ADD_FAILURE() << r.error().message;
        std::abort();
    }
    return std::move(r).value();
}

std::string issuesText(const PerfDataReader& r) {
    std::string s;
    for (auto& i : r.issues())
        s += (i.error ? "error: " : "warning: ") + i.message + "\n";
    return s;
}

std::string readText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace

// Independent of perf: the record-type counts and AUXTRACE buffers listed in
// expected.aux-extract-summary.txt beside the Skylake file.
TEST(ReaderSharedData, SkylakeMatchesTheShippedSummary) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string summaryText =
        readText(dataFile("intel-pt/perf-intel_pt-skylake/expected.aux-extract-summary.txt"));
    ASSERT_FALSE(summaryText.empty());
    auto r = mustOpen(dataFile(kSkylake));
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);

    std::smatch m;
    ASSERT_TRUE(std::regex_search(summaryText, m, std::regex(R"(record type counts: \{([^}]*)\})")));
    std::map<uint32_t, uint64_t> expected;
    const std::string counts = m[1];
    std::regex pair(R"((\d+): (\d+))");
    for (auto it = std::sregex_iterator(counts.begin(), counts.end(), pair); it != std::sregex_iterator();
         ++it)
        expected[uint32_t(std::stoul((*it)[1]))] = std::stoull((*it)[2]);
    EXPECT_EQ(r.summary().recordsByType, expected);

    // AUXTRACE file_off=0x29c0 size=0x2fd0 aux_off=0x0 idx=0 tid=3174 cpu=0
    std::regex buf(
        R"(AUXTRACE file_off=0x([0-9a-f]+) size=0x([0-9a-f]+) aux_off=0x([0-9a-f]+) idx=(\d+) tid=(\d+) cpu=(\d+))");
    std::vector<PerfAuxtraceBuffer> want;
    for (auto it = std::sregex_iterator(summaryText.begin(), summaryText.end(), buf);
         it != std::sregex_iterator(); ++it) {
        PerfAuxtraceBuffer b;
        b.fileOffset = std::stoull((*it)[1], nullptr, 16);
        b.size = std::stoull((*it)[2], nullptr, 16);
        b.auxOffset = std::stoull((*it)[3], nullptr, 16);
        b.idx = uint32_t(std::stoul((*it)[4]));
        b.tid = uint32_t(std::stoul((*it)[5]));
        b.cpu = std::stoll((*it)[6]);
        want.push_back(b);
    }
    ASSERT_EQ(want.size(), 2u);
    const auto& got = r.summary().auxtrace;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].fileOffset, want[i].fileOffset);
        EXPECT_EQ(got[i].size, want[i].size);
        EXPECT_EQ(got[i].available, want[i].size);
        EXPECT_EQ(got[i].auxOffset, want[i].auxOffset);
        EXPECT_EQ(got[i].idx, want[i].idx);
        EXPECT_EQ(got[i].tid, want[i].tid);
        EXPECT_EQ(got[i].cpu, want[i].cpu);
        EXPECT_EQ(got[i].dataOffset, want[i].fileOffset + 48);
        // Intel PT buffers start at a PSB packet (02 82 repeated): the payload is where it should be.
        auto bytes = r.fileBytes(got[i].dataOffset, 16);
        ASSERT_EQ(bytes.size(), 16u);
        for (size_t k = 0; k < 16; k += 2)
            EXPECT_EQ(bytes[k] << 8 | bytes[k + 1], 0x0282) << "byte " << k;
    }
    // The data README's figures.
    EXPECT_EQ(r.summary().cpus.at(0).auxtraceBytes, 12240u);
    EXPECT_EQ(r.summary().cpus.at(3).auxtraceBytes, 137728u);

    // AUXTRACE_INFO type=1 priv=0x6 0x1f ...
    ASSERT_TRUE(
        std::regex_search(summaryText, m, std::regex(R"(AUXTRACE_INFO type=(\d+) priv=([0-9a-fx ]+))")));
    ASSERT_EQ(r.summary().auxtraceInfo.size(), 1u);
    EXPECT_EQ(r.summary().auxtraceInfo[0].type, std::stoul(m[1]));
    std::vector<uint64_t> priv;
    std::istringstream ps(m[2]);
    for (std::string v; ps >> v;)
        priv.push_back(std::stoull(v, nullptr, 16));
    EXPECT_EQ(r.summary().auxtraceInfo[0].priv, priv);
    ASSERT_TRUE(r.features().auxtraceIndex);
    ASSERT_EQ(r.features().auxtraceIndex->size(), 2u);
    EXPECT_EQ((*r.features().auxtraceIndex)[0].fileOffset, 0x29c0u);
    EXPECT_EQ((*r.features().auxtraceIndex)[1].fileOffset, 0x7788u);
}

// Independent of perf at test time: `perf report --header-only` output shipped
// beside the file.
TEST(ReaderSharedData, SkylakeFeaturesMatchTheShippedHeader) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string text =
        readText(dataFile("intel-pt/perf-intel_pt-skylake/expected.perf-report-header.txt"));
    ASSERT_FALSE(text.empty());
    std::map<std::string, std::string> kv;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# ", 0) != 0) continue;
        const size_t colon = line.find(" : ");
        if (colon == std::string::npos) continue;
        std::string key = line.substr(2, colon - 2);
        while (!key.empty() && key.back() == ' ')
            key.pop_back();
        std::string value = line.substr(colon + 3);
        while (!value.empty() && value.back() == ' ')
            value.pop_back();
        if (key == "event") key += std::to_string(kv.size());
        kv[key] = value;
    }
    auto r = mustOpen(dataFile(kSkylake));
    const auto& f = r.features();
    EXPECT_EQ(std::to_string(r.header().data.offset), kv["data offset"]);
    EXPECT_EQ(std::to_string(r.header().data.size), kv["data size"]);
    EXPECT_EQ(std::to_string(r.header().data.offset + r.header().data.size), kv["feat offset"]);
    EXPECT_EQ(f.hostname.value_or("?"), kv["hostname"]);
    EXPECT_EQ(f.osRelease.value_or("?"), kv["os release"]);
    EXPECT_EQ(f.version.value_or("?"), kv["perf version"]);
    EXPECT_EQ(f.arch.value_or("?"), kv["arch"]);
    ASSERT_TRUE(f.nrCpus);
    EXPECT_EQ(std::to_string(f.nrCpus->online), kv["nrcpus online"]);
    EXPECT_EQ(std::to_string(f.nrCpus->available), kv["nrcpus avail"]);
    EXPECT_EQ(f.cpuDesc.value_or("?"), kv["cpudesc"]);
    EXPECT_EQ(f.cpuId.value_or("?"), kv["cpuid"]);
    EXPECT_EQ(std::to_string(f.totalMemKb.value_or(0)) + " kB", kv["total memory"]);
    ASSERT_TRUE(f.cmdline);
    std::string cmdline;
    for (auto& a : *f.cmdline)
        cmdline += (cmdline.empty() ? "" : " ") + a;
    EXPECT_EQ(cmdline, kv["cmdline"]);
    // "# event : name = intel_pt//, , id = { 124, 125, 126, 127 }, type = 6, ..."
    ASSERT_EQ(r.attrs().size(), 4u);
    std::regex ev(R"(name = ([^,]+), , id = \{ ([0-9, ]+) \})");
    size_t i = 0;
    for (auto& [key, value] : kv) {
        if (key.rfind("event", 0) != 0) continue;
        std::smatch m;
        ASSERT_TRUE(std::regex_search(value, m, ev)) << value;
        std::vector<uint64_t> ids;
        std::istringstream is(std::regex_replace(std::string(m[2]), std::regex(","), " "));
        for (uint64_t id; is >> id;)
            ids.push_back(id);
        // kv is ordered by key; find the attr by its ids instead of by position.
        bool found = false;
        for (const PerfAttr& a : r.attrs())
            if (a.ids == ids) {
                EXPECT_EQ(a.name, std::string(m[1]));
                found = true;
            }
        EXPECT_TRUE(found) << value;
        ++i;
    }
    EXPECT_EQ(i, 4u);
    // "# pmu mappings: uncore_arb = 12, ..., intel_pt = 6, ..."
    std::smatch pm;
    ASSERT_TRUE(std::regex_search(text, pm, std::regex(R"(# pmu mappings: ([^\n]*))")));
    ASSERT_TRUE(f.pmuMappings);
    std::string mine;
    for (auto& p : *f.pmuMappings)
        mine += (mine.empty() ? "" : ", ") + p.name + " = " + std::to_string(p.type);
    std::string theirs = pm[1];
    while (!theirs.empty() && theirs.back() == ' ')
        theirs.pop_back();
    EXPECT_EQ(mine, theirs);
    ASSERT_TRUE(f.cpuTopology);
    EXPECT_EQ(f.cpuTopology->coreSiblings, (std::vector<std::string>{"0-3"}));
    ASSERT_TRUE(f.buildIds);
    EXPECT_EQ(f.buildIds->front().hex(),
              "672679ceaecf17b7a879e56c56802afc568aa242");  // perf's kernel build-id line
    EXPECT_EQ(f.buildIds->front().filename, "[kernel.kallsyms]");
}

class ReaderVersusPerf : public ::testing::TestWithParam<const char*> {};

// Record counts by type, the (offset, type) of every record and the CPU of every
// kernel record equal what `perf report -D` prints for the same file.
TEST_P(ReaderVersusPerf, RecordsMatchPerfReportDump) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string path = dataFile(GetParam());
    auto perf = perfBinary();
    if (!perf)
        GTEST_SKIP() << "perf is not installed or does not run here; the shipped summaries still check the "
                        "Skylake file";
    auto r = mustOpen(path);
    auto dump = perfReportDump(*perf, path);
    ASSERT_TRUE(dump.ran) << dump.error;
    auto diffs = compareWithPerf(r, dump, true);
    for (auto& d : diffs)
        ADD_FAILURE() << path << ": " << d;
    EXPECT_GT(r.summary().records, 0u);
    EXPECT_FALSE(r.hasErrors() && std::string(GetParam()) != kMissingAux) << issuesText(r);
}

INSTANTIATE_TEST_SUITE_P(SharedFiles, ReaderVersusPerf,
                         ::testing::Values(kSkylake, kEtm, kKernel, kMissingAux), [](const auto& info) {
                             std::string s = info.param;
                             s = s.substr(s.rfind('/') + 1);
                             for (char& c : s)
                                 if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

TEST(ReaderSharedData, SimpleperfUsesIdNotIdentifierAndOneEvent) {
    AUXSCOPE_NEED_TEST_DATA();
    auto r = mustOpen(dataFile(kEtm));
    ASSERT_EQ(r.attrs().size(), 1u);
    EXPECT_FALSE(r.attrs()[0].attr.sample_type & PERF_SAMPLE_IDENTIFIER);
    EXPECT_TRUE(r.attrs()[0].attr.sample_type & PERF_SAMPLE_ID);
    EXPECT_EQ(r.attrs()[0].ids.size(), 8u);
    // simpleperf names its event in META_INFO's event_type_info.
    EXPECT_EQ(r.attrs()[0].name, "cs-etm");
    size_t kernelRecords = 0, attributed = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type >= 64) return true;
        ++kernelRecords;
        attributed += rec.parsed.event != nullptr && rec.parsed.hasSampleId && !rec.parseError;
        return true;
    }));
    EXPECT_EQ(attributed, kernelRecords);
    EXPECT_EQ(r.summary().cpus.at(7).aux.records, 4u);
}

TEST(ReaderSharedData, SimpleperfIndexAndFeaturesBeyond31) {
    AUXSCOPE_NEED_TEST_DATA();
    auto r = mustOpen(dataFile(kKernel));
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    const auto& f = r.features();
    // simpleperf's AUXTRACE index has no leading count (perf itself fails on it).
    ASSERT_TRUE(f.auxtraceIndex);
    ASSERT_EQ(f.auxtraceIndex->size(), 3u);
    ASSERT_EQ(r.summary().auxtrace.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ((*f.auxtraceIndex)[i].fileOffset, r.summary().auxtrace[i].fileOffset);
        EXPECT_EQ((*f.auxtraceIndex)[i].size, 48u);  // the record's header.size, payload not included
    }
    // simpleperf's own features: META_INFO decoded, the other kept raw with its id.
    ASSERT_TRUE(f.simpleperfMetaInfo);
    bool version = false;
    for (auto& [k, v] : *f.simpleperfMetaInfo)
        version = version || (k == "simpleperf_version" && !v.empty());
    EXPECT_TRUE(version);
    ASSERT_EQ(f.raw.size(), 1u);
    EXPECT_EQ(f.raw[0].id, 132u);
    EXPECT_EQ(f.raw[0].bytes.size(), 15663u);
    EXPECT_EQ(f.present, (std::vector<unsigned>{2, 4, 6, 11, 18, 129, 132}));
    EXPECT_EQ(f.arch, "aarch64");
    // AUX records announce exactly what the AUXTRACE records hold, per CPU.
    for (auto& [cpu, st] : r.summary().cpus)
        EXPECT_EQ(st.aux.bytes, st.auxtraceBytes) << "cpu " << cpu;
}

TEST(ReaderSharedData, SimpleperfKernelTraceTruncatedAuxAsPerfCountsIt) {
    AUXSCOPE_NEED_TEST_DATA();
    auto r = mustOpen(dataFile(kKernel));
    uint64_t truncated = 0, aux = 0;
    for (auto& [cpu, st] : r.summary().cpus)
        truncated += st.aux.truncated, aux += st.aux.records;
    EXPECT_EQ(truncated, 2u);
    EXPECT_EQ(aux, 3u);
    EXPECT_EQ(r.summary().cpus.at(0).aux.truncated, 1u);
    EXPECT_EQ(r.summary().cpus.at(6).aux.truncated, 1u);
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf not available for the cross-check";
    // perf warns "AUX data lost N times out of M!" (N: AUX records flagged truncated).
    auto out = runCommand(*perf + " report -D -i '" + dataFile(kKernel) + "' 2>&1 >/dev/null");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out.output, m, std::regex(R"(AUX data lost (\d+) times out of (\d+))")))
        << out.output;
    EXPECT_EQ(truncated, std::stoull(m[1]));
    EXPECT_EQ(aux, std::stoull(m[2]));
}

TEST(ReaderSharedData, MissingAuxDataIsReportedNotACrash) {
    AUXSCOPE_NEED_TEST_DATA();
    auto r = mustOpen(dataFile(kMissingAux));
    ASSERT_TRUE(r.hasErrors());
    const PerfDataIssue* missing = nullptr;
    for (auto& i : r.issues())
        if (i.cause.find("the AUX data is missing") != std::string::npos) missing = &i;
    ASSERT_NE(missing, nullptr) << issuesText(r);
    EXPECT_TRUE(missing->error);
    EXPECT_NE(missing->message.find("perf_with_missing_aux_data.data: offset "), std::string::npos);
    EXPECT_EQ(missing->offset, r.summary().aux.front().fileOffset);
    EXPECT_EQ(r.summary().auxtrace.size(), 0u);
    EXPECT_EQ(r.summary().aux.size(), 6u);
    EXPECT_EQ(r.summary().auxtraceInfo.size(), 1u);
    EXPECT_EQ(r.summary().auxtraceInfo[0].type, 3u);  // CoreSight ETM
    EXPECT_FALSE(r.features().auxtraceIndex);
    // Everything else reads: 156 records, no damage.
    EXPECT_EQ(r.summary().records, 156u);
    EXPECT_EQ(r.summary().dataEnd, r.dataOffset() + r.dataSize());
}

TEST(ReaderSharedData, NotAPerfDataFileIsAClearError) {
    AUXSCOPE_NEED_TEST_DATA();
    auto r = PerfDataReader::open(dataFile(kInject));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("perf_inject.data: offset 0 (0x0): not a perf.data file: wrong magic"),
              std::string::npos)
        << r.error().message;
}
