// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view, offscreen: a synthetic TimelineData painted and checked
// pixel by pixel (a span in its function's colour at its time and depth, a gap
// hatched, nothing outside the decoded window), zoom and pan by keys and wheel
// with one debounced visibleRangeChanged, tooltips, selection, the level of
// detail on 2 M tiny spans, and a ptsynth perf.data opened on a TraceFilePage.
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <cstdlib>
#include <regex>

#include "gui/TimelineView.h"
#include "gui/TraceFilePage.h"

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

void sendWheel(QWidget* w, QPoint pos, int delta, Qt::KeyboardModifiers mods) {
    QWheelEvent e(QPointF(pos), QPointF(w->mapToGlobal(pos)), QPoint(), QPoint(0, delta), Qt::NoButton, mods,
                  Qt::NoScrollPhase, false);
    QApplication::sendEvent(w, &e);
}

}  // namespace

class TimelineViewTest : public QObject {
    Q_OBJECT
private slots:
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
        QTRY_VERIFY_WITH_TIMEOUT(page.timeline()->data() != nullptr, 60000);
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
