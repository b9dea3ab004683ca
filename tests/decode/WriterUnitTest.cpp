// SPDX-License-Identifier: GPL-3.0-or-later
// perf.data writer without a kernel capture: the SPSC queue, the sink's drop
// accounting (per CPU, with LOST records in the file), the file layout (header
// rewritten last, data size 0 after a crash), feature encodings, TIME_CONV,
// AUXTRACE_INFO / AUXTRACE with their index, and -z. Where Debian's perf is
// installed it reads the files as an oracle.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "QueuedSink.h"
#include "SinkQueue.h"
#include "perfdata/FeatureWriter.h"
#include "perfdata/PerfDataWriter.h"
#include "record/PerfDataWriterSink.h"

#include "WriterTestSupport.h"

namespace auxscope {
namespace {

using namespace writertest;

constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
constexpr uint64_t kTrackType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

perf_event_attr clockAttr() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 100000;
    a.sample_type = kSampleType;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    return a;
}

perf_event_attr dummyAttr() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kTrackType;
    a.read_format = PERF_FORMAT_ID;
    a.sample_id_all = 1;
    a.mmap = a.comm = a.task = a.mmap2 = 1;
    return a;
}

// A two-CPU "capture": cpu-clock ids 1000/1001, tracking ids 2000/2001.
struct FakeCapture {
    std::vector<PerfDataEventAttr> attrs{{"cpu-clock", clockAttr(), {1000, 1001}},
                                         {"dummy", dummyAttr(), {2000, 2001}}};
    IdTable ids;
    FakeCapture() {
        ids.add(1000, EventLayout{kSampleType, PERF_FORMAT_ID, 0, 0});
        ids.add(1001, EventLayout{kSampleType, PERF_FORMAT_ID, 0, 1});
        ids.add(2000, EventLayout{kTrackType, PERF_FORMAT_ID, -1, 0});
        ids.add(2001, EventLayout{kTrackType, PERF_FORMAT_ID, -1, 1});
    }
    PerfDataWriterSinkConfig sinkConfig() const {
        PerfDataWriterSinkConfig c;
        c.ids = &ids;
        c.lostIdByCpu[0] = {kTrackType, 2000, 0};
        c.lostIdByCpu[1] = {kTrackType, 2001, 1};
        c.fallbackLostId = {kTrackType, 2000, 0};
        return c;
    }
    static std::vector<uint8_t> sample(int cpu, uint64_t time, uint64_t ip = 0x401000, int32_t pid = 4242) {
        RecordBuilder b(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
        b.u64(1000 + uint64_t(cpu)).u64(ip).u32(uint32_t(pid)).u32(uint32_t(pid)).u64(time);
        b.u32(uint32_t(cpu)).u32(0).u64(100000);
        auto s = b.finish();
        return {s.begin(), s.end()};
    }
    static std::vector<uint8_t> comm(int cpu, uint64_t time, int32_t pid, const char* name) {
        RecordBuilder b(PERF_RECORD_COMM);
        b.u32(uint32_t(pid))
            .u32(uint32_t(pid))
            .str(name)
            .sampleId({kTrackType, 2000 + uint64_t(cpu), uint32_t(cpu)}, pid, pid, time);
        auto s = b.finish();
        return {s.begin(), s.end()};
    }
};

ParsedRecord parsed(const IdTable& ids, const std::vector<uint8_t>& rec) {
    ParsedRecord p;
    (void)parseRecord(rec, ids, p);
    return p;
}

std::string tempFile(const std::string& name) {
    static std::string dir = makeTempDir("unit");
    return dir + "/" + name;
}

// ------------------------------------------------------------------ SinkQueue

TEST(WriterSinkQueue, KeepsOrderAcrossTheWrapAndRefusesWhenFull) {
    SinkQueue q(4096);
    EXPECT_EQ(q.capacity(), 4096u);
    std::vector<uint8_t> payload(100);
    uint32_t pushed = 0, popped = 0;
    // Push and pop in uneven steps so entries wrap around the end many times.
    for (int round = 0; round < 200; ++round) {
        for (int i = 0; i < 7; ++i) {
            std::memcpy(payload.data(), &pushed, 4);
            payload.resize(8 + (pushed * 37) % 300);
            if (!q.tryPush(1, uint16_t(pushed % 3), payload)) break;
            ++pushed;
        }
        for (int i = 0; i < 5; ++i) {
            auto* e = q.front();
            if (!e) break;
            uint32_t v;
            std::memcpy(&v, q.payload(e).data(), 4);
            ASSERT_EQ(v, popped) << "entries come out in the order they went in";
            EXPECT_EQ(e->slot, popped % 3);
            EXPECT_GE(q.payload(e).size(), 8 + (popped * 37) % 300);
            q.pop();
            ++popped;
        }
    }
    while (auto* e = q.front()) {
        uint32_t v;
        std::memcpy(&v, q.payload(e).data(), 4);
        ASSERT_EQ(v, popped);
        q.pop();
        ++popped;
    }
    EXPECT_EQ(pushed, popped);
    EXPECT_GT(pushed, 800u);
    // Full: refuses without changing anything; too big: refuses always.
    std::vector<uint8_t> big(1000);
    int fit = 0;
    while (q.tryPush(1, 0, big))
        ++fit;
    EXPECT_GE(fit, 3);
    EXPECT_FALSE(q.tryPush(1, 0, big));
    EXPECT_FALSE(q.tryPush(1, 0, std::vector<uint8_t>(q.maxPayload() + 1)));
    for (int i = 0; i < fit; ++i) {
        ASSERT_NE(q.front(), nullptr);
        q.pop();
    }
    EXPECT_EQ(q.front(), nullptr);
}

// ------------------------------------------------------------------ drops

// Forwards to the real writer once released; until then the writer thread sits
// in its first call, as it would behind a stalled disk.
class GatedWriter : public SinkWriter {
public:
    explicit GatedWriter(SinkWriter& inner) : inner_(inner) {}
    void release() {
        std::lock_guard l(m_);
        open_ = true;
        cv_.notify_all();
    }
    bool entered() {
        std::lock_guard l(m_);
        return entered_;
    }
    Expected<void> writeRecord(int cpu, std::span<const uint8_t> r) override {
        gate();
        return inner_.writeRecord(cpu, r);
    }
    Expected<void> writeLost(int cpu, uint64_t n, uint64_t t) override {
        gate();
        return inner_.writeLost(cpu, n, t);
    }
    Expected<void> endRound() override {
        gate();
        return inner_.endRound();
    }
    Expected<void> idle() override { return inner_.idle(); }

private:
    void gate() {
        std::unique_lock l(m_);
        entered_ = true;
        cv_.wait(l, [&] { return open_; });
    }
    SinkWriter& inner_;
    std::mutex m_;
    std::condition_variable cv_;
    bool open_ = false, entered_ = false;
};

// The drain thread asks hasRoom() before every record, so the queue never drops:
// what does not fit stays in the ring ("ring" here: a list per CPU) and is taken
// on a later pass, in order. A round ends only after a pass that held nothing back.
TEST(WriterQueuedSink, FullQueueHoldsRecordsBackAndTheFileGetsEveryOne) {
    FakeCapture cap;
    const std::string path = tempFile("backpressure.data");
    auto w = PerfDataWriter::create(path, cap.attrs);
    ASSERT_TRUE(w) << w.error().message;
    PerfDataWriterSink sinkWriter(**w, cap.sinkConfig());
    GatedWriter gated(sinkWriter);
    QueuedSink sink({0, 1}, gated, QueuedSinkOptions{.queueBytes = 4096, .name = "perf.data writer"});
    sink.start();
    std::map<int, std::deque<std::vector<uint8_t>>> ring;
    uint64_t t = 1000;
    for (int i = 0; i < 150; ++i)
        for (int cpu : {0, 1, 0}) {
            auto rec = FakeCapture::sample(cpu, t += 10);
            ring[cpu].emplace_back(rec.begin(), rec.end());
        }
    std::map<int, uint64_t> taken;
    auto pass = [&] {
        for (auto& [cpu, q] : ring)
            while (!q.empty() && sink.hasRoom(cpu, q.front().size())) {
                sink.onRecord(cpu, q.front(), parsed(cap.ids, q.front()));
                q.pop_front();
                ++taken[cpu];
            }
        sink.onDrainPassEnd();
    };
    pass();
    for (int i = 0; i < 200 && !gated.entered(); ++i)
        usleep(1000);
    ASSERT_TRUE(gated.entered());
    EXPECT_FALSE(ring[0].empty()) << "a 4 KiB queue cannot take 300 samples while its writer is stuck";
    EXPECT_LT(taken[0] + taken[1], 450u);
    gated.release();
    for (int i = 0; i < 5000 && (!ring[0].empty() || !ring[1].empty()); ++i) {
        pass();
        usleep(200);
    }
    EXPECT_TRUE(ring[0].empty() && ring[1].empty());
    ASSERT_TRUE(sink.finish());
    ASSERT_TRUE((*w)->finish());
    auto st = sink.stats();
    EXPECT_EQ(st.droppedRecords, 0u);
    EXPECT_GE(st.recordsHeldBack, 1u);
    EXPECT_TRUE(sink.losses().empty());

    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    std::map<int, uint64_t> samples, lastTime;
    uint64_t lost = 0;
    bool ordered = true;
    for (auto& r : v.records) {
        ParsedRecord p;
        ASSERT_FALSE(parseRecord(r.bytes, cap.ids, p).has_value());
        if (r.header.type == PERF_RECORD_LOST) ++lost;
        if (r.header.type != PERF_RECORD_SAMPLE) continue;
        ++samples[int(p.cpu)];
        ordered &= p.time > lastTime[int(p.cpu)];
        lastTime[int(p.cpu)] = p.time;
    }
    EXPECT_EQ(lost, 0u);
    EXPECT_EQ(samples[0], 300u);
    EXPECT_EQ(samples[1], 150u);
    EXPECT_TRUE(ordered) << "each CPU's records reach the file in the order they left its ring";
}

// A caller that pushes without asking hasRoom() (none in auxscope does) still
// loses nothing silently: the drops are counted and the file gets LOST records.
TEST(WriterQueuedSink, RecordsPushedWithoutRoomAreCountedAndWrittenAsLostRecords) {
    FakeCapture cap;
    const std::string path = tempFile("overflow.data");
    auto w = PerfDataWriter::create(path, cap.attrs);
    ASSERT_TRUE(w) << w.error().message;
    PerfDataWriterSink sinkWriter(**w, cap.sinkConfig());
    GatedWriter gated(sinkWriter);
    QueuedSink sink({0, 1}, gated, QueuedSinkOptions{.queueBytes = 4096, .name = "perf.data writer"});
    sink.start();

    // The drain thread's view: 300 samples on CPU 0 and 150 on CPU 1, interleaved,
    // into a 4 KiB queue whose writer is stuck.
    std::map<int, uint64_t> pushed;
    uint64_t t = 1000;
    auto push = [&](int cpu) {
        auto rec = FakeCapture::sample(cpu, t += 10);
        sink.onRecord(cpu, rec, parsed(cap.ids, rec));
        ++pushed[cpu];
    };
    for (int i = 0; i < 150; ++i) {
        push(0);
        push(1);
        push(0);
    }
    sink.onDrainPassEnd();
    for (int i = 0; i < 200 && !gated.entered(); ++i)
        usleep(1000);
    ASSERT_TRUE(gated.entered()) << "the writer thread took the first entry";

    std::map<int, uint64_t> dropped;
    for (auto& l : sink.losses()) {
        EXPECT_EQ(l.sink, "perf.data writer");
        EXPECT_NE(l.reason.find("queue full"), std::string::npos) << l.reason;
        EXPECT_GT(l.bytes, 0u);
        dropped[l.cpu] += l.records;
    }
    EXPECT_GT(dropped[0], 0u) << "CPU 0 lost records to the full queue";
    EXPECT_GT(dropped[1], 0u) << "CPU 1 lost records to the full queue";
    EXPECT_LT(dropped[0], pushed[0]);

    // The writer catches up; the next record of each CPU comes after a LOST record
    // that accounts for everything that CPU dropped.
    gated.release();
    for (int i = 0; i < 2000; ++i) {
        auto st = sink.stats();
        if (st.writtenRecords == st.queuedRecords) break;
        usleep(1000);
    }
    for (int i = 0; i < 10; ++i) {
        push(0);
        push(1);
    }
    sink.onDrainPassEnd();
    ASSERT_TRUE(sink.finish());
    ASSERT_TRUE((*w)->finish());
    auto st = sink.stats();
    std::map<int, uint64_t> droppedAtEnd;
    for (auto& l : sink.losses())
        droppedAtEnd[l.cpu] += l.records;
    EXPECT_EQ(droppedAtEnd, dropped) << "nothing dropped once the writer caught up";
    EXPECT_EQ(st.droppedRecords, dropped[0] + dropped[1]);
    EXPECT_EQ(st.queuedRecords + st.droppedRecords, pushed[0] + pushed[1]);

    // The file: samples written + LOST counts = records pushed, per CPU.
    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_GT(v.header.data.size, 0u);
    std::map<int, uint64_t> samples, lost;
    uint64_t lostRecords = 0;
    for (auto& r : v.records) {
        ParsedRecord p;
        ASSERT_FALSE(parseRecord(r.bytes, cap.ids, p).has_value());
        if (r.header.type == PERF_RECORD_SAMPLE) ++samples[int(p.cpu)];
        if (r.header.type == PERF_RECORD_LOST) {
            ++lostRecords;
            lost[int(p.cpu)] += p.lost;
            EXPECT_EQ(p.id, 2000 + p.cpu) << "the LOST record names the CPU's tracking event";
            EXPECT_GT(p.time, 0u);
        }
    }
    for (int cpu : {0, 1}) {
        EXPECT_EQ(lost[cpu], dropped[cpu]) << "cpu " << cpu;
        EXPECT_EQ(samples[cpu] + lost[cpu], pushed[cpu]) << "cpu " << cpu;
    }
    EXPECT_GE(lostRecords, 2u);

    // perf sees the loss too.
    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed: the file was checked by our own walk only";
    auto r = runCommand({*perf, "report", "--stats", "-i", path}, 60);
    ASSERT_TRUE(r.exitedZero()) << r.err;
    auto stats = parsePerfStats(r.out);
    EXPECT_EQ(stats["LOST"], lostRecords);
    EXPECT_EQ(stats["SAMPLE"], samples[0] + samples[1]);
    auto script = runCommand({*perf, "script", "-i", path}, 60);
    ASSERT_TRUE(script.exitedZero()) << script.err;
    EXPECT_NE(script.err.find("lost " + std::to_string(lostRecords) + " chunks"), std::string::npos)
        << "perf warns about the lost records: " << script.err;
}

TEST(WriterQueuedSink, WriterErrorStopsTheCaptureAndCountsTheRest) {
    struct FailingWriter : SinkWriter {
        int calls = 0;
        Expected<void> writeRecord(int, std::span<const uint8_t>) override {
            if (++calls == 3) return makeError("disk on fire");
            return {};
        }
        Expected<void> writeLost(int, uint64_t, uint64_t) override { return {}; }
        Expected<void> endRound() override { return {}; }
    } failing;
    FakeCapture cap;
    QueuedSink sink({0, 1}, failing, QueuedSinkOptions{.queueBytes = 1 << 20, .name = "perf.data writer"});
    std::atomic<int> stops{0};
    sink.setStopRequest([&] { ++stops; });
    sink.start();
    for (int i = 0; i < 10; ++i) {
        auto rec = FakeCapture::sample(0, 100 + uint64_t(i));
        sink.onRecord(0, rec, parsed(cap.ids, rec));
    }
    sink.onDrainPassEnd();
    for (int i = 0; i < 500 && !sink.writerError(); ++i)
        usleep(1000);
    ASSERT_TRUE(sink.writerError());
    EXPECT_EQ(stops.load(), 1) << "the sink asked the capture to stop";
    auto rec = FakeCapture::sample(1, 999);
    sink.onRecord(1, rec, parsed(cap.ids, rec));
    auto result = sink.finish();
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().message.find("disk on fire"), std::string::npos);
    uint64_t lostAll = 0;
    for (auto& l : sink.losses()) {
        EXPECT_NE(l.reason.find("writer stopped: disk on fire"), std::string::npos) << l.reason;
        lostAll += l.records;
    }
    EXPECT_EQ(lostAll, 10u - 3u + 1u) << "every record after the failed one is counted";
    ASSERT_EQ(sink.messages().size(), 1u);
    EXPECT_NE(sink.messages()[0].find("the capture was stopped"), std::string::npos);
}

