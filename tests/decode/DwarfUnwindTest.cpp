// SPDX-License-Identifier: GPL-3.0-or-later
// DWARF unwinding of perf's --call-graph dwarf samples (samples/DwarfUnwinder)
// with perf as the oracle: the test programs (tests/samples/stacks_prog, with
// and without frame pointers) recorded by perf, every sample unwound by both
// engines and compared frame for frame with `perf script`'s own unwinding.
#include <elf.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "StackCaptures.h"
#include "samples/DwarfUnwinder.h"

using namespace auxscope;
using namespace auxscope::test_support;

namespace {

// The test program's recording (once per build), loaded; skips where perf cannot record.
std::unique_ptr<StackCapture> loadProgram(const char* program, const char* name) {
    std::unique_ptr<StackCapture> none;
    if (std::string why = perfRecordUnavailable(); !why.empty()) {
        ADD_FAILURE() << "cannot record with perf: " << why;
        return none;
    }
    std::string error;
    const std::string file = recordOnce(name, program, "400", "-F 2000 --call-graph dwarf", error);
    if (file.empty()) {
        ADD_FAILURE() << error;
        return none;
    }
    auto c = StackCapture::load(file, error);
    if (!c) ADD_FAILURE() << file << ": " << error;
    return c;
}

struct Unwound {
    std::vector<uint64_t> frames;
    UnwindStop stop;
};

std::vector<Unwound> unwindAll(const StackCapture& c, DwarfUnwinder::Engine engine, size_t maxFrames = 127) {
    DwarfUnwinder unwinder(*c.images, c.machine, DwarfUnwinder::Options{engine});
    auto worker = unwinder.worker();
    std::vector<Unwound> out;
    for (const StackSample& s : c.samples) {
        Unwound u;
        u.stop = unwinder.unwind(*worker, s.pid, c.copyOf(s), u.frames, maxFrames);
        out.push_back(std::move(u));
    }
    return out;
}

std::string hexList(const std::vector<uint64_t>& v) {
    std::string s;
    char b[24];
    for (uint64_t a : v) {
        std::snprintf(b, sizeof b, " %llx", (unsigned long long)a);
        s += b;
    }
    return s;
}

// perf 6.1 asks libdwfl whether a frame is an "activation" (its PC not a
// return address) before it reports that frame's file to libdwfl; for the
// signal trampoline __restore_rt, when it is the sample's first frame in libc,
// libdwfl cannot unwind it yet, says no, and perf prints its address minus one
// (which perf then names "[unknown]", the byte before the trampoline). Later
// perf reports the file first and prints the address as it is, as libdwfl and
// DwarfUnwinder do. True when that is the only difference.
bool perfTrampolineArtifact(const StackCapture& c, const StackSample& s,
                            const std::vector<uint64_t>& absolute, const std::vector<uint64_t>& mine,
                            const std::vector<uint64_t>& perf) {
    if (mine.size() != perf.size()) return false;
    bool any = false;
    for (size_t k = 0; k < mine.size(); ++k) {
        if (mine[k] == perf[k]) continue;
        if (perf[k] + 1 != mine[k] || !c.isSignalTrampoline(s.pid, absolute[k])) return false;
        any = true;
    }
    return any;
}

// Every sample perf unwinds: our frames, as perf prints them, equal perf's.
void expectPerfFrames(const StackCapture& c, const std::vector<Unwound>& ours, size_t& compared) {
    std::string error;
    const PerfCallchains perf = perfScriptUserFrames(c.path, error);
    ASSERT_TRUE(error.empty()) << error;
    compared = 0;
    size_t differ = 0, missing = 0, trampoline = 0;
    std::map<UnwindStop, size_t> stops;
    for (size_t i = 0; i < c.samples.size(); ++i) {
        const StackSample& s = c.samples[i];
        ++stops[ours[i].stop];
        auto it = perf.find({s.tid, s.time});
        if (it == perf.end()) {
            ++missing;
            continue;
        }
        std::vector<uint64_t> mine;
        for (uint64_t a : ours[i].frames)
            mine.push_back(c.perfAddress(s.pid, a));
        ++compared;
        if (mine != it->second && perfTrampolineArtifact(c, s, ours[i].frames, mine, it->second)) {
            ++trampoline;
        } else if (mine != it->second) {
            if (++differ <= 5)
                ADD_FAILURE() << "sample tid " << s.tid << " time " << s.time << " ("
                              << unwindStopName(ours[i].stop) << "):\n  ours:" << hexList(mine)
                              << "\n  perf:" << hexList(it->second);
        }
    }
    std::string histogram;
    for (const auto& [stop, n] : stops)
        histogram += std::string(" ") + unwindStopName(stop) + "=" + std::to_string(n);
    std::printf(
        "%s: %zu samples with stack copies, %zu compared with perf script: %zu equal, %zu differ only in "
        "perf 6.1's __restore_rt address, %zu differ otherwise; %zu not in perf's output; stops:%s\n",
        c.path.c_str(), c.samples.size(), compared, compared - trampoline - differ, trampoline, differ,
        missing, histogram.c_str());
    EXPECT_EQ(differ, 0u);
    EXPECT_EQ(missing, 0u);
}

// The function names of a sample's frames, leaf first.
std::vector<std::string> names(const StackCapture& c, const StackSample& s, const Unwound& u) {
    std::vector<std::string> out;
    for (uint64_t a : u.frames)
        out.push_back(c.isSignalTrampoline(s.pid, a) ? "[signal trampoline]" : c.functionName(s.pid, a));
    return out;
}

bool contains(const std::vector<std::string>& stack, const std::vector<std::string>& run) {
    return std::search(stack.begin(), stack.end(), run.begin(), run.end()) != stack.end();
}

// The stacks the program is known to have, leaf first.
void expectProgramStacks(const StackCapture& c, const std::vector<Unwound>& ours) {
    size_t deep = 0, library = 0, handler = 0;
    for (size_t i = 0; i < c.samples.size(); ++i) {
        const auto n = names(c, c.samples[i], ours[i]);
        // mid(x, 3) -> mid(2) -> mid(1) -> mid(0) -> leaf; at -O2 mid(0) calls leaf as a tail call.
        if (contains(n, {"leaf", "mid", "mid", "mid", "mid", "hot", "main"}) ||
            contains(n, {"leaf", "mid", "mid", "mid", "hot", "main"}))
            ++deep;
        if (contains(n, {"lib_inner", "lib_work", "hot", "main"})) ++library;
        // glibc's __restore_rt (libc.so.6 has no symbol for it without its debug file).
        auto restorer = std::find(n.begin(), n.end(), "[signal trampoline]");
        // The process-wide ITIMER_PROF signals whichever thread runs: main's or the worker's.
        if (restorer != n.end() && std::find(n.begin(), restorer, "handler_work") != restorer &&
            (std::find(restorer, n.end(), "main") != n.end() ||
             std::find(restorer, n.end(), "worker_thread") != n.end()))
            ++handler;
    }
    std::printf(
        "stacks: %zu main>hot>mid>mid>mid(>mid)>leaf, %zu main>hot>lib_work>lib_inner, %zu handler_work "
        "under the signal trampoline (__restore_rt)\n",
        deep, library, handler);
    EXPECT_GT(deep, 0u);
    EXPECT_GT(library, 0u);
    EXPECT_GT(handler, 0u);
}

void oracleTest(const char* program, const char* name) {
    auto c = loadProgram(program, name);
    if (!c) return;
    ASSERT_EQ(c->machine, EM_X86_64) << "the oracle test is written for x86_64";
    ASSERT_GT(c->samples.size(), 100u);
    const auto ours = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
    size_t compared = 0;
    expectPerfFrames(*c, ours, compared);
    EXPECT_GT(compared, 100u);
    expectProgramStacks(*c, ours);
}

}  // namespace

