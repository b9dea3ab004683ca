// SPDX-License-Identifier: GPL-3.0-or-later
// The privileged capture helper's protocol and validation (issue 17): framing
// whatever way the bytes arrive, descriptors passed with File, every Start key
// validated, the output descriptor checked, and a helper served on a socket
// pair answering hostile messages with a reason each (and ending the
// connection where the peer broke the framing). Then real captures through the
// same helper: system-wide cpu-clock into a file it was handed, and (as root) a
// launched command that runs as the served user, not as root.
#include <fcntl.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "CaptureHelper.h"
#include "HelperProtocol.h"
#include "PerfEvent.h"
#include "perfdata/PerfDataReader.h"
#include "support/TestSupport.h"

using namespace auxscope;
using namespace auxscope::helper;
using auxscope::test_support::TempDir;

namespace {

using Pair = auxscope::test_support::SocketPair;

std::string frame(uint8_t type, const std::string& payload, uint32_t len) {
    std::string f(5, '\0');
    for (int i = 0; i < 4; ++i)
        f[size_t(i)] = char((len >> (8 * i)) & 0xff);
    f[4] = char(type);
    return f + payload;
}

std::optional<Message> readOne(MessageReader& r) {
    while (true) {
        if (auto m = r.next()) return m;
        if (!r.fill(true)) return r.next();
    }
}

std::string reasonOf(const Message& m) {
    auto kv = parseKeyValues(m.payload);
    if (!kv) return "(unreadable: " + m.payload + ")";
    auto r = singleValue(*kv, "reason");
    return r && *r ? **r : "(no reason)";
}

// A helper served on a thread; the test speaks to it through `peer`.
struct ServedHelper {
    Pair pair;
    std::thread thread;
    int status = -1;
    std::unique_ptr<MessageReader> reader;
    explicit ServedHelper(uid_t user = getuid()) {
        HelperConfig c;
        c.user = user;
        thread = std::thread([this, c] { status = serveCaptureHelper(pair.a, c); });
        reader = std::make_unique<MessageReader>(pair.b);
        auto ready = readOne(*reader);
        EXPECT_TRUE(ready && ready->type == MsgType::Ready);
    }
    ~ServedHelper() {
        if (pair.b >= 0) shutdown(pair.b, SHUT_WR);
        thread.join();
    }
    void send(MsgType t, const std::string& payload = {}, int fd = -1) {
        ASSERT_TRUE(sendMessage(pair.b, Message{t, payload, fd}).ok());
    }
    void hello() { send(MsgType::Hello, "version=1\n"); }
    // The next message that is not Stats.
    std::optional<Message> next() {
        while (auto m = readOne(*reader))
            if (m->type != MsgType::Stats) return m;
        return std::nullopt;
    }
    std::string expectRejected() {
        auto m = next();
        EXPECT_TRUE(m.has_value());
        if (!m) return {};
        EXPECT_EQ(int(m->type), int(MsgType::Rejected)) << m->payload;
        return reasonOf(*m);
    }
    // The helper stopped serving (its process then exits, closing its end): nothing more came.
    bool closedByHelper() {
        thread.join();
        thread = std::thread([] {});
        close(pair.a);
        pair.a = -1;
        char c;
        return recv(pair.b, &c, 1, 0) == 0;
    }
};

int newFile(const std::string& path, int flags = O_WRONLY) {
    return open(path.c_str(), flags | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

}  // namespace

TEST(HelperFraming, MessagesSurviveAnySplitAndCarryTheirDescriptor) {
    Pair p;
    TempDir dir("helper-framing");
    const int fd = newFile(dir.path.string() + "/out.data");
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(sendMessage(p.a, Message{MsgType::Hello, "version=1\n", -1}).ok());
    ASSERT_TRUE(sendMessage(p.a, Message{MsgType::File, {}, fd}).ok());
    ASSERT_TRUE(sendMessage(p.a, Message{MsgType::Stop, {}, -1}).ok());
    close(fd);
    // One more message written a byte at a time.
    const std::string f = frame(uint8_t(MsgType::Start), "target=system\n", 14);
    for (char c : f)
        ASSERT_EQ(write(p.a, &c, 1), 1);
    MessageReader r(p.b);
    auto hello = readOne(r);
    ASSERT_TRUE(hello);
    EXPECT_EQ(hello->type, MsgType::Hello);
    EXPECT_EQ(hello->payload, "version=1\n");
    EXPECT_EQ(hello->fd, -1);
    auto file = readOne(r);
    ASSERT_TRUE(file);
    EXPECT_EQ(file->type, MsgType::File);
    ASSERT_GE(file->fd, 0);
    EXPECT_TRUE(validateOutputFd(file->fd, getuid()).ok());
    close(file->fd);
    auto stop = readOne(r);
    ASSERT_TRUE(stop);
    EXPECT_EQ(stop->type, MsgType::Stop);
    auto start = readOne(r);
    ASSERT_TRUE(start);
    EXPECT_EQ(start->type, MsgType::Start);
    EXPECT_EQ(start->payload, "target=system\n");
}

TEST(HelperFraming, HostileFramesEndTheConnectionWithAReason) {
    {
        Pair p;
        const std::string f = frame(3, "", kMaxPayload + 1);
        ASSERT_EQ(write(p.a, f.data(), f.size()), ssize_t(f.size()));
        MessageReader r(p.b);
        EXPECT_FALSE(readOne(r));
        EXPECT_NE(r.error().find("exceeds the protocol's 65536"), std::string::npos) << r.error();
    }
    {
        Pair p;
        const std::string f = frame(200, "x", 1);
        ASSERT_EQ(write(p.a, f.data(), f.size()), ssize_t(f.size()));
        MessageReader r(p.b);
        EXPECT_FALSE(readOne(r));
        EXPECT_EQ(r.error(), "unknown message type 200");
    }
    {
        Pair p;
        const std::string f = frame(3, "target=sys", 14);  // 4 bytes short, then the peer leaves
        ASSERT_EQ(write(p.a, f.data(), f.size()), ssize_t(f.size()));
        close(p.a);
        p.a = -1;
        MessageReader r(p.b);
        EXPECT_FALSE(readOne(r));
        EXPECT_NE(r.error().find("closed the socket inside a message"), std::string::npos) << r.error();
    }
    {
        Pair p;
        EXPECT_FALSE(sendMessage(p.a, Message{MsgType::Start, std::string(kMaxPayload + 1, 'a'), -1}).ok());
    }
}

TEST(HelperStart, ValidRequestsRoundTrip) {
    const auto limits = StartLimits{.cpuCount = 4};
    CaptureOptions o;
    o.target = TargetKind::CpuList;
    o.cpus = {0, 3};
    o.events = {"cpu-clock", "sched:sched_switch", "intel_pt/cyc=1,noretcomp/u"};
    o.dataPages = 64;
    o.auxPages = 256;
    o.sampleFreq = 999;
    o.contextSwitches = false;
    o.durationSeconds = 2.5;
    o.auxSnapshot = true;
    o.snapshotBytes = 4096;
    o.auxFilter = "filter main @ /bin/ls";
    auto back = parseStartRequest(encodeStartRequest(o), limits);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->target, TargetKind::CpuList);
    EXPECT_EQ(back->cpus, o.cpus);
    EXPECT_EQ(back->events, o.events);
    EXPECT_EQ(back->dataPages, 64u);
    EXPECT_EQ(back->auxPages, 256u);
    EXPECT_EQ(back->sampleFreq, 999u);
    EXPECT_FALSE(back->contextSwitches);
    EXPECT_DOUBLE_EQ(back->durationSeconds, 2.5);
    EXPECT_TRUE(back->auxSnapshot);
    EXPECT_EQ(back->snapshotBytes, 4096u);
    EXPECT_EQ(back->auxFilter, o.auxFilter);
    EXPECT_FALSE(back->commandUser.has_value());  // never from the peer

    CaptureOptions c;
    c.target = TargetKind::Command;
    c.command = {"/bin/sh", "-c", "echo 'a b' ; exit 3"};  // argv, never a shell of the helper's
    c.commandCwd = "/tmp";
    auto cb = parseStartRequest(encodeStartRequest(c), limits);
    ASSERT_TRUE(cb.ok()) << cb.error().message;
    EXPECT_EQ(cb->command, c.command);
    EXPECT_EQ(cb->commandCwd, "/tmp");
}

TEST(HelperStart, HostileRequestsAreRefusedWithTheirReason) {
    const auto limits = StartLimits{.cpuCount = 4};
    const std::pair<std::string, std::string> cases[] = {
        {"", "target: missing"},
        {"target=system\ntarget=pid\n", "target is given more than once"},
        {"target=everything\n", "'everything' is not system, cpus, pid or command"},
        {"target=system\nrun-as=0\n", "unknown key 'run-as'"},
        {"target=system\nUSER=root\n", "key 'USER' has character"},
        {"target=system\nno-equals\n", "no '=' in it"},
        {"target=system\nevent=cpu-clock\x01\n", "control byte 1"},
        {"target=system\nevent=cpu-clock;rm -rf /\n", "character ';' is not allowed"},
        {"target=system\nevent=$(reboot)\n", "character '$' is not allowed"},
        {"target=system\nevent=../../../etc:shadow\n", "'..' is not allowed"},
        {"target=system\nevent=\n", "event: empty"},
        {"target=system\nevent=" + std::string(600, 'a') + "\n", "600 characters, more than 512"},
        {"target=cpus\ncpus=0,9\n", "cpus: 9 is outside 0..3"},
        {"target=cpus\ncpus=1,1\n", "cpu 1 is listed twice"},
        {"target=cpus\ncpus=-1\n", "cpus: -1 is outside 0..3"},
        {"target=cpus\ncpus=0,,1\n", "cpus: '' is not a number"},
        {"target=cpus\n", "cpus: missing for target cpus"},
        {"target=system\ncpus=0\n", "cpus: given for target system"},
        {"target=pid\npid=0\n", "pid: 0 is outside 1..4194304"},
        {"target=pid\npid=12abc\n", "pid: '12abc' is not a number"},
        {"target=command\n", "a command needs its program as the first arg"},
        {"target=command\narg=ls\ncwd=relative/dir\n", "cwd: 'relative/dir' is not an absolute path"},
        {"target=system\narg=ls\n", "arg/cwd: given for target system"},
        {"target=system\ndata-pages=0\n", "data-pages: 0 is outside 1.."},
        {"target=system\ndata-pages=99999999999\n", "data-pages: 99999999999 is outside"},
        {"target=system\nfreq=18446744073709551616\n", "freq: '18446744073709551616' is not a number"},
        {"target=system\nswitches=yes\n", "switches: 'yes' is not 0 or 1"},
        {"target=system\nfilter=" + std::string(5000, 'f') + "\n", "filter: longer than 4096"},
    };
    for (auto& [payload, reason] : cases) {
        auto r = parseStartRequest(payload, limits);
        ASSERT_FALSE(r.ok()) << "accepted: " << payload;
        EXPECT_NE(r.error().message.find(reason), std::string::npos)
            << "payload " << payload << " gave '" << r.error().message << "', expected '" << reason << "'";
    }
    std::string many = "target=command\n";
    for (int i = 0; i < 300; ++i)
        many += "arg=x\n";
    auto r = parseStartRequest(many, limits);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("300 arguments, more than 256"), std::string::npos) << r.error().message;
}

