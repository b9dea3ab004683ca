// SPDX-License-Identifier: GPL-3.0-or-later
// Arm SPE decode throughput on one core, beside perf on the same file. The file
// is an auxscope-spesynth --generate N recording (4 CPUs, 6 threads, every
// packet kind), written once into the build directory.
//   (a0) the packet boundaries alone (header -> length -> next header): the
//       format's serial dependency, the floor under any decoder on the machine
//   (a) the record decoder alone: spe::decodeSpeRun over each CPU's AUX bytes
//       (packets -> SpeRecords, no time conversion or threads): records/s, MB/s
//   (b) spe::decodeSpeRecords(file, sideband): (a) plus TIME_CONV, the thread of
//       every record (CONTEXT packets, else the switch sideband) and the merge of
//       the CPUs by time; the file is open and the sideband loaded (not timed)
//   (c) `auxscope decode FILE --format records >/dev/null`: the whole process
//       (open, sideband, images, records, the CSV)
//   (c') `auxscope decode FILE --format packets >/dev/null`: the packet listing in
//       perf report -D's layout, whole process: the same work as (d)
//   (d) `perf report -D -i FILE >/dev/null`: perf's packet dump, whole process
//   (e) `perf script -i FILE >/dev/null`: perf's samples, one per record, whole process
// Each figure is the median of --repeat runs (default 5), with its CPU time, the
// rate on CPU time too, and the load average (on a shared machine wall time
// counts the neighbours; (a) and (b) run on one thread, so CPU time is theirs). The target is (a) >=
// 30 M records/s on one core. Not a test: run by hand or `ninja run_bench_spe_decode`.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "LoadAverage.h"
#include "perfdata/AuxStreams.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"
#include "spe/SpeDecoder.h"
#include "spe/SpePacket.h"

using namespace auxscope;

namespace {

struct Timing {
    double wall = 0, cpu = 0;
};

// This thread's CPU time (the decode runs on the calling thread).
double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

template <typename F>
Timing timeIt(F&& f) {
    const double c0 = cpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), cpuSeconds() - c0};
}

// A whole process with stdout and stderr to /dev/null: wall and its CPU time; nullopt-like -1 on failure.
Timing runProcess(const std::vector<std::string>& argv, int* status) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        FILE* null = std::fopen("/dev/null", "w");
        if (null) dup2(fileno(null), 1), dup2(fileno(null), 2);
        std::vector<char*> args;
        for (const std::string& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    int st = 0;
    rusage u{};
    wait4(pid, &st, 0, &u);
    *status = st;
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
            double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6};
}

Timing median(std::vector<Timing> v) {
    std::sort(v.begin(), v.end(), [](const Timing& a, const Timing& b) { return a.wall < b.wall; });
    return v[v.size() / 2];
}

