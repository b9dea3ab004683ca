// SPDX-License-Identifier: GPL-3.0-or-later
// Call stacks from the capture page (issue 25), offscreen:
//  - the form's call-graph choice reaches CaptureOptions (none, fp, dwarf with
//    its stack size), LBR is offered only where checkCallGraphFor accepts it
//    (greyed with the refusal as its tooltip elsewhere: this VM), a replay has
//    no choice (the recording's), and an LBR forced on is refused at Start;
//  - a real capture of a launched stacks_prog_fp with Frame pointers: the file's
//    samples carry callchains (PerfDataReader), the status line names the mode,
//    and while it runs the live timeline's samples name the program's functions
//    (its lanes' data and a sample's hover);
//  - through the privileged capture helper (app_gui_call_stacks_helper, run by
//    capture_helper_harness as nobody): the helper's file carries callchains
//    and the summary it sends back names the mode.
// Serial: real captures.
#include <unistd.h>

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QtTest>

#include <set>
#include <string>

#include "CaptureSession.h"
#include "PerfEvent.h"
#include "gui/MainWindow.h"
#include "gui/capture/CaptureForm.h"
#include "gui/capture/CapturePage.h"
#include "gui/capture/HelperCapture.h"
#include "gui/timeline/TimelineView.h"
#include "perfdata/PerfDataReader.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"

using namespace auxscope;

class CaptureCallStacksTest : public QObject {
    Q_OBJECT
private:
    static bool perfDenied(QString& why) {
        auto reason = perfCaptureUnavailableReason();
        if (reason) why = QString::fromStdString(*reason);
        return reason.has_value();
    }
    struct CallchainCount {
        size_t samples = 0, withCallchain = 0, withUserPart = 0;
    };
    static CallchainCount countCallchains(const QString& path) {
        CallchainCount n;
        auto reader = PerfDataReader::open(path.toStdString());
        if (!reader) {
            qWarning("%s", reader.error().message.c_str());
            return n;
        }
        (void)reader->forEachRecord([&](const PerfRecord& rec) {
            if (rec.header.type != PERF_RECORD_SAMPLE) return true;
            const ParsedRecord& p = rec.parsed;
            ++n.samples;
            if (p.callchain.empty()) return true;
            ++n.withCallchain;
            for (size_t i = 0; i < p.callchainSize(); ++i)
                if (p.callchainAt(i) == uint64_t(PERF_CONTEXT_USER)) {
                    ++n.withUserPart;
                    break;
                }
            return true;
        });
        return n;
    }
    // Functions of stacks_prog (tests/samples/stacks_prog.c) and its library.
    static bool programFunction(const std::string& name) {
        static const std::set<std::string> names = {"spin",    "lib_inner",    "lib_work", "leaf",
                                                    "mid",     "hot",          "main",     "handler_work",
                                                    "on_prof", "worker_thread"};
        return names.count(name) > 0;
    }

private slots:
    void formChoiceReachesCaptureOptions() {
        const PmuRegistry pmus = PmuRegistry::discover();
        QWidget owner;
        CaptureForm form(pmus, &owner);
        owner.setLayout(form.layout());  // its rows become the owner's children, as in the page
        auto* mode = owner.findChild<QComboBox*>("callGraph");
        auto* stack = owner.findChild<QComboBox*>("dwarfStackBytes");
        QVERIFY(mode && stack);
        QCOMPARE(mode->count(), 4);
        QCOMPARE(mode->currentIndex(), 0);  // none by default, as perf record
        auto options = form.options();
        QVERIFY(options.ok());
        QCOMPARE(options->callGraph.mode, CallGraphMode::None);
        QVERIFY(!stack->isEnabled());  // a size only with DWARF

        mode->setCurrentIndex(mode->findText("Frame pointers (-g)"));
        options = form.options();
        QVERIFY(options.ok());
        QCOMPARE(options->callGraph.mode, CallGraphMode::FramePointer);
        QCOMPARE(QString::fromStdString(formatCallGraph(options->callGraph)), QString("fp"));
        QVERIFY(!stack->isEnabled());

        mode->setCurrentIndex(mode->findText("DWARF"));
        QVERIFY(stack->isEnabled());
        QCOMPARE(stack->currentData().toUInt(), kDefaultDwarfStackBytes);  // 8 KiB by default
        options = form.options();
        QVERIFY(options.ok());
        QCOMPARE(options->callGraph.mode, CallGraphMode::Dwarf);
        QCOMPARE(options->callGraph.dwarfStackBytes, kDefaultDwarfStackBytes);
        stack->setCurrentIndex(stack->findData(16384u));
        QVERIFY(stack->currentIndex() >= 0);
        options = form.options();
        QVERIFY(options.ok());
        QCOMPARE(options->callGraph.dwarfStackBytes, 16384u);
        QCOMPARE(QString::fromStdString(formatCallGraph(options->callGraph)), QString("dwarf,16384"));
        stack->setCurrentIndex(stack->findData(uint(kMaxDwarfStackBytes)));
        QCOMPARE(form.options()->callGraph.dwarfStackBytes, kMaxDwarfStackBytes);

        // Back to none: nothing asked, whatever the size row says.
        mode->setCurrentIndex(0);
        options = form.options();
        QVERIFY(options.ok());
        QCOMPARE(options->callGraph, CallGraphOptions{});

        // A replay's call stacks are the recording's: no choice.
        owner.findChild<QComboBox*>("targetKind")->setCurrentIndex(4);
        QVERIFY(!mode->isEnabled());
        QVERIFY(!stack->isEnabled());
        owner.findChild<QComboBox*>("targetKind")->setCurrentIndex(0);
        QVERIFY(mode->isEnabled());
    }

