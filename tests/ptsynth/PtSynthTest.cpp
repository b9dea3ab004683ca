// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-ptsynth end to end: Intel PT synthesized from real execution (ptrace
// single-step of small programs) and from generated programs must decode, with
// perf script (an independent decoder) and with auxscope's own libipt-based
// decoder, to exactly the instructions that ran.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <streambuf>
#include <string>
#include <vector>

#include "AuxtraceInfo.h"
#include "PerfDataReader.h"
#include "PtConfig.h"
#include "PtInsnFlow.h"
#include "PtSynthTruth.h"

using namespace auxscope;
using namespace auxscope::ptsynth;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        char tmpl[] = "/tmp/auxscope-ptsynth-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir() {
        std::error_code ec;
        if (!::testing::Test::HasFailure()) fs::remove_all(path, ec);
    }
};

// Runs a shell command; returns its exit status and stdout+stderr.
int run(const std::string& command, std::string* output = nullptr) {
    FILE* p = popen((command + " 2>&1").c_str(), "r");
    if (!p) return -1;
    std::string text;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, p)) > 0)
        text.append(buffer, n);
    const int status = pclose(p);
    if (output) *output = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ptsynth() {
    return AUXSCOPE_PTSYNTH;
}

// Synthesizes OUT from the given arguments; fails the test on a non-zero exit.
Truth synthesize(const std::string& args, const fs::path& out) {
    std::string log;
    const int status = run(ptsynth() + " -q -o " + out.string() + " " + args, &log);
    EXPECT_EQ(status, 0) << log;
    auto truth = Truth::read(out.string() + ".truth");
    EXPECT_TRUE(truth.ok()) << (truth.ok() ? "" : truth.error().message);
    return truth.ok() ? std::move(truth.value()) : Truth{};
}

// perf script's instruction list (--itrace=i1i: one sample per instruction).
// Lines that are not an address (decode errors from the `e` option) go to `errors`.
bool perfIps(const fs::path& file, std::vector<uint64_t>& ips, std::vector<std::string>& errors) {
    if (run("perf version") != 0) return false;
    FILE* p = popen(("perf script -i " + file.string() + " --itrace=i1ie -F ip 2>&1").c_str(), "r");
    if (!p) return false;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char* end = nullptr;
        const char* s = line;
        while (*s == ' ')
            ++s;
        const uint64_t ip = std::strtoull(s, &end, 16);
        if (end != s && (*end == '\n' || *end == ' ' || *end == 0))
            ips.push_back(ip);
        else
            errors.push_back(line);
    }
    pclose(p);
    return true;
}

// Receives the instruction flow as decodePtInsnFlow prints it and keeps what the
// tests compare, line by line (a generated trace has millions of lines).
class FlowSink : public std::streambuf {
public:
    bool keepIps = true;
    std::vector<uint64_t> ips;
    uint64_t count = 0;
    uint64_t hash = kTruthHashSeed;
    std::map<uint64_t, uint64_t> entries;  // address -> executions, for the addresses asked about
    std::vector<std::string> other;        // event and error lines

protected:
    int overflow(int c) override {
        if (c == EOF) return 0;
        if (c == '\n')
            line();
        else
            line_.push_back(char(c));
        return c;
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        for (std::streamsize i = 0; i < n; ++i)
            overflow(static_cast<unsigned char>(s[i]));
        return n;
    }

private:
    void line() {
        if (line_.size() == 16 && line_.find_first_not_of("0123456789abcdef") == std::string::npos) {
            const uint64_t ip = std::strtoull(line_.c_str(), nullptr, 16);
            ++count;
            hash = truthHashStep(hash, ip);
            if (keepIps) ips.push_back(ip);
            auto it = entries.find(ip);
            if (it != entries.end()) ++it->second;
        } else if (other.size() < 1000) {
            other.push_back(line_);
        }
        line_.clear();
    }
    std::string line_;
};

