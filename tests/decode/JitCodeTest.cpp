// SPDX-License-Identifier: GPL-3.0-or-later
// JIT code (images/JitCode.h, ImageResolver's JIT ranges):
//   - the perf map and jitdump readers on hand-made files, and on bad ones:
//     malformed lines, bad magic, every truncation, huge sizes, random bytes;
//   - a real JIT (tests/decode/JitProgram.c) recorded by perf record -e
//     cpu-clock -g: auxscope report names its functions in the samples as perf
//     report does with the perf map, and from the jitdump alone (found through
//     the recording's marker mmap, beside the file, or with --jit-dump);
//   - the same JIT traced by auxscope-ptsynth's single-step mode: the Intel PT
//     decode through the dump's code bytes equals the truth, function by function.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "PtSynthTruth.h"
#include "TestSupport.h"
#include "images/CodeAnnotation.h"
#include "images/ImageResolver.h"
#include "images/JitCode.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtSpanDecoder.h"
#include "sideband/Sideband.h"

using namespace auxscope;
namespace fs = std::filesystem;
using test_support::TempDir;

namespace {

// ------------------------------------------------------------ a jitdump writer

struct DumpWriter {
    std::vector<uint8_t> bytes;
    bool swap = false;
    void u32(uint32_t v) {
        if (swap) v = __builtin_bswap32(v);
        raw(&v, 4);
    }
    void u64(uint64_t v) {
        if (swap) v = __builtin_bswap64(v);
        raw(&v, 8);
    }
    void raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    void str(const std::string& s) { raw(s.c_str(), s.size() + 1); }
    void header(uint32_t pid) {
        u32(kJitDumpMagic), u32(1), u32(40), u32(62), u32(0), u32(pid), u64(1000), u64(0);
    }
    void recordHeader(uint32_t id, uint32_t size, uint64_t time) { u32(id), u32(size), u64(time); }
    void load(uint64_t time, uint64_t address, const std::string& name, const std::vector<uint8_t>& code,
              uint64_t index) {
        recordHeader(0, uint32_t(16 + 40 + name.size() + 1 + code.size()), time);
        u32(7), u32(8), u64(address), u64(address), u64(code.size()), u64(index);
        str(name);
        raw(code.data(), code.size());
    }
    void move(uint64_t time, uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
        recordHeader(1, 16 + 48, time);
        u32(7), u32(8), u64(to), u64(from), u64(to), u64(size), u64(index);
    }
    void debugInfo(uint64_t time, uint64_t address, const std::vector<std::pair<int, std::string>>& lines) {
        uint32_t size = 16 + 16;
        for (const auto& l : lines)
            size += uint32_t(16 + l.second.size() + 1);
        recordHeader(2, size, time);
        u64(address), u64(lines.size());
        uint64_t at = address;
        for (const auto& l : lines) {
            u64(at++), u32(uint32_t(l.first)), u32(0);
            str(l.second);
        }
    }
    void unwinding(uint64_t time, const std::vector<uint8_t>& data) {
        recordHeader(4, uint32_t(16 + 24 + data.size()), time);
        u64(data.size()), u64(0), u64(data.size());
        raw(data.data(), data.size());
    }
    void close(uint64_t time) { recordHeader(3, 16, time); }
};

const std::vector<uint8_t> kCodeA{0x48, 0x8d, 0x04, 0x37, 0xc3};
const std::vector<uint8_t> kCodeB{0x31, 0xc0, 0xc3};

DumpWriter sampleDump(bool swap = false) {
    DumpWriter w;
    w.swap = swap;
    w.header(4242);
    w.debugInfo(2000, 0x10000, {{10, "a.js"}, {11, "\xff"}, {12, "b.js"}});
    w.load(2001, 0x10000, "fn_a", kCodeA, 1);
    w.load(2002, 0x10040, "fn_b", kCodeB, 2);
    w.unwinding(2003, {1, 2, 3, 4, 5, 6, 7, 8});
    w.move(2004, 0x10040, 0x20000, kCodeB.size(), 2);
    w.close(2005);
    return w;
}

// ------------------------------------------------------------ readers on hand-made files

TEST(PerfMapReader, LinesAndMalformedLinesCounted) {
    const std::string text =
        "7f0000001000 20 LazyCompile:~add a.js:1\n"
        "0x7f0000002000 0x10 py::f:/x.py\n"
        "\n"
        "zz 10 bad_start\n"
        "7f0000003000\n"
        "7f0000004000 0 zero\n"
        "7f0000005000 8 trailing_cr\r\n";
    const PerfMap map = parsePerfMap(text, "/tmp/perf-1.map");
    ASSERT_EQ(map.symbols.size(), 3u);
    EXPECT_EQ(map.symbols[0].start, 0x7f0000001000u);
    EXPECT_EQ(map.symbols[0].size, 0x20u);
    EXPECT_EQ(map.symbols[0].name, "LazyCompile:~add a.js:1");  // the rest of the line, spaces kept
    EXPECT_EQ(map.symbols[1].start, 0x7f0000002000u);
    EXPECT_EQ(map.symbols[2].name, "trailing_cr");
    EXPECT_EQ(map.malformed, 3u);
    ASSERT_EQ(map.notes.size(), 3u);
    EXPECT_NE(map.notes[0].find("/tmp/perf-1.map:4: START 'zz'"), std::string::npos) << map.notes[0];
    EXPECT_NE(map.notes[1].find("/tmp/perf-1.map:5: expected"), std::string::npos) << map.notes[1];
    EXPECT_NE(map.notes[2].find(":6: SIZE is 0"), std::string::npos) << map.notes[2];
    EXPECT_FALSE(loadPerfMap("/nonexistent/perf-1.map").ok());
}

TEST(PerfMapReader, PidFromFileNames) {
    EXPECT_EQ(pidFromJitFileName("/tmp/perf-123.map"), 123);
    EXPECT_EQ(pidFromJitFileName("jit-77.dump"), 77);
    EXPECT_EQ(pidFromJitFileName("/x/jit-.dump"), -1);
    EXPECT_EQ(pidFromJitFileName("/x/perf-12a.map"), -1);
    EXPECT_EQ(pidFromJitFileName("/x/other.map"), -1);
}

TEST(JitDumpReader, EveryRecordKind) {
    for (bool swap : {false, true}) {
        const DumpWriter w = sampleDump(swap);
        auto dump = parseJitDump(w.bytes, "x/jit-4242.dump");
        ASSERT_TRUE(dump.ok()) << dump.error().message;
        EXPECT_EQ(dump->byteSwapped, swap);
        EXPECT_EQ(dump->pid, 4242u);
        EXPECT_EQ(dump->elfMach, 62u);
        EXPECT_FALSE(dump->error) << dump->error->message;
        ASSERT_EQ(dump->loads.size(), 2u);
        EXPECT_EQ(dump->loads[0].name, "fn_a");
        EXPECT_EQ(dump->loads[0].address, 0x10000u);
        EXPECT_EQ(dump->loads[0].size, kCodeA.size());
        EXPECT_EQ(dump->loads[0].time, 2001u);
        EXPECT_EQ(dump->loads[1].index, 2u);
        // The code bytes lie in the file where the record says.
        for (const auto& [load, code] :
             {std::pair{dump->loads[0], kCodeA}, std::pair{dump->loads[1], kCodeB}})
            EXPECT_EQ(0, std::memcmp(w.bytes.data() + load.codeOffset, code.data(), code.size()));
        ASSERT_EQ(dump->debugInfo.size(), 1u);
        ASSERT_EQ(dump->debugInfo[0].lines.size(), 3u);
        EXPECT_EQ(dump->debugInfo[0].lines[1].file, "a.js");  // "\xff": the file before
        EXPECT_EQ(dump->debugInfo[0].lines[2].line, 12);
        ASSERT_EQ(dump->unwinding.size(), 1u);
        EXPECT_EQ(dump->unwinding[0].unwindingSize, 8u);
        EXPECT_EQ(w.bytes[dump->unwinding[0].dataOffset], 1u);
        ASSERT_EQ(dump->moves.size(), 1u);
        EXPECT_EQ(dump->moves[0].newAddress, 0x20000u);
        EXPECT_TRUE(dump->closed);
    }
}

TEST(JitDumpReader, BadHeaders) {
    DumpWriter w = sampleDump();
    auto bad = w.bytes;
    bad[0] = 'X';
    auto r = parseJitDump(bad, "f.dump");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("f.dump: offset 0: not a jitdump"), std::string::npos)
        << r.error().message;
    bad = w.bytes;
    bad[4] = 9;  // version 9
    r = parseJitDump(bad, "f.dump");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("version 9"), std::string::npos) << r.error().message;
    bad = w.bytes;
    bad[8] = 8, bad[9] = 0;  // header size 8
    r = parseJitDump(bad, "f.dump");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("offset 8: header size 8"), std::string::npos) << r.error().message;
    EXPECT_FALSE(parseJitDump(std::span<const uint8_t>(w.bytes.data(), 39), "f.dump").ok());
    auto missing = loadJitDump("/nonexistent/jit-1.dump");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("/nonexistent/jit-1.dump: cannot open"), std::string::npos);
}

