// SPDX-License-Identifier: GPL-3.0-or-later
// Damaged copies (in memory) of the real shared traces: truncation at many
// offsets, record sizes flipped, header sections pointing anywhere, random byte
// flips. The reader must name file, offset and cause, keep what precedes the
// damage, and never crash (this suite also runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ReaderTestSupport.h"
#include "TestData.h"

using namespace auxscope;
using namespace auxscope::test;
using auxscope::test_support::testDataPath;
using perfdata::FileHeader;

namespace {

struct Original {
    std::string name;
    std::vector<uint8_t> bytes;
    std::vector<std::pair<uint64_t, uint32_t>> records;  // (offset, type)
    std::vector<uint64_t> ends;                          // offset past each record (payload included)
    std::vector<uint64_t> headerEnds;                    // offset past each record's header.size bytes
    uint64_t dataEnd = 0;
};

// Each test says AUXSCOPE_NEED_TEST_DATA() before it asks for these.
std::vector<Original> originals() {
    std::vector<Original> v;
    for (const char* rel :
         {"intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14", "coresight/simpleperf-etm/perf_etm.data",
          "coresight/simpleperf-etm/perf_kernel.data",
          "coresight/simpleperf-etm/perf_with_missing_aux_data.data"}) {
        Original o;
        o.name = std::string(rel).substr(std::string(rel).rfind('/') + 1);
        o.bytes = readFileBytes(testDataPath(rel));
        auto r = PerfDataReader::fromBytes(o.bytes, o.name);
        if (!r.ok()) {
            ADD_FAILURE() << r.error().message;
            continue;
        }
        (void)r->forEachRecord([&](const PerfRecord& rec) {
            o.records.emplace_back(rec.fileOffset, rec.header.type);
            o.ends.push_back(rec.fileOffset + rec.header.size + rec.payloadSize);
            o.headerEnds.push_back(rec.fileOffset + rec.header.size);
            return true;
        });
        o.dataEnd = r->dataOffset() + r->dataSize();
        v.push_back(std::move(o));
    }
    return v;
}

const std::vector<Original>& shared() {
    static const std::vector<Original> v = originals();
    return v;
}

void expectIssuesNameFileAndOffset(const PerfDataReader& r, const std::string& name) {
    for (const auto& i : r.issues()) {
        EXPECT_EQ(i.message.rfind(name + ": offset ", 0), 0u) << i.message;
        EXPECT_FALSE(i.cause.empty());
    }
}

bool isPrefix(const std::vector<std::pair<uint64_t, uint32_t>>& a,
              const std::vector<std::pair<uint64_t, uint32_t>>& b) {
    return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

TEST(ReaderCorruption, TruncatedAtManyOffsets) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_FALSE(shared().empty());
    for (const Original& o : shared()) {
        size_t opened = 0;
        for (size_t cut = 0; cut < o.bytes.size(); cut += cut < 1024 ? 1 : 37) {
            auto r = PerfDataReader::fromBytes({o.bytes.begin(), o.bytes.begin() + cut}, o.name);
            if (!r.ok()) {
                EXPECT_LT(cut, sizeof(FileHeader))
                    << o.name << " cut at " << cut << ": " << r.error().message;
                EXPECT_EQ(r.error().message.rfind(o.name + ": offset ", 0), 0u) << r.error().message;
                continue;
            }
            ++opened;
            expectIssuesNameFileAndOffset(*r, o.name);
            if (cut < o.dataEnd) {
                EXPECT_TRUE(r->hasErrors()) << o.name << " cut at " << cut;
            }
            // Every record wholly before the cut is still read, in order, and nothing else;
            // an AUXTRACE record whose payload is cut is still read (its buffer marked short).
            size_t whole =
                size_t(std::count_if(o.ends.begin(), o.ends.end(), [&](uint64_t e) { return e <= cut; }));
            if (whole < o.records.size() && o.headerEnds[whole] <= cut && o.ends[whole] > cut) ++whole;
            auto list = readerRecordList(*r, false);
            ASSERT_TRUE(isPrefix(list, o.records)) << o.name << " cut at " << cut;
            EXPECT_EQ(list.size(), whole) << o.name << " cut at " << cut;
            EXPECT_EQ(r->summary().records, list.size());
        }
        EXPECT_GT(opened, 0u);
    }
}

TEST(ReaderCorruption, RecordSizesFlipped) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_FALSE(shared().empty());
    for (const Original& o : shared()) {
        for (size_t i = 0; i < o.records.size(); ++i) {
            const uint64_t at = o.records[i].first;
            uint16_t size;
            std::memcpy(&size, o.bytes.data() + at + 6, 2);
            for (uint16_t bad :
                 {uint16_t(0), uint16_t(4), uint16_t(0xffff), uint16_t(size + 8), uint16_t(size - 8)}) {
                auto b = o.bytes;
                std::memcpy(b.data() + at + 6, &bad, 2);
                auto r = PerfDataReader::fromBytes(std::move(b), o.name);
                ASSERT_TRUE(r.ok()) << r.error().message;
                expectIssuesNameFileAndOffset(*r, o.name);
                auto list = readerRecordList(*r, false);
                // The records before the damaged one are intact.
                ASSERT_GE(list.size(), i) << o.name << " record " << i << " size " << bad;
                EXPECT_TRUE(std::equal(o.records.begin(), o.records.begin() + i, list.begin()));
                if (bad < 8) {
                    bool named = false;
                    for (auto& is : r->issues())
                        named = named || (is.error && is.offset == at &&
                                          is.cause.find("less than its 8-byte header") != std::string::npos);
                    EXPECT_TRUE(named) << o.name << " record " << i;
                    EXPECT_EQ(list.size(), i);
                }
            }
        }
    }
}

