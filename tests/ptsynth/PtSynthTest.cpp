// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-ptsynth end to end: Intel PT synthesized from real execution (ptrace
// single-step of small programs) and from generated programs must decode, with
// perf script (an independent decoder) and with auxscope's own libipt-based
// decoder, to exactly the instructions that ran.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "PtSynthTruth.h"
#include "TestSupport.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtConfig.h"
#include "pt/PtInsnFlow.h"
#include "pt/PtSpanDecoder.h"
#include "pt/PtTraceSource.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"

using namespace auxscope;
using namespace auxscope::ptsynth;
namespace fs = std::filesystem;

namespace {

using test_support::TempDir;

// Runs a shell command; returns its exit status and stdout+stderr.
int run(const std::string& command, std::string* output = nullptr) {
    return test_support::runCommand(command, output, true);
}

std::string ptsynth() {
    return AUXSCOPE_PTSYNTH;
}

// Synthesizes OUT from the given arguments; fails the test on a non-zero exit.
// The program runs with a small fixed environment: what a stepped program does in
// its first instructions depends on the environment's size (a static glibc's
// __tunables_init walks every variable before the first system call; with 50
// more variables than a login shell has, the first 30,000 instructions of
// ptsynth_prog_fib made no system call at all), so a truth must not depend on
// the environment the suite happens to run in.
Truth synthesize(const std::string& args, const fs::path& out) {
    std::string log;
    const int status =
        run("env -i PATH=/usr/local/bin:/usr/bin:/bin " + ptsynth() + " -q -o " + out.string() + " " + args,
            &log);
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
// The span decode's two ways through the flow -- the flow walker over
// libipt's query decoder (pt/PtFlowWalker.h) and libipt's block decoder -- give
// the same spans (times, depths, instruction counts, functions, gaps), whole
// and in a window, cut into many small segments (each ends at the next one's
// PSB+); and the walker decoded every segment itself, none handed back.
void expectSpanDecodersAgree(const fs::path& file) {
    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto lines = [&](bool walker, bool windowed, DecodeStats& stats) {
        PtSessionOptions options;
        options.flowWalker = walker;
        options.segmentBytes = 512;
        auto session = PtSession::open(*reader, options);
        std::vector<std::string> out;
        if (!session) {
            ADD_FAILURE() << session.error().message;
            return out;
        }
        DecodeWindow window;
        if (windowed) {
            uint64_t begin = UINT64_MAX, end = 0;
            for (const auto& seg : (*session)->segments())
                if (seg.startTime) begin = std::min(begin, seg.startTime), end = std::max(end, seg.endTime);
            window.begin = begin + (end - begin) / 3;
            window.end = begin + (end - begin) / 3 * 2;
        }
        DecodedSpans result = (*session)->decodeSpans(window, 2);
        stats = result.stats;
        for (const auto& [tid, store] : result.threads)
            for (size_t i = 0; i < store.size(); ++i) {
                const Span sp = store.at(i);
                out.push_back(std::to_string(tid) + " " + std::to_string(sp.start) + " " +
                              std::to_string(sp.end) + " " + std::to_string(sp.depth) + " " +
                              std::to_string(sp.instructions) + " " +
                              (sp.isGap() ? "gap " + store.gaps()[size_t(sp.gap)].detail
                                          : (*session)->functions()[sp.function].name));
            }
        return out;
    };
    for (bool windowed : {false, true}) {
        SCOPED_TRACE(windowed ? "the middle third" : "whole");
        DecodeStats walked, blocked;
        const std::vector<std::string> walker = lines(true, windowed, walked);
        const std::vector<std::string> block = lines(false, windowed, blocked);
        ASSERT_FALSE(block.empty());
        EXPECT_GE(walked.segments, 1u);
        EXPECT_EQ(walked.segmentsRedecoded, 0u) << "the walker handed segments back";
        EXPECT_EQ(walked.instructions, blocked.instructions);
        EXPECT_EQ(walker.size(), block.size());
        for (size_t i = 0; i < std::min(walker.size(), block.size()); ++i)
            if (walker[i] != block[i]) {
                ADD_FAILURE() << "span " << i << ": walker " << walker[i] << ", block decoder " << block[i];
                break;
            }
    }
}

void expectDecodersAgree(const fs::path& file, const Truth& truth,
                         PtInsnFlowOptions::Decoder decoder = PtInsnFlowOptions::Decoder::Instruction) {
    expectSpanDecodersAgree(file);
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
// ret events, in order, at times within about one MTC period of the truth's TSC
// (perf times instructions between timing packets by estimate).
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
        // perf's estimate between timing packets also runs ahead of the
        // truth at times (244 ticks seen under load): within one MTC period.
        ASSERT_GE(lag, -mtcPeriod) << "branch #" << i;
        ASSERT_LE(lag, 2 * mtcPeriod) << "branch #" << i;
    }
}

// ---------------------------------------------------------------- call trees

// One frame of a call tree: the function (the executable's symbol, argument
// list cut off; "" elsewhere) and its depth relative to the first frame of
// `anchor`.
struct TreeFrame {
    std::string name;
    int32_t depth = 0;
    auto operator<=>(const TreeFrame&) const = default;
};

std::string baseName(std::string name) {
    const size_t paren = name.find('(');
    if (paren != std::string::npos) name.resize(paren);
    return name;
}

// The text symbols of `exe` (nm), at the addresses its truth mapping puts them.
std::map<uint64_t, std::pair<uint64_t, std::string>> exeSymbols(const std::string& exe, const Truth& truth) {
    std::map<uint64_t, std::pair<uint64_t, std::string>> symbols;  // start -> end, name
    uint64_t bias = 0;
    for (const auto& m : truth.maps)
        if (m.path == exe) bias = m.start - m.pgoff;  // PIE: text's vaddr equals its file offset
    std::string text;
    EXPECT_EQ(run("nm -C --defined-only -S " + exe, &text), 0) << text;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t eol = std::min(text.find('\n', pos), text.size());
        const std::string line = text.substr(pos, eol - pos);
        pos = eol + 1;
        unsigned long long value = 0, size = 0;
        char type = 0;
        int name = 0;
        if (std::sscanf(line.c_str(), "%llx %llx %c %n", &value, &size, &type, &name) == 3 &&
            (type == 't' || type == 'T') && size > 0)
            symbols[bias + value] = {bias + value + size, baseName(line.substr(name))};
    }
    return symbols;
}

