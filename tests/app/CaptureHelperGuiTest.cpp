// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI as an unprivileged user captures through the privileged capture
// helper (issue 17). ctest runs this binary (offscreen) two ways:
//  - app_capture_helper_as_user: capture_helper_harness starts
//    auxscope-capture-helper as root (as pkexec would) and this binary as
//    nobody with the helper's socket inherited (AUXSCOPE_CAPTURE_HELPER_FD).
//    A system-wide capture is started and stopped from the capture page; the
//    file must belong to nobody, hold the capture, and perf must read it.
//  - app_capture_helper_triggers: the same, a launched command with a marker
//    trigger armed in the editor: the helper resolves and arms it, the file
//    holds the firings.
//  - app_capture_helper_no_polkit: as nobody through setpriv, with no helper
//    handed over, where nobody may not capture system-wide: Start must go
//    through pkexec and, with no polkit answering here, say why and give the
//    sysctl and setcap remedies instead of starting.
#include <sys/stat.h>
#include <unistd.h>

#include <QCheckBox>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QtTest>

#include "PerfEvent.h"
#include "gui/capture/CapturePage.h"
#include "gui/capture/HelperCapture.h"
#include "gui/capture/TriggerEditor.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TriggerFeature.h"

using namespace auxscope;

class CaptureHelperGuiTest : public QObject {
    Q_OBJECT
private slots:
    void captureThroughTheHelper() {
        if (!qEnvironmentVariableIsSet("AUXSCOPE_CAPTURE_HELPER_FD"))
            QSKIP(
                "no helper handed over (capture_helper_harness runs this case as "
                "app_capture_helper_as_user)");
        QVERIFY2(::geteuid() != 0, "the GUI side must run unprivileged here");
        CapturePage page;
        page.show();
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(0);  // system-wide
        page.findChild<QLineEdit*>("events")->setText("cpu-clock");
        QSignalSpy ready(&page, &CapturePage::captureFileReady);
        page.findChild<QPushButton*>("startButton")->click();
        QVERIFY(page.capturing());
        QVERIFY(page.helper());
        QTRY_VERIFY_WITH_TIMEOUT(page.helper()->state() == HelperCapture::State::Running ||
                                     page.helper()->state() == HelperCapture::State::Failed,
                                 20000);
        const QString status = page.findChild<QLabel*>("status")->text();
        QVERIFY2(page.helper()->state() == HelperCapture::State::Running,
                 qPrintable(QString::fromStdString(page.helper()->failure())));
        QVERIFY(page.helper()->inherited());
        QCOMPARE(page.helper()->helperEuid(), uid_t(0));   // the helper runs as root
        QCOMPARE(page.helper()->helperUid(), ::getuid());  // and serves this user
        QTRY_VERIFY_WITH_TIMEOUT(page.findChild<QLabel*>("status")->text().contains("running as root"), 5000);
        QVERIFY(page.findChild<QPushButton*>("stopButton")->isEnabled());
        // Statistics stream back: records counted on the CPU rows while capturing.
        auto* table = page.findChild<QTableWidget*>("cpuTable");
        QCOMPARE(table->rowCount(), int(page.helper()->cpus().size()));
        QTRY_VERIFY_WITH_TIMEOUT(page.history().latest() >= 0.5, 10000);
        QTRY_VERIFY_WITH_TIMEOUT(table->item(0, 5) && table->item(0, 5)->text().toULongLong() > 0, 10000);
        QTest::qWait(300);
        page.findChild<QPushButton*>("stopButton")->click();
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 30000);
        const QString path = ready.at(0).at(0).toString();
        const QString done = page.findChild<QLabel*>("status")->text();
        qInfo("%s", qPrintable(done));
        QVERIFY2(done.startsWith("Stopped after"), qPrintable(done));
        QVERIFY(!page.capturing());
        struct stat st {};
        QVERIFY(::stat(path.toLocal8Bit().constData(), &st) == 0);
        QCOMPARE(st.st_uid, ::getuid());  // the user owns the capture, not root
        QVERIFY(st.st_size > 0);
        auto reader = PerfDataReader::open(path.toStdString());
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        QVERIFY2(!reader->hasErrors(), "the file reads without errors");
        const auto& byType = reader->summary().recordsByType;
        QVERIFY2(byType.count(PERF_RECORD_SAMPLE) && byType.at(PERF_RECORD_SAMPLE) > 0,
                 "cpu-clock samples in the file");
        uint64_t guiRecords = 0;
        for (auto& c : page.lastSummary().cpus)
            guiRecords += c.totals.records;
        QVERIFY2(guiRecords > 0, "the summary came back from the helper");
        // perf reads what the helper wrote.
        QProcess perf;
        perf.start("perf", {"report", "--stats", "-i", path});
        QVERIFY(perf.waitForFinished(60000));
        const QString out = QString::fromUtf8(perf.readAllStandardOutput());
        QVERIFY2(perf.exitCode() == 0, qPrintable(QString::fromUtf8(perf.readAllStandardError())));
        QVERIFY2(out.contains("SAMPLE events:"), qPrintable(out));

