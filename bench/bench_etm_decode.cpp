// SPDX-License-Identifier: GPL-3.0-or-later
// CoreSight ETM decode throughput: auxscope's decode to spans beside a bare
// OpenCSD loop over the same trace bytes and the same code, and beside OpenCSD's
// own trc_pkt_lister, on the OpenCSD snapshot bugfix-exact-match (ETMv4, one
// busy trace ID, 0x12) and on a larger trace made of N copies of its buffer.
//
// auxscope decodes perf.data files, so the bench first writes one from the
// snapshot (in a temporary directory) with the project's own writer, shaped as
// `perf record -e cs_etm//u` writes a per-CPU capture:
//   attrs     cs_etm//u and a dummy:u tracking event (sample_id_all, TID|TIME|CPU)
//   records   ID_INDEX, AUXTRACE_INFO (cs_etm: every CPU's ETMv4 registers from
//             the snapshot's etm_*.ini), COMM and MMAP2 of a process whose mapped
//             file holds the snapshot's memory dumps (written as a minimal ELF by
//             tools/ptsynth's writer, one PT_LOAD at the dumps' addresses: the
//             images resolver maps ELF files only), ITRACE_START on the CPU of
//             trace ID 0x12, then per copy a PERF_RECORD_AUX and an AUXTRACE
//             record holding the snapshot's trace buffer as it is (frame
//             formatted, as trace.ini says), then EXIT.
// Every copy is its own AUX buffer, so every copy starts at a sync point (the
// decoders reset at each buffer) and decodes exactly like the snapshot.
//
//   (a)  bare OpenCSD: the C API directly (decode tree, ETMv4 decoders, OpenCSD's
//        own buffer memory accessors over the dumps, an element callback that
//        only counts ranges and instructions), reset per copy: the limit
//   (a') the same through auxscope's wrapper etm/EtmDecoder (elements converted,
//        EtmMemoryCache over the dumps) with a no-op sink, for reference
//   (b)  auxscope to spans on one thread: AuxTraceSession::open(PerfDataReader)
//        then decodeSpans(whole recording, 1) (CoreSight: etm/EtmSession)
//   (c)  the same on every core (a fresh session: nothing cached)
//   (i)  (b) and (c) with the decode in worker processes (spans/IsolatedDecode.h,
//        auxscope's default: a crash of OpenCSD ends only its segment) against
//        in-process, --isolation-runs interleaved runs each, decode phase medians;
//        target <= 5 % slower
//   (a*) (a) on every core (a decode tree per thread), for reference: how far
//        OpenCSD alone scales on the machine, the yardstick for (c)
//   (d)  trc_pkt_lister -ss_dir DIR -decode_only -logstdout -logfilename /dev/null (it writes
//        trc_pkt_lister.ppl, 3.9 GB here, unless told otherwise) >/dev/null, its whole
//        process. For the N-copy trace it runs on a snapshot directory of its own
//        holding the N copies: the snapshot's files linked, its buffer file
//        replaced by the buffer written N times over (frame formatted, 16-byte
//        frames: each copy starts on a frame boundary; the lister's count on 2
//        copies is checked to be exactly twice the snapshot's, so the copies
//        decode as copies). Its process start counts once, as auxscope's open does.
// Before timing, the instruction counts are checked: the snapshot decoded by
// etm/EtmSnapshotDecode (what `auxscope decode SNAPSHOT_DIR` does) against the
// perf.data decoded by AuxTraceSession; after, (a), (a'), (b), (c) and the
// lister's own count against N x that: a difference is a FAIL line and exit
// status 3 (the ratios would compare different work).
//
// Every column includes its set-up: (a) creating and destroying its decode tree,
// (a') its decoder, (b) and (c) AuxTraceSession::open (index, images, sideband),
// (a*) its trees, (d) its whole process. Every column is the median run of the
// same number of runs: --repeat (3) on the single copy, --repeat-copies (1) on
// the N copies (the lister alone takes minutes there). (a), (a') and (b) are
// measured interleaved, copy by copy in rotating order ((b) decodes one copy's
// time window at a time, as a timeline asks for windows), so that a machine whose
// speed drifts affects them alike.
// Figures: wall time and CPU time, instructions/s and ranges/s (wall),
// the load average beside each line (the machine is shared: with a load above
// the core count, wall times say more about the neighbours than about the code,
// so the single-thread ratios are also given on CPU time).
// Not a test: run by hand or through `ninja run_bench_etm_decode`.
#include <linux/perf_event.h>
#include <opencsd/c_api/opencsd_c_api.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "EtmSnapPerfData.h"
#include "LoadAverage.h"
#include "PtSynthPerfData.h"
#include "ScalingFigures.h"
#include "auxtrace/AuxTraceDecode.h"
#include "etm/EtmDecoder.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSnapshot.h"
#include "etm/EtmSnapshotDecode.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"

using namespace auxscope;
using namespace auxscope::etm;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::string snapshot =
        std::string(AUXSCOPE_SHARED_DATA_DIR) + "/coresight/opencsd-snapshots/bugfix-exact-match";
    std::string tmp;  // empty: a fresh directory under $TMPDIR or /tmp, removed at the end
    unsigned copies = 32;
    unsigned repeat = 3;          // runs per column on the single copy (the median is kept)
    unsigned repeatCopies = 1;    // runs per column on the N copies (the median is kept)
    bool listerCountAll = false;  // count the lister's instructions on the N copies too (slow)
    bool lister = true;
    bool keep = false;
    std::vector<unsigned> threadsList;  // the scaling section's thread counts (0: every core)
    bool scalingOnly = false;           // the N copies' scaling section alone
};

// The copies' AUX records' times (etmsnap::SnapPerfDataOptions' defaults).
constexpr uint64_t kStartTime = etmsnap::SnapPerfDataOptions{}.startTime;
constexpr uint64_t kBufferNs = etmsnap::SnapPerfDataOptions{}.bufferNs;

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string load() {
    return bench::loadAverage();
}

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "bench_etm_decode: %s\n", what.c_str());
    std::exit(1);
}

struct Figure {
    std::string name;
    double wall = 0, cpu = 0;
    uint64_t instructions = 0, ranges = 0, bytes = 0;
    std::string note;
    double insnPerS() const { return wall > 0 ? double(instructions) / wall : 0; }
    double rangesPerS() const { return wall > 0 ? double(ranges) / wall : 0; }
    double insnPerCpuS() const { return cpu > 0 ? double(instructions) / cpu : 0; }
};