// The truth's call tree, from its instruction list and call/ret events alone:
// a call opens a frame; a return closes the frame whose call instruction
// precedes the return address (and every frame above it); control entering a
// function of the executable that is further down the stack without a call or
// return (the unwinder's jump to a landing pad) closes the frames above it; a
// return past the first frame opens its caller one level further out. Frames
// are listed in the order they opened.
std::vector<TreeFrame> truthCallTree(const std::string& exe, const Truth& truth, int32_t* maxDepth) {
    const auto symbols = exeSymbols(exe, truth);
    auto nameOf = [&](uint64_t ip) -> std::string {
        auto it = symbols.upper_bound(ip);
        if (it == symbols.begin()) return "";
        --it;
        return ip < it->second.first ? it->second.second : "";
    };
    struct Open {
        size_t index;       // in `frames`
        uint64_t callSite;  // the call instruction that opened it (0: not seen)
    };
    std::vector<TreeFrame> frames{{nameOf(truth.ips.front()), 0}};
    std::vector<Open> stack{{0, 0}};
    *maxDepth = 0;
    size_t next = 0;  // the next call/ret event
    auto isCallOrRet = [](const TruthEvent& e) {
        return e.kind == TruthEvent::Kind::Call || e.kind == TruthEvent::Kind::Ret;
    };
    while (next < truth.events.size() && !isCallOrRet(truth.events[next]))
        ++next;
    for (size_t i = 0; i + 1 < truth.ips.size(); ++i) {
        const uint64_t from = truth.ips[i], to = truth.ips[i + 1];
        if (next < truth.events.size() && truth.events[next].from == from && truth.events[next].to == to) {
            const TruthEvent& e = truth.events[next];
            do
                ++next;
            while (next < truth.events.size() && !isCallOrRet(truth.events[next]));
            if (e.kind == TruthEvent::Kind::Call) {
                frames.push_back({nameOf(to), frames[stack.back().index].depth + 1});
                *maxDepth = std::max(*maxDepth, frames.back().depth);
                stack.push_back({frames.size() - 1, from});
                continue;
            }
            size_t k = stack.size();
            while (k > 0 && !(stack[k - 1].callSite < to && to - stack[k - 1].callSite <= 15))
                --k;
            if (k > 0) {
                stack.resize(k - 1);
            } else {
                const int32_t outer = frames[stack.front().index].depth - 1;
                stack.clear();
                frames.push_back({nameOf(to), outer});
                stack.push_back({frames.size() - 1, 0});
            }
            continue;
        }
        const std::string target = nameOf(to);
        if (target.empty() || nameOf(from) == target) continue;
        size_t k = stack.size();
        while (k > 0 && frames[stack[k - 1].index].name != target)
            --k;
        if (k > 0) stack.resize(k);  // unwound to a landing pad
    }
    return frames;
}

// The call tree auxscope's span decoder builds for the file (one thread).
std::vector<TreeFrame> spanCallTree(const fs::path& file, int32_t* maxDepth) {
    std::vector<TreeFrame> frames;
    auto reader = PerfDataReader::open(file.string());
    EXPECT_TRUE(reader.ok()) << reader.error().message;
    if (!reader.ok()) return frames;
    auto session = PtSession::open(*reader);
    EXPECT_TRUE(session.ok()) << session.error().message;
    if (!session.ok()) return frames;
    DecodedSpans result = (*session)->decodeSpans({}, 1);
    EXPECT_EQ(result.stats.decodeErrors, 0u);
    EXPECT_EQ(result.threads.size(), 1u);
    *maxDepth = 0;
    for (const auto& [tid, store] : result.threads)
        for (size_t i = 0; i < store.size(); ++i) {
            const Span span = store.at(i);
            if (span.isGap()) continue;
            frames.push_back({baseName((*session)->functions()[span.function].name), span.depth});
            *maxDepth = std::max(*maxDepth, span.depth);
        }
    return frames;
}

