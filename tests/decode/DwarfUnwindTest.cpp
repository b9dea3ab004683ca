// SPDX-License-Identifier: GPL-3.0-or-later
// DWARF unwinding of perf's --call-graph dwarf samples (samples/DwarfUnwinder)
// with perf as the oracle: the test programs (tests/samples/stacks_prog, with
// and without frame pointers) recorded by perf, every sample unwound by both
// engines and compared frame for frame with `perf script`'s own unwinding.
#include <elf.h>
#include <gtest/gtest.h>

#include <linux/perf_event.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "StackCaptures.h"
#include "samples/DwarfUnwinder.h"

using namespace auxscope;
using namespace auxscope::test_support;

namespace {

// The test program's recording (once per build), loaded; skips where perf cannot record.
std::unique_ptr<StackCapture> loadProgram(const char* program, const char* name,
                                          const char* milliseconds = "400") {
    std::unique_ptr<StackCapture> none;
    if (std::string why = perfRecordUnavailable(); !why.empty()) {
        ADD_FAILURE() << "cannot record with perf: " << why;
        return none;
    }
    std::string error;
    const std::string file = recordOnce(name, program, milliseconds, "-F 2000 --call-graph dwarf", error);
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

// perf 6.1 here unwinds with libunwind (perf version --build-options: libunwind
// on; perf prefers it to libdw when built with both). For the signal trampoline
// glibc's __restore_rt it prints the address minus one, as for a caller (and
// then names it "[unknown]": the byte before __restore_rt). libdwfl, and so
// DwarfUnwinder, take the trampoline for an activation frame (its CIE has the
// "S" augmentation) and list its address as it is. True when that is the only
// difference.
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

// perf record keeps the vdso in perf's build-id cache as
// ~/.debug/.build-id/xx/yyyy/vdso, where ImageResolver finds it; where the
// cache does not hold it (another user's ~/.debug), a sample in the vdso
// (clock_gettime) stops at its first frame with MissingImage where perf goes
// on. True when that is the only difference: ours a prefix of perf's, the
// last frame in the [vdso] mapping.
bool vdsoNotFound(const StackCapture& c, const StackSample& s, const Unwound& u,
                  const std::vector<uint64_t>& mine, const std::vector<uint64_t>& perf) {
    return u.stop == UnwindStop::MissingImage && !u.frames.empty() && mine.size() < perf.size() &&
           std::equal(mine.begin(), mine.end(), perf.begin()) &&
           c.images->mappingAt(s.pid, u.frames.back()) == "[vdso]";
}

// Every sample perf unwinds: our frames, as perf prints them, equal perf's.
void expectPerfFrames(const StackCapture& c, const std::vector<Unwound>& ours, size_t& compared) {
    std::string error;
    const PerfCallchains perf = perfScriptUserFrames(c.path, error);
    ASSERT_TRUE(error.empty()) << error;
    compared = 0;
    size_t differ = 0, missing = 0, trampoline = 0, vdso = 0, perfEmpty = 0;
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
        // Two samples of the thread at one time: perf printed a chain for each;
        // ours is compared with the one it equals, else the first.
        const std::vector<std::vector<uint64_t>>& candidates = it->second;
        const std::vector<uint64_t>* theirs = &candidates.front();
        for (const auto& chain : candidates)
            if (chain == mine) theirs = &chain;
        // perf printed no frame at all for it (libunwind gave up on its first
        // step, e.g. a stack copy that ends at once; once in a few hundred
        // samples also where ours unwound whole): nothing to compare, counted
        // and bounded below.
        if (theirs->empty()) {
            ++perfEmpty;
            continue;
        }
        ++compared;
        if (mine != *theirs && perfTrampolineArtifact(c, s, ours[i].frames, mine, *theirs)) {
            ++trampoline;
        } else if (mine != *theirs && vdsoNotFound(c, s, ours[i], mine, *theirs)) {
            ++vdso;
        } else if (mine != *theirs) {
            if (++differ <= 5)
                ADD_FAILURE() << "sample tid " << s.tid << " time " << s.time << " ("
                              << unwindStopName(ours[i].stop) << "):\n  ours:" << hexList(mine)
                              << "\n  perf:" << hexList(*theirs);
        }
    }
    std::string histogram;
    for (const auto& [stop, n] : stops)
        histogram += std::string(" ") + unwindStopName(stop) + "=" + std::to_string(n);
    std::printf(
        "%s: %zu samples with stack copies, %zu compared with perf script: %zu equal, %zu differ only in "
        "perf 6.1's __restore_rt address, %zu stop in the [vdso] perf finds and ImageResolver does not, %zu "
        "differ otherwise; %zu not in perf's output, %zu without frames there; stops:%s\n",
        c.path.c_str(), c.samples.size(), compared, compared - trampoline - vdso - differ, trampoline, vdso,
        differ, missing, perfEmpty, histogram.c_str());
    EXPECT_EQ(differ, 0u);
    EXPECT_EQ(missing, 0u);
    EXPECT_LE(perfEmpty, c.samples.size() / 100) << "perf unwound too few of them to compare";
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
void expectProgramStacks(const StackCapture& c, const std::vector<Unwound>& ours, bool expectHandler) {
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
    if (expectHandler) {
        EXPECT_GT(handler, 0u);
    }
}

// The program run for 400 ms, then for 2 s: the signal handler takes ~1% of
// the main thread's time, so 400 ms may hold no sample in it; 2 s holds some.
void oracleTest(const char* program, const char* name) {
    for (const char* ms : {"400", "2000"}) {
        auto c =
            loadProgram(program, (std::string(name) + (ms == std::string("400") ? "" : "_2s")).c_str(), ms);
        if (!c) return;
        ASSERT_EQ(c->machine, EM_X86_64) << "the oracle test is written for x86_64";
        // 1600 samples when both busy threads run all the time; far fewer on a loaded machine.
        ASSERT_GT(c->samples.size(), 50u);
        const auto ours = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
        size_t compared = 0;
        expectPerfFrames(*c, ours, compared);
        EXPECT_GT(compared, 50u);
        expectProgramStacks(*c, ours, ms == std::string("2000"));
    }
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

// ---- Bad input: each a counted stop reason, never a crash or a hang. ----

namespace {

// Both engines on one input: the same frames and stop, which are returned.
Unwound unwindBoth(const StackCapture& c, int32_t pid, const UserStackCopy& copy, size_t maxFrames = 127) {
    Unwound rows, dwfl;
    for (auto engine : {DwarfUnwinder::Engine::CfiRows, DwarfUnwinder::Engine::Libdwfl}) {
        DwarfUnwinder unwinder(*c.images, c.machine, DwarfUnwinder::Options{engine});
        auto w = unwinder.worker();
        Unwound& u = engine == DwarfUnwinder::Engine::CfiRows ? rows : dwfl;
        u.stop = unwinder.unwind(*w, pid, copy, u.frames, maxFrames);
    }
    EXPECT_EQ(rows.frames, dwfl.frames);
    EXPECT_EQ(unwindStopName(rows.stop), std::string(unwindStopName(dwfl.stop)));
    return rows;
}

// x86_64 perf_regs: the mask perf records with (all but DS, ES, FS, GS) and a
// register file in it, set by perf_regs bit.
constexpr uint64_t kX86Mask = 0xff0fffull;
struct X86Regs {
    uint64_t byBit[24] = {};
    std::vector<uint8_t> bytes() const {
        std::vector<uint8_t> out;
        for (int bit = 0; bit < 24; ++bit) {
            if (!(kX86Mask >> bit & 1)) continue;
            const uint8_t* p = reinterpret_cast<const uint8_t*>(&byBit[bit]);
            out.insert(out.end(), p, p + 8);
        }
        return out;
    }
};
constexpr int kBp = 6, kSp = 7, kIp = 8;

template <typename T>
void put(std::vector<uint8_t>& stack, size_t offset, T v) {
    std::memcpy(stack.data() + offset, &v, sizeof v);
}

// A return address into mid() of the frame-pointer build: there the CFA is
// rbp + 16, the caller's rbp at CFA - 16 and the return address at CFA - 8.
uint64_t returnAddressInMid(const StackCapture& c, int32_t& pid) {
    DwarfUnwinder unwinder(*c.images, c.machine);
    auto w = unwinder.worker();
    for (const StackSample& s : c.samples) {
        std::vector<uint64_t> f;
        unwinder.unwind(*w, s.pid, c.copyOf(s), f);
        for (size_t i = 1; i < f.size(); ++i)
            if (c.functionName(s.pid, f[i]) == "mid" && c.functionName(s.pid, f[i - 1]) == "mid") {
                pid = s.pid;
                return f[i] + 1;
            }
    }
    return 0;
}

}  // namespace

TEST(DwarfUnwindBadInput, TruncatedStackCopyGivesAPrefix) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp");
    if (!c) return;
    const auto full = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
    std::map<std::string, size_t> stops;
    size_t cut = 0, trampolines = 0;
    for (size_t keep : {size_t(0), size_t(8), size_t(64), size_t(512)}) {
        for (size_t i = 0; i < c->samples.size(); ++i) {
            const StackSample& s = c->samples[i];
            UserStackCopy copy = c->copyOf(s);
            copy.stack = copy.stack.first(std::min(keep, copy.stack.size()));
            const Unwound u = unwindBoth(*c, s.pid, copy);
            ASSERT_LE(u.frames.size(), full[i].frames.size());
            // A prefix; but where the copy ends right after the signal trampoline,
            // libdwfl no longer knows it for one (its caller cannot be unwound)
            // and lists its address minus one, as for a caller.
            const size_t n = u.frames.size();
            const bool trampolineLast = n > 0 && u.frames[n - 1] + 1 == full[i].frames[n - 1] &&
                                        c->isSignalTrampoline(s.pid, full[i].frames[n - 1]);
            EXPECT_TRUE(std::equal(u.frames.begin(), u.frames.end() - (trampolineLast ? 1 : 0),
                                   full[i].frames.begin()) &&
                        (trampolineLast || n == 0 || u.frames[n - 1] == full[i].frames[n - 1]))
                << "sample " << i << " cut to " << keep << ":" << hexList(u.frames)
                << "\n  full:" << hexList(full[i].frames);
            trampolines += trampolineLast;
            if (u.frames.size() < full[i].frames.size()) {
                ++cut;
                ++stops[unwindStopName(u.stop)];
                // Cut short by the copy's end, or by a register the CFI restores from beyond it.
                EXPECT_TRUE(u.stop == UnwindStop::StackCopyEnd || u.stop == UnwindStop::Error)
                    << unwindStopName(u.stop);
            }
        }
    }
    std::string histogram;
    for (const auto& [name, n] : stops)
        histogram += " " + name + "=" + std::to_string(n);
    std::printf(
        "stack copies cut to 0, 8, 64, 512 bytes: %zu unwinds cut short (%zu right after the signal "
        "trampoline):%s\n",
        cut, trampolines, histogram.c_str());
    EXPECT_GT(stops["stack copy end"], cut / 2);
}

TEST(DwarfUnwindBadInput, MissingRegistersAreCounted) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp");
    if (!c) return;
    const StackSample& s = c->samples.front();
    DwarfUnwinder unwinder(*c->images, c->machine);
    auto w = unwinder.worker();
    std::vector<uint64_t> f;
    UserStackCopy copy = c->copyOf(s);
    copy.abi = PERF_SAMPLE_REGS_ABI_NONE;  // a kernel thread's sample
    EXPECT_EQ(unwinder.unwind(*w, s.pid, copy, f), UnwindStop::NoRegisters);
    copy = c->copyOf(s);
    copy.regs = {};  // none recorded
    EXPECT_EQ(unwinder.unwind(*w, s.pid, copy, f), UnwindStop::NoRegisters);
    copy = c->copyOf(s);
    copy.regs = copy.regs.first(8 * 7);  // cut before SP and IP
    EXPECT_EQ(unwinder.unwind(*w, s.pid, copy, f), UnwindStop::NoRegisters);
    std::vector<uint8_t> noSp;  // the mask without SP (bit 7): IP lands at SP's slot
    for (size_t i = 0; i < s.regs.size() / 8; ++i)
        if (i != 7) noSp.insert(noSp.end(), s.regs.begin() + 8 * i, s.regs.begin() + 8 * i + 8);
    copy = c->copyOf(s);
    copy.regsMask = s.mask & ~(uint64_t(1) << 7);
    copy.regs = noSp;
    EXPECT_EQ(unwinder.unwind(*w, s.pid, copy, f), UnwindStop::NoRegisters);
    EXPECT_TRUE(f.empty());
    // An unknown architecture has no register layout.
    DwarfUnwinder unknown(*c->images, 0);
    auto uw = unknown.worker();
    EXPECT_EQ(unknown.unwind(*uw, s.pid, c->copyOf(s), f), UnwindStop::NoRegisters);
    EXPECT_TRUE(f.empty());
}

TEST(DwarfUnwindBadInput, GarbageRegistersAndStacks) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp");
    if (!c) return;
    std::mt19937_64 random(25);
    const int32_t pid = c->samples.front().pid;
    const auto modules = c->images->mappedModules(pid);
    std::map<std::string, size_t> stops;
    const auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < 3000; ++round) {
        X86Regs regs;
        for (uint64_t& r : regs.byBit)
            r = random();
        std::vector<uint8_t> stack(size_t(random() % 2048) * 8);
        for (uint8_t& b : stack)
            b = uint8_t(random());
        // Now and then plausible values: a PC in the program's code, an SP at
        // the copy, stack words pointing into the copy or at code.
        const uint64_t sp = 0x7ffd00000000ull + (random() % 0x100000) * 8;
        if (round % 2) regs.byBit[kSp] = sp;
        if (round % 3 && !modules.empty()) {
            const auto& m = modules[size_t(random() % modules.size())];
            regs.byBit[kIp] = m.start + random() % (m.end - m.start);
        }
        if (round % 5 == 0) regs.byBit[kBp] = sp + (random() % 64) * 8;
        for (size_t o = 0; round % 4 == 0 && o + 8 <= stack.size(); o += 8)
            if (random() % 3 == 0 && !modules.empty()) {
                const auto& m = modules[size_t(random() % modules.size())];
                put<uint64_t>(stack, o,
                              random() % 2 ? m.start + random() % (m.end - m.start)
                                           : sp + (random() % (stack.size() / 8 + 1)) * 8);
            }
        const std::vector<uint8_t> bytes = regs.bytes();
        const UserStackCopy copy{PERF_SAMPLE_REGS_ABI_64, kX86Mask, bytes, stack};
        const Unwound u = unwindBoth(*c, pid, copy, 512);
        ASSERT_GE(u.frames.size(), 1u);  // the sampled PC at least
        ASSERT_LE(u.frames.size(), 512u);
        ++stops[unwindStopName(u.stop)];
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string histogram;
    for (const auto& [name, n] : stops)
        histogram += " " + name + "=" + std::to_string(n);
    std::printf("3000 garbage register files and stacks, both engines, %.2f s:%s\n", seconds,
                histogram.c_str());
    EXPECT_LT(seconds, 60.0);
}

