// SPDX-License-Identifier: GPL-3.0-or-later
// The same analysis over samples in the GUI (issue 25), offscreen, on captures
// perf itself records here of the test program tests/samples/stacks_prog.c
// (main -> hot -> mid -> leaf, hot -> lib_work -> lib_inner in a shared
// library, a worker thread spinning in spin, a thread blocking in read):
//   - perf record -e cpu-clock -F 2000 -g, the whole range selected: the
//     selection pane shows exactly computeSampleRangeStats of that range (top
//     functions spin and lib_inner with their samples and CPU time), with the
//     samples' columns (no calls, no instructions); the call tree has
//     main -> hot -> lib_work -> lib_inner; the flame graph has boxes as wide
//     as their CPU time; one thread chosen shows that thread's samples only;
//     the caller / callee view of a clicked function;
//   - the same with --switch-events --sample-cpu (switches with their CPU, so
//     the sideband has run slices): the threads' on-CPU, off-CPU and
//     wall-clock time, and off-CPU time without switch-out stacks says how to
//     record them;
//   - a sample's hover text holds its stack, leaf first;
//   - the code view of spin counts its samples per instruction and line, and
//     says the counts are samples;
//   - perf record -e sched:sched_switch -g: the source choice offers the
//     samples and off-CPU time, and the off-CPU view has blocker_thread.
// Skipped, with perf's words, where perf cannot record here.
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <QTreeWidget>

#include <functional>
#include <map>
#include <set>

#include "gui/analysis/CallTreeModel.h"
#include "gui/analysis/CodeView.h"
#include "gui/analysis/FlameGraphWidget.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/timeline/HitDescription.h"
#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"

using namespace auxscope;

namespace {

// perf record ARGS -- stacks_prog_fp MS into `out`; empty when it worked, else why not.
QString perfRecord(const QStringList& args, const QString& out, int ms) {
    if (QStandardPaths::findExecutable("perf").isEmpty()) return "perf is not installed";
    QProcess perf;
    perf.setProcessChannelMode(QProcess::MergedChannels);
    perf.start("perf", QStringList{"record", "-q"} + args +
                           QStringList{"-o", out, "--", AUXSCOPE_STACKS_PROG_FP, QString::number(ms)});
    if (!perf.waitForFinished(60000)) return "perf record did not finish";
    if (perf.exitStatus() != QProcess::NormalExit || perf.exitCode() != 0)
        return QString("perf record %1 failed (%2): %3")
            .arg(args.join(' '))
            .arg(perf.exitCode())
            .arg(QString::fromLocal8Bit(perf.readAll()).trimmed());
    return {};
}

// Opens `path` on `page` and waits for its timeline (and its sampled profile).
bool openSampled(TraceFilePage& page) {
    page.resize(1400, 1000);
    page.show();
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000) || !page.loaded())
        return false;
    return QTest::qWaitFor(
        [&] { return page.timeline() && page.timeline()->data() && !page.timelineDecoding(); }, 60000);
}

// Selects [begin, end) on the page's timeline and waits for the pane's answer.
bool selectRange(TraceFilePage& page, uint64_t begin, uint64_t end) {
    QSignalSpy computed(page.rangeStats(), &RangeStatsPane::computed);
    page.timeline()->setTimeSelection(begin, end);
    return computed.wait(30000) && computed.last().at(0).toBool();
}

// The whole recording: its samples and its sideband.
std::pair<uint64_t, uint64_t> wholeRange(const SampleProfile& p) {
    const TraceModel& m = p.sideband().model();
    return {std::min(m.firstTime(), p.firstTime()), std::max(m.lastTime(), p.lastTime()) + 1};
}

uint32_t functionNamed(const FunctionTable& functions, const std::string& name) {
    for (uint32_t id = 0; id < functions.size(); ++id)
        if (functions[id].name == name) return id;
    return UINT32_MAX;
}

// The top functions table's row of `name`, or null.
QTreeWidgetItem* topRow(RangeStatsPane* pane, const QString& name) {
    for (int i = 0; i < pane->topFunctions()->topLevelItemCount(); ++i)
        if (pane->topFunctions()->topLevelItem(i)->text(0) == name)
            return pane->topFunctions()->topLevelItem(i);
    return nullptr;
}

