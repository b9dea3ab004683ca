// SPDX-License-Identifier: GPL-3.0-or-later
// Call stacks captured from the real kernel by `auxscope record -g / --call-graph`,
// with perf as the oracle and auxscope's own reader:
//  - -g on stacks_prog_fp: perf script walks our file's callchains to
//    leaf <- mid <- hot <- main and lib_inner <- lib_work <- hot <- main;
//  - --call-graph dwarf on stacks_prog_nofp (no frame pointers): perf unwinds our
//    registers and stack copies to the same shapes;
//  - the reader reads our samples' callchain, user registers and stack copy back
//    with the sizes asked for (and the registers say where the sample was); a
//    sample of a kernel thread (or the idle task) has regs abi NONE and no stack;
//  - a system-wide -a -g second: callchains from many processes, the kernel's
//    LOST count reported as before (and counted when dwarf samples overflow a
//    tiny ring);
//  - bad options: each a usage error (exit status 2) naming the option.
// They skip, with the reason, only where perf_event_open is denied; the perf
// checks skip where Debian's perf is not installed.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "CallGraphConfig.h"
#include "PerfEvent.h"
#include "WriterTestSupport.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"

using namespace auxscope;
using namespace auxscope::writertest;

namespace {

const std::string kAuxscope = AUXSCOPE_TEST_BINARY;
const std::string kProgFp = STACKS_PROG_FP;
const std::string kProgNofp = STACKS_PROG_NOFP;

constexpr uint64_t kContextUser = uint64_t(PERF_CONTEXT_USER);
constexpr uint64_t kContextKernel = uint64_t(PERF_CONTEXT_KERNEL);

#define SKIP_WITHOUT_PERF_EVENTS()                                                  \
    do {                                                                            \
        if (auto reason = perfCaptureUnavailableReason())                           \
            GTEST_SKIP() << "skipped: perf_event_open is denied here: " << *reason; \
    } while (0)

CommandResult record(const std::vector<std::string>& args, double timeout = 120) {
    std::vector<std::string> argv{kAuxscope, "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    return runCommand(argv, timeout);
}

// One sample of `perf script -F comm,pid,ip,sym`: its frames leaf first.
struct ScriptSample {
    std::string comm;
    int pid = -1;
    std::vector<std::string> frames;
};

std::vector<ScriptSample> perfScript(const std::string& perf, const std::string& file) {
    auto r = runCommand({perf, "script", "-i", file, "-F", "comm,pid,ip,sym"}, 300);
    EXPECT_TRUE(r.exitedZero()) << r.err;
    std::vector<ScriptSample> out;
    std::istringstream in(r.out);
    std::string line;
    ScriptSample cur;
    bool open = false;
    auto flush = [&] {
        if (open) out.push_back(std::move(cur));
        cur = {};
        open = false;
    };
    while (std::getline(in, line)) {
        if (line.empty()) {
            flush();
            continue;
        }
        if (line[0] != '\t' && line[0] != ' ') {
            flush();
            // "comm pid": the comm may hold spaces, the pid is the last word.
            const size_t sp = line.find_last_of(' ', line.find_last_not_of(' '));
            cur.comm = line.substr(0, sp);
            cur.pid = std::atoi(line.c_str() + sp + 1);
            open = true;
            continue;
        }
        // "\t    addr sym": the symbol after the address.
        std::istringstream f(line);
        std::string addr, sym, rest;
        f >> addr;
        std::getline(f, rest);
        rest.erase(0, rest.find_first_not_of(' '));
        cur.frames.push_back(rest);
    }
    flush();
    return out;
}

// Frames without inlined ones and without repeats (mid recurses), leaf first.
std::vector<std::string> collapsed(const std::vector<std::string>& frames) {
    std::vector<std::string> out;
    for (const std::string& f : frames) {
        if (f.ends_with("(inlined)")) continue;
        if (out.empty() || out.back() != f) out.push_back(f);
    }
    return out;
}

bool hasRun(const std::vector<std::string>& frames, const std::vector<std::string>& run) {
    return std::search(frames.begin(), frames.end(), run.begin(), run.end()) != frames.end();
}

size_t countRun(const std::vector<ScriptSample>& samples, const std::vector<std::string>& run) {
    size_t n = 0;
    for (const ScriptSample& s : samples)
        n += hasRun(collapsed(s.frames), run);
    return n;
}

std::string someStacks(const std::vector<ScriptSample>& samples) {
    std::string out;
    for (size_t i = 0; i < samples.size() && i < 400; i += 40) {
        out += samples[i].comm + ":";
        for (auto& f : collapsed(samples[i].frames))
            out += " " + f;
        out += "\n";
    }
    return out;
}

// The program's two shapes, each in several samples, as perf script prints them.
size_t expectShapes(const std::vector<ScriptSample>& stacks) {
    const size_t viaMid = countRun(stacks, {"leaf", "mid", "hot", "main"});
    const size_t viaLib = countRun(stacks, {"lib_inner", "lib_work", "hot", "main"});
    std::cout << "perf script: " << stacks.size() << " samples, " << viaMid << " leaf <- mid <- hot <- main, "
              << viaLib << " lib_inner <- lib_work <- hot <- main\n";
    EXPECT_GE(viaMid, 3u) << someStacks(stacks);
    EXPECT_GE(viaLib, 3u) << someStacks(stacks);
    return viaLib;
}

const PerfAttr* attrOf(const PerfDataReader& r, uint32_t type, uint64_t config) {
    for (const PerfAttr& a : r.attrs())
        if (a.attr.type == type && a.attr.config == config) return &a;
    return nullptr;
}

// PF_KTHREAD in /proc/PID/stat's flags (field 9).
bool isKernelThread(int pid) {
    if (pid == 0) return true;  // the idle task
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string stat;
    if (!std::getline(in, stat)) return false;
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream f(stat.substr(close + 2));
    std::string field;
    unsigned long flags = 0;
    for (int i = 3; i <= 9 && (f >> field); ++i)
        if (i == 9) flags = std::stoul(field);
    return flags & 0x00200000;
}

uint64_t jsonNumber(const std::string& json, const std::string& section, const std::string& key) {
    const size_t at = json.find("\"" + section + "\":{");
    if (at == std::string::npos) return UINT64_MAX;
    std::smatch m;
    const std::string rest = json.substr(at);
    if (!std::regex_search(rest, m, std::regex("\"" + key + "\":([0-9]+)"))) return UINT64_MAX;
    return std::stoull(m[1]);
}

// Processes that burn CPU while a system-wide capture runs, then are reaped.
struct Busy {
    std::vector<pid_t> pids;
    explicit Busy(int n, const std::string& ms) {
        for (int i = 0; i < n; ++i) {
            const pid_t p = fork();
            if (p == 0) {
                const int null = open("/dev/null", O_WRONLY);
                dup2(null, 1);
                execl(kProgFp.c_str(), kProgFp.c_str(), ms.c_str(), (char*)nullptr);
                _exit(127);
            }
            pids.push_back(p);
        }
    }
    ~Busy() {
        for (pid_t p : pids) {
            kill(p, SIGKILL);
            waitpid(p, nullptr, 0);
        }
    }
};

}  // namespace

// -g: the kernel's frame-pointer walk, kernel and user part; perf reads the file.
TEST(CallGraphKernel, FramePointerStacksAsPerfReadsThem) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-fp");
    const std::string file = dir + "/fp.data";
    auto r = record({"-g", "-e", "cpu-clock", "-o", file, "--", kProgFp, "300"});
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    EXPECT_NE(r.out.find("call graph: fp (frame pointers, kernel and user callchain)"), std::string::npos)
        << r.out;

    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    const PerfAttr* clock = attrOf(*reader, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
    const PerfAttr* dummy = attrOf(*reader, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY);
    ASSERT_TRUE(clock && dummy);
    EXPECT_TRUE(clock->attr.sample_type & PERF_SAMPLE_CALLCHAIN);
    EXPECT_FALSE(clock->attr.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
    EXPECT_EQ(clock->attr.exclude_callchain_user, 0u);
    EXPECT_FALSE(dummy->attr.sample_type & PERF_SAMPLE_CALLCHAIN);  // the tracking event gets none

    // Our reader: user-mode samples carry the user part after PERF_CONTEXT_USER.
    size_t samples = 0, withUser = 0;
    ASSERT_TRUE(reader
                    ->forEachRecord([&](const PerfRecord& rec) {
                        if (rec.header.type != PERF_RECORD_SAMPLE) return true;
                        const ParsedRecord& p = rec.parsed;
                        ++samples;
                        EXPECT_GT(p.callchainSize(), 0u);
                        EXPECT_EQ(p.regsUser.size(), 0u);
                        EXPECT_EQ(p.stackUserSize, 0u);
                        for (size_t i = 0; i < p.callchainSize(); ++i)
                            if (p.callchainAt(i) == kContextUser) {
                                ++withUser;
                                break;
                            }
                        return true;
                    })
                    .ok());
    EXPECT_GT(samples, 100u);
    EXPECT_GT(withUser, samples / 2);

    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "skipped: perf (linux-perf) is not installed: no oracle for the stacks";
    const auto stacks = perfScript(*perf, file);
    expectShapes(stacks);
    // perf report agrees on the file as a whole (no errors, every sample read).
    auto rep = runCommand({*perf, "report", "--stdio", "--no-children", "-i", file, "-g", "caller"}, 120);
    ASSERT_TRUE(rep.exitedZero()) << rep.err;
    EXPECT_NE(rep.out.find("lib_inner"), std::string::npos);
    std::filesystem::remove_all(dir);
}

// --call-graph dwarf on a program without frame pointers: only the registers and
// the stack copy let perf unwind it, to the same shapes.
TEST(CallGraphKernel, DwarfStacksPerfUnwinds) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-dwarf");
    const std::string file = dir + "/dwarf.data";
    auto r = record({"--call-graph", "dwarf", "-e", "cpu-clock", "-o", file, "--", kProgNofp, "300"});
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    EXPECT_NE(r.out.find("call graph: dwarf (8192 bytes of user stack"), std::string::npos) << r.out;

    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    const PerfAttr* clock = attrOf(*reader, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
    ASSERT_TRUE(clock);
    // Stored whole, as the kernel was given it.
    EXPECT_EQ(clock->sizeInFile, sizeof(perf_event_attr));
    EXPECT_EQ(
        clock->attr.sample_type & (PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER),
        uint64_t(PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER));
    EXPECT_EQ(clock->attr.sample_regs_user, dwarfUserRegsMask());
    EXPECT_EQ(clock->attr.sample_stack_user, 8192u);
    EXPECT_EQ(clock->attr.exclude_callchain_user, 1u);
    EXPECT_EQ(clock->attr.sample_max_stack, 0u);

    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "skipped: perf (linux-perf) is not installed: no oracle for the unwinding";
    // perf reads the attrs as we wrote them.
    auto evlist = runCommand({*perf, "evlist", "-v", "-i", file}, 60);
    ASSERT_TRUE(evlist.exitedZero()) << evlist.err;
    EXPECT_NE(evlist.out.find("sample_stack_user: 8192"), std::string::npos) << evlist.out;
    EXPECT_NE(evlist.out.find("exclude_callchain_user: 1"), std::string::npos) << evlist.out;
    char mask[64];
    std::snprintf(mask, sizeof mask, "sample_regs_user: 0x%llx", (unsigned long long)dwarfUserRegsMask());
    EXPECT_NE(evlist.out.find(mask), std::string::npos) << evlist.out;
    const size_t viaLib = expectShapes(perfScript(*perf, file));
    // The control: -g on the same program walks no further than the first frame
    // without a frame pointer, so the shapes above came from the stack copies.
    const std::string fpFile = dir + "/fp-on-nofp.data";
    auto fp = record({"-g", "-e", "cpu-clock", "-o", fpFile, "--", kProgNofp, "300"});
    ASSERT_TRUE(fp.exitedZero()) << fp.out << fp.err;
    const auto fpStacks = perfScript(*perf, fpFile);
    const size_t fpViaLib = countRun(fpStacks, {"lib_inner", "lib_work", "hot", "main"});
    std::cout << "control, -g on stacks_prog_nofp: " << fpViaLib
              << " lib_inner <- lib_work <- hot <- main in " << fpStacks.size() << " samples\n";
    EXPECT_LT(fpViaLib * 4, viaLib);
    std::filesystem::remove_all(dir);
}

// Our reader reads the fields back with the sizes asked for (dwarf,4096), and the
// registers are the sample's: IP is the sample's ip in user mode, SP points into
// the copied stack.
TEST(CallGraphKernel, ReaderReadsRegistersAndStackWithTheSizesAsked) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-reader");
    const std::string file = dir + "/dwarf4k.data";
    auto r = record({"--call-graph=dwarf,4096", "-e", "cpu-clock", "-o", file, "--", kProgNofp, "300"});
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_FALSE(reader->hasErrors());
    const uint64_t mask = dwarfUserRegsMask();
    const size_t nregs = size_t(std::popcount(mask));
    size_t samples = 0, userMode = 0, ipMatches = 0, withStack = 0;
    ASSERT_TRUE(reader
                    ->forEachRecord([&](const PerfRecord& rec) {
                        if (rec.header.type != PERF_RECORD_SAMPLE) return true;
                        const ParsedRecord& p = rec.parsed;
                        EXPECT_FALSE(rec.parseError) << *rec.parseError;
                        ++samples;
                        // A thread of the launched program: its user registers, always.
                        EXPECT_EQ(p.regsUserAbi, uint64_t(PERF_SAMPLE_REGS_ABI_64));
                        EXPECT_EQ(p.regsUserCount(), nregs);
                        EXPECT_EQ(p.stackUserSize, 4096u);
                        EXPECT_LE(p.stackUser.size(), 4096u);
                        withStack += !p.stackUser.empty();
                        // exclude_callchain_user: only the kernel part, if any.
                        for (size_t i = 0; i < p.callchainSize(); ++i)
                            EXPECT_NE(p.callchainAt(i), kContextUser);
                        if (p.callchainSize()) {
                            EXPECT_EQ(p.callchainAt(0), kContextKernel);
                        }
                        if ((p.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
                            ++userMode;
#if defined(__x86_64__)
                            // Registers in mask order: AX..FLAGS are bits 0..9, so IP (8) is the 9th, SP (7)
                            // the 8th.
                            ipMatches += p.regUserAt(8) == p.ip;
                            EXPECT_EQ(p.callchainSize(), 0u);
#else
                            ++ipMatches;
#endif
                        }
                        return true;
                    })
                    .ok());
    EXPECT_GT(samples, 100u);
    EXPECT_GT(userMode, samples / 2);
    EXPECT_EQ(ipMatches, userMode);
    EXPECT_GT(withStack, samples * 9 / 10);
    std::filesystem::remove_all(dir);
}

// System-wide dwarf: the idle task and kernel threads have no user registers, so
// the kernel writes abi NONE and an empty stack; user processes have both.
TEST(CallGraphKernel, KernelThreadSamplesHaveRegsAbiNone) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-kthread");
    const std::string file = dir + "/kthread.data";
    auto r = record({"-a", "--call-graph", "dwarf", "--duration", "1", "-o", file});
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    std::map<int, bool> kthread;
    size_t kernelSamples = 0, userSamples = 0;
    ASSERT_TRUE(reader
                    ->forEachRecord([&](const PerfRecord& rec) {
                        if (rec.header.type != PERF_RECORD_SAMPLE) return true;
                        const ParsedRecord& p = rec.parsed;
                        auto it = kthread.find(p.pid);
                        if (it == kthread.end()) it = kthread.emplace(p.pid, isKernelThread(p.pid)).first;
                        if (it->second) {
                            ++kernelSamples;
                            EXPECT_EQ(p.regsUserAbi, uint64_t(PERF_SAMPLE_REGS_ABI_NONE)) << "pid " << p.pid;
                            EXPECT_TRUE(p.regsUser.empty());
                            EXPECT_TRUE(p.stackUser.empty());
                            EXPECT_EQ(p.stackUserSize, 0u);
                        } else if (p.regsUserAbi != PERF_SAMPLE_REGS_ABI_NONE) {
                            ++userSamples;
                            EXPECT_EQ(p.stackUserSize, 8192u);
                        }
                        return true;
                    })
                    .ok());
    EXPECT_GT(kernelSamples, 0u) << "no sample of the idle task or a kernel thread in 1 s";
    EXPECT_GT(userSamples, 0u);
    std::filesystem::remove_all(dir);
}

// -a -g for a second: callchains from many processes; the loss columns as before.
TEST(CallGraphKernel, SystemWideCallchainsFromManyProcesses) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-system");
    const std::string file = dir + "/system.data";
    CommandResult r;
    {
        Busy busy(2, "1500");
        r = record({"-a", "-g", "--duration", "1", "--json", "-o", file});
    }
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    EXPECT_NE(r.out.find("\"call_graph\":{\"mode\":\"fp\"}"), std::string::npos) << r.out;
    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    std::set<int> pids;
    std::map<int, size_t> userChains;
    ASSERT_TRUE(reader
                    ->forEachRecord([&](const PerfRecord& rec) {
                        if (rec.header.type != PERF_RECORD_SAMPLE) return true;
                        const ParsedRecord& p = rec.parsed;
                        if (p.callchainSize() == 0) return true;
                        pids.insert(p.pid);
                        for (size_t i = 0; i < p.callchainSize(); ++i)
                            if (p.callchainAt(i) == kContextUser) {
                                ++userChains[p.pid];
                                break;
                            }
                        return true;
                    })
                    .ok());
    EXPECT_GE(pids.size(), 3u);
    EXPECT_GE(userChains.size(), 2u);  // at least the two busy programs, with user stacks
    // The loss figures are there and agree: the kernel's own count, the LOST
    // records drained, and the LOST records in the file.
    uint64_t fileLost = 0;
    for (auto& [cpu, st] : reader->summary().cpus)
        fileLost += st.lost;
    const uint64_t lostRecords = jsonNumber(r.out, "total", "lost_records");
    const uint64_t kernelLost = jsonNumber(r.out, "total", "kernel_lost");
    ASSERT_NE(lostRecords, UINT64_MAX) << r.out;
    ASSERT_NE(kernelLost, UINT64_MAX) << r.out;
    EXPECT_EQ(kernelLost, lostRecords);
    EXPECT_EQ(fileLost, lostRecords);
    std::filesystem::remove_all(dir);
}

