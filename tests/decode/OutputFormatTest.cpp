// SPDX-License-Identifier: GPL-3.0-or-later
// Output at decode speed (issue 34): LineBuffer's conversions against snprintf
// on edge and random values; its block writes and writeChunksInOrder's order on
// several threads; and the real `auxscope decode --format spans|insn|ranges` and
// `auxscope export --format csv` against the formatting they had before
// (fc1ac04): spans and insn against a reference formatter kept here (snprintf
// and iostreams, line for line as DecodeCommand.cpp printed them) over the same
// trace decoded in this process, on a ptsynth trace and the shared traces;
// ranges and CSV against the FNV-1a checksums of fc1ac04's output on the shared
// traces (they are fixed files), and the ptsynth CSV's span rows against the
// reference too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "TestData.h"
#include "auxtrace/AuxTraceDecode.h"
#include "export/LineBuffer.h"
#include "export/SpanListing.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"

namespace auxscope {
namespace {

template <typename... Args>
std::string printf_(const char* format, Args... args) {
    char b[256];
    std::snprintf(b, sizeof b, format, args...);
    return b;
}

std::vector<uint64_t> interestingValues() {
    std::vector<uint64_t> v = {0,
                               1,
                               9,
                               10,
                               11,
                               99,
                               100,
                               101,
                               UINT32_MAX,
                               uint64_t(UINT32_MAX) + 1,
                               UINT64_MAX,
                               UINT64_MAX - 1,
                               uint64_t(INT64_MAX),
                               uint64_t(INT64_MAX) + 1};
    uint64_t p = 1;
    for (int k = 0; k < 20; ++k, p *= 10)
        for (uint64_t d : {p - 1, p, p + 1, 2 * p, 9 * p + 9})
            v.push_back(d);
    for (int k = 0; k < 64; ++k)
        for (uint64_t d : {uint64_t(1) << k, (uint64_t(1) << k) - 1})
            v.push_back(d);
    std::mt19937_64 rng(34);
    for (int i = 0; i < 200000; ++i)
        v.push_back(rng() >> (rng() % 64));
    return v;
}

TEST(LineBuffer, UnsignedAndHexMatchPrintf) {
    for (uint64_t x : interestingValues()) {
        LineBuffer b;
        b.dec(x);
        b.put('|');
        b.dec(x, 8);
        b.put('|');
        b.dec(x, 5);
        b.put('|');
        b.hex(x, 16);
        b.put('|');
        b.hex(x);
        b.put('|');
        b.dec(uint32_t(x));
        ASSERT_EQ(b.view(), printf_("%" PRIu64 "|%8" PRIu64 "|%5" PRIu64 "|%016" PRIx64 "|%" PRIx64 "|%u", x,
                                    x, x, x, x, unsigned(uint32_t(x))))
            << x;
    }
}

TEST(LineBuffer, SignedMatchPrintf) {
    std::vector<int64_t> values = {0,   -1,   1,    -9,        -10,       -99,       -100,
                                   999, -999, 1000, INT32_MIN, INT32_MAX, INT64_MIN, INT64_MAX};
    for (uint64_t x : interestingValues())
        values.push_back(int64_t(x));
    for (int64_t x : values) {
        const int32_t n = int32_t(x);
        LineBuffer b;
        b.dec(n, 3);
        b.put('|');
        b.dec(n, 6);
        b.put('|');
        b.dec(n);
        b.put('|');
        b.dec(x);
        b.put('|');
        b.dec(x, 12);
        ASSERT_EQ(b.view(), printf_("%3d|%6d|%d|%" PRId64 "|%12" PRId64, n, n, n, x, x)) << x;
    }
}

TEST(LineBuffer, StringsAndIndentMatchPrintf) {
    for (const char* s : {"", "jump", "far-return", "longer-than-ten", "exactly-10"})
        for (int w : {0, 1, 4, 10, 12}) {
            LineBuffer b;
            b.left(s, w);
            b.put('|');
            EXPECT_EQ(b.view(), printf_("%-*s|", w, s)) << s << " " << w;
        }
    for (int depth : {-50, -41, -40, -3, -1, 0, 1, 2, 39, 40, 41, 4094, INT32_MAX}) {
        const int width = 2 * std::min(depth, 40);
        LineBuffer b;
        b.emptyField(width);
        b.put('|');
        EXPECT_EQ(b.view(), printf_("%*s|", width, "")) << depth;
    }
}

// A stream that keeps what it is given and the size of each write.
struct Recorder : std::streambuf {
    std::string text;
    std::vector<size_t> writes;
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        text.append(s, size_t(n));
        writes.push_back(size_t(n));
        return n;
    }
    int overflow(int c) override {
        text.push_back(char(c));
        writes.push_back(1);
        return c;
    }
};

TEST(LineBuffer, WritesWholeBlocksInOrder) {
    Recorder sink;
    std::ostream out(&sink);
    std::string expected;
    {
        LineBuffer b(out, 4096);
        for (uint64_t i = 0; i < 100000; ++i) {
            b.dec(i * 7919);
            b.put(" line ");
            b.dec(int32_t(i % 50) - 25, 3);
            b.endLine();
            expected += printf_("%" PRIu64 " line %3d\n", i * 7919, int(i % 50) - 25);
        }
        EXPECT_TRUE(b.flush());
    }
    EXPECT_EQ(sink.text, expected);
    ASSERT_GE(sink.writes.size(), 2u);
    for (size_t i = 0; i + 1 < sink.writes.size(); ++i)
        EXPECT_GE(sink.writes[i], 4096u) << "write " << i;
}

TEST(LineBuffer, ChunksOnThreadsComeOutInOrder) {
    auto chunkText = [](size_t i) {
        std::string s;
        for (size_t k = 0; k < (i * 37) % 500; ++k)  // some chunks empty, sizes vary
            s += printf_("chunk %zu line %zu\n", i, k);
        return s;
    };
    for (size_t chunks : {0, 1, 2, 7, 300})
        for (unsigned threads : {1u, 2u, 3u, 8u}) {
            std::string expected;
            for (size_t i = 0; i < chunks; ++i)
                expected += chunkText(i);
            std::ostringstream out;
            ASSERT_TRUE(writeChunksInOrder(
                chunks, threads, [&](size_t i, LineBuffer& b) { b.put(chunkText(i)); }, out));
            EXPECT_EQ(out.str(), expected) << chunks << " chunks, " << threads << " threads";
        }
    // A stream that fails: false, and every thread stops.
    std::ofstream closed;
    EXPECT_FALSE(writeChunksInOrder(
        100, 4, [&](size_t i, LineBuffer& b) { b.put(chunkText(i + 1)); }, closed));
}

// ---- the real commands against the old formatting ----

std::string run(const std::string& command, int* status = nullptr) {
    FILE* p = popen(command.c_str(), "r");
    if (!p) return {};
    std::string out;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
        out.append(buf, n);
    const int rc = pclose(p);
    if (status) *status = rc;
    return out;
}

uint64_t fnv1a(const std::string& s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : s)
        h = (h ^ c) * 0x100000001b3ull;
    return h;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// DecodeCommand.cpp's --format spans at fc1ac04, line for line.
std::string referenceSpans(AuxTraceSession& s) {
    DecodedSpans result = s.decodeSpans(DecodeWindow{}, 1);
    const FunctionTable& functions = s.functions();
    std::ostringstream out;
    char line[512];
    for (const auto& [tid, store] : result.threads) {
        const Sideband& sb = s.sideband();
        int32_t pid = sb.pidOf(tid);
        out << "thread " << tid << " (" << sb.model().threadName(tid) << ") pid " << pid << ": "
            << store.size() << " spans\n";
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            std::snprintf(line, sizeof line, "%" PRIu64 " %" PRIu64 " %3d %8" PRIu64 " %*s", span.start,
                          span.end, span.depth, span.instructions, 2 * std::min(span.depth, 40), "");
            out << line;
            if (span.isGap()) {
                const Gap& gap = store.gaps()[size_t(span.gap)];
                out << "[" << gapReasonName(gap.reason) << ": " << gap.detail << "]\n";
            } else {
                out << functions[span.function].name << "\n";
            }
        }
    }
    return out.str();
}