// Every prefix of a good dump: the records wholly inside it are read, the cut one named.
TEST(JitDumpReader, EveryTruncationKeepsTheRecordsBefore) {
    const DumpWriter w = sampleDump();
    auto whole = parseJitDump(w.bytes, "t.dump");
    ASSERT_TRUE(whole.ok());
    for (size_t n = 40; n < w.bytes.size(); ++n) {
        auto dump = parseJitDump(std::span<const uint8_t>(w.bytes.data(), n), "t.dump");
        ASSERT_TRUE(dump.ok()) << n;
        size_t loadsInside = 0;
        for (const auto& l : whole->loads)
            loadsInside += l.codeOffset + l.size <= n;
        EXPECT_EQ(dump->loads.size(), loadsInside) << "cut at " << n;
        // A cut at a record boundary is a shorter dump (a JIT still writing); elsewhere an error.
        if (dump->error) {
            EXPECT_NE(dump->error->message.find("t.dump: record at offset "), std::string::npos);
            EXPECT_NE(dump->error->message.find("truncated"), std::string::npos) << dump->error->message;
        }
    }
}

TEST(JitDumpReader, HugeSizesAreErrorsNotAllocations) {
    auto expectError = [](const std::vector<uint8_t>& bytes, const std::string& what) {
        auto dump = parseJitDump(bytes, "h.dump");
        ASSERT_TRUE(dump.ok());
        ASSERT_TRUE(dump->error.has_value()) << what;
        EXPECT_NE(dump->error->message.find(what), std::string::npos) << dump->error->message;
        EXPECT_NE(dump->error->message.find("h.dump: record at offset 40"), std::string::npos)
            << dump->error->message;
    };
    {  // a record claiming 4 GiB
        DumpWriter w;
        w.header(1);
        w.recordHeader(0, 0xffffffffu, 1);
        w.u64(0);
        expectError(w.bytes, "claims 4294967295 bytes");
    }
    {  // a record smaller than its header: no endless loop
        DumpWriter w;
        w.header(1);
        w.recordHeader(0, 8, 1);
        w.u64(0);
        expectError(w.bytes, "smaller than a record header");
    }
    {  // code_size beyond the record
        DumpWriter w;
        w.header(1);
        w.recordHeader(0, 16 + 40 + 2 + 4, 1);
        w.u32(1), w.u32(1), w.u64(0x1000), w.u64(0x1000), w.u64(~0ull >> 1), w.u64(0);
        w.str("f");
        w.u32(0);
        expectError(w.bytes, "code size");
    }
    {  // a name without its NUL
        DumpWriter w;
        w.header(1);
        w.recordHeader(0, 16 + 40 + 3, 1);
        w.u32(1), w.u32(1), w.u64(0x1000), w.u64(0x1000), w.u64(0), w.u64(0);
        w.raw("abc", 3);
        expectError(w.bytes, "no terminating NUL");
    }
    {  // 2^60 debug entries
        DumpWriter w;
        w.header(1);
        w.recordHeader(2, 16 + 16 + 17, 1);
        w.u64(0x1000), w.u64(1ull << 60);
        w.u64(0x1000), w.u32(1), w.u32(0), w.str("");
        expectError(w.bytes, "claims 1152921504606846976 entries");
    }
    {  // unwinding data beyond the record
        DumpWriter w;
        w.header(1);
        w.recordHeader(4, 16 + 24, 1);
        w.u64(1ull << 40), w.u64(0), w.u64(0);
        expectError(w.bytes, "unwinding data of 1099511627776 bytes");
    }
}

