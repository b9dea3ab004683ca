// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-etmsnap: an OpenCSD/DS-5 snapshot directory as a cs_etm perf.data
// (see EtmSnapPerfData.h), so the snapshot opens in auxscope (timeline, spans,
// exports) and in the perf.data tools.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "EtmSnapPerfData.h"

using namespace auxscope;

int main(int argc, char** argv) {
    std::string dir, out, buffer;
    etmsnap::SnapPerfDataOptions options;
    auto usage = [](FILE* f) {
        std::fprintf(
            f,
            "usage: auxscope-etmsnap SNAPSHOT_DIR -o OUT.data [--buffer NAME] [--copies N] [--cpu N]\n"
            "                        [--one-auxtrace] [--timestamps-are-perf-time]\n"
            "                        [--start-time NS] [--buffer-ns NS]\n"
            "\n"
            "Writes the snapshot's trace buffer as a cs_etm perf.data: AUXTRACE_INFO from the\n"
            "sources' registers, the memory dumps as ELF files beside OUT (OUT without .data\n"
            "+ -dumpN.elf) mapped into one process, the buffer N times (default 1) as AUX\n"
            "buffers of CPU N (default 0). A buffer several trace IDs share stays shared.\n"
            "  --one-auxtrace      the copies in one AUXTRACE buffer (one AUX record each)\n"
            "  --timestamps-are-perf-time\n"
            "                      a TIME_CONV record making the trace's timestamps perf time\n"
            "  --start-time NS, --buffer-ns NS\n"
            "                      the first record's perf time and the time between the\n"
            "                      copies' AUX records (default 1 s and 10 ms)\n");
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
        else if (a == "--cpu")
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
    if (dir.empty() || out.empty() || options.copies == 0) {
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
