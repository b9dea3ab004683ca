// SPDX-License-Identifier: GPL-3.0-or-later
// The Symbols & binaries dialog (issue 27), offscreen, on simpleperf's
// CoreSight file from an Android phone (perf_etm.data, its binary
// /data/local/tmp/etm_test_loop copied beside it and under symfs/):
//  - opened in place, the file's folder is searched automatically: the spans
//    are named and the decode equals `auxscope report --symfs symfs` (944
//    instructions, the same functions);
//  - a copy alone in a folder: the header names the missing image with a
//    button to the dialog; a sysroot set in the dialog re-decodes the file into
//    the same named spans, the header no longer names it, and the settings are
//    kept for that file (a page opened later uses them) and for no other;
//  - the automatic folder turned off, then on again, re-decodes each time;
//  - "Use for every file" makes the defaults of files without settings.
// QSettings go to a temporary folder, never the person's.
#include <QAction>
#include <QCheckBox>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QPushButton>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <set>

#include "TestData.h"
#include "gui/MainWindow.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/SymbolSettings.h"
#include "gui/trace/SymbolsDialog.h"
#include "gui/trace/TraceFilePage.h"
#include "spans/RangeStats.h"
#include "spans/TimelineData.h"

using namespace auxscope;

namespace {

const char* const kBinary = "/data/local/tmp/etm_test_loop";

QString etmDir() {
    return QString::fromStdString(test_support::testDataPath("coresight/simpleperf-etm"));
}

// Waits until the page's current timeline has decoded its first window.
bool waitDecoded(TraceFilePage& page, int ms = 60000) {
    return QTest::qWaitFor(
        [&] {
            if (!page.timeline()) return false;
            const auto& d = page.timeline()->data();
            return d && d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
        },
        ms);
}

bool openDecoded(TraceFilePage& page) {
    page.setAutoDecodeLimit(0);
    page.resize(1400, 1000);
    page.show();
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000) || !page.loaded())
        return false;
    return waitDecoded(page);
}

// What the decoded timeline holds: instructions, and instructions per named function.
struct Decoded {
    uint64_t instructions = 0, gaps = 0;
    std::map<std::string, uint64_t> byFunction;  // self instructions of named functions
};

Decoded decodedOf(const TraceFilePage& page) {
    Decoded out;
    const auto data = page.timeline()->data();
    ThreadStores stores;
    for (const auto& t : data->threads)
        stores.emplace_back(t.tid, &t.spans);
    RangeQuery q;
    q.begin = data->decodedBegin, q.end = data->decodedEnd;
    auto stats = computeRangeStats(stores, q);
    if (!stats) return out;
    out.instructions = stats->instructions();
    for (const FunctionStats& f : stats->topFunctions(RangeSort::SelfInsns)) {
        const std::string& name = (*data->functions)[f.function].name;
        if (f.cost.selfInsns) out.byFunction[name] += f.cost.selfInsns;
    }
    for (const auto& t : data->threads)
        t.spans.forEach(0, t.spans.size(), [&](size_t, const Span& s) { out.gaps += s.isGap(); });
    return out;
}

// `auxscope report FILE --symfs DIR --format json`: instructions and self instructions per function.
Decoded cliReport(const QString& file, const QString& symfs) {
    Decoded out;
    QProcess p;
    p.start(AUXSCOPE_BINARY, {"report", file, "--symfs", symfs, "--top", "100000", "--format", "json"});
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        qWarning() << "auxscope report failed:" << p.readAllStandardError();
        return out;
    }
    const QJsonObject o = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    out.instructions = uint64_t(o.value("instructions").toDouble());
    for (const QJsonValue& f : o.value("functions").toArray()) {
        const QJsonObject fn = f.toObject();
        const uint64_t self = uint64_t(fn.value("self_insns").toDouble());
        if (self) out.byFunction[fn.value("name").toString().toStdString()] += self;
    }
    return out;
}

}  // namespace

class SymbolsDialogTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() {
        QVERIFY(settingsDir_.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
        QCoreApplication::setOrganizationName("auxscope-symbols-dialog-test");
        QCoreApplication::setApplicationName("auxscope-symbols-dialog-test");
        QSettings().clear();
    }

