// SPDX-License-Identifier: GPL-3.0-or-later
// The drain thread's AUX path, over SimulatedCapture (the real DrainThread on
// simulated CPUs): every AUX byte delivered exactly once and in order, the AUX
// event re-enabled after every disable (TRUNCATED and "no space at begin"), the
// PERF_RECORD_AUX flags counted per CPU, QueuedSink's AUX drop accounting, and
// the bytes in perf.data as PERF_RECORD_AUXTRACE (perf as the oracle).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "QueuedSink.h"
#include "SimulatedCapture.h"
#include "WaitFor.h"
#include "WriterTestSupport.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "record/PerfDataWriterSink.h"

namespace auxscope {
namespace {

using namespace std::chrono_literals;

bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5000ms) {
    return test_support::waitFor(cond, limit);
}

// Keeps every AUX chunk the drain thread hands out, per CPU (drain thread only;
// read after the capture finished).
class AuxCollector : public RecordSink {
public:
    struct Chunk {
        uint32_t ringIndex;
        uint64_t offset;
        size_t size;
    };
    explicit AuxCollector(size_t cpus) : bytes(cpus), chunks(cpus) {}
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override {}
    void onAux(int cpu, uint32_t ringIndex, const AuxBytes& b) override {
        chunks[size_t(cpu)].push_back({ringIndex, b.offset, b.size()});
        auto& out = bytes[size_t(cpu)];
        out.insert(out.end(), b.first.begin(), b.first.end());
        out.insert(out.end(), b.second.begin(), b.second.end());
        delivered.fetch_add(b.size(), std::memory_order_relaxed);
    }
    std::vector<SinkLoss> losses() const override { return {}; }

    std::vector<std::vector<uint8_t>> bytes;
    std::vector<std::vector<Chunk>> chunks;
    std::atomic<uint64_t> delivered{0};
};

// Index of the first byte that is not the producer's pattern at its stream
// position (`from` = position of bytes[0]), or -1.
int64_t firstPatternMismatch(const std::vector<uint8_t>& bytes, uint64_t from = 0) {
    for (size_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] != SimulatedAuxProducer::patternByte(from + i)) return int64_t(i);
    return -1;
}

SimulatedCaptureOptions smallRings(unsigned cpus, uint64_t auxSize) {
    SimulatedCaptureOptions o;
    o.cpus = cpus;
    o.producer.auxSize = auxSize;
    // 32 KiB of data ring: room for far more PERF_RECORD_AUX (64 bytes each) than
    // two fills of the AUX area produce, so no record is ever lost.
    o.producer.dataPages = 8;
    o.publishHz = 50;
    return o;
}

// Runs every producer in the background (as fast as the drain thread lets it:
// each one fills its AUX area, is disabled and waits for the re-enable) for
// `duration`, or until it made `transactions` transactions, stops them, and waits
// until the drain thread has re-enabled the ones that ended disabled.
void produceFor(SimulatedCapture& cap, std::chrono::milliseconds duration, uint64_t transactions = ~0ull) {
    for (size_t i = 0; i < cap.cpuCount(); ++i) {
        SimulatedAuxProducer::Plan plan;
        plan.transactions = transactions;
        plan.minBytes = 256;
        plan.maxBytes = 4096;
        plan.seed = 17 + i;
        plan.partialEvery = 5;
        plan.collisionEvery = 7;
        cap.producer(i).start(plan);
    }
    waitFor(
        [&] {
            for (size_t i = 0; i < cap.cpuCount(); ++i)
                if (!cap.producer(i).finished()) return false;
            return true;
        },
        duration);
    for (size_t i = 0; i < cap.cpuCount(); ++i)
        cap.producer(i).stop();
    for (size_t i = 0; i < cap.cpuCount(); ++i)
        EXPECT_TRUE(waitFor([&] { return cap.producer(i).enabled(); }))
            << "cpu " << i << ": the drain thread never re-enabled the AUX event";
}

