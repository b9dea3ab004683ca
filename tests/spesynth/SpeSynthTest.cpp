// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-spesynth against perf, the independent oracle: perf report -D must
// list every record of the truth, packet by packet, with the values the truth
// holds (v1 and v2 AUXTRACE_INFO), and perf script must synthesize one sample
// per record with the truth's CPU, pid, tid, time and PC, symbols from the
// generated ELF, memory samples with the data addresses (resolving to the
// program's globals, [heap] and [stack]) and a branch-miss sample per
// mispredicted branch. Also: --records round trips the truth, bad CSVs are
// refused with file:line and the cause, and 100,000 records take well under 2 s.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "SpeSynthElf.h"
#include "SpeSynthEncoder.h"
#include "SpeSynthPerfData.h"
#include "SpeSynthTruth.h"
#include "TestSupport.h"
#include "spe/SpeRecord.h"

using namespace auxscope;
using namespace auxscope::spesynth;
using spe::OpClass;
using spe::SpeRecord;
namespace fs = std::filesystem;

namespace {

using test_support::TempDir;

int run(const std::string& command, std::string* output = nullptr, bool withStderr = true) {
    return test_support::runCommand(command, output, withStderr);
}

std::string spesynthTool() {
    return AUXSCOPE_SPESYNTH;
}

// perf is the oracle: without it the tests skip, except on CI where it must be there.
bool havePerf() {
    if (run("perf version") == 0) return true;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true")
        ADD_FAILURE() << "perf is not installed (Debian: linux-perf): the independent oracle is missing";
    return false;
}
#define REQUIRE_PERF()                                                                   \
    if (!havePerf()) {                                                                   \
        if (!HasFailure()) GTEST_SKIP() << "perf is not installed (Debian: linux-perf)"; \
        return;                                                                          \
    }

std::vector<SpeRecord> readTruth(const fs::path& file) {
    auto t = readTruthCsv(file.string());
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? t->records : std::vector<SpeRecord>{};
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

uint64_t hex(const std::string& s) {
    return std::strtoull(s.c_str(), nullptr, 16);
}

// The records perf report -D shows, rebuilt from its packet lines per CPU (the
// AUXTRACE record before each dump names the CPU): every value perf prints.
struct PerfDump {
    std::map<int, std::vector<SpeRecord>> perCpu;
    uint64_t packets = 0, badPackets = 0, padLines = 0, dataBytes = 0;
    std::map<std::string, uint64_t> kinds;  // first word of each packet line
    std::string infoLines;                  // the AUXTRACE_INFO's lines
};

PerfDump perfDump(const fs::path& file) {
    PerfDump d;
    std::string text;
    run("perf report -D -i " + file.string(), &text, false);
    std::istringstream in(text);
    std::string line;
    int cpu = -1;
    SpeRecord r;
    bool open = false;
    bool inInfo = false;
    static const std::map<std::string, int> kEvents = {
        {"EXCEPTION-GEN", 0}, {"RETIRED", 1},           {"L1D-ACCESS", 2},     {"L1D-REFILL", 3},
        {"TLB-ACCESS", 4},    {"TLB-REFILL", 5},        {"NOT-TAKEN", 6},      {"MISPRED", 7},
        {"LLC-ACCESS", 8},    {"LLC-REFILL", 9},        {"REMOTE-ACCESS", 10}, {"ALIGNMENT", 11},
        {"TXN", 16},          {"SVE-PARTIAL-PRED", 17}, {"SVE-EMPTY-PRED", 18}};
    while (std::getline(in, line)) {
        if (line.find("PERF_RECORD_AUXTRACE_INFO") != std::string::npos) inInfo = true;
        if (inInfo) {
            if (line.empty())
                inInfo = false;
            else
                d.infoLines += line + "\n";
        }
        if (auto at = line.find("PERF_RECORD_AUXTRACE size:"); at != std::string::npos) {
            cpu = std::atoi(line.c_str() + line.rfind("cpu:") + 4);
            continue;
        }
        if (auto at = line.find("ARM SPE data: size "); at != std::string::npos) {
            d.dataBytes += hex(line.substr(at + 19));
            continue;
        }
        if (line.size() < 14 || line.compare(0, 3, ".  ") != 0 || line[11] != ':') continue;
        // ".  OFFSET:  XX XX ...   DESCRIPTION"
        std::istringstream words(line.substr(13));
        std::vector<std::string> w;
        std::string word;
        while (words >> word)
            w.push_back(word);
        size_t first = 0;
        while (first < w.size() && w[first].size() == 2 && std::isxdigit(uint8_t(w[first][0])) &&
               std::isxdigit(uint8_t(w[first][1])))
            ++first;
        if (first >= w.size()) continue;
        ++d.packets;
        const std::vector<std::string> v(w.begin() + long(first), w.end());
        const std::string& k = v[0];
        ++d.kinds[k];
        if (k == "Bad") {
            ++d.badPackets;
            continue;
        }
        if (k == "PAD") {
            ++d.padLines;
            continue;
        }
        if (!open) {
            r = SpeRecord{};
            r.cpu = cpu;
            open = true;
        }
        auto elNs = [&](uint8_t& el, bool& ns) {
            el = uint8_t(std::atoi(v[2].c_str() + 2));
            ns = v[3] == "ns=1";
        };
        if (k == "PC") {
            r.pc = hex(v[1]);
            r.hasPc = true;
            elNs(r.pcEl, r.pcNs);
        } else if (k == "TGT") {
            r.branchTarget = hex(v[1]);
            r.hasBranchTarget = true;
        } else if (k == "PBT" || (k == "ADDR" && v.size() >= 3 && v.back() == "(4)")) {
            r.prevBranchTarget = hex(v[1]) & ((1ull << 56) - 1);  // perf 6.1 prints index 4 raw
            r.hasPrevBranchTarget = true;
        } else if (k == "VA") {
            const uint64_t va = hex(v[1]);
            r.dataVa = va & ((1ull << 56) - 1);
            r.dataVaTag = uint8_t(va >> 56);
            r.hasDataVa = true;
        } else if (k == "PA") {
            r.dataPa = hex(v[1]);
            r.dataPaNs = v[2] == "ns=1";
            r.dataPaCh = v.size() > 3 && v[3] == "ch=1";
            r.dataPaPat = v.size() > 4 ? uint8_t(hex(v[4].substr(4))) : 0;
            r.hasDataPa = true;
        } else if (k == "CONTEXT") {
            r.context = uint32_t(hex(v[1]));
            r.contextIndex = uint8_t(std::atoi(v[2].c_str() + 2) - 1);
            r.hasContext = true;
        } else if (k == "LAT") {
            const uint16_t n = uint16_t(std::atoi(v[1].c_str()));
            const std::string kind = v.size() > 2 ? v[2] : "";
            if (kind == "TOT") r.totalLatency = n, r.hasTotalLatency = true;
            if (kind == "ISSUE") r.issueLatency = n, r.hasIssueLatency = true;
            if (kind == "XLAT") r.translationLatency = n, r.hasTranslationLatency = true;
        } else if (k == "EV") {
            r.hasEvents = true;
            for (size_t i = 1; i < v.size(); ++i) {
                auto it = kEvents.find(v[i]);
                if (it != kEvents.end())
                    r.events |= 1ull << it->second;
                else
                    r.events |= 1ull << 63;  // a name this test does not know
            }
        } else if (k == "DATA-SOURCE") {
            r.dataSource = uint16_t(std::atoi(v[1].c_str()));
            r.hasDataSource = true;
        } else if (k == "LD" || k == "ST") {
            r.opClass = OpClass::LoadStore;
            r.isLoad = k == "LD";
            r.isStore = k == "ST";
            for (const std::string& s : v) {
                if (s == "AT" || s == "EXCL" || s == "AR") r.isAtomic = true;
                if (s == "EVLEN") r.isSve = true;
            }
        } else if (k == "B") {
            r.opClass = OpClass::Branch;
            r.isBranch = true;
            for (const std::string& s : v)
                if (s == "COND") r.isConditional = true;
        } else if (k == "OTHER" || k == "SVE-OTHER") {
            r.opClass = OpClass::Other;
            r.isSve = k == "SVE-OTHER";
        } else if (k == "TS" || k == "END") {
            if (k == "TS") r.timestamp = std::strtoull(v[1].c_str(), nullptr, 10);
            d.perCpu[cpu].push_back(r);
            open = false;
        }
    }
    return d;
}

// The fields perf report -D shows, compared (opPayload through its derived flags).
void expectSameAsPerf(const SpeRecord& t, const SpeRecord& p, const std::string& where) {
    auto tuple = [](const SpeRecord& r) {
        return std::make_tuple(r.timestamp, r.hasPc, r.pc, r.pcEl, r.pcNs, r.hasContext, r.context,
                               r.contextIndex, uint8_t(r.opClass), r.isLoad, r.isStore, r.isBranch,
                               r.isConditional, r.isSve, r.isAtomic, r.hasBranchTarget, r.branchTarget,
                               r.hasPrevBranchTarget, r.prevBranchTarget, r.hasDataVa, r.dataVa, r.dataVaTag,
                               r.hasDataPa, r.dataPa, r.dataPaNs, r.dataPaCh, r.dataPaPat, r.hasTotalLatency,
                               r.totalLatency, r.hasIssueLatency, r.issueLatency, r.hasTranslationLatency,
                               r.translationLatency, r.hasEvents, r.events, r.hasDataSource, r.dataSource);
    };
    EXPECT_TRUE(tuple(t) == tuple(p)) << where << "\n truth: " << truthRow(t) << "\n perf:  " << truthRow(p);
}

// Every truth record, per CPU in order, against perf report -D.
void expectDumpMatchesTruth(const fs::path& file, const std::vector<SpeRecord>& truth) {
    const PerfDump d = perfDump(file);
    EXPECT_EQ(d.badPackets, 0u) << "perf report -D found bad packets in " << file;
    EXPECT_GT(d.dataBytes, 0u);
    std::map<int, std::vector<SpeRecord>> want;
    for (const SpeRecord& r : truth)
        want[r.cpu].push_back(r);
    ASSERT_EQ(d.perCpu.size(), want.size()) << "CPUs with SPE data";
    size_t records = 0, failures = 0;
    for (auto& [cpu, recs] : want) {
        const auto it = d.perCpu.find(cpu);
        ASSERT_NE(it, d.perCpu.end()) << "perf shows no records of CPU " << cpu;
        ASSERT_EQ(it->second.size(), recs.size()) << "records of CPU " << cpu;
        for (size_t i = 0; i < recs.size() && failures < 5; ++i) {
            const bool before = ::testing::Test::HasFailure();
            expectSameAsPerf(recs[i], it->second[i],
                             "CPU " + std::to_string(cpu) + " record #" + std::to_string(i));
            if (!before && ::testing::Test::HasFailure()) ++failures;
        }
        records += recs.size();
    }
    EXPECT_EQ(records, truth.size());
    // Record ends: a TS or an END each.
    uint64_t ts = 0, end = 0;
    for (const SpeRecord& r : truth)
        (r.timestamp ? ts : end)++;
    EXPECT_EQ(d.kinds.count("TS") ? d.kinds.at("TS") : 0, ts);
    EXPECT_EQ(d.kinds.count("END") ? d.kinds.at("END") : 0, end);
}

struct Generated {
    TempDir dir{"spesynth"};
    fs::path file;
    std::vector<SpeRecord> truth;
    std::string output;
    int status = -1;
};

void generate(Generated& g, const std::string& args) {
    g.file = g.dir.path / "spe.data";
    g.status = run(spesynthTool() + " " + args + " -o " + g.file.string(), &g.output);
    ASSERT_EQ(g.status, 0) << g.output;
    g.truth = readTruth(g.file.string() + ".truth");
}

// Function and object of an address in the standard program, or "".
std::string functionAt(uint64_t pc) {
    static const SpeElfLayout l = standardProgram();
    for (const ElfSymbolDef& f : l.functions)
        if (pc >= f.address && pc < f.address + f.size) return f.name;
    return "";
}

}  // namespace

TEST(SpeSynth, TruthIsEveryFieldInDeclarationOrder) {
    Generated g;
    generate(g, "--generate 10000 --seed 3 -q");
    const std::string text = slurp(g.file.string() + ".truth");
    const std::string header = text.substr(0, text.find('\n'));
    EXPECT_EQ(
        header,
        "timestamp,time,cpu,pid,tid,context,contextIndex,hasContext,opClass,opPayload,isLoad,isStore,"
        "isBranch,isSve,isAtomic,isConditional,pc,pcEl,pcNs,hasPc,branchTarget,hasBranchTarget,"
        "prevBranchTarget,hasPrevBranchTarget,dataVa,dataVaTag,hasDataVa,dataPa,dataPaNs,dataPaCh,"
        "dataPaPat,hasDataPa,totalLatency,issueLatency,translationLatency,hasTotalLatency,hasIssueLatency,"
        "hasTranslationLatency,events,hasEvents,dataSource,hasDataSource");
    ASSERT_EQ(g.truth.size(), 10000u);
    // Time order (ties by CPU; a record without a timestamp after the one before
    // it on its CPU), times increasing per CPU, time = TIME_CONV(timestamp).
    const SpeTimeConv tc;
    std::map<int, uint64_t> lastOnCpu;
    uint64_t lastEff = 0;
    int lastCpu = -1;
    std::map<std::string, int> kinds;
    for (const SpeRecord& r : g.truth) {
        const uint64_t eff = r.timestamp ? r.timestamp : lastOnCpu[r.cpu];
        ASSERT_TRUE(eff > lastEff || (eff == lastEff && r.cpu >= lastCpu) || !r.timestamp) << truthRow(r);
        if (r.timestamp) {
            ASSERT_GT(r.timestamp, lastOnCpu[r.cpu]) << truthRow(r);
            lastOnCpu[r.cpu] = r.timestamp;
            EXPECT_EQ(r.time, tc.perfTime(r.timestamp));
        } else {
            EXPECT_EQ(r.time, 0u);
        }
        lastEff = eff;
        lastCpu = r.cpu;
        EXPECT_TRUE(r.hasContext && r.context == uint32_t(r.tid));
        kinds[r.isLoad ? "load" : r.isStore ? "store" : r.isBranch ? "branch" : "other"]++;
        if (r.isSve) kinds["sve"]++;
        if (r.isAtomic) kinds["atomic"]++;
        if (!r.timestamp) kinds["end"]++;
        if (r.hasPrevBranchTarget) kinds["pbt"]++;
        if (r.dataVaTag) kinds["tagged"]++;
        if (r.hasDataSource) kinds["source " + std::to_string(r.dataSource)]++;
        if (r.events & spe::kEvMispredicted) kinds["mispredicted"]++;
        if (r.events & spe::kEvTlbWalk) kinds["tlb walk"]++;
        if (r.events & spe::kEvLlcMiss) kinds["llc miss"]++;
        if (r.events & spe::kEvRemoteAccess) kinds["remote"]++;
        if (r.isConditional && (r.events & spe::kEvNotTaken)) kinds["not taken"]++;
    }
    for (const char* k :
         {"load", "store", "branch", "other", "sve", "atomic", "end", "pbt", "tagged", "source 0", "source 8",
          "source 11", "source 14", "mispredicted", "tlb walk", "llc miss", "not taken"})
        EXPECT_GT(kinds[k], 0) << "the mix has no " << k;
    std::map<int32_t, int> tids;
    std::map<int, int> cpus;
    for (const SpeRecord& r : g.truth)
        tids[r.tid]++, cpus[r.cpu]++;
    EXPECT_EQ(tids.size(), 6u);
    EXPECT_EQ(cpus.size(), 4u);
    // The ELF beside the file.
    EXPECT_TRUE(fs::exists(g.dir.path / "spe-code.elf"));
}

TEST(SpeSynth, PerfReportDumpListsEveryRecordV1) {
    REQUIRE_PERF();
    Generated g;
    generate(g, "--generate 20000 --seed 7 -q");
    expectDumpMatchesTruth(g.file, g.truth);
    const PerfDump d = perfDump(g.file);
    EXPECT_NE(d.infoLines.find("PMU Type           8"), std::string::npos) << d.infoLines;
    // Every packet kind is there, the extended header form included.
    for (const char* k : {"PAD", "END", "TS", "EV", "DATA-SOURCE", "CONTEXT", "LD", "ST", "B", "OTHER",
                          "SVE-OTHER", "PC", "TGT", "VA", "PA", "LAT"})
        EXPECT_GT(d.kinds.count(k) ? d.kinds.at(k) : 0, 0u) << "no " << k << " packet";
    std::string text;
    run("perf report -D -i " + g.file.string() + " | grep -cE '^\\.  [0-9a-f]{8}:  20 (b|9)'", &text, false);
    EXPECT_GT(std::atoi(text.c_str()), 0) << "no extended-header packet";
}

TEST(SpeSynth, PerfReportDumpListsEveryRecordV2) {
    REQUIRE_PERF();
    Generated g;
    generate(g, "--generate 5000 --seed 8 --cpus 3 --threads 5 --info-version 2 --vhe -q");
    for (const SpeRecord& r : g.truth)
        ASSERT_EQ(r.contextIndex, 1) << "--vhe: CONTEXTIDR_EL2";
    expectDumpMatchesTruth(g.file, g.truth);
    // The v2 block: {2, 4, PMU type, CPUs} then 7 words per CPU, in the record's raw bytes.
    std::string text;
    run("perf report -D -i " + g.file.string() + " | grep -A4 'raw event: size 216 bytes'", &text, false);
    EXPECT_NE(text.find("46 00 00 00 00 00 d8 00 04 00 00 00 00 00 00 00"), std::string::npos) << text;
    EXPECT_NE(text.find("02 00 00 00 00 00 00 00 04 00 00 00 00 00 00 00"), std::string::npos) << text;
    EXPECT_NE(text.find("08 00 00 00 00 00 00 00 03 00 00 00 00 00 00 00"), std::string::npos) << text;
    EXPECT_NE(text.find("10 10 10 10 10 10 10 10 00 00 00 00 00 00 00 00"), std::string::npos) << text;
}

TEST(SpeSynth, PerfScriptSamplesEveryRecord) {
    REQUIRE_PERF();
    Generated g;
    generate(g, "--generate 20000 --seed 11 -q");
    std::string text;
    ASSERT_EQ(run("perf script -i " + g.file.string() + " --itrace=i1i --ns -F cpu,pid,tid,time,ip,sym",
                  &text, false),
              0);
    // One instructions sample per record: (cpu, pid, tid, time, pc, symbol).
    using Key = std::tuple<int, int32_t, int32_t, uint64_t, uint64_t, std::string>;
    std::map<Key, int> want, got;
    const SpeTimeConv tc;
    for (const SpeRecord& r : g.truth)
        want[{r.cpu, r.pid, r.tid, r.timestamp ? r.time : tc.perfTime(0), r.pc, functionAt(r.pc)}]++;
    std::istringstream in(text);
    std::string line;
    size_t samples = 0;
    while (std::getline(in, line)) {
        int pid = 0, tid = 0, cpu = 0;
        unsigned long long sec = 0, ns = 0, ip = 0;
        char sym[256] = "";
        if (std::sscanf(line.c_str(), " %d/%d [%d] %llu.%llu: %llx %255s", &pid, &tid, &cpu, &sec, &ns, &ip,
                        sym) < 6)
            continue;
        ++samples;
        got[{cpu, pid, tid, sec * 1000000000ull + ns, ip, sym}]++;
    }
    EXPECT_EQ(samples, g.truth.size());
    EXPECT_TRUE(got == want) << "perf script's samples differ from the truth";

    // The data address of each sample: a load's or store's VA, 0 for the rest.
    ASSERT_EQ(run("perf script -i " + g.file.string() + " --itrace=i1i -F tid,ip,addr", &text, false), 0);
    std::map<std::tuple<int32_t, uint64_t, uint64_t>, int> mwant, mgot;
    for (const SpeRecord& r : g.truth)
        mwant[{r.tid, r.pc, r.isLoad || r.isStore ? r.dataVa : 0}]++;
    in = std::istringstream(text);
    while (std::getline(in, line)) {
        int tid = 0;
        unsigned long long addr = 0, ip = 0;
        if (std::sscanf(line.c_str(), " %d %llx %llx", &tid, &addr, &ip) == 3) mgot[{tid, ip, addr}]++;
    }
    EXPECT_TRUE(mgot == mwant) << "data addresses: " << mgot.size() << " distinct, the truth "
                               << mwant.size();

    // Branch misses: one per mispredicted branch, to its target.
    ASSERT_EQ(run("perf script -i " + g.file.string() + " --itrace=b -F ip,addr", &text, false), 0);
    size_t misses = 0, wantMisses = 0;
    in = std::istringstream(text);
    while (std::getline(in, line))
        if (!line.empty()) ++misses;
    for (const SpeRecord& r : g.truth)
        wantMisses += (r.events & spe::kEvMispredicted) != 0;
    EXPECT_EQ(misses, wantMisses);
}

// perf script's thread, CPU, time and PC of every record against the truth.
void expectPerfThreads(const fs::path& file, const std::vector<SpeRecord>& truth) {
    std::string text;
    ASSERT_EQ(run("perf script -i " + file.string() + " --itrace=i1i --ns -F cpu,tid,time,ip", &text, false),
              0);
    std::map<std::tuple<int, int32_t, uint64_t, uint64_t>, int> want, got;
    const SpeTimeConv tc;
    for (const SpeRecord& r : truth)
        want[{r.cpu, r.tid, r.timestamp ? r.time : tc.perfTime(0), r.pc}]++;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        int tid = 0, cpu = 0;
        unsigned long long sec = 0, ns = 0, ip = 0;
        if (std::sscanf(line.c_str(), " %d [%d] %llu.%llu: %llx", &tid, &cpu, &sec, &ns, &ip) == 5)
            got[{cpu, tid, sec * 1000000000ull + ns, ip}]++;
    }
    EXPECT_TRUE(got == want) << "perf's threads differ from the truth in " << file;
}

