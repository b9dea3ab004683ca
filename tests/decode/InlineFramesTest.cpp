// SPDX-License-Identifier: GPL-3.0-or-later
// Inlined frames (images/InlineFrames) against perf script --inline: at every
// user frame of every sample of the test program's recording (stacks_prog_nofp
// for 2 s, scale() inlined into leaf), the functions DWARF says were inlined at
// its address are the ones perf names, and scale() is among them exactly where
// perf says so, with the call site in leaf.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "StackCaptures.h"
#include "images/InlineFrames.h"
#include "samples/DwarfUnwinder.h"

using namespace auxscope;
using namespace auxscope::test_support;

namespace {

std::unique_ptr<StackCapture> loadNoFramePointers() {
    if (std::string why = perfRecordUnavailable(); !why.empty()) {
        ADD_FAILURE() << "cannot record with perf: " << why;
        return nullptr;
    }
    std::string error;
    // The 2 s recording samples_unwind_tests makes too: 400 ms on a loaded
    // machine may hold only a handful of samples in leaf.
    const std::string file = recordOnce("stacks_prog_nofp_2s", AUXSCOPE_STACKS_PROG_NOFP, "2000",
                                        "-F 2000 --call-graph dwarf", error);
    if (file.empty()) {
        ADD_FAILURE() << error;
        return nullptr;
    }
    auto c = StackCapture::load(file, error);
    if (!c) ADD_FAILURE() << file << ": " << error;
    return c;
}

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v)
        s += (s.empty() ? "" : " > ") + x;
    return s;
}

// A demangled C++ name without its parameter list: InlineFrames names
// functions as the symbol table does (demangled with parameters), perf script
// without them.
std::string withoutParameters(const std::string& name) {
    size_t end = name.size();
    for (const char* qualifier : {" const", " volatile", " &&", " &"})
        if (end >= std::strlen(qualifier) &&
            name.compare(end - std::strlen(qualifier), std::string::npos, qualifier) == 0)
            end -= std::strlen(qualifier);
    if (end == 0 || name[end - 1] != ')') return name;
    int depth = 0;
    for (size_t i = end; i-- > 0;) {
        if (name[i] == ')') ++depth;
        if (name[i] == '(' && --depth == 0) return i > 0 ? name.substr(0, i) : name;
    }
    return name;
}

// perf lists the function holding the address as "(inlined)" too, outermost,
// when the name DWARF gives it is not the name of the ELF symbol perf chose
// there (glibc's __libc_start_main_impl at __libc_start_main, ld.so's __mmap64
// in a stripped file, libtsan's interceptors under one of their aliases).
// InlineFrames lists DW_TAG_inlined_subroutine scopes only, never that
// function: perf's chain is then ours with one more name first.
bool perfNamesTheFunction(const std::vector<std::string>& ours, const std::vector<std::string>& perf) {
    return perf.size() == ours.size() + 1 && std::equal(ours.begin(), ours.end(), perf.begin() + 1);
}

}  // namespace

