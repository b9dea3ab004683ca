// SPDX-License-Identifier: GPL-3.0-or-later
// The ring walker over hand-built rings: records wrapping inside the header and
// inside the payload, at every offset, and corrupt headers.
#include <gtest/gtest.h>

#include <random>

#include "RingReader.h"

using namespace auxscope;

namespace {

struct Ring {
    explicit Ring(size_t size) : bytes(size, 0xEE) {}
    std::vector<uint8_t> bytes;
    // Writes a record at absolute position `pos` (wrapping), payload bytes = seed+i.
    uint64_t put(uint64_t pos, uint32_t type, uint16_t size, uint8_t seed) {
        // The header is always written whole, even when it claims a size below
        // 8 or beyond the ring (corrupt records); the payload only when it fits.
        perf_event_header h{type, 0, size};
        const size_t n = size >= sizeof h && size <= bytes.size() ? size : sizeof h;
        std::vector<uint8_t> rec(n);
        std::memcpy(rec.data(), &h, sizeof h);
        for (size_t i = sizeof h; i < n; ++i)
            rec[i] = uint8_t(seed + i);
        for (size_t i = 0; i < n; ++i)
            bytes[(pos + i) % bytes.size()] = rec[i];
        return pos + size;
    }
};

struct Seen {
    uint32_t type;
    std::vector<uint8_t> bytes;
};

RingWalkResult walkAll(RingReader& reader, Ring& ring, uint64_t tail, uint64_t head, std::vector<Seen>& out) {
    return reader.walk(ring.bytes.data(), ring.bytes.size(), tail, head,
                       [&](const perf_event_header& h, auto rec) {
                           out.push_back({h.type, std::vector<uint8_t>(rec.begin(), rec.end())});
                       });
}

void expectPayload(const Seen& s, uint8_t seed) {
    for (size_t i = sizeof(perf_event_header); i < s.bytes.size(); ++i)
        ASSERT_EQ(s.bytes[i], uint8_t(seed + i)) << "payload byte " << i;
}

}  // namespace

TEST(RingReader, WrapInsideHeader) {
    Ring ring(64);
    uint64_t pos = 60;  // header bytes 60..63 and 0..3
    uint64_t head = ring.put(pos, 9, 24, 10);
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, pos, head, seen);
    ASSERT_FALSE(r.error) << *r.error;
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].type, 9u);
    EXPECT_EQ(seen[0].bytes.size(), 24u);
    expectPayload(seen[0], 10);
    EXPECT_EQ(r.newTail, head);
}

TEST(RingReader, WrapInsidePayload) {
    Ring ring(64);
    uint64_t pos = 64 * 3 + 48;  // positions are free-running: the ring has wrapped 3 times
    uint64_t head = ring.put(pos, 15, 32, 77);
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, pos, head, seen);
    ASSERT_FALSE(r.error);
    ASSERT_EQ(seen.size(), 1u);
    expectPayload(seen[0], 77);
    EXPECT_EQ(r.bytes, 32u);
}

TEST(RingReader, EveryStartOffsetAndSizeMix) {
    for (uint64_t start = 0; start < 128; start += 8) {
        Ring ring(128);
        std::mt19937 rng{static_cast<unsigned>(start)};
        uint64_t pos = start, head = start;
        std::vector<std::pair<uint16_t, uint8_t>> written;
        while (head - start < 100) {
            uint16_t size = uint16_t(8 * (1 + rng() % 3));
            if (head - start + size > 128) break;
            uint8_t seed = uint8_t(rng());
            head = ring.put(head, 1 + uint32_t(written.size()), size, seed);
            written.push_back({size, seed});
        }
        RingReader reader;
        std::vector<Seen> seen;
        auto r = walkAll(reader, ring, pos, head, seen);
        ASSERT_FALSE(r.error) << "start " << start << ": " << *r.error;
        ASSERT_EQ(seen.size(), written.size()) << "start " << start;
        for (size_t i = 0; i < seen.size(); ++i) {
            EXPECT_EQ(seen[i].type, 1 + i);
            ASSERT_EQ(seen[i].bytes.size(), written[i].first);
            expectPayload(seen[i], written[i].second);
        }
        EXPECT_EQ(r.newTail, head);
    }
}

TEST(RingReader, ZeroSizeHeaderIsAnErrorNotAHang) {
    Ring ring(64);
    uint64_t head = ring.put(0, 9, 16, 1);
    ring.put(head, 3, 0, 0);  // corrupt: size 0 would never advance
    head += 32;               // the producer claims more bytes were written
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, 0, head, seen);
    ASSERT_TRUE(r.error);
    EXPECT_NE(r.error->find("ring offset 16"), std::string::npos) << *r.error;
    EXPECT_NE(r.error->find("size 0"), std::string::npos) << *r.error;
    EXPECT_EQ(seen.size(), 1u);  // the record before the corruption is kept
    EXPECT_EQ(r.records, 1u);
    EXPECT_EQ(r.skippedBytes, 32u);
    EXPECT_EQ(r.newTail, head);  // the caller moves on instead of stalling
}

TEST(RingReader, HeaderSmallerThanItselfIsAnError) {
    Ring ring(64);
    ring.put(0, 9, 4, 0);
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, 0, 16, seen);
    ASSERT_TRUE(r.error);
    EXPECT_NE(r.error->find("smaller than its 8-byte header"), std::string::npos) << *r.error;
    EXPECT_TRUE(seen.empty());
}

TEST(RingReader, OversizeHeaderIsAnError) {
    Ring ring(64);
    uint64_t head = ring.put(8, 9, 16, 5);
    ring.put(head, 9, 4000, 0);  // says 4000 bytes in a 64-byte ring
    head += 16;
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, 8, head, seen);
    ASSERT_TRUE(r.error);
    EXPECT_NE(r.error->find("has size 4000 but only 16 bytes"), std::string::npos) << *r.error;
    EXPECT_EQ(seen.size(), 1u);
    EXPECT_EQ(r.skippedBytes, 16u);
}

TEST(RingReader, HeaderCutByHead) {
    Ring ring(64);
    uint64_t head = ring.put(0, 9, 16, 5);
    RingReader reader;
    std::vector<Seen> seen;
    auto r = walkAll(reader, ring, 0, head + 4, seen);
    ASSERT_TRUE(r.error);
    EXPECT_NE(r.error->find("is cut"), std::string::npos) << *r.error;
    EXPECT_EQ(seen.size(), 1u);
}
