// SPDX-License-Identifier: GPL-3.0-or-later
// Intel PT decode against libipt's own expectations: every ptdump/ptxed line
// of MANIFEST.tsv in ../shared/data/intel-pt/libipt-ptt-synthetic, run through
// parsePtDecodeArguments() + runPtDecode() (what `auxscope decode` runs), compared
// line by line with the .exp file, whitespace runs counting as one space as the
// suite's `diff -b` does. Plus the real Skylake trace of dynamorio-hello.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "AuxtraceInfo.h"
#include "PerfDataReader.h"
#include "PtDecodeRequest.h"

namespace {

using namespace auxscope;

const std::string kDataDir = AUXSCOPE_SHARED_DATA_DIR;
const std::string kSyntheticDir = kDataDir + "/intel-pt/libipt-ptt-synthetic";
const std::string kHelloDir = kDataDir + "/intel-pt/dynamorio-hello";

// Expectations this decoder does not reproduce, each with its reason. The test
// fails on any other mismatch, and also when one of these starts to pass (so
// the list only ever shrinks).
const std::string kNoSideband =
    "perf-event sideband (--pevent:*, --sb:*: libipt-sb's .sb files, time-correlated with the trace and "
    "switching images per process) is not implemented; auxscope will take sideband from perf.data records";
const std::map<std::string, std::string> kKnownUnsupported = {
    {"pevent-comm_exec-mmap-tsc-iret-ptdump.exp", kNoSideband},
    {"pevent-comm_exec-mmap-tsc-iret-ptxed.exp", kNoSideband},
    {"pevent-dump-ptdump.exp", kNoSideband},
    {"pevent-dump_verbose-ptdump.exp", kNoSideband},
    {"pevent-fork-ptdump.exp", kNoSideband},
    {"pevent-fork-ptxed.exp", kNoSideband},
    {"pevent-mmap-tip_cached-ptdump.exp", kNoSideband},
    {"pevent-mmap-tip_cached-ptxed.exp", kNoSideband},
    {"pevent-mmap_secondary-tsc-ptdump.exp", kNoSideband},
    {"pevent-mmap_secondary-tsc-ptxed.exp", kNoSideband},
    {"pevent-split-ptdump.exp", kNoSideband},
    {"pevent-split-ptxed.exp", kNoSideband},
    {"pevent-tip_pgd-comm_exec-mmap-tsc-tip_pge-ptdump.exp", kNoSideband},
    {"pevent-tip_pgd-comm_exec-mmap-tsc-tip_pge-ptxed.exp", kNoSideband},
    {"pevent-tip_pgd-mmap-tsc-tip_pge-ptdump.exp", kNoSideband},
    {"pevent-tip_pgd-mmap-tsc-tip_pge-ptxed.exp", kNoSideband},
    {"pevent-tip_pgd-switch-tsc-tip_pge-ptdump.exp", kNoSideband},
    {"pevent-tip_pgd-switch-tsc-tip_pge-ptxed.exp", kNoSideband},
    {"pevent-tip_pgd-switch_cpu_wide-tsc-tip_pge-ptdump.exp", kNoSideband},
    {"pevent-tip_pgd-switch_cpu_wide-tsc-tip_pge-ptxed.exp", kNoSideband},
    {"pevent-warn-ptdump.exp", kNoSideband},
    {"pevent-warn-ptxed.exp", kNoSideband},
};

std::string readFile(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

std::vector<std::string> splitWords(const std::string& text) {
    std::vector<std::string> words;
    std::istringstream in(text);
    for (std::string word; in >> word;)
        words.push_back(word);
    return words;
}

// One line as `diff -b` compares it: whitespace runs as one space, none at the end.
std::string normalizeLine(const std::string& line) {
    std::string out;
    bool pendingSpace = false;
    for (char c : line) {
        if (c == ' ' || c == '\t' || c == '\r') {
            pendingSpace = true;
            continue;
        }
        if (pendingSpace) out += ' ';
        pendingSpace = false;
        out += c;
    }
    return out;
}

std::vector<std::string> normalizedLines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(normalizeLine(line));
    return lines;
}

// Empty when equal, else where and how the first difference shows.
std::string firstDifference(const std::string& actual, const std::string& expected) {
    auto a = normalizedLines(actual), e = normalizedLines(expected);
    for (size_t n = 0; n < std::max(a.size(), e.size()); ++n) {
        std::string got = n < a.size() ? a[n] : "<end of output>";
        std::string want = n < e.size() ? e[n] : "<end of expectation>";
        if (got != want)
            return "line " + std::to_string(n + 1) + ":\n    expected: " + want + "\n    actual:   " + got;
    }
    return {};
}

struct Expectation {
    std::string test, tool, expectedFile, command;
};

std::vector<Expectation> readManifest() {
    std::vector<Expectation> rows;
    std::istringstream in(readFile(kSyntheticDir + "/MANIFEST.tsv"));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::vector<std::string> fields;
        std::istringstream row(line);
        for (std::string field; std::getline(row, field, '\t');)
            fields.push_back(field);
        if (fields.size() == 4) rows.push_back({fields[0], fields[1], fields[2], fields[3]});
    }
    return rows;
}