        // A second capture reuses the helper (one authorization per window).
        ready.clear();
        page.findChild<QPushButton*>("startButton")->click();
        QTRY_VERIFY_WITH_TIMEOUT(page.findChild<QPushButton*>("stopButton")->isEnabled(), 20000);
        QCOMPARE(page.helper()->state(), HelperCapture::State::Running);
        page.findChild<QPushButton*>("stopButton")->click();
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 30000);
        QVERIFY(ready.at(0).at(0).toString() != path);
    }

    // Snapshot triggers armed in the editor go to the helper with the capture:
    // it resolves them for this user and arms them; the file holds the firings.
    void triggersThroughTheHelper() {
        if (!qEnvironmentVariableIsSet("AUXSCOPE_CAPTURE_HELPER_FD"))
            QSKIP(
                "no helper handed over (capture_helper_harness runs this case as "
                "app_capture_helper_triggers)");
        QVERIFY2(::geteuid() != 0, "the GUI side must run unprivileged here");
        CapturePage page;
        page.show();
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(3);  // launch a command
        page.findChild<QLineEdit*>("targetValue")->setText(QString(TRIGGER_PROG_PATH) + " marker 4");
        page.findChild<QLineEdit*>("events")->setText("cpu-clock");
        page.findChild<QCheckBox*>("overwrite")->setChecked(true);
        TriggerEditor* editor = page.triggerEditor();
        TriggerRow* row = editor->addTrigger("marker");
        QVERIFY(row);
        QTRY_VERIFY2(editor->valid(), qPrintable(editor->firstError()));
        QSignalSpy ready(&page, &CapturePage::captureFileReady);
        page.findChild<QPushButton*>("startButton")->click();
        QVERIFY2(page.capturing(), qPrintable(page.findChild<QLabel*>("status")->text()));
        QVERIFY(page.helper());
        // The command runs its 4 markers and exits: the capture ends by itself.
        QTest::qWaitFor([&] { return page.helper()->finishedOrFailed(); }, 60000);
        QVERIFY2(page.helper()->state() == HelperCapture::State::Finished,
                 qPrintable(QString("helper state %1: %2; status: %3")
                                .arg(int(page.helper()->state()))
                                .arg(QString::fromStdString(page.helper()->failure()))
                                .arg(page.findChild<QLabel*>("status")->text())));
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 30000);
        auto reader = PerfDataReader::open(ready.at(0).at(0).toString().toStdString());
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        std::optional<TriggerFileData> triggers;
        for (const PerfRawFeature& raw : reader->features().raw)
            if (raw.id == kFeatAuxscopeTriggers) {
                auto t = decodeTriggerFeature(raw.bytes, "trigger section");
                QVERIFY2(t.ok(), t.ok() ? "" : t.error().message.c_str());
                triggers = std::move(t.value());
            }
        QVERIFY2(triggers, "the file holds the helper's trigger section");
        QCOMPARE(triggers->report.triggers, std::vector<std::string>{"marker"});
        // Each marker call fired (or was skipped while the previous snapshot was pending).
        QCOMPARE(triggers->report.firings.size() + triggers->report.skipped[size_t(TriggerSkip::Pending)],
                 size_t(4));
        QVERIFY(triggers->report.snapshotsTaken >= 1);
    }

    void withoutPolkitTheRemedyIsShown() {
        if (qEnvironmentVariableIsSet("AUXSCOPE_CAPTURE_HELPER_FD")) QSKIP("a helper is handed over");
        if (::geteuid() == 0)
            QSKIP("root captures in the GUI's own process (run as nobody by app_capture_helper_no_polkit)");
        if (!perfCaptureUnavailableReason())
            QSKIP("this user may capture system-wide here (perf_event_paranoid <= 0): no helper is needed");
        CapturePage page;
        page.show();
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(0);
        page.findChild<QLineEdit*>("events")->setText("cpu-clock");
        page.findChild<QPushButton*>("startButton")->click();
        QVERIFY(page.helper());
        QTRY_VERIFY_WITH_TIMEOUT(page.helper()->state() == HelperCapture::State::Failed ||
                                     page.helper()->state() == HelperCapture::State::Running,
                                 30000);
        if (page.helper()->state() == HelperCapture::State::Running)
            QSKIP("polkit authorized this user here: the helper started");
        auto* label = page.findChild<QLabel*>("status");
        QTRY_VERIFY_WITH_TIMEOUT(label->text().startsWith("Cannot start"), 5000);
        const QString status = label->text();
        qInfo("%s", qPrintable(status));
        QVERIFY2(status.startsWith("Cannot start: the capture helper did not start"), qPrintable(status));
        QVERIFY2(status.contains("sysctl kernel.perf_event_paranoid=-1"), qPrintable(status));
        QVERIFY2(status.contains("setcap cap_perfmon"), qPrintable(status));
        QVERIFY(!page.capturing());
        QVERIFY(page.findChild<QPushButton*>("startButton")->isEnabled());
    }

    // The page's line before a capture follows the target: a live capture needs
    // the helper's permission, a replay needs none.
    void theAccessHintFollowsTheTarget() {
        if (::geteuid() == 0) QSKIP("root needs no permission (run as nobody by app_capture_access_hint)");
        if (!perfCaptureUnavailableReason())
            QSKIP("this user may capture system-wide here (perf_event_paranoid <= 0): no hint is given");
        CapturePage page;
        auto* label = page.findChild<QLabel*>("status");
        auto* kind = page.findChild<QComboBox*>("targetKind");
        kind->setCurrentIndex(0);
        const QString live = label->text();
        QVERIFY2(live.startsWith("Capturing system-wide needs privileges") ||
                     live.startsWith("Capture is not permitted here"),
                 qPrintable(live));
        kind->setCurrentIndex(4);
        QCOMPARE(label->text(),
                 QString("A replay needs no privileges: Start feeds the recording through simulated CPUs."));
        kind->setCurrentIndex(0);
        QCOMPARE(label->text(), live);
    }
};

QTEST_MAIN(CaptureHelperGuiTest)
#include "CaptureHelperGuiTest.moc"
