// SPDX-License-Identifier: GPL-3.0-or-later
// bench_unwind: DWARF unwinding of perf's --call-graph dwarf samples
// (samples/DwarfUnwinder) in unwound samples per second on one core, beside
// the time `perf report --stdio` and `hotspot-perfparser --input FILE --output
// /dev/null` (what hotspot runs) take on the same file. The anchors do more
// than unwind (symbols, inlined frames, their report or output), so the ratio
// says what unwinding leaves of the budget (open -> full analysis at
// >= 3x perfparser and >= 2x perf report); the figure itself is the one to
// watch.
//
//   bench_unwind [--engine rows|libdwfl|both] [--no-anchors] [--anchor-limit S] FILE...
//   bench_unwind --record DIR [--seconds S] [--files N] [--engine ...]
//
// --record makes two captures with perf and benches them: DIR/prog.data
// (stacks_prog_nofp for S seconds, default 3) and DIR/build.data (system-wide
// while compiling N of this repository's files at once, default 2, at most 4;
// two made ~600 MB here). Times are the unwinding thread's CPU time (the
// machine is shared); the anchors' are their user + system time (with the
// helpers they wait for: perf report runs addr2line), with wall time beside;
// an anchor still running after --anchor-limit seconds (900) is stopped and
// reported as "more than". With --engine both, every sample's frames and stop
// are compared between the engines and the count that differ is printed (0
// but where a process's mappings overlap once whole files are counted: libdwfl
// finds a module by its file's whole extent, the CFI rows by the mapping).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "LoadAverage.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "samples/DwarfUnwinder.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

extern char** environ;

using namespace auxscope;

