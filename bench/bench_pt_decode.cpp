// SPDX-License-Identifier: GPL-3.0-or-later
// Intel PT decode throughput: auxscope's decode to spans beside a bare libipt
// block-decoder loop over the same AUX bytes and the same image, and beside
// `perf script`, on one perf.data written by auxscope-ptsynth (a generated x86-64
// program, so the code is on disk and the ground truth is known).
//
//   (a) bare libipt: pt_blk_sync_forward / pt_blk_event / pt_blk_next over each
//       CPU's AUX runs, default block flags, counting instructions, nothing else:
//       the anchor (the best a libipt-based decoder can do on one core);
//       (a') and (a'') the same loop with the block flags (b) needs
//       (end_on_call + end_on_jump) and with end_on_call alone, for reference
//   (w) auxscope's flow walker over libipt's query decoder (pt/PtFlowWalker.h)
//       alone over the same runs, counting instructions: what (b) is built on
//   (b) auxscope decode to spans on one thread (PtSession::decodeSpans, -j 1):
//       the flow walker over libipt's query decoder (pt/PtFlowWalker.h);
//       (b') the same through libipt's block decoder, as before the walker
//   (c) the same on every core (a fresh session: nothing cached)
//   (d) perf script --itrace=i0ns and --itrace=cr, on a smaller trace of the same
//       program (perf takes minutes per 100 MB), each its whole process timed
//       from start to exit with its output to /dev/null, beside auxscope's whole
//       process timed the same way: `auxscope decode FILE --format insn -j 1`
//       (a line per basic block, beside perf's line per instruction) and
//       `--format spans -j 1` (every call-stack span, beside perf's calls and
//       returns): open (PSB index, images, sideband), decode and text. (b)'s
//       decode phase alone is printed there as context, not as the ratio.
//   (i) the cost of decoding in worker processes (spans/IsolatedDecode.h: a
//       crash or hang of libipt ends only its segment): (b) and (c) with the
//       decode isolated and in-process, the same session options otherwise,
//       --isolation-runs interleaved runs each, medians; target <= 5 % slower.
//       (b), (c) above run as auxscope does by default: isolated (unless
//       AUXSCOPE_DECODE_IN_PROCESS=1)
//   (i') the same for the streamed path (forEachBlock: decode --format insn,
//       the code view): one worker writing blocks into a shared-memory ring the
//       caller reads in place, against in-process; compared by CPU time (the
//       worker and the caller overlap, so wall time favours the worker)
//   (e) first frame: from opening the file to having the spans of the first
//       1/1000 of the time range on every CPU, which is what a timeline needs
//       before it can draw
//   (a) and (b) once more on a trace of realistic density (ptsynth --straight
//       4: about 60 instructions a span where the main trace has ~13), and
//       the bytes each stored span takes
// Every ratio needs the same instructions on both sides: (b) and (a), (c) and
// (b), auxscope's process and perf script --itrace=i0ns (its instruction lines,
// counted in an untimed run). A difference is a FAIL line and exit status 3.
// Then the targets of the issue as PASS/BELOW lines, and the shared real traces
// where they can be decoded (the Skylake perf.data has no binaries: packet level).
//
// Every figure is printed with the load average next to it: the machine is shared.
// Not a test: run by hand or through `ninja run_bench_pt_decode`.
#include <intel-pt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "LoadAverage.h"
#include "PtSynthTrace.h"
#include "ScalingFigures.h"
#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PsbIndex.h"
#include "pt/PtFlowWalker.h"
#include "pt/PtImages.h"
#include "pt/PtSpanDecoder.h"
#include "pt/PtTraceSource.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    uint64_t sizeMb = 1024;  // the main trace
    uint64_t perfMb = 4;     // the trace perf script runs on
    uint64_t denseMb = 16;   // a trace with realistic span density (ptsynth --straight 4)
    unsigned denseStraight = 4;
    uint64_t seed = 1;
    std::string dir = AUXSCOPE_BENCH_DIR;
    std::string sharedData = AUXSCOPE_SHARED_DATA_DIR;
    std::string auxscope = AUXSCOPE_BENCH_AUXSCOPE;
    unsigned perfTimeout = 600;  // seconds per perf script run
    bool perf = true;
    bool real = true;
    unsigned isolationRuns = 3;   // (i): runs of each side (0: skip)
    bool firstFrameOnly = false;  // (e) alone: what opening a large trace costs, in seconds not minutes
    // The scaling section: the decode of (b)/(c) at each of these thread counts
    // (0: every core), with its phases, CPU inflation and the Amdahl prediction
    // for 16 cores (ScalingFigures.h). Empty: from (b) and (c) alone.
    std::vector<unsigned> threadsList;
    bool isolationOnly = false;  // (i) and (i') alone
    bool scalingOnly = false;    // the scaling section alone (no (a), perf, dense, real traces)
};

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// This process's and its waited-for children's: the decode workers
// (spans/IsolatedDecode.h) do the decoding of (b) and (c).
double processCpuSeconds() {
    double s = 0;
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
        rusage ru{};
        getrusage(who, &ru);
        s += double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    }
    return s;
}

std::string load() {
    return bench::loadAverage();
}

uint64_t truthValue(const std::string& path, const std::string& key) {
    return bench::ptsynthTruthValue(path, key);
}

// A ptsynth trace of `mb` MB in the bench's folder (see PtSynthTrace.h).
std::string ensureTrace(const Options& o, uint64_t mb, unsigned straight = 1) {
    return bench::ensurePtSynthTrace(AUXSCOPE_PTSYNTH, o.dir, mb, o.seed, straight);
}