// ------------------------------------------------------------------ layout

TEST(WriterFile, HeaderAttrsAndIdsFollowPerfsLayoutAndTheHeaderIsRewrittenLast) {
    FakeCapture cap;
    const std::string path = tempFile("layout.data");
    auto w = PerfDataWriter::create(path, cap.attrs);
    ASSERT_TRUE(w) << w.error().message;
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE((*w)->writeStreamRecord(FakeCapture::sample(i % 2, 100 + uint64_t(i))));
    ASSERT_TRUE((*w)->writeFinishedRound());
    ASSERT_TRUE((*w)->flush());

    // Before finish(): what a crash leaves behind.
    auto crashed = readPerfDataFile(path);
    ASSERT_TRUE(crashed.ok) << crashed.error;
    EXPECT_EQ(crashed.header.data.size, 0u) << "data size stays 0 until the capture finishes";
    EXPECT_EQ(crashed.header.data.offset, (*w)->dataOffset());
    EXPECT_EQ(crashed.header.features[0], 0u);
    ASSERT_EQ(crashed.records.size(), 6u) << "the records already follow the attrs";
    EXPECT_EQ(crashed.records.back().header.type, perfdata::kRecordFinishedRound);

    (*w)->setFeature(perfdata::kFeatHostname, FeatureBlob().str("host").take());
    ASSERT_TRUE((*w)->finish());
    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    EXPECT_EQ(v.header.size, 104u);
    EXPECT_EQ(v.header.attrSize, sizeof(perf_event_attr) + 16);
    EXPECT_EQ(v.header.attrs.size, 2 * (sizeof(perf_event_attr) + 16));
    EXPECT_EQ(v.header.attrs.offset + v.header.attrs.size, v.header.data.offset);
    EXPECT_EQ(v.header.data.size, crashed.file.size() - crashed.header.data.offset);
    // Each attr's ids section holds its ids.
    for (size_t i = 0; i < 2; ++i) {
        perf_event_attr a;
        perfdata::FileSection ids;
        const size_t at = v.header.attrs.offset + i * v.header.attrSize;
        std::memcpy(&a, v.file.data() + at, sizeof a);
        std::memcpy(&ids, v.file.data() + at + sizeof a, sizeof ids);
        EXPECT_EQ(a.sample_type, cap.attrs[i].attr.sample_type);
        ASSERT_EQ(ids.size, 16u);
        uint64_t id0, id1;
        std::memcpy(&id0, v.file.data() + ids.offset, 8);
        std::memcpy(&id1, v.file.data() + ids.offset + 8, 8);
        EXPECT_EQ(id0, cap.attrs[i].ids[0]);
        EXPECT_EQ(id1, cap.attrs[i].ids[1]);
    }
    ASSERT_EQ(v.features.count(perfdata::kFeatHostname), 1u);
    auto s = v.features[perfdata::kFeatHostname];
    EXPECT_EQ(s.offset, v.header.data.offset + v.header.data.size + 16);
    EXPECT_EQ(s.size, 4u + 64u);
    uint32_t len;
    std::memcpy(&len, v.file.data() + s.offset, 4);
    EXPECT_EQ(len, 64u) << "strings: u32 length including the NUL, padded to 64";
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v.file.data() + s.offset + 4)), "host");
}

