// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshot triggers: the spec parser (pure), resolution errors against real
// binaries and tracefs, and captures on the real kernel (uprobes, uretprobes,
// syscall tracepoints) of tests/capture/trigger_prog.c with the sideband flight
// recorder (--overwrite). The kernel tests skip, with the reason, only where
// perf_event_open, uprobes or tracepoints are not available, and fail then when CI=true.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "AuxPause.h"
#include "CaptureSession.h"
#include "KernelTestSupport.h"
#include "Tracefs.h"
#include "TriggerSpec.h"
#include "UsdtProbes.h"

namespace auxscope {
namespace {

const char* kProg = TRIGGER_PROG_PATH;
const char* kUsdtProg = USDT_PROG_PATH;

TEST(TriggerSpecTest, ParsesEveryKind) {
    auto f = parseTriggerSpec("handle");
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->kind, TriggerKind::FunctionEntry);
    EXPECT_EQ(f->function, "handle");
    EXPECT_TRUE(f->binary.empty());

    auto fb = parseTriggerSpec("handle@/usr/bin/prog");
    ASSERT_TRUE(fb);
    EXPECT_EQ(fb->function, "handle");
    EXPECT_EQ(fb->binary, "/usr/bin/prog");

    auto off = parseTriggerSpec("/usr/bin/prog:0x1a2B");
    ASSERT_TRUE(off) << off.error().message;
    EXPECT_EQ(off->binary, "/usr/bin/prog");
    ASSERT_TRUE(off->offset);
    EXPECT_EQ(*off->offset, 0x1a2bu);

    auto slow = parseTriggerSpec("handle>5ms");
    ASSERT_TRUE(slow);
    EXPECT_EQ(slow->kind, TriggerKind::FunctionSlow);
    EXPECT_EQ(slow->thresholdNs, 5'000'000u);