// The call-graph choice crosses the helper as the command line spells it, held
// to the same range (a GUI combobox sets CaptureOptions::callGraph).
TEST(HelperStart, CallGraphRoundTripsAndIsHeldToItsRange) {
    const auto limits = StartLimits{.cpuCount = 4};
    for (const CallGraphOptions cg :
         {CallGraphOptions{CallGraphMode::FramePointer}, CallGraphOptions{CallGraphMode::Dwarf},
          CallGraphOptions{CallGraphMode::Dwarf, 4096}, CallGraphOptions{CallGraphMode::Dwarf, 65528},
          CallGraphOptions{CallGraphMode::Lbr}}) {
        CaptureOptions o;
        o.callGraph = cg;
        const std::string payload = encodeStartRequest(o);
        EXPECT_NE(payload.find("call-graph=" + formatCallGraph(cg) + "\n"), std::string::npos) << payload;
        auto back = parseStartRequest(payload, limits);
        ASSERT_TRUE(back.ok()) << back.error().message;
        EXPECT_EQ(back->callGraph, cg) << payload;
    }
    CaptureOptions none;
    EXPECT_EQ(encodeStartRequest(none).find("call-graph"), std::string::npos);
    auto plain = parseStartRequest("target=system\n", limits);
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->callGraph.enabled());

    const std::pair<std::string, std::string> cases[] = {
        {"call-graph=dwarf,7",
         "call-graph 'dwarf,7': the user stack size 7 must be a multiple of 8 from 8 to 65528"},
        {"call-graph=dwarf,0", "the user stack size 0 must be a multiple of 8"},
        {"call-graph=dwarf,65536", "the user stack size 65536 must be a multiple of 8 from 8 to 65528"},
        {"call-graph=dwarf,99999999999999999999", "'99999999999999999999' is not a number"},
        {"call-graph=dwarf,-8", "'-8' is not a number"},
        {"call-graph=dwarf,", "'' is not a number"},
        {"call-graph=fp,8", "fp takes no size"},
        {"call-graph=foo", "call-graph 'foo': unknown mode 'foo'"},
        {"call-graph=", "unknown mode ''"},
        {"call-graph=fp\ncall-graph=lbr", "call-graph is given more than once"},
    };
    for (auto& [line, reason] : cases) {
        auto r = parseStartRequest("target=system\n" + line + "\n", limits);
        ASSERT_FALSE(r.ok()) << "accepted: " << line;
        EXPECT_NE(r.error().message.find(reason), std::string::npos)
            << line << " gave '" << r.error().message << "', expected '" << reason << "'";
    }

    FinishedReport f;
    f.summary.callGraph = CallGraphOptions{CallGraphMode::Dwarf, 16384};
    auto fb = decodeFinished(encodeFinished(f));
    ASSERT_TRUE(fb.ok()) << fb.error().message;
    EXPECT_EQ(fb->summary.callGraph, f.summary.callGraph);
    auto fn = decodeFinished(encodeFinished(FinishedReport{}));
    ASSERT_TRUE(fn.ok());
    EXPECT_FALSE(fn->summary.callGraph.enabled());
}