void print(const Figure& f) {
    std::printf(
        "  %-44s %8.3f s wall %8.3f s cpu %8.2f M insn/s %7.2f M ranges/s %8.2f M insn/cpu-s  [%s]%s%s\n",
        f.name.c_str(), f.wall, f.cpu, f.insnPerS() / 1e6, f.rangesPerS() / 1e6, f.insnPerCpuS() / 1e6,
        load().c_str(), f.note.empty() ? "" : "  ", f.note.c_str());
    std::fflush(stdout);
}

// ---------------------------------------------------------------- the snapshot

using Dump = etmsnap::Dump;
using Snapshot = etmsnap::SnapshotTrace;

Snapshot readSnapshot(const std::string& dir) {
    auto s = etmsnap::readSnapshotTrace(dir);
    if (!s) fail(s.error().message);
    return std::move(*s);
}

// ---------------------------------------------------------------- the perf.data

void check(const Expected<void>& r) {
    if (!r) fail(r.error().message);
}

std::vector<ptsynth::PtSynthMapping> dumpElfs(const Snapshot& s, const std::string& prefix) {
    auto elfs = etmsnap::writeDumpElfs(s, prefix);
    if (!elfs) fail(elfs.error().message);
    return std::move(*elfs);
}

// `copies` copies of the snapshot's buffer on `cpu`, each its own AUX buffer.
void writePerfData(const Snapshot& s, const std::vector<ptsynth::PtSynthMapping>& elfs, int cpu,
                   unsigned copies, const std::string& path) {
    etmsnap::SnapPerfDataOptions o;
    o.cpu = cpu;
    o.copies = copies;
    o.comm = "cc1";
    if (auto w = etmsnap::writeSnapshotPerfData(s, elfs, o, path); !w) fail(w.error().message);
}

// ---------------------------------------------------------------- (a) bare OpenCSD

struct Counts {
    uint64_t ranges = 0, instructions = 0, errors = 0;
};

ocsd_datapath_resp_t countElement(const void* ctx, const ocsd_trc_index_t, const uint8_t,
                                  const ocsd_generic_trace_elem* e) {
    if (e->elem_type == OCSD_GEN_TRC_ELEM_INSTR_RANGE) {
        auto* c = static_cast<Counts*>(const_cast<void*>(ctx));
        ++c->ranges;
        c->instructions += e->num_instr_range;
    }
    return OCSD_RESP_CONT;
}

void dataOp(dcd_tree_handle_t tree, ocsd_datapath_op_t op, Counts& c) {
    for (int i = 0; i < 1000; ++i) {
        uint32_t used = 0;
        const ocsd_datapath_resp_t r = ocsd_dt_process_data(tree, op, 0, 0, nullptr, &used);
        if (OCSD_DATA_RESP_IS_FATAL(r)) fail("OpenCSD: fatal response to a data path operation");
        if (OCSD_DATA_RESP_IS_ERR(r)) ++c.errors;
        if (!OCSD_DATA_RESP_IS_WAIT(r)) return;
        op = OCSD_OP_FLUSH;
    }
}

// A stopwatch for one figure: wall time and the calling thread's CPU time, summed
// over the pieces it times (the figures are measured interleaved, copy by copy).
double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

template <typename F>
auto timed(Figure& f, F work) {
    const double c0 = threadCpuSeconds();
    const auto t0 = Clock::now();
    auto r = work();
    f.wall += since(t0);
    f.cpu += threadCpuSeconds() - c0;
    return r;
}

// timed(), with the CPU time of the worker processes it waited for (an isolated
// decode, spans/IsolatedDecode.h, runs in them; was left out of (b)'s figure).
template <typename F>
auto timedWithWorkers(Figure& f, F work) {
    const double c0 = bench::rusageCpuSeconds(RUSAGE_CHILDREN);
    auto r = timed(f, work);
    f.cpu += bench::rusageCpuSeconds(RUSAGE_CHILDREN) - c0;
    return r;
}

// (a): the OpenCSD C API over the snapshot's buffer, one decode tree, reset per copy.
class BareOpenCsd {
public:
    explicit BareOpenCsd(const Snapshot& s) : s_(s) {
        const uint32_t flags = s.input == EtmInput::Formatted
                                   ? OCSD_DFRMTR_FRAME_MEM_ALIGN | OCSD_DFRMTR_RESET_ON_4X_FSYNC
                                   : OCSD_DFRMTR_HAS_FSYNCS;
        const ocsd_dcd_tree_src_t src =
            s.input == EtmInput::Raw ? OCSD_TRC_SRC_SINGLE : OCSD_TRC_SRC_FRAME_FORMATTED;
        tree_ = ocsd_create_dcd_tree(src, s.input == EtmInput::Raw ? 0 : flags);
        if (tree_ == C_API_INVALID_TREE_HANDLE) fail("OpenCSD cannot create a decode tree");
        for (const SnapshotSource& source : s.sources) {
            const EtmSourceConfig& k = *source.config;
            if (k.protocol != EtmProtocol::EtmV4) fail(source.name + ": the bare loop decodes ETMv4 only");
            ocsd_etmv4_cfg cfg{};
            cfg.reg_idr0 = k.trcidr0;
            cfg.reg_idr1 = k.trcidr1;
            cfg.reg_idr2 = k.trcidr2;
            cfg.reg_idr8 = k.trcidr8;
            cfg.reg_idr9 = k.trcidr9;
            cfg.reg_idr10 = k.trcidr10;
            cfg.reg_idr11 = k.trcidr11;
            cfg.reg_idr12 = k.trcidr12;
            cfg.reg_idr13 = k.trcidr13;
            cfg.reg_configr = k.trcconfigr;
            cfg.reg_traceidr = k.trctraceidr;
            cfg.arch_ver = static_cast<ocsd_arch_version_t>(k.core.arch);
            cfg.core_prof = static_cast<ocsd_core_profile_t>(k.core.profile);
            unsigned char csid = 0;
            if (ocsd_dt_create_decoder(tree_, OCSD_BUILTIN_DCD_ETMV4I, OCSD_CREATE_FLG_FULL_DECODER, &cfg,
                                       &csid) != OCSD_OK)
                fail(source.name + ": OpenCSD cannot create its decoder");
        }
        if (ocsd_dt_set_gen_elem_outfn(tree_, countElement, &counts) != OCSD_OK)
            fail("OpenCSD: element callback");
        for (const Dump& d : s.dumps)
            if (ocsd_dt_add_buffer_mem_acc(tree_, d.address, OCSD_MEM_SPACE_ANY, d.bytes.data(),
                                           uint32_t(d.bytes.size())) != OCSD_OK)
                fail("OpenCSD: memory accessor at " + hex(d.address));
    }
    ~BareOpenCsd() { ocsd_destroy_dcd_tree(tree_); }
    BareOpenCsd(const BareOpenCsd&) = delete;
    BareOpenCsd& operator=(const BareOpenCsd&) = delete;

