// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/DecodeCommand.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "OptionParser.h"
#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAuxTrace.h"
#include "cli/DecodeOptions.h"
#include "etm/EtmSnapshotDecode.h"
#include "export/LineBuffer.h"
#include "export/SpanListing.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtDecodeRequest.h"
#include "spe/SpeRecordCsv.h"

namespace auxscope {
namespace {

const char* kHelp =
    R"(usage: auxscope decode PERF.DATA [--format spans|insn|ranges|packets|records|summary] [--cpu N] [--tid T]
                       [--time A-B] [--symfs DIR] [--vmlinux FILE] [--kcore DIR|FILE]
                       [--kallsyms FILE] [--binary-dir DIR] [--debug-dir DIR]
                       [--debuginfod URL] [--no-debuginfod] [--jit-dump FILE] [--perf-map FILE]
                       [-j N] [--pt-decoder walk|block]
       auxscope decode --pt FILE [--raw BIN:ADDR]... [--elf ELF[:ADDR]]...
                       [--cpu F/M[/S]] [--mtc-freq N] [--nom-freq N] [--cpuid-15 EAX,EBX]
                       [--format ptxed|packets] [options]
       auxscope decode SNAPSHOT_DIR [--format ranges|packets]

Options are read as perf reads them: --opt VALUE or --opt=VALUE; numbers of CPUs,
threads and -j are decimal (--pt's values in C syntax, as ptxed reads them: 0x...).

A perf.data with Intel PT AUX data (recorded by perf or auxscope) is decoded with
libipt's block decoder, one with CoreSight ETM/ETE AUX data (cs_etm, recorded by perf
or simpleperf; frame formatted or raw) with OpenCSD, into per-thread call stacks,
using the file's sideband (threads, context switches, mmaps) and the mapped ELF files:
  --format spans    (default) every thread's call-stack spans: start/end (perf time, ns),
                    depth, instructions, function; gaps with their reason
  --format insn     one line per basic block: time, cpu, tid, first-last address,
                    instructions, how the block ends, function
  --format ranges   CoreSight only: one executed instruction range per line: cpu, trace
                    ID, first and last instruction address, instruction count, ISA
  --format packets  per CPU buffer, the packet listing and the packet counts per type
                    (Arm SPE: per AUXTRACE buffer, line for line as perf report dumps them)
An Arm SPE file (arm_spe) decodes to records, one per sampled operation:
  --format summary  (default for SPE) records per CPU, per operation class, per data
                    source; gaps with their reason
  --format records  CSV: a header row, then one row per record (by time), every field
                    of spe::SpeRecord in its order; integers decimal, flags 0/1, opClass
                    as its number (0 other, 1 load/store, 2 branch, 255 none)
  --cpu N           only that CPU's trace        --tid T    only that thread
  --time A-B        only [A, B] in perf time: N ns, S.F seconds (as perf script prints
                    times), +N / +S.F after the recording's start; either side may be
                    empty, and perf's A,B works too (auxscope report --help)
  --symfs DIR       look for mapped files under DIR (after ~/.debug/.build-id by
                    build-id, before their recorded path)
  --vmlinux FILE    the kernel's code and symbols from its ELF, moved by the KASLR offset
                    (the recorded kernel map's address of _text minus the vmlinux's)
  --kcore DIR|FILE  the kernel's code from a kcore: perf record --kcore's copy (DIR with
                    kcore, kallsyms, modules) or /proc/kcore (the boot that recorded);
                    names from its kallsyms. Without either: perf's build-id cache, then
                    /proc/kcore when the running kernel has the recorded build-id
  --kallsyms FILE   kernel symbols (with --kcore FILE, or names without code)
  --jit-dump FILE   a JIT's jitdump (perf's format, jit-<pid>.dump): names of its
                    functions and their code bytes, so the trace decodes through JIT
                    code (no perf inject --jit needed). Found without the option: the
                    dump the recording's mmaps name (perf's marker mmap), or
                    jit-<pid>.dump beside PERF.DATA
  --perf-map FILE   a perf map ("START SIZE name" lines, hex): names of JIT code.
                    Found without the option: /tmp/perf-<pid>.map, perf-<pid>.map
                    beside PERF.DATA. Both options may be given more than once
%LOOKUP%  -j N              decode threads (default: all CPUs)
  --pt-decoder walk|block  Intel PT spans through auxscope's flow walker over libipt's
                    query decoder (default, about twice as fast), or through libipt's
                    block decoder (the same spans; for comparison)