// The file writer's backlog (peak and budget) reaches the GUI with the Finished report.
TEST(HelperFinished, CarriesTheWriterBacklog) {
    FinishedReport f;
    f.maxBacklogBytes = (uint64_t(3) << 30) + 17;
    f.backlogBudget = uint64_t(4) << 30;
    f.recordsHeldBack = 5;
    auto fb = decodeFinished(encodeFinished(f));
    ASSERT_TRUE(fb.ok()) << fb.error().message;
    EXPECT_EQ(fb->maxBacklogBytes, f.maxBacklogBytes);
    EXPECT_EQ(fb->backlogBudget, f.backlogBudget);
    EXPECT_EQ(fb->recordsHeldBack, 5u);
}

TEST(HelperOutputFile, OnlyAnEmptyWritableRegularFileOfTheUser) {
    TempDir dir("helper-fd");
    const std::string path = dir.path.string() + "/out.data";
    {
        const int fd = newFile(path);
        ASSERT_GE(fd, 0);
        EXPECT_TRUE(validateOutputFd(fd, getuid()).ok());
        EXPECT_NE(validateOutputFd(fd, getuid() + 1).error().message.find("belongs to uid"),
                  std::string::npos);
        ASSERT_EQ(write(fd, "x", 1), 1);
        EXPECT_NE(validateOutputFd(fd, getuid()).error().message.find("is not empty (1 bytes)"),
                  std::string::npos);
        ASSERT_EQ(link(path.c_str(), (path + ".link").c_str()), 0);
        ASSERT_EQ(ftruncate(fd, 0), 0);
        EXPECT_NE(validateOutputFd(fd, getuid()).error().message.find("has 2 links"), std::string::npos);
        ASSERT_EQ(unlink((path + ".link").c_str()), 0);
        close(fd);
    }
    {
        const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        EXPECT_NE(validateOutputFd(fd, getuid()).error().message.find("not open for writing"),
                  std::string::npos);
        close(fd);
    }
    {
        const int fd = newFile(dir.path.string() + "/append.data", O_WRONLY | O_APPEND);
        EXPECT_NE(validateOutputFd(fd, getuid()).error().message.find("appending"), std::string::npos);
        close(fd);
    }
    {
        const int fd = open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        EXPECT_NE(validateOutputFd(fd, getuid()).error().message.find("not a regular file"),
                  std::string::npos);
        close(fd);
        int pfd[2];
        ASSERT_EQ(pipe(pfd), 0);
        EXPECT_NE(validateOutputFd(pfd[1], getuid()).error().message.find("not a regular file"),
                  std::string::npos);
        close(pfd[0]), close(pfd[1]);
    }
    EXPECT_NE(validateOutputFd(-1, getuid()).error().message.find("no output file descriptor"),
              std::string::npos);
}