TEST(DwarfUnwindBadInput, LoopingFramesStop) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_FP, "stacks_prog_fp");
    if (!c) return;
    int32_t pid = -1;
    const uint64_t ret = returnAddressInMid(*c, pid);
    ASSERT_NE(ret, 0u) << "no mid -> mid frame in the recording";
    const uint64_t sp = 0x7ffc00000000ull;
    // A frame whose saved rbp points at itself: its caller is itself again.
    std::vector<uint8_t> stack(64);
    put<uint64_t>(stack, 0, sp);
    put<uint64_t>(stack, 8, ret);
    X86Regs regs;
    regs.byBit[kSp] = sp, regs.byBit[kBp] = sp, regs.byBit[kIp] = ret;
    const std::vector<uint8_t> bytes = regs.bytes();
    const Unwound u = unwindBoth(*c, pid, UserStackCopy{PERF_SAMPLE_REGS_ABI_64, kX86Mask, bytes, stack});
    EXPECT_EQ(u.stop, UnwindStop::Loop);
    EXPECT_EQ(u.frames, (std::vector<uint64_t>{ret, ret - 1}));

    // A chain of 1000 distinct frames whose last one points back to the 500th:
    // found by the hashed check (past 64 frames).
    constexpr size_t kChain = 1000;
    std::vector<uint8_t> chain(16 * kChain + 64);
    for (size_t k = 0; k < kChain; ++k) {
        put<uint64_t>(chain, 16 * k, k + 1 < kChain ? sp + 16 * (k + 1) : sp + 16 * 500);
        put<uint64_t>(chain, 16 * k + 8, ret);
    }
    const Unwound l =
        unwindBoth(*c, pid, UserStackCopy{PERF_SAMPLE_REGS_ABI_64, kX86Mask, bytes, chain}, 100000);
    EXPECT_EQ(l.stop, UnwindStop::Loop);
    EXPECT_GT(l.frames.size(), kChain - 10);
    EXPECT_LT(l.frames.size(), kChain + 10);
}

