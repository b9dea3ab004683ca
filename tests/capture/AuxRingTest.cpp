// SPDX-License-Identifier: GPL-3.0-or-later
// AuxRing's full-mode drain and snapshot reader against SimulatedAuxProducer,
// which follows the kernel's AUX protocol (perf_aux_output_begin/end): wrap at
// every byte offset, TRUNCATED + disable + re-enable, snapshot wrap detection,
// PERF_RECORD_AUX tiling, data-ring loss, and a concurrent producer/consumer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "AuxRing.h"
#include "DataRing.h"
#include "PerfEvent.h"
#include "RecordParser.h"
#include "RingReader.h"
#include "SimulatedAuxProducer.h"

using namespace auxscope;

namespace {

constexpr uint64_t kIdFields = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;

std::unique_ptr<SimulatedAuxProducer> makeProducer(SimulatedAuxConfig cfg) {
    auto p = SimulatedAuxProducer::create(cfg);
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? std::move(p.value()) : nullptr;
}

struct AuxRec {
    uint64_t offset, size, flags;
};

// What a drain thread does with one simulated CPU: drain the AUX area checking
// every byte against the pattern, walk the data ring, parse every record.
struct Consumer {
    explicit Consumer(SimulatedAuxProducer& p) : data(p.dataRing()), aux(p.auxRing()) {
        ids.add(p.config().id, EventLayout{kIdFields, 0, 0, int(p.config().cpu)});
    }
    DataRing data;
    AuxRing aux;
    RingReader reader;
    IdTable ids;
    uint64_t bytes = 0, mismatches = 0, maxChunks = 0, twoChunkDrains = 0;
    std::vector<AuxRec> recs;
    uint64_t lostRecords = 0, lostSum = 0, truncated = 0, partial = 0, collision = 0, overwrite = 0,
             errors = 0;
    uint64_t enables = 0;

    void drainAux() {
        auto r = aux.drain([&](std::span<const uint8_t> chunk, uint64_t pos) {
            if (pos != bytes) ++mismatches;  // chunks arrive in stream order, no gap
            for (size_t i = 0; i < chunk.size(); ++i)
                if (chunk[i] != SimulatedAuxProducer::patternByte(pos + i)) ++mismatches;
            bytes += chunk.size();
        });
        if (r.error) ++errors;
        maxChunks = std::max<uint64_t>(maxChunks, r.chunks);
        if (r.chunks == 2) ++twoChunkDrains;
    }
    void drainData() {
        auto w = reader.walk(data.data(), data.size(), data.tail(), data.head(),
                             [&](const perf_event_header&, std::span<const uint8_t> rec) {
                                 ParsedRecord pr;
                                 if (parseRecord(rec, ids, pr) || !pr.event || pr.cpu != 0) ++errors;
                                 if (pr.type == PERF_RECORD_AUX) {
                                     recs.push_back({pr.auxOffset, pr.auxSize, pr.auxFlags});
                                     truncated += (pr.auxFlags & kAuxFlagTruncated) != 0;
                                     partial += (pr.auxFlags & kAuxFlagPartial) != 0;
                                     collision += (pr.auxFlags & kAuxFlagCollision) != 0;
                                     overwrite += (pr.auxFlags & kAuxFlagOverwrite) != 0;
                                 } else if (pr.type == PERF_RECORD_LOST) {
                                     ++lostRecords;
                                     lostSum += pr.lost;
                                 } else {
                                     ++errors;
                                 }
                             });
        if (w.error) ++errors;
        data.setTail(w.newTail);
    }
};

uint64_t xorshift(uint64_t& x) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
}

std::vector<uint8_t> expectedNewest(uint64_t stream, uint64_t n) {
    std::vector<uint8_t> v(n);
    for (uint64_t i = 0; i < n; ++i)
        v[i] = SimulatedAuxProducer::patternByte(stream - n + i);
    return v;
}