void line(const char* what, const Timing& t, uint64_t records, uint64_t bytes) {
    std::printf("%-52s %8.3f s wall %8.3f s cpu  %7.2f M records/s (%6.2f on cpu time)  %8.1f MB/s   %s\n",
                what, t.wall, t.cpu, double(records) / t.wall / 1e6,
                t.cpu > 0 ? double(records) / t.cpu / 1e6 : 0.0, double(bytes) / t.wall / 1e6,
                bench::loadAverage().c_str());
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t n = 2000000;
    int repeat = 5;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--records") && i + 1 < argc)
            n = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = std::max(1, std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: bench_spe_decode [--records N] [--repeat R]\n");
            return 2;
        }
    }
    std::filesystem::create_directories(AUXSCOPE_BENCH_DIR);
    const std::string path = std::string(AUXSCOPE_BENCH_DIR) + "/spe-" + std::to_string(n) + ".data";
    if (!std::filesystem::exists(path)) {
        int st = 0;
        runProcess({AUXSCOPE_SPESYNTH, "--generate", std::to_string(n), "--seed", "1", "-o", path}, &st);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            std::fprintf(stderr, "bench_spe_decode: %s --generate %" PRIu64 " failed\n", AUXSCOPE_SPESYNTH,
                         n);
            return 1;
        }
    }
    auto file = PerfDataReader::open(path);
    if (!file) {
        std::fprintf(stderr, "bench_spe_decode: %s\n", file.error().message.c_str());
        return 1;
    }
    auto sideband = Sideband::load(*file);
    if (!sideband) {
        std::fprintf(stderr, "bench_spe_decode: %s\n", sideband.error().message.c_str());
        return 1;
    }
    std::vector<std::string> notes;
    std::vector<AuxStream> streams = collectAuxStreams(*file, "record boundary", notes);
    std::vector<std::vector<uint8_t>> bytes;  // each CPU's stream, contiguous (not timed)
    uint64_t total = 0;
    for (const AuxStream& s : streams) {
        const uint8_t* d = s.bytes.data();
        bytes.emplace_back(d, d + s.bytes.size());
        total += s.bytes.size();
    }
    std::printf("bench_spe_decode: %s: %" PRIu64 " records wanted, %zu CPUs, %" PRIu64
                " SPE bytes; median of %d runs\n",
                path.c_str(), n, streams.size(), total, repeat);

    // (a0) the packet boundaries alone: a packet's length is in its header, so
    // finding the next packet waits on the previous one; this serial chain (a
    // load and a table look-up per packet) bounds any SPE decoder on this core.
    {
        uint8_t len[256];
        for (unsigned b = 0; b < 256; ++b) {
            const spe::HeaderInfo& h = spe::kSpeHeaders[b];
            len[b] = uint8_t(1 + h.payloadLen);  // extended headers count short by one here: rare
        }
        uint64_t packets = 0;
        std::vector<Timing> a0;
        for (int r = 0; r < repeat; ++r)
            a0.push_back(timeIt([&] {
                packets = 0;
                for (const std::vector<uint8_t>& b : bytes) {
                    const uint8_t* p = b.data();
                    for (size_t i = 0; i < b.size(); i += len[p[i]])
                        ++packets;
                }
            }));
        char what[80];
        std::snprintf(what, sizeof what, "(a0) packet boundaries only (%.1f M packets)",
                      double(packets) / 1e6);
        line(what, median(a0), n, total);
    }

    // (a) the record decoder alone.
    std::vector<spe::SpeRecord> recs;
    recs.reserve(n + 16);
    uint64_t decoded = 0;
    std::vector<Timing> a;
    for (int r = 0; r < repeat; ++r) {
        spe::SpeDecodeStats stats;
        a.push_back(timeIt([&] {
            recs.clear();
            for (size_t k = 0; k < bytes.size(); ++k)
                spe::decodeSpeRun(bytes[k], streams[k].cpu, recs, stats);
        }));
        decoded = recs.size();
        if (stats.gapBytes) std::printf("note: %" PRIu64 " gap bytes\n", stats.gapBytes);
    }
    line("(a) spe::decodeSpeRun (packets -> records)", median(a), decoded, total);

    // (b) the file's records: times, threads, merge.
    std::vector<Timing> b;
    uint64_t fileRecords = 0;
    for (int r = 0; r < repeat; ++r)
        b.push_back(timeIt([&] {
            auto out = spe::decodeSpeRecords(*file, *sideband);
            fileRecords = out ? out->records.size() : 0;
        }));
    line("(b) spe::decodeSpeRecords (+ time, threads, merge)", median(b), fileRecords, total);
    if (fileRecords != decoded || decoded != n)
        std::printf("FAIL: (a) decoded %" PRIu64 ", (b) %" PRIu64 " records of %" PRIu64 "\n", decoded,
                    fileRecords, n);

    // (c)-(e) whole processes.
    auto processes = [&](const char* what, const std::vector<std::string>& argv) {
        std::vector<Timing> t;
        for (int r = 0; r < repeat; ++r) {
            int st = 0;
            t.push_back(runProcess(argv, &st));
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                std::printf("%-52s failed (status %d)\n", what, st);
                return;
            }
        }
        line(what, median(t), n, total);
    };
    processes("(c) auxscope decode FILE --format records",
              {AUXSCOPE_BENCH_AUXSCOPE, "decode", path, "--format", "records"});
    processes("(c') auxscope decode FILE --format packets",
              {AUXSCOPE_BENCH_AUXSCOPE, "decode", path, "--format", "packets"});
    processes("(d) perf report -D -i FILE (same work as c')", {"perf", "report", "-D", "-i", path});
    processes("(e) perf script -i FILE", {"perf", "script", "-i", path});
    return decoded == n && fileRecords == n ? 0 : 3;
}
