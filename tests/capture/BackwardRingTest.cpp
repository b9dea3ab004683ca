// SPDX-License-Identifier: GPL-3.0-or-later
// The backward (overwritable) data ring: hand-built rings first (wrap, torn oldest
// record, corrupt size, a writer racing the copy), then the real kernel
// (write_backward tracking events with context switches, a ring that wraps,
// snapshots while the kernel writes, SET_OUTPUT rules, PAUSE_OUTPUT).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "BackwardRing.h"
#include "PerfEvent.h"
#include "RecordParser.h"

using namespace auxscope;

namespace {

// ---- hand-built rings -------------------------------------------------------

// A ring the way the kernel writes it backward: head goes down by each record's
// size and the record lands at [head, head + size), wrapping at the ring's end.
struct BackRing {
    explicit BackRing(size_t size) : bytes(size, 0) {}
    std::vector<uint8_t> bytes;
    uint64_t head = 0;
    // Writes a record whose payload is `seed` repeated; returns its position.
    uint64_t push(uint32_t type, uint16_t size, uint8_t seed) {
        head -= size;
        std::vector<uint8_t> rec(size, seed);
        perf_event_header h{type, 0, size};
        std::memcpy(rec.data(), &h, sizeof h);
        for (size_t i = 0; i < size; ++i)
            bytes[(head + i) & (bytes.size() - 1)] = rec[i];
        return head;
    }
    void corruptSizeAt(uint64_t pos, uint16_t size) {
        perf_event_header h{};
        for (size_t i = 0; i < sizeof h; ++i)
            reinterpret_cast<uint8_t*>(&h)[i] = bytes[(pos + i) & (bytes.size() - 1)];
        h.size = size;
        for (size_t i = 0; i < sizeof h; ++i)
            bytes[(pos + i) & (bytes.size() - 1)] = reinterpret_cast<uint8_t*>(&h)[i];
    }
    BackwardSnapshot parse(uint64_t headAfter) const {
        return parseBackwardRing(bytes.data(), bytes.size(), head, headAfter);
    }
    BackwardSnapshot parse() const { return parse(head); }
};

// Checks every record holds its own seed pattern; returns the seeds in order.
std::vector<uint8_t> seeds(const BackwardSnapshot& s) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i < s.offsets.size(); ++i) {
        auto rec = s.record(i);
        EXPECT_GE(rec.size(), sizeof(perf_event_header));
        const uint8_t seed = rec.size() > 8 ? rec[8] : 0;
        for (size_t j = 8; j < rec.size(); ++j)
            EXPECT_EQ(rec[j], seed) << "record " << i << " byte " << j;
        out.push_back(seed);
    }
    return out;
}

TEST(BackwardRingParse, EmptyRing) {
    BackRing ring(256);
    auto s = ring.parse();
    EXPECT_EQ(s.records, 0u);
    EXPECT_EQ(s.written, 0u);
    EXPECT_FALSE(s.wrapped);
    EXPECT_FALSE(s.error);
}

