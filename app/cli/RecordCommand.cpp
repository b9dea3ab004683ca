// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/RecordCommand.h"

#include <sys/wait.h>
#include <unistd.h>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include "CaptureControl.h"
#include "Tracefs.h"
#include "cli/JsonString.h"
#include "record/PerfDataWriterCapture.h"
#include "record/ReplaySource.h"

namespace auxscope {
namespace {

CaptureSession* gSession = nullptr;

void onSignal(int) {
    if (gSession) gSession->requestStop();  // writes an eventfd: async-signal-safe
}

const char* kRecordHelp = R"(usage: auxscope record [options] [-- command [args...]]

Captures perf events on every CPU's data ring and prints per-CPU totals.

Target (default: system-wide when no command is given):
  -a, --all-cpus          system-wide, every online CPU
  -C, --cpu LIST          only these CPUs, e.g. 0-3,6
  -p, --pid PID           an existing process (all its threads, and what they spawn)
  -- command ...          launch a command and trace it from its first instruction

Events:
  -e, --event SPEC        perf-style event; repeatable, comma lists allowed:
                          cpu-clock, task-clock, context-switches, page-faults,
                          raw_syscalls:sys_enter, 'sched:*', pmu/term=value,.../u
                          default: cpu-clock sampling; context switches, MMAP2, COMM
                          and fork/exit records are always captured
  -F, --freq HZ           sampling frequency for counting events (default 4000)
  -g                      call stacks on every sample: --call-graph fp
      --call-graph MODE   call stacks on every sample, as perf record takes them
                          (also --call-graph=MODE); the tracking event gets none:
                            fp           frame pointers: the kernel walks them, kernel and
                                         user part in one callchain
                            dwarf[,SIZE] the user registers and SIZE bytes of user stack
                                         per sample (default 8192; a multiple of 8 up to
                                         65528), unwound later with the binaries' DWARF
                                         CFI; the kernel part stays a callchain. A sample
                                         holds ~SIZE bytes: at 4000 Hz 32 MiB/s per busy
                                         CPU, which the default ring drains; what the
                                         kernel could not store shows as lost-rec
                            lbr          Intel's Last Branch Records as the user call
                                         stack: hardware events (-e cycles) on an Intel
                                         PMU with LBR only (not cpu-clock, AMD or most VMs)
                          The summary (and --json) names the mode; nothing is unwound
                          while capturing
      --no-switch         do not record context switches
      --no-realtime       keep the drain thread at normal priority (default: SCHED_FIFO
                          where permitted, so it never waits behind the traced workload)
      --list-events       list symbolic events, PMUs and tracepoints, then exit

Buffers and duration:
  -m, --mmap-pages N[,M]  data ring pages per CPU, a power of two (default 2048 = 8 MiB);
                          M: AUX area pages per CPU (default 1024 = 4 MiB, perf's)
      --filter FILTERS    address filters for the AUX event, perf's syntax, e.g.
                          'filter main @ /usr/bin/prog' or 'tracestop memcpy @ /lib/libc.so.6';
                          symbols are resolved from the ELF; checked against caps/ip_filtering
                          and nr_addr_filters
      --duration SECONDS  stop after this long (default: until Ctrl-C or the command exits)

Replay (no trace hardware needed):
      --replay FILE       feed the AUX trace and sideband of a recorded perf.data (perf's or
                          simpleperf's: intel_pt, cs_etm, ...) through simulated CPUs: drain,
                          statistics, -o file and decode run as in a live capture; the summary
                          and the file say it is a replay
      --replay-speed X    X times the recorded speed (default 1; 0.1: ten times slower), or
                          max: as fast as the drain takes the data
      --replay-loop       start over at the end (demos); stop with Ctrl-C or --duration

Flight recorders (-S: an AUX trace event, -e intel_pt//, cs_etm//, arm_spe//, or --replay;
--overwrite: the sideband, any events):
  -S, --snapshot[=[e]SIZE]  snapshot mode, as perf record -S: the AUX area is overwritten all
                          the time (the sideband is still drained in full) and each trigger copies
                          its newest SIZE bytes per CPU into the output (K, M, G suffixes;
                          default: the whole AUX area). Triggers: SIGUSR2 (kill -USR2 PID) and
                          'snapshot' on the control FIFO. 'e' takes one more when the capture
                          ends (-Se, --snapshot=e4M). The summary counts snapshots per CPU
      --overwrite         sideband flight recorder, as perf record --overwrite: every event
                          writes backward into a read-only data ring (-m) that the kernel
                          overwrites, so it holds the newest history at no drain cost.
                          Records reach the output ONLY at snapshots (SIGUSR2, 'snapshot' on
                          the control FIFO) and when the capture stops; each delivers what is
                          new since the previous one. Needs no AUX event; not with one
      --control fifo:CTL[,ACK]  perf's control FIFOs (mkfifo them first): one command per line
                          written to CTL (snapshot, stop, enable, disable, ping), "ack" written
                          to ACK after each, or "error: ..." for a command it cannot do

Output (default: print the per-CPU summary only):
  -o, --output FILE       also write a perf.data file, streamed while capturing
                          (perf script / perf report read it)
  -z, --compress          zstd-compress the file's records (like perf record -z)
      --json              print the summary as JSON
  -h, --help              this text

Ending: Ctrl-C (SIGINT) or SIGTERM ends the capture as --duration does: the rings are
drained, the file finished (final header, features) and the summary printed. The exit
status is then 0; with a launched command, its exit status when it exited (0 when it was
killed). A CPU that goes offline during the capture stops being traced there (the kernel
detaches its events) and the summary says when.
)";

std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4)
        bytes /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
    return buf;
}

// perf record -S's argument: an optional 'e' (snapshot at exit) then a size in
// bytes with an optional K, M or G suffix (powers of 1024); empty: the whole area.
bool parseSnapshotArg(std::string_view s, bool& onExit, uint64_t& bytes) {
    onExit = !s.empty() && s.front() == 'e';
    if (onExit) s.remove_prefix(1);
    bytes = 0;
    if (s.empty()) return true;
    const std::string text(s);
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
    if (errno || end == text.c_str() || text[0] == '-') return false;
    unsigned shift = 0;
    switch (*end) {
        case '\0':
            break;
        case 'k':
        case 'K':
            shift = 10, ++end;
            break;
        case 'm':
        case 'M':
            shift = 20, ++end;
            break;
        case 'g':
        case 'G':
            shift = 30, ++end;
            break;
        default:
            return false;
    }
    if (*end || v == 0 || v > (~0ull >> shift)) return false;
    bytes = uint64_t(v) << shift;
    return true;
}

bool parseNumberArg(const std::string& s, double& out) {
    char* end = nullptr;
    out = std::strtod(s.c_str(), &end);
    return end && *end == 0 && !s.empty();
}

void listEvents() {
    std::cout
        << "Symbolic events:\n  cpu-clock task-clock page-faults minor-faults major-faults context-switches\n"
           "  cpu-migrations alignment-faults emulation-faults dummy cycles instructions cache-references\n"
           "  cache-misses branches branch-misses bus-cycles ref-cycles (hardware ones need a PMU)\n";
    auto pmus = PmuRegistry::discover();
    std::cout << "PMUs (pmu/terms/):\n";
    for (auto& p : pmus.pmus()) {
        std::cout << "  " << p.name << " (type " << p.type << ")";
        if (!p.format.empty()) {
            std::cout << " terms:";
            for (auto& [n, _] : p.format)
                std::cout << " " << n;
        }
        if (p.isAuxPmu()) std::cout << " [AUX trace]";
        std::cout << "\n";
        if (p.isAuxPmu()) std::cout << auxEventHelp(p);
    }
    auto tp = Tracefs::locate();
    if (!tp) {
        std::cout << "Tracepoints: unavailable: " << tp.error().message << "\n";
        return;
    }
    auto all = Tracefs::listAll();
    std::cout << "Tracepoints (" << all.size() << ", sys:name, globs allowed):\n";
    for (auto& t : all)
        std::cout << "  " << t << "\n";
}

// What the replay fed and left out, for the summary.
std::string formatReplay(const ReplaySource& r, const ReplayOptions& o, bool json) {
    const ReplayProgress p = r.progress();
    std::ostringstream out;
    if (json) {
        out << ",\"replay\":{\"file\":" << jsonString(r.path())
            << ",\"speed\":" << (o.speed.max ? std::string("\"max\"") : std::to_string(o.speed.factor))
            << ",\"loop\":" << (o.loop ? "true" : "false") << ",\"aux_bytes_fed\":" << p.auxBytesFed
            << ",\"aux_bytes_total\":" << p.auxBytesTotal << ",\"records_fed\":" << p.recordsFed
            << ",\"records_total\":" << p.recordsTotal << ",\"recorded_seconds\":" << p.recordedSeconds
            << ",\"passes\":" << p.passesDone << ",\"stopped_early\":" << (p.stoppedEarly ? "true" : "false")
            << ",\"not_replayed\":[";
        bool first = true;
        for (const ReplaySkip& k : r.skipped()) {
            out << (first ? "" : ",") << "{\"type\":" << jsonString(perfRecordTypeName(k.type))
                << ",\"records\":" << k.records << ",\"reason\":" << jsonString(k.reason) << "}";
            first = false;
        }
        out << "]}";
        return out.str();
    }
    char line[256];
    if (o.loop)
        // A loop feeds the file again and again: totals of all passes, recorded time of this one.
        std::snprintf(line, sizeof line,
                      ": %llu AUX bytes and %llu sideband records fed (%.2f passes of %llu bytes and %llu "
                      "records), %llu whole passes (looping)",
                      (unsigned long long)p.auxBytesFed, (unsigned long long)p.recordsFed,
                      p.auxBytesTotal ? double(p.auxBytesFed) / double(p.auxBytesTotal) : 0.0,
                      (unsigned long long)p.auxBytesTotal, (unsigned long long)p.recordsTotal,
                      (unsigned long long)p.passesDone);
    else
        std::snprintf(line, sizeof line,
                      ": %llu of %llu AUX bytes, %llu of %llu sideband records, %.6f of %.6f s of recorded "
                      "time%s",
                      (unsigned long long)p.auxBytesFed, (unsigned long long)p.auxBytesTotal,
                      (unsigned long long)p.recordsFed, (unsigned long long)p.recordsTotal,
                      p.recordedSecondsFed, p.recordedSeconds,
                      p.stoppedEarly ? " (stopped before the end)" : "");
    out << "replay: " << r.path() << " at " << describeReplaySpeed(o.speed) << line << "\n";
    out << "replay: AUX rings:";
    const char* sep = " ";
    for (const ReplayStream& st : r.streams()) {
        out << sep << "cpu " << st.sourceCpu << " " << st.bytes << " B in " << st.transactions
            << " transactions" << (st.auxRecords ? "" : " (fixed chunks)");
        sep = "; ";
    }
    out << "; " << r.simulatedCpus() << " simulated CPUs\n";
    if (!r.skipped().empty()) {
        out << "replay: not replayed:";
        sep = " ";
        for (const ReplaySkip& k : r.skipped()) {
            out << sep << perfRecordTypeName(k.type) << " " << k.records << " (" << k.reason << ")";
            sep = "; ";
        }
        out << "\n";
    }
    for (const std::string& n : r.notes())
        out << "replay note: " << n << "\n";
    return out.str();
}

}  // namespace

