// SPDX-License-Identifier: GPL-3.0-or-later
// Sampled profiles against perf as the oracle: the test program
// (tests/samples/stacks_prog.c) recorded by perf itself with call stacks, then
// auxscope's samples/SampleProfile and computeSampleRangeStats compared with
// `perf report` (self and total samples per symbol) and `perf script` (every
// sample's stack, frame by frame).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "TestSupport.h"
#include "images/ElfSymbols.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

using namespace auxscope;
using test_support::runCommand;
using test_support::TempDir;

namespace {

struct Recorded {
    std::string path;
    std::shared_ptr<const SampleProfile> profile;
};

// perf record of `program` with `callGraph` (perf's --call-graph argument, or
// "" for none), a sample every ms of CPU time: every sample has the same
// period, so perf report's percentages of the period are shares of samples.
std::string recordWithPerf(const TempDir& dir, const std::string& callGraph, const std::string& program,
                           const std::string& extra = "") {
    const std::string path = (dir.path / "perf.data").string();
    std::string log;
    const std::string cg = callGraph.empty() ? "" : " --call-graph " + callGraph;
    const int rc = runCommand(
        "perf record -q -e cpu-clock -c 1000000" + cg + extra + " -o " + path + " -- " + program + " 700",
        &log);
    if (rc != 0) return "perf record failed (" + std::to_string(rc) + "): " + log;
    return path;
}

std::shared_ptr<const SampleProfile> load(const std::string& path, bool inlineFrames = true) {
    auto file = PerfDataReader::open(path);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return nullptr;
    auto sideband = Sideband::load(*file);
    EXPECT_TRUE(sideband) << sideband.error().message;
    if (!sideband) return nullptr;
    SampleProfileOptions options;
    options.inlineFrames = inlineFrames;
    auto profile =
        SampleProfile::load(*file, std::make_shared<const Sideband>(std::move(*sideband)), options);
    EXPECT_TRUE(profile) << profile.error().message;
    return profile ? *profile : nullptr;
}

// Names without their symbol version ("@GLIBC_2.2.5", "@@GLIBC_2.17"): aliases
// at one address differ only in it.
std::string plain(std::string name) {
    if (auto at = name.find('@'); at != std::string::npos && name.find("@plt") == std::string::npos)
        name.resize(at);
    return name;
}

// Names both sides give: not an address, not unknown, not in a PLT. perf 6.1
// names PLT slots after the PLT relocations in their table's order, which is
// not the slots' order in libc.so.6 (its IRELATIVE relocations are listed last,
// their slots come first): it names some slots after another slot's function,
// or "@plt". Ours follow the GOT entries, as objdump names them
// (ElfSymbolsPlt below checks them against objdump).
bool resolved(const std::string& name) {
    return !name.empty() && name.find("[unknown]") == std::string::npos && name.rfind("0x", 0) != 0 &&
           name.find_first_not_of("0123456789abcdef") != std::string::npos &&
           name.find("[plt]") == std::string::npos &&
           !(name.size() >= 4 && name.compare(name.size() - 4, 4, "@plt") == 0);
}

// `perf report --sort sym` of the file: self and total (children) samples per symbol.
struct PerfCounts {
    uint64_t samples = 0;
    std::map<std::string, uint64_t> self, total;
};

PerfCounts perfReport(const std::string& path, bool callchains) {
    PerfCounts out;
    std::string text;
    // Without callchains perf has no children column: total is self.
    runCommand("perf report -i " + path + " --stdio --no-inline -n -g none --sort sym" +
                   (callchains ? " --children" : " --no-children"),
               &text, false);
    std::istringstream in(text);
    std::string line;
    std::vector<std::pair<std::string, double>> percentages;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        // "    62.71%     0.00%             0  [.] start_thread"
        std::istringstream f(line);
        std::string children, self, tag;
        uint64_t selfSamples = 0;
        if (callchains ? !(f >> children >> self >> selfSamples >> tag) : !(f >> self >> selfSamples >> tag))
            continue;
        if (!callchains) children = self;
        std::string name;
        std::getline(f, name);
        name = plain(name.substr(name.find_first_not_of(' ')));
        while (!name.empty() && name.back() == ' ')
            name.pop_back();
        out.self[name] += selfSamples;
        out.samples += selfSamples;  // every sample is one symbol's self
        percentages.push_back({name, std::stod(children)});
    }
    // Children are percentages of the period (two decimals): exact counts below 10,000 samples.
    for (const auto& [name, pct] : percentages)
        out.total[name] += uint64_t(std::llround(pct * double(out.samples) / 100.0));
    return out;
}

