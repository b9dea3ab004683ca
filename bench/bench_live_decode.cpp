// SPDX-License-Identifier: GPL-3.0-or-later
// What a live decode tick costs, with each tick's session opened afresh (the
// anchor: how the live decoder worked before) and with each tick's session
// taking over the previous tick's code images, symbols and block shapes
// (LiveDecoderOptions::carrySession, the default), side by side in one run.
//
// A ptsynth trace (PtSynthTrace.h) is replayed, paced to last --seconds, into a
// real CaptureSession and drain thread with the live decoder attached, as the
// GUI does for a live capture (no Intel PT here: the replay's simulated CPUs
// follow the kernel's AUX protocol). With --kallsyms FILE (default
// /proc/kallsyms, copied first) every fresh session parses the kernel's symbols
// again: the cost the issue asks to measure. Per mode: ticks, the mean tick and
// its session-open part, files loaded, instructions decoded; the load average
// beside each line, since the machine is shared.
//
// Not a test: run by hand or through `ninja run_bench_live_decode`.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "LoadAverage.h"
#include "PtSynthTrace.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "record/ReplaySource.h"

using namespace auxscope;

namespace {

struct Options {
    uint64_t sizeMb = 16;
    uint64_t seed = 1;
    double seconds = 8;  // wall time of each paced replay
    std::string kallsyms = "/proc/kallsyms";
    std::string dir = AUXSCOPE_BENCH_DIR;
};

std::string load() {
    return bench::loadAverage();
}

[[noreturn]] void die(const std::string& message) {
    std::fprintf(stderr, "bench_live_decode: %s\n", message.c_str());
    std::exit(1);
}

struct Run {
    LiveDecodeStats stats;
    double wall = 0;
};

Run replay(const std::string& path, const Options& o, bool carry, const std::string& kallsyms) {
    auto src = ReplaySource::open(path);
    if (!src) die(src.error().message);
    ReplayOptions ro;
    // The generated trace's AUX bytes all come at the start of its recorded
    // time: looped, a pass every 0.5 s, so every tick finds new trace.
    ro.loop = true;
    ro.durationSeconds = o.seconds;
    ro.speed.factor = std::max((*src)->recordedSeconds() / 0.5, 1e-9);
    auto session = (*src)->openSession(ro);
    if (!session) die(session.error().message);
    LiveDecoderOptions lo;
    lo.carrySession = carry;
    lo.images.kallsyms = kallsyms;
    lo.images.runningKernel = false;
    lo.auxtraceInfo = (*src)->auxtraceInfo(ro);
    auto live = LiveTraceDecoder::attach(**session, lo);
    if (!live) die(live.error().message);
    const auto t0 = std::chrono::steady_clock::now();
    if (auto r = (*session)->start(); !r) die(r.error().message);
    if (auto r = (*src)->start(**session, ro); !r) die(r.error().message);
    while (!(*session)->finished())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    (*src)->wait();
    (*session)->wait();
    (*live)->stop();
    Run run;
    run.stats = (*live)->stats();
    run.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!run.stats.lastError.empty()) die("live decode: " + run.stats.lastError);
    return run;
}

void print(const char* name, const Run& r) {
    const double n = r.stats.ticks ? double(r.stats.ticks) : 1;
    std::printf(
        "  %-36s %5.1f s, %4llu ticks  tick %7.1f ms  open %7.1f ms  decode+publish %7.1f ms  %3llu files "
        "loaded  "
        "%5.1f MB decoded, %6.1f M insns  [%s]\n",
        name, r.wall, (unsigned long long)r.stats.ticks, 1e3 * r.stats.tickSeconds / n,
        1e3 * r.stats.openSeconds / n, 1e3 * (r.stats.tickSeconds - r.stats.openSeconds) / n,
        (unsigned long long)r.stats.filesLoaded, double(r.stats.decodedBytes) / 1e6,
        double(r.stats.instructions) / 1e6, load().c_str());
    std::printf("  %-36s aux %.1f MB, skipped %.1f MB, %llu sync points\n", "",
                double(r.stats.auxBytes) / 1e6, double(r.stats.skippedBytes) / 1e6,
                (unsigned long long)r.stats.syncPoints);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) die(a + " needs a value");
            return argv[++i];
        };
        if (a == "--size-mb")
            o.sizeMb = std::strtoull(value(), nullptr, 0);
        else if (a == "--seed")
            o.seed = std::strtoull(value(), nullptr, 0);
        else if (a == "--seconds")
            o.seconds = std::atof(value());
        else if (a == "--kallsyms")
            o.kallsyms = value();
        else if (a == "--dir")
            o.dir = value();
        else {
            std::fprintf(
                stderr,
                "usage: bench_live_decode [--size-mb N (16)] [--seed N] [--seconds S (8)]\n"
                "                         [--kallsyms FILE (/proc/kallsyms; '' for none)] [--dir DIR]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    if (o.seconds <= 0 || !o.sizeMb) die("--seconds and --size-mb must be positive");
    std::printf("bench_live_decode: %u cores, %s\n", std::thread::hardware_concurrency(), load().c_str());
    const std::string path = bench::ensurePtSynthTrace(AUXSCOPE_PTSYNTH, o.dir, o.sizeMb, o.seed);

    // /proc/kallsyms is read through a copy: the file the decoder parses every
    // time a session opens, as --kallsyms FILE would give it.
    std::string kallsyms = o.kallsyms;
    if (kallsyms == "/proc/kallsyms") {
        kallsyms = o.dir + "/kallsyms-" + std::to_string(::getpid());
        // (procfs gives no size: copied by reading, not copy_file)
        std::ifstream in("/proc/kallsyms");
        std::ofstream out(kallsyms);
        out << in.rdbuf();
        if (!in || !out) die("cannot copy /proc/kallsyms to " + kallsyms);
    }
    uint64_t symbols = 0;
    if (!kallsyms.empty()) {
        FILE* f = std::fopen(kallsyms.c_str(), "r");
        if (!f) die("cannot read " + kallsyms);
        for (int c; (c = std::fgetc(f)) != EOF;)
            symbols += c == '\n';
        std::fclose(f);
    }
    std::printf("== %s replayed over %.1f s, ticks every 0.5 s (1 MB per CPU at most, 1/4 core)\n",
                path.c_str(), o.seconds);
    for (const std::string& k : {std::string(), kallsyms}) {
        if (k.empty() && kallsyms.empty()) continue;
        if (k.empty())
            std::printf("-- no kernel symbols\n");
        else
            std::printf("-- --kallsyms %s (%llu lines)\n", o.kallsyms.c_str(), (unsigned long long)symbols);
        const Run fresh = replay(path, o, false, k);
        print("a fresh session every tick (before)", fresh);
        const Run carried = replay(path, o, true, k);
        print("the session carried (now)", carried);
        const double before = fresh.stats.ticks ? fresh.stats.tickSeconds / double(fresh.stats.ticks) : 0;
        const double now = carried.stats.ticks ? carried.stats.tickSeconds / double(carried.stats.ticks) : 0;
        if (now > 0)
            std::printf("  mean tick: %.1f ms -> %.1f ms (%.2fx)\n", 1e3 * before, 1e3 * now, before / now);
    }
    if (kallsyms != o.kallsyms) std::remove(kallsyms.c_str());
    std::printf("bench_live_decode: done, %s\n", load().c_str());
    return 0;
}
