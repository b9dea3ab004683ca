// SPDX-License-Identifier: GPL-3.0-or-later
// Intel PT decode against libipt's own expectations: every ptdump/ptxed line
// of MANIFEST.tsv in ../shared/data/intel-pt/libipt-ptt-synthetic, run through
// parsePtDecodeArguments() + runPtDecode() (what `auxscope decode` runs), compared
// line by line with the .exp file, whitespace runs counting as one space as the
// suite's `diff -b` does, perf-event sideband (--pevent:*, --sb:*) included.
// Plus the real Skylake trace of dynamorio-hello with its sideband, and EVEX
// code in the block decoder's listing.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "TestData.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtDecodeRequest.h"

namespace {

using namespace auxscope;

// The shared test data: each test that reads it starts with AUXSCOPE_NEED_TEST_DATA().
const std::string kSyntheticDir = test_support::testDataPath("intel-pt/libipt-ptt-synthetic");
const std::string kHelloDir = test_support::testDataPath("intel-pt/dynamorio-hello");

// Runs a block with the working directory at `dir`, for decodes whose sideband
// names files relative to it (MMAP records, ptxed's diagnostics naming the .sb
// file as given), then goes back.
class WorkingDirectory {
public:
    explicit WorkingDirectory(const std::string& dir) : saved_(std::filesystem::current_path()) {
        std::filesystem::current_path(dir);
    }
    ~WorkingDirectory() { std::filesystem::current_path(saved_); }
    WorkingDirectory(const WorkingDirectory&) = delete;
    WorkingDirectory& operator=(const WorkingDirectory&) = delete;

private:
    std::filesystem::path saved_;
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

// The manifest's ptdump/ptxed command as `auxscope decode` arguments: trace and
// code files get the data directory in front, ptdump's --raw (raw packet bytes)
// is --raw-bytes, ptdump's positional trace file becomes --pt. Sideband files
// (--pevent:*) stay relative: they are read with the data directory as the
// working directory, as the suite's expectations name them.
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

// The data folder is there: so are the parts these tests read.
TEST(PtConformance, SharedDataIsComplete) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(std::filesystem::exists(kSyntheticDir + "/MANIFEST.tsv"))
        << kSyntheticDir << "/MANIFEST.tsv is missing";
    ASSERT_TRUE(std::filesystem::exists(kHelloDir + "/pt.bin")) << kHelloDir << " is missing";
}

TEST(PtConformance, LibiptSyntheticManifest) {
    AUXSCOPE_NEED_TEST_DATA();
    std::vector<Expectation> manifest = readManifest();
    ASSERT_EQ(manifest.size(), 715u) << "MANIFEST.tsv in " << kSyntheticDir << " is missing or incomplete";
    std::map<std::string, std::pair<int, int>> passedByTool;  // tool -> (passed, total)
    int passed = 0, withSideband = 0;
    std::vector<std::string> failures;
    for (const Expectation& row : manifest) {
        std::string actual;
        if (row.command.find("--pevent:") != std::string::npos) {
            withSideband += 1;
            WorkingDirectory inData(kSyntheticDir);
            actual = runDecode(toDecodeArguments(row.command, kSyntheticDir));
        } else {
            actual = runDecode(toDecodeArguments(row.command, kSyntheticDir));
        }
        std::string expected = readFile(kSyntheticDir + "/" + row.expectedFile);
        std::string difference = firstDifference(actual, expected);
        auto& [toolPassed, toolTotal] = passedByTool[row.tool];
        toolTotal += 1;
        if (difference.empty()) {
            passed += 1;
            toolPassed += 1;
        } else {
            failures.push_back(row.expectedFile);
            ADD_FAILURE() << row.expectedFile << " (" << row.command << ") differs at " << difference;
        }
    }
    EXPECT_EQ(withSideband, 22) << "the manifest's perf-event sideband rows";
    std::string summary = "libipt-ptt-synthetic: " + std::to_string(passed) + "/" +
                          std::to_string(manifest.size()) + " expectations pass (ptdump " +
                          std::to_string(passedByTool["ptdump"].first) + "/" +
                          std::to_string(passedByTool["ptdump"].second) + ", ptxed " +
                          std::to_string(passedByTool["ptxed"].first) + "/" +
                          std::to_string(passedByTool["ptxed"].second) + ")";
    std::cout << summary << "\n";
    EXPECT_EQ(passed, 715) << summary << "; " << failures.size() << " failures";
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
    AUXSCOPE_NEED_TEST_DATA();
    std::string actual = runDecode(helloArguments({"--format", "packets", "--pt", kHelloDir + "/pt.bin"}));
    EXPECT_EQ(firstDifference(actual, readFile(kHelloDir + "/expected.ptdump.txt")), "");
}

TEST(PtConformance, HelloPtdumpLastIpTime) {
    AUXSCOPE_NEED_TEST_DATA();
    std::string actual = runDecode(
        helloArguments({"--format", "packets", "--lastip", "--time", "--pt", kHelloDir + "/pt.bin"}));
    EXPECT_EQ(firstDifference(actual, readFile(kHelloDir + "/expected.ptdump-lastip-time.txt")), "");
}

TEST(PtConformance, HelloPtxed) {
    AUXSCOPE_NEED_TEST_DATA();
    std::string actual = runDecode(
        helloArguments({"--format", "ptxed", "--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello"}));
    EXPECT_EQ(firstDifference(actual, withoutDisassembly(readFile(kHelloDir + "/expected.ptxed.txt"))), "");
}

TEST(PtConformance, HelloPtxedInsnDecoderTime) {
    AUXSCOPE_NEED_TEST_DATA();
    std::string actual =
        runDecode(helloArguments({"--insn-decoder", "--time", "--event:time", "--stat", "--format", "ptxed",
                                  "--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello"}));
    EXPECT_EQ(
        firstDifference(actual, withoutDisassembly(readFile(kHelloDir + "/expected.ptxed-insn-time.txt"))),
        "");
}

// ptxed with the perf-event sideband perf recorded alongside. The command names
// the files before the --pevent:* values, so (as in ptxed) both files are read
// with the defaults: sample-type 0, which makes libipt 2.0.5 lose sync on the
// first record with samples in each. The flow itself is unaffected.
TEST(PtConformance, HelloPtxedSideband) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(std::filesystem::exists(kHelloDir + "/primary.sideband.pevent"));
    WorkingDirectory inData(kHelloDir);
    std::string actual = runDecode(helloArguments({"--format",
                                                   "ptxed",
                                                   "--pt",
                                                   "pt.bin",
                                                   "--elf",
                                                   "hello",
                                                   "--pevent:primary",
                                                   "primary.sideband.pevent",
                                                   "--pevent:secondary",
                                                   "secondary.sideband.pevent",
                                                   "--pevent:sample-type",
                                                   "0x10086",
                                                   "--pevent:time-shift",
                                                   "31",
                                                   "--pevent:time-mult",
                                                   "581029125",
                                                   "--pevent:time-zero",
                                                   "18444502336406842448",
                                                   "--pevent:sysroot",
                                                   ".",
                                                   "--sb:compact",
                                                   "--sb:time"}));
    EXPECT_EQ(
        firstDifference(actual, withoutDisassembly(readFile(kHelloDir + "/expected.ptxed-sideband.txt"))),
        "");
}