struct Figure {
    std::string name;
    double seconds = 0;
    double cpuSeconds = 0;  // of this process, for figures taken while other work shares the cores
    uint64_t bytes = 0, instructions = 0;
    std::string note;
    double mbs() const { return seconds > 0 ? double(bytes) / seconds / 1e6 : 0; }
    double mis() const { return seconds > 0 ? double(instructions) / seconds / 1e6 : 0; }
};

void print(const Figure& f) {
    std::printf("  %-44s %9.3f s %9.1f MB/s %9.1f Minsn/s  [%s]%s%s\n", f.name.c_str(), f.seconds, f.mbs(),
                f.mis(), load().c_str(), f.note.empty() ? "" : "  ", f.note.c_str());
    std::fflush(stdout);
}

// Each run of each CPU in one piece, made before the clock starts: the trace
// points into the file's AUXTRACE buffers, and libipt wants a run contiguous.
struct ContiguousRuns {
    std::vector<std::vector<std::vector<uint8_t>>> copies;
    std::vector<std::vector<std::span<const uint8_t>>> bytes;  // [cpu][run]
    explicit ContiguousRuns(const PtTraceSource& trace) {
        for (const PtCpuTrace& cpu : trace.cpus()) {
            copies.emplace_back(cpu.runs.size());
            bytes.emplace_back();
            for (size_t r = 0; r < cpu.runs.size(); ++r)
                bytes.back().push_back(cpu.bytes.view(cpu.runs[r].begin, cpu.runs[r].end, copies.back()[r]));
        }
    }
};

// A file's trace, sideband and code images as auxscope would use them, and its runs in one piece.
struct TraceAndImages {
    Expected<PtTraceSource> trace;
    Expected<Sideband> sideband;
    FunctionTable functions;
    std::unique_ptr<ImageResolver> images;
    std::unique_ptr<PtImages> ptImages;
    std::unique_ptr<ContiguousRuns> runs;
    int32_t anyPid = -1;
    explicit TraceAndImages(const PerfDataReader& file)
        : trace(PtTraceSource::fromPerfData(file)), sideband(Sideband::load(file)) {
        if (!ok()) return;
        images = std::make_unique<ImageResolver>(*sideband, functions, ImageOptions{});
        images->prepare();
        ptImages = std::make_unique<PtImages>(*images);
        runs = std::make_unique<ContiguousRuns>(*trace);
        anyPid = sideband->processes().empty() ? -1 : sideband->processes().begin()->first;
    }
    bool ok() const { return trace && sideband; }
    // `run(image, config)` over each CPU's runs in turn, with the image of the
    // CPU's process (`cpuDone()` after each CPU, before its image goes); returns
    // the trace bytes handed over.
    template <typename Run, typename CpuDone>
    uint64_t forEachRun(Run&& run, CpuDone&& cpuDone) {
        uint64_t bytes = 0;
        for (size_t c = 0; c < trace->cpus().size(); ++c) {
            const PtCpuTrace& cpu = trace->cpus()[c];
            pt_image* image = ptImages->newImage(cpu.tid > 0 ? sideband->pidOf(cpu.tid) : anyPid);
            for (size_t r = 0; r < cpu.runs.size(); ++r) {
                if (cpu.runs[r].end <= cpu.runs[r].begin) continue;
                std::span<const uint8_t> b = runs->bytes[c][r];
                PtConfig config = makePtConfig(trace->configOptions(), b.data(), b.data() + b.size());
                bytes += b.size();
                run(image, config);
            }
            cpuDone();
            pt_image_free(image);
        }
        return bytes;
    }
};

// (a): libipt alone over every CPU's runs, with the image auxscope would use.
Figure bareLibipt(const PerfDataReader& file, const char* name, bool endOnCall, bool endOnJump) {
    Figure f{name};
    TraceAndImages loaded(file);
    if (!loaded.ok()) {
        f.note = "cannot read the trace";
        return f;
    }
    uint64_t errors = 0;
    double c0 = processCpuSeconds();
    auto t0 = Clock::now();
    f.bytes = loaded.forEachRun(
        [&](pt_image* image, PtConfig& config) {
            config.config.flags.variant.block.end_on_call = endOnCall;
            config.config.flags.variant.block.end_on_jump = endOnJump;
            pt_block_decoder* decoder = pt_blk_alloc_decoder(&config.config);
            if (!decoder) return;
            pt_blk_set_image(decoder, image);
            int status = pt_blk_sync_forward(decoder);
            while (status != -pte_eos) {
                if (status < 0) {
                    ++errors;
                    status = pt_blk_sync_forward(decoder);
                    continue;
                }
                while (status & pts_event_pending) {
                    pt_event ev;
                    status = pt_blk_event(decoder, &ev, sizeof ev);
                    if (status < 0) break;
                }
                if (status < 0) continue;
                pt_block block;
                block.ninsn = 0;
                status = pt_blk_next(decoder, &block, sizeof block);
                f.instructions += block.ninsn;
            }
            pt_blk_free_decoder(decoder);
        },
        [] {});
    f.seconds = since(t0);
    char note[64];
    f.cpuSeconds = processCpuSeconds() - c0;
    std::snprintf(note, sizeof note, "cpu %.2f s; %" PRIu64 " errors", f.cpuSeconds, errors);
    f.note = note;
    return f;
}

