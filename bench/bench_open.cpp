// SPDX-License-Identifier: GPL-3.0-or-later
// Time to the first frame of a perf.data in the GUI (issue 13: <= 1 s for a 1 GB
// Intel PT file): from constructing the trace page (as File > Open does) until
// its Timeline tab has painted the whole recording's lanes and the overview strip
// above them, offscreen. Broken down into the file read (PerfDataReader), the
// timeline opened on its worker thread (AUX session, sideband lanes, overview)
// and the paint; then, for information, how long the first window's decode
// took after that (not part of the first frame).
//
//   QT_QPA_PLATFORM=offscreen bench_open [--runs N] FILE...
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
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gui/OverviewStrip.h"
#include "gui/TimelineView.h"
#include "gui/TraceFilePage.h"

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

}  // namespace

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    int runs = 3;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc)
            runs = std::max(1, std::atoi(argv[++i]));
        else if (a == "-h" || a == "--help") {
            std::printf("usage: bench_open [--runs N (3)] FILE...\n");
            return 0;
        } else
            files.push_back(a);
    }
    if (files.empty()) {
        std::fprintf(stderr, "usage: bench_open [--runs N (3)] FILE...\n");
        return 2;
    }
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
