// SPDX-License-Identifier: GPL-3.0-or-later
// RecordParser beyond auxscope's own IDENTIFIER layout: files from perf and
// simpleperf place the id by PERF_SAMPLE_ID (perf's rule), or carry none at all.
#include <gtest/gtest.h>

#include <cstring>

#include "RecordParser.h"

using namespace auxscope;

namespace {

struct Rec {
    std::vector<uint8_t> b;
    Rec(uint32_t type, uint16_t misc = 0) : b(sizeof(perf_event_header)) {
        const perf_event_header h{type, misc, 0};
        std::memcpy(b.data(), &h, sizeof h);
    }
    template <typename T>
    Rec& put(const T& v) {
        auto p = reinterpret_cast<const uint8_t*>(&v);
        b.insert(b.end(), p, p + sizeof v);
        return *this;
    }
    Rec& u64(uint64_t v) { return put(v); }
    Rec& u32(uint32_t v) { return put(v); }
    std::vector<uint8_t> done() {
        const uint16_t size = uint16_t(b.size());
        std::memcpy(b.data() + 6, &size, 2);
        return b;
    }
};

constexpr uint64_t kIdLayout = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                               PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

}  // namespace

TEST(ReaderRecordParser, PlacementFollowsPerfsRule) {
    EXPECT_EQ(idPlacement(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID | PERF_SAMPLE_IP), (IdPlacement{0, 1}));
    // simpleperf's layout: IP, TID, TIME before ID; CPU after it in sample_id.
    EXPECT_EQ(idPlacement(kIdLayout), (IdPlacement{3, 2}));
    EXPECT_EQ(idPlacement(PERF_SAMPLE_ID | PERF_SAMPLE_ADDR | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU),
              (IdPlacement{1, 3}));
    EXPECT_EQ(idPlacement(PERF_SAMPLE_IP | PERF_SAMPLE_TID), (IdPlacement{-1, -1}));
    EXPECT_EQ(idPlacement(kIdLayout, false), (IdPlacement{3, -1}));
}

TEST(ReaderRecordParser, SampleWithIdInsteadOfIdentifier) {
    IdTable ids;
    ids.add(78, EventLayout{kIdLayout, 0, 0, 7});
    ids.add(79, EventLayout{kIdLayout, 0, 0, 6});
    Rec r(PERF_RECORD_SAMPLE);
    r.u64(0x401000).u64(uint64_t(11) << 32 | 10).u64(555).u64(79).u64(6).u64(1000);
    auto bytes = r.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    ASSERT_NE(p.event, nullptr);
    EXPECT_EQ(p.event->cpu, 6);
    EXPECT_EQ(p.id, 79u);
    EXPECT_EQ(p.ip, 0x401000u);
    EXPECT_EQ(p.pid, 10);
    EXPECT_EQ(p.tid, 11);
    EXPECT_EQ(p.time, 555u);
    EXPECT_EQ(p.cpu, 6u);
    EXPECT_EQ(p.period, 1000u);
}

TEST(ReaderRecordParser, TrailerWithIdCountsFromTheEnd) {
    IdTable ids;
    ids.add(78, EventLayout{kIdLayout, 0, 0, 7});
    ids.add(90, EventLayout{kIdLayout, 0, 1, 7});
    Rec r(PERF_RECORD_AUX);
    r.u64(0xf0).u64(0x90).u64(PERF_AUX_FLAG_TRUNCATED);
    r.u64(uint64_t(0x4353) << 32 | 0x4353).u64(1118693749982).u64(90).u64(7);  // TID TIME ID CPU
    auto bytes = r.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    ASSERT_NE(p.event, nullptr);
    EXPECT_EQ(p.event->descIndex, 1);
    EXPECT_EQ(p.id, 90u);
    EXPECT_EQ(p.cpu, 7u);
    EXPECT_EQ(p.time, 1118693749982u);
    EXPECT_EQ(p.auxOffset, 0xf0u);
    EXPECT_EQ(p.auxSize, 0x90u);
    EXPECT_EQ(p.auxFlags, uint64_t(PERF_AUX_FLAG_TRUNCATED));
}

