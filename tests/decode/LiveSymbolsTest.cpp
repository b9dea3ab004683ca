// SPDX-License-Identifier: GPL-3.0-or-later
// The live timeline's symbols (issue 25), on the real kernel (skipped with the
// reason where perf_event_open is denied):
//  - LiveSideband keeps the capture's executable mappings, so its snapshots'
//    processes have them, and places the preamble (/proc, read on a thread of its
//    own and handed over late) before the capture's records: a launched command's
//    name from before its exec never overwrites the exec's;
//  - LiveSymbols names a launched stacks_prog_fp's samples with its functions,
//    loads off the calling thread (the first lanes name nothing yet, the load
//    runs meanwhile), loads nothing more while no mapping or process comes in,
//    and for the last lanes waits for the loads so that every sample is named.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "CaptureSession.h"
#include "PerfEvent.h"
#include "images/LiveSymbols.h"
#include "perfdata/PerfDataWriter.h"
#include "record/PerfDataWriterCapture.h"
#include "sideband/LiveSideband.h"
#include "spans/SidebandLanes.h"

using namespace auxscope;

namespace {

// The newest snapshot LiveSideband published, for the test's thread.
struct Published {
    std::mutex mutex;
    std::shared_ptr<const Sideband> sideband;
    LiveSidebandStats stats;
    std::shared_ptr<const Sideband> get(LiveSidebandStats* s = nullptr) {
        std::lock_guard lock(mutex);
        if (s) *s = stats;
        return sideband;
    }
};

std::unique_ptr<CaptureSession> openCommand(std::vector<std::string> argv) {
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = std::move(argv);
    auto s = CaptureSession::open(o, PmuRegistry::discover());
    if (!s) ADD_FAILURE() << s.error().message;
    return s ? std::move(s.value()) : nullptr;
}

bool programFunction(const std::string& name) {
    static const std::set<std::string> names = {"spin",         "lib_inner",    "lib_work", "leaf",
                                                "mid",          "hot",          "main",     "on_prof",
                                                "handler_work", "worker_thread"};
    return names.count(name) > 0;
}

}  // namespace

class LiveSymbolsTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto why = perfCaptureUnavailableReason())
            GTEST_SKIP() << "perf_event_open is denied here: " << *why;
    }
};

