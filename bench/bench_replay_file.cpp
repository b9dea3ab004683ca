// SPDX-License-Identifier: GPL-3.0-or-later
// bench_replay_file: the lossless file path at full speed. A generated Intel PT
// trace (auxscope-ptsynth, 1 GB by default, made once and kept in the build
// directory) is replayed flat out through the live path into a perf.data
// (`auxscope record --replay SRC --replay-speed max -o OUT`, the same objects the
// GUI's "Replay a recorded trace" uses), and the output is checked against its
// source with the perf.data reader:
//   - AUX bytes announced by the output's PERF_RECORD_AUX records, per CPU;
//   - AUX bytes present in its PERF_RECORD_AUXTRACE records, per CPU (the
//     covered ranges, 8-byte padding excluded) and the gaps between them;
//   - writer-side loss (the --json summary's dropped records and sink losses).
// PASS when present == announced (or every CPU whose bytes differ carries
// TRUNCATED records: the kernel's own, flagged loss) and the writer lost nothing.
// The anchor, in the same run: copying the source file with 1 MiB read/write
// (what the disk and page cache allow for the same bytes).
//
// Not a test: run by hand or through `ninja run_bench_replay_file`.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "perfdata/PerfDataReader.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Options {
    uint64_t sizeMb = 1024;
    std::string dir = AUXSCOPE_BENCH_DIR;
    std::string auxscope = AUXSCOPE_BENCH_AUXSCOPE;
    std::string ptsynth = AUXSCOPE_PTSYNTH;
};

// Per CPU: what the AUX records announce and what the AUXTRACE records hold.
struct AuxAccount {
    uint64_t announced = 0, present = 0, truncatedRecords = 0, gaps = 0, gapBytes = 0;
};

std::map<int64_t, AuxAccount> account(const PerfDataReader& r) {
    std::map<int64_t, AuxAccount> out;
    std::map<int64_t, uint64_t> announcedEnd;
    for (const PerfAuxRecord& a : r.summary().aux) {
        if (a.flags & 0x02) continue;  // OVERWRITE: snapshot mode, not announced for the file
        AuxAccount& c = out[a.cpu];
        c.announced += a.auxSize;
        c.truncatedRecords += (a.flags & 0x01) != 0;
        announcedEnd[a.cpu] = std::max(announcedEnd[a.cpu], a.auxOffset + a.auxSize);
    }
    std::map<int64_t, std::vector<const PerfAuxtraceBuffer*>> byCpu;
    for (const PerfAuxtraceBuffer& b : r.summary().auxtrace)
        byCpu[b.cpu].push_back(&b);
    for (auto& [cpu, bufs] : byCpu) {
        std::sort(bufs.begin(), bufs.end(), [](auto* a, auto* b) { return a->auxOffset < b->auxOffset; });
        AuxAccount& c = out[cpu];
        uint64_t covered = 0;  // AUX position covered so far
        for (size_t i = 0; i < bufs.size(); ++i) {
            const PerfAuxtraceBuffer& b = *bufs[i];
            // The payload is padded to 8 bytes: it ends where the next one starts,
            // or (the last one) where the records announce the area's end.
            uint64_t end = b.auxOffset + b.available;
            if (i + 1 < bufs.size())
                end = std::min(end, bufs[i + 1]->auxOffset);
            else if (announcedEnd.count(cpu))
                end = std::min(end, std::max(announcedEnd[cpu], b.auxOffset));
            if (b.auxOffset > covered) ++c.gaps, c.gapBytes += b.auxOffset - covered;
            c.present += end - std::max(b.auxOffset, covered);
            covered = std::max(covered, end);
        }
        if (announcedEnd.count(cpu) && announcedEnd[cpu] > covered)
            ++c.gaps, c.gapBytes += announcedEnd[cpu] - covered;
    }
    return out;
}

std::string ensureTrace(const Options& o) {
    std::filesystem::create_directories(o.dir);
    const std::string path = o.dir + "/ptsynth-" + std::to_string(o.sizeMb) + "mb.data";
    if (std::filesystem::exists(path)) return path;
    std::printf("generating %s (%" PRIu64 " MB of PT) ...\n", path.c_str(), o.sizeMb);
    std::fflush(stdout);
    const std::string cmd =
        "'" + o.ptsynth + "' --generate " + std::to_string(o.sizeMb) + " -q -o '" + path + "'";
    const auto t0 = Clock::now();
    if (std::system(cmd.c_str()) != 0) {
        std::fprintf(stderr, "bench_replay_file: failed: %s\n", cmd.c_str());
        std::exit(1);
    }
    std::printf("  generated in %.1f s\n", since(t0));
    return path;
}

