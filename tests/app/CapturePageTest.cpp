// SPDX-License-Identifier: GPL-3.0-or-later
// The capture page, offscreen: Start, live chart points, Stop ends the drain
// thread; bad input is reported on the page and nothing starts.
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QtTest>

#include <unistd.h>

#include "CapturePage.h"
#include "MainWindow.h"
#include "PerfEvent.h"

using namespace auxscope;

class CapturePageTest : public QObject {
    Q_OBJECT
private:
    static bool perfDenied(QString& why) {
        auto reason = perfCaptureUnavailableReason();
        if (reason) why = QString::fromStdString(*reason);
        return reason.has_value();
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
        QTRY_VERIFY_WITH_TIMEOUT(table->item(0, 4)->text().toULongLong() > 0, 5000);
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