An OpenCSD / DS-5 CoreSight trace snapshot (a directory with snapshot.ini, trace.ini,
the device .ini files, trace buffers and memory dumps; ETMv3, PTM, ETMv4, ETE) is
decoded with OpenCSD, every trace buffer with the snapshot's memory dumps:
  --format ranges   (default) one executed instruction range per line: trace ID, first
                    and last instruction address, instruction count, ISA (what
                    trc_pkt_lister -decode_only prints as OCSD_GEN_TRC_ELEM_INSTR_RANGE)
  --format packets  the protocol packets of each trace ID, as trc_pkt_lister lists them
For call-stack spans (--format spans|insn), the timeline and reports, convert the
snapshot to a cs_etm perf.data first: auxscope-etmsnap SNAPSHOT_DIR -o OUT.data.
The notes (sources without a decoder, missing memory dumps) and the counts per trace ID
go to stderr.

Raw Intel PT trace bytes (an AUX buffer, --pt) are decoded with libipt as its tools do.
  --format packets  one line per packet, as libipt's ptdump prints them
  --format ptxed    the instruction flow (default), as libipt's ptxed --no-inst prints it:
                    one address per instruction, [events] in between

Trace and code:
  --pt FILE[:FROM[-TO]]       the trace (or only that byte range of it); FILE alone also works
  --raw BIN[:FROM[-TO]]:ADDR  raw code bytes loaded at ADDR
  --elf ELF[:BASE]            an ELF's PT_LOAD segments, moved so the lowest lands at BASE