// --format insn at fc1ac04.
std::string referenceInsn(AuxTraceSession& s) {
    const FunctionTable& functions = s.functions();
    std::ostringstream out;
    char line[512];
    s.forEachBlock(DecodeWindow{}, [&](const FlowBlock& b) {
        std::snprintf(line, sizeof line,
                      "%" PRIu64 " %3d %6d %016" PRIx64 "-%016" PRIx64 " %5" PRIu64 " %-10s ", b.time, b.cpu,
                      b.tid, b.ip, b.endIp, b.instructions, branchClassName(b.last));
        out << line << functions[b.function].name << "\n";
    });
    return out.str();
}

// The lines of `text` starting with one of `prefixes`.
std::string linesStartingWith(const std::string& text, std::initializer_list<const char*> prefixes) {
    std::istringstream in(text);
    std::string line, out;
    while (std::getline(in, line))
        for (const char* p : prefixes)
            if (line.rfind(p, 0) == 0) {
                out += line + "\n";
                break;
            }
    return out;
}

struct Trace {
    std::string path;
    std::string options;  // for the command line
    AuxTraceOptions session;
};

void expectDecodeMatchesReference(const Trace& t, bool insn) {
    auto file = PerfDataReader::open(t.path);
    ASSERT_TRUE(file) << file.error().message;
    auto session = AuxTraceSession::open(*file, t.session);
    ASSERT_TRUE(session) << session.error().message;
    const std::string spans = referenceSpans(**session);
    ASSERT_FALSE(spans.empty()) << t.path;
    for (int threads : {1, 3}) {
        int status = -1;
        const std::string ours =
            run(std::string("'") + AUXSCOPE_TEST_BINARY + "' decode '" + t.path + "' " + t.options +
                    " --format spans -j " + std::to_string(threads) + " 2>/dev/null",
                &status);
        EXPECT_EQ(status, 0) << t.path;
        EXPECT_TRUE(ours == spans) << t.path << " -j " << threads << ": --format spans differs from the old "
                                   << "formatting (" << ours.size() << " bytes, expected " << spans.size()
                                   << ")";
    }
    if (!insn) return;
    const std::string blocks = referenceInsn(**session);
    const std::string ours = run(std::string("'") + AUXSCOPE_TEST_BINARY + "' decode '" + t.path + "' " +
                                 t.options + " --format insn -j 2 2>/dev/null");
    EXPECT_TRUE(ours == blocks) << t.path << ": --format insn differs from the old formatting ("
                                << ours.size() << " bytes, expected " << blocks.size() << ")";
}

