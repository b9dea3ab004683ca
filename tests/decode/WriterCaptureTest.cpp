// SPDX-License-Identifier: GPL-3.0-or-later
// Real captures written to perf.data while capturing, read back by Debian's perf
// as the oracle: perf must read every file without a word on stderr, and count
// the same samples, switches, COMM/FORK/MMAP records as auxscope's own capture
// statistics (plus what the writer synthesized from /proc). Also the command
// line's failure modes: SIGKILL mid-capture, and a disk that fills up.
// Skip (with the reason) where perf_event_open is denied or perf is missing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "CaptureSession.h"
#include "QueuedSink.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"

#include "WriterTestSupport.h"

namespace auxscope {
namespace {

using namespace writertest;

#define SKIP_WITHOUT_PERF_EVENTS()                                                \
    do {                                                                          \
        if (auto reason = ::auxscope::perfCaptureUnavailableReason())             \
            GTEST_SKIP() << "perf_event_open is not permitted here: " << *reason; \
    } while (0)

std::string dir() {
    static std::string d = makeTempDir("capture");
    return d;
}

struct Captured {
    CaptureSummary summary;
    PerfDataWriterCaptureReport report;
    std::string path;
};

// Captures with the library (the same objects `auxscope record -o` uses).
Captured capture(CaptureOptions opts, const std::string& name, bool compress) {
    Captured c;
    c.path = dir() + "/" + name;
    auto pmus = PmuRegistry::discover();
    auto session = CaptureSession::open(opts, pmus);
    EXPECT_TRUE(session) << (session ? "" : session.error().message);
    if (!session) return c;
    PerfDataWriterCaptureOptions fo;
    fo.path = c.path;
    fo.compress = compress;
    fo.cmdline = {"writer_kernel_tests"};
    fo.version = "auxscope test";
    auto file = PerfDataWriterCapture::open(**session, fo);
    EXPECT_TRUE(file) << (file ? "" : file.error().message);
    if (!file) return c;
    auto started = (*session)->start();
    EXPECT_TRUE(started) << (started ? "" : started.error().message);
    (*session)->wait();
    auto done = (*file)->finish();
    EXPECT_TRUE(done) << (done ? "" : done.error().message);
    c.summary = (*session)->summary();
    c.report = (*file)->report();
    return c;
}

std::string joinNotes(const std::vector<std::string>& v) {
    std::string s;
    for (auto& x : v)
        s += x + "\n";
    return s;
}

// perf report --stats and perf script must read the file silently, and agree with
// the capture's statistics record type by record type.
void expectPerfAgrees(const std::string& perf, const Captured& c) {
    ASSERT_EQ(c.report.droppedRecords, 0u) << "the writer queue dropped records; counts cannot match";
    const CpuCounters t = c.summary.total();
    ASSERT_GT(t.records, 0u);
    auto stats = runCommand({perf, "report", "--stats", "-i", c.path}, 90);
    ASSERT_TRUE(stats.exitedZero()) << stats.err;
    EXPECT_EQ(stats.err, "") << "perf report --stats warned";
    auto s = parsePerfStats(stats.out);
    const auto& syn = c.report.synthesized;
    EXPECT_EQ(s["SAMPLE"], t.samples);
    EXPECT_EQ(s["SWITCH"] + s["SWITCH_CPU_WIDE"],
              t.byType[PERF_RECORD_SWITCH] + t.byType[PERF_RECORD_SWITCH_CPU_WIDE]);
    EXPECT_EQ(s["COMM"], t.byType[PERF_RECORD_COMM] + syn.comm) << "captured + synthesized";
    EXPECT_EQ(s["FORK"], t.byType[PERF_RECORD_FORK] + syn.fork);
    EXPECT_EQ(s["EXIT"], t.byType[PERF_RECORD_EXIT]);
    EXPECT_EQ(s["MMAP2"], t.byType[PERF_RECORD_MMAP2] + syn.mmap2);
    EXPECT_EQ(s["MMAP"], t.byType[PERF_RECORD_MMAP] + syn.mmap);
    EXPECT_EQ(s["LOST"], t.byType[PERF_RECORD_LOST]);
    EXPECT_EQ(s["ID_INDEX"], 1u);
    EXPECT_GE(s["FINISHED_ROUND"], 1u);

    // auxscope's own reader counts exactly what perf counts, type by type.
    auto file = PerfDataReader::open(c.path);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_FALSE(file->hasErrors());
    for (auto& [type, n] : file->summary().recordsByType)
        EXPECT_EQ(s[perfRecordTypeName(type)], n) << perfRecordTypeName(type);

    auto script = runCommand({perf, "script", "-i", c.path}, 90);
    ASSERT_TRUE(script.exitedZero()) << script.err;
    EXPECT_EQ(script.err, "") << "perf script warned";
    uint64_t lines = 0;
    for (char ch : script.out)
        lines += ch == '\n';
    EXPECT_EQ(lines, t.samples) << "perf script prints one line per sample";
}

TEST(WriterCapture, SystemWideCpuClockAndSwitchesReadBackThroughPerf) {
    SKIP_WITHOUT_PERF_EVENTS();
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "Debian's perf (linux-perf) is not installed: no oracle";
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    o.events = {"cpu-clock"};
    o.durationSeconds = 0.5;
    auto c = capture(o, "system-wide.data", false);
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(c.report.synthesized.processes, 1u) << "every running process is synthesized";
    EXPECT_EQ(c.report.synthesized.comm, c.report.synthesized.threads);
    EXPECT_TRUE(c.report.kernelMapSynthesized) << joinNotes(c.report.notes);
    EXPECT_LT(c.report.synthesisSeconds, 2.0) << "reading /proc for every process stays fast";
    const CpuCounters t = c.summary.total();
    EXPECT_GT(t.samples, 0u);
    EXPECT_GT(t.byType[PERF_RECORD_SWITCH_CPU_WIDE], 0u);
    expectPerfAgrees(*perf, c);

    // The header describes the machine and the events the way perf record does.
    auto head = runCommand({*perf, "report", "--header-only", "-I", "-i", c.path}, 60);
    ASSERT_TRUE(head.exitedZero()) << head.err;
    EXPECT_EQ(head.err, "");
    for (const char* want :
         {"# hostname :", "# os release :", "# perf version : auxscope test", "# arch :", "# nrcpus online :",
          "# total memory :", "# cmdline : writer_kernel_tests", "# event : name = cpu-clock",
          "# event : name = dummy", "# pmu mappings:", "# sibling threads :", "# time of first sample :"})
        EXPECT_NE(head.out.find(want), std::string::npos) << want << "\n" << head.out;
    auto ids = runCommand({*perf, "buildid-list", "-i", c.path}, 60);
    ASSERT_TRUE(ids.exitedZero()) << ids.err;
    if (auto kid = FeatureWriter::kernelBuildId()) {
        std::string hex;
        char b[3];
        for (uint8_t x : *kid) {
            std::snprintf(b, sizeof b, "%02x", x);
            hex += b;
        }
        EXPECT_NE(ids.out.find(hex + " [kernel.kallsyms]"), std::string::npos) << ids.out;
    }
}

TEST(WriterCapture, LaunchedCommandWithTracepointsResolvesToItsBinary) {
    SKIP_WITHOUT_PERF_EVENTS();
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "Debian's perf (linux-perf) is not installed: no oracle";
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {AUXSCOPE_TEST_SPIN, "300"};
    o.events = {"raw_syscalls:*", "cpu-clock"};
    auto c = capture(o, "command.data", false);
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(c.report.synthesized.comm, 1u) << "only the launched command, before its exec";
    EXPECT_EQ(c.report.synthesized.mmap2, 0u);
    const CpuCounters t = c.summary.total();
    EXPECT_GT(t.samples, 100u);
    expectPerfAgrees(*perf, c);

    // cpu-clock samples in the command's own code resolve to its binary (and to the
    // function) through the MMAP2 the kernel wrote at exec. (perf script prints the
    // dso only together with the ip.)
    auto script = runCommand({*perf, "script", "-F", "comm,ip,sym,dso", "-i", c.path}, 60);
    ASSERT_TRUE(script.exitedZero()) << script.err;
    EXPECT_EQ(script.err, "");
    const std::string binary = std::filesystem::path(AUXSCOPE_TEST_SPIN).filename();
    uint64_t own = 0, inSpinWork = 0;
    std::istringstream lines(script.out);
    for (std::string line; std::getline(lines, line);) {
        if (line.find(binary) == std::string::npos ||
            line.find("(" + std::string(AUXSCOPE_TEST_SPIN) + ")") == std::string::npos)
            continue;
        ++own;
        inSpinWork += line.find("spinWork") != std::string::npos;
    }
    EXPECT_GT(own, 10u) << "samples of comm '" << binary << "' in " << AUXSCOPE_TEST_SPIN << ":\n"
                        << script.out.substr(0, 2000);
    EXPECT_GT(inSpinWork, own / 2) << "and most of them in its spinWork()";

    // Its build-id is in the header (it was hit), and matches the file's.
    auto ids = runCommand({*perf, "buildid-list", "-i", c.path}, 60);
    ASSERT_TRUE(ids.exitedZero()) << ids.err;
    auto bid = FeatureWriter::elfBuildId(AUXSCOPE_TEST_SPIN);
    ASSERT_TRUE(bid);
    std::string hex;
    char b[3];
    for (uint8_t x : *bid) {
        std::snprintf(b, sizeof b, "%02x", x);
        hex += b;
    }
    EXPECT_NE(ids.out.find(hex + " " + AUXSCOPE_TEST_SPIN), std::string::npos) << ids.out;
}

TEST(WriterCapture, CompressedFileReadsTheSameCounts) {
    SKIP_WITHOUT_PERF_EVENTS();
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "Debian's perf (linux-perf) is not installed: no oracle";
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    o.events = {"cpu-clock"};
    o.durationSeconds = 0.5;
    auto c = capture(o, "compressed.data", true);
    ASSERT_FALSE(HasFailure());
    EXPECT_TRUE(c.report.compressed);
    EXPECT_GT(c.report.compressedBytes, 0u);
    EXPECT_LT(c.report.compressedBytes, c.report.streamBytes);
    auto v = readPerfDataFile(c.path);
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.features.count(perfdata::kFeatCompressed), 1u);
    bool sawCompressed = false;
    for (auto& r : v.records) {
        sawCompressed |= r.header.type == perfdata::kRecordCompressed;
        EXPECT_NE(r.header.type, uint32_t(PERF_RECORD_SAMPLE))
            << "ring records are only inside COMPRESSED records";
    }
    EXPECT_TRUE(sawCompressed);
    expectPerfAgrees(*perf, c);
}

// A real capture through a writer queue far too small for the drain thread's
// bursts: the drops show in the capture summary per CPU, and the file carries
// LOST records that account for every missing ring record, CPU by CPU.
// A 4 KiB queue cannot take one drain pass of a syscall storm: the drain thread
// holds records back in the kernel's ring instead of dropping them. Everything
// drained is in the file; the only loss is the kernel's own (LOST records, kept
// in the file as the kernel wrote them), and perf reads the file in time order.
TEST(WriterCapture, TinyQueueHoldsRecordsBackAndTheFileHasEveryRecordDrained) {
    SKIP_WITHOUT_PERF_EVENTS();
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {AUXSCOPE_TEST_SPIN, "200"};
    o.events = {"raw_syscalls:*"};
    auto pmus = PmuRegistry::discover();
    auto session = CaptureSession::open(o, pmus);
    ASSERT_TRUE(session) << session.error().message;
    PerfDataWriterCaptureOptions fo;
    fo.path = dir() + "/tiny-queue.data";
    fo.queueBytes = 4096;
    fo.writerBudget = 0;  // the queue alone: no spill, back-pressure at once
    auto file = PerfDataWriterCapture::open(**session, fo);
    ASSERT_TRUE(file) << file.error().message;
    ASSERT_TRUE((*session)->start());
    (*session)->wait();
    ASSERT_TRUE((*file)->finish());
    auto summary = (*session)->summary();
    auto report = (*file)->report();

    EXPECT_TRUE(summary.sinkLosses.empty()) << summary.sinkLosses.front().reason;
    EXPECT_EQ(report.droppedRecords, 0u);
    EXPECT_EQ(report.lostRecordsWritten, 0u) << "the writer had nothing of its own to mark as lost";
    const CpuCounters t = summary.total();
    EXPECT_GT(t.sinkHeldBack, 0u) << "a 4 KiB queue cannot take a drain pass of a syscall storm";

    // Per CPU: ring records in the file = the records the capture drained, and the
    // LOST records among them are the kernel's.
    auto v = readPerfDataFile(fo.path);
    ASSERT_TRUE(v.ok) << v.error;
    std::map<int, uint64_t> inFile, lost;
    bool synthesized = true;  // open() ends the synthesized block with a FINISHED_ROUND
    uint64_t lostRecords = 0;
    for (auto& r : v.records) {
        if (r.header.type == perfdata::kRecordFinishedRound) {
            synthesized = false;
            continue;
        }
        if (synthesized || r.header.type >= 64) continue;
        ParsedRecord p;
        ASSERT_FALSE(parseRecord(r.bytes, (*session)->ids(), p).has_value());
        ++inFile[int(p.cpu)];
        if (r.header.type == PERF_RECORD_LOST) {
            lost[int(p.cpu)] += p.lost;
            ++lostRecords;
        }
    }
    for (auto& c : summary.cpus) {
        EXPECT_EQ(inFile[c.cpu], c.totals.records) << "cpu " << c.cpu;
        EXPECT_EQ(lost[c.cpu], c.totals.lostRecords) << "cpu " << c.cpu;
    }
    if (auto perf = perfBinary()) {
        auto stats = runCommand({*perf, "report", "--stats", "-i", fo.path}, 60);
        ASSERT_TRUE(stats.exitedZero()) << stats.err;
        EXPECT_EQ(parsePerfStats(stats.out)["LOST"], lostRecords);
        auto script = runCommand({*perf, "script", "-i", fo.path}, 60);
        ASSERT_TRUE(script.exitedZero()) << script.err;
        EXPECT_EQ(script.err.find("out of order"), std::string::npos)
            << "rounds end only after passes that held nothing back: perf's time order holds";
    }
}

// A slow disk under a syscall storm: the writer sleeps 1 ms every 8 records
// (8,000 records/s: slower than the storm even when a busy machine slows the
// storm down; at every 64 the writer kept up under load and nothing was held).
// The drain thread holds records back in the kernel's rings, the rings fill, and
// the kernel drops what it cannot write and says so (LOST). Nothing auxscope
// held is dropped: per CPU the file has every record drained, and the kernel's
// loss is counted exactly (its LOST records agree with PERF_FORMAT_LOST).
class SlowRecordWriter : public SinkWriter {
public:
    explicit SlowRecordWriter(SinkWriter& inner) : inner_(inner) {}
    Expected<void> writeRecord(int cpu, std::span<const uint8_t> r) override {
        if (++n_ % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return inner_.writeRecord(cpu, r);
    }
    Expected<void> writeLost(int cpu, uint64_t n, uint64_t t) override { return inner_.writeLost(cpu, n, t); }
    Expected<void> endRound() override { return inner_.endRound(); }
    Expected<void> idle() override { return inner_.idle(); }

private:
    SinkWriter& inner_;
    uint64_t n_ = 0;
};

TEST(WriterCapture, SlowWriterUnderASyscallStormDropsNothingTheKernelCountsItsLoss) {
    SKIP_WITHOUT_PERF_EVENTS();
    CaptureOptions o;
    o.target = TargetKind::Command;
    o.command = {AUXSCOPE_TEST_SPIN, "400"};
    o.events = {"raw_syscalls:*"};
    o.dataPages = 16;  // 64 KiB rings fill quickly behind a slow writer
    auto pmus = PmuRegistry::discover();
    auto session = CaptureSession::open(o, pmus);
    ASSERT_TRUE(session) << session.error().message;
    const std::string path = dir() + "/slow-writer.data";
    auto layout = captureFileLayout(**session, path);
    ASSERT_TRUE(layout) << layout.error().message;
    auto w = PerfDataWriter::create(path, layout->attrs);
    ASSERT_TRUE(w) << w.error().message;
    PerfDataWriterSinkConfig sc;
    sc.ids = &(*session)->ids();
    sc.lostIdByCpu.insert(layout->trackingIdByCpu.begin(), layout->trackingIdByCpu.end());
    sc.fallbackLostId = layout->fallbackId;
    PerfDataWriterSink sinkWriter(**w, sc);
    SlowRecordWriter slow(sinkWriter);
    std::vector<int> cpus;
    for (size_t i = 0; i < (*session)->ringCount(); ++i)
        cpus.push_back((*session)->ringCpu(i));
    QueuedSink queue(cpus, slow, QueuedSinkOptions{.queueBytes = 64 << 10, .name = "perf.data writer"});
    queue.start();
    (*session)->addSink(&queue);
    ASSERT_TRUE((*session)->start());
    (*session)->wait();
    ASSERT_TRUE(queue.finish());
    ASSERT_TRUE((*w)->finish());
    const auto summary = (*session)->summary();
    EXPECT_TRUE(summary.sinkLosses.empty());
    EXPECT_EQ(queue.stats().droppedRecords, 0u);
    const CpuCounters t = summary.total();
    EXPECT_GT(t.sinkHeldBack, 0u) << "the slow writer made the drain thread hold records back";

    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    std::map<int, uint64_t> inFile, lost;
    for (auto& r : v.records) {
        if (r.header.type >= 64) continue;
        ParsedRecord p;
        ASSERT_FALSE(parseRecord(r.bytes, (*session)->ids(), p).has_value());
        ++inFile[int(p.cpu)];
        if (r.header.type == PERF_RECORD_LOST) lost[int(p.cpu)] += p.lost;
    }
    for (auto& c : summary.cpus) {
        SCOPED_TRACE("cpu " + std::to_string(c.cpu));
        EXPECT_EQ(inFile[c.cpu], c.totals.records) << "every record drained is in the file";
        EXPECT_EQ(lost[c.cpu], c.totals.lostRecords);
        // The kernel's own count (PERF_FORMAT_LOST) is the truth; it writes a LOST
        // record only once a record fits again, so a remainder may still be pending
        // in the kernel at the stop: the summary then says how many.
        EXPECT_GE(c.totals.kernelLost, c.totals.lostRecords);
        if (c.totals.kernelLost > c.totals.lostRecords) {
            bool told = false;
            for (auto& m : summary.messages)
                told |= m.find("cpu " + std::to_string(c.cpu) + ": the kernel counted " +
                               std::to_string(c.totals.kernelLost)) != std::string::npos;
            EXPECT_TRUE(told) << "the summary names the lost records still pending in the kernel";
        }
    }
    std::printf("slow writer: %llu records drained, %llu passes held back, kernel lost %llu\n",
                (unsigned long long)t.records, (unsigned long long)t.sinkHeldBack,
                (unsigned long long)t.lostRecords);
}

// ------------------------------------------------------------------ command line

pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
    pid_t pid = fork();
    if (pid == 0) {
        FILE* f = std::fopen(log.c_str(), "w");
        if (f) {
            dup2(fileno(f), 1);
            dup2(fileno(f), 2);
        }
        std::vector<char*> args;
        for (auto& a : argv)
            args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    return pid;
}

TEST(WriterCommandLine, SigkilledRecordLeavesDataSizeZeroAndRecordsAfterTheAttrs) {
    SKIP_WITHOUT_PERF_EVENTS();
    const std::string path = dir() + "/killed.data";
    pid_t pid =
        spawn({AUXSCOPE_TEST_BINARY, "record", "-a", "--duration", "10", "-o", path}, dir() + "/killed.log");
    ASSERT_GT(pid, 0);
    usleep(500 * 1000);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.header.data.size, 0u) << "the header is rewritten only at the end";
    EXPECT_EQ(v.header.attrs.offset + v.header.attrs.size, v.header.data.offset);
    EXPECT_EQ(v.header.attrs.size % v.header.attrSize, 0u);
    EXPECT_GT(v.file.size(), v.header.data.offset);
    ASSERT_GE(v.records.size(), 3u) << "records follow the attr section";
    EXPECT_EQ(v.records[0].header.type, perfdata::kRecordIdIndex);
    std::map<uint32_t, uint64_t> types;
    for (auto& r : v.records)
        ++types[r.header.type];
    EXPECT_GE(types[PERF_RECORD_MMAP], 1u) << "the kernel map";
    EXPECT_GT(types[PERF_RECORD_COMM], 1u) << "synthesized threads";
    // Scanning found whole records up to (nearly) the end of the file.
    const auto& last = v.records.back();
    EXPECT_LE(v.file.size() - (last.offset + last.bytes.size()), 65535u);
}

// A 1 MiB tmpfs to fill up, unmounted and removed at the end.
struct TinyTmpfs {
    explicit TinyTmpfs(const std::string& tag) : dir(makeTempDir(tag)) {
        mounted = mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=1m") == 0;
        if (!mounted) error = std::strerror(errno);
    }
    ~TinyTmpfs() {
        if (mounted) umount2(dir.c_str(), MNT_DETACH);
        rmdir(dir.c_str());
    }
    std::string dir, error;
    bool mounted = false;
};

// One software dummy event (id 7) for the full-disk tests' files.
PerfDataEventAttr dummyAttr() {
    PerfDataEventAttr attr{"dummy", {}, {7}};
    attr.attr.size = sizeof(perf_event_attr);
    attr.attr.type = PERF_TYPE_SOFTWARE;
    attr.attr.config = PERF_COUNT_SW_DUMMY;
    attr.attr.sample_id_all = 1;
    attr.attr.sample_type = PERF_SAMPLE_IDENTIFIER;
    return attr;
}

// A full disk that leaves no room for the feature sections: perf cannot read a
// tracepoint capture without its tracing data, so the data section is cut back to
// a round boundary until the features fit, and the error says so.
TEST(WriterFullDisk, FeaturesThatDoNotFitCutTheDataBackToARoundBoundary) {
    TinyTmpfs fs("tmpfs-features");
    if (!fs.mounted)
        GTEST_SKIP() << "cannot mount a 1 MiB tmpfs to fill (" << fs.error
                     << "): needs root (CAP_SYS_ADMIN) in this mount namespace";
    const std::string& mnt = fs.dir;
    const PerfDataEventAttr attr = dummyAttr();
    auto w = PerfDataWriter::create(mnt + "/f.data", {attr});
    ASSERT_TRUE(w) << w.error().message;
    (*w)->setFeature(perfdata::kFeatTracingData, std::vector<uint8_t>(200 << 10, 0x42));
    std::vector<uint8_t> rec(4096, 0);
    perf_event_header h{PERF_RECORD_MMAP2 + 100, 0, uint16_t(rec.size())};  // an unknown type, any body
    std::memcpy(rec.data(), &h, sizeof h);
    bool full = false;
    for (int i = 0; i < 1000 && !full; ++i) {
        full = !(*w)->writeStreamRecord(rec);
        if (!full && i % 8 == 7) full = !(*w)->writeFinishedRound();
    }
    ASSERT_TRUE(full) << "1 MiB filled up";
    auto r = (*w)->finish();
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("cut back"), std::string::npos) << r.error().message;
    auto v = readPerfDataFile(mnt + "/f.data");
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_TRUE(v.features.count(perfdata::kFeatTracingData))
        << "the tracing data feature made it into the file";
    ASSERT_FALSE(v.records.empty());
    const auto& last = v.records.back();
    EXPECT_EQ(last.header.type, perfdata::kRecordFinishedRound) << "cut at a round boundary";
    EXPECT_EQ(last.offset + last.bytes.size(), v.header.data.offset + v.header.data.size);
}