std::string formatSummary(const CaptureSummary& s) {
    std::ostringstream o;
    char line[256];
    o << "auxscope record: " << s.target << ", events:";
    for (auto& e : s.events)
        o << " " << e;
    if (s.callGraph.enabled()) o << ", call graph: " << describeCallGraph(s.callGraph);
    std::snprintf(line, sizeof line, ", %.2f s\n", s.seconds);
    o << line;
    std::snprintf(line, sizeof line, "%4s %11s %11s %10s %9s %9s %10s %11s %9s %8s %9s\n", "cpu", "records",
                  "bytes", "samples", "switches", "lost-rec", "lost-smpl", "kernel-lost", "throttle", "ring",
                  "peak-fill");
    o << line;
    auto row = [&](const std::string& cpu, const CpuCounters& c, uint64_t ring, double peak) {
        uint64_t switches = c.byType[PERF_RECORD_SWITCH] + c.byType[PERF_RECORD_SWITCH_CPU_WIDE];
        std::snprintf(
            line, sizeof line, "%4s %11llu %11s %10llu %9llu %9llu %10llu %11llu %9llu %8s %8.1f%%\n",
            cpu.c_str(), (unsigned long long)c.records, human(double(c.bytes)).c_str(),
            (unsigned long long)c.samples, (unsigned long long)switches, (unsigned long long)c.lostRecords,
            (unsigned long long)c.lostSamples, (unsigned long long)c.kernelLost,
            (unsigned long long)c.throttles, ring ? human(double(ring)).c_str() : "", peak);
        o << line;
    };
    double maxPeak = 0;
    for (auto& c : s.cpus) {
        row(std::to_string(c.cpu), c.totals, c.ringBytes, c.fillMaxPercent);
        maxPeak = std::max(maxPeak, c.fillMaxPercent);
    }
    CpuCounters t = s.total();
    row("all", t, 0, maxPeak);
    o << "records by type:";
    for (uint32_t i = 0; i < t.byType.size(); ++i)
        if (t.byType[i])
            o << " " << (recordTypeName(i) ? recordTypeName(i) : std::to_string(i).c_str()) << "="
              << t.byType[i];
    if (t.unknownTypes) o << " unknown=" << t.unknownTypes;
    o << "\n";
    for (auto& l : s.sinkLosses)
        o << l.sink << " dropped " << l.records << " records (" << human(double(l.bytes)) << ") "
          << (l.cpu >= 0 ? "of cpu " + std::to_string(l.cpu) : std::string("of all CPUs")) << ": " << l.reason
          << "\n";
    if (t.parseErrors)
        o << "records that did not parse (kept): " << t.parseErrors << " ("
          << t.parseErrors - t.parseErrorsUnknownEvent << " too short for their type, "
          << t.parseErrorsUnknownEvent << " samples of an unknown event id)\n";
    if (t.undeliveredRecords || t.undeliveredAuxBytes)
        o << "not delivered: " << t.undeliveredRecords << " records (" << human(double(t.undeliveredBytes))
          << ") and " << human(double(t.undeliveredAuxBytes))
          << " of AUX trace: the writer stopped taking them while the capture stopped (see the notes)\n";
    if (t.corruptBytes) o << "bytes skipped after corrupt ring headers: " << t.corruptBytes << "\n";
    bool flightRecorder = false;
    for (auto& c : s.cpus)
        flightRecorder |= c.auxSnapshotMode;
    if (flightRecorder || t.auxSnapshots) {
        o << "AUX snapshots: " << s.snapshots << " taken, " << t.auxSnapshots << " copies, "
          << human(double(t.auxSnapshotBytes)) << ":";
        for (auto& c : s.cpus) {
            const CpuCounters& x = c.totals;
            if (!c.hasAux && !x.auxSnapshots) continue;  // a CPU with sideband only (a replay's)
            o << " cpu " << c.cpu << " " << x.auxSnapshots << " (" << human(double(x.auxSnapshotBytes));
            if (x.auxSnapshotsZeroScan) o << ", " << x.auxSnapshotsZeroScan << " wrap found by zero-scan";
            o << ");";
        }
        o << "\n";
    }
    bool backward = false;
    for (auto& c : s.cpus)
        backward |= c.backwardMode;
    if (backward) {
        o << "sideband flight recorder: " << s.snapshots << " snapshots, " << t.backwardRecords
          << " records (" << human(double(t.backwardBytes)) << ") delivered, "
          << human(double(t.backwardOverwrittenBytes))
          << " of history overwritten before a snapshot reached it (expected: the ring keeps the newest "
          << human(double(s.cpus.front().ringBytes)) << " per CPU)";
        if (t.backwardTornBytes) o << ", " << human(double(t.backwardTornBytes)) << " of it torn records";
        if (t.backwardErrors) o << ", " << t.backwardErrors << " snapshots with a corrupt header";
        o << "\n";
        for (auto& c : s.cpus) {
            const CpuCounters& x = c.totals;
            std::snprintf(line, sizeof line,
                          "  cpu %d: %llu snapshots, %llu records, %s overwritten, %s written\n", c.cpu,
                          (unsigned long long)x.backwardSnapshots, (unsigned long long)x.backwardRecords,
                          human(double(x.backwardOverwrittenBytes)).c_str(),
                          human(double(c.backwardWrittenBytes)).c_str());
            o << line;
        }
    }
    if (s.commandExited) {
        if (WIFEXITED(s.commandStatus))
            o << "command exited with status " << WEXITSTATUS(s.commandStatus) << "\n";
        else if (WIFSIGNALED(s.commandStatus))
            o << "command killed by signal " << WTERMSIG(s.commandStatus) << "\n";
    }
    for (auto& m : s.messages)
        o << "note: " << m << "\n";
    return o.str();
}