// What the drain thread counted for one CPU equals what its producer did.
void expectCountsMatch(const SimulatedCapture& capConst, SimulatedAuxProducer& p, size_t cpu) {
    const SimulatedAuxCounts n = p.counts();
    const CpuStatsSnapshot s = capConst.stats().snapshot(cpu);
    const CpuCounters& t = s.totals;
    SCOPED_TRACE("cpu " + std::to_string(cpu));
    ASSERT_EQ(n.recordsDropped, 0u) << "the data ring overflowed: the test's premise is broken";
    EXPECT_EQ(n.disables, n.truncatedRecords + n.noSpaceAtBegin);
    EXPECT_EQ(n.enables, n.disables) << "every disable is followed by a re-enable";
    EXPECT_EQ(t.auxReenables, n.enables) << "the drain thread counts exactly the re-enables it made";
    EXPECT_EQ(t.auxTruncated, n.truncatedRecords);
    EXPECT_EQ(t.auxPartial, n.partialRecords);
    EXPECT_EQ(t.auxCollision, n.collisionRecords);
    EXPECT_EQ(t.auxOverwrite, 0u);
    EXPECT_EQ(t.byType[PERF_RECORD_AUX], n.auxRecords);
    EXPECT_EQ(t.auxBytes, n.bytesWritten);
    EXPECT_EQ(t.auxErrors, 0u);
    EXPECT_EQ(t.lostRecords, 0u);
    EXPECT_TRUE(s.hasAux);
    EXPECT_EQ(s.auxRingBytes, p.config().auxSize);
    EXPECT_GE(s.auxFillPercent, 0.0);
    EXPECT_LE(s.auxFillPercent, 100.0);
}

TEST(AuxDrain, FourCpusFillingSmallAuxAreasDeliverEveryByteOnceInOrder) {
    auto cap = SimulatedCapture::create(smallRings(4, 16384));
    ASSERT_TRUE(cap) << cap.error().message;
    AuxCollector col(4);
    (*cap)->addSink(&col);
    ASSERT_TRUE((*cap)->start());
    produceFor(**cap, 1000ms);
    (*cap)->requestStop();
    (*cap)->wait();

    for (size_t i = 0; i < 4; ++i) {
        SCOPED_TRACE("cpu " + std::to_string(i));
        auto& p = (*cap)->producer(i);
        const SimulatedAuxCounts n = p.counts();
        EXPECT_GT(n.truncatedRecords, 0u) << "the AUX area never filled up";
        EXPECT_GT(n.transactions, n.disables) << "production resumes after the re-enables";
        // Every byte written arrives once, in order, contiguous from position 0.
        ASSERT_EQ(col.bytes[i].size(), n.bytesWritten);
        EXPECT_EQ(firstPatternMismatch(col.bytes[i]), -1);
        uint64_t next = 0;
        for (const auto& c : col.chunks[i]) {
            ASSERT_EQ(c.offset, next);
            EXPECT_EQ(c.ringIndex, i);
            EXPECT_GT(c.size, 0u);
            next += c.size;
        }
        expectCountsMatch(**cap, p, i);
        std::printf(
            "cpu %zu: %llu transactions, %llu bytes, %llu TRUNCATED, %llu no space at begin, %llu "
            "re-enables, %zu chunks\n",
            i, (unsigned long long)n.transactions, (unsigned long long)n.bytesWritten,
            (unsigned long long)n.truncatedRecords, (unsigned long long)n.noSpaceAtBegin,
            (unsigned long long)n.enables, col.chunks[i].size());
    }
    for (auto& m : (*cap)->messages())
        EXPECT_EQ(m.find("AUX"), std::string::npos) << m;
}

