// SPDX-License-Identifier: GPL-3.0-or-later
// A first run on a machine with no trace hardware (issue 33), offscreen: Help >
// Open an example makes the Intel PT example with the built auxscope-ptsynth
// (found on the PATH, as a person's shell would) and opens it on a decoded
// timeline with the tour of its keys; the Replay row's "Example" replays it with
// live decode; the generators are looked for beside the program, in tools/, then
// on the PATH, and a missing or failing one says so. Every test has its own
// examples folder and settings (a temporary XDG_DATA_HOME and QSettings path).
#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <QtTest>

#include <cstdio>

#include "auxtrace/LiveTraceDecoder.h"
#include "gui/MainWindow.h"
#include "gui/analysis/SpePane.h"
#include "gui/capture/AuxOptionsPanel.h"
#include "gui/capture/CapturePage.h"
#include "gui/common/ExampleMaker.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TimelineTour.h"
#include "gui/trace/TraceFilePage.h"
#include "samples/SampleProfile.h"
#include "spans/TimelineData.h"

using namespace auxscope;

namespace {

// Decoded spans (not gaps) on the timeline's threads.
uint64_t spanCount(const TimelineData& data) {
    uint64_t n = 0;
    for (const auto& th : data.threads)
        for (size_t i = 0; i < th.spans.size(); ++i)
            if (!th.spans.at(i).isGap()) ++n;
    return n;
}

uint64_t timelineSpans(TraceFilePage* page) {
    if (!page || !page->timeline() || !page->timeline()->data()) return 0;
    return spanCount(*page->timeline()->data());
}

bool writeScript(const QString& path, const QByteArray& body) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return false;
    f.write("#!/bin/sh\n" + body + "\n");
    f.close();
    return f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
}

}  // namespace

class ExampleTest : public QObject {
    Q_OBJECT
private:
    QTemporaryDir home_;
    QByteArray path_;  // the PATH with the built tools first