// Random changes to a good dump: never a crash, never a read outside it (ASan
// in the asan preset), every load read points inside the file.
TEST(JitDumpReader, RandomBytesNeverCrash) {
    const DumpWriter w = sampleDump();
    std::mt19937_64 random(27);
    size_t withError = 0;
    for (int round = 0; round < 20000; ++round) {
        std::vector<uint8_t> bytes = w.bytes;
        const int changes = 1 + int(random() % 4);
        for (int c = 0; c < changes; ++c)
            bytes[40 + random() % (bytes.size() - 40)] = uint8_t(random());
        if (random() % 3 == 0) bytes.resize(40 + random() % (bytes.size() - 40));
        auto dump = parseJitDump(bytes, "r.dump");
        ASSERT_TRUE(dump.ok());
        withError += dump->error.has_value();
        for (const auto& l : dump->loads)
            ASSERT_LE(l.codeOffset + l.size, bytes.size());
        for (const auto& u : dump->unwinding)
            ASSERT_LE(u.dataOffset + u.unwindingSize, bytes.size());
    }
    EXPECT_GT(withError, 1000u) << "the changes should often break a record";
}

// ------------------------------------------------------------ a real JIT

int run(const std::string& command, std::string* output = nullptr) {
    return test_support::runCommand(command, output, true);
}