TEST(SpeSynth, PerfScriptThreadsFromSwitchesWithoutContext) {
    REQUIRE_PERF();
    Generated g;
    generate(g, "--generate 20000 --seed 12 --no-context -q");
    for (const SpeRecord& r : g.truth)
        ASSERT_FALSE(r.hasContext);
    expectPerfThreads(g.file, g.truth);
    // --records derives the switches from the records' threads: the same again.
    const fs::path again = g.dir.path / "again.data";
    std::string out;
    ASSERT_EQ(run(spesynthTool() + " --records " + g.file.string() + ".truth -q -o " + again.string(), &out),
              0)
        << out;
    expectPerfThreads(again, g.truth);
}

TEST(SpeSynth, DataAddressesResolveToGlobalsHeapAndStack) {
    REQUIRE_PERF();
    Generated g;
    generate(g, "--generate 20000 --seed 13 -q");
    // perf's memory view: samples per data object (symbol_daddr) and mapping
    // (one sample per record; those without a data address are [unknown]).
    std::string text;
    ASSERT_EQ(run("perf report -i " + g.file.string() +
                      " --itrace=i1i --mem-mode --sort=dso_daddr,symbol_daddr -n --stdio -q 2>/dev/null",
                  &text, false),
              0);
    std::map<std::string, uint64_t> gotByObject, gotByDso;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream w(line);
        std::string pct, dso, level, sym;
        uint64_t n = 0;
        if (!(w >> pct >> n >> dso >> level >> sym)) continue;
        gotByDso[dso] += n;
        if (dso.ends_with("-code.elf")) gotByObject[sym.substr(0, sym.find('+'))] += n;
    }
    const SpeElfLayout l = standardProgram();
    std::map<std::string, uint64_t> wantByObject, wantByDso;
    for (const SpeRecord& r : g.truth) {
        if (!r.isLoad && !r.isStore) continue;
        std::string dso = r.dataVa >= 0xffff00000000ull ? "?"
                          : r.dataVa >= 0x2000000       ? "[heap]"
                                                        : "spe-code.elf";
        for (const ElfSymbolDef& o : l.objects)
            if (r.dataVa >= o.address && r.dataVa < o.address + o.size) wantByObject[o.name]++;
        if (r.dataVa >= 0xfffff0000000ull)
            dso = "[stack]";
        else if (r.dataVa >= 0xffff00000000ull)
            dso = "anon";
        wantByDso[dso]++;
    }
    EXPECT_EQ(gotByObject, wantByObject);
    EXPECT_EQ(gotByDso["spe-code.elf"], wantByDso["spe-code.elf"]) << text.substr(0, 2000);
    EXPECT_EQ(gotByDso["[heap]"], wantByDso["[heap]"]);
    EXPECT_EQ(gotByDso["[stack]"], wantByDso["[stack]"]);
    EXPECT_EQ(gotByDso["anon"], wantByDso["anon"]);  // the other threads' stacks (//anon)
}