// The same sideband read as perf wrote it (the --pevent:* values first): the
// records are time-correlated with the trace, ITRACE_START starts process
// 0x36af7, its COMM.EXEC gives it a new image which the MMAP2 of /hello fills
// (under --pevent:sysroot), and the decoder switches to it in the kernel between
// exec and the first user instruction. No --elf: the code comes from sideband alone.
TEST(PtConformance, HelloSidebandBuildsTheProcessImage) {
    AUXSCOPE_NEED_TEST_DATA();
    WorkingDirectory inData(kHelloDir);
    auto request = parsePtDecodeArguments(
        helloArguments({"--pt", "pt.bin", "--pevent:sample-type", "0x10086", "--pevent:time-shift", "31",
                        "--pevent:time-mult", "581029125", "--pevent:time-zero", "18444502336406842448",
                        "--pevent:sysroot", ".", "--pevent:primary", "primary.sideband.pevent",
                        "--pevent:secondary", "secondary.sideband.pevent", "--sb:compact", "--sb:switch"}));
    ASSERT_TRUE(request) << request.error().message;
    std::ostringstream out;
    auto summary = runPtDecode(*request, out);
    ASSERT_TRUE(summary) << summary.error().message;
    EXPECT_FALSE(summary->hasErrors()) << out.str();
    EXPECT_EQ(summary->instructions, 8u) << out.str();
    const std::string text = out.str();
    // Shown in time order: the exec and the mapping come before the first instruction.
    size_t exec = text.find("PERF_RECORD_COMM.EXEC  36af7/36af7, hello");
    size_t mmap = text.find("PERF_RECORD_MMAP2  36af7/36af7, 401000, 1000, 1000,");
    size_t context = text.find("[context: pid-36af7]", mmap);
    size_t first = text.find("0000000000401000\n");
    ASSERT_NE(exec, std::string::npos) << text;
    ASSERT_NE(mmap, std::string::npos) << text;
    ASSERT_NE(context, std::string::npos) << text;
    EXPECT_LT(exec, mmap);
    EXPECT_LT(context, first);
    // [vdso] without --pevent:vdso-x64 is the one complaint, as in ptxed.
    EXPECT_NE(text.find("[primary.sideband.pevent:0000000000000100 sideband error: bad configuration]"),
              std::string::npos)
        << text;
}