    auto tmpl = parseTriggerSpec("ns::f<std::vector<int>>@prog>250us");
    ASSERT_TRUE(tmpl) << tmpl.error().message;
    EXPECT_EQ(tmpl->function, "ns::f<std::vector<int>>");
    EXPECT_EQ(tmpl->thresholdNs, 250'000u);

    auto sys = parseTriggerSpec("syscall:read>10ms");
    ASSERT_TRUE(sys);
    EXPECT_EQ(sys->kind, TriggerKind::SyscallSlow);
    EXPECT_EQ(sys->syscall, "read");
    EXPECT_EQ(sys->thresholdNs, 10'000'000u);

    auto pair = parseTriggerSpec("sched:sched_wakeup->sched_switch>2ms");
    ASSERT_TRUE(pair) << pair.error().message;
    EXPECT_EQ(pair->kind, TriggerKind::TracepointPair);
    EXPECT_EQ(pair->firstSystem, "sched");
    EXPECT_EQ(pair->firstEvent, "sched_wakeup");
    EXPECT_EQ(pair->secondSystem, "sched");
    EXPECT_EQ(pair->secondEvent, "sched_switch");
    EXPECT_EQ(pair->thresholdNs, 2'000'000u);

    auto marker = parseTriggerSpec("marker@/bin/prog");
    ASSERT_TRUE(marker);
    EXPECT_TRUE(marker->marker);
    EXPECT_EQ(marker->function, kTriggerMarkerFunction);
    EXPECT_EQ(marker->binary, "/bin/prog");
    EXPECT_EQ(*parseTriggerDuration("1.5s", "x"), 1'500'000'000u);
}

TEST(TriggerSpecTest, ParsesUsdtProbes) {
    auto u = parseTriggerSpec("usdt:myapp:request_done@/usr/bin/app");
    ASSERT_TRUE(u) << u.error().message;
    EXPECT_EQ(u->kind, TriggerKind::FunctionEntry);
    EXPECT_EQ(u->usdtProvider, "myapp");
    EXPECT_EQ(u->usdtName, "request_done");
    EXPECT_EQ(u->binary, "/usr/bin/app");
    auto plain = parseTriggerSpec("usdt:auxscope:trigger");
    ASSERT_TRUE(plain);
    EXPECT_TRUE(plain->binary.empty());
    EXPECT_FALSE(parseTriggerSpec("usdt:myapp"));
    EXPECT_FALSE(parseTriggerSpec("usdt:my-app:x"));
    auto slow = parseTriggerSpec("usdt:a:b>5ms");
    ASSERT_FALSE(slow);
    EXPECT_NE(slow.error().message.find("no duration"), std::string::npos) << slow.error().message;
}

// The notes usdt_prog.c writes by hand, read back: three sites, two of one probe
// sharing a semaphore; each site's file offset holds the probe's nop.
TEST(UsdtProbesTest, ReadsTheNotes) {
    auto probes = readUsdtProbes(kUsdtProg);
    ASSERT_TRUE(probes) << probes.error().message;
    ASSERT_EQ(probes->size(), 3u) << listUsdtProbeNames(*probes);
    EXPECT_EQ(listUsdtProbeNames(*probes), "auxscope:trigger, usdt_prog:tick");
    std::vector<const UsdtProbe*> trig;
    const UsdtProbe* tick = nullptr;
    for (auto& p : *probes) {
        if (p.fullName() == "auxscope:trigger") trig.push_back(&p);
        if (p.fullName() == "usdt_prog:tick") tick = &p;
    }
    ASSERT_EQ(trig.size(), 2u);
    ASSERT_TRUE(tick);
    EXPECT_NE(trig[0]->fileOffset, trig[1]->fileOffset);
    EXPECT_NE(trig[0]->semaphoreOffset, 0u);
    EXPECT_EQ(trig[0]->semaphoreOffset, trig[1]->semaphoreOffset);
    EXPECT_EQ(tick->semaphoreAddress, 0u);
    EXPECT_EQ(tick->semaphoreOffset, 0u);
    // The semaphore's address is the symbol's (nm), and its file offset lies in the file.
    FILE* nm = popen((std::string("nm ") + kUsdtProg).c_str(), "r");
    ASSERT_TRUE(nm);
    char line[512];
    uint64_t semSym = 0;
    while (std::fgets(line, sizeof line, nm))
        if (std::strstr(line, " auxscope_trigger_semaphore")) semSym = std::strtoull(line, nullptr, 16);
    pclose(nm);
    EXPECT_EQ(trig[0]->semaphoreAddress, semSym);
    std::ifstream bin(kUsdtProg, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(bin)), std::istreambuf_iterator<char>());
    ASSERT_LT(trig[0]->semaphoreOffset + 2, bytes.size());
#if defined(__x86_64__)
    for (const UsdtProbe& p : *probes) {
        ASSERT_LT(p.fileOffset, bytes.size());
        EXPECT_EQ(uint8_t(bytes[p.fileOffset]), 0x90) << p.fullName() << ": a nop at the probe's offset";
    }
#endif
    // A binary without notes has no probes; a text file is refused.
    auto none = readUsdtProbes(kProg);
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_TRUE(none->empty());
    const std::string text = ::testing::TempDir() + "usdt_not_elf";
    std::ofstream(text) << "#!/bin/sh\n";
    auto notElf = readUsdtProbes(text);
    ASSERT_FALSE(notElf);
    EXPECT_NE(notElf.error().message.find("not an ELF"), std::string::npos) << notElf.error().message;
}

TEST(TriggerResolveTest, MarkerIsTheUsdtProbeElseTheFunction) {
    TriggerResolveOptions o;
    o.defaultBinary = kUsdtProg;
    auto m = resolveTrigger(*parseTriggerSpec("marker"), o);
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->usdt, "auxscope:trigger");
    EXPECT_EQ(m->moreOffsets.size(), 1u) << "both sites";
    EXPECT_NE(m->refCtrOffset, 0u);
    auto tick = resolveTrigger(*parseTriggerSpec("usdt:usdt_prog:tick"), o);
    ASSERT_TRUE(tick) << tick.error().message;
    EXPECT_EQ(tick->refCtrOffset, 0u);
    EXPECT_TRUE(tick->moreOffsets.empty());
    // No such probe: the message lists those there are.
    auto none = resolveTrigger(*parseTriggerSpec("usdt:nope:gone"), o);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no USDT probe nope:gone"), std::string::npos)
        << none.error().message;
    EXPECT_NE(none.error().message.find("auxscope:trigger, usdt_prog:tick"), std::string::npos)
        << none.error().message;
    // trigger_prog has no notes: its marker is the auxscope_trigger() function.
    o.defaultBinary = kProg;
    auto fn = resolveTrigger(*parseTriggerSpec("marker"), o);
    ASSERT_TRUE(fn) << fn.error().message;
    EXPECT_TRUE(fn->usdt.empty());
    EXPECT_EQ(fn->symbol, kTriggerMarkerFunction);
    auto noNotes = resolveTrigger(*parseTriggerSpec("usdt:auxscope:trigger"), o);
    ASSERT_FALSE(noNotes);
    EXPECT_NE(noNotes.error().message.find("no USDT probes"), std::string::npos) << noNotes.error().message;
    // Neither a probe nor the function (a copy without its symbols).
    const std::string stripped = ::testing::TempDir() + "trigger_prog_stripped_marker";
    ASSERT_EQ(std::system(("strip -o " + stripped + " " + kProg).c_str()), 0);
    auto neither = resolveTrigger(*parseTriggerSpec("marker@" + stripped), o);
    ASSERT_FALSE(neither);
    EXPECT_NE(neither.error().message.find(
                  "neither a USDT probe auxscope:trigger nor a function auxscope_trigger()"),
              std::string::npos)
        << neither.error().message;
}

// aux_action's word where Linux 6.13 put it (after aux_sample_size, in what older
// headers call __reserved_3), its three bits, and nothing else of the attr touched.
TEST(AuxPauseTest, AttrLayout) {
    EXPECT_EQ(kAuxActionOffset, 116u);
    EXPECT_GE(sizeof(perf_event_attr), size_t(PERF_ATTR_SIZE_VER6));
    perf_event_attr a{};
    a.size = sizeof a;
    a.aux_sample_size = 0xffffffffu;
    a.sig_data = ~0ull;
    setAuxAction(a, kAuxStartPaused);
    EXPECT_EQ(auxAction(a), 1u);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&a);
    EXPECT_EQ(bytes[116], 0x01);
    setAuxAction(a, kAuxPause);
    EXPECT_EQ(bytes[116], 0x02);
    setAuxAction(a, kAuxResume);
    EXPECT_EQ(bytes[116], 0x04);
    EXPECT_EQ(a.aux_sample_size, 0xffffffffu) << "the neighbours are untouched";
    EXPECT_EQ(a.sig_data, ~0ull);
    perf_event_attr plain{};
    EXPECT_EQ(auxAction(plain), 0u);
}