namespace {

double cpuNow() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

double wallNow() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Run {
    bool ok = false;
    bool timedOut = false;
    double cpu = 0, wall = 0;
};

// Runs `args` with its output thrown away, for at most `limit` seconds (then
// it and its children are killed): its CPU time (user + system, with the
// children it waited for) and wall time.
Run runProgram(const std::vector<std::string>& args, double limit = 1e9) {
    std::vector<char*> argv;
    for (const std::string& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // a group of its own, to end its helpers too
    posix_spawnattr_setpgroup(&attr, 0);
    Run run;
    const double start = wallNow();
    pid_t pid;
    const int spawned = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (spawned != 0) return run;
    int status = 0;
    rusage usage{};
    for (;;) {
        const pid_t done = wait4(pid, &status, WNOHANG, &usage);
        if (done == pid) break;
        if (done < 0) return run;
        if (!run.timedOut && wallNow() - start > limit) {
            run.timedOut = true;
            kill(-pid, SIGKILL);
        }
        usleep(20000);
    }
    run.wall = wallNow() - start;
    run.cpu = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    run.ok = !run.timedOut && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return run;
}

std::string perfparser() {
    for (const char* p : {"/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser",
                          "/usr/libexec/hotspot-perfparser", "/usr/lib/hotspot/hotspot-perfparser"})
        if (access(p, X_OK) == 0) return p;
    return "hotspot-perfparser";
}

struct EngineResult {
    uint64_t samples = 0, frames = 0;
    double cpu = 0;
    std::map<UnwindStop, uint64_t> stops;
    DwarfUnwinder::Worker::Stats stats;
    std::vector<uint64_t> digests;  // per sample: its frames and stop, hashed (to compare engines)
};

uint64_t digest(const std::vector<uint64_t>& frames, UnwindStop stop) {
    uint64_t h = 0xcbf29ce484222325ull ^ uint64_t(stop);
    for (uint64_t f : frames)
        h = (h ^ f) * 0x100000001b3ull;
    return h;
}

// Samples are copied out of the file in batches and each batch is unwound in
// one timed run: the clock (a system call for thread CPU time) is read twice a
// batch, not twice a sample.
EngineResult unwindFile(const PerfDataReader& file, const ImageResolver& images, uint16_t machine,
                        DwarfUnwinder::Engine engine) {
    EngineResult r;
    DwarfUnwinder unwinder(images, machine, DwarfUnwinder::Options{engine});
    auto worker = unwinder.worker();
    struct Sample {
        int32_t pid;
        uint64_t abi, mask;
        size_t regs, stack, regsSize, stackSize;  // in `bytes`
    };
    std::vector<Sample> batch;
    std::vector<uint8_t> bytes;
    std::vector<uint64_t> frames;
    auto unwindBatch = [&] {
        const double t = cpuNow();
        for (const Sample& s : batch) {
            frames.clear();
            const UserStackCopy copy{
                s.abi, s.mask, {bytes.data() + s.regs, s.regsSize}, {bytes.data() + s.stack, s.stackSize}};
            const UnwindStop stop = unwinder.unwind(*worker, s.pid, copy, frames);
            ++r.samples;
            r.frames += frames.size();
            ++r.stops[stop];
            r.digests.push_back(digest(frames, stop));
        }
        r.cpu += cpuNow() - t;
        batch.clear();
        bytes.clear();
    };
    (void)file.forEachRecord([&](const PerfRecord& rec) {
        const ParsedRecord& p = rec.parsed;
        if (p.type != PERF_RECORD_SAMPLE || !p.event || !p.stackUserSize) return true;
        Sample s{p.pid, p.regsUserAbi,     p.event->sampleRegsUser, bytes.size(),
                 0,     p.regsUser.size(), p.stackUser.size()};
        bytes.insert(bytes.end(), p.regsUser.begin(), p.regsUser.end());
        s.stack = bytes.size();
        bytes.insert(bytes.end(), p.stackUser.begin(), p.stackUser.end());
        batch.push_back(s);
        if (batch.size() == 512) unwindBatch();
        return true;
    });
    unwindBatch();
    r.stats = worker->stats();
    return r;
}

void benchFile(const std::string& path, const std::vector<DwarfUnwinder::Engine>& engines, bool anchors,
               double anchorLimit) {
    std::printf("\n%s (%s)\n", path.c_str(), bench::loadAverage().c_str());
    const double t0 = cpuNow();
    auto file = PerfDataReader::open(path);
    if (!file) {
        std::printf("  cannot open: %s\n", file.error().message.c_str());
        return;
    }
    auto sideband = Sideband::load(*file);
    if (!sideband) {
        std::printf("  cannot read its sideband: %s\n", sideband.error().message.c_str());
        return;
    }
    FunctionTable functions;
    ImageResolver images(*sideband, functions, {});
    images.prepare();
    const uint16_t machine = elfMachineOfArch(file->features().arch.value_or(""));
    std::printf("  %.0f MB, %zu processes, %zu files (%zu missing); opened in %.2f s CPU\n",
                double(file->fileSize()) / 1e6, sideband->processes().size(), images.files().size(),
                images.missingFiles(), cpuNow() - t0);
    double rowsCpu = 0;  // the first engine's, for the ratios
    std::vector<uint64_t> firstDigests;
    for (DwarfUnwinder::Engine engine : engines) {
        const EngineResult r = unwindFile(*file, images, machine, engine);
        const double rate = r.cpu > 0 ? double(r.samples) / r.cpu : 0;
        if (rowsCpu == 0) rowsCpu = r.cpu;
        std::printf(
            "  auxscope unwind (%s): %llu samples, %.1f frames each, %.3f s CPU: %.0f samples/s per core, "
            "%.2f us per frame\n",
            engine == DwarfUnwinder::Engine::CfiRows ? "CFI rows" : "libdwfl", (unsigned long long)r.samples,
            r.samples ? double(r.frames) / double(r.samples) : 0.0, r.cpu, rate,
            r.frames ? r.cpu * 1e6 / double(r.frames) : 0.0);
        std::printf("    stops:");
        for (const auto& [stop, n] : r.stops)
            std::printf(" %s %llu", unwindStopName(stop), (unsigned long long)n);
        std::printf(
            "\n    files %llu, processes %llu, CFI rows looked up %llu, computed by libdw %llu, "
            "frame-pointer steps %llu\n",
            (unsigned long long)r.stats.files, (unsigned long long)r.stats.processes,
            (unsigned long long)r.stats.rowLookups, (unsigned long long)r.stats.rowsComputed,
            (unsigned long long)r.stats.framePointerSteps);
        if (firstDigests.empty()) {
            firstDigests = r.digests;
        } else {
            size_t differ = 0;
            for (size_t i = 0; i < r.digests.size() && i < firstDigests.size(); ++i)
                differ += r.digests[i] != firstDigests[i];
            std::printf("    samples whose frames or stop differ from the first engine's: %zu of %zu\n",
                        differ, r.digests.size());
        }
    }
    if (!anchors) return;
    const Run report = runProgram({"perf", "report", "--stdio", "-i", path}, anchorLimit);
    const Run parser = runProgram({perfparser(), "--input", path, "--output", "/dev/null"}, anchorLimit);
    for (const auto& [name, run] :
         {std::pair<const char*, Run>{"perf report --stdio", report},
          std::pair<const char*, Run>{"hotspot-perfparser --output /dev/null", parser}}) {
        if (run.timedOut) {
            // Its helpers (perf report's addr2line) were killed, not waited for: their CPU time is not in
            // run.cpu.
            std::printf(
                "  %-38s stopped after %.0f s wall (%.2f s CPU of its own by then, its helpers' not "
                "counted)\n",
                name, run.wall, run.cpu);
        } else if (!run.ok) {
            std::printf("  %-38s failed (is it installed?)\n", name);
        } else {
            std::printf("  %-38s %.2f s CPU (%.2f s wall): %.1fx auxscope's unwinding\n", name, run.cpu,
                        run.wall, rowsCpu > 0 ? run.cpu / rowsCpu : 0.0);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as soon as it is known
    std::vector<DwarfUnwinder::Engine> engines{DwarfUnwinder::Engine::CfiRows};
    std::vector<std::string> files;
    std::string recordDir;
    double seconds = 3;
    size_t compileFiles = 2;
    bool anchors = true;
    double anchorLimit = 900;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--engine" && i + 1 < argc) {
            const std::string e = argv[++i];
            engines.clear();
            if (e == "rows" || e == "both") engines.push_back(DwarfUnwinder::Engine::CfiRows);
            if (e == "libdwfl" || e == "both") engines.push_back(DwarfUnwinder::Engine::Libdwfl);
        } else if (a == "--record" && i + 1 < argc) {
            recordDir = argv[++i];
        } else if (a == "--files" && i + 1 < argc) {
            compileFiles = size_t(std::max(1, std::atoi(argv[++i])));
        } else if (a == "--seconds" && i + 1 < argc) {
            seconds = std::atof(argv[++i]);
        } else if (a == "--anchor-limit" && i + 1 < argc) {
            anchorLimit = std::atof(argv[++i]);
        } else if (a == "--no-anchors") {
            anchors = false;
        } else if (!a.empty() && a[0] != '-') {
            files.push_back(a);
        } else {
            std::fprintf(stderr,
                         "usage: bench_unwind [--engine rows|libdwfl|both] [--no-anchors] [--anchor-limit S] "
                         "FILE...\n"
                         "       bench_unwind --record DIR [--seconds S] [--files N] [--engine ...]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    if (!recordDir.empty()) {
        const std::string prog = recordDir + "/prog.data", build = recordDir + "/build.data";
        const std::string ms = std::to_string(int(seconds * 1000));
        std::printf("recording %s: stacks_prog_nofp %s ms\n", prog.c_str(), ms.c_str());
        runProgram({"mkdir", "-p", recordDir});
        if (!runProgram({"perf", "record", "-e", "cpu-clock", "-F", "4000", "--call-graph", "dwarf", "-o",
                         prog, "--", AUXSCOPE_STACKS_PROG, ms})
                 .ok)
            std::printf("  perf record failed\n");
        // Two compilers at a time, as a build on this machine's two cores runs them.
        const std::string src = AUXSCOPE_SOURCE_DIR;
        std::string workload;
        const std::vector<std::string> sources = {
            "decode/samples/DwarfUnwinder.cpp", "decode/images/ImageResolver.cpp",
            "decode/sideband/Sideband.cpp", "decode/perfdata/PerfDataReader.cpp"};
        for (size_t i = 0; i < compileFiles && i < sources.size(); ++i) {
            const std::string& f = sources[i];
            workload += "c++ -std=c++20 -O2 -I" + src + "/decode -I" + src + "/capture -c " + src + "/" + f +
                        " -o /dev/null & ";
        }
        workload += "wait";
        std::printf("recording %s: system-wide while compiling %zu files\n", build.c_str(), compileFiles);
        if (!runProgram({"perf", "record", "-e", "cpu-clock", "-F", "4000", "--call-graph", "dwarf", "-a",
                         "-o", build, "--", "sh", "-c", workload})
                 .ok)
            std::printf("  perf record failed\n");
        files = {prog, build};
    }
    if (files.empty()) {
        std::fprintf(stderr, "bench_unwind: no file (give FILE... or --record DIR)\n");
        return 2;
    }
    for (const std::string& f : files)
        benchFile(f, engines, anchors, anchorLimit);
    return 0;
}