// A write buffer the disk takes only part of (it fills): the whole rounds in
// that part stay in the file and are counted as on disk. (Was: the whole buffer
// was dropped, so on a busy machine, whose first buffer of samples outgrew the
// 1 MiB disk, the file kept its sideband only.)
TEST(WriterFullDisk, ABufferTheDiskTookPartOfKeepsItsWholeRounds) {
    TinyTmpfs fs("tmpfs-partial");
    if (!fs.mounted)
        GTEST_SKIP() << "cannot mount a 1 MiB tmpfs to fill (" << fs.error
                     << "): needs root (CAP_SYS_ADMIN) in this mount namespace";
    const PerfDataEventAttr attr = dummyAttr();
    PerfDataWriterOptions options;
    options.bufferBytes = 4 << 20;  // one buffer more than the disk holds
    auto w = PerfDataWriter::create(fs.dir + "/f.data", {attr}, options);
    ASSERT_TRUE(w) << w.error().message;
    std::vector<uint8_t> rec(1000, 0);
    perf_event_header h{PERF_RECORD_MMAP2 + 100, 0, uint16_t(rec.size())};  // an unknown type, any body
    std::memcpy(rec.data(), &h, sizeof h);
    uint64_t streamRecords = 0;
    for (int i = 0; i < 3000; ++i) {
        ASSERT_TRUE((*w)->writeStreamRecord(rec)) << "buffered: nothing written yet";
        ++streamRecords;
        if (i % 10 == 9) ASSERT_TRUE((*w)->writeFinishedRound());
    }
    auto r = (*w)->finish();
    ASSERT_FALSE(r) << "3 MB do not fit in 1 MiB";
    EXPECT_NE(r.error().message.find("the file system is full"), std::string::npos) << r.error().message;
    const PerfDataWriterStats stats = (*w)->stats();
    auto v = readPerfDataFile(fs.dir + "/f.data");
    ASSERT_TRUE(v.ok) << v.error;
    uint64_t inFile = 0, rounds = 0;
    for (const auto& rec : v.records) {
        inFile += rec.header.type == PERF_RECORD_MMAP2 + 100;
        rounds += rec.header.type == perfdata::kRecordFinishedRound;
    }
    EXPECT_GT(inFile, 900u) << "most of the 1 MiB holds the records of whole rounds";
    EXPECT_EQ(inFile % 10, 0u) << "whole rounds only";
    EXPECT_EQ(rounds, inFile / 10);
    EXPECT_EQ(stats.streamRecordsOnDisk, inFile) << "counted as on disk: exactly what the file holds";
    EXPECT_EQ(stats.streamRecords - stats.streamRecordsOnDisk, streamRecords - inFile);
    ASSERT_FALSE(v.records.empty());
    EXPECT_EQ(v.records.back().header.type, perfdata::kRecordFinishedRound);
    EXPECT_EQ(v.records.back().offset + v.records.back().bytes.size(),
              v.header.data.offset + v.header.data.size);
}

