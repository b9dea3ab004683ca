// SPDX-License-Identifier: GPL-3.0-or-later
// AUX bytes missing from the file (issue 16): perf.data files written here with
// PerfDataWriter whose PERF_RECORD_AUX records announce more AUX data than their
// AUXTRACE records hold, with the holes at the start, in the middle and at the
// end of an AUX area, per CPU and per thread, plain, compressed (-z) and as a
// pipe stream, beside snapshot (OVERWRITE) areas where absent bytes are no loss,
// the kernel's own TRUNCATED flags, and AUXTRACE records that overlap or go
// backwards. The reader's accounting is checked to the byte and to the record,
// `auxscope info` (text and JSON) must tell every gap, and the Intel PT decode
// of the shared Skylake trace with holes cut out of its AUXTRACE data must show
// a lost-AUX gap naming each hole's size and AUX offset.
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "ReaderTestSupport.h"
#include "TestData.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "pt/PtSpanDecoder.h"

namespace auxscope {
namespace {

using namespace perfdata;

constexpr uint64_t kSt = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
constexpr uint32_t kPtType = 8;  // the AUX PMU's type in these files
constexpr int32_t kPid = 4000;

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = uint8_t(seed + i * 7);
    return v;
}

// A perf.data with one AUX event (its instance on cpu N has id N + 1).
class AuxFile {
public:
    explicit AuxFile(const std::string& path, bool compress = false) : path_(path) {
        perf_event_attr a{};
        a.type = kPtType;
        a.size = sizeof a;
        a.sample_type = kSt;
        a.sample_id_all = 1;
        PerfDataEventAttr e{"intel_pt//", a, {1, 2, 3, 4, 5, 6, 7, 8}};
        PerfDataWriterOptions o;
        o.compress = compress;
        auto w = PerfDataWriter::create(path, {e}, o);
        EXPECT_TRUE(w) << (w ? "" : w.error().message);
        if (w) w_ = std::move(*w);
    }
    // PERF_RECORD_AUX as the kernel writes it into the data ring (compressed under -z).
    void aux(uint32_t cpu, int32_t tid, uint64_t offset, uint64_t size, uint64_t flags = 0) {
        RecordBuilder b(PERF_RECORD_AUX);
        b.u64(offset).u64(size).u64(flags).sampleId({kSt, cpu + 1, cpu}, kPid, tid, time_ += 1000);
        EXPECT_TRUE(w_->writeStreamRecord(b.finish()));
    }
    // PERF_RECORD_AUXTRACE with `bytes` of AUX data at `offset` (cpu -1: a per-thread area).
    void auxtrace(int32_t cpu, int32_t tid, uint64_t offset, const std::vector<uint8_t>& bytes) {
        AuxtraceRecord head{};
        head.offset = offset;
        head.reference = ++refs_;
        head.idx = cpu >= 0 ? uint32_t(cpu) : uint32_t(tid - 500);
        head.tid = uint32_t(tid);
        head.cpu = uint32_t(cpu);
        EXPECT_TRUE(w_->writeAuxtrace(head, bytes));
    }
    void auxtrace(int32_t cpu, int32_t tid, uint64_t offset, size_t n) {
        auxtrace(cpu, tid, offset, pattern(n, uint8_t(offset)));
    }
    void record(std::span<const uint8_t> bytes) { EXPECT_TRUE(w_->writeRecord(bytes)); }
    std::string finish() {
        EXPECT_TRUE(w_->finish());
        return path_;
    }

private:
    std::string path_;
    std::unique_ptr<PerfDataWriter> w_;
    uint64_t time_ = 1000000, refs_ = 0;
};

PerfDataReader open(const std::string& path) {
    auto r = PerfDataReader::open(path);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return std::move(r).value();
}

std::string issuesText(const PerfDataReader& r) {
    std::string s;
    for (auto& i : r.issues())
        s += (i.error ? "error: " : "warning: ") + i.message + "\n";
    return s;
}

const PerfAuxArea* area(const PerfDataReader& r, int64_t cpu, int32_t tid = -1) {
    for (const PerfAuxArea& a : r.summary().auxAreas)
        if (a.cpu == cpu && a.tid == tid) return &a;
    return nullptr;
}

// The file offsets of the AUX records and AUXTRACE records of an area, in file order.
std::vector<uint64_t> auxOffsets(const PerfDataReader& r, int64_t cpu) {
    std::vector<uint64_t> v;
    for (const PerfAuxRecord& a : r.summary().aux)
        if (a.cpu == cpu) v.push_back(a.fileOffset);
    return v;
}
std::vector<uint64_t> auxtraceOffsets(const PerfDataReader& r, int64_t cpu, int32_t tid = -1) {
    std::vector<uint64_t> v;
    for (const PerfAuxtraceBuffer& b : r.summary().auxtrace)
        if (b.cpu == cpu && (tid < 0 || int32_t(b.tid) == tid)) v.push_back(b.fileOffset);
    return v;
}

struct GapWant {
    uint64_t auxOffset, size;
    bool afterAuxtrace;
    uint64_t fileOffset;
};

void expectGaps(const PerfAuxArea& a, const std::vector<GapWant>& want) {
    ASSERT_EQ(a.gaps.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        SCOPED_TRACE("gap " + std::to_string(i));
        const PerfAuxGap& g = a.gaps[i];
        EXPECT_EQ(g.kind, PerfAuxGapKind::Missing);
        EXPECT_EQ(g.auxOffset, want[i].auxOffset);
        EXPECT_EQ(g.size, want[i].size);
        EXPECT_EQ(g.afterAuxtrace, want[i].afterAuxtrace);
        EXPECT_EQ(g.fileOffset, want[i].fileOffset);
    }
}

// cpu 0: ten AUX records of 4096 bytes announce [0, 40960); the AUXTRACE
// records hold [4096, 12288) and [16384, 32768): 4096 bytes missing at the
// start, 4096 in the middle, 8192 at the end. cpu 1: [0, 8192) announced and
// held. cpu 2: odd sizes, [0, 1004) [1004, 2010) [2010, 3000) announced, the
// first and last held (each padded to 8 bytes in the file), the middle missing.
void writeGappedFile(AuxFile& f) {
    for (uint64_t off = 0; off < 40960; off += 4096)
        f.aux(0, kPid, off, 4096);
    f.aux(1, kPid, 0, 4096);
    f.aux(1, kPid, 4096, 4096);
    f.aux(2, kPid, 0, 1004);
    f.aux(2, kPid, 1004, 1006);
    f.aux(2, kPid, 2010, 990);
    f.auxtrace(0, -1, 4096, 8192);
    f.auxtrace(1, -1, 0, 8192);
    f.auxtrace(0, -1, 16384, 16384);
    f.auxtrace(2, -1, 0, 1004);
    f.auxtrace(2, -1, 2010, 990);
}

void expectGappedAccounting(const PerfDataReader& r) {
    const PerfDataSummary& s = r.summary();
    ASSERT_EQ(s.auxAreas.size(), 3u);
    const PerfAuxArea* cpu0 = area(r, 0);
    ASSERT_NE(cpu0, nullptr);
    EXPECT_FALSE(cpu0->snapshot);
    EXPECT_EQ(cpu0->auxRecords, 10u);
    EXPECT_EQ(cpu0->auxtraceRecords, 2u);
    EXPECT_EQ(cpu0->announcedBytes, 40960u);
    EXPECT_EQ(cpu0->presentBytes, 24576u);
    EXPECT_EQ(cpu0->missingBytes, 16384u);
    const auto aux0 = auxOffsets(r, 0);
    const auto trace0 = auxtraceOffsets(r, 0);
    ASSERT_EQ(aux0.size(), 10u);
    ASSERT_EQ(trace0.size(), 2u);
    expectGaps(*cpu0,
               {{0, 4096, false, aux0[0]}, {12288, 4096, true, trace0[0]}, {32768, 8192, true, trace0[1]}});
    // The AUX record announcing each gap's first byte, whatever the gap is told after.
    EXPECT_EQ(cpu0->gaps[1].auxRecordOffset, aux0[3]);
    EXPECT_EQ(cpu0->gaps[2].auxRecordOffset, aux0[8]);
    EXPECT_TRUE(cpu0->damage.empty());

    const PerfAuxArea* cpu1 = area(r, 1);
    ASSERT_NE(cpu1, nullptr);
    EXPECT_EQ(cpu1->announcedBytes, 8192u);
    EXPECT_EQ(cpu1->presentBytes, 8192u);
    EXPECT_EQ(cpu1->missingBytes, 0u);
    EXPECT_TRUE(cpu1->gaps.empty());

    // Padding: the first buffer's 1008 bytes end at the AUX record boundary 1004,
    // the last one's 992 at 3000.
    const PerfAuxArea* cpu2 = area(r, 2);
    ASSERT_NE(cpu2, nullptr);
    EXPECT_EQ(cpu2->announcedBytes, 3000u);
    EXPECT_EQ(cpu2->presentBytes, 1994u);
    EXPECT_EQ(cpu2->missingBytes, 1006u);
    expectGaps(*cpu2, {{1004, 1006, true, auxtraceOffsets(r, 2)[0]}});

    EXPECT_EQ(s.auxAnnouncedBytes, 40960u + 8192u + 3000u);
    EXPECT_EQ(s.auxMissingBytes, 16384u + 1006u);

    // One error per area with gaps, at the first gap's record.
    ASSERT_TRUE(r.hasErrors());
    std::vector<const PerfDataIssue*> aux;
    for (const PerfDataIssue& i : r.issues())
        if (i.cause.find("announced AUX bytes are missing from the file") != std::string::npos)
            aux.push_back(&i);
    ASSERT_EQ(aux.size(), 2u) << issuesText(r);
    EXPECT_TRUE(aux[0]->error);
    EXPECT_EQ(aux[0]->offset, aux0[0]);
    EXPECT_EQ(
        aux[0]->cause,
        "cpu 0: 16384 of 40960 announced AUX bytes are missing from the file in 3 gaps (first: 4096 bytes at "
        "AUX offset 0x0, announced by the AUX record here before any AUXTRACE record of cpu 0): AUX records "
        "announce them, no AUXTRACE record holds them");
    EXPECT_EQ(aux[1]->offset, auxtraceOffsets(r, 2)[0]);
    EXPECT_EQ(
        aux[1]->cause.rfind("cpu 2: 1006 of 3000 announced AUX bytes are missing from the file in 1 gap "
                            "(first: 1006 bytes at AUX offset 0x3ec, after the AUXTRACE record here)",
                            0),
        0u)
        << aux[1]->cause;
    EXPECT_EQ(r.issues().size(), 2u) << issuesText(r);
}

TEST(ReaderAuxGaps, PerCpuGapsAtStartMiddleAndEnd) {
    test::TempDir dir;
    AuxFile f(dir.file("gaps.data"));
    writeGappedFile(f);
    auto r = open(f.finish());
    expectGappedAccounting(r);
}

TEST(ReaderAuxGaps, CompressedFileCountsTheSame) {
    test::TempDir dir;
    AuxFile f(dir.file("gaps-z.data"), true);
    writeGappedFile(f);
    auto r = open(f.finish());
    ASSERT_GT(r.summary().compressedRecords, 0u) << "the AUX records are in COMPRESSED records";
    expectGappedAccounting(r);
}

// The same records as a pipe stream (perf record -o -): magic, size 16, ATTR
// records, then the data records and AUXTRACE payloads as they are.
std::vector<uint8_t> asPipe(const PerfDataReader& file) {
    std::vector<uint8_t> out(16);
    std::memcpy(out.data(), "PERFILE2", 8);
    const uint64_t size = 16;
    std::memcpy(out.data() + 8, &size, 8);
    for (const PerfAttr& a : file.attrs()) {
        RecordBuilder b(kRecordHeaderAttr);
        b.raw(&a.attr, sizeof a.attr);
        for (uint64_t id : a.ids)
            b.u64(id);
        auto rec = b.finish();
        out.insert(out.end(), rec.begin(), rec.end());
    }
    auto walked = file.forEachRecord([&](const PerfRecord& r) {
        if (r.header.type == kRecordAuxtraceInfo || r.compressed) return true;
        out.insert(out.end(), r.bytes.begin(), r.bytes.end());
        out.insert(out.end(), r.payload.begin(), r.payload.end());
        return true;
    });
    EXPECT_TRUE(walked);
    return out;
}

TEST(ReaderAuxGaps, PipeModeCountsTheSame) {
    test::TempDir dir;
    AuxFile f(dir.file("gaps.data"));
    writeGappedFile(f);
    auto file = open(f.finish());
    test::writeFileBytes(dir.file("gaps.pipe"), asPipe(file));
    auto r = open(dir.file("gaps.pipe"));
    EXPECT_EQ(r.mode(), PerfDataMode::Pipe);
    expectGappedAccounting(r);
}

TEST(ReaderAuxGaps, ContiguousPaddedBuffersAreComplete) {
    test::TempDir dir;
    AuxFile f(dir.file("whole.data"));
    f.aux(0, kPid, 0, 1004);
    f.aux(0, kPid, 1004, 1006);
    f.aux(0, kPid, 2010, 4000, kAuxFlagTruncated);
    f.auxtrace(0, -1, 0, 1004);     // 1008 bytes in the file: 4 of padding
    f.auxtrace(0, -1, 1004, 1006);  // starts at the unpadded end
    f.auxtrace(0, -1, 2010, 4000);
    auto r = open(f.finish());
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    const PerfAuxArea* a = area(r, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->announcedBytes, 6010u);
    EXPECT_EQ(a->presentBytes, 6010u);
    EXPECT_EQ(a->missingBytes, 0u);
    EXPECT_TRUE(a->gaps.empty());
    EXPECT_TRUE(a->damage.empty());
    // The kernel's loss is told apart: TRUNCATED, no missing bytes.
    EXPECT_EQ(a->truncated, 1u);
    EXPECT_EQ(r.summary().auxMissingBytes, 0u);
}

TEST(ReaderAuxGaps, KernelTruncationAndMissingBytesAreDistinct) {
    test::TempDir dir;
    AuxFile f(dir.file("both.data"));
    f.aux(0, kPid, 0, 4096, kAuxFlagTruncated);
    f.aux(0, kPid, 4096, 4096, kAuxFlagPartial);
    f.aux(0, kPid, 8192, 4096, kAuxFlagCollision);
    f.auxtrace(0, -1, 0, 4096);
    f.auxtrace(0, -1, 8192, 4096);
    auto r = open(f.finish());
    const PerfAuxArea* a = area(r, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->truncated, 1u);
    EXPECT_EQ(a->partial, 1u);
    EXPECT_EQ(a->collision, 1u);
    EXPECT_EQ(a->missingBytes, 4096u);
    expectGaps(*a, {{4096, 4096, true, auxtraceOffsets(r, 0)[0]}});
}

TEST(ReaderAuxGaps, PerThreadAreasGoByTheThread) {
    test::TempDir dir;
    AuxFile f(dir.file("per-thread.data"));
    // Thread 500 ran on cpus 0..3 and announced [0, 16384); the file holds [0, 8192).
    for (uint32_t k = 0; k < 4; ++k)
        f.aux(k, 500, k * 4096, 4096);
    // Thread 501: [0, 6000) announced and held, [6000, 7000) announced and missing.
    f.aux(2, 501, 0, 6000);
    f.aux(3, 501, 6000, 1000);
    f.auxtrace(-1, 500, 0, 8192);
    f.auxtrace(-1, 501, 0, 6000);
    auto r = open(f.finish());
    ASSERT_EQ(r.summary().auxAreas.size(), 2u);
    const PerfAuxArea* t500 = area(r, -1, 500);
    const PerfAuxArea* t501 = area(r, -1, 501);
    ASSERT_NE(t500, nullptr);
    ASSERT_NE(t501, nullptr);
    EXPECT_EQ(perfAuxAreaName(*t500), "thread 500");
    EXPECT_EQ(t500->auxRecords, 4u);
    EXPECT_EQ(t500->announcedBytes, 16384u);
    EXPECT_EQ(t500->presentBytes, 8192u);
    expectGaps(*t500, {{8192, 8192, true, auxtraceOffsets(r, -1, 500)[0]}});
    EXPECT_EQ(t501->announcedBytes, 7000u);
    EXPECT_EQ(t501->presentBytes, 6000u);
    expectGaps(*t501, {{6000, 1000, true, auxtraceOffsets(r, -1, 501)[0]}});
    size_t errors = 0;
    for (const PerfDataIssue& i : r.issues())
        errors += i.error && i.cause.rfind("thread 50", 0) == 0;
    EXPECT_EQ(errors, 2u) << issuesText(r);
}

TEST(ReaderAuxGaps, SnapshotAreasAreNoLoss) {
    test::TempDir dir;
    AuxFile f(dir.file("snapshot.data"));
    // The hardware overwrites a 64 KiB area; two snapshots of its newest 8 KiB are saved.
    for (uint64_t off = 0; off < 4 * 65536; off += 65536)
        f.aux(0, kPid, off, 65536, kAuxFlagOverwrite);
    f.auxtrace(0, -1, 65536 - 8192, 8192);
    f.auxtrace(0, -1, 65536 - 4096, 8192);  // overlaps the one before: fine for snapshots
    f.auxtrace(0, -1, 4 * 65536 - 8192, 8192);
    auto r = open(f.finish());
    EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    const PerfAuxArea* a = area(r, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(a->snapshot);
    EXPECT_EQ(a->announcedBytes, 0u);
    EXPECT_EQ(a->missingBytes, 0u);
    EXPECT_TRUE(a->gaps.empty());
    EXPECT_TRUE(a->damage.empty());
}

TEST(ReaderAuxGaps, NoAuxtraceAtAllIsOneError) {
    test::TempDir dir;
    AuxFile f(dir.file("none.data"));
    f.aux(0, kPid, 0, 4096);
    f.aux(0, kPid, 4096, 4096);
    f.aux(3, kPid, 0, 100);
    auto r = open(f.finish());
    ASSERT_EQ(r.issues().size(), 1u) << issuesText(r);
    const auto aux0 = auxOffsets(r, 0);
    EXPECT_TRUE(r.issues()[0].error);
    EXPECT_EQ(r.issues()[0].offset, aux0[0]);
    EXPECT_EQ(
        r.issues()[0].cause,
        "AUX records announce 8292 bytes of trace (cpu 0, 3) but the file holds no AUXTRACE record: the AUX "
        "data is missing");
    const PerfAuxArea* a0 = area(r, 0);
    const PerfAuxArea* a3 = area(r, 3);
    ASSERT_NE(a0, nullptr);
    ASSERT_NE(a3, nullptr);
    EXPECT_EQ(a0->missingBytes, 8192u);
    expectGaps(*a0, {{0, 8192, false, aux0[0]}});
    expectGaps(*a3, {{0, 100, false, auxOffsets(r, 3)[0]}});
    EXPECT_EQ(r.summary().auxMissingBytes, 8292u);
}

TEST(ReaderAuxGaps, OverlappingAndBackwardBuffersAreDamage) {
    test::TempDir dir;
    AuxFile f(dir.file("damage.data"));
    f.aux(0, kPid, 0, 8192);
    f.auxtrace(0, -1, 0, 4096);
    f.auxtrace(0, -1, 2048, 6144);  // holds [2048, 4096) again
    f.auxtrace(0, -1, 1024, 1024);  // goes back
    auto r = open(f.finish());
    const PerfAuxArea* a = area(r, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->missingBytes, 0u);
    EXPECT_EQ(a->presentBytes, 8192u);
    ASSERT_EQ(a->damage.size(), 2u);
    const auto traces = auxtraceOffsets(r, 0);
    EXPECT_EQ(a->damage[0].kind, PerfAuxGapKind::Overlap);
    EXPECT_EQ(a->damage[0].auxOffset, 2048u);
    EXPECT_EQ(a->damage[0].size, 2048u);
    EXPECT_EQ(a->damage[0].fileOffset, traces[1]);
    EXPECT_EQ(a->damage[1].kind, PerfAuxGapKind::Backwards);
    EXPECT_EQ(a->damage[1].auxOffset, 1024u);
    EXPECT_EQ(a->damage[1].size, 1024u);
    EXPECT_EQ(a->damage[1].fileOffset, traces[2]);
    ASSERT_EQ(r.issues().size(), 1u) << issuesText(r);
    EXPECT_FALSE(r.issues()[0].error);
    EXPECT_EQ(r.issues()[0].offset, traces[1]);
    EXPECT_NE(r.issues()[0].cause.find(
                  "cpu 0: 2 AUXTRACE records hold AUX offsets out of order or again (3072 bytes"),
              std::string::npos)
        << r.issues()[0].cause;
}

// An AUXTRACE record inside a COMPRESSED record (perf.data from tools that
// compress AUX data too): the gap is told at the COMPRESSED record.
TEST(ReaderAuxGaps, AuxtraceInsideCompressedData) {
    test::TempDir dir;
    AuxFile f(dir.file("inner.data"));
    f.aux(0, kPid, 0, 4096);
    f.aux(0, kPid, 4096, 4096);
    // The stream: one AUXTRACE record and its payload ([0, 2048) of the area).
    std::vector<uint8_t> stream;
    {
        RecordBuilder b(kRecordAuxtrace);
        AuxtraceRecord head{2048, 0, 1, 0, uint32_t(-1), 0, 0};
        b.raw(&head, sizeof head);
        auto rec = b.finish();
        stream.assign(rec.begin(), rec.end());
        auto payload = pattern(2048, 9);
        stream.insert(stream.end(), payload.begin(), payload.end());
    }
    std::vector<uint8_t> packed(ZSTD_compressBound(stream.size()));
    packed.resize(ZSTD_compress(packed.data(), packed.size(), stream.data(), stream.size(), 3));
    ASSERT_LT(packed.size(), 60000u);
    RecordBuilder compressed(kRecordCompressed);
    compressed.raw(packed.data(), packed.size());
    f.record(compressed.finish());
    auto r = open(f.finish());
    ASSERT_EQ(r.summary().auxtrace.size(), 1u);
    ASSERT_TRUE(r.summary().auxtrace[0].compressed);
    const PerfAuxArea* a = area(r, 0);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->presentBytes, 2048u);
    expectGaps(*a, {{2048, 6144, true, r.summary().auxtrace[0].fileOffset}});
    EXPECT_TRUE(a->gaps[0].compressed);
}

// perf's and simpleperf's own files from the shared test data (../shared/data).
TEST(ReaderAuxGaps, SharedFilesFromPerfAndSimpleperf) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string data = test_support::testDataDir();
    {
        // perf 4.14, Intel PT per CPU (with the workload's tid in each AUXTRACE record): complete.
        auto r = open(data + "/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
        ASSERT_EQ(r.summary().auxAreas.size(), 2u);
        const PerfAuxArea* a = area(r, 3);
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(a->auxRecords, 9u);
        EXPECT_EQ(a->announcedBytes, 137728u);
        EXPECT_EQ(a->presentBytes, 137728u);
        EXPECT_EQ(r.summary().auxMissingBytes, 0u);
        EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    }
    {
        // simpleperf, CoreSight: TRUNCATED by the kernel, nothing missing from the file.
        auto r = open(data + "/coresight/simpleperf-etm/perf_kernel.data");
        const PerfAuxArea* a = area(r, 6);
        ASSERT_NE(a, nullptr);
        EXPECT_EQ(a->announcedBytes, 22832u);
        EXPECT_EQ(a->presentBytes, 22832u);
        EXPECT_EQ(a->truncated, 1u);
        EXPECT_EQ(r.summary().auxMissingBytes, 0u);
        EXPECT_TRUE(r.issues().empty()) << issuesText(r);
    }
    {
        // simpleperf, its AUX data missing altogether.
        auto r = open(data + "/coresight/simpleperf-etm/perf_with_missing_aux_data.data");
        const PerfAuxArea* a4 = area(r, 4);
        const PerfAuxArea* a7 = area(r, 7);
        ASSERT_NE(a4, nullptr);
        ASSERT_NE(a7, nullptr);
        expectGaps(*a4, {{0, 14000, false, 0x5300}});
        expectGaps(*a7, {{0, 1521344, false, 0xc98}});
        EXPECT_EQ(r.summary().auxMissingBytes, 1535344u);
        ASSERT_EQ(r.issues().size(), 1u) << issuesText(r);
        EXPECT_EQ(r.issues()[0].offset, 3224u);
    }
}

// ---------------------------------------------------------------------------
// auxscope info

TEST(ReaderAuxGaps, InfoTellsEveryGap) {
    test::TempDir dir;
    AuxFile f(dir.file("gaps.data"));
    writeGappedFile(f);
    const std::string path = f.finish();
    auto r = open(path);
    const auto aux0 = auxOffsets(r, 0);
    const auto trace0 = auxtraceOffsets(r, 0);

    auto text = test::runCommand(std::string(AUXSCOPE_BIN) + " info '" + path + "'");
    EXPECT_EQ(text.status, 1) << "missing AUX data is an error in the file";
    const std::string& o = text.output;
    EXPECT_EQ(o.find("none recorded"), std::string::npos) << o;
    const std::string losses = o.substr(o.find("\nlosses:\n"));
    EXPECT_NE(losses.find("  cpu 0: 16,384 of 40,960 announced AUX bytes missing from the file in 3 gaps\n"
                          "    4,096 bytes at AUX offset 0x0-0x1000: announced by the AUX record at " +
                          hex(aux0[0]) +
                          ", before any AUXTRACE record of cpu 0\n"
                          "    4,096 bytes at AUX offset 0x3000-0x4000: after the AUXTRACE record at " +
                          hex(trace0[0]) +
                          "\n"
                          "    8,192 bytes at AUX offset 0x8000-0xa000: after the AUXTRACE record at " +
                          hex(trace0[1]) + "\n"),
              std::string::npos)
        << o;
    EXPECT_NE(losses.find("  cpu 2: 1,006 of 3,000 announced AUX bytes missing from the file in 1 gap\n"),
              std::string::npos)
        << o;
    EXPECT_NE(
        o.find("  cpu 0: 40,960 bytes announced by 10 AUX records, 24,576 present in 2 AUXTRACE records, "
               "16,384 missing (40.0%) in 3 gaps\n"),
        std::string::npos)
        << o;
    EXPECT_NE(
        o.find("  cpu 1: 8,192 bytes announced by 2 AUX records, 8,192 present in 1 AUXTRACE record, none "
               "missing\n"),
        std::string::npos)
        << o;
    EXPECT_NE(o.find("problems: 2 errors, 0 warnings\n"), std::string::npos) << o;
    EXPECT_NE(o.find("error: " + path + ": offset " + std::to_string(aux0[0]) + " (" + hex(aux0[0]) +
                     "): cpu 0: 16384 of 40960 announced AUX bytes are missing"),
              std::string::npos)
        << o;

    auto json = test::runCommand(std::string(AUXSCOPE_BIN) + " info --json '" + path + "'");
    EXPECT_EQ(json.status, 1);
    const std::string& j = json.output;
    EXPECT_NE(
        j.find(
            "\"aux_announced_bytes\":52152,\"aux_missing_bytes\":17390,\"aux_areas\":[{\"cpu\":0,\"tid\":-1,"
            "\"name\":\"cpu 0\",\"snapshot\":false,\"aux_records\":10,\"announced_bytes\":40960,"
            "\"auxtrace_records\":2,\"present_bytes\":24576,\"missing_bytes\":16384,"),
        std::string::npos)
        << j;
    EXPECT_NE(j.find("\"gap_count\":3,\"gaps\":[{\"kind\":\"missing\",\"aux_offset\":0,\"size\":4096,\"file_"
                     "offset\":" +
                     std::to_string(aux0[0]) + ",\"after_auxtrace\":false"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("{\"kind\":\"missing\",\"aux_offset\":32768,\"size\":8192,\"file_offset\":" +
                     std::to_string(trace0[1]) + ",\"after_auxtrace\":true"),
              std::string::npos)
        << j;
}

TEST(ReaderAuxGaps, InfoListsTheFirstGapsAndCountsTheRest) {
    test::TempDir dir;
    AuxFile f(dir.file("many.data"));
    // 25 buffers of 1024 bytes, each followed by 1024 missing bytes.
    f.aux(5, kPid, 0, 50 * 1024);
    for (uint64_t k = 0; k < 25; ++k)
        f.auxtrace(5, -1, k * 2048, 1024);
    const std::string path = f.finish();
    auto r = open(path);
    ASSERT_EQ(area(r, 5)->gaps.size(), 25u);
    auto text = test::runCommand(std::string(AUXSCOPE_BIN) + " info '" + path + "'");
    const std::string& o = text.output;
    EXPECT_NE(o.find("  cpu 5: 25,600 of 51,200 announced AUX bytes missing from the file in 25 gaps\n"),
              std::string::npos)
        << o;
    EXPECT_NE(o.find("    1,024 bytes at AUX offset 0x4c00-0x5000: after the AUXTRACE record at"),
              std::string::npos)
        << o;                                                    // the 10th
    EXPECT_EQ(o.find("0x5400-0x5800"), std::string::npos) << o;  // the 11th is not listed
    EXPECT_NE(o.find("    ... 15 more gaps (15,360 bytes)\n"), std::string::npos) << o;
}

// ---------------------------------------------------------------------------
// Intel PT decode: the shared Skylake trace with holes cut out of cpu 3's AUXTRACE data.

struct Cut {
    uint64_t begin, end;  // AUX offsets kept
};

// Rewrites `source` with cpu 3's AUX data held only in `keep`; the AUX records
// still announce all of it.
std::string rewriteSkylake(const PerfDataReader& source, const std::vector<Cut>& keep,
                           const std::string& path) {
    std::vector<PerfDataEventAttr> attrs;
    for (const PerfAttr& a : source.attrs())
        attrs.push_back({a.name, a.attr, a.ids});
    auto w = PerfDataWriter::create(path, attrs);
    EXPECT_TRUE(w) << (w ? "" : w.error().message);
    if (!w) return {};
    auto walked = source.forEachRecord([&](const PerfRecord& r) {
        if (r.header.type == kRecordAuxtraceInfo) {
            const PerfAuxtraceInfo& info = source.summary().auxtraceInfo.front();
            EXPECT_TRUE((*w)->writeAuxtraceInfo(info.type, info.priv));
        } else if (r.header.type == kRecordAuxtrace) {
            AuxtraceRecord head;
            std::memcpy(&head, r.bytes.data() + sizeof(perf_event_header), sizeof head);
            if (head.cpu != 3) {
                EXPECT_TRUE((*w)->writeAuxtrace(head, r.payload));
            } else {
                for (const Cut& c : keep) {
                    AuxtraceRecord part = head;
                    part.offset = head.offset + c.begin;
                    EXPECT_TRUE((*w)->writeAuxtrace(part, r.payload.subspan(c.begin, c.end - c.begin)));
                }
            }
        } else {
            EXPECT_TRUE((*w)->writeRecord(r.bytes));
        }
        return true;
    });
    EXPECT_TRUE(walked);
    EXPECT_TRUE((*w)->finish());
    return path;
}

TEST(ReaderAuxGaps, IntelPtDecodeShowsEachMissingRangeAsALostAuxGap) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string data = test_support::testDataDir();
    auto source = open(data + "/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
    test::TempDir dir;
    // cpu 3 announces [0, 137728) in 9 AUX records (boundaries 13168, 14128,
    // 32992, 54816, 57136, 85296, 113136, 118064) and has PSBs at 0, 0x4258,
    // 0x8078, 0xc090, 0x100d0, 0x14090, 0x18190, 0x1c150, 0x20190. Kept:
    // [14128, 32992) and [57136, 113136); missing: the start, the middle, the end.
    const std::string path =
        rewriteSkylake(source, {{14128, 32992}, {57136, 113136}}, dir.file("holes.data"));
    auto file = open(path);
    const PerfAuxArea* a = area(file, 3);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->announcedBytes, 137728u);
    EXPECT_EQ(a->presentBytes, 137728u - 14128u - 24144u - 24592u);
    const auto traces = auxtraceOffsets(file, 3);
    ASSERT_EQ(traces.size(), 2u);
    expectGaps(*a, {{0, 14128, false, auxOffsets(file, 3)[0]},
                    {32992, 24144, true, traces[0]},
                    {113136, 24592, true, traces[1]}});
    EXPECT_EQ(area(file, 0)->missingBytes, 0u);

    // The trace source: two runs, the loss before each and after the last named with its size.
    auto trace = PtTraceSource::fromPerfData(file);
    ASSERT_TRUE(trace) << trace.error().message;
    const PtCpuTrace* cpu = trace->cpu(3);
    ASSERT_NE(cpu, nullptr);
    ASSERT_EQ(cpu->runs.size(), 2u);
    EXPECT_EQ(cpu->auxLoss.missingBytes, 62864u);
    EXPECT_EQ(cpu->auxLoss.missingGaps, 3u);
    EXPECT_EQ(cpu->runs[0].lostBefore, 14128u);
    EXPECT_EQ(cpu->runs[0].lostCause,
              "14128 AUX bytes missing from the file at AUX offset 0x0-0x3730 before the "
              "first AUXTRACE buffer, trace starts at the next PSB");
    EXPECT_EQ(cpu->runs[1].lostBefore, 24144u);
    EXPECT_EQ(
        cpu->runs[1].lostCause,
        "24144 AUX bytes missing from the file at AUX offset 0x80e0-0xdf30, trace resumes at the next PSB");
    EXPECT_EQ(cpu->runs[1].lostAfter, 24592u);
    EXPECT_EQ(cpu->runs[1].lostAfterCause,
              "24592 AUX bytes missing from the file at AUX offset 0x1b9f0-0x21a00 "
              "after the last AUXTRACE buffer, the trace ends here");
    EXPECT_TRUE(cpu->runs[0].lostAfterCause.empty());
    const PtCpuTrace* cpu0 = trace->cpu(0);
    ASSERT_NE(cpu0, nullptr);
    EXPECT_EQ(cpu0->runs.size(), 1u);
    EXPECT_TRUE(cpu0->runs[0].lostCause.empty());

    // The decode: one lost-AUX gap per missing range, in trace order. A gap after
    // trace covers the time from where that trace ended to where the next resumes,
    // split among the threads the switch timeline says ran meanwhile.
    auto session = PtSession::open(file);
    ASSERT_TRUE(session) << session.error().message;
    DecodedSpans result = (*session)->decodeSpans({}, 2);
    struct Lost {
        uint64_t begin = UINT64_MAX, end = 0;
        size_t pieces = 0;
    };
    std::map<std::pair<uint64_t, std::string>, Lost> gaps;
    for (const auto& [tid, store] : result.threads)
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            if (!span.isGap()) continue;
            const Gap& gap = store.gaps()[size_t(span.gap)];
            if (gap.reason != GapReason::LostAux) continue;
            Lost& l = gaps[{gap.traceOffset, gap.detail}];
            l.begin = std::min(l.begin, span.start);
            l.end = std::max(l.end, span.end);
            ++l.pieces;
        }
    EXPECT_EQ(result.stats.gaps[GapReason::LostAux], 3u);
    ASSERT_EQ(gaps.size(), 3u);
    std::vector<std::pair<std::pair<uint64_t, std::string>, Lost>> lost(gaps.begin(), gaps.end());
    // The middle one lasts from the end of the first run's trace to the second run's first PSB.
    const PtSession::Segment* second = nullptr;
    for (const PtSession::Segment& seg : (*session)->segments())
        if (seg.cpu == 3 && seg.run == 1 && seg.firstOfRun) second = &seg;
    ASSERT_NE(second, nullptr);
    EXPECT_GT(second->lossFrom, 0u);
    EXPECT_EQ(lost[1].second.begin, second->lossFrom);
    EXPECT_GE(lost[1].second.end, second->startTime);
    EXPECT_GT(lost[1].second.pieces, 1u) << "other threads ran on cpu 3 meanwhile";
    // Each run resumes mid-stream: the bytes before its first PSB (0x4258 and
    // 0x100d0 in AUX offsets) belong to the same loss.
    EXPECT_EQ(lost[0].first.second, cpu->runs[0].lostCause + "; " + std::to_string(0x4258 - 14128) +
                                        " bytes after it precede the next PSB (offset " +
                                        hex(0x4258 - 14128) + ")");
    const uint64_t run1 = 32992 - 14128;  // where run 1 starts in the CPU's stream
    EXPECT_EQ(lost[1].first.second, cpu->runs[1].lostCause + "; " + std::to_string(0x100d0 - 57136) +
                                        " bytes after it precede the next PSB (offset " +
                                        hex(run1 + 0x100d0 - 57136) + ")");
    EXPECT_EQ(lost[2].first.second, cpu->runs[1].lostAfterCause);