// Every sample's stack as `perf script` prints it: (time text, names leaf first).
std::vector<std::pair<std::string, std::vector<std::string>>> perfScriptStacks(const std::string& path) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    std::string text;
    runCommand("perf script -i " + path + " -F tid,time,ip,sym --no-inline", &text, false);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        if (line[0] != '\t') {
            // "  27017  1857.152847:      5556b3599405 spin": without a callchain
            // the sampled address and its symbol end the line.
            out.push_back({line, {}});
            const size_t colon = line.find(": ");
            std::istringstream rest(colon == std::string::npos ? std::string() : line.substr(colon + 2));
            std::string address, name;
            if (rest >> address) {
                std::getline(rest, name);
                if (auto b = name.find_first_not_of(' '); b != std::string::npos)
                    out.back().second.push_back(plain(name.substr(b)));
            }
            continue;
        }
        if (out.empty()) continue;
        // "\t    55d5a2e0b1f9 leaf"
        std::istringstream f(line);
        std::string address, name;
        f >> address;
        std::getline(f, name);
        if (auto b = name.find_first_not_of(' '); b != std::string::npos) name = name.substr(b);
        if (auto p = name.find(" ("); p != std::string::npos && name.back() == ')') name.resize(p);
        out.back().second.push_back(plain(name));
    }
    return out;
}

std::map<std::string, RangeCost> byName(const SampleProfile& profile, const RangeStats& stats) {
    std::map<std::string, RangeCost> out;
    for (const FunctionStats& f : stats.functions)
        out[plain(profile.functions()[f.function].name)] += f.cost;
    return out;
}