// The manifest's ptdump/ptxed command as `auxscope decode` arguments: files get
// the data directory in front, ptdump's --raw (raw packet bytes) is --raw-bytes,
// ptdump's positional trace file becomes --pt.
std::vector<std::string> toDecodeArguments(const std::string& command, const std::string& dir) {
    std::vector<std::string> words = splitWords(command);
    std::vector<std::string> args;
    const bool ptdump = words.at(0) == "ptdump";
    args.push_back("--format");
    args.push_back(ptdump ? "packets" : "ptxed");
    for (size_t i = 1; i < words.size(); ++i) {
        const std::string& w = words[i];
        if (ptdump && w == "--raw") {
            args.push_back("--raw-bytes");
        } else if (!ptdump && (w == "--raw" || w == "--pt" || w == "--elf") && i + 1 < words.size()) {
            args.push_back(w);
            args.push_back(dir + "/" + words[++i]);
        } else if (ptdump && w[0] != '-' && i == words.size() - 1) {
            args.push_back("--pt");
            args.push_back(dir + "/" + w);
        } else {
            args.push_back(w);
        }
    }
    return args;
}

// Runs the decode exactly as the command line does; output plus any setup error.
std::string runDecode(const std::vector<std::string>& args) {
    std::ostringstream out;
    auto request = parsePtDecodeArguments(args);
    if (!request) return "<arguments refused: " + request.error().message + ">\n";
    auto summary = runPtDecode(*request, out);
    if (!summary) out << "<decode failed: " << summary.error().message << ">\n";
    return out.str();
}

TEST(PtConformance, SharedDataIsPresent) {
    ASSERT_TRUE(std::filesystem::exists(kSyntheticDir + "/MANIFEST.tsv"))
        << kSyntheticDir
        << "/MANIFEST.tsv is missing: the conformance tests need ../shared/data beside the repo";
    ASSERT_TRUE(std::filesystem::exists(kHelloDir + "/pt.bin")) << kHelloDir << " is missing";
}

TEST(PtConformance, LibiptSyntheticManifest) {
    std::vector<Expectation> manifest = readManifest();
    ASSERT_EQ(manifest.size(), 715u) << "MANIFEST.tsv in " << kSyntheticDir << " is missing or incomplete";
    std::map<std::string, std::pair<int, int>> passedByTool;  // tool -> (passed, total)
    int passed = 0;
    std::vector<std::string> unexpectedFailures, unexpectedPasses;
    for (const Expectation& row : manifest) {
        std::string actual = runDecode(toDecodeArguments(row.command, kSyntheticDir));
        std::string expected = readFile(kSyntheticDir + "/" + row.expectedFile);
        std::string difference = firstDifference(actual, expected);
        auto& [toolPassed, toolTotal] = passedByTool[row.tool];
        toolTotal += 1;
        bool known = kKnownUnsupported.count(row.expectedFile) > 0;
        if (difference.empty()) {
            passed += 1;
            toolPassed += 1;
            if (known) unexpectedPasses.push_back(row.expectedFile);
        } else if (!known) {
            unexpectedFailures.push_back(row.expectedFile);
            ADD_FAILURE() << row.expectedFile << " (" << row.command << ") differs at " << difference;
        }
    }
    std::string summary = "libipt-ptt-synthetic: " + std::to_string(passed) + "/" +
                          std::to_string(manifest.size()) + " expectations pass (ptdump " +
                          std::to_string(passedByTool["ptdump"].first) + "/" +
                          std::to_string(passedByTool["ptdump"].second) + ", ptxed " +
                          std::to_string(passedByTool["ptxed"].first) + "/" +
                          std::to_string(passedByTool["ptxed"].second) + ")";
    std::cout << summary << "\n";
    // The known-unsupported ones, grouped by reason.
    std::map<std::string, std::vector<std::string>> byReason;
    for (const auto& [file, why] : kKnownUnsupported)
        byReason[why].push_back(file);
    for (const auto& [why, files] : byReason) {
        std::cout << "not reproduced (" << files.size() << "): " << why << ":\n";
        for (const std::string& file : files)
            std::cout << "  " << file << "\n";
    }
    EXPECT_TRUE(unexpectedFailures.empty())
        << summary << "; " << unexpectedFailures.size() << " unexpected failures";
    for (const std::string& file : unexpectedPasses)
        ADD_FAILURE() << file << " now passes: remove it from kKnownUnsupported";
}

// ---------------------------------------------------------------- dynamorio-hello

