// SPDX-License-Identifier: GPL-3.0-or-later
// Raw (unformatted) CoreSight trace: the frame deformatter (etm/FrameDeformatter)
// and the raw-format perf.data built from a formatted one.
//  - Every frame-formatted buffer of coresight/opencsd-snapshots deformatted per
//    trace ID, each ID's raw stream decoded by EtmDecoder in Raw mode with that
//    source's configuration and the snapshot's memory: the elements (ranges with
//    start, last instruction, count, ISA, last instruction type; every other
//    element's kind and fields) equal those of the Formatted decode of the
//    original buffer, per trace ID.
//  - Hand-built frames: the delayed-ID rule, frames of ID bytes only, null and
//    reserved IDs, FSYNC/HSYNC streams, perf's 4-FSYNC reset frames, a formatter
//    written here round-tripped through the deformatter; garbage gives errors
//    naming offsets, never a crash.
//  - simpleperf-etm/perf_etm.data written back with its AUXTRACE buffer
//    deformatted and its AUX records flagged PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW
//    (EtmRawPerfData.h): the copy reads back cleanly, `auxscope info` and
//    `perf report -D` read it, and perf's packet dump of it equals the original's.
#include <gtest/gtest.h>
#include <linux/perf_event.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "EtmRawPerfData.h"
#include "TestData.h"
#include "WriterTestSupport.h"
#include "etm/EtmDecoder.h"
#include "etm/EtmSnapshot.h"
#include "etm/FrameDeformatter.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"

namespace fs = std::filesystem;
using namespace auxscope;
using namespace auxscope::etm;

