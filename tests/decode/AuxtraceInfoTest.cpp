// SPDX-License-Identifier: GPL-3.0-or-later
// AUXTRACE_INFO private blocks for Intel PT and CoreSight ETM/ETE: word layout and
// round trips; files written with PerfDataWriter that Debian's perf (6.1) reads
// back with `perf report -D`, whose dump of the block must show every value we
// wrote; and the shared real traces, whose blocks decoded here must say what
// perf's dump of them says. perf's text is read here, in tests only, as an oracle.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "Pmu.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"

#include "TestData.h"
#include "WriterTestSupport.h"

namespace auxscope {
namespace {

using namespace writertest;

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string tempFile(const std::string& name) {
    static const std::string dir = makeTempDir("auxinfo");
    return dir + "/" + name;
}

// The shared test data: each test that reads it starts with AUXSCOPE_NEED_TEST_DATA().
std::string sharedData(const std::string& rel) {
    return test_support::testDataPath(rel);
}

bool exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0;
}

// --------------------------------------------------------------- perf's dump

// What perf 6.1 prints under "PERF_RECORD_AUXTRACE_INFO type: N" (report -D),
// up to the blank line that ends the record: the oracle's text.
std::optional<std::string> perfInfoDump(const std::string& out, uint32_t type) {
    const std::string head = "PERF_RECORD_AUXTRACE_INFO type: " + std::to_string(type) + "\n";
    auto at = out.find(head);
    if (at == std::string::npos) return std::nullopt;
    at += head.size();
    auto end = out.find("\n\n", at);
    return out.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
}

struct PerfRun {
    bool ran = false;
    CommandResult r;
};

PerfRun perfDump(const std::string& path) {
    auto perf = perfBinary();
    if (!perf) return {};
    return {true, runCommand({*perf, "report", "-D", "-i", path}, 60)};
}

// perf 6.1's Intel PT info lines for a block holding what `info.layout` says
// (intel_pt_process_auxtrace_info with dump_trace): labels padded to 20 columns,
// bit masks as %#x ("0" for zero).
std::string expectedIntelPtDump(const IntelPtInfo& i) {
    auto line = [](const char* name, const std::string& v) { return fmt("  %-20s%s\n", name, v.c_str()); };
    auto d = [](uint64_t v) { return fmt("%" PRId64, int64_t(v)); };
    auto u = [](uint64_t v) { return fmt("%" PRIu64, v); };
    auto x = [](uint64_t v) { return fmt("%#" PRIx64, v); };
    std::string s = line("PMU Type", d(i.pmuType)) + line("Time Shift", u(i.timeShift)) +
                    line("Time Muliplier", u(i.timeMult)) + line("Time Zero", u(i.timeZero)) +
                    line("Cap Time Zero", d(i.capUserTimeZero)) + line("TSC bit", x(i.tscBit)) +
                    line("NoRETComp bit", x(i.noretcompBit)) +
                    line("Have sched_switch", d(i.haveSchedSwitch)) +
                    line("Snapshot mode", d(i.snapshotMode)) + line("Per-cpu maps", d(i.perCpuMmaps));
    if (i.layout >= IntelPtInfoLayout::Timing)
        s += line("MTC bit", x(i.mtcBit)) + line("MTC freq bits", x(i.mtcFreqBits)) +
             line("TSC:CTC numerator", u(i.tscCtcRatioN)) + line("TSC:CTC denominator", u(i.tscCtcRatioD)) +
             line("CYC bit", x(i.cycBit));
    if (i.layout >= IntelPtInfoLayout::MaxNonTurbo) s += line("Max non-turbo ratio", u(i.maxNonTurboRatio));
    if (i.layout >= IntelPtInfoLayout::Filter)
        s += line("Filter string len.", u(i.filter.size())) + line("Filter string", i.filter);
    if (i.layout >= IntelPtInfoLayout::EventTrace)
        s += fmt("  Cap Event Trace     %d\n", int(i.capEventTrace));
    return s;
}

// perf 6.1's CoreSight dump (cs_etm__print_auxtrace_info): the header, then per
// CPU the common words and each parameter under its name. ETMv4 and ETE share
// one name table in 6.1, so an ETMv4 block's 8th parameter prints as TRCDEVARCH.
std::string expectedCsEtmDump(const CsEtmInfo& info) {
    auto line = [](const char* label, uint64_t v, bool dec = false) {
        return std::string("\t") + label + (dec ? fmt("%" PRId64, int64_t(v)) : fmt("%" PRIx64, v)) + "\n";
    };
    static const char* const kV3[] = {"ETMCR\t\t\t       ", "ETMTRACEIDR\t\t       ", "ETMCCER\t\t\t       ",
                                      "ETMIDR\t\t\t       "};
    static const char* const kV4[] = {"TRCCONFIGR\t\t       ",    "TRCTRACEIDR\t\t       ",
                                      "TRCIDR0\t\t\t       ",     "TRCIDR1\t\t\t       ",
                                      "TRCIDR2\t\t\t       ",     "TRCIDR8\t\t\t       ",
                                      "TRCAUTHSTATUS\t\t       ", "TRCDEVARCH                     "};
    std::string s = line("Header version\t\t       ", info.headerVersion) +
                    line("PMU type/num cpus\t       ", (uint64_t(info.pmuType) << 32) | info.cpus.size()) +
                    line("Snapshot\t\t       ", info.snapshot);
    for (const auto& c : info.cpus) {
        // The parameters from the struct's fields, in the order the ETM documents them.
        std::vector<uint64_t> params;
        uint64_t magic;
        if (c.tracer == CsEtmTracer::EtmV3) {
            magic = 0x3030303030303030ull;
            params = {c.etmcr, c.etmtraceidr, c.etmccer, c.etmidr};
        } else {
            magic = c.tracer == CsEtmTracer::Ete ? 0x5050505050505050ull : 0x4040404040404040ull;
            params = {c.trcconfigr, c.trctraceidr, c.trcidr0,      c.trcidr1,
                      c.trcidr2,    c.trcidr8,     c.trcauthstatus};
            if (c.tracer == CsEtmTracer::Ete) params.push_back(c.trcdevarch);
            if (c.tsSource) params.push_back(*c.tsSource);
        }
        params.insert(params.end(), c.extraParams.begin(), c.extraParams.end());
        s += line("Magic number\t\t       ", magic);
        s += line("CPU\t\t\t       ", c.cpu, true);
        if (info.headerVersion > 0) s += line("NR_TRC_PARAMS\t\t       ", params.size());
        const bool v3 = c.tracer == CsEtmTracer::EtmV3;
        for (size_t j = 0; j < params.size(); ++j) {
            if (j < (v3 ? 4u : 8u))
                s += line(v3 ? kV3[j] : kV4[j], params[j]);
            else
                s += fmt("\tUnknown parameter [%zu]\t       %" PRIx64 "\n", j + 3, params[j]);
        }
    }
    return s;
}

// ------------------------------------------------------------- sample inputs

IntelPtInfo sampleIntelPt() {
    IntelPtInfo i;
    i.pmuType = 8;
    i.timeShift = 31;
    i.timeMult = 1789569706;
    i.timeZero = 18446744041015200657ull;
    i.capUserTimeZero = 1;
    i.tscBit = 0x400;
    i.noretcompBit = 0x800;
    i.haveSchedSwitch = 3;
    i.snapshotMode = 0;
    i.perCpuMmaps = 1;
    i.mtcBit = 0x200;
    i.mtcFreqBits = 0x3c000;
    i.tscCtcRatioN = 216;
    i.tscCtcRatioD = 2;
    i.cycBit = 0x2;
    i.maxNonTurboRatio = 24;
    i.filter = "filter 0x401000/0x200 @ /usr/bin/true";
    i.capEventTrace = 1;
    return i;
}

CsEtmCpuInfo etmV4Cpu(unsigned cpu) {
    CsEtmCpuInfo c;
    c.tracer = CsEtmTracer::EtmV4;
    c.cpu = cpu;
    c.trcconfigr = csEtmV4ConfigR((1ull << 28) | (1ull << 14));
    c.trctraceidr = csEtmLegacyTraceId(cpu);
    c.trcidr0 = 0x28000ea1;
    c.trcidr1 = 0x4100f423;
    c.trcidr2 = 0x20001088;
    c.trcidr8 = 0x3;
    c.trcauthstatus = 0x8c;
    return c;
}

CsEtmCpuInfo eteCpu(unsigned cpu) {
    CsEtmCpuInfo c = etmV4Cpu(cpu);
    c.tracer = CsEtmTracer::Ete;
    c.trcidr1 = 0x4100fff0 | cpu;
    c.trcauthstatus = 0xcc;
    c.trcdevarch = 0x47725a13;  // ARCHVER 5, ARCHPART 0xa13
    return c;
}

CsEtmCpuInfo etmV3Cpu(unsigned cpu) {
    CsEtmCpuInfo c;
    c.tracer = CsEtmTracer::EtmV3;
    c.cpu = cpu;
    c.etmcr = (1ull << 28) | (1ull << 12);
    c.etmtraceidr = csEtmLegacyTraceId(cpu);
    c.etmccer = 0x344008f2;
    c.etmidr = 0x410cf250;
    return c;
}

CsEtmInfo sampleCsEtm() {
    CsEtmInfo info;
    info.pmuType = 0x2e;
    info.snapshot = 0;
    info.cpus = {etmV4Cpu(0), etmV4Cpu(1), eteCpu(2), etmV3Cpu(3)};
    return info;
}

// ------------------------------------------------------------ Intel PT words

TEST(IntelPtInfoWords, EncodesPerfsWordLayout) {
    const auto info = sampleIntelPt();
    const auto w = encodeIntelPtInfo(info);
    const size_t strLen = info.filter.size();  // 37: 38 bytes with the NUL -> 40 -> 5 words
    ASSERT_EQ(strLen, 37u);
    ASSERT_EQ(w.size(), 17u + 5u + 1u);
    const std::vector<uint64_t> fixed = {
        8,   31, 1789569706, 18446744041015200657ull, 1, 0x400, 0x800, 3, 0, 1, 0x200, 0x3c000, 216, 2,
        0x2, 24, strLen};
    for (size_t k = 0; k < fixed.size(); ++k)
        EXPECT_EQ(w[k], fixed[k]) << "word " << k;
    const char* s = reinterpret_cast<const char*>(w.data() + 17);
    EXPECT_EQ(std::string(s, strLen), info.filter);
    for (size_t b = strLen; b < 40; ++b)
        EXPECT_EQ(s[b], 0) << "NUL padding at byte " << b;
    EXPECT_EQ(w.back(), 1u) << "the Event Trace capability follows the string";
}

TEST(IntelPtInfoWords, FilterPaddingAlwaysLeavesANul) {
    for (size_t len : {0u, 1u, 6u, 7u, 8u, 9u, 15u, 16u}) {
        IntelPtInfo i = sampleIntelPt();
        i.filter = std::string(len, 'f');
        const auto w = encodeIntelPtInfo(i);
        const size_t strWords = len ? (len + 1 + 7) / 8 : 0;
        EXPECT_EQ(w.size(), 17u + strWords + 1u) << "len " << len;
        EXPECT_EQ(w[16], len);
        auto back = decodeIntelPtInfo(w);
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_EQ(*back, i) << "len " << len;
    }
}

TEST(IntelPtInfoWords, EveryLayoutRoundTrips) {
    const std::map<IntelPtInfoLayout, size_t> words = {{IntelPtInfoLayout::Base, 10},
                                                       {IntelPtInfoLayout::Timing, 15},
                                                       {IntelPtInfoLayout::MaxNonTurbo, 16},
                                                       {IntelPtInfoLayout::Filter, 17 + 5},
                                                       {IntelPtInfoLayout::EventTrace, 17 + 5 + 1}};
    for (auto [layout, n] : words) {
        IntelPtInfo i = sampleIntelPt();
        i.layout = layout;
        const auto w = encodeIntelPtInfo(i);
        EXPECT_EQ(w.size(), n) << int(layout);
        auto back = decodeIntelPtInfo(w);
        ASSERT_TRUE(back) << back.error().message;
        EXPECT_EQ(back->layout, layout);
        EXPECT_EQ(encodeIntelPtInfo(*back), w) << "re-encodes to the same words";
        // Fields beyond the layout decode as 0.
        if (layout < IntelPtInfoLayout::Timing) {
            EXPECT_EQ(back->mtcFreqBits, 0u);
        }
        if (layout < IntelPtInfoLayout::Filter) {
            EXPECT_EQ(back->filter, "");
        }
        if (layout < IntelPtInfoLayout::EventTrace) {
            EXPECT_EQ(back->capEventTrace, 0u);
        }
    }
}

TEST(IntelPtInfoWords, DecodeLikePerfOnOddBlocks) {
    auto w = encodeIntelPtInfo(sampleIntelPt());
    // Too short for perf.
    auto shortBlock = decodeIntelPtInfo(std::span(w).first(9));
    ASSERT_FALSE(shortBlock);
    EXPECT_NE(shortBlock.error().message.find("at least 10"), std::string::npos)
        << shortBlock.error().message;
    // 12 words: the timing group is incomplete, perf reads only the base.
    auto partial = decodeIntelPtInfo(std::span(w).first(12));
    ASSERT_TRUE(partial);
    EXPECT_EQ(partial->layout, IntelPtInfoLayout::Base);
    EXPECT_EQ(partial->unknownTrailingWords, 2u);
    // A filter length running past the block.
    auto bad = w;
    bad[16] = 400;
    auto overrun = decodeIntelPtInfo(bad);
    ASSERT_FALSE(overrun);
    EXPECT_NE(overrun.error().message.find("word 16"), std::string::npos) << overrun.error().message;
    // Not NUL-terminated: the string's last word filled.
    bad = w;
    bad[21] = 0x4141414141414141ull;
    auto noNul = decodeIntelPtInfo(bad);
    ASSERT_FALSE(noNul);
    EXPECT_NE(noNul.error().message.find("not NUL-terminated"), std::string::npos) << noNul.error().message;
    // Words a newer writer adds after the Event Trace word are counted, not fatal.
    auto longer = w;
    longer.push_back(7);
    longer.push_back(9);
    auto newer = decodeIntelPtInfo(longer);
    ASSERT_TRUE(newer);
    EXPECT_EQ(newer->unknownTrailingWords, 2u);
    EXPECT_EQ(newer->capEventTrace, 1u);
}

TEST(IntelPtInfoWords, InputsFromThePmuAndTheUserPage) {
    PmuInfo pmu;
    pmu.name = "intel_pt";
    pmu.type = 9;
    for (auto [term, spec] : std::map<std::string, std::string>{{"tsc", "config:10"},
                                                                {"noretcomp", "config:11"},
                                                                {"mtc", "config:9"},
                                                                {"mtc_period", "config:14-17"},
                                                                {"cyc", "config:1"},
                                                                {"psb_period", "config:24-27"}}) {
        auto f = FormatField::parse(spec);
        ASSERT_TRUE(f) << spec;
        pmu.format[term] = *f;
    }
    pmu.caps["event_trace"] = "1";
    IntelPtInfo i;
    setIntelPtPmuFields(i, pmu);
    EXPECT_EQ(i.pmuType, 9u);
    EXPECT_EQ(i.tscBit, 0x400u);
    EXPECT_EQ(i.noretcompBit, 0x800u);
    EXPECT_EQ(i.mtcBit, 0x200u);
    EXPECT_EQ(i.mtcFreqBits, 0x3c000u) << "every bit of mtc_period";
    EXPECT_EQ(i.cycBit, 0x2u);
    EXPECT_EQ(i.capEventTrace, 1u);
    pmu.format.erase("cyc");
    setIntelPtPmuFields(i, pmu);
    EXPECT_EQ(i.cycBit, 0u) << "a term the PMU lacks";

    perf_event_mmap_page page{};
    page.cap_user_time_zero = 1;
    page.time_shift = 31;
    page.time_mult = 1234567;
    page.time_zero = 0x1122334455ull;
    setIntelPtTimeFields(i, page);
    EXPECT_EQ(i.timeShift, 31u);
    EXPECT_EQ(i.timeMult, 1234567u);
    EXPECT_EQ(i.timeZero, 0x1122334455ull);
    EXPECT_EQ(i.capUserTimeZero, 1u);
    page.cap_user_time_zero = 0;
    setIntelPtTimeFields(i, page);
    EXPECT_EQ(i.timeMult, 0u);
    EXPECT_EQ(i.capUserTimeZero, 0u) << "no conversion without cap_user_time_zero, as perf record";
}

// ----------------------------------------------------------- CoreSight words

TEST(CsEtmInfoWords, EncodesPerfsWordLayout) {
    const auto info = sampleCsEtm();
    auto w = encodeCsEtmInfo(info);
    ASSERT_TRUE(w) << w.error().message;
    // header 3 + ETMv4 2 * (3 + 7) + ETE (3 + 8) + ETMv3 (3 + 4)
    ASSERT_EQ(w->size(), 3u + 20u + 11u + 7u);
    EXPECT_EQ((*w)[0], 1u) << "header version perf 6.1 writes";
    EXPECT_EQ((*w)[1], (0x2eull << 32) | 4u) << "PMU type in the high half, CPU count in the low";
    EXPECT_EQ((*w)[2], 0u);
    const std::vector<uint64_t> cpu0 = {kCsEtmV4Magic, 0,          7,          0x840, 0x10,
                                        0x28000ea1,    0x4100f423, 0x20001088, 0x3,   0x8c};
    for (size_t k = 0; k < cpu0.size(); ++k)
        EXPECT_EQ((*w)[3 + k], cpu0[k]) << "cpu 0 word " << k;
    EXPECT_EQ((*w)[13 + 1], 1u);
    EXPECT_EQ((*w)[13 + 4], 0x12u) << "cpu 1's trace ID";
    const size_t ete = 23;
    EXPECT_EQ((*w)[ete], kCsEteMagic);
    EXPECT_EQ((*w)[ete + 2], 8u);
    EXPECT_EQ((*w)[ete + 10], 0x47725a13u) << "TRCDEVARCH last";
    const size_t v3 = 34;
    const std::vector<uint64_t> cpu3 = {kCsEtmV3Magic, 3, 4, 0x10001000, 0x16, 0x344008f2, 0x410cf250};
    for (size_t k = 0; k < cpu3.size(); ++k)
        EXPECT_EQ((*w)[v3 + k], cpu3[k]) << "cpu 3 word " << k;
}

TEST(CsEtmInfoWords, RoundTripsEveryVersion) {
    auto info = sampleCsEtm();
    auto w = encodeCsEtmInfo(info);
    ASSERT_TRUE(w);
    auto back = decodeCsEtmInfo(*w);
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, info);