TEST(HelperCodec, StatsAndFinishedRoundTrip) {
    std::vector<CpuStatsSnapshot> cpus(2);
    cpus[0].cpu = 0, cpus[0].totals.records = 12345, cpus[0].totals.lostRecords = 7,
    cpus[0].fillPeakPercent = 42.5;
    cpus[0].totals.byType[PERF_RECORD_SAMPLE] = 99;
    cpus[1].cpu = 3, cpus[1].hasAux = true, cpus[1].auxFillPercent = 12.25, cpus[1].backwardMode = true;
    auto back = decodeStats(encodeStats(cpus));
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(back->size(), 2u);
    EXPECT_EQ((*back)[0].totals.records, 12345u);
    EXPECT_EQ((*back)[0].totals.byType[PERF_RECORD_SAMPLE], 99u);
    EXPECT_DOUBLE_EQ((*back)[0].fillPeakPercent, 42.5);
    EXPECT_EQ((*back)[1].cpu, 3);
    EXPECT_TRUE((*back)[1].hasAux);
    EXPECT_TRUE((*back)[1].backwardMode);
    EXPECT_FALSE((*back)[1].auxSnapshotMode);
    const std::string enc = encodeStats(cpus);
    EXPECT_FALSE(decodeStats(enc.substr(0, enc.size() - 8)).ok());
    EXPECT_FALSE(decodeStats("").ok());

    FinishedReport f;
    f.summary.target = "system-wide";
    f.summary.seconds = 1.5;
    f.summary.messages = {"cpu 1 went offline\nat 0.5 s", "second"};
    f.summary.sinkLosses.push_back(SinkLoss{"perf.data writer", 2, 10, 100, "queue full, really"});
    f.summary.cpus = cpus;
    f.fileBytes = 4096;
    f.fileError = "disk full";
    f.summary.failure = "epoll_pwait2 failed 3 times in a row";
    f.summary.cpus[1].totals.undeliveredRecords = 77;
    auto fb = decodeFinished(encodeFinished(f));
    ASSERT_TRUE(fb.ok()) << fb.error().message;
    EXPECT_EQ(fb->summary.target, "system-wide");
    EXPECT_DOUBLE_EQ(fb->summary.seconds, 1.5);
    ASSERT_EQ(fb->summary.messages.size(), 2u);
    EXPECT_EQ(fb->summary.messages[0], "cpu 1 went offline at 0.5 s");
    ASSERT_EQ(fb->summary.sinkLosses.size(), 1u);
    EXPECT_EQ(fb->summary.sinkLosses[0].cpu, 2);
    EXPECT_EQ(fb->summary.sinkLosses[0].records, 10u);
    EXPECT_EQ(fb->summary.sinkLosses[0].reason, "queue full, really");
    EXPECT_EQ(fb->fileBytes, 4096u);
    EXPECT_EQ(fb->fileError, "disk full");
    EXPECT_EQ(fb->summary.cpus[0].totals.records, 12345u);
    EXPECT_EQ(fb->summary.failure, "epoll_pwait2 failed 3 times in a row");
    EXPECT_EQ(fb->summary.cpus[1].totals.undeliveredRecords, 77u);
}