TEST(ReaderCorruption, HeaderFieldsPointingAnywhere) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_FALSE(shared().empty());
    const Original& o = shared().front();
    FileHeader h;
    std::memcpy(&h, o.bytes.data(), sizeof h);
    auto tryHeader = [&](auto mutate, const char* what) {
        FileHeader x = h;
        mutate(x);
        auto b = o.bytes;
        std::memcpy(b.data(), &x, sizeof x);
        auto r = PerfDataReader::fromBytes(std::move(b), o.name);
        if (!r.ok()) return;  // a clear error is fine too
        EXPECT_TRUE(r->hasErrors() || !r->issues().empty()) << what;
        expectIssuesNameFileAndOffset(*r, o.name);
        size_t n = 0;
        (void)r->forEachRecord([&](const PerfRecord&) { return ++n, true; });
        EXPECT_EQ(n, r->summary().records) << what;
    };
    tryHeader([](FileHeader& x) { x.attrSize = 0; }, "attr size 0");
    tryHeader([](FileHeader& x) { x.attrSize = 0xffffffffffffull; }, "attr size huge");
    tryHeader([](FileHeader& x) { x.attrs.offset = ~0ull - 8; }, "attrs offset near 2^64");
    tryHeader([](FileHeader& x) { x.attrs.size = ~0ull; }, "attrs size 2^64-1");
    tryHeader([](FileHeader& x) { x.data.offset = ~0ull; }, "data offset 2^64-1");
    tryHeader([](FileHeader& x) { x.data.size = ~0ull - x.data.offset + 1; }, "data size wrapping");
    tryHeader([](FileHeader& x) { x.data.size += 1; }, "data size + 1");
    tryHeader([](FileHeader& x) { x.features[0] = x.features[1] = x.features[2] = x.features[3] = ~0ull; },
              "every feature bit");
    {
        // Feature sections pointing past the end: reported, the rest still decodes.
        auto b = o.bytes;
        const uint64_t table = h.data.offset + h.data.size;
        perfdata::FileSection s{~0ull - 4, 100};
        std::memcpy(b.data() + table, &s, sizeof s);  // the first feature (BUILD_ID)
        auto r = PerfDataReader::fromBytes(std::move(b), o.name);
        ASSERT_TRUE(r.ok());
        EXPECT_TRUE(r->hasErrors());
        EXPECT_FALSE(r->features().buildIds);
        EXPECT_EQ(r->features().hostname, "localhost");
    }
    {
        // Every attr's ids pointing past the end.
        auto b = o.bytes;
        for (uint64_t a = 0; a < h.attrs.size / h.attrSize; ++a) {
            perfdata::FileSection s{uint64_t(1) << 40, 16};
            std::memcpy(b.data() + h.attrs.offset + a * h.attrSize + h.attrSize - 16, &s, sizeof s);
        }
        auto r = PerfDataReader::fromBytes(std::move(b), o.name);
        ASSERT_TRUE(r.ok());
        EXPECT_TRUE(r->hasErrors());
        EXPECT_EQ(r->summary().records, o.records.size());  // records still counted
    }
}

TEST(ReaderCorruption, WrongMagicAndDataSizeZero) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_FALSE(shared().empty());
    const Original& o = shared().front();
    auto b = o.bytes;
    b[3] ^= 0x20;
    auto bad = PerfDataReader::fromBytes(std::move(b), o.name);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find(o.name + ": offset 0 (0x0): not a perf.data file: wrong magic"),
              std::string::npos)
        << bad.error().message;

    // A capture killed before perf wrote the data size: the size is recovered by scanning.
    FileHeader h;
    std::memcpy(&h, o.bytes.data(), sizeof h);
    std::vector<uint8_t> killed(o.bytes.begin(), o.bytes.begin() + h.data.offset + h.data.size);
    FileHeader x = h;
    x.data.size = 0;
    std::memcpy(killed.data(), &x, sizeof x);
    auto r = PerfDataReader::fromBytes(killed, o.name);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->dataSizeRecovered());
    EXPECT_EQ(r->dataSize(), h.data.size);
    EXPECT_FALSE(r->hasErrors());
    bool said = false;
    for (auto& i : r->issues())
        said = said || i.cause.find("data size recovered by scanning") != std::string::npos;
    EXPECT_TRUE(said);
    EXPECT_EQ(readerRecordList(*r, false), o.records);
}

TEST(ReaderCorruption, RandomByteFlips) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_FALSE(shared().empty());
    std::mt19937_64 rng(20240521);
    for (const Original& o : shared()) {
        for (int iter = 0; iter < 300; ++iter) {
            auto b = o.bytes;
            const int flips = 1 + int(rng() % 8);
            for (int k = 0; k < flips; ++k) {
                // Bias towards the header, attrs and record headers, where damage matters most.
                const size_t at = rng() % 2 ? rng() % std::min<size_t>(b.size(), 4096) : rng() % b.size();
                b[at] = uint8_t(rng());
            }
            auto r = PerfDataReader::fromBytes(std::move(b), o.name);
            if (!r.ok()) continue;
            expectIssuesNameFileAndOffset(*r, o.name);
            size_t n = 0;
            (void)r->forEachRecord([&](const PerfRecord& rec) {
                EXPECT_EQ(rec.bytes.size(), rec.header.size);
                return ++n, true;
            });
            EXPECT_EQ(n, r->summary().records);
        }
    }
}