const std::vector<std::string> kHelloMachine = {
    "--cpu", "6/85/4",           "--mtc-freq", "3", "--nom-freq", "37", "--cpuid-0x15.eax",
    "2",     "--cpuid-0x15.ebx", "308"};

std::vector<std::string> helloArguments(std::vector<std::string> extra) {
    std::vector<std::string> args = kHelloMachine;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

// ptxed's lines without the disassembly column (XED's text, which auxscope does
// not produce): keep the leading 16-digit hex columns of instruction lines.
std::string withoutDisassembly(const std::string& text) {
    static const std::regex hex16("^[0-9a-f]{16}$");
    std::string out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '[') {
            out += line + "\n";
            continue;
        }
        std::vector<std::string> kept;
        for (const std::string& word : splitWords(line)) {
            if (!std::regex_match(word, hex16)) break;
            kept.push_back(word);
        }
        if (kept.empty()) {
            out += line + "\n";
            continue;
        }
        std::string joined;
        for (const std::string& word : kept)
            joined += (joined.empty() ? "" : "  ") + word;
        out += joined + "\n";
    }
    return out;
}

TEST(PtConformance, HelloPtdump) {
    std::string actual = runDecode(helloArguments({"--format", "packets", "--pt", kHelloDir + "/pt.bin"}));
    EXPECT_EQ(firstDifference(actual, readFile(kHelloDir + "/expected.ptdump.txt")), "");
}

TEST(PtConformance, HelloPtdumpLastIpTime) {
    std::string actual = runDecode(
        helloArguments({"--format", "packets", "--lastip", "--time", "--pt", kHelloDir + "/pt.bin"}));
    EXPECT_EQ(firstDifference(actual, readFile(kHelloDir + "/expected.ptdump-lastip-time.txt")), "");
}

TEST(PtConformance, HelloPtxed) {
    std::string actual = runDecode(
        helloArguments({"--format", "ptxed", "--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello"}));
    EXPECT_EQ(firstDifference(actual, withoutDisassembly(readFile(kHelloDir + "/expected.ptxed.txt"))), "");
}

TEST(PtConformance, HelloPtxedInsnDecoderTime) {
    std::string actual =
        runDecode(helloArguments({"--insn-decoder", "--time", "--event:time", "--stat", "--format", "ptxed",
                                  "--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello"}));
    EXPECT_EQ(
        firstDifference(actual, withoutDisassembly(readFile(kHelloDir + "/expected.ptxed-insn-time.txt"))),
        "");
}

// DynamoRIO's ground truth: exactly the 8 instructions of test_simple.templatex,
// at the offsets it lists from the first one.
TEST(PtConformance, HelloExactlyTheEightInstructions) {
    std::string templ = readFile(kHelloDir + "/test_simple.templatex");
    ASSERT_FALSE(templ.empty()) << kHelloDir << "/test_simple.templatex is missing";
    std::vector<uint64_t> offsets;
    static const std::regex offsetLine(R"(^ \\\+(\d+) )");
    std::istringstream in(templ);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, offsetLine)) offsets.push_back(std::stoull(m[1]));
    }
    std::smatch count;
    ASSERT_TRUE(std::regex_search(templ, count, std::regex(R"(Number of Instructions: (\d+))")));
    ASSERT_EQ(offsets.size(), std::stoull(count[1]));
    ASSERT_EQ(offsets.size(), 8u);

    for (const char* decoder : {"--block-decoder", "--insn-decoder"}) {
        auto request = parsePtDecodeArguments(helloArguments(
            {decoder, "--format", "ptxed", "--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello"}));
        ASSERT_TRUE(request) << request.error().message;
        std::ostringstream out;
        auto summary = runPtDecode(*request, out);
        ASSERT_TRUE(summary) << summary.error().message;
        EXPECT_FALSE(summary->hasErrors()) << out.str();
        EXPECT_EQ(summary->instructions, 8u) << decoder;
        std::vector<uint64_t> addresses;
        std::istringstream lines(out.str());
        for (std::string line; std::getline(lines, line);)
            if (!line.empty() && line[0] != '[') addresses.push_back(std::stoull(line, nullptr, 16));
        ASSERT_EQ(addresses.size(), 8u) << decoder << "\n" << out.str();
        for (size_t n = 0; n < 8; ++n)
            EXPECT_EQ(addresses[n] - addresses[0], offsets[n]) << decoder << ": instruction " << n;
        EXPECT_EQ(addresses[0], 0x401000u);
    }
}

