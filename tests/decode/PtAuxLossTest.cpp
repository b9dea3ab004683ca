// SPDX-License-Identifier: GPL-3.0-or-later
// AUX loss flags become gaps: real Intel PT bytes (the shared Skylake
// recording's busiest CPU) fed through the simulated AUX producer, the drain
// thread and the perf.data writer of a capture, with transactions larger than
// the AUX area so that the producer truncates them as the kernel does
// (PERF_RECORD_AUX with TRUNCATED, the event disabled until the drain re-enables
// it). The AUX offsets in the file stay contiguous; the trace must still split
// into runs at the end of each TRUNCATED record's data, the decode must show a
// LostAux gap with that cause there and nothing else lost, and perf script
// (where installed) must see the same losses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "SimulatedCapture.h"
#include "TestData.h"
#include "WaitFor.h"
#include "WriterTestSupport.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtSpanDecoder.h"
#include "record/PerfDataWriterCapture.h"

namespace auxscope {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kSkylake =
    test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");

using test_support::waitFor;

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
}

struct Recording {
    std::string path;
    std::vector<uint64_t> truncatedEnds;  // AUX offsets where the TRUNCATED records' data ends
    std::vector<uint64_t> truncatedTimes;
    uint64_t bytesWritten = 0;
    std::vector<uint8_t> written;  // the AUX bytes the producer wrote, in order
    SimulatedAuxCounts counts;
    PerfDataWriterCaptureReport report;
};

constexpr uint64_t kAuxSize = 16384;

struct GapSummary {
    std::vector<std::string> lost;  // LostAux details, in time order
    uint64_t overflows = 0;
    uint64_t noPsbAfterLoss = 0;     // "no PSB before offset" right after a LostAux gap
    uint64_t otherDecodeErrors = 0;  // every other decode error
};

GapSummary decodeGaps(const PerfDataReader& file) {
    GapSummary out;
    auto session = PtSession::open(file);
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return out;
    DecodedSpans result = (*session)->decodeSpans({}, 1);
    for (const auto& [tid, store] : result.threads) {
        bool afterLoss = false;
        for (size_t i = 0; i < store.size(); ++i) {
            Span span = store.at(i);
            if (!span.isGap()) continue;
            const Gap& gap = store.gaps()[size_t(span.gap)];
            if (gap.reason == GapReason::LostAux) out.lost.push_back(gap.detail);
            if (gap.reason == GapReason::Overflow) ++out.overflows;
            if (gap.reason == GapReason::DecodeError) {
                if (afterLoss && gap.detail.rfind("no PSB before offset", 0) == 0)
                    ++out.noPsbAfterLoss;
                else
                    ++out.otherDecodeErrors;
            }
            afterLoss = gap.reason == GapReason::LostAux;
        }
    }
    EXPECT_EQ(result.stats.gaps[GapReason::LostAux], out.lost.size());
    return out;
}

// Feeds `trace` in transactions of `sizes` bytes (one larger than the AUX area
// is truncated), each after the drain emptied the area and re-enabled the event.
Recording record(const PerfDataReader& source, const std::vector<uint8_t>& trace,
                 const std::vector<size_t>& sizes, const std::string& path) {
    Recording rec;
    rec.path = path;
    const PerfAuxtraceInfo& info = source.summary().auxtraceInfo.front();
    auto pt = decodeIntelPtInfo(info.priv);
    EXPECT_TRUE(pt) << pt.error().message;
    SimulatedCaptureOptions o;
    o.cpus = 1;
    o.producer.auxSize = kAuxSize;
    o.producer.dataPages = 8;
    o.producer.pid = -1;
    o.producer.tid = -1;
    o.publishHz = 50;
    o.eventName = "intel_pt//";
    o.label = "AUX loss test";
    for (const PerfAttr& a : source.attrs())
        if (pt && a.attr.type == pt->pmuType) o.eventAttr = a.attr;
    EXPECT_TRUE(o.eventAttr.has_value()) << "no intel_pt attr in " << source.path();
    auto cap = SimulatedCapture::create(o);
    EXPECT_TRUE(cap) << cap.error().message;
    if (!cap) return rec;
    PerfDataWriterCaptureOptions fo;
    fo.path = path;
    fo.auxtraceInfo = PerfDataWriterCaptureOptions::AuxtraceInfoBlock{info.type, info.priv};
    auto writer = PerfDataWriterCapture::open((*cap)->session(), fo);
    EXPECT_TRUE(writer) << writer.error().message;
    if (!writer) return rec;
    EXPECT_TRUE((*cap)->start());
    SimulatedAuxProducer& p = (*cap)->producer(0);
    perf_event_mmap_page* page = p.userPage();
    auto drained = [&] {
        return p.enabled() && __atomic_load_n(&page->aux_tail, __ATOMIC_ACQUIRE) ==
                                  __atomic_load_n(&page->aux_head, __ATOMIC_ACQUIRE);
    };
    size_t at = 0;
    uint64_t time = 1000;
    for (size_t n : sizes) {
        n = std::min(n, trace.size() - at);
        if (!n) break;
        EXPECT_TRUE(waitFor(drained)) << "the drain thread did not empty the AUX area";
        p.setTime(time += 1000);
        const SimulatedAuxTransaction t = p.stepBytes({trace.data() + at, n});
        EXPECT_TRUE(t.started);
        rec.written.insert(rec.written.end(), trace.begin() + long(at), trace.begin() + long(at + t.written));
        if (t.flags & PERF_AUX_FLAG_TRUNCATED) {
            rec.truncatedEnds.push_back(t.head);
            rec.truncatedTimes.push_back(time);
        }
        at += n;  // a truncated transaction's rest is lost, as the hardware's is
    }
    EXPECT_TRUE(waitFor(drained));
    (*cap)->requestStop();
    (*cap)->wait();
    auto fin = (*writer)->finish();
    EXPECT_TRUE(fin) << fin.error().message;
    rec.counts = p.counts();
    rec.bytesWritten = rec.counts.bytesWritten;
    rec.report = (*writer)->report();
    return rec;
}