std::string formatSummaryJson(const CaptureSummary& s) {
    std::ostringstream o;
    auto counters = [&](const CpuCounters& c) {
        o << "\"records\":" << c.records << ",\"bytes\":" << c.bytes << ",\"samples\":" << c.samples
          << ",\"lost_records\":" << c.lostRecords << ",\"lost_samples\":" << c.lostSamples
          << ",\"kernel_lost\":" << c.kernelLost << ",\"throttles\":" << c.throttles
          << ",\"parse_errors\":" << c.parseErrors
          << ",\"parse_errors_unknown_event\":" << c.parseErrorsUnknownEvent
          << ",\"undelivered_records\":" << c.undeliveredRecords
          << ",\"undelivered_bytes\":" << c.undeliveredBytes
          << ",\"undelivered_aux_bytes\":" << c.undeliveredAuxBytes << ",\"corrupt_bytes\":" << c.corruptBytes
          << ",\"aux_snapshots\":" << c.auxSnapshots << ",\"aux_snapshot_bytes\":" << c.auxSnapshotBytes
          << ",\"aux_snapshots_zero_scan\":" << c.auxSnapshotsZeroScan
          << ",\"backward_snapshots\":" << c.backwardSnapshots
          << ",\"backward_records\":" << c.backwardRecords << ",\"backward_bytes\":" << c.backwardBytes
          << ",\"backward_overwritten_bytes\":" << c.backwardOverwrittenBytes
          << ",\"backward_torn_bytes\":" << c.backwardTornBytes << ",\"backward_errors\":" << c.backwardErrors
          << ",\"by_type\":{";
        bool first = true;
        for (uint32_t i = 0; i < c.byType.size(); ++i) {
            if (!c.byType[i]) continue;
            o << (first ? "" : ",") << "\""
              << (recordTypeName(i) ? recordTypeName(i) : std::to_string(i).c_str()) << "\":" << c.byType[i];
            first = false;
        }
        o << "}";
    };
    o << "{\"target\":" << jsonString(s.target) << ",\"seconds\":" << s.seconds << ",\"events\":[";
    for (size_t i = 0; i < s.events.size(); ++i)
        o << (i ? "," : "") << jsonString(s.events[i]);
    o << "],\"call_graph\":{\"mode\":\"" << callGraphModeName(s.callGraph.mode) << "\"";
    if (s.callGraph.mode == CallGraphMode::Dwarf)
        o << ",\"stack_user_bytes\":" << s.callGraph.dwarfStackBytes
          << ",\"regs_user_mask\":" << dwarfUserRegsMask();
    o << "}";
    o << ",\"cpus\":[";
    for (size_t i = 0; i < s.cpus.size(); ++i) {
        auto& c = s.cpus[i];
        o << (i ? "," : "") << "{\"cpu\":" << c.cpu << ",\"ring_bytes\":" << c.ringBytes
          << ",\"max_fill_percent\":" << c.fillMaxPercent << ",";
        counters(c.totals);
        o << "}";
    }
    o << "],\"total\":{";
    counters(s.total());
    o << "},\"snapshots\":" << s.snapshots << ",\"command_exit_status\":"
      << (s.commandExited && WIFEXITED(s.commandStatus) ? WEXITSTATUS(s.commandStatus) : -1)
      << ",\"failure\":" << jsonString(s.failure) << ",\"sink_lost\":[";
    for (size_t i = 0; i < s.sinkLosses.size(); ++i) {
        auto& l = s.sinkLosses[i];
        o << (i ? "," : "") << "{\"sink\":" << jsonString(l.sink) << ",\"cpu\":" << l.cpu
          << ",\"records\":" << l.records << ",\"bytes\":" << l.bytes
          << ",\"reason\":" << jsonString(l.reason) << "}";
    }
    o << "],\"messages\":[";
    for (size_t i = 0; i < s.messages.size(); ++i)
        o << (i ? "," : "") << jsonString(s.messages[i]);
    o << "]}\n";
    return o.str();
}