// The anchor: cp of the source, 1 MiB at a time.
double copySeconds(const std::string& from, const std::string& to) {
    const auto t0 = Clock::now();
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (in < 0 || out < 0) return -1;
    std::vector<char> buf(1 << 20);
    for (ssize_t n; (n = ::read(in, buf.data(), buf.size())) > 0;)
        if (::write(out, buf.data(), size_t(n)) != n) return -1;
    ::close(in);
    ::close(out);
    return since(t0);
}

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

uint64_t jsonNumber(const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\":");
    return at == std::string::npos ? 0 : std::strtoull(json.c_str() + at + key.size() + 3, nullptr, 10);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--size-mb" && i + 1 < argc) {
            o.sizeMb = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--dir" && i + 1 < argc) {
            o.dir = argv[++i];
        } else {
            std::fprintf(stderr, "usage: bench_replay_file [--size-mb N (1024)] [--dir DIR]\n");
            return 2;
        }
    }
    const std::string src = ensureTrace(o);
    const std::string out = o.dir + "/replay-out.data", copy = o.dir + "/copy.data",
                      json = o.dir + "/replay.json";
    const uint64_t srcBytes = std::filesystem::file_size(src);

    // The anchor first (it also brings the source into the page cache for both).
    (void)copySeconds(src, copy);
    const double cp = copySeconds(src, copy);
    std::filesystem::remove(copy);

    const std::string cmd = "'" + o.auxscope + "' record --replay '" + src + "' --replay-speed max -o '" +
                            out + "' --json > '" + json + "' 2>/dev/null";
    const auto t0 = Clock::now();
    const int rc = std::system(cmd.c_str());
    const double replay = since(t0);
    if (rc != 0) {
        std::fprintf(stderr, "bench_replay_file: failed (status %d): %s\n", rc, cmd.c_str());
        return 1;
    }
    const std::string summary = readAll(json);

    auto source = PerfDataReader::open(src);
    auto output = PerfDataReader::open(out);
    if (!source || !output) {
        std::fprintf(stderr, "bench_replay_file: cannot read %s\n", (!source ? src : out).c_str());
        return 1;
    }
    const auto in = account(*source), got = account(*output);
    std::printf("bench_replay_file: %s (%.0f MB) replayed at max speed into %s\n\n", src.c_str(),
                double(srcBytes) / 1e6, out.c_str());
    std::printf("%-4s | %15s | %15s | %15s | %9s | %6s | %12s\n", "cpu", "source AUX B", "announced B",
                "present B", "TRUNCATED", "gaps", "gap bytes");
    bool ok = true;
    uint64_t present = 0;
    for (auto& [cpu, c] : got) {
        // The source's trace: its AUXTRACE bytes (a ptsynth file has no AUX records).
        const uint64_t sourceBytes = in.count(cpu) ? std::max(in.at(cpu).announced, in.at(cpu).present) : 0;
        std::printf("%4" PRId64 " | %15" PRIu64 " | %15" PRIu64 " | %15" PRIu64 " | %9" PRIu64 " | %6" PRIu64
                    " | %12" PRIu64 "\n",
                    cpu, sourceBytes, c.announced, c.present, c.truncatedRecords, c.gaps, c.gapBytes);
        present += c.present;
        // Bytes the writer was handed but did not keep would show as a gap on a CPU
        // the kernel never stopped.
        if (c.present != c.announced && c.truncatedRecords == 0) ok = false;
    }
    const uint64_t dropped = jsonNumber(summary, "dropped_records");
    const bool sinkLoss = summary.find("\"sink_lost\":[{") != std::string::npos;
    if (dropped || sinkLoss) ok = false;
    std::printf(
        "\nreplay into perf.data: %.2f s, %.0f MB/s of AUX trace | anchor cp of the source: %.2f s, %.0f "
        "MB/s\n",
        replay, double(present) / replay / 1e6, cp, double(srcBytes) / cp / 1e6);
    std::printf("writer-side loss: %" PRIu64 " records dropped%s\n", dropped,
                sinkLoss ? ", sink losses listed" : "");
    std::printf(
        "%s  AUXTRACE bytes in the file = AUX bytes announced, or the difference is flagged TRUNCATED; "
        "writer-side loss 0\n",
        ok ? "PASS" : "FAIL");
    std::filesystem::remove(out);
    return ok ? 0 : 1;
}
