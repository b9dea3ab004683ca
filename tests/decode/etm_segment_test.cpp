// SPDX-License-Identifier: GPL-3.0-or-later
// CoreSight decode cut at sync points (etm/EtmSyncIndex, etm/EtmSession):
// a big AUX buffer, made of many copies of simpleperf's perf_etm.data buffer
// (each copy starts with an A-sync), written as one AUXTRACE buffer (AUX
// records scaled to it), frame formatted and raw (EtmRawPerfData.h). The index
// finds every copy's A-sync; decoded whole (one segment) and cut at every sync
// point (tiny segmentBytes) it gives the same ranges, in the same order, on
// several threads.
// A buffer several trace IDs share (the OpenCSD snapshots' ETB buffers, written
// as a perf.data by tools/etmsnap) is decoded ID by ID and cut at each ID's
// own sync points: the ranges per trace ID are the snapshot decode's (the one
// the golden tests hold against trc_pkt_lister) times the copies, whole or cut.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "EtmRawPerfData.h"
#include "EtmSnapPerfData.h"
#include "TestData.h"
#include "TestSupport.h"
#include "etm/EtmSession.h"
#include "etm/EtmSnapshotDecode.h"
#include "etm/EtmSyncIndex.h"
#include "perfdata/PerfDataFormat.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope {
namespace {

namespace fs = std::filesystem;
using etm::EtmRange;
using etm::EtmSession;
using etm::EtmSessionOptions;
using test_support::testDataPath;

constexpr unsigned kCopies = 400;

// `in` with its one AUXTRACE buffer repeated `copies` times (AUX records' offsets
// and sizes multiplied to cover it), every other record and feature as it is.
Expected<void> writeRepeated(const std::string& in, const std::string& out, unsigned copies) {
    auto reader = PerfDataReader::open(in);
    if (!reader) return reader.error();
    const PerfDataReader& r = *reader;
    if (r.summary().auxtrace.size() != 1) return makeError(in + ": not one AUXTRACE buffer");
    std::vector<PerfDataEventAttr> attrs;
    for (const PerfAttr& a : r.attrs())
        attrs.push_back({a.name, a.attr, a.ids});
    auto writer = PerfDataWriter::create(out, std::move(attrs));
    if (!writer) return writer.error();
    PerfDataWriter& w = **writer;
    Expected<void> status;
    auto walked = r.forEachRecord([&](const PerfRecord& rec) {
        const uint32_t type = rec.header.type;
        const uint8_t* body = rec.bytes.data() + sizeof(perf_event_header);
        if (type == perfdata::kRecordAuxtraceInfo) {
            perfdata::AuxtraceInfoRecordHead head{};
            std::memcpy(&head, body, sizeof head);
            std::vector<uint64_t> priv((rec.bytes.size() - sizeof(perf_event_header) - sizeof head) / 8);
            std::memcpy(priv.data(), body + sizeof head, priv.size() * 8);
            status = w.writeAuxtraceInfo(head.type, priv);
        } else if (type == perfdata::kRecordAuxtrace) {
            perfdata::AuxtraceRecord head{};
            std::memcpy(&head, body, sizeof head);
            const auto& b = r.summary().auxtrace[0];
            const std::span<const uint8_t> bytes = r.fileBytes(b.dataOffset, b.size);
            std::vector<uint8_t> big;
            for (unsigned i = 0; i < copies; ++i)
                big.insert(big.end(), bytes.begin(), bytes.end());
            head.offset *= copies;
            status = w.writeAuxtrace(head, big);
        } else if (type == PERF_RECORD_AUX) {
            std::vector<uint8_t> copy(rec.bytes.begin(), rec.bytes.end());
            uint64_t aux[2];
            std::memcpy(aux, copy.data() + sizeof(perf_event_header), sizeof aux);
            aux[0] *= copies, aux[1] *= copies;
            std::memcpy(copy.data() + sizeof(perf_event_header), aux, sizeof aux);
            status = w.writeRecord(copy);
        } else {
            status = w.writeRecord(rec.bytes);
        }
        return status.ok();
    });
    if (!walked) return walked.error();
    if (!status) return status.error();
    const perfdata::FileHeader& h = r.header();
    uint64_t table = h.data.offset + h.data.size;
    for (unsigned bit = 0; bit < 256; ++bit) {
        if (!((h.features[bit / 64] >> (bit % 64)) & 1)) continue;
        perfdata::FileSection sec{};
        std::memcpy(&sec, r.fileBytes(table, sizeof sec).data(), sizeof sec);
        table += sizeof sec;
        if (bit == perfdata::kFeatAuxtrace) continue;
        const auto feature = r.fileBytes(sec.offset, sec.size);
        w.setFeature(bit, std::vector<uint8_t>(feature.begin(), feature.end()));
    }
    return w.finish();
}

using RangeKey = std::tuple<int, uint8_t, uint64_t, uint64_t, uint32_t, etm::EtmIsa, etm::EtmBranch>;

struct Decoded {
    std::vector<RangeKey> ranges;
    DecodeStats rangeStats;
    DecodedSpans spans;
    size_t segments = 0;
};

Decoded decode(const PerfDataReader& file, uint64_t segmentBytes, unsigned threads) {
    EtmSessionOptions options;
    options.images.symfs = testDataPath("coresight/simpleperf-etm/symfs");
    options.segmentBytes = segmentBytes;
    auto session = EtmSession::open(file, options);
    EXPECT_TRUE(session) << session.error().message;
    Decoded d;
    if (!session) return d;
    d.segments = (*session)->segments().size();
    d.rangeStats = (*session)->forEachRange(std::nullopt, [&](const EtmRange& r) {
        d.ranges.emplace_back(r.cpu, r.traceId, r.start, r.last, r.instructions, r.isa, r.branch);
    });
    d.spans = (*session)->decodeSpans(DecodeWindow{}, threads);
    return d;
}

class EtmSegments : public ::testing::Test {
protected:
    void SetUp() override {
        AUXSCOPE_NEED_TEST_DATA();
        dir_ = fs::temp_directory_path() / ("auxscope-etm-seg-" + std::to_string(getpid()));
        fs::create_directories(dir_);
        formatted_ = (dir_ / "repeated.data").string();
        raw_ = (dir_ / "repeated-raw.data").string();
        auto w = writeRepeated(testDataPath("coresight/simpleperf-etm/perf_etm.data"), formatted_, kCopies);
        ASSERT_TRUE(w) << w.error().message;
        auto raw = etmtest::writeRawEtmCopy(formatted_, raw_);
        ASSERT_TRUE(raw) << raw.error().message;
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    void wholeEqualsSegmented(const std::string& path, const char* what) {
        auto file = PerfDataReader::open(path);
        ASSERT_TRUE(file) << file.error().message;
        const Decoded whole = decode(*file, uint64_t(1) << 40, 1);
        const Decoded cut = decode(*file, 1, 4);
        std::printf("%s: whole %zu segment(s), %zu ranges, %" PRIu64
                    " instructions; cut at every sync point: %zu segments (%" PRIu64
                    " decoded on the pool), %zu ranges, %" PRIu64 " instructions\n",
                    what, whole.segments, whole.ranges.size(), whole.rangeStats.instructions, cut.segments,
                    cut.spans.stats.segments, cut.ranges.size(), cut.rangeStats.instructions);
        EXPECT_EQ(whole.segments, 1u);
        EXPECT_GE(cut.segments, kCopies);
        EXPECT_GT(cut.spans.stats.segments, 1u);
        EXPECT_EQ(cut.spans.decodedNow, cut.segments);
        ASSERT_GE(whole.ranges.size(), size_t(kCopies) * 200);
        ASSERT_EQ(whole.ranges.size(), cut.ranges.size());
        for (size_t i = 0; i < whole.ranges.size(); ++i)
            ASSERT_EQ(whole.ranges[i], cut.ranges[i]) << "range " << i;
        EXPECT_EQ(whole.rangeStats.instructions, cut.rangeStats.instructions);
        EXPECT_EQ(whole.spans.stats.instructions, cut.spans.stats.instructions);
        EXPECT_EQ(whole.spans.stats.blocks, cut.spans.stats.blocks);
        EXPECT_EQ(whole.rangeStats.decodeErrors, cut.rangeStats.decodeErrors);
    }
    fs::path dir_;
    std::string formatted_, raw_;
};

// The A-syncs of a file's sync index (all clean), and its cut points.
std::pair<uint64_t, uint64_t> countSyncs(const std::string& path, size_t* segments = nullptr) {
    auto file = PerfDataReader::open(path);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return {};
    auto session = EtmSession::open(*file);
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return {};
    const auto& cpus = (*session)->trace().cpus();
    uint64_t syncs = 0, cuts = 0;
    for (size_t ring = 0; ring < cpus.size(); ++ring) {
        const etm::EtmSyncIndex& index = (*session)->syncIndex(ring);
        for (const auto& [id, n] : index.syncsById()) {
            std::printf("%s: cpu %d trace ID 0x%x: %" PRIu64 " A-syncs, %" PRIu64 " cut points\n",
                        fs::path(path).filename().c_str(), cpus[ring].stream.cpu, unsigned(id), n,
                        index.cutCount());
            syncs += n;
        }
        cuts += index.cutCount();
        for (const etm::EtmBufferSyncs& b : index.buffers)
            for (const auto& [id, points] : b.byId)
                for (const etm::EtmSyncPoint& p : points) {
                    EXPECT_TRUE(p.clean) << path << ": offset " << p.offset;
                    EXPECT_GT(p.time, 0u) << path << ": offset " << p.offset;
                }
    }
    if (segments) *segments = (*session)->segments().size();
    return {syncs, cuts};
}

TEST_F(EtmSegments, SyncIndexFindsEveryCopysAsyncs) {
    const auto [one, oneCuts] = countSyncs(testDataPath("coresight/simpleperf-etm/perf_etm.data"));
    ASSERT_GT(one, 0u);
    EXPECT_EQ(oneCuts, one - 1);  // the first A-sync starts the buffer
    size_t segments = 0;
    const auto [formatted, formattedCuts] = countSyncs(formatted_, &segments);
    EXPECT_EQ(formatted, kCopies * one);
    EXPECT_EQ(formattedCuts, formatted - 1);
    EXPECT_EQ(segments, 1u);  // default segmentBytes (1 MiB): the whole buffer is one segment
    const auto [raw, rawCuts] = countSyncs(raw_);
    EXPECT_EQ(raw, formatted);
    EXPECT_EQ(rawCuts, raw - 1);
}

TEST_F(EtmSegments, FormattedWholeAndCutGiveTheSameRanges) {
    wholeEqualsSegmented(formatted_, "frame formatted");
}

TEST_F(EtmSegments, RawWholeAndCutGiveTheSameRanges) {
    wholeEqualsSegmented(raw_, "raw");
}

// The ranges of a snapshot's decode (EtmSnapshotDecode's "ranges" lines), per trace ID, counted.
std::map<std::tuple<uint8_t, uint64_t, uint64_t, uint32_t>, uint64_t> snapshotRanges(const std::string& dir) {
    std::ostringstream out;
    auto summary = etm::decodeSnapshot(dir, etm::EtmOutputFormat::Ranges, out);
    EXPECT_TRUE(summary) << summary.error().message;
    std::map<std::tuple<uint8_t, uint64_t, uint64_t, uint32_t>, uint64_t> ranges;
    std::istringstream in(out.str());
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        unsigned id = 0;
        unsigned long long start = 0, last = 0;
        unsigned n = 0;
        if (std::sscanf(line.c_str(), "0x%x 0x%llx 0x%llx %u", &id, &start, &last, &n) == 4)
            ++ranges[{uint8_t(id), start, last, n}];
    }
    return ranges;
}

class EtmSharedSink : public ::testing::TestWithParam<const char*> {};

TEST_P(EtmSharedSink, DecodedPerTraceIdAndCutAtEachIdsSyncPoints) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string snap = testDataPath(std::string("coresight/opencsd-snapshots/") + GetParam());
    const test_support::TempDir tmp("etm-shared");
    const std::filesystem::path& dir = tmp.path;
    constexpr unsigned kShared = 3;
    etmsnap::SnapPerfDataOptions o;
    o.copies = kShared;
    const std::string path = (dir / "shared.data").string();
    auto trace = etmsnap::snapshotToPerfData(snap, path, o);
    ASSERT_TRUE(trace) << trace.error().message;

