// SPDX-License-Identifier: GPL-3.0-or-later
// Output at decode speed (issue 34): lines/s of the span listing's formatter
// alone (export/SpanListing.h over a decoded ptsynth trace, into a stream that
// drops the bytes) and of the whole `auxscope decode FILE --format spans -j N >
// /dev/null` (its decode phase, output phase and total wall from its stderr),
// at each thread count, beside the targets: >= 20 M lines/s, total wall <=
// 1.5 x the decode phase. Also the serial fraction, CPU inflation and the
// speed-up they predict for 16 cores (Amdahl).
//
// usage: bench_output [--size-mb N] [--threads-list 1,2,...] [--repeat R] [--trace FILE] [--no-command]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <string>
#include <thread>
#include <vector>

#include "LoadAverage.h"
#include "PtSynthTrace.h"
#include "ScalingFigures.h"
#include "auxtrace/AuxTraceDecode.h"
#include "export/SpanListing.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// A stream that counts and drops what is written (as > /dev/null does).
struct NullBuffer : std::streambuf {
    uint64_t bytes = 0;
    std::streamsize xsputn(const char*, std::streamsize n) override {
        bytes += uint64_t(n);
        return n;
    }
    int overflow(int c) override {
        ++bytes;
        return c;
    }
};

struct Command {
    double wall = 0, cpu = 0, decode = 0, output = 0;
    uint64_t lines = 0;
    bool ok = false;
};

