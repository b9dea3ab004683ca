// SPDX-License-Identifier: GPL-3.0-or-later
// The capture page replaying perf's Skylake Intel PT recording from the shared
// trace data, offscreen: the live AUX path without trace hardware, and the
// snapshot button in flight-recorder mode. Apart from CapturePageTest so that,
// without the data folder, initTestCase skips all of it and ctest says so.
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "TestData.h"
#include "gui/MainWindow.h"
#include "gui/capture/CapturePage.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;

class CapturePageReplayTest : public QObject {
    Q_OBJECT
private:
    static QString skylakeTrace() {
        return QString::fromStdString(
            test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14"));
    }
    static QList<QLineSeries*> lineSeries(QChartView* view) {
        QList<QLineSeries*> out;
        for (auto* s : view->chart()->series())
            out << qobject_cast<QLineSeries*>(s);
        return out;
    }

private:
    // The window shown, its capture page set to replay `data`.
    static CapturePage* showReplayOf(MainWindow& window, const QString& data) {
        window.show();
        CapturePage* page = window.capturePage();
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        page->findChild<QLineEdit*>("targetValue")->setText(data);
        return page;
    }

private slots:
    void initTestCase() { AUXSCOPE_QNEED_TEST_DATA(); }

    // Start reads the recording to replay on a worker, with a progress bar and
    // Cancel: the GUI thread never reads the file. Cancel leaves nothing running,
    // the form usable and says so; a damaged recording is refused with the reader's
    // message (file, offset, cause).
    void replayIsReadOffTheGuiThreadWithCancel() {
        const QString data = skylakeTrace();
        MainWindow window;
        CapturePage* page = showReplayOf(window, data);
        auto* start = page->findChild<QPushButton*>("startButton");
        auto* progress = page->findChild<QProgressBar*>("replayOpenProgress");
        auto* cancel = page->findChild<QPushButton*>("replayOpenCancel");
        QVERIFY(progress && cancel);
        QVERIFY(!progress->isVisible() && !cancel->isVisible());
        QTest::mouseClick(start, Qt::LeftButton);
        // Start returned before the file was read: the bar and Cancel show, the form waits.
        QVERIFY(!page->capturing());
        QVERIFY(progress->isVisible() && cancel->isVisible() && !start->isEnabled());
        auto* status = page->findChild<QLabel*>("status");
        QVERIFY2(status->text().startsWith("Reading "), qPrintable(status->text()));
        QTest::mouseClick(cancel, Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(start->isEnabled(), 10000);
        QVERIFY(!page->capturing());
        QVERIFY(!progress->isVisible() && !cancel->isVisible());
        QVERIFY2(status->text().contains("cancelled"), qPrintable(status->text()));
        // Again, not cancelled: it replays.
        page->findChild<QComboBox*>("replaySpeed")->setCurrentIndex(4);  // as fast as the drain takes it
        QTest::mouseClick(start, Qt::LeftButton);
        QTRY_VERIFY2_WITH_TIMEOUT(page->capturing(), qPrintable(status->text()), 10000);
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 30000);
        // A recording cut short: refused, naming the file and offset.
        QTemporaryDir dir;
        const QString cut = dir.filePath("cut.data");
        QVERIFY(QFile::copy(data, cut));
        {
            QFile f(cut);
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.resize(f.size() / 2));
        }
        page->findChild<QLineEdit*>("targetValue")->setText(cut);
        QTest::mouseClick(start, Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(start->isEnabled() && !progress->isVisible(), 10000);
        QVERIFY(!page->capturing());
        QVERIFY2(status->text().startsWith("Cannot start") && status->text().contains("cut.data") &&
                     status->text().contains("offset"),
                 qPrintable(status->text()));
    }

    // The live AUX path without trace hardware: a recorded Intel PT perf.data
    // replayed through simulated CPUs, shown plainly as a replay; the AUX bars,
    // AUX loss column and AUX chart series come alive, and the capture file holds
    // every AUX byte of the recording.
    void replayRunsTheAuxPathAndSaysItIsAReplay() {
        const QString data = skylakeTrace();
        QVERIFY2(QFileInfo::exists(data), qPrintable(data + " is missing"));
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        QVERIFY(page->findChild<QComboBox*>("replaySpeed")->isVisibleTo(page));
        QVERIFY(!page->findChild<QLineEdit*>("events")->isEnabled());
        page->findChild<QLineEdit*>("targetValue")->setText(data);
        page->findChild<QComboBox*>("replaySpeed")->setCurrentIndex(3);  // 10x slower: a few frames
        // For README's screenshot: a looping replay fills the AUX bars and charts.
        const QByteArray shot = qgetenv("AUXSCOPE_SCREENSHOT_REPLAY");
        if (!shot.isEmpty()) {
            window.resize(1280, 900);
            page->findChild<QComboBox*>("replaySpeed")->setCurrentIndex(0);
            page->findChild<QCheckBox*>("replayLoop")->setChecked(true);
        }
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QTRY_VERIFY2_WITH_TIMEOUT(page->capturing(), qPrintable(page->findChild<QLabel*>("status")->text()),
                                  10000);
        auto* status = page->findChild<QLabel*>("status");
        QVERIFY2(status->text().contains("not live hardware"), qPrintable(status->text()));
        auto* table = page->findChild<QTableWidget*>("cpuTable");
        QCOMPARE(table->rowCount(), 4);  // the recording's CPUs 0 and 3, numbered as recorded
        if (!shot.isEmpty()) {
            QTest::qWait(6000);
            window.grab().save(QString::fromLocal8Bit(shot));
            QTest::mouseClick(page->findChild<QPushButton*>("stopButton"), Qt::LeftButton);
            QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 15000);
            return;
        }
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 15000);  // ends with the recording
        auto* aux = qobject_cast<QProgressBar*>(table->cellWidget(0, 2));
        QVERIFY(aux && aux->isEnabled());
        bool auxSeries = false;
        for (auto* s : lineSeries(page->findChild<QChartView*>("throughputChart")))
            auxSeries |= s->name().endsWith("AUX");
        QVERIFY(auxSeries);
        QCOMPARE(page->lastSummary().total().auxBytes, uint64_t(12240 + 137728));
        auto reader = PerfDataReader::open(page->lastCaptureFile().toStdString());
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        uint64_t bytes = 0;
        for (auto& b : reader->summary().auxtrace)
            bytes += b.size;
        QCOMPARE(bytes, uint64_t(12240 + 137728));
        QCOMPARE(reader->summary().auxtraceInfo.size(), size_t(1));
    }

    // Flight-recorder mode on a looping replay: the snapshot button (and its
    // hotkey) copy the newest AUX bytes, and the count shows on the page.
    void replaySnapshotButtonTakesSnapshots() {
        const QString data = skylakeTrace();
        MainWindow window;
        CapturePage* page = showReplayOf(window, data);
        page->findChild<QCheckBox*>("replaySnapshot")->setChecked(true);
        page->findChild<QCheckBox*>("replayLoop")->setChecked(true);
        auto* snap = page->findChild<QPushButton*>("snapshotButton");
        QVERIFY(!snap->isEnabled());
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QTRY_VERIFY2_WITH_TIMEOUT(page->capturing(), qPrintable(page->findChild<QLabel*>("status")->text()),
                                  10000);
        QVERIFY(snap->isEnabled());
        QTest::qWait(200);
        QTest::mouseClick(snap, Qt::LeftButton);
        auto* label = page->findChild<QLabel*>("snapshotLabel");
        QTRY_VERIFY2_WITH_TIMEOUT(
            label->text().startsWith("Snapshots: 1"),
            qPrintable(label->text() + " / " + page->findChild<QLabel*>("status")->text()), 5000);
        QTest::keyClick(page, Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY_WITH_TIMEOUT(label->text().startsWith("Snapshots: 2"), 5000);
        QTest::mouseClick(page->findChild<QPushButton*>("stopButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 15000);
        QVERIFY(page->lastSummary().total().auxSnapshots >= 2);
        auto reader = PerfDataReader::open(page->lastCaptureFile().toStdString());
        QVERIFY(reader.ok());
        QVERIFY(reader->summary().auxtrace.size() >= 2);
    }
};

QTEST_MAIN(CapturePageReplayTest)
#include "CapturePageReplayTest.moc"