// Full mode: records tile [0, aux_head) exactly, in order, no gap, no overlap.
void expectTiling(const std::vector<AuxRec>& recs, uint64_t end) {
    uint64_t pos = 0;
    for (size_t i = 0; i < recs.size(); ++i) {
        ASSERT_EQ(recs[i].offset, pos) << "record " << i;
        ASSERT_GT(recs[i].size, 0u) << "record " << i;
        ASSERT_EQ(recs[i].flags & kAuxFlagOverwrite, 0u);
        pos += recs[i].size;
    }
    EXPECT_EQ(pos, end);
}

}  // namespace

TEST(AuxRing, FullModeWrapsAtEveryByteOffset) {
    for (uint64_t size : {64u, 256u, 4096u}) {
        for (uint64_t start = 0; start < size; ++start) {
            auto p = makeProducer({.dataPages = 16, .auxSize = size});
            ASSERT_TRUE(p);
            Consumer c(*p);
            if (start) p->step(start), c.drainAux();
            // A transaction of size-1 bytes (the most full mode allows) wraps from
            // every start offset but 0 and 1; then smaller ones, drained at varied times.
            p->step(size - 1);
            c.drainAux();
            uint64_t x = start * 2654435761u + size;
            const int rounds = size <= 256 ? 40 : 3;
            for (int i = 0; i < rounds; ++i) {
                p->step(1 + xorshift(x) % (size / 2));
                if (xorshift(x) % 3) c.drainAux();
                if (!p->enabled()) c.drainAux(), p->enable();  // TRUNCATED: drain, re-enable
            }
            c.drainAux();
            c.drainData();
            const auto n = p->counts();
            ASSERT_EQ(c.bytes, n.bytesWritten) << "size " << size << " start " << start;
            ASSERT_EQ(c.bytes, c.aux.head());
            ASSERT_EQ(c.mismatches, 0u) << "size " << size << " start " << start;
            ASSERT_LE(c.maxChunks, 2u);
            ASSERT_EQ(c.errors, 0u);
            if (start > 1) {
                ASSERT_GE(c.twoChunkDrains, 1u) << "size " << size << " start " << start;
            }
            expectTiling(c.recs, c.bytes);
        }
    }
}

TEST(AuxRing, FullRingTruncatesDisablesAndResumesAfterEnable) {
    auto p = makeProducer({.dataPages = 16, .auxSize = 1024});
    ASSERT_TRUE(p);
    Consumer c(*p);
    // The kernel leaves one byte free: 1023 bytes at most.
    auto t1 = p->step(600);
    auto t2 = p->step(600);
    EXPECT_EQ(t1.written, 600u);
    EXPECT_EQ(t2.written, 423u);
    EXPECT_EQ(t2.flags, kAuxFlagTruncated);
    EXPECT_FALSE(p->enabled());
    auto t3 = p->step(100);  // disabled: the hardware writes nothing
    EXPECT_FALSE(t3.started);
    c.drainData();
    ASSERT_EQ(c.recs.size(), 2u);
    EXPECT_EQ(c.recs[1].offset, 600u);
    EXPECT_EQ(c.recs[1].size, 423u);
    EXPECT_EQ(c.recs[1].flags, kAuxFlagTruncated);
    c.drainAux();
    EXPECT_EQ(c.bytes, 1023u);
    p->enable();
    EXPECT_EQ(p->step(100).written, 100u);  // resumes at 1023

    // Cycles: two kinds of stop, counted exactly.
    uint64_t expectTruncated = 1, expectDisables = 1, expectNoSpace = 0;
    for (int cycle = 0; cycle < 60; ++cycle) {
        c.drainAux();
        c.drainData();
        if (!p->enabled()) p->enable(), ++c.enables;
        if (cycle % 3 == 2) {
            EXPECT_EQ(p->step(1023).written, 1023u);  // exactly full: no TRUNCATED, still enabled
            EXPECT_TRUE(p->enabled());
            auto t = p->step(1);  // no space at begin: disabled, and no record
            EXPECT_FALSE(t.started);
            EXPECT_FALSE(t.recordWritten);
            ++expectNoSpace, ++expectDisables;
        } else {
            p->step(700);
            auto t = p->step(700);
            EXPECT_TRUE(t.flags & kAuxFlagTruncated);
            EXPECT_EQ(t.written, 323u);
            ++expectTruncated, ++expectDisables;
        }
        EXPECT_FALSE(p->enabled());
        EXPECT_FALSE(p->step(50).started);
    }
    c.drainAux();
    c.drainData();
    const auto n = p->counts();
    EXPECT_EQ(c.truncated, expectTruncated);
    EXPECT_EQ(n.truncatedRecords, expectTruncated);
    EXPECT_EQ(n.noSpaceAtBegin, expectNoSpace);
    EXPECT_EQ(n.disables, expectDisables);
    EXPECT_EQ(n.enables, c.enables + 1);
    EXPECT_EQ(c.bytes, n.bytesWritten);
    EXPECT_EQ(c.mismatches, 0u);
    EXPECT_EQ(c.errors, 0u);
    EXPECT_EQ(c.lostRecords, 0u);
    EXPECT_GE(n.wakeups, expectDisables);
    expectTiling(c.recs, c.bytes);
}