    // Version 0: no parameter count, fixed ETMv3/ETMv4 sets.
    CsEtmInfo v0;
    v0.headerVersion = 0;
    v0.pmuType = 7;
    v0.cpus = {etmV3Cpu(0), etmV4Cpu(1)};
    auto w0 = encodeCsEtmInfo(v0);
    ASSERT_TRUE(w0) << w0.error().message;
    EXPECT_EQ(w0->size(), 3u + 6u + 9u);
    EXPECT_EQ((*w0)[3 + 2], v0.cpus[0].etmcr) << "ETMCR right after the cpu word";
    auto b0 = decodeCsEtmInfo(*w0);
    ASSERT_TRUE(b0) << b0.error().message;
    EXPECT_EQ(*b0, v0);

    // Newer blocks: TS_SOURCE and parameters nobody knows yet, version 2.
    auto v2 = sampleCsEtm();
    v2.headerVersion = 2;
    v2.snapshot = 1;
    v2.cpus[0].tsSource = 1;
    v2.cpus[2].tsSource = 0;
    v2.cpus[2].extraParams = {0xaa, 0xbb};
    v2.cpus[3].extraParams = {0xcc};
    v2.cpus[1].trctraceidr = v2.cpus[0].trctraceidr;  // version 2 takes IDs from AUX_OUTPUT_HW_ID
    auto w2 = encodeCsEtmInfo(v2);
    ASSERT_TRUE(w2) << w2.error().message;
    EXPECT_EQ((*w2)[3 + 2], 8u) << "ETMv4 + TS_SOURCE";
    auto b2 = decodeCsEtmInfo(*w2);
    ASSERT_TRUE(b2) << b2.error().message;
    EXPECT_EQ(*b2, v2);
}