TEST(HelperServe, EveryHostileMessageIsAnsweredWithAReason) {
    {
        ServedHelper h;
        h.send(MsgType::Start, "target=system\n");
        EXPECT_EQ(h.expectRejected(), "Start before Hello: the protocol starts with Hello");
        EXPECT_TRUE(h.closedByHelper());
        EXPECT_EQ(h.status, 2);
    }
    {
        ServedHelper h;
        h.send(MsgType::Hello, "version=2\n");
        EXPECT_EQ(h.expectRejected(), "Hello: protocol version 2, this helper speaks 1");
        EXPECT_TRUE(h.closedByHelper());
    }
    {
        ServedHelper h;
        h.hello();
        h.send(MsgType::Start, "target=system\nevent=cpu-clock\n");
        EXPECT_EQ(h.expectRejected(), "Start: no output file: send File (with the file's descriptor) first");
        h.send(MsgType::File);
        EXPECT_EQ(h.expectRejected(), "File: no output file descriptor came with the File message");
        int pfd[2];
        ASSERT_EQ(pipe(pfd), 0);
        h.send(MsgType::File, {}, pfd[1]);
        close(pfd[0]), close(pfd[1]);
        EXPECT_EQ(h.expectRejected(), "File: the output file is not a regular file");
        h.send(MsgType::Stop);
        EXPECT_EQ(h.expectRejected(), "Stop: no capture is running");
        h.send(MsgType::Snapshot);
        EXPECT_EQ(h.expectRejected(), "Snapshot: no capture is running");
        TempDir dir("helper-serve");
        const int fd = newFile(dir.path.string() + "/out.data");
        h.send(MsgType::File, {}, fd);
        close(fd);
        h.send(MsgType::Start, "target=system\nevent=cpu-clock;id\n");
        EXPECT_EQ(h.expectRejected(), "Start: event 'cpu-clock;id': character ';' is not allowed");
        h.send(MsgType::Start, "target=system\nfilter=filter main @ /nonexistent/bin\nevent=cpu-clock\n");
        EXPECT_NE(h.expectRejected().find("/nonexistent/bin"), std::string::npos);
        // A message only the helper sends breaks the protocol: the connection ends.
        h.send(MsgType::Finished, "x=1\n");
        EXPECT_EQ(h.expectRejected(), "Finished: a message the helper sends, not one it takes");
        EXPECT_TRUE(h.closedByHelper());
        EXPECT_EQ(h.status, 2);
    }
    {
        ServedHelper h;
        h.hello();
        const std::string f = frame(uint8_t(MsgType::Start), "", 1u << 20);
        ASSERT_EQ(write(h.pair.b, f.data(), f.size()), ssize_t(f.size()));
        EXPECT_NE(h.expectRejected().find("1048576 bytes (type 3) exceeds the protocol's 65536"),
                  std::string::npos);
        EXPECT_TRUE(h.closedByHelper());
    }
}