// auxscope's decoder over the file's AUXTRACE data, with the machine
// parameters from its AUXTRACE_INFO, intel_pt attr and CPUID feature, and the
// code from the files the truth's mappings name (mapped as mmap would).
void decodeOurs(const fs::path& file, const Truth& truth, FlowSink& sink, PtInsnFlowResult& result,
                PtInsnFlowOptions::Decoder decoder) {
    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_FALSE(reader->hasErrors()) << reader->issues().front().message;
    const auto& summary = reader->summary();
    ASSERT_EQ(summary.auxtraceInfo.size(), 1u);
    auto info = decodeIntelPtInfo(summary.auxtraceInfo[0].priv);
    ASSERT_TRUE(info.ok()) << info.error().message;
    uint64_t config = 0;
    for (const auto& a : reader->attrs())
        if (a.attr.type == info->pmuType) config = a.attr.config;
    ASSERT_NE(config, 0u) << "no intel_pt attr";
    ASSERT_TRUE(reader->features().cpuId.has_value());
    EXPECT_EQ(*reader->features().cpuId, "GenuineIntel,6,85,4");
    std::vector<uint8_t> trace;
    auto buffers = summary.auxtrace;
    std::sort(buffers.begin(), buffers.end(), [](auto& a, auto& b) { return a.auxOffset < b.auxOffset; });
    for (const auto& b : buffers) {
        ASSERT_EQ(b.cpu, 0);
        ASSERT_EQ(b.size, b.available);
        auto bytes = reader->fileBytes(b.dataOffset, b.size);
        trace.insert(trace.end(), bytes.begin(), bytes.end());
    }
    ASSERT_FALSE(trace.empty());
    const PtConfigOptions options = ptConfigFromPerf(*info, config, *reader->features().cpuId);
    ASSERT_TRUE(options.cpu.has_value());
    const PtConfig ptConfig = makePtConfig(options, trace.data(), trace.data() + trace.size());
    EXPECT_EQ(ptConfig.errataError, 0);
    PtImage image;
    for (const auto& m : truth.maps) {
        if (m.path.empty() || m.path[0] != '/') continue;  // [vdso], [vsyscall]
        std::error_code ec;
        const uint64_t size = fs::file_size(m.path, ec);
        ASSERT_FALSE(ec) << m.path;
        if (m.pgoff >= size) continue;
        auto r = image.addRaw(m.path, m.start, m.pgoff, std::min(m.end - m.start, size - m.pgoff));
        ASSERT_TRUE(r.ok()) << r.error().message;
    }
    std::ostream out(&sink);
    PtInsnFlowOptions flow;
    flow.decoder = decoder;
    auto decoded = decodePtInsnFlow(ptConfig, image, flow, out);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    result = std::move(decoded.value());
}

std::string describe(const std::vector<uint64_t>& got, const std::vector<uint64_t>& want) {
    size_t i = 0;
    while (i < got.size() && i < want.size() && got[i] == want[i])
        ++i;
    char text[200];
    std::snprintf(text, sizeof text, "%zu vs %zu instructions, first difference at #%zu: 0x%llx vs 0x%llx",
                  got.size(), want.size(), i, i < got.size() ? (unsigned long long)got[i] : 0ull,
                  i < want.size() ? (unsigned long long)want[i] : 0ull);
    return text;
}

// Both decoders must give exactly the truth's instruction list. glibc on this
// machine runs AVX-512 (EVEX) string functions, which capstone 4 cannot
// disassemble: the block decoder's instruction listing needs it, so real
// programs are decoded with libipt's instruction decoder (which needs nothing
// but libipt); generated programs use the block decoder.
void expectDecodersAgree(const fs::path& file, const Truth& truth,
                         PtInsnFlowOptions::Decoder decoder = PtInsnFlowOptions::Decoder::Instruction) {
    ASSERT_FALSE(truth.ips.empty());
    ASSERT_EQ(truth.ips.size(), truth.instructions);

    std::vector<uint64_t> perf;
    std::vector<std::string> perfErrors;
    if (perfIps(file, perf, perfErrors)) {
        EXPECT_TRUE(perfErrors.empty()) << perfErrors.front();
        EXPECT_TRUE(perf == truth.ips) << "perf script: " << describe(perf, truth.ips);
    } else {
        ADD_FAILURE() << "perf is not installed (Debian: linux-perf): the independent oracle is missing";
    }

    FlowSink sink;
    PtInsnFlowResult result;
    decodeOurs(file, truth, sink, result, decoder);
    EXPECT_FALSE(result.hasErrors()) << (result.issues.empty() ? "" : result.issues.front().what);
    EXPECT_TRUE(sink.ips == truth.ips) << "decodePtInsnFlow: " << describe(sink.ips, truth.ips);
    EXPECT_EQ(sink.hash, truth.hash);
}