// The JIT program's functions as its perf map gives them: name -> [start, end).
std::map<std::string, std::pair<uint64_t, uint64_t>> readMap(const std::string& path) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    std::ifstream in(path);
    uint64_t start = 0, size = 0;
    std::string name;
    while (in >> std::hex >> start >> size >> name)
        out[name] = {start, start + size};
    return out;
}

int32_t pidOf(const std::string& programOutput) {
    std::smatch m;
    static const std::regex pid("pid ([0-9]+) base");
    return std::regex_search(programOutput, m, pid) ? std::stoi(m[1]) : -1;
}

// Fields of a CSV line (quoted fields may hold commas and "").
std::vector<std::string> csvFields(const std::string& line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
            out.back() += '"', ++i;
        else if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

// auxscope report's self samples per function name (samples source, csv).
std::map<std::string, uint64_t> reportSelfSamples(const std::string& file, const std::string& extra,
                                                  std::string* log) {
    std::string output;
    const int rc = run(std::string(AUXSCOPE_BIN) + " report " + file +
                           " --source samples --format csv --top 0 " + extra + " 2>&1",
                       &output);
    if (log) *log = output;
    EXPECT_EQ(rc, 0) << output;
    std::map<std::string, uint64_t> out;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("function,", 0) != 0) continue;
        const auto f = csvFields(line);
        if (f.size() > 7) out[f[4]] += std::stoull(f[7]);
    }
    return out;
}

// perf report's samples per symbol (--no-children: self), with the perf map in /tmp.
std::map<std::string, uint64_t> perfSelfSamples(const std::string& file) {
    std::string output;
    run("perf report -i " + file + " --stdio --no-children --sort sym -F sample,sym -g none -q 2>/dev/null",
        &output);
    std::map<std::string, uint64_t> out;
    std::istringstream lines(output);
    std::string line;
    static const std::regex row(R"(^\s*([0-9]+)\s+\[[.k]\]\s+(\S.*?)\s*$)");
    while (std::getline(lines, line)) {
        std::smatch m;
        if (std::regex_match(line, m, row)) out[m[2]] += std::stoull(m[1]);
    }
    return out;
}