// The kernel disables the event with no record at all when a transaction finds
// no space: the drain thread must notice from the full area alone.
TEST(AuxDrain, NoSpaceAtBeginIsReenabledWithoutAnyRecord) {
    auto cap = SimulatedCapture::create(smallRings(1, 4096));
    ASSERT_TRUE(cap) << cap.error().message;
    auto& p = (*cap)->producer(0);
    auto t1 = p.step(4095);  // exactly the space there is: no TRUNCATED
    EXPECT_EQ(t1.written, 4095u);
    EXPECT_EQ(t1.flags, 0u);
    auto t2 = p.step(10);  // no space at begin
    EXPECT_FALSE(t2.started);
    EXPECT_FALSE(p.enabled());
    AuxCollector col(1);
    (*cap)->addSink(&col);
    ASSERT_TRUE((*cap)->start());
    ASSERT_TRUE(waitFor([&] { return p.enabled(); }));
    EXPECT_EQ(p.step(100).written, 100u);
    ASSERT_TRUE(waitFor([&] { return col.delivered.load() == 4195; }));
    (*cap)->requestStop();
    (*cap)->wait();
    const SimulatedAuxCounts n = p.counts();
    EXPECT_EQ(n.noSpaceAtBegin, 1u);
    EXPECT_EQ(n.truncatedRecords, 0u);
    EXPECT_EQ(n.enables, 1u);
    EXPECT_EQ(firstPatternMismatch(col.bytes[0]), -1);
    expectCountsMatch(**cap, p, 0);
}

TEST(AuxDrain, TruncatedTransactionIsReenabled) {
    auto cap = SimulatedCapture::create(smallRings(1, 4096));
    ASSERT_TRUE(cap) << cap.error().message;
    auto& p = (*cap)->producer(0);
    p.step(4000);
    auto t = p.step(500, kAuxFlagPartial);
    EXPECT_EQ(t.written, 95u);
    EXPECT_EQ(t.flags, kAuxFlagTruncated | kAuxFlagPartial);
    EXPECT_FALSE(p.enabled());
    AuxCollector col(1);
    (*cap)->addSink(&col);
    ASSERT_TRUE((*cap)->start());
    ASSERT_TRUE(waitFor([&] { return p.enabled(); }));
    EXPECT_EQ(p.step(3000).written, 3000u);
    ASSERT_TRUE(waitFor([&] { return col.delivered.load() == 7095; }));
    (*cap)->requestStop();
    (*cap)->wait();
    const SimulatedAuxCounts n = p.counts();
    EXPECT_EQ(n.truncatedRecords, 1u);
    EXPECT_EQ(n.enables, 1u);
    EXPECT_EQ(firstPatternMismatch(col.bytes[0]), -1);
    expectCountsMatch(**cap, p, 0);
    EXPECT_EQ((*cap)->stats().snapshot(0).totals.auxPartial, 1u);
}

// A writer whose writeAux blocks until released, keeping what it got.
class GatedAuxWriter : public SinkWriter {
public:
    Expected<void> writeRecord(int, std::span<const uint8_t> r) override {
        records.fetch_add(1);
        recordBytes.fetch_add(r.size());
        return {};
    }
    Expected<void> writeLost(int, uint64_t n, uint64_t) override {
        lost.fetch_add(n);
        return {};
    }
    Expected<void> endRound() override { return {}; }
    Expected<void> writeAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> first,
                            std::span<const uint8_t> second) override {
        while (!open.load())
            std::this_thread::sleep_for(1ms);
        std::vector<uint8_t> b(first.begin(), first.end());
        b.insert(b.end(), second.begin(), second.end());
        got.push_back({cpu, ringIndex, auxOffset, std::move(b)});
        return {};
    }
    struct Piece {
        int cpu;
        uint32_t ringIndex;
        uint64_t offset;
        std::vector<uint8_t> bytes;
    };
    std::atomic<bool> open{false};
    std::atomic<uint64_t> records{0}, recordBytes{0}, lost{0};
    std::vector<Piece> got;
};