// The frames of `names`, with depths relative to the first frame of
// names.front(), as a multiset (span start times are estimates between timing
// packets, so several spans can share one and their order is not compared).
std::multiset<TreeFrame> project(const std::vector<TreeFrame>& frames, const std::vector<std::string>& names,
                                 int32_t* anchorDepth) {
    std::multiset<TreeFrame> out;
    *anchorDepth = 0;
    for (const auto& f : frames)
        if (f.name == names.front()) {
            *anchorDepth = f.depth;
            break;
        }
    for (const auto& f : frames)
        if (std::find(names.begin(), names.end(), f.name) != names.end())
            out.insert({f.name, f.depth - *anchorDepth});
    return out;
}

std::string describe(const std::multiset<TreeFrame>& frames) {
    std::map<TreeFrame, size_t> counts;
    for (const auto& f : frames)
        ++counts[f];
    std::string text;
    for (const auto& [f, n] : counts)
        text += f.name + "@" + std::to_string(f.depth) + " x" + std::to_string(n) + "  ";
    return text;
}

// ---------------------------------------------------------------- step mode

TEST(PtSynthStep, StaticProgramFromItsFirstInstruction) {
    TempDir dir{"ptsynth"};
    // Small PSB period and chunks: many PSB+ (FUP, return stack reset) and
    // several AUXTRACE records, each starting at a PSB. fib(16) runs about 57,700
    // instructions in synthesize()'s fixed environment, so the limit ends it after
    // glibc's start-up and its system calls.
    const Truth truth =
        synthesize("--max-insns 30000 --psb-period 256 --chunk 1024 -- " AUXSCOPE_PTSYNTH_FIB " 16",
                   dir.path / "fib.data");
    EXPECT_EQ(truth.instructions, 30000u);
    EXPECT_EQ(truth.mode, "step");
    EXPECT_GT(truth.syscalls, 0u);  // glibc's start-up makes system calls
    expectDecodersAgree(dir.path / "fib.data", truth);
    expectPerfBranchesMatchEvents(dir.path / "fib.data", truth);
}

TEST(PtSynthStep, RecursionFromMainToExit) {
    TempDir dir{"ptsynth"};
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
    TempDir dir{"ptsynth"};
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
    TempDir dir{"ptsynth"};
    const Truth truth = synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_SWITCH " 200",
                                   dir.path / "switch.data");
    ASSERT_LT(truth.instructions, 30000u);
    EXPECT_GE(truth.calls, 400u);  // dispatch + one pointer call per round
    expectDecodersAgree(dir.path / "switch.data", truth);
}

TEST(PtSynthStep, SignalHandlers) {
    TempDir dir{"ptsynth"};
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
    TempDir dir{"ptsynth"};
    const Truth truth =
        synthesize("--start main --max-insns 30000 -- " AUXSCOPE_PTSYNTH_DYNAMIC, dir.path / "dynamic.data");
    bool libc = false;
    for (const auto& m : truth.maps)
        libc = libc || m.path.find("libc.so") != std::string::npos;
    EXPECT_TRUE(libc);
    expectDecodersAgree(dir.path / "dynamic.data", truth);
}

TEST(PtSynthStep, DynamicLinkerMapsLibcWhileTraced) {
    TempDir dir{"ptsynth"};
    // From exec: ld.so maps libc in the middle of the trace (MMAP2 then, and a
    // TSC before the TIP.PGE that follows, so perf applies the map in time).
    const Truth truth =
        synthesize("--max-insns 30000 -- " AUXSCOPE_PTSYNTH_DYNAMIC, dir.path / "dynamic.data");
    ASSERT_FALSE(truth.maps.empty());
    expectDecodersAgree(dir.path / "dynamic.data", truth);
}

// C++ exceptions: thrown four frames below run_test, through frames whose
// destructors run during unwinding, caught in run_test; one rethrow. The
// unwinder leaves the frames without returns: it jumps (jmp *%rcx after
// restoring the stack pointer) into each landing pad, and the cleanup pads call
// _Unwind_Resume, so a frame ends at a jump into a function further down.
TEST(PtSynthStep, CxxExceptionsUnwindThroughDestructors) {
    TempDir dir{"ptsynth"};
    const fs::path file = dir.path / "exceptions.data";
    // Traced from run_test (ld.so's start-up is not) to the exit: ~190k
    // instructions, most of them the unwinder's (~40k per throw).
    const Truth truth =
        synthesize("--start run_test --max-insns 400000 -- " AUXSCOPE_PTSYNTH_EXCEPTIONS, file);
    ASSERT_LT(truth.instructions, 400000u) << "the program should exit within the limit";
    bool libgcc = false, libstdcxx = false;
    for (const auto& m : truth.maps) {
        libgcc = libgcc || m.path.find("libgcc_s.so") != std::string::npos;
        libstdcxx = libstdcxx || m.path.find("libstdc++.so") != std::string::npos;
    }
    EXPECT_TRUE(libgcc && libstdcxx) << "exceptions need the shared unwinder";
    // Unwinding leaves frames without a return.
    EXPECT_GT(truth.calls, truth.returns);
    expectDecodersAgree(file, truth);
    expectPerfBranchesMatchEvents(file, truth);
}

