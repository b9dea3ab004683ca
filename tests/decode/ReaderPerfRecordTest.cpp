// SPDX-License-Identifier: GPL-3.0-or-later
// Files written right here by Debian's perf (software events and tracepoints
// work in this machine's kernel): file mode, pipe mode, zstd-compressed, and a
// capture killed with SIGKILL. `perf report -D` on the same file is the oracle.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <set>
#include <sstream>
#include <thread>

#include "ReaderTestSupport.h"

using namespace auxscope;
using namespace auxscope::test;

namespace {

std::string issuesText(const PerfDataReader& r) {
    std::string s;
    for (auto& i : r.issues())
        s += (i.error ? "error: " : "warning: ") + i.message + "\n";
    return s;
}

class ReaderPerfRecord : public ::testing::Test {
protected:
    void SetUp() override {
        auto p = perfBinary();
        if (!p) GTEST_SKIP() << "perf is not installed or does not run for this kernel";
        perf_ = *p;
        ASSERT_FALSE(tmp_.path().empty()) << "cannot create a temp dir";
    }

    // Runs `perf record ARGS` writing `file` (or stdout redirected to it with
    // pipe). Skips when the kernel refuses perf here; fails on anything else.
    bool record(const std::string& args, const std::string& file, bool pipe = false,
                const std::string& workload = "sleep 0.2") {
        const std::string cmd = pipe
                                    ? perf_ + " record " + args + " -o - -- " + workload + " > '" + file + "'"
                                    : perf_ + " record " + args + " -o '" + file + "' -- " + workload;
        auto out = runCommand("cd '" + tmp_.path() + "' && " + cmd, true);
        if (out.status != 0) {
            if (out.output.find("ermission") != std::string::npos ||
                out.output.find("perf_event_paranoid") != std::string::npos ||
                out.output.find("not supported") != std::string::npos) {
                skipReason_ = "perf record is not permitted here: " + out.output;
                return false;
            }
            ADD_FAILURE() << cmd << " failed (" << out.status << "):\n" << out.output;
            return false;
        }
        return true;
    }

    PerfDataReader openAndCompare(const std::string& file, bool perOffset = true) {
        auto r = PerfDataReader::open(file);
        if (!r.ok()) {
            ADD_FAILURE() << r.error().message;
            std::abort();
        }
        auto dump = perfReportDump(perf_, file);
        EXPECT_TRUE(dump.ran) << dump.error;
        for (auto& d : compareWithPerf(*r, dump, perOffset))
            ADD_FAILURE() << file << ": " << d;
        EXPECT_FALSE(r->hasErrors()) << issuesText(*r);
        EXPECT_GT(r->summary().records, 0u);
        return std::move(r).value();
    }

    // "# key : value" lines of `perf report --header-only`.
    std::map<std::string, std::vector<std::string>> headerOnly(const std::string& file) {
        std::map<std::string, std::vector<std::string>> kv;
        auto out = runCommand(perf_ + " report --header-only -i '" + file + "' 2>/dev/null");
        std::istringstream in(out.output);
        for (std::string line; std::getline(in, line);) {
            if (line.rfind("# ", 0) != 0) continue;
            const size_t colon = line.find(" : ");
            if (colon == std::string::npos) continue;
            std::string key = line.substr(2, colon - 2), value = line.substr(colon + 3);
            while (!key.empty() && key.back() == ' ')
                key.pop_back();
            while (!value.empty() && value.back() == ' ')
                value.pop_back();
            kv[key].push_back(value);
        }
        return kv;
    }

    std::string perf_;
    TempDir tmp_;
    std::string skipReason_;
};

#define RECORD_OR_SKIP(...)                                        \
    do {                                                           \
        if (!record(__VA_ARGS__)) {                                \
            if (!skipReason_.empty()) GTEST_SKIP() << skipReason_; \
            return;                                                \
        }                                                          \
    } while (0)

}  // namespace