TEST(CsEtmInfoWords, RefusesWhatPerfRefuses) {
    auto dup = sampleCsEtm();
    dup.cpus[1].trctraceidr = dup.cpus[0].trctraceidr;
    auto e = encodeCsEtmInfo(dup);
    ASSERT_FALSE(e);
    EXPECT_NE(e.error().message.find("trace ID 0x10 already used by cpu 0"), std::string::npos)
        << e.error().message;
    CsEtmInfo v0;
    v0.headerVersion = 0;
    v0.cpus = {eteCpu(0)};
    EXPECT_FALSE(encodeCsEtmInfo(v0)) << "ETE came with version 1";
    CsEtmInfo v3;
    v3.headerVersion = 3;
    EXPECT_FALSE(encodeCsEtmInfo(v3));
    auto extra = sampleCsEtm();
    extra.cpus[0].extraParams = {1};
    EXPECT_FALSE(encodeCsEtmInfo(extra)) << "extras without the TS_SOURCE slot would decode as TS_SOURCE";

    auto w = *encodeCsEtmInfo(sampleCsEtm());
    auto bad = w;
    bad[0] = 3;
    EXPECT_FALSE(decodeCsEtmInfo(bad));
    bad = w;
    bad[13] = 0x6060606060606060ull;
    auto magic = decodeCsEtmInfo(bad);
    ASSERT_FALSE(magic);
    EXPECT_NE(magic.error().message.find("word 13: cpu block 1 of 4: unknown magic 0x6060606060606060"),
              std::string::npos)
        << magic.error().message;
    auto cut = decodeCsEtmInfo(std::span(w).first(w.size() - 1));
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().message.find("4 parameters, 3 words left"), std::string::npos)
        << cut.error().message;
    auto longer = w;
    longer.push_back(0);
    auto left = decodeCsEtmInfo(longer);
    ASSERT_FALSE(left);
    EXPECT_NE(left.error().message.find("1 words left after the last of 4 cpu blocks"), std::string::npos)
        << left.error().message;
    // Fewer parameters than known (version 1): the rest read 0, as perf fills them.
    std::vector<uint64_t> few = {1, (5ull << 32) | 1, 0, kCsEtmV4Magic, 4, 2, 0x40, 0x18};
    auto f = decodeCsEtmInfo(few);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->cpus[0].cpu, 4u);
    EXPECT_EQ(f->cpus[0].trctraceidr, 0x18u);
    EXPECT_EQ(f->cpus[0].trcidr0, 0u);
}