TEST(DwarfUnwindOracle, NoFramePointersAsPerfUnwindsThem) {
    oracleTest(AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp");
}

TEST(DwarfUnwindOracle, FramePointersAsPerfUnwindsThem) {
    oracleTest(AUXSCOPE_STACKS_PROG_FP, "stacks_prog_fp");
}

// The CFI-row engine gives libdwfl's frames and stop reasons on every sample.
TEST(DwarfUnwindEngines, CfiRowsEqualLibdwfl) {
    for (const auto& [program, name] : {std::pair{AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp"},
                                        std::pair{AUXSCOPE_STACKS_PROG_FP, "stacks_prog_fp"}}) {
        auto c = loadProgram(program, name);
        if (!c) return;
        for (size_t maxFrames : {size_t(127), size_t(4)}) {
            const auto rows = unwindAll(*c, DwarfUnwinder::Engine::CfiRows, maxFrames);
            const auto dwfl = unwindAll(*c, DwarfUnwinder::Engine::Libdwfl, maxFrames);
            size_t differ = 0;
            for (size_t i = 0; i < rows.size(); ++i) {
                if (rows[i].frames == dwfl[i].frames && rows[i].stop == dwfl[i].stop) continue;
                if (++differ <= 5)
                    ADD_FAILURE() << name << " sample " << i << ": rows (" << unwindStopName(rows[i].stop)
                                  << "):" << hexList(rows[i].frames) << "\n libdwfl ("
                                  << unwindStopName(dwfl[i].stop) << "):" << hexList(dwfl[i].frames);
            }
            std::printf("%s, max %zu frames: %zu samples, %zu differ between the engines\n", name, maxFrames,
                        rows.size(), differ);
        }
    }
}
