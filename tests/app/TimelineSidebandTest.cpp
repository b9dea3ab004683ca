// SPDX-License-Identifier: GPL-3.0-or-later
// Timelines for captures without a trace decoder (issue 13), offscreen: real
// captures made here with `auxscope record` (software events) open on the trace
// page's Timeline tab with CPU lanes naming the launched command's threads,
// thread lanes grouped under its process with sample ticks whose IPs resolve to
// the workload's functions; 8 KiB rings under a syscall storm pinned to one CPU
// gives LOST markers on that CPU's lane (drawn, and told on hover); a perf-written
// file and a simpleperf-written one from ../shared/data open on a timeline too. Capture-health lanes of a
// tiny-ring capture (ring fill, red ticks where records were lost, hover values), and a CPU the capture
// left out labelled "not traced". Structural checks on the model, and on a rendered image (colours where
// they belong, not pixel-exact).
#include <QLabel>
#include <QProcess>
#include <QProgressBar>
#include <QRegularExpression>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include <set>

#include "AuxscopeRecord.h"
#include "PerfEvent.h"
#include "TestData.h"
#include "gui/timeline/LaneBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/Sideband.h"

using namespace auxscope;

namespace {

// Runs `auxscope record ARGS`; an empty string when it worked, else why not.
QString record(const QStringList& args) {
    return test_support::auxscopeRecord(args);
}

// Opens `path` as the GUI does and waits for its timeline's lanes.
std::shared_ptr<const TimelineData> openTimeline(TraceFilePage& page) {
    page.setAutoDecodeLimit(0);
    page.resize(1400, 900);
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000) || !page.loaded())
        return nullptr;
    if (!page.timeline()) return nullptr;
    if (!QTest::qWaitFor([&] { return page.timeline()->data() && page.timeline()->data()->lanes; }, 60000))
        return nullptr;
    return page.timeline()->data();
}

const SidebandLanes::Thread* threadNamed(const SidebandLanes& lanes, const std::string& name) {
    for (const SidebandLanes::Thread& t : lanes.threads)
        if (t.name == name) return &t;
    return nullptr;
}

int countColor(const QImage& img, int y0, int y1, int x0, int x1, const QColor& c) {
    int n = 0;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x)
            n += img.pixelColor(x, y).rgb() == c.rgb();
    return n;
}

void maybeSave(const QImage& img, const char* name) {
    if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
        img.save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/" + name);
}

// The timeline data of `path` as TraceFilePage builds it (sideband, lanes), without the page.
std::shared_ptr<const TimelineData> timelineOf(const QString& path, QString* why) {
    auto file = PerfDataReader::open(path.toStdString());
    if (!file) return *why = QString::fromStdString(file.error().message), nullptr;
    auto sideband = Sideband::load(file.value());
    if (!sideband) return *why = QString::fromStdString(sideband.error().message), nullptr;
    auto lanes = buildSidebandLanes(sideband.value(), {});
    if (!lanes) return *why = "no lanes", nullptr;
    auto data = std::make_shared<TimelineData>();
    setTimelineCpus(*data, sideband.value());
    setTimelineLanes(*data, lanes);
    return data;
}

}  // namespace

class TimelineSidebandTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void initTestCase() {
        if (auto reason = perfCaptureUnavailableReason())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + QString::fromStdString(*reason)));
        QVERIFY(dir_.isValid());
    }

    // A launched command whose two named threads spin in known functions, sampled by cpu-clock.
    void softwareCaptureOpensOnTimeline() {
        const QString file = dir_.filePath("spin.data");
        const QString failed =
            record({"-e", "cpu-clock", "-F", "1000", "-o", file, "--", AUXSCOPE_TL_WORKLOAD, "spin", "300"});
        if (!failed.isEmpty()) QFAIL(qPrintable(failed));

        TraceFilePage page(file);
        auto data = openTimeline(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        // The page opens on the Timeline tab; the progress bar is gone once built.
        auto* tabs = page.findChild<QTabWidget*>("traceTabs");
        QVERIFY(tabs);
        QCOMPARE(tabs->tabText(tabs->currentIndex()), QString("Timeline"));
        QVERIFY(!page.timelineProgress()->isVisibleTo(&page));
        QVERIFY2(page.timelineStatus()->text().contains("samples"),
                 qPrintable(page.timelineStatus()->text()));

        const SidebandLanes& lanes = *data->lanes;
        const SidebandLanes::Thread* a = threadNamed(lanes, "tl-spin-a");
        const SidebandLanes::Thread* b = threadNamed(lanes, "tl-spin-b");
        QVERIFY2(a && b, "the workload's threads have lanes");
        QVERIFY(a->pid > 0);
        QCOMPARE(a->pid, b->pid);
        QVERIFY(a->tid != a->pid && b->tid != b->pid);
        // Grouped under the workload's process, named by its COMM.
        const SidebandLanes::Process* proc = lanes.process(a->pid);
        QVERIFY(proc);
        QCOMPARE(proc->name, std::string("tl_workload"));
        std::set<int32_t> members;
        for (size_t i : proc->threads) {
            members.insert(lanes.threads[i].tid);
            QCOMPARE(lanes.threads[i].pid, a->pid);
        }
        QVERIFY(members.count(a->tid) && members.count(b->tid) && members.count(a->pid));
        // Each spinning thread ran (~300 ms) and was sampled; the samples resolve
        // to the function it spun in.
        for (const auto& [t, fn] : {std::pair<const SidebandLanes::Thread*, const char*>{a, "tl_spin_a"},
                                    std::pair<const SidebandLanes::Thread*, const char*>{b, "tl_spin_b"}}) {
            QVERIFY2(t->runTime > 20'000'000, qPrintable(QString::number(t->runTime)));
            QVERIFY2(t->samples.size() > 10, qPrintable(QString::number(t->samples.size())));
            size_t resolved = 0;
            for (const SidebandLanes::Sample& s : t->samples) {
                QVERIFY(s.time >= data->begin && s.time <= data->end);
                resolved +=
                    s.function != FunctionTable::kUnknown && (*lanes.functions)[s.function].name == fn;
            }
            QVERIFY2(
                resolved > t->samples.size() / 2,
                qPrintable(QString("%1 of %2 samples in %3").arg(resolved).arg(t->samples.size()).arg(fn)));
        }
        // The CPU lanes name the threads where they ran.
        std::set<int32_t> onCpus;
        for (const auto& [cpu, slices] : data->cpus)
            for (const TimelineData::CpuSlice& s : slices)
                if (s.pid == a->pid) onCpus.insert(s.tid);
        QVERIFY(onCpus.count(a->tid) && onCpus.count(b->tid));
        QCOMPARE(data->threadNames.at(a->tid), std::string("tl-spin-a"));
        // The page's view shows the whole recording.
        QCOMPARE(page.timeline()->visibleRange().begin, data->begin);

        // Drawn: the process header above its thread lanes, runs in the process's
        // colour with sample ticks on them, the same colour on a CPU lane.
        TimelineView view;
        view.resize(1400, 3000);
        view.setData(data);
        // The longest run with a sample inside (under load runs are cut short
        // and a middle one may hold none).
        const SidebandLanes::Run* longest = nullptr;
        for (const SidebandLanes::Run& r : a->runs) {
            const bool sampled = std::any_of(a->samples.begin(), a->samples.end(), [&](const auto& x) {
                return x.time > r.start && x.time < r.end && x.function != FunctionTable::kUnknown &&
                       (*lanes.functions)[x.function].name.find("tl_spin_a") != std::string::npos;
            });
            if (sampled && (!longest || r.end - r.start > longest->end - longest->start)) longest = &r;
        }
        QVERIFY2(longest, "no run of tl-spin-a holds a sample");
        const SidebandLanes::Run& run = *longest;
        view.setVisibleRange(run.start, std::max(run.end, run.start + 2'000'000));
        const QImage img = view.grab().toImage();
        maybeSave(img, "sideband-spin.png");
        const int header = view.processHeaderY(a->pid), laneA = view.threadLaneY(a->tid);
        QVERIFY(header > 0);
        QVERIFY(laneA > header);
        QVERIFY(view.threadLaneY(b->tid) > header);
        const QColor procColor = TimelineView::processColor(a->pid);
        const int x0 = view.plotLeft(), x1 = view.plotLeft() + view.plotWidth();
        const int x0run = std::max(x0, int(view.xOf(run.start)) + 1);
        const int x1run = std::min(x1, int(view.xOf(run.end)) - 1);
        QVERIFY(x1run > x0run);
        QVERIFY2(countColor(img, laneA + 4, laneA + 11, x0run, x1run, procColor) > 0,
                 "run slice in its process colour");
        QVERIFY2(countColor(img, laneA + 13, laneA + 20, x0run, x1run, TimelineView::sampleColor()) > 0,
                 "sample ticks");
        const int cpuY = view.cpuLaneY(run.cpu);
        QVERIFY(cpuY >= 0);
        QVERIFY2(countColor(img, cpuY + 2, cpuY + 17, x0run, x1run, procColor) > (x1run - x0run) * 5,
                 "the CPU lane shows the process where the thread ran");
        // Hovering a sample names the event and the function its IP is in (one
        // in tl_spin_a: a tick may also land in the kernel or libc).
        const SidebandLanes::Sample* inView = nullptr;
        for (const auto& s : a->samples)
            if (s.time > run.start && s.time < run.end && s.function != FunctionTable::kUnknown &&
                (*lanes.functions)[s.function].name.find("tl_spin_a") != std::string::npos)
                inView = &s;
        QVERIFY(inView);
        const QString tip = view.toolTipAt(QPoint(int(view.xOf(inView->time) + 0.5), laneA + 16));
        QVERIFY2(tip.contains("Sample: cpu-clock") && tip.contains("tl_spin_a") && tip.contains("tl-spin-a"),
                 qPrintable(tip));
        const QString cpuTip = view.toolTipAt(QPoint((x0run + x1run) / 2, cpuY + 8));
        QVERIFY2(cpuTip.contains("tl-spin-a") && cpuTip.contains("tl_workload"), qPrintable(cpuTip));
    }

    // 8 KiB rings under a syscall storm pinned to one CPU: LOST markers on that CPU (red drawn only
    // on lanes with losses).
    void tinyRingGivesLostMarkersOnItsCpu() {
        const int cpu = QThread::idealThreadCount() > 1 ? 1 : 0;
        const QString file = dir_.filePath("storm.data");
        const QString failed = record({"-m", "2", "-e", "raw_syscalls:sys_enter", "-o", file, "--",
                                       AUXSCOPE_TL_WORKLOAD, "storm", "300", QString::number(cpu)});
        if (!failed.isEmpty()) QFAIL(qPrintable(failed));
        TraceFilePage page(file);
        auto data = openTimeline(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        const SidebandLanes& lanes = *data->lanes;
        QVERIFY(lanes.losses.count(cpu));
        const auto& losses = lanes.losses.at(cpu);
        uint64_t lost = 0;
        for (const SidebandLanes::Loss& l : losses) {
            QCOMPARE(int(l.kind), int(SidebandLanes::Loss::LostRecords));
            QVERIFY(l.time >= data->begin && l.time <= data->end);
            lost += l.count;
        }
        QVERIFY2(lost > 100, qPrintable(QString::number(lost)));
        // Before the storm pins itself (exec, library loading) a busy machine may
        // lose a few records elsewhere too: the pinned CPU's must be nearly all.
        uint64_t elsewhere = 0;
        for (const auto& [c, v] : lanes.losses)
            if (c != cpu)
                for (const SidebandLanes::Loss& l : v)
                    elsewhere += l.count;
        QVERIFY2(
            elsewhere * 20 < lost,
            qPrintable(QString("%1 lost on other CPUs, %2 on cpu %3").arg(elsewhere).arg(lost).arg(cpu)));
        QVERIFY(data->cpus.count(cpu));
        QVERIFY2(page.timelineStatus()->text().contains("loss markers"),
                 qPrintable(page.timelineStatus()->text()));
        // The losses came while the storm ran there: inside the workload's time on that CPU.
        const SidebandLanes::Thread* storm = threadNamed(lanes, "tl_workload");
        QVERIFY(storm);
        uint64_t first = UINT64_MAX, last = 0;
        for (const auto& r : storm->runs)
            if (r.cpu == cpu) first = std::min(first, r.start), last = std::max(last, r.end);
        QVERIFY(first < last);
        size_t during = 0;
        for (const SidebandLanes::Loss& l : losses)
            during += l.time >= first && l.time <= last + 50'000'000;
        QVERIFY2(during * 2 >= losses.size(), qPrintable(QString("%1 of %2").arg(during).arg(losses.size())));

        // Drawn as red markers on that CPU's lane; hovering one says how much and why.
        TimelineView view;
        view.resize(1200, 600);
        view.setData(data);
        const QImage img = view.grab().toImage();
        maybeSave(img, "sideband-lost.png");
        const int laneY = view.cpuLaneY(cpu);
        QVERIFY(laneY >= 0);
        const QColor red = TimelineView::lossColor(SidebandLanes::Loss::LostRecords);
        const int x = int(view.xOf(losses.front().time));
        QVERIFY2(countColor(img, laneY, laneY + TimelineView::kLaneHeight, x - 2, x + 3, red) > 5,
                 "a LOST marker");
        for (const auto& [c, slices] : data->cpus)
            if (c != cpu && (!lanes.losses.count(c) || lanes.losses.at(c).empty())) {
                const int y = view.cpuLaneY(c);
                QCOMPARE(countColor(img, y, y + TimelineView::kLaneHeight, view.plotLeft(),
                                    view.plotLeft() + view.plotWidth(), red),
                         0);
            }
        const QString tip = view.toolTipAt(QPoint(x, laneY + 10));
        QVERIFY2(tip.contains(QString("CPU %1: LOST: ").arg(cpu)) &&
                     tip.contains(QRegularExpression("records? lost")) && tip.contains("data ring was full"),
                 qPrintable(tip));
    }

    // Capture health of a real capture (auxscope's statistics section): 8 KiB
    // rings under a syscall storm pinned to one CPU. A health lane per CPU; on
    // the storm's CPU the ring fills and red ticks mark where records were lost,
    // hovering one says how many between which points; any point's hover has
    // its values.
    void healthLanesOfATinyRingCapture() {
        const int cpu = QThread::idealThreadCount() > 1 ? 1 : 0;
        const QString file = dir_.filePath("health.data");
        const QString failed = record({"-m", "2", "-e", "raw_syscalls:sys_enter", "-o", file, "--",
                                       AUXSCOPE_TL_WORKLOAD, "storm", "300", QString::number(cpu)});
        if (!failed.isEmpty()) QFAIL(qPrintable(failed));
        QString why;
        auto data = timelineOf(file, &why);
        QVERIFY2(data, qPrintable(why));
        const SidebandLanes& lanes = *data->lanes;
        QVERIFY(lanes.health.count(cpu));
        const auto& points = lanes.health.at(cpu);
        QVERIFY(points.size() >= 4);

        TimelineView view;
        view.resize(1400, 900);
        view.setData(data);
        LaneBar bar(&view);  // as a person sees it: the counts
        QVERIFY(bar.countLabel()->text().contains(QRegularExpression("^\\d+ of \\d+ threads? shown")));
        int previous = view.healthHeaderY();
        QVERIFY(previous > 0);
        for (const auto& [c, v] : lanes.health) {
            const int y = view.healthLaneY(c);
            QVERIFY2(y > previous, qPrintable(QString("cpu %1").arg(c)));
            previous = y;
        }
        // The whole recording: the storm's ring reached high fill, drawn as area.
        const QImage whole = view.grab().toImage();
        maybeSave(whole, "sideband-health.png");
        size_t peak = 0;
        for (size_t i = 0; i < points.size(); ++i)
            if (points[i].ringFill > points[peak].ringFill) peak = i;
        QVERIFY2(points[peak].ringFill > 50, qPrintable(QString::number(double(points[peak].ringFill))));
        const int laneY = view.healthLaneY(cpu), h = TimelineView::kHealthHeight;
        const int xPeak = int(view.xOf(points[peak].time));
        QVERIFY2(countColor(whole, laneY + h / 2, laneY + h - 3, xPeak - 3, xPeak + 1,
                            TimelineView::healthRingColor()) +
                         countColor(whole, laneY + h / 2, laneY + h - 3, xPeak - 3, xPeak + 1,
                                    TimelineView::healthFullColor()) >
                     4,
                 "the ring's fill at its peak");

        // The first point where the lost count grew: zoomed to it, a red tick; its hover says how much.
        size_t grew = points.size();
        for (size_t i = 1; i < points.size() && grew == points.size(); ++i)
            if (points[i].lostRecords > points[i - 1].lostRecords) grew = i;
        QVERIFY2(grew < points.size(), "the storm lost records");
        const uint64_t from = points[grew - 1].time, to = points[grew].time, step = to - from;
        view.setVisibleRange(from - step, to + step);
        const int x = int(view.xOf(to));
        const QImage zoomed = view.grab().toImage();
        maybeSave(zoomed, "sideband-health-tick.png");
        const QColor red = TimelineView::lossColor(SidebandLanes::Loss::LostRecords);
        QVERIFY2(countColor(zoomed, laneY + 1, laneY + h - 1, x - 2, x + 3, red) > 10, "a red tick");
        const TimelineHit tick = view.hitAt(QPoint(x, laneY + h / 2));
        QCOMPARE(tick.kind, TimelineHit::Health);
        QCOMPARE(tick.cpu, cpu);
        QCOMPARE(tick.end, to);
        QCOMPARE(tick.start, from);
        QCOMPARE(tick.lostRecordsHere, points[grew].lostRecords - points[grew - 1].lostRecords);
        const QString tip = view.toolTipAt(QPoint(x, laneY + h / 2));
        QVERIFY2(tip.contains(QString("CPU %1 capture health").arg(cpu)) && tip.contains("Lost between +") &&
                     tip.contains(QString("Ring fill: %1 %").arg(double(points[grew].ringFill), 0, 'f', 1)),
                 qPrintable(tip));
        // Inside the interval after it: that point's values.
        if (grew + 1 < points.size()) {
            const auto& next = points[grew + 1];
            view.setVisibleRange(to - (next.time - to), next.time + (next.time - to));
            const TimelineHit in =
                view.hitAt(QPoint(int(view.xOf(to + (next.time - to) / 2)), laneY + h / 2));
            QCOMPARE(in.kind, TimelineHit::Health);
            QCOMPARE(in.health.time, next.time);
            QCOMPARE(in.health.ringFill, next.ringFill);
            QCOMPARE(in.health.mibPerSec, next.mibPerSec);
            QCOMPARE(in.health.lostRecords, next.lostRecords);
        }
    }

    // A capture of CPU 0 only: CPU 1's lane says "not traced" (label, hatching, hover).
    void untracedCpuIsLabelled() {
        if (QThread::idealThreadCount() < 2) QSKIP("one CPU online");
        const QString file = dir_.filePath("cpu0.data");
        const QString failed = record({"-C", "0", "-e", "cpu-clock", "--duration", "0.3", "-o", file});
        if (!failed.isEmpty()) QFAIL(qPrintable(failed));
        QString why;
        auto data = timelineOf(file, &why);
        QVERIFY2(data, qPrintable(why));
        QCOMPARE(data->lanes->cpuNotes.count(1), size_t(1));
        QCOMPARE(data->lanes->cpuNotes.at(1), std::string("not traced"));
        QVERIFY(!data->lanes->cpuNotes.count(0));
        TimelineView view;
        view.resize(1200, 600);
        view.setData(data);
        const int y = view.cpuLaneY(1);
        QVERIFY(y > view.cpuLaneY(0));
        const QString tip = view.toolTipAt(QPoint(view.plotLeft() + 100, y + 8));
        QVERIFY2(tip.startsWith("CPU 1: not traced") && tip.contains("did not record"), qPrintable(tip));
        const QString cpu0 = view.toolTipAt(QPoint(view.plotLeft() + 100, view.cpuLaneY(0) + 8));
        QVERIFY2(!cpu0.contains("not traced"), qPrintable(cpu0));
        const QImage img = view.grab().toImage();
        maybeSave(img, "sideband-not-traced.png");
        const int x0 = view.plotLeft() + view.plotWidth() - 300, x1 = x0 + 290;
        QCOMPARE(countColor(img, y + 2, y + TimelineView::kLaneHeight - 2, x0, x1, Qt::white), 0);
        QVERIFY(countColor(img, y + 2, y + TimelineView::kLaneHeight - 2, x0, x1, QColor(185, 185, 185)) >
                20);
    }

    // perf's own file (Intel PT with cycles samples): a timeline with lanes for every CPU it recorded.
    void perfWrittenFileOpensOnTimeline() {
        AUXSCOPE_QNEED_TEST_DATA();
        const std::string path =
            test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
        TraceFilePage page(QString::fromStdString(path));
        auto data = openTimeline(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        const SidebandLanes& lanes = *data->lanes;
        QVERIFY(data->cpus.count(0) && data->cpus.count(3));
        QVERIFY(!lanes.processes.empty());
        QVERIFY(lanes.sampleCount > 0);
        size_t onThreads = 0;
        for (const auto& t : lanes.threads)
            onThreads += t.samples.size();
        QVERIFY(onThreads > 0);
        QVERIFY(data->end > data->begin);
        QCOMPARE(page.timeline()->visibleRange().begin, data->begin);
        QCOMPARE(page.timeline()->visibleRange().end, data->end);
        TimelineView view;
        view.resize(1200, 800);
        view.setData(data);
        QVERIFY(view.processHeaderY(lanes.processes.front().pid) > view.cpuLaneY(3));
        maybeSave(view.grab().toImage(), "sideband-perf.png");
    }

    // simpleperf's file (CoreSight ETM on cpu 7): a timeline with that CPU's lane and its process.
    void simpleperfFileOpensOnTimeline() {
        AUXSCOPE_QNEED_TEST_DATA();
        const std::string path = test_support::testDataPath("coresight/simpleperf-etm/perf_etm.data");
        TraceFilePage page(QString::fromStdString(path));
        auto data = openTimeline(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        QVERIFY(data->cpus.count(7));
        QVERIFY(!data->lanes->processes.empty());
        QVERIFY(data->end > data->begin);
        QCOMPARE(page.timeline()->visibleRange().begin, data->begin);
        // 384 bytes of CoreSight trace fit the decode budget: after the first frame
        // (the lanes) the whole recording is decoded, the loop's spans on its thread.
        QVERIFY(QTest::qWaitFor(
            [&] { return page.timeline()->data()->decodedEnd > page.timeline()->data()->decodedBegin; },
            60000));
        data = page.timeline()->data();
        QCOMPARE(data->decodedBegin, data->begin);
        QCOMPARE(data->decodedEnd, data->end);
        size_t spans = 0;
        for (const auto& t : data->threads)
            spans += t.spans.size();
        QVERIFY2(spans > 0, qPrintable(page.timelineStatus()->text()));
    }
};

QTEST_MAIN(TimelineSidebandTest)
#include "TimelineSidebandTest.moc"