int runRecordCommand(const std::vector<std::string>& args) {
    CaptureOptions opts;
    std::string output;
    bool compress = false;
    bool json = false;
    bool haveTarget = false;
    std::string replayFile;
    ReplayOptions replayOptions;
    bool replayOptionGiven = false;
    bool snapshotOnExit = false;
    std::string controlSpec;
    auto need = [&](size_t& i, const std::string& opt) -> const std::string* {
        if (i + 1 >= args.size()) {
            std::cerr << "auxscope record: option " << opt << " needs a value\n";
            return nullptr;
        }
        return &args[++i];
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kRecordHelp;
            return 0;
        } else if (a == "--list-events") {
            listEvents();
            return 0;
        } else if (a == "-a" || a == "--all-cpus") {
            opts.target = TargetKind::SystemWide;
            haveTarget = true;
        } else if (a == "-C" || a == "--cpu") {
            auto v = need(i, a);
            if (!v) return 2;
            auto cpus = parseCpuList(*v);
            if (!cpus) {
                std::cerr << "auxscope record: " << cpus.error().message << "\n";
                return 2;
            }
            opts.target = TargetKind::CpuList;
            opts.cpus = cpus.value();
            haveTarget = true;
        } else if (a == "-p" || a == "--pid") {
            auto v = need(i, a);
            double pid;
            if (!v) return 2;
            if (!parseNumberArg(*v, pid) || pid <= 0) {
                std::cerr << "auxscope record: bad pid '" << *v << "'\n";
                return 2;
            }
            opts.target = TargetKind::Process;
            opts.pid = pid_t(pid);
            haveTarget = true;
        } else if (a == "-e" || a == "--event") {
            auto v = need(i, a);
            if (!v) return 2;
            opts.events.push_back(*v);
        } else if (a == "-F" || a == "--freq") {
            auto v = need(i, a);
            double f;
            if (!v) return 2;
            if (!parseNumberArg(*v, f) || f < 1) {
                std::cerr << "auxscope record: bad frequency '" << *v << "'\n";
                return 2;
            }
            opts.sampleFreq = uint64_t(f);
        } else if (a == "-g") {
            opts.callGraph = CallGraphOptions{CallGraphMode::FramePointer};
        } else if (a == "--call-graph" || a.rfind("--call-graph=", 0) == 0) {
            const bool attached = a.size() > 12;
            const std::string* v = attached ? nullptr : need(i, a);
            if (!attached && !v) return 2;
            const std::string text = attached ? a.substr(13) : *v;
            auto cg = parseCallGraph(text, "--call-graph");
            if (!cg) {
                std::cerr << "auxscope record: " << cg.error().message << "\n";
                return 2;
            }
            opts.callGraph = *cg;
        } else if (a == "-m" || a == "--mmap-pages") {
            // perf's spelling: PAGES[,AUXPAGES]; either part may be left out.
            auto v = need(i, a);
            if (!v) return 2;
            const std::string text = *v;
            const size_t comma = text.find(',');
            auto pow2 = [&](const std::string& part, size_t& out, const char* what) {
                double p;
                if (!parseNumberArg(part, p) || p < 1 || (uint64_t(p) & (uint64_t(p) - 1))) {
                    std::cerr << "auxscope record: -m wants a power of two number of " << what
                              << " pages, got '" << part << "'\n";
                    return false;
                }
                out = size_t(p);
                return true;
            };
            const std::string data = text.substr(0, comma);
            if (!data.empty() && !pow2(data, opts.dataPages, "data ring")) return 2;
            if (comma != std::string::npos && !pow2(text.substr(comma + 1), opts.auxPages, "AUX area"))
                return 2;
            if (data.empty() && comma == std::string::npos) {
                std::cerr << "auxscope record: -m wants PAGES[,AUXPAGES]\n";
                return 2;
            }
        } else if (a == "--filter") {
            auto v = need(i, a);
            if (!v) return 2;
            opts.auxFilter = *v;
        } else if (a == "--duration") {
            auto v = need(i, a);
            if (!v) return 2;
            if (!parseNumberArg(*v, opts.durationSeconds) || opts.durationSeconds <= 0) {
                std::cerr << "auxscope record: bad duration '" << *v << "'\n";
                return 2;
            }
        } else if (a == "--no-switch") {
            opts.contextSwitches = false;
        } else if (a == "--no-realtime") {
            opts.realtimeDrain = false;
        } else if (a == "--json") {
            json = true;
        } else if (a == "-o" || a == "--output") {
            auto v = need(i, a);
            if (!v) return 2;
            if (v->empty() || *v == "-") {
                std::cerr << "auxscope record: -o wants a file name (pipe output is not supported)\n";
                return 2;
            }
            output = *v;
        } else if (a == "-z" || a == "--compress") {
            compress = true;
        } else if (a.rfind("-S", 0) == 0 || a == "--snapshot" || a.rfind("--snapshot=", 0) == 0) {
            // perf's spelling: the argument is optional, so only ever attached.
            const std::string_view arg = a[1] == 'S'     ? std::string_view(a).substr(2)
                                         : a.size() > 10 ? std::string_view(a).substr(11)
                                                         : std::string_view{};
            if (!parseSnapshotArg(arg, snapshotOnExit, opts.snapshotBytes)) {
                std::cerr
                    << "auxscope record: bad snapshot size '" << arg
                    << "' (bytes, K/M/G suffixes allowed, after an optional 'e': -S4M, --snapshot=e64K)\n";
                return 2;
            }
            opts.auxSnapshot = true;
        } else if (a == "--overwrite") {
            opts.overwrite = true;
        } else if (a == "--control") {
            auto v = need(i, a);
            if (!v) return 2;
            controlSpec = *v;
        } else if (a.rfind("--control=", 0) == 0) {
            controlSpec = a.substr(10);
        } else if (a == "--replay") {
            auto v = need(i, a);
            if (!v) return 2;
            replayFile = *v;
        } else if (a == "--replay-speed") {
            auto v = need(i, a);
            if (!v) return 2;
            auto speed = parseReplaySpeed(*v);
            if (!speed) {
                std::cerr << "auxscope record: " << speed.error().message << "\n";
                return 2;
            }
            replayOptions.speed = *speed;
            replayOptionGiven = true;
        } else if (a == "--replay-loop") {
            replayOptions.loop = true;
            replayOptionGiven = true;
        } else if (a == "--") {
            opts.command.assign(args.begin() + long(i) + 1, args.end());
            break;
        } else if (!a.empty() && a[0] == '-') {
            std::cerr << "auxscope record: unknown option '" << a << "' (see auxscope record --help)\n";
            return 2;
        } else {
            opts.command.assign(args.begin() + long(i), args.end());
            break;
        }
    }
    if (compress && output.empty()) {
        std::cerr << "auxscope record: -z compresses the perf.data file: give it with -o FILE\n";
        return 2;
    }
    if (!opts.command.empty()) {
        if (haveTarget) {
            std::cerr << "auxscope record: give either a command or -a/-C/-p, not both\n";
            return 2;
        }
        opts.target = TargetKind::Command;
    }

    // A replay stands in for the kernel: simulated CPUs fed from a recorded file.
    std::unique_ptr<ReplaySource> replay;
    if (replayOptionGiven && replayFile.empty()) {
        std::cerr << "auxscope record: --replay-speed and --replay-loop go with --replay FILE\n";
        return 2;
    }
    if (!replayFile.empty() && opts.callGraph.enabled()) {
        std::cerr << "auxscope record: --call-graph / -g ask the kernel for call stacks; a replay feeds the "
                     "recorded file's own records (give no -g with --replay)\n";
        return 2;
    }
    if (!replayFile.empty() && opts.overwrite) {
        std::cerr
            << "auxscope record: --overwrite makes the kernel's data rings flight recorders; a replay has "
               "none (its sideband is replayed as recorded)\n";
        return 2;
    }
    if (!replayFile.empty()) {
        if (haveTarget || !opts.command.empty() || !opts.events.empty()) {
            std::cerr << "auxscope record: --replay FILE replays the file's own CPUs and events: give no "
                         "-a/-C/-p, -e or command with it\n";
            return 2;
        }
        auto r = ReplaySource::open(replayFile);
        if (!r) {
            std::cerr << "auxscope record: " << r.error().message << "\n";
            return 1;
        }
        replay = std::move(r.value());
        replayOptions.durationSeconds = opts.durationSeconds;
        replayOptions.realtimeDrain = opts.realtimeDrain;
        replayOptions.publishHz = opts.publishHz;
    }
    if (replay && opts.auxSnapshot)
        replayOptions.mode = AuxMode::Snapshot;  // the replay is the flight recorder
    if (!replay && opts.auxSnapshot && opts.snapshotBytes > uint64_t(opts.auxPages) * pageSize()) {
        std::cerr << "auxscope record: the snapshot size (" << opts.snapshotBytes
                  << " bytes) must not be greater than the AUX area (" << uint64_t(opts.auxPages) * pageSize()
                  << " bytes)\n";
        return 2;
    }
    // A call-graph choice these events or this machine cannot have is a usage
    // error, refused with its reason before anything is opened.
    if (!replay && opts.callGraph.enabled())
        if (auto r = checkCallGraphFor(opts, PmuRegistry::discover()); !r) {
            std::cerr << "auxscope record: " << r.error().message << "\n";
            return 2;
        }
    // Opened before the capture, so that a missing FIFO fails before anything runs.
    std::unique_ptr<ControlFifo> control;
    if (!controlSpec.empty()) {
        auto c = ControlFifo::open(controlSpec);
        if (!c) {
            std::cerr << "auxscope record: " << c.error().message << "\n";
            return 2;
        }
        control = std::move(c.value());
    }
    auto pmus = replay ? PmuRegistry{} : PmuRegistry::discover();
    auto session = replay ? replay->openSession(replayOptions) : CaptureSession::open(opts, pmus);
    if (!session) {
        std::cerr << "auxscope record: " << session.error().message << "\n";
        return 1;
    }
    if (control) (*session)->addCommandSource(control.get());
    (*session)->setSnapshotOnStop(snapshotOnExit);
    if (replay) (*session)->setSnapshotBytes(opts.snapshotBytes);
    std::unique_ptr<PerfDataWriterCapture> file;
    if (!output.empty()) {
        PerfDataWriterCaptureOptions fo;
        fo.path = output;
        fo.compress = compress;
        fo.version = std::string("auxscope ") + AUXSCOPE_VERSION;
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        fo.cmdline.push_back(n > 0 ? std::string(exe, size_t(n)) : std::string("auxscope"));
        fo.cmdline.push_back("record");
        fo.cmdline.insert(fo.cmdline.end(), args.begin(), args.end());
        if (replay) fo.auxtraceInfo = replay->auxtraceInfo(replayOptions);  // the source's: perf decodes it
        auto f = PerfDataWriterCapture::open(**session, fo);
        if (!f) {
            std::cerr << "auxscope record: " << f.error().message << "\n";
            return 1;
        }
        file = std::move(f.value());
    }
    gSession = session->get();
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    if (auto r = (*session)->start(); !r) {
        gSession = nullptr;
        std::cerr << "auxscope record: " << r.error().message << "\n";
        return 1;
    }
    // SIGUSR2 takes a snapshot while recording (as under perf record; without a
    // flight recorder it does nothing rather than end the capture).
    auto snapshotSignal = SnapshotSignal::install(**session);
    if (!snapshotSignal) std::cerr << "auxscope record: note: " << snapshotSignal.error().message << "\n";
    if (replay)
        if (auto r = replay->start(**session, replayOptions); !r) {
            (*session)->requestStop();
            (*session)->wait();
            gSession = nullptr;
            std::cerr << "auxscope record: " << r.error().message << "\n";
            return 1;
        }
    (*session)->wait();
    if (snapshotSignal) snapshotSignal->reset();
    if (replay) replay->stop();  // the session ended (Ctrl-C): so does the replay
    gSession = nullptr;
    Expected<void> written;
    if (file) written = file->finish();
    auto summary = (*session)->summary();
    if (control) {
        const ControlFifoStats cs = control->stats();
        for (auto& m : control->messages())
            summary.messages.push_back(m);
        if (cs.commands)
            summary.messages.push_back("control FIFO " + control->controlPath() + ": " +
                                       std::to_string(cs.commands) + " commands, " + std::to_string(cs.acks) +
                                       " acked, " + std::to_string(cs.errors) + " refused" +
                                       (cs.ackFailures ? ", " + std::to_string(cs.ackFailures) +
                                                             " answers dropped (the ack FIFO was full)"
                                                       : std::string()));
    }
    std::string text = json ? formatSummaryJson(summary) : formatSummary(summary);
    if (file) {
        auto rep = file->report();
        std::ostringstream line;
        if (json) {
            line << ",\"output\":{\"path\":\"";
            for (char ch : rep.path)
                line << ((ch == '"' || ch == '\\') ? "\\" : "") << ch;
            line << "\",\"bytes\":" << rep.fileBytes << ",\"records\":" << rep.records
                 << ",\"compressed\":" << (rep.compressed ? "true" : "false")
                 << ",\"dropped_records\":" << rep.droppedRecords << ",\"aux_bytes\":" << rep.auxBytes
                 << ",\"held_back\":" << rep.recordsHeldBack + rep.auxHeldBack
                 << ",\"ok\":" << (written ? "true" : "false") << "}";
            text.insert(text.rfind('}'), line.str());
        } else {
            line << "perf.data: " << rep.path << ", " << human(double(rep.fileBytes)) << ", " << rep.records
                 << " records";
            if (rep.compressed && rep.compressedBytes)
                line << " (" << human(double(rep.streamBytes)) << " of ring records compressed to "
                     << human(double(rep.compressedBytes)) << ")";
            if (rep.queueFullRecords)
                line << ", " << rep.queueFullRecords
                     << " records dropped by the full writer queue (LOST records in the file mark them)";
            if (rep.writerStoppedRecords)
                line << ", " << rep.writerStoppedRecords << " records not written after the write error";
            if (rep.recordsHeldBack + rep.auxHeldBack)
                line << "; the writer was behind " << rep.recordsHeldBack + rep.auxHeldBack
                     << " times: the data waited in the kernel's rings"
                     << (summary.total().undeliveredRecords + summary.total().undeliveredAuxBytes
                             ? ""
                             : " (nothing dropped by auxscope)");
            line << "\nperf.data: synthesized " << rep.synthesized.threads << " threads of "
                 << rep.synthesized.processes << " processes and " << rep.synthesized.mmap2
                 << " executable maps from /proc in " << int(rep.synthesisSeconds * 1000) << " ms";
            for (auto& n : rep.notes)
                line << "\nperf.data note: " << n;
            text += line.str() + "\n";
        }
    }
    if (replay) {
        const std::string r = formatReplay(*replay, replayOptions, json);
        if (json)
            text.insert(text.rfind('}'), r);
        else
            text += r;
    }
    std::cout << text;
    std::cout.flush();
    if (!written) {
        std::cerr << "auxscope record: " << written.error().message
                  << "\nauxscope record: the capture stopped; " << output
                  << " keeps everything written before the error, with a valid header\n";
        return 1;
    }
    if (!summary.failure.empty()) {
        std::cerr << "auxscope record: " << summary.failure << "\n";
        return 1;
    }
    if (summary.commandExited && WIFEXITED(summary.commandStatus)) return WEXITSTATUS(summary.commandStatus);
    return 0;
}

}  // namespace auxscope
