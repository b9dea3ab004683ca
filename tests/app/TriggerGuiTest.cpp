// SPDX-License-Identifier: GPL-3.0-or-later
// Snapshot triggers in the GUI (issue 29), offscreen: the capture page's trigger
// editor refuses Start while a trigger is wrong (the cause beside it) or the
// capture is no flight recorder; its function picker lists a binary's functions
// (demangled, filtered as one types, read off the GUI thread); a capture of
// tests/capture/trigger_prog armed through the editor with `handle>5ms` marks
// every firing the engine counted on the live timeline and writes them to the
// file; a replayed Intel PT recording in flight-recorder mode snapshots on a
// marker trigger (no trace hardware); a file with firings opens on the first,
// lists them, and a row jumps the timeline to its firing. The kernel slots need uprobes (root): they skip
// with the reason where there are none, and fail instead where CI=true.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <unistd.h>

#include <fstream>

#include "gui/capture/CapturePage.h"
#include "gui/capture/TriggerEditor.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TriggerFeature.h"

using namespace auxscope;

namespace {

// Why uprobe triggers cannot run here (empty: they can).
QString uprobesUnavailable() {
    if (geteuid() != 0) return "uprobes need root (perf_event_open of a uprobe PMU event)";
    std::ifstream in("/sys/bus/event_source/devices/uprobe/type");
    int type = 0;
    if (!(in >> type)) return "no uprobe PMU (/sys/bus/event_source/devices/uprobe/type)";
    return {};
}

#define SKIP_WITHOUT_UPROBES()                                                           \
    do {                                                                                 \
        const QString why = uprobesUnavailable();                                        \
        if (!why.isEmpty()) {                                                            \
            if (qgetenv("CI") == "true") QFAIL(qPrintable(why + " (CI=true: no skip)")); \
            QSKIP(qPrintable(why));                                                      \
        }                                                                                \
    } while (0)

// The page set to launch trigger_prog with `args`.
void launch(CapturePage& page, const QString& args) {
    page.findChild<QComboBox*>("targetKind")->setCurrentIndex(3);
    page.findChild<QLineEdit*>("targetValue")->setText(QString(TRIGGER_PROG_PATH) + " " + args);
    page.findChild<QLineEdit*>("events")->setText("cpu-clock");
}

}  // namespace

class TriggerGuiTest : public QObject {
    Q_OBJECT
private slots:
    void editorRefusesWrongTriggersBeforeStart() {
        CapturePage page;
        page.show();
        launch(page, "calls");
        TriggerEditor* editor = page.triggerEditor();
        QVERIFY(editor);
        auto* start = page.findChild<QPushButton*>("startButton");
        QTRY_COMPARE(editor->defaultBinary(), QFileInfo(TRIGGER_PROG_PATH).canonicalFilePath());
        QVERIFY(start->isEnabled());

        // A function the binary lacks: the cause beside the row, Start refused.
        TriggerRow* row = editor->addTrigger("no_such_fn");
        QCOMPARE(row->kind(), TriggerRow::FunctionEntered);
        QTRY_VERIFY(row->error().contains("no function 'no_such_fn'"));
        QVERIFY(row->findChild<QLabel*>("triggerError")->text().contains("no_such_fn"));
        QVERIFY(!editor->valid());
        QVERIFY(!start->isEnabled());
        page.start();  // as if clicked anyway (a shortcut, a script)
        QVERIFY(!page.capturing());
        QVERIFY(page.findChild<QLabel*>("status")->text().contains("no function 'no_such_fn'"));

        // A slow call with a threshold out of range.
        row->setKind(TriggerRow::SlowCall);
        row->functionEdit()->setText("handle");
        row->thresholdEdit()->setText("0ms");
        QTRY_VERIFY(row->error().contains("out of range"));
        QVERIFY(!start->isEnabled());
        QCOMPARE(row->spec(), QString("handle>0ms"));

        // Right: Start allowed, but the capture is no flight recorder: refused, saying what to tick.
        row->thresholdEdit()->setText("5ms");
        QTRY_VERIFY(editor->valid());
        QVERIFY(row->error().isEmpty());
        QVERIFY(start->isEnabled());
        page.findChild<QCheckBox*>("overwrite")->setChecked(false);
        page.start();
        QVERIFY(!page.capturing());
        QVERIFY(page.findChild<QLabel*>("status")->text().contains("take snapshots"));

        // Bad threads: the options' error; removing the trigger makes the page plain again.
        editor->threadsEdit()->setText("12, x");
        QTRY_VERIFY(!editor->valid());
        QVERIFY(editor->firstError().contains("'x' is not a thread id"));
        editor->threadsEdit()->setText("");
        editor->removeTrigger(0);
        QTRY_VERIFY(editor->valid());
        QCOMPARE(editor->count(), 0);
        QVERIFY(start->isEnabled());

        // Text that is no spec at all: kept as typed, the parser's cause beside it.
        TriggerRow* bad = editor->addTrigger("handle>");
        QVERIFY2(bad->error().contains("handle>"), qPrintable(bad->error()));
        QVERIFY(!start->isEnabled());
        editor->removeTrigger(0);

        // System-wide there is no target binary: a function trigger must name its own.
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(0);
        TriggerRow* named = editor->addTrigger("handle");
        QTRY_VERIFY2(named->error().contains("name the binary"), qPrintable(named->error()));
        named->binaryEdit()->setText(TRIGGER_PROG_PATH);
        QTRY_VERIFY2(editor->valid(), qPrintable(editor->firstError()));
        editor->removeTrigger(0);

        // The same specs as the command line, each kind round-tripped through its fields.
        for (const QString spec : {"handle", "handle@/bin/true", "handle>5ms", "syscall:read>10ms",
                                   "sched:sched_wakeup->sched_switch>2ms", "marker", "/bin/true:0x1040"}) {
            TriggerRow* r = editor->addTrigger(spec);
            QCOMPARE(r->spec(), spec);
            editor->removeTrigger(editor->count() - 1);
        }
    }