    // One copy of the buffer, from a reset decoder to its end of trace.
    int decodeCopy() {
        const uint8_t* p = s_.buffer.data();
        const uint32_t size = uint32_t(s_.buffer.size());
        for (uint32_t done = 0; done < size;) {
            uint32_t used = 0;
            const ocsd_datapath_resp_t r =
                ocsd_dt_process_data(tree_, OCSD_OP_DATA, done, size - done, p + done, &used);
            done += used;
            if (OCSD_DATA_RESP_IS_FATAL(r)) fail("OpenCSD: fatal response at " + hex(done));
            if (OCSD_DATA_RESP_IS_ERR(r)) ++counts.errors;
            if (OCSD_DATA_RESP_IS_WAIT(r)) dataOp(tree_, OCSD_OP_FLUSH, counts);
        }
        dataOp(tree_, OCSD_OP_EOT, counts);
        dataOp(tree_, OCSD_OP_RESET, counts);
        return 0;
    }
    Counts counts;

private:
    const Snapshot& s_;
    dcd_tree_handle_t tree_ = C_API_INVALID_TREE_HANDLE;
};

// (a'): the same through auxscope's EtmDecoder, elements to a sink that only counts.
class WrappedOpenCsd {
public:
    explicit WrappedOpenCsd(const Snapshot& s) : s_(s), cache_(image_) {
        for (const Dump& d : s.dumps)
            check(image_.addBuffer(d.address, std::make_shared<const std::vector<uint8_t>>(d.bytes), 0, 0));
        std::vector<EtmSourceConfig> configs;
        for (const SnapshotSource& source : s.sources)
            configs.push_back(*source.config);
        EtmDecoderOptions options;
        options.input = s.input;
        options.resetOn4xFsync = s.input == EtmInput::Formatted;
        auto decoder = EtmDecoder::create(configs, options, &cache_, &sink_);
        if (!decoder) fail(decoder.error().message);
        decoder_ = std::move(*decoder);
    }
    int decodeCopy(unsigned k) {
        const uint64_t at = uint64_t(k) * s_.buffer.size();
        check(decoder_->reset(at));
        check(decoder_->feed(at, s_.buffer));
        check(decoder_->finish());
        return 0;
    }
    const Counts& counts() const { return sink_.c; }

private:
    class CountSink final : public EtmElementSink {
    public:
        void element(const EtmElement& e) override {
            if (e.kind == EtmElementKind::InstrRange) ++c.ranges, c.instructions += e.instructions;
        }
        void decodeError(uint64_t, uint8_t, std::string_view) override { ++c.errors; }
        Counts c;
    };
    const Snapshot& s_;
    EtmImageMemory image_;
    EtmMemoryCache cache_;
    CountSink sink_;
    std::unique_ptr<EtmDecoder> decoder_;
};

// (a*): (a) on every core, a decode tree per thread taking copies from a shared
// counter: how far OpenCSD alone scales on this machine (SMT siblings, shared
// caches, clock), the yardstick for (c). The trees are created and destroyed on
// this thread: the C API keeps them in a process-wide map that is not thread-safe.
Figure bareOpenCsdAllCores(const Snapshot& s, unsigned copies, unsigned threads) {
    Figure f{"(a*) bare OpenCSD, every core"};
    threads = std::max(1u, std::min(threads, copies));
    // Set-up included, as in (a): the trees are made and destroyed inside the clock.
    const double c0 = bench::rusageCpuSeconds(RUSAGE_SELF);
    const auto t0 = Clock::now();
    std::vector<std::unique_ptr<BareOpenCsd>> trees;
    for (unsigned t = 0; t < threads; ++t)
        trees.push_back(std::make_unique<BareOpenCsd>(s));
    std::atomic<unsigned> next{0};
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (unsigned k; (k = next.fetch_add(1)) < copies;)
                trees[t]->decodeCopy();
        });
    for (std::thread& t : pool)
        t.join();
    uint64_t errors = 0;
    for (const auto& t : trees)
        f.instructions += t->counts.instructions, f.ranges += t->counts.ranges, errors += t->counts.errors;
    trees.clear();
    f.wall = since(t0);
    f.cpu = bench::rusageCpuSeconds(RUSAGE_SELF) - c0;
    f.bytes = uint64_t(copies) * s.buffer.size();
    f.note = std::to_string(threads) + " threads, " + std::to_string(errors) + " error responses";
    return f;
}

// ---------------------------------------------------------------- (b), (c) auxscope

struct SpanFigure {
    Figure open, decode;
    uint64_t spans = 0, segments = 0;
    DecodePhaseTimes phases;
    unsigned threads = 1;     // 0 resolved to the cores
    double minorFaults = -1;  // open + decode, workers included; -1: not measured
};

// The decode figure includes the open (set-up included on every side); the open
// alone is kept beside it.
// This process's and its waited-for children's CPU time: the decode workers
// (spans/IsolatedDecode.h) do the decoding.
double decodeCpuSeconds() {
    return bench::rusageCpuSeconds(RUSAGE_SELF) + bench::rusageCpuSeconds(RUSAGE_CHILDREN);
}

SpanFigure auxscopeSpans(const PerfDataReader& file, const char* name, unsigned threads,
                         bool isolate = DecoderIsolation::fromEnvironment().enabled) {
    SpanFigure r;
    r.threads = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
    r.open.name = std::string(name) + ": of which open";
    r.decode.name = std::string(name) + ": open + decode";
    const double c0 = decodeCpuSeconds();
    const double faults0 = bench::processMinorFaults(true);
    auto t0 = Clock::now();
    AuxTraceOptions options;
    options.isolation.enabled = isolate;
    auto session = AuxTraceSession::open(file, options);
    if (!session) fail(session.error().message);
    r.open.wall = since(t0);
    r.open.cpu = decodeCpuSeconds() - c0;
    const double c1 = decodeCpuSeconds();
    auto t1 = Clock::now();
    DecodedSpans result = (*session)->decodeSpans(DecodeWindow{}, threads);
    r.decode.wall = since(t1) + r.open.wall;
    r.decode.cpu = decodeCpuSeconds() - c1 + r.open.cpu;
    r.minorFaults = bench::processMinorFaults(true) - faults0;
    r.phases = result.phases;
    const DecodeStats& st = result.decodedStats;
    r.decode.instructions = st.instructions;
    r.decode.ranges = st.blocks;
    r.decode.bytes = st.traceBytes;
    r.segments = st.segments;
    for (const auto& [tid, store] : result.threads)
        r.spans += store.size();
    uint64_t gaps = 0;
    for (const auto& [reason, n] : st.gaps)
        gaps += n;
    char note[200];
    std::snprintf(note, sizeof note,
                  "%" PRIu64 " segments, %" PRIu64 " spans, %" PRIu64 " gaps, %" PRIu64 " decode errors",
                  r.segments, r.spans, gaps, st.decodeErrors);
    r.decode.note = note;
    return r;
}

