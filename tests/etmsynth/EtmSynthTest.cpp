// SPDX-License-Identifier: GPL-3.0-or-later
// The generated CoreSight example (auxscope-etmsnap --example) against its
// truth: OpenCSD's own trc_pkt_lister decodes the snapshot folder to exactly
// the walked instruction ranges, and auxscope decodes the perf.data made from
// it to the same ranges and to one span per call, named.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "EtmSynth.h"
#include "TestSupport.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "record/ReplaySource.h"

using namespace auxscope;
using namespace auxscope::etmsynth;
using auxscope::test_support::runCommand;
using auxscope::test_support::TempDir;

namespace {

const char* kLister = "/usr/bin/trc_pkt_lister";

struct Seen {
    uint64_t start = 0, end = 0;
    uint32_t count = 0;
    bool taken = false;
    bool operator==(const Seen&) const = default;
};
std::ostream& operator<<(std::ostream& o, const Seen& r) {
    char b[96];
    std::snprintf(b, sizeof b, "0x%llx..0x%llx %u %c", (unsigned long long)r.start, (unsigned long long)r.end,
                  r.count, r.taken ? 'E' : 'N');
    return o << b;
}

std::vector<Seen> truthRanges(const Truth& t) {
    std::vector<Seen> v;
    for (const Range& r : t.ranges)
        v.push_back({r.start, r.end, r.instructions, r.taken});
    return v;
}

// Compares element by element so that a failure names the first difference.
void expectSameRanges(const std::vector<Seen>& got, const std::vector<Seen>& want, const std::string& what) {
    const size_t n = std::min(got.size(), want.size());
    for (size_t k = 0; k < n; ++k)
        if (!(got[k] == want[k])) {
            ADD_FAILURE() << what << ": range " << k << " is " << got[k] << ", the truth " << want[k];
            return;
        }
    EXPECT_EQ(got.size(), want.size()) << what << ": number of ranges";
}

std::string functionAt(const Program& p, uint64_t a) {
    for (const ptsynth::ElfSymbol& f : p.functions)
        if (a >= f.value && a < f.value + f.size) return f.name;
    return "?";
}

}  // namespace

TEST(EtmSynthExample, TrcPktListerDecodesExactlyTheWalkedPath) {
    if (!std::filesystem::exists(kLister))
        GTEST_SKIP() << kLister << " is not installed (Debian libopencsd-bin)";
    std::set<size_t> lastFrameFill;
    for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        TempDir dir("etmsynth");
        auto ex = writeExample((dir.path / "coresight-example.data").string(), seed);
        ASSERT_TRUE(ex) << ex.error().message;
        lastFrameFill.insert(encodeEtmv4(ex->truth, EtmConfig{}).size() % 2);
        std::string out;
        ASSERT_EQ(runCommand("cd '" + dir.path.string() + "' && " + kLister + " -ss_dir '" + ex->snapshotDir +
                                 "' -decode -logstdout -logfilename /dev/null",
                             &out),
                  0)
            << out;
        std::vector<Seen> got;
        int noSync = 0, other = 0;
        std::istringstream in(out);
        std::string line;
        while (std::getline(in, line)) {
            EXPECT_EQ(line.find("ERR"), std::string::npos) << line;
            EXPECT_EQ(line.find("BAD"), std::string::npos) << line;
            if (line.find("OCSD_GEN_TRC_ELEM_NO_SYNC") != std::string::npos) ++noSync;
            const size_t at = line.find("OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=");
            if (at == std::string::npos) {
                if (line.find("OCSD_GEN_TRC_ELEM_") != std::string::npos &&
                    line.find("PE_CONTEXT") == std::string::npos &&
                    line.find("TRACE_ON") == std::string::npos &&
                    line.find("EO_TRACE") == std::string::npos && line.find("NO_SYNC") == std::string::npos)
                    ++other;
                continue;
            }
            unsigned long long start = 0, end = 0;
            unsigned count = 0, size = 0;
            char atom = 0;
            ASSERT_EQ(
                std::sscanf(line.c_str() + at,
                            "OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=0x%llx:[0x%llx] num_i(%u) last_sz(%u) "
                            "(ISA=A64) %c",
                            &start, &end, &count, &size, &atom),
                5)
                << line;
            EXPECT_EQ(size, 4u) << line;
            got.push_back({start, end, count, atom == 'E'});
        }
        EXPECT_EQ(noSync, 1) << "only the decoder's initial NO_SYNC: the re-syncs lose nothing";
        EXPECT_EQ(other, 0) << "no elements but ranges, context, trace on and end of trace";
        EXPECT_NE(out.find("processed " + std::to_string(ex->buffer.size()) + " bytes"), std::string::npos);
        expectSameRanges(got, truthRanges(ex->truth), "trc_pkt_lister");
        EXPECT_GT(ex->truth.branches, 1000u);
        EXPECT_GT(ex->truth.calls, 200u);
    }
    // Both ways the last frame is padded (an even or an odd count of bytes in it) were decoded.
    EXPECT_EQ(lastFrameFill.size(), 2u);
}