// dwarf samples (~8.5 KiB) cannot fit an 8 KiB ring: the kernel counts them lost,
// and the summary, its kernel count and the file's LOST records all say so.
TEST(CallGraphKernel, DwarfLossInATinyRingIsCountedAsBefore) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string dir = makeTempDir("callgraph-loss");
    const std::string file = dir + "/loss.data";
    CommandResult r;
    {
        Busy busy(1, "1000");
        r = record({"-a", "--call-graph", "dwarf", "-m", "2", "--duration", "0.5", "--json", "-o", file});
    }
    ASSERT_TRUE(r.exitedZero()) << r.out << r.err;
    const uint64_t lostRecords = jsonNumber(r.out, "total", "lost_records");
    const uint64_t kernelLost = jsonNumber(r.out, "total", "kernel_lost");
    EXPECT_GT(lostRecords, 0u) << r.out;
    EXPECT_EQ(kernelLost, lostRecords) << r.out;
    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    uint64_t fileLost = 0;
    for (auto& [cpu, st] : reader->summary().cpus)
        fileLost += st.lost;
    EXPECT_EQ(fileLost, lostRecords);
    std::filesystem::remove_all(dir);
}

// The writer stores every mode's attr whole (lbr's branch_sample_type too, which
// this machine cannot capture), our reader reads it back byte for byte, and perf
// reads the fields from our file.
TEST(CallGraphFile, AttrsOfEveryModeAreStoredWhole) {
    const std::string dir = makeTempDir("callgraph-attrs");
    struct Mode {
        const char* spec;
        uint32_t type;
        uint64_t config;
        std::vector<std::string> perfSays;
    };
    char mask[64];
    std::snprintf(mask, sizeof mask, "sample_regs_user: 0x%llx", 0xff0fffull);
    const Mode modes[] = {
        {"fp", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, {"CALLCHAIN"}},
        {"dwarf,4096",
         PERF_TYPE_SOFTWARE,
         PERF_COUNT_SW_CPU_CLOCK,
         {"REGS_USER|STACK_USER", "exclude_callchain_user: 1", mask, "sample_stack_user: 4096"}},
        {"lbr",
         PERF_TYPE_HARDWARE,
         PERF_COUNT_HW_CPU_CYCLES,
         {"BRANCH_STACK", "branch_sample_type: USER|CALL_STACK|NO_FLAGS|NO_CYCLES|HW_INDEX"}},
    };
    auto perf = perfBinary();
    for (const Mode& m : modes) {
        perf_event_attr a{};
        a.size = sizeof a;
        a.type = m.type;
        a.config = m.config;
        a.freq = 1;
        a.sample_freq = 4000;
        a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                        PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
        a.sample_id_all = 1;
        applyCallGraph(parseCallGraph(m.spec).value(), a, 0xff0fff);
        const std::string file = dir + "/" + std::string(m.spec).substr(0, 3) + ".data";
        {
            auto w = PerfDataWriter::create(file, {PerfDataEventAttr{m.spec, a, {1}}});
            ASSERT_TRUE(w.ok()) << w.error().message;
            ASSERT_TRUE((*w)->finish().ok());
        }
        auto reader = PerfDataReader::open(file);
        ASSERT_TRUE(reader.ok()) << reader.error().message;
        ASSERT_EQ(reader->attrs().size(), 1u);
        EXPECT_EQ(reader->attrs()[0].sizeInFile, sizeof(perf_event_attr));
        EXPECT_EQ(std::memcmp(&reader->attrs()[0].attr, &a, sizeof a), 0) << m.spec;
        if (!perf) continue;
        auto evlist = runCommand({*perf, "evlist", "-v", "-i", file}, 60);
        EXPECT_TRUE(evlist.exitedZero()) << evlist.err;
        for (const std::string& text : m.perfSays)
            EXPECT_NE(evlist.out.find(text), std::string::npos) << m.spec << ": " << text << " in\n"
                                                                << evlist.out;
    }
    std::filesystem::remove_all(dir);
    if (!perf)
        GTEST_SKIP()
            << "skipped: perf (linux-perf) is not installed: the attrs were read back by auxscope only";
}