TEST(AuxPauseTest, ChecksKernelAndPmu) {
    EXPECT_EQ(*checkAuxPause("6.13.0", {"intel_pt"}), "intel_pt");
    EXPECT_EQ(*checkAuxPause("6.18.44-fc-v657", {"intel_pt"}), "intel_pt");
    EXPECT_EQ(*checkAuxPause("7.0", {"intel_pt"}), "intel_pt");
    auto old = checkAuxPause("6.12.9", {"intel_pt"});
    ASSERT_FALSE(old);
    EXPECT_NE(old.error().message.find("predates AUX pause/resume"), std::string::npos)
        << old.error().message;
    auto none = checkAuxPause("6.18.0", {});
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no AUX-area trace PMU"), std::string::npos) << none.error().message;
    auto arm = checkAuxPause("6.18.0", {"cs_etm", "arm_spe_0"});
    ASSERT_FALSE(arm);
    EXPECT_NE(arm.error().message.find("cs_etm, arm_spe_0"), std::string::npos) << arm.error().message;
    EXPECT_NE(arm.error().message.find("intel_pt only"), std::string::npos) << arm.error().message;
    EXPECT_FALSE(checkAuxPause("garbage", {"intel_pt"}));
    EXPECT_EQ(*parseTriggerMode("pause"), TriggerMode::Pause);
    EXPECT_EQ(*parseTriggerMode("snapshot"), TriggerMode::Snapshot);
    EXPECT_FALSE(parseTriggerMode("resume"));
}

// This machine, for real: where it has no AUX PMU the refusal says so.
TEST(AuxPauseTest, ThisMachine) {
    const PmuRegistry pmus = PmuRegistry::discover();
    auto here = checkAuxPauseHere(pmus);
    if (!pmus.firstAuxPmu()) {
        ASSERT_FALSE(here);
        EXPECT_NE(here.error().message.find("no AUX-area trace PMU"), std::string::npos)
            << here.error().message;
    } else if (!here) {
        std::printf("note: AUX pause refused here: %s\n", here.error().message.c_str());
    }
}

TEST(TriggerSpecTest, RefusesBadSpecsClearly) {
    auto expectError = [](const char* text, const char* needle) {
        auto s = parseTriggerSpec(text);
        ASSERT_FALSE(s) << text;
        EXPECT_NE(s.error().message.find(needle), std::string::npos) << text << ": " << s.error().message;
        EXPECT_NE(s.error().message.find(std::string("'") + text + "'"), std::string::npos)
            << "the message names the spec: " << s.error().message;
    };
    expectError("", "empty");
    expectError("handle>", "threshold");
    expectError("handle>5", "unit");
    expectError("handle>5min", "unknown unit");
    expectError("handle>0ms", "out of range");
    expectError("handle>2h", "unknown unit");
    expectError("handle>7200s", "out of range");
    expectError("handle>500ns", "out of range");
    expectError("syscall:read", "wants a threshold");
    expectError("syscall:re-ad>1ms", "not a system call name");
    expectError("sched_wakeup->sched_switch>1ms", "system");
    expectError("sched:a->b", "threshold");
    expectError("marker>5ms", "no duration");
    expectError("handle@", "binary");
    expectError("/bin/prog:0xZZ", "hexadecimal");
}