TEST(CsEtmInfoWords, Helpers) {
    EXPECT_TRUE(csEtmIsEte(0x47725a13));
    EXPECT_FALSE(csEtmIsEte(0x47724a13)) << "ARCHVER 4 (ETMv4.2), though a simpleperf file writes ETE for it";
    EXPECT_FALSE(csEtmIsEte(0x47704a13)) << "ARCHVER 4: ETMv4";
    EXPECT_FALSE(csEtmIsEte(0));
    // cycacc, contextid, contextid2, timestamp, retstack, branch broadcast.
    EXPECT_EQ(csEtmV4ConfigR(1ull << 12), 0x10u);
    EXPECT_EQ(csEtmV4ConfigR(1ull << 14), 0x40u);
    EXPECT_EQ(csEtmV4ConfigR(1ull << 15), 0x8080u);
    EXPECT_EQ(csEtmV4ConfigR(1ull << 28), 0x800u);
    EXPECT_EQ(csEtmV4ConfigR(1ull << 29), 0x1000u);
    EXPECT_EQ(csEtmV4ConfigR(1ull << 8), 0x8u);
    EXPECT_EQ(csEtmV4ConfigR(0xffull), 0u) << "other config bits do not reach TRCCONFIGR";
    EXPECT_EQ(csEtmLegacyTraceId(0), 0x10u);
    EXPECT_EQ(csEtmLegacyTraceId(7), 0x1eu);
    EXPECT_STREQ(csEtmTracerName(CsEtmTracer::Ete), "ETE");
}