struct Run {
    Figure a, a2, lister, aAll;
    SpanFigure b, c;
};

// (b), (c) as runs of the scaling section: the open (segment index, images) and
// the calling thread's part of the decode are serial; the segment decode and
// the merge's copies run on the pool.
bench::ScalingRun scalingRun(const SpanFigure& f) {
    bench::ScalingRun r;
    r.threads = f.threads;
    r.wallSeconds = f.decode.wall;
    r.cpuSeconds = f.decode.cpu;
    r.minorFaults = f.minorFaults;
    r.phases = {{"open", f.open.wall, true},
                {"segments", f.phases.decodeSeconds, false},
                {"merge", f.phases.mergeSeconds - f.phases.joinSeconds, false},
                {"join", f.phases.joinSeconds, true},
                {"lookup", f.phases.lookupSeconds, true},
                {"rest",
                 std::max(0.0, f.decode.wall - f.open.wall - f.phases.decodeSeconds - f.phases.mergeSeconds -
                                   f.phases.lookupSeconds),
                 true}};
    return r;
}

// The scaling section: (c) on `file` at each thread count of `list` (1 first),
// the median of `runs` runs each, beside the 1-thread run. False when a count
// decoded other instructions or ranges than the 1-thread run.
bool scalingSection(const PerfDataReader& file, const char* what, std::vector<unsigned> list, unsigned runs) {
    if (list.empty() || list.front() != 1) list.insert(list.begin(), 1);
    std::vector<bench::ScalingRun> out;
    bool same = true;
    uint64_t instructions = 0, ranges = 0;
    for (unsigned t : list) {
        std::vector<SpanFigure> fs;
        for (unsigned i = 0; i < std::max(1u, runs); ++i)
            fs.push_back(auxscopeSpans(file, ("(c) auxscope spans, -j " + std::to_string(t)).c_str(), t));
        std::sort(fs.begin(), fs.end(),
                  [](const SpanFigure& x, const SpanFigure& y) { return x.decode.wall < y.decode.wall; });
        const SpanFigure& f = fs[fs.size() / 2];
        print(f.decode);
        if (out.empty()) instructions = f.decode.instructions, ranges = f.decode.ranges;
        if (f.decode.instructions != instructions || f.decode.ranges != ranges) {
            std::printf("  FAIL   -j %u decoded %" PRIu64 " instructions / %" PRIu64 " ranges, -j 1 %" PRIu64
                        " / %" PRIu64 "\n",
                        t, f.decode.instructions, f.decode.ranges, instructions, ranges);
            same = false;
        }
        out.push_back(scalingRun(f));
    }
    bench::printScaling(what, out);
    return same;
}

// ---------------------------------------------------------------- (d) trc_pkt_lister

struct Lister {
    Figure f;
    bool ran = false;
};

// The run whose wall time is the median of `runs` (of an even number, the lower middle).
template <typename T, typename Wall>
T medianRun(std::vector<T> runs, Wall wall) {
    std::sort(runs.begin(), runs.end(), [&](const T& x, const T& y) { return wall(x) < wall(y); });
    return runs[(runs.size() - 1) / 2];
}

std::string runsNote(size_t n, double lo, double hi) {
    char note[96];
    if (n == 1) return "1 run";
    std::snprintf(note, sizeof note, "median of %zu runs (wall %.3f .. %.3f s)", n, lo, hi);
    return note;
}

// A snapshot directory holding `copies` copies of the snapshot's buffer: every
// file of the snapshot linked, the buffer's file written `copies` times over.
// Empty, with `why`, where that cannot be done.
std::string copiesSnapshot(const Snapshot& s, const std::string& snapshotDir, const std::string& tmp,
                           unsigned copies, std::string& why) {
    auto ini = EtmSnapshot::read(snapshotDir);
    if (!ini) {
        why = ini.error().message;
        return {};
    }
    const SnapshotBuffer* buffer = ini->buffer(s.bufferName);
    if (!buffer) {
        why = "no buffer " + s.bufferName + " in " + snapshotDir + "/trace.ini";
        return {};
    }
    if (buffer->file.find('/') != std::string::npos) {
        why = "the buffer file " + buffer->file + " is in a subdirectory (only a top-level one is replaced)";
        return {};
    }
    if (s.input == EtmInput::Formatted && s.buffer.size() % 16 != 0) {
        why = "the buffer is " + std::to_string(s.buffer.size()) +
              " bytes, not whole 16-byte frames: copy k + 1 would not start on a frame";
        return {};
    }
    const std::string dir = tmp + "/snapshot-x" + std::to_string(copies);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::filesystem::path source = std::filesystem::absolute(snapshotDir);
    for (const auto& entry : std::filesystem::directory_iterator(source)) {
        const std::string name = entry.path().filename().string();
        if (name == buffer->file) continue;
        std::error_code ec;
        std::filesystem::create_symlink(entry.path(), dir + "/" + name, ec);
        if (ec) {
            why = dir + "/" + name + ": " + ec.message();
            return {};
        }
    }
    std::ofstream out(dir + "/" + buffer->file, std::ios::binary);
    for (unsigned k = 0; k < copies && out; ++k)
        out.write(reinterpret_cast<const char*>(s.buffer.data()), std::streamsize(s.buffer.size()));
    out.close();
    if (!out) {
        why = dir + "/" + buffer->file + ": cannot write";
        return {};
    }
    return dir;
}

