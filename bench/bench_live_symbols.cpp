// SPDX-License-Identifier: GPL-3.0-or-later
// What resolving samples to functions costs the capture page's live timeline
// (issue 25): a system-wide capture (cpu-clock, context switches, optionally
// -g) feeds LiveSideband as the capture page's does (names and mappings from
// /proc in its preamble), and on every tick the same snapshot's lanes are built
// twice on the worker, as LiveTimeline builds them:
//   without   buildSidebandLanes, samples left as addresses (before issue 25);
//   with      LiveSymbols::update (files new mappings name; the first tick loads
//             every mapped file and /proc/kallsyms) + buildSidebandLanes with
//             LiveSymbols' functionAt.
// Prints the first tick (the first load) and the median, p95 and max of the
// later ticks for both, the share of samples that named a function, and the
// load average (the machine is shared). Needs perf_event_open (root here).
//
//   bench_live_symbols [--seconds S] [-g] [-- COMMAND...]
//
// COMMAND (e.g. a build) runs during the capture, as the workload; without one
// the machine's own activity is what is captured.
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CaptureSession.h"
#include "LoadAverage.h"
#include "images/LiveSymbols.h"
#include "record/PerfDataWriterCapture.h"
#include "record/ProcSynth.h"
#include "sideband/LiveSideband.h"
#include "spans/SidebandLanes.h"

using namespace auxscope;

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU time of this thread: on a shared machine the wall time counts other threads' turns too.
double cpuNow() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

struct Tick {
    double at = 0;                       // since the capture started
    double without = 0, with = 0;        // wall time
    double withoutCpu = 0, withCpu = 0;  // this thread's CPU time
    size_t samples = 0, named = 0, notYet = 0, files = 0;
    uint64_t kept = 0;
};