class PtSynthOutput : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new std::string(std::filesystem::temp_directory_path() /
                               ("auxscope-output-" + std::to_string(getpid())));
        std::filesystem::create_directories(*dir_);
        const std::string cmd = std::string("'") + AUXSCOPE_PTSYNTH + "' --generate 1 --seed 5 -q -o '" +
                                *dir_ + "/synth.data' > /dev/null";
        ok_ = std::system(cmd.c_str()) == 0;
    }
    static void TearDownTestSuite() {
        std::filesystem::remove_all(*dir_);
        delete dir_;
    }
    static std::string* dir_;
    static bool ok_;
};
std::string* PtSynthOutput::dir_ = nullptr;
bool PtSynthOutput::ok_ = false;

TEST_F(PtSynthOutput, SpansAndInsnAsBefore) {
    ASSERT_TRUE(ok_) << "auxscope-ptsynth failed";
    expectDecodeMatchesReference({*dir_ + "/synth.data", "", {}}, true);
}

TEST_F(PtSynthOutput, CsvSpanRowsAsBefore) {
    ASSERT_TRUE(ok_) << "auxscope-ptsynth failed";
    const std::string data = *dir_ + "/synth.data", csv = *dir_ + "/synth.csv";
    int status = -1;
    run(std::string("'") + AUXSCOPE_TEST_BINARY + "' export '" + data + "' --format csv -o '" + csv +
            "' 2>&1",
        &status);
    ASSERT_EQ(status, 0);
    auto file = PerfDataReader::open(data);
    ASSERT_TRUE(file) << file.error().message;
    auto session = AuxTraceSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    // TraceExport.cpp's span and gap rows at fc1ac04 (no sampled profile: no tenth column).
    DecodedSpans result = (*session)->decodeSpans(DecodeWindow{}, 1);
    const FunctionTable& functions = (*session)->functions();
    std::ostringstream expected;
    for (const auto& [tid, store] : result.threads) {
        const std::string pidTid =
            std::to_string((*session)->sideband().pidOf(tid)) + ',' + std::to_string(tid) + ',';
        for (size_t i = 0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (s.isGap()) {
                const Gap& g = store.gaps()[size_t(s.gap)];
                ASSERT_EQ(g.detail.find_first_of(",\"\n"), std::string::npos);
                expected << "gap," << g.cpu << ',' << s.start << ',' << s.end << ',' << pidTid
                         << gapReasonName(g.reason) << ',' << g.traceOffset << ',' << g.detail << "\n";
                continue;
            }
            const std::string& name = functions[s.function].name;
            ASSERT_EQ(name.find_first_of(",\"\n"), std::string::npos);
            expected << "span,," << s.start << ',' << s.end << ',' << pidTid << name << ',' << s.instructions
                     << ',' << s.depth << "\n";
        }
    }
    const std::string rows = linesStartingWith(readFile(csv), {"span,", "gap,"});
    EXPECT_GT(rows.size(), 1000u);
    EXPECT_TRUE(rows == expected.str()) << "CSV span rows differ from the old formatting (" << rows.size()
                                        << " bytes, expected " << expected.str().size() << ")";
}