    // LBR where checkCallGraphFor accepts it, greyed with its refusal elsewhere.
    void lbrIsOfferedOnlyWhereTheMachineHasIt() {
        const PmuRegistry pmus = PmuRegistry::discover();
        QWidget owner;
        CaptureForm form(pmus, &owner);
        owner.setLayout(form.layout());  // its rows become the owner's children, as in the page
        auto* mode = owner.findChild<QComboBox*>("callGraph");
        auto* model = qobject_cast<QStandardItemModel*>(mode->model());
        QVERIFY(model);
        const int lbr = mode->findText("LBR");
        QVERIFY(lbr >= 0);
        CaptureOptions asked;  // the form's events: the default cpu-clock
        asked.callGraph.mode = CallGraphMode::Lbr;
        const auto verdict = checkCallGraphFor(asked, pmus);
        const QString tip = mode->itemData(lbr, Qt::ToolTipRole).toString();
        qInfo("LBR here: %s", qPrintable(tip));
        // cpu-clock is a software event: LBR is refused for it on any machine, greyed, the reason its
        // tooltip.
        QVERIFY(!verdict.ok());
        QVERIFY(!model->item(lbr)->isEnabled());
        const QString why = QString::fromStdString(verdict.error().message);
        QCOMPARE(form.lbrRefusal(), why);
        QVERIFY2(tip.contains(why) && tip.contains("software event"), qPrintable(tip));
        // The verdict follows the events: a hardware event, where the machine has a core PMU with LBR.
        owner.findChild<QLineEdit*>("events")->setText("cycles");
        asked.events = {"cycles"};
        const auto forCycles = checkCallGraphFor(asked, pmus);
        QCOMPARE(model->item(lbr)->isEnabled(), forCycles.ok());
        if (!forCycles) {
            QCOMPARE(form.lbrRefusal(), QString::fromStdString(forCycles.error().message));
            QVERIFY2(mode->itemData(lbr, Qt::ToolTipRole).toString().contains(form.lbrRefusal()),
                     qPrintable(mode->itemData(lbr, Qt::ToolTipRole).toString()));
        }
        qInfo("LBR with -e cycles here: %s", forCycles ? "offered" : qPrintable(form.lbrRefusal()));
    }

    // Forced on where it is refused (a disabled item can still be set from code):
    // Start says why and nothing starts.
    void lbrForcedOnIsRefusedAtStart() {
        CaptureOptions asked;
        asked.callGraph.mode = CallGraphMode::Lbr;
        if (checkCallGraphFor(asked, PmuRegistry::discover()).ok()) QSKIP("LBR is accepted here");
        CapturePage page;
        page.findChild<QComboBox*>("callGraph")->setCurrentIndex(3);
        page.start();
        QVERIFY(!page.capturing());
        const QString status = page.findChild<QLabel*>("status")->text();
        QVERIFY2(status.startsWith("Cannot start") && status.contains("--call-graph lbr"),
                 qPrintable(status));
    }