TEST(WriterFile, FeatureEncodings) {
    auto s = FeatureBlob().str(std::string(63, 'x')).take();
    EXPECT_EQ(s.size(), 4u + 64u);
    s = FeatureBlob().str(std::string(64, 'x')).take();
    EXPECT_EQ(s.size(), 4u + 128u);
    EXPECT_EQ(s[4 + 64], 0);

    FakeCapture cap;
    auto desc = FeatureWriter::eventDesc(cap.attrs);
    uint32_t nre, sz, nids;
    std::memcpy(&nre, desc.data(), 4);
    std::memcpy(&sz, desc.data() + 4, 4);
    EXPECT_EQ(nre, 2u);
    EXPECT_EQ(sz, sizeof(perf_event_attr));
    std::memcpy(&nids, desc.data() + 8 + sz, 4);
    EXPECT_EQ(nids, 2u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(desc.data() + 8 + sz + 8)), "cpu-clock");

    auto bid =
        FeatureWriter::buildIds({{"/bin/x", {1, 2, 3, 4}, false}, {"[kernel.kallsyms]", {9, 9}, true}});
    perf_event_header h;
    std::memcpy(&h, bid.data(), sizeof h);
    EXPECT_EQ(h.misc, PERF_RECORD_MISC_KERNEL | perfdata::kBuildIdMiscSize) << "kernel entries first";
    EXPECT_EQ(h.size, 36u + 64u);
    EXPECT_EQ(bid[12 + 20], 2) << "build-id length at byte 20";
    EXPECT_EQ(bid.size(), 2u * (36u + 64u));

    std::vector<std::string> notes;
    auto host = FeatureWriter::hostFeatures({"auxscope", "record"}, "auxscope test", &notes);
    for (unsigned f :
         {perfdata::kFeatHostname, perfdata::kFeatOsRelease, perfdata::kFeatVersion, perfdata::kFeatArch,
          perfdata::kFeatNrCpus, perfdata::kFeatTotalMem, perfdata::kFeatCmdline, perfdata::kFeatPmuMappings})
        EXPECT_EQ(host.count(f), 1u) << "feature " << f;
    uint32_t nrAvail, nrOnline;
    std::memcpy(&nrAvail, host[perfdata::kFeatNrCpus].data(), 4);
    std::memcpy(&nrOnline, host[perfdata::kFeatNrCpus].data() + 4, 4);
    EXPECT_EQ(nrOnline, uint32_t(sysconf(_SC_NPROCESSORS_ONLN)));
    EXPECT_GE(nrAvail, nrOnline);

    if (auto self = FeatureWriter::elfBuildId("/proc/self/exe")) {
        EXPECT_GE(self->size(), 16u);
    } else {
        ADD_FAILURE() << "this test binary carries a GNU build-id note (gcc's default)";
    }
}

