// SPDX-License-Identifier: GPL-3.0-or-later
// The trace page, offscreen, on a CoreSight perf.data whose middle AUX buffer
// crashes OpenCSD 1.3.3 (tests/decode/OpenCsdCrashFile.h): the decode runs in
// worker processes (decode/spans/IsolatedDecode.h), so the page decodes the
// file, its summary shows the segment as a "decoder crashed" gap with its cause
// "decoder crashed (OpenCSD, SIGSEGV)" beside the spans of the other segments,
// and this process (the GUI's) lives on to open the file a second time.
#include <QLabel>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "../decode/OpenCsdCrashFile.h"
#include "gui/analysis/CodeView.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"

using namespace auxscope;

namespace {

// Every item under `item` (itself included), depth first.
void collect(QTreeWidgetItem* item, std::vector<QTreeWidgetItem*>& out) {
    out.push_back(item);
    for (int i = 0; i < item->childCount(); ++i)
        collect(item->child(i), out);
}

}  // namespace

class DecoderIsolationGuiTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;

private slots:
    void crashedSegmentIsAGapAndThePageLives() {
        const QString path = dir_.filePath("crash.data");
        auto w = isolationtest::writeOpenCsdCrashPerfData(AUXSCOPE_OPENCSD_CRASH_INPUT, path.toStdString());
        QVERIFY2(w.ok(), w.ok() ? "" : w.error().message.c_str());
        for (int round = 0; round < 2; ++round) {
            TraceFilePage page(path);
            QSignalSpy loaded(&page, &TraceFilePage::loadFinished);
            QSignalSpy decoded(&page, &TraceFilePage::decodeFinished);
            QVERIFY(loaded.wait(30000));
            QVERIFY(decoded.count() > 0 || decoded.wait(60000));  // small files decode by themselves
            QCOMPARE(decoded.first().first().toBool(), true);
            auto* status = page.findChild<QLabel*>("traceStatus");
            QVERIFY(status);
            QVERIFY2(status->text().contains("decoded"), qPrintable(status->text()));
            std::vector<QTreeWidgetItem*> items;
            for (int i = 0; i < page.tree()->topLevelItemCount(); ++i)
                collect(page.tree()->topLevelItem(i), items);
            QTreeWidgetItem* crashed = nullptr;
            bool spans = false;
            for (QTreeWidgetItem* item : items) {
                if (item->text(0) == "[gap: decoder crashed]") crashed = item;
                static const QRegularExpression decodedCode(", [1-9][0-9]* instructions");
                if (item->text(0).startsWith("thread ") && item->text(1).contains(decodedCode)) spans = true;
            }
            QVERIFY2(crashed, "the summary lists a decoder crashed gap");
            QCOMPARE(crashed->text(1), QString("1"));
            bool cause = false;
            for (int i = 0; i < crashed->childCount(); ++i)
                cause = cause || crashed->child(i)->text(1) == "decoder crashed (OpenCSD, SIGSEGV)";
            QVERIFY2(cause, "its cause names the library and the signal");
            QVERIFY2(spans, "the other segments decoded");
        }
    }

    // The code view decodes the flow of a range again (forEachBlock): over the
    // crashed segment OpenCSD dies in a worker process, the window lives, and
    // the view shows the function's code with a note naming the crash.
    void codeViewOverTheCrashLives() {
        const QString path = dir_.filePath("crash-code.data");
        auto w = isolationtest::writeOpenCsdCrashPerfData(AUXSCOPE_OPENCSD_CRASH_INPUT, path.toStdString());
        QVERIFY2(w.ok(), w.ok() ? "" : w.error().message.c_str());
        TraceFilePage page(path);
        page.setAutoDecodeLimit(0);
        page.setTimelineDecodeBudget(uint64_t(1) << 30);
        page.resize(1400, 1000);
        page.show();
        QVERIFY(QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000));
        QVERIFY(page.loaded());
        QVERIFY(page.timeline());
        QVERIFY(QTest::qWaitFor(
            [&] {
                const auto& d = page.timeline()->data();
                return d && d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
            },
            60000));
        const auto data = page.timeline()->data();
        // The function with the most spans, over the whole recording.
        std::map<uint32_t, size_t> counts;
        for (const TimelineData::Thread& t : data->threads)
            t.spans.forEach(0, t.spans.size(), [&](size_t, const Span& s) {
                if (!s.isGap()) ++counts[s.function];
            });
        QVERIFY(!counts.empty());
        uint32_t function = counts.begin()->first;
        for (const auto& [f, n] : counts)
            if (n > counts[function]) function = f;
        page.showCode(-1, function, data->begin, data->end);
        CodeView* view = page.codeView();
        QVERIFY(view);
        QVERIFY2(QTest::qWaitFor(
                     [&] { return view->code() || view->header()->styleSheet().contains("#b00020"); }, 60000),
                 qPrintable(view->header()->text()));
        QVERIFY2(view->code(), qPrintable(view->header()->text()));
        QVERIFY2(view->header()->text().contains("decoder crashed (OpenCSD, SIGSEGV) on 1 segment"),
                 qPrintable(view->header()->text()));
        QVERIFY2(view->code()->executed > 0, "the other segments' blocks are counted");
    }
};

QTEST_MAIN(DecoderIsolationGuiTest)
#include "DecoderIsolationGuiTest.moc"