class SampleProfilePerf : public ::testing::Test {
protected:
    void check(const std::string& callGraph, const std::string& program) {
        TempDir dir("samples");
        const std::string path = recordWithPerf(dir, callGraph, program);
        if (path.rfind("perf record failed", 0) == 0) GTEST_SKIP() << path;
        // perf report --no-inline: a symbol's function per frame, as perf counts self.
        auto profile = load(path, false);
        ASSERT_TRUE(profile);
        ASSERT_FALSE(profile->events().empty());
        SampleQuery q;
        q.event = 0;
        auto stats = computeSampleRangeStats(*profile, q);
        ASSERT_TRUE(stats) << stats.error().message;
        const PerfCounts perf = perfReport(path, !callGraph.empty());
        ASSERT_GT(perf.samples, 100u) << "too few samples to compare";
        ASSERT_LT(perf.samples, 10000u) << "perf's children percentages resolve single samples below 10,000";
        EXPECT_EQ(stats->tree.nodes[0].cost.totalSamples, perf.samples);
        // Sample by sample: the stacks perf script prints, resolved names only.
        const auto script = perfScriptStacks(path);
        ASSERT_EQ(script.size(), profile->size());
        size_t differing = 0, astray = 0;
        for (size_t i = 0; i < script.size(); ++i) {
            std::vector<std::string> mine;
            for (const SampleProfile::Frame& f : profile->stack(i))
                mine.push_back(plain(profile->functions()[f.function].name));
            const std::vector<std::string>& theirs = script[i].second;
            auto agree = [&](size_t k) { return !resolved(theirs[k]) || mine[k] == theirs[k]; };
            bool same = mine.size() == theirs.size();
            for (size_t k = 0; same && k < mine.size(); ++k)
                same = agree(k);
            // perf's libunwind went astray on its last step (at exit: _fini ->
            // __run_exit_handlers -> the data object __quick_exit_funcs) where
            // ours goes on to exit -> __libc_start_call_main -> _start: its
            // frames before that one agree with ours, ours is longer.
            bool lastStepAstray = !same && !theirs.empty() && theirs.size() <= mine.size() &&
                                  mine[theirs.size() - 1] != theirs.back();
            for (size_t k = 0; lastStepAstray && k + 1 < theirs.size(); ++k)
                lastStepAstray = agree(k);
            if (lastStepAstray) {
                ++astray;
                continue;
            }
            if (!same && ++differing <= 3)
                ADD_FAILURE() << "sample " << i << " (" << script[i].first << "): perf script has "
                              << ::testing::PrintToString(theirs) << ", auxscope "
                              << ::testing::PrintToString(mine);
        }
        EXPECT_EQ(differing, 0u) << "of " << script.size() << " samples";
        EXPECT_LE(astray, script.size() / 100) << "perf's unwinding went astray too often to compare";
        const auto ours = byName(*profile, *stats);
        size_t compared = 0;
        for (const auto& [name, n] : perf.self) {
            if (!resolved(name)) continue;
            auto it = ours.find(name);
            const uint64_t self = it == ours.end() ? 0 : it->second.selfSamples;
            const uint64_t total = it == ours.end() ? 0 : it->second.totalSamples;
            EXPECT_EQ(self, n) << "self samples of " << name;
            // perf 6.1 (libunwind) lists the signal trampoline's frame at its
            // address minus one, outside __restore_rt (samples_unwind_tests
            // count that apart): its total holds only the samples taken in it,
            // ours every sample of a handler too. It is compared when a sample
            // happens to land in it (then perf lists it at all), so sometimes.
            // Each sample whose last step perf took astray moves one count
            // between the functions of its outer frames.
            const uint64_t theirs = perf.total.at(name);
            if (name != "__restore_rt")
                EXPECT_LE(std::max(total, theirs) - std::min(total, theirs), astray)
                    << "total samples of " << name << ": ours " << total << ", perf's " << theirs;
            else
                EXPECT_GE(total + astray, theirs) << "total samples of " << name;
            ++compared;
        }
        // With stacks every caller counts too; without, the sampled functions alone.
        EXPECT_GT(compared, callGraph.empty() ? 3u : 10u);
        for (const char* f : {"main", "hot", "lib_inner", "spin"})
            EXPECT_TRUE(ours.count(f) ||
                        (callGraph.empty() && (f == std::string("main") || f == std::string("hot"))))
                << f << " is in no stack";
    }
};

}  // namespace

TEST_F(SampleProfilePerf, FramePointerCallchainsEqualPerfReport) {
    check("fp", AUXSCOPE_STACKS_PROG_FP);
}

// --call-graph dwarf on the build without frame pointers: perf unwinds with
// libunwind here, auxscope with its DWARF unwinder (samples/DwarfUnwinder).
TEST_F(SampleProfilePerf, DwarfUnwoundStacksEqualPerfReport) {
    check("dwarf", AUXSCOPE_STACKS_PROG_NOFP);
}

TEST_F(SampleProfilePerf, DwarfUnwoundStacksOfFramePointerCodeEqualPerfReport) {
    check("dwarf", AUXSCOPE_STACKS_PROG_FP);
}

TEST_F(SampleProfilePerf, SamplesWithoutStacksCountTheirFunction) {
    check("", AUXSCOPE_STACKS_PROG_FP);
}