TEST(WriterFile, TimeConvFromTheMmapPage) {
    FakeCapture cap;
    const std::string path = tempFile("timeconv.data");
    auto w = PerfDataWriter::create(path, cap.attrs);
    ASSERT_TRUE(w);
    perf_event_mmap_page page{};
    page.time_shift = 31;
    page.time_mult = 1234567;
    page.time_zero = 0x1122334455ull;
    page.cap_user_time = 1;
    page.cap_user_time_zero = 1;
    auto wrote = (*w)->writeTimeConv(page);
    ASSERT_TRUE(wrote);
    EXPECT_TRUE(*wrote);
    perf_event_mmap_page none{};
    auto skipped = (*w)->writeTimeConv(none);
    ASSERT_TRUE(skipped);
    EXPECT_FALSE(*skipped) << "no TIME_CONV without cap_user_time_zero, as perf record does";
    ASSERT_TRUE((*w)->writeStreamRecord(FakeCapture::sample(0, 5)));
    ASSERT_TRUE((*w)->finish());
    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok);
    ASSERT_GE(v.records.size(), 1u);
    ASSERT_EQ(v.records[0].header.type, perfdata::kRecordTimeConv);
    perfdata::TimeConvRecordBody b;
    std::memcpy(&b, v.records[0].bytes.data() + 8, sizeof b);
    EXPECT_EQ(b.timeShift, 31u);
    EXPECT_EQ(b.timeMult, 1234567u);
    EXPECT_EQ(b.timeZero, 0x1122334455ull);
    EXPECT_EQ(b.capUserTimeZero, 1);

    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed";
    auto r = runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(r.exitedZero()) << r.err;
    EXPECT_NE(r.out.find("PERF_RECORD_TIME_CONV"), std::string::npos);
}

