// SPDX-License-Identifier: GPL-3.0-or-later
// auxscope-spesynth: Arm SPE recordings with a known ground truth, on machines
// without SPE. See --help and SpeSynth*.h.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "SpeSynthElf.h"
#include "SpeSynthGenerator.h"
#include "SpeSynthPerfData.h"
#include "SpeSynthTruth.h"

using namespace auxscope;
using namespace auxscope::spesynth;

namespace {

const char* kUsage =
    "usage: auxscope-spesynth --generate N [--seed S] [OPTIONS] -o FILE\n"
    "       auxscope-spesynth --records CSV [OPTIONS] -o FILE\n"
    "\n"
    "Writes FILE, a perf.data with an Arm SPE (Statistical Profiling Extension)\n"
    "recording as perf record -e arm_spe_0//u -a writes it on a Neoverse N1, and\n"
    "FILE.truth with every record it holds: CSV, a header row naming the fields of\n"
    "auxscope's SpeRecord, one row per record in time order (ties by CPU; a record\n"
    "without a TIMESTAMP, time 0, comes right after the one before it on its CPU).\n"
    "perf report -D -i FILE lists its packets; perf script -i FILE --itrace=i1i\n"
    "prints one sample per record (perf 6.1 warns about each previous-branch-\n"
    "target address, index 4, which it does not know).\n"
    "\n"
    "Generate mode makes N records of a realistic mix: loads and stores (data\n"
    "addresses in named globals, the heap and the stacks, physical addresses,\n"
    "latencies, data sources from L1D to DRAM and remote, cache and TLB events),\n"
    "branches (conditional, indirect, mispredicted, with targets), other and SVE\n"
    "operations; threads of two processes migrating over the CPUs with context\n"
    "switches. Records mode takes the records from CSV, in the truth's layout (the\n"
    "columns isLoad..isConditional and time may be left out: they are derived).\n"
    "Either way the program the PCs and globals belong to is written beside FILE\n"
    "(FILE without its extension + '-code.elf', an AArch64 executable with\n"
    "symbols) and mapped in every process.\n"
    "  auxscope-spesynth --generate 100000 -o /tmp/spe.data\n"
    "  perf script -i /tmp/spe.data --itrace=i1i -F cpu,tid,ip,sym,addr\n"
    "\n"
    "  -o, --output FILE     the perf.data (default spesynth.data)\n"
    "  --generate N          generate mode: N records\n"
    "  --records CSV         records mode: the records of CSV\n"
    "  --seed S              generate mode: seed (default 1)\n"
    "  --cpus N              CPUs (default 4; records mode: at least the highest\n"
    "                        cpu of the CSV + 1)\n"
    "  --threads N           generate mode: threads (default 6; from 4 on in two\n"
    "                        processes)\n"
    "  --info-version 1|2    AUXTRACE_INFO layout: 1, the 16-byte block every perf\n"
    "                        reads (default), or 2, with per-CPU metadata (MIDR, PMU\n"
    "                        type, capabilities; perf 6.14 and newer)\n"
    "  --midr HEX            the CPUs' MIDR (default 0x413fd0c1, Neoverse N1)\n"
    "  --chunk BYTES         AUX bytes per AUXTRACE record and CPU (default 262144)\n"
    "  --no-context          generate mode: no CONTEXT packets (the switch records\n"
    "                        alone say which thread ran)\n"
    "  --vhe                 generate mode: CONTEXT packets of index 1 (CONTEXTIDR_EL2,\n"
    "                        where a kernel running at EL2 writes the tid)\n"
    "  --no-truth            write no FILE.truth\n"
    "  -q, --quiet           no summary\n";

std::optional<uint64_t> number(const std::string& s, int base = 0) {
    if (s.empty()) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    const uint64_t v = std::strtoull(s.c_str(), &end, base);
    if (errno || *end || s[0] == '-') return std::nullopt;
    return v;
}

int fail(const std::string& message) {
    std::fprintf(stderr, "auxscope-spesynth: %s\n", message.c_str());
    return 1;
}

std::string elfPathFor(const std::string& out) {
    std::string base = out;
    const size_t slash = base.find_last_of('/');
    const size_t dot = base.find_last_of('.');
    if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1)) base.resize(dot);
    return base + "-code.elf";
}