    // A launched stacks_prog_fp with Frame pointers: callchains in the file; while
    // it runs, the live timeline names the program's functions.
    void framePointerCaptureOfALaunchedProgram() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        MainWindow window;
        window.show();
        CapturePage* page = window.capturePage();
        page->findChild<QComboBox*>("targetKind")->setCurrentIndex(3);  // launch command
        page->findChild<QLineEdit*>("targetValue")->setText(QString(AUXSCOPE_STACKS_PROG_FP) + " 3000");
        auto* mode = page->findChild<QComboBox*>("callGraph");
        mode->setCurrentIndex(mode->findText("Frame pointers (-g)"));
        QSignalSpy ready(page, &CapturePage::captureFileReady);
        QElapsedTimer sinceStart;
        sinceStart.start();
        QTest::mouseClick(page->findChild<QPushButton*>("startButton"), Qt::LeftButton);
        auto* status = page->findChild<QLabel*>("status");
        QVERIFY2(page->capturing(), qPrintable(status->text()));
        QVERIFY2(status->text().contains("call stacks: fp"), qPrintable(status->text()));

        // Live: a sample of the running program named by one of its functions.
        TimelineView* view = page->liveTimeline();
        const SidebandLanes::Thread* named = nullptr;
        const SidebandLanes::Sample* sample = nullptr;
        std::shared_ptr<const TimelineData> data;
        auto findNamed = [&] {
            data = view->data();
            if (!data || !data->lanes || !data->lanes->functions) return false;
            const SidebandLanes& lanes = *data->lanes;
            for (const auto& t : lanes.threads)
                for (const auto& s : t.samples)
                    if (s.function != FunctionTable::kUnknown && s.function < lanes.functions->size() &&
                        programFunction((*lanes.functions)[s.function].name)) {
                        named = &t;
                        sample = &s;
                        if ((*lanes.functions)[s.function].name == "spin")
                            return true;  // the worker: the best hover
                    }
            return sample != nullptr;
        };
        auto* liveStatus = page->findChild<QLabel*>("liveStatus");
        QTRY_VERIFY2_WITH_TIMEOUT(findNamed(), qPrintable(liveStatus->text()), 5000);
        const qint64 namedAfter = sinceStart.elapsed();
        const std::string function = (*data->lanes->functions)[sample->function].name;
        qInfo("live: a sample in %s (thread %d) named %lld ms after Start; %s", function.c_str(), named->tid,
              namedAfter, qPrintable(liveStatus->text()));
        QVERIFY2(liveStatus->text().contains("functions, from"), qPrintable(liveStatus->text()));
        // Its hover says so: the view held on that sample, zoomed to 2 ms around it.
        view->setFollowLatest(false);
        view->setVisibleRange(sample->time - 1'000'000, sample->time + 1'000'000);
        const int laneY = view->threadLaneY(named->tid);
        QVERIFY(laneY >= 0);
        const QString tip = view->toolTipAt(QPoint(int(view->xOf(sample->time) + 0.5), laneY + 16));
        QVERIFY2(tip.contains("Sample") && tip.contains(QString::fromStdString(function)), qPrintable(tip));
        view->setFollowLatest(true);

        // Named as it exec'd: the name /proc gave before the exec (the GUI's own,
        // read after the capture began) does not come after it.
        const int32_t pid = named->pid;
        auto programNamed = [&] {
            auto d = view->data();
            const SidebandLanes::Process* p = d && d->lanes ? d->lanes->process(pid) : nullptr;
            const long main = d && d->lanes ? d->lanes->threadIndex(pid) : -1;
            return p && p->name == "stacks_prog_fp" && main >= 0 &&
                   d->lanes->threads[size_t(main)].name == "stacks_prog_fp";
        };
        QTRY_VERIFY2_WITH_TIMEOUT(programNamed(), qPrintable(liveStatus->text()), 5000);

