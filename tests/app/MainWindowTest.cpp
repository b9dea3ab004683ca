// SPDX-License-Identifier: GPL-3.0-or-later
// Trace files in the GUI, offscreen: a capture streams into a perf.data that
// opens as a trace tab and can be saved; perf's own files open by File > Open
// and by drag and drop; export writes Perfetto and CSV; a damaged file says why.
#include <QLabel>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include "PerfEvent.h"
#include "gui/MainWindow.h"
#include "gui/capture/CapturePage.h"
#include "gui/trace/TraceFilePage.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;

namespace {

QTreeWidgetItem* findSection(QTreeWidget* tree, const QString& prefix) {
    for (int i = 0; i < tree->topLevelItemCount(); ++i)
        if (tree->topLevelItem(i)->text(0).startsWith(prefix)) return tree->topLevelItem(i);
    return nullptr;
}

QString childValue(QTreeWidgetItem* parent, const QString& key) {
    for (int i = 0; parent && i < parent->childCount(); ++i)
        if (parent->child(i)->text(0) == key) return parent->child(i)->text(1);
    return {};
}

}  // namespace

class MainWindowTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir dir_;
    QString perfFile_;

    static bool perfDenied(QString& why) {
        auto reason = perfCaptureUnavailableReason();
        if (reason) why = QString::fromStdString(*reason);
        return reason.has_value();
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        QString why;
        if (perfDenied(why)) return;
        // A file written by Debian's perf, the reference every tool reads.
        perfFile_ = dir_.filePath("perf-written.data");
        QProcess perf;
        perf.start("perf", {"record", "-q", "-e", "cpu-clock", "-a", "-o", perfFile_, "--", "sleep", "0.2"});
        QVERIFY2(perf.waitForFinished(30000), "perf record did not finish");
        QVERIFY2(perf.exitCode() == 0, perf.readAllStandardError().constData());
    }

    void captureStreamsToAFileThatOpensAsATrace() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        auto* tabs = window.findChild<QTabWidget*>("tabs");
        QVERIFY(tabs);
        QCOMPARE(tabs->count(), 1);
        page->start();
        QVERIFY(page->capturing());
        QTest::qWait(400);
        page->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 10000);
        const QString file = page->lastCaptureFile();
        QVERIFY2(QFileInfo::exists(file), qPrintable(file));
        QCOMPARE(tabs->count(), 2);  // the capture opened as a trace
        auto* trace = qobject_cast<TraceFilePage*>(tabs->currentWidget());
        QVERIFY(trace);
        QTRY_VERIFY_WITH_TIMEOUT(trace->loaded() || trace->failed(), 10000);
        QVERIFY(trace->loaded());
        // The file holds every sample the capture counted.
        auto records = findSection(trace->tree(), "Records");
        QVERIFY(records);
        QCOMPARE(childValue(records, "SAMPLE").toULongLong(), page->lastSummary().total().samples);

        const QString saved = dir_.filePath("saved.data");
        QVERIFY(page->saveCaptureAs(saved));
        QCOMPARE(QFileInfo(saved).size(), QFileInfo(file).size());
        auto reread = PerfDataReader::open(saved.toStdString());
        QVERIFY(reread.ok());
        QVERIFY(!reread->hasErrors());
    }

    void openPerfFileAndExport() {
        if (perfFile_.isEmpty()) QSKIP("perf_event_open is not permitted here (no perf-written file)");
        MainWindow window;
        TraceFilePage* trace = window.openFile(perfFile_);
        QTRY_VERIFY_WITH_TIMEOUT(trace->loaded() || trace->failed(), 10000);
        QVERIFY(trace->loaded());
        auto reader = PerfDataReader::open(perfFile_.toStdString());
        QVERIFY(reader.ok());
        auto records = findSection(trace->tree(), "Records");
        QVERIFY(records);
        QCOMPARE(childValue(records, "SAMPLE").toULongLong(),
                 reader->summary().recordsByType.at(PERF_RECORD_SAMPLE));

        const QString pf = dir_.filePath("out.pftrace"), csv = dir_.filePath("out.csv");
        QVERIFY(trace->exportTo("perfetto", pf));
        QVERIFY(QTest::qWaitFor([&] { return !trace->exporting(); }, 120000));  // on a worker thread
        QVERIFY(trace->exportTo("csv", csv));
        QVERIFY(QTest::qWaitFor([&] { return !trace->exporting(); }, 120000));  // on a worker thread
        QVERIFY(QFileInfo(pf).size() > 0);
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readLine().trimmed(), QByteArray("kind,cpu,time_ns,end_ns,pid,tid,name,value,detail"));
        int samples = 0;
        while (!f.atEnd())
            samples += f.readLine().startsWith("sample,");
        QCOMPARE(quint64(samples), reader->summary().recordsByType.at(PERF_RECORD_SAMPLE));
    }

    void dropOpensTheFile() {
        if (perfFile_.isEmpty()) QSKIP("perf_event_open is not permitted here (no perf-written file)");
        MainWindow window;
        auto* tabs = window.findChild<QTabWidget*>("tabs");
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(perfFile_)});
        QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &enter);
        QVERIFY(enter.isAccepted());
        QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(&window, &drop);
        QCOMPARE(tabs->count(), 2);
        QCOMPARE(tabs->tabText(1), QString("perf-written.data"));
    }

    // An Intel PT trace (fib, synthesized by auxscope-ptsynth): Decode runs on a
    // worker thread, the summary lists fib with the truth's number of calls, and
    // the Perfetto export then carries the spans.
    void decodeIntelPtShowsFunctionsAndExportsSpans() {
        const QString data = dir_.filePath("fib.data");
        QProcess synth;
        synth.start(AUXSCOPE_PTSYNTH, {"-q", "--start", "main", "-o", data, "--", AUXSCOPE_PTSYNTH_FIB});
        QVERIFY2(synth.waitForFinished(60000), "auxscope-ptsynth did not finish");
        QVERIFY2(synth.exitCode() == 0, synth.readAllStandardError().constData());
        // fib's calls per the truth: the most called target among its "TSC call FROM TO" events.
        QFile truth(data + ".truth");
        QVERIFY(truth.open(QIODevice::ReadOnly));
        QMap<QByteArray, quint64> callsTo;
        while (!truth.atEnd()) {
            const QList<QByteArray> words = truth.readLine().trimmed().split(' ');
            if (words.size() == 4 && words[1] == "call") ++callsTo[words[3]];
        }
        quint64 fibCalls = 0;
        for (quint64 n : callsTo)
            fibCalls = std::max(fibCalls, n);
        QVERIFY(fibCalls > 100);

        MainWindow window;
        TraceFilePage* trace = window.openFile(data);
        trace->setAutoDecodeLimit(0);  // this test presses the button itself
        QTRY_VERIFY_WITH_TIMEOUT(trace->loaded() || trace->failed(), 10000);
        QVERIFY(trace->loaded());
        QVERIFY(trace->hasIntelPt());
        auto* decode = trace->findChild<QPushButton*>("decodeIntelPt");
        QVERIFY(decode);
        QVERIFY(decode->isEnabled());
        QVERIFY(!trace->decoded());
        QSignalSpy finished(trace, &TraceFilePage::decodeFinished);
        QTest::mouseClick(decode, Qt::LeftButton);
        QVERIFY(trace->decoding());
        QVERIFY(!decode->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 30000);
        QCOMPARE(finished.at(0).at(0).toBool(), true);
        QVERIFY(trace->decoded());

        QTreeWidgetItem* pt = findSection(trace->tree(), "Intel PT");
        QVERIFY(pt);
        QTreeWidgetItem* thread = nullptr;
        for (int i = 0; i < pt->childCount(); ++i)
            if (pt->child(i)->text(0).startsWith("thread ")) thread = pt->child(i);
        QVERIFY2(thread, "no thread in the Intel PT summary");
        QTreeWidgetItem* fib = nullptr;
        for (int i = 0; i < thread->childCount(); ++i)
            if (thread->child(i)->text(0) == "fib") fib = thread->child(i);
        QVERIFY2(fib, "fib is not among the thread's top functions");
        QCOMPARE(fib->data(1, Qt::UserRole).toULongLong(), fibCalls);
        QVERIFY2(fib->text(1).contains(QString("in %1 calls").arg(fibCalls)), qPrintable(fib->text(1)));
        QVERIFY(!childValue(thread, "[gap: untraced]").isEmpty());

        const QString csv = dir_.filePath("fib.csv"), pf = dir_.filePath("fib.pftrace");
        QVERIFY(trace->exportTo("perfetto", pf));
        QVERIFY(QTest::qWaitFor([&] { return !trace->exporting(); }, 120000));  // on a worker thread
        QVERIFY(QFileInfo(pf).size() > 0);
        const QString status = trace->findChild<QLabel*>("traceStatus")->text();
        QVERIFY2(status.contains("Intel PT spans"), qPrintable(status));
        QVERIFY(trace->exportTo("csv", csv));
        QVERIFY(QTest::qWaitFor([&] { return !trace->exporting(); }, 120000));  // on a worker thread
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        quint64 fibRows = 0;
        while (!f.atEnd()) {
            const QByteArray line = f.readLine();
            fibRows += line.startsWith("span,") && line.contains(",fib,");
        }
        QCOMPARE(fibRows, fibCalls);
    }

    // A file without Intel PT offers no decode.
    void noDecodeWithoutIntelPt() {
        if (perfFile_.isEmpty()) QSKIP("perf_event_open is not permitted here (no perf-written file)");
        MainWindow window;
        TraceFilePage* trace = window.openFile(perfFile_);
        QTRY_VERIFY_WITH_TIMEOUT(trace->loaded() || trace->failed(), 10000);
        QVERIFY(!trace->hasIntelPt());
        QVERIFY(!trace->findChild<QPushButton*>("decodeIntelPt")->isVisibleTo(trace));
        QVERIFY(!trace->startDecode());
    }

    void damagedFileSaysWhy() {
        const QString bad = dir_.filePath("not-perf.data");
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(200, 'x'));
        f.close();
        MainWindow window;
        TraceFilePage* trace = window.openFile(bad);
        QTRY_VERIFY_WITH_TIMEOUT(trace->loaded() || trace->failed(), 10000);
        QVERIFY(trace->failed());
        const QString status = trace->findChild<QLabel*>("traceStatus")->text();
        QVERIFY2(status.contains("not-perf.data"), qPrintable(status));
        QVERIFY2(status.contains("magic", Qt::CaseInsensitive), qPrintable(status));
    }
};

QTEST_MAIN(MainWindowTest)
#include "MainWindowTest.moc"