    const auto expected = snapshotRanges(snap);
    std::map<uint8_t, uint64_t> expectedPerId;
    for (const auto& [key, n] : expected)
        expectedPerId[std::get<0>(key)] += n * kShared;
    ASSERT_GT(expectedPerId.size(), 1u) << GetParam() << ": not a shared buffer";

    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    for (const uint64_t segmentBytes : {uint64_t(1) << 40, uint64_t(1)}) {
        EtmSessionOptions options;
        options.segmentBytes = segmentBytes;
        auto session = EtmSession::open(*file, options);
        ASSERT_TRUE(session) << session.error().message;
        const etm::EtmCpuTrace& ring = (*session)->trace().cpus().at(0);
        std::map<int, size_t> segmentsPerId;
        for (const EtmSession::Segment& seg : (*session)->segments()) {
            ++segmentsPerId[seg.traceId];
            ASSERT_GE(seg.traceId, 0) << "a shared ring's segment decodes one trace ID";
            EXPECT_EQ(seg.cpu, ring.cpuOfTraceId(uint8_t(seg.traceId)));  // the ID's own CPU
        }
        std::map<std::tuple<uint8_t, uint64_t, uint64_t, uint32_t>, uint64_t> got;
        std::map<uint8_t, uint64_t> gotPerId;
        const DecodeStats rs = (*session)->forEachRange(std::nullopt, [&](const EtmRange& r) {
            ++got[{r.traceId, r.start, r.last, r.instructions}];
            ++gotPerId[r.traceId];
        });
        const DecodedSpans spans = (*session)->decodeSpans(DecodeWindow{}, 4);
        std::printf("%s x%u, segmentBytes %" PRIu64 ": %zu segments over %zu trace IDs, ranges per ID:",
                    GetParam(), kShared, segmentBytes, (*session)->segments().size(), segmentsPerId.size());
        for (const auto& [id, n] : gotPerId)
            std::printf(" 0x%x %" PRIu64, unsigned(id), n);
        std::printf(" (snapshot decode x%u:", kShared);
        for (const auto& [id, n] : expectedPerId)
            std::printf(" 0x%x %" PRIu64, unsigned(id), n);
        std::printf(")\n");
        // Every ID with trace decodes (IDs with no sync point at all have no ranges in either).
        for (const auto& [id, n] : expectedPerId)
            EXPECT_EQ(gotPerId[id], n) << "trace ID " << unsigned(id);
        ASSERT_EQ(got.size(), expected.size());
        for (const auto& [key, n] : expected)
            EXPECT_EQ(got[key], n * kShared);
        EXPECT_EQ(spans.stats.instructions, rs.instructions);
        // The shared bytes (the copies and their barriers) counted once, not per ID.
        EXPECT_EQ(spans.stats.traceBytes, (*session)->trace().cpus().at(0).stream.bytes.size());
        size_t most = 0;
        for (const auto& [id, n] : segmentsPerId)
            most = std::max(most, n);
        EXPECT_GT(segmentsPerId.size(), 1u);  // the IDs decode apart
        EXPECT_GE(spans.stats.segments, segmentsPerId.size());
        if (segmentBytes == 1 && std::string(GetParam()) == "juno_r1_1") {
            EXPECT_GT(most, size_t(kShared));  // ETMv4: cut inside the shared buffers
        } else if (segmentBytes == 1) {
            EXPECT_EQ(most, size_t(kShared));  // ETMv3/PTM (TC2): cut at buffers only (see EtmSession)
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Snapshots, EtmSharedSink, ::testing::Values("juno_r1_1", "TC2"),
                         [](const auto& info) { return std::string(info.param); });

// The live decoder's index (EtmSyncScanner, fed as the drain thread hands over
// AUX data, in transfers of any size) finds the sync points the index built on
// open finds: every A-sync of every trace ID, at its frame.
TEST(EtmSyncScannerTest, FindsWhatTheIndexFindsInTransfersOfAnySize) {
    AUXSCOPE_NEED_TEST_DATA();
    for (const char* name : {"juno_r1_1", "TC2", "bugfix-exact-match"}) {
        const std::string snap = testDataPath(std::string("coresight/opencsd-snapshots/") + name);
        const test_support::TempDir tmp("etm-scan");
        const std::filesystem::path& dir = tmp.path;
        etmsnap::SnapPerfDataOptions o;
        o.copies = 2;
        const std::string path = (dir / "two.data").string();
        auto trace = etmsnap::snapshotToPerfData(snap, path, o);
        ASSERT_TRUE(trace) << trace.error().message;
        auto file = PerfDataReader::open(path);
        ASSERT_TRUE(file) << file.error().message;
        auto session = EtmSession::open(*file);
        ASSERT_TRUE(session) << session.error().message;
        std::set<uint64_t> expected;
        for (const etm::EtmBufferSyncs& b : (*session)->syncIndex(0).buffers)
            for (const auto& [id, points] : b.byId)
                for (const etm::EtmSyncPoint& p : points) {
                    expected.insert(p.offset);
                }
        ASSERT_FALSE(expected.empty());
        const etm::EtmCpuTrace& ring = (*session)->trace().cpus().at(0);
        // The ring's bytes as the drain thread would hand them over (the copies
        // back to back, the second after its barrier).
        std::vector<uint8_t> scratch;
        const std::span<const uint8_t> stream = ring.stream.bytes.view(0, ring.stream.bytes.size(), scratch);
        for (const unsigned seed : {1u, 2u, 3u}) {
            etm::EtmSyncScanner scanner(ring.sources, etm::EtmInput::Formatted);
            std::mt19937 rng(seed);
            std::vector<etm::EtmSyncScanner::Point> found;
            for (size_t at = 0; at < stream.size();) {
                const size_t n = std::min<size_t>(stream.size() - at, 1 + rng() % (seed == 1 ? 7 : 3000));
                scanner.feed(at, stream.subspan(at, n), found);
                at += n;
            }
            std::set<uint64_t> got;
            size_t unclean = 0;
            uint64_t farthest = 0;
            for (const etm::EtmSyncScanner::Point& p : found) {
                got.insert(p.offset);
                // The way in: the A-sync's frame, or an earlier one where a fresh
                // deformatter learns the ID its first byte belongs to (LiveDecode's
                // CoreSightSharedSinkDecodesWhileReplaying shows nothing is lost).
                EXPECT_LE(p.entry, p.offset) << name;
                unclean += p.entry < p.offset;
                farthest = std::max<uint64_t>(farthest, p.offset - p.entry);
            }
            EXPECT_LE(farthest, 4096u) << name << ": ways in far before their A-syncs";
            EXPECT_EQ(got.size(), found.size()) << name << ": a sync point given twice";
            EXPECT_EQ(got, expected) << name << " seed " << seed;
            if (seed == 1)
                std::printf(
                    "%s x2: %zu sync points found on open, %zu while feeding (%zu entered at an earlier "
                    "frame, at most %" PRIu64 " bytes before)\n",
                    name, expected.size(), got.size(), unclean, farthest);
        }
    }
}

// Trace-unit timestamps become perf time through TIME_CONV: TC2's ETMv3/PTM
// trace carries TIMESTAMP packets; written with a TIME_CONV that makes them
// perf time as they are, every range after a trace ID's first timestamp takes
// the latest timestamp of its ID (the packet listing's TS values), in order,
// instead of a time interpolated between AUX records.
TEST(EtmTimestamps, TimeConvTurnsTraceTimestampsIntoPerfTime) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string snap = testDataPath("coresight/opencsd-snapshots/TC2");
    const test_support::TempDir tmp("etm-ts");
    const std::filesystem::path& dir = tmp.path;
    // The timestamps, per trace ID, from the snapshot's packet listing ("TS=0x...").
    std::ostringstream listing;
    ASSERT_TRUE(etm::decodeSnapshot(snap, etm::EtmOutputFormat::Packets, listing));
    std::map<uint8_t, std::set<uint64_t>> stamps;
    uint64_t first = UINT64_MAX, last = 0;
    {
        std::istringstream in(listing.str());
        std::string line;
        while (std::getline(in, line)) {
            const size_t ts = line.find("TS=0x"), id = line.find("ID:");
            if (ts == std::string::npos || id == std::string::npos) continue;
            const uint64_t v = std::strtoull(line.c_str() + ts + 3, nullptr, 16);
            stamps[uint8_t(std::strtoul(line.c_str() + id + 3, nullptr, 16))].insert(v);
            first = std::min(first, v);
            last = std::max(last, v);
        }
    }
    ASSERT_GE(stamps.size(), 2u) << "TC2's trace IDs with timestamps";
    etmsnap::SnapPerfDataOptions o;
    o.timestampsArePerfTime = true;
    o.startTime = first - 1000;        // the recording starts before the first timestamp
    o.bufferNs = last - first + 2000;  // and its AUX record comes after the last
    const std::string path = (dir / "tc2.data").string();
    auto trace = etmsnap::snapshotToPerfData(snap, path, o);
    ASSERT_TRUE(trace) << trace.error().message;
    auto file = PerfDataReader::open(path);
    ASSERT_TRUE(file) << file.error().message;
    auto session = EtmSession::open(*file);
    ASSERT_TRUE(session) << session.error().message;
    ASSERT_TRUE((*session)->trace().timestamps()) << "TRC timestamps + TIME_CONV";

    std::map<uint8_t, uint64_t> ranges, stamped, lastTime;
    std::map<uint8_t, bool> sawStamp;
    (*session)->forEachRange(std::nullopt, [&](const EtmRange& r) {
        ++ranges[r.traceId];
        const auto& ids = stamps[r.traceId];
        const bool isStamp = ids.count(r.time) > 0;
        if (isStamp) sawStamp[r.traceId] = true;
        if (!sawStamp[r.traceId]) return;
        // After the first: always a timestamp of this ID, never going back.
        EXPECT_TRUE(isStamp) << "trace ID " << unsigned(r.traceId) << " range at " << r.time;
        EXPECT_GE(r.time, lastTime[r.traceId]);
        lastTime[r.traceId] = r.time;
        ++stamped[r.traceId];
    });
    for (const auto& [id, ts] : stamps) {
        std::printf("TC2 trace ID 0x%x: %zu timestamps, %" PRIu64 " ranges, %" PRIu64
                    " timed by them (perf time %" PRIu64 "..%" PRIu64 ")\n",
                    unsigned(id), ts.size(), ranges[id], stamped[id], *ts.begin(), *ts.rbegin());
        if (ranges[id]) {
            EXPECT_GT(stamped[id], ranges[id] / 2) << "trace ID " << unsigned(id);
        }
    }
}

}  // namespace
}  // namespace auxscope