// Intel BTS's private block (perf's intel-bts layout): pmu type, time shift, time
// mult, time zero, cap_user_time_zero, snapshot mode.
TEST(WriterFile, AuxtraceRecordsAndTheirIndexAreReadByPerf) {
    FakeCapture cap;
    const std::string path = tempFile("auxtrace.data");
    auto w = PerfDataWriter::create(path, cap.attrs);
    ASSERT_TRUE(w);
    std::vector<uint64_t> priv = {8, 0, 1, 0, 0, 0};
    ASSERT_TRUE((*w)->writeAuxtraceInfo(2 /* PERF_AUXTRACE_INTEL_BTS */, priv));
    ASSERT_TRUE((*w)->writeStreamRecord(FakeCapture::comm(0, 50, 4242, "worker")));
    std::vector<uint64_t> expectSizes;
    for (int i = 0; i < 3; ++i) {
        // BTS records: from, to, flags (bit 4: predicted) = 24 bytes each.
        std::vector<uint64_t> branches;
        for (int b = 0; b < 4 + i; ++b) {
            branches.push_back(0x401000 + uint64_t(b) * 16);
            branches.push_back(0x402000 + uint64_t(b) * 16);
            branches.push_back(0x10);
        }
        perfdata::AuxtraceRecord head{};
        head.offset = uint64_t(i) * 4096;
        head.reference = 0xabc0 + uint64_t(i);
        head.idx = uint32_t(i % 2);
        head.tid = 4242;
        head.cpu = uint32_t(i % 2);
        std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(branches.data()),
                                         branches.size() * 8);
        ASSERT_TRUE((*w)->writeAuxtrace(head, payload));
        expectSizes.push_back(payload.size());
        ASSERT_TRUE((*w)->writeStreamRecord(FakeCapture::sample(i % 2, 100 + uint64_t(i))));
    }
    ASSERT_TRUE((*w)->finish());

    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok) << v.error;
    ASSERT_EQ(v.features.count(perfdata::kFeatAuxtrace), 1u);
    auto sec = v.features[perfdata::kFeatAuxtrace];
    uint64_t n;
    std::memcpy(&n, v.file.data() + sec.offset, 8);
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(sec.size, 8 + 3 * sizeof(perfdata::AuxtraceIndexEntry));
    for (uint64_t i = 0; i < n; ++i) {
        perfdata::AuxtraceIndexEntry e;
        std::memcpy(&e, v.file.data() + sec.offset + 8 + i * sizeof e, sizeof e);
        perf_event_header h;
        std::memcpy(&h, v.file.data() + e.fileOffset, sizeof h);
        EXPECT_EQ(h.type, perfdata::kRecordAuxtrace)
            << "index entry " << i << " points at an AUXTRACE record";
        EXPECT_EQ(e.size, 8 + sizeof(perfdata::AuxtraceRecord))
            << "perf's index holds header.size, payload not included";
    }

    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed";
    auto dump = runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(dump.exitedZero()) << dump.err;
    // perf prints hex with %#x: "0" for zero, "0x1000" otherwise.
    std::regex aux(
        R"(PERF_RECORD_AUXTRACE size: (0x[0-9a-f]+|0)\s+offset: (0x[0-9a-f]+|0)\s+ref: (0x[0-9a-f]+|0)\s+idx: (\d+)\s+tid: (\d+)\s+cpu: (\d+))");
    std::vector<std::smatch> found;
    for (auto it = std::sregex_iterator(dump.out.begin(), dump.out.end(), aux); it != std::sregex_iterator();
         ++it)
        found.push_back(*it);
    ASSERT_EQ(found.size(), 3u) << dump.out.substr(0, 4000);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(std::stoull(found[i][1], nullptr, 0), expectSizes[i]);
        EXPECT_EQ(std::stoull(found[i][2], nullptr, 0), i * 4096);
        EXPECT_EQ(std::stoull(found[i][3], nullptr, 0), 0xabc0 + i);
        EXPECT_EQ(std::stoul(found[i][5]), 4242u);
    }
    EXPECT_NE(dump.out.find("PERF_RECORD_AUXTRACE_INFO"), std::string::npos);
    auto head = runCommand({*perf, "report", "--header-only", "-i", path}, 60);
    ASSERT_TRUE(head.exitedZero()) << head.err;
    EXPECT_NE(head.out.find("contains AUX area data"), std::string::npos) << head.out;
    // perf script queues the AUX data through the index (each entry must name an
    // AUXTRACE record of that size, or AUXTRACE_INFO processing fails) and decodes it.
    auto script = runCommand({*perf, "script", "-i", path}, 60);
    EXPECT_TRUE(script.exitedZero()) << script.err;
    EXPECT_EQ(script.err.find("failed to process"), std::string::npos) << script.err;
    auto stats = runCommand({*perf, "report", "--stats", "-i", path}, 60);
    EXPECT_TRUE(stats.exitedZero()) << stats.err;
    EXPECT_EQ(parsePerfStats(stats.out)["AUXTRACE"], 3u) << stats.out;
}