TEST(PtAuxLoss, TruncatedAuxRecordsSplitTheTraceIntoRunsAndDecodeAsLostAux) {
    AUXSCOPE_NEED_TEST_DATA();
    ASSERT_TRUE(fs::exists(kSkylake)) << "shared trace data missing: " << kSkylake;
    auto source = PerfDataReader::open(kSkylake);
    ASSERT_TRUE(source) << source.error().message;
    // The busiest CPU's trace (cpu 3: 137728 bytes, 9 PSBs).
    std::vector<uint8_t> trace;
    for (const PerfAuxtraceBuffer& b : source->summary().auxtrace) {
        if (b.cpu != 3) continue;
        auto bytes = source->fileBytes(b.dataOffset, b.size);
        trace.insert(trace.end(), bytes.begin(), bytes.end());
    }
    ASSERT_GT(trace.size(), 100000u);
    // 4 KiB transactions, and two that do not fit the 16 KiB AUX area.
    std::vector<size_t> sizes = {4096, 4096, 4096, 20000, 4096, 4096, 4096, 4096, 4096, 30000};
    while (std::accumulate(sizes.begin(), sizes.end(), size_t(0)) < trace.size())
        sizes.push_back(4096);
    const fs::path dir = fs::temp_directory_path() / ("auxscope-auxloss-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    Recording rec = record(*source, trace, sizes, (dir / "truncated.data").string());
    ASSERT_EQ(rec.counts.truncatedRecords, 2u);
    ASSERT_EQ(rec.truncatedEnds.size(), 2u);
    EXPECT_EQ(rec.counts.recordsDropped, 0u);
    EXPECT_EQ(rec.report.droppedRecords, 0u);

    auto file = PerfDataReader::open(rec.path);
    ASSERT_TRUE(file) << file.error().message;
    // The file as the kernel would leave it: TRUNCATED records, contiguous AUX offsets.
    uint64_t truncatedInFile = 0;
    for (const PerfAuxRecord& a : file->summary().aux)
        if (a.flags & PERF_AUX_FLAG_TRUNCATED) ++truncatedInFile;
    EXPECT_EQ(truncatedInFile, 2u);

    auto source2 = PtTraceSource::fromPerfData(*file);
    ASSERT_TRUE(source2) << source2.error().message;
    ASSERT_EQ(source2->cpus().size(), 1u);
    const PtCpuTrace& cpu = source2->cpus()[0];
    EXPECT_EQ(cpu.bytes.size(), rec.bytesWritten) << "every written AUX byte is in the trace";
    std::vector<uint8_t> scratch;
    auto all = cpu.bytes.view(0, cpu.bytes.size(), scratch);
    EXPECT_TRUE(std::equal(all.begin(), all.end(), rec.written.begin(), rec.written.end()));
    ASSERT_EQ(cpu.runs.size(), 3u);
    EXPECT_EQ(cpu.auxLoss.truncated, 2u);
    EXPECT_EQ(cpu.auxLoss.splits, 2u);
    EXPECT_EQ(cpu.runs[0].begin, 0u);
    EXPECT_TRUE(cpu.runs[0].lostCause.empty());
    for (size_t k = 0; k < 2; ++k) {
        const PtRun& run = cpu.runs[k + 1];
        SCOPED_TRACE("run " + std::to_string(k + 1));
        EXPECT_EQ(run.auxOffset, rec.truncatedEnds[k]);
        EXPECT_EQ(run.begin, rec.truncatedEnds[k]) << "the stream is the AUX area from offset 0";
        EXPECT_EQ(cpu.runs[k].end, run.begin);
        EXPECT_EQ(run.lostBefore, 0u);
        EXPECT_EQ(run.lostCause, "AUX area full: the kernel stopped tracing at AUX offset " +
                                     hex(rec.truncatedEnds[k]) + " (TRUNCATED, time " +
                                     std::to_string(rec.truncatedTimes[k]) +
                                     "), trace resumes at the next PSB");
    }
    EXPECT_EQ(cpu.runs[2].end, cpu.bytes.size());

    // The decode: a LostAux gap with that cause at each, and no other loss.
    GapSummary gaps = decodeGaps(*file);
    ASSERT_EQ(gaps.lost.size(), 2u);
    // Each run resumes mid-stream: the bytes before its first PSB are part of the
    // same loss, said in the one gap (no separate decode error).
    for (size_t k = 0; k < 2; ++k) {
        EXPECT_EQ(gaps.lost[k].rfind(cpu.runs[k + 1].lostCause, 0), 0u) << gaps.lost[k];
        EXPECT_NE(gaps.lost[k].find("precede the next PSB"), std::string::npos) << gaps.lost[k];
    }
    EXPECT_EQ(gaps.overflows, 0u);
    EXPECT_EQ(gaps.noPsbAfterLoss, 0u);
    // auxscope decode counts them per CPU and lists the gaps.
    auto cli = writertest::runCommand({AUXSCOPE_BIN, "decode", rec.path}, 120);
    EXPECT_NE(cli.err.find("cpu 0: AUX records with TRUNCATED 2 (trace lost there; 2 runs cut)"),
              std::string::npos)
        << cli.err;
    EXPECT_EQ(writertest::countMatches(
                  cli.out,
                  "\\[lost AUX: AUX area full: the kernel stopped tracing at AUX "
                  "offset 0x[0-9a-f]+ \\(TRUNCATED, time [0-9]+\\), trace resumes "
                  "at the next PSB; [0-9]+ bytes after it precede the next PSB \\(offset 0x[0-9a-f]+\\)\\]"),
              2u)
        << cli.out.substr(0, 6000);
    auto packets = writertest::runCommand({AUXSCOPE_BIN, "decode", rec.path, "--format", "packets"}, 120);
    EXPECT_NE(packets.out.find("cpu 0: " + std::to_string(rec.bytesWritten) + " bytes in"), std::string::npos)
        << packets.out.substr(0, 300);
    EXPECT_NE(packets.out.find(" 3 runs, "), std::string::npos) << packets.out.substr(0, 300);
    EXPECT_NE(packets.out.find("cpu 0: AUX records with TRUNCATED 2"), std::string::npos)
        << packets.out.substr(0, 300);

    // The same recording without truncation: one run, no LostAux gap.
    Recording whole = record(*source, trace, std::vector<size_t>(40, 4096), (dir / "whole.data").string());
    EXPECT_EQ(whole.counts.truncatedRecords, 0u);
    auto wholeFile = PerfDataReader::open(whole.path);
    ASSERT_TRUE(wholeFile) << wholeFile.error().message;
    auto wholeSource = PtTraceSource::fromPerfData(*wholeFile);
    ASSERT_TRUE(wholeSource);
    ASSERT_EQ(wholeSource->cpus().size(), 1u);
    EXPECT_EQ(wholeSource->cpus()[0].runs.size(), 1u);
    EXPECT_EQ(wholeSource->cpus()[0].bytes.size(), trace.size());
    GapSummary wholeGaps = decodeGaps(*wholeFile);
    EXPECT_TRUE(wholeGaps.lost.empty());
    EXPECT_EQ(wholeGaps.noPsbAfterLoss, 0u);
    // Other decode errors are the recording's own (the truncated one has less of it).
    EXPECT_LE(gaps.otherDecodeErrors, wholeGaps.otherDecodeErrors);

    // perf, the oracle: its decoder reports each TRUNCATED record as lost trace data.
    if (auto perf = writertest::perfBinary()) {
        auto r = writertest::runCommand(
            {*perf, "script", "--itrace=e", "-F", "cpu,time,event", "-i", rec.path}, 120);
        // " instruction trace error type 1 time 0.000005000 cpu 0 ... code 8: Lost trace data", at the
        // record's time.
        for (uint64_t t : rec.truncatedTimes) {
            char time[64];
            std::snprintf(time, sizeof time, "time %llu.%09llu cpu 0 ", (unsigned long long)(t / 1000000000),
                          (unsigned long long)(t % 1000000000));
            EXPECT_EQ(writertest::countMatches(r.out, std::string(time) + ".*Lost trace data"), 1u)
                << time << "\n"
                << r.out.substr(0, 4000) << r.err.substr(0, 2000);
        }
        EXPECT_EQ(writertest::countMatches(r.out, "Lost trace data"), 2u);
        EXPECT_NE(r.err.find("AUX data lost 2 times"), std::string::npos) << r.err.substr(0, 2000);
    } else {
        ADD_FAILURE() << "perf is not installed (Debian: apt install linux-perf); it is the oracle here";
    }
    if (!HasFailure()) fs::remove_all(dir);  // kept for a look otherwise
}

}  // namespace
}  // namespace auxscope