TEST(ReaderRecordParser, SoleEventWithoutIds) {
    // One event, no ID in sample_type: records carry no id and all belong to it.
    const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    IdTable ids;
    ids.add(5, EventLayout{st, 0, 0, -1});
    ids.setSoleEvent(EventLayout{st, 0, 0, -1});
    Rec s(PERF_RECORD_SAMPLE);
    s.u64(0x1234).u64(uint64_t(2) << 32 | 1).u64(99).u64(1);
    auto bytes = s.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    ASSERT_NE(p.event, nullptr);
    EXPECT_EQ(p.ip, 0x1234u);
    EXPECT_EQ(p.cpu, 1u);

    Rec c(PERF_RECORD_COMM);
    c.u32(1).u32(2);
    const char name[8] = "bash";
    c.put(name).u64(uint64_t(2) << 32 | 1).u64(100).u64(1);  // trailer: TID TIME CPU
    bytes = c.done();
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    ASSERT_NE(p.event, nullptr);
    EXPECT_EQ(p.comm, "bash");
    EXPECT_EQ(p.time, 100u);
    EXPECT_EQ(p.cpu, 1u);
}

TEST(ReaderRecordParser, NoTrailerWithoutSampleIdAll) {
    const uint64_t st = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
    IdTable ids;
    ids.setSoleEvent(EventLayout{st, 0, 0, -1, false});
    Rec c(PERF_RECORD_COMM);
    c.u32(7).u32(8);
    const char name[16] = "a-long-name-123";
    c.put(name);
    auto bytes = c.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    EXPECT_FALSE(p.hasSampleId);
    EXPECT_EQ(p.comm, "a-long-name-123");
    EXPECT_EQ(p.pid, 7);
    EXPECT_EQ(p.cpu, UINT32_MAX);
}

TEST(ReaderRecordParser, EventsWithDifferentPlacements) {
    // perf refuses such files; the reader still attributes what it can.
    const uint64_t a = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
    const uint64_t b = PERF_SAMPLE_IP | PERF_SAMPLE_ID | PERF_SAMPLE_TIME;
    IdTable ids;
    ids.add(100, EventLayout{a, 0, 0, -1});
    ids.add(200, EventLayout{b, 0, 1, -1});
    ASSERT_EQ(ids.placements().size(), 2u);

    Rec sa(PERF_RECORD_SAMPLE);
    sa.u64(100).u64(0xaaaa).u64(10).u64(3);
    auto bytes = sa.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    EXPECT_EQ(p.event->descIndex, 0);
    EXPECT_EQ(p.ip, 0xaaaau);
    EXPECT_EQ(p.cpu, 3u);

    Rec sb(PERF_RECORD_SAMPLE);
    sb.u64(0xbbbb).u64(20).u64(200);  // IP, TIME, ID: the sample's field order
    bytes = sb.done();
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    EXPECT_EQ(p.event->descIndex, 1);
    EXPECT_EQ(p.ip, 0xbbbbu);
    EXPECT_EQ(p.time, 20u);
}

TEST(ReaderRecordParser, UserRecordsHaveNoTrailer) {
    IdTable ids;
    ids.add(68, EventLayout{PERF_SAMPLE_IDENTIFIER, 0, 0, -1});
    // A FINISHED_ROUND whose last u64 happens to look like a known id.
    Rec r(68);
    r.u64(68);
    auto bytes = r.done();
    ParsedRecord p;
    ASSERT_FALSE(parseRecord(bytes, ids, p));
    EXPECT_EQ(p.event, nullptr);
    EXPECT_FALSE(p.hasSampleId);
}

TEST(ReaderRecordParser, HostileReadGroupCountIsBounded) {
    IdTable ids;
    ids.add(
        1, EventLayout{PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_READ, PERF_FORMAT_GROUP | PERF_FORMAT_ID, 0, -1});
    Rec r(PERF_RECORD_SAMPLE);
    r.u64(1).u64(uint64_t(1) << 62);  // nr that would overflow nr * 8
    auto bytes = r.done();
    ParsedRecord p;
    auto err = parseRecord(bytes, ids, p);
    ASSERT_TRUE(err);
    EXPECT_NE(err->find("read"), std::string::npos);
}