TEST(HelperServe, CapturesIntoTheFileItWasHanded) {
    if (auto reason = perfCaptureUnavailableReason()) GTEST_SKIP() << "perf capture unavailable: " << *reason;
    ServedHelper h;
    h.hello();
    TempDir dir("helper-capture");
    const std::string path = dir.path.string() + "/out.data";
    const int fd = newFile(path);
    h.send(MsgType::File, {}, fd);
    close(fd);
    h.send(MsgType::Start, "target=system\nevent=cpu-clock\ndata-pages=64\n");
    auto started = h.next();
    ASSERT_TRUE(started);
    ASSERT_EQ(started->type, MsgType::Started) << started->payload;
    EXPECT_NE(started->payload.find("aux=0"), std::string::npos);
    h.send(MsgType::Start, "target=system\n");
    EXPECT_EQ(h.expectRejected(), "Start: a capture is running");
    h.send(MsgType::Snapshot);
    EXPECT_NE(h.expectRejected().find("no flight recorder"), std::string::npos);
    // Statistics stream while it runs.
    size_t stats = 0;
    uint64_t records = 0;
    while (stats < 3) {
        auto m = readOne(*h.reader);
        ASSERT_TRUE(m);
        if (m->type != MsgType::Stats) continue;
        auto s = decodeStats(m->payload);
        ASSERT_TRUE(s.ok()) << s.error().message;
        ++stats;
        records = 0;
        for (auto& c : *s)
            records += c.totals.records;
    }
    h.send(MsgType::Stop);
    auto fin = h.next();
    ASSERT_TRUE(fin);
    ASSERT_EQ(fin->type, MsgType::Finished) << fin->payload;
    auto rep = decodeFinished(fin->payload);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    EXPECT_TRUE(rep->fileError.empty()) << rep->fileError;
    EXPECT_GT(rep->fileBytes, 0u);
    EXPECT_GE(rep->summary.total().records, records);
    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    EXPECT_FALSE(reader->hasErrors());
    EXPECT_GT(reader->summary().recordsByType.at(PERF_RECORD_SAMPLE), 0u);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(uint64_t(st.st_size), rep->fileBytes);
}