TEST(DwarfUnwindBadInput, HundredThousandFramesInBoundedTime) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_FP, "stacks_prog_fp");
    if (!c) return;
    int32_t pid = -1;
    const uint64_t ret = returnAddressInMid(*c, pid);
    ASSERT_NE(ret, 0u);
    // 10^5 frames of mid, each 16 bytes (saved rbp -> the next, the return
    // address), in a 1.6 MB copy: more than perf ever copies (64 KiB).
    constexpr size_t kFrames = 100000;
    const uint64_t sp = 0x7f0000000000ull;
    std::vector<uint8_t> stack(16 * kFrames);
    for (size_t k = 0; k < kFrames; ++k) {
        put<uint64_t>(stack, 16 * k, sp + 16 * (k + 1));
        put<uint64_t>(stack, 16 * k + 8, ret);
    }
    X86Regs regs;
    regs.byBit[kSp] = sp, regs.byBit[kBp] = sp, regs.byBit[kIp] = ret;
    const std::vector<uint8_t> bytes = regs.bytes();
    const UserStackCopy copy{PERF_SAMPLE_REGS_ABI_64, kX86Mask, bytes, stack};
    const auto start = std::chrono::steady_clock::now();
    const Unwound all = unwindBoth(*c, pid, copy, 2 * kFrames);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(all.stop, UnwindStop::StackCopyEnd);
    EXPECT_EQ(all.frames.size(), kFrames + 1);
    std::printf("%zu frames unwound by both engines in %.2f s (%s)\n", all.frames.size(), seconds,
                unwindStopName(all.stop));
    EXPECT_LT(seconds, 30.0);
    const Unwound capped = unwindBoth(*c, pid, copy);
    EXPECT_EQ(capped.stop, UnwindStop::MaxFrames);
    EXPECT_EQ(capped.frames.size(), 127u);
}

