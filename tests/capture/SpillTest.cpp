// SPDX-License-Identifier: GPL-3.0-or-later
// The writer backlog's spill area: SpillChain on its own (FIFO across chunks,
// the budget, chunks given back), and QueuedSink with a writer that is stuck
// (records and AUX bytes kept in order across the queue/spill boundaries,
// nothing lost below the budget, back-pressure past it, AUX copied and released).
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "QueuedSink.h"
#include "SpillChain.h"

using namespace auxscope;

namespace {

bool waitFor(const std::function<bool()>& done, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// A perf record of `size` bytes (multiple of 8, >= 16) carrying a sequence number.
std::vector<uint8_t> record(uint64_t seq, size_t size = 32) {
    std::vector<uint8_t> r(size, uint8_t(seq));
    perf_event_header h{PERF_RECORD_SAMPLE, 0, uint16_t(size)};
    std::memcpy(r.data(), &h, sizeof h);
    std::memcpy(r.data() + sizeof h, &seq, sizeof seq);
    return r;
}

// Keeps what it is handed, in order; stuck in its first call until opened (a
// stalled disk).
class StuckWriter : public SinkWriter {
public:
    struct Item {
        char kind;  // 'r' record, 'l' lost, 'a' AUX, 'f' round
        int cpu;
        uint64_t value;  // sequence, lost count or AUX offset
        std::vector<uint8_t> bytes;
    };
    void open() {
        std::lock_guard l(m_);
        open_ = true;
        cv_.notify_all();
    }
    bool entered() {
        std::lock_guard l(m_);
        return entered_;
    }
    // Lets `n` more calls through (the disk wrote a little).
    void allow(uint64_t n) {
        std::lock_guard l(m_);
        allowed_ += n;
        cv_.notify_all();
    }
    uint64_t calls() {
        std::lock_guard l(m_);
        return calls_;
    }
    Expected<void> writeRecord(int cpu, std::span<const uint8_t> r) override {
        gate();
        uint64_t seq;
        std::memcpy(&seq, r.data() + sizeof(perf_event_header), sizeof seq);
        got.push_back({'r', cpu, seq, {}});
        return {};
    }
    Expected<void> writeLost(int cpu, uint64_t n, uint64_t) override {
        gate();
        got.push_back({'l', cpu, n, {}});
        return {};
    }
    Expected<void> writeAux(int cpu, uint32_t, uint64_t offset, std::span<const uint8_t> first,
                            std::span<const uint8_t> second) override {
        gate();
        Item it{'a', cpu, offset, std::vector<uint8_t>(first.begin(), first.end())};
        it.bytes.insert(it.bytes.end(), second.begin(), second.end());
        got.push_back(std::move(it));
        return {};
    }
    Expected<void> endRound() override {
        gate();
        got.push_back({'f', -1, 0, {}});
        return {};
    }
    std::vector<Item> got;  // writer thread only, read after finish()

private:
    void gate() {
        std::unique_lock l(m_);
        entered_ = true;
        cv_.wait(l, [&] { return open_ || allowed_ > 0; });
        if (!open_) --allowed_;
        ++calls_;
    }
    std::mutex m_;
    std::condition_variable cv_;
    bool open_ = false, entered_ = false;
    uint64_t allowed_ = 0, calls_ = 0;
};

ParsedRecord parsedAt(uint64_t time) {
    ParsedRecord p;
    p.time = time;
    return p;
}

}  // namespace

TEST(SpillChain, KeepsOrderAcrossChunksAndGivesThemBack) {
    const size_t chunk = 64 << 10;
    SpillChain s(4 * chunk, chunk);
    EXPECT_EQ(s.chunkBytes(), chunk);
    EXPECT_EQ(s.front(), nullptr);
    // Three chunks' worth of 1000-byte entries, read while more are written.
    std::vector<uint8_t> payload(1000);
    uint64_t next = 0, read = 0;
    for (int round = 0; round < 20; ++round) {
        for (int i = 0; i < 150; ++i) {
            std::memcpy(payload.data(), &next, sizeof next);
            ASSERT_TRUE(s.canPush({payload.size()}));
            ASSERT_TRUE(s.tryPush(1, uint16_t(next % 7), payload)) << next;
            ++next;
        }
        EXPECT_LE(s.heldBytes(), s.budget());
        while (const SpillChain::EntryHeader* e = s.front()) {
            ASSERT_EQ(e->kind, 1);
            ASSERT_EQ(e->slot, read % 7);
            auto p = s.payload(e);
            ASSERT_GE(p.size(), 1000u);
            uint64_t seq;
            std::memcpy(&seq, p.data(), sizeof seq);
            ASSERT_EQ(seq, read) << "entries come out in the order they went in";
            s.pop();
            ++read;
        }
    }
    EXPECT_EQ(read, next);
    EXPECT_EQ(s.usedBytes(), 0u);
    // 150 KB per round never needed more than the budget's four chunks: emptied
    // chunks came back instead of new ones being mapped forever.
    EXPECT_LE(s.peakHeldBytes(), s.budget());
}

TEST(SpillChain, RefusesPastItsBudgetAndTakesMoreOnceRead) {
    const size_t chunk = 64 << 10;
    SpillChain s(2 * chunk, chunk);
    std::vector<uint8_t> payload(4000);
    int pushed = 0;
    while (s.canPush({payload.size()})) {
        ASSERT_TRUE(s.tryPush(1, 0, payload));
        ++pushed;
    }
    EXPECT_FALSE(s.tryPush(1, 0, payload)) << "canPush said no";
    EXPECT_GE(pushed, 2 * 15) << "two 64 KiB chunks hold at least 30 entries of 4 KB";
    EXPECT_LE(pushed, 2 * 16);
    EXPECT_EQ(s.heldBytes(), 2 * chunk);
    EXPECT_FALSE(s.tryPush(1, 0, std::vector<uint8_t>(s.maxPayload() + 1)));
    // The end entry always fits after a push.
    s.pushEnd(9);
    // Read the first chunk's entries: once the reader has left it, its memory
    // serves the next pushes.
    const int popped = 16;
    for (int i = 0; i < popped; ++i) {
        ASSERT_NE(s.front(), nullptr);
        s.pop();
    }
    ASSERT_NE(s.front(), nullptr);
    EXPECT_TRUE(s.canPush({payload.size()}));
    int more = 0;
    while (s.canPush({payload.size()}) && more < 100) {
        ASSERT_TRUE(s.tryPush(1, 0, payload));
        ++more;
    }
    EXPECT_GE(more, 15);
    EXPECT_LE(more, 16);
    EXPECT_LE(s.heldBytes(), s.budget());
    // Everything still comes out: the rest of the first run, its end entry, the new ones.
    int rest = 0, ends = 0;
    while (const SpillChain::EntryHeader* e = s.front()) {
        if (e->kind == 9)
            ++ends;
        else
            ++rest;
        s.pop();
    }
    EXPECT_EQ(ends, 1);
    EXPECT_EQ(popped + rest, pushed + more);
}

TEST(SpillChain, ZeroBudgetTakesNothing) {
    SpillChain s(0);
    EXPECT_FALSE(s.canPush({8}));
    EXPECT_FALSE(s.tryPush(1, 0, std::vector<uint8_t>(8)));
    EXPECT_EQ(s.heldBytes(), 0u);
}

// A drain thread stand-in: per-CPU "rings" of records; a pass takes what the
// sink has room for, in order, and leaves the rest (back-pressure).
struct FakeRings {
    std::map<int, std::deque<std::vector<uint8_t>>> ring;
    uint64_t taken = 0, seq = 0;
    std::vector<std::pair<int, uint64_t>> handed;  // (cpu, seq) in the order the sink got them
    void fill(int cpu, int n, size_t size = 32) {
        for (int i = 0; i < n; ++i)
            ring[cpu].push_back(record(seq++, size));
    }
    size_t left() const {
        size_t n = 0;
        for (auto& [c, q] : ring)
            n += q.size();
        return n;
    }
    void pass(QueuedSink& sink) {
        for (auto& [cpu, q] : ring)
            while (!q.empty() && sink.hasRoom(cpu, q.front().size())) {
                uint64_t s;
                std::memcpy(&s, q.front().data() + sizeof(perf_event_header), sizeof s);
                sink.onRecord(cpu, q.front(), parsedAt(s + 1));
                handed.emplace_back(cpu, s);
                q.pop_front();
                ++taken;
            }
        sink.onDrainPassEnd();
    }
};

// A 4 KiB queue and `chunks` spill chunks of 64 KiB as the budget beyond it.
static QueuedSinkOptions smallSpill(size_t chunks) {
    QueuedSinkOptions o;
    o.queueBytes = 4096;
    o.spillChunkBytes = 64 << 10;
    o.budgetBytes = 4096 + chunks * (64 << 10);
    return o;
}

TEST(QueuedSinkSpill, StuckWriterLosesNothingBelowTheBudgetAndKeepsTheOrder) {
    StuckWriter w;
    QueuedSinkOptions o = smallSpill(4);
    o.name = "test sink";
    QueuedSink sink({0, 1}, w, o);
    sink.start();
    FakeRings rings;
    // 200 KB of records with the writer stuck: far past the 4 KiB queue, within
    // the budget. Passes interleave CPUs and sizes so runs start and end mid-way.
    for (int i = 0; i < 40; ++i) {
        rings.fill(0, 50, 32 + 8 * (i % 5));
        rings.fill(1, 50, 48);
        rings.pass(sink);
    }
    ASSERT_TRUE(waitFor([&] { return w.entered(); }));
    EXPECT_EQ(rings.left(), 0u) << "a stuck writer and ~220 KB of records: all held within the budget";
    auto st = sink.stats();
    EXPECT_GE(st.spillRuns, 1u);
    EXPECT_EQ(st.recordsHeldBack, 0u);
    EXPECT_GT(st.backlogBytes, 4096u);
    EXPECT_LE(st.spillHeldBytes, o.budgetBytes - 4096);
    EXPECT_EQ(st.backlogBudget, o.budgetBytes);
    // Past the budget: back-pressure, records stay in the rings.
    for (int i = 0; i < 40 && rings.left() == 0; ++i) {
        rings.fill(0, 200, 64);
        rings.pass(sink);
    }
    EXPECT_GT(rings.left(), 0u) << "past the budget, records wait in the ring";
    st = sink.stats();
    EXPECT_GE(st.recordsHeldBack, 1u);
    EXPECT_GE(st.heldBackAtBudget, 1u);
    EXPECT_LE(st.spillHeldBytes, o.budgetBytes - 4096);
    EXPECT_LE(st.maxSpillHeldBytes, o.budgetBytes - 4096);
    // The disk is back: everything drains, in order.
    w.open();
    ASSERT_TRUE(waitFor([&] {
        rings.pass(sink);
        return rings.left() == 0;
    }));
    ASSERT_TRUE(sink.finish());
    st = sink.stats();
    EXPECT_EQ(st.droppedRecords, 0u);
    EXPECT_TRUE(sink.losses().empty());
    EXPECT_EQ(st.writtenRecords, rings.taken);
    EXPECT_LE(st.maxBacklogBytes, o.budgetBytes);
    EXPECT_GT(st.maxBacklogBytes, 64u << 10);
    std::vector<std::pair<int, uint64_t>> written;
    for (auto& it : w.got) {
        EXPECT_NE(it.kind, 'l') << "nothing lost";
        if (it.kind == 'r') written.emplace_back(it.cpu, it.value);
    }
    ASSERT_EQ(written.size(), rings.handed.size());
    EXPECT_TRUE(written == rings.handed)
        << "the file gets the records in the order the drain thread took them";
    // Rounds end only after passes that held nothing back: never one between two
    // records of a pass that left records in a ring.
    EXPECT_EQ(w.got.back().kind, 'f');
}

// A writer that moves a little at a time: the spill runs end (the queue took
// entries again) and start again, and the order holds across every boundary.
TEST(QueuedSinkSpill, OrderHoldsAcrossSeveralSpillRuns) {
    StuckWriter w;
    const QueuedSinkOptions o = smallSpill(8);
    QueuedSink sink({0, 1}, w, o);
    sink.start();
    FakeRings rings;
    uint64_t allowed = 0;
    for (int step = 0; step < 6; ++step) {
        rings.fill(0, 150, 32);
        rings.fill(1, 50, 40);
        rings.pass(sink);
        ASSERT_EQ(rings.left(), 0u);
        // The writer gets through the queue and into the spill run.
        allowed += 150;
        w.allow(150);
        ASSERT_TRUE(waitFor([&] { return w.calls() >= allowed; })) << w.calls() << " of " << allowed;
    }
    auto st = sink.stats();
    EXPECT_GE(st.spillRuns, 3u) << "runs ended when the writer caught up with the queue, and began again";
    w.open();
    ASSERT_TRUE(sink.finish());
    std::vector<std::pair<int, uint64_t>> written;
    for (auto& it : w.got)
        if (it.kind == 'r') written.emplace_back(it.cpu, it.value);
    ASSERT_EQ(written.size(), rings.handed.size());
    EXPECT_TRUE(written == rings.handed);
    EXPECT_EQ(sink.stats().droppedRecords, 0u);
}

TEST(QueuedSinkSpill, BudgetOfTheQueueAloneIsTheOldBackPressure) {
    StuckWriter w;
    QueuedSinkOptions o;
    o.queueBytes = 4096;
    o.budgetBytes = 0;
    QueuedSink sink({0}, w, o);
    sink.start();
    FakeRings rings;
    rings.fill(0, 500);
    rings.pass(sink);
    EXPECT_GT(rings.left(), 300u) << "a 4 KiB queue holds ~100 records of 32 bytes";
    auto st = sink.stats();
    EXPECT_EQ(st.spillRuns, 0u);
    EXPECT_EQ(st.spillHeldBytes, 0u);
    EXPECT_EQ(st.backlogBudget, 4096u);
    EXPECT_GE(st.recordsHeldBack, 1u);
    EXPECT_EQ(st.heldBackAtBudget, 0u) << "no budget beyond the queue was set";
    w.open();
    ASSERT_TRUE(waitFor([&] {
        rings.pass(sink);
        return rings.left() == 0;
    }));
    ASSERT_TRUE(sink.finish());
    EXPECT_EQ(sink.stats().droppedRecords, 0u);
    size_t n = 0;
    uint64_t last = 0;
    bool ordered = true;
    for (auto& it : w.got)
        if (it.kind == 'r') {
            ordered &= n == 0 || it.value > last;
            last = it.value;
            ++n;
        }
    EXPECT_EQ(n, 500u);
    EXPECT_TRUE(ordered);
}

TEST(QueuedSinkSpill, AuxBytesAreCopiedWhileTheWriterIsBehindAndReleasedAtOnce) {
    StuckWriter w;
    const QueuedSinkOptions o = smallSpill(8);
    QueuedSink sink({0, 1}, w, o);
    sink.start();
    std::vector<uint8_t> area(64 << 10);
    for (size_t i = 0; i < area.size(); ++i)
        area[i] = uint8_t(i * 7 + 3);
    const std::vector<uint8_t> original = area;
    // Chunk A goes in place (the writer is not behind yet) and the writer gets stuck in it.
    const AuxBytes a{0, std::span(area).first(1000), {}, nullptr};
    ASSERT_TRUE(sink.hasAuxRoom(0, a));
    sink.onAux(0, 0, a);
    sink.onDrainPassEnd();
    ASSERT_TRUE(waitFor([&] { return w.entered(); }));
    EXPECT_LE(sink.auxReleased(0), 0u) << "A is written from the area: held until written";
    // Chunk B (wrapping, 20 KB, several pieces): A is not written yet, so B is copied.
    const std::span<const uint8_t> all(area);
    const AuxBytes b{1000, all.subspan(1000, 15000), all.subspan(16000, 5000), nullptr};
    ASSERT_TRUE(sink.hasAuxRoom(0, b));
    sink.onAux(0, 0, b);
    // A record in between, then chunk C of ring 1 (copied: the queue is behind).
    FakeRings rings;
    rings.fill(0, 3);
    rings.pass(sink);
    const AuxBytes c{0, std::span(area).subspan(30000, 3000), {}, nullptr};
    ASSERT_TRUE(sink.hasAuxRoom(1, c));
    sink.onAux(1, 1, c);
    sink.onDrainPassEnd();
    EXPECT_EQ(sink.auxReleased(1), RecordSink::kAuxAllReleased) << "C was copied: its area is free at once";
    EXPECT_LE(sink.auxReleased(0), 0u) << "ring 0 is still held by A";
    // The hardware overwrites the area: the copies keep what was handed over.
    for (size_t i = 1000; i < area.size(); ++i)
        area[i] ^= 0x5a;
    auto st = sink.stats();
    EXPECT_EQ(st.auxCopiedChunks, 2u);
    EXPECT_EQ(st.auxCopiedBytes, 23000u);
    w.open();
    ASSERT_TRUE(waitFor([&] { return sink.auxReleased(0) == RecordSink::kAuxAllReleased; }));
    ASSERT_TRUE(sink.finish());
    // In order: A, B's pieces (consecutive offsets), the records, C.
    std::vector<uint8_t> ring0, ring1;
    uint64_t next0 = 0;
    std::string kinds;
    for (auto& it : w.got) {
        if (it.kind == 'f') continue;
        if (it.kind == 'a' && it.cpu == 0) {
            EXPECT_EQ(it.value, next0) << "pieces continue each other";
            next0 += it.bytes.size();
            ring0.insert(ring0.end(), it.bytes.begin(), it.bytes.end());
        } else if (it.kind == 'a') {
            ring1.insert(ring1.end(), it.bytes.begin(), it.bytes.end());
        }
        if (kinds.empty() || kinds.back() != it.kind || it.kind == 'r') kinds += it.kind;
    }
    EXPECT_EQ(kinds, "arrra") << "AUX of ring 0, the three records, AUX of ring 1";
    std::vector<uint8_t> want0(original.begin(), original.begin() + 16000);
    want0.insert(want0.end(), original.begin() + 16000, original.begin() + 21000);
    EXPECT_TRUE(ring0 == want0) << "A in place, B as it was when handed over";
    EXPECT_TRUE(ring1 == std::vector<uint8_t>(original.begin() + 30000, original.begin() + 33000));
    st = sink.stats();
    EXPECT_EQ(st.writtenAuxBytes, 1000u + 20000u + 3000u);
    EXPECT_EQ(st.droppedAuxChunks, 0u);
    EXPECT_TRUE(sink.losses().empty());
}