TEST(AuxDrainSink, QueuedSinkWritesAuxBytesInPlaceAndReleasesThemAfterwards) {
    GatedAuxWriter w;
    QueuedSinkOptions o;
    o.queueBytes = 4096;
    o.name = "test sink";
    QueuedSink q({0, 1}, w, o);
    q.start();
    // An "AUX area" whose window wraps: two pieces, one chunk.
    std::vector<uint8_t> area(3000);
    for (size_t i = 0; i < area.size(); ++i)
        area[i] = SimulatedAuxProducer::patternByte(1000 + i);
    const AuxBytes b{1000, std::span(area).first(2000), std::span(area).subspan(2000), nullptr};
    ASSERT_TRUE(q.hasAuxRoom(0, b));
    q.onAux(0, 0, b);
    q.onDrainPassEnd();
    // Held until written: the drain thread must not move aux_tail past it.
    EXPECT_NE(q.auxReleased(0), RecordSink::kAuxAllReleased);
    EXPECT_LE(q.auxReleased(0), 1000u);
    EXPECT_EQ(q.auxReleased(1), RecordSink::kAuxAllReleased) << "ring 1 was handed nothing";
    // The writer reads the area itself, not a copy taken at onAux().
    area[0] ^= 0xff;
    const uint8_t changed = area[0];
    w.open = true;
    ASSERT_TRUE(waitFor([&] { return q.auxReleased(0) == RecordSink::kAuxAllReleased; }));
    ASSERT_TRUE(q.finish());
    ASSERT_EQ(w.got.size(), 1u) << "one AUXTRACE per window, both pieces in it";
    EXPECT_EQ(w.got[0].offset, 1000u);
    EXPECT_EQ(w.got[0].cpu, 0);
    EXPECT_EQ(w.got[0].ringIndex, 0u);
    ASSERT_EQ(w.got[0].bytes.size(), 3000u);
    EXPECT_EQ(w.got[0].bytes[0], changed);
    EXPECT_EQ(std::vector<uint8_t>(w.got[0].bytes.begin() + 1, w.got[0].bytes.end()),
              std::vector<uint8_t>(area.begin() + 1, area.end()));
    auto st = q.stats();
    EXPECT_EQ(st.queuedAuxChunks, 1u);
    EXPECT_EQ(st.writtenAuxBytes, 3000u);
    EXPECT_EQ(st.droppedAuxChunks, 0u);
    EXPECT_TRUE(q.losses().empty());
}

TEST(AuxDrainSink, QueuedSinkHoldsBackInsteadOfDropping) {
    GatedAuxWriter w;
    QueuedSinkOptions o;
    o.queueBytes = 4096;
    o.maxHeldSnapshotBytes = 5000;
    QueuedSink q({0}, w, o);
    q.start();
    // The writer is stuck on an AUX chunk: records pile up behind it until the
    // queue says it has no room, and then nothing more is taken.
    std::vector<uint8_t> area(100, 7);
    q.onAux(0, 0, AuxBytes{0, area, {}, nullptr});
    std::vector<uint8_t> rec(512, 0);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, uint16_t(rec.size())};
    std::memcpy(rec.data(), &h, sizeof h);
    ParsedRecord parsed;
    uint64_t taken = 0;
    while (q.hasRoom(0, rec.size()) && taken < 100) {
        q.onRecord(0, rec, parsed);
        ++taken;
    }
    EXPECT_LT(taken, 8u);
    EXPECT_GE(taken, 5u);
    // AUX entries (references, 64 bytes each) fill what is left, then are refused too.
    uint64_t auxOffset = 100, auxTaken = 0;
    while (q.hasAuxRoom(0, AuxBytes{auxOffset, area, {}, nullptr}) && auxTaken < 100) {
        q.onAux(0, 0, AuxBytes{auxOffset, area, {}, nullptr});
        auxOffset += area.size(), ++auxTaken;
    }
    EXPECT_LT(auxTaken, 8u);
    // Snapshot copies: the first is always taken, then at most 5000 bytes are held.
    w.open = true;
    ASSERT_TRUE(waitFor([&] { return q.hasRoom(0, rec.size()); }));
    w.open = false;
    auto snap = std::make_shared<std::vector<uint8_t>>(4000, 1);
    q.onAux(0, 0, AuxBytes{0, std::span<const uint8_t>(*snap), {}, snap});
    EXPECT_FALSE(q.hasAuxRoom(0, AuxBytes{0, std::span<const uint8_t>(*snap), {}, snap}));
    EXPECT_EQ(snap.use_count(), 2) << "the sink keeps a reference, not a copy";
    w.open = true;
    ASSERT_TRUE(q.finish());
    EXPECT_EQ(snap.use_count(), 1) << "released once written";
    EXPECT_EQ(w.records.load(), taken);
    EXPECT_EQ(w.lost.load(), 0u);
    ASSERT_EQ(w.got.size(), 2 + auxTaken);
    EXPECT_EQ(w.got[auxTaken].offset, 100 * auxTaken) << "AUX chunks in order, none lost";
    auto st = q.stats();
    EXPECT_EQ(st.droppedRecords, 0u);
    EXPECT_EQ(st.droppedAuxChunks, 0u);
    EXPECT_GE(st.recordsHeldBack, 1u);
    EXPECT_GE(st.auxHeldBack, 2u);
    EXPECT_EQ(st.maxHeldSnapshotBytes, 4000u);
    EXPECT_TRUE(q.losses().empty());
}