// ------------------------------------------------------- perf as the oracle

constexpr uint64_t kTrackType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

perf_event_attr auxAttr(uint32_t type, uint64_t config) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.sample_period = 1;
    a.sample_type = kTrackType | PERF_SAMPLE_IP;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    a.disabled = 1;
    a.exclude_kernel = 1;
    return a;
}

perf_event_attr trackingAttr() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kTrackType;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    a.mmap = a.comm = a.task = a.mmap2 = a.context_switch = 1;
    return a;
}

// An intel_pt capture's file: the intel_pt event, the tracking event, the info,
// one AUXTRACE buffer holding PSB + PSBEND + PAD to 24 bytes, a round.
std::string writeIntelPtFile(const std::string& name, const IntelPtInfo& info) {
    const std::string path = tempFile(name);
    const uint64_t config = info.tscBit | info.mtcBit | info.cycBit | info.noretcompBit;
    std::vector<PerfDataEventAttr> attrs = {
        {"intel_pt//u", auxAttr(uint32_t(info.pmuType), config), {100, 101}},
        {"dummy:u", trackingAttr(), {200, 201}}};
    auto w = PerfDataWriter::create(path, attrs);
    EXPECT_TRUE(w) << w.error().message;
    if (!w) return path;
    EXPECT_TRUE((*w)->writeAuxtraceInfo(auxtrace::kTypeIntelPt, encodeIntelPtInfo(info)));
    std::vector<uint8_t> pt;
    for (int k = 0; k < 8; ++k)
        pt.insert(pt.end(), {0x02, 0x82});  // PSB
    pt.insert(pt.end(), {0x02, 0x23});      // PSBEND
    pt.resize(24, 0x00);                    // PAD: a whole number of u64s, as the writer pads anyway
    perfdata::AuxtraceRecord head{};
    head.offset = 0;
    head.reference = 0x1234;
    head.idx = 0;
    head.tid = uint32_t(-1);
    head.cpu = 0;
    EXPECT_TRUE((*w)->writeAuxtrace(head, pt));
    EXPECT_TRUE((*w)->writeFinishedRound());
    EXPECT_TRUE((*w)->finish());
    return path;
}