TEST(JitCodeSamples, ReportNamesJitFunctionsAsPerfDoes) {
    TempDir dir{"jit-samples"};
    const std::string data = (dir.path / "jit.data").string();
    std::string log;
    // The perf map goes to /tmp, where perf report looks for it.
    const int rc = run("cd " + dir.path.string() + " && perf record -q -e cpu-clock -g -o " + data + " -- " +
                           AUXSCOPE_JIT_PROG + " " + dir.path.string() + " 200000 20 0.4",
                       &log);
    const int32_t pid = pidOf(log);
    const std::string tmpMap = "/tmp/perf-" + std::to_string(pid) + ".map";
    struct Cleanup {
        std::string path;
        ~Cleanup() {
            if (!path.empty()) ::unlink(path.c_str());
        }
    } cleanup{pid > 0 ? tmpMap : ""};
    if (rc != 0) GTEST_SKIP() << "perf record -e cpu-clock failed here (" << rc << "): " << log;
    ASSERT_GT(pid, 0) << log;
    const auto functions = readMap(tmpMap);
    ASSERT_EQ(functions.size(), 3u);

    // 1. With /tmp/perf-<pid>.map (and the dump beside the file): as perf report.
    const auto perf = perfSelfSamples(data);
    ASSERT_GT(perf.count("jit_loop"), 0u) << "perf report did not name the JIT code";
    std::string ourLog;
    const auto ours = reportSelfSamples(data, "", &ourLog);
    for (const auto& [name, range] : functions)
        EXPECT_EQ(ours.count(name) ? ours.at(name) : 0, perf.count(name) ? perf.at(name) : 0) << name << "\n"
                                                                                              << ourLog;
    EXPECT_GT(ours.count("jit_loop") ? ours.at("jit_loop") : 0, 50u) << ourLog;

    // 2. Without the perf map: the names come from the jitdump the recording's marker mmap names.
    ASSERT_EQ(::unlink(tmpMap.c_str()), 0);
    const auto fromDump = reportSelfSamples(data, "", &ourLog);
    EXPECT_EQ(fromDump, ours) << ourLog;

    // 3. Neither where it was recorded nor beside the file: named by the note, [unknown] samples...
    const fs::path elsewhere = dir.path / "elsewhere";
    fs::create_directory(elsewhere);
    const std::string dumpName = "jit-" + std::to_string(pid) + ".dump";
    fs::rename(dir.path / dumpName, elsewhere / dumpName);
    const auto without = reportSelfSamples(data, "", &ourLog);
    EXPECT_EQ(without.count("jit_loop"), 0u) << ourLog;
    EXPECT_NE(ourLog.find("jitdump " + (dir.path / dumpName).string() + " (mapped by pid " +
                          std::to_string(pid) + ") not found: pass --jit-dump FILE"),
              std::string::npos)
        << ourLog;
    // ... and --jit-dump gives them back.
    const auto withOption = reportSelfSamples(data, "--jit-dump " + (elsewhere / dumpName).string(), &ourLog);
    EXPECT_EQ(withOption, ours) << ourLog;
}

// ------------------------------------------------------------ Intel PT through JIT code