struct Summary {
    uint64_t records = 0, loads = 0, stores = 0, branches = 0, other = 0, noTimestamp = 0;
    void add(const spe::SpeRecord& r) {
        ++records;
        loads += r.isLoad;
        stores += r.isStore;
        branches += r.isBranch;
        other += r.opClass == spe::OpClass::Other;
        noTimestamp += r.timestamp == 0;
    }
};

// Records mode: the CSV's records, their processes and switches.
int fromRecords(const std::string& csv, SpeFileOptions& file, bool writeTruth, bool quiet,
                std::chrono::steady_clock::time_point t0) {
    auto read = readTruthCsv(csv);
    if (!read) return fail(read.error().message);
    std::vector<spe::SpeRecord>& recs = read->records;
    int maxCpu = -1;
    for (const auto& r : recs)
        maxCpu = std::max(maxCpu, r.cpu);
    file.cpus = std::max(file.cpus, maxCpu + 1);
    // Per CPU order and effective time (a record without a timestamp takes the
    // one of the record before it on its CPU).
    std::vector<uint64_t> last(size_t(file.cpus), 0), eff(recs.size());
    std::vector<size_t> lastLine(size_t(file.cpus), 0);
    for (size_t i = 0; i < recs.size(); ++i) {
        spe::SpeRecord& r = recs[i];
        const size_t c = size_t(r.cpu);
        if (r.timestamp) {
            if (r.timestamp < last[c])
                return fail(csv + ":" + std::to_string(read->lines[i]) + ": timestamp " +
                            std::to_string(r.timestamp) + " on CPU " + std::to_string(r.cpu) +
                            " is before the one of line " + std::to_string(lastLine[c]) + " (" +
                            std::to_string(last[c]) + "): a CPU's records go forward in time");
            last[c] = r.timestamp;
            lastLine[c] = read->lines[i];
        }
        eff[i] = last[c];
        const uint64_t time = r.timestamp ? file.timeConv.perfTime(r.timestamp) : 0;
        if (read->hasTime && r.time != time)
            return fail(csv + ":" + std::to_string(read->lines[i]) + ": time " + std::to_string(r.time) +
                        " does not match timestamp " + std::to_string(r.timestamp) + " (TIME_CONV makes it " +
                        std::to_string(time) + ")");
        r.time = time;
        if (r.hasContext && r.pid < 0)
            return fail(csv + ":" + std::to_string(read->lines[i]) +
                        ": a record with a CONTEXT needs its pid");
    }
    // Processes and threads.
    std::map<int32_t, std::vector<int32_t>> tids;
    for (const auto& r : recs)
        if (r.pid > 0 && r.tid > 0) {
            auto& v = tids[r.pid];
            if (std::find(v.begin(), v.end(), r.tid) == v.end()) v.push_back(r.tid);
        }
    std::vector<SpeProcess> procs;
    for (auto& [pid, ts] : tids) {
        SpeProcess p;
        p.pid = pid;
        p.comm = "spe-" + std::to_string(pid);
        p.heapStart = 0x2000000 + uint64_t(procs.size() % 16) * 0x1000000;
        p.heapEnd = p.heapStart + 0x4000000;
        std::sort(ts.begin(), ts.end());
        ts.erase(std::remove(ts.begin(), ts.end(), pid), ts.end());
        ts.insert(ts.begin(), pid);
        for (size_t i = 0; i < ts.size(); ++i) {
            SpeThread th;
            th.pid = pid;
            th.tid = ts[i];
            th.comm = i == 0 ? p.comm : "spe-" + std::to_string(ts[i]);
            if (i == 0) {
                th.stackEnd = 0xfffffffff000ull;
                th.stackStart = th.stackEnd - 0x21000;
            } else {
                th.stackEnd = 0xffff80000000ull - uint64_t(i) * 0x810000;
                th.stackStart = th.stackEnd - 0x800000;
            }
            p.threads.push_back(th);
        }
        procs.push_back(p);
    }
    std::vector<size_t> order(recs.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return eff[a] != eff[b] ? eff[a] < eff[b] : recs[a].cpu < recs[b].cpu;
    });
    uint64_t start = UINT64_MAX;
    for (size_t i = 0; i < recs.size(); ++i)
        if (recs[i].timestamp) start = std::min(start, recs[i].timestamp);
    start = start == UINT64_MAX ? 0 : start > 16 ? start - 16 : 0;

    auto elf = writeSpeElf(elfPathFor(file.path), standardProgram());
    if (!elf) return fail(elf.error().message);
    auto writer = SpePerfDataWriter::create(file, *elf, procs, start);
    if (!writer) return fail(writer.error().message);
    std::optional<TruthWriter> truth;
    if (writeTruth) {
        auto t = TruthWriter::create(file.path + ".truth");
        if (!t) return fail(t.error().message);
        truth.emplace(std::move(*t));
    }
    std::vector<SpePerfDataWriter::Task> cur(size_t(file.cpus));
    std::vector<uint64_t> prevEff(size_t(file.cpus), start);
    uint64_t sideband = start;
    Summary sum;
    SpeEncodeStyle style;
    for (size_t i : order) {
        const spe::SpeRecord& r = recs[i];
        const size_t c = size_t(r.cpu);
        SpePerfDataWriter::Task task{r.pid > 0 ? r.pid : 0, r.tid > 0 ? r.tid : 0};
        if (!(task == cur[c])) {
            const uint64_t at = std::max(sideband, prevEff[c] + (eff[i] - std::min(eff[i], prevEff[c])) / 2);
            if (auto s = (*writer)->contextSwitch(at, int(c), cur[c], task); !s)
                return fail(s.error().message);
            sideband = at + 1;
            cur[c] = task;
        }
        (*writer)->record(r, style);
        if (truth) truth->write(r);
        sum.add(r);
        prevEff[c] = eff[i];
        sideband = std::max(sideband, eff[i]);
        if (auto f = (*writer)->flushAux(sideband); !f) return fail(f.error().message);
    }
    if (auto f = (*writer)->finish(sideband + 1); !f) return fail(f.error().message);
    if (truth)
        if (auto c = truth->close(); !c) return fail(c.error().message);
    if (!quiet) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s: %" PRIu64 " records from %s (%" PRIu64 " loads, %" PRIu64 " stores, %" PRIu64
                    " branches, %" PRIu64 " other), %" PRIu64 " bytes of SPE on %d CPUs, in %.2f s\n",
                    file.path.c_str(), sum.records, csv.c_str(), sum.loads, sum.stores, sum.branches,
                    sum.other, (*writer)->auxBytes(), file.cpus, s);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::string> args(argv + 1, argv + argc);
    SpeFileOptions file;
    file.path = "spesynth.data";
    file.cmdline.assign(argv, argv + argc);
    GenerateOptions gen;
    std::optional<uint64_t> generate;
    std::string recordsCsv;
    bool quiet = false, writeTruth = true, cpusGiven = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::optional<std::string> {
            if (i + 1 >= args.size()) return std::nullopt;
            return args[++i];
        };
        auto numeric = [&](int base = 0) -> std::optional<uint64_t> {
            auto v = value();
            return v ? number(*v, base) : std::nullopt;
        };
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (a == "-o" || a == "--output") {
            auto v = value();
            if (!v || v->empty()) return fail("-o needs a file name");
            file.path = *v;
        } else if (a == "--generate") {
            auto n = numeric();
            if (!n || *n == 0) return fail("--generate needs a number of records (at least 1)");
            generate = n;
        } else if (a == "--records") {
            auto v = value();
            if (!v) return fail("--records needs a CSV file");
            recordsCsv = *v;
        } else if (a == "--seed") {
            auto n = numeric();
            if (!n) return fail("--seed needs a number");
            gen.seed = *n;
        } else if (a == "--cpus") {
            auto n = numeric();
            if (!n || *n < 1 || *n > 1024) return fail("--cpus needs a number from 1 to 1024");
            gen.cpus = int(*n);
            cpusGiven = true;
        } else if (a == "--threads") {
            auto n = numeric();
            if (!n || *n < 1 || *n > 1000) return fail("--threads needs a number from 1 to 1000");
            gen.threads = int(*n);
        } else if (a == "--info-version") {
            auto n = numeric();
            if (!n || (*n != 1 && *n != 2)) return fail("--info-version needs 1 or 2");
            file.infoVersion = int(*n);
        } else if (a == "--midr") {
            auto n = numeric(16);
            if (!n || *n > 0xffffffffull) return fail("--midr needs a 32-bit hexadecimal MIDR");
            file.midr = *n;
        } else if (a == "--chunk") {
            auto n = numeric();
            if (!n || *n < 64 || *n > (1ull << 30))
                return fail("--chunk needs a number of bytes from 64 to 1 GiB");
            file.auxChunkBytes = size_t(*n);
        } else if (a == "--no-context") {
            gen.context = false;
        } else if (a == "--vhe") {
            gen.contextIndex = 1;
        } else if (a == "--no-truth") {
            writeTruth = false;
        } else if (a == "-q" || a == "--quiet") {
            quiet = true;
        } else {
            return fail("unknown option " + a + " (see --help)");
        }
    }
    if (generate && !recordsCsv.empty()) return fail("--generate and --records exclude each other");
    if (!generate && recordsCsv.empty()) return fail("--generate N or --records CSV is needed (see --help)");
    file.cpus = gen.cpus;
    if (!recordsCsv.empty()) {
        if (!cpusGiven) file.cpus = 1;
        return fromRecords(recordsCsv, file, writeTruth, quiet, t0);
    }

    gen.records = *generate;
    const SpeElfLayout program = standardProgram();
    auto elf = writeSpeElf(elfPathFor(file.path), program);
    if (!elf) return fail(elf.error().message);
    std::vector<SpeProcess> procs = generateProcesses(gen.threads);
    SpeGenerator generator(gen, program, procs, file.timeConv);
    auto writer = SpePerfDataWriter::create(file, *elf, procs, generator.startTick());
    if (!writer) return fail(writer.error().message);
    std::optional<TruthWriter> truth;
    if (writeTruth) {
        auto t = TruthWriter::create(file.path + ".truth");
        if (!t) return fail(t.error().message);
        truth.emplace(std::move(*t));
    }
    std::vector<SwitchEvent> switches;
    std::vector<GeneratedRecord> records;
    Summary sum;
    uint64_t switchCount = 0;
    while (generator.nextEpoch(switches, records)) {
        for (const SwitchEvent& s : switches)
            if (auto r = (*writer)->contextSwitch(s.tick, s.cpu, s.prev, s.next); !r)
                return fail(r.error().message);
        switchCount += switches.size();
        for (const GeneratedRecord& g : records) {
            (*writer)->record(g.record, g.style);
            if (truth) truth->write(g.record);
            sum.add(g.record);
        }
        if (auto f = (*writer)->flushAux(generator.endTick() - 1); !f) return fail(f.error().message);
    }
    if (auto f = (*writer)->finish(generator.endTick()); !f) return fail(f.error().message);
    if (truth)
        if (auto c = truth->close(); !c) return fail(c.error().message);
    if (!quiet) {
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%s: %" PRIu64 " records (%" PRIu64 " loads, %" PRIu64 " stores, %" PRIu64
                    " branches, %" PRIu64 " other; %" PRIu64 " without timestamp), %" PRIu64
                    " bytes of SPE on %d CPUs, %d threads, %" PRIu64 " context switches, in %.2f s\n",
                    file.path.c_str(), sum.records, sum.loads, sum.stores, sum.branches, sum.other,
                    sum.noTimestamp, (*writer)->auxBytes(), file.cpus, gen.threads, switchCount, s);
    }
    return 0;
}