    void functionPickerListsDemangledAndFilters() {
        TriggerEditor editor;
        editor.show();
        editor.setDefaultBinary(QFileInfo(TRIGGER_PROG_PATH).canonicalFilePath());
        TriggerRow* row = editor.addTrigger();
        QVERIFY2(row->error().contains("enter the function"),
                 qPrintable(row->error()));  // a new row says what it needs
        TriggerFunctionPicker* picker = editor.openPicker(0);
        QVERIFY(picker);
        QTRY_VERIFY_WITH_TIMEOUT(picker->loaded(), 30000);
        QVERIFY2(picker->functionCount() >= 3, qPrintable(picker->status()->text()));
        QTest::keyClicks(picker->filter(), "HANDL");
        QTRY_COMPARE(picker->shownCount(), 1);
        QCOMPARE(picker->list()->currentIndex().data().toString(), QString("handle"));
        QTest::keyClick(picker->list(), Qt::Key_Return);
        QTRY_COMPARE(row->functionEdit()->text(), QString("handle"));

        // A C++ library: demangled names shown and filtered, the symbol's name put in the spec;
        // read on a worker, the GUI thread free meanwhile.
        const char* libstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
        if (!QFileInfo::exists(libstdcxx)) QSKIP("no libstdc++.so.6 here for the C++ part");
        row->binaryEdit()->setText(libstdcxx);
        QElapsedTimer clock;
        clock.start();
        picker = editor.openPicker(0);
        QVERIFY(picker);
        QVERIFY2(clock.elapsed() < 1000, "the picker waited for the symbol table on the GUI thread");
        QTRY_VERIFY_WITH_TIMEOUT(picker->loaded(), 60000);
        QVERIFY2(picker->functionCount() > 1000, qPrintable(picker->status()->text()));
        qInfo("libstdc++: %d functions listed in %lld ms (on a worker)", picker->functionCount(),
              qint64(clock.elapsed()));
        QTest::keyClicks(picker->filter(), "std::__cxx11::basic_string");
        QTRY_VERIFY(picker->shownCount() > 0 && picker->shownCount() < picker->functionCount());
        const QString shown = picker->list()->currentIndex().data().toString();
        QVERIFY2(shown.contains("std::__cxx11::basic_string"), qPrintable(shown));
        QVERIFY2(picker->chosen().startsWith("_Z"), qPrintable(picker->chosen()));
        picker->accept();
        QTRY_VERIFY(row->functionEdit()->text().startsWith("_Z"));
        row->thresholdEdit()->setText("1ms");
        clock.restart();
        QVERIFY2(editor.validate(), qPrintable(editor.firstError()));  // resolveTrigger finds it
        qInfo("resolving a libstdc++ function's trigger on the GUI thread: %lld ms", qint64(clock.elapsed()));
    }

