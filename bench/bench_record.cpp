// SPDX-License-Identifier: GPL-3.0-or-later
// bench_record: the seed benchmark. Runs the syscall_storm workload (close(-1) N
// times, 2N raw_syscalls records) bare, under `perf record` and under
// `auxscope record`, interleaved over several rounds, and prints the medians of
// wall time, start-up time and lost records side by side with a PASS/FAIL line per
// target. It is a report, not a test: it exits 0 whatever the figures, 1 when a
// configuration could not be run or measured, and 3 when a run saw fewer records
// than the workload made (the tools did not do the same work).
//
// The verdicts compare like with like: `auxscope record -m N -o FILE` against
// `perf record -r 1 -m N -o FILE`: both write perf.data, both with the same data
// ring, and both readers at SCHED_FIFO priority 1 (perf -r 1 puts its reader, its
// only thread, there; the workload it forks stays SCHED_OTHER; auxscope's drain
// thread takes SCHED_FIFO 1 by default). The other configurations are context,
// printed as such: each tool at its default priority, both at SCHED_OTHER
// (auxscope --no-realtime), auxscope without -o (writes nothing), perf to a pipe.
//
// Measurements, per run:
//   wall      CLOCK_MONOTONIC from just before fork() of the command to waitpid().
//   start-up  the workload's own CLOCK_MONOTONIC reading at the top of main (a vDSO
//             read, so it precedes the workload's first system call) minus the
//             driver's timestamp taken just before fork(). For "bare" this is the
//             cost of fork + exec + dynamic linking; for a tracer it adds the
//             tracer's own set-up.
//   lost      records the kernel dropped because a data ring was full.
//             auxscope: total.lost_records of its --json summary (the sum of the
//             PERF_RECORD_LOST records' counts); total.kernel_lost is the kernel's
//             own PERF_FORMAT_LOST count and is shown beside it.
//             perf (file mode): read from the perf.data file itself (see
//             readPerfData below): the sum of the lost counts of its PERF_RECORD_LOST
//             records. This needs no text parsing and no `perf report` run (a
//             `perf report -D` of a 600 MB file takes over a minute). It is
//             cross-checked against perf record's own stderr: the number of LOST
//             records must equal the "lost N chunks" perf prints, and the SAMPLE count
//             must equal its "(N samples)". perf also stores the kernel's
//             PERF_FORMAT_LOST count as PERF_RECORD_LOST_SAMPLES records at the end of
//             the file; their sum is shown as perf's "kernel lost".
//             perf (pipe mode): the stream goes to /dev/null and perf prints no loss
//             summary in pipe mode, so lost is not measured ("-").
//   tracer CPU  user+sys time of the whole command tree (wait4's rusage, which
//             includes the workload the tracer waited for) minus the workload's own
//             user+sys time (getrusage at its end). The kernel's cost of writing the
//             records into the ring is charged to the workload, so this is what the
//             tracer itself burns: perf's reader and its file writes, or auxscope's
//             set-up and drain thread.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifndef AUXSCOPE_BENCH_AUXSCOPE
#define AUXSCOPE_BENCH_AUXSCOPE "auxscope"
#endif
#ifndef AUXSCOPE_BENCH_WORKLOAD
#define AUXSCOPE_BENCH_WORKLOAD "syscall_storm"
#endif

namespace {

constexpr const char* kEvent = "raw_syscalls:*";

int64_t monotonicNs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

double timevalSeconds(const timeval& tv) {
    return double(tv.tv_sec) + double(tv.tv_usec) / 1e6;
}

std::string readWholeFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// ---------------------------------------------------------------------------
// Options

struct Options {
    std::string auxscope = AUXSCOPE_BENCH_AUXSCOPE;
    std::string perf = "perf";
    std::string workload = AUXSCOPE_BENCH_WORKLOAD;
    std::string tmpdir;
    int runs = 5;
    long calls = 3'000'000;
    int pages = 128;  // perf's default data ring for root: 128 pages = 512 KiB per CPU
    bool warmup = true;
    bool verbose = false;
    bool onlyPairs = false;  // only the file-writing pairs: perf -r 1 -o FILE, auxscope -o FILE (both rings)
};

void usage(FILE* f) {
    std::fprintf(f,
                 "usage: bench_record [options]\n"
                 "  --auxscope PATH   auxscope binary (default: %s)\n"
                 "  --perf PATH       perf binary (default: perf from PATH)\n"
                 "  --workload PATH   workload binary (default: %s)\n"
                 "  --runs N          interleaved rounds (default 5)\n"
                 "  --calls N         close(-1) calls per run (default 3000000)\n"
                 "  --pages N         data ring pages per CPU for the same-size runs (default 128,\n"
                 "                    perf's default for root)\n"
                 "  --tmpdir DIR      where perf.data and scratch files go (default $TMPDIR or /tmp)\n"
                 "  --no-warmup       skip the short untimed warm-up run of every configuration\n"
                 "  --only-pairs      run only perf record -r 1 -o FILE and auxscope record -o FILE\n"
                 "                    (same ring and default ring): the loss pairs, quicker\n"
                 "  --verbose         print each run's command and the tracers' messages\n",
                 AUXSCOPE_BENCH_AUXSCOPE, AUXSCOPE_BENCH_WORKLOAD);
}

std::optional<Options> parseOptions(int argc, char** argv) {
    Options o;
    if (const char* t = std::getenv("TMPDIR"); t && *t) o.tmpdir = t;
    if (o.tmpdir.empty()) o.tmpdir = "/tmp";
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "bench_record: %s needs a value\n", a.c_str());
                return nullptr;
            }
            return argv[++i];
        };
        auto number = [&](long& out, long min) {
            const char* v = value();
            if (!v) return false;
            char* end = nullptr;
            out = std::strtol(v, &end, 10);
            if (*v == '\0' || *end != '\0' || out < min) {
                std::fprintf(stderr, "bench_record: bad value for %s: %s\n", a.c_str(), v);
                return false;
            }
            return true;
        };
        long n = 0;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            std::exit(0);
        } else if (a == "--auxscope" || a == "--perf" || a == "--workload" || a == "--tmpdir") {
            const char* v = value();
            if (!v) return std::nullopt;
            (a == "--auxscope"   ? o.auxscope
             : a == "--perf"     ? o.perf
             : a == "--workload" ? o.workload
                                 : o.tmpdir) = v;
        } else if (a == "--runs") {
            if (!number(n, 1)) return std::nullopt;
            o.runs = int(n);
        } else if (a == "--calls") {
            if (!number(n, 0)) return std::nullopt;
            o.calls = n;
        } else if (a == "--pages") {
            if (!number(n, 1)) return std::nullopt;
            o.pages = int(n);
        } else if (a == "--no-warmup") {
            o.warmup = false;
        } else if (a == "--verbose") {
            o.verbose = true;
        } else if (a == "--only-pairs") {
            o.onlyPairs = true;
        } else {
            std::fprintf(stderr, "bench_record: unknown option %s\n", a.c_str());
            usage(stderr);
            return std::nullopt;
        }
    }
    return o;
}