TEST(TriggerResolveTest, FindsFunctionsAndRefusesWhatIsMissing) {
    auto spec = parseTriggerSpec("handle>5ms");
    ASSERT_TRUE(spec);
    TriggerResolveOptions o;
    o.defaultBinary = kProg;
    auto r = resolveTrigger(*spec, o);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_GT(r->offset, 0u);
    EXPECT_EQ(r->symbol, "handle");

    // The function's offset is where `nm` puts it, less the text segment's load bias (0 for these PIEs).
    auto none = resolveTrigger(*parseTriggerSpec("no_such_function"), o);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().message.find("no function 'no_such_function'"), std::string::npos)
        << none.error().message;

    // A system-wide capture names the binary.
    auto noBinary = resolveTrigger(*parseTriggerSpec("handle"), TriggerResolveOptions{});
    ASSERT_FALSE(noBinary);
    EXPECT_NE(noBinary.error().message.find("name the binary"), std::string::npos)
        << noBinary.error().message;

    auto missing = resolveTrigger(*parseTriggerSpec("handle@/nonexistent/prog"), o);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("/nonexistent/prog"), std::string::npos)
        << missing.error().message;

    auto past = resolveTrigger(*parseTriggerSpec(std::string(kProg) + ":0xffffffff"), o);
    ASSERT_FALSE(past);
    EXPECT_NE(past.error().message.find("past the end"), std::string::npos) << past.error().message;

    // A stripped copy: its .dynsym lists no `handle`.
    const std::string stripped = ::testing::TempDir() + "trigger_prog_stripped";
    ASSERT_EQ(std::system(("strip -o " + stripped + " " + kProg).c_str()), 0);
    auto s = resolveTrigger(*parseTriggerSpec("handle@" + stripped), o);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("stripped"), std::string::npos) << s.error().message;

    // Not an ELF file.
    const std::string text = ::testing::TempDir() + "trigger_not_elf";
    std::ofstream(text) << "#!/bin/sh\n";
    auto notElf = resolveTrigger(*parseTriggerSpec("handle@" + text), o);
    ASSERT_FALSE(notElf);
    EXPECT_NE(notElf.error().message.find("not an ELF"), std::string::npos) << notElf.error().message;

    // Unreadable (only meaningful when not root: root reads anyway).
    if (geteuid() != 0) {
        const std::string locked = ::testing::TempDir() + "trigger_prog_locked";
        std::filesystem::copy_file(kProg, locked, std::filesystem::copy_options::overwrite_existing);
        chmod(locked.c_str(), 0100);
        auto u = resolveTrigger(*parseTriggerSpec("handle@" + locked), o);
        ASSERT_FALSE(u);
        EXPECT_NE(u.error().message.find("cannot read"), std::string::npos) << u.error().message;
    }
}

bool ciRun() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

#define SKIP_WITHOUT_TRIGGERS()                                                                   \
    do {                                                                                          \
        SKIP_WITHOUT_PERF();                                                                      \
        if (!std::filesystem::exists("/sys/bus/event_source/devices/uprobe/type")) {              \
            if (ciRun()) FAIL() << "uprobes are not available (CI=true)";                         \
            GTEST_SKIP() << "uprobes are not available: no /sys/bus/event_source/devices/uprobe"; \
        }                                                                                         \
        if (auto tp = Tracefs::resolve("syscalls", "sys_enter_clock_nanosleep"); !tp) {           \
            if (ciRun()) FAIL() << tp.error().message;                                            \
            GTEST_SKIP() << "syscall tracepoints are not available: " << tp.error().message;      \
        }                                                                                         \
    } while (0)

TEST(TriggerResolveTest, TracepointsAreChecked) {
    SKIP_WITHOUT_TRIGGERS();
    auto bad = resolveTrigger(*parseTriggerSpec("syscall:no_such_call>1ms"), {});
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().message.find("sys_enter_no_such_call"), std::string::npos) << bad.error().message;
    auto badPair = resolveTrigger(*parseTriggerSpec("sched:no_such_event->sched_switch>1ms"), {});
    ASSERT_FALSE(badPair);
    EXPECT_NE(badPair.error().message.find("no_such_event"), std::string::npos) << badPair.error().message;
    auto pair = resolveTrigger(*parseTriggerSpec("sched:sched_wakeup->sched_switch>2ms"), {});
    ASSERT_TRUE(pair) << pair.error().message;
    EXPECT_EQ(pair->firstKeyField, "pid");
    EXPECT_EQ(pair->secondKeyField, "next_pid");
    EXPECT_GE(pair->firstKeyOffset, 8);
    EXPECT_GE(pair->secondKeyOffset, 8);
}

struct ProgCall {
    long call = 0;
    long tid = 0;
    bool intended = false;
    int slow = 0;  // as the program reports it
    long long ns = 0;
};

std::vector<ProgCall> readReport(const std::string& path) {
    std::vector<ProgCall> out;
    std::ifstream in(path);
    std::string word;
    ProgCall c;
    int slow = 0;
    long long end = 0;
    while (in >> word >> c.call >> word >> c.tid >> word >> slow >> word >> c.ns >> word >> end) {
        c.intended = slow != 0;
        c.slow = slow;
        out.push_back(c);
    }
    return out;
}

struct TriggerRun {
    TriggerReport report;
    std::vector<ProgCall> calls;
    CaptureSummary summary;
};