// Packet counts come with the dump (compared later with perf report -D).
TEST(PtConformance, HelloPacketCounts) {
    auto request =
        parsePtDecodeArguments(helloArguments({"--format", "packets", "--quiet", kHelloDir + "/pt.bin"}));
    ASSERT_TRUE(request) << request.error().message;
    std::ostringstream out;
    auto summary = runPtDecode(*request, out);
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_EQ(out.str(), "");
    // Counted from expected.ptdump.txt: one line per packet.
    std::map<std::string, uint64_t> expected;
    std::istringstream lines(readFile(kHelloDir + "/expected.ptdump.txt"));
    uint64_t lineCount = 0;
    for (std::string line; std::getline(lines, line);) {
        auto words = splitWords(line);
        if (words.size() < 2 || line[0] == '[') continue;
        std::string name = words[1];
        if (name.rfind("mode.", 0) == 0) name = "mode";
        expected[name] += 1;
        lineCount += 1;
    }
    EXPECT_EQ(summary->packetCounts.total(), lineCount);
    for (int type = 0; type < static_cast<int>(PtPacketCounts::kTypes); ++type) {
        auto packetType = static_cast<pt_packet_type>(type);
        std::string name = ptPacketTypeName(packetType);
        EXPECT_EQ(summary->packetCounts[packetType], expected[name]) << name;
    }
}

TEST(PtConformance, SetupErrorsNameTheFile) {
    auto request = parsePtDecodeArguments({"--pt", "/nonexistent/trace.pt", "--format", "packets"});
    ASSERT_TRUE(request);
    std::ostringstream out;
    auto summary = runPtDecode(*request, out);
    ASSERT_FALSE(summary);
    EXPECT_NE(summary.error().message.find("/nonexistent/trace.pt"), std::string::npos)
        << summary.error().message;

    auto noImage = parsePtDecodeArguments({"--pt", kHelloDir + "/pt.bin"});
    ASSERT_TRUE(noImage);
    EXPECT_FALSE(runPtDecode(*noImage, out));

    auto badCpu = parsePtDecodeArguments({"--cpu", "6", kHelloDir + "/pt.bin"});
    ASSERT_FALSE(badCpu);
    EXPECT_NE(badCpu.error().message.find("family/model"), std::string::npos);

    auto badRaw = parsePtDecodeArguments({"--raw", "code.bin", kHelloDir + "/pt.bin"});
    ASSERT_FALSE(badRaw);
    EXPECT_NE(badRaw.error().message.find("load address"), std::string::npos);
}

}  // namespace

namespace {

// A perf-recorded Skylake trace (perf-intel_pt-skylake, no binaries): cpu 0's
// AUXTRACE buffer dumped packet by packet gives the per-type counts perf report
// -D shows for it (README of the data folder).
TEST(PtConformance, PerfDataSkylakeCpu0PacketCounts) {
    const std::string path = kDataDir + "/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14";
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    const PerfAuxtraceBuffer* cpu0 = nullptr;
    for (const PerfAuxtraceBuffer& buffer : file->summary().auxtrace)
        if (buffer.cpu == 0) cpu0 = &buffer;
    ASSERT_NE(cpu0, nullptr);
    ASSERT_EQ(cpu0->available, 12240u);
    std::span<const uint8_t> bytes = file->fileBytes(cpu0->dataOffset, cpu0->available);
    ASSERT_EQ(bytes.size(), 12240u);

    // The machine parameters come from the file itself, as the perf.data decode will take them.
    ASSERT_EQ(file->summary().auxtraceInfo.size(), 1u);
    auto info = decodeIntelPtInfo(file->summary().auxtraceInfo[0].priv);
    ASSERT_TRUE(info) << info.error().message;
    uint64_t attrConfig = 0;
    for (const PerfAttr& attr : file->attrs())
        if (attr.attr.type == info->pmuType) attrConfig = attr.attr.config;
    ASSERT_TRUE(file->features().cpuId) << "no HEADER_CPUID";
    PtConfigOptions machine = ptConfigFromPerf(*info, attrConfig, *file->features().cpuId);
    ASSERT_TRUE(machine.cpu);
    EXPECT_EQ(machine.cpu->family, 6);
    EXPECT_EQ(machine.cpu->model, 78);
    EXPECT_EQ(machine.cpu->stepping, 3);
    PtConfig config = makePtConfig(machine, bytes.data(), bytes.data() + bytes.size());
    PtPacketDumpOptions quiet;
    quiet.quiet = true;
    std::ostringstream out;
    auto dumped = dumpPtPackets(config, quiet, out);
    ASSERT_TRUE(dumped) << dumped.error().message;
    EXPECT_FALSE(dumped->hasErrors()) << out.str();
    EXPECT_EQ(dumped->counts.tnt(), 8242u);
    EXPECT_EQ(dumped->counts[ppt_tip], 505u);
    EXPECT_EQ(dumped->counts[ppt_mtc], 325u);
    EXPECT_EQ(dumped->counts[ppt_pip], 15u);
    EXPECT_EQ(dumped->counts[ppt_fup], 10u);
}

}  // namespace