// Each PLT slot as objdump -d names it ("realloc@plt"); a slot of an IRELATIVE
// relocation, which objdump names "*ABS*+0xRESOLVER@plt", after the ifunc
// whose resolver that is ("strnlen@plt"), or "[plt] FILE" where no symbol is
// there.
void checkPltNamesAgainstObjdump(const std::string& path, bool expectIfuncSlots) {
    std::string listing;
    ASSERT_EQ(runCommand("objdump -d -j .plt -j .plt.sec '" + path + "' 2>/dev/null", &listing, false), 0)
        << "objdump -d " << path;
    FunctionTable functions;
    auto symbols = ElfSymbols::load(path, functions, path);
    ASSERT_TRUE(symbols) << symbols.error().message;
    const std::string base = path.substr(path.rfind('/') + 1);
    size_t named = 0, ifuncs = 0, unnamedIfuncs = 0;
    std::istringstream in(listing);
    for (std::string line; std::getline(in, line);) {
        // "0000000000026030 <realloc@plt>:"
        const size_t open = line.find(" <"), close = line.rfind("@plt>:");
        if (open == std::string::npos || close == std::string::npos || close < open) continue;
        const uint64_t address = std::stoull(line.substr(0, open), nullptr, 16);
        const std::string theirs = line.substr(open + 2, close - open - 2);
        const std::string ours = functions[(*symbols)->functionAtAddress(address)].name;
        if (theirs.rfind("*ABS*+0x", 0) == 0) {
            const uint64_t resolver = std::stoull(theirs.substr(8), nullptr, 16);
            if (ours == "[plt] " + base) {
                ++unnamedIfuncs;
                continue;
            }
            ASSERT_TRUE(ours.size() > 4 && ours.compare(ours.size() - 4, 4, "@plt") == 0)
                << base << " slot 0x" << std::hex << address << ": " << ours;
            EXPECT_EQ((*symbols)->symbolAddress(ours.substr(0, ours.size() - 4)), resolver)
                << base << " slot 0x" << std::hex << address << " (objdump: " << theirs << "@plt) is "
                << ours;
            ++ifuncs;
        } else {
            EXPECT_EQ(ours, theirs + "@plt") << base << " slot 0x" << std::hex << address;
            ++named;
        }
    }
    EXPECT_GT(named, 0u) << "objdump names no PLT slot of " << path;
    if (expectIfuncSlots) EXPECT_GT(ifuncs, unnamedIfuncs) << "IRELATIVE slots named after their ifunc";
}

TEST(ElfSymbolsPlt, SlotsOfAProgramAsObjdumpNamesThem) {
    checkPltNamesAgainstObjdump(AUXSCOPE_STACKS_PROG_FP, false);
}

// libc.so.6: its IRELATIVE relocations (calls to its own ifuncs) are listed
// after the others, their slots come first.
TEST(ElfSymbolsPlt, SlotsOfLibcAsObjdumpNamesThemIfuncsByName) {
    std::string libc;
    ASSERT_EQ(runCommand("ldd '" AUXSCOPE_STACKS_PROG_FP "' | sed -n 's/.*libc.so.6 => \\([^ ]*\\).*/\\1/p'",
                         &libc, false),
              0);
    while (!libc.empty() && libc.back() == '\n')
        libc.pop_back();
    ASSERT_FALSE(libc.empty()) << "ldd names no libc.so.6";
    checkPltNamesAgainstObjdump(std::filesystem::canonical(libc).string(), true);
}