// ---------------------------------------------------------------------------
// Running a command

struct Spawned {
    bool started = false;
    std::string error;
    int status = 0;
    int64_t launchNs = 0;  // just before fork()
    double wallSeconds = 0;
    double cpuSeconds = 0;  // user + sys of the command and the children it waited for
};

// Runs argv with stdout and stderr sent to the given files. Nothing is read while it
// runs: the driver sleeps in wait4 and takes no CPU away from what is measured.
Spawned spawn(const std::vector<std::string>& argv, const std::string& stdoutPath,
              const std::string& stderrPath) {
    Spawned s;
    int out = open(stdoutPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = open(stderrPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || err < 0) {
        s.error = "cannot open output files: " + std::string(std::strerror(errno));
        if (out >= 0) close(out);
        if (err >= 0) close(err);
        return s;
    }
    std::vector<char*> args;
    for (auto& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    s.launchNs = monotonicNs();
    pid_t pid = fork();
    if (pid < 0) {
        s.error = "fork: " + std::string(std::strerror(errno));
        close(out);
        close(err);
        return s;
    }
    if (pid == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        execvp(args[0], args.data());
        const char* msg = "bench_record: exec failed\n";
        (void)!write(STDERR_FILENO, msg, std::strlen(msg));
        _exit(127);
    }
    close(out);
    close(err);
    rusage ru{};
    pid_t r;
    do
        r = wait4(pid, &s.status, 0, &ru);
    while (r < 0 && errno == EINTR);
    s.wallSeconds = double(monotonicNs() - s.launchNs) / 1e9;
    if (r != pid) {
        s.error = "wait4: " + std::string(std::strerror(errno));
        return s;
    }
    s.started = true;
    s.cpuSeconds = timevalSeconds(ru.ru_utime) + timevalSeconds(ru.ru_stime);
    return s;
}

std::string describeStatus(int status) {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return "status " + std::to_string(status);
}

// The workload's result line (see syscall_storm.c).
struct WorkloadReport {
    int64_t mainNs = 0, loopNs = 0, cpuNs = 0;
    long calls = 0;
};

std::optional<WorkloadReport> readWorkloadReport(const std::string& path) {
    std::string text = readWholeFile(path);
    WorkloadReport w;
    long long mainNs = 0, loopNs = 0, cpuNs = 0;
    if (std::sscanf(text.c_str(), "main_ns=%lld loop_ns=%lld calls=%ld cpu_ns=%lld", &mainNs, &loopNs,
                    &w.calls, &cpuNs) != 4)
        return std::nullopt;
    w.mainNs = mainNs, w.loopNs = loopNs, w.cpuNs = cpuNs;
    return w;
}

// ---------------------------------------------------------------------------
// perf.data reading (file mode). Only what the benchmark needs: the file header's
// data section, then a walk over the record headers in it, as laid out in perf's
// documented file format (tools/perf/Documentation/perf.data-file-format.txt).

struct PerfFileSection {
    uint64_t offset;
    uint64_t size;
};
struct PerfFileHeader {
    char magic[8];  // "PERFILE2"
    uint64_t headerSize;
    uint64_t attrSize;
    PerfFileSection attrs;
    PerfFileSection data;
    PerfFileSection eventTypes;
    uint64_t features[4];
};

struct PerfDataCounts {
    std::string error;
    uint64_t records = 0;
    uint64_t samples = 0;
    uint64_t lostRecords = 0;  // number of PERF_RECORD_LOST records ("chunks")
    uint64_t lost = 0;         // sum of their lost counts
    uint64_t lostSamples = 0;  // sum of PERF_RECORD_LOST_SAMPLES counts
    uint64_t compressed = 0;   // PERF_RECORD_COMPRESSED: contents not counted
};

PerfDataCounts readPerfData(const std::string& path) {
    constexpr uint32_t kPerfRecordCompressed = 81;  // perf's own record type for zstd (-z) data
    PerfDataCounts c;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        c.error = path + ": " + std::strerror(errno);
        return c;
    }
    struct stat st {};
    fstat(fd, &st);
    const size_t fileSize = size_t(st.st_size);
    if (fileSize < sizeof(PerfFileHeader)) {
        close(fd);
        c.error = path + ": too short for a perf.data header";
        return c;
    }
    void* map = mmap(nullptr, fileSize, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        c.error = path + ": mmap: " + std::strerror(errno);
        return c;
    }
    madvise(map, fileSize, MADV_SEQUENTIAL);
    const auto* base = static_cast<const unsigned char*>(map);
    PerfFileHeader h;
    std::memcpy(&h, base, sizeof h);
    if (std::memcmp(h.magic, "PERFILE2", 8) != 0) {
        c.error = path + ": not a little-endian perf.data file (pipe-mode data has no file header)";
    } else if (h.data.offset > fileSize || h.data.size > fileSize - h.data.offset || h.data.size == 0) {
        c.error = path + ": data section out of bounds or empty (perf did not finish the file)";
    } else {
        uint64_t pos = h.data.offset;
        const uint64_t end = h.data.offset + h.data.size;
        while (pos + sizeof(perf_event_header) <= end) {
            perf_event_header eh;
            std::memcpy(&eh, base + pos, sizeof eh);
            if (eh.size < sizeof eh || pos + eh.size > end) {
                c.error = path + ": corrupt record header at offset " + std::to_string(pos);
                break;
            }
            ++c.records;
            const unsigned char* body = base + pos + sizeof eh;
            uint64_t v = 0;
            switch (eh.type) {
                case PERF_RECORD_SAMPLE:
                    ++c.samples;
                    break;
                case PERF_RECORD_LOST:  // u64 id; u64 lost; then sample_id
                    if (eh.size >= sizeof eh + 16) {
                        std::memcpy(&v, body + 8, 8);
                        ++c.lostRecords;
                        c.lost += v;
                    }
                    break;
                case PERF_RECORD_LOST_SAMPLES:  // u64 lost; then sample_id
                    if (eh.size >= sizeof eh + 8) {
                        std::memcpy(&v, body, 8);
                        c.lostSamples += v;
                    }
                    break;
                case kPerfRecordCompressed:
                    ++c.compressed;
                    break;
                default:
                    break;
            }
            pos += eh.size;
        }
        if (c.compressed && c.error.empty())
            c.error = path + ": compressed records present; their contents were not counted";
    }
    munmap(map, fileSize);
    return c;
}

// perf record's own account on stderr: "Processed N events and lost M chunks!"
// (printed only when something was lost) and "Captured and wrote X MB FILE (N samples)".
struct PerfStderr {
    std::optional<uint64_t> lostChunks;  // 0 when the file was written and no loss was reported
    std::optional<uint64_t> samples;
};

PerfStderr parsePerfStderr(const std::string& text) {
    PerfStderr p;
    if (auto at = text.find(" and lost "); at != std::string::npos) {
        unsigned long long n = 0;
        if (std::sscanf(text.c_str() + at, " and lost %llu chunks", &n) == 1) p.lostChunks = n;
    }
    if (auto at = text.find("Captured and wrote"); at != std::string::npos) {
        if (!p.lostChunks) p.lostChunks = 0;
        auto open = text.find('(', at), nl = text.find('\n', at);
        unsigned long long n = 0;
        if (open != std::string::npos && open < nl &&
            std::sscanf(text.c_str() + open, "(%llu samples)", &n) == 1)
            p.samples = n;
    }
    return p;
}

// ---------------------------------------------------------------------------
// auxscope --json summary: a few numeric fields of its "total" object, the first
// CPU's ring size and the messages. A key lookup is enough for this fixed format.

std::optional<uint64_t> jsonNumberAfter(const std::string& json, size_t from, const std::string& key) {
    auto at = json.find("\"" + key + "\":", from);
    if (at == std::string::npos) return std::nullopt;
    const char* p = json.c_str() + at + key.size() + 3;
    char* end = nullptr;
    unsigned long long v = std::strtoull(p, &end, 10);
    if (end == p) return std::nullopt;
    return v;
}

struct AuxscopeSummary {
    std::string error;
    uint64_t samples = 0, lostRecords = 0, lostSamples = 0, kernelLost = 0, ringBytes = 0;
    uint64_t sinkLost = 0;  // records the perf.data writer dropped (sink_lost[].records)
    // The file writer's backlog (output object, -o FILE only): peak and budget in
    // bytes, and the times records waited in the kernel's rings at the budget.
    std::optional<uint64_t> backlogPeak, backlogBudget, heldBackAtBudget;
    int commandExitStatus = -1;
    std::string messages;  // the raw JSON array, "[]" when empty
};

AuxscopeSummary parseAuxscopeJson(const std::string& json) {
    AuxscopeSummary s;
    const size_t total = json.find("\"total\":{");
    if (total == std::string::npos) {
        s.error = "no \"total\" object in auxscope's output";
        return s;
    }
    auto get = [&](size_t from, const char* key, uint64_t& out) {
        auto v = jsonNumberAfter(json, from, key);
        if (!v && s.error.empty()) s.error = std::string("no \"") + key + "\" in auxscope's output";
        if (v) out = *v;
    };
    get(total, "samples", s.samples);
    get(total, "lost_records", s.lostRecords);
    get(total, "lost_samples", s.lostSamples);
    get(total, "kernel_lost", s.kernelLost);
    get(0, "ring_bytes", s.ringBytes);
    uint64_t status = 0;
    get(total, "command_exit_status", status);
    s.commandExitStatus = int(status);
    if (auto sl = json.find("\"sink_lost\":[", total); sl != std::string::npos) {
        const size_t end = json.find(']', sl);
        for (size_t at = json.find("\"records\":", sl); at != std::string::npos && at < end;
             at = json.find("\"records\":", at + 1))
            if (auto v = jsonNumberAfter(json, at, "records")) s.sinkLost += *v;
    }
    if (auto out = json.find("\"output\":{"); out != std::string::npos) {
        s.backlogPeak = jsonNumberAfter(json, out, "writer_backlog_peak");
        s.backlogBudget = jsonNumberAfter(json, out, "writer_backlog_budget");
        s.heldBackAtBudget = jsonNumberAfter(json, out, "held_back_at_budget");
    }
    if (auto m = json.find("\"messages\":", total); m != std::string::npos) {
        auto close = json.find(']', m);
        s.messages = json.substr(m + 11, close == std::string::npos ? std::string::npos : close - m - 10);
    }
    return s;
}

// ---------------------------------------------------------------------------
// Configurations and runs

enum class Kind { Bare, PerfFile, PerfPipe, Auxscope, AuxscopeFile };

struct Config {
    Kind kind;
    std::string label;
    int pages;  // 0: the tool's default
    // The tracer's reader at SCHED_FIFO priority kRealtimePriority: perf record -r N (its
    // only thread, the reader; the workload it forks stays SCHED_OTHER), auxscope's
    // default (its drain thread; --no-realtime when false).
    bool realtime = false;
};

// The SCHED_FIFO priority auxscope's drain thread takes (capture/DrainThread.cpp).
constexpr int kRealtimePriority = 1;

struct RunResult {
    bool ok = false;
    std::string error;
    double wallSeconds = 0;
    double startupMs = 0;
    double loopSeconds = 0;
    double tracerCpuSeconds = 0;
    std::optional<uint64_t> lost, kernelLost, samples;
    std::optional<uint64_t> backlogPeak, backlogBudget, heldBackAtBudget;  // auxscope -o FILE
    uint64_t ringBytes = 0;
    bool normalPriority = false;     // auxscope said its drain thread could not take SCHED_FIFO
    std::vector<std::string> notes;  // warnings worth showing even when the run counts
};

class Bench {
public:
    explicit Bench(Options o) : opt_(std::move(o)) {}

    bool prepare();
    void cleanup();
    RunResult run(const Config& cfg, long calls);
    const Options& options() const { return opt_; }

private:
    std::vector<std::string> commandFor(const Config& cfg, long calls) const;

    Options opt_;
    std::string dir_;
    std::string perfData_, workloadOut_, stdout_, stderr_;
};

bool Bench::prepare() {
    std::string tmpl = opt_.tmpdir + "/bench_record.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data())) {
        std::fprintf(stderr, "bench_record: mkdtemp in %s: %s\n", opt_.tmpdir.c_str(), std::strerror(errno));
        return false;
    }
    dir_ = buf.data();
    perfData_ = dir_ + "/perf.data";
    workloadOut_ = dir_ + "/workload.out";
    stdout_ = dir_ + "/stdout";
    stderr_ = dir_ + "/stderr";
    setenv("AUXSCOPE_BENCH_OUT", workloadOut_.c_str(), 1);

    // perf resolves raw_syscalls through tracefs; auxscope mounts it itself as root.
    struct stat st {};
    if (stat("/sys/kernel/tracing/events/raw_syscalls", &st) != 0 &&
        stat("/sys/kernel/debug/tracing/events/raw_syscalls", &st) != 0) {
        if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0)
            std::printf("mounted tracefs on /sys/kernel/tracing\n");
        else
            std::fprintf(stderr,
                         "bench_record: raw_syscalls not found and tracefs could not be mounted: %s\n",
                         std::strerror(errno));
    }
    return true;
}