TEST_F(LiveSymbolsTest, PreambleComesBeforeTheCaptureAndMappingsAreKept) {
    auto session = openCommand({AUXSCOPE_STACKS_PROG_FP, "400"});
    ASSERT_TRUE(session);
    const pid_t pid = session->commandPid();
    ASSERT_GT(pid, 0);
    auto layout = captureFileLayout(*session, "test");
    ASSERT_TRUE(layout.ok()) << layout.error().message;
    // A preamble that, like /proc read before the exec, names the command by its
    // old name, handed over only once the capture has the exec's own COMM.
    std::mutex m;
    std::condition_variable cv;
    bool release = false;
    LiveSidebandOptions options;
    options.preamble = [&, spec = layout->fallbackId](const auto& hand) {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return release; });
        RecordBuilder comm(PERF_RECORD_COMM);
        comm.u32(uint32_t(pid)).u32(uint32_t(pid)).str("before-exec").sampleId(spec, pid, pid, 0);
        hand(comm.finish());
    };
    Published published;
    auto live = LiveSideband::attach(
        *session,
        [&](std::shared_ptr<const Sideband> sb, bool, const LiveSidebandStats& stats) {
            std::lock_guard lock(published.mutex);
            published.sideband = std::move(sb);
            published.stats = stats;
        },
        options);
    ASSERT_TRUE(session->start().ok());
    auto nameOf = [&](std::shared_ptr<const Sideband> sb) -> std::string {
        const ProcessSideband* p = sb ? sb->process(pid) : nullptr;
        return p ? p->name : "";
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (nameOf(published.get()) != "stacks_prog_fp" && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_EQ(nameOf(published.get()), "stacks_prog_fp");
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    session->wait();  // the program ends the capture (0.4 s)
    live->flush();
    LiveSidebandStats stats;
    auto sb = published.get(&stats);
    live->stop();
    EXPECT_EQ(nameOf(sb), "stacks_prog_fp") << "the preamble's older name came after the exec's";
    EXPECT_GE(stats.rebuilds, 1u);  // built again with the preamble first
    // The program's code mappings (its own and its library), none of its data mappings.
    const ProcessSideband* p = sb->process(pid);
    ASSERT_TRUE(p);
    bool program = false, library = false;
    for (const Mapping& map : p->maps) {
        program |= map.file.find("stacks_prog_fp") != std::string::npos;
        library |= map.file.find("libstacks_lib_fp.so") != std::string::npos;
    }
    EXPECT_TRUE(program && library) << p->maps.size() << " mappings";
    EXPECT_EQ(stats.mappingsDropped, 0u);
    EXPECT_GT(stats.identity, p->maps.size());
}

TEST_F(LiveSymbolsTest, SamplesNameTheProgramsFunctions) {
    auto session = openCommand({AUXSCOPE_STACKS_PROG_FP, "1500"});
    ASSERT_TRUE(session);
    const pid_t pid = session->commandPid();
    Published published;
    auto live = LiveSideband::attach(
        *session, [&](std::shared_ptr<const Sideband> sb, bool, const LiveSidebandStats& stats) {
            std::lock_guard lock(published.mutex);
            published.sideband = std::move(sb);
            published.stats = stats;
        });
    ImageOptions images;
    images.runningKernel = false;
    images.kallsyms = "/proc/kallsyms";
    LiveSymbols symbols(images);
    ASSERT_TRUE(session->start().ok());
    auto count = [](const SidebandLanes& lanes, int32_t pid, size_t* ours = nullptr) {
        size_t named = 0, total = 0, in = 0;
        for (const auto& t : lanes.threads) {
            if (t.pid != pid) continue;
            for (const auto& s : t.samples) {
                ++total;
                if (s.function == FunctionTable::kUnknown) continue;
                ++named;
                in += programFunction((*lanes.functions)[s.function].name);
            }
        }
        if (ours) *ours = in;
        return std::pair(named, total);
    };
    // The test's thread stands for LiveSideband's worker: lanes every 100 ms.
    std::shared_ptr<const SidebandLanes> lanes;
    size_t ticks = 0, firstNamedTick = 0, ours = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        LiveSidebandStats stats;
        auto sb = published.get(&stats);
        if (!sb) continue;
        lanes = symbols.lanes(sb, stats.identity, {});
        ASSERT_TRUE(lanes && lanes->functions);
        ++ticks;
        if (ticks == 1) {
            // Nothing was loaded before: the first lanes name nothing and a load starts.
            EXPECT_EQ(symbols.stats().loads, 0u);
            EXPECT_TRUE(symbols.stats().loading);
        }
        if (count(*lanes, pid, &ours).first && ours) {
            firstNamedTick = ticks;
            break;
        }
    }
    ASSERT_GT(firstNamedTick, 0u) << "no sample of the program named within 10 s";
    const LiveSymbolsStats afterNamed = symbols.stats();
    EXPECT_GE(afterNamed.loads, 1u);
    EXPECT_GT(afterNamed.files, 2u);  // the program, its library, libc, ...
    EXPECT_GT(afterNamed.functions, 0u);
    EXPECT_LT(afterNamed.functions, afterNamed.symbols);  // a table of what samples are in, not every symbol
    // Nothing new mapped: the same identity asks for no load.
    {
        LiveSidebandStats stats;
        auto sb = published.get(&stats);
        // Until what came in since is loaded (loads after the first wait their share of a core).
        for (int i = 0; i < 250 && !symbols.complete(stats.identity); ++i) {
            symbols.lanes(sb, stats.identity, {});
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        ASSERT_TRUE(symbols.complete(stats.identity));
        const uint64_t loads = symbols.stats().loads;
        for (int i = 0; i < 3; ++i) {
            symbols.lanes(sb, stats.identity, {});
            EXPECT_FALSE(symbols.stats().loading);
        }
        EXPECT_EQ(symbols.stats().loads, loads);
        EXPECT_TRUE(symbols.complete(stats.identity));
    }
    session->wait();
    live->flush();
    LiveSidebandStats stats;
    auto sb = published.get(&stats);
    live->stop();
    lanes = symbols.lanes(sb, stats.identity, {}, true);
    EXPECT_TRUE(symbols.complete(stats.identity));
    const auto [named, total] = count(*lanes, pid, &ours);
    EXPECT_GT(total, 100u);
    // Every sample in a mapped file or the kernel (a vdso sample may stay unnamed).
    EXPECT_GE(named * 100, total * 99) << named << " of " << total << " named in the last lanes";
    EXPECT_GT(ours, total / 2);
    std::printf(
        "first named at tick %zu; %zu samples, %zu in the program's functions; %zu functions from %zu "
        "files; first load %.1f ms, %llu loads\n",
        firstNamedTick, total, ours, symbols.stats().functions, symbols.stats().files,
        symbols.stats().firstLoadSeconds * 1e3, (unsigned long long)symbols.stats().loads);
}