        // The program ends the capture by itself (3 s).
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 30000);
        QVERIFY(!page->capturing());
        QVERIFY(page->lastSummary().commandExited);
        QCOMPARE(page->lastSummary().callGraph.mode, CallGraphMode::FramePointer);
        const QString done = status->text();
        QVERIFY2(done.startsWith("Stopped after") &&
                     done.contains("call stacks: fp (frame pointers, kernel and user callchain)"),
                 qPrintable(done));
        const CallchainCount n = countCallchains(page->lastCaptureFile());
        qInfo("file: %zu samples, %zu with a callchain, %zu with its user part", n.samples, n.withCallchain,
              n.withUserPart);
        QVERIFY(n.samples > 100);
        QCOMPARE(n.withCallchain, n.samples);  // every sample of a -g capture
        QVERIFY(n.withUserPart > n.samples / 2);
        QVERIFY(programNamed());  // the last live timeline too
    }

    // Without call stacks the file's samples carry none: the choice is what sets them.
    void noCallStacksByDefault() {
        QString why;
        if (perfDenied(why)) QSKIP(qPrintable("perf_event_open is not permitted here: " + why));
        CapturePage page;
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(3);
        page.findChild<QLineEdit*>("targetValue")->setText(QString(AUXSCOPE_STACKS_PROG_FP) + " 300");
        QSignalSpy ready(&page, &CapturePage::captureFileReady);
        page.start();
        QVERIFY(page.capturing());
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 15000);
        QVERIFY2(page.findChild<QLabel*>("status")->text().contains("no call stacks"),
                 qPrintable(page.findChild<QLabel*>("status")->text()));
        const CallchainCount n = countCallchains(page.lastCaptureFile());
        QVERIFY(n.samples > 10);
        QCOMPARE(n.withCallchain, size_t(0));
        // Samples name their function whatever the call-graph mode, and the last
        // live timeline of a capture shorter than the first symbol load waited for it.
        auto data = page.liveTimeline()->data();
        QVERIFY(data && data->lanes && data->lanes->functions);
        size_t named = 0, ours = 0, total = 0;
        for (const auto& t : data->lanes->threads)
            for (const auto& s : t.samples) {
                ++total;
                if (s.function == FunctionTable::kUnknown) continue;
                ++named;
                ours += programFunction((*data->lanes->functions)[s.function].name);
            }
        qInfo("last live timeline: %zu samples (the file: %zu), %zu named, %zu in the program's functions",
              total, n.samples, named, ours);
        QVERIFY(total > 10);
        QVERIFY2(named > total * 9 / 10, qPrintable(page.findChild<QLabel*>("liveStatus")->text()));
        QVERIFY(ours > 0);
    }

    // Through the capture helper: the choice goes over the protocol, the file has
    // the callchains, and the summary coming back names the mode.
    void framePointersThroughTheHelper() {
        if (!qEnvironmentVariableIsSet("AUXSCOPE_CAPTURE_HELPER_FD"))
            QSKIP(
                "no helper handed over (capture_helper_harness runs this case as "
                "app_gui_call_stacks_helper)");
        QVERIFY2(::geteuid() != 0, "the GUI side must run unprivileged here");
        CapturePage page;
        page.show();
        page.findChild<QComboBox*>("targetKind")->setCurrentIndex(0);  // system-wide
        auto* mode = page.findChild<QComboBox*>("callGraph");
        mode->setCurrentIndex(mode->findText("Frame pointers (-g)"));
        QSignalSpy ready(&page, &CapturePage::captureFileReady);
        page.findChild<QPushButton*>("startButton")->click();
        QVERIFY(page.capturing());
        QVERIFY(page.helper());
        QTRY_VERIFY_WITH_TIMEOUT(page.helper()->state() == HelperCapture::State::Running ||
                                     page.helper()->state() == HelperCapture::State::Failed,
                                 20000);
        QVERIFY2(page.helper()->state() == HelperCapture::State::Running,
                 qPrintable(QString::fromStdString(page.helper()->failure())));
        auto* status = page.findChild<QLabel*>("status");
        QTRY_VERIFY_WITH_TIMEOUT(status->text().contains("running as root"), 5000);
        QVERIFY2(status->text().contains("call stacks: fp"), qPrintable(status->text()));
        // Some work of this process's own to sample.
        QElapsedTimer busy;
        busy.start();
        volatile double sink = 0;
        while (busy.elapsed() < 700)
            for (int i = 0; i < 10000; ++i)
                sink = sink + i * 0.5;
        QTest::qWait(300);
        page.findChild<QPushButton*>("stopButton")->click();
        QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, 30000);
        QCOMPARE(page.lastSummary().callGraph.mode, CallGraphMode::FramePointer);
        const QString done = status->text();
        qInfo("%s", qPrintable(done));
        QVERIFY2(done.contains("call stacks: fp"), qPrintable(done));
        const CallchainCount n = countCallchains(ready.at(0).at(0).toString());
        qInfo("helper's file: %zu samples, %zu with a callchain", n.samples, n.withCallchain);
        QVERIFY(n.samples > 10);
        QCOMPARE(n.withCallchain, n.samples);
    }
};

QTEST_MAIN(CaptureCallStacksTest)
#include "CaptureCallStacksTest.moc"