// perf's call and return branches (--itrace=b) must be the truth's call and
// ret events, in order, at times that lag the truth's TSC by at most about one
// MTC period (perf times instructions between timing packets by estimate).
void expectPerfBranchesMatchEvents(const fs::path& file, const Truth& truth) {
    if (run("perf version") != 0) return;  // expectDecodersAgree reports it
    FILE* p = popen(
        ("perf script -i " + file.string() + " --itrace=b -F flags,ip,addr,time --ns 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    struct Branch {
        uint64_t time, from, to;
        bool call;
    };
    std::vector<Branch> perf;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        unsigned long long sec = 0, ns = 0, from = 0, to = 0;
        char kind[32];
        if (std::sscanf(line, " %llu.%llu: %31s %llx => %llx", &sec, &ns, kind, &from, &to) != 5) continue;
        const std::string k = kind;
        if (k == "call" || k == "return") perf.push_back({sec * 1000000000ull + ns, from, to, k == "call"});
    }
    pclose(p);
    std::vector<TruthEvent> want;
    for (const auto& e : truth.events)
        if (e.kind == TruthEvent::Kind::Call || e.kind == TruthEvent::Kind::Ret) want.push_back(e);
    ASSERT_EQ(perf.size(), want.size());
    const int64_t mtcPeriod = (1 << 3) * 308 / 2;  // TSC ticks per MTC (mtc_period 3, TSC:CTC 308/2)
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(perf[i].call, want[i].kind == TruthEvent::Kind::Call) << "branch #" << i;
        ASSERT_EQ(perf[i].from, want[i].from) << "branch #" << i;
        ASSERT_EQ(perf[i].to, want[i].to) << "branch #" << i;
        // perf time == TSC (TIME_CONV: one tick per nanosecond, time_zero 0).
        const int64_t lag = int64_t(want[i].tsc) - int64_t(perf[i].time);
        ASSERT_GE(lag, -200) << "branch #" << i;
        ASSERT_LE(lag, 2 * mtcPeriod) << "branch #" << i;
    }
}

// ---------------------------------------------------------------- step mode

TEST(PtSynthStep, StaticProgramFromItsFirstInstruction) {
    TempDir dir;
    // Small PSB period and chunks: many PSB+ (FUP, return stack reset) and
    // several AUXTRACE records, each starting at a PSB.
    const Truth truth =
        synthesize("--max-insns 30000 --psb-period 256 --chunk 1024 -- " AUXSCOPE_PTSYNTH_FIB " 10",
                   dir.path / "fib.data");
    EXPECT_EQ(truth.instructions, 30000u);
    EXPECT_EQ(truth.mode, "step");
    EXPECT_GT(truth.syscalls, 0u);  // glibc's start-up makes system calls
    expectDecodersAgree(dir.path / "fib.data", truth);
    expectPerfBranchesMatchEvents(dir.path / "fib.data", truth);
}

TEST(PtSynthStep, RecursionFromMainToExit) {
    TempDir dir;
    const Truth truth =
        synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_FIB " 12", dir.path / "fib.data");
    ASSERT_LT(truth.instructions, 30000u) << "fib(12) should end well within the limit";
    // fib(12) makes 2 * fib(13) - 1 = 465 calls of fib, each entered at one address.
    std::map<uint64_t, uint64_t> callsTo;
    for (const auto& e : truth.events)
        if (e.kind == TruthEvent::Kind::Call) ++callsTo[e.to];
    uint64_t most = 0;
    for (auto& [to, n] : callsTo)
        most = std::max(most, n);
    EXPECT_EQ(most, 465u);
    // Events are TSC-ordered.
    for (size_t i = 1; i < truth.events.size(); ++i)
        ASSERT_LE(truth.events[i - 1].tsc, truth.events[i].tsc);
    expectDecodersAgree(dir.path / "fib.data", truth);
}

TEST(PtSynthStep, RecursionWithoutReturnCompression) {
    TempDir dir;
    const Truth truth = synthesize("--noretcomp --start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_FIB " 9",
                                   dir.path / "fib.data");
    auto reader = PerfDataReader::open((dir.path / "fib.data").string());
    ASSERT_TRUE(reader.ok());
    bool noretcomp = false;
    for (const auto& a : reader->attrs())
        if (a.attr.type == 10) noretcomp = a.attr.config & (1u << 11);
    EXPECT_TRUE(noretcomp) << "the intel_pt config must say noretcomp";
    expectDecodersAgree(dir.path / "fib.data", truth);
}

TEST(PtSynthStep, JumpTableAndFunctionPointers) {
    TempDir dir;
    const Truth truth = synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_SWITCH " 200",
                                   dir.path / "switch.data");
    ASSERT_LT(truth.instructions, 30000u);
    EXPECT_GE(truth.calls, 400u);  // dispatch + one pointer call per round
    expectDecodersAgree(dir.path / "switch.data", truth);
}

TEST(PtSynthStep, SignalHandlers) {
    TempDir dir;
    const Truth truth =
        synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_SIGNALS, dir.path / "signals.data");
    EXPECT_EQ(truth.signals, 4u);
    size_t signalEvents = 0;
    for (const auto& e : truth.events)
        signalEvents += e.kind == TruthEvent::Kind::Signal;
    EXPECT_EQ(signalEvents, 4u);
    expectDecodersAgree(dir.path / "signals.data", truth);
    expectPerfBranchesMatchEvents(dir.path / "signals.data", truth);
}

TEST(PtSynthStep, DynamicallyLinkedCallsIntoLibc) {
    TempDir dir;
    const Truth truth =
        synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_DYNAMIC, dir.path / "dynamic.data");
    bool libc = false;
    for (const auto& m : truth.maps)
        libc = libc || m.path.find("libc.so") != std::string::npos;
    EXPECT_TRUE(libc);
    expectDecodersAgree(dir.path / "dynamic.data", truth);
}

