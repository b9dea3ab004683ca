// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view, offscreen: a synthetic TimelineData painted and checked
// pixel by pixel (a span in its function's colour at its time and depth, a gap
// hatched, nothing outside the decoded window), zoom and pan by keys and wheel
// with one debounced visibleRangeChanged, tooltips, selection, the level of
// detail on 2 M tiny spans, and a ptsynth perf.data opened on a TraceFilePage.
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cstdlib>
#include <memory>
#include <regex>
#include <set>

#include "gui/timeline/LaneBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"

using namespace auxscope;

namespace {

constexpr uint64_t kBase = 1'000'000'000;

// alpha [1000, 9000) at depth 0 with beta [2000, 4000) under it, an overflow
// gap [9000, 10000), gamma [10000, 12000), and gamma again at [16000, 18000),
// outside the decoded window [0, 15000). CPU 0 runs tid 100 then 101.
std::shared_ptr<TimelineData> synthetic() {
    auto functions = std::make_shared<FunctionTable>();
    const uint32_t alpha = functions->add({"alpha", "/bin/prog", 0x1000});
    const uint32_t beta = functions->add({"beta", "/bin/prog", 0x2000});
    const uint32_t gamma = functions->add({"gamma", "/lib/libc.so.6", 0x3000});
    auto data = std::make_shared<TimelineData>();
    data->functions = functions;
    data->begin = kBase, data->end = kBase + 20000;
    data->decodedBegin = kBase, data->decodedEnd = kBase + 15000;
    std::vector<Span> spans = {
        {kBase + 1000, kBase + 9000, alpha, 0, 800, -1},   {kBase + 2000, kBase + 4000, beta, 1, 200, -1},
        {kBase + 9000, kBase + 10000, 0, 0, 0, 0},         {kBase + 10000, kBase + 12000, gamma, 0, 300, -1},
        {kBase + 16000, kBase + 18000, gamma, 0, 300, -1},
    };
    std::vector<Gap> gaps = {{GapReason::Overflow, "overflow at offset 0x40", 0x40, 0}};
    TimelineData::Thread t;
    t.pid = 100, t.tid = 100, t.name = "synthetic";
    t.spans.append(spans, gaps);
    data->threads.push_back(std::move(t));
    data->cpus[0] = {{kBase, kBase + 5000, 100, 100}, {kBase + 6000, kBase + 20000, 100, 101}};
    data->threadNames = {{100, "synthetic"}, {101, "other"}};
    return data;
}

QRgb rgb(const QColor& c) {
    return c.rgb();
}

QPoint at(const TimelineView& view, uint64_t t, int y) {
    return QPoint(int(view.xOf(t)), y);
}

// Sideband lanes built by hand: processes "alpha" (pid 10: threads 10
// alpha-main, 11 alpha-worker), "beta" (pid 20: 20 beta, 21 net-io) and
// "zeta" (pid 5: 5 zeta), by CPU time alpha, beta, zeta; CPUs 0 and 1 ran
// them, CPU 2 was offline and CPU 3 not traced. Capture health on CPUs 0 and
// 1: a point every 1000 ns; CPU 0's ring fills to 100 % at +4000 with 7
// records and 2 samples lost there, its AUX area at 10 % a point; CPU 1 has
// no AUX area and loses nothing.
std::shared_ptr<TimelineData> laneData() {
    auto lanes = std::make_shared<SidebandLanes>();
    auto addThread = [&](int32_t pid, int32_t tid, const char* name, uint64_t start, uint64_t end, int cpu) {
        SidebandLanes::Thread t;
        t.pid = pid, t.tid = tid, t.name = name;
        t.runs.push_back({kBase + start, kBase + end, cpu});
        t.runTime = end - start;
        lanes->byTid_[tid] = lanes->threads.size();
        lanes->threads.push_back(std::move(t));
    };
    addThread(5, 5, "zeta", 1000, 1500, 1);
    addThread(10, 10, "alpha-main", 0, 6000, 0);
    addThread(10, 11, "alpha-worker", 1500, 9000, 1);
    addThread(20, 20, "beta", 6000, 9000, 0);
    addThread(20, 21, "net-io", 9000, 10000, 0);
    auto addProcess = [&](int32_t pid, const char* name, std::vector<size_t> threads) {
        SidebandLanes::Process p;
        p.pid = pid, p.name = name, p.threads = std::move(threads);
        for (size_t i : p.threads)
            p.runTime += lanes->threads[i].runTime;
        lanes->byPid_[pid] = lanes->processes.size();
        lanes->processes.push_back(std::move(p));
    };
    addProcess(10, "alpha", {1, 2});
    addProcess(20, "beta", {3, 4});
    addProcess(5, "zeta", {0});
    lanes->cpus = {0, 1};
    lanes->cpusWithSwitches = {0, 1};
    lanes->cpuNotes = {{2, "offline"}, {3, "not traced"}};
    for (int i = 1; i <= 10; ++i) {
        SidebandLanes::Health h;
        h.time = kBase + uint64_t(i) * 1000;
        h.ringFill = i == 4 ? 100.0f : float(i * 5);
        h.auxFill = float(i * 10);
        h.mibPerSec = 1.5f * float(i);
        h.lostRecords = i >= 4 ? 7 : 0;
        h.lostSamples = i >= 4 ? 2 : 0;
        lanes->health[0].push_back(h);
        SidebandLanes::Health g;
        g.time = kBase + uint64_t(i) * 1000;
        g.ringFill = 20;
        g.mibPerSec = 0.25f;
        lanes->health[1].push_back(g);
    }
    auto data = std::make_shared<TimelineData>();
    data->begin = kBase, data->end = kBase + 12000;
    data->cpus[0] = {{kBase, kBase + 6000, 10, 10},
                     {kBase + 6000, kBase + 9000, 20, 20},
                     {kBase + 9000, kBase + 10000, 20, 21}};
    data->cpus[1] = {{kBase + 1000, kBase + 1500, 5, 5}, {kBase + 1500, kBase + 9000, 10, 11}};
    setTimelineLanes(*data, lanes);
    return data;
}

int countColor(const QImage& img, QRect r, const QColor& c) {
    int n = 0;
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x)
            n += img.pixelColor(x, y).rgb() == c.rgb();
    return n;
}