    // Opens `kind` from Help > Open an example; the page, once it opened (null: failed, `error` says why).
    static TraceFilePage* openFromHelp(MainWindow& window, ExampleKind kind, QString* error = nullptr) {
        QSignalSpy opened(&window, &MainWindow::exampleOpened);
        QSignalSpy failed(&window, &MainWindow::exampleFailed);
        auto* action = window.findChild<QAction*>(kind == ExampleKind::IntelPt     ? "exampleIntelPt"
                                                  : kind == ExampleKind::CoreSight ? "exampleCoreSight"
                                                                                   : "exampleArmSpe");
        if (!action) return nullptr;
        action->trigger();
        if (!QTest::qWaitFor([&] { return opened.count() + failed.count() > 0; }, 60000)) return nullptr;
        if (failed.count()) {
            if (error) *error = failed.at(0).at(1).toString();
            return nullptr;
        }
        return opened.at(0).at(1).value<TraceFilePage*>();
    }
    static void clearExamples() { QDir(examplesFolder()).removeRecursively(); }

private slots:
    void initTestCase() {
        QVERIFY(home_.isValid());
        qputenv("XDG_DATA_HOME", home_.filePath("data").toUtf8());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, home_.filePath("config"));
        QCoreApplication::setOrganizationName("auxscope-example-test");
        QCoreApplication::setApplicationName("auxscope-example-test");
        QVERIFY2(examplesFolder().startsWith(home_.path()), qPrintable(examplesFolder()));
        // The test binary's folder has neither tool beside it nor in tools/: they come from the PATH.
        path_ = QByteArray(AUXSCOPE_PTSYNTH_DIR) + ":" + AUXSCOPE_ETMSNAP_DIR + ":" + qgetenv("PATH");
        qputenv("PATH", path_);
    }
    void init() {
        qputenv("PATH", path_);
        QSettings().clear();
        clearExamples();
    }

    // One function finds the generators: beside the program, then its tools/
    // folder (the build tree), then the PATH in order; a file that is not
    // executable is passed over; none found names every place looked in.
    void toolLookupBesideThenToolsThenPath() {
        QTemporaryDir d;
        const QString app = d.filePath("app"), tools = app + "/tools", p1 = d.filePath("p1"),
                      p2 = d.filePath("p2");
        for (const QString& dir : {tools, p1, p2})
            QVERIFY(QDir().mkpath(dir));
        const QString name = "auxscope-gen";
        ToolLookup r = findTool(name, app, {p1, p2});
        QVERIFY(!r.found());
        QCOMPARE(r.lookedIn, QStringList({app, tools, p1, p2}));
        for (const QString& dir : {app, tools, p1, p2})
            QVERIFY2(r.error.contains(dir), qPrintable(r.error));
        QVERIFY2(r.error.contains(name + " was not found"), qPrintable(r.error));
        QVERIFY(writeScript(p2 + "/" + name, "exit 0"));
        QCOMPARE(findTool(name, app, {p1, p2}).path, p2 + "/" + name);
        QVERIFY(writeScript(p1 + "/" + name, "exit 0"));
        QCOMPARE(findTool(name, app, {p1, p2}).path, p1 + "/" + name);
        QVERIFY(writeScript(tools + "/" + name, "exit 0"));
        QCOMPARE(findTool(name, app, {p1, p2}).path, tools + "/" + name);
        // Not executable: not it.
        {
            QFile f(app + "/" + name);
            QVERIFY(f.open(QIODevice::WriteOnly));
        }
        QCOMPARE(findTool(name, app, {p1, p2}).path, tools + "/" + name);
        QVERIFY(QFile(app + "/" + name).setPermissions(QFile::ReadOwner | QFile::ExeOwner));
        r = findTool(name, app, {p1, p2});
        QCOMPARE(r.path, app + "/" + name);
        QCOMPARE(r.lookedIn, QStringList({app}));
        // This process: the built auxscope-ptsynth, from the PATH.
        r = findTool("auxscope-ptsynth");
        QVERIFY2(r.found(), qPrintable(r.error));
        QCOMPARE(QFileInfo(r.path).absolutePath(), QFileInfo(AUXSCOPE_PTSYNTH_DIR).absoluteFilePath());
    }

    // Help > Open an example > Intel PT example: made off the GUI thread (the
    // busy bar shows and the event loop runs while the generator does), then a
    // trace page whose timeline has threads and decoded spans. The target
    // is 5 s on this machine: the figure is printed; only a generous bound is
    // asserted. The second time, the example is reused, not made again; made
    // before the generator was, it is made again.
    void openIntelPtExampleShowsDecodedSpans() {
        MainWindow window;
        window.show();
        auto* tabs = window.findChild<QTabWidget*>("tabs");
        QElapsedTimer clock;
        clock.start();
        QSignalSpy opened(&window, &MainWindow::exampleOpened);
        QSignalSpy failed(&window, &MainWindow::exampleFailed);
        window.findChild<QAction*>("exampleIntelPt")->trigger();
        // Returned at once: the generator runs in a QProcess.
        QCOMPARE(opened.count(), 0);
        QVERIFY(window.findChild<QProgressBar*>("exampleBusy")->isVisible());
        QVERIFY(ExampleMaker::instance().busy(ExampleKind::IntelPt));
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() + failed.count() == 1, 60000);
        QVERIFY2(opened.count() == 1, qPrintable(failed.value(0).value(1).toString()));
        const qint64 made = clock.elapsed();
        QVERIFY(!window.findChild<QProgressBar*>("exampleBusy")->isVisible());
        auto* page = opened.at(0).at(1).value<TraceFilePage*>();
        QVERIFY(page);
        QCOMPARE(tabs->count(), 2);
        QCOMPARE(tabs->currentWidget(), page);
        const QString file = examplesFolder() + "/intel-pt-example.data";
        QCOMPARE(page->path(), file);
        QTRY_VERIFY_WITH_TIMEOUT(timelineSpans(page) > 0 || page->failed(), 60000);
        const qint64 shown = clock.elapsed();
        const auto data = page->timeline()->data();
        QVERIFY(!data->threads.empty());
        const uint64_t spans = spanCount(*data);
        QVERIFY(spans > 0);
        std::printf(
            "Open an example (Intel PT): made in %lld ms, timeline with %zu threads and %llu spans in %lld "
            "ms "
            "(target 5000 ms)\n",
            (long long)made, data->threads.size(), (unsigned long long)spans, (long long)shown);
        std::fflush(stdout);
        QVERIFY2(shown < 60000, qPrintable(QString("%1 ms").arg(shown)));
        // Again: the file made the first time is opened as it is.
        const QDateTime written = QFileInfo(file).lastModified();
        QTest::qWait(20);
        clock.restart();
        TraceFilePage* again = openFromHelp(window, ExampleKind::IntelPt);
        QVERIFY(again && again != page);
        QCOMPARE(QFileInfo(file).lastModified(), written);
        QTRY_VERIFY_WITH_TIMEOUT(timelineSpans(again) > 0, 60000);
        std::printf("Open an example again (reused): timeline with spans in %lld ms\n",
                    (long long)clock.elapsed());
        std::fflush(stdout);
        // Made before the generator was (an older build or package): made again.
        const QDateTime y2000 = QDateTime::fromSecsSinceEpoch(946684800);
        {
            QFile stamp(file + ".made");
            QVERIFY(stamp.open(QIODevice::ReadWrite));
            QVERIFY(stamp.setFileTime(y2000, QFileDevice::FileModificationTime));
        }
        QVERIFY(openFromHelp(window, ExampleKind::IntelPt));
        QVERIFY(QFileInfo(file).lastModified() > written);
        QVERIFY(QFileInfo(file + ".made").lastModified() > y2000);
    }

    // The tour of the keys: a banner on the example's page (not a dialog: this
    // test would hang on one), listing the timeline's keys; it shows on each
    // example opened until "Don't show again" is ticked, which is remembered.
    void tourShowsUntilDontShowAgain() {
        MainWindow window;
        window.show();
        QVERIFY(TimelineTour::wanted());
        TraceFilePage* page = openFromHelp(window, ExampleKind::IntelPt);
        QVERIFY(page);
        TimelineTour* tour = page->timelineTour();
        QVERIFY(tour && tour->isVisible());
        QCOMPARE(page->showTimelineTour(), tour);  // one per page
        bool zoomKey = false;
        for (auto* l : tour->findChildren<QLabel*>())
            zoomKey |= l->text() == "zoom around the mouse";
        QVERIFY(zoomKey);
        // Closed without ticking: the next example shows it again.
        QTest::mouseClick(tour->closeButton(), Qt::LeftButton);
        QTRY_VERIFY(page->timelineTour() == nullptr);
        page = openFromHelp(window, ExampleKind::IntelPt);
        QVERIFY(page && page->timelineTour());
        tour = page->timelineTour();
        tour->dontShowAgain()->click();
        QVERIFY(!TimelineTour::wanted());
        QCOMPARE(QSettings().value("tour/timelineKeysOff").toBool(), true);
        QTest::mouseClick(tour->closeButton(), Qt::LeftButton);
        page = openFromHelp(window, ExampleKind::IntelPt);
        QVERIFY(page);
        QVERIFY(page->timelineTour() == nullptr);
        QVERIFY(page->showTimelineTour() == nullptr);
        // A new window (a new run reads the same settings): still off.
        MainWindow second;
        second.show();
        page = openFromHelp(second, ExampleKind::IntelPt);
        QVERIFY(page && !page->timelineTour());
    }

    // The capture page on a machine without a trace PMU: "Open an example" beside
    // the hint that says so opens the Intel PT example like the Help menu does.
    void capturePageButtonOpensTheExample() {
        MainWindow window;
        window.show();
        auto* button = window.capturePage()->findChild<QToolButton*>("openExampleButton");
        if (!button) QSKIP("this machine has an AUX trace PMU: the capture page offers it, not the example");
        QVERIFY(button->isVisible());
        auto* verdict = window.capturePage()->findChild<QLabel*>("auxVerdict");
        QVERIFY2(verdict->text().contains("open an example"), qPrintable(verdict->text()));
        QSignalSpy opened(&window, &MainWindow::exampleOpened);
        QSignalSpy failed(&window, &MainWindow::exampleFailed);
        QTest::mouseClick(button, Qt::LeftButton, {}, QPoint(8, button->height() / 2));
        QTRY_VERIFY_WITH_TIMEOUT(opened.count() + failed.count() == 1, 60000);
        QVERIFY2(opened.count() == 1, qPrintable(failed.value(0).value(1).toString()));
        QCOMPARE(opened.at(0).at(0).value<ExampleKind>(), ExampleKind::IntelPt);
        QTRY_VERIFY_WITH_TIMEOUT(timelineSpans(opened.at(0).at(1).value<TraceFilePage*>()) > 0, 60000);
    }

    // Replay offers the example: the Replay row's "Example" fills the path with
    // the Intel PT example, and Start replays it through the live AUX path with
    // decoding while capturing: the live timeline has decoded spans before the
    // replay ends.
    void replayOfTheExampleDecodesLive() {
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        auto* example = page->findChild<QPushButton*>("replayExample");
        QVERIFY(example && example->isVisible());
        QTest::mouseClick(example, Qt::LeftButton);
        auto* value = page->findChild<QLineEdit*>("targetValue");
        const QString file = examplesFolder() + "/intel-pt-example.data";
        auto* status = page->findChild<QLabel*>("status");
        QTRY_VERIFY_WITH_TIMEOUT(value->text() == file || status->text().startsWith("Cannot"), 60000);
        QVERIFY2(value->text() == file, qPrintable(status->text()));
        QVERIFY2(status->text().startsWith("Ready to replay the Intel PT example"),
                 qPrintable(status->text()));
        QVERIFY(page->findChild<QCheckBox*>("liveDecode")->isChecked());
        QCOMPARE(page->findChild<QComboBox*>("replaySpeed")->currentData().toString(), QString("stretch:5"));
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        QTRY_VERIFY2_WITH_TIMEOUT(page->capturing(), qPrintable(status->text()), 10000);
        QVERIFY(page->liveDecoder());
        QVERIFY2(status->text().contains("x recorded speed"), qPrintable(status->text()));  // slowed down
        QElapsedTimer clock;
        clock.start();
        auto liveSpans = [&] {
            const auto data = page->liveTimeline()->data();
            return data ? spanCount(*data) : 0;
        };
        uint64_t whileCapturing = 0;
        QVERIFY(QTest::qWaitFor(
            [&] {
                if (page->capturing()) whileCapturing = liveSpans();
                return whileCapturing > 0 || !page->capturing();
            },
            30000));
        std::printf("Replay of the example: %llu live spans after %lld ms, still replaying\n",
                    (unsigned long long)whileCapturing, (long long)clock.elapsed());
        std::fflush(stdout);
        QVERIFY2(whileCapturing > 0, qPrintable("no live spans before the replay ended: " + status->text()));
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 60000);
        QVERIFY2(status->text().contains("not live hardware") || !page->lastCaptureFile().isEmpty(),
                 qPrintable(status->text()));
        // Named after the recording: DATE_TIME_replay-intel-pt-example.data, one .data.
        QVERIFY2(page->lastCaptureFile().endsWith("_replay-intel-pt-example.data"),
                 qPrintable(page->lastCaptureFile()));
    }

    // No generator anywhere: nothing hangs, a box that blocks nobody says what
    // is missing and names where it was looked for.
    void missingGeneratorSaysWhereItLooked() {
        QTemporaryDir empty;
        qputenv("PATH", empty.path().toUtf8());
        MainWindow window;
        window.show();
        QString error;
        QVERIFY(!openFromHelp(window, ExampleKind::IntelPt, &error));
        QVERIFY2(error.contains("auxscope-ptsynth was not found"), qPrintable(error));
        QVERIFY2(error.contains(QCoreApplication::applicationDirPath()), qPrintable(error));
        QVERIFY2(error.contains(QCoreApplication::applicationDirPath() + "/tools"), qPrintable(error));
        QVERIFY2(error.contains(empty.path()), qPrintable(error));
        QMessageBox* box = window.exampleErrorBox();
        QVERIFY(box && box->isVisible());
        QVERIFY2(box->informativeText().contains(empty.path()), qPrintable(box->informativeText()));
        QCOMPARE(window.findChild<QTabWidget*>("tabs")->count(), 1);
        QVERIFY(!window.findChild<QProgressBar*>("exampleBusy")->isVisible());
        box->close();
    }

    // A generator that fails: its exit status and stderr are shown, and no
    // half-made example is left to be opened next time.
    void failingGeneratorShowsItsStderr() {
        QTemporaryDir bin;
        QVERIFY(writeScript(
            bin.filePath("auxscope-ptsynth"),
            "for a; do o=$a; done; echo partial > \"$o\"\n"
            "echo 'auxscope-ptsynth: cannot trace the generated program: out of cheese' >&2; exit 3"));
        qputenv("PATH", bin.path().toUtf8());
        MainWindow window;
        window.show();
        QString error;
        QVERIFY(!openFromHelp(window, ExampleKind::IntelPt, &error));
        QVERIFY2(error.contains("exited with status 3") && error.contains("out of cheese"),
                 qPrintable(error));
        QVERIFY2(error.contains(bin.filePath("auxscope-ptsynth")), qPrintable(error));
        QVERIFY(!QFileInfo::exists(examplesFolder() + "/intel-pt-example.data"));
        QMessageBox* box = window.exampleErrorBox();
        QVERIFY(box && box->isVisible());
        QVERIFY(box->informativeText().contains("out of cheese"));
        box->close();
    }

    // Help > Open an example > CoreSight (ETMv4) example: a decoded timeline too.
    void openCoreSightExampleShowsDecodedSpans() {
        MainWindow window;
        window.show();
        QElapsedTimer clock;
        clock.start();
        QString error;
        TraceFilePage* page = openFromHelp(window, ExampleKind::CoreSight, &error);
        QVERIFY2(page, qPrintable(error));
        QCOMPARE(page->path(), examplesFolder() + "/coresight-example.data");
        QTRY_VERIFY_WITH_TIMEOUT(timelineSpans(page) > 0 || page->failed(), 60000);
        QVERIFY(!page->timeline()->data()->threads.empty());
        std::printf("Open an example (CoreSight): timeline with %llu spans in %lld ms\n",
                    (unsigned long long)timelineSpans(page), (long long)clock.elapsed());
        std::fflush(stdout);
    }

    // Help > Open an example > Arm SPE example: its records on the SPE tab and as sample events.
    void openArmSpeExampleShowsItsRecords() {
        MainWindow window;
        window.show();
        QElapsedTimer clock;
        clock.start();
        QString error;
        TraceFilePage* page = openFromHelp(window, ExampleKind::ArmSpe, &error);
        QVERIFY2(page, qPrintable(error));
        QCOMPARE(page->path(), examplesFolder() + "/arm-spe-example.data");
        QTRY_VERIFY_WITH_TIMEOUT(page->findChild<SpePane*>() && page->findChild<SpePane*>()->data(), 60000);
        QCOMPARE(page->findChild<SpePane*>()->data()->records.size(), size_t(20000));
        QTRY_VERIFY_WITH_TIMEOUT(page->sampleProfile(), 60000);
        QVERIFY(page->sampleProfile()->eventIndex("arm_spe: loads") >= 0);
        QVERIFY(!QFileInfo::exists(page->path() + ".truth"));  // the example needs no truth beside it
        std::printf("Open an example (Arm SPE): 20000 records in %lld ms\n", (long long)clock.elapsed());
        std::fflush(stdout);
    }
};

QTEST_MAIN(ExampleTest)
#include "ExampleTest.moc"