TEST(AuxRing, RecordsTileTheByteStreamInFullMode) {
    auto p = makeProducer({.dataPages = 64, .auxSize = 2048});
    ASSERT_TRUE(p);
    Consumer c(*p);
    uint64_t x = 12345;
    for (int i = 0; i < 3000; ++i) {
        p->step(1 + xorshift(x) % 1500,
                (i % 5 == 0 ? kAuxFlagPartial : 0) | (i % 7 == 0 ? kAuxFlagCollision : 0));
        if (xorshift(x) % 2) c.drainAux();
        if (xorshift(x) % 4 == 0) c.drainData();
        if (!p->enabled()) c.drainAux(), p->enable();
    }
    c.drainAux();
    c.drainData();
    const auto n = p->counts();
    EXPECT_EQ(n.recordsDropped, 0u);
    EXPECT_EQ(c.recs.size(), n.auxRecords);
    EXPECT_EQ(c.partial, n.partialRecords);
    EXPECT_EQ(c.collision, n.collisionRecords);
    EXPECT_EQ(c.truncated, n.truncatedRecords);
    EXPECT_GT(n.truncatedRecords, 0u);
    EXPECT_EQ(c.bytes, n.bytesWritten);
    EXPECT_EQ(c.mismatches, 0u);
    EXPECT_EQ(c.errors, 0u);
    expectTiling(c.recs, c.bytes);
}

TEST(AuxRing, DataRingFullDropsAuxRecordsAndReportsLost) {
    // One data page: 64-byte AUX records, CIRC_SPACE leaves 4095 bytes: 63 fit.
    auto p = makeProducer({.dataPages = 1, .auxSize = 4096});
    ASSERT_TRUE(p);
    Consumer c(*p);
    for (int i = 0; i < 70; ++i) {
        auto t = p->step(10);
        EXPECT_EQ(t.recordWritten, i < 63) << i;
        c.drainAux();  // the AUX bytes still arrive: only their records are lost
    }
    EXPECT_EQ(p->counts().auxRecordsDropped, 7u);
    EXPECT_EQ(p->counts().lostPending, 7u);
    c.drainData();
    EXPECT_EQ(c.recs.size(), 63u);
    EXPECT_EQ(c.lostRecords, 0u);
    p->step(10);  // LOST {7} goes in first, then this record
    c.drainData();
    EXPECT_EQ(c.lostRecords, 1u);
    EXPECT_EQ(c.lostSum, 7u);
    EXPECT_EQ(c.recs.size(), 64u);
    // Drop again, then report without another AUX record.
    for (int i = 0; i < 70; ++i)
        p->step(1), c.drainAux();
    c.drainData();
    EXPECT_TRUE(p->flushLost());
    c.drainData();
    const auto n = p->counts();
    EXPECT_EQ(c.lostSum, n.lostReported);
    EXPECT_EQ(c.lostSum, n.auxRecordsDropped);
    EXPECT_EQ(n.lostPending, 0u);
    EXPECT_EQ(c.recs.size(), n.auxRecords);
    EXPECT_EQ(c.bytes, n.bytesWritten);
    EXPECT_EQ(c.mismatches, 0u);
    EXPECT_EQ(c.errors, 0u);
}

