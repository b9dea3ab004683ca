// SPDX-License-Identifier: GPL-3.0-or-later
// Time to the first frame of a perf.data in the GUI (issue 13: <= 1 s for a 1 GB
// Intel PT file): from constructing the trace page (as File > Open does) until
// its Timeline tab has painted the whole recording's lanes and the overview strip
// above them, offscreen. Broken down into the file read (PerfDataReader), the
// timeline opened on its worker thread (AUX session, sideband lanes, overview)
// and the paint; then, for information, how long the first window's decode
// took after that (not part of the first frame), and what building the overview
// alone costs.
//
//   QT_QPA_PLATFORM=offscreen bench_open [--runs N] [--synthetic SWITCHES] FILE...
//
// --synthetic N also times buildTimelineOverview alone on N context switches over
// 64 CPUs with ten samples each (no file).
//
// Each file is opened N times (default 3; the first run reads a cold page cache
// if the file is not cached); the median and every run are printed with the
// file's size and the load average. Not a test.
#include <QApplication>
#include <QElapsedTimer>
#include <QLabel>
#include <QPixmap>
#include <QtTest>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gui/timeline/OverviewStrip.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "spans/TimelineOverview.h"

using namespace auxscope;

namespace {

std::string loadAverage() {
    std::ifstream in("/proc/loadavg");
    double a = 0, b = 0, c = 0;
    in >> a >> b >> c;
    char text[64];
    std::snprintf(text, sizeof text, "%.2f %.2f %.2f", a, b, c);
    return text;
}

struct Run {
    double read = 0, opened = 0, painted = 0, decoded = -1;  // seconds since the page was made
    double overview = 0;                                     // buildTimelineOverview alone
    bool ok = false;
    std::string status;
};

Run openOnce(const QString& path) {
    Run r;
    QElapsedTimer clock;
    clock.start();
    TraceFilePage page(path);
    page.setAutoDecodeLimit(0);  // only the timeline decodes, as in the GUI for large files
    page.resize(1600, 1000);
    page.show();
    bool opened = false;
    QObject::connect(&page, &TraceFilePage::timelineOpened, [&] {
        opened = true;
        r.status = page.timelineStatus()->text().section('\n', 0, 0).toStdString();
    });
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 600000) || !page.loaded()) {
        r.status = "could not read the file";
        return r;
    }
    r.read = clock.nsecsElapsed() / 1e9;
    if (!QTest::qWaitFor(
            [&] {
                return opened || (page.timelineStatus() && !page.timelineDecoding() &&
                                  page.timelineStatus()->text().startsWith("Cannot"));
            },
            600000) ||
        !opened) {
        r.status = page.timelineStatus() ? page.timelineStatus()->text().toStdString() : "no timeline";
        return r;
    }
    r.opened = clock.nsecsElapsed() / 1e9;
    // The first frame: the page painted (lanes and overview), as the window would show it.
    const QPixmap frame = page.grab();
    r.painted = clock.nsecsElapsed() / 1e9;
    r.ok = !frame.isNull() && page.overviewStrip()->overview() && page.timeline()->data();
    if (r.ok) {
        // Its share of the opening: the overview built again from the same lanes (the
        // sideband's part; the trace's segments are a few thousand more items at most).
        QElapsedTimer overview;
        overview.start();
        auto again = buildTimelineOverview(*page.timeline()->data(), {});
        r.overview = overview.nsecsElapsed() / 1e9;
        r.ok = again && again->buckets == page.overviewStrip()->overview()->buckets;
    }
    // For information: the first window decoded after the first frame.
    if (page.hasIntelPt() && QTest::qWaitFor(
                                 [&] {
                                     auto d = page.timeline()->data();
                                     return d && d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
                                 },
                                 600000))
        r.decoded = clock.nsecsElapsed() / 1e9;
    return r;
}