TEST(EtmSynthExample, AuxscopeDecodesThePerfDataAndTheSnapshotToTheTruth) {
    TempDir dir("etmsynth");
    auto ex = writeExample((dir.path / "coresight-example.data").string(), 7);
    ASSERT_TRUE(ex) << ex.error().message;
    const std::string data = (dir.path / "coresight-example.data").string();

    std::string out;
    ASSERT_EQ(runCommand(std::string(AUXSCOPE_CLI) + " decode '" + data + "' --format ranges", &out, false),
              0)
        << out;
    std::vector<Seen> got;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        unsigned cpu = 9, id = 0, count = 0;
        unsigned long long first = 0, last = 0;
        ASSERT_EQ(std::sscanf(line.c_str(), "%u 0x%x 0x%llx 0x%llx %u A64", &cpu, &id, &first, &last, &count),
                  5)
            << line;
        EXPECT_EQ(cpu, 0u);
        EXPECT_EQ(id, 0x10u);
        got.push_back({first, last + 4, count, false});
    }
    std::vector<Seen> want = truthRanges(ex->truth);
    for (Seen& s : want)
        s.taken = false;  // the ranges format has no atom
    expectSameRanges(got, want, "auxscope decode --format ranges");

    // The snapshot folder itself, as auxscope decodes snapshots.
    ASSERT_EQ(runCommand(std::string(AUXSCOPE_CLI) + " decode '" + ex->snapshotDir + "' --format ranges",
                         &out, false),
              0)
        << out;
    got.clear();
    std::istringstream snap(out);
    while (std::getline(snap, line)) {
        if (line.empty() || line[0] == '#') continue;
        unsigned id = 0, count = 0;
        unsigned long long first = 0, last = 0;
        ASSERT_EQ(std::sscanf(line.c_str(), "0x%x 0x%llx 0x%llx %u A64", &id, &first, &last, &count), 4)
            << line;
        EXPECT_EQ(id, 0x10u);
        got.push_back({first, last + 4, count, false});
    }
    expectSameRanges(got, want, "auxscope decode SNAPSHOT_DIR --format ranges");

    // Spans: one per call (and _start's), each named from the code ELF's symbols.
    ASSERT_EQ(runCommand(std::string(AUXSCOPE_CLI) + " decode '" + data + "'", &out, false), 0) << out;
    std::map<std::string, int> wantCalls{{"_start", 1}};
    for (const Range& r : ex->truth.ranges)
        if (ex->program.code[(r.end - 4 - ex->program.base) / 4].op == Op::Bl)
            ++wantCalls[functionAt(ex->program, r.next)];
    std::istringstream spans(out);
    std::getline(spans, line);
    const std::string head =
        "thread 4242 (etm-example) pid 4242: " + std::to_string(ex->truth.calls + 1) + " spans";
    EXPECT_EQ(line, head);
    std::map<std::string, int> gotCalls;
    while (std::getline(spans, line)) {
        std::istringstream f(line);
        std::string start, end, depth, insns, name;
        if (!(f >> start >> end >> depth >> insns >> name)) continue;
        ++gotCalls[name];
    }
    EXPECT_EQ(gotCalls, wantCalls);
    EXPECT_GT(gotCalls["fib"], 50);
}

TEST(EtmSynthExample, TheSeedMakesTheProgramAndTheSameSeedTheSameBytes) {
    const Program a = generateProgram(1), b = generateProgram(2), a2 = generateProgram(1);
    EXPECT_NE(a.bytes(), b.bytes());
    EXPECT_EQ(a.bytes(), a2.bytes());
    auto ta = walk(a, 1), tb = walk(b, 2);
    ASSERT_TRUE(ta && tb);
    EXPECT_NE(truthRanges(*ta), truthRanges(*tb));
    // Every program has the parts the example promises.
    for (const Program* p : {&a, &b}) {
        std::set<std::string> names;
        for (const ptsynth::ElfSymbol& f : p->functions)
            names.insert(f.name.substr(0, 5));
        EXPECT_TRUE(names.count("_star") && names.count("main") && names.count("fib") &&
                    names.count("loop_"));
    }
    EXPECT_GT(ta->maxDepth, 6u);  // fib's recursion
}