TEST_F(ReaderPerfRecord, CpuClockSystemWideFileMode) {
    const std::string file = tmp_.file("cpu-clock.data");
    RECORD_OR_SKIP("-e cpu-clock -a", file);
    auto r = openAndCompare(file);
    EXPECT_EQ(r.mode(), PerfDataMode::File);
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);

    // Features against perf's own header printout.
    auto kv = headerOnly(file);
    const auto& f = r.features();
    EXPECT_EQ(f.hostname.value_or("?"), kv["hostname"].at(0));
    EXPECT_EQ(f.osRelease.value_or("?"), kv["os release"].at(0));
    EXPECT_EQ(f.version.value_or("?"), kv["perf version"].at(0));
    EXPECT_EQ(f.arch.value_or("?"), kv["arch"].at(0));
    EXPECT_EQ(f.cpuId.value_or("?"), kv["cpuid"].at(0));
    EXPECT_EQ(f.cpuDesc.value_or("?"), kv["cpudesc"].at(0));
    ASSERT_TRUE(f.nrCpus);
    EXPECT_EQ(std::to_string(f.nrCpus->online), kv["nrcpus online"].at(0));
    EXPECT_EQ(std::to_string(f.nrCpus->available), kv["nrcpus avail"].at(0));
    EXPECT_EQ(std::to_string(f.totalMemKb.value_or(0)) + " kB", kv["total memory"].at(0));
    ASSERT_TRUE(f.cmdline);
    std::string cmdline;
    for (auto& a : *f.cmdline)
        cmdline += (cmdline.empty() ? "" : " ") + a;
    EXPECT_EQ(cmdline, kv["cmdline"].at(0));
    // "time of first sample : 1859.994847" (seconds, 6 decimals)
    ASSERT_TRUE(f.sampleTime);
    char first[64];
    std::snprintf(first, sizeof first, "%" PRIu64 ".%06" PRIu64, f.sampleTime->first / 1000000000,
                  f.sampleTime->first % 1000000000 / 1000);
    EXPECT_EQ(first, kv["time of first sample"].at(0));
    // "event : name = cpu-clock, , id = { 3378, 3379 }, type = 1, ..."
    ASSERT_EQ(kv["event"].size(), r.attrs().size());
    for (size_t i = 0; i < r.attrs().size(); ++i) {
        const PerfAttr& a = r.attrs()[i];
        std::string ids;
        for (uint64_t id : a.ids)
            ids += (ids.empty() ? "" : ", ") + std::to_string(id);
        EXPECT_EQ(kv["event"][i].rfind("name = " + a.name + ", , id = { " + ids + " }", 0), 0u)
            << kv["event"][i];
    }
    // Samples are attributed to cpu-clock, on the CPUs that exist.
    const uint32_t cpus = f.nrCpus->available;
    for (auto& [cpu, st] : r.summary().cpus)
        EXPECT_LT(cpu, int64_t(cpus));
}

TEST_F(ReaderPerfRecord, GroupAndClockFeatures) {
    const std::string file = tmp_.file("group.data");
    RECORD_OR_SKIP("-k mono -e '{cpu-clock,task-clock}' -a", file);
    auto r = openAndCompare(file);
    const auto& f = r.features();
    // "# group: {cpu-clock,task-clock}"
    ASSERT_TRUE(f.groupDesc);
    ASSERT_EQ(f.groupDesc->size(), 1u);
    EXPECT_EQ((*f.groupDesc)[0].leaderIndex, 0u);
    EXPECT_EQ((*f.groupDesc)[0].members, 2u);
    EXPECT_EQ(r.attrs()[0].name, "cpu-clock");
    EXPECT_EQ(r.attrs()[1].name, "task-clock");
    EXPECT_EQ(r.attrs()[1].attr.config, uint64_t(PERF_COUNT_SW_TASK_CLOCK));
    const std::string header =
        runCommand(perf_ + " report --header-only -i '" + file + "' 2>/dev/null").output;
    // "# clockid frequency: 1000 MHz" (perf prints the stored resolution times 1000)
    ASSERT_TRUE(f.clockid);
    EXPECT_NE(header.find("# clockid frequency: " + std::to_string(*f.clockid * 1000) + " MHz"),
              std::string::npos)
        << header;
    // "# clockid: monotonic (1)"
    ASSERT_TRUE(f.clockData);
    EXPECT_EQ(f.clockData->clockid, 1u);
    EXPECT_NE(header.find("# clockid: monotonic (1)"), std::string::npos) << header;
    EXPECT_GT(f.clockData->wallClockNs, 0u);
}

TEST_F(ReaderPerfRecord, SingleEventWithoutIds) {
    // One event on one process: perf asks for no id at all (IP|TID|TIME|PERIOD);
    // every record belongs to the sole event.
    const std::string file = tmp_.file("single.data");
    // A workload that runs on the CPU for a while, so there are samples.
    RECORD_OR_SKIP("-e cpu-clock", file, false, "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'");
    auto r = openAndCompare(file);
    ASSERT_EQ(r.attrs().size(), 1u);
    const uint64_t st = r.attrs()[0].attr.sample_type;
    EXPECT_FALSE(st & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) << st;
    size_t samples = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type != PERF_RECORD_SAMPLE) return true;
        ++samples;
        EXPECT_FALSE(rec.parseError) << *rec.parseError;
        EXPECT_NE(rec.parsed.event, nullptr);
        EXPECT_NE(rec.parsed.ip, 0u);
        EXPECT_GT(rec.parsed.time, 0u);
        return true;
    }));
    EXPECT_GT(samples, 0u);
}