QAction* actionNamed(QMenu* menu, const QString& text) {
    for (QAction* a : menu->actions())
        if (a->text() == text) return a;
    return nullptr;
}

void sendWheel(QWidget* w, QPoint pos, int delta, Qt::KeyboardModifiers mods) {
    QWheelEvent e(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, mods,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &e);
}

}  // namespace

class TimelineViewTest : public QObject {
    Q_OBJECT
private slots:
    // Capture health: a lane per CPU under a collapsible group; the hover says
    // the point's values; red ticks where the lost counts grew.
    void healthLanesShowFillAndLosses() {
        auto data = laneData();
        const auto& points = data->lanes->health.at(0);
        TimelineView view;
        view.resize(1200, 700);
        view.setData(data);
        const int header = view.healthHeaderY(), cpu0 = view.healthLaneY(0), cpu1 = view.healthLaneY(1);
        QVERIFY(header > view.cpuLaneY(3));
        QVERIFY(cpu0 > header);
        QCOMPARE(cpu1, cpu0 + TimelineView::kHealthHeight);
        QVERIFY(view.processHeaderY(10) > cpu1);
        QCOMPARE(view.healthLaneY(2), -1);  // no statistics for it

        // Hover anywhere in a point's interval: that point's values.
        for (size_t i = 1; i < points.size(); ++i) {
            const uint64_t t = points[i].time - 400;  // inside (points[i-1], points[i]]
            if (i == 3 || i == 4) continue;           // near the tick at +4000: the tick wins
            const TimelineHit hit = view.hitAt(QPoint(int(view.xOf(t)), cpu0 + 20));
            QCOMPARE(hit.kind, TimelineHit::Health);
            QCOMPARE(hit.cpu, 0);
            QCOMPARE(hit.end, points[i].time);
            QCOMPARE(hit.start, points[i - 1].time);
            QCOMPARE(hit.health.ringFill, points[i].ringFill);
            QCOMPARE(hit.health.auxFill, points[i].auxFill);
            QCOMPARE(hit.health.mibPerSec, points[i].mibPerSec);
            QCOMPARE(hit.health.lostRecords, points[i].lostRecords);
            QCOMPARE(hit.lostRecordsHere, uint64_t(0));
        }
        const QString tip = view.toolTipAt(QPoint(int(view.xOf(kBase + 6600)), cpu0 + 20));
        QVERIFY2(tip.contains("CPU 0 capture health at +7.00 µs") && tip.contains("Ring fill: 35.0 %") &&
                     tip.contains("AUX fill: 70.0 %") && tip.contains("Throughput: 10.50 MiB/s") &&
                     tip.contains("Lost so far: 7 records, 2 samples, 0 AUX records"),
                 qPrintable(tip));
        const QString tip1 = view.toolTipAt(QPoint(int(view.xOf(kBase + 6600)), cpu1 + 20));
        QVERIFY2(tip1.contains("AUX fill: no AUX area") && tip1.contains("Throughput: 0.25 MiB/s") &&
                     tip1.contains("Lost so far: 0 records"),
                 qPrintable(tip1));
        // The tick where CPU 0 lost records (+4000): how many, between which times, the fill then.
        const TimelineHit tick = view.hitAt(QPoint(int(view.xOf(kBase + 4000)), cpu0 + 20));
        QCOMPARE(tick.kind, TimelineHit::Health);
        QCOMPARE(tick.lostRecordsHere, uint64_t(7));
        QCOMPARE(tick.lostSamplesHere, uint64_t(2));
        QCOMPARE(tick.end, kBase + 4000);
        const QString tickTip = TimelineView::describe(tick, data->begin);
        QVERIFY2(tickTip.contains("Lost between +3.00 µs and +4.00 µs: 7 records, 2 samples, 0 AUX records "
                                  "(ring fill then 100.0 %)"),
                 qPrintable(tickTip));
        // Past the last point: nothing.
        QVERIFY(!view.hitAt(QPoint(int(view.xOf(kBase + 11800)), cpu0 + 20)).valid());

        // Drawn: the fill area, orange where full, the AUX line, a red tick at +4000 only.
        const QImage img = view.grab().toImage();
        const int lane0 = cpu0, h = TimelineView::kHealthHeight;
        const int x7 = int(view.xOf(kBase + 6500));
        QVERIFY2(
            countColor(img, QRect(x7 - 3, lane0 + h / 2, 7, h / 2 - 3), TimelineView::healthRingColor()) > 10,
            "ring fill area");
        const int x4 = int(view.xOf(kBase + 3500));
        QVERIFY2(countColor(img, QRect(x4 - 3, lane0 + 4, 7, h - 8), TimelineView::healthFullColor()) > 10,
                 "a full ring in its colour");
        QVERIFY2(countColor(img, QRect(x7 - 10, lane0, 21, h), TimelineView::healthAuxColor()) > 0,
                 "AUX line");
        const QColor red = TimelineView::lossColor(SidebandLanes::Loss::LostRecords);
        const int xt = int(view.xOf(kBase + 4000));
        QVERIFY2(countColor(img, QRect(xt - 2, lane0 + 1, 5, h - 2), red) > 20, "lost tick");
        QCOMPARE(countColor(img, QRect(view.plotLeft(), lane0 + 1, xt - 5 - view.plotLeft(), h - 2), red), 0);
        QCOMPARE(countColor(img, QRect(view.plotLeft(), cpu1 + 1, view.plotWidth(), h - 2), red), 0);
        QCOMPARE(countColor(img, QRect(view.plotLeft(), cpu1 + 1, view.plotWidth(), h - 2),
                            TimelineView::healthAuxColor()),
                 0);
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
            img.save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/lanes-health.png");

        // The group collapses with a click on its header, and opens again.
        QSignalSpy changed(&view, &TimelineView::laneStateChanged);
        const int alpha = view.processHeaderY(10);
        QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(20, header + 5));
        QCOMPARE(view.healthLaneY(0), -1);
        QVERIFY(view.laneState().healthCollapsed);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(view.processHeaderY(10), alpha - 2 * TimelineView::kHealthHeight);
        QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(20, header + 5));
        QCOMPARE(view.healthLaneY(0), cpu0);
    }

    // CPUs the file names as offline or not traced: labelled, hatched, explained.
    void cpuNotesAreShown() {
        TimelineView view;
        view.resize(1200, 700);
        view.setData(laneData());
        const int off = view.cpuLaneY(2), untraced = view.cpuLaneY(3);
        QVERIFY(off > view.cpuLaneY(1) && untraced > off);
        const TimelineHit hit = view.hitAt(QPoint(view.plotLeft() + 300, off + 8));
        QCOMPARE(hit.kind, TimelineHit::CpuNote);
        QCOMPARE(hit.loss, QString("offline"));
        const QString tip = view.toolTipAt(QPoint(view.plotLeft() + 300, off + 8));
        QVERIFY2(tip.startsWith("CPU 2: offline") && tip.contains("not online"), qPrintable(tip));
        const QString labelTip = view.toolTipAt(QPoint(20, untraced + 8));
        QVERIFY2(labelTip.contains("CPU 3: not traced") && labelTip.contains("did not record"),
                 qPrintable(labelTip));
        // The body: grey, hatched (no thread colour, no white).
        const QImage img = view.grab().toImage();
        const QRect body(view.plotLeft() + view.plotWidth() - 200, off + 2, 190,
                         TimelineView::kLaneHeight - 4);
        QCOMPARE(countColor(img, body, Qt::white), 0);
        QVERIFY(countColor(img, body, QColor(232, 232, 232)) > body.width() * body.height() / 3);
        QVERIFY(countColor(img, body, QColor(185, 185, 185)) > 20);
    }

    // Collapse, pin, filter and sort, and their state as a value.
    void lanesCollapsePinFilterSort() {
        TimelineView view;
        view.resize(1200, 900);
        view.setData(laneData());
        QCOMPARE(view.threadCount(), 5);
        QCOMPARE(view.shownThreadCount(), 5);
        // Default: by CPU time (the lanes' order).
        QVERIFY(view.processHeaderY(10) < view.processHeaderY(20));
        QVERIFY(view.processHeaderY(20) < view.processHeaderY(5));
        const int workerY = view.threadLaneY(11), betaHeader = view.processHeaderY(20),
                  cpu0Y = view.cpuLaneY(0);
        QVERIFY(workerY > view.processHeaderY(10));

        // Collapse alpha with a click on its header's triangle: its threads go, beta moves up.
        QTest::mouseClick(&view, Qt::LeftButton, {}, QPoint(10, view.processHeaderY(10) + 8));
        QVERIFY(view.processCollapsed(10));
        QCOMPARE(view.threadLaneY(10), -1);
        QCOMPARE(view.threadLaneY(11), -1);
        QVERIFY(view.processHeaderY(10) >= 0);
        QVERIFY(view.processHeaderY(20) < betaHeader);
        QCOMPARE(view.shownThreadCount(), 3);
        // The C key over its header expands it again: everything where it was.
        QMouseEvent move(QEvent::MouseMove, QPointF(300, view.processHeaderY(10) + 8),
                         view.mapToGlobal(QPointF(300, view.processHeaderY(10) + 8)), Qt::NoButton,
                         Qt::NoButton, Qt::NoModifier);
        QApplication::sendEvent(&view, &move);
        QTest::keyClick(&view, Qt::Key_C);
        QVERIFY(!view.processCollapsed(10));
        QCOMPARE(view.threadLaneY(11), workerY);
        QCOMPARE(view.processHeaderY(20), betaHeader);

        // Pin net-io (thread 21) through its lane's context menu: above the CPU lanes.
        std::unique_ptr<QMenu> menu(view.laneMenu(QPoint(300, view.threadLaneY(21) + 5)));
        QAction* pin = actionNamed(menu.get(), "Pin to top");
        QVERIFY(pin);
        pin->trigger();
        QVERIFY(view.laneState().isPinned(TimelineLaneState::Pin::Thread, 21));
        QVERIFY(view.threadLaneY(21) < view.cpuLaneY(0));
        QVERIFY(view.threadLaneY(21) >= TimelineView::kAxisHeight);
        QVERIFY(view.threadLaneY(20) > view.cpuLaneY(0));  // its process stays where it was
        // Pinned lanes stay while the rest scrolls.
        const int pinnedY = view.threadLaneY(21), cpuY = view.cpuLaneY(0);
        auto* bar = view.findChild<QScrollBar*>("timelineScroll");
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.resize(1200, 300);
        QTest::qWait(10);
        bar->setValue(40);
        QCOMPARE(view.threadLaneY(21), pinnedY);
        QCOMPARE(view.cpuLaneY(0), cpuY - 40);
        bar->setValue(0);
        view.resize(1200, 900);
        // Hover on the pinned lane still finds its thread.
        QCOMPARE(view.hitAt(QPoint(int(view.xOf(kBase + 9500)), pinnedY + 4)).tid, 21);
        // A CPU pinned after it goes below it; Unpin puts the thread back.
        menu.reset(view.laneMenu(QPoint(300, view.cpuLaneY(1) + 5)));
        actionNamed(menu.get(), "Pin to top")->trigger();
        QVERIFY(view.cpuLaneY(1) > view.threadLaneY(21) && view.cpuLaneY(1) < view.cpuLaneY(0));
        menu.reset(view.laneMenu(QPoint(300, view.threadLaneY(21) + 5)));
        QVERIFY(!actionNamed(menu.get(), "Pin to top"));
        actionNamed(menu.get(), "Unpin")->trigger();
        QVERIFY(view.threadLaneY(21) > view.processHeaderY(20));
        view.setPinned(TimelineLaneState::Pin::Cpu, 1, false);
        QVERIFY(view.laneState().pinned.empty());
        QCOMPARE(view.cpuLaneY(0), cpu0Y);
        QCOMPARE(view.processHeaderY(20), betaHeader);
        // A pinned process brings its threads.
        view.setPinned(TimelineLaneState::Pin::Process, 5, true);
        QVERIFY(view.processHeaderY(5) < view.cpuLaneY(0) && view.threadLaneY(5) < view.cpuLaneY(0));
        view.setPinned(TimelineLaneState::Pin::Process, 5, false);

        // Filter: a thread's name keeps its whole process; a number names a pid or tid.
        view.setLaneFilter("NET");
        QCOMPARE(view.processHeaderY(10), -1);
        QCOMPARE(view.processHeaderY(5), -1);
        QVERIFY(view.processHeaderY(20) >= 0 && view.threadLaneY(20) >= 0 && view.threadLaneY(21) >= 0);
        QCOMPARE(view.shownThreadCount(), 2);
        QVERIFY(view.cpuLaneY(0) >= 0 && view.healthLaneY(0) >= 0);  // CPUs are not filtered
        view.setLaneFilter("11");
        QVERIFY(view.processHeaderY(10) >= 0);
        QCOMPARE(view.processHeaderY(20), -1);
        view.setLaneFilter("zeta");
        QVERIFY(view.processHeaderY(5) >= 0 && view.processHeaderY(10) == -1);
        view.setLaneFilter("nothing like it");
        QCOMPARE(view.shownThreadCount(), 0);
        view.setLaneFilter("");
        QCOMPARE(view.shownThreadCount(), 5);

        // Sort by pid, by name, back to CPU time.
        view.setLaneSort(TimelineLaneState::Sort::Pid);
        QVERIFY(view.processHeaderY(5) < view.processHeaderY(10) &&
                view.processHeaderY(10) < view.processHeaderY(20));
        view.setLaneSort(TimelineLaneState::Sort::Name);
        QVERIFY(view.processHeaderY(10) < view.processHeaderY(20) &&
                view.processHeaderY(20) < view.processHeaderY(5));
        view.setLaneSort(TimelineLaneState::Sort::CpuTime);
        QCOMPARE(view.processHeaderY(20), betaHeader);

        // The state survives new data (zoom, reload) and round-trips as a QVariantMap.
        view.setProcessCollapsed(20, true);
        view.setPinned(TimelineLaneState::Pin::Cpu, 1, true);
        view.setLaneFilter("a");
        view.setLaneSort(TimelineLaneState::Sort::Name);
        view.setData(laneData());
        QVERIFY(view.processCollapsed(20));
        QCOMPARE(view.threadLaneY(21), -1);
        QVERIFY(view.cpuLaneY(1) < view.cpuLaneY(0));
        const TimelineLaneState state = view.laneState();
        QCOMPARE(TimelineLaneState::fromVariant(state.toVariant()), state);
        QCOMPARE(state.toVariant().value("pinned").toStringList(), QStringList{"cpu:1"});
        QCOMPARE(state.toVariant().value("sort").toString(), QString("name"));
        // Garbage is skipped, not taken.
        QVariantMap bad;
        bad["collapsed"] = QVariantList{"x", 7};
        bad["pinned"] = QStringList{"tid:x", "core:2", "pid:9"};
        bad["sort"] = "fastest";
        const TimelineLaneState read = TimelineLaneState::fromVariant(bad);
        QCOMPARE(read.collapsed, std::set<int32_t>{7});
        QCOMPARE(read.pinned.size(), size_t(1));
        QCOMPARE(read.pinned[0].id, 9);
        QCOMPARE(read.sort, TimelineLaneState::Sort::CpuTime);
        // Collapse all / expand all.
        view.setLaneFilter("");
        view.setAllProcessesCollapsed(true);
        QCOMPARE(view.shownThreadCount(), 0);
        QCOMPARE(view.laneState().collapsed, (std::set<int32_t>{5, 10, 20}));
        view.setAllProcessesCollapsed(false);
        QCOMPARE(view.shownThreadCount(), 5);
    }

    // LaneBar: drives the view, and keeps the state per file path across a new view and bar.
    void laneBarPersistsPerFile() {
        QTemporaryDir settingsDir;
        QVERIFY(settingsDir.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir.path());
        const QString org = QCoreApplication::organizationName();
        QCoreApplication::setOrganizationName("auxscope-lanebar-test");
        QTemporaryDir files;
        const QString path = files.filePath("a.data"), other = files.filePath("b.data");
        for (const QString& f : {path, other}) {
            QFile file(f);
            QVERIFY(file.open(QIODevice::WriteOnly));
        }
        {
            TimelineView view;
            view.resize(1200, 700);
            LaneBar bar(&view);
            bar.setFile(path);
            view.setData(laneData());
            QCOMPARE(bar.countLabel()->text(), QString("5 of 5 threads shown"));
            QCOMPARE(bar.filterEdit()->placeholderText(), QString("Filter lanes: name or pid"));
            bar.filterEdit()->setText("alpha");
            QCOMPARE(view.laneState().filter, QString("alpha"));
            QCOMPARE(bar.countLabel()->text(), QString("2 of 5 threads shown  (filtered)"));
            bar.sortBox()->setCurrentIndex(bar.sortBox()->findText("Sort by pid"));
            QCOMPARE(view.laneState().sort, TimelineLaneState::Sort::Pid);
            bar.findChild<QPushButton*>("laneCollapseAll")->click();
            QCOMPARE(view.shownThreadCount(), 0);
            bar.findChild<QPushButton*>("laneExpandAll")->click();
            QCOMPARE(view.shownThreadCount(), 2);
            view.setProcessCollapsed(10, true);  // from the view (a click): the bar saves it too
            view.setPinned(TimelineLaneState::Pin::Thread, 21, true);
            QVERIFY(bar.countLabel()->text().contains("1 collapsed"));
        }
        // A new view and bar for the same file (through another spelling of its path): all restored.
        TimelineView view;
        view.resize(1200, 700);
        LaneBar bar(&view);
        view.setData(laneData());
        bar.setFile(files.path() + "/./a.data");
        QCOMPARE(view.laneState().filter, QString("alpha"));
        QCOMPARE(view.laneState().sort, TimelineLaneState::Sort::Pid);
        QCOMPARE(view.laneState().collapsed, std::set<int32_t>{10});
        QVERIFY(view.laneState().isPinned(TimelineLaneState::Pin::Thread, 21));
        QCOMPARE(bar.filterEdit()->text(), QString("alpha"));
        QCOMPARE(bar.sortBox()->currentText(), QString("Sort by pid"));
        QCOMPARE(view.threadLaneY(10), -1);
        QVERIFY(view.threadLaneY(21) >= 0 && view.threadLaneY(21) < view.cpuLaneY(0));
        // Another file starts from the default state; back to the first, its state again.
        bar.setFile(other);
        QCOMPARE(view.laneState(), TimelineLaneState{});
        QCOMPARE(bar.filterEdit()->text(), QString());
        QCOMPARE(view.shownThreadCount(), 5);
        bar.setFile(path);
        QCOMPARE(view.laneState().filter, QString("alpha"));
        QVERIFY(QSettings().contains(LaneBar::settingsKey(path)));
        QCoreApplication::setOrganizationName(org);
    }

    void paintsSpansGapsAndUndecoded() {
        TimelineView view;
        view.resize(1000, 400);
        view.setData(synthetic());
        view.setVisibleRange(kBase, kBase + 20000);
        const QImage img = view.grab().toImage();
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
            img.save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/synthetic.png");
        const int row0 = view.rowY(100, 0) + 2, row1 = view.rowY(100, 1) + 2;
        QVERIFY(row0 > TimelineView::kAxisHeight);
        QCOMPARE(row1, row0 + TimelineView::kRowHeight);
        // Spans in their function's colour (away from their labels at the left).
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 8000, row0))),
                 rgb(TimelineView::functionColor("alpha")));
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 3900, row1))), rgb(TimelineView::functionColor("beta")));
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 11900, row0))),
                 rgb(TimelineView::functionColor("gamma")));
        // Nothing under beta's time on a row where nothing is, nothing at depth 1 beside it.
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 6000, row1))), rgb(QColor(Qt::white)));
        // The gap: hatched red, every pixel of it one of the two gap colours.
        bool hatch = false;
        for (uint64_t t = kBase + 9100; t < kBase + 9900; t += 40) {
            for (int dy = 0; dy < 10; ++dy) {
                const QColor c = img.pixelColor(at(view, t, row0 + dy));
                QVERIFY2(c.rgb() == TimelineView::gapColor().rgb() ||
                             c.rgb() == TimelineView::gapHatchColor().rgb(),
                         qPrintable(c.name()));
                hatch = hatch || c.rgb() == TimelineView::gapHatchColor().rgb();
            }
        }
        QVERIFY(hatch);
        // Outside the decoded window: shaded, gamma's second call not painted.
        for (uint64_t t = kBase + 15200; t < kBase + 19900; t += 100) {
            const QColor c = img.pixelColor(at(view, t, row0));
            QVERIFY2(c.rgb() != TimelineView::functionColor("gamma").rgb(),
                     qPrintable(QString::number(t - kBase)));
            QCOMPARE(rgb(c), rgb(QColor(226, 226, 230)));
        }
        // The CPU lane, coloured by process (issue 13): tid 100 of pid 100, then idle,
        // then tid 101 of the same process.
        const int lane = view.cpuLaneY(0) + 2;
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 4900, lane))), rgb(TimelineView::processColor(100)));
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 5500, lane))), rgb(QColor(Qt::white)));
        QCOMPARE(rgb(img.pixelColor(at(view, kBase + 19500, lane))), rgb(TimelineView::processColor(100)));
    }

    void undecodedHintIsShownAndTold() {
        TimelineView view;
        view.resize(1000, 400);
        view.setData(synthetic());
        view.setUndecodedHint("zoom in to decode (80.0 MB of trace in view)");
        const QString tip = view.toolTipAt(at(view, kBase + 17000, view.rowY(100, 0) + 5));
        QVERIFY2(tip.contains("zoom in to decode"), qPrintable(tip));
        QVERIFY(!view.grab().toImage().isNull());
    }

    void keysAndWheelZoomAndPanWithOneDebouncedSignal() {
        TimelineView view;
        view.resize(1000, 400);
        auto data = synthetic();
        data->end = kBase + 2'000'000;
        data->decodedEnd = data->end;
        view.setData(data);
        QSignalSpy spy(&view, &TimelineView::visibleRangeChanged);
        QCOMPARE(view.visibleRange().begin, kBase);
        QCOMPARE(view.visibleRange().end, kBase + 2'000'000);
        QTest::qWait(300);
        QCOMPARE(spy.count(), 0);  // the first data shows whole: nothing to ask for

        // W zooms in around the middle (the mouse is not over the view).
        QTest::keyClick(&view, Qt::Key_W);
        auto r = view.visibleRange();
        QVERIFY2(std::llabs(int64_t(r.end - r.begin) - 1'600'000) <= 2,
                 qPrintable(QString::number(r.end - r.begin)));
        QVERIFY(std::llabs(int64_t((r.begin + r.end) / 2) - int64_t(kBase + 1'000'000)) < 3000);
        // Ctrl+wheel zooms around the mouse: the time under it stays put.
        const QPoint mouse(view.plotLeft() + view.plotWidth() / 4, 200);
        const uint64_t under = view.timeAt(mouse.x());
        sendWheel(&view, mouse, 120, Qt::ControlModifier);
        r = view.visibleRange();
        QVERIFY2(std::llabs(int64_t(r.end - r.begin) - 1'280'000) <= 2,
                 qPrintable(QString::number(r.end - r.begin)));
        QVERIFY(std::llabs(int64_t(view.timeAt(mouse.x())) - int64_t(under)) <=
                int64_t((r.end - r.begin) / 500));
        // S zooms back out, D pans right by a tenth.
        QTest::keyClick(&view, Qt::Key_S);
        const auto beforePan = view.visibleRange();
        QTest::keyClick(&view, Qt::Key_D);
        r = view.visibleRange();
        QCOMPARE(r.end - r.begin, beforePan.end - beforePan.begin);
        QVERIFY(std::llabs(int64_t(r.begin - beforePan.begin) - int64_t((r.end - r.begin) / 10)) <= 2);
        // A plain wheel scrolls the tracks, not time.
        sendWheel(&view, mouse, -120, Qt::NoModifier);
        QCOMPARE(view.visibleRange().begin, r.begin);

        QCOMPARE(spy.count(), 0);  // not yet: still settling
        QTRY_COMPARE_WITH_TIMEOUT(spy.count(), 1, 2000);
        QCOMPARE(spy.at(0).at(0).toULongLong(), r.begin);
        QCOMPARE(spy.at(0).at(1).toULongLong(), r.end);
        QTest::qWait(400);
        QCOMPARE(spy.count(), 1);
    }

    void tooltipSelectionAndDoubleClick() {
        TimelineView view;
        view.resize(1000, 400);
        view.setData(synthetic());
        view.setVisibleRange(kBase, kBase + 20000);
        const QPoint onBeta = at(view, kBase + 3000, view.rowY(100, 1) + 5);
        const QString tip = view.toolTipAt(onBeta);
        QVERIFY2(tip.startsWith("beta"), qPrintable(tip));
        QVERIFY2(tip.contains("Depth: 1") && tip.contains("Instructions: 200") && tip.contains("/bin/prog") &&
                     tip.contains("Duration: 2.00 µs") && tip.contains("Start: +2.00 µs"),
                 qPrintable(tip));
        const QString gapTip = view.toolTipAt(at(view, kBase + 9500, view.rowY(100, 0) + 5));
        QVERIFY2(gapTip.contains("overflow") && gapTip.contains("offset 0x40"), qPrintable(gapTip));
        const QString cpuTip = view.toolTipAt(at(view, kBase + 1000, view.cpuLaneY(0) + 5));
        QVERIFY2(cpuTip.contains("synthetic") && cpuTip.contains("tid 100"), qPrintable(cpuTip));
        QVERIFY(view.toolTipAt(at(view, kBase + 6000, view.rowY(100, 1) + 5)).isEmpty());

        TimelineHit selected;
        connect(&view, &TimelineView::spanSelected, this, [&](const TimelineHit& h) { selected = h; });
        QTest::mouseClick(&view, Qt::LeftButton, {}, onBeta);
        QCOMPARE(selected.kind, TimelineHit::ThreadSpan);
        QCOMPARE(selected.function, QString("beta"));
        QCOMPARE(selected.span.depth, 1);
        QCOMPARE(selected.tid, 100);
        QCOMPARE(view.selection().function, QString("beta"));
        // Keyboard focus came with the click.
        QVERIFY(view.hasFocus() || !view.isVisible());

        QTest::mouseDClick(&view, Qt::LeftButton, {}, onBeta);
        const auto r = view.visibleRange();
        QVERIFY2(r.begin <= kBase + 2000 && r.begin >= kBase + 1800 && r.end >= kBase + 4000 &&
                     r.end <= kBase + 4200,
                 qPrintable(QString("%1 %2").arg(r.begin - kBase).arg(r.end - kBase)));
    }

    void dragPansAndFollowKeepsTheNewest() {
        TimelineView view;
        view.resize(1000, 400);
        auto data = synthetic();
        view.setData(data);
        view.setVisibleRange(kBase + 5000, kBase + 10000);
        // Dragging right by a tenth of the plot moves the view a tenth earlier.
        const QPoint from(view.plotLeft() + 400, 200);
        const int dx = view.plotWidth() / 10;
        QTest::mousePress(&view, Qt::LeftButton, {}, from);
        QTest::mouseMove(&view, from + QPoint(dx / 2, 0));
        QTest::mouseMove(&view, from + QPoint(dx, 0));
        QTest::mouseRelease(&view, Qt::LeftButton, {}, from + QPoint(dx, 0));
        auto r = view.visibleRange();
        QCOMPARE(r.end - r.begin, uint64_t(5000));
        QVERIFY2(std::llabs(int64_t(r.begin) - int64_t(kBase + 4500)) <= 10,
                 qPrintable(QString::number(r.begin - kBase)));
        QVERIFY(!view.selection().valid());  // a drag is not a click

        // Following: the newest 4 µs stay in view as the data grows.
        view.setFollowLatest(true, 4e-6);
        r = view.visibleRange();
        QCOMPARE(r.end, data->end);
        QCOMPARE(r.end - r.begin, uint64_t(4000));
        auto grown = std::make_shared<TimelineData>(*synthetic());
        grown->end = kBase + 50000;
        view.setData(grown);
        QCOMPARE(view.visibleRange().end, kBase + 50000);
        QCOMPARE(view.visibleRange().begin, kBase + 46000);
        // Panning away stops following.
        QTest::keyClick(&view, Qt::Key_A);
        QVERIFY(!view.followLatest());
        const auto kept = view.visibleRange();
        auto more = std::make_shared<TimelineData>(*synthetic());
        more->end = kBase + 90000;
        view.setData(more);
        QCOMPARE(view.visibleRange().begin, kept.begin);
        QCOMPARE(view.visibleRange().end, kept.end);
    }

    void largeDataIsSummarizedOffTheGuiThread() {
        TimelineView view;
        view.resize(800, 300);
        view.setAsyncSummaries(true, 2);  // everything counts as large here
        auto first = synthetic();
        view.setData(first);
        QVERIFY(view.preparing());
        QVERIFY(view.data() == nullptr);  // shows what it had until the summaries are ready
        auto second = synthetic();
        view.setData(second);
        QTRY_VERIFY(!view.preparing());
        QTRY_COMPARE(view.data(), std::shared_ptr<const TimelineData>(second));  // the newer data wins
        QTest::qWait(50);
        QCOMPARE(view.data(), std::shared_ptr<const TimelineData>(second));
        QVERIFY(!view.grab().toImage().isNull());
    }

    void levelOfDetailOnTwoMillionSpans() {
        auto data = std::make_shared<TimelineData>();
        auto functions = std::make_shared<FunctionTable>();
        for (int f = 0; f < 50; ++f)
            functions->add({"f" + std::to_string(f), "", 0});
        data->functions = functions;
        constexpr size_t n = 2'000'000;
        std::vector<Span> spans(n);
        for (size_t i = 0; i < n; ++i)
            spans[i] = {kBase + i * 5, kBase + i * 5 + 4, uint32_t(1 + i % 50), int32_t(i % 4), 3, -1};
        TimelineData::Thread t;
        t.pid = t.tid = 7;
        t.name = "busy";
        t.spans.append(spans);
        data->threads.push_back(std::move(t));
        data->begin = data->decodedBegin = kBase;
        data->end = data->decodedEnd = kBase + n * 5;

        TimelineView view;
        view.resize(1200, 300);
        view.setData(data);
        QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
        view.render(&image);
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
            image.save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/lod.png");
        auto frame = view.lastFrame();
        // Zoomed out: read from the summary, at most one rectangle per column and row.
        QVERIFY2(frame.spansWalked < 100'000, qPrintable(QString::number(frame.spansWalked)));
        QVERIFY(frame.maxRectsPerRow >= 1);
        QVERIFY2(frame.maxRectsPerRow <= view.plotWidth() + 2,
                 qPrintable(QString::number(frame.maxRectsPerRow)));
        QVERIFY2(frame.rects <= uint64_t(4 * (view.plotWidth() + 2) + 64),
                 qPrintable(QString::number(frame.rects)));
        int painted = 0;
        const int y = view.rowY(7, 0) + 5;
        for (int x = view.plotLeft(); x < view.plotLeft() + view.plotWidth(); ++x)
            painted += image.pixelColor(x, y).rgb() != QColor(Qt::white).rgb();
        QVERIFY2(painted > view.plotWidth() * 9 / 10, qPrintable(QString::number(painted)));

        // Mid zoom: a window of ~200 000 spans, still sane.
        view.setVisibleRange(kBase + 4'000'000, kBase + 5'000'000);
        view.render(&image);
        frame = view.lastFrame();
        QVERIFY2(frame.maxRectsPerRow <= view.plotWidth() + 2,
                 qPrintable(QString::number(frame.maxRectsPerRow)));
        QVERIFY2(frame.spansWalked < 300'000, qPrintable(QString::number(frame.spansWalked)));
        // Zoomed in: spans walked from where the view begins, each drawn.
        view.setVisibleRange(kBase + 5'000'000, kBase + 5'000'500);
        view.render(&image);
        frame = view.lastFrame();
        QVERIFY2(frame.spansWalked < 20'000, qPrintable(QString::number(frame.spansWalked)));
        QVERIFY2(frame.rects >= 90 && frame.rects <= 110, qPrintable(QString::number(frame.rects)));
        const QString tip = view.toolTipAt(at(view, kBase + 5'000'252, view.rowY(7, 2) + 5));
        QVERIFY2(tip.startsWith("f"), qPrintable(tip));
    }

    // A perf.data synthesized by auxscope-ptsynth, opened as the GUI does.
    void traceFilePageShowsDecodedSpans() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString data = dir.filePath("gen.data");
        const QString command = QString("'%1' --generate 1 --seed 3 -q -o '%2'").arg(AUXSCOPE_PTSYNTH, data);
        QCOMPARE(std::system(command.toLocal8Bit().constData()), 0);

        TraceFilePage page(data);
        page.setAutoDecodeLimit(0);  // only the timeline decodes
        // Below the trace's 1 MB, so the first frame is its first 1/1000 (a trace
        // within the budget opens decoded whole).
        page.setTimelineDecodeBudget(256 << 10);
        page.resize(1200, 700);
        QTRY_VERIFY_WITH_TIMEOUT(page.loaded(), 30000);
        QVERIFY(page.hasIntelPt());
        QVERIFY(page.timeline());
        // The first frame shows the lanes; its first decoded window follows.
        QTRY_VERIFY_WITH_TIMEOUT(
            page.timeline()->data() &&
                page.timeline()->data()->decodedEnd > page.timeline()->data()->decodedBegin &&
                !page.timelineDecoding(),
            60000);
        auto first = page.timeline()->data();
        QVERIFY(first->decodedEnd > first->decodedBegin);
        QVERIFY(first->decodedEnd - first->decodedBegin <= (first->end - first->begin) / 500 + 2);
        auto names = [](const TimelineData& d, size_t& spans) {
            std::set<std::string> out;
            spans = 0;
            for (const auto& t : d.threads)
                for (size_t i = 0; i < t.spans.size(); ++i) {
                    const Span s = t.spans.at(i);
                    ++spans;
                    if (!s.isGap()) out.insert((*d.functions)[s.function].name);
                }
            return out;
        };
        size_t spans = 0;
        auto firstNames = names(*first, spans);
        QVERIFY2(spans > 0, "the first frame has no spans");
        const std::regex generated("f[0-9]+_[0-9]+");
        auto hasGenerated = [&](const std::set<std::string>& set) {
            return std::any_of(set.begin(), set.end(),
                               [&](const std::string& n) { return std::regex_match(n, generated); });
        };
        QVERIFY2(hasGenerated(firstNames), qPrintable(QString::fromStdString(*firstNames.begin())));

        // Over the budget: not decoded, the view says to zoom in.
        page.setTimelineDecodeBudget(1000);
        page.timeline()->setVisibleRange(first->begin + 1, first->end);
        QTRY_VERIFY_WITH_TIMEOUT(page.timeline()->undecodedHint().startsWith("zoom in to decode"), 5000);
        QVERIFY2(page.timelineStatus()->text().contains("MB of trace in view"),
                 qPrintable(page.timelineStatus()->text()));
        QCOMPARE(page.timeline()->data(), first);

        // Zooming out to the whole recording decodes it (1 MB: within the budget).
        page.setTimelineDecodeBudget(uint64_t(64) << 20);
        QSignalSpy updated(&page, &TraceFilePage::timelineUpdated);
        page.timeline()->setVisibleRange(first->begin, first->end);
        QTRY_VERIFY2_WITH_TIMEOUT(updated.count() >= 1 && !page.timelineDecoding(),
                                  qPrintable(page.timelineStatus()->text()), 60000);
        auto whole = page.timeline()->data();
        size_t wholeSpans = 0;
        auto wholeNames = names(*whole, wholeSpans);
        QVERIFY2(wholeSpans > spans, qPrintable(QString("%1 vs %2").arg(wholeSpans).arg(spans)));
        QVERIFY(hasGenerated(wholeNames));
        QCOMPARE(whole->decodedBegin, page.timeline()->visibleRange().begin);
        QVERIFY(page.timelineStatus()->text().startsWith("Decoded"));
        // The painted view has function colours in the first thread's top row.
        const QImage img = page.timeline()->grab().toImage();
        QVERIFY(!img.isNull());
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))  // to look at by hand
            page.grab().save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/page.png");
    }
};

QTEST_MAIN(TimelineViewTest)
#include "TimelineViewTest.moc"
