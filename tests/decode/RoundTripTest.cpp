// SPDX-License-Identifier: GPL-3.0-or-later
// Capture -> perf.data -> reader: the file holds exactly the records the drain
// thread took from the rings (same bytes, same order), after only what the
// writer synthesized from /proc; and auxscope's capture statistics section
// comes back as ring-fill counters that export to Perfetto.
#include <gtest/gtest.h>

#include <filesystem>
#include <mutex>
#include <set>

#include "CaptureSession.h"
#include "KernelTestSupport.h"
#include "export/TraceExport.h"
#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/PerfDataReader.h"
#include "record/PerfDataWriterCapture.h"
#include "sideband/TraceModelLoader.h"

using namespace auxscope;
namespace fs = std::filesystem;

namespace {

class BytesConsumer : public RecordConsumer {
public:
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord&) override {
        std::lock_guard lock(mutex_);
        records.push_back({cpu, std::vector<uint8_t>(bytes.begin(), bytes.end())});
    }
    std::mutex mutex_;
    std::vector<std::pair<int, std::vector<uint8_t>>> records;
};

struct Captured {
    std::string path;
    CaptureSummary summary;
    std::vector<std::pair<int, std::vector<uint8_t>>> ringRecords;
    std::vector<StatsSample> history;
};

Captured captureToFile(const std::string& name) {
    Captured out;
    out.path =
        (fs::temp_directory_path() / ("auxscope-rt-" + std::to_string(getpid()) + "-" + name)).string();
    CaptureOptions o;
    o.target = TargetKind::SystemWide;
    o.durationSeconds = 0.6;
    auto session = CaptureSession::open(o, PmuRegistry::discover());
    EXPECT_TRUE(session) << session.error().message;
    if (!session) return out;
    BytesConsumer bytes;
    (*session)->addConsumer(&bytes);
    PerfDataWriterCaptureOptions fo;
    fo.path = out.path;
    auto file = PerfDataWriterCapture::open(**session, fo);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return out;
    EXPECT_TRUE((*session)->start().ok());
    (*session)->wait();
    auto done = (*file)->finish();
    EXPECT_TRUE(done) << done.error().message;
    out.summary = (*session)->summary();
    out.ringRecords = std::move(bytes.records);
    out.history = (*session)->statsHistory();
    return out;
}

}  // namespace

TEST(RoundTrip, FileHoldsExactlyTheRingRecords) {
    SKIP_WITHOUT_PERF();
    Captured c = captureToFile("exact.data");
    ASSERT_FALSE(c.ringRecords.empty());
    auto file = PerfDataReader::open(c.path);
    ASSERT_TRUE(file) << file.error().message;
    EXPECT_FALSE(file->hasErrors());
    std::vector<std::vector<uint8_t>> kernelRecords;
    auto walked = file->forEachRecord([&](const PerfRecord& r) {
        if (r.header.type < perfdata::kRecordHeaderAttr)
            kernelRecords.emplace_back(r.bytes.begin(), r.bytes.end());
        return true;
    });
    ASSERT_TRUE(walked);
    ASSERT_GE(kernelRecords.size(), c.ringRecords.size());
    const size_t synthesized = kernelRecords.size() - c.ringRecords.size();
    // What precedes the ring records is what perf synthesizes too: tasks and maps.
    const std::set<uint32_t> synthesizedTypes{PERF_RECORD_FORK, PERF_RECORD_COMM, PERF_RECORD_MMAP,
                                              PERF_RECORD_MMAP2};
    for (size_t i = 0; i < synthesized; ++i) {
        perf_event_header h;
        std::memcpy(&h, kernelRecords[i].data(), sizeof h);
        ASSERT_TRUE(synthesizedTypes.count(h.type)) << "record " << i << " of type " << h.type;
    }
    EXPECT_GT(synthesized, 10u) << "running processes are synthesized from /proc";
    for (size_t i = 0; i < c.ringRecords.size(); ++i)
        ASSERT_EQ(kernelRecords[synthesized + i], c.ringRecords[i].second) << "ring record " << i;
    EXPECT_EQ(c.summary.sinkLosses.size(), 0u);
    fs::remove(c.path);
}

TEST(RoundTrip, CaptureStatisticsBecomeRingFillCounters) {
    SKIP_WITHOUT_PERF();
    Captured c = captureToFile("stats.data");
    ASSERT_FALSE(c.history.empty());
    auto file = PerfDataReader::open(c.path);
    ASSERT_TRUE(file) << file.error().message;
    const PerfRawFeature* raw = nullptr;
    for (auto& f : file->features().raw)
        if (f.id == kFeatAuxscopeCaptureStats) raw = &f;
    ASSERT_NE(raw, nullptr) << "the file carries the capture statistics section";
    auto history = decodeCaptureStatsFeature(raw->bytes, c.path);
    ASSERT_TRUE(history) << history.error().message;
    ASSERT_EQ(history->size(), c.history.size());
    // At 20 Hz for 0.6 s: several samples per CPU, and the last one per CPU is
    // the capture's final count.
    std::map<int32_t, StatsSample> last;
    std::map<int32_t, int> perCpu;
    for (auto& s : *history) {
        last[s.cpu] = s;
        ++perCpu[s.cpu];
    }
    for (auto& cpu : c.summary.cpus) {
        EXPECT_GE(perCpu[cpu.cpu], 5) << "cpu " << cpu.cpu;
        EXPECT_EQ(last[cpu.cpu].records, cpu.totals.records) << "cpu " << cpu.cpu;
        EXPECT_EQ(last[cpu.cpu].lostRecords, cpu.totals.lostRecords);
        EXPECT_EQ(last[cpu.cpu].kernelLost, cpu.totals.kernelLost);
    }
    // Their times are record times: inside the span the records cover.
    const auto& st = file->features().sampleTime;
    ASSERT_TRUE(st.has_value());
    for (auto& s : *history) {
        EXPECT_GE(s.perfTime, st->first);
        EXPECT_LE(s.perfTime, st->last + 1'000'000'000ull);
    }

    TraceModel model;
    auto loaded = loadTraceModel(*file, model);
    ASSERT_TRUE(loaded) << loaded.error().message;
    EXPECT_EQ(loaded->statsSamples, history->size());
    std::set<std::string> names;
    for (auto& series : model.counters())
        names.insert(series.name + " cpu " + std::to_string(series.cpu));
    for (auto& cpu : c.summary.cpus)
        EXPECT_TRUE(names.count("data ring fill % cpu " + std::to_string(cpu.cpu)));

    // perf's tools skip the section without a word.
    const std::string cmd = "perf report --stats -i '" + c.path + "' 2>&1 >/dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    std::string err;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        err.append(buf, n);
    EXPECT_EQ(pclose(p), 0);
    EXPECT_EQ(err, "") << "perf printed: " << err;
    fs::remove(c.path);
}