// The model's rows walked through the model API: every path of function names from a root.
std::set<QStringList> modelPaths(const CallTreeModel& model) {
    std::set<QStringList> out;
    std::function<void(const QModelIndex&, QStringList)> walk = [&](const QModelIndex& parent,
                                                                    QStringList path) {
        for (int r = 0; r < model.rowCount(parent); ++r) {
            const QModelIndex index = model.index(r, 0, parent);
            QStringList p = path;
            p << model.data(index).toString();
            out.insert(p);
            walk(index, p);
        }
    };
    walk({}, {});
    return out;
}

bool hasConsecutive(const std::set<QStringList>& paths, const QStringList& want) {
    for (const QStringList& p : paths)
        for (qsizetype i = 0; i + want.size() <= p.size(); ++i)
            if (p.mid(i, want.size()) == want) return true;
    return false;
}

// The tid whose samples end in `function` most often.
int32_t busiestIn(const SampleProfile& p, uint32_t function) {
    std::map<int32_t, size_t> n;
    for (size_t i = 0; i < p.size(); ++i)
        if (p.tree().nodes[p.node(i)].function == function) ++n[p.tid(i)];
    int32_t best = -1;
    size_t most = 0;
    for (const auto& [tid, k] : n)
        if (k > most) best = tid, most = k;
    return best;
}

}  // namespace

class SampleAnalysisTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString fp_, switches_, off_;

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        fp_ = dir_.filePath("fp.data");
        switches_ = dir_.filePath("switches.data");
        off_ = dir_.filePath("off.data");
        // cpu-clock with frame-pointer stacks.
        QString why = perfRecord({"-e", "cpu-clock", "-F", "2000", "-g"}, fp_, 1200);
        if (!why.isEmpty()) QSKIP(qPrintable("skipped: perf cannot record here: " + why));
        // The same with the switches (on and off CPU; no switch-out stacks).
        why = perfRecord({"-e", "cpu-clock", "-F", "2000", "-g", "--switch-events", "--sample-cpu"},
                         switches_, 800);
        if (!why.isEmpty()) QSKIP(qPrintable("skipped: perf cannot record here: " + why));
        // sched_switch with stacks: where threads block.
        why = perfRecord({"-e", "sched:sched_switch", "-g", "--switch-events"}, off_, 800);
        if (!why.isEmpty()) QSKIP(qPrintable("skipped: perf cannot record here: " + why));
    }

    // The whole range of a -g capture answers with computeSampleRangeStats' numbers in every view.
    void samplesAnswerTheSelection() {
        TraceFilePage page(fp_);
        QVERIFY2(openSampled(page),
                 qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "no page"));
        const auto profile = page.sampleProfile();
        QVERIFY(profile);
        RangeStatsPane* pane = page.rangeStats();
        QCOMPARE(pane->profile(), profile.get());
        // The default source: the first sampled event that is not a switch event.
        QCOMPARE(pane->sourceKind(), RangeSource::Samples);
        QCOMPARE(QString::fromStdString(profile->events()[size_t(pane->sourceEvent())].name),
                 QString("cpu-clock"));
        // One source (no trace, no switches): no choice to make.
        QCOMPARE(pane->sourceChoice()->count(), 1);
        QVERIFY(!pane->sourceChoice()->isVisibleTo(&page));
        QVERIFY(pane->sourceChoice()->findText("Samples: cpu-clock") >= 0);
        QVERIFY(page.timelineStatus()->text().contains("cpu-clock samples with call stacks"));

        const auto [begin, end] = wholeRange(*profile);
        QVERIFY(selectRange(page, begin, end));
        SampleQuery q;
        q.begin = begin, q.end = end;
        q.event = pane->sourceEvent();
        auto expected = computeSampleRangeStats(*profile, q);
        QVERIFY(expected);
        const RangeStats* stats = pane->stats();
        QVERIFY(stats);
        QCOMPARE(stats->source.kind, RangeSource::Samples);
        QCOMPARE(stats->functions.size(), expected->functions.size());
        for (size_t i = 0; i < stats->functions.size(); ++i) {
            QCOMPARE(stats->functions[i].function, expected->functions[i].function);
            QVERIFY(stats->functions[i].cost == expected->functions[i].cost);
        }
        QVERIFY(pane->summary()->text().contains(
            QString("%1 samples").arg(formatCount(expected->tree.nodes[0].cost.totalSamples))));

        // Top functions: the samples' columns, and spin and lib_inner with their numbers.
        QTreeWidget* top = pane->topFunctions();
        QStringList headers;
        for (int c = 0; c < top->columnCount(); ++c)
            headers << top->headerItem()->text(c);
        QCOMPARE(headers, (QStringList{"Function", "Total CPU time", "Self CPU time", "Total samples",
                                       "Self samples", "Image"}));
        const FunctionTable& functions = profile->functions();
        for (const char* name : {"spin", "lib_inner"}) {
            const uint32_t id = functionNamed(functions, name);
            QVERIFY2(id != UINT32_MAX, name);
            const FunctionStats f = expected->function(id);
            QVERIFY2(f.cost.selfSamples > 10, name);
            QTreeWidgetItem* row = topRow(pane, name);
            QVERIFY2(row, name);
            QCOMPARE(row->data(1, Qt::UserRole).toULongLong(), f.cost.totalPeriod);
            QCOMPARE(row->data(2, Qt::UserRole).toULongLong(), f.cost.selfPeriod);
            QCOMPARE(row->data(3, Qt::UserRole).toULongLong(), f.cost.totalSamples);
            QCOMPARE(row->data(4, Qt::UserRole).toULongLong(), f.cost.selfSamples);
            QVERIFY(row->text(5).contains("stacks_"));  // the image: the program or its library
        }
        // Sorted by self CPU time, as auxscope report: spin (the worker's loop) first.
        QCOMPARE(top->topLevelItem(0)->text(0), QString("spin"));
        QVERIFY(pane->topFunctionsText().startsWith(
            "function\ttotal_period\tself_period\ttotal_samples\tself_samples\timage\n"));

        // Call tree: RangeStats' tree through the model, main -> hot -> lib_work -> lib_inner in it.
        CallTreeModel* tree = pane->callTree();
        QCOMPARE(tree->headerData(CallTreeModel::Function + 1, Qt::Horizontal).toString(),
                 QString("Total CPU time"));
        QCOMPARE(tree->columnOf(CostColumn::Calls), -1);
        const auto paths = modelPaths(*tree);
        QVERIFY(hasConsecutive(paths, {"main", "hot", "lib_work", "lib_inner"}));
        QVERIFY(hasConsecutive(paths, {"main", "hot", "mid", "mid"}));
        QVERIFY(hasConsecutive(paths, {"worker_thread", "spin"}));
        QCOMPARE(tree->tree().nodes.size(), expected->tree.nodes.size());
        // The root's children by total CPU time, largest first (auxscope report's order).
        const QModelIndex first = tree->index(0, tree->columnOf(CostColumn::TotalPeriod));
        const QModelIndex second = tree->index(1, tree->columnOf(CostColumn::TotalPeriod));
        if (second.isValid())
            QVERIFY(tree->data(first, Qt::UserRole + 1).toULongLong() >=
                    tree->data(second, Qt::UserRole + 1).toULongLong());
        // Bottom-up: lib_inner's caller is lib_work.
        QVERIFY(hasConsecutive(modelPaths(*pane->bottomUp()), {"lib_inner", "lib_work", "hot", "main"}));

        // Flame graph: boxes, each as wide as its share of the CPU time.
        pane->tabs()->setCurrentIndex(3);
        FlameGraphWidget* flame = pane->flameGraph();
        QTest::qWait(50);
        QVERIFY(flame->boxes().size() > 5);
        const double width = flame->width();
        const uint64_t all = flame->tree().nodes[0].cost.totalPeriod;
        QCOMPARE(all, expected->tree.nodes[0].cost.totalPeriod);
        bool sawLibInner = false;
        for (const auto& b : flame->boxes()) {
            if (b.node == 0) continue;
            const CallTree::Node& n = flame->tree().nodes[b.node];
            QVERIFY(std::abs(b.width - width * double(n.cost.totalPeriod) / double(all)) < 1.0);
            sawLibInner = sawLibInner || functions[n.function].name == "lib_inner";
        }
        QVERIFY(sawLibInner);
        // By samples: widths follow the samples.
        pane->flameMetric()->setCurrentIndex(1);
        QCOMPARE(flame->metric(), FlameGraphWidget::Metric::Samples);
        pane->flameMetric()->setCurrentIndex(0);
        QCOMPARE(flame->metric(), FlameGraphWidget::Metric::Period);

        // Caller / callee of a clicked function: lib_inner is called from lib_work (its first caller,
        // the most; a sample on lib_inner's first instruction, before it saved the frame pointer,
        // unwinds to hot, as perf's does); hot calls mid and lib_work.
        pane->showCallerCallee(functionNamed(functions, "lib_inner"));
        QString cc = pane->callerCalleeText();
        QVERIFY2(cc.contains(QRegularExpression("\n  Callers \\(\\d+\\)[^\n]*\n    lib_work\t")),
                 qPrintable(cc));
        pane->showCallerCallee(functionNamed(functions, "hot"));
        cc = pane->callerCalleeText();
        QVERIFY2(cc.contains("    mid\t") && cc.contains("    lib_work\t") && cc.contains("    main\t"),
                 qPrintable(cc));
        QVERIFY(pane->tabs()->isTabVisible(5));

        // One thread: the worker, which spins. Its samples only, as computeSampleRangeStats gives them.
        const int32_t worker = busiestIn(*profile, functionNamed(functions, "spin"));
        QVERIFY(worker > 0);
        const int at = pane->threadChoice()->findData(worker);
        QVERIFY(at > 0);
        pane->threadChoice()->setCurrentIndex(at);
        emit pane->threadChoice()->activated(at);
        QCOMPARE(pane->shownThread(), worker);
        SampleQuery one = q;
        one.tids = {worker};
        auto mine = computeSampleRangeStats(*profile, one);
        QVERIFY(mine);
        QCOMPARE(pane->shown()->functions.size(), mine->functions.size());
        for (size_t i = 0; i < mine->functions.size(); ++i)
            QVERIFY(pane->shown()->functions[i].cost == mine->functions[i].cost);
        QVERIFY(topRow(pane, "spin"));
        QVERIFY(!topRow(pane, "lib_inner"));
        QVERIFY(pane->summary()->text().contains(QString("thread %1").arg(worker)));
    }

    // With the switches: each thread's on-CPU, off-CPU and wall-clock time; off-CPU time without stacks.
    void wallClockFromTheSwitches() {
        TraceFilePage page(switches_);
        QVERIFY(openSampled(page));
        const auto profile = page.sampleProfile();
        QVERIFY(profile && !profile->offCpu().empty());
        RangeStatsPane* pane = page.rangeStats();
        // Two sources (cpu-clock, off-CPU time from the switches): the choice is offered.
        QVERIFY(pane->sourceChoice()->isVisibleTo(&page));
        QCOMPARE(pane->sourceChoice()->count(), 2);
        QVERIFY(pane->sourceChoice()->findText("Samples: cpu-clock") >= 0);
        QVERIFY(pane->sourceChoice()->findText("Off-CPU time") >= 0);
        QCOMPARE(pane->sourceKind(), RangeSource::Samples);
        // No switch-out stacks: said once, on the page, with the remedy.
        QVERIFY2(page.timelineStatus()->text().contains("perf record -e sched:sched_switch -g"),
                 qPrintable(page.timelineStatus()->text()));
        const auto [begin, end] = wholeRange(*profile);
        QVERIFY(selectRange(page, begin, end));
        SampleQuery q;
        q.begin = begin, q.end = end;
        q.event = pane->sourceEvent();
        auto expected = computeSampleRangeStats(*profile, q);
        QVERIFY(expected);
        // Threads: samples, CPU time, on CPU, off CPU and their sum.
        QStringList threadHeaders;
        for (int c = 0; c < pane->threadsTable()->columnCount(); ++c)
            threadHeaders << pane->threadsTable()->headerItem()->text(c);
        QCOMPARE(threadHeaders, (QStringList{"Thread", "Samples", "CPU time", "On CPU", "Off CPU",
                                             "Wall-clock (on + off)"}));
        bool wall = false;
        size_t rows = 0;
        for (int i = 0; i < pane->threadsTable()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* row = pane->threadsTable()->topLevelItem(i);
            if (!row->text(0).contains("(tid ")) continue;
            const uint64_t on = row->data(3, Qt::UserRole).toULongLong(),
                           offCpu = row->data(4, Qt::UserRole).toULongLong();
            QCOMPARE(row->data(5, Qt::UserRole).toULongLong(), on + offCpu);
            const int32_t tid = row->text(0).section("(tid ", 1).chopped(1).toInt();
            QVERIFY(expected->threads.count(tid));
            QCOMPARE(on, expected->threads.at(tid).onCpuTime);
            QCOMPARE(offCpu, expected->threads.at(tid).offCpuTime);
            QCOMPARE(row->data(1, Qt::UserRole).toULongLong(), expected->threads.at(tid).samples);
            ++rows;
            wall = wall || (on > 0 && offCpu > 0);
        }
        QVERIFY2(wall, "a thread that ran and waited");
        QVERIFY(rows >= 3);

        // Off-CPU time: everything under "[off-CPU: no stack]", and the pane says how to get the stacks.
        QVERIFY(pane->setSource(RangeSource::OffCpu));
        QVERIFY(QTest::qWaitFor([&] { return !pane->busy(); }, 30000));
        QVERIFY(pane->sourceNote()->isVisibleTo(&page));
        QVERIFY(pane->sourceNote()->text().contains("perf record -e sched:sched_switch -g"));
        QVERIFY(pane->stats() && pane->stats()->source.kind == RangeSource::OffCpu);
        QVERIFY(topRow(pane, "[off-CPU: no stack]"));
    }

    // A sample's hover text holds its stack, leaf first, as the profile has it.
    void hoverShowsTheStack() {
        TraceFilePage page(fp_);
        QVERIFY(openSampled(page));
        const auto profile = page.sampleProfile();
        QVERIFY(profile);
        TimelineView* view = page.timeline();
        const auto data = view->data();
        QVERIFY(data && data->lanes && data->lanes->stacks);
        const int32_t worker = busiestIn(*profile, functionNamed(profile->functions(), "spin"));
        const long lane = data->lanes->threadIndex(worker);
        QVERIFY(lane >= 0);
        const SidebandLanes::Thread& th = data->lanes->threads[size_t(lane)];
        QCOMPARE(th.sampleStacks.size(), th.samples.size());
        // A sample taken in spin, from the middle on (a shallow stack: worker_thread is among its first
        // frames).
        size_t k = th.samples.size() / 2;
        while (k < th.samples.size() &&
               profile->functions()[data->lanes->stacks->nodes[th.sampleStacks[k]].function].name != "spin")
            ++k;
        QVERIFY(k < th.samples.size());
        const SidebandLanes::Sample& s = th.samples[k];
        view->setVisibleRange(s.time - 200'000, s.time + 200'000);
        view->scrollToThread(worker, -1);
        QTest::qWait(50);
        const int y = view->threadLaneY(worker);
        QVERIFY(y >= 0);
        const TimelineHit hit = view->hitAt(QPoint(int(view->xOf(s.time) + 0.5), y + 12));
        QCOMPARE(hit.kind, TimelineHit::Sample);
        QCOMPARE(hit.tid, worker);
        // The profile's sample at that time: its stack, leaf first.
        size_t i = profile->lowerBound(hit.start);
        while (i < profile->size() && profile->tid(i) != worker)
            ++i;
        QVERIFY(i < profile->size() && profile->time(i) == hit.start);
        QStringList stack;
        for (uint32_t n = profile->node(i); n != 0; n = profile->tree().nodes[n].parent)
            stack << QString::fromStdString(profile->functions()[profile->tree().nodes[n].function].name);
        QVERIFY(stack.size() >= 3);
        QCOMPARE(hit.stack, stack.mid(0, qsizetype(TimelineHit::kStackShown)));
        QCOMPARE(hit.stackMore,
                 size_t(std::max<qsizetype>(stack.size() - qsizetype(TimelineHit::kStackShown), 0)));
        const QString tip = view->toolTipAt(QPoint(int(view->xOf(s.time) + 0.5), y + 12));
        QVERIFY2(tip.contains("Stack (leaf first):\n  " + stack.front()), qPrintable(tip));
        QVERIFY2(tip.contains("  worker_thread"), qPrintable(tip));
    }

    // A stack deeper than a dozen frames: the first twelve, then "… N more".
    void deepStackIsCut() {
        TimelineHit hit;
        hit.kind = TimelineHit::Sample;
        for (int i = 0; i < int(TimelineHit::kStackShown); ++i)
            hit.stack << QString("f%1").arg(i);
        hit.stackMore = 7;
        const QString text = describeHit(hit, 0);
        QVERIFY2(text.contains("  f11\n  … 7 more"), qPrintable(text));
    }

    // The code view of spin: its samples per instruction and source line, said to be samples.
    void codeViewCountsSamples() {
        TraceFilePage page(fp_);
        QVERIFY(openSampled(page));
        const auto profile = page.sampleProfile();
        RangeStatsPane* pane = page.rangeStats();
        const auto [begin, end] = wholeRange(*profile);
        QVERIFY(selectRange(page, begin, end));
        const uint32_t spin = functionNamed(profile->functions(), "spin");
        QVERIFY(spin != UINT32_MAX);
        emit pane->functionActivated(spin);
        CodeView* code = page.codeView();
        QVERIFY(QTest::qWaitFor([&] { return code->code() != nullptr; }, 30000));
        QVERIFY(code->countsSamples());
        QVERIFY2(code->header()->text().contains("samples of cpu-clock whose leaf is here") &&
                     code->header()->text().contains("not executions"),
                 qPrintable(code->header()->text()));
        QCOMPARE(code->instructions()->headerItem()->text(1), QString("Samples"));
        // Every sample whose leaf is in spin (one process), on its instruction.
        QCOMPARE(code->code()->executed, pane->stats()->function(spin).cost.selfSamples);
        QVERIFY(code->code()->executedInstructions > 1);
        uint64_t lines = 0;
        for (const auto& [line, n] : code->code()->lineCounts)
            lines += n;
        QVERIFY2(lines > 0, "spin's source lines (stacks_prog.c, built with -g)");
    }

    // sched_switch with stacks: the source choice offers its samples and off-CPU time, blocker_thread blocks.
    void offCpuShowsWhereThreadsBlocked() {
        TraceFilePage page(off_);
        QVERIFY(openSampled(page));
        const auto profile = page.sampleProfile();
        QVERIFY(profile && profile->hasOffCpuStacks());
        RangeStatsPane* pane = page.rangeStats();
        QComboBox* source = pane->sourceChoice();
        QVERIFY(source->isVisibleTo(&page));
        QVERIFY(source->findText("Samples: sched:sched_switch") >= 0);
        const int offIndex = source->findText("Off-CPU time");
        QVERIFY(offIndex >= 0);
        const auto [begin, end] = wholeRange(*profile);
        QVERIFY(selectRange(page, begin, end));
        QSignalSpy computed(pane, &RangeStatsPane::computed);
        source->setCurrentIndex(offIndex);
        emit source->activated(offIndex);
        QVERIFY(computed.wait(30000));
        QCOMPARE(pane->sourceKind(), RangeSource::OffCpu);
        QVERIFY(!pane->sourceNote()->isVisibleTo(&page));  // it has its stacks
        SampleQuery q;
        q.begin = begin, q.end = end;
        q.event = SampleQuery::kOffCpu;
        auto expected = computeSampleRangeStats(*profile, q);
        QVERIFY(expected);
        QCOMPARE(pane->stats()->functions.size(), expected->functions.size());
        for (size_t i = 0; i < expected->functions.size(); ++i)
            QVERIFY(pane->stats()->functions[i].cost == expected->functions[i].cost);
        QCOMPARE(pane->topFunctions()->headerItem()->text(1), QString("Total off-CPU time"));
        QVERIFY(topRow(pane, "blocker_thread"));
        QVERIFY(hasConsecutive(modelPaths(*pane->callTree()), {"blocker_thread", "read"}));
        bool box = false;
        for (const auto& b : pane->flameGraph()->boxes())
            box = box ||
                  (b.node && profile->functions()[pane->flameGraph()->tree().nodes[b.node].function].name ==
                                 "blocker_thread");
        QVERIFY2(box, "the flame graph has a box for blocker_thread");
        QVERIFY(pane->summary()->text().contains("off-CPU time"));
        // The code view counts samples: off-CPU time has none of its own.
        emit pane->functionActivated(functionNamed(profile->functions(), "blocker_thread"));
        QVERIFY(page.codeView()->header()->text().contains("Choose a Samples source"));
    }
};

QTEST_MAIN(SampleAnalysisTest)
#include "SampleAnalysisTest.moc"