TEST(WriterFile, CompressedStreamReadsBackThroughPerf) {
    FakeCapture cap;
    const std::string path = tempFile("z.data");
    PerfDataWriterOptions o;
    o.compress = true;
    o.compressChunkBytes = 8192;  // many chunks, rounds inside chunks
    auto w = PerfDataWriter::create(path, cap.attrs, o);
    ASSERT_TRUE(w);
    ASSERT_TRUE((*w)->writeRecord(FakeCapture::comm(0, 0, 4242, "synth")));
    uint64_t t = 1000;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
        ASSERT_TRUE((*w)->writeStreamRecord(FakeCapture::sample(i % 2, t += 7)));
        if (i % 97 == 0) {
            ASSERT_TRUE((*w)->writeFinishedRound());
        }
        if (i % 5000 == 0) {
            ASSERT_TRUE((*w)->flush());
        }
    }
    ASSERT_TRUE((*w)->finish());
    EXPECT_GT((*w)->stats().compressedRecords, 5u);
    EXPECT_LT((*w)->stats().compressedBytes, (*w)->stats().streamBytes / 4);
    auto v = readPerfDataFile(path);
    ASSERT_TRUE(v.ok);
    ASSERT_EQ(v.features.count(perfdata::kFeatCompressed), 1u);
    perfdata::CompressedFeature c;
    std::memcpy(&c, v.file.data() + v.features[perfdata::kFeatCompressed].offset, sizeof c);
    EXPECT_EQ(c.type, 1u);
    EXPECT_EQ(c.level, 1u);
    EXPECT_GE(c.mmapLen, 8192u);
    for (auto& r : v.records)
        EXPECT_TRUE(r.header.type == perfdata::kRecordCompressed ||
                    r.header.type == perfdata::kRecordFinishedRound || r.header.type == PERF_RECORD_COMM)
            << r.header.type;

    auto perf = perfBinary();
    if (!perf) GTEST_SKIP() << "perf is not installed";
    auto r = runCommand({*perf, "report", "--stats", "-i", path}, 60);
    ASSERT_TRUE(r.exitedZero()) << r.err;
    EXPECT_EQ(r.err, "");
    auto stats = parsePerfStats(r.out);
    EXPECT_EQ(stats["SAMPLE"], uint64_t(n));
    EXPECT_EQ(stats["COMM"], 1u);
}

}  // namespace
}  // namespace auxscope