void Bench::cleanup() {
    if (dir_.empty()) return;
    for (auto* p : {&perfData_, &workloadOut_, &stdout_, &stderr_})
        unlink(p->c_str());
    unlink((perfData_ + ".old").c_str());
    rmdir(dir_.c_str());
}

std::vector<std::string> Bench::commandFor(const Config& cfg, long calls) const {
    const std::string n = std::to_string(calls);
    std::vector<std::string> pages;
    if (cfg.pages > 0) pages = {"-m", std::to_string(cfg.pages)};
    std::vector<std::string> cmd;
    switch (cfg.kind) {
        case Kind::Bare:
            return {opt_.workload, n};
        case Kind::PerfFile:
        case Kind::PerfPipe:
            cmd = {opt_.perf, "record", "-e", kEvent};
            if (cfg.realtime) cmd.insert(cmd.end(), {"-r", std::to_string(kRealtimePriority)});
            cmd.insert(cmd.end(), pages.begin(), pages.end());
            cmd.insert(cmd.end(),
                       {"-o", cfg.kind == Kind::PerfFile ? perfData_ : "-", "--", opt_.workload, n});
            return cmd;
        case Kind::Auxscope:
        case Kind::AuxscopeFile:
            cmd = {opt_.auxscope, "record", "-e", kEvent};
            if (!cfg.realtime) cmd.push_back("--no-realtime");
            cmd.insert(cmd.end(), pages.begin(), pages.end());
            if (cfg.kind == Kind::AuxscopeFile) cmd.insert(cmd.end(), {"-o", perfData_});
            cmd.insert(cmd.end(), {"--json", "--", opt_.workload, n});
            return cmd;
    }
    return cmd;
}