// (w): auxscope's flow walker over libipt's query decoder (pt/PtFlowWalker.h)
// alone over the same runs and image, counting instructions, nothing else: what
// (b) builds its spans on, beside (a).
Figure walkerAlone(const PerfDataReader& file, const char* name) {
    Figure f{name};
    TraceAndImages loaded(file);
    if (!loaded.ok()) {
        f.note = "cannot read the trace";
        return f;
    }
    struct Count {
        uint64_t instructions = 0;
        bool block(ptwalk::Block&, uint32_t count, BranchClass) {
            instructions += count;
            return false;
        }
        int event(const pt_event&) { return 0; }
    } sink;
    uint64_t errors = 0, unhandled = 0;
    double c0 = processCpuSeconds();
    auto t0 = Clock::now();
    std::unique_ptr<ptwalk::BlockTable> table;  // the CPU's process's code
    f.bytes = loaded.forEachRun(
        [&](pt_image* image, PtConfig& config) {
            if (!table) table = std::make_unique<ptwalk::BlockTable>(image, config.config);
            pt_query_decoder* decoder = pt_qry_alloc_decoder(&config.config);
            if (!decoder) return;
            ptwalk::BlockTable* current = table.get();
            ptwalk::Walker<Count> walker(decoder, &current, sink);
            int status = walker.sync();
            while (status != -pte_eos) {
                if (status < 0) {
                    ++(status == ptwalk::kUnhandled ? unhandled : errors);
                    status = walker.sync();
                } else if (status & pts_event_pending) {
                    status = walker.events(status);
                } else if (!walker.enabled()) {
                    status = (status & pts_eos) ? -pte_eos : -pte_no_enable;
                } else {
                    status = walker.hot();
                }
            }
            pt_qry_free_decoder(decoder);
        },
        [&] { table.reset(); });
    f.seconds = since(t0);
    f.instructions = sink.instructions;
    f.cpuSeconds = processCpuSeconds() - c0;
    char note[96];
    std::snprintf(note, sizeof note, "cpu %.2f s; %" PRIu64 " errors, %" PRIu64 " unhandled", f.cpuSeconds,
                  errors, unhandled);
    f.note = note;
    return f;
}

struct SpanFigure {
    Figure open, decode;
    uint64_t spans = 0, segments = 0, errors = 0, spanBytes = 0;
    DecodePhaseTimes phases;  // summed over the windows
    unsigned threads = 1;     // 0 resolved to the cores
    double minorFaults = 0;   // during the decode, workers included
};

// A decode figure as a run of the scaling section: the segment decode and the
// merge's copies on the pool, the rest (cache, statistics, joins, freeing each
// window's spans, the windows' loop) on the calling thread.
bench::ScalingRun scalingRun(const SpanFigure& f) {
    bench::ScalingRun r;
    r.threads = f.threads;
    r.wallSeconds = f.decode.seconds;
    r.cpuSeconds = f.decode.cpuSeconds;
    r.minorFaults = f.minorFaults;
    r.phases = {{"segments", f.phases.decodeSeconds, false},
                {"merge", f.phases.mergeSeconds - f.phases.joinSeconds, false},
                {"join", f.phases.joinSeconds, true},
                {"lookup", f.phases.lookupSeconds, true},
                {"rest",
                 std::max(0.0, f.decode.seconds - f.phases.decodeSeconds - f.phases.mergeSeconds -
                                   f.phases.lookupSeconds),
                 true}};
    return r;
}

// (b), (c): the whole trace, a window at a time (about 64 MB of trace each, as a
// timeline scrolling through it would ask), results dropped after each window:
// a busy trace makes ~10 bytes of spans per byte of PT, more than memory holds.
SpanFigure auxscopeSpans(const PerfDataReader& file, const char* name, unsigned threads,
                         bool flowWalker = true, bool isolate = DecoderIsolation::fromEnvironment().enabled) {
    SpanFigure r;
    r.threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    double cpu0 = processCpuSeconds();
    r.open.name = std::string(name) + ": open (index, images)";
    r.decode.name = name;
    auto t0 = Clock::now();
    PtSessionOptions options;
    options.flowWalker = flowWalker;
    options.isolation.enabled = isolate;
    auto session = PtSession::open(file, options);
    if (!session) {
        r.decode.note = session.error().message;
        return r;
    }
    r.open.seconds = since(t0);
    for (const PtCpuTrace& cpu : (*session)->trace().cpus())
        r.open.bytes += cpu.bytes.size();
    uint64_t begin = UINT64_MAX, end = 0;
    for (const PtSession::Segment& s : (*session)->segments()) {
        if (s.startTime) begin = std::min(begin, s.startTime);
        end = std::max(end, s.endTime);
    }
    const uint64_t windows = std::max<uint64_t>(1, r.open.bytes / (64 << 20));
    double cpu1 = processCpuSeconds();
    const double faults1 = bench::processMinorFaults(true);
    auto t1 = Clock::now();
    for (uint64_t w = 0; w < windows; ++w) {
        DecodeWindow window;
        window.begin = w == 0 ? 0 : begin + (end - begin) / windows * w;
        window.end = w + 1 == windows ? UINT64_MAX : begin + (end - begin) / windows * (w + 1) - 1;
        DecodedSpans result = (*session)->decodeSpans(window, threads);
        r.decode.bytes += result.decodedStats.traceBytes;
        r.decode.instructions += result.decodedStats.instructions;
        for (const auto& [tid, store] : result.threads) {
            r.spans += store.size();
            r.spanBytes += store.spanBytes();
        }
        r.segments += result.decodedStats.segments;
        r.errors += result.decodedStats.decodeErrors;
        r.phases.lookupSeconds += result.phases.lookupSeconds;
        r.phases.decodeSeconds += result.phases.decodeSeconds;
        r.phases.mergeSeconds += result.phases.mergeSeconds;
        r.phases.joinSeconds += result.phases.joinSeconds;
    }
    r.decode.seconds = since(t1);
    r.decode.cpuSeconds = processCpuSeconds() - cpu1;
    r.minorFaults = bench::processMinorFaults(true) - faults1;
    char note[240];
    std::snprintf(note, sizeof note,
                  "cpu %.2f s; %" PRIu64 " windows, %" PRIu64
                  " spans (%.1f insns/span, %.2f bytes/span), %" PRIu64 " segments, %" PRIu64 " errors",
                  r.decode.cpuSeconds, windows, r.spans,
                  r.spans ? double(r.decode.instructions) / double(r.spans) : 0.0,
                  r.spans ? double(r.spanBytes) / double(r.spans) : 0.0, r.segments, r.errors);
    r.decode.note = note;
    r.open.note = "cpu " + std::to_string(cpu1 - cpu0).substr(0, 5) + " s";
    return r;
}