// The shape of the stacks the program makes, on its frame-pointer build.
TEST(SampleProfile, CallTreeHasTheProgramsStacks) {
    TempDir dir("samples");
    const std::string path = recordWithPerf(dir, "fp", AUXSCOPE_STACKS_PROG_FP);
    if (path.rfind("perf record failed", 0) == 0) GTEST_SKIP() << path;
    auto profile = load(path);
    ASSERT_TRUE(profile);
    SampleQuery q;
    auto stats = computeSampleRangeStats(*profile, q);
    ASSERT_TRUE(stats);
    const FunctionTable& fn = profile->functions();
    // Every stack through lib_work goes on to lib_inner or ends in it, under hot under main.
    bool libEdge = false, recursion = false;
    for (uint32_t n = 1; n < stats->tree.size(); ++n) {
        const auto path = stats->tree.stack(n);
        std::vector<std::string> names;
        for (uint32_t f : path)
            names.push_back(fn[f].name);
        for (size_t k = 1; k < names.size(); ++k) {
            libEdge |= names[k - 1] == "lib_work" && names[k] == "lib_inner";
            recursion |= names[k - 1] == "mid" && names[k] == "mid";
            // Under hot; or, as the leaf, under main: a sample in lib_work's
            // prologue or epilogue (its frame not yet or no longer set up)
            // unwinds by frame pointer through hot's frame and skips hot, in
            // perf's callchains as here (a clean-root run met it once).
            if (names[k] == "lib_work" && !(k + 1 == names.size() && names[k - 1] == "main"))
                EXPECT_EQ(names[k - 1], "hot");
        }
    }
    EXPECT_TRUE(libEdge);
    EXPECT_TRUE(recursion);
    // Recursion counts once in a function's total: mid's total is at most all samples under hot.
    const FunctionStats mid =
        *std::find_if(stats->functions.begin(), stats->functions.end(),
                      [&](const FunctionStats& f) { return fn[f.function].name == "mid"; });
    const FunctionStats hot =
        *std::find_if(stats->functions.begin(), stats->functions.end(),
                      [&](const FunctionStats& f) { return fn[f.function].name == "hot"; });
    EXPECT_LE(mid.cost.totalSamples, hot.cost.totalSamples);
    // Times: cpu-clock's period is ns of CPU time.
    EXPECT_TRUE(stats->source.periodIsTime);
    EXPECT_EQ(stats->tree.nodes[0].cost.totalTime, stats->tree.nodes[0].cost.totalPeriod);
    // A range and a thread: the parts add up to the whole.
    const uint64_t mid_t = profile->firstTime() + (profile->lastTime() - profile->firstTime()) / 2;
    SampleQuery a = q, b = q;
    a.end = mid_t, b.begin = mid_t;
    auto sa = computeSampleRangeStats(*profile, a), sb = computeSampleRangeStats(*profile, b);
    ASSERT_TRUE(sa && sb);
    EXPECT_EQ(sa->tree.nodes[0].cost.totalSamples + sb->tree.nodes[0].cost.totalSamples,
              stats->tree.nodes[0].cost.totalSamples);
    ASSERT_FALSE(stats->threads.empty());
    const int32_t tid = stats->threads.begin()->first;
    SampleQuery one = q;
    one.tids = {tid};
    one.perThreadTrees = true;
    auto st = computeSampleRangeStats(*profile, one);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->tree.nodes[0].cost.totalSamples, stats->threads.at(tid).samples);
    EXPECT_EQ(st->threads.at(tid).tree.nodes[0].cost.totalSamples, stats->threads.at(tid).samples);
    EXPECT_EQ(st->ofThread(tid).functions.size(), st->functions.size());
}