// (d) on `dir`: the median of `runs` runs of the whole process.
Lister timeLister(const std::string& dir, const std::string& cwd, unsigned runs, uint64_t instructions,
                  uint64_t ranges, uint64_t bytes) {
    Lister l;
    l.f.name = "(d) trc_pkt_lister -decode_only";
    if (std::system("command -v trc_pkt_lister >/dev/null 2>&1") != 0) {
        l.f.note = "trc_pkt_lister not found (Debian: libopencsd-bin)";
        return l;
    }
    const std::string cmd = "cd '" + cwd + "' && trc_pkt_lister -ss_dir '" + dir +
                            "' -decode_only -logstdout -logfilename /dev/null >/dev/null 2>&1";
    std::vector<Figure> times;
    for (unsigned i = 0; i < std::max(1u, runs); ++i) {
        Figure f = l.f;
        const double c0 = bench::rusageCpuSeconds(RUSAGE_CHILDREN);
        const auto t0 = Clock::now();
        const int rc = std::system(cmd.c_str());
        f.wall = since(t0);
        if (rc != 0) {
            l.f.note = "exit status " + std::to_string(rc);
            return l;
        }
        f.cpu = bench::rusageCpuSeconds(RUSAGE_CHILDREN) - c0;
        times.push_back(f);
    }
    auto wall = [](const Figure& f) { return f.wall; };
    l.f = medianRun(times, wall);
    l.f.instructions = instructions;
    l.f.ranges = ranges;
    l.f.bytes = bytes;
    std::sort(times.begin(), times.end(), [](const Figure& x, const Figure& y) { return x.wall < y.wall; });
    l.f.note = runsNote(times.size(), times.front().wall, times.back().wall);
    l.ran = true;
    return l;
}

// trc_pkt_lister's own count of a snapshot's ranges and instructions (one untimed run).
std::pair<uint64_t, uint64_t> listerCounts(const std::string& dir, const std::string& cwd) {
    const std::string cmd = "cd '" + cwd + "' && trc_pkt_lister -ss_dir '" + dir +
                            "' -decode_only -logstdout -logfilename /dev/null 2>/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {0, 0};
    uint64_t ranges = 0, instructions = 0;
    char line[1024];
    while (std::fgets(line, sizeof line, p)) {
        if (!std::strstr(line, "OCSD_GEN_TRC_ELEM_INSTR_RANGE")) continue;
        ++ranges;
        if (const char* n = std::strstr(line, "num_i(")) instructions += std::strtoull(n + 6, nullptr, 10);
    }
    pclose(p);
    return {ranges, instructions};
}

// ---------------------------------------------------------------- verdicts

void verdict(const char* what, double value, double target, const char* note = "") {
    std::printf("  %-6s %-58s %7.2f (target >= %.2f)%s%s\n", value >= target ? "PASS" : "BELOW", what, value,
                target, *note ? "  " : "", note);
}

// The window of copy k: the time of its AUX buffer (the bytes of copy k are
// interpolated between the times of AUX records k - 1 and k) less a nanosecond
// at each end, so that decodeSpans selects exactly its segments (the copy before
// ends ~10 ns before it, the copy after starts at its end).
DecodeWindow copyWindow(unsigned k) {
    DecodeWindow w;
    w.begin = kStartTime + uint64_t(k) * kBufferNs + 1;
    w.end = kStartTime + uint64_t(k + 1) * kBufferNs - 1;
    return w;
}

// (a), (a') and (b) interleaved copy by copy (in rotating order), so that a
// machine whose speed drifts (frequency, neighbours) affects each alike.
void interleaved(const Snapshot& s, const PerfDataReader& file, unsigned copies, Run& r) {
    r.a = {"(a) bare OpenCSD (C API, buffer accessors)"};
    r.a2 = {"(a') etm/EtmDecoder, no-op sink"};
    r.b = {};
    r.b.open.name = "(b) auxscope spans, 1 thread: of which open";
    r.b.decode.name = "(b) auxscope spans, 1 thread: open + decode";
    auto bare = timed(r.a, [&] { return std::make_unique<BareOpenCsd>(s); });
    auto wrapped = timed(r.a2, [&] { return std::make_unique<WrappedOpenCsd>(s); });
    auto session = timed(r.b.open, [&] { return AuxTraceSession::open(file); });
    if (!session) fail(session.error().message);
    DecodeStats st;
    for (unsigned k = 0; k < copies; ++k) {
        for (unsigned i = 0; i < 3; ++i) {
            switch ((k + i) % 3) {
                case 0:
                    timed(r.a, [&] { return bare->decodeCopy(); });
                    break;
                case 1:
                    timed(r.a2, [&] { return wrapped->decodeCopy(k); });
                    break;
                default:
                    timedWithWorkers(r.b.decode, [&] {
                        DecodedSpans d = (*session)->decodeSpans(copyWindow(k), 1);
                        st += d.decodedStats;
                        r.b.phases.lookupSeconds += d.phases.lookupSeconds;
                        r.b.phases.decodeSeconds += d.phases.decodeSeconds;
                        r.b.phases.mergeSeconds += d.phases.mergeSeconds;
                        r.b.phases.joinSeconds += d.phases.joinSeconds;
                        for (const auto& [tid, store] : d.threads)
                            r.b.spans += store.size();
                        return 0;
                    });
                    break;
            }
        }
    }
    const Counts ca = bare->counts, ca2 = wrapped->counts();
    timed(r.a, [&] { return bare.reset(), 0; });
    timed(r.a2, [&] { return wrapped.reset(), 0; });
    const uint64_t bytes = uint64_t(copies) * s.buffer.size();
    r.a.instructions = ca.instructions, r.a.ranges = ca.ranges, r.a.bytes = bytes;
    r.a.note = std::to_string(ca.errors) + " error responses";
    r.a2.instructions = ca2.instructions, r.a2.ranges = ca2.ranges, r.a2.bytes = bytes;
    r.a2.note = std::to_string(ca2.errors) + " decode errors";
    r.b.decode.instructions = st.instructions, r.b.decode.ranges = st.blocks,
    r.b.decode.bytes = st.traceBytes;
    r.b.segments = st.segments;
    uint64_t gaps = 0;
    for (const auto& [reason, n] : st.gaps)
        gaps += n;
    char note[200];
    std::snprintf(note, sizeof note,
                  "%" PRIu64 " windows/segments, %" PRIu64 " spans, %" PRIu64 " gaps, %" PRIu64
                  " decode errors",
                  r.b.segments, r.b.spans, gaps, st.decodeErrors);
    r.b.decode.note = note;
    // Set-up included, as (a) includes its decode tree's.
    r.b.decode.wall += r.b.open.wall;
    r.b.decode.cpu += r.b.open.cpu;
}