namespace {

// ---------------------------------------------------------------------------
// Helpers

class Streams final : public FrameDeformatterSink {
public:
    void data(uint8_t id, uint64_t index, std::span<const uint8_t> bytes) override {
        EXPECT_TRUE(FrameDeformatter::validTraceId(id)) << int(id);
        EXPECT_FALSE(bytes.empty());
        auto& v = byId[id];
        v.insert(v.end(), bytes.begin(), bytes.end());
        calls.push_back({id, index, bytes.size()});
    }
    void reset(uint64_t index) override { resets.push_back(index); }
    struct Call {
        uint8_t id;
        uint64_t index;
        size_t size;
    };
    std::map<uint8_t, std::vector<uint8_t>> byId;
    std::vector<Call> calls;
    std::vector<uint64_t> resets;
};

using Bytes = std::vector<uint8_t>;

// Deformats `bytes` fed in chunks of `chunk` bytes.
std::map<uint8_t, Bytes> deformatChunked(const Bytes& bytes, size_t chunk, FrameDeformatterOptions o = {}) {
    Streams s;
    FrameDeformatter d(s, o);
    for (size_t at = 0; at < bytes.size(); at += chunk) {
        const size_t n = std::min(chunk, bytes.size() - at);
        auto r = d.feed(at, std::span<const uint8_t>(bytes.data() + at, n));
        EXPECT_TRUE(r.ok()) << r.error().message;
        if (!r) break;
    }
    auto f = d.finish();
    EXPECT_TRUE(f.ok()) << f.error().message;
    return s.byId;
}

// A CoreSight trace formatter (the encoder side), for the round trip: items are
// (trace ID, byte) in stream order. Chooses among the legal encodings at random:
// an ID byte that repeats the ID in force, a delayed ID change (aux bit set, the
// odd byte still the old ID's) wherever the old ID has one byte left before the
// change, an ID in byte 14 for the next frame. Pads the last frame with null-ID
// (0x00) bytes.
Bytes formatFrames(const std::vector<std::pair<uint8_t, uint8_t>>& items, std::mt19937& rng,
                   uint8_t cur = 0xff) {
    Bytes out;
    size_t i = 0;
    auto coin = [&] { return (rng() & 1) != 0; };
    while (i < items.size()) {
        uint8_t f[16] = {};
        uint8_t aux = 0;
        auto idAt = [&](size_t k) -> int { return k < items.size() ? items[k].first : -1; };
        for (unsigned p = 0; p < 7; ++p) {
            uint8_t& even = f[2 * p];
            uint8_t& odd = f[2 * p + 1];
            if (i >= items.size()) {
                // Padding: switch to the null ID, then zeros.
                if (cur != 0) {
                    even = 0x01;  // ID 0
                    cur = 0;
                } else {
                    even = 0;
                }
                odd = 0;
                continue;
            }
            const int id0 = idAt(i), id1 = idAt(i + 1);
            if (id0 == cur && id1 >= 0 && id1 != cur) {
                // One byte of the old ID left, then a change: the delayed-ID form.
                even = static_cast<uint8_t>((id1 << 1) | 1);
                aux |= 1u << p;
                odd = items[i].second;
                cur = static_cast<uint8_t>(id1);
                i += 1;
            } else if (id0 != cur) {
                even = static_cast<uint8_t>((id0 << 1) | 1);
                cur = static_cast<uint8_t>(id0);
                odd = items[i].second;
                i += 1;
            } else if (id1 < 0) {
                // The last byte of the ID in force: a delayed change to the null ID carries it.
                even = 0x01;
                aux |= 1u << p;
                odd = items[i].second;
                cur = 0;
                i += 1;
            } else if (coin()) {
                // The same ID again (no change: the aux bit does not matter).
                even = static_cast<uint8_t>((cur << 1) | 1);
                if (coin()) aux |= 1u << p;
                odd = items[i].second;
                i += 1;
            } else {
                // Two data bytes of the ID in force (id1 == cur).
                even = items[i].second & 0xfe;
                if (items[i].second & 1) aux |= 1u << p;
                odd = items[i + 1].second;
                i += 2;
            }
        }
        // Byte 14: data of the ID in force, or the next frame's ID.
        if (i < items.size() && items[i].first == cur && coin()) {
            f[14] = items[i].second & 0xfe;
            if (items[i].second & 1) aux |= 0x80;
            ++i;
        } else if (i < items.size() && items[i].first != cur) {
            f[14] = static_cast<uint8_t>((items[i].first << 1) | 1);
            cur = items[i].first;
        } else if (i >= items.size() && cur != 0) {
            f[14] = 0x01;
            cur = 0;
        } else {
            f[14] = static_cast<uint8_t>((cur << 1) | 1);  // repeat the ID: no data here
        }
        f[15] = aux;
        out.insert(out.end(), f, f + 16);
    }
    return out;
}

// ---------------------------------------------------------------------------
// Hand-built frames

TEST(FrameDeformatter, DelayedIdRuleAndByte14Id) {
    // ID 0x10: A0 02 03 | ID 0x20 delayed (aux bit 2): 05 stays with 0x10 |
    // ID 0x30 immediate: 07 | data 08 (aux bit 4 -> 09) 0a | ID 0x30 again with
    // aux bit 5 (no change, ignored): 0b | 0c 0d | byte 14: ID 0x10 for the next frame.
    const Bytes frame1 = {0x21, 0xa0, 0x02, 0x03, 0x41, 0x05, 0x61, 0x07,
                          0x08, 0x0a, 0x61, 0x0b, 0x0c, 0x0d, 0x21, 0x34};
    // All data for 0x10: even bytes with aux bits 0x5a.
    const Bytes frame2 = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17,
                          0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x5a};
    Bytes in = frame1;
    in.insert(in.end(), frame2.begin(), frame2.end());
    Streams s;
    FrameDeformatter d(s);
    ASSERT_TRUE(d.feed(1000, in).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(s.byId[0x10], (Bytes{0xa0, 0x02, 0x03, 0x05, 0x10, 0x11, 0x13, 0x13, 0x14, 0x15, 0x17, 0x17,
                                   0x19, 0x19, 0x1a, 0x1b, 0x1d, 0x1d, 0x1e}));
    EXPECT_EQ(s.byId[0x30], (Bytes{0x07, 0x09, 0x0a, 0x0b, 0x0c, 0x0d}));
    EXPECT_EQ(s.byId.count(0x20), 0u) << "the delayed ID 0x20 was replaced before it got a byte";
    // Runs name the offset of their first byte: 0x10 at 1001, 0x30 at 1007, 0x10 again at 1016.
    ASSERT_EQ(s.calls.size(), 3u);
    EXPECT_EQ(s.calls[0].index, 1001u);
    EXPECT_EQ(s.calls[0].size, 4u);
    EXPECT_EQ(s.calls[1].id, 0x30);
    EXPECT_EQ(s.calls[1].index, 1007u);
    EXPECT_EQ(s.calls[2].index, 1016u);
    EXPECT_EQ(d.stats().frames, 2u);
    EXPECT_EQ(d.stats().dataBytes, 25u);
}

TEST(FrameDeformatter, FrameOfIdBytesOnly) {
    // Every even byte names an ID; aux bits choose immediate or delayed.
    // Start with ID 0x01 in force from a first frame.
    Bytes in = {0x03, 0xee, 0x02, 0x04, 0x06, 0x08, 0x0a, 0x0c,
                0x0e, 0x10, 0x12, 0x14, 0x16, 0x18, 0x1a, 0x00};
    // pairs: ID 0x02 delayed (odd 0xb0 -> 0x01) | ID 0x03 immediate (0xb1 -> 0x03) |
    // ID 0x03 again, aux set (0xb2 -> 0x03) | ID 0x04 delayed (0xb3 -> 0x03) |
    // ID 0x05 delayed (0xb4 -> 0x04) | ID 0x06 immediate (0xb5 -> 0x06) |
    // ID 0x00 immediate (0xb6 -> null) | byte 14: ID 0x07 for later.
    const Bytes ids = {0x05, 0xb0, 0x07, 0xb1, 0x07, 0xb2, 0x09, 0xb3,
                       0x0b, 0xb4, 0x0d, 0xb5, 0x01, 0xb6, 0x0f};
    in.insert(in.end(), ids.begin(), ids.end());
    in.push_back(0x1d);  // aux bits 0, 2, 3, 4
    Streams s;
    FrameDeformatter d(s);
    ASSERT_TRUE(d.feed(0, in).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(s.byId[0x01], (Bytes{0xee, 0x02, 0x04, 0x06, 0x08, 0x0a, 0x0c, 0x0e, 0x10, 0x12, 0x14, 0x16,
                                   0x18, 0x1a, 0xb0}));
    EXPECT_EQ(s.byId.count(0x02), 0u);
    EXPECT_EQ(s.byId[0x03], (Bytes{0xb1, 0xb2, 0xb3}));
    EXPECT_EQ(s.byId[0x04], (Bytes{0xb4}));
    EXPECT_EQ(s.byId.count(0x05), 0u);
    EXPECT_EQ(s.byId[0x06], (Bytes{0xb5}));
    EXPECT_EQ(d.stats().nullIdBytes, 1u);
    EXPECT_EQ(d.currentId(), 0x07);
}

TEST(FrameDeformatter, NullReservedAndUnknownIdsAreDroppedAndCounted) {
    // Data before any ID (unknown), then ID 0x7d (reserved), ID 0 (null), ID 0x6f (valid).
    const Bytes in = {0x40, 0x41, 0xfb, 0x42, 0x44, 0x45, 0x01, 0x46,
                      0x48, 0x49, 0xdf, 0x4a, 0x4c, 0x4d, 0x4e, 0x00};
    Streams s;
    FrameDeformatter d(s);
    ASSERT_TRUE(d.feed(0, in).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(d.stats().unknownIdBytes, 2u);
    EXPECT_EQ(d.stats().reservedIdBytes, 3u);
    EXPECT_EQ(d.stats().nullIdBytes, 3u);
    EXPECT_EQ(s.byId[0x6f], (Bytes{0x4a, 0x4c, 0x4d, 0x4e}));
    EXPECT_EQ(s.byId.size(), 1u);
}

TEST(FrameDeformatter, FormatterRoundTripInAnyChunkSize) {
    std::mt19937 rng(12);
    for (int round = 0; round < 200; ++round) {
        std::vector<std::pair<uint8_t, uint8_t>> items;
        std::map<uint8_t, Bytes> want;
        const int segments = 1 + static_cast<int>(rng() % 40);
        for (int s = 0; s < segments; ++s) {
            const uint8_t id = static_cast<uint8_t>(1 + rng() % 0x6f);
            const size_t len = 1 + rng() % (rng() % 4 == 0 ? 60 : 4);
            for (size_t k = 0; k < len; ++k) {
                const uint8_t b = static_cast<uint8_t>(rng());
                items.push_back({id, b});
                want[id].push_back(b);
            }
        }
        const Bytes frames = formatFrames(items, rng);
        ASSERT_EQ(frames.size() % 16, 0u);
        for (size_t chunk : {size_t(1), size_t(5), size_t(16), size_t(33), frames.size()}) {
            ASSERT_EQ(deformatChunked(frames, chunk), want) << "round " << round << ", chunk " << chunk;
        }
        // The same frames behind junk and an FSYNC, FSYNCs between frames, HSYNCs inside them.
        Bytes tpiu = {0x12, 0xff, 0xff, 0x7f, 0x00, 0xff, 0xff, 0xff, 0x7f};  // junk, then FSYNC at 5
        for (size_t at = 0; at < frames.size(); at += 16) {
            if (rng() % 3 == 0) tpiu.insert(tpiu.end(), {0xff, 0xff, 0xff, 0x7f});
            for (size_t k = 0; k < 16; k += 2) {
                if (rng() % 5 == 0) tpiu.insert(tpiu.end(), {0xff, 0x7f});
                tpiu.insert(tpiu.end(), frames.begin() + long(at + k), frames.begin() + long(at + k + 2));
            }
        }
        FrameDeformatterOptions o;
        o.sync = FrameSync::Fsync;
        o.hsyncs = true;
        for (size_t chunk : {size_t(1), size_t(3), size_t(64), tpiu.size()})
            ASSERT_EQ(deformatChunked(tpiu, chunk, o), want)
                << "TPIU, round " << round << ", chunk " << chunk;
    }
}

TEST(FrameDeformatter, FsyncStreamSyncsOnTheFirstFsyncAndCountsSyncBytes) {
    const Bytes frame = {0x21, 0xa0, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                         0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0x00};
    Bytes in = {0x01, 0x02, 0x03};  // junk
    in.insert(in.end(), {0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f});
    in.insert(in.end(), frame.begin(), frame.end());
    in.insert(in.end(), {0xff, 0xff, 0xff, 0x7f});
    FrameDeformatterOptions o;
    o.sync = FrameSync::Fsync;
    Streams s;
    FrameDeformatter d(s, o);
    ASSERT_TRUE(d.feed(0, in).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(d.stats().unsyncedBytes, 3u);
    EXPECT_EQ(d.stats().syncBytes, 12u);
    EXPECT_EQ(s.byId[0x10].size(), 14u);
    ASSERT_FALSE(s.calls.empty());
    EXPECT_EQ(s.calls[0].index, 12u);  // 3 junk + 2 FSYNCs, then the ID byte: first data byte at 12
}

TEST(FrameDeformatter, ErrorsNameTheOffset) {
    const Bytes frame = {0x21, 0xa0, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                         0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0x00};
    FrameDeformatterOptions fs;
    fs.sync = FrameSync::Fsync;
    {  // An FSYNC in the middle of a frame.
        Bytes in = {0xff, 0xff, 0xff, 0x7f};
        in.insert(in.end(), frame.begin(), frame.begin() + 8);
        in.insert(in.end(), {0xff, 0xff, 0xff, 0x7f});
        in.insert(in.end(), frame.begin() + 8, frame.end());
        Streams s;
        FrameDeformatter d(s, fs);
        auto r = d.feed(100, in);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("offset 112 (0x70)"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("FSYNC inside a frame"), std::string::npos) << r.error().message;
        // Sticky until reset().
        EXPECT_FALSE(d.feed(100 + in.size(), frame).ok());
        d.reset();
        EXPECT_TRUE(d.feed(0, Bytes{0xff, 0xff, 0xff, 0x7f}).ok());
    }
    {  // An HSYNC where the stream has none.
        Bytes in = {0xff, 0xff, 0xff, 0x7f, 0x21, 0xa0, 0xff, 0x7f};
        in.insert(in.end(), 16, 0);
        Streams s;
        FrameDeformatter d(s, fs);
        auto r = d.feed(0, in);
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("offset 6 (0x6): HSYNC"), std::string::npos) << r.error().message;
    }
    {  // Bytes that do not continue the stream.
        Streams s;
        FrameDeformatter d(s);
        ASSERT_TRUE(d.feed(0, Bytes(frame.begin(), frame.begin() + 10)).ok());
        auto r = d.feed(16, Bytes(frame.begin() + 10, frame.end()));
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("offset 16 (0x10)"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("expected offset 10 (0xa)"), std::string::npos) << r.error().message;
    }
    {  // An incomplete frame at the end.
        Streams s;
        FrameDeformatter d(s);
        Bytes in = frame;
        in.insert(in.end(), frame.begin(), frame.begin() + 6);
        ASSERT_TRUE(d.feed(32, in).ok());
        auto r = d.finish();
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("offset 48 (0x30): 6 bytes of an incomplete frame"),
                  std::string::npos)
            << r.error().message;
        EXPECT_EQ(s.byId[0x10].size(), 14u) << "the complete frame was handed over";
    }
    {  // No FSYNC at all.
        Streams s;
        FrameDeformatter d(s, fs);
        ASSERT_TRUE(d.feed(0, frame).ok());
        auto r = d.finish();
        ASSERT_FALSE(r.ok());
        EXPECT_NE(r.error().message.find("offset 0 (0x0): no FSYNC in the 16 bytes"), std::string::npos)
            << r.error().message;
    }
}

TEST(FrameDeformatter, PerfResetFramesOfFourFsyncs) {
    const Bytes frame = {0x21, 0xa0, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                         0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0x00};
    const Bytes noId = {0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7,
                        0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0x00};
    Bytes fsyncs;
    for (int i = 0; i < 4; ++i)
        fsyncs.insert(fsyncs.end(), {0xff, 0xff, 0xff, 0x7f});
    FrameDeformatterOptions o;
    o.resetOn4xFsync = true;
    Bytes in = frame;
    in.insert(in.end(), fsyncs.begin(), fsyncs.end());
    in.insert(in.end(), noId.begin(), noId.end());  // no ID since the reset: dropped
    in.insert(in.end(), frame.begin(), frame.end());
    Streams s;
    FrameDeformatter d(s, o);
    for (size_t at = 0; at < in.size(); at += 7)  // the reset frame split across feeds
        ASSERT_TRUE(
            d.feed(at, Bytes(in.begin() + long(at), in.begin() + long(std::min(at + 7, in.size())))).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(s.resets, (std::vector<uint64_t>{16}));
    EXPECT_EQ(d.stats().unknownIdBytes, 15u);
    EXPECT_EQ(s.byId[0x10].size(), 28u);

    // Half an FSYNC frame is an error naming the first word that is not one.
    Bytes bad = frame;
    bad.insert(bad.end(), {0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f});
    bad.insert(bad.end(), frame.begin(), frame.begin() + 8);
    Streams s2;
    FrameDeformatter d2(s2, o);
    auto r = d2.feed(0, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("offset 24 (0x18)"), std::string::npos) << r.error().message;
    // Without the option the same frame is data of the reserved ID 0x7f.
    Streams s3;
    FrameDeformatter d3(s3);
    ASSERT_TRUE(d3.feed(0, in).ok());
    EXPECT_GT(d3.stats().reservedIdBytes, 0u);
}

TEST(FrameDeformatter, ResetBetweenBuffers) {
    const Bytes frame = {0x21, 0xa0, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
                         0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0x00};
    const Bytes noId = {0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7,
                        0xb8, 0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0x00};
    Streams s;
    FrameDeformatter d(s);
    ASSERT_TRUE(d.feed(0, frame).ok());
    ASSERT_TRUE(d.feed(16, noId).ok());  // continues ID 0x10
    EXPECT_EQ(s.byId[0x10].size(), 29u);
    ASSERT_TRUE(d.feed(32, Bytes(frame.begin(), frame.begin() + 4)).ok());
    d.reset();  // a new buffer: the partial frame and the ID are forgotten
    ASSERT_TRUE(d.feed(0, noId).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(s.byId[0x10].size(), 29u);
    EXPECT_EQ(d.stats().unknownIdBytes, 15u);
}

TEST(FrameDeformatter, GarbageGivesErrorsWithOffsetsNeverACrash) {
    std::mt19937 rng(7);
    EtmSourceConfig c;  // ETMv4, ARMv8-A
    c.trcidr0 = 0x28000EA1;
    c.trcidr2 = 0x488;
    for (int round = 0; round < 20; ++round) {
        Bytes junk(4096 + rng() % 4096);
        for (auto& b : junk)
            b = static_cast<uint8_t>(rng() % 4 == 0 ? 0xff : rng());
        for (FrameSync sync : {FrameSync::MemoryAligned, FrameSync::Fsync}) {
            for (bool hs : {false, true}) {
                FrameDeformatterOptions o;
                o.sync = sync;
                o.hsyncs = hs && sync == FrameSync::Fsync;
                o.resetOn4xFsync = !hs && sync == FrameSync::MemoryAligned;
                Streams s;
                FrameDeformatter d(s, o);
                auto r = d.feed(0x1000, junk);
                if (r) r = d.finish();
                if (!r) {
                    EXPECT_TRUE(std::regex_search(r.error().message, std::regex("offset [0-9]+ \\(0x")))
                        << r.error().message;
                }
                // Whatever came out decodes (or fails with an offset) without a crash.
                for (const auto& [id, bytes] : s.byId) {
                    c.trctraceidr = id;
                    struct Null final : EtmElementSink {
                        void element(const EtmElement&) override {}
                    } sink;
                    EtmDecoderOptions eo;
                    eo.input = EtmInput::Raw;
                    auto dec = EtmDecoder::create(std::vector<EtmSourceConfig>{c}, eo, nullptr, &sink);
                    ASSERT_TRUE(dec.ok()) << dec.error().message;
                    auto fr = (*dec)->feed(0, bytes);
                    if (fr) fr = (*dec)->finish();
                    if (!fr) {
                        EXPECT_NE(fr.error().message.find("offset 0x"), std::string::npos)
                            << fr.error().message;
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Snapshots: Formatted decode == deformat + Raw decode per trace ID

struct Compact {
    uint64_t a = 0, b = 0;
    uint32_t c = 0;
    uint8_t kind = 0, isa = 0, type = 0, flags = 0;
    bool operator==(const Compact&) const = default;
};

Compact compact(const EtmElement& e) {
    Compact k;
    k.kind = static_cast<uint8_t>(e.kind);
    switch (e.kind) {
        case EtmElementKind::InstrRange:
        case EtmElementKind::RangeNoPath:
            k.a = e.start;
            k.b = e.lastAddr;
            k.c = e.instructions;
            k.isa = static_cast<uint8_t>(e.isa);
            k.type = static_cast<uint8_t>(static_cast<unsigned>(e.lastType) << 4 |
                                          static_cast<unsigned>(e.lastSubtype));
            k.flags = static_cast<uint8_t>(e.lastExecuted | e.lastConditional << 1 | e.hasCycles << 2);
            break;
        case EtmElementKind::Timestamp:
            k.a = e.timestamp;
            break;
        case EtmElementKind::PeContext:
            // Only valid fields: OpenCSD leaves the others as they were.
            k.a = (e.vmidValid ? uint64_t(e.vmid) << 32 : 0) | (e.contextIdValid ? e.contextId : 0);
            k.c = static_cast<uint32_t>(e.exceptionLevel + 1);
            k.isa = static_cast<uint8_t>(e.isa);
            k.flags =
                static_cast<uint8_t>(e.contextIdValid | e.vmidValid << 1 | e.secure << 2 | e.bits64 << 3);
            break;
        case EtmElementKind::CycleCount:
            k.c = e.cycles;
            break;
        default:
            k.a = e.start;
            k.b = e.end;
            k.c = e.number;
            k.flags = e.returnAddrValid;
            break;
    }
    return k;
}

std::string describe(const Compact& k) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s a=0x%llx b=0x%llx c=%u isa=%u type=0x%x flags=0x%x",
                  etmElementKindName(static_cast<EtmElementKind>(k.kind)),
                  static_cast<unsigned long long>(k.a), static_cast<unsigned long long>(k.b), k.c, k.isa,
                  k.type, k.flags);
    return buf;
}

// The Formatted decode: every element per trace ID.
class Recorder final : public EtmElementSink {
public:
    void element(const EtmElement& e) override { byId[e.traceId].push_back(compact(e)); }
    void decodeError(uint64_t, uint8_t id, std::string_view) override { ++errors[id]; }
    std::map<uint8_t, std::vector<Compact>> byId;
    std::map<uint8_t, uint64_t> errors;
};

// The Raw decode of one trace ID, checked against the recorded elements as they come.
class Checker final : public EtmElementSink {
public:
    Checker(uint8_t id, const std::vector<Compact>& want) : id_(id), want_(want) {}
    void element(const EtmElement& e) override {
        if (e.traceId != id_) ++wrongId;
        const Compact k = compact(e);
        if (k.kind == static_cast<uint8_t>(EtmElementKind::InstrRange)) ++ranges;
        if (pos < want_.size() && !(want_[pos] == k) && mismatches++ == 0)
            first = "element #" + std::to_string(pos) + ": raw " + describe(k) + ", formatted " +
                    describe(want_[pos]);
        ++pos;
    }
    void decodeError(uint64_t, uint8_t, std::string_view) override { ++errors; }
    uint64_t pos = 0, mismatches = 0, ranges = 0, errors = 0, wrongId = 0;
    std::string first;

private:
    uint8_t id_;
    const std::vector<Compact>& want_;
};

Expected<void> feedAll(EtmDecoder& d, const Bytes& bytes, size_t chunk) {
    for (size_t at = 0; at < bytes.size(); at += chunk) {
        const size_t n = std::min(chunk, bytes.size() - at);
        if (auto r = d.feed(at, std::span<const uint8_t>(bytes.data() + at, n)); !r) return r;
    }
    return d.finish();
}

Bytes readFile(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    Bytes out;
    if (!f) return out;
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        out.insert(out.end(), buf, buf + n);
    std::fclose(f);
    return out;
}

class EtmRawSnapshot : public ::testing::TestWithParam<std::string> {};

TEST_P(EtmRawSnapshot, DeformattedRawDecodeEqualsFormattedDecode) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string dir = auxscope::test_support::testDataPath("coresight/opencsd-snapshots/" + GetParam());
    auto snap = EtmSnapshot::read(dir);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    size_t formattedBuffers = 0, totalRanges = 0;
    for (const SnapshotBuffer& buffer : snap->buffers()) {
        if (buffer.input != EtmInput::Formatted) continue;  // trace.ini format=coresight only
        ++formattedBuffers;
        auto sources = snap->sources(buffer.name);
        ASSERT_TRUE(sources.ok()) << sources.error().message;
        std::map<uint8_t, EtmSourceConfig> configs;
        for (const SnapshotSource& s : *sources)
            if (s.config && s.config->protocol != EtmProtocol::Stm) configs[s.config->traceId()] = *s.config;
        const Bytes bytes = readFile(buffer.path);
        ASSERT_FALSE(bytes.empty()) << buffer.path;

        // Deformat (in 4093-byte pieces: frames split across feeds) and check the whole-buffer form agrees.
        const auto streams = deformatChunked(bytes, 4093);
        auto whole = deformatBuffer(bytes);
        ASSERT_TRUE(whole.ok()) << whole.error().message;
        ASSERT_EQ(whole->streams, streams);
        std::printf(
            "%s %s: %zu bytes, %llu frames -> %llu bytes in %zu trace IDs (%llu null, %llu reserved, "
            "%llu before the first ID)\n",
            GetParam().c_str(), buffer.name.c_str(), bytes.size(),
            static_cast<unsigned long long>(whole->stats.frames),
            static_cast<unsigned long long>(whole->stats.dataBytes), streams.size(),
            static_cast<unsigned long long>(whole->stats.nullIdBytes),
            static_cast<unsigned long long>(whole->stats.reservedIdBytes),
            static_cast<unsigned long long>(whole->stats.unknownIdBytes));
        size_t undecodedIds = 0, undecodedBytes = 0;
        for (const auto& [id, s] : streams)
            if (!configs.count(id)) ++undecodedIds, undecodedBytes += s.size();
        if (undecodedIds)
            std::printf("%s %s: %zu trace IDs (%zu bytes) have no instruction trace source (not decoded)\n",
                        GetParam().c_str(), buffer.name.c_str(), undecodedIds, undecodedBytes);
        if (configs.empty()) continue;

        EtmImageMemory image;
        for (const SnapshotDump& d : snap->dumps(buffer.name))
            (void)image.addFile(d.address, d.path, d.offset, d.length, d.space);  // missing: not accessible

        std::vector<EtmSourceConfig> all;
        for (const auto& [id, c] : configs)
            all.push_back(c);
        Recorder formatted;
        {
            EtmMemoryCache cache(image);
            EtmDecoderOptions o;
            o.input = EtmInput::Formatted;
            auto dec = EtmDecoder::create(all, o, &cache, &formatted);
            ASSERT_TRUE(dec.ok()) << dec.error().message;
            auto r = feedAll(**dec, bytes, 64 * 1024);
            ASSERT_TRUE(r.ok()) << r.error().message;
        }

        for (const auto& [id, stream] : streams) {
            auto cit = configs.find(id);
            if (cit == configs.end()) continue;
            const std::vector<Compact>& want = formatted.byId[id];
            Checker check(id, want);
            EtmMemoryCache cache(image);
            EtmDecoderOptions o;
            o.input = EtmInput::Raw;
            auto dec = EtmDecoder::create(std::vector<EtmSourceConfig>{cit->second}, o, &cache, &check);
            ASSERT_TRUE(dec.ok()) << dec.error().message;
            auto r = feedAll(**dec, stream, 60000);
            ASSERT_TRUE(r.ok()) << "trace ID 0x" << std::hex << int(id) << ": " << r.error().message;
            EXPECT_EQ(check.mismatches, 0u) << "trace ID 0x" << std::hex << int(id) << ": " << check.first;
            EXPECT_EQ(check.pos, want.size()) << "trace ID 0x" << std::hex << int(id) << ": element count";
            EXPECT_EQ(check.wrongId, 0u);
            EXPECT_EQ(check.errors, formatted.errors[id])
                << "trace ID 0x" << std::hex << int(id) << ": decode errors";
            uint64_t wantRanges = 0;
            for (const Compact& k : want)
                wantRanges += k.kind == static_cast<uint8_t>(EtmElementKind::InstrRange);
            EXPECT_EQ(check.ranges, wantRanges);
            std::printf(
                "%s %s: trace ID 0x%x: %llu ranges (%llu elements) of the raw decode equal the "
                "formatted decode's\n",
                GetParam().c_str(), buffer.name.c_str(), id, static_cast<unsigned long long>(check.ranges),
                static_cast<unsigned long long>(check.pos));
            totalRanges += check.ranges;
        }
        // A source the buffer has no bytes of decodes to nothing in the formatted decode either.
        for (const auto& [id, c] : configs) {
            if (streams.count(id)) continue;
            for (const Compact& k : formatted.byId[id])
                EXPECT_NE(k.kind, static_cast<uint8_t>(EtmElementKind::InstrRange))
                    << "trace ID 0x" << std::hex << int(id) << " has ranges but no deformatted bytes";
        }
    }
    EXPECT_GT(formattedBuffers, 0u);
    std::printf("%s: %zu ranges compared\n", GetParam().c_str(), totalRanges);
    RecordProperty("ranges_compared", static_cast<int>(totalRanges));
}

INSTANTIATE_TEST_SUITE_P(Snapshots, EtmRawSnapshot,
                         ::testing::Values("juno_r1_1", "TC2", "a57_single_step", "juno-uname-002",
                                           "bugfix-exact-match", "test-file-mem-offsets"),
                         [](const auto& info) {
                             std::string n = info.param;
                             for (char& ch : n)
                                 if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                             return n;
                         });

// OpenCSD's own FSYNC deformatter against ours: a snapshot buffer turned into a
// TPIU-style stream (junk, then FSYNCs between frames) decodes the same in
// FormattedFsync mode as our deformatted raw streams do.
TEST(EtmRawFsync, OpenCsdFsyncDecodeEqualsDeformattedRawDecode) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string dir = auxscope::test_support::testDataPath("coresight/opencsd-snapshots/juno_r1_1");
    auto snap = EtmSnapshot::read(dir);
    ASSERT_TRUE(snap.ok()) << snap.error().message;
    const SnapshotBuffer* buffer = snap->buffer("ETB_0");
    ASSERT_NE(buffer, nullptr);
    auto sources = snap->sources(buffer->name);
    ASSERT_TRUE(sources.ok());
    std::map<uint8_t, EtmSourceConfig> configs;
    for (const SnapshotSource& s : *sources)
        if (s.config) configs[s.config->traceId()] = *s.config;
    const Bytes frames = readFile(buffer->path);
    // OpenCSD reads FSYNC streams in 32-bit words from the first FSYNC's alignment
    // (a TPIU's port is 32 bits wide): 4 bytes of junk keep it aligned.
    Bytes tpiu = {0x55, 0xaa, 0x00, 0x12};
    std::mt19937 rng(5);
    for (size_t at = 0; at < frames.size(); at += 16) {
        if (at == 0 || rng() % 4 == 0) tpiu.insert(tpiu.end(), {0xff, 0xff, 0xff, 0x7f});
        tpiu.insert(tpiu.end(), frames.begin() + long(at), frames.begin() + long(at + 16));
    }
    FrameDeformatterOptions fo;
    fo.sync = FrameSync::Fsync;
    Streams s;
    FrameDeformatter d(s, fo);
    ASSERT_TRUE(d.feed(0, tpiu).ok());
    ASSERT_TRUE(d.finish().ok());
    EXPECT_EQ(d.stats().unsyncedBytes, 4u);
    ASSERT_EQ(s.byId, deformatBuffer(frames)->streams);

    EtmImageMemory image;
    for (const SnapshotDump& dump : snap->dumps(buffer->name))
        (void)image.addFile(dump.address, dump.path, dump.offset, dump.length, dump.space);
    std::vector<EtmSourceConfig> all;
    for (const auto& [id, c] : configs)
        all.push_back(c);
    Recorder fsync;
    {
        EtmMemoryCache cache(image);
        EtmDecoderOptions o;
        o.input = EtmInput::FormattedFsync;
        auto dec = EtmDecoder::create(all, o, &cache, &fsync);
        ASSERT_TRUE(dec.ok()) << dec.error().message;
        auto r = feedAll(**dec, tpiu, 5000);
        ASSERT_TRUE(r.ok()) << r.error().message;
    }
    size_t compared = 0;
    for (const auto& [id, stream] : s.byId) {
        if (!configs.count(id)) continue;
        Checker check(id, fsync.byId[id]);
        EtmMemoryCache cache(image);
        EtmDecoderOptions o;
        o.input = EtmInput::Raw;
        auto dec = EtmDecoder::create(std::vector<EtmSourceConfig>{configs[id]}, o, &cache, &check);
        ASSERT_TRUE(dec.ok());
        ASSERT_TRUE(feedAll(**dec, stream, 4096).ok());
        EXPECT_EQ(check.mismatches, 0u) << check.first;
        EXPECT_EQ(check.pos, fsync.byId[id].size());
        compared += check.ranges;
    }
    EXPECT_GT(compared, 6000u);
    std::printf("juno_r1_1 as a TPIU stream: %zu ranges equal OpenCSD's FSYNC decode\n", compared);
}

// ---------------------------------------------------------------------------
// The raw-format perf.data

std::string auxscopeBinary() {
    return AUXSCOPE_TEST_BINARY;
}

// perf report -D's packet lines of the CoreSight dump, without their byte index
// and trace ID; the IDs go to `ids`.
std::vector<std::string> perfPackets(const std::string& dump, std::set<std::string>& ids) {
    std::vector<std::string> out;
    std::istringstream in(dump);
    std::string line;
    static const std::regex packet("^\\s*Idx:[0-9]+; ID:([0-9a-f]+);\\s*(.*)$");
    std::smatch m;
    while (std::getline(in, line)) {
        if (!std::regex_match(line, m, packet)) continue;
        ids.insert(m[1]);
        out.push_back(m[2]);
    }
    return out;
}

std::string simpleperfEtm(const std::string& rel) {
    return auxscope::test_support::testDataPath("coresight/simpleperf-etm/" + rel);
}

// perf_etm.data's raw copy, written once per run.
const std::string& rawCopyOfPerfEtmData() {
    static const std::string path = [] {
        const std::string dst = writertest::makeTempDir("etm-raw") + "/perf_etm_raw.data";
        auto r = etmtest::writeRawEtmCopy(simpleperfEtm("perf_etm.data"), dst);
        EXPECT_TRUE(r.ok()) << r.error().message;
        return r.ok() ? dst : std::string();
    }();
    return path;
}

TEST(EtmRawPerfData, RawFlaggedCopyOfPerfEtmData) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string src = simpleperfEtm("perf_etm.data");
    const std::string dir = writertest::makeTempDir("etm-raw");
    const std::string dst = dir + "/perf_etm_raw.data";
    auto report = etmtest::writeRawEtmCopy(src, dst);
    ASSERT_TRUE(report.ok()) << report.error().message;
    for (const auto& n : report->notes)
        std::printf("note: %s\n", n.c_str());
    for (const auto& [key, n] : report->bytesByCpuAndId)
        std::printf("cpu %lld trace ID 0x%x: %llu deformatted bytes%s\n", static_cast<long long>(key.first),
                    key.second, static_cast<unsigned long long>(n),
                    report->traceIdByCpu[key.first] == key.second ? " (kept)" : " (left out)");
    std::printf("%llu formatted AUXTRACE bytes -> %llu raw; %llu AUX records flagged raw\n",
                static_cast<unsigned long long>(report->formattedBytes),
                static_cast<unsigned long long>(report->rawBytes),
                static_cast<unsigned long long>(report->auxRecords));
    EXPECT_EQ(report->auxtraceBuffers, 1u);
    EXPECT_EQ(report->auxRecords, 4u);
    EXPECT_EQ(report->droppedBytes, 0u) << "a single-source ETMv4 capture";
    EXPECT_EQ(report->unknownIdBytes, 0u);
    EXPECT_GT(report->rawBytes, 0u);
    EXPECT_LT(report->rawBytes, report->formattedBytes);

    // Read back: no issues, the same records, AUX records raw-flagged and covering the raw bytes.
    auto orig = PerfDataReader::open(src);
    ASSERT_TRUE(orig.ok());
    auto copy = PerfDataReader::open(dst);
    ASSERT_TRUE(copy.ok()) << copy.error().message;
    for (const PerfDataIssue& i : copy->issues())
        ADD_FAILURE() << i.message;
    EXPECT_EQ(copy->summary().recordsByType, orig->summary().recordsByType);
    ASSERT_EQ(copy->summary().auxtraceInfo.size(), 1u);
    EXPECT_EQ(copy->summary().auxtraceInfo[0].priv, orig->summary().auxtraceInfo[0].priv);
    ASSERT_EQ(copy->summary().aux.size(), orig->summary().aux.size());
    uint64_t next = 0;
    for (size_t i = 0; i < copy->summary().aux.size(); ++i) {
        const PerfAuxRecord& a = copy->summary().aux[i];
        const PerfAuxRecord& o = orig->summary().aux[i];
        EXPECT_EQ(a.flags, o.flags | perfdata::kAuxFlagCoresightFormatRaw);
        EXPECT_EQ(a.auxOffset, next);
        EXPECT_EQ(a.time, o.time);
        EXPECT_EQ(a.cpu, o.cpu);
        next += a.auxSize;
    }
    EXPECT_EQ(next, report->rawBytes);
    ASSERT_EQ(copy->summary().auxtrace.size(), 1u);
    const PerfAuxtraceBuffer& b = copy->summary().auxtrace[0];
    EXPECT_EQ(b.size, (report->rawBytes + 7) / 8 * 8);
    EXPECT_EQ(b.cpu, orig->summary().auxtrace[0].cpu);
    // The payload is the CPU's trace ID's deformatted stream.
    {
        const PerfAuxtraceBuffer& ob = orig->summary().auxtrace[0];
        auto formatted = orig->fileBytes(ob.dataOffset, ob.size);
        auto d = deformatBuffer(formatted);
        ASSERT_TRUE(d.ok());
        const Bytes& want = d->streams.at(report->traceIdByCpu.at(ob.cpu));
        auto got = copy->fileBytes(b.dataOffset, report->rawBytes);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
    }
    ASSERT_TRUE(copy->features().auxtraceIndex.has_value());
    EXPECT_EQ(copy->features().auxtraceIndex->size(), 1u);
    EXPECT_EQ(copy->features().present.size(), orig->features().present.size());
    EXPECT_EQ(copy->features().buildIds->size(), orig->features().buildIds->size());
    EXPECT_EQ(copy->summary().aux.size(), copy->summary().cpus.at(7).aux.formatRaw);

    // auxscope info reads it and counts the raw-flagged AUX records.
    auto info = writertest::runCommand({auxscopeBinary(), "info", dst}, 60);
    EXPECT_TRUE(info.exitedZero()) << info.out << info.err;
    EXPECT_NE(info.out.find("coresight-raw 4"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("problems: 0 errors, 0 warnings"), std::string::npos) << info.out;

    // perf reads it: the raw-flagged AUX records, and the ETMv4 packets of the raw
    // stream equal those of the formatted original.
    auto perf = writertest::perfBinary();
    if (!perf) GTEST_SKIP() << "perf (Debian linux-perf) is not installed: perf report -D not run";
    auto dumpOrig = writertest::runCommand({*perf, "report", "-D", "-i", src}, 120);
    auto dumpCopy = writertest::runCommand({*perf, "report", "-D", "-i", dst}, 120);
    ASSERT_TRUE(dumpOrig.exitedZero()) << dumpOrig.err;
    ASSERT_TRUE(dumpCopy.exitedZero()) << dumpCopy.err;
    EXPECT_EQ(writertest::countMatches(dumpCopy.out, "PERF_RECORD_AUX offset: .* flags: 0x100"), 4u);
    std::set<std::string> idsOrig, idsCopy;
    const auto packetsOrig = perfPackets(dumpOrig.out, idsOrig),
               packetsCopy = perfPackets(dumpCopy.out, idsCopy);
    ASSERT_FALSE(packetsOrig.empty()) << "perf printed no CoreSight packet for the original";
    EXPECT_EQ(packetsCopy, packetsOrig);
    // Formatted: the frames' trace ID. Raw data carries none: perf 6.1 names the ID
    // of the first CPU's metadata (cpu 0: 0x10) for it, later perf the queue's CPU's.
    EXPECT_EQ(idsOrig, (std::set<std::string>{"1e"}));
    EXPECT_EQ(idsCopy.size(), 1u);
    std::printf("perf report -D: %zu ETMv4 packets of the raw copy equal the original's\n",
                packetsCopy.size());
}

// `auxscope decode FILE --format ranges` (decode/auxtrace, the perf.data ETM
// path) prints the same ranges for the raw copy as for the formatted original.
TEST(EtmRawPerfData, RawCopyDecodesToTheSameRangesAsTheOriginal) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string& copy = rawCopyOfPerfEtmData();
    ASSERT_FALSE(copy.empty());
    auto ranges = [](const std::string& file) {
        auto r = writertest::runCommand(
            {auxscopeBinary(), "decode", file, "--format", "ranges", "--symfs", simpleperfEtm("symfs")}, 120);
        EXPECT_TRUE(r.exitedZero()) << file << ": " << r.err;
        std::vector<std::string> lines;
        std::istringstream in(r.out);
        std::string line;
        static const std::regex range("^[0-9]+ 0x[0-9a-f]+ 0x[0-9a-f]+ 0x[0-9a-f]+ [0-9]+ [A-Za-z0-9]+$");
        while (std::getline(in, line))
            if (std::regex_match(line, range)) lines.push_back(line);
        return std::make_pair(lines, r.out);
    };
    const auto [orig, origOut] = ranges(simpleperfEtm("perf_etm.data"));
    const auto [raw, rawOut] = ranges(copy);
    ASSERT_FALSE(orig.empty()) << "no ranges for the original:\n" << origOut;
    EXPECT_EQ(raw, orig) << "raw copy:\n" << rawOut;
    std::printf("perf_etm.data and its raw copy: %zu ranges compared (cpu 7, trace ID 0x1e)\n", orig.size());
}

}  // namespace
