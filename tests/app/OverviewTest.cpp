// SPDX-License-Identifier: GPL-3.0-or-later
// The whole-recording overview (issue 13), offscreen: TimelineOverview's buckets
// on a hand-made timeline; perf's Skylake Intel PT file from ../shared/data opens
// on the whole recording with its lanes and the overview strip above them (busy
// fractions per bucket equal to those computed here from the switch slices, the
// AUX bytes of the file, samples and losses of the lanes), then decodes; a click
// on the strip centres the view at the time under the click, a drag moves it,
// Shift+drag selects a new window, the wheel zooms; the decode that follows the
// first frame stops on Cancel; a software-event capture made here with
// `auxscope record` gets an overview too (no trace area); many CPUs stack.
// Structural checks plus one rendered image, not pixel-exact.
#include <QLabel>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "AuxscopeRecord.h"
#include "PerfEvent.h"
#include "TestData.h"
#include "gui/timeline/OverviewStrip.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "spans/TimelineOverview.h"

using namespace auxscope;

namespace {

// Opens `page`'s file as the GUI does and waits for the first frame (lanes and overview).
std::shared_ptr<const TimelineData> openFirstFrame(TraceFilePage& page) {
    page.setAutoDecodeLimit(0);
    page.resize(1400, 900);
    page.show();
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000) || !page.loaded())
        return nullptr;
    if (!page.timeline() || !page.overviewStrip()) return nullptr;
    if (!QTest::qWaitFor(
            [&] {
                return page.timeline()->data() && page.timeline()->data()->lanes &&
                       page.overviewStrip()->overview();
            },
            60000))
        return nullptr;
    return page.timeline()->data();
}

// Per bucket of `o`, the busy fraction of `cpu` computed straight from its switch slices.
std::vector<double> busyFromSlices(const TimelineOverview& o,
                                   const std::vector<TimelineData::CpuSlice>& slices) {
    std::vector<double> busy(o.buckets, 0.0);
    for (size_t i = 0; i < o.buckets; ++i) {
        const uint64_t bb = o.bucketBegin(i), be = o.bucketBegin(i + 1);
        uint64_t ran = 0;
        for (const TimelineData::CpuSlice& s : slices) {
            if (s.tid == 0) continue;
            const uint64_t from = std::max(s.start, bb), to = std::min(s.end, be);
            if (to > from) ran += to - from;
        }
        busy[i] = std::min(1.0, double(ran) / double(be - bb));
    }
    return busy;
}

// The overview agrees with the timeline it was built from: busy per CPU and bucket,
// samples and losses of the lanes.
void checkAgainstData(const TimelineOverview& o, const TimelineData& data) {
    QCOMPARE(o.begin, data.begin);
    QCOMPARE(o.end, std::max(data.end, data.begin + 1));
    QVERIFY(o.buckets > 100);
    size_t checked = 0;
    for (const auto& [cpu, slices] : data.cpus) {
        const TimelineOverview::Cpu* c = o.cpu(cpu);
        QVERIFY2(c, qPrintable(QString("cpu %1 missing").arg(cpu)));
        QCOMPARE(c->switches, !slices.empty());
        const std::vector<double> want = busyFromSlices(o, slices);
        double sum = 0;
        for (size_t i = 0; i < o.buckets; ++i) {
            QVERIFY2(std::abs(double(c->busy[i]) - want[i]) < 1e-4,
                     qPrintable(QString("cpu %1 bucket %2: %3, from the slices %4")
                                    .arg(cpu)
                                    .arg(i)
                                    .arg(c->busy[i])
                                    .arg(want[i])));
            sum += want[i];
        }
        checked += sum > 0;
    }
    QVERIFY2(checked > 0, "no CPU was busy");
    uint64_t samples = 0, losses = 0;
    for (const SidebandLanes::Thread& t : data.lanes->threads)
        samples += t.samples.size();
    for (const auto& [cpu, v] : data.lanes->losses)
        losses += v.size();
    QCOMPARE(o.totalSamples, samples);
    QCOMPARE(o.totalLosses, losses);
}

QPoint stripPoint(OverviewStrip* strip, double fraction) {
    return QPoint(int(std::lround(strip->plotLeft() + fraction * strip->plotWidth())), strip->height() / 2);
}