void printStats(const char* what, std::vector<double> v) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    std::printf("  %-44s median %7.2f ms   p95 %7.2f ms   max %7.2f ms\n", what, v[v.size() / 2] * 1e3,
                v[std::min(v.size() - 1, v.size() * 95 / 100)] * 1e3, v.back() * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 10;
    bool callGraph = false;
    std::vector<char*> command;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--seconds" && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else if (a == "-g") {
            callGraph = true;
        } else if (a == "--") {
            for (++i; i < argc; ++i)
                command.push_back(argv[i]);
        } else {
            std::fprintf(stderr, "usage: bench_live_symbols [--seconds S] [-g] [-- COMMAND...]\n");
            return 2;
        }
    }
    CaptureOptions options;
    options.target = TargetKind::SystemWide;
    if (callGraph) options.callGraph.mode = CallGraphMode::FramePointer;
    const PmuRegistry pmus = PmuRegistry::discover();
    auto session = CaptureSession::open(options, pmus);
    if (!session) {
        std::fprintf(stderr, "bench_live_symbols: %s\n", session.error().message.c_str());
        return 1;
    }
    std::vector<std::string> events;
    for (const EventDesc& e : (*session)->events())
        events.push_back(e.name);

    std::mutex mutex;
    Clock::time_point started = Clock::now();
    std::vector<Tick> ticks;
    ImageOptions imageOptions;  // as LiveTimeline sets them for a capture on this machine
    imageOptions.runningKernel = false;
    imageOptions.kallsyms = "/proc/kallsyms";
    auto symbols = std::make_shared<LiveSymbols>(imageOptions);
    auto publish = [&](std::shared_ptr<const Sideband> sideband, bool changed,
                       const LiveSidebandStats& stats) {
        if (!sideband || !changed) return;
        Tick t;
        t.at = since(started);
        t.kept = stats.kept;
        SidebandLanesOptions plain;
        plain.events = events;
        auto t0 = Clock::now();
        double c0 = cpuNow();
        auto lanes = buildSidebandLanes(*sideband, plain);
        t.without = since(t0);
        t.withoutCpu = cpuNow() - c0;
        t0 = Clock::now();
        c0 = cpuNow();
        SidebandLanesOptions resolved;
        resolved.events = events;
        auto named = symbols->lanes(sideband, stats.identity, resolved);
        t.with = since(t0);
        t.withCpu = cpuNow() - c0;
        const LiveSymbolsStats st = symbols->stats();
        t.notYet = st.notYet;
        for (const auto& th : named->threads)
            for (const auto& s : th.samples) {
                ++t.samples;
                t.named += s.function != FunctionTable::kUnknown;
            }
        t.files = symbols->stats().files;
        std::lock_guard lock(mutex);
        ticks.push_back(t);
    };
    LiveSidebandOptions liveOptions;
    if (auto layout = captureFileLayout(**session, "bench"))
        liveOptions.preamble = [&s = **session, id = layout->fallbackId](const auto& hand) {
            ProcSynth synth(id, [&](std::span<const uint8_t> rec) -> Expected<void> {
                hand(rec);
                return {};
            });
            std::vector<std::string> notes;
            (void)synthesizeCaptureSideband(s, synth, notes);
        };
    auto live = LiveSideband::attach(**session, publish, std::move(liveOptions));
    started = Clock::now();
    if (auto r = (*session)->start(); !r) {
        std::fprintf(stderr, "bench_live_symbols: %s\n", r.error().message.c_str());
        return 1;
    }
    pid_t child = -1;
    if (!command.empty()) {
        command.push_back(nullptr);
        child = fork();
        if (child == 0) {
            execvp(command[0], command.data());
            _exit(127);
        }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    (*session)->requestStop();
    (*session)->wait();
    live->stop();
    if (child > 0) {
        kill(child, SIGTERM);
        waitpid(child, nullptr, 0);
    }

    std::lock_guard lock(mutex);
    if (ticks.size() < 2) {
        std::fprintf(stderr, "bench_live_symbols: only %zu ticks with records\n", ticks.size());
        return 1;
    }
    const LiveSymbolsStats st = symbols->stats();
    std::printf("bench_live_symbols: system-wide cpu-clock%s, %.0f s, %zu ticks, %s\n",
                callGraph ? " -g" : "", seconds, ticks.size(), bench::loadAverage().c_str());
    std::printf(
        "  loads (on LiveSymbols' own thread): first %.1f ms (%zu symbols with the kernel's), "
        "newest %.1f ms, %llu in all; %zu code files looked up, %zu not found\n",
        st.firstLoadSeconds * 1e3, st.symbols, st.lastLoadSeconds * 1e3, (unsigned long long)st.loads,
        st.files, st.missing);
    size_t firstNamed = ticks.size();
    for (size_t i = 0; i < ticks.size(); ++i)
        if (ticks[i].named) {
            firstNamed = i;
            break;
        }
    if (firstNamed < ticks.size())
        std::printf("  first tick with named samples: %.2f s after start (tick %zu)\n", ticks[firstNamed].at,
                    firstNamed);
    std::vector<double> without, with, extra, withoutCpu, withCpu, extraCpu;
    size_t loadingTicks = 0, notYet = 0;
    for (size_t i = 0; i < ticks.size(); ++i) {
        without.push_back(ticks[i].without);
        with.push_back(ticks[i].with);
        extra.push_back(ticks[i].with - ticks[i].without);
        withoutCpu.push_back(ticks[i].withoutCpu);
        withCpu.push_back(ticks[i].withCpu);
        extraCpu.push_back(ticks[i].withCpu - ticks[i].withoutCpu);
        loadingTicks += ticks[i].notYet > 0;
        notYet += ticks[i].notYet;
    }
    std::printf("  every tick (%zu), the lanes of one snapshot built on LiveSideband's worker:\n",
                ticks.size());
    printStats("without symbols (samples as addresses)", without);
    printStats("with LiveSymbols (samples named)", with);
    printStats("difference (with - without)", extra);
    std::printf("  the same, CPU time of the worker thread:\n");
    printStats("without symbols", withoutCpu);
    printStats("with LiveSymbols", withCpu);
    printStats("difference (with - without)", extraCpu);
    const Tick& last = ticks.back();
    std::printf("  ticks that met a running load: %zu (%zu sample lookups left for the next tick)\n",
                loadingTicks, notYet);
    std::printf(
        "  last tick: %llu records in the window, %zu samples on thread lanes, %zu (%.1f%%) named a "
        "function\n",
        (unsigned long long)last.kept, last.samples, last.named,
        last.samples ? 100.0 * double(last.named) / double(last.samples) : 0);
    return 0;
}