TEST(IntelPtInfoPerf, PerfReportDumpShowsEveryFieldWeWrote) {
    const auto info = sampleIntelPt();
    const auto path = writeIntelPtFile("intel_pt.data", info);
    auto run = perfDump(path);
    if (!run.ran) GTEST_SKIP() << "perf is not installed";
    ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
    EXPECT_EQ(run.r.err.find("failed"), std::string::npos) << run.r.err;
    auto dump = perfInfoDump(run.r.out, auxtrace::kTypeIntelPt);
    ASSERT_TRUE(dump) << run.r.out.substr(0, 3000);
    EXPECT_EQ(*dump, expectedIntelPtDump(info));
    // A few lines spelled out, as perf prints them.
    for (const char* l :
         {"  PMU Type            8\n", "  Time Shift          31\n", "  TSC bit             0x400\n",
          "  MTC freq bits       0x3c000\n", "  TSC:CTC numerator   216\n", "  Max non-turbo ratio 24\n",
          "  Filter string len.  37\n", "  Filter string       filter 0x401000/0x200 @ /usr/bin/true\n",
          "  Cap Event Trace     1\n"})
        EXPECT_NE(dump->find(l), std::string::npos) << l;
    // perf took the AUX buffer as Intel PT and decoded our PSB+ packets.
    EXPECT_NE(run.r.out.find(". ... Intel Processor Trace data: size 24 bytes\n"
                             ".  00000000:  02 82 02 82 02 82 02 82 02 82 02 82 02 82 02 82 PSB\n"
                             ".  00000010:  02 23"),
              std::string::npos)
        << run.r.out;
    EXPECT_NE(run.r.out.find(" PSBEND\n"), std::string::npos);
}

TEST(IntelPtInfoPerf, OlderLayoutsPrintOnlyWhatTheyHold) {
    if (!perfBinary()) GTEST_SKIP() << "perf is not installed";
    for (auto layout : {IntelPtInfoLayout::Base, IntelPtInfoLayout::Timing, IntelPtInfoLayout::MaxNonTurbo,
                        IntelPtInfoLayout::Filter}) {
        IntelPtInfo info = sampleIntelPt();
        info.layout = layout;
        info.filter.clear();
        const auto path = writeIntelPtFile("intel_pt-" + std::to_string(int(layout)) + ".data", info);
        auto run = perfDump(path);
        ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
        EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
        auto dump = perfInfoDump(run.r.out, auxtrace::kTypeIntelPt);
        ASSERT_TRUE(dump);
        EXPECT_EQ(*dump, expectedIntelPtDump(info)) << "layout " << int(layout);
    }
}