// The span decoder's call tree of the same run equals the truth's: the
// program's frames at the depths they had, each unwound frame closed when
// control jumps to a landing pad further down (not replaced like a tail call,
// which would leave the frames above it open and push later calls ever deeper).
TEST(PtSynthStep, CxxExceptionsCallTreeClosesUnwoundFrames) {
    TempDir dir{"ptsynth"};
    const fs::path file = dir.path / "exceptions.data";
    const Truth truth =
        synthesize("--start run_test --max-insns 400000 -- " AUXSCOPE_PTSYNTH_EXCEPTIONS, file);
    ASSERT_FALSE(truth.ips.empty());
    const std::vector<std::string> program{"run_test", "main",    "level1",   "level2",
                                           "level3",   "thrower", "rethrower"};
    int32_t truthMax = 0, spanMax = 0, truthAnchor = 0, spanAnchor = 0;
    const auto want =
        project(truthCallTree(AUXSCOPE_PTSYNTH_EXCEPTIONS, truth, &truthMax), program, &truthAnchor);
    // 5 level1..thrower chains (3 throws, the rethrow, the return), rethrower once.
    ASSERT_EQ(want.count({"thrower", 4}) + want.count({"thrower", 5}), 5u) << describe(want);
    ASSERT_EQ(want.count({"run_test", 0}), 1u) << describe(want);
    const auto got = project(spanCallTree(file, &spanMax), program, &spanAnchor);
    EXPECT_TRUE(got == want) << "spans:  " << describe(got) << "\ntruth:  " << describe(want);
    EXPECT_EQ(spanMax - spanAnchor, truthMax - truthAnchor) << "deepest frame, relative to run_test";
}

TEST(PtSynthStep, MissingCommandIsAnError) {
    TempDir dir{"ptsynth"};
    std::string log;
    EXPECT_NE(run(ptsynth() + " -o " + (dir.path / "x.data").string() + " -- /nonexistent/program", &log), 0);
    EXPECT_NE(log.find("cannot run '/nonexistent/program'"), std::string::npos) << log;
}

// ---------------------------------------------------------------- generator mode

TEST(PtSynthGenerate, OneMegabyteDecodesToTheTruthSummary) {
    TempDir dir{"ptsynth"};
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

    // perf, the independent decoder, over the same millions of instructions: without it the test
    // fails, as expectDecodersAgree does (linux-perf is installed by the README's set-up).
    if (run("perf version") != 0) {
        ADD_FAILURE() << "perf is not installed (Debian: linux-perf): the independent oracle is missing";
        return;
    }
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
    TempDir dir{"ptsynth"};
    const fs::path file = dir.path / "gen.data";
    const Truth truth = synthesize("--generate 1 --seed 11 --max-insns 100000 --truth-list", file);
    EXPECT_EQ(truth.instructions, 100000u);
    expectDecodersAgree(file, truth, PtInsnFlowOptions::Decoder::Block);
}

TEST(PtSynthGenerate, UncompressedReturnsNoMtcFrequentPsb) {
    TempDir dir{"ptsynth"};
    const fs::path file = dir.path / "gen.data";
    const Truth truth = synthesize(
        "--generate 1 --seed 13 --max-insns 50000 --truth-list --noretcomp --no-mtc --psb-period 128", file);
    expectDecodersAgree(file, truth, PtInsnFlowOptions::Decoder::Block);
}