    void liveCaptureMarksEveryFiring() {
        SKIP_WITHOUT_UPROBES();
        CapturePage page;
        page.resize(1300, 900);
        page.show();
        launch(page, "calls");
        page.findChild<QCheckBox*>("overwrite")->setChecked(true);
        TriggerEditor* editor = page.triggerEditor();
        editor->findChild<QPushButton*>("triggerAdd")->click();
        TriggerRow* row = editor->row(0);
        row->setKind(TriggerRow::SlowCall);
        QTest::keyClicks(row->functionEdit(), "handle");
        QTest::keyClicks(row->thresholdEdit(), "5ms");
        editor->postBox()->setValue(1);
        QTRY_VERIFY2(editor->valid(), qPrintable(editor->firstError()));
        auto* start = page.findChild<QPushButton*>("startButton");
        QTRY_VERIFY(start->isEnabled());
        QSignalSpy finished(&page, &CapturePage::captureFinished);
        start->click();
        QVERIFY2(page.capturing(), qPrintable(page.findChild<QLabel*>("status")->text()));
        QVERIFY(page.triggerLabel()->isVisible());
        // The firings show while the program runs (20 slow calls about 100 ms apart).
        QTRY_VERIFY_WITH_TIMEOUT(!page.triggerReport().firings.empty(), 60000);
        QVERIFY(!page.liveTimeline()->eventMarkers().empty());
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);