void mouse(QWidget* w, QEvent::Type type, QPoint at, Qt::MouseButton button,
           Qt::KeyboardModifiers mods = {}) {
    const Qt::MouseButtons buttons =
        type == QEvent::MouseButtonRelease ? Qt::NoButton : Qt::MouseButtons(button);
    QMouseEvent e(type, QPointF(at), w->mapToGlobal(QPointF(at)),
                  type == QEvent::MouseMove ? Qt::NoButton : button, buttons, mods);
    QApplication::sendEvent(w, &e);
}

// Runs `auxscope record ARGS`; an empty string when it worked, else why not.
QString record(const QStringList& args) {
    return test_support::auxscopeRecord(args);
}

}  // namespace

class OverviewTest : public QObject {
    Q_OBJECT

private slots:
    // Buckets of a hand-made timeline: a slice over half a bucket makes it half busy,
    // idle counts for nothing, trace bytes spread by time, samples and losses counted.
    void bucketsOfAHandMadeTimeline() {
        TimelineData data;
        data.begin = 1000, data.end = 2000;
        data.cpus[0] = {{1000, 1050, 0, 0}, {1050, 1250, 7, 7}, {1250, 2000, 0, 0}};
        data.cpus[2] = {{1900, 2000, 9, 9}};
        auto lanes = std::make_shared<SidebandLanes>();
        SidebandLanes::Thread t;
        t.pid = t.tid = 7;
        t.samples = {{1060, 0, 0, 0, 0}, {1070, 0, 0, 0, 0}, {1999, 0, 0, 2, 0}};
        lanes->threads.push_back(t);
        SidebandLanes::Loss loss;
        loss.time = 1420;
        lanes->losses[2].push_back(loss);
        data.lanes = lanes;
        auto o = buildTimelineOverview(data, {{0, 1000, 2000, 5000}, {2, 0, 0, 77}}, 10);
        QCOMPARE(o->buckets, size_t(10));
        QCOMPARE(o->bucketBegin(3), uint64_t(1300));
        QCOMPARE(o->bucketOf(1299), size_t(2));
        QCOMPARE(o->bucketOf(1300), size_t(3));
        const TimelineOverview::Cpu* c0 = o->cpu(0);
        QVERIFY(c0 && c0->switches);
        QCOMPARE(c0->busy[0], 0.5f);
        QCOMPARE(c0->busy[1], 1.0f);
        QCOMPARE(c0->busy[2], 0.5f);
        QCOMPARE(c0->busy[3], 0.0f);
        QCOMPARE(o->cpu(2)->busy[9], 1.0f);
        QCOMPARE(o->busyCpus[9], 1.0f);
        QCOMPARE(c0->samples[0], 2u);
        QCOMPARE(o->cpu(2)->samples[9], 1u);
        QCOMPARE(o->cpu(2)->losses[4], 1u);
        QCOMPARE(o->losses[4], 1u);
        QCOMPARE(o->totalSamples, uint64_t(3));
        for (size_t i = 0; i < 10; ++i)
            QCOMPARE(c0->traceBytes[i], 500.f);
        QCOMPARE(o->totalTraceBytes, uint64_t(5077));
        QCOMPARE(o->untimedTraceBytes, uint64_t(77));  // no time: in no bucket
        QVERIFY(!o->cpu(1));
    }