// Every `every`-th PSB+ of a raw Intel PT stream replaced by OVF + FUP(ip) (an
// overflow that resumes at ip) or FUP(ip) + TIP(ip) (an asynchronous branch
// from ip to ip), padded with PAD to the PSB+'s length, ip being the PSB+'s own
// FUP: the flow stays the truth's while the decoders take the overflow and
// async-branch event paths (and the PSB is gone as a sync point). Returns the
// overflows and async branches made.
std::pair<size_t, size_t> mutatePsbs(std::vector<uint8_t>& buf, const PtConfigOptions& options,
                                     unsigned every) {
    PtConfig config = makePtConfig(options, buf.data(), buf.data() + buf.size());
    pt_packet_decoder* d = pt_pkt_alloc_decoder(&config.config);
    std::pair<size_t, size_t> made{0, 0};
    if (!d) return made;
    std::vector<uint64_t> psbs;
    while (pt_pkt_sync_forward(d) >= 0) {
        uint64_t offset = 0;
        if (pt_pkt_get_sync_offset(d, &offset) >= 0) psbs.push_back(offset);
    }
    for (size_t i = every; i < psbs.size(); i += every) {
        if (pt_pkt_sync_set(d, psbs[i]) < 0) continue;
        uint64_t ip = 0, end = 0;
        bool fup = false, done = false;
        pt_packet p;
        while (!done && pt_pkt_next(d, &p, sizeof p) >= 0) {
            if (p.type == ppt_fup && p.payload.ip.ipc != pt_ipc_suppressed) fup = true, ip = p.payload.ip.ip;
            if (p.type == ppt_psbend) done = pt_pkt_get_offset(d, &end) >= 0;
        }
        if (!done || !fup) continue;
        const bool overflow = (made.first + made.second) % 2 == 0;
        uint8_t out[64] = {};
        pt_config ec;
        pt_config_init(&ec);
        ec.begin = out;
        ec.end = out + sizeof out;
        pt_encoder* e = pt_alloc_encoder(&ec);
        pt_packet packets[2];
        std::memset(packets, 0, sizeof packets);
        packets[0].type = overflow ? ppt_ovf : ppt_fup;
        packets[1].type = overflow ? ppt_fup : ppt_tip;
        for (pt_packet& q : packets)
            q.payload.ip.ipc = pt_ipc_sext_48, q.payload.ip.ip = ip;
        bool ok = e != nullptr;
        for (pt_packet& q : packets)
            ok = ok && pt_enc_next(e, &q) >= 0;
        uint64_t size = 0;
        ok = ok && pt_enc_get_offset(e, &size) >= 0 && size <= end - psbs[i];
        if (e) pt_free_encoder(e);
        if (!ok) continue;
        std::memset(buf.data() + psbs[i], 0, end - psbs[i]);  // PAD
        std::memcpy(buf.data() + psbs[i], out, size);
        ++(overflow ? made.first : made.second);
    }
    pt_pkt_free_decoder(d);
    return made;
}

// Overflows and asynchronous branches (interrupts) the generated traces lack,
// made by rewriting PSB+s in place: the flow walker binds them as libipt's
// block decoder does (the same spans, overflow gaps and interrupts), without
// handing a segment back.
TEST(PtSynthGenerate, FlowWalkerFollowsOverflowsAndAsyncBranches) {
    TempDir dir{"ptsynth"};
    const fs::path file = dir.path / "gen.data", mutated = dir.path / "mutated.data";
    synthesize("--generate 1 --seed 17 --psb-period 1024", file);
    fs::copy_file(file, mutated);
    auto reader = PerfDataReader::open(file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto trace = PtTraceSource::fromPerfData(*reader);
    ASSERT_TRUE(trace) << trace.error().message;
    size_t overflows = 0, asyncBranches = 0;
    FILE* out = std::fopen(mutated.c_str(), "r+b");
    ASSERT_TRUE(out);
    for (const PerfAuxtraceBuffer& b : reader->summary().auxtrace) {
        ASSERT_FALSE(b.compressed);
        std::vector<uint8_t> bytes(b.available);
        FILE* in = std::fopen(file.c_str(), "rb");
        ASSERT_TRUE(in);
        ASSERT_EQ(std::fseek(in, long(b.dataOffset), SEEK_SET), 0);
        ASSERT_EQ(std::fread(bytes.data(), 1, bytes.size(), in), bytes.size());
        std::fclose(in);
        auto [o, a] = mutatePsbs(bytes, trace->configOptions(), 3);
        overflows += o, asyncBranches += a;
        ASSERT_EQ(std::fseek(out, long(b.dataOffset), SEEK_SET), 0);
        ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), out), bytes.size());
    }
    std::fclose(out);
    ASSERT_GT(overflows, 10u);
    ASSERT_GT(asyncBranches, 10u);
    expectSpanDecodersAgree(mutated);
    auto again = PerfDataReader::open(mutated.string());
    ASSERT_TRUE(again.ok());
    auto session = PtSession::open(*again);
    ASSERT_TRUE(session);
    const DecodedSpans result = (*session)->decodeSpans({}, 2);
    EXPECT_EQ(result.stats.segmentsRedecoded, 0u);
    EXPECT_EQ(result.stats.gaps.count(GapReason::Overflow) ? result.stats.gaps.at(GapReason::Overflow) : 0,
              overflows);
}

// The generated program is real code: running it under single-step takes the
// path the generator walked.
TEST(PtSynthGenerate, GeneratedProgramRunsTheSamePath) {
    TempDir dir{"ptsynth"};
    const Truth walked = synthesize("--generate 1 --seed 5 --max-insns 20000", dir.path / "gen.data");
    const Truth stepped =
        synthesize("--max-insns 20000 -- " + (dir.path / "gen-code.elf").string(), dir.path / "step.data");
    EXPECT_EQ(walked.instructions, 20000u);
    EXPECT_EQ(stepped.instructions, 20000u);
    EXPECT_EQ(walked.hash, stepped.hash);
    EXPECT_EQ(walked.calls, stepped.calls);
    EXPECT_EQ(walked.returns, stepped.returns);
}

// ---------------------------------------------------------------- example mode

