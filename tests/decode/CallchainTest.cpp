// SPDX-License-Identifier: GPL-3.0-or-later
// samples/Callchain: PERF_SAMPLE_CALLCHAIN and LBR call stacks read as perf
// reads them, and callchains that are too long or carry unknown markers.
#include <gtest/gtest.h>

#include <linux/perf_event.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "samples/Callchain.h"

using namespace auxscope;

namespace {

std::vector<uint8_t> words(const std::vector<uint64_t>& v) {
    std::vector<uint8_t> out(v.size() * 8);
    if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
    return out;
}

constexpr uint64_t kKernel = uint64_t(PERF_CONTEXT_KERNEL), kUser = uint64_t(PERF_CONTEXT_USER);

}  // namespace

TEST(Callchain, MarkersSetTheContextOfTheAddressesAfterThem) {
    const auto chain = words({kKernel, 0xffffffff81000010, 0xffffffff81000020, kUser, 0x401000, 0x400800});
    std::vector<RawFrame> frames;
    EXPECT_EQ(appendCallchain(chain, frames), CallchainStatus::Ok);
    const std::vector<RawFrame> expected{{0xffffffff81000010, FrameContext::Kernel},
                                         {0xffffffff81000020, FrameContext::Kernel},
                                         {0x401000, FrameContext::User},
                                         {0x400800, FrameContext::User}};
    EXPECT_EQ(frames, expected);
}

TEST(Callchain, AnUnknownMarkerDropsTheChainAsPerfDoes) {
    std::vector<RawFrame> frames{{1, FrameContext::User}};
    EXPECT_EQ(appendCallchain(words({kUser, 0x401000, uint64_t(-100), 0x400800}), frames),
              CallchainStatus::InvalidContext);
    EXPECT_EQ(frames.size(), 1u);  // what was there before stays
}

// A callchain of 10^5 entries (a corrupt or hostile file): the first 127
// addresses, counted as cut, in microseconds.
TEST(Callchain, HundredThousandEntriesAreCutAtTheMaximum) {
    std::vector<uint64_t> v{kUser};
    for (uint64_t i = 0; i < 100000; ++i)
        v.push_back(0x400000 + i);
    const auto chain = words(v);
    std::vector<RawFrame> frames;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(appendCallchain(chain, frames), CallchainStatus::Truncated);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
    ASSERT_EQ(frames.size(), kDefaultMaxStack);
    EXPECT_EQ(frames.back().address, 0x400000u + kDefaultMaxStack - 1);
    frames.clear();
    EXPECT_EQ(appendCallchain(chain, frames, 100000), CallchainStatus::Ok);
    EXPECT_EQ(frames.size(), 100000u);
}

// --call-graph lbr: the kernel part from the callchain, the user part from the
// branch stack: the newest call's target, then each call site outwards.
TEST(Callchain, LbrCallStackAsPerfReadsIt) {
    const auto chain = words({kKernel, 0xffffffff81000010, kUser, 0x401234, 0x400900});
    // {from, to, flags}: the newest call first (leaf called at 0x401100 -> 0x401200).
    const auto branches = words({0x401100, 0x401200, 0, 0x400500, 0x401000, 0, 0x400100, 0x400400, 0});
    std::vector<RawFrame> frames;
    ASSERT_TRUE(appendLbrCallStack(chain, branches, frames));
    const std::vector<RawFrame> expected{{0xffffffff81000010, FrameContext::Kernel},
                                         {0x401200, FrameContext::User},
                                         {0x401100, FrameContext::User},
                                         {0x400500, FrameContext::User},
                                         {0x400100, FrameContext::User}};
    EXPECT_EQ(frames, expected);
    // No user part, or no branches: read as a plain callchain.
    frames.clear();
    EXPECT_FALSE(appendLbrCallStack(words({kKernel, 0xffffffff81000010}), branches, frames));
    EXPECT_FALSE(appendLbrCallStack(chain, {}, frames));
    EXPECT_TRUE(frames.empty());
}