TEST(SpeSynth, RecordsRoundTripTheTruth) {
    Generated g;
    generate(g, "--generate 5000 --seed 21 --cpus 3 -q");
    const fs::path again = g.dir.path / "again.data";
    std::string out;
    ASSERT_EQ(run(spesynthTool() + " --records " + g.file.string() + ".truth -q -o " + again.string(), &out),
              0)
        << out;
    EXPECT_EQ(slurp(again.string() + ".truth"), slurp(g.file.string() + ".truth"));
    if (run("perf version") == 0) expectDumpMatchesTruth(again, g.truth);
}

TEST(SpeSynth, RecordsFromAHandWrittenCsv) {
    TempDir dir("spesynth-csv");
    const fs::path csv = dir.path / "mine.csv";
    {
        // Columns in another order, no derived ones, no time; hex allowed.
        std::ofstream f(csv);
        f << "# two threads of one process on two CPUs\n"
             "cpu,pid,tid,timestamp,context,contextIndex,hasContext,opClass,opPayload,pc,pcEl,pcNs,hasPc,"
             "branchTarget,hasBranchTarget,prevBranchTarget,hasPrevBranchTarget,dataVa,dataVaTag,hasDataVa,"
             "dataPa,"
             "dataPaNs,dataPaCh,dataPaPat,hasDataPa,totalLatency,issueLatency,translationLatency,"
             "hasTotalLatency,"
             "hasIssueLatency,hasTranslationLatency,events,hasEvents,dataSource,hasDataSource\n"
             "0,500,500,1000,500,0,1,1,0,0x401040,0,1,1,0,0,0,0,0x416100,0,1,0x80001100,1,0,0,1,230,3,2,1,1,"
             "1,0x316,1,"
             "14,1\n"
             "1,500,501,1002,501,0,1,2,1,0x401200,0,1,1,0x401180,1,0,0,0,0,0,0,0,0,0,0,5,1,0,1,1,0,0x82,1,0,"
             "0\n"
             "0,500,500,0,500,0,1,0,8,0x401044,0,1,1,0,0,0,0,0,0,0,0,0,0,0,0,9,2,0,1,1,0,2,1,0,0\n"
             "0,500,501,1010,501,1,1,1,1,0x401048,0,1,1,0,0,0x401000,1,0x416200,0,1,0x80001200,1,0,0,1,12,4,"
             "1,1,1,1,"
             "0x16,1,0,0\n";
    }
    const fs::path file = dir.path / "mine.data";
    std::string out;
    ASSERT_EQ(run(spesynthTool() + " --records " + csv.string() + " -q -o " + file.string(), &out), 0) << out;
    const std::vector<SpeRecord> t = readTruth(file.string() + ".truth");
    ASSERT_EQ(t.size(), 4u);
    // Time order: 1000 (cpu 0), the END record after it on cpu 0, 1002 (cpu 1), 1010.
    EXPECT_EQ(t[0].timestamp, 1000u);
    EXPECT_EQ(t[1].timestamp, 0u);
    EXPECT_EQ(t[1].cpu, 0);
    EXPECT_EQ(t[2].timestamp, 1002u);
    EXPECT_EQ(t[3].contextIndex, 1);
    EXPECT_TRUE(t[0].isLoad && !t[0].isStore);
    EXPECT_TRUE(t[2].isBranch && t[2].isConditional);
    EXPECT_TRUE(t[1].isSve && t[1].opClass == OpClass::Other);
    EXPECT_TRUE(t[3].isStore);
    EXPECT_EQ(t[0].time, SpeTimeConv{}.perfTime(1000));
    EXPECT_EQ(t[0].dataVa, 0x416100u);
    if (run("perf version") == 0) expectDumpMatchesTruth(file, t);
}