// Bad options: a usage error (exit status 2) whose text names the option, and
// nothing is captured.
TEST(CallGraphCli, BadOptionsAreUsageErrorsNamingTheOption) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--call-graph", "dwarf,7", "--", "/bin/true"},
         "auxscope record: --call-graph 'dwarf,7': the user stack size 7 must be a multiple of 8 from 8 to "
         "65528 "
         "bytes"},
        {{"--call-graph", "dwarf,99999999", "--", "/bin/true"},
         "auxscope record: --call-graph 'dwarf,99999999': the user stack size 99999999 must be a multiple of "
         "8 "
         "from 8 to 65528 bytes"},
        {{"--call-graph=dwarf,7", "--", "/bin/true"},
         "auxscope record: --call-graph 'dwarf,7': the user stack"},
        {{"--call-graph", "foo", "--", "/bin/true"},
         "auxscope record: --call-graph 'foo': unknown mode 'foo' (fp, dwarf[,SIZE] or lbr"},
        {{"--call-graph", "lbr", "-e", "cpu-clock", "--", "/bin/true"},
         "auxscope record: --call-graph lbr: event 'cpu-clock' is a software event; LBR call stacks come "
         "from "
         "the CPU's Last Branch Records"},
        {{"--call-graph"}, "auxscope record: option --call-graph needs a value"},
        {{"-g", "--replay", "/nonexistent/replay.data"},
         "auxscope record: --call-graph / -g ask the kernel for call stacks; a replay feeds the recorded "
         "file's "
         "own records"},
    };
    for (auto& [args, text] : cases) {
        auto r = record(args, 30);
        std::string line = "auxscope record";
        for (auto& a : args)
            line += " " + a;
        ASSERT_TRUE(WIFEXITED(r.status)) << line;
        EXPECT_EQ(WEXITSTATUS(r.status), 2) << line << "\n" << r.out << r.err;
        EXPECT_NE(r.err.find(text), std::string::npos) << line << "\nstderr: " << r.err;
        EXPECT_EQ(r.out.find("cpu     records"), std::string::npos) << line << ": a capture ran";
    }
}

// --help names the modes.
TEST(CallGraphCli, HelpNamesTheModes) {
    auto r = record({"--help"}, 30);
    ASSERT_TRUE(r.exitedZero());
    for (const char* s : {"-g  ", "--call-graph MODE", "fp  ", "dwarf[,SIZE]", "lbr  "})
        EXPECT_NE(r.out.find(s), std::string::npos) << s;
}