// (e): what a timeline does before its first frame.
Figure firstFrame(const std::string& path) {
    Figure f{"(e) first frame: open + first 1/1000 of time"};
    auto t0 = Clock::now();
    auto file = PerfDataReader::open(path);
    if (!file) {
        f.note = file.error().message;
        return f;
    }
    double tReader = since(t0);
    auto session = PtSession::open(*file);
    if (!session) {
        f.note = session.error().message;
        return f;
    }
    double tSession = since(t0);
    uint64_t begin = UINT64_MAX, end = 0;
    for (const PtSession::Segment& s : (*session)->segments()) {
        if (s.startTime) begin = std::min(begin, s.startTime);
        end = std::max(end, s.endTime);
    }
    DecodeWindow window;
    window.begin = begin;
    window.end = begin + (end > begin ? (end - begin) / 1000 : 0);
    DecodedSpans result = (*session)->decodeSpans(window, 0);
    f.seconds = since(t0);
    f.bytes = result.stats.traceBytes;
    f.instructions = result.stats.instructions;
    size_t spans = 0;
    for (const auto& [tid, store] : result.threads)
        spans += store.size();
    char note[200];
    std::snprintf(note, sizeof note, "reader %.3f s, session %.3f s, decode %.3f s: %zu segments, %zu spans",
                  tReader, tSession - tReader, f.seconds - tSession, result.decodedNow, spans);
    f.note = note;
    return f;
}