TEST(SpeSynth, BadCsvIsRefusedWithLineAndCause) {
    TempDir dir("spesynth-bad");
    Generated g;
    generate(g, "--generate 20 --seed 2 -q");
    const std::string good = slurp(g.file.string() + ".truth");
    const std::string header = good.substr(0, good.find('\n'));
    std::istringstream rows(good.substr(good.find('\n') + 1));
    // Two rows with timestamps.
    std::string row1, row2, row;
    while (std::getline(rows, row))
        if (row[0] != '0') (row1.empty() ? row1 : row2) = row;
    auto cells = [](const std::string& row) {
        std::vector<std::string> c;
        std::stringstream s(row);
        std::string x;
        while (std::getline(s, x, ','))
            c.push_back(x);
        return c;
    };
    auto join = [](const std::vector<std::string>& c) {
        std::string s;
        for (const auto& x : c)
            s += (s.empty() ? "" : ",") + x;
        return s;
    };
    auto with = [&](const std::string& row, size_t column, const std::string& value) {
        auto c = cells(row);
        c[column] = value;
        return join(c);
    };
    const auto& cols = truthColumns();
    auto col = [&](const std::string& n) {
        return size_t(std::find(cols.begin(), cols.end(), n) - cols.begin());
    };
    struct Case {
        std::string name, text, message;
    };
    std::string noTid = header;
    noTid.replace(noTid.find(",tid,"), 5, ",");
    const std::vector<Case> cases = {
        {"unknown column", header + ",colour\n" + row1 + ",red\n", ":1: unknown column \"colour\""},
        {"missing column", noTid + "\n", ":1: no column \"tid\""},
        {"not a number", header + "\n" + with(row1, col("pc"), "0xZZ") + "\n",
         ":2: column pc: \"0xZZ\" is not a number"},
        {"too big", header + "\n" + with(row1, col("totalLatency"), "70000") + "\n",
         ":2: column totalLatency: 70000 is out of range"},
        {"op class", header + "\n" + with(row1, col("opClass"), "7") + "\n",
         ":2: column opClass: 7 is not an op class"},
        {"negative cpu", header + "\n" + with(row1, col("cpu"), "-1") + "\n", ":2: column cpu"},
        {"fields", header + "\n" + row1 + ",1\n", ":2: 43 fields, the header names 42"},
        {"time", header + "\n" + with(row1, col("time"), "5") + "\n", ":2: time 5 does not match timestamp"},
        {"backwards",
         header + "\n" +
             with(with(row1, col("timestamp"), "99999999999"), col("time"),
                  std::to_string(SpeTimeConv{}.perfTime(99999999999ull))) +
             "\n" + with(row2, col("cpu"), cells(row1)[col("cpu")]) + "\n",
         "is before the one of line 2"},
        {"empty", "", ": empty: no header row"},
    };
    for (const Case& c : cases) {
        const fs::path csv = dir.path / "bad.csv";
        std::ofstream(csv) << c.text;
        std::string out;
        const int status = run(
            spesynthTool() + " --records " + csv.string() + " -o " + (dir.path / "bad.data").string(), &out);
        EXPECT_EQ(status, 1) << c.name << ": " << out;
        EXPECT_NE(out.find(csv.string()), std::string::npos)
            << c.name << ": the message names no file: " << out;
        EXPECT_NE(out.find(c.message), std::string::npos) << c.name << ": " << out;
    }
    std::string out;
    EXPECT_EQ(run(spesynthTool() + " --records " + (dir.path / "none.csv").string() + " -o x.data", &out), 1);
    EXPECT_NE(out.find("none.csv: cannot open"), std::string::npos) << out;
    EXPECT_EQ(run(spesynthTool() + " --generate 0 -o x.data", &out), 1);
    EXPECT_EQ(run(spesynthTool() + " --generate 10 --info-version 3 -o x.data", &out), 1);
    EXPECT_NE(out.find("--info-version needs 1 or 2"), std::string::npos) << out;
}