// The program recorded from a copy that is then replaced by another build (the
// recorded build-id no longer matches), then removed: the frames stop at the
// first frame in it, counted as a missing image (the other build is rejected by
// the resolver with a note, never read as the program's code).
TEST(DwarfUnwindBadInput, BinaryThatNoLongerMatches) {
    if (std::string why = perfRecordUnavailable(); !why.empty()) {
        FAIL() << "cannot record with perf: " << why;
    }
    char dirTemplate[] = "/tmp/auxscope-unwind-XXXXXX";
    ASSERT_NE(mkdtemp(dirTemplate), nullptr);
    const std::string dir = dirTemplate, prog = dir + "/prog", data = dir + "/prog.data";
    std::filesystem::copy_file(AUXSCOPE_STACKS_PROG_NOFP, prog);
    int status = 0;
    const std::string out = runShell("perf record -e cpu-clock -F 2000 --call-graph dwarf -o " +
                                         shellQuote(data) + " -- " + shellQuote(prog) + " 200",
                                     &status, true);
    ASSERT_EQ(status, 0) << out;
    std::filesystem::remove(prog);
    std::filesystem::copy_file(AUXSCOPE_STACKS_PROG_FP, prog);  // another build at the recorded path
    ImageOptions options;
    options.buildIdCache = dir + "/no-build-id-cache";  // not perf's copy in ~/.debug
    std::string error;
    for (bool removed : {false, true}) {
        if (removed) std::filesystem::remove(prog);
        auto c = StackCapture::load(data, error, options);
        ASSERT_TRUE(c) << error;
        std::map<UnwindStop, size_t> stops;
        for (const StackSample& s : c->samples) {
            const Unwound u = unwindBoth(*c, s.pid, c->copyOf(s));
            ++stops[u.stop];
            if (u.stop == UnwindStop::WrongImage || u.stop == UnwindStop::MissingImage) {
                // The vdso is missing too now and then: its copy is in the
                // build-id cache this test points away from.
                const std::string at = c->images->mappingAt(s.pid, u.frames.back());
                EXPECT_TRUE(at == prog || at == "[vdso]") << at;
            }
        }
        // The other build at the recorded path is rejected by its build-id
        // (issue 27: ImageResolver takes no file of another build, and says so):
        // both stop where the program's code is missing.
        const UnwindStop expected = UnwindStop::MissingImage;
        if (!removed) {
            bool noted = false;
            for (const std::string& n : c->images->notes())
                noted |= n.rfind(prog + ": rejected for " + prog, 0) == 0;
            EXPECT_TRUE(noted) << "no note rejects " << prog;
        }
        std::printf("%s: %zu of %zu samples stop with %s\n", removed ? "removed" : "replaced",
                    stops[expected], c->samples.size(), unwindStopName(expected));
        EXPECT_GT(stops[expected], c->samples.size() / 2);
    }
    std::filesystem::remove_all(dir);
}