// Off-CPU time: perf record -e sched:sched_switch -g gives the stacks threads
// block in; the blocking thread's time goes to wait_on_pipe -> read.
TEST(SampleProfile, OffCpuTimeByTheStackThreadsBlockedIn) {
    TempDir dir("offcpu");
    const std::string path = (dir.path / "perf.data").string();
    std::string log;
    const int rc = runCommand("perf record -q -e sched:sched_switch -g --switch-events -o " + path + " -- " +
                                  std::string(AUXSCOPE_STACKS_PROG_FP) + " 500",
                              &log);
    if (rc != 0) GTEST_SKIP() << "perf record -e sched:sched_switch failed: " << log;
    auto profile = load(path);
    ASSERT_TRUE(profile);
    ASSERT_FALSE(profile->offCpu().empty());
    EXPECT_TRUE(profile->hasOffCpuStacks());
    SampleQuery q;
    q.event = SampleQuery::kOffCpu;
    auto stats = computeSampleRangeStats(*profile, q);
    ASSERT_TRUE(stats) << stats.error().message;
    EXPECT_EQ(stats->source.kind, RangeSource::OffCpu);
    const auto ours = byName(*profile, *stats);
    // The blocker sleeps in read() most of its life (wait_on_pipe calls read,
    // which keeps no frame pointer: the frame-pointer chain goes from read to
    // blocker_thread): its off-CPU time is under blocker_thread -> read, in the kernel's
    // pipe read, and it is the thread with the most.
    ASSERT_TRUE(ours.count("blocker_thread"));
    ASSERT_TRUE(ours.count("anon_pipe_read") || ours.count("pipe_read"));
    uint64_t mostOff = 0;
    for (const auto& [tid, t] : stats->threads)
        mostOff = std::max(mostOff, t.offCpuTime);
    EXPECT_GT(ours.at("blocker_thread").totalTime, mostOff / 2);
    EXPECT_LE(ours.at("blocker_thread").totalTime, mostOff);
    // Wall clock: on-CPU + off-CPU per thread is at most the range.
    for (const auto& [tid, t] : stats->threads)
        EXPECT_LE(t.onCpuTime + t.offCpuTime,
                  profile->sideband().model().lastTime() - profile->sideband().model().firstTime() + 1)
            << tid;
}

// Inlined functions are frames of their own: scale() inlined into leaf, in the
// -O2 build's DWARF, with its own self samples; leaf's symbol-level self is
// the sum of the two.
TEST(SampleProfile, InlinedFunctionsAreFrames) {
    TempDir dir("samples");
    const std::string path = recordWithPerf(dir, "dwarf", AUXSCOPE_STACKS_PROG_NOFP);
    if (path.rfind("perf record failed", 0) == 0) GTEST_SKIP() << path;
    auto withInline = load(path, true), without = load(path, false);
    ASSERT_TRUE(withInline && without);
    SampleQuery q;
    auto a = computeSampleRangeStats(*withInline, q), b = computeSampleRangeStats(*without, q);
    ASSERT_TRUE(a && b);
    const auto inl = byName(*withInline, *a), plainNames = byName(*without, *b);
    ASSERT_TRUE(inl.count("scale")) << "no inlined scale()";
    EXPECT_TRUE(withInline
                    ->functions()[std::find_if(a->functions.begin(), a->functions.end(),
                                               [&](const FunctionStats& f) {
                                                   return withInline->functions()[f.function].name == "scale";
                                               })
                                      ->function]
                    .inlined);
    const uint64_t leafSelf = inl.count("leaf") ? inl.at("leaf").selfSamples : 0;
    EXPECT_EQ(leafSelf + inl.at("scale").selfSamples, plainNames.at("leaf").selfSamples);
    EXPECT_EQ(inl.at("leaf").totalSamples, plainNames.at("leaf").totalSamples);
    // scale's frames sit under leaf's in the tree.
    bool underLeaf = false;
    for (uint32_t n = 1; n < a->tree.size(); ++n) {
        const auto& node = a->tree.nodes[n];
        if (withInline->functions()[node.function].name == "scale" && node.parent != 0)
            underLeaf |= withInline->functions()[a->tree.nodes[node.parent].function].name == "leaf";
    }
    EXPECT_TRUE(underLeaf);
    // The stack of a sample in scale: its frame is marked inlined, at leaf's address.
    for (size_t i = 0; i < withInline->size(); ++i) {
        const auto stack = withInline->stack(i);
        if (stack.size() < 2 || withInline->functions()[stack[0].function].name != "scale") continue;
        EXPECT_TRUE(stack[0].inlined);
        EXPECT_EQ(withInline->functions()[stack[1].function].name, "leaf");
        EXPECT_EQ(stack[0].address, stack[1].address);
        break;
    }
}