TriggerRun runTriggered(const std::vector<std::string>& specs, const std::vector<std::string>& args,
                        TriggerSettings settings = {}, const char* prog = kProg) {
    TriggerRun run;
    const std::string reportPath = ::testing::TempDir() + "trigger_prog_report.txt";
    std::remove(reportPath.c_str());
    setenv("TRIGGER_PROG_REPORT", reportPath.c_str(), 1);
    CaptureOptions opts;
    opts.target = TargetKind::Command;
    opts.command = {prog};
    opts.command.insert(opts.command.end(), args.begin(), args.end());
    opts.events = {"cpu-clock"};
    opts.overwrite = true;
    opts.durationSeconds = 60;
    TriggerResolveOptions ro;
    ro.defaultBinary = prog;
    std::vector<ResolvedTrigger> resolved;
    for (auto& text : specs) {
        auto spec = parseTriggerSpec(text);
        EXPECT_TRUE(spec) << text;
        if (!spec) return run;
        settings.specs.push_back(*spec);
        auto r = resolveTrigger(*spec, ro);
        EXPECT_TRUE(r) << r.error().message;
        if (!r) return run;
        resolved.push_back(*r);
    }
    auto session = CaptureSession::open(opts, PmuRegistry::discover());
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return run;
    auto armed = (*session)->armTriggers(resolved, settings);
    EXPECT_TRUE(armed) << armed.error().message;
    if (!armed) return run;
    auto started = (*session)->start();
    EXPECT_TRUE(started) << started.error().message;
    if (!started) return run;
    (*session)->wait();
    unsetenv("TRIGGER_PROG_REPORT");
    run.summary = (*session)->summary();
    run.report = (*session)->triggerEngine()->report();
    run.calls = readReport(reportPath);
    return run;
}