TEST(BackwardRingParse, NotWrappedReturnsOldestFirst) {
    BackRing ring(256);
    for (uint8_t i = 1; i <= 5; ++i)
        ring.push(PERF_RECORD_SWITCH, uint16_t(16 + 8 * (i % 3)), i);
    auto s = ring.parse();
    EXPECT_FALSE(s.error) << *s.error;
    EXPECT_FALSE(s.wrapped);
    EXPECT_EQ(seeds(s), (std::vector<uint8_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(s.bytes, s.written);
    EXPECT_EQ(s.overwrittenBytes, 0u);
    EXPECT_EQ(s.data.size(), s.bytes);
}

TEST(BackwardRingParse, WrappedKeepsOnlyCompleteNewestRecordsAtEveryPhase) {
    // Record sizes vary so the torn oldest record and records straddling the
    // ring's end occur at every offset.
    for (int extra = 0; extra < 40; ++extra) {
        BackRing ring(256);
        std::vector<uint16_t> sizes;
        for (int i = 0; i < 30 + extra; ++i) {
            const uint16_t sz = uint16_t(8 * (2 + (i * 7 + extra) % 6));
            sizes.push_back(sz);
            ring.push(PERF_RECORD_SWITCH_CPU_WIDE, sz, uint8_t(i + 1));
        }
        auto s = ring.parse();
        ASSERT_FALSE(s.error) << *s.error;
        ASSERT_TRUE(s.wrapped);
        // Expected: the newest records whose total fits in the ring.
        std::vector<uint8_t> expect;
        uint64_t total = 0;
        for (int i = int(sizes.size()) - 1; i >= 0 && total + sizes[i] <= 256; --i) {
            total += sizes[i];
            expect.insert(expect.begin(), uint8_t(i + 1));
        }
        EXPECT_EQ(seeds(s), expect) << "extra " << extra;
        EXPECT_EQ(s.bytes, total);
        EXPECT_EQ(s.bytes + s.tornBytes, 256u);
        EXPECT_EQ(s.bytes + s.overwrittenBytes + s.skippedBytes, s.written);
    }
}

TEST(BackwardRingParse, CorruptSizeKeepsNewerRecordsAndNamesOffset) {
    BackRing ring(256);
    for (uint8_t i = 1; i <= 6; ++i)
        ring.push(PERF_RECORD_COMM, 24, i);
    // The third newest record (seed 4) claims size 4.
    const uint64_t pos = ring.head + 2 * 24;
    ring.corruptSizeAt(pos, 4);
    auto s = ring.parse();
    ASSERT_TRUE(s.error);
    EXPECT_NE(s.error->find("ring offset " + std::to_string(pos & 255)), std::string::npos) << *s.error;
    EXPECT_NE(s.error->find("size 4"), std::string::npos) << *s.error;
    EXPECT_EQ(seeds(s), (std::vector<uint8_t>{5, 6}));
    EXPECT_EQ(s.skippedBytes, 4u * 24);
    EXPECT_EQ(s.bytes + s.overwrittenBytes + s.skippedBytes, s.written);

    // A size of 0 inside what the kernel wrote, and one past the written area.
    ring.corruptSizeAt(pos, 0);
    s = ring.parse();
    ASSERT_TRUE(s.error);
    EXPECT_EQ(seeds(s), (std::vector<uint8_t>{5, 6}));
    ring.corruptSizeAt(pos, 200);
    s = ring.parse();
    ASSERT_TRUE(s.error);
    EXPECT_NE(s.error->find("past the"), std::string::npos) << *s.error;
}

TEST(BackwardRingParse, LostRecordStaysBeforeTheRecordItCameWith) {
    BackRing ring(256);
    ring.push(PERF_RECORD_SWITCH, 16, 1);
    // One output chunk, filled forward: [LOST][COMM] at decreasing head.
    ring.push(PERF_RECORD_COMM, 24, 3);
    ring.push(PERF_RECORD_LOST, 16, 2);
    ring.push(PERF_RECORD_SWITCH, 16, 4);
    auto s = ring.parse();
    ASSERT_FALSE(s.error) << *s.error;
    EXPECT_EQ(seeds(s), (std::vector<uint8_t>{1, 2, 3, 4}));
}

TEST(BackwardRingParse, WriterRacingTheCopyDropsTheOldestBytes) {
    BackRing ring(256);
    for (uint8_t i = 1; i <= 20; ++i)
        ring.push(PERF_RECORD_SWITCH, 32, i);  // 640 bytes: wrapped, 8 whole records fit
    // data_head moved down by 40 bytes during the copy: the oldest 40 bytes of
    // the window may hold the new record, so only 216 bytes (6 records) are sure.
    auto s = ring.parse(ring.head - 40);
    ASSERT_FALSE(s.error) << *s.error;
    EXPECT_EQ(s.racedBytes, 40u);
    EXPECT_EQ(seeds(s), (std::vector<uint8_t>{15, 16, 17, 18, 19, 20}));
    EXPECT_EQ(s.bytes + s.tornBytes + s.racedBytes, 256u);
}

// ---- the real kernel --------------------------------------------------------

#define SKIP_WITHOUT_PERF()                                                       \
    do {                                                                          \
        if (auto reason = ::auxscope::perfCaptureUnavailableReason())             \
            GTEST_SKIP() << "perf_event_open is not permitted here: " << *reason; \
    } while (0)

// As auxscope's kIdFields: every record can be attributed and ordered.
constexpr uint64_t kIdFields = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
constexpr int kCpu = 0;

perf_event_attr trackingAttr(bool backward) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.sample_period = 1;
    a.sample_type = kIdFields;
    a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
    a.sample_id_all = 1;
    a.comm = 1;
    a.task = 1;
    a.context_switch = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.write_backward = backward;
    a.disabled = 1;
    return a;
}

perf_event_attr cpuClockAttr(bool backward) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_CPU_CLOCK;
    a.sample_period = 100000;  // 100 us
    a.sample_type = kIdFields | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD;
    a.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
    a.sample_id_all = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.write_backward = backward;
    a.disabled = 1;
    return a;
}

uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

void pinTo(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

struct SleepResult {
    pid_t tid = 0;
    uint64_t beforeLastSleep = 0;
};

// Sleeps `n` times (two context switches each) on a thread pinned to kCpu.
SleepResult sleepPinned(int n, int micros = 50) {
    SleepResult r;
    std::thread t([&] {
        pinTo(kCpu);
        r.tid = pid_t(syscall(SYS_gettid));
        for (int i = 0; i < n; ++i) {
            if (i == n - 1) r.beforeLastSleep = monotonicNs();
            usleep(unsigned(micros));
        }
    });
    t.join();
    return r;
}

// One write_backward tracking event on kCpu with its ring mapped read-only.
struct Tracker {
    PerfEventFd fd;
    BackwardRing ring;
    IdTable ids;
    uint64_t id = 0;
};

std::optional<std::string> openTracker(Tracker& t, size_t pages) {
    auto fd = PerfEventFd::open(trackingAttr(true), -1, kCpu, -1, "backward tracking (dummy)");
    if (!fd) return fd.error().message;
    t.fd = std::move(*fd);
    auto ring = BackwardRing::map(t.fd.fd(), pages);
    if (!ring) return ring.error().message;
    t.ring = std::move(*ring);
    auto id = t.fd.id();
    if (!id) return id.error().message;
    t.id = *id;
    t.ids.add(t.id, EventLayout{kIdFields, PERF_FORMAT_ID | PERF_FORMAT_LOST, 0, kCpu, true});
    if (t.ring.head() != 0)
        return "a fresh backward ring must start at data_head 0, not " + std::to_string(t.ring.head());
    if (auto e = t.fd.enable(); !e) return e.error().message;
    return std::nullopt;
}

struct Parsed {
    std::vector<ParsedRecord> records;
    std::vector<std::string> errors;
};

Parsed parseAll(const BackwardSnapshot& s, const IdTable& ids) {
    Parsed p;
    for (size_t i = 0; i < s.offsets.size(); ++i) {
        ParsedRecord r;
        if (auto err = parseRecord(s.record(i), ids, r))
            p.errors.push_back("record " + std::to_string(i) + ": " + *err);
        p.records.push_back(r);
    }
    return p;
}

bool knownType(uint32_t t) {
    return t == PERF_RECORD_SWITCH_CPU_WIDE || t == PERF_RECORD_SWITCH || t == PERF_RECORD_COMM ||
           t == PERF_RECORD_FORK || t == PERF_RECORD_EXIT || t == PERF_RECORD_LOST || t == PERF_RECORD_SAMPLE;
}

TEST(BackwardRingKernel, ContextSwitchesOldestFirstNewestAfterLastSleep) {
    SKIP_WITHOUT_PERF();
    Tracker t;
    if (auto e = openTracker(t, 16)) FAIL() << *e;
    const SleepResult sl = sleepPinned(100);

    auto snap = t.ring.snapshot();
    ASSERT_TRUE(snap) << snap.error().message;
    const BackwardSnapshot& s = *snap;
    ASSERT_FALSE(s.error) << *s.error;
    ASSERT_GT(s.records, 0u);
    EXPECT_LE(s.bytes, t.ring.size());
    EXPECT_EQ(s.written, uint64_t(0) - s.head) << "data_head counts down from 0";
    EXPECT_EQ(s.bytes + s.overwrittenBytes + s.skippedBytes, s.written);
    if (!s.wrapped) {
        EXPECT_EQ(s.bytes, s.written);
    }

    const Parsed p = parseAll(s, t.ids);
    EXPECT_TRUE(p.errors.empty()) << p.errors.front();
    bool sawSleeper = false;
    uint64_t prev = 0;
    for (size_t i = 0; i < p.records.size(); ++i) {
        const ParsedRecord& r = p.records[i];
        EXPECT_TRUE(knownType(r.type)) << "record " << i << " type " << r.type;
        ASSERT_TRUE(r.hasSampleId) << "record " << i;
        EXPECT_EQ(r.id, t.id);
        EXPECT_EQ(r.cpu, uint32_t(kCpu));
        EXPECT_GE(r.time, prev) << "record " << i << " is older than the one before it";
        prev = r.time;
        if (r.tid == sl.tid || r.nextPrevTid == sl.tid) sawSleeper = true;
    }
    EXPECT_TRUE(sawSleeper) << "no record names the sleeping thread " << sl.tid;
    EXPECT_GE(p.records.back().time, sl.beforeLastSleep) << "the newest record predates the last sleep";
    std::printf("[ info ] %llu records, %llu bytes of %llu written, ring %llu bytes, wrapped %d\n",
                (unsigned long long)s.records, (unsigned long long)s.bytes, (unsigned long long)s.written,
                (unsigned long long)t.ring.size(), int(s.wrapped));
}

TEST(BackwardRingKernel, OnePageRingWrapsAndSnapshotsNeverTear) {
    SKIP_WITHOUT_PERF();
    Tracker t;
    if (auto e = openTracker(t, 1)) FAIL() << *e;
    sleepPinned(400, 20);

    auto first = t.ring.snapshot();
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_FALSE(first->error) << *first->error;
    EXPECT_TRUE(first->wrapped) << "only " << first->written << " bytes written into " << t.ring.size();
    EXPECT_LE(first->bytes, t.ring.size());
    EXPECT_GT(first->overwrittenBytes, 0u);
    EXPECT_EQ(first->bytes + first->tornBytes + first->racedBytes, t.ring.size())
        << "a wrapped ring's window is covered by whole records and the torn oldest one";
    EXPECT_TRUE(parseAll(*first, t.ids).errors.empty());

    // Snapshots while the kernel keeps writing on kCpu.
    struct Storm {
        std::atomic<bool> stop{false};
        std::thread thread{[this] {
            pinTo(kCpu);
            while (!stop.load(std::memory_order_relaxed))
                usleep(10);
        }};
        ~Storm() {
            stop = true;
            thread.join();
        }
    } storm;
    uint64_t snapshots = 0, wrapped = 0, lostRecords = 0, raced = 0, records = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < until) {
        auto s = t.ring.snapshot();
        ASSERT_TRUE(s) << s.error().message;
        ASSERT_TRUE(s->quiesced) << "membarrier(MEMBARRIER_CMD_GLOBAL) failed";
        ASSERT_FALSE(s->error) << "snapshot " << snapshots << ": " << *s->error;
        ASSERT_LE(s->bytes, t.ring.size());
        ASSERT_EQ(s->bytes + s->overwrittenBytes + s->skippedBytes, s->written);
        const Parsed p = parseAll(*s, t.ids);
        ASSERT_TRUE(p.errors.empty()) << "snapshot " << snapshots << ": " << p.errors.front();
        uint64_t prev = 0;
        for (const ParsedRecord& r : p.records) {
            ASSERT_TRUE(knownType(r.type)) << "snapshot " << snapshots << " type " << r.type;
            ASSERT_TRUE(r.hasSampleId);
            ASSERT_EQ(r.id, t.id);
            ASSERT_EQ(r.cpu, uint32_t(kCpu));
            ASSERT_GE(r.time, prev) << "snapshot " << snapshots;
            prev = r.time;
            if (r.type == PERF_RECORD_LOST) lostRecords += r.lost;
        }
        raced += s->racedBytes;
        records += s->records;
        wrapped += s->wrapped;
        ++snapshots;
        usleep(100);  // let the kernel write (and wrap) between snapshots
    }
    EXPECT_GT(snapshots, 10u);
    EXPECT_EQ(wrapped, snapshots);
    EXPECT_EQ(raced, 0u) << "data_head moved while paused although the pause was quiesced";
    std::printf(
        "[ info ] %llu snapshots, %llu records, LOST records say %llu dropped while paused, "
        "%llu bytes raced\n",
        (unsigned long long)snapshots, (unsigned long long)records, (unsigned long long)lostRecords,
        (unsigned long long)raced);
}