double childrenCpuSeconds() {
    rusage ru{};
    getrusage(RUSAGE_CHILDREN, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// A command run as a process through the shell, timed end to end (start, open,
// decode, output, exit), time-limited: `perf script` and `auxscope decode` alike.
Figure process(const std::string& name, const std::string& command, uint64_t bytes, unsigned timeout) {
    Figure f{name};
    const std::string cmd = "timeout " + std::to_string(timeout) + " " + command;
    const double c0 = childrenCpuSeconds();
    auto t0 = Clock::now();
    int rc = std::system(cmd.c_str());
    f.seconds = since(t0);
    f.cpuSeconds = childrenCpuSeconds() - c0;
    f.bytes = bytes;
    char note[64];
    std::snprintf(note, sizeof note, "cpu %.2f s", f.cpuSeconds);
    f.note = note;
    if (rc != 0)
        f.note += "; exit status " + std::to_string(WEXITSTATUS(rc)) +
                  (WEXITSTATUS(rc) == 124 ? " (timed out)" : "");
    return f;
}

std::string quoted(const std::string& s) {
    return "'" + s + "'";
}

// (d): perf script to /dev/null, its whole process.
Figure perfScript(const std::string& path, const char* itrace, uint64_t bytes, unsigned timeout) {
    return process(std::string("(d) perf script --itrace=") + itrace,
                   "perf script -i " + quoted(path) + " --itrace=" + itrace + " >/dev/null 2>&1", bytes,
                   timeout);
}

// (b-proc): auxscope's whole decode process, as perf's is timed: `auxscope decode
// FILE --format F -j 1 >/dev/null` (the PSB index, the images, the sideband, the
// decode and the text). Its instruction count from its own summary on stderr.
Figure auxscopeProcess(const Options& o, const std::string& path, const char* format, uint64_t bytes) {
    const std::string err = o.dir + "/auxscope-decode.stderr";
    Figure f = process(std::string("(b-proc) auxscope decode --format ") + format + " -j 1",
                       quoted(o.auxscope) + " decode " + quoted(path) + " --format " + format +
                           " -j 1 >/dev/null 2>" + quoted(err),
                       bytes, o.perfTimeout);
    FILE* in = std::fopen(err.c_str(), "r");
    char line[512];
    unsigned long long segments = 0, traceBytes = 0, blocks = 0, instructions = 0;
    bool found = false;
    while (in && std::fgets(line, sizeof line, in))
        if (std::sscanf(line, "decoded %llu segments, %llu trace bytes, %llu blocks, %llu instructions",
                        &segments, &traceBytes, &blocks, &instructions) == 4)
            found = true;
    if (in) std::fclose(in);
    if (found)
        f.instructions = instructions;
    else
        f.note += "; no \"decoded ... instructions\" line in " + err;
    return f;
}

// The instructions `perf script --itrace=i0ns` reports: its "instructions" sample
// lines, counted in a separate, untimed run (its text is ~110 bytes an instruction).
uint64_t perfInstructions(const std::string& path, unsigned timeout, std::string& error) {
    const std::string cmd = "timeout " + std::to_string(timeout) + " perf script -i " + quoted(path) +
                            " --itrace=i0ns 2>/dev/null | grep -c ' instructions:'";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        error = "popen: " + std::string(std::strerror(errno));
        return 0;
    }
    unsigned long long n = 0;
    if (std::fscanf(p, "%llu", &n) != 1) error = "no count from: " + cmd;
    pclose(p);
    return n;
}

void verdict(const char* what, double value, double target) {
    std::printf("  %-6s %-60s %.2f (target >= %.2f)\n", value >= target ? "PASS" : "BELOW", what, value,
                target);
}

// A ratio is only worth something when both sides decoded the same instructions:
// FAIL (and a non-zero exit) when they differ.
bool countsFailed = false;
bool sameCount(const char* what, uint64_t x, const char* xName, uint64_t y, const char* yName) {
    const bool same = x == y && x != 0;
    if (!same) countsFailed = true;
    std::printf("  %-6s %-60s %s %" PRIu64 ", %s %" PRIu64 "\n", same ? "PASS" : "FAIL", what, xName, x,
                yName, y);
    return same;
}

void realTraces(const Options& o) {
    std::printf("\n== shared real traces (%s)\n", o.sharedData.c_str());
    std::string sky = o.sharedData + "/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14";
    auto file = PerfDataReader::open(sky);
    if (!file) {
        std::printf("  skylake: %s\n", file.error().message.c_str());
        return;
    }
    auto trace = PtTraceSource::fromPerfData(*file);
    if (!trace) {
        std::printf("  skylake: %s\n", trace.error().message.c_str());
        return;
    }
    uint64_t bytes = 0;
    for (const PtCpuTrace& cpu : trace->cpus())
        bytes += cpu.bytes.size();
    std::printf("  skylake perf.data: %zu CPUs, %" PRIu64
                " bytes of PT, no binaries (kernel trace): packet level, and spans that are all gaps\n",
                trace->cpus().size(), bytes);
    // Tiny trace: repeat until a measurable time has passed.
    const int rounds = 200;
    Figure pkt{"skylake (a') bare libipt packet decoder"};
    auto t0 = Clock::now();
    uint64_t packets = 0;
    for (int k = 0; k < rounds; ++k) {
        for (const PtCpuTrace& cpu : trace->cpus()) {
            for (const PtRun& run : cpu.runs) {
                PtConfig config = makePtConfig(trace->configOptions(), cpu.bytes.data() + run.begin,
                                               cpu.bytes.data() + run.end);
                pt_packet_decoder* d = pt_pkt_alloc_decoder(&config.config);
                if (!d) continue;
                int status = pt_pkt_sync_forward(d);
                while (status != -pte_eos) {
                    if (status < 0) {
                        status = pt_pkt_sync_forward(d);
                        continue;
                    }
                    pt_packet p;
                    status = pt_pkt_next(d, &p, sizeof p);
                    if (status >= 0) ++packets;
                }
                pt_pkt_free_decoder(d);
                pkt.bytes += run.end - run.begin;
            }
        }
    }
    pkt.seconds = since(t0);
    pkt.note = std::to_string(packets / rounds) + " packets per pass";
    print(pkt);
    Figure idx{"skylake auxscope PSB index (PsbIndex::build)"};
    t0 = Clock::now();
    for (int k = 0; k < rounds; ++k)
        for (const PtCpuTrace& cpu : trace->cpus()) {
            PsbIndex i = PsbIndex::build(cpu, trace->configOptions());
            idx.bytes += cpu.bytes.size();
        }
    idx.seconds = since(t0);
    print(idx);
    Figure spans{"skylake auxscope decode to spans (all gaps)"};
    t0 = Clock::now();
    for (int k = 0; k < rounds / 10; ++k) {
        auto s = PtSession::open(*file);
        if (!s) break;
        auto r = (*s)->decodeSpans({}, 1);
        spans.bytes += r.stats.traceBytes;
        spans.instructions += r.stats.instructions;
    }
    spans.seconds = since(t0);
    spans.note = "open + decode, per round";
    print(spans);
    std::printf(
        "  dynamorio-hello and libipt-ptt-synthetic are raw PT (.bin/.ptt), not perf.data:\n"
        "  they are conformance inputs for auxscope decode --pt, not span-decode benchmarks\n");
}

}  // namespace