TEST(JitCodeTrace, PtDecodeThroughTheDumpsCodeEqualsTheTruth) {
    TempDir dir{"jit-trace"};
    const fs::path data = dir.path / "jit.data";
    std::string log;
    // Single-stepped from run_jit: 3 calls of jit_outer(40). The perf map stays
    // in the test's folder: the names and the code must come from the jitdump.
    const int rc =
        run("JIT_PERF_MAP_DIR=" + dir.path.string() + " " AUXSCOPE_PTSYNTH " -q -o " + data.string() +
                " --start run_jit --max-insns 100000 -- " AUXSCOPE_JIT_PROG " " + dir.path.string() + " 40 3",
            &log);
    ASSERT_EQ(rc, 0) << log;
    auto truth = ptsynth::Truth::read(data.string() + ".truth");
    ASSERT_TRUE(truth.ok()) << truth.error().message;
    ASSERT_LT(truth->instructions, 100000u) << "the program should exit within the limit";
    const auto functions = readMap((dir.path / ("perf-" + std::to_string(truth->pid) + ".map")).string());
    ASSERT_EQ(functions.size(), 3u);
    // The truth's instructions per JIT function.
    std::map<std::string, uint64_t> want;
    for (uint64_t ip : truth->ips)
        for (const auto& [name, range] : functions)
            if (ip >= range.first && ip < range.second) ++want[name];
    EXPECT_EQ(want["jit_loop"], 3u * (3 * 40 + 2));
    EXPECT_EQ(want["jit_add"], 3u * 2);
    EXPECT_EQ(want["jit_outer"], 3u * 8);

    auto decode = [&](std::map<std::string, uint64_t>& got, DecodeStats& stats) {
        auto reader = PerfDataReader::open(data.string());
        ASSERT_TRUE(reader.ok()) << reader.error().message;
        auto session = PtSession::open(*reader);
        ASSERT_TRUE(session.ok()) << session.error().message;
        DecodedSpans result = (*session)->decodeSpans({}, 1);
        stats = result.stats;
        for (const auto& [tid, store] : result.threads)
            for (size_t i = 0; i < store.size(); ++i) {
                const Span span = store.at(i);
                if (!span.isGap()) got[(*session)->functions()[span.function].name] += span.instructions;
            }
    };
    std::map<std::string, uint64_t> got;
    DecodeStats stats;
    decode(got, stats);
    EXPECT_EQ(stats.decodeErrors, 0u);
    EXPECT_TRUE(stats.missingImages.empty()) << stats.missingImages.begin()->first;
    EXPECT_EQ(stats.instructions, truth->instructions);
    for (const auto& [name, n] : want)
        EXPECT_EQ(got[name], n) << name;

    // The resolver's memory interface (what the CoreSight decoder reads code
    // through) gives the JIT's bytes at their addresses, from the dump.
    {
        auto reader = PerfDataReader::open(data.string());
        ASSERT_TRUE(reader.ok());
        auto sideband = Sideband::load(*reader);
        ASSERT_TRUE(sideband.ok()) << sideband.error().message;
        FunctionTable table;
        ImageResolver images(*sideband, table, {});
        images.prepare();
        const uint64_t loop = functions.at("jit_loop").first;
        const std::vector<uint8_t> loopCode{0x31, 0xc0, 0x48, 0x01, 0xf8, 0x48, 0xff, 0xcf, 0x75, 0xf8, 0xc3};
        std::vector<uint8_t> bytes(64);
        ASSERT_EQ(images.readSome(truth->pid, loop, bytes.data(), bytes.size()), loopCode.size());
        bytes.resize(loopCode.size());
        EXPECT_EQ(bytes, loopCode);
        EXPECT_EQ(table[images.functionAt(truth->pid, loop + 5)].name, "jit_loop");
        EXPECT_EQ(images.missingFileAt(truth->pid, loop), nullptr);
        // Between the functions (int3 padding no record names): the anonymous mapping, no code.
        EXPECT_EQ(images.readSome(truth->pid, loop + 0x20, bytes.data(), 1), 0u);
        ASSERT_EQ(images.jitFiles().size(), 1u);
        EXPECT_TRUE(images.jitFiles()[0].dump);
        EXPECT_EQ(images.jitFiles()[0].functions, 3u);
        // The dump's marker mapping is no missing image.
        bool marker = false;
        for (const auto& f : images.files())
            if (f.recorded.find("/jit-") != std::string::npos) {
                marker = true;
                EXPECT_FALSE(f.resolved.empty()) << f.recorded;
            }
        EXPECT_TRUE(marker) << "the recording should name the dump (ptsynth's MMAP2 of the marker)";
        // The code view of a JIT function: disassembled from the dump's bytes
        // (its machine from the dump's header), lines from its debug info.
        // JitProgram.c puts line 10*(i+1) at a function's first byte and the
        // next line at its last instruction (jit_loop: i = 1; ret is its last).
        const uint32_t loopId = images.functionAt(truth->pid, loop);
        auto code = annotateFunction(images, table, truth->pid, loopId, {{loop, loop + 10, 5, 1}});
        ASSERT_TRUE(code.ok()) << code.error().message;
        EXPECT_EQ(code->arch, "x86-64");
        ASSERT_EQ(code->instructions.size(), 5u);
        EXPECT_NE(code->instructions[0].text.find("xor"), std::string::npos) << code->instructions[0].text;
        EXPECT_EQ(code->sourceFile, "jit_source.js");
        EXPECT_EQ(code->instructions[0].line, 20);
        EXPECT_EQ(code->instructions[3].line, 20);
        EXPECT_EQ(code->instructions[4].line, 21);
        EXPECT_EQ(code->executed, 5u);
    }
    // A dump still being written (a live capture): the resolver read its first
    // function; update() reads the functions the JIT appended since.
    {
        const fs::path dumpPath = dir.path / ("jit-" + std::to_string(truth->pid) + ".dump");
        std::ifstream in(dumpPath, std::ios::binary);
        const std::vector<uint8_t> whole((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
        auto parsed = parseJitDump(whole, dumpPath.string());
        ASSERT_TRUE(parsed.ok());
        ASSERT_EQ(parsed->loads.size(), 3u);
        const size_t firstEnd = size_t(parsed->loads[0].codeOffset + parsed->loads[0].size);
        auto write = [&](size_t n) {
            std::ofstream out(dumpPath, std::ios::binary | std::ios::trunc);
            out.write(reinterpret_cast<const char*>(whole.data()), std::streamsize(n));
        };
        write(firstEnd + 20);  // the first load and a part of the next record
        auto reader = PerfDataReader::open(data.string());
        ASSERT_TRUE(reader.ok());
        auto sideband = Sideband::load(*reader);
        ASSERT_TRUE(sideband.ok());
        FunctionTable table;
        ImageResolver images(*sideband, table, {});
        images.prepare();
        const uint64_t outer = functions.at("jit_outer").first, loop = functions.at("jit_loop").first;
        EXPECT_EQ(table[images.functionAt(truth->pid, outer)].name, "jit_outer");
        EXPECT_EQ(images.functionAt(truth->pid, loop), FunctionTable::kUnknown);
        uint8_t byte = 0;
        EXPECT_EQ(images.readSome(truth->pid, loop, &byte, 1), 0u);
        ASSERT_EQ(images.jitFiles().size(), 1u);
        EXPECT_NE(images.jitFiles()[0].error.find("truncated"), std::string::npos)
            << images.jitFiles()[0].error;
        write(whole.size());
        const ImageResolver::Update u = images.update(*sideband);
        EXPECT_EQ(u.pids, std::vector<int32_t>{truth->pid});
        EXPECT_EQ(table[images.functionAt(truth->pid, loop)].name, "jit_loop");
        EXPECT_EQ(images.readSome(truth->pid, loop, &byte, 1), 1u);
        EXPECT_EQ(byte, 0x31);  // xor eax, eax
        EXPECT_EQ(table[images.functionAt(truth->pid, outer)].name, "jit_outer");
        ASSERT_EQ(images.jitFiles().size(), 1u);
        EXPECT_EQ(images.jitFiles()[0].functions, 3u);
        EXPECT_EQ(images.jitFiles()[0].error, "");
        // Unchanged: nothing read again.
        EXPECT_TRUE(images.update(*sideband).pids.empty());
    }
    std::string cli;
    run("(" + std::string(AUXSCOPE_BIN) + " decode " + data.string() + " >/dev/null) 2>&1", &cli);
    EXPECT_NE(
        cli.find("jit: jitdump " + (dir.path / ("jit-" + std::to_string(truth->pid) + ".dump")).string() +
                 " (pid " + std::to_string(truth->pid) + "): 3 functions with code"),
        std::string::npos)
        << cli;

    // Without the dump the JIT code is a missing image: the dump is what decodes it.
    fs::rename(dir.path / ("jit-" + std::to_string(truth->pid) + ".dump"), dir.path / "hidden.dump");
    std::map<std::string, uint64_t> without;
    DecodeStats statsWithout;
    decode(without, statsWithout);
    EXPECT_EQ(without.count("jit_loop"), 0u);
    EXPECT_FALSE(statsWithout.missingImages.empty());
    EXPECT_LT(statsWithout.instructions, truth->instructions);
}

}  // namespace
