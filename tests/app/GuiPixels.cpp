// SPDX-License-Identifier: GPL-3.0-or-later
// Renders the trace page and the capture page offscreen into PNG images for a
// fixed set of inputs, and compares two such sets pixel for pixel: the check
// that a change of the GUI's structure changes nothing anyone sees (issue 26).
// Not a ctest: tools/gui-pixel-check runs it (it makes the inputs, and runs
// `render` before and after a change, then `compare`).
//
//   gui_pixels render OUT_DIR --skylake FILE --etm FILE --synth FILE --software FILE
//   gui_pixels compare BEFORE_DIR AFTER_DIR
//
// Scenes, each at 4 zoom levels (whole recording, then narrower windows):
//   skylake   perf's Skylake Intel PT recording (trace page, decoded windows)
//   etm       simpleperf's CoreSight ETM recording (trace page)
//   synth     a ptsynth trace with a range selected and a search active (a hit stepped to)
//   software  a software-event capture by `auxscope record -a` (capture-health lanes)
//   lanes     the same capture with processes collapsed, a CPU, a process and a thread pinned,
//             sorted by pid
//   filtered  the same capture filtered to one process name, sorted by name, health collapsed
//   capture   the capture page idle, then its live timeline fed the software capture's
//             timeline (following the newest 0 / 1 / 0.1 / 0.01 s)
//
// Deterministic: a fixed window size, style (Fusion) and font (DejaVu Sans 9 pt), no
// cursor blinking, settings in a fresh folder (the lane bar keeps lane state per file),
// keyboard focus set explicitly. Time-dependent text is masked: every label's
// "in 0.53 s", "(0.53 s)", "in 12 ms" becomes "in # s" before a frame is grabbed (the
// build and decode times the status lines report); nothing else on these pages
// depends on the clock.
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "gui/analysis/RangeStatsPane.h"
#include "gui/capture/CapturePage.h"
#include "gui/timeline/SearchBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"

using namespace auxscope;