TEST(BackwardRingKernel, CpuClockSetOutputIntoBackwardRing) {
    SKIP_WITHOUT_PERF();
    Tracker t;
    if (auto e = openTracker(t, 16)) FAIL() << *e;

    // A forward event cannot share a backward ring: the kernel says EINVAL. The
    // attributes differ only in write_backward (same cpu, same clock).
    auto forward = PerfEventFd::open(cpuClockAttr(false), -1, kCpu, -1, "cpu-clock (forward)");
    ASSERT_TRUE(forward) << forward.error().message;
    errno = 0;
    EXPECT_EQ(::ioctl(forward->fd(), PERF_EVENT_IOC_SET_OUTPUT, t.fd.fd()), -1);
    EXPECT_EQ(errno, EINVAL);

    auto clock = PerfEventFd::open(cpuClockAttr(true), -1, kCpu, -1, "cpu-clock (backward)");
    ASSERT_TRUE(clock) << clock.error().message;
    auto redirect = clock->setOutput(t.fd.fd());
    ASSERT_TRUE(redirect) << redirect.error().message;
    auto clockId = clock->id();
    ASSERT_TRUE(clockId);
    t.ids.add(*clockId, EventLayout{kIdFields | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD,
                                    PERF_FORMAT_ID | PERF_FORMAT_LOST, 1, kCpu, true});
    ASSERT_TRUE(clock->enable());

    // Busy on kCpu for 50 ms: about 500 cpu-clock samples.
    std::thread busy([] {
        pinTo(kCpu);
        const uint64_t end = monotonicNs() + 50000000;
        volatile uint64_t x = 0;
        while (monotonicNs() < end)
            x = x + 1;
    });
    busy.join();
    ASSERT_TRUE(clock->disable());

    auto s = t.ring.snapshot();
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_FALSE(s->error) << *s->error;
    const Parsed p = parseAll(*s, t.ids);
    EXPECT_TRUE(p.errors.empty()) << p.errors.front();
    uint64_t samples = 0, switches = 0;
    for (const ParsedRecord& r : p.records) {
        if (r.type == PERF_RECORD_SAMPLE) {
            EXPECT_EQ(r.id, *clockId);
            ASSERT_NE(r.event, nullptr);
            EXPECT_EQ(r.event->descIndex, 1);
            EXPECT_EQ(r.cpu, uint32_t(kCpu));
            ++samples;
        }
        if (r.type == PERF_RECORD_SWITCH_CPU_WIDE) ++switches;
    }
    EXPECT_GT(samples, 50u) << "cpu-clock samples did not land in the backward ring";
    EXPECT_GT(switches, 0u);
    std::printf("[ info ] %llu cpu-clock samples and %llu switches in the backward ring\n",
                (unsigned long long)samples, (unsigned long long)switches);
}