TEST(PtSynthStep, DynamicLinkerMapsLibcWhileTraced) {
    TempDir dir;
    // From exec: ld.so maps libc in the middle of the trace (MMAP2 then, and a
    // TSC before the TIP.PGE that follows, so perf applies the map in time).
    const Truth truth =
        synthesize("--max-insns 30000 -- " AUXSCOPE_PTSYNTH_DYNAMIC, dir.path / "dynamic.data");
    ASSERT_FALSE(truth.maps.empty());
    expectDecodersAgree(dir.path / "dynamic.data", truth);
}

TEST(PtSynthStep, MissingCommandIsAnError) {
    TempDir dir;
    std::string log;
    EXPECT_NE(run(ptsynth() + " -o " + (dir.path / "x.data").string() + " -- /nonexistent/program", &log), 0);
    EXPECT_NE(log.find("cannot run '/nonexistent/program'"), std::string::npos) << log;
}

// ---------------------------------------------------------------- generator mode

TEST(PtSynthGenerate, OneMegabyteDecodesToTheTruthSummary) {
    TempDir dir;
    const fs::path file = dir.path / "gen.data";
    const Truth truth = synthesize("--generate 1 --seed 7", file);
    ASSERT_GT(truth.instructions, 100000u);
    ASSERT_TRUE(truth.ips.empty());  // summary only
    ASSERT_FALSE(truth.functions.empty());
    EXPECT_TRUE(fs::exists(dir.path / "gen-code.elf"));

    FlowSink sink;
    sink.keepIps = false;
    for (const auto& f : truth.functions)
        sink.entries[f.entry] = 0;
    PtInsnFlowResult result;
    decodeOurs(file, truth, sink, result, PtInsnFlowOptions::Decoder::Block);
    EXPECT_FALSE(result.hasErrors()) << (result.issues.empty() ? "" : result.issues.front().what);
    EXPECT_EQ(sink.count, truth.instructions);
    EXPECT_EQ(sink.hash, truth.hash);
    uint64_t called = 0;
    for (const auto& f : truth.functions) {
        EXPECT_EQ(sink.entries[f.entry], f.calls) << f.name;
        called += f.calls > 0;
    }
    EXPECT_GT(called, truth.functions.size() / 4) << "the walk should reach many functions";

    // perf, the independent decoder, over the same millions of instructions.
    if (run("perf version") != 0) return;
    FILE* p = popen(("perf script -i " + file.string() + " --itrace=i1ie -F ip 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    uint64_t count = 0, hash = kTruthHashSeed, other = 0;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        char* end = nullptr;
        const uint64_t ip = std::strtoull(line, &end, 16);
        if (end != line && *end == '\n') {
            ++count;
            hash = truthHashStep(hash, ip);
        } else {
            ++other;
        }
    }
    pclose(p);
    EXPECT_EQ(other, 0u) << "perf reported decode errors";
    EXPECT_EQ(count, truth.instructions);
    EXPECT_EQ(hash, truth.hash);
}

TEST(PtSynthGenerate, PerfAgreesInstructionByInstruction) {
    TempDir dir;
    const fs::path file = dir.path / "gen.data";
    const Truth truth = synthesize("--generate 1 --seed 11 --max-insns 100000 --truth-list", file);
    EXPECT_EQ(truth.instructions, 100000u);
    expectDecodersAgree(file, truth, PtInsnFlowOptions::Decoder::Block);
}

TEST(PtSynthGenerate, UncompressedReturnsNoMtcFrequentPsb) {
    TempDir dir;
    const fs::path file = dir.path / "gen.data";
    const Truth truth = synthesize(
        "--generate 1 --seed 13 --max-insns 50000 --truth-list --noretcomp --no-mtc --psb-period 128", file);
    expectDecodersAgree(file, truth, PtInsnFlowOptions::Decoder::Block);
}

// The generated program is real code: running it under single-step takes the
// path the generator walked.
TEST(PtSynthGenerate, GeneratedProgramRunsTheSamePath) {
    TempDir dir;
    const Truth walked = synthesize("--generate 1 --seed 5 --max-insns 20000", dir.path / "gen.data");
    const Truth stepped =
        synthesize("--max-insns 20000 -- " + (dir.path / "gen-code.elf").string(), dir.path / "step.data");
    EXPECT_EQ(walked.instructions, 20000u);
    EXPECT_EQ(stepped.instructions, 20000u);
    EXPECT_EQ(walked.hash, stepped.hash);
    EXPECT_EQ(walked.calls, stepped.calls);
    EXPECT_EQ(walked.returns, stepped.returns);
}

}  // namespace