namespace {

constexpr int kWidth = 1400, kHeight = 900;

// Lets the event loop run for `ms` (queued results, debounced signals).
void settle(int ms) {
    QTest::qWait(ms);
}

// "in 0.53 s" / "(0.53 s)" / "in 12 ms": build and decode times, masked.
void maskTimes(QWidget* root) {
    static const QRegularExpression times(R"((in |\()\d+(\.\d+)? (s|ms)\b)");
    for (QLabel* label : root->findChildren<QLabel*>()) {
        const QString text = label->text();
        QString masked = text;
        masked.replace(times, "\\1# \\3");
        if (masked != text) label->setText(masked);
    }
    settle(50);
}

bool save(QWidget* w, const QString& dir, const QString& name) {
    maskTimes(w);
    const QImage image = w->grab().toImage().convertToFormat(QImage::Format_ARGB32);
    const QString path = QDir(dir).filePath(name + ".png");
    if (!image.save(path)) {
        std::fprintf(stderr, "cannot write %s\n", qPrintable(path));
        return false;
    }
    std::printf("%s\n", qPrintable(path));
    return true;
}

// Waits until the page's timeline shows its data and nothing is being decoded, built or aggregated.
bool quiet(TraceFilePage& page, int timeoutMs = 120000) {
    auto idle = [&] {
        TimelineView* v = page.timeline();
        return v && v->data() && !v->preparing() && !page.timelineDecoding() &&
               v->undecodedHint() != "decoding…" && (!page.rangeStats() || !page.rangeStats()->busy());
    };
    for (int round = 0; round < 3; ++round) {
        settle(400);  // past the view's settle delay: a window decode starts
        if (!QTest::qWaitFor(idle, timeoutMs)) return false;
    }
    return true;
}

std::unique_ptr<TraceFilePage> openPage(const QString& file) {
    auto page = std::make_unique<TraceFilePage>(file);
    page->setAutoDecodeLimit(0);
    page->resize(kWidth, kHeight);
    page->show();
    if (!QTest::qWaitFor([&] { return page->loaded() || page->failed(); }, 60000) || !page->loaded()) {
        std::fprintf(stderr, "cannot open %s\n", qPrintable(file));
        return nullptr;
    }
    if (!QTest::qWaitFor(
            [&] { return page->timeline() && page->timeline()->data() && page->timeline()->data()->lanes; },
            120000) ||
        !quiet(*page)) {
        std::fprintf(stderr, "%s: the timeline did not settle\n", qPrintable(file));
        return nullptr;
    }
    return page;
}

// The 4 zoom levels: the whole recording, then windows of 1/10, 1/1000, 1/100000 of
// it (at most 1/`deepest`) starting `at` into it.
struct Zoom {
    const char* name;
    double width;
};
const Zoom kZooms[] = {{"z0-whole", 1.0}, {"z1-tenth", 0.1}, {"z2-thousandth", 1e-3}, {"z3-1e-5", 1e-5}};

bool zoomAndSave(TraceFilePage& page, const QString& dir, const QString& scene, double at,
                 const std::function<void()>& focus) {
    TimelineView* view = page.timeline();
    const auto data = view->data();
    const double span = double(data->end - data->begin);
    for (const Zoom& z : kZooms) {
        const double w = span * z.width;
        const uint64_t b = data->begin + uint64_t((span - w) * at);
        view->setVisibleRange(b, b + std::max<uint64_t>(1, uint64_t(w)));
        if (!quiet(page)) {
            std::fprintf(stderr, "%s %s: did not settle\n", qPrintable(scene), z.name);
            return false;
        }
        focus();
        if (!save(&page, dir, scene + "-" + z.name)) return false;
    }
    return true;
}

bool traceScene(const QString& dir, const QString& scene, const QString& file, double at,
                const std::function<bool(TraceFilePage&)>& prepare = {}) {
    auto page = openPage(file);
    if (!page) return false;
    if (prepare && !prepare(*page)) {
        std::fprintf(stderr, "%s: preparing failed\n", qPrintable(scene));
        return false;
    }
    if (!quiet(*page)) return false;
    TimelineView* view = page->timeline();
    return zoomAndSave(*page, dir, scene, at, [view] { view->setFocus(); });
}

// The synthesized trace: a range selected, a search for a function, its first hit stepped to.
bool synthScene(const QString& dir, const QString& file) {
    auto page = openPage(file);
    if (!page) return false;
    TimelineView* view = page->timeline();
    const auto data = view->data();
    const uint64_t span = data->end - data->begin;
    SearchBar* bar = page->searchBar();
    bar->activate();
    bar->setPattern("f2_4");
    if (bar->result().hits.empty()) {
        std::fprintf(stderr, "synth: the search found nothing\n");
        return false;
    }
    bar->step(true);
    if (!quiet(*page)) return false;
    view->setTimeSelection(data->begin + span * 3 / 10, data->begin + span * 45 / 100);
    if (!quiet(*page)) return false;
    view->setVisibleRange(data->begin, data->end);
    if (!quiet(*page)) return false;
    // Whole, the selection, 1/100 and 1/10000 of the recording at the selection's start.
    auto shot = [&](const QString& name, uint64_t b, uint64_t e) {
        view->setVisibleRange(b, e);
        if (!quiet(*page)) return false;
        bar->field()->setFocus();
        return save(page.get(), dir, "synth-" + name);
    };
    const uint64_t s = data->begin + span * 3 / 10;
    return shot("z0-whole", data->begin, data->end) &&
           shot("z1-selection", s, data->begin + span * 45 / 100) &&
           shot("z2-hundredth", s, s + span / 100) && shot("z3-1e-4", s, s + span / 10000);
}

bool lanesPrepare(TraceFilePage& page) {
    TimelineView* view = page.timeline();
    const auto data = view->data();
    const SidebandLanes* lanes = data->lanes.get();
    if (!lanes || lanes->processes.size() < 4 || data->cpus.size() < 2) return false;
    using Pin = TimelineLaneState::Pin;
    view->setLaneSort(TimelineLaneState::Sort::Pid);
    view->setPinned(Pin::Cpu, std::next(data->cpus.begin())->first, true);
    view->setPinned(Pin::Process, lanes->processes[2].pid, true);
    // A thread of the first process with more than one thread (else the first thread).
    int32_t tid = lanes->threads.front().tid;
    for (const SidebandLanes::Process& p : lanes->processes)
        if (p.threads.size() > 1) {
            tid = lanes->threads[p.threads[1]].tid;
            break;
        }
    view->setPinned(Pin::Thread, tid, true);
    view->setProcessCollapsed(lanes->processes[0].pid, true);
    view->setProcessCollapsed(lanes->processes[3].pid, true);
    return true;
}

bool filteredPrepare(TraceFilePage& page) {
    TimelineView* view = page.timeline();
    const SidebandLanes* lanes = view->data()->lanes.get();
    if (!lanes || lanes->processes.empty()) return false;
    view->setLaneSort(TimelineLaneState::Sort::Name);
    view->setHealthCollapsed(true);
    // The first process with a name: its name's first three letters.
    for (const SidebandLanes::Process& p : lanes->processes)
        if (p.name.size() >= 3) {
            view->setLaneFilter(QString::fromStdString(p.name.substr(0, 3)));
            return true;
        }
    view->setLaneFilter("a");
    return true;
}

bool captureScene(const QString& dir, const QString& software) {
    // The software capture's timeline, fed to the live timeline as a capture's ticks would be.
    auto page = openPage(software);
    if (!page) return false;
    const auto data = page->timeline()->data();
    page.reset();
    CapturePage capture;
    capture.resize(kWidth, kHeight);
    capture.show();
    settle(500);
    capture.liveTimeline()->setFocus();
    if (!save(&capture, dir, "capture-idle")) return false;
    TimelineView* live = capture.liveTimeline();
    live->setFollowLatest(true);
    live->setData(data);
    const double follow[] = {0, 1, 0.1, 0.01};
    for (int i = 0; i < 4; ++i) {
        live->setFollowLatest(true, follow[i]);
        live->setData(std::make_shared<const TimelineData>(*data));  // the next tick: a new timeline
        if (!QTest::qWaitFor([&] { return !live->preparing(); }, 60000)) return false;
        settle(300);
        live->setFocus();
        if (!save(&capture, dir, QString("capture-live-z%1").arg(i))) return false;
    }
    return true;
}

int render(const QString& out, const std::map<std::string, QString>& inputs, const QString& only) {
    QDir().mkpath(out);
    auto want = [&](const char* scene) { return only.isEmpty() || only == scene; };
    bool ok = true;
    if (ok && want("skylake")) ok = traceScene(out, "skylake", inputs.at("skylake"), 0.5);
    if (ok && want("etm")) ok = traceScene(out, "etm", inputs.at("etm"), 0.4);
    if (ok && want("synth")) ok = synthScene(out, inputs.at("synth"));
    if (ok && want("software")) ok = traceScene(out, "software", inputs.at("software"), 0.4);
    if (ok && want("lanes")) ok = traceScene(out, "lanes", inputs.at("software"), 0.4, lanesPrepare);
    if (ok && want("filtered")) ok = traceScene(out, "filtered", inputs.at("software"), 0.4, filteredPrepare);
    if (ok && want("capture")) ok = captureScene(out, inputs.at("software"));
    return ok ? 0 : 1;
}

int compare(const QString& a, const QString& b) {
    const QStringList names = QDir(a).entryList({"*.png"}, QDir::Files, QDir::Name);
    const QStringList others = QDir(b).entryList({"*.png"}, QDir::Files, QDir::Name);
    int bad = 0;
    for (const QString& n : others)
        if (!names.contains(n)) {
            std::printf("%-36s only in %s\n", qPrintable(n), qPrintable(b));
            ++bad;
        }
    for (const QString& n : names) {
        if (!others.contains(n)) {
            std::printf("%-36s only in %s\n", qPrintable(n), qPrintable(a));
            ++bad;
            continue;
        }
        const QImage x = QImage(QDir(a).filePath(n)).convertToFormat(QImage::Format_ARGB32);
        const QImage y = QImage(QDir(b).filePath(n)).convertToFormat(QImage::Format_ARGB32);
        if (x.size() != y.size()) {
            std::printf("%-36s size %dx%d vs %dx%d\n", qPrintable(n), x.width(), x.height(), y.width(),
                        y.height());
            ++bad;
            continue;
        }
        long differing = 0;
        for (int row = 0; row < x.height(); ++row) {
            const QRgb* p = reinterpret_cast<const QRgb*>(x.constScanLine(row));
            const QRgb* q = reinterpret_cast<const QRgb*>(y.constScanLine(row));
            for (int col = 0; col < x.width(); ++col)
                differing += p[col] != q[col];
        }
        std::printf("%-36s %dx%d  %ld differing pixels\n", qPrintable(n), x.width(), x.height(), differing);
        bad += differing > 0;
    }
    std::printf("%lld images compared, %d differ\n", (long long)names.size(), bad);
    return bad || names.isEmpty() ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc >= 4 && std::string(argv[1]) == "compare") {
        setenv("QT_QPA_PLATFORM", "offscreen", 1);
        QCoreApplication app(argc, argv);
        return compare(argv[2], argv[3]);
    }
    if (argc < 3 || std::string(argv[1]) != "render") {
        std::fprintf(stderr,
                     "usage: gui_pixels render OUT_DIR --skylake F --etm F --synth F --software F [--only "
                     "SCENE]\n       gui_pixels compare A_DIR B_DIR\n");
        return 2;
    }
    std::map<std::string, QString> inputs;
    QString only;
    for (int i = 3; i + 1 < argc; i += 2) {
        const std::string key = argv[i];
        if (key == "--only")
            only = argv[i + 1];
        else if (key.rfind("--", 0) == 0)
            inputs[key.substr(2)] = QFileInfo(argv[i + 1]).absoluteFilePath();
    }
    for (const char* k : {"skylake", "etm", "synth", "software"})
        if (!inputs.count(k)) {
            std::fprintf(stderr, "missing --%s FILE\n", k);
            return 2;
        }
    // Settings (the lane bar's per-file lane state) in a folder of our own, fresh each run.
    QTemporaryDir config;
    setenv("XDG_CONFIG_HOME", qPrintable(config.path()), 1);
    setenv("QT_QPA_PLATFORM", "offscreen", 1);
    QApplication::setStyle("Fusion");
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName("auxscope-gui-pixels");
    QCoreApplication::setApplicationName("auxscope-gui-pixels");
    QApplication::setFont(QFont("DejaVu Sans", 9));
    QApplication::setCursorFlashTime(0);  // a text cursor that does not blink
    return render(argv[2], inputs, only);
}