// DynamoRIO's ground truth: exactly the 8 instructions of test_simple.templatex,
// at the offsets it lists from the first one.
TEST(PtConformance, HelloExactlyTheEightInstructions) {
    AUXSCOPE_NEED_TEST_DATA();
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
    AUXSCOPE_NEED_TEST_DATA();
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

    // Refused while parsing: the trace named is never opened.
    auto badShift = parsePtDecodeArguments({"--pevent:time-shift", "0x10000", kHelloDir + "/pt.bin"});
    ASSERT_FALSE(badShift);
    EXPECT_NE(badShift.error().message.find("--pevent:time-shift 0x10000"), std::string::npos)
        << badShift.error().message;

    auto badCpu = parsePtDecodeArguments({"--cpu", "6", kHelloDir + "/pt.bin"});
    ASSERT_FALSE(badCpu);
    EXPECT_NE(badCpu.error().message.find("family/model"), std::string::npos);

    auto badRaw = parsePtDecodeArguments({"--raw", "code.bin", kHelloDir + "/pt.bin"});
    ASSERT_FALSE(badRaw);
    EXPECT_NE(badRaw.error().message.find("load address"), std::string::npos);
}

// On a real trace: no image to decode against, and a sideband file that is not there.
TEST(PtConformance, SetupErrorsOnTheHelloTrace) {
    AUXSCOPE_NEED_TEST_DATA();
    std::ostringstream out;
    auto noImage = parsePtDecodeArguments({"--pt", kHelloDir + "/pt.bin"});
    ASSERT_TRUE(noImage);
    EXPECT_FALSE(runPtDecode(*noImage, out));

    auto noSideband = parsePtDecodeArguments({"--pt", kHelloDir + "/pt.bin", "--elf", kHelloDir + "/hello",
                                              "--pevent:primary", "/nonexistent/x.sb"});
    ASSERT_TRUE(noSideband) << noSideband.error().message;
    auto sidebandRun = runPtDecode(*noSideband, out);
    ASSERT_FALSE(sidebandRun);
    EXPECT_NE(sidebandRun.error().message.find("/nonexistent/x.sb"), std::string::npos)
        << sidebandRun.error().message;
}

}  // namespace