// The lead's profile unwinds on several threads at once, a Worker each: the
// same frames as one thread gets.
TEST(DwarfUnwindEngines, WorkersOnThreadsAgree) {
    auto c = loadProgram(AUXSCOPE_STACKS_PROG_NOFP, "stacks_prog_nofp");
    if (!c) return;
    const auto single = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
    for (auto engine : {DwarfUnwinder::Engine::CfiRows, DwarfUnwinder::Engine::Libdwfl}) {
        DwarfUnwinder unwinder(*c->images, c->machine, DwarfUnwinder::Options{engine});
        constexpr size_t kThreads = 3;
        std::vector<Unwound> results(c->samples.size());
        std::vector<std::thread> threads;
        for (size_t t = 0; t < kThreads; ++t)
            threads.emplace_back([&, t] {
                auto w = unwinder.worker();
                for (int round = 0; round < 2; ++round)  // twice: the second time from warm caches
                    for (size_t i = t; i < c->samples.size(); i += kThreads) {
                        Unwound u;
                        u.stop = unwinder.unwind(*w, c->samples[i].pid, c->copyOf(c->samples[i]), u.frames);
                        results[i] = std::move(u);
                    }
            });
        for (std::thread& t : threads)
            t.join();
        for (size_t i = 0; i < results.size(); ++i) {
            EXPECT_EQ(results[i].frames, single[i].frames) << "sample " << i;
            EXPECT_EQ(results[i].stop, single[i].stop) << "sample " << i;
        }
    }
}

