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
};

QTEST_MAIN(DecoderIsolationGuiTest)
#include "DecoderIsolationGuiTest.moc"