// A perf.data for a simulated capture's AUX event: its attr and ids, and Intel
// BTS's AUXTRACE_INFO block (perf accepts AUXTRACE data only after one: pmu type,
// time shift, time mult, time zero, cap_user_time_zero, snapshot).
Expected<std::unique_ptr<PerfDataWriter>> createAuxFile(const SimulatedCapture& cap,
                                                        const std::string& path) {
    PerfDataEventAttr attr{"simulated-aux", cap.eventAttr(), {}};
    for (size_t i = 0; i < cap.cpuCount(); ++i)
        attr.ids.push_back(cap.eventId(i));
    auto w = PerfDataWriter::create(path, {attr});
    if (!w) return w;
    if (auto r = (*w)->writeAuxtraceInfo(auxtrace::kTypeIntelBts, std::vector<uint64_t>{8, 0, 1, 0, 0, 0});
        !r)
        return r.error();
    return w;
}

// The writer sink's configuration for it: LOST records name each CPU's event.
PerfDataWriterSinkConfig auxSinkConfig(const SimulatedCapture& cap) {
    PerfDataWriterSinkConfig sc;
    sc.ids = &cap.ids();
    for (size_t i = 0; i < cap.cpuCount(); ++i)
        sc.lostIdByCpu[int(i)] = {SimulatedCapture::kSampleType, cap.eventId(i), uint32_t(i)};
    sc.fallbackLostId = sc.lostIdByCpu[0];
    sc.trackBuildIds = false;
    return sc;
}