// The example every new user sees first (auxscope-ptsynth --example): four
// threads on three CPUs with switches and cpu-clock samples.
struct Example {
    TempDir dir{"ptsynth-example"};
    fs::path file = dir.path / "intel-pt-example.data";
    Truth truth;
    Example() { truth = synthesize("--example", file); }
    const TruthThread* thread(int64_t tid) const {
        for (const auto& t : truth.threads)
            if (t.tid == tid) return &t;
        return nullptr;
    }
    std::string entryName(int64_t tid) const {
        return tid == truth.pid ? "_start" : "thread_main_" + std::to_string(tid - truth.pid);
    }
    // Times `tid` came onto its CPU (perf script's switch records).
    uint64_t switchIns(int64_t tid) {
        if (switches.empty()) {
            std::string out;
            EXPECT_EQ(
                run("perf script -i " + file.string() + " --no-itrace --show-switch-events -F tid", &out), 0);
            size_t pos = 0;
            while (pos < out.size()) {
                const size_t eol = std::min(out.find('\n', pos), out.size());
                const std::string line = out.substr(pos, eol - pos);
                pos = eol + 1;
                if (line.find("SWITCH_CPU_WIDE IN") != std::string::npos)
                    ++switches[std::strtoll(line.c_str(), nullptr, 10)];
            }
        }
        return switches[tid];
    }
    std::map<int64_t, uint64_t> switches;
};

bool havePerf() {
    if (run("perf version") == 0) return true;
    ADD_FAILURE() << "perf is not installed (Debian: linux-perf): the independent oracle is missing";
    return false;
}

TEST(PtSynthExample, TruthHasFourThreadsOnThreeCpus) {
    Example ex;
    ASSERT_EQ(ex.truth.mode, "example");
    ASSERT_EQ(ex.truth.threads.size(), 4u);
    std::set<int> cpus;
    uint64_t instructions = 0, calls = 0;
    for (const auto& t : ex.truth.threads) {
        cpus.insert(t.cpu);
        instructions += t.instructions;
        calls += t.calls;
        EXPECT_GT(t.instructions, 500000u) << t.name;
        EXPECT_EQ(t.syscalls, 1u) << t.name << " exits by itself";
        EXPECT_GT(t.samples, 100u) << t.name;
        EXPECT_FALSE(t.functionCalls.empty()) << t.name;
    }
    EXPECT_EQ(cpus.size(), 3u);
    EXPECT_EQ(instructions, ex.truth.instructions);
    EXPECT_EQ(calls, ex.truth.calls);
    EXPECT_TRUE(fs::exists(ex.dir.path / "intel-pt-example-code.elf"));
    // The program's functions have names that say what they are.
    std::string nm;
    ASSERT_EQ(run("nm " + (ex.dir.path / "intel-pt-example-code.elf").string(), &nm), 0) << nm;
    for (const char* name : {"fib_0", "task_0", "leaf_0", "thread_main_3", "_start"})
        EXPECT_NE(nm.find(std::string(" ") + name + "\n"), std::string::npos) << name << " in\n" << nm;
}

// perf script, the independent decoder, per thread: every instruction of each
// thread (count and hash of the IPs in order) and its calls, no decode errors.
TEST(PtSynthExample, PerfScriptAgreesPerThread) {
    Example ex;
    if (!havePerf()) return;
    std::map<int64_t, std::pair<uint64_t, uint64_t>> perf;  // tid -> instructions, hash
    uint64_t errors = 0;
    {
        FILE* p = popen(
            ("perf script -i " + ex.file.string() + " --itrace=i1ie -F tid,event,ip 2>&1").c_str(), "r");
        ASSERT_TRUE(p);
        char line[512];
        while (fgets(line, sizeof line, p)) {
            if (std::strstr(line, "instruction trace error")) ++errors;
            const char* event = std::strstr(line, "instructions:");
            if (!event) continue;
            const int64_t tid = std::strtoll(line, nullptr, 10);
            const uint64_t ip = std::strtoull(event + std::strlen("instructions:u:"), nullptr, 16);
            auto& [count, hash] = perf.try_emplace(tid, 0, kTruthHashSeed).first->second;
            ++count;
            hash = truthHashStep(hash, ip);
        }
        pclose(p);
    }
    EXPECT_EQ(errors, 0u);
    ASSERT_EQ(perf.size(), ex.truth.threads.size());
    for (const auto& t : ex.truth.threads) {
        EXPECT_EQ(perf[t.tid].first, t.instructions) << t.name;
        EXPECT_EQ(perf[t.tid].second, t.hash) << t.name;
    }
    std::map<int64_t, uint64_t> calls;
    FILE* p = popen(("perf script -i " + ex.file.string() + " --itrace=c -F tid,flags 2>&1").c_str(), "r");
    ASSERT_TRUE(p);
    char line[512];
    while (fgets(line, sizeof line, p)) {
        // "call" (not "syscall", the thread's exit, nor "tr strt call")
        char flags[64] = {};
        long long tid = 0;
        if (std::sscanf(line, "%lld %63s", &tid, flags) == 2 && std::strcmp(flags, "call") == 0) ++calls[tid];
    }
    pclose(p);
    for (const auto& t : ex.truth.threads)
        EXPECT_EQ(calls[t.tid], t.calls) << t.name;
}