TEST_F(ReaderPerfRecord, TracepointsFileMode) {
    const std::string file = tmp_.file("syscalls.data");
    RECORD_OR_SKIP("-e 'raw_syscalls:*' -a", file);
    auto r = openAndCompare(file);
    // Named from HEADER_EVENT_DESC (perf expands the glob in its own order and adds a dummy event).
    std::set<std::string> names;
    for (const PerfAttr& a : r.attrs())
        names.insert(a.name);
    EXPECT_TRUE(names.count("raw_syscalls:sys_enter")) << r.attrs().size();
    EXPECT_TRUE(names.count("raw_syscalls:sys_exit"));
    // The tracing data (event formats) is kept raw.
    bool tracing = false;
    for (auto& raw : r.features().raw)
        tracing = tracing || (raw.id == perfdata::kFeatTracingData && !raw.bytes.empty());
    EXPECT_TRUE(tracing);
    // Samples carry their raw tracepoint payload.
    size_t withRaw = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        withRaw += rec.header.type == PERF_RECORD_SAMPLE && !rec.parsed.raw.empty();
        return true;
    }));
    EXPECT_EQ(withRaw, r.summary().recordsByType.at(PERF_RECORD_SAMPLE));
}

TEST_F(ReaderPerfRecord, PipeMode) {
    const std::string file = tmp_.file("pipe.data");
    RECORD_OR_SKIP("-e cpu-clock -a", file, true);
    auto r = openAndCompare(file);
    EXPECT_EQ(r.mode(), PerfDataMode::Pipe);
    ASSERT_GE(r.attrs().size(), 1u);
    EXPECT_EQ(r.attrs()[0].name, "cpu-clock");
    EXPECT_FALSE(r.features().present.empty());  // from HEADER_FEATURE records
    EXPECT_TRUE(r.features().hostname);
    EXPECT_GT(r.summary().recordsByType.at(perfdata::kRecordHeaderFeature), 0u);
}

TEST_F(ReaderPerfRecord, PipeModeTracepointsWithTracingDataPayload) {
    const std::string file = tmp_.file("pipe-syscalls.data");
    RECORD_OR_SKIP("-e 'raw_syscalls:*' -a", file, true);
    auto r = openAndCompare(file);
    EXPECT_EQ(r.summary().recordsByType.at(perfdata::kRecordHeaderTracingData), 1u);
    uint64_t payload = 0;
    ASSERT_TRUE(r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type == perfdata::kRecordHeaderTracingData) payload = rec.payload.size();
        return true;
    }));
    EXPECT_GT(payload, 0u);
}

TEST_F(ReaderPerfRecord, CompressedFileMode) {
    const std::string file = tmp_.file("z.data");
    RECORD_OR_SKIP("-z -e cpu-clock -a", file);
    auto r = openAndCompare(file);
    ASSERT_TRUE(r.features().compressed);
    EXPECT_EQ(r.features().compressed->type, 1u);  // zstd
    EXPECT_GT(r.summary().compressedRecords, 0u);
    EXPECT_GT(r.summary().decompressedBytes, r.summary().compressedBytes);
    EXPECT_GT(r.summary().recordsByType.at(PERF_RECORD_SAMPLE), 0u);
}

TEST_F(ReaderPerfRecord, CompressedPipeMode) {
    const std::string file = tmp_.file("pz.data");
    RECORD_OR_SKIP("-z -e cpu-clock -a", file, true);
    auto r = openAndCompare(file);
    EXPECT_EQ(r.mode(), PerfDataMode::Pipe);
    EXPECT_GT(r.summary().compressedRecords, 0u);
}

TEST_F(ReaderPerfRecord, CaptureKilledWithSigkillIsRecovered) {
    const std::string file = tmp_.file("killed.data");
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (chdir(tmp_.path().c_str()) != 0) _exit(127);
        int devnull = ::open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 2), dup2(devnull, 1);
        // No workload: system-wide perf records until it is stopped, so killing it leaves no orphan.
        execl(perf_.c_str(), "perf", "record", "-e", "cpu-clock", "-a", "-m", "4", "-o", file.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
    }
    // Let perf write its header and some data (a small ring makes it flush often).
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    auto bytes = readFileBytes(file);
    if (bytes.size() < sizeof(perfdata::FileHeader))
        GTEST_SKIP() << "perf wrote no header before it was killed";
    perfdata::FileHeader h;
    std::memcpy(&h, bytes.data(), sizeof h);
    if (h.data.size != 0) GTEST_SKIP() << "perf had already finished the header";

    auto r = PerfDataReader::open(file);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->dataSizeRecovered());
    bool said = false;
    for (auto& i : r->issues())
        said = said || i.cause.find("data size recovered by scanning") != std::string::npos;
    EXPECT_TRUE(said) << issuesText(*r);
    ASSERT_GT(r->summary().records, 0u);
    EXPECT_EQ(r->summary().dataEnd, r->dataOffset() + r->dataSize());

    // Oracle: the file with the recovered size written into its header (and no
    // features announced) is one perf reads; its records are the reader's.
    h.data.size = r->dataSize();
    std::memset(h.features, 0, sizeof h.features);
    std::memcpy(bytes.data(), &h, sizeof h);
    bytes.resize(h.data.offset + h.data.size);
    const std::string fixed = tmp_.file("fixed.data");
    writeFileBytes(fixed, bytes);
    auto dump = perfReportDump(perf_, fixed);
    ASSERT_TRUE(dump.ran) << dump.error;
    for (auto& d : compareWithPerf(*r, dump, true))
        ADD_FAILURE() << d;
}