namespace {

// A perf-recorded Skylake trace (perf-intel_pt-skylake, no binaries): cpu 0's
// AUXTRACE buffer dumped packet by packet gives the per-type counts perf report
// -D shows for it (README of the data folder).
TEST(PtConformance, PerfDataSkylakeCpu0PacketCounts) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string path =
        test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
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

namespace {

// ---------------------------------------------------------------- EVEX in a block

// A trace made with libipt's own encoder.
std::vector<uint8_t> encodePt(std::vector<pt_packet> packets) {
    std::vector<uint8_t> buffer(256);
    pt_config config;
    pt_config_init(&config);
    config.begin = buffer.data();
    config.end = buffer.data() + buffer.size();
    pt_encoder* encoder = pt_alloc_encoder(&config);
    EXPECT_NE(encoder, nullptr);
    if (!encoder) return {};
    for (pt_packet& packet : packets)
        EXPECT_GT(pt_enc_next(encoder, &packet), 0) << "packet type " << packet.type;
    uint64_t size = 0;
    EXPECT_EQ(pt_enc_get_offset(encoder, &size), 0);
    pt_free_encoder(encoder);
    buffer.resize(size);
    return buffer;
}

pt_packet packet(pt_packet_type type) {
    pt_packet p;
    std::memset(&p, 0, sizeof p);
    p.type = type;
    return p;
}

pt_packet ipPacket(pt_packet_type type, pt_ip_compression ipc, uint64_t ip) {
    pt_packet p = packet(type);
    p.payload.ip.ipc = ipc;
    p.payload.ip.ip = ip;
    return p;
}

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// glibc picks __strlen_evex & co. on AVX-512 machines, so real traces run
// through EVEX code, which capstone 4 cannot decode. The block listing takes
// instruction boundaries from libipt: both decoders must list the same
// instructions, the EVEX ones and the direct jump the block follows included.
// The code is only decoded, never run: the CPU need not know AVX-512.
TEST(PtInsnFlow, EvexInstructionsInsideABlock) {
    // Checked with objdump -D -b binary -m i386:x86-64 --adjust-vma=0x1000.
    const std::vector<uint8_t> code = {
        0x90,                                // 1000: nop
        0x62, 0xf1, 0x7d, 0x48, 0x74, 0x0f,  // 1001: vpcmpeqb k1, zmm0, [rdi]   (EVEX)
        0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x16,  // 1007: vmovdqu64 zmm2, [rsi]      (EVEX)
        0xeb, 0x01,                          // 100d: jmp 1010
        0xcc,                                // 100f: int3 (jumped over)
        0x90,                                // 1010: nop
        0xf4,                                // 1011: hlt (tracing stops here)
    };
    pt_packet exec = packet(ppt_mode);
    exec.payload.mode.leaf = pt_mol_exec;
    exec.payload.mode.bits.exec.csl = 1;
    const std::vector<uint8_t> trace =
        encodePt({packet(ppt_psb), exec, ipPacket(ppt_fup, pt_ipc_sext_48, 0x1000), packet(ppt_psbend),
                  ipPacket(ppt_fup, pt_ipc_update_16, 0x1011), ipPacket(ppt_tip_pgd, pt_ipc_suppressed, 0)});
    ASSERT_FALSE(trace.empty());
    const std::string dir = testing::TempDir();
    writeFile(dir + "/evex-code.bin", code);
    writeFile(dir + "/evex.pt", trace);

    const std::string expected =
        "0000000000001000\n0000000000001001\n0000000000001007\n000000000000100d\n0000000000001010\n[disabled]"
        "\n";
    for (const char* decoder : {"--block-decoder", "--insn-decoder"}) {
        auto request = parsePtDecodeArguments({decoder, "--check", "--pt", dir + "/evex.pt", "--raw",
                                               dir + "/evex-code.bin:0x1000", "--cpu", "6/85/4"});
        ASSERT_TRUE(request) << request.error().message;
        std::ostringstream out;
        auto summary = runPtDecode(*request, out);
        ASSERT_TRUE(summary) << summary.error().message;
        EXPECT_EQ(out.str(), expected) << decoder;
        EXPECT_FALSE(summary->hasErrors()) << decoder << "\n" << out.str();
        EXPECT_EQ(summary->instructions, 5u) << decoder;
    }
}

}  // namespace