// A GUI capture with call stacks: the helper sets the attrs up (dwarf with the
// size asked for) and refuses, as a failed start with the reason, an lbr that
// cpu-clock cannot have, before any capture runs.
TEST(HelperServe, CapturesCallStacksAndRefusesLbrOnASoftwareEvent) {
    if (auto reason = perfCaptureUnavailableReason()) GTEST_SKIP() << "perf capture unavailable: " << *reason;
    TempDir dir("helper-callgraph");
    {
        ServedHelper h;
        h.hello();
        const int fd = newFile(dir.path.string() + "/lbr.data");
        h.send(MsgType::File, {}, fd);
        close(fd);
        h.send(MsgType::Start, "target=system\nevent=cpu-clock\ncall-graph=lbr\n");
        auto m = h.next();
        ASSERT_TRUE(m);
        ASSERT_EQ(int(m->type), int(MsgType::Failed)) << m->payload;
        EXPECT_NE(reasonOf(*m).find("--call-graph lbr: event 'cpu-clock' is a software event"),
                  std::string::npos)
            << reasonOf(*m);
    }
    ServedHelper h;
    h.hello();
    const std::string path = dir.path.string() + "/dwarf.data";
    const int fd = newFile(path);
    h.send(MsgType::File, {}, fd);
    close(fd);
    h.send(MsgType::Start, "target=system\nevent=cpu-clock\ndata-pages=64\ncall-graph=dwarf,4096\n");
    auto started = h.next();
    ASSERT_TRUE(started);
    ASSERT_EQ(started->type, MsgType::Started) << started->payload;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    h.send(MsgType::Stop);
    auto fin = h.next();
    ASSERT_TRUE(fin);
    ASSERT_EQ(fin->type, MsgType::Finished) << fin->payload;
    auto rep = decodeFinished(fin->payload);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    EXPECT_EQ(rep->summary.callGraph, (CallGraphOptions{CallGraphMode::Dwarf, 4096}));
    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader.ok()) << reader.error().message;
    bool sampling = false;
    for (const PerfAttr& a : reader->attrs()) {
        if (a.attr.type != PERF_TYPE_SOFTWARE || a.attr.config != PERF_COUNT_SW_CPU_CLOCK) continue;
        sampling = true;
        EXPECT_TRUE(a.attr.sample_type & PERF_SAMPLE_STACK_USER);
        EXPECT_EQ(a.attr.sample_stack_user, 4096u);
        EXPECT_EQ(a.attr.sample_regs_user, dwarfUserRegsMask());
    }
    EXPECT_TRUE(sampling);
}

TEST(HelperServe, ALaunchedCommandRunsAsTheServedUserNotAsRoot) {
    if (geteuid() != 0) GTEST_SKIP() << "not root: the helper cannot serve another user here";
    if (auto reason = perfCaptureUnavailableReason()) GTEST_SKIP() << "perf capture unavailable: " << *reason;
    const passwd* nobody = getpwnam("nobody");
    if (!nobody) GTEST_SKIP() << "no user nobody";
    const uid_t user = nobody->pw_uid;
    TempDir dir("helper-command");
    ASSERT_EQ(chmod(dir.path.c_str(), 01777), 0);
    const std::string path = dir.path.string() + "/out.data";
    const int fd = newFile(path);
    ServedHelper h(user);
    // A file of root's is refused: the helper serves nobody.
    h.hello();
    h.send(MsgType::File, {}, fd);
    EXPECT_NE(h.expectRejected().find("belongs to uid 0, not to uid " + std::to_string(user)),
              std::string::npos);
    ASSERT_EQ(fchown(fd, user, nobody->pw_gid), 0);
    h.send(MsgType::File, {}, fd);
    close(fd);
    const std::string idFile = dir.path.string() + "/id";
    h.send(MsgType::Start,
           "target=command\narg=/bin/sh\narg=-c\narg=id -u > \"$0\"; id -g >> \"$0\"; pwd >> \"$0\"\narg=" +
               idFile + "\ncwd=" + dir.path.string() + "\nevent=cpu-clock\n");
    auto started = h.next();
    ASSERT_TRUE(started);
    ASSERT_EQ(started->type, MsgType::Started) << reasonOf(*started);
    // The command exits: the capture ends by itself.
    auto fin = h.next();
    ASSERT_TRUE(fin);
    ASSERT_EQ(fin->type, MsgType::Finished) << fin->payload;
    auto rep = decodeFinished(fin->payload);
    ASSERT_TRUE(rep.ok());
    EXPECT_TRUE(rep->summary.commandExited);
    std::ifstream in(idFile);
    std::string uidLine, gidLine, cwdLine;
    std::getline(in, uidLine);
    std::getline(in, gidLine);
    std::getline(in, cwdLine);
    EXPECT_EQ(uidLine, std::to_string(user));
    EXPECT_EQ(gidLine, std::to_string(nobody->pw_gid));
    EXPECT_EQ(cwdLine, dir.path.string());
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, user);  // the capture file stays the user's
    EXPECT_GT(st.st_size, 0);
}