// (i) and (i'): what decoding in worker processes costs.
void isolationCost(const PerfDataReader& fileRef, const Options& o) {
    const PerfDataReader* file = &fileRef;
    if (o.isolationRuns) {
        std::printf(
            "  (i) decoding in worker processes against in-process (%u interleaved runs each, medians):\n",
            o.isolationRuns);
        for (unsigned threads : {1u, 0u}) {
            std::vector<double> on, off, cpuOn, cpuOff;
            uint64_t insOn = 0, insOff = 0;
            for (unsigned run = 0; run < o.isolationRuns; ++run)
                for (bool isolate : {run % 2 == 0, run % 2 != 0}) {
                    SpanFigure f = auxscopeSpans(*file, "", threads, true, isolate);
                    (isolate ? on : off).push_back(f.decode.seconds);
                    (isolate ? cpuOn : cpuOff).push_back(f.decode.cpuSeconds);
                    (isolate ? insOn : insOff) = f.decode.instructions;
                }
            auto median = [](std::vector<double> v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            const double mOn = median(on), mOff = median(off), cOn = median(cpuOn), cOff = median(cpuOff);
            const std::string what = threads == 1 ? "1 thread" : "all cores";
            std::printf(
                "      %-9s in-process %.3f s, worker processes %.3f s: %+.1f %% (%s instructions); cpu time"
                " (workers included) %.3f s / %.3f s: %+.1f %% [%s]\n",
                what.c_str(), mOff, mOn, mOff > 0 ? (mOn / mOff - 1) * 100 : 0.0,
                insOn == insOff ? "same" : "DIFFERENT", cOff, cOn, cOff > 0 ? (cOn / cOff - 1) * 100 : 0.0,
                load().c_str());
            if (insOn != insOff) countsFailed = true;
            verdict(("(i) isolated / in-process decode time, " + what + " (lower is better)").c_str(),
                    mOff > 0 ? mOff / mOn : 0, 1 / 1.05);
        }
    }
    if (o.isolationRuns) {
        // (i') the streamed path (decode --format insn, the code view): every block
        // of the trace to the caller, libipt in one worker process that writes the
        // blocks into shared memory, against in-process.
        std::printf(
            "  (i') streamed blocks (forEachBlock, 1 worker) in a worker process against in-process"
            " (%u interleaved runs each, medians):\n",
            o.isolationRuns);
        std::vector<double> on, off, cpuOn, cpuOff;
        uint64_t sumOn = 0, sumOff = 0, blocksOn = 0;
        for (unsigned run = 0; run < o.isolationRuns; ++run)
            for (bool isolate : {run % 2 == 0, run % 2 != 0}) {
                PtSessionOptions options;
                options.isolation.enabled = isolate;
                auto session = PtSession::open(*file, options);
                if (!session) break;
                uint64_t blocks = 0, sum = 0;
                const double cpu0 = processCpuSeconds();
                const auto t0 = Clock::now();
                (*session)->forEachBlock(DecodeWindow{}, [&](const FlowBlock& b) {
                    ++blocks;
                    sum += b.instructions ^ b.ip ^ (b.time << 1);
                });
                (isolate ? on : off).push_back(since(t0));
                (isolate ? cpuOn : cpuOff).push_back(processCpuSeconds() - cpu0);
                (isolate ? sumOn : sumOff) = sum;
                if (isolate) blocksOn = blocks;
            }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v.empty() ? 0.0 : v[v.size() / 2];
        };
        const double mOn = median(on), mOff = median(off), cOn = median(cpuOn), cOff = median(cpuOff);
        std::printf(
            "      %llu blocks, in-process %.3f s, worker process %.3f s: %+.1f %% (%s blocks); cpu time"
            " (worker included) %.3f s / %.3f s: %+.1f %% [%s]\n",
            static_cast<unsigned long long>(blocksOn), mOff, mOn, mOff > 0 ? (mOn / mOff - 1) * 100 : 0.0,
            sumOn == sumOff ? "same" : "DIFFERENT", cOff, cOn, cOff > 0 ? (cOn / cOff - 1) * 100 : 0.0,
            load().c_str());
        if (sumOn != sumOff) countsFailed = true;
        verdict("(i') isolated / in-process streamed blocks, cpu time (lower is better)",
                cOn > 0 ? cOff / cOn : 0, 1 / 1.05);
    }
}

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_pt_decode: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--size-mb")
            o.sizeMb = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--perf-mb")
            o.perfMb = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--dense-mb")
            o.denseMb = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--seed")
            o.seed = std::strtoull(next().c_str(), nullptr, 0);
        else if (a == "--dir")
            o.dir = next();
        else if (a == "--auxscope")
            o.auxscope = next();
        else if (a == "--perf-timeout")
            o.perfTimeout = unsigned(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--no-perf")
            o.perf = false;
        else if (a == "--no-real")
            o.real = false;
        else if (a == "--isolation-runs")
            o.isolationRuns = unsigned(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--first-frame-only")
            o.firstFrameOnly = true;
        else if (a == "--threads-list")
            o.threadsList = bench::threadsListOption(next(), "bench_pt_decode");
        else if (a == "--scaling-only")
            o.scalingOnly = true;
        else if (a == "--isolation-only")
            o.isolationOnly = true;
        else {
            std::printf(
                "usage: bench_pt_decode [--size-mb N (1024)] [--perf-mb N (4)] [--dense-mb N (16, 0: none)]\n"
                "                       [--seed N] [--dir DIR] [--auxscope PATH]\n"
                "                       [--perf-timeout S (600)] [--no-perf] [--no-real] "
                "[--first-frame-only]\n"
                "                       [--isolation-runs N (3, 0: none)]\n"
                "                       [--threads-list N,N,... (the scaling section's thread counts; 0: all "
                "cores)]\n"
                "                       [--scaling-only (the scaling section alone; list 1 first for the "
                "figures)]\n"
                "                       [--isolation-only ((i) and (i') alone)]\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::printf("bench_pt_decode: %u cores, %s\n", cores, load().c_str());
    std::string path = ensureTrace(o, o.sizeMb);
    auto file = PerfDataReader::open(path);
    if (!file) {
        std::fprintf(stderr, "bench_pt_decode: %s\n", file.error().message.c_str());
        return 1;
    }
    const uint64_t truthInsns = truthValue(path + ".truth", "instructions");
    std::printf("\n== %s: %" PRIu64 " instructions in the truth\n", path.c_str(), truthInsns);

    if (o.firstFrameOnly) {
        Figure e = firstFrame(path);
        print(e);
        std::printf("  %-6s %-52s %.2f s (target <= 2 s, on %" PRIu64 " MB)\n",
                    e.seconds <= 2 ? "PASS" : "BELOW", "(e) first frame", e.seconds, o.sizeMb);
        std::printf("\nbench_pt_decode: done, %s\n", load().c_str());
        return 0;
    }
    if (o.isolationOnly) {
        isolationCost(*file, o);
        std::printf("\nbench_pt_decode: done, %s%s\n", load().c_str(), countsFailed ? "; FAIL" : "");
        return countsFailed ? 3 : 0;
    }
    if (o.scalingOnly) {
        std::vector<unsigned> list = o.threadsList.empty() ? std::vector<unsigned>{1, 0} : o.threadsList;
        std::vector<bench::ScalingRun> runs;
        uint64_t instructions = 0;
        for (unsigned t : list) {
            SpanFigure f =
                auxscopeSpans(*file, ("(c) auxscope decode to spans, -j " + std::to_string(t)).c_str(), t);
            print(f.decode);
            if (runs.empty()) instructions = f.decode.instructions;
            sameCount(("-j " + std::to_string(t) + " vs -j 1").c_str(), f.decode.instructions, "-j N",
                      instructions, "-j 1");
            runs.push_back(scalingRun(f));
        }
        std::printf("\n== scaling (%" PRIu64 " MB trace, %u cores here)\n", o.sizeMb, cores);
        bench::printScaling("PT decode to spans", runs);
        std::printf("\nbench_pt_decode: done, %s%s\n", load().c_str(), countsFailed ? "; FAIL" : "");
        return countsFailed ? 3 : 0;
    }
    Figure a = bareLibipt(*file, "(a) bare libipt block decoder", false, false);
    print(a);
    // Informational: libipt with the flags (b) uses, and with end-on-call alone
    // (what (b) would cost libipt if it found direct jumps leaving a function
    // some other way).
    Figure a2 = bareLibipt(*file, "(a') the same, end-on-call + end-on-jump", true, true);
    print(a2);
    Figure a3 = bareLibipt(*file, "(a'') the same, end-on-call only", true, false);
    print(a3);
    Figure w = walkerAlone(*file, "(w) auxscope's flow walker alone");
    print(w);
    SpanFigure b = auxscopeSpans(*file, "(b) auxscope decode to spans, 1 thread", 1);
    print(b.open);
    print(b.decode);
    // Informational: (b) as it was before the flow walker, through libipt's block decoder.
    SpanFigure bBlock =
        auxscopeSpans(*file, "(b') the same through libipt's block decoder", 1, /*flowWalker=*/false);
    print(bBlock.decode);
    SpanFigure c = auxscopeSpans(*file, "(c) auxscope decode to spans, all cores", 0);
    print(c.decode);
    {
        std::vector<bench::ScalingRun> runs{scalingRun(b)};
        if (o.threadsList.empty()) {
            runs.push_back(scalingRun(c));
        } else {
            for (unsigned t : o.threadsList) {
                if (t == 1) continue;
                SpanFigure f = auxscopeSpans(
                    *file, ("(c) auxscope decode to spans, -j " + std::to_string(t)).c_str(), t);
                print(f.decode);
                sameCount(("-j " + std::to_string(t) + " vs (b)").c_str(), f.decode.instructions, "-j N",
                          b.decode.instructions, "(b)");
                runs.push_back(scalingRun(f));
            }
        }
        bench::printScaling("PT decode to spans, (b) and (c)", runs);
    }
    isolationCost(*file, o);
    Figure e = firstFrame(path);
    print(e);
    // (a) and (b) again on a trace whose spans are as dense as real code's
    // (>= 50 instructions a span): fewer, longer blocks per instruction.
    Figure aDense, bDense;
    if (o.denseMb) {
        std::string dense = ensureTrace(o, o.denseMb, o.denseStraight);
        auto denseFile = PerfDataReader::open(dense);
        if (denseFile) {
            std::printf("\n== %s (--straight %u: realistic density)\n", dense.c_str(), o.denseStraight);
            aDense = bareLibipt(*denseFile, "(a) bare libipt block decoder, dense", false, false);
            print(aDense);
            print(walkerAlone(*denseFile, "(w) auxscope's flow walker alone, dense"));
            SpanFigure s = auxscopeSpans(*denseFile, "(b) auxscope decode to spans, 1 thread, dense", 1);
            bDense = s.decode;
            print(bDense);
            SpanFigure sBlock =
                auxscopeSpans(*denseFile, "(b') through libipt's block decoder, dense", 1, false);
            print(sBlock.decode);
        }
    }
    Figure bSmall, perfI, perfCr, procInsn, procSpans;
    uint64_t perfInsns = 0, smallTruth = 0;
    std::string perfCountError;
    if (o.perf) {
        std::string small = ensureTrace(o, o.perfMb);
        auto smallFile = PerfDataReader::open(small);
        smallTruth = truthValue(small + ".truth", "instructions");
        uint64_t smallBytes = 0;
        if (smallFile) {
            SpanFigure s = auxscopeSpans(*smallFile, "", 1);
            bSmall = s.decode;
            smallBytes = s.open.bytes;
        }
        bSmall.name = "(b) decode phase alone, 1 thread (context)";
        std::printf("\n== perf script on %s (%" PRIu64 " MB: perf is too slow for the full trace)\n",
                    small.c_str(), o.perfMb);
        std::printf(
            "  each tool's whole process, timed from start to exit, output to /dev/null: perf script's\n"
            "  instruction lines (--itrace=i0ns: one line an instruction) beside auxscope decode --format "
            "insn\n"
            "  (one line a basic block: time, cpu, tid, first-last address, instructions, function), and\n"
            "  perf script's calls and returns (--itrace=cr) beside auxscope decode --format spans (every\n"
            "  call-stack span); auxscope with -j 1, as perf decodes on one thread\n");
        print(bSmall);
        perfI = perfScript(small, "i0ns", smallBytes, o.perfTimeout);
        perfI.instructions = smallTruth;
        print(perfI);
        procInsn = auxscopeProcess(o, small, "insn", smallBytes);
        print(procInsn);
        perfCr = perfScript(small, "cr", smallBytes, o.perfTimeout);
        perfCr.instructions = smallTruth;
        print(perfCr);
        procSpans = auxscopeProcess(o, small, "spans", smallBytes);
        print(procSpans);
        perfInsns = perfInstructions(small, o.perfTimeout, perfCountError);
        std::printf("  perf script --itrace=i0ns counts %" PRIu64 " instructions (an untimed run)%s%s [%s]\n",
                    perfInsns, perfCountError.empty() ? "" : ": ", perfCountError.c_str(), load().c_str());
    }

    std::printf(
        "\n== the same instructions on both sides of every ratio (FAIL: the ratio compares different "
        "work)\n");
    std::printf("  info   truth (ptsynth) %" PRIu64 " instructions on the main trace\n", truthInsns);
    sameCount("(b) vs its anchor (a)", b.decode.instructions, "(b)", a.instructions, "(a)");
    sameCount("(c) vs (b)", c.decode.instructions, "(c)", b.decode.instructions, "(b)");
    if (o.denseMb)
        sameCount("(b) vs (a), dense trace", bDense.instructions, "(b)", aDense.instructions, "(a)");
    if (o.perf) {
        std::printf("  info   truth (ptsynth) %" PRIu64 " instructions on the perf trace\n", smallTruth);
        sameCount("auxscope decode --format insn vs perf i0ns", procInsn.instructions, "auxscope", perfInsns,
                  "perf");
        sameCount("auxscope decode --format spans vs --format insn", procSpans.instructions, "spans",
                  procInsn.instructions, "insn");
        sameCount("(b) decode phase vs auxscope decode process", bSmall.instructions, "(b)",
                  procInsn.instructions, "process");
    }

    std::printf("\n== targets\n");
    verdict("(b) / (a)", a.mbs() > 0 ? b.decode.mbs() / a.mbs() : 0, 0.9);
    if (o.denseMb) verdict("(b) / (a), dense trace", aDense.mbs() > 0 ? bDense.mbs() / aDense.mbs() : 0, 0.9);
    // The same by CPU time: what a loaded machine leaves of the ratio.
    auto byCpu = [](const Figure& x, const Figure& y) {
        return x.cpuSeconds > 0 && y.cpuSeconds > 0 && y.bytes
                   ? (double(x.bytes) / x.cpuSeconds) / (double(y.bytes) / y.cpuSeconds)
                   : 0.0;
    };
    verdict("(b) / (a) by CPU time", byCpu(b.decode, a), 0.9);
    if (o.denseMb) verdict("(b) / (a) by CPU time, dense trace", byCpu(bDense, aDense), 0.9);
    // 16 bytes a PackedSpan, plus a chunk base per 4 s and the rare wide value.
    const double perSpan = b.spans ? double(b.spanBytes) / double(b.spans) : 0.0;
    std::printf("  %-6s %-60s %.3f (target <= 16: 16 a span + chunk bases, wide values)\n",
                b.spans && perSpan < 16.01 ? "PASS" : "BELOW", "(b) bytes per stored span", perSpan);
    verdict(("(c) / (" + std::to_string(cores) + " cores x (b))").c_str(),
            b.decode.mbs() > 0 ? c.decode.mbs() / (cores * b.decode.mbs()) : 0, 0.8);
    if (o.perf) {
        // Process against process, the same trace: the ratio of their times.
        auto ratio = [](const Figure& perf, const Figure& aux) {
            return perf.seconds > 0 && aux.seconds > 0 ? perf.seconds / aux.seconds : 0.0;
        };
        verdict("perf script --itrace=i0ns / auxscope decode --format insn", ratio(perfI, procInsn), 50);
        verdict("perf script --itrace=cr / auxscope decode --format spans", ratio(perfCr, procSpans), 50);
        std::printf("  info   the same by CPU time: %.2f (i0ns / insn), %.2f (cr / spans)\n",
                    procInsn.cpuSeconds > 0 ? perfI.cpuSeconds / procInsn.cpuSeconds : 0.0,
                    procSpans.cpuSeconds > 0 ? perfCr.cpuSeconds / procSpans.cpuSeconds : 0.0);
        std::printf(
            "  info   context, not verdicts: perf's whole process / (b)'s decode phase alone (no open, no "
            "output):"
            " %.1f (i0ns), %.1f (cr)\n",
            ratio(perfI, bSmall), ratio(perfCr, bSmall));
    }
    std::printf("  %-6s %-60s %.2f s (target <= 2 s, on %" PRIu64 " MB)\n", e.seconds <= 2 ? "PASS" : "BELOW",
                "(e) first frame", e.seconds, o.sizeMb);
    if (o.real) realTraces(o);
    std::printf("\nbench_pt_decode: done, %s%s\n", load().c_str(),
                countsFailed ? "; FAIL: a ratio compares decodes that counted different instructions" : "");
    return countsFailed ? 3 : 0;
}
