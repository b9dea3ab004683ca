// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-etmsnap: an OpenCSD/DS-5 snapshot directory as a cs_etm perf.data
// (see EtmSnapPerfData.h), so the snapshot opens in auxscope (timeline, spans,
// exports) and in the perf.data tools; --example generates one (EtmSynth.h).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "EtmSnapPerfData.h"
#include "EtmSynth.h"

using namespace auxscope;

int main(int argc, char** argv) {
    std::string dir, out, buffer;
    etmsnap::SnapPerfDataOptions options;
    bool example = false, quiet = false;
    uint64_t seed = 1;
    auto usage = [](FILE* f) {
        std::fprintf(
            f,
            "usage: auxscope-etmsnap SNAPSHOT_DIR -o OUT.data [--buffer NAME] [--copies N] [--cpu N]\n"
            "                        [--one-auxtrace] [--timestamps-are-perf-time]\n"
            "                        [--start-time NS] [--buffer-ns NS] [--aux-records N]\n"
            "       auxscope-etmsnap --example [-q] [--seed N] -o OUT.data\n"
            "\n"
            "Writes the snapshot's trace buffer as a cs_etm perf.data: AUXTRACE_INFO from the\n"
            "sources' registers, the memory dumps as ELF files beside OUT (OUT without .data\n"
            "+ -dump-N.elf) mapped into one process, the buffer N times (default 1) as AUX\n"
            "buffers of CPU N (default 0). A buffer several trace IDs share stays shared.\n"
            "  --one-auxtrace      the copies in one AUXTRACE buffer: one stream (their AUX\n"
            "                      records as they are)\n"
            "  --timestamps-are-perf-time\n"
            "                      a TIME_CONV record making the trace's timestamps perf time\n"
            "  --start-time NS, --buffer-ns NS\n"
            "                      the first record's perf time and the time between the\n"
            "                      copies' AUX records (default 1 s and 10 ms)\n"
            "  --aux-records N     each copy as N AUX records over its buffer-ns, cut at\n"
            "                      frame boundaries (default 1), each its own AUXTRACE buffer\n"
            "                      (decoded apart, from its first A-sync) unless --one-auxtrace\n"
            "\n"
            "--example generates a small CoreSight example, with no recorded data in it: an\n"
            "AArch64 program (main's loop, a recursive fib, workers calling leaf functions\n"
            "and loop_N functions; decisions from the seed), one run of it as ETMv4 trace\n"
            "(Cortex-A57 registers, trace ID 0x10, 16-byte CoreSight frames), written as an\n"
            "OpenCSD snapshot folder (OUT without .data + -snapshot: trc_pkt_lister -ss_dir\n"
            "decodes it) and as a perf.data made from that folder as above, its code an ELF\n"
            "with the functions' symbols (OUT without .data + -code-0.elf); the trace in 20\n"
            "AUX records over 1 s, so that a replay shows it arriving.\n"
            "  -q, --quiet         print nothing on success\n"
            "  --seed N            the program and its run (default 1)\n");
    };
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "auxscope-etmsnap: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-o" || a == "--output")
            out = next();
        else if (a == "--buffer")
            buffer = next();
        else if (a == "--copies")
            options.copies = unsigned(std::strtoul(next().c_str(), nullptr, 10));
        else if (a == "--one-auxtrace")
            options.oneAuxtrace = true;
        else if (a == "--timestamps-are-perf-time")
            options.timestampsArePerfTime = true;
        else if (a == "--start-time")
            options.startTime = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--buffer-ns")
            options.bufferNs = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--aux-records")
            options.auxRecords = unsigned(std::strtoul(next().c_str(), nullptr, 10));
        else if (a == "--example")
            example = true;
        else if (a == "-q" || a == "--quiet")
            quiet = true;
        else if (a == "--seed") {
            const std::string v = next();
            char* end = nullptr;
            seed = std::strtoull(v.c_str(), &end, 0);
            if (v.empty() || *end) {
                std::fprintf(stderr, "auxscope-etmsnap: --seed %s: not a number\n", v.c_str());
                return 2;
            }
        } else if (a == "--cpu")
            options.cpu = std::atoi(next().c_str());
        else if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "auxscope-etmsnap: unknown option %s\n", a.c_str());
            usage(stderr);
            return 2;
        } else
            dir = a;
    }
    if (example) {
        if (out.empty() || !dir.empty()) {
            std::fprintf(stderr, "auxscope-etmsnap: --example needs -o OUT.data and no SNAPSHOT_DIR\n");
            return 2;
        }
        const auto t0 = std::chrono::steady_clock::now();
        auto ex = etmsynth::writeExample(out, seed);
        if (!ex) {
            std::fprintf(stderr, "auxscope-etmsnap: %s\n", ex.error().message.c_str());
            return 1;
        }
        if (!quiet)
            std::printf(
                "%s: CoreSight ETMv4 example (seed %llu): %llu instructions, %llu branches, %llu calls, "
                "%zu bytes of trace; snapshot %s, code %s (%.0f ms)\n",
                out.c_str(), (unsigned long long)seed, (unsigned long long)ex->truth.instructions,
                (unsigned long long)ex->truth.branches, (unsigned long long)ex->truth.calls,
                ex->buffer.size(), ex->snapshotDir.c_str(), ex->elfPath.c_str(),
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        return 0;
    }
    if (dir.empty() || out.empty() || options.copies == 0 || options.auxRecords == 0) {
        usage(stderr);
        return 2;
    }
    auto s = etmsnap::snapshotToPerfData(dir, out, options, buffer);
    if (!s) {
        std::fprintf(stderr, "auxscope-etmsnap: %s\n", s.error().message.c_str());
        return 1;
    }
    std::printf("%s: %zu bytes of %s x %u on cpu %d, %zu sources, %zu memory dumps\n", out.c_str(),
                s->buffer.size(), s->bufferName.c_str(), options.copies, options.cpu, s->sources.size(),
                s->dumps.size());
    return 0;
}