// The cpu-clock samples as perf reads them: each thread's count, and call
// chains of named functions from the thread's entry down (perf script), and
// perf report's callers of the recursive functions.
TEST(PtSynthExample, PerfReadsSamplesWithNamedCallChains) {
    Example ex;
    if (!havePerf()) return;
    std::string out;
    ASSERT_EQ(run("perf script -i " + ex.file.string() + " --no-itrace -F tid,event,ip,sym", &out), 0) << out;
    std::map<int64_t, uint64_t> samples;
    std::map<int64_t, std::set<std::string>> roots;  // tid -> the outermost frames of its chains
    size_t deep = 0, pos = 0;
    int64_t tid = -1;
    std::vector<std::string> chain;
    auto endChain = [&]() {
        if (tid >= 0 && !chain.empty()) roots[tid].insert(chain.back());
        deep += chain.size() > 2;
        chain.clear();
    };
    while (pos < out.size()) {
        const size_t eol = std::min(out.find('\n', pos), out.size());
        const std::string line = out.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.find("cpu-clock") != std::string::npos) {
            endChain();
            tid = std::strtoll(line.c_str(), nullptr, 10);
            ++samples[tid];
        } else if (!line.empty() && line[0] == '\t') {
            std::istringstream ls(line);
            std::string address, name;
            ls >> address >> name;
            EXPECT_NE(name, "[unknown]") << line;
            chain.push_back(name);
        }
    }
    endChain();
    ASSERT_EQ(samples.size(), ex.truth.threads.size()) << out.substr(0, 2000);
    for (const auto& t : ex.truth.threads) {
        EXPECT_EQ(samples[t.tid], t.samples) << t.name;
        EXPECT_EQ(roots[t.tid], std::set<std::string>{ex.entryName(t.tid)})
            << t.name << ": every chain starts at its entry";
    }
    EXPECT_GT(deep, ex.truth.threads.size() * 50) << "chains deeper than the entry and the leaf";

    ASSERT_EQ(
        run("perf report -i " + ex.file.string() +
                " --no-itrace --stdio --children --sort sym -g caller,0.5,callee --percent-limit 0 2>&1",
            &out),
        0)
        << out;
    EXPECT_NE(out.find("fib_"), std::string::npos) << out.substr(0, 3000);
    EXPECT_NE(out.find("thread_main_1"), std::string::npos) << out.substr(0, 3000);
}