// `auxscope decode TRACE --format spans -j N > /dev/null`, its stderr read for
// the decode phase ("... in X s") and the output phase ("output: L lines in Y s").
Command runCommand(const std::string& auxscope, const std::string& trace, unsigned threads) {
    Command c;
    char errPath[] = "/tmp/bench_output-XXXXXX";
    int errFd = mkstemp(errPath);
    if (errFd < 0) return c;
    const double cpu0 = bench::rusageCpuSeconds(RUSAGE_CHILDREN);
    auto t0 = Clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(errFd, 2);
        const std::string j = std::to_string(threads);
        execl(auxscope.c_str(), auxscope.c_str(), "decode", trace.c_str(), "--format", "spans", "-j",
              j.c_str(), (char*)nullptr);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    c.wall = since(t0);
    c.cpu = bench::rusageCpuSeconds(RUSAGE_CHILDREN) - cpu0;
    close(errFd);
    std::ifstream err(errPath);
    std::string line;
    while (std::getline(err, line)) {
        if (line.rfind("decoded ", 0) == 0) {
            if (auto at = line.find(" instructions in "); at != std::string::npos)
                c.decode = std::atof(line.c_str() + at + 17);
        } else if (line.rfind("output: ", 0) == 0) {
            c.lines = std::strtoull(line.c_str() + 8, nullptr, 10);
            if (auto at = line.find(" lines in "); at != std::string::npos)
                c.output = std::atof(line.c_str() + at + 10);
        }
    }
    unlink(errPath);
    c.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && c.decode > 0;
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t sizeMb = 64;
    unsigned repeat = 3;
    std::vector<unsigned> threadsList = {1, std::max(2u, std::thread::hardware_concurrency())};
    std::string trace;
    bool command = true;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--size-mb") {
            sizeMb = std::stoull(value());
        } else if (a == "--threads-list") {
            threadsList = bench::threadsListOption(value(), "bench_output");
        } else if (a == "--repeat") {
            repeat = unsigned(std::max(1ul, std::stoul(value())));
        } else if (a == "--trace") {
            trace = value();
        } else if (a == "--no-command") {
            command = false;
        } else {
            std::fprintf(stderr,
                         "usage: bench_output [--size-mb N (64)] [--threads-list 1,2,...] [--repeat R (3)] "
                         "[--trace FILE] [--no-command]\n");
            return 2;
        }
    }
    if (threadsList.empty() || threadsList[0] != 1) threadsList.insert(threadsList.begin(), 1);
    if (trace.empty()) trace = bench::ensurePtSynthTrace(AUXSCOPE_PTSYNTH, AUXSCOPE_BENCH_DIR, sizeMb, 1);
    std::printf("bench_output: %s, %u cores, %s, median of %u\n", trace.c_str(),
                std::thread::hardware_concurrency(), bench::loadAverage().c_str(), repeat);

    // The formatter alone, over the spans decoded in this process.
    auto file = PerfDataReader::open(trace);
    if (!file) {
        std::fprintf(stderr, "%s\n", file.error().message.c_str());
        return 1;
    }
    auto session = AuxTraceSession::open(*file);
    if (!session) {
        std::fprintf(stderr, "%s\n", session.error().message.c_str());
        return 1;
    }
    auto t0 = Clock::now();
    DecodedSpans spans = (*session)->decodeSpans(DecodeWindow{}, 0);
    uint64_t lines = spans.threads.size();
    for (const auto& [tid, store] : spans.threads)
        lines += store.size();
    std::printf("decoded %" PRIu64 " lines' spans in %.2f s (all cores)\n\n", lines, since(t0));
    std::printf("formatter alone (writeSpanListing into a dropping stream); target >= 20 M lines/s\n");
    std::printf("%8s %10s %10s %12s %14s %12s %s\n", "threads", "wall s", "cpu s", "M lines/s",
                "M lines/cpu-s", "MB/s", "verdict");
    double formatCpu1 = 0, formatWall1 = 0;
    std::vector<std::pair<unsigned, double>> formatInflation;
    for (unsigned t : threadsList) {
        std::vector<double> walls, cpus;
        uint64_t bytes = 0;
        for (unsigned r = 0; r < repeat; ++r) {
            NullBuffer sink;
            std::ostream out(&sink);
            const double c0 = bench::rusageCpuSeconds(RUSAGE_SELF);
            auto w0 = Clock::now();
            writeSpanListing(spans, (*session)->sideband(), (*session)->functions(), t, out);
            walls.push_back(since(w0));
            cpus.push_back(bench::rusageCpuSeconds(RUSAGE_SELF) - c0);
            bytes = sink.bytes;
        }
        const double wall = median(walls), cpu = median(cpus);
        if (t == 1)
            formatCpu1 = cpu, formatWall1 = wall;
        else
            formatInflation.push_back({t, formatCpu1 > 0 ? cpu / formatCpu1 : 0});
        const double rate = double(lines) / wall / 1e6;
        std::printf("%8u %10.3f %10.3f %12.1f %14.1f %12.0f %s\n", t, wall, cpu, rate,
                    double(lines) / cpu / 1e6, double(bytes) / wall / 1e6,
                    rate >= 20 ? "meets 20 M lines/s" : "below 20 M lines/s");
    }
    for (const auto& [t, infl] : formatInflation)
        std::printf(
            "formatter: CPU inflation at %u threads %.2f; serial fraction ~0 (chunk list only); "
            "16-core prediction S16 = %.1fx (%.0f M lines/s)\n",
            t, infl, bench::amdahl(0, infl, 16),
            bench::amdahl(0, infl, 16) * double(lines) / formatWall1 / 1e6);
    std::fflush(stdout);
    spans = DecodedSpans{};
    session->reset();
    if (!command) return 0;

    std::printf(
        "\nauxscope decode %s --format spans -j N > /dev/null; target: total wall <= 1.5 x decode phase\n",
        trace.c_str());
    std::printf("%8s %10s %10s %10s %10s %12s %10s %s\n", "threads", "wall s", "decode s", "output s",
                "cpu s", "M lines/s", "wall/dec", "verdict");
    Command first;
    for (unsigned t : threadsList) {
        std::vector<double> walls, decodes, outputs, cpus;
        uint64_t n = 0;
        bool ok = true;
        for (unsigned r = 0; r < repeat; ++r) {
            Command c = runCommand(AUXSCOPE_BENCH_AUXSCOPE, trace, t);
            ok = ok && c.ok;
            walls.push_back(c.wall), decodes.push_back(c.decode), outputs.push_back(c.output),
                cpus.push_back(c.cpu);
            n = c.lines;
        }
        Command m{median(walls), median(cpus), median(decodes), median(outputs), n, ok};
        const double ratio = m.decode > 0 ? m.wall / m.decode : 0;
        std::printf("%8u %10.3f %10.3f %10.3f %10.3f %12.1f %10.2f %s%s\n", t, m.wall, m.decode, m.output,
                    m.cpu, m.output > 0 ? double(m.lines) / m.output / 1e6 : 0.0, ratio,
                    ratio <= 1.5 ? "meets 1.5x" : "above 1.5x", ok ? "" : " (the command failed)");
        if (t == 1) {
            first = m;
            continue;
        }
        // Serial: what runs outside the decode and output phases (open, sideband,
        // images, exit); the decode's own serial phases are bench_pt_decode's figure.
        const double serial =
            first.wall > 0 ? std::max(0.0, first.wall - first.decode - first.output) / first.wall : 0;
        const double inflation = first.cpu > 0 ? m.cpu / first.cpu : 0;
        std::printf(
            "  at %u threads: serial fraction %.3f (outside decode and output), CPU inflation %.2f, "
            "speed-up %.2fx measured, 16-core prediction S16 = %.1fx\n",
            t, serial, inflation, m.wall > 0 ? first.wall / m.wall : 0.0,
            bench::amdahl(serial, inflation, 16));
    }
    std::printf("%s\n", bench::loadAverage().c_str());
    return 0;
}