// The A64 encodings the program uses, against the Arm ARM's (as GNU as writes them).
TEST(EtmSynthExample, EncodesA64AsTheArchitectureDoes) {
    EXPECT_EQ(encode({Op::Nop}, 0), 0xd503201fu);
    EXPECT_EQ(encode({Op::Ret, 0, 30}, 0), 0xd65f03c0u);
    EXPECT_EQ(encode({Op::StpPre, 29, 31, 30, -16}, 0), 0xa9bf7bfdu);  // stp x29, x30, [sp, #-16]!
    EXPECT_EQ(encode({Op::LdpPost, 29, 31, 30, 16}, 0), 0xa8c17bfdu);  // ldp x29, x30, [sp], #16
    EXPECT_EQ(encode({Op::StpOff, 19, 31, 20, 16}, 0), 0xa90153f3u);   // stp x19, x20, [sp, #16]
    EXPECT_EQ(encode({Op::LdpOff, 19, 31, 20, 16}, 0), 0xa94153f3u);   // ldp x19, x20, [sp, #16]
    EXPECT_EQ(encode({Op::AddImm, 29, 31, 0, 0}, 0), 0x910003fdu);     // mov x29, sp
    EXPECT_EQ(encode({Op::SubImm, 0, 19, 0, 1}, 0), 0xd1000660u);      // sub x0, x19, #1
    EXPECT_EQ(encode({Op::CmpImm, 31, 0, 0, 2}, 0), 0xf100081fu);      // cmp x0, #2
    EXPECT_EQ(encode({Op::Movz, 19, 0, 0, 7}, 0), 0xd28000f3u);        // mov x19, #7
    EXPECT_EQ(encode({Op::MovReg, 19, 31, 0}, 0), 0xaa0003f3u);        // mov x19, x0
    EXPECT_EQ(encode({Op::AddReg, 0, 0, 20}, 0), 0x8b140000u);         // add x0, x0, x20
    EXPECT_EQ(encode({Op::Bl, 0, 0, 0, 0, 0x1010}, 0x1000), 0x94000004u);
    EXPECT_EQ(encode({Op::B, 0, 0, 0, 0, 0xff8}, 0x1000), 0x17fffffeu);
    EXPECT_EQ(encode({Op::BCond, 0, 0xb, 0, 0, 0x1020}, 0x1000), 0x5400010bu);  // b.lt +0x20
    EXPECT_EQ(encode({Op::Cbnz, 19, 0, 0, 0, 0xff0}, 0x1000), 0xb5ffff93u);     // cbnz x19, -0x10
    EXPECT_EQ(encode({Op::Cbz, 9, 0, 0, 0, 0x100c}, 0x1000), 0xb4000069u);      // cbz x9, +0xc
}