TEST(AuxDrainFile, AuxBytesReachPerfDataAsAuxtraceRecords) {
    constexpr unsigned kCpus = 4;
    auto cap = SimulatedCapture::create(smallRings(kCpus, 16384));
    ASSERT_TRUE(cap) << cap.error().message;
    const std::string dir =
        std::filesystem::temp_directory_path() / ("auxscope-auxdrain-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/aux.data";

    auto w = createAuxFile(**cap, path);
    ASSERT_TRUE(w) << w.error().message;
    PerfDataWriterSink sinkWriter(**w, auxSinkConfig(**cap));
    QueuedSinkOptions qo;
    qo.name = "perf.data writer";
    QueuedSink queue((*cap)->cpus(), sinkWriter, qo);
    queue.start();
    (*cap)->addSink(&queue);
    ASSERT_TRUE((*cap)->start());
    // About 4 MiB per CPU keeps perf report -D quick.
    produceFor(**cap, 10000ms, 2000);
    // Every step of the plan is a transaction, or found the area full at its begin
    // (the writer still held the bytes): disabled without a record, as the kernel does.
    for (size_t i = 0; i < kCpus; ++i) {
        const SimulatedAuxCounts n = (*cap)->producer(i).counts();
        EXPECT_EQ(n.transactions + n.noSpaceAtBegin, 2000u);
    }
    (*cap)->requestStop();
    (*cap)->wait();
    ASSERT_TRUE(queue.finish());
    EXPECT_TRUE(queue.losses().empty());
    ASSERT_TRUE((*w)->finish());

    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    const PerfDataSummary& sum = reader->summary();
    ASSERT_FALSE(sum.auxtrace.empty());
    EXPECT_EQ(sum.auxtraceInfo.size(), 1u);
    std::map<int64_t, std::vector<uint8_t>> perCpu;
    std::map<int64_t, uint64_t> nextOffset;
    for (const PerfAuxtraceBuffer& b : sum.auxtrace) {
        ASSERT_GE(b.cpu, 0);
        ASSERT_LT(b.cpu, int64_t(kCpus));
        EXPECT_EQ(b.idx, uint32_t(b.cpu));
        EXPECT_EQ(b.tid, uint32_t(-1));
        ASSERT_EQ(b.available, b.size);
        auto bytes = reader->fileBytes(b.dataOffset, b.size);
        ASSERT_EQ(bytes.size(), b.size);
        // The writer pads each payload to 8 bytes with zeros; pattern bytes are never zero.
        size_t n = bytes.size();
        while (n > 0 && bytes[n - 1] == 0 && bytes.size() - n < 8)
            --n;
        EXPECT_EQ(b.auxOffset, nextOffset[b.cpu]) << "AUXTRACE offsets continue each other";
        nextOffset[b.cpu] = b.auxOffset + n;
        perCpu[b.cpu].insert(perCpu[b.cpu].end(), bytes.begin(), bytes.begin() + long(n));
    }
    uint64_t totalTruncated = 0;
    for (size_t i = 0; i < kCpus; ++i) {
        SCOPED_TRACE("cpu " + std::to_string(i));
        auto& p = (*cap)->producer(i);
        const SimulatedAuxCounts n = p.counts();
        EXPECT_EQ(perCpu[int64_t(i)].size(), n.bytesWritten);
        EXPECT_EQ(firstPatternMismatch(perCpu[int64_t(i)]), -1);
        expectCountsMatch(**cap, p, i);
        // The PERF_RECORD_AUX records went to the file too.
        EXPECT_EQ(sum.cpus.at(int64_t(i)).aux.truncated, n.truncatedRecords);
        EXPECT_EQ(sum.cpus.at(int64_t(i)).aux.records, n.auxRecords);
        totalTruncated += n.truncatedRecords;
    }
    EXPECT_GT(totalTruncated, 0u);
    const auto& index = reader->features().auxtraceIndex;
    ASSERT_TRUE(index.has_value());
    ASSERT_EQ(index->size(), sum.auxtrace.size());
    for (size_t i = 0; i < index->size(); ++i)
        EXPECT_EQ((*index)[i].fileOffset, sum.auxtrace[i].fileOffset);
    EXPECT_EQ(sinkWriter.auxtraceRecordsWritten(), sum.auxtrace.size());

    auto perf = writertest::perfBinary();
    if (!perf) {
        std::filesystem::remove_all(dir);
        GTEST_SKIP() << "perf is not installed";
    }
    std::printf("%zu AUXTRACE records, %llu bytes in %s\n", sum.auxtrace.size(),
                (unsigned long long)reader->fileSize(), path.c_str());
    auto dump = writertest::runCommand({*perf, "report", "-D", "-i", path}, 60);
    ASSERT_TRUE(dump.exitedZero()) << dump.err.substr(0, 2000);
    EXPECT_EQ(writertest::countMatches(dump.out, R"(PERF_RECORD_AUXTRACE size: )"), sum.auxtrace.size());
    std::filesystem::remove_all(dir);
}

// A disk slower than the hardware: the writer sleeps before every AUX chunk.
// The bytes wait in the AUX area, the area fills, and the (simulated) kernel stops
// the trace with TRUNCATED records; the drain thread re-enables it once the writer
// released room. Nothing the drain thread handed over is lost: per CPU, the file
// holds exactly the bytes the hardware wrote, with contiguous offsets, and the
// PERF_RECORD_AUX records in the file announce exactly those bytes.
class SlowAuxWriter : public SinkWriter {
public:
    explicit SlowAuxWriter(SinkWriter& inner) : inner_(inner) {}
    Expected<void> writeRecord(int cpu, std::span<const uint8_t> r) override {
        return inner_.writeRecord(cpu, r);
    }
    Expected<void> writeLost(int cpu, uint64_t n, uint64_t t) override { return inner_.writeLost(cpu, n, t); }
    Expected<void> endRound() override { return inner_.endRound(); }
    Expected<void> idle() override { return inner_.idle(); }
    Expected<void> writeAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> first,
                            std::span<const uint8_t> second) override {
        std::this_thread::sleep_for(2ms);
        return inner_.writeAux(cpu, ringIndex, auxOffset, first, second);
    }

private:
    SinkWriter& inner_;
};