// One trace: (a), (a'), (b) interleaved, `runs` passes; (c) and (a*) `runs`
// runs; the lister's figure (`runs` runs on the same input) given. Every column is
// its median run.
// (i) The cost of decoding in worker processes (spans/IsolatedDecode.h: a crash
// or hang of OpenCSD ends only its segment): (b) and (c) isolated and
// in-process, `runs` interleaved runs of each, medians; target <= 5 % slower.
unsigned isolationRuns = 3;
bool isolationFailed = false;
void isolationCost(const PerfDataReader& file) {
    if (!isolationRuns) return;
    std::printf(
        "  (i) decoding in worker processes against in-process (%u interleaved runs each, medians):\n",
        isolationRuns);
    for (unsigned threads : {1u, 0u}) {
        std::vector<double> on, off, cpuOn, cpuOff;
        uint64_t insOn = 0, insOff = 0;
        for (unsigned run = 0; run < isolationRuns; ++run)
            for (bool isolate : {run % 2 == 0, run % 2 != 0}) {
                SpanFigure f = auxscopeSpans(file, "", threads, isolate);
                (isolate ? on : off).push_back(f.decode.wall - f.open.wall);
                (isolate ? cpuOn : cpuOff).push_back(f.decode.cpu - f.open.cpu);
                (isolate ? insOn : insOff) = f.decode.instructions;
            }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        const double mOn = median(on), mOff = median(off);
        const double slower = mOff > 0 ? (mOn / mOff - 1) * 100 : 0.0;
        const double cOn = median(cpuOn), cOff = median(cpuOff);
        std::printf(
            "  %-6s (i) %-9s decode in-process %.3f s, in worker processes %.3f s: %+.1f %% (target <= +5 %%;"
            " %s instructions); cpu time (workers included) %.3f s / %.3f s: %+.1f %% [%s]\n",
            slower <= 5 ? "PASS" : "BELOW", threads == 1 ? "1 thread" : "all cores", mOff, mOn, slower,
            insOn == insOff ? "same" : "DIFFERENT", cOff, cOn, cOff > 0 ? (cOn / cOff - 1) * 100 : 0.0,
            load().c_str());
        if (insOn != insOff) isolationFailed = true;
    }
}

Run runOne(const Snapshot& s, const std::string& perfData, unsigned copies, unsigned runs,
           const Lister& lister) {
    Run r;
    auto file = PerfDataReader::open(perfData);
    if (!file) fail(file.error().message);
    if (runs > 1)
        std::printf("  (every column: the median of %u runs; (a), (a'), (b) in %u interleaved passes)\n",
                    runs, runs);
    else
        std::printf("  (every column: 1 run)\n");
    std::vector<Figure> as, a2s, aAlls;
    std::vector<SpanFigure> bs, cs;
    for (unsigned p = 0; p < runs; ++p) {
        Run t;
        interleaved(s, *file, copies, t);
        as.push_back(t.a), a2s.push_back(t.a2), bs.push_back(t.b);
    }
    auto wall = [](const Figure& f) { return f.wall; };
    auto spanWall = [](const SpanFigure& f) { return f.decode.wall; };
    r.a = medianRun(as, wall);
    r.a2 = medianRun(a2s, wall);
    r.b = medianRun(bs, spanWall);
    print(r.a);
    print(r.a2);
    print(r.b.decode);
    print(r.b.open);
    for (unsigned i = 0; i < runs; ++i)
        cs.push_back(auxscopeSpans(*file, "(c) auxscope spans, all cores", 0));
    r.c = medianRun(cs, spanWall);
    print(r.c.decode);
    isolationCost(*file);
    if (copies > 1) {
        for (unsigned i = 0; i < runs; ++i)
            aAlls.push_back(
                bareOpenCsdAllCores(s, copies, std::max(1u, std::thread::hardware_concurrency())));
        r.aAll = medianRun(aAlls, wall);
        print(r.aAll);
    }
    r.lister = lister.f;
    print(r.lister);
    return r;
}

// FAIL (and exit status 3) when a column decoded other instructions or ranges than
// its anchor: the ratios would compare different work.
bool countsFailed = false;
void sameCounts(const char* what, const Figure& f, uint64_t instructions, uint64_t ranges) {
    const bool same = f.instructions == instructions && f.ranges == ranges;
    countsFailed |= !same;
    std::printf("  %-6s %-58s %" PRIu64 " instructions / %" PRIu64 " ranges (anchor %" PRIu64 " / %" PRIu64
                ")\n",
                same ? "PASS" : "FAIL", what, f.instructions, f.ranges, instructions, ranges);
}

