// SPDX-License-Identifier: GPL-3.0-or-later
// The capture page, offscreen: Start, live chart points, Stop ends the drain
// thread; bad input is reported on the page and nothing starts.
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

#include "PerfEvent.h"
#include "gui/AuxOptionsPanel.h"
#include "gui/CapturePage.h"
#include "gui/MainWindow.h"
#include "gui/TimelineView.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;

class CapturePageTest : public QObject {
    Q_OBJECT
private:
    static bool perfDenied(QString& why) {
        auto reason = perfCaptureUnavailableReason();
        if (reason) why = QString::fromStdString(*reason);
        return reason.has_value();
    }
    static int recordsColumn(QTableWidget* table) {
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->horizontalHeaderItem(c)->text() == "Records") return c;
        return -1;
    }
    static QList<QLineSeries*> lineSeries(QChartView* view) {
        QList<QLineSeries*> out;
        for (auto* s : view->chart()->series())
            out << qobject_cast<QLineSeries*>(s);
        return out;
    }

private slots:
    void startStreamsPointsAndStopEndsDrainThread() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        auto* start = page->findChild<QPushButton*>("startButton");
        auto* stop = page->findChild<QPushButton*>("stopButton");
        auto* throughput = page->findChild<QChartView*>("throughputChart");
        auto* lost = page->findChild<QChartView*>("lostChart");
        auto* table = page->findChild<QTableWidget*>("cpuTable");
        QVERIFY(start && stop && throughput && lost && table);
        QVERIFY(!stop->isEnabled());

        // For README's screenshot: a syscall storm into a tiny ring, so loss shows.
        const QByteArray shot = qgetenv("AUXSCOPE_SCREENSHOT");
        if (!shot.isEmpty()) {
            page->findChild<QLineEdit*>("events")->setText("raw_syscalls:*");
            page->findChild<QComboBox*>("bufferPages")->setCurrentIndex(0);
        }
        QTest::mouseClick(start, Qt::LeftButton);
        QVERIFY(page->capturing());
        if (!shot.isEmpty()) {
            for (int i = 0; i < 80; ++i) {
                QElapsedTimer burst;
                burst.start();
                while (burst.elapsed() < 50)
                    close(-1);
                QTest::qWait(50);
            }
            window.grab().save(QString::fromLocal8Bit(shot));
        }
        QVERIFY(stop->isEnabled());
        QVERIFY(!start->isEnabled());
        const auto series = lineSeries(throughput);
        QCOMPARE(series.size(), table->rowCount());
        QCOMPARE(lineSeries(lost).size(), table->rowCount());
        QVERIFY(!series.isEmpty());
        // At 10 Hz the series gain points while capturing.
        QTRY_VERIFY_WITH_TIMEOUT(series.first()->count() >= 5, 5000);
        QTRY_VERIFY_WITH_TIMEOUT(table->item(0, recordsColumn(table))->text().toULongLong() > 0, 5000);
        auto* fill = qobject_cast<QProgressBar*>(table->cellWidget(0, 1));
        QVERIFY(fill);
        auto* aux = qobject_cast<QProgressBar*>(table->cellWidget(0, 2));
        QVERIFY(aux && !aux->isEnabled());  // no AUX event in this capture

        QElapsedTimer clickToIdle;
        clickToIdle.start();
        QTest::mouseClick(stop, Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 5000);
        QVERIFY(clickToIdle.elapsed() < 5000);
        QVERIFY(start->isEnabled());
        QVERIFY(page->lastSummary().total().records > 0);
        QVERIFY(page->findChild<QLabel*>("status")->text().startsWith("Stopped after"));
        const int pointsAfterStop = series.first()->count();
        QTest::qWait(300);
        QCOMPARE(series.first()->count(), pointsAfterStop);  // the timer stopped with the capture
    }

    void launchedCommandEndsTheCaptureByItself() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        CapturePage page;
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(3);
        page.findChild<QLineEdit*>("targetValue")->setText("sleep 0.3");
        page.start();
        QVERIFY(page.capturing());
        QTRY_VERIFY_WITH_TIMEOUT(!page.capturing(), 5000);
        QVERIFY(page.lastSummary().commandExited);
    }

    void badEventIsReportedAndNothingStarts() {
        CapturePage page;
        page.findChild<QLineEdit*>("events")->setText("no_such_pmu/foo/");
        page.start();
        QVERIFY(!page.capturing());
        const QString status = page.findChild<QLabel*>("status")->text();
        QVERIFY2(status.contains("unknown PMU 'no_such_pmu'"), qPrintable(status));
    }

    // This machine has no trace PMU: the AUX choice says so instead of offering nothing.
    void auxPanelExplainsAMachineWithoutTracePmus() {
        const PmuRegistry real = PmuRegistry::discover();
        if (real.firstAuxPmu()) QSKIP("this machine has an AUX PMU");
        AuxOptionsPanel panel(real);
        QVERIFY(!panel.pmuBox()->isEnabled());
        QCOMPARE(panel.pmuBox()->count(), 1);
        auto* verdict = panel.findChild<QLabel*>("auxVerdict");
        QVERIFY(verdict->text().contains("no AUX-area trace PMU"));
        auto sel = panel.selection();
        QVERIFY(sel.ok() && !sel.value().has_value());
    }

    // Over a Skylake-like intel_pt laid out as sysfs publishes it: the toggles
    // become perf's event string, and what caps/ refuse is shown before Start.
    void auxPanelBuildsTheEventAndShowsRefusals() {
        QTemporaryDir dir;
        auto put = [&](const QString& rel, const QByteArray& text) {
            QDir().mkpath(QFileInfo(dir.filePath(rel)).path());
            QFile f(dir.filePath(rel));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(text + "\n");
        };
        put("intel_pt/type", "8");
        const std::pair<const char*, const char*> format[] = {{"pt", "config:0"},
                                                              {"cyc", "config:1"},
                                                              {"tsc", "config:10"},
                                                              {"noretcomp", "config:11"},
                                                              {"branch", "config:13"},
                                                              {"mtc_period", "config:14-17"},
                                                              {"mtc", "config:9"},
                                                              {"cyc_thresh", "config:19-22"},
                                                              {"psb_period", "config:24-27"},
                                                              {"ptw", "config:12"}};
        for (auto& [k, v] : format)
            put(QString("intel_pt/format/") + k, v);
        const std::pair<const char*, const char*> caps[] = {
            {"mtc", "1"},          {"mtc_periods", "249"},       {"psb_cyc", "1"},
            {"psb_periods", "3f"}, {"cycle_thresholds", "3fff"}, {"ip_filtering", "1"},
            {"ptwrite", "0"}};
        for (auto& [k, v] : caps)
            put(QString("intel_pt/caps/") + k, v);
        put("intel_pt/nr_addr_filters", "2");
        const PmuRegistry fake = PmuRegistry::discover(dir.path().toStdString());
        AuxOptionsPanel panel(fake);
        QVERIFY(panel.pmuBox()->isEnabled());
        panel.pmuBox()->setCurrentIndex(1);
        auto* verdict = panel.findChild<QLabel*>("auxVerdict");
        auto sel = panel.selection();
        QVERIFY2(sel.ok(), sel.ok() ? "" : sel.error().message.c_str());
        QVERIFY(sel.value().has_value());
        QCOMPARE(QString::fromStdString(sel.value()->eventSpec), QString("intel_pt//"));

        panel.findChild<QCheckBox*>("auxKernel")->setChecked(false);
        panel.findChild<QCheckBox*>("auxCyc")->setChecked(true);
        sel = panel.selection();
        QVERIFY(sel.ok() && sel.value().has_value());
        QVERIFY2(QString::fromStdString(sel.value()->eventSpec).contains("cyc"),
                 sel.value()->eventSpec.c_str());
        QVERIFY(QString::fromStdString(sel.value()->eventSpec).endsWith("/u"));

        panel.findChild<QSpinBox*>("auxMtcPeriod")->setValue(5);  // caps/mtc_periods 0x249: 0,3,6,9
        QVERIFY(!panel.selection().ok());
        QVERIFY2(verdict->text().contains("mtc_periods"), qPrintable(verdict->text()));
        panel.findChild<QSpinBox*>("auxMtcPeriod")->setValue(6);
        QVERIFY(panel.selection().ok());

        panel.findChild<QCheckBox*>("auxPtwrite")->setChecked(true);  // caps/ptwrite 0
        QVERIFY(!panel.selection().ok());
        QVERIFY2(verdict->text().contains("ptwrite"), qPrintable(verdict->text()));
        panel.findChild<QCheckBox*>("auxPtwrite")->setChecked(false);

        panel.findChild<QComboBox*>("auxMode")->setCurrentIndex(1);
        QVERIFY(panel.snapshotMode());
        QVERIFY(panel.selection().value()->snapshot);
    }

    // Decode while capturing: a generated program's Intel PT (its code on disk),
    // replayed through simulated CPUs; the live decoder's timeline fills with the
    // program's functions, and the page says what was decoded and what skipped.
    void replayDecodesIntelPtWhileCapturing() {
        QTemporaryDir dir;
        const QString data = dir.filePath("gen.data");
        QProcess synth;
        synth.start(QStringLiteral(AUXSCOPE_PTSYNTH), {"--generate", "1", "--seed", "9", "-q", "-o", data});
        QVERIFY(synth.waitForFinished(120000));
        QCOMPARE(synth.exitCode(), 0);
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        QVERIFY(page->findChild<QCheckBox*>("liveDecode")->isChecked());
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        page->findChild<QLineEdit*>("targetValue")->setText(data);
        page->findChild<QComboBox*>("replaySpeed")->setCurrentIndex(4);  // max
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QVERIFY(page->capturing());
        QVERIFY(page->liveDecoder());
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 30000);
        auto* live = page->findChild<QLabel*>("liveStatus");
        QVERIFY2(live->text().startsWith("Decoded while capturing:"), qPrintable(live->text()));
        // A large live timeline is summarized on a worker thread before the view shows it.
        QTRY_VERIFY_WITH_TIMEOUT(!page->liveTimeline()->preparing() && page->liveTimeline()->data(), 30000);
        auto timeline = page->liveTimeline()->data();
        QVERIFY(timeline);
        QVERIFY(!timeline->threads.empty());
        uint64_t named = 0;
        for (const auto& th : timeline->threads)
            for (size_t i = 0; i < th.spans.size(); ++i)
                if (Span sp = th.spans.at(i); !sp.isGap() && sp.function != FunctionTable::kUnknown) ++named;
        QVERIFY2(named > 100, qPrintable(QString("%1 named spans").arg(named)));
        QVERIFY(timeline->decodedEnd > timeline->decodedBegin);
        // The view shows them: something is painted in the thread's first row.
        const QImage image = page->liveTimeline()->grab().toImage();
        QVERIFY(!image.isNull());
    }

    // Issue 16 as a person met it: a 64 MB generated Intel PT trace replayed at
    // the recorded speed with decoding while capturing on. The capture file used
    // to hold a quarter of the AUX bytes ("file writer dropped ... queue full");
    // it must hold every byte its AUX records announce, and the page must not
    // speak of dropped records.
    void fastReplayIntoTheCaptureFileKeepsEveryAuxByte() {
        QTemporaryDir dir;
        const QString data = dir.filePath("gen64.data");
        QProcess synth;
        synth.start(QStringLiteral(AUXSCOPE_PTSYNTH), {"--generate", "64", "-q", "-o", data});
        QVERIFY(synth.waitForFinished(120000));
        QCOMPARE(synth.exitCode(), 0);
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        QVERIFY(page->findChild<QCheckBox*>("liveDecode")->isChecked());
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        page->findChild<QLineEdit*>("targetValue")->setText(data);
        page->findChild<QComboBox*>("replaySpeed")->setCurrentIndex(0);  // recorded speed
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QVERIFY(page->capturing());
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 60000);
        auto* status = page->findChild<QLabel*>("status");
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains("Capture written to"), 30000);
        QVERIFY2(!status->text().contains("dropped"), qPrintable(status->text()));
        QVERIFY(page->lastSummary().sinkLosses.empty());
        auto reader = PerfDataReader::open(page->lastCaptureFile().toStdString());
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        uint64_t announced = 0, present = 0;
        for (auto& a : reader->summary().aux)
            announced += a.auxSize;
        for (auto& b : reader->summary().auxtrace)
            present += b.size;
        QVERIFY(announced >= uint64_t(64) << 20);
        // AUXTRACE payloads are padded to 8 bytes each.
        QVERIFY2(present >= announced && present < announced + 8 * reader->summary().auxtrace.size(),
                 qPrintable(QString("%1 AUX bytes announced, %2 in AUXTRACE").arg(announced).arg(present)));
    }

    // The sideband flight recorder: no AUX event, yet the snapshot button works;
    // the click and the stop each deliver the backward rings' new records.
    void overwriteSnapshotButtonDeliversSideband() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->findChild<QComboBox*>("bufferPages")->setCurrentIndex(0);  // 16 pages: quick to fill
        auto* overwrite = page->findChild<QCheckBox*>("overwrite");
        QVERIFY(overwrite);
        overwrite->setChecked(true);
        auto* snap = page->findChild<QPushButton*>("snapshotButton");
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QVERIFY2(page->capturing(), qPrintable(page->findChild<QLabel*>("status")->text()));
        QVERIFY(snap->isEnabled());
        QTest::qWait(300);
        QTest::mouseClick(snap, Qt::LeftButton);
        auto* label = page->findChild<QLabel*>("snapshotLabel");
        QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith("Snapshots: 1"), qPrintable(label->text()), 5000);
        QTest::mouseClick(page->findChild<QPushButton*>("stopButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 15000);
        const CaptureSummary& sum = page->lastSummary();
        QVERIFY(!sum.cpus.empty());
        for (auto& c : sum.cpus) {
            QVERIFY(c.backwardMode);
            QVERIFY2(c.totals.backwardSnapshots >= 2,
                     qPrintable(QString::number(c.totals.backwardSnapshots)));
        }
        QVERIFY(sum.total().records > 0);
        QCOMPARE(sum.total().records, sum.total().backwardRecords);
    }

    void badCpuListIsReported() {
        CapturePage page;
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(1);
        page.findChild<QLineEdit*>("targetValue")->setText("5-2");
        page.start();
        QVERIFY(!page.capturing());
        QVERIFY(page.findChild<QLabel*>("status")->text().contains("bad CPU range"));
    }
};

QTEST_MAIN(CapturePageTest)
#include "CapturePageTest.moc"