TEST(WriterCommandLine, FullDiskStopsTheCaptureWithAClearMessageAndAValidFile) {
    SKIP_WITHOUT_PERF_EVENTS();
    TinyTmpfs fs("tmpfs");
    if (!fs.mounted)
        GTEST_SKIP() << "cannot mount a 1 MiB tmpfs to fill (" << fs.error
                     << "): needs root (CAP_SYS_ADMIN) in this mount namespace";
    const std::string& mnt = fs.dir;
    const std::string path = mnt + "/full.data";
    const auto t0 = std::chrono::steady_clock::now();
    auto r = runCommand({AUXSCOPE_TEST_BINARY, "record", "-e", "raw_syscalls:*", "-o", path, "--",
                         AUXSCOPE_TEST_SPIN, "8000"},
                        60);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1) << r.out << r.err;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the file system is full"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the capture stopped"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("writer stopped"), std::string::npos)
        << "the summary counts what the writer could not keep\n"
        << r.out;
    EXPECT_LT(seconds, 6.0) << "the capture stopped when the disk filled, not when the command ended";

    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_GT(v.header.data.size, 0u) << "the header was rewritten with what reached the disk";
    EXPECT_LE(v.header.data.offset + v.header.data.size, v.file.size());
    ASSERT_FALSE(v.records.empty());
    const auto& last = v.records.back();
    EXPECT_EQ(last.offset + last.bytes.size(), v.header.data.offset + v.header.data.size)
        << "the data section ends on a whole record";
    if (auto perf = perfBinary()) {
        auto stats = runCommand({*perf, "report", "--stats", "-i", path}, 60);
        EXPECT_TRUE(stats.exitedZero()) << stats.err;
        EXPECT_GT(parsePerfStats(stats.out)["SAMPLE"], 0u) << stats.out;
    }
}

}  // namespace
}  // namespace auxscope