void verdicts(const Run& r, unsigned cores, bool oneSegment) {
    const Figure &a = r.a, &b = r.b.decode, &c = r.c.decode, &l = r.lister;
    verdict("(b) / (a), wall", a.insnPerS() > 0 ? b.insnPerS() / a.insnPerS() : 0, 0.9);
    verdict("(b) / (a), cpu time", a.insnPerCpuS() > 0 ? b.insnPerCpuS() / a.insnPerCpuS() : 0, 0.9);
    if (l.wall > 0) {
        verdict("(b) / trc_pkt_lister, wall", l.insnPerS() > 0 ? b.insnPerS() / l.insnPerS() : 0, 5);
        verdict("(b) / trc_pkt_lister, cpu time", l.insnPerCpuS() > 0 ? b.insnPerCpuS() / l.insnPerCpuS() : 0,
                5);
    } else {
        std::printf("  n/a    (b) / trc_pkt_lister: %s\n", l.note.c_str());
    }
    const std::string what = "(c) / (" + std::to_string(cores) + " cores x (b)), wall";
    if (oneSegment)
        std::printf("  n/a    %-58s %7.2f (one AUX buffer is one segment: nothing to spread)\n", what.c_str(),
                    b.insnPerS() > 0 ? c.insnPerS() / (cores * b.insnPerS()) : 0);
    else {
        char used[96];
        std::snprintf(used, sizeof used, "(%.1f cores busy: cpu %.1f s / wall %.1f s)",
                      c.wall > 0 ? c.cpu / c.wall : 0, c.cpu, c.wall);
        verdict(what.c_str(), b.insnPerS() > 0 ? c.insnPerS() / (cores * b.insnPerS()) : 0, 0.8, used);
    }
    if (!oneSegment && r.aAll.wall > 0)
        std::printf(
            "  info   (a*) / (%u cores x (a)), wall %.2f: how far OpenCSD alone scales here (%.1f cores "
            "busy)\n",
            cores, a.insnPerS() > 0 ? r.aAll.insnPerS() / (cores * a.insnPerS()) : 0,
            r.aAll.wall > 0 ? r.aAll.cpu / r.aAll.wall : 0);
    std::printf("  info   (b) / (a') (auxscope's wrapper alone), wall %.2f, cpu time %.2f\n",
                r.a2.insnPerS() > 0 ? b.insnPerS() / r.a2.insnPerS() : 0,
                r.a2.insnPerCpuS() > 0 ? b.insnPerCpuS() / r.a2.insnPerCpuS() : 0);
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_etm_decode: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--snapshot")
            o.snapshot = next();
        else if (a == "--copies")
            o.copies = unsigned(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--dir")
            o.tmp = next();
        else if (a == "--repeat")
            o.repeat = std::max(1u, unsigned(std::strtoul(next().c_str(), nullptr, 0)));
        else if (a == "--repeat-copies")
            o.repeatCopies = std::max(1u, unsigned(std::strtoul(next().c_str(), nullptr, 0)));
        else if (a == "--lister-count-all")
            o.listerCountAll = true;
        else if (a == "--isolation-runs")
            isolationRuns = unsigned(std::strtoul(next().c_str(), nullptr, 0));
        else if (a == "--no-lister")
            o.lister = false;
        else if (a == "--keep")
            o.keep = true;
        else if (a == "--threads-list")
            o.threadsList = bench::threadsListOption(next(), "bench_etm_decode");
        else if (a == "--scaling-only")
            o.scalingOnly = true;
        else {
            std::printf(
                "usage: bench_etm_decode [--snapshot DIR (bugfix-exact-match)] [--copies N (32)]\n"
                "                        [--dir DIR] [--repeat N (3)] [--repeat-copies N (1)] [--no-lister]\n"
                "                        [--lister-count-all] [--keep] [--isolation-runs N (3, 0: none)]\n"
                "                        [--threads-list N,N,... (the scaling section's thread counts, 0: "
                "all "
                "cores)]\n"
                "                        [--scaling-only (the N copies' scaling section alone, "
                "--repeat-copies "
                "runs each)]\n"
                "  every column is the median of --repeat runs on the snapshot, of --repeat-copies runs on\n"
                "  the N copies; --lister-count-all counts trc_pkt_lister's instructions on the N copies\n"
                "  (N x ~12 s of its text) instead of on 2 copies\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    o.copies = std::max(1u, o.copies);
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    std::printf("bench_etm_decode: %u cores, %s\n", cores, load().c_str());
    if (!std::filesystem::exists(o.snapshot + "/snapshot.ini")) {
        std::printf("bench_etm_decode: snapshot data missing: %s/snapshot.ini (skipped)\n",
                    o.snapshot.c_str());
        return 0;
    }
    const Snapshot s = readSnapshot(o.snapshot);

    bool removeDir = false;
    if (o.tmp.empty()) {
        const char* t = std::getenv("TMPDIR");
        std::string tmpl = std::string(t && *t ? t : "/tmp") + "/bench-etm-decode-XXXXXX";
        if (!mkdtemp(tmpl.data())) fail("mkdtemp: " + std::string(std::strerror(errno)));
        o.tmp = tmpl;
        removeDir = !o.keep;
    }
    std::filesystem::create_directories(o.tmp);

    // The trace ID that carries the trace: the one with the most ranges in the snapshot decode.
    std::ostream nowhere(nullptr);
    auto t0 = Clock::now();
    auto summary = decodeSnapshot(o.snapshot, EtmOutputFormat::Ranges, nowhere);
    if (!summary) fail(summary.error().message);
    const double snapshotDecode = since(t0);
    uint64_t snapRanges = 0, snapInsns = 0;
    uint8_t busyId = 0;
    uint64_t busyRanges = 0;
    for (const EtmBufferSummary& b : summary->buffers)
        for (const auto& [id, c] : b.traceIds) {
            snapRanges += c.ranges;
            snapInsns += c.instructions;
            if (c.ranges > busyRanges) busyRanges = c.ranges, busyId = id;
        }
    int cpu = -1;
    for (size_t i = 0; i < s.sources.size(); ++i)
        if (s.sources[i].config->traceId() == busyId) cpu = s.cpus[i];
    if (cpu < 0) fail("no source with trace ID " + hex(busyId));
    std::printf("\n== snapshot %s\n", o.snapshot.c_str());
    std::printf(
        "  buffer %s: %zu bytes, %zu sources, %zu memory dumps; trace ID %s (cpu %d) carries the trace\n",
        s.bufferName.c_str(), s.buffer.size(), s.sources.size(), s.dumps.size(), hex(busyId).c_str(), cpu);
    std::printf("  snapshot decode (etm/EtmSnapshotDecode): %" PRIu64 " ranges, %" PRIu64
                " instructions (%.2f s, with the ranges listing)\n",
                snapRanges, snapInsns, snapshotDecode);
    std::printf(
        "  (issue 12 says \"22.7 M instructions in 5.2 M ranges\": the snapshot holds %.2f M in %.2f M)\n",
        double(snapInsns) / 1e6, double(snapRanges) / 1e6);

    const std::string name = std::filesystem::path(o.snapshot).filename().string();
    const std::vector<ptsynth::PtSynthMapping> elfs = dumpElfs(s, o.tmp + "/" + name + "-dump");
    const std::string one = o.tmp + "/" + name + "-x1.data";
    const std::string many = o.tmp + "/" + name + "-x" + std::to_string(o.copies) + ".data";
    writePerfData(s, elfs, cpu, 1, one);
    writePerfData(s, elfs, cpu, o.copies, many);
    std::printf("  wrote %s (%zu ELF files of the memory dumps, the first at %s..%s) and %s, %s\n",
                one.c_str(), elfs.size(), hex(elfs[0].start).c_str(), hex(elfs[0].end).c_str(), many.c_str(),
                load().c_str());

    // The check before any timing: the perf.data decodes as the snapshot does.
    {
        auto file = PerfDataReader::open(one);
        if (!file) fail(file.error().message);
        auto session = AuxTraceSession::open(*file);
        if (!session) fail(session.error().message);
        for (const std::string& n : (*session)->traceNotes())
            std::printf("  note (trace): %s\n", n.c_str());
        for (const std::string& n : (*session)->imageNotes())
            std::printf("  note (images): %s\n", n.c_str());
        const DecodeStats st = (*session)->decodeSpans(DecodeWindow{}, 0).decodedStats;
        Figure check{"the perf.data through AuxTraceSession"};
        check.instructions = st.instructions, check.ranges = st.blocks;
        sameCounts("check: the perf.data vs the snapshot decode", check, snapInsns, snapRanges);
    }
    if (o.scalingOnly) {
        auto file = PerfDataReader::open(many);
        if (!file) fail(file.error().message);
        std::printf("\n== scaling: %u copies (%s, %.1f MB of trace), %u cores here\n", o.copies, many.c_str(),
                    double(s.buffer.size()) * o.copies / 1e6, cores);
        std::vector<unsigned> list = o.threadsList.empty() ? std::vector<unsigned>{1, 0} : o.threadsList;
        if (!scalingSection(*file, "ETM decode to spans (open + decode)", list, o.repeatCopies))
            countsFailed = true;
        if (removeDir) std::filesystem::remove_all(o.tmp);
        std::printf("\nbench_etm_decode: done, %s%s\n", load().c_str(), countsFailed ? "; FAIL" : "");
        return countsFailed ? 3 : 0;
    }

    // The lister on the snapshot and on a snapshot directory of the N copies,
    // with its own counts: on the snapshot, and on 2 copies (or on the N copies
    // with --lister-count-all), which must be exactly that many times the
    // snapshot's.
    const uint64_t bytes1 = s.buffer.size(), bytesN = uint64_t(o.copies) * s.buffer.size();
    Lister lister1, listerN;
    lister1.f.name = listerN.f.name = "(d) trc_pkt_lister -decode_only";
    Figure listerCount1{"trc_pkt_lister's own count, the snapshot"}, listerCountK;
    std::string manyDir;
    unsigned countCopies = 0;
    if (!o.lister) {
        lister1.f.note = listerN.f.note = "--no-lister";
    } else if (std::system("command -v trc_pkt_lister >/dev/null 2>&1") != 0) {
        lister1.f.note = listerN.f.note = "trc_pkt_lister not found (Debian: libopencsd-bin)";
    } else {
        std::string why;
        manyDir = copiesSnapshot(s, o.snapshot, o.tmp, o.copies, why);
        countCopies = o.listerCountAll ? o.copies : std::min(2u, o.copies);
        std::string countDir = countCopies == o.copies ? manyDir
                               : countCopies == 1      ? o.snapshot
                                                  : copiesSnapshot(s, o.snapshot, o.tmp, countCopies, why);
        auto [lr, li] = listerCounts(o.snapshot, o.tmp);
        listerCount1.instructions = li, listerCount1.ranges = lr;
        if (!countDir.empty() && countCopies > 1) {
            auto [kr, ki] = listerCounts(countDir, o.tmp);
            listerCountK.name = "trc_pkt_lister's own count, " + std::to_string(countCopies) + " copies";
            listerCountK.instructions = ki, listerCountK.ranges = kr;
        }
        std::printf("  trc_pkt_lister's own count: %" PRIu64 " ranges, %" PRIu64 " instructions (snapshot)",
                    lr, li);
        if (countCopies > 1)
            std::printf("; %" PRIu64 " ranges, %" PRIu64 " instructions (%u copies)", listerCountK.ranges,
                        listerCountK.instructions, countCopies);
        std::printf(" [%s]\n", load().c_str());
        lister1 = timeLister(o.snapshot, o.tmp, o.repeat, li, lr, bytes1);
        if (manyDir.empty()) {
            listerN.f.note = "cannot run on the " + std::to_string(o.copies) + " copies: " + why;
        } else {
            listerN = timeLister(manyDir, o.tmp, o.repeatCopies, snapInsns * o.copies, snapRanges * o.copies,
                                 bytesN);
            listerN.f.name += " (" + std::to_string(o.copies) + "-copy snapshot)";
            if (countCopies == o.copies)
                listerN.f.instructions = listerCountK.instructions, listerN.f.ranges = listerCountK.ranges;
        }
    }

    std::printf("\n== 1 copy: the snapshot's buffer as one AUX buffer (%s)\n", one.c_str());
    Run r1 = runOne(s, one, 1, o.repeat, lister1);
    std::printf("  counts against the snapshot decode (the anchor of every column):\n");
    sameCounts("(a) bare OpenCSD", r1.a, snapInsns, snapRanges);
    sameCounts("(a') etm/EtmDecoder", r1.a2, snapInsns, snapRanges);
    sameCounts("(b) auxscope spans, 1 thread", r1.b.decode, snapInsns, snapRanges);
    sameCounts("(c) auxscope spans, all cores", r1.c.decode, snapInsns, snapRanges);
    if (lister1.ran) sameCounts("(d) trc_pkt_lister, its own count", listerCount1, snapInsns, snapRanges);
    verdicts(r1, cores, true);

    std::printf("\n== %u copies, one AUX buffer each (%s, %.1f MB of trace)\n", o.copies, many.c_str(),
                double(s.buffer.size()) * o.copies / 1e6);
    if (!manyDir.empty())
        std::printf("  trc_pkt_lister on %s: the snapshot's files, its buffer %u times over\n",
                    manyDir.c_str(), o.copies);
    Run rn = runOne(s, many, o.copies, o.repeatCopies, listerN);
    const uint64_t expect = snapInsns * o.copies, expectRanges = snapRanges * o.copies;
    std::printf("  counts against %u x the snapshot decode:\n", o.copies);
    sameCounts("(a) bare OpenCSD", rn.a, expect, expectRanges);
    sameCounts("(a') etm/EtmDecoder", rn.a2, expect, expectRanges);
    sameCounts("(b) auxscope spans, 1 thread", rn.b.decode, expect, expectRanges);
    sameCounts("(c) auxscope spans, all cores", rn.c.decode, expect, expectRanges);
    sameCounts("(a*) bare OpenCSD, every core", rn.aAll, expect, expectRanges);
    if (listerN.ran && countCopies > 1) {
        const std::string what = "(d) trc_pkt_lister, its own count on " + std::to_string(countCopies) +
                                 " copies" + (countCopies < o.copies ? " (the copies decode as copies)" : "");
        sameCounts(what.c_str(), listerCountK, snapInsns * countCopies, snapRanges * countCopies);
    }
    verdicts(rn, cores, false);
    if (o.threadsList.empty()) {
        bench::printScaling("ETM decode to spans, (b) and (c) (open + decode)",
                            {scalingRun(rn.b), scalingRun(rn.c)});
    } else {
        auto file = PerfDataReader::open(many);
        if (!file) fail(file.error().message);
        if (!scalingSection(*file, "ETM decode to spans (open + decode)", o.threadsList, o.repeatCopies))
            countsFailed = true;
    }

    if (removeDir)
        std::filesystem::remove_all(o.tmp);
    else
        std::printf("\n  files kept in %s\n", o.tmp.c_str());
    std::printf("\nbench_etm_decode: done, %s%s\n", load().c_str(),
                countsFailed ? "; FAIL: a column decoded other instructions or ranges than its anchor" : "");
    if (isolationFailed) std::printf("bench_etm_decode: FAIL: (i) isolated and in-process decodes differ\n");
    return countsFailed || isolationFailed ? 3 : 0;
}
