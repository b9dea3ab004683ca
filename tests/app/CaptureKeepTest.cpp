// SPDX-License-Identifier: GPL-3.0-or-later
// Captures are never lost (issue 27), offscreen: GUI captures go into the
// captures folder (default under $XDG_DATA_HOME, changeable) named by date,
// time and target; File > Open Recent and the capture page list them; closing
// a window (also File > Quit, Ctrl+Q) or a tab with a capture never saved or
// kept asks Keep / Discard / Cancel in the real QMessageBox, answered here by
// clicking its buttons; a capture running at close is finished and kept; and
// SIGTERM to a GUI process while it captures leaves a complete file.
//
// The test runs in a temporary XDG_DATA_HOME / XDG_CONFIG_HOME of its own
// (main() below), so it neither reads nor leaves anything in the user's home.
#include <QAction>
#include <QApplication>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QtTest>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "PerfEvent.h"
#include "gui/MainWindow.h"
#include "gui/QuitSignals.h"
#include "gui/capture/CaptureFiles.h"
#include "gui/capture/CapturePage.h"
#include "gui/trace/TraceFilePage.h"
#include "perfdata/PerfDataReader.h"

using namespace auxscope;

namespace {

// Clicks `button` ("keepButton", "discardButton", "cancelButton") of the next
// keep-captures box that opens; `seen` counts the boxes answered and `text`
// gets the box's text.
struct BoxAnswer {
    int seen = 0;
    QString text;
};

std::shared_ptr<BoxAnswer> answerNextBox(const QString& button) {
    auto answer = std::make_shared<BoxAnswer>();
    auto* timer = new QTimer(qApp);
    timer->setInterval(20);
    QObject::connect(timer, &QTimer::timeout, timer, [timer, answer, button] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box || box->objectName() != "keepCapturesBox") return;
        answer->text = box->text();
        ++answer->seen;
        timer->stop();
        timer->deleteLater();
        if (auto* b = box->findChild<QPushButton*>(button))
            b->click();
        else
            box->reject();
    });
    timer->start();
    // A box that never came must not answer the next test's.
    QTimer::singleShot(5000, timer, [timer] { timer->deleteLater(); });
    return answer;
}

// Fails the test if any modal box opens while it lives.
struct NoBox {
    QTimer timer;
    bool opened = false;
    NoBox() {
        timer.setInterval(20);
        QObject::connect(&timer, &QTimer::timeout, [this] {
            if (auto* w = QApplication::activeModalWidget()) {
                opened = true;
                if (auto* box = qobject_cast<QMessageBox*>(w)) box->reject();
            }
        });
        timer.start();
    }
};

QString perfDenied() {
    auto reason = perfCaptureUnavailableReason();
    return reason ? QString::fromStdString(*reason) : QString();
}

// A 0.3 s capture through the capture page (its default: system-wide cpu-clock).
QString capture(MainWindow& window) {
    CapturePage* page = window.capturePage();
    page->start();
    if (!page->capturing()) return {};
    QTest::qWait(300);
    page->stop();
    if (!QTest::qWaitFor([&] { return !page->capturing(); }, 20000)) return {};
    return page->lastCaptureFile();
}

bool fileIsComplete(const QString& path, QString& why) {
    auto reader = PerfDataReader::open(path.toStdString());
    if (!reader) {
        why = QString::fromStdString(reader.error().message);
        return false;
    }
    if (reader->hasErrors()) {
        why = "the reader found errors in " + path;
        return false;
    }
    // Completed, not merely readable: a file left unfinished keeps a header with
    // data size 0 and no features, which the reader recovers by scanning.
    if (reader->dataSizeRecovered() || reader->header().features[0] == 0) {
        why = path + " was not completed (its header has no data size or no features)";
        return false;
    }
    const auto& byType = reader->summary().recordsByType;
    auto it = byType.find(PERF_RECORD_SAMPLE);
    if (it == byType.end() || it->second == 0) {
        why = "no samples in " + path;
        return false;
    }
    return true;
}

}  // namespace

class CaptureKeepTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        CaptureFiles::clearRecent();
        CaptureFiles::setCapturesFolder({});
    }

    void capturesFolderDefaultAndFileNames() {
        const QString data = qEnvironmentVariable("XDG_DATA_HOME");
        QVERIFY(!data.isEmpty());
        QCOMPARE(CaptureFiles::defaultCapturesFolder(), data + "/auxscope/captures");
        QCOMPARE(CaptureFiles::capturesFolder(), CaptureFiles::defaultCapturesFolder());
        const QDateTime when(QDate(2026, 11, 27), QTime(10, 31, 5));
        QCOMPARE(CaptureFiles::captureFileName(when, "system-wide"),
                 QString("2026-11-27_10-31-05_system-wide.data"));
        QCOMPARE(CaptureFiles::captureFileName(when, "command: /usr/bin/ls -l"),
                 QString("2026-11-27_10-31-05_command-usr-bin-ls-l.data"));
        QCOMPARE(CaptureFiles::captureFileName(when, "///"), QString("2026-11-27_10-31-05_capture.data"));
        QVERIFY(CaptureFiles::captureFileName(when, QString(200, 'x')).size() <= 20 + 48 + 5);
        // Two captures in one second get two names; nothing is overwritten.
        QTemporaryDir dir;
        QString error;
        const QString first = CaptureFiles::newCapturePath(dir.filePath("sub/captures"), "cpu 0", &error);
        QVERIFY2(!first.isEmpty(), qPrintable(error));
        QVERIFY(QFileInfo(dir.filePath("sub/captures")).isDir());
        QFile f(first);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        const QString second = CaptureFiles::newCapturePath(dir.filePath("sub/captures"), "cpu 0", &error);
        QVERIFY(second != first);
        QVERIFY2(second.endsWith("_cpu-0_2.data") || !second.startsWith(first.chopped(5)),
                 qPrintable(second));
        // A folder that cannot be made says so.
        QVERIFY(CaptureFiles::newCapturePath("/proc/self/no/such", "x", &error).isEmpty());
        QVERIFY2(error.contains("/proc/self/no/such"), qPrintable(error));
    }

    void capturesFolderIsShownAndChanged() {
        MainWindow window;
        CapturePage* page = window.capturePage();
        auto* label = page->findChild<QLabel*>("capturesFolder");
        QVERIFY(label);
        QVERIFY(page->findChild<QPushButton*>("capturesFolderChange"));
        QVERIFY2(label->text().contains(CaptureFiles::defaultCapturesFolder()), qPrintable(label->text()));
        QTemporaryDir dir;
        page->setCapturesFolder(dir.path());
        QCOMPARE(CaptureFiles::capturesFolder(), dir.path());
        QCOMPARE(QSettings().value("captures/folder").toString(), dir.path());
        QVERIFY(label->text().contains(dir.path()));
        {
            MainWindow another;  // a new window (a new start) reads the setting
            QVERIFY(another.capturePage()->findChild<QLabel*>("capturesFolder")->text().contains(dir.path()));
        }
        page->setCapturesFolder({});
        QCOMPARE(CaptureFiles::capturesFolder(), CaptureFiles::defaultCapturesFolder());
    }

    void captureIsWrittenIntoTheFolderAndListed() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        MainWindow window;
        window.show();
        window.capturePage()->setCapturesFolder(dir.path());
        window.capturePage()->start();
        QVERIFY(window.capturePage()->capturing());
        const QString running = window.capturePage()->currentCaptureFile();
        QCOMPARE(QFileInfo(running).path(), dir.path());
        // The status line says where the file is, while capturing and after.
        auto* statusFile = window.statusBar()->findChild<QLabel*>("statusFile");
        QVERIFY(statusFile);
        QVERIFY2(statusFile->text().contains(running), qPrintable(statusFile->text()));
        QVERIFY2(window.statusBar()->currentMessage().contains(running),
                 qPrintable(window.statusBar()->currentMessage()));
        QTest::qWait(300);
        window.capturePage()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!window.capturePage()->capturing(), 20000);
        const QString file = window.capturePage()->lastCaptureFile();
        QCOMPARE(file, running);
        QVERIFY2(QRegularExpression("^\\d{4}-\\d\\d-\\d\\d_\\d\\d-\\d\\d-\\d\\d_system-wide(_\\d+)?\\.data$")
                     .match(QFileInfo(file).fileName())
                     .hasMatch(),
                 qPrintable(file));
        QString why;
        QVERIFY2(fileIsComplete(file, why), qPrintable(why));
        QVERIFY2(statusFile->text().contains(file), qPrintable(statusFile->text()));
        QCOMPARE(CaptureFiles::recentFiles().value(0), file);
        auto* list = window.capturePage()->findChild<QListWidget*>("recentList");
        QVERIFY(list && list->count() >= 1);
        QCOMPARE(list->item(0)->data(Qt::UserRole).toString(), file);
        QCOMPARE(window.unkeptCaptures(), QStringList{file});
        QVERIFY(window.windowTitle().contains(file));  // the capture's tab is current
        // Keep, so that the window closes without asking.
        auto answer = answerNextBox("keepButton");
        window.close();
        QCOMPARE(answer->seen, 1);
    }

    void closeWindowAsksKeepDiscardCancel() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        CaptureFiles::setCapturesFolder(dir.path());
        // Cancel: the window stays, the file stays.
        MainWindow window;
        window.show();
        const QString file = capture(window);
        QVERIFY(QFileInfo::exists(file));
        auto cancel = answerNextBox("cancelButton");
        QVERIFY(!window.close());
        QCOMPARE(cancel->seen, 1);
        QVERIFY2(cancel->text.contains(file), qPrintable(cancel->text));
        QVERIFY(window.isVisible());
        QVERIFY(QFileInfo::exists(file));
        // Discard: deleted only now, after the person said so.
        auto discard = answerNextBox("discardButton");
        QVERIFY(window.close());
        QCOMPARE(discard->seen, 1);
        QVERIFY(!window.isVisible());
        QVERIFY(!QFileInfo::exists(file));
        QVERIFY(!CaptureFiles::recentFiles().contains(file));

        // Keep, through File > Quit (Ctrl+Q): the file stays and is listed.
        MainWindow second;
        second.show();
        const QString kept = capture(second);
        QVERIFY(QFileInfo::exists(kept));
        QAction* quit = nullptr;
        for (QAction* a : second.findChildren<QAction*>())
            if (a->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_Q)) quit = a;
        QVERIFY(quit);
        auto keep = answerNextBox("keepButton");
        quit->trigger();
        QCOMPARE(keep->seen, 1);
        QVERIFY(!second.isVisible());
        QVERIFY(QFileInfo::exists(kept));
        QCOMPARE(CaptureFiles::recentFiles().value(0), kept);
        QString why;
        QVERIFY2(fileIsComplete(kept, why), qPrintable(why));
    }

    void closeTabAsks() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        CaptureFiles::setCapturesFolder(dir.path());
        MainWindow window;
        window.show();
        auto* tabs = window.findChild<QTabWidget*>("tabs");
        const QString file = capture(window);
        QCOMPARE(tabs->count(), 2);
        auto cancel = answerNextBox("cancelButton");
        emit tabs->tabCloseRequested(1);
        QCOMPARE(cancel->seen, 1);
        QCOMPARE(tabs->count(), 2);
        QVERIFY(QFileInfo::exists(file));
        auto keep = answerNextBox("keepButton");
        emit tabs->tabCloseRequested(1);
        QCOMPARE(keep->seen, 1);
        QCOMPARE(tabs->count(), 1);
        QVERIFY(QFileInfo::exists(file));
        QVERIFY(window.unkeptCaptures().isEmpty());
        // A kept capture opened again closes without a question.
        window.openFile(file);
        {
            NoBox none;
            emit tabs->tabCloseRequested(1);
            QTest::qWait(100);
            QVERIFY(!none.opened);
        }
        QCOMPARE(tabs->count(), 1);
        // Discard from the tab.
        const QString other = capture(window);
        QVERIFY(other != file);
        auto discard = answerNextBox("discardButton");
        emit tabs->tabCloseRequested(tabs->count() - 1);
        QCOMPARE(discard->seen, 1);
        QCOMPARE(tabs->count(), 1);
        QVERIFY(!QFileInfo::exists(other));
        QVERIFY(QFileInfo::exists(file));
        NoBox none;
        QVERIFY(window.close());  // nothing left to ask about
        QVERIFY(!none.opened);
    }

    void captureRunningAtCloseIsFinishedAndKept() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        CaptureFiles::setCapturesFolder(dir.path());
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->start();
        QVERIFY(page->capturing());
        const QString file = page->currentCaptureFile();
        QTest::qWait(400);
        NoBox none;
        QVERIFY(!window.close());  // not yet: the capture is finished first
        QVERIFY2(window.statusBar()->currentMessage().contains(file),
                 qPrintable(window.statusBar()->currentMessage()));
        QTRY_VERIFY_WITH_TIMEOUT(!window.isVisible(), 20000);
        QVERIFY(!none.opened);
        QVERIFY(!page->capturing());
        QString why;
        QVERIFY2(fileIsComplete(file, why), qPrintable(why));
        QCOMPARE(CaptureFiles::recentFiles().value(0), file);
    }

    // A window destroyed under a running capture (no close: the application
    // quit) still completes the file.
    void windowDestroyedWhileCapturingCompletesTheFile() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        CaptureFiles::setCapturesFolder(dir.path());
        QString file;
        {
            MainWindow window;
            window.show();
            window.capturePage()->start();
            QVERIFY(window.capturePage()->capturing());
            file = window.capturePage()->currentCaptureFile();
            QTest::qWait(400);
        }
        QString why;
        QVERIFY2(fileIsComplete(file, why), qPrintable(why));
    }

    // A captures folder that cannot be made does not stop a capture: it goes to
    // the user's folder in the temporary folder, and the status line says so.
    void unwritableFolderFallsBackToTemp() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        CaptureFiles::setCapturesFolder("/proc/self/no-such-folder/captures");
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->start();
        QVERIFY(page->capturing());
        const QString file = page->currentCaptureFile();
        const QString fallback = QDir::temp().filePath(QString("auxscope-captures-%1").arg(::getuid()));
        QCOMPARE(QFileInfo(file).path(), fallback);
        const QString status = page->findChild<QLabel*>("status")->text();
        QVERIFY2(status.contains("cannot create the captures folder /proc/self/no-such-folder/captures") &&
                     status.contains(file),
                 qPrintable(status));
        QTest::qWait(300);
        page->stop();
        QTRY_VERIFY_WITH_TIMEOUT(!page->capturing(), 20000);
        QString why;
        QVERIFY2(fileIsComplete(file, why), qPrintable(why));
        QFile::remove(file);  // the test's own
    }

    void openRecentListsPrunesAndClears() {
        QTemporaryDir dir;
        MainWindow window;
        QStringList made;
        for (int i = 0; i < 12; ++i) {
            const QString path = dir.filePath(QString("f%1.data").arg(i));
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.close();
            CaptureFiles::addRecent(path);
            made.prepend(path);
        }
        QCOMPARE(CaptureFiles::recentFiles().size(), CaptureFiles::kMaxRecent);  // bounded
        QCOMPARE(CaptureFiles::recentFiles().value(0), made[0]);                 // newest first
        CaptureFiles::addRecent(made[5]);                                        // again: moves up, once
        QCOMPARE(CaptureFiles::recentFiles().value(0), made[5]);
        QCOMPARE(CaptureFiles::recentFiles().count(made[5]), 1);
        QVERIFY(QFile::remove(made[1]));
        window.rebuildRecentMenu();
        QMenu* menu = window.recentMenu();
        QVERIFY(menu);
        QAction* missing = nullptr;
        int entries = 0;
        for (QAction* a : menu->actions()) {
            if (a->data().toString().isEmpty()) continue;
            ++entries;
            if (a->data().toString() == made[1]) missing = a;
        }
        QCOMPARE(entries, CaptureFiles::kMaxRecent);
        QVERIFY(missing);
        QVERIFY(!missing->isEnabled());  // greyed
        QVERIFY(missing->text().contains("missing"));
        // The capture page lists the same, the missing one greyed.
        window.capturePage()->refreshRecent();
        auto* list = window.capturePage()->findChild<QListWidget*>("recentList");
        QCOMPARE(list->count(), CaptureFiles::kMaxRecent);
        QCOMPARE(list->item(0)->data(Qt::UserRole).toString(), made[5]);
        for (int i = 0; i < list->count(); ++i)
            QCOMPARE(bool(list->item(i)->flags() & Qt::ItemIsEnabled),
                     QFileInfo::exists(list->item(i)->data(Qt::UserRole).toString()));
        // Opening an entry opens a tab.
        auto* tabs = window.findChild<QTabWidget*>("tabs");
        QAction* first = menu->actions().value(0);
        QCOMPARE(first->data().toString(), made[5]);
        first->trigger();
        QCOMPARE(tabs->count(), 2);
        QCOMPARE(qobject_cast<TraceFilePage*>(tabs->currentWidget())->path(), made[5]);
        // So does activating one on the capture page.
        const QString onPage = list->item(1)->data(Qt::UserRole).toString();
        QVERIFY(QFileInfo::exists(onPage));
        emit list->itemActivated(list->item(1));  // the list is rebuilt: the entry moves first
        QTRY_COMPARE(tabs->count(), 3);
        QCOMPARE(qobject_cast<TraceFilePage*>(tabs->currentWidget())->path(), onPage);
        QCOMPARE(list->item(0)->data(Qt::UserRole).toString(), onPage);
        // Remove missing entries.
        QAction* prune = nullptr;
        for (QAction* a : menu->actions())
            if (a->objectName() == "recentPrune") prune = a;
        QVERIFY(prune && prune->isEnabled());
        prune->trigger();
        QVERIFY(!CaptureFiles::recentFiles().contains(made[1]));
        QCOMPARE(CaptureFiles::recentFiles().size(), CaptureFiles::kMaxRecent - 1);
        // Clear.
        QAction* clear = nullptr;
        for (QAction* a : menu->actions())
            if (a->objectName() == "recentClear") clear = a;
        QVERIFY(clear);
        clear->trigger();
        QVERIFY(CaptureFiles::recentFiles().isEmpty());
        QCOMPARE(list->count(), 1);
        QVERIFY(!(list->item(0)->flags() & Qt::ItemIsEnabled));
        // Nothing in the folder was deleted by any of this.
        for (int i = 0; i < 12; ++i)
            if (made[i] != made[1]) QVERIFY(QFileInfo::exists(made[i]));
    }

    // The GUI as a process of its own (this binary with --child-capture: a
    // MainWindow with the quit handlers auxscope_run_gui installs), capturing;
    // SIGTERM; the file must be complete and kept and the process must exit 0.
    void sigtermWhileCapturingKeepsAFinishedFile() {
        if (QString why = perfDenied(); !why.isEmpty())
            QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        QTemporaryDir dir;
        CaptureFiles::setCapturesFolder(dir.path());
        QProcess child;
        child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        child.start(QCoreApplication::applicationFilePath(), {"--child-capture"});
        QVERIFY(child.waitForStarted(10000));
        QString file;
        QElapsedTimer t;
        t.start();
        while (file.isEmpty() && t.elapsed() < 30000) {
            child.waitForReadyRead(1000);
            while (child.canReadLine()) {
                const QString line = QString::fromUtf8(child.readLine()).trimmed();
                if (line.startsWith("CAPTURING ")) file = line.mid(10);
            }
            if (child.state() != QProcess::Running) break;
        }
        QVERIFY2(!file.isEmpty(), "the child GUI did not start capturing");
        QCOMPARE(QFileInfo(file).path(), dir.path());
        QTest::qWait(1000);
        QVERIFY(QFileInfo::exists(file));
        QCOMPARE(::kill(pid_t(child.processId()), SIGTERM), 0);
        QVERIFY2(child.waitForFinished(30000), "the GUI did not quit within 30 s of SIGTERM");
        QCOMPARE(child.exitStatus(), QProcess::NormalExit);
        QCOMPARE(child.exitCode(), 0);
        QString why;
        QVERIFY2(fileIsComplete(file, why), qPrintable(why));
        // perf, the reference reader, reads it too.
        if (!QStandardPaths::findExecutable("perf").isEmpty()) {
            QProcess perf;
            perf.start("perf", {"report", "--stdio", "-i", file});
            QVERIFY(perf.waitForFinished(60000));
            QVERIFY2(perf.exitCode() == 0, perf.readAllStandardError().constData());
            QVERIFY(perf.readAllStandardOutput().contains("Samples"));
        }
    }
};