TEST(BackwardRingKernel, PauseOutputFreezesDataHeadAndCountsTheDrops) {
    SKIP_WITHOUT_PERF();
    Tracker t;
    if (auto e = openTracker(t, 16)) FAIL() << *e;
    sleepPinned(20);

    ASSERT_TRUE(t.ring.pauseOutput(true));
    const uint64_t paused = t.ring.head();
    auto before = t.fd.read(PERF_FORMAT_ID | PERF_FORMAT_LOST);
    ASSERT_TRUE(before) << before.error().message;
    sleepPinned(200);
    EXPECT_EQ(t.ring.head(), paused) << "data_head moved while output was paused";
    auto during = t.fd.read(PERF_FORMAT_ID | PERF_FORMAT_LOST);
    ASSERT_TRUE(during) << during.error().message;
    ASSERT_TRUE(during->hasLost);
    EXPECT_GE(during->lost - before->lost, 200u) << "the kernel counts the records dropped while paused";
    ASSERT_TRUE(t.ring.pauseOutput(false));

    const SleepResult sl = sleepPinned(20);
    EXPECT_NE(t.ring.head(), paused) << "data_head did not move after resuming";
    EXPECT_LT(int64_t(t.ring.head() - paused), 0) << "data_head goes down";

    // The first record written after resuming is preceded by a LOST record.
    auto s = t.ring.snapshot();
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_FALSE(s->error) << *s->error;
    const Parsed p = parseAll(*s, t.ids);
    EXPECT_TRUE(p.errors.empty()) << p.errors.front();
    uint64_t lost = 0;
    bool sawSleeperAfter = false;
    for (const ParsedRecord& r : p.records) {
        if (r.type == PERF_RECORD_LOST) lost += r.lost;
        if (r.time >= sl.beforeLastSleep && (r.tid == sl.tid || r.nextPrevTid == sl.tid))
            sawSleeperAfter = true;
    }
    EXPECT_GE(lost, 200u) << "no LOST record for the records dropped while paused";
    EXPECT_TRUE(sawSleeperAfter);
    std::printf("[ info ] paused at head %lld; LOST records account for %llu dropped records\n",
                (long long)paused, (unsigned long long)lost);
}

}  // namespace