// 8 threads, 100,000 calls of handle(), 20 of them 7 ms long: 'handle>5ms' fires on
// exactly the calls that took over 5 ms (the 20, and any fast call the machine
// preempted for that long, which the program reports), each at its return, and
// each snapshot's window (its oldest to its newest sideband record) holds the
// whole call.
TEST(TriggerKernelTest, SlowCallsFireAtTheirReturn) {
    SKIP_WITHOUT_TRIGGERS();
    // --trigger-post 5: the snapshot follows the return by 5 ms, in which the
    // returning thread goes on to sleep (a context switch after the return).
    TriggerSettings settings;
    settings.postNs = 5'000'000;
    TriggerRun run = runTriggered({"handle>5ms"}, {"calls"}, settings);
    ASSERT_TRUE(run.summary.commandExited);
    ASSERT_TRUE(WIFEXITED(run.summary.commandStatus) && WEXITSTATUS(run.summary.commandStatus) == 0);
    size_t intended = 0, accidentalOver5 = 0;
    for (auto& c : run.calls) {
        if (c.intended)
            ++intended;
        else if (c.ns > 5'000'000)
            ++accidentalOver5;
    }
    ASSERT_EQ(intended, 20u) << "the program made its 20 slow calls";
    const TriggerReport& r = run.report;
    EXPECT_EQ(r.lost, 0u);
    EXPECT_EQ(r.unmatchedEnds, 0u);
    EXPECT_EQ(r.samples, 200'000u) << "an entry and a return per call";
    // Every firing is a call of more than 5 ms (the kernel's entry-to-return is
    // inside the program's own measurement of the call), and every intended slow
    // call (7 ms inside handle()) fired. A fast call the program measured at over
    // 5 ms may or may not have: its own clock reads sit outside handle(), so a
    // preemption between a clock read and the call (a loaded machine) lengthens
    // its measurement, not the kernel's (it fires only if the preemption fell
    // inside the call).
    // A call that overlapped another's pending snapshot is counted as skipped for that reason.
    const uint64_t slowSeen = r.firings.size() + r.skipped[size_t(TriggerSkip::Pending)];
    EXPECT_GE(slowSeen, 20u);
    EXPECT_LE(slowSeen, 20u + accidentalOver5);
    if (accidentalOver5 == 0)
        EXPECT_EQ(r.firings.size(), 20u) << "no fast call fires";
    else
        std::printf("note: %zu fast calls took over 5 ms (the machine preempted them); they may fire too\n",
                    accidentalOver5);
    std::map<long, int> slowPerTid;
    for (auto& c : run.calls)
        if (c.intended || c.ns > 5'000'000) ++slowPerTid[c.tid];
    uint64_t prevWindowEnd = 0;
    for (size_t i = 0; i < r.firings.size(); ++i) {
        const TriggerFiring& f = r.firings[i];
        EXPECT_GE(f.duration, 5'000'000u);
        EXPECT_TRUE(slowPerTid.count(f.tid)) << "firing on tid " << f.tid << " which made no slow call";
        ASSERT_NE(f.snapshot, UINT64_MAX) << "every firing got its snapshot";
        // The snapshot started after the return and holds the call whole.
        EXPECT_GT(f.windowEnd, 0u);
        // Each snapshot delivers what is new since the previous one: the call's entry
        // is in this one, or in the previous one when that was taken during the call
        // (a preempted fast call's).
        // (Checked where no preempted call fired: their snapshots may cut into a slow call.)
        if (accidentalOver5 == 0) {
            EXPECT_TRUE(f.windowStart <= f.start || prevWindowEnd >= f.start)
                << "snapshot " << f.snapshot << " starts after the call's entry";
        }
        prevWindowEnd = f.windowEnd;
        EXPECT_GE(f.windowEnd, f.time) << "snapshot " << f.snapshot << " ends before the call's return";
        // The last slow call is the program's last call: its snapshot is taken as the capture stops.
        if (i + 1 < r.firings.size()) {
            EXPECT_GE(f.snapshotMono, f.seenMono + 4'000'000)
                << "--trigger-post 5 ms (less what the drain thread took to see it)";
        }
    }
    EXPECT_EQ(r.snapshotsTaken, r.firings.size());
    EXPECT_EQ(r.skipped[size_t(TriggerSkip::Limit)] + r.skipped[size_t(TriggerSkip::Gap)], 0u);
}

// A plain entry trigger on a function called 100,000 times, with --trigger-max
// and --trigger-gap: three snapshots, every other call counted as skipped with
// its reason, nothing unaccounted for.
TEST(TriggerKernelTest, LimitAndGapCountSkips) {
    SKIP_WITHOUT_TRIGGERS();
    TriggerSettings s;
    s.max = 3;
    s.gapNs = 100'000'000;
    TriggerRun run = runTriggered({"handle"}, {"calls", "8", "100000", "1000000"}, s);
    const TriggerReport& r = run.report;
    EXPECT_EQ(r.firings.size(), 3u);
    EXPECT_EQ(r.snapshotsRequested, 3u);
    EXPECT_EQ(r.snapshotsTaken, 3u);
    EXPECT_GT(r.skipped[size_t(TriggerSkip::Limit)], 0u);
    EXPECT_GT(r.skipped[size_t(TriggerSkip::Gap)], 0u);
    uint64_t skipped = 0;
    for (uint64_t v : r.skipped)
        skipped += v;
    EXPECT_EQ(r.firings.size() + skipped, r.samples) << "every hit is a firing or a counted skip";
    EXPECT_EQ(r.samples, 100'000u);
    for (size_t i = 1; i < r.firings.size(); ++i)
        EXPECT_GE(r.firings[i].time - r.firings[i - 1].time, s.gapNs);
}

// clock_nanosleep > 10 ms: 4 threads sleep 50 times each, every 10th sleep 15 ms,
// the others 1 ms: the 20 long sleeps fire, those that overlap a pending
// snapshot (the threads sleep long at the same iterations) are counted as
// skipped for that reason, and no short sleep fires.
TEST(TriggerKernelTest, SlowSyscallsOnly) {
    SKIP_WITHOUT_TRIGGERS();
    TriggerRun run = runTriggered({"syscall:clock_nanosleep>10ms"}, {"sleeps"});
    const TriggerReport& r = run.report;
    size_t intended = 0, over10 = 0, clearlyOver10 = 0;
    for (auto& c : run.calls) {
        intended += c.intended;
        over10 += c.ns > 10'000'000;
        clearlyOver10 += c.ns > 10'500'000;
    }
    ASSERT_EQ(intended, 20u);
    EXPECT_GE(r.firings.size(), 1u);
    // Every sleep over 10 ms fired or was skipped for a pending snapshot (the
    // threads sleep long at the same iterations), and nothing else did: the
    // 1 ms sleeps only where the machine kept a thread waiting past 10 ms.
    const uint64_t slowSeen = r.firings.size() + r.skipped[size_t(TriggerSkip::Pending)];
    EXPECT_GE(slowSeen, clearlyOver10);
    EXPECT_LE(slowSeen, over10);
    EXPECT_GE(r.samples, 400u) << "an entry and an exit per sleep";
    for (const TriggerFiring& f : r.firings) {
        EXPECT_GE(f.duration, 10'000'000u);
        EXPECT_LT(f.duration, 100'000'000u);
    }
}

// The marker: the program calls auxscope_trigger() 5 times, 20 ms apart.
TEST(TriggerKernelTest, MarkerFires) {
    SKIP_WITHOUT_TRIGGERS();
    TriggerRun run = runTriggered({"marker"}, {"marker", "5"});
    // Each call fires, or (a drain thread kept off the CPU for 20 ms under load)
    // is counted as skipped while the previous one's snapshot was pending.
    EXPECT_EQ(run.report.firings.size() + run.report.skipped[size_t(TriggerSkip::Pending)], 5u);
    EXPECT_GE(run.report.firings.size(), 1u);
    EXPECT_EQ(run.report.snapshotsTaken, run.report.firings.size());
}

// The marker as a USDT probe: usdt_prog reaches auxscope:trigger only while its
// semaphore is set, so every firing shows the kernel incremented it (the uprobe's
// ref_ctr_offset), and the rounds alternate between the probe's two sites.
TEST(TriggerKernelTest, UsdtMarkerFiresThroughItsSemaphore) {
    SKIP_WITHOUT_TRIGGERS();
    TriggerRun run = runTriggered({"marker"}, {"6"}, {}, kUsdtProg);
    ASSERT_TRUE(run.summary.commandExited);
    // Each round fires, or is counted as skipped while the previous snapshot was
    // pending (a drain thread kept off the CPU for 20 ms under load); none without the semaphore.
    EXPECT_EQ(run.report.firings.size() + run.report.skipped[size_t(TriggerSkip::Pending)], 6u);
    EXPECT_GE(run.report.firings.size(), 1u);
    EXPECT_EQ(run.report.snapshotsTaken, run.report.firings.size());
    TriggerRun tick = runTriggered({"usdt:usdt_prog:tick"}, {"4"}, {}, kUsdtProg);
    EXPECT_EQ(tick.report.firings.size() + tick.report.skipped[size_t(TriggerSkip::Pending)], 4u);
}

// The byte offset of a field in a tracepoint's raw record, from its format file
// as the test reads it (-1: no such field).
int formatFieldOffset(const std::string& system, const std::string& event, const std::string& field) {
    auto root = Tracefs::locate();
    if (!root) return -1;
    std::ifstream in(root.value() / "events" / system / event / "format");
    std::string line;
    while (std::getline(in, line)) {
        const size_t semi = line.find(';');
        if (line.find("field:") == std::string::npos || semi == std::string::npos) continue;
        const std::string decl = line.substr(0, semi);
        if (decl.size() < field.size() + 1 ||
            decl.compare(decl.size() - field.size(), field.size(), field) != 0 ||
            (decl[decl.size() - field.size() - 1] != ' ' && decl[decl.size() - field.size() - 1] != '*'))
            continue;
        const size_t o = line.find("offset:");
        return o == std::string::npos ? -1 : std::atoi(line.c_str() + o + 7);
    }
    return -1;
}

// Scheduling latency on the real kernel: trigger_prog's "late" thread waits 12 ms
// for its CPU each round (a SCHED_FIFO thread spins after waking it), "prompt" is
// woken and runs at once. 'sched:sched_wakeup->sched_switch>4ms' pairs the wakeup's
// pid with the switch's next_pid (their offsets as the format files give them):
// every round of "late" fires, naming "late", and "prompt" never does (unless the
// machine kept it waiting past 4 ms, which the program reports).
TEST(TriggerKernelTest, WakeupLatencyFiresForTheLateThreadOnly) {
    SKIP_WITHOUT_TRIGGERS();
    auto pair = resolveTrigger(*parseTriggerSpec("sched:sched_wakeup->sched_switch>4ms"), {});
    if (!pair) {
        if (ciRun()) FAIL() << pair.error().message;
        GTEST_SKIP() << "sched tracepoints are not available: " << pair.error().message;
    }
    EXPECT_EQ(pair->firstKeyOffset, formatFieldOffset("sched", "sched_wakeup", "pid"));
    EXPECT_EQ(pair->secondKeyOffset, formatFieldOffset("sched", "sched_switch", "next_pid"));
    EXPECT_EQ(pair->firstKeySize, 4);
    EXPECT_EQ(pair->secondKeySize, 4);

    constexpr long kRounds = 10;
    TriggerRun run =
        runTriggered({"sched:sched_wakeup->sched_switch>4ms"}, {"wakelat", std::to_string(kRounds)});
    ASSERT_TRUE(run.summary.commandExited);
    ASSERT_TRUE(WIFEXITED(run.summary.commandStatus));
    if (WEXITSTATUS(run.summary.commandStatus) == 77) {
        if (ciRun()) FAIL() << "trigger_prog wakelat may not pin itself or use SCHED_FIFO (CI=true)";
        GTEST_SKIP() << "trigger_prog wakelat may not pin itself or use SCHED_FIFO here";
    }
    ASSERT_EQ(WEXITSTATUS(run.summary.commandStatus), 0);
    long lateTid = 0, promptTid = 0;
    size_t lateRounds = 0, lateWaited = 0, promptOver4 = 0;
    for (auto& c : run.calls) {
        if (c.intended) {
            lateTid = c.tid, ++lateRounds;
            lateWaited += c.slow == 1;
        } else {
            promptTid = c.tid;
            promptOver4 += c.ns > 4'000'000;
        }
    }
    ASSERT_EQ(lateRounds, size_t(kRounds));
    ASSERT_NE(promptTid, 0);
    const TriggerReport& r = run.report;
    EXPECT_EQ(r.lost, 0u);
    size_t lateFirings = 0, promptFirings = 0;
    uint64_t firstLate = UINT64_MAX;
    for (const TriggerFiring& f : r.firings)
        if (f.tid == lateTid) firstLate = std::min(firstLate, f.time);
    for (const TriggerFiring& f : r.firings) {
        EXPECT_GE(f.duration, 4'000'000u);
        EXPECT_LT(f.duration, 1'000'000'000u);
        // The main thread (the hog) may fire before the rounds only: the launcher
        // wakes it to exec the program, and a loaded machine may keep it waiting.
        if (f.tid == f.pid && f.tid != lateTid && f.tid != promptTid) {
            EXPECT_LT(f.time, firstLate) << "the main thread fired during the rounds";
            continue;
        }
        EXPECT_TRUE(f.tid == lateTid || f.tid == promptTid) << "firing on tid " << f.tid;
        lateFirings += f.tid == lateTid;
        promptFirings += f.tid == promptTid;
        // The woken thread's process.
        EXPECT_GT(f.pid, 0);
        EXPECT_NE(f.pid, f.tid);
    }
    std::ostringstream why;
    why << "skipped pending " << r.skipped[size_t(TriggerSkip::Pending)] << ", other processes "
        << r.otherProcesses << ", samples " << r.samples << "; firings:";
    for (const TriggerFiring& f : r.firings)
        why << " " << f.tid << "/" << f.duration / 1000 << "us";
    // Every round where "late" was blocked when woken fired, or was counted as
    // skipped while a snapshot was pending (a drain thread kept off the CPU for
    // a round); a round where it had not reached read() yet has no wake-up.
    EXPECT_EQ(lateFirings + r.skipped[size_t(TriggerSkip::Pending)], lateWaited)
        << "every late wake-up: " << why.str();
    EXPECT_GE(lateWaited, size_t(kRounds) / 2) << "the machine kept \"late\" from blocking in most rounds";
    // "prompt" fires only where the program saw it wait over 4 ms (its own
    // measurement holds the kernel's wake-up-to-switch inside it); a wait the
    // program saw need not fire: a preemption after the switch, before its clock
    // read (a loaded machine), lengthens the program's figure, not the kernel's.
    EXPECT_LE(promptFirings, promptOver4) << "the promptly run thread fires only where it was kept waiting";
    EXPECT_EQ(r.snapshotsTaken, r.firings.size());
}

// Triggers drive the simulated AUX producers (what --replay uses) as they drive a
// real AUX flight recorder: the capture's AUX is simulated, its trigger watches
// this machine (system-wide: marker@usdt_prog, a real uprobe), and each firing's
// snapshot holds the AUX area as it was at that moment: the producer's newest
// bytes up to the position it had reached when the program hit its probe.
class AuxCollector : public RecordSink {
public:
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override {}
    void onAux(int, uint32_t, const AuxBytes& b) override {
        std::vector<uint8_t> bytes(b.first.begin(), b.first.end());
        bytes.insert(bytes.end(), b.second.begin(), b.second.end());
        std::lock_guard lock(mutex);
        snaps.push_back(std::move(bytes));
    }
    std::vector<SinkLoss> losses() const override { return {}; }
    std::mutex mutex;
    std::vector<std::vector<uint8_t>> snaps;
};

TEST(TriggerSimulatedTest, FiringSnapshotsHoldThatMomentsAuxData) {
    SKIP_WITHOUT_TRIGGERS();
    constexpr uint64_t kSize = 16384;
    SimulatedCaptureOptions o;
    o.cpus = 1;
    o.producer.auxSize = kSize;
    o.producer.mode = AuxMode::Snapshot;
    o.producer.dataPages = 16;
    o.publishHz = 50;
    auto s = CaptureSession::openSimulated(o);
    ASSERT_TRUE(s) << s.error().message;
    CaptureSession& session = **s;
    auto spec = parseTriggerSpec(std::string("marker@") + kUsdtProg);
    ASSERT_TRUE(spec);
    auto resolved = resolveTrigger(*spec, {});
    ASSERT_TRUE(resolved) << resolved.error().message;
    TriggerSettings settings;
    settings.specs = {*spec};
    ASSERT_TRUE(session.armTriggers({*resolved}, settings));
    AuxCollector col;
    session.addSink(&col);
    ASSERT_TRUE(session.start());
    auto& producer = session.simulatedProducer(0);
    std::vector<uint64_t> writtenAt;
    uint64_t seed = 11;
    for (int k = 0; k < 3; ++k) {
        // The "hardware" writes several times round the area, then stands still
        // while the program reaches its probe once.
        const uint64_t target = producer.counts().bytesWritten + 3 * kSize + 1000 * uint64_t(k) + 123;
        while (producer.counts().bytesWritten < target) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            ASSERT_TRUE(producer.step(1 + seed % 3000).started);
        }
        writtenAt.push_back(producer.counts().bytesWritten);
        ASSERT_EQ(std::system((std::string(kUsdtProg) + " 1 > /dev/null").c_str()), 0);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (session.triggerEngine()->report().snapshotsTaken < uint64_t(k + 1) &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ASSERT_EQ(session.triggerEngine()->report().snapshotsTaken, uint64_t(k + 1)) << "firing " << k;
    }
    session.requestStop();
    session.wait();
    const TriggerReport r = session.triggerEngine()->report();
    ASSERT_EQ(r.firings.size(), 3u);
    std::lock_guard lock(col.mutex);
    ASSERT_EQ(col.snaps.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
        SCOPED_TRACE("firing " + std::to_string(k));
        EXPECT_EQ(r.firings[k].snapshot, k) << "the k-th snapshot is the k-th firing's";
        ASSERT_EQ(col.snaps[k].size(), kSize) << "the whole area, wrapped";
        // The newest kSize bytes up to where the producer stood at the firing.
        const uint64_t from = writtenAt[k] - kSize;
        size_t mismatch = kSize;
        for (size_t i = 0; i < kSize && mismatch == kSize; ++i)
            if (col.snaps[k][i] != SimulatedAuxProducer::patternByte(from + i)) mismatch = i;
        EXPECT_EQ(mismatch, kSize) << "first byte not of that moment at " << mismatch;
    }
}

}  // namespace
}  // namespace auxscope