    // Settings round-trip through QSettings, per file and as defaults.
    void settingsPersist() {
        QTemporaryDir dir;
        const QString a = dir.filePath("a.data"), b = dir.filePath("b.data");
        for (const QString& f : {a, b}) {
            QFile file(f);
            QVERIFY(file.open(QIODevice::WriteOnly));
        }
        QVERIFY(!SymbolSettings::forFile(a).ownEntry);
        SymbolSettings s;
        s.options.symfs = "/sysroot";
        s.options.binaryDirs = {"/x", "/y"};
        s.options.debugDirs = {"/dbg"};
        s.options.vmlinux = "/v", s.options.kcore = "/k", s.options.kallsyms = "/ks";
        s.options.debuginfodUrls = {"http://127.0.0.1:1/"};
        s.options.debuginfod = false;
        s.options.jitDumps = {"/tmp/jit-1.dump"};
        s.options.perfMaps = {"/tmp/perf-1.map"};
        s.searchFileFolder = false;
        SymbolSettings::saveForFile(a, s);
        const SymbolSettings back = SymbolSettings::forFile(a);
        QVERIFY(back.ownEntry);
        QVERIFY(back == s);
        QVERIFY(!SymbolSettings::forFile(b).ownEntry);
        QCOMPARE(SymbolSettings::forFile(b).options.symfs, std::string());
        // The automatic folder goes first, once; off: not at all.
        SymbolSettings on;
        on.options.binaryDirs = {"/x"};
        QCOMPARE(on.effective(a).binaryDirs,
                 (std::vector<std::string>{SymbolSettings::fileFolder(a).toStdString(), "/x"}));
        QCOMPARE(back.effective(a).binaryDirs, s.options.binaryDirs);
        SymbolSettings::forgetFile(a);
        QVERIFY(!SymbolSettings::forFile(a).ownEntry);
        // The dialog shows what it is given and gives back what it shows.
        SymbolsDialog dialog(a, s);
        QCOMPARE(dialog.symfsEdit()->text(), QString("/sysroot"));
        QVERIFY(!dialog.fileFolderCheck()->isChecked());
        QVERIFY(dialog.fileFolderCheck()->text().contains(SymbolSettings::fileFolder(a)));
        QVERIFY(dialog.settings() == s);
        // Paths that do not exist are named.
        QVERIFY(dialog.problems().contains("/sysroot"));
        QVERIFY(dialog.problems().contains("/tmp/jit-1.dump"));
        dialog.symfsEdit()->setText(dir.path() + "/");
        QVERIFY(!dialog.problems().contains("sysroot"));
        QCOMPARE(dialog.settings().options.symfs, dir.path().toStdString());  // no trailing slash
        dialog.debuginfodUrlsEdit()->setText("127.0.0.1:8002 https://debuginfod.debian.net");
        QVERIFY2(dialog.problems().contains("debuginfod URL 127.0.0.1:8002"), qPrintable(dialog.problems()));
        QVERIFY(!dialog.problems().contains("debian.net"));
        QCOMPARE(dialog.settings().options.debuginfodUrls,
                 (std::vector<std::string>{"127.0.0.1:8002", "https://debuginfod.debian.net"}));
        QSettings().clear();
    }