// The code ELF as an independent disassembler reads it: every instruction the
// one the generator meant, every branch to its target, every function named.
TEST(EtmSynthExample, LlvmObjdumpReadsTheCodeAsGenerated) {
    const char* objdump = "/usr/bin/llvm-objdump";
    if (!std::filesystem::exists(objdump)) GTEST_SKIP() << objdump << " is not installed";
    TempDir dir("etmsynth");
    auto ex = writeExample((dir.path / "coresight-example.data").string(), 5);
    ASSERT_TRUE(ex) << ex.error().message;
    std::string out;
    ASSERT_EQ(runCommand(std::string(objdump) + " -d --triple=aarch64 '" + ex->elfPath + "'", &out), 0)
        << out;
    std::map<uint64_t, std::string> text;  // address -> "mnemonic operands"
    std::set<std::string> labels;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        unsigned long long a = 0;
        char name[64] = {};
        if (std::sscanf(line.c_str(), "%llx <%63[^>]>:", &a, name) == 2) labels.insert(name);
        const size_t tab = line.find('\t');
        if (tab != std::string::npos && std::sscanf(line.c_str(), " %llx:", &a) == 1)
            text[a] = line.substr(tab + 1);
    }
    for (const ptsynth::ElfSymbol& f : ex->program.functions)
        EXPECT_TRUE(labels.count(f.name)) << f.name;
    ASSERT_EQ(text.size(), ex->program.code.size());
    for (size_t k = 0; k < ex->program.code.size(); ++k) {
        const Insn& i = ex->program.code[k];
        const uint64_t pc = ex->program.base + 4 * k;
        const std::string& t = text[pc];
        std::string want;
        switch (i.op) {
            case Op::Nop:
                want = "nop";
                break;
            case Op::Movz:
                want = "mov\tx" + std::to_string(i.rd) + ", #" + std::to_string(i.imm);
                break;
            case Op::AddImm:
                want = i.rn == 31 && i.imm == 0 ? "mov\tx29, sp"
                                                : "add\tx" + std::to_string(i.rd) + ", x" +
                                                      std::to_string(i.rn) + ", #" + std::to_string(i.imm);
                break;
            case Op::SubImm:
                want = "sub\tx" + std::to_string(i.rd) + ", x" + std::to_string(i.rn) + ", #" +
                       std::to_string(i.imm);
                break;
            case Op::CmpImm:
                want = "cmp\tx" + std::to_string(i.rn) + ", #" + std::to_string(i.imm);
                break;
            case Op::AddReg:
                want = "add\tx" + std::to_string(i.rd) + ", x" + std::to_string(i.rn) + ", x" +
                       std::to_string(i.rm);
                break;
            case Op::MovReg:
                want = "mov\tx" + std::to_string(i.rd) + ", x" + std::to_string(i.rm);
                break;
            case Op::StpPre:
                want = "stp\tx29, x30, [sp, #" + std::to_string(i.imm) + "]!";
                break;
            case Op::StpOff:
                want = "stp\tx19, x20, [sp, #" + std::to_string(i.imm) + "]";
                break;
            case Op::LdpOff:
                want = "ldp\tx19, x20, [sp, #" + std::to_string(i.imm) + "]";
                break;
            case Op::LdpPost:
                want = "ldp\tx29, x30, [sp], #" + std::to_string(i.imm);
                break;
            case Op::Ret:
                want = "ret";
                break;
            default: {
                char b[64];
                static const char* const kCond[] = {"eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc",
                                                    "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"};
                const std::string m = i.op == Op::B      ? "b"
                                      : i.op == Op::Bl   ? "bl"
                                      : i.op == Op::Cbz  ? "cbz\tx" + std::to_string(i.rd) + ","
                                      : i.op == Op::Cbnz ? "cbnz\tx" + std::to_string(i.rd) + ","
                                                         : std::string("b.") + kCond[i.rn & 15];
                std::snprintf(b, sizeof b, "%s%s0x%llx", m.c_str(), m.back() == ',' ? " " : "\t",
                              (unsigned long long)i.target);
                want = b;
                break;
            }
        }
        EXPECT_EQ(t.substr(0, want.size()), want) << "at 0x" << std::hex << pc;
    }
}

// Replay (the capture path with simulated hardware) of the example with the
// live decoder attached, as the GUI's Replay does: its 20 AUX records arrive
// over the run and every instruction of the truth decodes live.
TEST(EtmSynthExample, ReplayDecodesTheWholeRunLive) {
    TempDir dir("etmsynth");
    const std::string data = (dir.path / "coresight-example.data").string();
    auto ex = writeExample(data, 2);
    ASSERT_TRUE(ex) << ex.error().message;
    auto src = ReplaySource::open(data);
    ASSERT_TRUE(src) << src.error().message;
    ReplayOptions ro;
    ro.speed.factor = (*src)->recordedSeconds() / 0.5;  // the recorded second in about half a second
    auto session = (*src)->openSession(ro);
    ASSERT_TRUE(session) << session.error().message;
    LiveDecoderOptions lo;
    lo.intervalSeconds = 0.05;
    lo.auxtraceInfo = (*src)->auxtraceInfo(ro);
    auto live = LiveTraceDecoder::attach(**session, lo);
    ASSERT_TRUE(live) << live.error().message;
    ASSERT_TRUE((*session)->start());
    ASSERT_TRUE((*src)->start(**session, ro));
    size_t timelinesWhileRunning = 0;
    std::shared_ptr<const TimelineData> seen;
    while (!(*session)->finished()) {
        if (auto t = (*live)->latest(); t && t != seen) {
            seen = t;
            ++timelinesWhileRunning;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    (*src)->wait();
    (*session)->wait();
    (*live)->flush();
    (*live)->stop();
    const LiveDecodeStats stats = (*live)->stats();
    EXPECT_TRUE(stats.lastError.empty()) << stats.lastError;
    EXPECT_EQ(stats.decodeErrors, 0u);
    EXPECT_EQ(stats.auxBytes, ex->buffer.size());
    EXPECT_EQ(stats.skippedBytes, 0u);
    EXPECT_EQ(stats.instructions, ex->truth.instructions) << "every instruction of the run, decoded live";
    EXPECT_EQ(stats.spans, ex->truth.calls + 1);
    EXPECT_GE(timelinesWhileRunning, 2u) << "timelines published while the replay ran";
}