namespace {

void checkSnapshots(bool freeRunning) {
    const uint64_t size = 4096;
    auto p = makeProducer({.dataPages = 64,
                           .auxSize = size,
                           .mode = AuxMode::Snapshot,
                           .freeRunningOverwriteHead = freeRunning});
    ASSERT_TRUE(p);
    Consumer c(*p);
    AuxRing& aux = c.aux;
    AuxSnapshotTracker tracker(size, freeRunning);
    auto feed = [&] {
        const size_t before = c.recs.size();
        c.drainData();
        for (size_t i = before; i < c.recs.size(); ++i)
            tracker.observeRecord(c.recs[i].offset, c.recs[i].size);
    };
    auto both = [&](uint64_t want, uint64_t stream, const char* what) {
        const uint64_t n = std::min({want, stream, size});
        auto tracked = aux.snapshot(want, WrapDetection::Tracked, tracker.wrapped());
        auto zero = aux.snapshot(want, WrapDetection::ZeroScan);
        EXPECT_EQ(tracked.bytes, expectedNewest(stream, n)) << what << " want " << want;
        EXPECT_EQ(zero.bytes, expectedNewest(stream, n)) << what << " want " << want;
        EXPECT_EQ(tracked.wrapped, zero.wrapped) << what;
    };

    // Before the first wrap: only the bytes written.
    p->step(1000);
    p->step(500);
    feed();
    EXPECT_FALSE(tracker.wrapped());
    for (uint64_t want : {1u, 700u, 1500u, 4096u, 100000u})
        both(want, 1500, "before wrap");
    EXPECT_EQ(aux.snapshot(size, WrapDetection::ZeroScan).bytes.size(), 1500u);

    // Overwrite records: OVERWRITE set, offset = the new head; size 0 with only
    // OVERWRITE is not written, with PARTIAL it is.
    ASSERT_EQ(c.recs.size(), 2u);
    EXPECT_EQ(c.recs[1].offset, 1500u);
    EXPECT_EQ(c.recs[1].size, 500u);
    EXPECT_EQ(c.recs[1].flags, kAuxFlagOverwrite);
    EXPECT_FALSE(p->step(0).recordWritten);
    EXPECT_TRUE(p->step(0, kAuxFlagPartial).recordWritten);
    feed();
    EXPECT_EQ(c.recs.back().flags, kAuxFlagOverwrite | kAuxFlagPartial);
    EXPECT_EQ(c.recs.back().size, 0u);

    // Exactly to the end of the buffer: head offset 0, wrapped.
    p->step(size - 1500);
    feed();
    EXPECT_EQ(aux.head() & (size - 1), 0u);
    EXPECT_TRUE(tracker.wrapped());
    both(size, size, "exactly one turn");
    both(10, size, "exactly one turn");

    // Many turns, with bursts longer than the buffer.
    uint64_t x = freeRunning ? 77 : 99, stream = size;
    for (int i = 0; i < 500; ++i) {
        const uint64_t n = 1 + xorshift(x) % (3 * size);
        p->step(n, i % 9 == 0 ? kAuxFlagCollision : 0);
        stream += n;
        feed();
        if (i % 50 == 0)
            for (uint64_t want : {1u, 100u, 4095u, 4096u, 10000u})
                both(want, stream, "after many wraps");
    }
    EXPECT_EQ(p->counts().bytesWritten, stream);
    EXPECT_EQ(c.overwrite, c.recs.size());
    EXPECT_EQ(c.collision, p->counts().collisionRecords);
    EXPECT_EQ(tracker.bytesReported(), stream);
    EXPECT_EQ(c.errors, 0u);
    // Full-mode draining is refused in snapshot mode.
    EXPECT_TRUE(aux.window().error);
}

}  // namespace