    // auxscope decode lists them.
    auto cli = test::runCommand(std::string(AUXSCOPE_BIN) + " decode '" + path + "' --cpu 3", true);
    EXPECT_NE(
        cli.output.find("[lost AUX: 24144 AUX bytes missing from the file at AUX offset 0x80e0-0xdf30, trace "
                        "resumes at the next PSB"),
        std::string::npos)
        << cli.output.substr(0, 4000);
    EXPECT_NE(cli.output.find(
                  "[lost AUX: 24592 AUX bytes missing from the file at AUX offset 0x1b9f0-0x21a00 after "
                  "the last AUXTRACE buffer, the trace ends here]"),
              std::string::npos);
    EXPECT_NE(cli.output.find("gaps: lost AUX: 3"), std::string::npos)
        << cli.output.substr(cli.output.size() - 2000);
    EXPECT_NE(
        cli.output.find("cpu 3: 62864 of 137728 announced AUX bytes are missing from the file in 3 gaps"),
        std::string::npos);
}

// A CPU whose AUX data the file lacks entirely decodes nothing, and says so.
TEST(ReaderAuxGaps, IntelPtDecodeNotesACpuWithNoAuxtraceData) {
    AUXSCOPE_NEED_TEST_DATA();
    const std::string data = test_support::testDataDir();
    auto source = open(data + "/intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
    test::TempDir dir;
    auto file = open(rewriteSkylake(source, {}, dir.file("no-cpu3.data")));
    auto trace = PtTraceSource::fromPerfData(file);
    ASSERT_TRUE(trace) << trace.error().message;
    EXPECT_EQ(trace->cpu(3), nullptr);
    const auto& notes = trace->notes();
    EXPECT_NE(
        std::find(
            notes.begin(), notes.end(),
            "cpu 3: 137728 of 137728 announced AUX bytes are missing from the file in 1 gap (no AUXTRACE "
            "data: nothing of it decodes)"),
        notes.end());
}

}  // namespace
}  // namespace auxscope