TEST(SpeSynth, HundredThousandRecordsWellUnderTwoSeconds) {
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "timing is measured on the release build only";
#else
    TempDir dir("spesynth-speed");
    const fs::path file = dir.path / "speed.data";
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(run(spesynthTool() + " --generate 100000 --seed 5 -q -o " + file.string(), &out), 0) << out;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(readTruth(file.string() + ".truth").size(), 100000u);
    EXPECT_LT(s, 1.0) << "100,000 records took " << s << " s";
    RecordProperty("seconds", std::to_string(s));
#endif
}

// The encoder against published bytes: the two records of perf_data_converter's
// (quipper's) arm_spe_decoder_test.cc, a Neoverse core running a VHE kernel
// (EL2), with the fields its test expects them to decode to. Their packets in
// this encoder's order (theirs interleave PADs and put ISSUE before TOT).
TEST(SpeSynthEncoder, PacketsOfPublishedRecords) {
    auto bytes = [](std::initializer_list<const char*> packets) {
        std::vector<uint8_t> out;
        for (const char* p : packets) {
            std::istringstream in(p);
            std::string b;
            while (in >> b)
                out.push_back(uint8_t(std::stoul(b, nullptr, 16)));
        }
        return out;
    };
    SpeRecord load;
    load.hasPc = true, load.pc = 0xffffba66eda1c2d0ull, load.pcEl = 2, load.pcNs = true;
    load.hasContext = true, load.context = 0x5f80, load.contextIndex = 1;
    load.opClass = OpClass::LoadStore, load.opPayload = 0x00;  // LD GP-REG
    load.hasEvents = true, load.events = spe::kEvRetired | spe::kEvL1dAccess | spe::kEvTlbAccess;
    load.hasIssueLatency = true, load.issueLatency = 4;
    load.hasTotalLatency = true, load.totalLatency = 12;
    load.hasDataVa = true, load.dataVa = 0xffff0e3703096b28ull;
    load.hasTranslationLatency = true, load.translationLatency = 1;
    load.hasDataSource = true, load.dataSource = 0;
    load.timestamp = 44731163950ull;
    SpeEncodeStyle oneByteSource;
    oneByteSource.dataSourceBytes = 1;
    std::vector<uint8_t> got;
    encodeRecord(load, oneByteSource, got);
    EXPECT_EQ(got, bytes({"b0 d0 c2 a1 ed 66 ba ff c0", "65 80 5f 00 00", "49 00", "52 16 00",
                          "b2 28 6b 09 03 37 0e ff 00", "9a 01 00", "43 00", "98 0c 00", "99 04 00",
                          "71 2e 65 2f 6a 0a 00 00 00"}));
    deriveOpFlags(load);
    EXPECT_TRUE(load.isLoad && !load.isStore && !load.isAtomic && !load.isSve);

    SpeRecord branch;
    branch.hasPc = true, branch.pc = 0xffffba66edefb0e0ull, branch.pcEl = 2, branch.pcNs = true;
    branch.hasContext = true, branch.context = 0xe, branch.contextIndex = 1;
    branch.opClass = OpClass::Branch, branch.opPayload = 0x01;  // B COND
    branch.hasEvents = true, branch.events = spe::kEvRetired | spe::kEvNotTaken;
    branch.hasIssueLatency = true, branch.issueLatency = 16;
    branch.hasTotalLatency = true, branch.totalLatency = 17;
    branch.hasBranchTarget = true, branch.branchTarget = 0xffffba66edefb0e4ull;
    branch.timestamp = 44731164045ull;
    got.clear();
    encodeRecord(branch, SpeEncodeStyle{}, got);
    EXPECT_EQ(got,
              bytes({"b0 e0 b0 ef ed 66 ba ff c0", "65 0e 00 00 00", "4a 01", "52 42 00",
                     "b1 e4 b0 ef ed 66 ba ff c0", "98 11 00", "99 10 00", "71 8d 65 2f 6a 0a 00 00 00"}));
    deriveOpFlags(branch);
    EXPECT_TRUE(branch.isBranch && branch.isConditional);

    // The extended header: index bits [4:3] in the first byte, [2:0] in the second.
    SpeRecord pbt;
    pbt.hasPrevBranchTarget = true, pbt.prevBranchTarget = 0x401000, pbt.pcNs = true;
    pbt.hasTranslationLatency = true, pbt.translationLatency = 0x123;
    SpeEncodeStyle extended;
    extended.extendedMask = extendedAddress(4) | extendedCounter(2);
    got.clear();
    encodeRecord(pbt, extended, got);
    EXPECT_EQ(got, bytes({"20 b4 00 10 40 00 00 00 00 80", "20 9a 23 01", "01"}));
}