TEST(IntelPtInfoPerf, PerfScriptAcceptsTheCapture) {
    // Beyond the dump: perf script sets the decoder up from the block (sched_switch
    // mode against the attrs, the filter parsed, the AUX queued through the index).
    const auto path = writeIntelPtFile("intel_pt-script.data", sampleIntelPt());
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed";
    auto r = runCommand({*perf, "script", "-i", path}, 60);
    EXPECT_TRUE(r.exitedZero()) << r.err;
    EXPECT_EQ(r.err.find("failed to process"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;

    // perf script does read the fields: sched_switch mode 1 needs a
    // sched:sched_switch event the file does not have.
    auto wrongMode = sampleIntelPt();
    wrongMode.haveSchedSwitch = 1;
    auto bad = runCommand({*perf, "script", "-i", writeIntelPtFile("intel_pt-mode1.data", wrongMode)}, 60);
    EXPECT_NE(bad.err.find("missing sched_switch event"), std::string::npos) << bad.err;
}

// A CoreSight capture's file: the cs_etm event (timestamps, context IDs), the
// tracking event and the info; no trace data, so perf only reads the block.
std::string writeCsEtmFile(const std::string& name, const CsEtmInfo& info) {
    const std::string path = tempFile(name);
    auto priv = encodeCsEtmInfo(info);
    EXPECT_TRUE(priv) << priv.error().message;
    if (!priv) return path;
    std::vector<uint64_t> ids;
    for (size_t k = 0; k < info.cpus.size(); ++k)
        ids.push_back(300 + k);
    std::vector<uint64_t> trackIds;
    for (size_t k = 0; k < info.cpus.size(); ++k)
        trackIds.push_back(400 + k);
    std::vector<PerfDataEventAttr> attrs = {
        {"cs_etm//u", auxAttr(info.pmuType, (1ull << 28) | (1ull << 14)), ids},
        {"dummy:u", trackingAttr(), trackIds}};
    auto w = PerfDataWriter::create(path, attrs);
    EXPECT_TRUE(w) << w.error().message;
    if (!w) return path;
    EXPECT_TRUE((*w)->writeAuxtraceInfo(auxtrace::kTypeCsEtm, *priv));
    EXPECT_TRUE((*w)->writeFinishedRound());
    EXPECT_TRUE((*w)->finish());
    return path;
}

TEST(CsEtmInfoPerf, PerfReportDumpShowsEveryRegisterWeWrote) {
    const auto info = sampleCsEtm();
    const auto path = writeCsEtmFile("cs_etm.data", info);
    auto run = perfDump(path);
    if (!run.ran) GTEST_SKIP() << "perf is not installed";
    ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
    auto dump = perfInfoDump(run.r.out, auxtrace::kTypeCsEtm);
    ASSERT_TRUE(dump) << run.r.out.substr(0, 3000) << run.r.err;
    EXPECT_EQ(*dump, expectedCsEtmDump(info));
    for (const char* l :
         {"\tHeader version\t\t       1\n", "\tPMU type/num cpus\t       2e00000004\n",
          "\tMagic number\t\t       4040404040404040\n", "\tNR_TRC_PARAMS\t\t       7\n",
          "\tTRCCONFIGR\t\t       840\n", "\tTRCTRACEIDR\t\t       12\n", "\tTRCIDR0\t\t\t       28000ea1\n",
          "\tMagic number\t\t       5050505050505050\n", "\tTRCDEVARCH                     47725a13\n",
          "\tCPU\t\t\t       3\n", "\tETMCCER\t\t\t       344008f2\n", "\tETMIDR\t\t\t       410cf250\n"})
        EXPECT_NE(dump->find(l), std::string::npos) << l;
    EXPECT_EQ(run.r.out.find("Unknown"), std::string::npos);
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
}

TEST(CsEtmInfoPerf, VersionZeroAndNewerParametersAreReadByPerf) {
    if (!perfBinary()) GTEST_SKIP() << "perf is not installed";
    CsEtmInfo v0;
    v0.headerVersion = 0;
    v0.pmuType = 9;
    v0.cpus = {etmV3Cpu(0), etmV4Cpu(1)};
    auto run = perfDump(writeCsEtmFile("cs_etm-v0.data", v0));
    ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
    auto dump = perfInfoDump(run.r.out, auxtrace::kTypeCsEtm);
    ASSERT_TRUE(dump);
    EXPECT_EQ(*dump, expectedCsEtmDump(v0));
    EXPECT_EQ(dump->find("NR_TRC_PARAMS"), std::string::npos) << "version 0 has no parameter count";

    // TS_SOURCE (perf after 6.1) and an unknown parameter: 6.1 skips what it does
    // not know, and names the ETMv4 block's 8th parameter TRCDEVARCH.
    auto newer = sampleCsEtm();
    newer.cpus[0].tsSource = 1;
    newer.cpus[2].tsSource = 1;
    newer.cpus[2].extraParams = {0xabc};
    run = perfDump(writeCsEtmFile("cs_etm-newer.data", newer));
    ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
    dump = perfInfoDump(run.r.out, auxtrace::kTypeCsEtm);
    ASSERT_TRUE(dump);
    EXPECT_EQ(*dump, expectedCsEtmDump(newer));
    EXPECT_NE(dump->find("\tUnknown parameter [12]\t       abc\n"), std::string::npos) << *dump;
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
}

TEST(CsEtmInfoPerf, PerfRefusesWhatTheEncoderRefuses) {
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed";
    // Two CPUs with one trace ID, and a word too many: built by hand, since
    // encodeCsEtmInfo() will not write them.
    const auto info = sampleCsEtm();
    const auto good = *encodeCsEtmInfo(info);
    auto dupId = good;
    dupId[13 + 4] = dupId[3 + 4];
    auto extraWord = good;
    extraWord.push_back(0);
    for (auto& [name, words] :
         std::map<std::string, std::vector<uint64_t>>{{"dup-id", dupId}, {"extra", extraWord}}) {
        SCOPED_TRACE(name);
        const std::string path = tempFile("cs_etm-" + name + ".data");
        std::vector<PerfDataEventAttr> attrs = {
            {"cs_etm//u", auxAttr(info.pmuType, 1ull << 28), {300, 301, 302, 303}},
            {"dummy:u", trackingAttr(), {400, 401, 402, 403}}};
        auto w = PerfDataWriter::create(path, attrs);
        ASSERT_TRUE(w);
        ASSERT_TRUE((*w)->writeAuxtraceInfo(auxtrace::kTypeCsEtm, words));
        ASSERT_TRUE((*w)->finish());
        auto r = runCommand({*perf, "report", "-D", "-i", path}, 60);
        // perf report -D still exits 0; the refusal is on stderr.
        EXPECT_NE(r.err.find("failed to process type: 70"), std::string::npos) << r.err;
    }
}

// --------------------------------------------------- the shared real traces

TEST(AuxtraceInfoShared, IntelPtSkylakeMatchesPerfsDump) {
    AUXSCOPE_NEED_TEST_DATA();
    const auto path = sharedData("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
    ASSERT_TRUE(exists(path)) << path << " is missing";
    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    ASSERT_EQ(reader->summary().auxtraceInfo.size(), 1u);
    const auto& rec = reader->summary().auxtraceInfo[0];
    ASSERT_EQ(rec.type, auxtrace::kTypeIntelPt);
    ASSERT_EQ(rec.priv.size(), 17u) << "perf 4.14: up to the filter length, no Event Trace word";
    auto info = decodeIntelPtInfo(rec.priv);
    ASSERT_TRUE(info) << info.error().message;
    EXPECT_EQ(info->layout, IntelPtInfoLayout::Filter);
    EXPECT_EQ(info->pmuType, 6u);
    EXPECT_EQ(info->timeShift, 31u);
    EXPECT_EQ(info->capUserTimeZero, 1u);
    EXPECT_EQ(info->mtcFreqBits, 0x3c000u);
    EXPECT_EQ(info->tscCtcRatioN, 100u);
    EXPECT_EQ(info->tscCtcRatioD, 2u);
    EXPECT_EQ(info->maxNonTurboRatio, 12u);
    EXPECT_EQ(info->filter, "");
    EXPECT_EQ(encodeIntelPtInfo(*info), rec.priv) << "re-encodes to the file's words";

    auto run = perfDump(path);
    if (!run.ran) GTEST_SKIP() << "perf is not installed";
    ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
    EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
    auto dump = perfInfoDump(run.r.out, auxtrace::kTypeIntelPt);
    ASSERT_TRUE(dump);
    EXPECT_EQ(*dump, expectedIntelPtDump(*info));
}

struct SharedCsCase {
    const char* file;
    CsEtmTracer tracer;
    uint32_t pmuType;
};

TEST(AuxtraceInfoShared, SimpleperfCoreSightMatchesPerfsDump) {
    AUXSCOPE_NEED_TEST_DATA();
    const bool havePerf = perfBinary().has_value();
    for (auto c : {SharedCsCase{"perf_etm.data", CsEtmTracer::EtmV4, 8},
                   SharedCsCase{"perf_kernel.data", CsEtmTracer::EtmV4, 8},
                   SharedCsCase{"perf_with_missing_aux_data.data", CsEtmTracer::Ete, 0x5f}}) {
        SCOPED_TRACE(c.file);
        const auto path = sharedData(std::string("coresight/simpleperf-etm/") + c.file);
        ASSERT_TRUE(exists(path)) << path << " is missing";
        auto reader = PerfDataReader::open(path);
        ASSERT_TRUE(reader) << reader.error().message;
        ASSERT_EQ(reader->summary().auxtraceInfo.size(), 1u);
        const auto& rec = reader->summary().auxtraceInfo[0];
        ASSERT_EQ(rec.type, auxtrace::kTypeCsEtm);
        auto info = decodeCsEtmInfo(rec.priv);
        ASSERT_TRUE(info) << info.error().message;
        EXPECT_EQ(info->headerVersion, 1u);
        EXPECT_EQ(info->pmuType, c.pmuType);
        ASSERT_EQ(info->cpus.size(), 8u);
        for (size_t k = 0; k < 8; ++k) {
            const auto& cpu = info->cpus[k];
            EXPECT_EQ(cpu.tracer, c.tracer) << "cpu " << k;
            EXPECT_EQ(cpu.cpu, k);
            EXPECT_EQ(cpu.trctraceidr, csEtmLegacyTraceId(unsigned(k)))
                << "simpleperf uses perf's legacy IDs";
            EXPECT_EQ(cpu.trcconfigr, 0x40u);
            // The magic decides the block's layout, not TRCDEVARCH: the ETE file's
            // TRCDEVARCH 0x47724a13 has ARCHVER 4, which perf record would call ETMv4.
            EXPECT_FALSE(csEtmIsEte(cpu.trcdevarch));
            EXPECT_FALSE(cpu.tsSource);
            EXPECT_TRUE(cpu.extraParams.empty());
        }
        auto again = encodeCsEtmInfo(*info);
        ASSERT_TRUE(again) << again.error().message;
        EXPECT_EQ(*again, rec.priv) << "re-encodes to the file's words";
        if (std::string(c.file) == "perf_etm.data") {
            // The CPU the trace ran on: cpu 7 (a big core, TRCIDR1 differs from cpu 0).
            const auto& cpu7 = info->cpus[7];
            EXPECT_EQ(cpu7.trctraceidr, 0x1eu);
            EXPECT_EQ(cpu7.trcidr0, 0x28000ea1u);
            EXPECT_EQ(cpu7.trcidr1, 0x4100f423u);
            EXPECT_EQ(cpu7.trcidr2, 0x20001088u);
            EXPECT_EQ(cpu7.trcidr8, 0u);
            EXPECT_EQ(cpu7.trcauthstatus, 0x8cu);
            EXPECT_EQ(info->cpus[0].trcidr1, 0x4100f422u);
        }
        if (c.tracer == CsEtmTracer::Ete) {
            EXPECT_EQ(info->cpus[0].trcdevarch, 0x47724a13u);
            EXPECT_EQ(info->cpus[0].trcauthstatus, 0xccu);
        }
        if (!havePerf) continue;
        auto run = perfDump(path);
        ASSERT_TRUE(run.r.exitedZero()) << run.r.err;
        EXPECT_EQ(run.r.err.find("failed to process"), std::string::npos) << run.r.err;
        auto dump = perfInfoDump(run.r.out, auxtrace::kTypeCsEtm);
        ASSERT_TRUE(dump);
        EXPECT_EQ(*dump, expectedCsEtmDump(*info));
    }
    if (!havePerf) GTEST_SKIP() << "perf is not installed: decoded without the oracle";
}

}  // namespace
}  // namespace auxscope
