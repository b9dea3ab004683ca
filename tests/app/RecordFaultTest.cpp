// SPDX-License-Identifier: GPL-3.0-or-later
// Faults during `auxscope record -o` (issue 17), real kernel, software events:
//   - a launched command that exits at once;
//   - SIGTERM and SIGINT during a system-wide capture;
//   - a traced CPU going offline during a system-wide capture (and back).
// Each must end with the documented exit status and a valid, finished
// perf.data: auxscope's reader reads it without an issue, the header was
// rewritten at the end (data size set), FINISHED_ROUND records are there, and
// Debian's perf (the oracle, where installed) reads it silently with
// `perf report --stats` and `perf script`. Skipped, with the reason, only where
// perf_event_open is denied or the kernel refuses to take a CPU offline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "PerfEvent.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"

#include "WriterTestSupport.h"

namespace auxscope {
namespace {

using namespace writertest;
using namespace std::chrono_literals;

#define SKIP_WITHOUT_PERF_EVENTS()                                                \
    do {                                                                          \
        if (auto reason = ::auxscope::perfCaptureUnavailableReason())             \
            GTEST_SKIP() << "perf_event_open is not permitted here: " << *reason; \
    } while (0)

std::string dir() {
    static std::string d = makeTempDir("record-faults");
    return d;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// `auxscope record ...` started in the background, its stdout and stderr to `log`.
pid_t spawnRecord(const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> argv = {AUXSCOPE_TEST_BINARY, "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = fork();
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        std::vector<char*> a;
        for (auto& s : argv)
            a.push_back(s.data());
        a.push_back(nullptr);
        execv(a[0], a.data());
        _exit(127);
    }
    return pid;
}

// The wait status, or -1 (and the process killed) when it does not end in time.
int waitFor(pid_t pid, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (std::chrono::steady_clock::now() < until) {
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        std::this_thread::sleep_for(20ms);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

// Until `path` holds records past its header (the capture is running), at most 10 s.
bool waitForRecords(const std::string& path) {
    for (int i = 0; i < 500; ++i) {
        std::error_code ec;
        if (std::filesystem::file_size(path, ec) > 64 * 1024 && !ec) return true;
        std::this_thread::sleep_for(20ms);
    }
    return false;
}

struct FileCheck {
    std::map<uint32_t, uint64_t> recordsByType;
    // Per CPU: samples and the perf time of the first and last record.
    struct Cpu {
        uint64_t samples = 0, first = UINT64_MAX, last = 0;
    };
    std::map<int64_t, Cpu> cpus;
};

// The file is finished and valid for auxscope's reader and for perf.
FileCheck expectValidFile(const std::string& path) {
    FileCheck c;
    PerfDataFileView v = readPerfDataFile(path);
    EXPECT_TRUE(v.ok) << v.error;
    EXPECT_GT(v.header.data.size, 0u) << "the header is rewritten at the end: data size set";
    EXPECT_EQ(
        v.header.data.offset + v.header.data.size,
        v.records.empty() ? v.header.data.offset : v.records.back().offset + v.records.back().bytes.size())
        << "the data section ends with a whole record";
    EXPECT_FALSE(v.features.empty()) << "feature sections written at the end";

    auto file = PerfDataReader::open(path);
    EXPECT_TRUE(file) << (file ? "" : file.error().message);
    if (!file) return c;
    EXPECT_FALSE(file->hasErrors());
    for (const auto& issue : file->issues())
        ADD_FAILURE() << "reader issue: " << issue.message;
    c.recordsByType = file->summary().recordsByType;
    EXPECT_GE(c.recordsByType[perfdata::kRecordFinishedRound], 1u) << "FINISHED_ROUND records";
    (void)file->forEachRecord([&](const PerfRecord& r) {
        if (r.header.type >= 64 || r.cpu < 0) return true;
        FileCheck::Cpu& cpu = c.cpus[r.cpu];
        if (r.header.type == PERF_RECORD_SAMPLE) ++cpu.samples;
        if (r.parsed.time) {
            cpu.first = std::min(cpu.first, r.parsed.time);
            cpu.last = std::max(cpu.last, r.parsed.time);
        }
        return true;
    });

    auto perf = perfBinary();
    if (!perf) {
        std::printf("perf (linux-perf) is not installed: the file is checked by auxscope's reader only\n");
        return c;
    }
    auto stats = runCommand({*perf, "report", "--stats", "-i", path}, 90);
    EXPECT_TRUE(stats.exitedZero()) << stats.err;
    EXPECT_EQ(stats.err, "") << "perf report --stats warned";
    auto s = parsePerfStats(stats.out);
    for (auto& [type, n] : c.recordsByType)
        EXPECT_EQ(s[perfRecordTypeName(type)], n) << "perf and auxscope count " << perfRecordTypeName(type);
    auto script = runCommand({*perf, "script", "-i", path}, 90);
    EXPECT_TRUE(script.exitedZero()) << script.err;
    EXPECT_EQ(script.err, "") << "perf script warned";
    return c;
}

// ------------------------------------------------------------ launched command

TEST(RecordFaults, LaunchedCommandThatExitsAtOnceLeavesACleanValidFile) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string sub = dir() + "/exits-at-once";
    std::filesystem::create_directories(sub);
    const std::string path = sub + "/true.data";
    auto r = runCommand({AUXSCOPE_TEST_BINARY, "record", "-o", path, "--", "/bin/true"}, 60);
    ASSERT_TRUE(r.exitedZero()) << "status " << r.status << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find("command exited with status 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("perf.data: " + path), std::string::npos) << r.out;
    // Nothing left behind beside the file (no temporary, no second file).
    std::vector<std::string> left;
    for (auto& e : std::filesystem::directory_iterator(sub))
        left.push_back(e.path().filename());
    EXPECT_EQ(left, std::vector<std::string>{"true.data"});
    FileCheck c = expectValidFile(path);
    EXPECT_GE(c.recordsByType[PERF_RECORD_COMM], 1u) << "the command's exec";
    EXPECT_GE(c.recordsByType[PERF_RECORD_EXIT], 1u) << "the command's exit";

    // Its exit status comes through, and the file is still whole.
    const std::string failing = sub + "/exit3.data";
    auto e = runCommand({AUXSCOPE_TEST_BINARY, "record", "-o", failing, "--", "/bin/sh", "-c", "exit 3"}, 60);
    EXPECT_TRUE(WIFEXITED(e.status) && WEXITSTATUS(e.status) == 3) << "status " << e.status << "\n" << e.err;
    EXPECT_NE(e.out.find("command exited with status 3"), std::string::npos) << e.out;
    expectValidFile(failing);
}

// ------------------------------------------------------------ SIGTERM / SIGINT

class RecordSignal : public ::testing::TestWithParam<int> {};

TEST_P(RecordSignal, DuringASystemWideCaptureEndsItCleanlyWithStatusZero) {
    SKIP_WITHOUT_PERF_EVENTS();
    const int signo = GetParam();
    const std::string name = signo == SIGTERM ? "sigterm" : "sigint";
    const std::string path = dir() + "/" + name + ".data", log = dir() + "/" + name + ".log";
    const pid_t pid = spawnRecord({"-a", "-o", path}, log);
    ASSERT_GT(pid, 0);
    const bool running = waitForRecords(path);
    std::this_thread::sleep_for(300ms);
    kill(pid, signo);
    const int status = waitFor(pid, 60s);
    ASSERT_TRUE(running) << "the capture wrote nothing in 10 s:\n" << readFile(log);
    ASSERT_NE(status, -1) << "auxscope record did not end within 60 s of " << name << ":\n" << readFile(log);
    // Documented (auxscope record --help): the signal ends the capture like
    // --duration does; the file is finished and the exit status is 0.
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << name << ": status " << status << "\n"
                                                               << readFile(log);
    const std::string out = readFile(log);
    EXPECT_NE(out.find("perf.data: " + path), std::string::npos) << "the summary names the file:\n" << out;
    FileCheck c = expectValidFile(path);
    uint64_t samples = 0;
    for (auto& [cpu, s] : c.cpus)
        samples += s.samples;
    EXPECT_GT(samples, 0u);
}

INSTANTIATE_TEST_SUITE_P(RecordFaults, RecordSignal, ::testing::Values(SIGTERM, SIGINT),
                         [](const auto& info) {
                             return std::string(info.param == SIGTERM ? "Sigterm" : "Sigint");
                         });

// ------------------------------------------------------------ CPU hotplug

std::string onlinePath(int cpu) {
    return "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/online";
}

// Writes "0" or "1" to a CPU's online file: "" or the error.
std::string setOnline(int cpu, bool on) {
    const int fd = ::open(onlinePath(cpu).c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return std::strerror(errno);
    const char c = on ? '1' : '0';
    const ssize_t n = ::write(fd, &c, 1);
    const int err = errno;
    ::close(fd);
    return n == 1 ? std::string() : std::strerror(err);
}

bool isOnline(int cpu) {
    return readFile(onlinePath(cpu)).rfind("1", 0) == 0;
}

// Brings `cpu` back online whatever happens to the test: at scope exit, and
// from a watchdog process (its own session, ignoring the usual signals) that
// does it when this process ends without saying so (a crash, a kill, a timeout).
class OnlineGuard {
public:
    explicit OnlineGuard(int cpu) : cpu_(cpu) {
        int p[2];
        if (pipe(p) != 0) return;
        watchdog_ = fork();
        if (watchdog_ == 0) {
            setsid();
            for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE})
                signal(s, SIG_IGN);
            close(p[1]);
            char c;
            while (read(p[0], &c, 1) < 0 && errno == EINTR) {
            }
            (void)setOnline(cpu, true);
            _exit(0);
        }
        close(p[0]);
        pipe_ = p[1];
    }
    ~OnlineGuard() {
        const std::string err = setOnline(cpu_, true);
        if (!err.empty() && !isOnline(cpu_))
            ADD_FAILURE() << "could not bring cpu " << cpu_ << " back online: " << err;
        if (pipe_ >= 0) close(pipe_);  // the watchdog ends (having done the same)
        if (watchdog_ > 0) waitpid(watchdog_, nullptr, 0);
    }

private:
    int cpu_;
    int pipe_ = -1;
    pid_t watchdog_ = -1;
};

TEST(RecordFaults, CpuGoingOfflineDuringCaptureIsReportedAndTheFileStaysValid) {
    SKIP_WITHOUT_PERF_EVENTS();
    // The highest online CPU but 0 (cpu0 is often not hot-pluggable).
    int cpu = -1, online = 0;
    for (int c = 0; c < 4096; ++c) {
        std::error_code ec;
        if (!std::filesystem::exists("/sys/devices/system/cpu/cpu" + std::to_string(c), ec)) break;
        const bool on = c == 0 || isOnline(c);
        online += on;
        if (on && c != 0 && std::filesystem::exists(onlinePath(c), ec)) cpu = c;
    }
    if (online < 2 || cpu < 0)
        GTEST_SKIP() << "needs two online CPUs, one of them hot-pluggable (" << online << " online)";
    if (geteuid() != 0) GTEST_SKIP() << "taking a CPU offline needs root";
    if (::access(onlinePath(cpu).c_str(), W_OK) != 0)
        GTEST_SKIP() << onlinePath(cpu) << " is not writable: " << std::strerror(errno);

    const std::string path = dir() + "/hotplug.data", log = dir() + "/hotplug.log";
    const pid_t pid = spawnRecord({"-a", "-o", path}, log);
    ASSERT_GT(pid, 0);
    std::string refused;
    {
        OnlineGuard guard(cpu);
        const bool running = waitForRecords(path);
        std::this_thread::sleep_for(300ms);
        if (running) refused = setOnline(cpu, false);
        if (running && refused.empty()) {
            // The other CPUs carry on: about a second of capture with cpu offline.
            std::this_thread::sleep_for(1000ms);
            const std::string back = setOnline(cpu, true);
            EXPECT_EQ(back, "") << "bringing cpu " << cpu << " back online";
            std::this_thread::sleep_for(300ms);
        }
        kill(pid, SIGINT);
        const int status = waitFor(pid, 60s);
        ASSERT_TRUE(running) << "the capture wrote nothing in 10 s:\n" << readFile(log);
        ASSERT_NE(status, -1) << "auxscope record did not end within 60 s:\n" << readFile(log);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n"
                                                                   << readFile(log);
    }
    EXPECT_TRUE(isOnline(cpu)) << "cpu " << cpu << " is back online after the test";
    if (!refused.empty()) GTEST_SKIP() << "the kernel refused to take cpu " << cpu << " offline: " << refused;

    const std::string out = readFile(log);
    const std::string offlineNote = "cpu " + std::to_string(cpu) + " went offline";
    EXPECT_NE(out.find(offlineNote), std::string::npos) << "the summary says which CPU went offline:\n"
                                                        << out;
    EXPECT_NE(out.find("cpu " + std::to_string(cpu) + " came back online"), std::string::npos) << out;
    for (size_t at = out.find("note: cpu " + std::to_string(cpu)); at != std::string::npos;
         at = out.find("note: cpu " + std::to_string(cpu), at + 1))
        std::printf("%s\n", out.substr(at, out.find('\n', at) - at).c_str());
    FileCheck c = expectValidFile(path);
    // The offline CPU's records stop; the others' go on for the second it was
    // offline (and past it).
    ASSERT_TRUE(c.cpus.count(cpu)) << "records of cpu " << cpu << " before it went offline";
    const uint64_t offlineAt = c.cpus[cpu].last;
    uint64_t othersLast = 0;
    for (auto& [other, s] : c.cpus)
        if (other != cpu) othersLast = std::max(othersLast, s.last);
    EXPECT_GT(othersLast, offlineAt + 800'000'000ull)
        << "the other CPUs were captured for the ~1 s cpu " << cpu << " was offline (perf time ns)";
}

}  // namespace
}  // namespace auxscope