TEST(InlineFrames, AsPerfScriptNamesThem) {
    auto c = loadNoFramePointers();
    if (!c) return;
    std::string error;
    const PerfInlineFrames perf = perfScriptInlineFrames(c->path, error);
    ASSERT_TRUE(error.empty()) << error;
    DwarfUnwinder unwinder(*c->images, c->machine);
    auto unwindWorker = unwinder.worker();
    InlineFrames inlines(*c->images);
    auto worker = inlines.worker();
    size_t frames = 0, withInlines = 0, equal = 0, scaleFrames = 0, differ = 0, skipped = 0,
           functionItself = 0, sameTime = 0;
    for (const StackSample& s : c->samples) {
        auto it = perf.find({s.tid, s.time});
        if (it == perf.end()) {
            // Two samples of the thread at the same time: which of perf's is which is unknown.
            ++sameTime;
            continue;
        }
        std::vector<uint64_t> ours;
        unwinder.unwind(*unwindWorker, s.pid, c->copyOf(s), ours);
        if (ours.size() != it->second.size()) {
            // Frames that do not pair up one to one (the frames themselves are
            // samples_unwind_tests' business): perf prints some addresses twice
            // without "(inlined)" (libc's write: __GI___libc_write twice) and
            // this parser takes the second line for another frame.
            ++skipped;
            continue;
        }
        for (size_t i = 0; i < ours.size(); ++i) {
            const PerfInlineFrame& pf = it->second[i];
            if (c->perfAddress(s.pid, ours[i]) != pf.address) continue;  // that __restore_rt frame
            ++frames;
            // perf lists innermost first; InlineFrames outermost first.
            const std::vector<std::string> expected(pf.inlined.rbegin(), pf.inlined.rend());
            std::vector<std::string> got;
            bool scale = false;
            for (const InlineFrame& f : inlines.at(*worker, s.pid, ours[i])) {
                got.push_back(withoutParameters(std::string(f.function)));
                if (f.function == "scale") {
                    scale = true;
                    EXPECT_NE(f.callFile.find("stacks_prog.c"), std::string_view::npos) << f.callFile;
                    EXPECT_EQ(f.callLine, 38u) << "scale(x) is called on line 38 of stacks_prog.c";
                }
            }
            if (!expected.empty()) ++withInlines;
            if (scale) {
                ++scaleFrames;
                EXPECT_EQ(c->functionName(s.pid, ours[i]), "leaf");
            }
            if (got == expected) {
                ++equal;
            } else if (perfNamesTheFunction(got, expected)) {
                ++functionItself;
            } else if (++differ <= 10) {
                ADD_FAILURE() << "frame " << std::hex << pf.address << std::dec << " ("
                              << c->functionName(s.pid, ours[i]) << "): ours [" << join(got) << "], perf ["
                              << join(expected) << "]";
            }
        }
    }
    std::printf(
        "%zu frames compared (%zu samples skipped, %zu sharing their thread's time with another), %zu with "
        "inlined functions in perf script: %zu equal, %zu where perf also lists the function itself (its "
        "DWARF name is not its symbol's), %zu differ; scale() inlined into leaf at %zu frames\n",
        frames, skipped, sameTime, withInlines, equal, functionItself, differ, scaleFrames);
    EXPECT_EQ(differ, 0u);
    EXPECT_LE(sameTime, c->samples.size() / 100);
    EXPECT_GT(scaleFrames, 0u);
    EXPECT_GT(frames, 500u);
}

// Several threads ask at once, each through its own worker, and get the same answers.
TEST(InlineFrames, WorkersOnThreadsAgree) {
    auto c = loadNoFramePointers();
    if (!c) return;
    DwarfUnwinder unwinder(*c->images, c->machine);
    std::vector<std::pair<int32_t, uint64_t>> addresses;
    {
        auto w = unwinder.worker();
        for (const StackSample& s : c->samples) {
            std::vector<uint64_t> f;
            unwinder.unwind(*w, s.pid, c->copyOf(s), f);
            for (uint64_t a : f)
                addresses.push_back({s.pid, a});
        }
    }
    InlineFrames inlines(*c->images);
    auto chains = [&](std::vector<std::string>& out) {
        auto w = inlines.worker();
        for (const auto& [pid, a] : addresses) {
            std::string chain;
            for (const InlineFrame& f : inlines.at(*w, pid, a))
                chain += std::string(f.function) + "@" + std::string(f.callFile) + ":" +
                         std::to_string(f.callLine) + ";";
            out.push_back(chain);
        }
    };
    std::vector<std::string> one, two, three;
    chains(one);
    std::thread a([&] { chains(two); }), b([&] { chains(three); });
    a.join(), b.join();
    EXPECT_EQ(one, two);
    EXPECT_EQ(one, three);
}