    // In place, beside its binary: named spans as the CLI gives them with --symfs.
    void fileFolderSearchedAutomatically() {
        AUXSCOPE_QNEED_TEST_DATA();
        const QString file = etmDir() + "/perf_etm.data";
        TraceFilePage page(file);
        QVERIFY2(openDecoded(page),
                 qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no timeline"));
        QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        const QList<QString> dirs = toQStringList(page.imageOptions().binaryDirs);
        QVERIFY(dirs.contains(SymbolSettings::fileFolder(file)));
        QVERIFY2(!page.missingImages().contains(kBinary), qPrintable(page.missingImages().join(", ")));
        const Decoded gui = decodedOf(page);
        const Decoded cli = cliReport(file, etmDir() + "/symfs");
        QCOMPARE(cli.instructions, uint64_t(944));
        QCOMPARE(gui.instructions, cli.instructions);
        QVERIFY(!gui.byFunction.empty());
        QCOMPARE(gui.byFunction, cli.byFunction);
        qInfo("GUI: %llu instructions in %zu named functions, as the CLI with --symfs",
              (unsigned long long)gui.instructions, gui.byFunction.size());
    }

    // A copy alone: the header names the missing binary; the dialog's sysroot re-decodes it, and is kept.
    void missingImageThenSysroot() {
        AUXSCOPE_QNEED_TEST_DATA();
        QTemporaryDir dir;
        const QString file = dir.filePath("perf_etm.data");
        QVERIFY(QFile::copy(etmDir() + "/perf_etm.data", file));
        const Decoded cli = cliReport(file, etmDir() + "/symfs");
        QCOMPARE(cli.instructions, uint64_t(944));
        TraceFilePage page(file);
        QVERIFY(openDecoded(page));
        QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        QVERIFY2(page.missingImages().contains(kBinary), qPrintable(page.missingImages().join(", ")));
        QVERIFY(page.missingImagesLine()->isVisibleTo(&page));
        QVERIFY2(page.missingImagesLine()->text().contains("missing: " + QString(kBinary)) ||
                     page.missingImagesLine()->text().contains(kBinary),
                 qPrintable(page.missingImagesLine()->text()));
        QVERIFY(page.missingImagesLine()->text().contains("missing"));
        const Decoded before = decodedOf(page);
        QVERIFY(before.byFunction.empty());  // nothing named: gaps
        QVERIFY(before.gaps > 0);

        // The header's button opens the dialog; a sysroot there re-decodes the file.
        QVERIFY(page.symbolsButton()->isVisibleTo(&page));
        page.symbolsButton()->click();
        SymbolsDialog* dialog = page.symbolsDialog();
        QVERIFY(dialog);
        QVERIFY(dialog->isVisible());
        dialog->symfsEdit()->setText(etmDir() + "/symfs");
        const int opens = page.timelineOpens();
        dialog->accept();
        QVERIFY(QTest::qWaitFor([&] { return page.timelineOpens() > opens; }, 5000));
        QVERIFY(waitDecoded(page));
        QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        QVERIFY2(!page.missingImages().contains(kBinary), qPrintable(page.missingImages().join(", ")));
        const Decoded after = decodedOf(page);
        QCOMPARE(after.instructions, cli.instructions);
        QCOMPARE(after.byFunction, cli.byFunction);

        // Kept for this file (a page opened later decodes named at once), for no other.
        const SymbolSettings kept = SymbolSettings::forFile(file);
        QVERIFY(kept.ownEntry);
        QCOMPARE(QString::fromStdString(kept.options.symfs), etmDir() + "/symfs");
        QVERIFY(!SymbolSettings::forFile(etmDir() + "/perf_etm.data").ownEntry);
        TraceFilePage again(file);
        QVERIFY(openDecoded(again));
        QCOMPARE(decodedOf(again).byFunction, cli.byFunction);
        QSettings().clear();
    }

    // The automatic folder off: gaps and the binary named missing; on again: named.
    void automaticFolderOffAndOn() {
        AUXSCOPE_QNEED_TEST_DATA();
        const QString file = etmDir() + "/perf_etm.data";
        TraceFilePage page(file);
        QVERIFY(openDecoded(page));
        const Decoded named = decodedOf(page);
        QVERIFY(!named.byFunction.empty());
        auto apply = [&](bool searchFolder) {
            SymbolsDialog* dialog = page.openSymbolsDialog();
            QVERIFY(dialog);
            dialog->fileFolderCheck()->setChecked(searchFolder);
            const int opens = page.timelineOpens();
            dialog->accept();
            QVERIFY(QTest::qWaitFor([&] { return page.timelineOpens() > opens; }, 5000));
            QVERIFY(waitDecoded(page));
            QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        };
        // The view keeps its window across the new decode.
        TimelineState* state = page.timeline()->state();
        const auto whole = state->window();
        const uint64_t quarter = (whole.end - whole.begin) / 4;
        state->setWindow(whole.begin + quarter, whole.end - quarter);
        QVERIFY(waitDecoded(page));
        apply(false);
        if (QTest::currentTestFailed()) return;
        QCOMPARE(page.timeline()->state()->window().begin, whole.begin + quarter);
        QCOMPARE(page.timeline()->state()->window().end, whole.end - quarter);
        QVERIFY(!SymbolSettings::forFile(file).searchFileFolder);
        QVERIFY(page.missingImages().contains(kBinary));
        QVERIFY(decodedOf(page).byFunction.empty());
        apply(true);
        if (QTest::currentTestFailed()) return;
        QVERIFY(!page.missingImages().contains(kBinary));
        QCOMPARE(decodedOf(page).byFunction, named.byFunction);
        QSettings().clear();
    }

    // Another build under the recorded name beside the file (a program of this
    // machine copied as etm_test_loop) is refused by its build-id: still missing,
    // still gaps; the right one beside it is taken.
    void otherBuildBesideTheFileIsRefused() {
        AUXSCOPE_QNEED_TEST_DATA();
        QTemporaryDir dir;
        const QString file = dir.filePath("perf_etm.data");
        QVERIFY(QFile::copy(etmDir() + "/perf_etm.data", file));
        QVERIFY(QFile::copy(AUXSCOPE_BINARY, dir.filePath("etm_test_loop")));
        {
            TraceFilePage page(file);
            QVERIFY(openDecoded(page));
            QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
            QVERIFY2(page.missingImages().contains(kBinary), qPrintable(page.missingImages().join(", ")));
            QVERIFY(decodedOf(page).byFunction.empty());
        }
        QVERIFY(QFile::remove(dir.filePath("etm_test_loop")));
        QVERIFY(QFile::copy(etmDir() + "/etm_test_loop", dir.filePath("etm_test_loop")));
        TraceFilePage page(file);
        QVERIFY(openDecoded(page));
        QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        QVERIFY(!page.missingImages().contains(kBinary));
        QCOMPARE(decodedOf(page).instructions, uint64_t(944));
    }

    // What cannot be used is said, nothing crashes: a vmlinux that is no ELF, a
    // kcore that does not exist. The dialog names the missing path; the header
    // carries the resolver's note; the user code still decodes.
    void badPathsAreNamed() {
        AUXSCOPE_QNEED_TEST_DATA();
        QTemporaryDir dir;
        const QString notElf = dir.filePath("vmlinux");
        {
            QFile f(notElf);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("not an ELF file at all\n");
        }
        const QString file = etmDir() + "/perf_etm.data";
        TraceFilePage page(file);
        QVERIFY(openDecoded(page));
        const Decoded named = decodedOf(page);
        SymbolsDialog* dialog = page.openSymbolsDialog();
        QVERIFY(dialog);
        dialog->vmlinuxEdit()->setText(notElf);
        dialog->kcoreEdit()->setText(dir.filePath("no-such-kcore"));
        QVERIFY2(dialog->problems().contains("no-such-kcore"), qPrintable(dialog->problems()));
        QVERIFY(!dialog->problems().contains(notElf + ";"));
        const int opens = page.timelineOpens();
        dialog->accept();
        QVERIFY(QTest::qWaitFor([&] { return page.timelineOpens() > opens; }, 5000));
        QVERIFY(waitDecoded(page));
        QVERIFY(QTest::qWaitFor([&] { return page.imagesResolved(); }, 30000));
        QVERIFY2(page.missingImagesLine()->text().contains(notElf),
                 qPrintable(page.missingImagesLine()->text()));
        QVERIFY(page.missingImagesLine()->isVisibleTo(&page));
        QCOMPARE(decodedOf(page).byFunction, named.byFunction);
        QSettings().clear();
    }

    // The main window: File > Symbols & binaries… opens the current file's dialog.
    void mainWindowMenu() {
        AUXSCOPE_QNEED_TEST_DATA();
        MainWindow window;
        QAction* action = nullptr;
        for (QAction* a : window.findChildren<QAction*>())
            if (a->text().contains("binaries")) action = a;
        QVERIFY(action);
        QVERIFY(!action->isEnabled());  // the capture page: no file
        TraceFilePage* page = window.openFile(etmDir() + "/perf_etm.data");
        QVERIFY(action->isEnabled());
        action->trigger();
        QVERIFY(page->symbolsDialog());
        QVERIFY(page->symbolsDialog()->isVisible());
        page->symbolsDialog()->reject();
        QVERIFY(QTest::qWaitFor([&] { return !page->symbolsDialog(); }, 5000));  // closed, deleted
        QVERIFY(!SymbolSettings::forFile(page->path()).ownEntry);                // Cancel keeps nothing
    }

    // "Use for every file": the defaults of files without settings of their own.
    void defaultsForEveryFile() {
        AUXSCOPE_QNEED_TEST_DATA();
        QTemporaryDir dir;
        const QString file = dir.filePath("copy.data"), other = dir.filePath("other.data");
        QVERIFY(QFile::copy(etmDir() + "/perf_etm.data", file));
        QVERIFY(QFile::copy(etmDir() + "/perf_etm.data", other));
        TraceFilePage page(file);
        QVERIFY(openDecoded(page));
        SymbolsDialog* dialog = page.openSymbolsDialog();
        QVERIFY(dialog);
        dialog->binaryDirsEdit()->setPlainText(etmDir());
        dialog->defaultsCheck()->setChecked(true);
        const int opens = page.timelineOpens();
        dialog->accept();
        QVERIFY(QTest::qWaitFor([&] { return page.timelineOpens() > opens; }, 5000));
        QVERIFY(waitDecoded(page));
        QVERIFY(!decodedOf(page).byFunction.empty());
        QCOMPARE(toQStringList(SymbolSettings::defaults().options.binaryDirs), QStringList{etmDir()});
        // The other copy has no settings of its own: the defaults find its binary.
        QVERIFY(!SymbolSettings::forFile(other).ownEntry);
        TraceFilePage second(other);
        QVERIFY(openDecoded(second));
        QVERIFY(!decodedOf(second).byFunction.empty());
        QSettings().clear();
    }

private:
    QTemporaryDir settingsDir_;
};

QTEST_MAIN(SymbolsDialogTest)
#include "SymbolsDialogTest.moc"