RunResult Bench::run(const Config& cfg, long calls) {
    RunResult r;
    unlink(workloadOut_.c_str());
    unlink(perfData_.c_str());
    auto cmd = commandFor(cfg, calls);
    if (opt_.verbose) {
        std::string line;
        for (auto& a : cmd)
            line += (line.empty() ? "" : " ") + a;
        std::printf("  $ %s%s\n", line.c_str(), cfg.kind == Kind::PerfPipe ? " > /dev/null" : "");
    }
    Spawned s = spawn(cmd, cfg.kind == Kind::PerfPipe ? "/dev/null" : stdout_, stderr_);
    std::string err = readWholeFile(stderr_);
    if (!s.started) {
        r.error = s.error;
        return r;
    }
    if (!WIFEXITED(s.status) || WEXITSTATUS(s.status) != 0) {
        r.error = describeStatus(s.status) + "; stderr: " + err.substr(0, 400);
        return r;
    }
    auto w = readWorkloadReport(workloadOut_);
    if (!w) {
        r.error = "the workload left no report in " + workloadOut_ + "; stderr: " + err.substr(0, 400);
        return r;
    }
    if (w->calls != calls) {
        r.error =
            "the workload reports " + std::to_string(w->calls) + " calls, expected " + std::to_string(calls);
        return r;
    }
    r.wallSeconds = s.wallSeconds;
    r.startupMs = double(w->mainNs - s.launchNs) / 1e6;
    r.loopSeconds = double(w->loopNs) / 1e9;
    r.tracerCpuSeconds = std::max(0.0, s.cpuSeconds - double(w->cpuNs) / 1e9);

    switch (cfg.kind) {
        case Kind::Bare:
            r.lost = 0;
            break;
        case Kind::PerfFile: {
            PerfDataCounts c = readPerfData(perfData_);
            unlink(perfData_.c_str());
            if (!c.error.empty()) {
                r.error = c.error;
                return r;
            }
            r.lost = c.lost;
            r.kernelLost = c.lostSamples;
            r.samples = c.samples;
            PerfStderr p = parsePerfStderr(err);
            if (!p.lostChunks || *p.lostChunks != c.lostRecords)
                r.notes.push_back("perf.data holds " + std::to_string(c.lostRecords) +
                                  " LOST records but perf's stderr says " +
                                  (p.lostChunks ? std::to_string(*p.lostChunks) : "nothing") +
                                  " lost chunks");
            if (!p.samples || *p.samples != c.samples)
                r.notes.push_back("perf.data holds " + std::to_string(c.samples) +
                                  " samples but perf's stderr says " +
                                  (p.samples ? std::to_string(*p.samples) : "nothing"));
            break;
        }
        case Kind::PerfPipe:
            break;  // not observable: see the comment at the top
        case Kind::Auxscope:
        case Kind::AuxscopeFile: {
            AuxscopeSummary a = parseAuxscopeJson(readWholeFile(stdout_));
            if (!a.error.empty()) {
                r.error = a.error;
                return r;
            }
            if (a.commandExitStatus != 0) {
                r.error = "auxscope reports command exit status " + std::to_string(a.commandExitStatus);
                return r;
            }
            // Records the file writer had to drop count as lost too (none since the
            // drain thread holds records back instead).
            r.lost = a.lostRecords + a.sinkLost;
            r.kernelLost = a.kernelLost;
            if (a.sinkLost) r.notes.push_back("file writer dropped " + std::to_string(a.sinkLost));
            r.samples = a.samples;
            r.ringBytes = a.ringBytes;
            r.backlogPeak = a.backlogPeak;
            r.backlogBudget = a.backlogBudget;
            r.heldBackAtBudget = a.heldBackAtBudget;
            if (a.lostSamples) r.notes.push_back("lost_samples " + std::to_string(a.lostSamples));
            if (a.kernelLost != a.lostRecords)
                r.notes.push_back("kernel_lost " + std::to_string(a.kernelLost) + " != lost_records " +
                                  std::to_string(a.lostRecords));
            if (a.messages.size() > 2) r.notes.push_back("messages: " + a.messages);
            r.normalPriority = a.messages.find("drain thread runs at normal priority") != std::string::npos;
            break;
        }
    }
    if (opt_.verbose && !err.empty()) r.notes.push_back("stderr: " + err);
    r.ok = true;
    return r;
}