// buildTimelineOverview alone at issue 13's scale: `switches` context switches on 64
// CPUs and ten samples per switch (what a 1 GB perf.data of sideband holds, roughly),
// synthetic, no file.
void syntheticOverview(uint64_t switches) {
    TimelineData data;
    const int cpus = 64;
    const uint64_t perCpu = std::max<uint64_t>(1, switches / cpus), step = 10'000;  // a switch every 10 us
    data.begin = 1'000'000'000;
    data.end = data.begin + perCpu * step;
    auto lanes = std::make_shared<SidebandLanes>();
    lanes->threads.resize(256);
    for (int cpu = 0; cpu < cpus; ++cpu) {
        auto& slices = data.cpus[cpu];
        slices.reserve(perCpu);
        for (uint64_t i = 0; i < perCpu; ++i) {
            const uint64_t t = data.begin + i * step;
            const int32_t tid =
                (i % 3 == 0) ? 0 : int32_t(1 + (i * 7 + uint64_t(cpu)) % 255);  // a third idle
            slices.push_back({t, t + step, tid, tid});
            for (int k = 0; k < 10 && tid; ++k)
                lanes->threads[size_t(tid)].samples.push_back(
                    {t + uint64_t(k) * step / 10, 0, FunctionTable::kUnknown, int16_t(cpu), 0});
        }
    }
    data.lanes = lanes;
    uint64_t samples = 0;
    for (const auto& t : lanes->threads)
        samples += t.samples.size();
    std::vector<double> times;
    for (int run = 0; run < 3; ++run) {
        QElapsedTimer clock;
        clock.start();
        auto o = buildTimelineOverview(data, {});
        times.push_back(clock.nsecsElapsed() / 1e6);
        if (!o || o->totalSamples != samples) std::printf("  overview: wrong sample count\n");
    }
    std::sort(times.begin(), times.end());
    std::printf("synthetic: %" PRIu64 " switches on %d CPUs, %" PRIu64
                " samples: buildTimelineOverview median %.1f ms (target: well under 1 s)   load %s\n",
                perCpu * cpus, cpus, samples, times[1], loadAverage().c_str());
}

}  // namespace

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    int runs = 3;
    uint64_t synthetic = 0;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "--synthetic" && i + 1 < argc)
            synthetic = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "-h" || a == "--help") {
            std::printf("usage: bench_open [--runs N (3)] [--synthetic SWITCHES] FILE...\n");
            return 0;
        } else
            files.push_back(a);
    }
    if (files.empty() && !synthetic) {
        std::fprintf(stderr, "usage: bench_open [--runs N (3)] [--synthetic SWITCHES] FILE...\n");
        return 2;
    }
    if (synthetic) syntheticOverview(synthetic);
    std::printf(
        "bench_open: time to the first frame (lanes + overview painted, offscreen, 1600x1000); target "
        "<= 1 s for a 1 GB Intel PT file\n");
    int status = 0;
    for (const std::string& file : files) {
        std::error_code ec;
        const uint64_t size = std::filesystem::file_size(file, ec);
        if (ec) {
            std::fprintf(stderr, "bench_open: %s: %s\n", file.c_str(), ec.message().c_str());
            status = 1;
            continue;
        }
        std::printf("%s: %.1f MB\n", file.c_str(), double(size) / 1e6);
        std::vector<double> firsts;
        for (int i = 0; i < runs; ++i) {
            const Run r = openOnce(QString::fromStdString(file));
            if (!r.ok) {
                std::printf("  run %d: failed: %s\n", i + 1, r.status.c_str());
                status = 1;
                break;
            }
            firsts.push_back(r.painted);
            std::printf("  run %d: first frame %.3f s (file read %.3f, timeline opened %.3f, painted %.3f)",
                        i + 1, r.painted, r.read, r.opened - r.read, r.painted - r.opened);
            std::printf("; overview alone %.1f ms", r.overview * 1e3);
            if (r.decoded >= 0) std::printf("; first window decoded at %.3f s", r.decoded);
            std::printf("   load %s\n", loadAverage().c_str());
            if (i == 0) std::printf("    %s\n", r.status.c_str());
        }
        if (firsts.empty()) continue;
        std::sort(firsts.begin(), firsts.end());
        const double median = firsts[firsts.size() / 2];
        const double gb = double(size) / double(uint64_t(1) << 30);
        std::printf(
            "  median first frame %.3f s for %.1f MB; target <= 1 s (up to 1 GiB; 1 s per GiB above): %s   "
            "load %s\n",
            median, double(size) / 1e6, median <= std::max(1.0, gb) ? "PASS" : "MISSED",
            loadAverage().c_str());
    }
    return status;
}