// auxscope's own decode: spans on every thread, one per call the thread made
// (plus its entry function's), with the generated names; the sample profile
// has every sample with a stack of several named functions.
TEST(PtSynthExample, AuxscopeDecodesSpansAndSampleStacksPerThread) {
    Example ex;
    auto reader = PerfDataReader::open(ex.file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto session = PtSession::open(*reader);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const DecodedSpans result = (*session)->decodeSpans({}, 2);
    EXPECT_EQ(result.stats.decodeErrors, 0u);
    for (const auto& t : ex.truth.threads) {
        auto it = result.threads.find(int32_t(t.tid));
        ASSERT_NE(it, result.threads.end()) << t.name;
        uint64_t calls = 0, running = 0;
        std::set<std::string> names;
        for (size_t i = 0; i < it->second.size(); ++i) {
            const Span span = it->second.at(i);
            if (span.isGap()) continue;
            ++(span.foundRunning ? running : calls);
            names.insert((*session)->functions()[span.function].name);
        }
        // A span per call, and only the entry function's frame found running:
        // a thread preempted right after a call (or a return) resumes in the
        // callee (the caller) after its untraced time, also on the CPU the two
        // workers share, as perf counts every call above.
        EXPECT_EQ(calls, t.calls) << t.name << ": a span per call (" << ex.switchIns(t.tid) << " switch-ins)";
        EXPECT_EQ(running, 1u) << t.name << ": only the entry frame found running";
        EXPECT_TRUE(names.count(ex.entryName(t.tid))) << t.name;
        EXPECT_TRUE(names.count("fib_0") || names.count("fib_1") || names.count("fib_2")) << t.name;
    }
    // Only the idle task besides the four threads, and only with gaps.
    for (const auto& [tid, store] : result.threads) {
        if (ex.thread(tid)) continue;
        EXPECT_EQ(tid, 0);
        for (size_t i = 0; i < store.size(); ++i)
            EXPECT_TRUE(store.at(i).isGap()) << "tid " << tid;
    }

    auto sideband = Sideband::load(*reader);
    ASSERT_TRUE(sideband.ok()) << sideband.error().message;
    auto profile = SampleProfile::load(*reader, std::make_shared<const Sideband>(std::move(*sideband)));
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    const SampleProfile& prof = **profile;
    uint64_t want = 0;
    for (const auto& t : ex.truth.threads)
        want += t.samples;
    ASSERT_EQ(prof.size(), want);
    bool found = false;
    for (const auto& e : prof.events())
        if (e.name.find("cpu-clock") != std::string::npos) {
            found = true;
            EXPECT_TRUE(e.periodIsTime);
            EXPECT_EQ(e.samples, want);
            EXPECT_EQ(e.withCallchain, want);
        }
    EXPECT_TRUE(found);
    std::map<int32_t, uint64_t> perThread;
    size_t deep = 0, maxDepth = 0;
    for (size_t i = 0; i < prof.size(); ++i) {
        ++perThread[prof.tid(i)];
        const auto stack = prof.stack(i);
        maxDepth = std::max(maxDepth, stack.size());
        deep += stack.size() > 1;
        ASSERT_FALSE(stack.empty());
        for (const auto& frame : stack)
            EXPECT_NE(frame.function, FunctionTable::kUnknown)
                << "sample " << i << " at 0x" << std::hex << frame.address;
        EXPECT_EQ(prof.functions()[stack.back().function].name, ex.entryName(prof.tid(i)))
            << "sample " << i << ": the outermost frame is the thread's entry";
    }
    for (const auto& t : ex.truth.threads)
        EXPECT_EQ(perThread[int32_t(t.tid)], t.samples) << t.name;
    // Samples in the entry function's own loop have a stack of one.
    EXPECT_GT(deep, prof.size() * 9 / 10) << "stacks of the entry and the sampled function at least";
    EXPECT_GE(maxDepth, 6u);
    EXPECT_GT(prof.tree().size(), 20u);
}

// The trace's time and the samples' agree: at each sample, the top-level
// function (task_N, called by the thread's entry) of the sample's stack is the
// one whose span covers the sample's time in the decoded trace of that thread.
// Spans are timed by MTC (1.2 us apart) and tasks run tens of us, so a few
// samples near a task's start or end may land in its neighbour.
TEST(PtSynthExample, SpansAndSamplesAgreeInTime) {
    Example ex;
    auto reader = PerfDataReader::open(ex.file.string());
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    auto session = PtSession::open(*reader);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const DecodedSpans result = (*session)->decodeSpans({}, 2);
    auto sideband = Sideband::load(*reader);
    ASSERT_TRUE(sideband.ok()) << sideband.error().message;
    auto profile = SampleProfile::load(*reader, std::make_shared<const Sideband>(std::move(*sideband)));
    ASSERT_TRUE(profile.ok()) << profile.error().message;
    const SampleProfile& prof = **profile;
    for (const auto& t : ex.truth.threads) {
        struct Task {
            uint64_t start, end;
            std::string name;
        };
        std::vector<Task> tasks;  // by start
        const SpanStore& store = result.threads.at(int32_t(t.tid));
        for (size_t i = 0; i < store.size(); ++i) {
            const Span span = store.at(i);
            if (span.isGap()) continue;
            const std::string& name = (*session)->functions()[span.function].name;
            if (name.rfind("task_", 0) == 0) tasks.push_back({span.start, span.end, name});
        }
        ASSERT_GT(tasks.size(), 50u) << t.name;
        uint64_t compared = 0, agreed = 0;
        for (size_t i = 0; i < prof.size(); ++i) {
            if (prof.tid(i) != t.tid) continue;
            const auto stack = prof.stack(i);
            if (stack.size() < 2) continue;
            const std::string& want = prof.functions()[stack[stack.size() - 2].function].name;
            const uint64_t time = prof.time(i);
            auto it = std::upper_bound(tasks.begin(), tasks.end(), time,
                                       [](uint64_t v, const Task& k) { return v < k.start; });
            ++compared;
            if (it != tasks.begin() && time < std::prev(it)->end && std::prev(it)->name == want) ++agreed;
        }
        ASSERT_GT(compared, 100u) << t.name;
        EXPECT_GE(agreed * 100, compared * 90) << t.name << ": " << agreed << " of " << compared;
    }
}

TEST(PtSynthExample, QuietPrintsNothing) {
    TempDir dir{"ptsynth-example"};
    std::string log;
    ASSERT_EQ(run(ptsynth() + " --example -q -o " + (dir.path / "x.data").string(), &log), 0) << log;
    EXPECT_EQ(log, "");
}

TEST(PtSynthExample, MissingFolderIsAOneLineError) {
    TempDir dir{"ptsynth-example"};
    const std::string out = (dir.path / "no-such-folder" / "intel-pt-example.data").string();
    std::string log;
    EXPECT_NE(run(ptsynth() + " --example -q -o " + out, &log), 0);
    EXPECT_NE(log.find(out), std::string::npos) << log;
    EXPECT_NE(log.find("does not exist"), std::string::npos) << log;
    EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
    EXPECT_FALSE(fs::exists(dir.path / "no-such-folder"));
    // A folder for -o: an error before anything is written into it.
    EXPECT_NE(run(ptsynth() + " --example -q -o " + dir.path.string() + "/", &log), 0);
    EXPECT_NE(log.find("is a folder"), std::string::npos) << log;
    EXPECT_TRUE(fs::is_empty(dir.path)) << "nothing written";
}

}  // namespace
