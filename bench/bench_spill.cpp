// SPDX-License-Identifier: GPL-3.0-or-later
// bench_spill: what the writer backlog's spill costs the drain thread. The
// product's QueuedSink is fed records (hasRoom() then onRecord(), as the drain
// thread does) in three cases:
//   queue   a writer that keeps up (it discards): every record goes to the 32 MiB queue;
//   spill   a writer stuck until the end, budget 1 GiB: past the queue every record
//           goes to the spill (mmap'd 8 MiB chunks, spares prepared by the sink's helper thread);
//   full    the same with budget 0 (no spill): past the queue hasRoom() says no
//           (back-pressure), the cost of asking.
// Prints ns per record (the mean over all calls) and the slowest single call (a
// chunk switch, a page fault), and how many chunks the drain thread had to map
// itself because no spare was ready. A report, not a test: figures vary with load.
#include <time.h>

#include <linux/perf_event.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "QueuedSink.h"

using namespace auxscope;

namespace {

int64_t nowNs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class BenchWriter : public SinkWriter {
public:
    explicit BenchWriter(bool stuck) : stuck_(stuck) {}
    void open() {
        std::lock_guard l(m_);
        stuck_ = false;
        cv_.notify_all();
    }
    Expected<void> writeRecord(int, std::span<const uint8_t>) override {
        gate();
        return {};
    }
    Expected<void> writeLost(int, uint64_t, uint64_t) override { return {}; }
    Expected<void> endRound() override { return {}; }

private:
    void gate() {
        if (!stuck_.load(std::memory_order_relaxed)) return;
        std::unique_lock l(m_);
        cv_.wait(l, [&] { return !stuck_.load(); });
    }
    std::atomic<bool> stuck_;
    std::mutex m_;
    std::condition_variable cv_;
};

struct Result {
    uint64_t calls = 0, taken = 0;
    double nsPerRecord = 0, maxCallUs = 0;
    uint64_t producerMaps = 0, spillRuns = 0;
};

Result run(bool stuck, uint64_t budget, uint64_t records, size_t recordBytes) {
    BenchWriter w(stuck);
    QueuedSinkOptions o;
    o.budgetBytes = budget;
    o.name = "bench";
    QueuedSink sink({0}, w, o);
    sink.start();
    std::vector<uint8_t> rec(recordBytes, 0x5a);
    perf_event_header h{PERF_RECORD_SAMPLE, 0, uint16_t(recordBytes)};
    std::memcpy(rec.data(), &h, sizeof h);
    ParsedRecord p;
    Result r;
    int64_t maxCall = 0;
    const int64_t t0 = nowNs();
    for (uint64_t i = 0; i < records; ++i) {
        const int64_t a = (i & 63) == 0 ? nowNs() : 0;
        p.time = i + 1;
        ++r.calls;
        if (sink.hasRoom(0, rec.size())) {
            sink.onRecord(0, rec, p);
            ++r.taken;
        }
        if ((i & 4095) == 4095) sink.onDrainPassEnd();
        if (a) maxCall = std::max(maxCall, nowNs() - a);
    }
    const int64_t t1 = nowNs();
    // The slowest call among every 64th (sampled so the clock reads stay cheap).
    r.nsPerRecord = double(t1 - t0) / double(records);
    r.maxCallUs = double(maxCall) / 1e3;
    const auto st = sink.stats();
    r.producerMaps = st.spillProducerMaps;
    r.spillRuns = st.spillRuns;
    w.open();
    (void)sink.finish();
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t records = 3'000'000;
    size_t bytes = 96;  // a raw_syscalls sample with its sample_id fields, about
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::string(argv[i]) == "--records") records = std::strtoull(argv[i + 1], nullptr, 10);
        if (std::string(argv[i]) == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 10) & ~size_t(7);
    }
    std::printf(
        "bench_spill: %llu records of %zu bytes through QueuedSink (hasRoom + onRecord), one thread\n",
        (unsigned long long)records, bytes);
    struct Case {
        const char* name;
        bool stuck;
        uint64_t budget;
    } cases[] = {{"queue (writer keeps up)", false, uint64_t(1) << 30},
                 {"spill (writer stuck, budget 1 GiB)", true, uint64_t(1) << 30},
                 {"full (writer stuck, budget 0)", true, 0}};
    for (int round = 0; round < 3; ++round)
        for (const Case& c : cases) {
            Result r = run(c.stuck, c.budget, records, bytes);
            std::printf(
                "round %d  %-36s %6.1f ns/record  slowest sampled call %8.1f us  taken %llu of %llu"
                "  chunks mapped by the drain thread %llu  spill runs %llu\n",
                round + 1, c.name, r.nsPerRecord, r.maxCallUs, (unsigned long long)r.taken,
                (unsigned long long)r.calls, (unsigned long long)r.producerMaps,
                (unsigned long long)r.spillRuns);
            std::fflush(stdout);
        }
    return 0;
}
