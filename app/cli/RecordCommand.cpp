// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli/RecordCommand.h"

#include <sys/wait.h>
#include <unistd.h>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>

#include "AuxPause.h"
#include "CaptureControl.h"
#include "EventSpec.h"
#include "OptionParser.h"
#include "Pmu.h"
#include "Tracefs.h"
#include "cli/JsonString.h"
#include "perfdata/TriggerFeature.h"
#include "record/PerfDataWriterCapture.h"
#include "record/ReplaySource.h"

namespace auxscope {
namespace {

CaptureSession* gSession = nullptr;

void onSignal(int) {
    if (gSession) gSession->requestStop();  // writes an eventfd: async-signal-safe
}

const char* kRecordUsage = R"(usage: auxscope record [options] [-- command [args...]]

Captures perf events on every CPU's data ring and prints per-CPU totals.
Options are read as perf record reads them: --opt VALUE or --opt=VALUE, -F 99 or
-F99, short flags combined (-ag); the first argument that is not an option (or
what follows --) is the command to launch. Numbers are decimal.

)";

// Every option of `auxscope record`: the parser reads this table and the help
// prints it, so the two never disagree. Entries without a name are the help's
// section headings.
constexpr OptionSpec kRecordOptions[] = {
    {"", 0, OptionArg::None, "", "Target (default: system-wide when no command is given):"},
    {"all-cpus", 'a', OptionArg::None, "", "system-wide, every online CPU"},
    {"cpu", 'C', OptionArg::Required, "LIST", "only these CPUs, e.g. 0-3,6"},
    {"pid", 'p', OptionArg::Required, "PID", "an existing process (all its threads, and what they spawn)"},
    {"", 0, OptionArg::None, "",
     "  -- command ...          launch a command and trace it from its first instruction\n"},
    {"", 0, OptionArg::None, "", "Events:"},
    {"event", 'e', OptionArg::Required, "SPEC",
     "perf-style event; repeatable, comma lists allowed\n"
     "(-e a,b: two events): cpu-clock, task-clock, context-switches, page-faults,\n"
     "raw_syscalls:sys_enter, 'sched:*', pmu/term=value,.../u\n"
     "default: cpu-clock sampling; context switches, MMAP2, COMM\n"
     "and fork/exit records are always captured"},
    {"freq", 'F', OptionArg::Required, "HZ", "sampling frequency for counting events (default 4000)"},
    {"", 'g', OptionArg::None, "", "call stacks on every sample: --call-graph fp"},
    {"call-graph", 0, OptionArg::Required, "MODE",
     "call stacks on every sample, as perf record takes them\n"
     "(also --call-graph=MODE); the tracking event gets none:\n"
     "  fp           frame pointers: the kernel walks them, kernel and\n"
     "               user part in one callchain\n"
     "  dwarf[,SIZE] the user registers and SIZE bytes of user stack\n"
     "               per sample (default 8192; a multiple of 8 up to\n"
     "               65528), unwound later with the binaries' DWARF\n"
     "               CFI; the kernel part stays a callchain. A sample\n"
     "               holds ~SIZE bytes: at 4000 Hz 32 MiB/s per busy\n"
     "               CPU, which the default ring drains; what the\n"
     "               kernel could not store shows as lost-rec\n"
     "  lbr          Intel's Last Branch Records as the user call\n"
     "               stack: hardware events (-e cycles) on an Intel\n"
     "               PMU with LBR only (not cpu-clock, AMD or most VMs)\n"
     "The summary (and --json) names the mode; nothing is unwound\n"
     "while capturing"},
    {"no-switch", 0, OptionArg::None, "", "do not record context switches"},
    {"no-realtime", 0, OptionArg::None, "",
     "keep the drain thread at normal priority (default: SCHED_FIFO\n"
     "where permitted, so it never waits behind the traced workload)"},
    {"list-events", 0, OptionArg::None, "", "list symbolic events, PMUs and tracepoints, then exit\n"},
    {"", 0, OptionArg::None, "", "Buffers and duration:"},
    {"mmap-pages", 'm', OptionArg::Required, "N[,M]",
     "data ring pages per CPU, a power of two (default 2048 = 8 MiB);\n"
     "M: AUX area pages per CPU (default 1024 = 4 MiB, perf's)"},
    {"filter", 0, OptionArg::Required, "FILTERS",
     "address filters for the AUX event, perf's syntax, e.g.\n"
     "'filter main @ /usr/bin/prog' or 'tracestop memcpy @ /lib/libc.so.6';\n"
     "symbols are resolved from the ELF; checked against caps/ip_filtering\n"
     "and nr_addr_filters"},
    {"duration", 0, OptionArg::Required, "SECONDS",
     "stop after this long (a number > 0, e.g. 0.5; default: until Ctrl-C\n"
     "or the command exits)\n"},
    {"", 0, OptionArg::None, "", "Replay (no trace hardware needed):"},
    {"replay", 0, OptionArg::Required, "FILE",
     "feed the AUX trace and sideband of a recorded perf.data (perf's or\n"
     "simpleperf's: intel_pt, cs_etm, ...) through simulated CPUs: drain,\n"
     "statistics, -o file and decode run as in a live capture; the summary\n"
     "and the file say it is a replay"},
    {"replay-speed", 0, OptionArg::Required, "X",
     "X times the recorded speed (default 1; 0.1: ten times slower), or\n"
     "max: as fast as the drain takes the data"},
    {"replay-loop", 0, OptionArg::None, "",
     "start over at the end (demos); stop with Ctrl-C or --duration\n"},
    {"", 0, OptionArg::None, "",
     "Flight recorders (-S: an AUX trace event, -e intel_pt//, cs_etm//, arm_spe//, or --replay;\n"
     "--overwrite: the sideband, any events):"},
    {"snapshot", 'S', OptionArg::Optional, "[e]SIZE",
     "snapshot mode, as perf record -S: the AUX area is overwritten all\n"
     "the time (the sideband is still drained in full) and each trigger copies\n"
     "its newest SIZE bytes per CPU into the output (K, M, G suffixes;\n"
     "default: the whole AUX area). Triggers: SIGUSR2 (kill -USR2 PID) and\n"
     "'snapshot' on the control FIFO. 'e' takes one more when the capture\n"
     "ends (-Se, --snapshot=e4M). The summary counts snapshots per CPU"},
    {"overwrite", 0, OptionArg::None, "",
     "sideband flight recorder, as perf record --overwrite: every event\n"
     "writes backward into a read-only data ring (-m) that the kernel\n"
     "overwrites, so it holds the newest history at no drain cost.\n"
     "Records reach the output ONLY at snapshots (SIGUSR2, 'snapshot' on\n"
     "the control FIFO) and when the capture stops; each delivers what is\n"
     "new since the previous one. Needs no AUX event; not with one"},
    {"control", 0, OptionArg::Required, "fifo:CTL[,ACK]",
     "perf's control FIFOs (mkfifo them first): one command per line\n"
     "written to CTL (snapshot, stop, enable, disable, ping), \"ack\" written\n"
     "to ACK after each, or \"error: ...\" for a command it cannot do"},
    {"trigger", 0, OptionArg::Required, "SPEC",
     "take a snapshot when SPEC happens (repeatable; needs -S or --overwrite):\n"
     "  func, func@BINARY     the function is entered (uprobe; BINARY: the\n"
     "                        command's or -p's program when not given)\n"
     "  BINARY:0xOFFSET       that file offset is reached\n"
     "  func>5ms              a call slower than 5 ms (uprobe + uretprobe per\n"
     "                        thread and nesting level; fires at the return)\n"
     "  syscall:NAME>10ms     a system call slower than 10 ms\n"
     "  SYS:A->B>2ms          tracepoint B follows A on a thread after > 2 ms\n"
     "                        (sched:sched_wakeup->sched_switch: wakeup latency)\n"
     "  usdt:PROV:NAME[@BIN]  the program reaches its USDT probe PROV:NAME\n"
     "                        (<sys/sdt.h>; every site, its semaphore set)\n"
     "  marker[@BINARY]       its USDT probe auxscope:trigger, else a call of\n"
     "                        its auxscope_trigger() function\n"
     "thresholds: ns, us, ms, s (1us to 3600s). The summary and 'auxscope info'\n"
     "list every firing (trigger, thread, CPU, time, duration, snapshot)"},
    {"trigger-post", 0, OptionArg::Required, "MS",
     "keep tracing MS milliseconds after a firing before its snapshot (default 0)"},
    {"trigger-max", 0, OptionArg::Required, "N",
     "at most N triggered snapshots; later firings are counted as skipped"},
    {"trigger-gap", 0, OptionArg::Required, "MS",
     "at least MS milliseconds between two snapshots' firings; firings within\n"
     "it, and while a snapshot is pending, are counted as skipped"},
    {"trigger-mode", 0, OptionArg::Required, "MODE",
     "snapshot (default): a firing takes a snapshot; pause: the AUX trace\n"
     "starts paused, each function trigger's entry resumes it and its return\n"
     "pauses it (Linux 6.13 aux_pause/aux_resume; intel_pt, -S, -a only)"},
    {"trigger-tid", 0, OptionArg::Required, "TIDS",
     "only these threads fire (comma-separated thread ids); others are\n"
     "counted as skipped\n"},
    {"", 0, OptionArg::None, "", "Output (default: print the per-CPU summary only):"},
    {"output", 'o', OptionArg::Required, "FILE",
     "also write a perf.data file, streamed while capturing\n"
     "(perf script / perf report read it)"},
    {"compress", 'z', OptionArg::None, "", "zstd-compress the file's records (like perf record -z)"},
    {"writer-budget", 0, OptionArg::Required, "SIZE",
     "memory the file writer may hold when the disk is slower than the\n"
     "capture (K, M or G suffix; default a quarter of MemAvailable, at most\n"
     "4G, at least the 32M queue); only past it do records wait in the\n"
     "kernel's rings, which then lose them. 0: the 32M queue alone"},
    {"json", 0, OptionArg::None, "", "print the summary as JSON"},
    {"help", 'h', OptionArg::None, "", "this text\n"},
};

const char* kRecordEnding =
    R"(Ending: Ctrl-C (SIGINT) or SIGTERM ends the capture as --duration does: the rings are
drained, the file finished (final header, features) and the summary printed. The exit
status is then 0; with a launched command, its exit status when it exited (0 when it was
killed). A CPU that goes offline during the capture stops being traced there (the kernel
detaches its events) and the summary says when. Exit status 2: bad arguments.
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
    // Decimal, as every number on this command line (perf's strtoull base 0 would read -S010 as 8).
    uint64_t v = 0;
    auto [stop, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
    if (ec != std::errc() || stop == s.data()) return false;
    const char* end = stop;
    const char* const last = s.data() + s.size();
    unsigned shift = 0;
    switch (end == last ? '\0' : *end) {
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
    if (end != last || v == 0 || v > (~0ull >> shift)) return false;
    bytes = v << shift;
    return true;
}

// --writer-budget: bytes with an optional K, M or G suffix (powers of 1024); 0 allowed.
Expected<uint64_t> parseWriterBudget(const std::string& option, const std::string& text) {
    uint64_t bytes = 0;
    bool onExit = false;
    if (text == "0") return uint64_t(0);
    if (text.empty() || text.front() == 'e' || !parseSnapshotArg(text, onExit, bytes) ||
        bytes > (uint64_t(1) << 50))
        return makeError(option + " '" + text + "': a size in bytes expected, e.g. 512M or 2G (0: no spill)");
    return bytes;
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
        out << "{\"file\":" << jsonString(r.path())
            << ",\"speed\":" << (o.speed.max ? std::string("\"max\"") : jsonNumber(o.speed.factor))
            << ",\"loop\":" << (o.loop ? "true" : "false") << ",\"aux_bytes_fed\":" << p.auxBytesFed
            << ",\"aux_bytes_total\":" << p.auxBytesTotal << ",\"records_fed\":" << p.recordsFed
            << ",\"records_total\":" << p.recordsTotal
            << ",\"recorded_seconds\":" << jsonNumber(p.recordedSeconds) << ",\"passes\":" << p.passesDone
            << ",\"stopped_early\":" << (p.stoppedEarly ? "true" : "false") << ",\"not_replayed\":[";
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

std::string formatSummaryJson(const CaptureSummary& s,
                              const std::vector<std::pair<std::string, std::string>>& members) {
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
            o << (first ? "" : ",") << jsonString(recordTypeName(i) ? recordTypeName(i) : std::to_string(i))
              << ":" << c.byType[i];
            first = false;
        }
        o << "}";
    };
    o << "{\"target\":" << jsonString(s.target) << ",\"seconds\":" << jsonNumber(s.seconds)
      << ",\"events\":[";
    for (size_t i = 0; i < s.events.size(); ++i)
        o << (i ? "," : "") << jsonString(s.events[i]);
    o << "],\"call_graph\":{\"mode\":" << jsonString(callGraphModeName(s.callGraph.mode));
    if (s.callGraph.mode == CallGraphMode::Dwarf)
        o << ",\"stack_user_bytes\":" << s.callGraph.dwarfStackBytes
          << ",\"regs_user_mask\":" << dwarfUserRegsMask();
    o << "}";
    o << ",\"cpus\":[";
    for (size_t i = 0; i < s.cpus.size(); ++i) {
        auto& c = s.cpus[i];
        o << (i ? "," : "") << "{\"cpu\":" << c.cpu << ",\"ring_bytes\":" << c.ringBytes
          << ",\"max_fill_percent\":" << jsonNumber(c.fillMaxPercent) << ",";
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
    o << "]";
    for (const auto& [name, value] : members)
        o << "," << jsonString(name) << ":" << value;
    o << "}\n";
    return o.str();
}

namespace {
// --trigger-post / --trigger-gap: milliseconds (fractions allowed), 0 to an hour, as nanoseconds.
Expected<uint64_t> parseNonNegativeMs(const std::string& option, const std::string& text) {
    double ms = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size() || !(ms >= 0) || ms > 3600e3)
        return makeError(option + " '" + text + "': milliseconds from 0 to 3600000 expected");
    return uint64_t(ms * 1e6 + 0.5);
}
}  // namespace

Expected<RecordArgs> parseRecordArgs(const std::vector<std::string>& args) {
    auto cl = parseCommandLine(kRecordOptions, args, OperandsEnd::AtFirst);
    if (!cl) return cl.error();
    RecordArgs out;
    CaptureOptions& opts = out.capture;
    std::string targetGiven;         // the -a/-C/-p spelling that chose the target
    std::string compressGiven;       // -z or --compress, as given
    std::string triggerOptionGiven;  // a --trigger-* option, as given
    for (const ParsedOption& o : cl->options) {
        const std::string v = o.value.value_or(std::string());
        const std::string& n = o.spelling;
        if (o.is("help")) {
            out.help = true;
            return out;
        } else if (o.is("list-events")) {
            out.listEvents = true;
            return out;
        } else if (o.is("all-cpus")) {
            opts.target = TargetKind::SystemWide;
            targetGiven = n;
        } else if (o.is("cpu")) {
            auto cpus = parseCpuList(v);
            if (!cpus) return makeError(n + " '" + v + "': " + cpus.error().message);
            opts.target = TargetKind::CpuList;
            opts.cpus = cpus.value();
            targetGiven = n;
        } else if (o.is("pid")) {
            auto pid = parseIntegerOption(n, v, 1, std::numeric_limits<pid_t>::max());
            if (!pid) return pid.error();
            opts.target = TargetKind::Process;
            opts.pid = pid_t(*pid);
            targetGiven = n;
        } else if (o.is("event")) {
            // perf's -e a,b: two events (commas inside a pmu/terms/ list stay).
            const auto events = EventParser::splitList(v);
            if (events.empty()) return makeError(n + " '" + v + "': no event named");
            opts.events.insert(opts.events.end(), events.begin(), events.end());
        } else if (o.is("freq")) {
            // The kernel takes up to perf_event_max_sample_rate; it refuses what is above.
            auto f = parseUnsignedOption(n, v, 1, std::numeric_limits<uint32_t>::max());
            if (!f) return f.error();
            opts.sampleFreq = *f;
        } else if (o.isShort('g')) {
            opts.callGraph = CallGraphOptions{CallGraphMode::FramePointer};
        } else if (o.is("call-graph")) {
            auto cg = parseCallGraph(v, "--call-graph");
            if (!cg) return cg.error();
            opts.callGraph = *cg;
        } else if (o.is("mmap-pages")) {
            // perf's spelling: PAGES[,AUXPAGES]; either part may be left out.
            const size_t comma = v.find(',');
            auto pow2 = [&](const std::string& part, size_t& into, const char* what) -> Expected<void> {
                // At most 2^30 pages (4 TiB of ring per CPU): far past what the kernel maps.
                auto p = parseUnsignedOption(n, part, 1, uint64_t(1) << 30);
                if (!p || (*p & (*p - 1)))
                    return makeError(n + " wants a power of two number of " + what + " pages, got '" + part +
                                     "'" + (p ? "" : " (a decimal number from 1 to 2^30 is expected)"));
                into = size_t(*p);
                return {};
            };
            const std::string data = v.substr(0, comma);
            if (data.empty() && comma == std::string::npos) return makeError(n + " wants PAGES[,AUXPAGES]");
            if (!data.empty())
                if (auto r = pow2(data, opts.dataPages, "data ring"); !r) return r.error();
            if (comma != std::string::npos)
                if (auto r = pow2(v.substr(comma + 1), opts.auxPages, "AUX area"); !r) return r.error();
        } else if (o.is("filter")) {
            opts.auxFilter = v;
        } else if (o.is("duration")) {
            auto d = parsePositiveRealOption(n, v);
            if (!d) return d.error();
            // Past a year is a typo, and would overflow the clocks' nanosecond counts.
            if (*d > 365.0 * 24 * 3600) return makeError(n + " '" + v + "': more than a year");
            opts.durationSeconds = *d;
        } else if (o.is("no-switch")) {
            opts.contextSwitches = false;
        } else if (o.is("no-realtime")) {
            opts.realtimeDrain = false;
        } else if (o.is("json")) {
            out.json = true;
        } else if (o.is("output")) {
            if (v.empty() || v == "-")
                return makeError(n + " wants a file name (pipe output is not supported)");
            out.output = v;
        } else if (o.is("writer-budget")) {
            auto b = parseWriterBudget(n, v);
            if (!b) return b.error();
            out.writerBudget = *b;
        } else if (o.is("compress")) {
            out.compress = true;
            compressGiven = n;
        } else if (o.is("snapshot")) {
            // perf's spelling: the argument is optional, so only ever attached.
            if (!parseSnapshotArg(v, out.snapshotOnExit, opts.snapshotBytes))
                return makeError(n + ": bad snapshot size '" + v +
                                 "' (bytes, K/M/G suffixes allowed, after an optional 'e': -S4M, "
                                 "--snapshot=e64K)");
            opts.auxSnapshot = true;
        } else if (o.is("overwrite")) {
            opts.overwrite = true;
        } else if (o.is("control")) {
            out.controlSpec = v;
        } else if (o.is("trigger")) {
            auto spec = parseTriggerSpec(v);
            if (!spec) return makeError(n + ": " + spec.error().message);
            out.triggers.specs.push_back(std::move(spec.value()));
        } else if (o.is("trigger-post") || o.is("trigger-gap")) {
            // Milliseconds, fractions allowed; up to an hour.
            auto ms = parseNonNegativeMs(n, v);
            if (!ms) return ms.error();
            (o.is("trigger-post") ? out.triggers.postNs : out.triggers.gapNs) = *ms;
            triggerOptionGiven = n;
        } else if (o.is("trigger-max")) {
            auto m = parseUnsignedOption(n, v, 1, uint64_t(1) << 32);
            if (!m) return m.error();
            out.triggers.max = *m;
            triggerOptionGiven = n;
        } else if (o.is("trigger-mode")) {
            auto mode = parseTriggerMode(v);
            if (!mode) return makeError(n + ": " + mode.error().message);
            out.triggers.mode = *mode;
            triggerOptionGiven = n;
        } else if (o.is("trigger-tid")) {
            std::string_view rest = v;
            while (true) {
                const size_t comma = rest.find(',');
                auto tid = parseIntegerOption(n, rest.substr(0, comma), 1, std::numeric_limits<pid_t>::max());
                if (!tid) return tid.error();
                out.triggers.tids.push_back(pid_t(*tid));
                if (comma == std::string_view::npos) break;
                rest.remove_prefix(comma + 1);
            }
            triggerOptionGiven = n;
        } else if (o.is("replay")) {
            out.replayFile = v;
        } else if (o.is("replay-speed")) {
            auto speed = parseReplaySpeed(v);
            if (!speed) return makeError(n + ": " + speed.error().message);
            out.replay.speed = *speed;
            out.replayOptionGiven = true;
        } else if (o.is("replay-loop")) {
            out.replay.loop = true;
            out.replayOptionGiven = true;
        }
    }
    opts.command = cl->rest;
    if (cl->dashDash && opts.command.empty()) return makeError("-- wants a command after it");
    if (out.compress && out.output.empty())
        return makeError(compressGiven + " compresses the perf.data file: give it with -o FILE");
    if (!opts.command.empty()) {
        if (!targetGiven.empty())
            return makeError("give either a command or -a/-C/-p, not both: " + targetGiven +
                             " and the command '" + opts.command.front() + "'");
        opts.target = TargetKind::Command;
    }
    if (!triggerOptionGiven.empty() && out.triggers.specs.empty())
        return makeError(triggerOptionGiven + " goes with --trigger SPEC");
    if (!out.triggers.specs.empty() && out.triggers.mode == TriggerMode::Pause) {
        // What the kernel and the PMU offer first: that is the reason where they cannot.
        auto pmu = checkAuxPauseHere(PmuRegistry::discover());
        if (!pmu) return makeError("--trigger-mode pause: " + pmu.error().message);
        if (!opts.auxSnapshot)
            return makeError("--trigger-mode pause pauses and resumes the AUX trace: give -S with -e " +
                             *pmu + "//");
        opts.auxStartPaused = true;
    }
    if (!out.triggers.specs.empty() && !opts.auxSnapshot && !opts.overwrite)
        return makeError(
            "--trigger '" + out.triggers.specs.front().text +
            "' takes snapshots: give -S (an AUX flight recorder, or --replay FILE -S) or --overwrite "
            "(the sideband flight recorder)");
    if (out.replayOptionGiven && out.replayFile.empty())
        return makeError("--replay-speed and --replay-loop go with --replay FILE");
    if (!out.replayFile.empty() && opts.callGraph.enabled())
        return makeError(
            "--call-graph / -g ask the kernel for call stacks; a replay feeds the recorded file's own "
            "records "
            "(give no -g with --replay)");
    if (!out.replayFile.empty() && opts.overwrite)
        return makeError(
            "--overwrite makes the kernel's data rings flight recorders; a replay has none (its sideband is "
            "replayed as recorded)");
    if (!out.replayFile.empty() && (!targetGiven.empty() || !opts.command.empty() || !opts.events.empty()))
        return makeError(
            "--replay FILE replays the file's own CPUs and events: give no -a/-C/-p, -e or command with it");
    return out;
}

std::string recordHelp() {
    return std::string(kRecordUsage) + formatOptionHelp(kRecordOptions) + kRecordEnding;
}

int runRecordCommand(const std::vector<std::string>& args) {
    auto parsed = parseRecordArgs(args);
    if (!parsed) {
        std::cerr << "auxscope record: " << parsed.error().message << " (auxscope record --help)\n";
        return 2;
    }
    if (parsed->help) {
        std::cout << recordHelp();
        return 0;
    }
    if (parsed->listEvents) {
        listEvents();
        return 0;
    }
    CaptureOptions& opts = parsed->capture;
    const std::string& output = parsed->output;
    const bool compress = parsed->compress;
    const bool json = parsed->json;
    const std::string& replayFile = parsed->replayFile;
    ReplayOptions& replayOptions = parsed->replay;
    const bool snapshotOnExit = parsed->snapshotOnExit;
    const std::string& controlSpec = parsed->controlSpec;

    // A replay stands in for the kernel: simulated CPUs fed from a recorded file.
    std::unique_ptr<ReplaySource> replay;
    if (!replayFile.empty()) {
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
    // Triggers are resolved (symbols, tracepoints) before anything runs.
    std::vector<ResolvedTrigger> triggers;
    if (!parsed->triggers.specs.empty()) {
        TriggerResolveOptions ro;
        if (opts.target == TargetKind::Command) {
            auto exe = findExecutable(opts.command.front());
            if (exe) ro.defaultBinary = *exe;
        } else if (opts.target == TargetKind::Process) {
            char exe[PATH_MAX];
            const std::string link = "/proc/" + std::to_string(opts.pid) + "/exe";
            const ssize_t n = readlink(link.c_str(), exe, sizeof exe - 1);
            if (n > 0) ro.defaultBinary.assign(exe, size_t(n));
        }
        for (const TriggerSpec& spec : parsed->triggers.specs) {
            auto t = resolveTrigger(spec, ro);
            if (!t) {
                std::cerr << "auxscope record: --trigger: " << t.error().message << "\n";
                return 2;
            }
            triggers.push_back(std::move(t.value()));
        }
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
    if (!triggers.empty())
        if (auto r = (*session)->armTriggers(std::move(triggers), parsed->triggers); !r) {
            std::cerr << "auxscope record: " << r.error().message << "\n";
            return 1;
        }
    (*session)->setSnapshotOnStop(snapshotOnExit);
    if (replay) (*session)->setSnapshotBytes(opts.snapshotBytes);
    std::unique_ptr<PerfDataWriterCapture> file;
    if (!output.empty()) {
        PerfDataWriterCaptureOptions fo;
        fo.path = output;
        fo.compress = compress;
        fo.writerBudget = parsed->writerBudget;
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
    // --json: the summary's object, with "output" and "replay" as members of it.
    std::vector<std::pair<std::string, std::string>> jsonMembers;
    std::string text = json ? std::string() : formatSummary(summary);
    if (file) {
        auto rep = file->report();
        std::ostringstream line;
        if (json) {
            line << "{\"path\":" << jsonString(rep.path) << ",\"bytes\":" << rep.fileBytes
                 << ",\"records\":" << rep.records
                 << ",\"compressed\":" << (rep.compressed ? "true" : "false")
                 << ",\"dropped_records\":" << rep.droppedRecords << ",\"aux_bytes\":" << rep.auxBytes
                 << ",\"held_back\":" << rep.recordsHeldBack + rep.auxHeldBack
                 << ",\"writer_backlog_peak\":" << rep.maxBacklogBytes
                 << ",\"writer_backlog_budget\":" << rep.backlogBudget
                 << ",\"held_back_at_budget\":" << rep.heldBackAtBudget
                 << ",\"ok\":" << (written ? "true" : "false") << "}";
            jsonMembers.emplace_back("output", line.str());
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
                     << " times with its backlog at its budget (" << human(double(rep.backlogBudget))
                     << "): the data waited in the kernel's rings"
                     << (summary.total().undeliveredRecords + summary.total().undeliveredAuxBytes
                             ? ""
                             : " (nothing dropped by auxscope)");
            line << "\nperf.data: writer backlog peak " << human(double(rep.maxBacklogBytes)) << " of "
                 << human(double(rep.backlogBudget)) << " budget";
            if (rep.spillRuns)
                line << " (up to " << human(double(rep.maxSpilledBytes)) << " of it spilled beyond the "
                     << human(double(rep.queueCapacity)) << " queue, " << human(double(rep.maxSpillMemory))
                     << " of spill memory)";
            if (rep.auxCopiedBytes)
                line << ", " << human(double(rep.auxCopiedBytes)) << " of AUX data copied into it";
            const auto total = summary.total();
            if ((rep.recordsHeldBack + rep.auxHeldBack) && (total.lostRecords || total.auxTruncated))
                line << "\nperf.data: the kernel lost " << total.lostRecords << " records"
                     << (total.auxTruncated
                             ? " and stopped the AUX trace " + std::to_string(total.auxTruncated) + " times"
                             : std::string())
                     << " while the writer was behind: its backlog reached its budget of "
                     << human(double(rep.backlogBudget))
                     << " (a faster disk, -z or a larger --writer-budget)";
            line << "\nperf.data: synthesized " << rep.synthesized.threads << " threads of "
                 << rep.synthesized.processes << " processes and " << rep.synthesized.mmap2
                 << " executable maps from /proc in " << int(rep.synthesisSeconds * 1000) << " ms";
            for (auto& n : rep.notes)
                line << "\nperf.data note: " << n;
            text += line.str() + "\n";
        }
    }
    if (const TriggerEngine* te = (*session)->triggerEngine()) {
        const TriggerFileData td{te->report(), te->settings().postNs, te->settings().max,
                                 te->settings().gapNs};
        if (json) {
            std::ostringstream t;
            const TriggerReport& tr = td.report;
            t << "{\"firings\":[";
            for (size_t i = 0; i < tr.firings.size(); ++i) {
                const TriggerFiring& f = tr.firings[i];
                t << (i ? "," : "") << "{\"trigger\":" << f.trigger << ",\"pid\":" << f.pid
                  << ",\"tid\":" << f.tid << ",\"cpu\":" << f.cpu << ",\"start\":" << f.start
                  << ",\"time\":" << f.time << ",\"duration\":" << f.duration
                  << ",\"snapshot\":" << (f.snapshot == UINT64_MAX ? int64_t(-1) : int64_t(f.snapshot))
                  << ",\"snapshot_time\":" << f.snapshotTime << ",\"window_start\":" << f.windowStart
                  << ",\"window_end\":" << f.windowEnd << "}";
            }
            t << "],\"skipped\":{";
            for (size_t i = 0; i < tr.skipped.size(); ++i)
                t << (i ? "," : "") << jsonString(triggerSkipName(TriggerSkip(i))) << ":" << tr.skipped[i];
            t << "},\"snapshots_requested\":" << tr.snapshotsRequested
              << ",\"snapshots_taken\":" << tr.snapshotsTaken << ",\"samples\":" << tr.samples
              << ",\"unmatched_ends\":" << tr.unmatchedEnds << ",\"lost\":" << tr.lost << "}";
            jsonMembers.emplace_back("triggers", t.str());
        } else {
            text += formatTriggerReport(td, 0, 200);
        }
    }
    if (replay) {
        const std::string r = formatReplay(*replay, replayOptions, json);
        if (json)
            jsonMembers.emplace_back("replay", r);
        else
            text += r;
    }
    if (json) text = formatSummaryJson(summary, jsonMembers);
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