TEST(AuxRing, SnapshotNewestBytesWithWrappingHead) {
    checkSnapshots(false);
}

TEST(AuxRing, SnapshotNewestBytesWithFreeRunningHead) {
    checkSnapshots(true);
}

TEST(AuxRing, SnapshotTrackerFromHeadsAlone) {
    AuxSnapshotTracker wrapping(4096);
    wrapping.observeHead(100);
    wrapping.observeHead(4000);
    EXPECT_FALSE(wrapping.wrapped());
    wrapping.observeHead(10);
    EXPECT_TRUE(wrapping.wrapped());
    AuxSnapshotTracker lost(4096);
    lost.observeRecord(100, 100);
    lost.noteLost();
    EXPECT_FALSE(lost.certain());  // fall back to the zero scan
    AuxSnapshotTracker free(4096, true);
    free.observeHead(4095);
    EXPECT_FALSE(free.wrapped());
    free.observeHead(4096);
    EXPECT_TRUE(free.wrapped());
}

TEST(AuxRing, ConcurrentProducerAndDrainingConsumer) {
    // A small AUX area and a one-page data ring so that both kinds of loss happen:
    // the consumer pauses now and then (AUX full: TRUNCATED or no space, then
    // re-enable) and leaves the data ring alone for stretches (records dropped, LOST).
    auto p = makeProducer({.dataPages = 1, .auxSize = 8192});
    ASSERT_TRUE(p);
    Consumer c(*p);
    p->start({.transactions = 20000,
              .minBytes = 1,
              .maxBytes = 3000,
              .seed = 7,
              .collisionEvery = 7,
              .partialEvery = 11});
    std::thread consumer([&] {
        uint64_t iter = 0;
        // Phases: drain the data ring for 5 ms, then leave it alone until the
        // producer has dropped 5 more records into it (it fills: records are lost).
        auto phaseStart = std::chrono::steady_clock::now();
        bool skipping = false;
        uint64_t droppedAtSkip = 0;
        auto pass = [&] {
            c.drainAux();
            if (!skipping && std::chrono::steady_clock::now() - phaseStart > std::chrono::milliseconds(5)) {
                skipping = true;
                droppedAtSkip = p->counts().recordsDropped;
            } else if (skipping && p->counts().recordsDropped >= droppedAtSkip + 5) {
                skipping = false;
                phaseStart = std::chrono::steady_clock::now();
            }
            if (!skipping || p->finished()) c.drainData();
            if (!p->enabled()) p->enable(), ++c.enables;
        };
        while (!p->finished()) {
            pass();
            if (++iter % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        pass();
        c.drainData();
        while (!p->flushLost())
            c.drainData();
        c.drainData();
    });
    consumer.join();
    p->join();
    const auto n = p->counts();
    EXPECT_EQ(c.bytes, n.bytesWritten);
    EXPECT_EQ(c.mismatches, 0u);
    EXPECT_EQ(c.errors, 0u);
    EXPECT_EQ(c.recs.size(), n.auxRecords);
    EXPECT_EQ(c.truncated, n.truncatedRecords);
    EXPECT_EQ(c.partial, n.partialRecords);
    EXPECT_EQ(c.collision, n.collisionRecords);
    EXPECT_EQ(c.lostSum, n.recordsDropped);
    EXPECT_EQ(c.lostSum, n.auxRecordsDropped);
    EXPECT_EQ(n.lostPending, 0u);
    EXPECT_EQ(c.lostRecords, n.lostRecords);
    EXPECT_EQ(n.disables, n.noSpaceAtBegin + n.truncatedRecords + n.truncatedDropped);
    EXPECT_EQ(n.enables, c.enables);
    EXPECT_GE(n.disables, n.enables);
    EXPECT_LE(n.disables, n.enables + 1);  // the last transaction may have left it disabled
    EXPECT_GT(n.disables, 0u);
    EXPECT_GT(n.recordsDropped, 0u);
    // Records in order, no overlap; a gap only where records were lost.
    uint64_t pos = 0, covered = 0;
    for (const AuxRec& r : c.recs) {
        if (n.recordsDropped == 0) {
            ASSERT_EQ(r.offset, pos);
        }
        ASSERT_GE(r.offset, pos);
        pos = r.offset + r.size;
        covered += r.size;
    }
    EXPECT_LE(pos, c.bytes);
    EXPECT_LE(covered, c.bytes);
    std::printf(
        "concurrent: %llu bytes, %llu AUX records (%llu TRUNCATED), %llu disables, %llu dropped -> %llu "
        "LOST records\n",
        (unsigned long long)n.bytesWritten, (unsigned long long)n.auxRecords,
        (unsigned long long)n.truncatedRecords, (unsigned long long)n.disables,
        (unsigned long long)n.recordsDropped, (unsigned long long)n.lostRecords);
}

TEST(AuxRing, SimulatedConfigErrors) {
    EXPECT_FALSE(SimulatedAuxProducer::create({.dataPages = 3}).ok());
    auto r = SimulatedAuxProducer::create({.auxSize = 1000});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("power of two"), std::string::npos);
}

// The real-fd path: a software event has no AUX area, and the kernel says so.
TEST(AuxRingKernel, MapOnEventWithoutAuxFailsClearly) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.disabled = 1;
    auto ev = PerfEventFd::open(a, 0, -1, -1, "dummy");
    if (!ev.ok()) GTEST_SKIP() << ev.error().message;
    auto ring = DataRing::map(ev->fd(), 1);
    if (!ring.ok()) GTEST_SKIP() << ring.error().message;
    auto aux = AuxRing::map(ev->fd(), *ring, 1, AuxMode::Full);
    ASSERT_FALSE(aux.ok());
    const std::string& m = aux.error().message;
    std::printf("%s\n", m.c_str());
    EXPECT_NE(m.find("cannot map an AUX area of 1 pages"), std::string::npos) << m;
    EXPECT_TRUE(m.find("no AUX area") != std::string::npos) << m;
    EXPECT_EQ(ring->meta()->aux_size, 0u);  // the layout request is withdrawn
    auto snap = AuxRing::map(ev->fd(), *ring, 1, AuxMode::Snapshot);
    EXPECT_FALSE(snap.ok());
    EXPECT_FALSE(AuxRing::map(ev->fd(), *ring, 3, AuxMode::Full).ok());
}

// Intel PT: every snapshot-mode PERF_RECORD_AUX claims the whole buffer, so its
// size proves nothing; only a head going backwards proves a wrap.
TEST(AuxRing, SnapshotTrackerIgnoresIntelPtRecordSizes) {
    AuxSnapshotTracker pt(4096, false, false);
    pt.observeRecord(300, 4096);
    EXPECT_FALSE(pt.wrapped()) << "a whole-buffer size is not a wrap";
    EXPECT_FALSE(pt.certain()) << "nothing proves there was no wrap: zero-scan decides";
    pt.observeRecord(900, 4096);
    EXPECT_FALSE(pt.wrapped());
    pt.observeRecord(200, 4096);  // the head went backwards
    EXPECT_TRUE(pt.wrapped());
    EXPECT_TRUE(pt.certain());
    AuxSnapshotTracker exact(4096);
    exact.observeRecord(300, 300);
    EXPECT_TRUE(exact.certain()) << "sizes that add up say exactly how far the buffer filled";
    EXPECT_FALSE(exact.wrapped());
}