// CFI only in the MiniDebugInfo (.gnu_debugdata, as Fedora ships binaries):
// the CFI-row engine unwinds through the program's frames; libdwfl's unwinder
// never looks there (its frames stop in the program: the one place the
// engines differ by design).
TEST(DwarfUnwindMiniDebugInfo, CfiFromGnuDebugdata) {
    const std::string program = AUXSCOPE_STACKS_PROG_MINIDEBUGINFO;
    if (program.empty()) {
        GTEST_SKIP() << "stacks_prog_minidebuginfo was not built (objcopy or xz missing)";
    }
    auto c = loadProgram(program.c_str(), "stacks_prog_minidebuginfo");
    if (!c) return;
    const auto rows = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
    const auto dwfl = unwindAll(*c, DwarfUnwinder::Engine::Libdwfl);
    size_t deep = 0, deeperThanLibdwfl = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const auto n = names(*c, c->samples[i], rows[i]);
        if (contains(n, {"leaf", "mid", "mid", "mid", "hot", "main"})) ++deep;
        deeperThanLibdwfl += rows[i].frames.size() > dwfl[i].frames.size();
        if (n.size() > 1 && (n[0] == "leaf" || n[0] == "mid" || n[0] == "hot")) {
            EXPECT_EQ(rows[i].stop, UnwindStop::Complete) << n[0];
        }
    }
    std::printf(
        "%zu samples: %zu through main>hot>mid>mid>mid>leaf from .gnu_debugdata's CFI, %zu unwound deeper "
        "than libdwfl's unwinder does\n",
        rows.size(), deep, deeperThanLibdwfl);
    EXPECT_GT(deep, 0u);
    EXPECT_GT(deeperThanLibdwfl, rows.size() / 2);
}