The recording machine (from perf.data's AUXTRACE_INFO and CPUID header, or /proc/cpuinfo):
  --cpu F/M[/S]        family/model/stepping: selects libipt's errata workarounds
  --mtc-freq N         IA32_RTIT_CTL.MTCFreq
  --nom-freq N         max non-turbo ratio (MSR_PLATFORM_INFO[15:8])
  --cpuid-15 EAX,EBX   CPUID leaf 0x15 (TSC/CTC ratio); also --cpuid-0x15.eax N, --cpuid-0x15.ebx N
  --filter:addrN_cfg C, --filter:addrN_a A, --filter:addrN_b B   address filter N (0-3)

Packets (ptdump's options): --no-pad --no-timing --no-cyc --no-offset --raw-bytes --lastip
  --exec-mode --time --tcal --time-delta --no-tcal --no-wall-clock --no-sync --quiet
Flow (ptxed's options): --block-decoder (default) --insn-decoder --block:show-blocks
  --block:end-on-call --block:end-on-jump --event:ip --event:time --event:tick --offset --time
  --check --stat --stat:insn --stat:blocks --quiet (--no-inst is accepted: there is no disassembly)

Perf-event sideband files (ptxed's/ptdump's options): records shown by time between packets
or events; in the flow, per-process images from MMAP records, switched at ITRACE_START,
COMM.EXEC and SWITCH records. The --pevent:* values apply to the files named after them.
  --pevent:primary FILE[:FROM[-TO]]   sideband of the traced CPU (--pevent:secondary: other CPUs)
  --pevent:sample-type N --pevent:time-zero N --pevent:time-shift N --pevent:time-mult N
  --pevent:tsc-offset N --pevent:kernel-start ADDR --pevent:sysroot DIR
  --pevent:vdso-x64 FILE --pevent:vdso-x32 FILE --pevent:vdso-ia32 FILE
  --sb:compact --sb:verbose --sb:filename --sb:offset --sb:time   how records are shown
  --sb:switch (show process image switches) --sb:warn (show sideband warnings)
  (--pevent:kcore is refused: give the kernel's code with --elf or --raw)

Decode errors are printed inline where they happen ([offset: error] for packets,
[offset, ip: error: cause] for the flow), then summarised on stderr with the
file and offset; decoding resumes at the next PSB. Exit status 1 when any part
of the trace could not be decoded, 2 for bad arguments.
)";

// Whether `path` starts like a perf.data (file or pipe mode).
bool looksLikePerfData(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    in.read(magic, sizeof magic);
    return in.gcount() == 8 && std::memcmp(magic, "PERFILE2", 8) == 0;
}

const std::vector<OptionSpec>& perfDecodeOptions() {
    static const std::vector<OptionSpec> table = withDecodeSelectionOptions({
        {"format", 0, OptionArg::Required, "spans|insn|ranges|packets|records|summary", ""},
        {"help", 'h', OptionArg::None, "", ""},
    });
    return table;
}

Expected<PerfDecodeArgs> parsePerfDecodeArgs(const ParsedCommandLine& cl) {
    PerfDecodeArgs out;
    for (const ParsedOption& o : cl.options) {
        if (o.is("format")) {
            const std::string& v = *o.value;
            if (v != "spans" && v != "insn" && v != "packets" && v != "ranges" && v != "records" &&
                v != "summary")
                return makeError("--format " + v +
                                 ": expected spans, insn, ranges, packets, records or summary");
            out.format = v;
        } else if (auto r = applyDecodeSelectionOption(o, out); !r) {
            return r.error();
        }
    }
    if (cl.operands.size() > 1)
        return makeError("more than one file: '" + cl.operands[0] + "', '" + cl.operands[1] + "'");
    out.path = cl.operands.at(0);
    addOpenedFileFolder(out.path, out);
    return out;
}

Expected<SnapshotDecodeArgs> parseSnapshotDecodeArgs(const ParsedCommandLine& cl) {
    SnapshotDecodeArgs out;
    out.dir = cl.operands.at(0);
    if (cl.operands.size() > 1)
        return makeError("'" + cl.operands[1] + "': one snapshot directory at a time ('" + out.dir +
                         "' given)");
    for (const ParsedOption& o : cl.options) {
        if (!o.is("format"))
            return makeError(o.spelling + ": not an option for a snapshot directory (" + out.dir + ")");
        if (*o.value == "ranges") {
            out.format = etm::EtmOutputFormat::Ranges;
        } else if (*o.value == "packets") {
            out.format = etm::EtmOutputFormat::Packets;
        } else {
            return makeError("--format " + *o.value +
                             ": a snapshot decodes to ranges or packets; for spans or insn, make it a "
                             "perf.data first: auxscope-etmsnap " +
                             out.dir + " -o OUT.data");
        }
    }
    return out;
}

void printKernel(const ImageResolver& images, std::ostream& out) {
    if (std::string d = debuginfodSummary(images); !d.empty()) out << d << "\n";
    const ImageResolver::KernelStatus& k = images.kernel();
    if (k.code.empty() && k.symbols.empty()) return;
    char offset[64];
    std::snprintf(offset, sizeof offset, "%s0x%" PRIx64, k.kaslrOffset < 0 ? "-" : "",
                  k.kaslrOffset < 0 ? uint64_t(-k.kaslrOffset) : uint64_t(k.kaslrOffset));
    out << "kernel: code " << (k.code.empty() ? "missing" : k.code) << " (" << k.sections << " ranges, "
        << k.codeBytes << " bytes, KASLR offset " << offset << "), symbols "
        << (k.symbols.empty() ? "none" : k.symbols) << "\n";
}

// The JIT files read (perf maps, jitdumps): what names and code came from where.
void printJit(const ImageResolver& images, std::ostream& out) {
    for (const ImageResolver::JitFileStatus& j : images.jitFiles()) {
        out << "jit: " << (j.dump ? "jitdump " : "perf map ") << j.path;
        if (j.pid >= 0) out << " (pid " << j.pid << ")";
        out << ": " << j.functions << (j.dump ? " functions with code" : " functions named");
        if (j.malformed) out << ", " << j.malformed << " malformed lines";
        if (!j.error.empty()) out << "; " << j.error;
        out << "\n";
    }
}

// Whether an SPE record falls in the --cpu/--tid/--time selection.
bool inWindow(const spe::SpeRecord& r, const DecodeWindow& w) {
    if (w.cpu && r.cpu != *w.cpu) return false;
    if (w.tid && r.tid != *w.tid) return false;
    if ((w.begin > 0 || w.end != UINT64_MAX) && (r.time < w.begin || r.time > w.end)) return false;
    return true;
}

int printSpeRecordsCsv(const spe::SpeRecords& recs, const DecodeWindow& window, std::ostream& out,
                       std::ostream& err) {
    std::string buf(spe::speCsvHeader());
    buf += '\n';
    uint64_t rows = 0;
    for (const spe::SpeRecord& r : recs.records) {
        if (!inWindow(r, window)) continue;
        spe::appendSpeCsvRow(r, buf);
        ++rows;
        if (buf.size() > (1u << 20)) out.write(buf.data(), std::streamsize(buf.size())), buf.clear();
    }
    out.write(buf.data(), std::streamsize(buf.size()));
    err << "records " << rows << " of " << recs.records.size() << ", packets " << recs.stats.packets
        << ", bytes " << recs.stats.bytes << ", gap bytes " << recs.stats.gapBytes << "\n";
    return 0;
}

int printSpeSummary(const spe::SpeRecords& recs, const DecodeWindow& window, std::ostream& out) {
    std::map<int, uint64_t> perCpu;
    std::map<std::string, uint64_t> perOp, perSource;
    uint64_t n = 0, withTime = 0, withThread = 0;
    for (const spe::SpeRecord& r : recs.records) {
        if (!inWindow(r, window)) continue;
        ++n;
        ++perCpu[r.cpu];
        const char* op = r.isLoad                           ? "load"
                         : r.isStore                        ? "store"
                         : r.isBranch                       ? "branch"
                         : r.opClass == spe::OpClass::Other ? "other"
                                                            : "no OP-TYPE";
        ++perOp[op];
        if (r.hasDataSource) ++perSource[spe::dataSourceName(r.dataSource, recs.midrOf(r.cpu))];
        if (r.time) ++withTime;
        if (r.tid >= 0) ++withThread;
    }
    out << "Arm SPE: " << n << " records (" << recs.stats.packets << " packets, " << recs.stats.bytes
        << " bytes); " << withTime << " with a time, " << withThread << " with a thread\n";
    out << "records per CPU:\n";
    for (const auto& [cpu, k] : perCpu)
        out << "  cpu " << cpu << ": " << k << "\n";
    out << "records per operation:\n";
    for (const auto& [op, k] : perOp)
        out << "  " << op << ": " << k << "\n";
    out << "records per data source:\n";
    for (const auto& [source, k] : perSource)
        out << "  " << source << ": " << k << "\n";
    out << "gaps: " << recs.stats.gapBytes << " bytes";
    if (recs.stats.droppedRecords) out << ", " << recs.stats.droppedRecords << " partial records dropped";
    out << "\n";
    for (const auto& [reason, bytes] : recs.stats.gaps)
        out << "  " << reason << ": " << bytes << " bytes\n";
    return 0;
}

void printStats(const DecodeStats& stats, double seconds, std::ostream& out,
                const ImageResolver* images = nullptr) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "decoded %" PRIu64 " segments, %" PRIu64 " trace bytes, %" PRIu64 " blocks, %" PRIu64
                  " instructions in %.3f s (%.1f MB/s)\n",
                  stats.segments, stats.traceBytes, stats.blocks, stats.instructions, seconds,
                  seconds > 0 ? double(stats.traceBytes) / seconds / 1e6 : 0.0);
    out << line;
    if (stats.segmentsRedecoded)
        out << "segments decoded again by libipt's block decoder (decode errors, or flow the walker does "
               "not follow): "
            << stats.segmentsRedecoded << "\n";
    for (const auto& [reason, n] : stats.gaps)
        out << "gaps: " << gapReasonName(reason) << ": " << n << "\n";
    // A decoding library that died on a segment (its worker process, spans/IsolatedDecode.h).
    for (GapReason reason : {GapReason::DecoderCrashed, GapReason::DecoderHung})
        if (auto it = stats.gaps.find(reason); it != stats.gaps.end() && it->second)
            out << "the decoding library " << (reason == GapReason::DecoderCrashed ? "crashed" : "hung")
                << " on " << it->second << (it->second == 1 ? " segment" : " segments")
                << ": each is a gap naming the library and the cause; the other segments decoded\n";
    for (const auto& [file, n] : stats.missingImages) {
        std::string hint = images ? images->missingHint(file) : std::string();
        out << "missing image: " << file << " (" << n << " gaps" << (hint.empty() ? "" : "; " + hint)
            << ")\n";
    }
}

int runPerfDataDecode(PerfDecodeArgs& args) {
    PerfDecodeArgs* parsed = &args;
    auto file = PerfDataReader::open(parsed->path);
    if (!file) {
        std::cerr << "auxscope decode: " << file.error().message << "\n";
        return 1;
    }
    auto session = AuxTraceSession::open(*file, parsed->session);
    if (!session) {
        std::cerr << "auxscope decode: " << session.error().message << "\n";
        return 1;
    }
    AuxTraceSession& s = **session;
    for (const std::string& note : s.traceNotes())
        std::cerr << "auxscope decode: " << parsed->path << ": " << note << "\n";
    for (const std::string& note : s.imageNotes())
        std::cerr << "auxscope decode: " << parsed->path << ": " << note << "\n";
    if (auto r = resolveTime(*parsed, recordingExtent(s).begin); !r) {
        std::cerr << "auxscope decode: " << r.error().message << "\n";
        return 2;
    }
    const DecodeWindow& window = parsed->window;
    auto started = std::chrono::steady_clock::now();
    auto elapsed = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    };
    char line[512];
    if (s.kind() == AuxTraceKind::ArmSpe) {
        const auto& spe = static_cast<SpeAuxTraceSession&>(s);
        if (parsed->format == "packets") return s.listPackets(window.cpu, std::cout, std::cerr);
        if (parsed->format == "records")
            return printSpeRecordsCsv(spe.records(), window, std::cout, std::cerr);
        if (parsed->format.empty() || parsed->format == "summary")
            return printSpeSummary(spe.records(), window, std::cout);
        std::cerr << "auxscope decode: " << parsed->path << ": --format " << parsed->format
                  << ": an Arm SPE file decodes to records (--format summary, records or packets)\n";
        return 2;
    }
    if (parsed->format == "records" || parsed->format == "summary") {
        std::cerr << "auxscope decode: " << parsed->path << ": --format " << parsed->format
                  << " is for Arm SPE files; " << auxTraceKindName(s.kind())
                  << " decodes to spans, insn or packets\n";
        return 2;
    }
    if (parsed->format == "packets") return s.listPackets(window.cpu, std::cout, std::cerr);
    if (parsed->format == "ranges") return s.listRanges(window.cpu, std::cout, std::cerr);
    const FunctionTable& functions = s.functions();
    if (parsed->format == "insn") {
        // One line per block, as "%" PRIu64 " %3d %6d %016" PRIx64 "-%016" PRIx64 " %5" PRIu64
        // " %-10s " then the function printed them.
        LineBuffer text(std::cout);
        uint64_t lines = 0;
        std::vector<Gap> failures;  // segments the decoding library crashed or hung on
        DecodeStats stats = s.forEachBlock(
            window,
            [&](const FlowBlock& b) {
                appendInsnLine(text, b, functions);
                ++lines;
            },
            // One worker process, which decodes the segments in order as this process
            // would: libipt's block boundaries depend on what its caches saw before
            // (2 processes split 25 of 2.2 M blocks of a ptsynth trace differently).
            1, &failures);
        const bool wrote = text.flush();
        for (const Gap& g : failures)
            std::cerr << "auxscope decode: " << failedPieceText(g.cpu, g.traceOffset, g.detail)
                      << ": the blocks of this segment end there\n";
        printStats(stats, elapsed(), std::cerr, &s.images());
        printKernel(s.images(), std::cerr);
        printJit(s.images(), std::cerr);
        for (const std::string& loss : s.lossLines(window.cpu))
            std::cerr << loss;
        if (!wrote) {
            std::cerr << "auxscope decode: writing the blocks of " << parsed->path << " failed after "
                      << lines << " lines: " << std::strerror(errno) << "\n";
            return 1;
        }
        return failures.empty() ? 0 : 1;
    }
    DecodedSpans result = s.decodeSpans(window, parsed->threads);
    double seconds = elapsed();
    size_t spans = 0, bytes = 0;
    for (const auto& [tid, store] : result.threads) {
        spans += store.size();
        bytes += store.spanBytes();
    }
    const unsigned formatThreads =
        parsed->threads ? parsed->threads : std::max(1u, std::thread::hardware_concurrency());
    const auto formatStarted = std::chrono::steady_clock::now();
    const bool wrote = writeSpanListing(result, s.sideband(), functions, formatThreads, std::cout);
    std::cout.flush();
    const double formatSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - formatStarted).count();
    printStats(result.stats, seconds, std::cerr, &s.images());
    printKernel(s.images(), std::cerr);
    printJit(s.images(), std::cerr);
    for (const std::string& loss : s.lossLines(window.cpu))
        std::cerr << loss;
    std::snprintf(line, sizeof line,
                  "%zu spans in %zu threads, %zu bytes of span storage (%.1f bytes/span)\n", spans,
                  result.threads.size(), bytes, spans ? double(bytes) / double(spans) : 0.0);
    std::cerr << line;
    const size_t lines = spans + result.threads.size();
    std::snprintf(line, sizeof line, "output: %zu lines in %.3f s (%.1f M lines/s, %u threads)\n", lines,
                  formatSeconds, formatSeconds > 0 ? double(lines) / formatSeconds / 1e6 : 0.0,
                  formatThreads);
    std::cerr << line;
    if (!wrote || !std::cout) {
        std::cerr << "auxscope decode: writing the spans of " << parsed->path
                  << " failed: " << std::strerror(errno) << "\n";
        return 1;
    }
    return 0;
}

}  // namespace