TEST(AuxDrainFile, SlowWriterLosesNothingItWasHandedOnlyTheKernelTruncates) {
    constexpr unsigned kCpus = 4;
    auto cap = SimulatedCapture::create(smallRings(kCpus, 16384));
    ASSERT_TRUE(cap) << cap.error().message;
    const std::string dir =
        std::filesystem::temp_directory_path() / ("auxscope-auxslow-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/slow.data";
    auto w = createAuxFile(**cap, path);
    ASSERT_TRUE(w) << w.error().message;
    PerfDataWriterSink sinkWriter(**w, auxSinkConfig(**cap));
    SlowAuxWriter slow(sinkWriter);
    QueuedSink queue((*cap)->cpus(), slow, QueuedSinkOptions{.name = "perf.data writer"});
    queue.start();
    (*cap)->addSink(&queue);
    ASSERT_TRUE((*cap)->start());
    produceFor(**cap, 3000ms);
    (*cap)->requestStop();
    (*cap)->wait();
    ASSERT_TRUE(queue.finish());
    EXPECT_TRUE(queue.losses().empty());
    const auto st = queue.stats();
    EXPECT_EQ(st.droppedAuxBytes, 0u);
    ASSERT_TRUE((*w)->finish());

    auto reader = PerfDataReader::open(path);
    ASSERT_TRUE(reader) << reader.error().message;
    const PerfDataSummary& sum = reader->summary();
    std::map<int64_t, uint64_t> present, next;
    for (const PerfAuxtraceBuffer& b : sum.auxtrace) {
        auto bytes = reader->fileBytes(b.dataOffset, b.size);
        size_t n = bytes.size();
        while (n > 0 && bytes[n - 1] == 0 && bytes.size() - n < 8)
            --n;
        EXPECT_EQ(b.auxOffset, next[b.cpu]) << "cpu " << b.cpu << ": no gap between AUXTRACE records";
        EXPECT_EQ(firstPatternMismatch({bytes.begin(), bytes.begin() + long(n)}, b.auxOffset), -1);
        next[b.cpu] = b.auxOffset + n;
        present[b.cpu] += n;
    }
    uint64_t truncated = 0, heldBack = 0;
    for (size_t i = 0; i < kCpus; ++i) {
        SCOPED_TRACE("cpu " + std::to_string(i));
        auto& p = (*cap)->producer(i);
        const SimulatedAuxCounts n = p.counts();
        EXPECT_EQ(present[int64_t(i)], n.bytesWritten) << "every byte the hardware wrote is in the file";
        EXPECT_EQ(sum.cpus.at(int64_t(i)).aux.bytes, n.bytesWritten) << "announced = written = present";
        EXPECT_EQ(sum.cpus.at(int64_t(i)).aux.truncated, n.truncatedRecords);
        expectCountsMatch(**cap, p, i);
        truncated += n.truncatedRecords + n.noSpaceAtBegin;
        heldBack += (*cap)->stats().snapshot(i).totals.auxSinkHeldBack;
    }
    EXPECT_GT(truncated, 0u) << "the slow writer made the areas fill: the kernel stopped the trace";
    std::printf(
        "slow writer: %llu AUX chunks written, %llu kernel stops (TRUNCATED or no space), "
        "%llu passes held AUX bytes back\n",
        (unsigned long long)st.writtenAuxChunks, (unsigned long long)truncated, (unsigned long long)heldBack);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace auxscope