// A 32-bit task on this x86_64 kernel: PERF_SAMPLE_REGS_ABI_32, its registers
// as i386 DWARF registers, 4-byte stack words. perf here cannot unwind it
// ("unwind: target platform=x86 is not supported": Debian's perf unwinds with
// libunwind, built for x86_64 only), so the program's known stack is the oracle,
// and both engines agree on every sample.
TEST(DwarfUnwind32Bit, I386TaskOnX8664) {
    const std::string program = AUXSCOPE_STACKS_PROG32;
    if (program.empty()) {
        GTEST_SKIP() << "stacks_prog32 was not built: " << AUXSCOPE_STACKS_PROG32_REASON;
    }
    auto c = loadProgram(program.c_str(), "stacks_prog32");
    if (!c) return;
    const auto rows = unwindAll(*c, DwarfUnwinder::Engine::CfiRows);
    const auto dwfl = unwindAll(*c, DwarfUnwinder::Engine::Libdwfl);
    size_t abi32 = 0, whole = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const StackSample& s = c->samples[i];
        abi32 += s.abi == PERF_SAMPLE_REGS_ABI_32;
        EXPECT_EQ(rows[i].frames, dwfl[i].frames);
        EXPECT_EQ(rows[i].stop, dwfl[i].stop);
        const auto n = names(*c, s, rows[i]);
        if (n == std::vector<std::string>{"leaf32", "mid32", "mid32", "mid32", "mid32", "hot32", "_start"} ||
            n == std::vector<std::string>{"leaf32", "mid32", "mid32", "mid32", "hot32", "_start"}) {
            ++whole;
            EXPECT_EQ(rows[i].stop, UnwindStop::Complete);
        }
    }
    std::printf(
        "%zu samples (%zu with 32-bit registers): %zu unwound _start>hot32>mid32...>leaf32, complete\n",
        rows.size(), abi32, whole);
    EXPECT_EQ(abi32, rows.size());
    EXPECT_GT(whole, rows.size() * 9 / 10);
}