DecodeInput classifyDecodeInput(const std::string& path) {
    if (etm::isEtmSnapshotDir(path)) return DecodeInput::EtmSnapshot;
    if (looksLikePerfData(path)) return DecodeInput::PerfData;
    return DecodeInput::Other;
}

Expected<DecodeArgs> parseDecodeArgs(const std::vector<std::string>& args,
                                     const DecodeInputClassifier& classify) {
    DecodeArgs out;
    // Raw Intel PT bytes (--pt, --raw, --elf) are decoded as libipt's tools do,
    // with their options; otherwise the operand says which decode it is.
    bool raw = false;
    for (const std::string& a : args)
        for (const char* o : {"--pt", "--raw", "--elf"})
            if (a == o || a.rfind(std::string(o) + "=", 0) == 0) raw = true;
    if (!raw) {
        auto cl = parseCommandLine(perfDecodeOptions(), args);
        if (cl) {
            for (const ParsedOption& o : cl->options)
                if (o.is("help")) {
                    out.help = true;
                    return out;
                }
            if (cl->operands.empty())
                return makeError("no file given (PERF.DATA, SNAPSHOT_DIR or --pt FILE)");
            const DecodeInput kind = classify(cl->operands[0]);
            if (kind == DecodeInput::EtmSnapshot) {
                auto s = parseSnapshotDecodeArgs(*cl);
                if (!s) return s.error();
                out.mode = std::move(*s);
                return out;
            }
            if (kind == DecodeInput::PerfData) {
                auto p = parsePerfDecodeArgs(*cl);
                if (!p) return p.error();
                out.mode = std::move(*p);
                return out;
            }
        }
        // A perf.data or snapshot with an option they do not take: that error.
        if (!cl)
            for (const std::string& a : args)
                if (!a.empty() && a[0] != '-' && classify(a) != DecodeInput::Other) return cl.error();
        // Not a perf.data or a snapshot: raw trace bytes (FILE alone works as --pt FILE).
    }
    for (const std::string& a : args)
        if (a == "-h" || a == "--help") {
            out.help = true;
            return out;
        }
    auto request = parsePtDecodeArguments(args);
    if (!request) return request.error();
    out.mode = std::move(*request);
    return out;
}

