// SPDX-License-Identifier: GPL-3.0-or-later
// LiveSideband and the allocator (issue 28), on records made in memory
// (tests/support/LiveSidebandFeed.h), counting operator new / delete
// (tests/support/AllocationCounter.h, replaced for this binary):
//  - a tick that adds records allocates a few blocks, not one per record, thread
//    or mapping: the same bound with 10 threads and 2 mappings as with 4,000
//    threads and 6,000 mappings, and with 4x the records;
//  - a rebuild (the window moved a quarter on) likewise;
//  - a reader that drops a snapshot frees nothing (the worker frees it), and the
//    snapshots still say what the records said (names, mappings, who ran).
#include <gtest/gtest.h>

#include <functional>
#include <mutex>

#include "AllocationCounter.h"
#include "LiveSidebandFeed.h"
#include "sideband/LiveSideband.h"

using namespace auxscope;
using testsupport::AllocationCount;
using testsupport::LiveSidebandFeed;

namespace {

struct TickCost {
    AllocationCount worker;    // during the tick
    uint64_t readerFrees = 0;  // dropping the previous snapshot on the reading thread
    bool rebuilt = false;
};

class Live {
public:
    using Hand = std::function<void(int, std::span<const uint8_t>, const ParsedRecord&)>;
    Hand hand() {
        return [this](int cpu, std::span<const uint8_t> bytes, const ParsedRecord& r) {
            live_->onRecord(cpu, bytes, r);
        };
    }
    Live(int processes, int threads, int maps, double windowSeconds)
        : feed_(8, processes, threads, maps, 10'000) {
        LiveSidebandOptions options;
        options.windowSeconds = windowSeconds;
        options.adaptWindow = false;
        options.maxRateHz = 1000;
        options.cpuShare = 1;
        live_ = LiveSideband::start(
            feed_.ids(),
            [this](std::shared_ptr<const Sideband> sb, bool, const LiveSidebandStats& stats) {
                std::lock_guard lock(mutex_);
                published_ = std::move(sb);
                stats_ = stats;
            },
            options);
        feed_.identity(hand());
    }
    ~Live() { live_->stop(); }
    LiveSidebandFeed& feed() { return feed_; }
    // Adds `records` to the window and ticks.
    TickCost tick(size_t records) {
        feed_.window(records, hand());
        TickCost cost;
        const AllocationCount before = testsupport::allocations();
        live_->flush();
        cost.worker = testsupport::allocations() - before;
        std::lock_guard lock(mutex_);
        cost.rebuilt = stats_.rebuilds != rebuilds_;
        rebuilds_ = stats_.rebuilds;
        const AllocationCount own = testsupport::threadAllocations();
        held_ = std::move(published_);  // the previous one dropped, as the GUI thread drops it
        cost.readerFrees = (testsupport::threadAllocations() - own).deletes;
        return cost;
    }
    std::shared_ptr<const Sideband> held() const { return held_; }
    LiveSidebandStats stats() {
        std::lock_guard lock(mutex_);
        return stats_;
    }

private:
    LiveSidebandFeed feed_;
    std::unique_ptr<LiveSideband> live_;
    std::mutex mutex_;
    std::shared_ptr<const Sideband> published_, held_;
    LiveSidebandStats stats_;
    uint64_t rebuilds_ = 0;
};

// Blocks a tick may allocate whatever the window holds: the model's arrays and
// their growth, each CPU's slices, the snapshot and its parts, a chunk.
constexpr uint64_t kTickBlocks = 400;

}  // namespace

TEST(LiveSidebandAllocTest, TicksAllocateNoBlockPerRecordThreadOrMapping) {
    for (auto [processes, threads, maps] : {std::tuple{5, 2, 2}, std::tuple{200, 20, 30}}) {
        SCOPED_TRACE(std::to_string(processes * threads) + " threads, " + std::to_string(processes * maps) +
                     " mappings");
        Live live(processes, threads, maps, 1000);  // no rebuild
        live.tick(48'000);                          // the first tick: names and mappings fed
        for (size_t records : {16'000, 80'000}) {
            const TickCost cost = live.tick(records);
            EXPECT_FALSE(cost.rebuilt);
            EXPECT_LE(cost.worker.news, kTickBlocks) << records << " records";
            EXPECT_LE(cost.worker.deletes, kTickBlocks) << records << " records";
            EXPECT_EQ(cost.readerFrees, 0u);
        }
        // What the snapshot says: every process named, with its mappings; every CPU's slices.
        const auto sb = live.held();
        ASSERT_TRUE(sb);
        EXPECT_EQ(sb->processes().size(), size_t(processes));
        const ProcessSideband* p = sb->process(1000);
        ASSERT_TRUE(p);
        EXPECT_EQ(p->name, "proc-0");
        EXPECT_EQ(p->maps.size(), size_t(maps));
        EXPECT_EQ(sb->model().threadName(1001), "proc-0");
        EXPECT_EQ(sb->pidOf(1001), 1000);
        EXPECT_EQ(sb->switchSlices().size(), 8u);
        EXPECT_EQ(sb->model().samples().size(), (48'000u + 16'000u + 80'000u) / 2);
    }
}

TEST(LiveSidebandAllocTest, RebuildsAllocateNoBlockPerRecordThreadOrMapping) {
    // 4,000 threads and 6,000 mappings; a window of 1 s (100,000 records), 25,000 a tick.
    Live live(200, 20, 30, 1);
    size_t rebuilds = 0;
    int steady = -1;
    for (int i = 0; i < 28; ++i) {
        const TickCost cost = live.tick(25'000);
        // Until then the builder holds the names and mappings it was fed itself
        // (not shared with the builder a rebuild copies): freed on the worker once
        // the first rebuild dropped it and the reader its last snapshot.
        if (cost.rebuilt && steady < 0) steady = i + 2;
        if (steady < 0 || i < steady) continue;
        rebuilds += cost.rebuilt;
        // A rebuild feeds the window's records again: its arrays grow by doubling.
        EXPECT_LE(cost.worker.news, kTickBlocks) << "tick " << i << (cost.rebuilt ? " (rebuild)" : "");
        EXPECT_LE(cost.worker.deletes, kTickBlocks) << "tick " << i << (cost.rebuilt ? " (rebuild)" : "");
        EXPECT_EQ(cost.readerFrees, 0u);
    }
    EXPECT_GE(rebuilds, 4u);
    const auto sb = live.held();
    ASSERT_TRUE(sb);
    EXPECT_EQ(sb->processes().size(), 200u);
    EXPECT_EQ(sb->model().threadName(199 * 1000 + 1000 + 19), "proc-199");
    EXPECT_LE(live.stats().kept, 125'000u);
}