    // More CPUs than rows: one stacked area of busy CPUs, as high as the share of CPUs busy.
    void manyCpusStack() {
        TimelineData data;
        data.begin = 0, data.end = 1'000'000;
        for (int cpu = 0; cpu < 64;
             ++cpu)  // the first half of the time every CPU ran, the second half only 16
            data.cpus[cpu] = {{0, cpu < 16 ? 1'000'000u : 500'000u, 1, 100 + cpu}};
        auto o = buildTimelineOverview(data, {});
        QCOMPARE(o->busyCpus.front(), 64.f);
        QCOMPARE(o->busyCpus.back(), 16.f);
        OverviewStrip strip;
        strip.resize(1000, strip.sizeHint().height());
        strip.setOverview(o);
        QVERIFY(strip.stacked());
        QCOMPARE(strip.cpuRowCount(), 0);
        const QImage img = strip.grab().toImage();
        // Filled to the top on the left, to a quarter of the height on the right.
        auto filled = [&](int x) {
            int n = 0;
            for (int y = 0; y < img.height(); ++y) {
                const QColor c = img.pixelColor(x, y);
                n += c.blue() > c.red() + 60;
            }
            return n;
        };
        const int left = filled(strip.plotLeft() + strip.plotWidth() / 4),
                  right = filled(strip.plotLeft() + 3 * strip.plotWidth() / 4);
        QVERIFY2(left > 30 && std::abs(right * 4 - left) <= 8,
                 qPrintable(QString("%1 %2").arg(left).arg(right)));
    }

    // perf's Skylake Intel PT recording: the whole of it on the first frame, lanes and overview.
    void skylakeOpensWhole() {
        AUXSCOPE_QNEED_TEST_DATA();
        const std::string path =
            test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
        TraceFilePage page(QString::fromStdString(path));
        QSignalSpy opened(&page, &TraceFilePage::timelineOpened);
        auto data = openFirstFrame(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        QVERIFY(page.hasIntelPt());
        QCOMPARE(opened.count(), 1);
        TimelineView* view = page.timeline();
        OverviewStrip* strip = page.overviewStrip();
        // The whole recording in the view and on the strip (its bracket around all of it).
        QCOMPARE(view->visibleRange().begin, data->begin);
        QCOMPARE(view->visibleRange().end, data->end);
        QCOMPARE(strip->visibleBegin(), data->begin);
        QCOMPARE(strip->visibleEnd(), data->end);
        QVERIFY2(data->end - data->begin > 2'000'000, "the recording is about 2.2 ms");
        QVERIFY(data->cpus.size() >= 2);
        const TimelineOverview& o = *strip->overview();
        checkAgainstData(o, *data);
        if (QTest::currentTestFailed()) return;
        // The AUX trace: every byte of the file's two AUXTRACE buffers (cpu 0, cpu 3), on those CPUs.
        QCOMPARE(o.totalTraceBytes, uint64_t(12240 + 137728));
        QVERIFY(o.cpu(3) && o.cpu(0));
        double cpu3 = 0, cpu0 = 0;
        for (size_t i = 0; i < o.buckets; ++i)
            cpu3 += o.cpu(3)->traceBytes[i], cpu0 += o.cpu(0)->traceBytes[i];
        QVERIFY2(std::abs(cpu3 - 137728) < 2 && std::abs(cpu0 - 12240) < 2,
                 qPrintable(QString("%1 %2").arg(cpu3).arg(cpu0)));
        QVERIFY(o.hasTrace());
        QVERIFY(!strip->traceArea().isEmpty());
        QVERIFY(strip->cpuRowCount() >= 2 && strip->cpuRowCount() <= int(data->cpus.size()));
        QCOMPARE(strip->plotLeft(), view->plotLeft());
        QCOMPARE(strip->plotWidth(), view->plotWidth());

        // The trace is within the decode budget: it is decoded whole next, with a progress bar meanwhile.
        QVERIFY(QTest::qWaitFor(
            [&] {
                auto d = view->data();
                return d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
            },
            60000));
        QCOMPARE(view->data()->decodedBegin, data->begin);
        QCOMPARE(view->data()->decodedEnd, data->end);
        QVERIFY(!page.timelineProgress()->isVisible());
        QVERIFY(!page.timelineCancelButton()->isVisible());
        QVERIFY2(page.timelineStatus()->text().startsWith("Decoded"),
                 qPrintable(page.timelineStatus()->text()));

        // Rendered: heat on CPU 3's row where it was busiest, the trace area green, the bracket dark.
        const QImage img = strip->grab().toImage();
        QVERIFY(!img.isNull());
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
            page.grab().save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/overview-skylake.png");
        const QRect trace = strip->traceArea();
        int green = 0, heat = 0;
        for (int x = strip->plotLeft() + 3; x < strip->plotLeft() + strip->plotWidth() - 3; ++x) {
            const QColor c = img.pixelColor(x, trace.bottom());
            green += c.green() > c.red() + 40 && c.green() > c.blue();
            for (int y = 3; y < trace.top() - 2; ++y) {
                const QColor h = img.pixelColor(x, y);
                heat += h.blue() > h.red() + 60;
            }
        }
        QVERIFY2(green > strip->plotWidth() / 4, qPrintable(QString::number(green)));
        QVERIFY2(heat > 100, qPrintable(QString::number(heat)));
        const QColor edge = img.pixelColor(strip->plotLeft(), trace.center().y());
        QVERIFY2(edge.lightness() < 80, qPrintable(edge.name()));
    }

    // Clicking the strip centres the view on the time under the click; dragging the bracket
    // moves it by as much time as the mouse moved; Shift+drag selects a window; the wheel zooms.
    void navigation() {
        AUXSCOPE_QNEED_TEST_DATA();
        const std::string path =
            test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14");
        TraceFilePage page(QString::fromStdString(path));
        auto data = openFirstFrame(page);
        QVERIFY(data);
        TimelineView* view = page.timeline();
        OverviewStrip* strip = page.overviewStrip();
        const uint64_t span = data->end - data->begin;
        const double nsPerPx = double(span) / strip->plotWidth();

        // A tenth of the recording, from its start: the strip's bracket follows.
        view->setVisibleRange(data->begin, data->begin + span / 10);
        QTRY_COMPARE(strip->visibleEnd(), view->visibleRange().end);  // once the view settles
        QCOMPARE(strip->visibleBegin(), view->visibleRange().begin);
        const uint64_t width = view->visibleRange().end - view->visibleRange().begin;

        // Click at 70 %: the view's centre is the time at that x.
        const QPoint at = stripPoint(strip, 0.7);
        const uint64_t want = strip->timeAt(at.x());
        mouse(strip, QEvent::MouseButtonPress, at, Qt::LeftButton);
        mouse(strip, QEvent::MouseButtonRelease, at, Qt::LeftButton);
        auto centre = [&] { return double(view->visibleRange().begin + view->visibleRange().end) / 2; };
        QVERIFY2(std::abs(centre() - double(want)) <= nsPerPx,
                 qPrintable(QString("centre %1, clicked %2").arg(centre()).arg(want)));
        QCOMPARE(view->visibleRange().end - view->visibleRange().begin, width);  // the zoom is kept
        QCOMPARE(strip->visibleBegin(), view->visibleRange().begin);

        // Drag the bracket 60 px to the left: the view moves by 60 px of the strip's time.
        const uint64_t before = view->visibleRange().begin;
        const QPoint grab(
            int(std::lround(strip->xOf((view->visibleRange().begin + view->visibleRange().end) / 2))),
            strip->height() / 2);
        mouse(strip, QEvent::MouseButtonPress, grab, Qt::LeftButton);
        for (int dx = 10; dx <= 60; dx += 10)
            mouse(strip, QEvent::MouseMove, grab - QPoint(dx, 0), Qt::LeftButton);
        mouse(strip, QEvent::MouseButtonRelease, grab - QPoint(60, 0), Qt::LeftButton);
        const double moved = double(before) - double(view->visibleRange().begin);
        QVERIFY2(std::abs(moved - 60 * nsPerPx) <= 1.5 * nsPerPx,
                 qPrintable(QString("moved %1 ns, 60 px are %2 ns").arg(moved).arg(60 * nsPerPx)));
        QCOMPARE(view->visibleRange().end - view->visibleRange().begin, width);

        // Shift+drag from 20 % to 40 %: that window.
        const QPoint a = stripPoint(strip, 0.2), b = stripPoint(strip, 0.4);
        mouse(strip, QEvent::MouseButtonPress, a, Qt::LeftButton, Qt::ShiftModifier);
        mouse(strip, QEvent::MouseMove, b, Qt::LeftButton, Qt::ShiftModifier);
        mouse(strip, QEvent::MouseButtonRelease, b, Qt::LeftButton, Qt::ShiftModifier);
        QVERIFY(std::abs(double(view->visibleRange().begin) - double(strip->timeAt(a.x()))) <= nsPerPx);
        QVERIFY(std::abs(double(view->visibleRange().end) - double(strip->timeAt(b.x()))) <= nsPerPx);

        // The wheel (up) zooms in around the mouse; a double-click shows everything.
        const uint64_t wide = view->visibleRange().end - view->visibleRange().begin;
        const QPoint mid = stripPoint(strip, 0.3);
        QWheelEvent wheel(QPointF(mid), strip->mapToGlobal(QPointF(mid)), QPoint(), QPoint(0, 120),
                          Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(strip, &wheel);
        QVERIFY2(
            view->visibleRange().end - view->visibleRange().begin < wide,
            qPrintable(
                QString("%1 vs %2").arg(view->visibleRange().end - view->visibleRange().begin).arg(wide)));
        QTest::mouseDClick(strip, Qt::LeftButton, {}, stripPoint(strip, 0.5));
        QCOMPARE(view->visibleRange().begin, data->begin);
        QCOMPARE(view->visibleRange().end, data->end);

        // A pan on the view itself (A/D keys) reaches the strip at once, not only once the view settles.
        view->setVisibleRange(data->begin, data->begin + span / 10);
        view->setFocus();
        QTest::keyClick(view, Qt::Key_D);
        QTRY_COMPARE_WITH_TIMEOUT(strip->visibleBegin(), view->visibleRange().begin, 100);
    }

    // The decode that follows the first frame shows a progress bar and stops on Cancel:
    // nothing of it is shown, the view says so, and moving the view decodes again.
    void cancelStopsTheDecode() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString file = dir.filePath("gen.data");
        const QString command = QString("'%1' --generate 8 --seed 5 -q -o '%2'").arg(AUXSCOPE_PTSYNTH, file);
        QCOMPARE(std::system(command.toLocal8Bit().constData()), 0);
        TraceFilePage page(file);
        bool busyAtOpen = false, barAtOpen = false;
        QString statusAtOpen;
        connect(&page, &TraceFilePage::timelineOpened, this, [&] {
            // The whole recording (8 MB, within the budget) starts decoding right after the first frame.
            QMetaObject::invokeMethod(
                &page,
                [&] {
                    busyAtOpen = page.timelineDecoding();
                    statusAtOpen = page.timelineStatus()->text();
                    barAtOpen =
                        page.timelineProgress()->isVisible() && page.timelineCancelButton()->isVisible();
                    page.timelineCancelButton()->click();
                },
                Qt::QueuedConnection);
        });
        auto data = openFirstFrame(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        QVERIFY(QTest::qWaitFor([&] { return !statusAtOpen.isEmpty(); }, 10000));
        QVERIFY2(busyAtOpen, qPrintable(statusAtOpen));
        QVERIFY(barAtOpen);
        QVERIFY(QTest::qWaitFor([&] { return !page.timelineDecoding(); }, 60000));
        QCOMPARE(page.timeline()->data()->decodedEnd, page.timeline()->data()->decodedBegin);
        QCOMPARE(page.timelineStatus()->text(), QString("Decode cancelled."));
        QVERIFY2(page.timeline()->undecodedHint().contains("cancelled"),
                 qPrintable(page.timeline()->undecodedHint()));
        QVERIFY(!page.timelineProgress()->isVisible());
        QVERIFY(!page.timelineCancelButton()->isVisible());
        // Moving the view asks again.
        page.timeline()->setVisibleRange(data->begin, data->begin + (data->end - data->begin) / 2);
        QVERIFY(QTest::qWaitFor(
            [&] {
                auto d = page.timeline()->data();
                return d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
            },
            60000));
        QVERIFY2(page.timelineStatus()->text().startsWith("Decoded"),
                 qPrintable(page.timelineStatus()->text()));
    }

    // A capture of software events (no AUX trace) made here: an overview of busy CPUs and samples.
    void softwareCaptureGetsOverview() {
        if (auto reason = perfCaptureUnavailableReason())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + QString::fromStdString(*reason)));
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString file = dir.filePath("spin.data");
        const QString failed =
            record({"-e", "cpu-clock", "-F", "1000", "-o", file, "--", AUXSCOPE_TL_WORKLOAD, "spin", "300"});
        if (!failed.isEmpty()) QFAIL(qPrintable(failed));
        TraceFilePage page(file);
        auto data = openFirstFrame(page);
        QVERIFY2(data, qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        QVERIFY(!page.hasIntelPt());
        const TimelineOverview& o = *page.overviewStrip()->overview();
        checkAgainstData(o, *data);
        if (QTest::currentTestFailed()) return;
        // Two threads spinning 300 ms each at 1 kHz; a loaded machine gives them less CPU.
        QVERIFY2(o.totalSamples > 10, qPrintable(QString::number(o.totalSamples)));
        QVERIFY(!o.hasTrace());
        QVERIFY(page.overviewStrip()->traceArea().isEmpty());
        QCOMPARE(page.timeline()->visibleRange().begin, data->begin);
        QCOMPARE(page.overviewStrip()->visibleEnd(), data->end);
        QVERIFY(!page.timelineProgress()->isVisible());
        if (qEnvironmentVariableIsSet("AUXSCOPE_TIMELINE_SHOTS"))
            page.grab().save(qEnvironmentVariable("AUXSCOPE_TIMELINE_SHOTS") + "/overview-software.png");
    }
};

QTEST_MAIN(OverviewTest)
#include "OverviewTest.moc"