// ---------------------------------------------------------------------------
// Statistics and report

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Column {
    std::vector<double> wall, startup, loop, cpu, lost, kernelLost, samples;
    uint64_t ringBytes = 0;
    int failures = 0;

    void add(const RunResult& r) {
        if (!r.ok) {
            ++failures;
            return;
        }
        wall.push_back(r.wallSeconds);
        startup.push_back(r.startupMs);
        loop.push_back(r.loopSeconds);
        cpu.push_back(r.tracerCpuSeconds);
        if (r.lost) lost.push_back(double(*r.lost));
        if (r.kernelLost) kernelLost.push_back(double(*r.kernelLost));
        if (r.samples) samples.push_back(double(*r.samples));
        if (r.ringBytes) ringBytes = r.ringBytes;
    }
    double maxOf(const std::vector<double>& v) const {
        return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    }
    double minOf(const std::vector<double>& v) const {
        return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
    }
};

std::string count(const std::vector<double>& v) {
    if (v.empty()) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.0f", median(v));
    return b;
}

void printRun(int round, const Config& cfg, const RunResult& r) {
    if (!r.ok) {
        std::printf("round %d  %-36s FAILED: %s\n", round, cfg.label.c_str(), r.error.c_str());
        return;
    }
    auto opt = [](const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
    std::printf(
        "round %d  %-36s wall %6.3f s  start-up %7.2f ms  loop %6.3f s  tracer CPU %6.3f s  lost %s"
        "  kernel lost %s  samples %s\n",
        round, cfg.label.c_str(), r.wallSeconds, r.startupMs, r.loopSeconds, r.tracerCpuSeconds,
        opt(r.lost).c_str(), opt(r.kernelLost).c_str(), opt(r.samples).c_str());
    for (auto& n : r.notes)
        std::printf("         note: %s\n", n.c_str());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    auto parsed = parseOptions(argc, argv);
    if (!parsed) return 2;
    Bench bench(*parsed);
    const Options& o = bench.options();
    if (!bench.prepare()) return 1;

    const std::string same = "-m " + std::to_string(o.pages);
    const std::string rt = "-r " + std::to_string(kRealtimePriority);
    // The verdicts compare the first two writing configurations: both tools write
    // perf.data, with the same data ring, and each one's reader at SCHED_FIFO
    // priority 1 (perf -r 1; auxscope's drain thread by default). The rest is context.
    const std::vector<Config> configs = {
        {Kind::Bare, "bare", 0},
        {Kind::PerfFile, "perf record " + rt + " " + same + " -o FILE", o.pages, true},
        {Kind::AuxscopeFile, "auxscope record " + same + " -o FILE", o.pages, true},
        {Kind::PerfFile, "perf record " + same + " -o FILE", o.pages},
        {Kind::AuxscopeFile, "auxscope record --no-realtime " + same + " -o FILE", o.pages},
        {Kind::AuxscopeFile, "auxscope record (default ring) -o FILE", 0, true},
        {Kind::Auxscope, "auxscope record " + same + " (no file)", o.pages, true},
        {Kind::Auxscope, "auxscope record (default ring, no file)", 0, true},
        {Kind::PerfPipe, "perf record " + same + " -o - >/dev/null", o.pages},
    };
    enum { kBare, kPerfRt, kAuxFile, kPerf, kAuxFileNoRt, kAuxFileDefault, kAux, kAuxDefault, kPerfPipe };

    std::printf(
        "bench_record: %ld x close(-1) (%ld raw_syscalls records), %d interleaved rounds, event '%s'\n",
        o.calls, 2 * o.calls, o.runs, kEvent);
    std::printf("  workload %s\n  perf     %s\n  auxscope %s\n\n", o.workload.c_str(), o.perf.c_str(),
                o.auxscope.c_str());
    std::fflush(stdout);

    bool failed = false;
    if (o.warmup) {
        // Untimed: page in the binaries and libraries, let the tools mount and scan tracefs.
        for (size_t i = 0; i < configs.size(); ++i) {
            const Config& cfg = configs[i];
            if (o.onlyPairs && i != kPerfRt && i != kAuxFile && i != kAuxFileDefault) continue;
            RunResult r = bench.run(cfg, 1000);
            if (!r.ok) {
                std::printf("warm-up %-36s FAILED: %s\n", cfg.label.c_str(), r.error.c_str());
                failed = true;
            }
        }
        if (failed) {
            bench.cleanup();
            return 1;
        }
    }

    std::vector<Column> columns(configs.size());
    std::vector<std::vector<RunResult>> byRound(o.runs, std::vector<RunResult>(configs.size()));
    for (int round = 0; round < o.runs; ++round) {
        // Interleaved, and the starting configuration rotates, so no configuration
        // always runs right after the same other one.
        for (size_t k = 0; k < configs.size(); ++k) {
            size_t i = (k + size_t(round)) % configs.size();
            if (o.onlyPairs && i != kPerfRt && i != kAuxFile && i != kAuxFileDefault) continue;
            RunResult r = bench.run(configs[i], o.calls);
            printRun(round + 1, configs[i], r);
            if (!r.ok) failed = true;
            columns[i].add(r);
            byRound[round][i] = r;
        }
    }
    bench.cleanup();

    std::printf("\nMedians of %d runs, %ld calls; lost = records dropped by the kernel (ring full)\n", o.runs,
                o.calls);
    std::printf("%-44s | %7s | %13s | %11s | %6s | %8s | %11s | %9s | %10s\n", "configuration", "wall s",
                "wall min/max", "start-up ms", "loop s", "lost", "kernel lost", "samples", "tracer CPU");
    std::printf("%s\n", std::string(44 + 7 + 13 + 11 + 6 + 8 + 11 + 9 + 10 + 8 * 3 + 1, '-').c_str());
    for (size_t i = 0; i < configs.size(); ++i) {
        const Column& c = columns[i];
        std::string label = configs[i].label;
        if (configs[i].kind == Kind::Auxscope && configs[i].pages == 0 && c.ringBytes)
            label = "auxscope record (default, " + std::to_string(c.ringBytes / 1024) + " KiB, no file)";
        if (c.wall.empty() && c.failures == 0) {
            std::printf("%-44s | not run (--only-pairs)\n", label.c_str());
            continue;
        }
        if (c.wall.empty()) {
            std::printf("%-44s | all %d runs failed\n", label.c_str(), c.failures);
            continue;
        }
        char minmax[32];
        std::snprintf(minmax, sizeof minmax, "%.3f/%.3f", c.minOf(c.wall), c.maxOf(c.wall));
        std::printf("%-44s | %7.3f | %13s | %11.2f | %6.3f | %8s | %11s | %9s | %8.3f s%s\n", label.c_str(),
                    median(c.wall), minmax, median(c.startup), median(c.loop), count(c.lost).c_str(),
                    count(c.kernelLost).c_str(), count(c.samples).c_str(), median(c.cpu),
                    c.failures ? "  (some runs failed)" : "");
    }
    std::printf(
        "loop s: the workload's own time for its close() loop. tracer CPU: user+sys time of the tracer, the"
        " workload's own excluded.\n'-r %d': perf's reader at SCHED_FIFO %d, the priority auxscope's drain"
        " thread takes by default ('--no-realtime': SCHED_OTHER, perf's default).\n"
        "perf '-o -' writes its stream to /dev/null (no file cost); its losses are not observable. '(no "
        "file)':"
        " auxscope without -o writes nothing.\nauxscope's lost column includes records its file writer"
        " dropped.\n\n",
        kRealtimePriority, kRealtimePriority);

    // Per pair (one round): what each tool lost writing perf.data, the kernel's
    // drops and (auxscope) anything its file writer dropped, side by side.
    std::printf("Losses per round, all writing perf.data (records; kernel drops + writer drops):\n");
    const int idx[] = {kPerfRt, kAuxFile, kPerf, kAuxFileNoRt, kAuxFileDefault};
    std::printf("%5s", "round");
    for (int k : idx)
        std::printf(" | %s", configs[size_t(k)].label.c_str());
    std::printf("\n");
    int pairs = 0, auxZero = 0, auxDefaultZero = 0;
    for (int round = 0; round < o.runs; ++round) {
        const auto& rr = byRound[size_t(round)];
        auto lost = [](const RunResult& r) {
            std::string t = r.ok && r.lost ? std::to_string(*r.lost) : std::string(r.ok ? "-" : "failed");
            // auxscope -o FILE: the writer backlog's peak, and whether it reached its budget.
            if (r.ok && r.backlogPeak) {
                char b[96];
                std::snprintf(b, sizeof b, " (backlog peak %.0f MiB%s)", double(*r.backlogPeak) / 1048576.0,
                              r.heldBackAtBudget && *r.heldBackAtBudget ? ", at budget" : "");
                t += b;
            }
            return t;
        };
        std::printf("%5d", round + 1);
        for (int k : idx)
            std::printf(" | %*s", int(configs[size_t(k)].label.size()),
                        o.onlyPairs && k != kPerfRt && k != kAuxFile && k != kAuxFileDefault
                            ? "not run"
                            : lost(rr[size_t(k)]).c_str());
        std::printf("\n");
        if (rr[kPerfRt].ok && rr[kAuxFile].ok) {
            ++pairs;
            auxZero += rr[kAuxFile].lost && *rr[kAuxFile].lost == 0;
            auxDefaultZero +=
                rr[kAuxFileDefault].ok && rr[kAuxFileDefault].lost && *rr[kAuxFileDefault].lost == 0;
        }
    }
    for (auto& round : byRound)
        if (round[kAuxFileDefault].ok && round[kAuxFileDefault].backlogBudget) {
            std::printf("auxscope's writer backlog budget: %.0f MiB (the 32 MiB queue and its spill)\n",
                        double(*round[kAuxFileDefault].backlogBudget) / 1048576.0);
            break;
        }
    std::printf("\n");

    bool verdictFailed = false, countMismatch = false;
    auto verdict = [&verdictFailed](bool ok) {
        verdictFailed |= !ok;
        return ok ? "PASS" : "FAIL";
    };
    auto lostOf = [](const Column& c) { return c.lost.empty() ? -1.0 : median(c.lost); };
    // One tool against another, round by round: medians, and in how many rounds the
    // first was not slower.
    struct Pair {
        double wallA = 0, wallB = 0;
        int notSlower = 0, rounds = 0;
        bool ok = false;
    };
    auto pairOf = [&](int a, int b) {
        Pair p;
        const Column &ca = columns[size_t(a)], &cb = columns[size_t(b)];
        if (ca.wall.empty() || cb.wall.empty()) return p;
        p.ok = true;
        p.wallA = median(ca.wall), p.wallB = median(cb.wall);
        for (auto& round : byRound)
            if (round[size_t(a)].ok && round[size_t(b)].ok) {
                ++p.rounds;
                p.notSlower += round[size_t(a)].wallSeconds <= round[size_t(b)].wallSeconds;
            }
        return p;
    };

    // Was each tool's reader at the priority its label says? perf exits with an error
    // when -r is refused; auxscope says so in its messages and goes on.
    int auxNormal = 0;
    for (auto& round : byRound)
        auxNormal += round[kAuxFile].ok && round[kAuxFile].normalPriority;
    if (auxNormal)
        std::printf(
            "NOTE  auxscope's drain thread ran at normal priority in %d rounds (SCHED_FIFO refused): the"
            " verdict pair is not at the same priority in those rounds\n",
            auxNormal);

    std::printf("Verdicts: both writing perf.data (-o FILE), %s, both readers at SCHED_FIFO %d:\n",
                same.c_str(), kRealtimePriority);
    const Column& perfRt = columns[kPerfRt];
    const Column& auxFile = columns[kAuxFile];
    if (Pair p = pairOf(kAuxFile, kPerfRt); p.ok) {
        std::printf(
            "%s  auxscope record %s -o FILE time <= perf record %s %s -o FILE's: %.3f s vs %.3f s (auxscope "
            "not"
            " slower in %d of %d rounds)\n",
            verdict(p.wallA <= p.wallB), same.c_str(), rt.c_str(), same.c_str(), p.wallA, p.wallB,
            p.notSlower, p.rounds);
    }
    if (!perfRt.lost.empty() && !auxFile.lost.empty()) {
        // Nothing lost on either side counts as a pass: there is nothing fewer than 0.
        const bool ok = lostOf(auxFile) < lostOf(perfRt) || lostOf(auxFile) == 0;
        std::printf(
            "%s  auxscope record %s -o FILE lost < perf record %s %s -o FILE's: %.0f vs %.0f of %ld "
            "records\n",
            verdict(ok), same.c_str(), rt.c_str(), same.c_str(), lostOf(auxFile), lostOf(perfRt),
            2 * o.calls);
    }
    std::printf(
        "%s  auxscope -o FILE loses 0 records in every pair: %d of %d (%s), %d of %d (default ring)\n",
        verdict(pairs > 0 && auxZero == pairs && auxDefaultZero == pairs), auxZero, pairs, same.c_str(),
        auxDefaultZero, pairs);
    // Every run that counts records must account for the workload's 2 x calls
    // (samples + lost >= 2 x calls; a few more come from the workload's start-up): a
    // tool that saw fewer records did less work than the other, and its time proves nothing.
    {
        int runs = 0, shortRuns = 0;
        std::string which;
        for (size_t round = 0; round < byRound.size(); ++round)
            for (size_t i = 0; i < configs.size(); ++i) {
                const RunResult& r = byRound[round][i];
                if (!r.ok || !r.samples || !r.lost) continue;
                ++runs;
                const uint64_t seen = *r.samples + *r.lost;
                if (seen < uint64_t(2 * o.calls)) {
                    ++shortRuns;
                    if (which.size() < 300)
                        which += " [round " + std::to_string(round + 1) + " " + configs[i].label + ": " +
                                 std::to_string(seen) + "]";
                }
            }
        countMismatch = shortRuns > 0;
        std::printf(
            "%s  every counted run saw the workload's %ld records (samples + lost): %d of %d runs%s\n",
            verdict(runs > 0 && shortRuns == 0), 2 * o.calls, runs - shortRuns, runs, which.c_str());
    }

    std::printf("\nContext (not verdicts): other pairs\n");
    const Column& perf = columns[kPerf];
    if (Pair p = pairOf(kAuxFile, kPerf); p.ok)
        std::printf(
            "  each at its default priority (auxscope's drain SCHED_FIFO %d, perf SCHED_OTHER), both -o FILE:"
            " auxscope %.3f s vs perf %.3f s (not slower in %d of %d rounds); lost %.0f vs %.0f\n",
            kRealtimePriority, p.wallA, p.wallB, p.notSlower, p.rounds, lostOf(auxFile), lostOf(perf));
    if (Pair p = pairOf(kAuxFileNoRt, kPerf); p.ok)
        std::printf(
            "  both SCHED_OTHER (auxscope --no-realtime), both -o FILE: auxscope %.3f s vs perf %.3f s (not"
            " slower in %d of %d rounds); lost %.0f vs %.0f\n",
            p.wallA, p.wallB, p.notSlower, p.rounds, lostOf(columns[kAuxFileNoRt]), lostOf(perf));
    if (Pair p = pairOf(kAux, kPerfRt); p.ok)
        std::printf(
            "  auxscope without -o (writes nothing) %.3f s vs perf %s -o FILE %.3f s; lost %.0f vs %.0f;"
            " perf -o - >/dev/null %.3f s\n",
            p.wallA, rt.c_str(), p.wallB, lostOf(columns[kAux]), lostOf(perfRt),
            median(columns[kPerfPipe].wall));

    const Column& aux = columns[kAux];
    const Column& auxDefault = columns[kAuxDefault];
    if (!auxDefault.lost.empty())
        std::printf(
            "%s  auxscope default ring (no file) loses nothing: max lost %.0f, max kernel lost %.0f over %zu"
            " runs\n",
            verdict(auxDefault.maxOf(auxDefault.lost) == 0 && auxDefault.maxOf(auxDefault.kernelLost) == 0),
            auxDefault.maxOf(auxDefault.lost), auxDefault.maxOf(auxDefault.kernelLost),
            auxDefault.lost.size());
    if (!aux.startup.empty() && !auxDefault.startup.empty()) {
        double a = median(aux.startup), d = median(auxDefault.startup);
        std::printf(
            "%s  auxscope start-up <= 20 ms: %.2f ms (%s, no file), %.2f ms (default ring); bare %.2f ms\n",
            verdict(a <= 20 && d <= 20), a, same.c_str(), d, median(columns[kBare].startup));
    }
    if (!auxFile.startup.empty()) {
        const double f = median(auxFile.startup), fd = median(columns[kAuxFileDefault].startup);
        std::printf(
            "%s  auxscope -o FILE start-up <= 20 ms: %.2f ms (%s), %.2f ms (default ring); perf %s -o FILE "
            "%.2f"
            " ms, perf -o FILE %.2f ms\n",
            verdict(f <= 20 && fd <= 20), f, same.c_str(), fd, rt.c_str(), median(perfRt.startup),
            median(perf.startup));
    }
    std::printf("\nbench_record: %s\n",
                verdictFailed ? "FAIL (a verdict above failed)" : "all verdicts PASS");
    return failed ? 1 : countMismatch ? 3 : 0;
}