std::string etmDir() {
    return test_support::testDataPath("coresight/simpleperf-etm");
}

TEST(SharedTraceOutput, SpansAndInsnAsBefore) {
    AUXSCOPE_NEED_TEST_DATA();
    AuxTraceOptions symfs;
    symfs.images.symfs = etmDir() + "/symfs";
    expectDecodeMatchesReference({etmDir() + "/perf_etm.data", "--symfs '" + etmDir() + "/symfs'", symfs},
                                 true);
    expectDecodeMatchesReference({etmDir() + "/perf_kernel.data", "", {}}, true);
    expectDecodeMatchesReference(
        {test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14"), "", {}},
        false);
}

// fc1ac04's output on the shared traces: FNV-1a 64 and size.
TEST(SharedTraceOutput, RangesAndCsvAsBefore) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string bin = std::string("'") + AUXSCOPE_TEST_BINARY + "'";
    const std::string symfs = " --symfs '" + etmDir() + "/symfs'";
    struct Case {
        std::string command;
        uint64_t fnv;
        size_t size;
    };
    const std::string csv =
        std::filesystem::temp_directory_path() / ("auxscope-output-" + std::to_string(getpid()) + ".csv");
    const std::string pt =
        test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
    for (const Case& c : std::vector<Case>{
             {bin + " decode '" + etmDir() + "/perf_etm.data'" + symfs + " --format ranges 2>/dev/null",
              0xc77bf91a14b12c8cull, 8172},
             {bin + " decode '" + etmDir() + "/perf_kernel.data' --format ranges 2>/dev/null",
              0x6356ff009ce211cfull, 59},
             {bin + " export '" + etmDir() + "/perf_etm.data'" + symfs + " --format csv -o " + csv +
                  " >/dev/null 2>&1 && cat " + csv,
              0xf13ab20d18754cbeull, 446},
             {bin + " export '" + etmDir() + "/perf_kernel.data' --format csv -o " + csv +
                  " >/dev/null 2>&1 && cat " + csv,
              0x71c0231257eb476aull, 673437},
             {bin + " export '" + pt + "' --format csv -o " + csv + " >/dev/null 2>&1 && cat " + csv,
              0xc7fa64803f071b34ull, 8804},
         }) {
        int status = -1;
        const std::string out = run(c.command, &status);
        EXPECT_EQ(status, 0) << c.command;
        EXPECT_EQ(out.size(), c.size) << c.command;
        EXPECT_EQ(fnv1a(out), c.fnv) << c.command;
    }
    std::filesystem::remove(csv);
}

}  // namespace
}  // namespace auxscope