namespace {

// The child of sigtermWhileCapturingKeepsAFinishedFile: the GUI, capturing.
int runChildCapture(int argc, char** argv) {
    QApplication app(argc, argv);
    MainWindow window;
    if (!installQuitSignals(window)) return 3;
    window.show();
    QObject::connect(window.capturePage(), &CapturePage::captureStarted, [&window] {
        std::printf("CAPTURING %s\n", qPrintable(window.capturePage()->currentCaptureFile()));
        std::fflush(stdout);
    });
    window.capturePage()->start();
    if (!window.capturePage()->capturing()) return 4;
    return app.exec();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && QByteArray(argv[1]) == "--child-capture") return runChildCapture(argc, argv);
    // A home of its own: nothing read from or left in the user's.
    QTemporaryDir home;
    if (!home.isValid()) return 2;
    qputenv("XDG_DATA_HOME", home.filePath("data").toUtf8());
    qputenv("XDG_CONFIG_HOME", home.filePath("config").toUtf8());
    QApplication app(argc, argv);
    // The tests close many windows; Qt would otherwise quit the application at
    // the first, and every modal box after it would return at once.
    QApplication::setQuitOnLastWindowClosed(false);
    CaptureKeepTest test;
    return QTest::qExec(&test, argc, argv);
}

#include "CaptureKeepTest.moc"