int runDecodeCommand(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::cerr << withImageLookupHelp(kHelp);
        return 2;
    }
    auto parsed = parseDecodeArgs(args, classifyDecodeInput);
    if (!parsed) {
        std::cerr << "auxscope decode: " << parsed.error().message << " (auxscope decode --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << withImageLookupHelp(kHelp);
        return 0;
    }
    if (auto* perf = std::get_if<PerfDecodeArgs>(&parsed->mode)) return runPerfDataDecode(*perf);
    if (auto* snapshot = std::get_if<SnapshotDecodeArgs>(&parsed->mode))
        return etm::decodeSnapshot(snapshot->dir, snapshot->format, std::cout, std::cerr);
    const PtDecodeRequest* request = &std::get<PtDecodeRequest>(parsed->mode);
    auto summary = runPtDecode(*request, std::cout);
    std::cout.flush();
    if (!summary) {
        std::cerr << "auxscope decode: " << summary.error().message << "\n";
        return 1;
    }
    // The inline diagnostics are in the listing; repeat the errors where a script sees them.
    size_t errors = 0;
    for (const PtDecodeIssue& issue : summary->issues) {
        if (issue.severity != PtDecodeIssue::Severity::Error) continue;
        if (++errors > 20) continue;
        char offset[64];
        std::snprintf(offset, sizeof offset, "offset 0x%" PRIx64 " (%" PRIu64 ")",
                      issue.offset + request->traceOffset, issue.offset + request->traceOffset);
        std::cerr << "auxscope decode: " << request->tracePath << ": " << offset << ": " << issue.what
                  << "\n";
    }
    if (errors > 20) std::cerr << "auxscope decode: ... and " << errors - 20 << " more errors\n";
    return errors ? 1 : 0;
}

}  // namespace auxscope