        const TriggerReport& r = page.triggerReport();
        QVERIFY2(r.firings.size() >= 1, qPrintable(page.triggerLabel()->text()));
        QCOMPARE(r.triggers, std::vector<std::string>{"handle>5ms"});
        for (const TriggerFiring& f : r.firings)
            QVERIFY2(f.duration >= 5'000'000, qPrintable(QString("a firing of %1 ns").arg(f.duration)));
        // Every firing the engine counted is a marker on the live timeline, drawn there.
        TimelineView* view = page.liveTimeline();
        QCOMPARE(view->eventMarkers().size(), r.firings.size());
        uint64_t first = UINT64_MAX, last = 0;
        for (const auto& m : view->eventMarkers()) {
            first = std::min(first, m.start);
            last = std::max(last, m.time);
        }
        view->setFollowLatest(false);
        view->setVisibleRange(first - 1'000'000, last + 1'000'000);
        view->grab();
        // Every marker inside the live data's time range is drawn; one whose whole call lies
        // past the newest record the live timeline got (the capture's last moments, under
        // load) cannot be shown there: at most one, named if so (the file shows them all).
        const uint64_t dataBegin = view->data()->begin, dataEnd = view->data()->end;
        int inData = 0;
        QString beyond;
        for (const auto& m : view->eventMarkers()) {
            if (m.time >= dataBegin && m.start <= dataEnd)
                ++inData;
            else
                beyond += QString(" [%1, %2] outside the data's [%3, %4]")
                              .arg(m.start)
                              .arg(m.time)
                              .arg(dataBegin)
                              .arg(dataEnd);
        }
        QCOMPARE(view->eventMarkersDrawn(), inData);
        QVERIFY2(inData + 1 >= int(r.firings.size()), qPrintable(beyond));
        if (!beyond.isEmpty()) qInfo("a firing past the live data:%s", qPrintable(beyond));
        QVERIFY2(
            page.triggerLabel()->text().startsWith(QString("Triggers: %1 firings").arg(r.firings.size())),
            qPrintable(page.triggerLabel()->text()));
        // ... and in the file the capture wrote.
        auto reader = PerfDataReader::open(page.lastCaptureFile().toStdString());
        QVERIFY2(reader.ok(), reader.ok() ? "" : reader.error().message.c_str());
        size_t inFile = 0;
        for (const PerfRawFeature& raw : reader->features().raw)
            if (raw.id == kFeatAuxscopeTriggers) {
                auto t = decodeTriggerFeature(raw.bytes, "test");
                QVERIFY(t.ok());
                inFile = t->report.firings.size();
            }
        QCOMPARE(inFile, r.firings.size());
        qInfo("live: %zu firings of handle>5ms, %llu snapshots taken", r.firings.size(),
              (unsigned long long)r.snapshotsTaken);
    }

    // No trace hardware: a replayed Intel PT recording in flight-recorder mode is
    // the AUX flight recorder, and a marker trigger (the real kernel's uprobe on
    // trigger_prog's auxscope_trigger(), system-wide) takes its snapshots.
    void replayFlightRecorderSnapshotsOnAMarker() {
        SKIP_WITHOUT_UPROBES();
        QTemporaryDir dir;
        const QString data = dir.filePath("gen.data");
        QProcess synth;
        synth.start(QStringLiteral(AUXSCOPE_PTSYNTH), {"--generate", "1", "--seed", "9", "-q", "-o", data});
        QVERIFY(synth.waitForFinished(120000));
        QCOMPARE(synth.exitCode(), 0);
        CapturePage page;
        page.show();
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        page.findChild<QLineEdit*>("targetValue")->setText(data);
        page.findChild<QComboBox*>("replaySpeed")->setCurrentIndex(0);  // recorded speed
        page.findChild<QCheckBox*>("replayLoop")->setChecked(true);     // until Stop
        TriggerEditor* editor = page.triggerEditor();
        // A replay has no target binary: the marker names its own.
        TriggerRow* row = editor->addTrigger("marker");
        QTRY_VERIFY2(row->error().contains("name the binary"), qPrintable(row->error()));
        row->binaryEdit()->setText(TRIGGER_PROG_PATH);
        QTRY_VERIFY2(editor->valid(), qPrintable(editor->firstError()));
        // Not in snapshot mode: refused on the page, saying what to tick; nothing started.
        page.findChild<QCheckBox*>("replaySnapshot")->setChecked(false);
        page.start();
        QVERIFY(!page.capturing());
        QVERIFY2(page.findChild<QLabel*>("status")->text().contains("flight-recorder (snapshot) mode"),
                 qPrintable(page.findChild<QLabel*>("status")->text()));
        qInfo("refused: %s", qPrintable(page.findChild<QLabel*>("status")->text()));

        page.findChild<QCheckBox*>("replaySnapshot")->setChecked(true);
        QSignalSpy finished(&page, &CapturePage::captureFinished);
        page.start();
        QTRY_VERIFY2_WITH_TIMEOUT(page.capturing(), qPrintable(page.findChild<QLabel*>("status")->text()),
                                  30000);  // the recording is read on a worker first
        QProcess prog;
        prog.start(TRIGGER_PROG_PATH, {"marker", "5"});
        QVERIFY(prog.waitForFinished(60000));
        QCOMPARE(prog.exitCode(), 0);
        auto calls = [&] {
            const TriggerReport& r = page.triggerReport();
            return r.firings.size() + r.skipped[size_t(TriggerSkip::Pending)];
        };
        QTRY_VERIFY_WITH_TIMEOUT(calls() == 5, 30000);
        QTRY_VERIFY_WITH_TIMEOUT(page.triggerReport().snapshotsTaken >= 1, 30000);
        page.stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 60000);
        const TriggerReport& r = page.triggerReport();
        QCOMPARE(calls(), size_t(5));
        qInfo("replay: %zu firings, %llu skipped while a snapshot was pending, %llu snapshots taken",
              r.firings.size(), (unsigned long long)r.skipped[size_t(TriggerSkip::Pending)],
              (unsigned long long)r.snapshotsTaken);
        QCOMPARE(page.liveTimeline()->eventMarkers().size(), r.firings.size());
        QVERIFY2(page.lastSummary().snapshots >= r.snapshotsTaken,
                 qPrintable(QString("%1 snapshots, %2 triggered")
                                .arg(page.lastSummary().snapshots)
                                .arg(r.snapshotsTaken)));
    }

    void fileWithFiringsListsThemAndJumps() {
        SKIP_WITHOUT_UPROBES();
        QTemporaryDir dir;
        const QString out = dir.filePath("t.data");
        QProcess rec;
        rec.setProcessChannelMode(QProcess::MergedChannels);
        rec.start(AUXSCOPE_CLI, {"record", "--overwrite", "-e", "cpu-clock", "--trigger", "handle>5ms",
                                 "--trigger-post", "1", "-o", out, "--", TRIGGER_PROG_PATH, "calls"});
        QVERIFY(rec.waitForFinished(120000));
        QVERIFY2(rec.exitCode() == 0, rec.readAll().constData());

        TraceFilePage page(out);
        page.resize(1300, 900);
        page.show();
        QTRY_VERIFY_WITH_TIMEOUT(page.firingsList() != nullptr, 60000);
        const TriggerFileData* t = page.triggers();
        QVERIFY(t);
        const auto& firings = t->report.firings;
        QVERIFY(firings.size() >= 2);
        QTableWidget* list = page.firingsList();
        QCOMPARE(list->rowCount(), int(firings.size()));
        QCOMPARE(list->item(0, 1)->text(), QString("handle>5ms"));
        QCOMPARE(list->item(0, 2)->text(), QString("%1/%2").arg(firings[0].pid).arg(firings[0].tid));
        QVERIFY(list->isVisible());  // its tab is the one shown
        QCOMPARE(page.timeline()->eventMarkers().size(), firings.size());
        // The Summary says how many fired, per trigger, with the options.
        const auto sections = page.tree()->findItems("Snapshot triggers", Qt::MatchExactly);
        QCOMPARE(sections.size(), 1);
        QVERIFY2(sections[0]->text(1).startsWith(QString("%1 firings").arg(firings.size())),
                 qPrintable(sections[0]->text(1)));
        QCOMPARE(sections[0]->child(0)->text(0), QString("handle>5ms"));
        QVERIFY(sections[0]->child(1)->text(1).startsWith("keep tracing 1"));

        // It opened on the first firing: its whole slow call in view.
        auto inView = [&](const TriggerFiring& f) {
            const auto w = page.timeline()->visibleRange();
            return w.begin <= f.start && f.time <= w.end;
        };
        QTRY_VERIFY(inView(firings[0]));
        QVERIFY(!inView(firings.back()));
        page.timeline()->grab();
        QVERIFY(page.timeline()->eventMarkersDrawn() >= 1);
        // Its flag on the axis says what fired, on which thread, and how long the call took.
        const QString tip = page.timeline()->toolTipAt(
            QPoint(int(page.timeline()->xOf(firings[0].time)), TimelineView::kAxisHeight - 4));
        QVERIFY2(
            tip.startsWith("handle>5ms fired at +") && tip.contains(QString("thread %1").arg(firings[0].tid)),
            qPrintable(tip));
        // A row jumps there.
        const int lastRow = list->rowCount() - 1;
        QTest::mouseClick(list->viewport(), Qt::LeftButton, {},
                          list->visualItemRect(list->item(lastRow, 1)).center());
        QTRY_VERIFY(inView(firings.back()));
        QVERIFY(!inView(firings[0]));
        QCOMPARE(list->currentRow(), lastRow);
        // The arrow keys go from firing to firing.
        list->setFocus();
        QTest::keyClick(list, Qt::Key_Up);
        QTRY_VERIFY(inView(firings[firings.size() - 2]));
        QCOMPARE(list->currentRow(), lastRow - 1);

        // Symbols & binaries applied: the timeline is built again, its markers and list with it.
        const int opens = page.timelineOpens();
        QPointer<QTableWidget> oldList(list);
        page.setSymbolSettings(page.symbolSettings());
        QTRY_VERIFY_WITH_TIMEOUT(page.timelineOpens() == opens + 1 && oldList.isNull() && page.firingsList(),
                                 60000);
        QCOMPARE(page.firingsList()->rowCount(), int(firings.size()));
        QTRY_COMPARE(page.timeline()->eventMarkers().size(), firings.size());
    }
};

QTEST_MAIN(TriggerGuiTest)
#include "TriggerGuiTest.moc"
