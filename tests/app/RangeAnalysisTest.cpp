// SPDX-License-Identifier: GPL-3.0-or-later
// The answers under the timeline (issue 14), offscreen on real decodes: a
// ptsynth-generated Intel PT file (with its ELF, so code can be shown), perf's
// Skylake Intel PT file and simpleperf's CoreSight file from ../shared/data.
//   - a range selected by Shift+drag gives exactly computeRangeStats of that range;
//   - F zooms to the selection, Esc clears it, M marks / unmarks, ? shows the keys;
//   - the call tree and bottom-up models' rows are RangeStats' trees, node for node;
//   - the flame graph's boxes are as wide as their share of the total;
//   - search hits are the spans of matching functions, stepping selects and shows each;
//   - span details: callers and callees as the store's pre-order says;
//   - the code view's per-instruction counts add up to the function's instructions;
//   - a range exported as CSV and Perfetto holds only what lies in the range.
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <QTreeWidget>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "TestData.h"
#include "auxtrace/AuxTraceDecode.h"
#include "export/TraceExport.h"
#include "gui/analysis/CallTreeModel.h"
#include "gui/analysis/CodeView.h"
#include "gui/analysis/FlameGraphWidget.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/analysis/SpanDetailsPane.h"
#include "gui/timeline/SearchBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/TraceModelLoader.h"
#include "spans/RangeStats.h"

using namespace auxscope;

namespace {

// Opens `path` on a page and waits for its first decoded window.
bool openDecoded(TraceFilePage& page) {
    page.setAutoDecodeLimit(0);
    page.resize(1400, 1000);
    page.show();
    if (!QTest::qWaitFor([&] { return page.loaded() || page.failed(); }, 30000) || !page.loaded())
        return false;
    if (!page.timeline()) return false;
    return QTest::qWaitFor(
        [&] {
            const auto& d = page.timeline()->data();
            return d && d->decodedEnd > d->decodedBegin && !page.timelineDecoding();
        },
        60000);
}

ThreadStores storesOf(const TimelineData& data) {
    ThreadStores stores;
    for (const auto& t : data.threads)
        stores.emplace_back(t.tid, &t.spans);
    std::sort(stores.begin(), stores.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return stores;
}

// The stack of functions of every node, with its cost: trees compared independently of node order.
std::map<std::vector<uint32_t>, RangeCost> byStack(const CallTree& tree) {
    std::map<std::vector<uint32_t>, RangeCost> out;
    for (uint32_t n = 1; n < tree.nodes.size(); ++n)
        out[tree.stack(n)] = tree.nodes[n].cost;
    return out;
}

// The model's rows, walked through the model API: stack -> cost.
std::map<std::vector<uint32_t>, RangeCost> modelRows(const CallTreeModel& model) {
    std::map<std::vector<uint32_t>, RangeCost> out;
    std::function<void(const QModelIndex&, std::vector<uint32_t>)> walk = [&](const QModelIndex& parent,
                                                                              std::vector<uint32_t> stack) {
        for (int r = 0; r < model.rowCount(parent); ++r) {
            const QModelIndex index = model.index(r, 0, parent);
            const CallTree::Node& node = model.tree().nodes[model.nodeOf(index)];
            std::vector<uint32_t> s = stack;
            s.push_back(node.function);
            RangeCost c;
            auto value = [&](int column) {
                return model.data(model.index(r, column, parent), Qt::UserRole + 1).toULongLong();
            };
            c.totalTime = value(CallTreeModel::TotalTime);
            c.selfTime = value(CallTreeModel::SelfTime);
            c.calls = value(CallTreeModel::Calls);
            c.totalInsns = value(CallTreeModel::TotalInsns);
            c.selfInsns = value(CallTreeModel::SelfInsns);
            out[s] = c;
            walk(index, s);
        }
    };
    walk({}, {});
    return out;
}

// Shift+drag across the timeline from x0 to x1 on a flame-chart row.
void shiftDrag(TimelineView* view, int x0, int x1, int y) {
    QTest::mousePress(view, Qt::LeftButton, Qt::ShiftModifier, QPoint(x0, y));
    for (int x = x0; x <= x1; x += std::max(1, (x1 - x0) / 8)) {
        QMouseEvent move(QEvent::MouseMove, QPointF(x, y), view->mapToGlobal(QPointF(x, y)), Qt::NoButton,
                         Qt::LeftButton, Qt::ShiftModifier);
        QApplication::sendEvent(view, &move);
    }
    QMouseEvent move(QEvent::MouseMove, QPointF(x1, y), view->mapToGlobal(QPointF(x1, y)), Qt::NoButton,
                     Qt::LeftButton, Qt::ShiftModifier);
    QApplication::sendEvent(view, &move);
    QTest::mouseRelease(view, Qt::LeftButton, Qt::ShiftModifier, QPoint(x1, y));
}

// Reads a protobuf varint.
bool varint(const std::string& b, size_t& at, uint64_t& v) {
    v = 0;
    for (int shift = 0; at < b.size() && shift < 64; shift += 7) {
        const uint8_t c = uint8_t(b[at++]);
        v |= uint64_t(c & 0x7f) << shift;
        if (!(c & 0x80)) return true;
    }
    return false;
}

// Every TracePacket's timestamp (field 8) in a Perfetto trace; false when the file does not parse.
bool packetTimes(const std::string& path, std::vector<uint64_t>& times, size_t& packets) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string b = ss.str();
    size_t at = 0;
    packets = 0;
    while (at < b.size()) {
        uint64_t key, len;
        if (!varint(b, at, key) || key != ((1 << 3) | 2) || !varint(b, at, len) || at + len > b.size())
            return false;
        const size_t end = at + len;
        ++packets;
        while (at < end) {
            uint64_t k, v;
            if (!varint(b, at, k)) return false;
            switch (k & 7) {
                case 0:
                    if (!varint(b, at, v)) return false;
                    if (k >> 3 == 8) times.push_back(v);
                    break;
                case 1:
                    at += 8;
                    break;
                case 2:
                    if (!varint(b, at, v)) return false;
                    at += v;
                    break;
                case 5:
                    at += 4;
                    break;
                default:
                    return false;
            }
        }
        if (at != end) return false;
    }
    return true;
}

}  // namespace

class RangeAnalysisTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    QString synth_;

    // Selects a range on `page` by Shift+drag over its flame chart and checks the pane against
    // computeRangeStats of the range the view reports. Returns the stats.
    void selectionMatchesRangeStats(TraceFilePage& page, double from, double to, RangeStats* out = nullptr) {
        TimelineView* view = page.timeline();
        const auto data = view->data();
        QVERIFY(data);
        int32_t tid = -1;
        for (const auto& t : data->threads)
            if (!t.spans.empty()) tid = t.tid;
        QVERIFY2(tid >= 0, "no thread with spans");
        const int y = view->rowY(tid, 0) >= 0 ? view->rowY(tid, 0) + 5 : TimelineView::kAxisHeight + 5;
        const int x0 = view->plotLeft() + int(from * view->plotWidth());
        const int x1 = view->plotLeft() + int(to * view->plotWidth());
        QSignalSpy changed(view, &TimelineView::timeSelectionChanged);
        shiftDrag(view, x0, x1, y);
        QCOMPARE(changed.size(), 1);
        auto sel = view->timeSelection();
        QVERIFY(sel);
        QVERIFY(sel->end > sel->begin);
        // The status line says the selection's length.
        QVERIFY2(page.selectionLine()->text().contains("Selection:"),
                 qPrintable(page.selectionLine()->text()));
        RangeStatsPane* pane = page.rangeStats();
        QVERIFY(QTest::qWaitFor([&] { return !pane->busy(); }, 60000));
        QVERIFY(pane->stats());
        RangeQuery q;
        q.begin = std::max(sel->begin, data->decodedBegin);
        q.end = std::min(sel->end, data->decodedEnd);
        q.threads = 1;
        q.perThreadTrees = true;
        auto expected = computeRangeStats(storesOf(*data), q);
        QVERIFY(expected);
        const RangeStats& got = *pane->stats();
        QCOMPARE(got.begin, q.begin);
        QCOMPARE(got.end, q.end);
        QCOMPARE(got.spans, expected->spans);
        QCOMPARE(got.instructions(), expected->instructions());
        QCOMPARE(got.functions.size(), expected->functions.size());
        for (size_t i = 0; i < got.functions.size(); ++i) {
            QCOMPARE(got.functions[i].function, expected->functions[i].function);
            QVERIFY(got.functions[i].cost == expected->functions[i].cost);
        }
        QVERIFY(byStack(got.tree) == byStack(expected->tree));
        // The top functions table: one row per function, the same numbers.
        QCOMPARE(pane->topFunctions()->topLevelItemCount(), int(expected->functions.size()));
        for (int i = 0; i < pane->topFunctions()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = pane->topFunctions()->topLevelItem(i);
            const FunctionStats f = expected->function(item->data(0, Qt::UserRole + 1).toUInt());
            QCOMPARE(item->data(2, Qt::UserRole).toULongLong(), f.cost.selfTime);
            QCOMPARE(item->data(3, Qt::UserRole).toULongLong(), f.cost.calls);
            QCOMPARE(item->data(5, Qt::UserRole).toULongLong(), f.cost.selfInsns);
        }
        // Call tree and bottom-up rows are the trees'.
        QVERIFY(modelRows(*pane->callTree()) == byStack(expected->tree));
        QVERIFY(modelRows(*pane->bottomUp()) == byStack(expected->bottomUp()));
        if (out) *out = std::move(*expected);
    }

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        synth_ = dir_.filePath("synth.data");
        QProcess gen;
        // --fine-time: every branch carries its time, so a span's time window holds exactly its flow blocks.
        gen.start(AUXSCOPE_PTSYNTH, {"--generate", "1", "--seed", "5", "--fine-time", "-o", synth_});
        QVERIFY(gen.waitForFinished(120000));
        QCOMPARE(gen.exitCode(), 0);
    }

    // Shift+drag -> the same statistics as computeRangeStats; per thread from the same aggregation.
    void rangeSelectionGivesRangeStats() {
        TraceFilePage page(synth_);
        QVERIFY2(openDecoded(page), qPrintable(page.timelineStatus()->text()));
        RangeStats expected;
        selectionMatchesRangeStats(page, 0.25, 0.6, &expected);
        if (QTest::currentTestFailed()) return;
        RangeStatsPane* pane = page.rangeStats();
        // One thread chosen: its part of the same aggregation equals an aggregation of that thread alone.
        const int32_t tid = pane->stats()->threads.begin()->first;
        pane->showThread(tid);
        QCOMPARE(pane->shownThread(), tid);
        RangeQuery q;
        q.begin = pane->begin(), q.end = pane->end(), q.threads = 1, q.tids = {tid};
        auto one = computeRangeStats(storesOf(*page.timeline()->data()), q);
        QVERIFY(one);
        QVERIFY(byStack(pane->shown()->tree) == byStack(one->tree));
        QCOMPARE(pane->shown()->instructions(), one->instructions());
        QVERIFY(modelRows(*pane->callTree()) == byStack(one->tree));
        // Who ran on each CPU in the range: the sideband's slices clipped to it.
        pane->showThread(-1);
        const auto data = page.timeline()->data();
        // CPUs with no slice in the range (a CPU the file says was not traced has a lane
        // but no slices) have nothing to list.
        std::map<int, uint64_t> busy;
        std::set<int> listed;
        for (const auto& [cpu, slices] : data->cpus)
            for (const auto& sl : slices)
                if (sl.end > pane->begin() && sl.start < pane->end()) {
                    listed.insert(cpu);
                    if (sl.tid > 0)
                        busy[cpu] += std::min(sl.end, pane->end()) - std::max(sl.start, pane->begin());
                }
        QVERIFY(!busy.empty());
        const QTreeWidgetItem* cpus = pane->threadsTable()->topLevelItem(0);
        QVERIFY(cpus->text(0).startsWith("CPUs"));
        QCOMPARE(cpus->childCount(), int(listed.size()));
        for (int i = 0; i < cpus->childCount(); ++i) {
            const int cpu = cpus->child(i)->text(0).section(' ', 1, 1).remove(':').toInt();
            QCOMPARE(cpus->child(i)->data(2, Qt::UserRole).toULongLong(), busy[cpu]);
        }
        pane->showThread(tid);
        // Copy as text: the shown table with every function.
        pane->tabs()->setCurrentIndex(0);
        const QString text = pane->currentText();
        QCOMPARE(text.count('\n'), 2 + int(one->functions.size()));
    }

    // F zooms to the selection, M marks and unmarks it, Esc clears it, ? shows the keys.
    void keysOnTheSelection() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        TimelineView* view = page.timeline();
        const auto data = view->data();
        const uint64_t w = data->end - data->begin;
        view->setTimeSelection(data->begin + w / 4, data->begin + w / 4 + w / 10);
        const auto sel = *view->timeSelection();
        view->setFocus();
        QTest::keyClick(view, Qt::Key_F);
        const auto r = view->visibleRange();
        QVERIFY(r.begin <= sel.begin && r.end >= sel.end);
        QVERIFY2(r.end - r.begin <= (sel.end - sel.begin) * 12 / 10,
                 qPrintable(QString("%1 shown for %2").arg(r.end - r.begin).arg(sel.end - sel.begin)));
        QTest::keyClick(view, Qt::Key_M);
        QCOMPARE(view->marks().size(), size_t(1));
        QCOMPARE(view->marks()[0].begin, sel.begin);
        QCOMPARE(view->marks()[0].end, sel.end);
        QVERIFY(page.selectionLine()->text().contains("1 mark"));
        QTest::keyClick(view, Qt::Key_M);
        QCOMPARE(view->marks().size(), size_t(0));
        QTest::keyClick(view, Qt::Key_M);
        QCOMPARE(view->marks().size(), size_t(1));
        QTest::keyClick(view, Qt::Key_Question, Qt::ShiftModifier);
        QVERIFY(view->keysHelpVisible());
        QSignalSpy cleared(view, &TimelineView::timeSelectionChanged);
        QTest::keyClick(view, Qt::Key_Escape);
        QVERIFY(!view->timeSelection());
        QVERIFY(!view->keysHelpVisible());
        QCOMPARE(cleared.size(), 1);
        QCOMPARE(cleared[0][0].toULongLong(), cleared[0][1].toULongLong());
        QCOMPARE(view->marks().size(), size_t(1));  // marks stay
        QVERIFY(QTest::qWaitFor([&] { return !page.rangeStats()->busy(); }, 10000));
        QVERIFY(!page.rangeStats()->stats());
        // A span selected last: F zooms to the span.
        int32_t tid = data->threads.front().tid;
        size_t index = data->threads.front().spans.size() / 2;
        QVERIFY(view->selectSpan(tid, index));
        const Span s = data->threads.front().spans.at(index);
        QTest::keyClick(view, Qt::Key_F);
        const auto z = view->visibleRange();
        QVERIFY(z.begin <= s.start && z.end >= s.end);
        QVERIFY(z.end - z.begin <= std::max<uint64_t>((s.end - s.start) * 12 / 10, 400));
    }

    // Cancel: 8 M spans on one thread take far longer than the first batch of
    // 64 K; Cancel stops it there, and the pane says so and shows nothing.
    void cancelStopsTheAggregation() {
        auto data = std::make_shared<TimelineData>();
        auto functions = std::make_shared<FunctionTable>();
        for (int f = 1; f <= 8; ++f)
            functions->add({"fn" + std::to_string(f), "bench", 0});
        data->functions = functions;
        auto& th = data->threads.emplace_back();
        th.pid = th.tid = 7;
        std::vector<Span> spans;
        uint64_t t = 1000;
        for (int k = 0; k < 1'000'000; ++k)  // 8 M spans: a root and 7 nested frames, again and again
            for (int32_t d = 0; d < 8; ++d)
                spans.push_back({t + uint64_t(d), t + 16 - uint64_t(d), uint32_t(d + 1), d, 3, -1}),
                    t += d == 7 ? 16 : 0;
        th.spans.append(spans);
        data->begin = data->decodedBegin = 1000;
        data->end = data->decodedEnd = t;
        RangeStatsPane pane;
        pane.setThreads(1);
        pane.setData(data);
        QSignalSpy done(&pane, &RangeStatsPane::computed);
        pane.setRange(data->begin, data->end);
        QVERIFY(pane.busy());
        QVERIFY(pane.cancelButton()->isVisibleTo(&pane));
        pane.cancelButton()->click();
        QVERIFY(QTest::qWaitFor([&] { return !pane.busy(); }, 60000));
        QCOMPARE(done.size(), 1);
        QCOMPARE(done[0][0].toBool(), false);
        QVERIFY2(pane.summary()->text().contains("cancelled"), qPrintable(pane.summary()->text()));
        QVERIFY(!pane.stats());
        QVERIFY(!pane.cancelButton()->isVisibleTo(&pane));
        // Asked again, it completes: 1 M calls of each nested frame.
        pane.setRange(data->begin, data->end);
        QVERIFY(QTest::qWaitFor([&] { return !pane.busy(); }, 120000));
        QVERIFY(pane.stats());
        QCOMPARE(pane.stats()->function(2).cost.calls, uint64_t(1'000'000));
        QCOMPARE(pane.stats()->instructions(), uint64_t(24'000'000));
    }

    // The flame graph: one box per node wide enough, as wide as its share; a click zooms.
    void flameGraphBoxesAreProportional() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        RangeStatsPane* pane = page.rangeStats();
        const auto data = page.timeline()->data();
        pane->setData(data);
        pane->setRange(data->decodedBegin, data->decodedEnd);
        QVERIFY(QTest::qWaitFor([&] { return !pane->busy(); }, 60000));
        QVERIFY(pane->stats());
        FlameGraphWidget* flame = pane->flameGraph();
        flame->resize(1000, flame->minimumHeight());
        const CallTree& tree = flame->tree();
        const double total = double(tree.nodes[0].cost.totalTime);
        QVERIFY(total > 0);
        size_t wide = 0;
        for (uint32_t n = 1; n < tree.nodes.size(); ++n) {
            // A node is drawn when it and all its callers are half a pixel wide or more.
            bool shown = true;
            for (uint32_t k = n; k != 0; k = tree.nodes[k].parent)
                shown = shown && double(tree.nodes[k].cost.totalTime) * 1000 / total >= 0.5;
            wide += shown;
        }
        const auto& boxes = flame->boxes();
        QCOMPARE(boxes.size(), wide + 1);  // + the "all" box
        std::map<uint32_t, const FlameGraphWidget::Box*> byNode;
        for (const auto& b : boxes) {
            byNode[b.node] = &b;
            if (b.node == 0) continue;
            QVERIFY(std::abs(b.width - double(tree.nodes[b.node].cost.totalTime) * 1000 / total) < 1e-6);
            // Inside its caller's box, one row above it.
            const uint32_t parent = tree.nodes[b.node].parent;
            if (parent != 0 && byNode.count(parent)) {
                const auto* p = byNode[parent];
                QCOMPARE(b.depth, p->depth + 1);
                QVERIFY(b.x >= p->x - 1e-6 && b.x + b.width <= p->x + p->width + 1e-6);
            }
        }
        // Click the widest root child: it fills the width.
        const FlameGraphWidget::Box* widest = nullptr;
        for (const auto& b : boxes)
            if (b.depth == 1 && (!widest || b.width > widest->width)) widest = &b;
        QVERIFY(widest);
        const uint32_t node = widest->node;
        const QRect r = flame->boxRect(*widest);
        QTest::mouseClick(flame, Qt::LeftButton, {}, r.center());
        QCOMPARE(flame->zoomNode(), node);
        bool full = false;
        for (const auto& b : flame->boxes())
            if (b.node == node) full = std::abs(b.width - 1000) < 1e-6;
        QVERIFY(full);
        QTest::keyClick(flame, Qt::Key_Escape);
        QCOMPARE(flame->zoomNode(), 0u);
        // Painting draws what is laid out.
        flame->grab();
        QVERIFY(flame->lastPainted() > 0 && flame->lastPainted() <= flame->boxes().size());
    }

    // Search: the hits are every span of a matching function; stepping selects and shows each.
    void searchStepsThroughHits() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        TimelineView* view = page.timeline();
        const auto data = view->data();
        SearchBar* bar = page.searchBar();
        QTest::keyClick(view, Qt::Key_Slash);
        QVERIFY(bar->isVisible());
        for (const auto& [pattern, regex] :
             std::vector<std::pair<QString, bool>>{{"REC1", false}, {"^f3_1[0-9]$", true}}) {
            bar->setPattern(pattern, regex);
            QRegularExpression re(regex ? pattern : QRegularExpression::escape(pattern),
                                  QRegularExpression::CaseInsensitiveOption);
            uint64_t expected = 0;
            std::vector<std::pair<uint64_t, int32_t>> starts;
            for (const auto& t : data->threads)
                for (size_t i = 0; i < t.spans.size(); ++i) {
                    const Span s = t.spans.at(i);
                    if (!s.isGap() &&
                        re.match(QString::fromStdString((*data->functions)[s.function].name)).hasMatch())
                        ++expected, starts.push_back({s.start, t.tid});
                }
            QVERIFY2(expected > 2, qPrintable(pattern));
            QCOMPARE(bar->result().spanHits, expected);
            QVERIFY2(bar->countLabel()->text().contains(formatCount(expected)),
                     qPrintable(bar->countLabel()->text()));
            QVERIFY(view->highlighting());
            std::sort(starts.begin(), starts.end());
            for (int k = 0; k < 3; ++k) {
                QTest::keyClick(bar->field(), Qt::Key_Return);
                const TimelineHit& sel = view->selection();
                QCOMPARE(sel.kind, TimelineHit::ThreadSpan);
                QVERIFY(re.match(sel.function).hasMatch());
                QCOMPARE(sel.start, starts[size_t(k)].first);
                const auto r = view->visibleRange();
                QVERIFY(r.begin <= sel.start && r.end >= std::max(sel.end, sel.start + 1));
                QVERIFY(r.end - r.begin < (data->end - data->begin) / 2);
                QCOMPARE(bar->current(), long(k));
            }
            QTest::keyClick(bar->field(), Qt::Key_Return, Qt::ShiftModifier);
            QCOMPARE(bar->current(), 1L);
            QCOMPARE(view->selection().start, starts[1].first);
        }
        // Threads by name.
        const QString name = QString::fromStdString(data->threads.front().name);
        bar->setPattern(name.left(5));
        QVERIFY(bar->result().threads.count(data->threads.front().tid));
        // A bad regex says so.
        bar->setPattern("(", true);
        QVERIFY(!bar->result().valid);
        QVERIFY(bar->countLabel()->text().contains("bad regex"));
        QTest::keyClick(bar->field(), Qt::Key_Escape);
        QVERIFY(!bar->isVisible());
        QVERIFY(!view->highlighting());
    }

    // Search covers the windows decoded before the view's: two windows decoded one after the
    // other, the search counts the matching spans of both (each once), says how many are
    // elsewhere, and stepping to one elsewhere zooms there, decodes it and selects it.
    void searchCoversEarlierDecodedWindows() {
        // 4 MB of trace: four segments of 1 MB (one window needs one), more than the budget in all.
        const QString path = dir_.filePath("synth4.data");
        QProcess gen;
        gen.start(AUXSCOPE_PTSYNTH, {"--generate", "4", "--seed", "5", "-q", "-o", path});
        QVERIFY(gen.waitForFinished(120000));
        QCOMPARE(gen.exitCode(), 0);
        TraceFilePage page(path);
        page.setTimelineDecodeBudget(uint64_t(3) << 19);
        QVERIFY(openDecoded(page));
        TimelineView* view = page.timeline();
        SearchBar* bar = page.searchBar();
        std::vector<std::shared_ptr<const TimelineData>> shown{view->data()};
        const uint64_t b = shown[0]->begin, len = shown[0]->end - shown[0]->begin;
        for (const auto& [from, to] : std::vector<std::pair<double, double>>{{0.30, 0.32}, {0.60, 0.62}}) {
            const uint64_t w0 = b + uint64_t(from * double(len)), w1 = b + uint64_t(to * double(len));
            view->setVisibleRange(w0, w1);
            QVERIFY2(QTest::qWaitFor(
                         [&] {
                             const auto& d = view->data();
                             return d && d != shown.back() && d->decodedBegin <= w0 + 1 &&
                                    d->decodedEnd + 1 >= w1 && !page.timelineDecoding();
                         },
                         60000),
                     qPrintable(page.timelineStatus()->text()));
            shown.push_back(view->data());
            QVERIFY(shown.back()->decodedBegin > shown.front()->begin);
        }
        const QString pattern = "^f[0-9]+_[0-9]*1$";
        QRegularExpression re(pattern, QRegularExpression::CaseInsensitiveOption);
        // Every matching span of the decoded windows, once: the view's (window B) all, an
        // earlier window's those that start in its decoded range (A and the first frame do
        // not overlap B or each other), a span that starts in none of them once.
        auto matching = [&](const TimelineData& d, const std::function<void(int32_t, const Span&)>& f) {
            for (const auto& t : d.threads)
                for (size_t i = 0; i < t.spans.size(); ++i) {
                    const Span s = t.spans.at(i);
                    if (!s.isGap() &&
                        re.match(QString::fromStdString((*d.functions)[s.function].name)).hasMatch())
                        f(t.tid, s);
                }
        };
        auto within = [](const TimelineData& d, uint64_t t) {
            return t >= d.decodedBegin && t < d.decodedEnd;
        };
        const auto& windowB = *shown.back();
        std::set<std::tuple<int32_t, uint64_t, uint32_t, int32_t>> outside;
        uint64_t inView = 0, expected = 0, inA = 0;
        matching(windowB, [&](int32_t tid, const Span& s) {
            ++inView;
            if (!within(windowB, s.start)) outside.insert({tid, s.start, s.function, s.depth});
        });
        expected = inView;
        uint64_t firstStart = UINT64_MAX;
        for (size_t w = 0; w + 1 < shown.size(); ++w)
            matching(*shown[w], [&](int32_t tid, const Span& s) {
                const std::tuple key{tid, s.start, s.function, s.depth};
                const bool anywhere = std::any_of(shown.begin(), shown.end(),
                                                  [&](const auto& d) { return within(*d, s.start); });
                if (within(*shown[w], s.start) ? !outside.count(key)
                                               : !anywhere && outside.insert(key).second) {
                    ++expected;
                    firstStart = std::min(firstStart, s.start);
                    if (w == 1) ++inA;
                }
            });
        QVERIFY2(inA > 2 && inView > 2, qPrintable(QString("%1 %2").arg(inA).arg(inView)));
        QVERIFY(bar->earlierWindows().size() >= 2);
        bar->setPattern(pattern, true);
        QCOMPARE(bar->result().spanHits, expected);
        QCOMPARE(bar->result().spanHits - bar->result().elsewhereHits, inView);
        QVERIFY2(bar->countLabel()->text().contains(formatCount(expected - inView) + " elsewhere"),
                 qPrintable(bar->countLabel()->text()));
        // Hits in start order: the first one lies before window B, outside the view.
        std::vector<SearchHit> hits = bar->result().hits;
        QVERIFY(!hits.front().inView);
        QVERIFY(hits.front().start < windowB.decodedBegin);
        QCOMPARE(hits.front().start, firstStart);
        // A hit in window A (the first one there): stepping to it decodes its window and selects it.
        long target = -1;
        for (size_t k = 0; k < hits.size() && target < 0; ++k)
            if (hits[k].start >= shown[1]->decodedBegin && hits[k].start < shown[1]->decodedEnd)
                target = long(k);
        QVERIFY(target >= 0);
        QVERIFY(!hits[size_t(target)].inView);
        while (bar->current() + 1 < target)
            QVERIFY(bar->step());
        QTest::qWait(0);
        QVERIFY(QTest::qWaitFor([&] { return !page.timelineDecoding(); }, 60000));
        QVERIFY(bar->step());
        const SearchHit want = hits[size_t(target)];
        QVERIFY2(QTest::qWaitFor(
                     [&] {
                         return view->selection().kind == TimelineHit::ThreadSpan &&
                                view->selection().start == want.start && !page.timelineDecoding();
                     },
                     60000),
                 qPrintable(bar->countLabel()->text() + " / " + page.timelineStatus()->text()));
        QCOMPARE(view->selection().tid, want.tid);
        QVERIFY(re.match(view->selection().function).hasMatch());
        const auto& now = view->data();
        QVERIFY(now->decodedBegin <= want.start && now->decodedEnd > want.start);
        QVERIFY(bar->result().hits[size_t(bar->current())].inView);
        QCOMPARE(bar->result().hits[size_t(bar->current())].start, want.start);
        // The count still spans every window decoded so far.
        QVERIFY(bar->result().spanHits >= expected);
    }

    // Exports run on a worker thread: the event loop keeps running (a timer fires while the
    // export runs), Cancel leaves no file, and the file equals the synchronous exporter's.
    void exportRunsOffTheGuiThread() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        const auto data = page.timeline()->data();
        uint64_t spans = 0;
        for (const auto& t : data->threads)
            spans += t.spans.size();
        // Enough span events (2 per span) that the exporter checks for Cancel (every 64 Ki).
        QVERIFY2(spans > 100000, qPrintable(QString::number(spans)));
        int ticksWhileExporting = 0;
        QTimer tick;
        tick.setInterval(1);
        connect(&tick, &QTimer::timeout, [&] { ticksWhileExporting += page.exporting(); });
        tick.start();
        QSignalSpy finished(&page, &TraceFilePage::exportFinished);
        const QString csv = dir_.filePath("async-range.csv");
        QVERIFY(page.exportRange("csv", data->decodedBegin, data->decodedEnd, csv));
        QVERIFY(page.exporting());  // returned before the export finished
        QVERIFY(page.exportProgress()->isVisible());
        QVERIFY(page.exportCancelButton()->isVisible());
        QVERIFY(!page.exportRange("csv", data->decodedBegin, data->decodedEnd, csv + "2"));  // one at a time
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));
        QCOMPARE(finished.size(), 1);
        QVERIFY2(finished[0][0].toBool(), qPrintable(finished[0][1].toString()));
        QVERIFY2(ticksWhileExporting > 0, "the event loop did not run during the export");
        QVERIFY(!page.exportProgress()->isVisible());
        QVERIFY(QFileInfo(csv).size() > qint64(spans) * 10);
        // Cancel: no file left, the end says so.
        const QString cancelled = dir_.filePath("cancelled.pftrace");
        QVERIFY(page.exportRange("perfetto", data->decodedBegin, data->decodedEnd, cancelled));
        QTest::mouseClick(page.exportCancelButton(), Qt::LeftButton);
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));
        QCOMPARE(finished.size(), 2);
        QVERIFY(!finished[1][0].toBool());
        QVERIFY2(finished[1][1].toString().contains("cancelled"), qPrintable(finished[1][1].toString()));
        QVERIFY(!QFileInfo::exists(cancelled));
        // The whole file with its decoded spans, as the Export buttons write it, equals the
        // synchronous export's bytes.
        QVERIFY(page.startDecode());
        QVERIFY(QTest::qWaitFor([&] { return page.decoded() && !page.decoding(); }, 120000));
        auto reader = PerfDataReader::open(synth_.toStdString());
        QVERIFY(reader.ok());
        TraceModel model;
        QVERIFY(loadTraceModel(*reader, model).ok());
        auto decoded = decodeAuxTraceSpans(*reader);
        QVERIFY(decoded.ok());
        const ExportSpans decodedSpans = decoded->exportView();
        QVERIFY2(decoded->spanCount() > 0,
                 qPrintable(QString("%1 %2").arg(decoded->spanCount()).arg(decodedSpans.spanCount())));
        ExportOptions options;
        options.spans = &decodedSpans;
        for (const QString format : {"csv", "perfetto"}) {
            const QString async = dir_.filePath("async-whole." + format),
                          sync = dir_.filePath("sync-whole." + format);
            QVERIFY(page.exportTo(format, async));
            QVERIFY(page.exporting());
            QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));
            QVERIFY(finished.back()[0].toBool());
            auto written = format == "csv" ? exportCsv(model, sync.toStdString(), options)
                                           : exportPerfetto(model, sync.toStdString(), options);
            QVERIFY(written.ok());
            QFile a(async), b(sync);
            QVERIFY(a.open(QIODevice::ReadOnly) && b.open(QIODevice::ReadOnly));
            const QByteArray bytes = a.readAll();
            QVERIFY(bytes.size() > qint64(spans) * 10);
            const QByteArray ref = b.readAll();
            QVERIFY2(bytes == ref,
                     qPrintable(format + QString(" %1 vs %2 bytes").arg(bytes.size()).arg(ref.size())));
        }
    }

    // Span details and the code view of its function.
    void spanDetailsAndCode() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        TimelineView* view = page.timeline();
        const auto data = view->data();
        const auto& th = data->threads.front();
        // A span at depth 3 or more, with callees.
        size_t index = SIZE_MAX;
        for (size_t i = th.spans.size() / 3; i + 1 < th.spans.size(); ++i) {
            const Span s = th.spans.at(i), next = th.spans.at(i + 1);
            if (!s.isGap() && s.depth >= 3 && next.depth == s.depth + 1 && !next.isGap()) {
                index = i;
                break;
            }
        }
        QVERIFY(index != SIZE_MAX);
        QVERIFY(view->selectSpan(th.tid, index));
        const SpanDetails& d = page.spanDetails()->details();
        QVERIFY(d.valid);
        const Span s = th.spans.at(index);
        QCOMPARE(int(d.callers.size()), s.depth);
        for (size_t k = 0; k < d.callers.size(); ++k) {
            const Span c = th.spans.at(d.callers[k].index);
            QCOMPARE(c.depth, int(k));
            QVERIFY(c.start <= s.start && c.end >= s.end);
        }
        uint64_t calleeTime = 0, calleeCalls = 0;
        for (const auto& c : d.callees)
            calleeTime += c.time, calleeCalls += c.calls;
        QVERIFY(calleeCalls > 0);
        QCOMPARE(d.selfTime, (s.end - s.start) - calleeTime);
        // Its RangeStats over exactly its time: the span's function's self instructions there.
        page.spanDetails()->codeButton()->click();
        CodeView* code = page.codeView();
        QVERIFY(QTest::qWaitFor(
            [&] { return code->code() != nullptr || code->header()->text().contains("color"); }, 60000));
        QVERIFY2(code->code(), qPrintable(code->header()->text()));
        const AnnotatedCode& a = *code->code();
        QCOMPARE(a.function, s.function);
        RangeQuery q;
        q.begin = s.start, q.end = s.end, q.tids = {th.tid};
        auto stats = computeRangeStats(storesOf(*data), q);
        QVERIFY(stats);
        const uint64_t selfInsns = stats->function(s.function).cost.selfInsns;
        QVERIFY(selfInsns > 0);
        QCOMPARE(a.executed, a.blockInstructions);
        QCOMPARE(a.executed, selfInsns);
        // Executed rows are marked: those with a count, and no count outside the function.
        uint64_t marked = 0, sum = 0;
        for (int i = 0; i < code->instructions()->topLevelItemCount(); ++i) {
            const uint64_t n = code->instructions()->topLevelItem(i)->data(1, Qt::UserRole).toULongLong();
            sum += n;
            marked += n > 0 && code->instructions()->topLevelItem(i)->background(0).color().isValid();
        }
        QCOMPARE(sum, selfInsns);
        QCOMPARE(marked, a.executedInstructions);
        QVERIFY(a.instructions.front().address <= a.instructions.back().address);
        QCOMPARE(a.arch, std::string("x86-64"));
    }

    // The code view over the whole recording: the counts sum to the function's self instructions.
    void codeCountsOverTheRecording() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        const auto data = page.timeline()->data();
        RangeQuery q;
        q.begin = data->decodedBegin, q.end = data->decodedEnd;
        auto stats = computeRangeStats(storesOf(*data), q);
        QVERIFY(stats);
        const auto top = stats->topFunctions(RangeSort::SelfInsns, 3);
        for (const FunctionStats& f : top) {
            page.showCode(-1, f.function, q.begin, q.end);
            CodeView* code = page.codeView();
            QVERIFY(
                QTest::qWaitFor([&] { return code->code() && code->code()->function == f.function; }, 60000));
            QCOMPARE(code->code()->executed, f.cost.selfInsns);
        }
    }

    // Export of a range: CSV rows and Perfetto packets only inside it.
    void rangeExportHoldsOnlyTheRange() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        const auto data = page.timeline()->data();
        const uint64_t w = data->decodedEnd - data->decodedBegin;
        const uint64_t a = data->decodedBegin + w / 3, b = data->decodedBegin + w / 2;
        uint64_t overlapping = 0;
        for (const auto& t : data->threads)
            t.spans.forEach(0, t.spans.size(),
                            [&](size_t, const Span& s) { overlapping += s.end > a && s.start < b; });
        QVERIFY(overlapping > 10);
        const QString csv = dir_.filePath("range.csv"), pf = dir_.filePath("range.pftrace");
        QVERIFY(page.exportRange("csv", a, b, csv));
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));  // on a worker thread
        QFile f(csv);
        QVERIFY(f.open(QIODevice::ReadOnly));
        uint64_t spans = 0, rows = 0;
        while (!f.atEnd()) {
            const QString line = QString::fromUtf8(f.readLine()).trimmed();
            if (line.startsWith("kind,")) continue;
            const QStringList cols = line.split(',');
            QVERIFY(cols.size() >= 4);
            const uint64_t t = cols[2].toULongLong();
            QVERIFY2(t >= a && t < b, qPrintable(line));
            if (!cols[3].isEmpty()) QVERIFY2(cols[3].toULongLong() <= b, qPrintable(line));
            spans += line.startsWith("span,") || line.startsWith("gap,");
            ++rows;
        }
        QCOMPARE(spans, overlapping);
        QVERIFY(page.exportRange("perfetto", a, b, pf));
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));  // on a worker thread
        std::vector<uint64_t> times;
        size_t packets = 0;
        QVERIFY(packetTimes(pf.toStdString(), times, packets));
        QVERIFY(times.size() >= 2 * overlapping);
        for (uint64_t t : times)
            QVERIFY2(t >= a && t <= b, qPrintable(QString::number(t)));
        // The whole decoded window exported has more.
        const QString whole = dir_.filePath("whole.pftrace");
        QVERIFY(page.exportRange("perfetto", data->decodedBegin, data->decodedEnd, whole));
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));  // on a worker thread
        std::vector<uint64_t> all;
        QVERIFY(packetTimes(whole.toStdString(), all, packets));
        QVERIFY(all.size() > times.size());
    }

    // A program with debug information (traced instruction by instruction by
    // ptsynth's step mode): the code view gives each instruction its source line
    // and shows the source file with per-line counts that add up to the function's.
    void sourceLinesWithCounts() {
        const QString data = dir_.filePath("cv.data");
        QProcess step;
        step.start(AUXSCOPE_PTSYNTH, {"--start", "main", "-o", data, "--", AUXSCOPE_CV_WORKLOAD});
        QVERIFY(step.waitForFinished(120000));
        if (step.exitCode() != 0) {
            const QString why = QString::fromUtf8(step.readAllStandardError()).trimmed();
            if (why.contains("ptrace") || why.contains("Operation not permitted"))
                QSKIP(qPrintable("ptsynth step mode cannot ptrace here: " + why));
            QFAIL(qPrintable(why));
        }
        TraceFilePage page(data);
        QVERIFY2(openDecoded(page), qPrintable(page.timelineStatus()->text()));
        const auto tl = page.timeline()->data();
        uint32_t hot = UINT32_MAX;
        for (uint32_t f = 0; f < tl->functions->size(); ++f)
            if ((*tl->functions)[f].name == "cv_hot") hot = f;
        QVERIFY(hot != UINT32_MAX);
        RangeQuery q;
        q.begin = tl->decodedBegin, q.end = tl->decodedEnd;
        auto stats = computeRangeStats(storesOf(*tl), q);
        QVERIFY(stats);
        const uint64_t self = stats->function(hot).cost.selfInsns;
        QVERIFY(self > 100);
        page.showCode(-1, hot, q.begin, q.end);
        CodeView* code = page.codeView();
        QVERIFY(QTest::qWaitFor([&] { return code->code() && code->code()->function == hot; }, 60000));
        const AnnotatedCode& a = *code->code();
        QCOMPARE(a.executed, self);
        QVERIFY2(QString::fromStdString(a.sourceFile).endsWith("CodeViewWorkload.c"), a.sourceFile.c_str());
        uint64_t perLine = 0;
        for (const auto& [line, n] : a.lineCounts)
            perLine += n;
        uint64_t inFile = 0;
        for (const auto& i : a.instructions) {
            QVERIFY2(i.line > 0, qPrintable(QString("0x%1 has no line").arg(i.address, 0, 16)));
            if (i.file == a.sourceFile) inFile += i.count;
        }
        QCOMPARE(perLine, inFile);
        QCOMPARE(inFile, self);
        // The source pane: the file is readable, its lines with their counts.
        QVERIFY(code->source()->isVisibleTo(code));
        uint64_t shown = 0;
        bool loopLine = false;
        for (int i = 0; i < code->source()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = code->source()->topLevelItem(i);
            shown += item->data(1, Qt::UserRole).toULongLong();
            loopLine |= item->text(2).contains("i % 3 == 0") && item->data(1, Qt::UserRole).toULongLong() > 0;
        }
        QCOMPARE(shown, self);
        QVERIFY(loopLine);
    }

    // `auxscope export --time A-B` writes what the GUI's range export writes for [A, B].
    void cliExportTimeMatchesRangeExport() {
        TraceFilePage page(synth_);
        QVERIFY(openDecoded(page));
        const auto data = page.timeline()->data();
        QCOMPARE(data->decodedBegin, data->begin);  // the whole recording is decoded
        const uint64_t w = data->end - data->begin;
        const uint64_t a = data->begin + w / 5, b = data->begin + w / 4;
        const QString gui = dir_.filePath("gui.csv"), cli = dir_.filePath("cli.csv");
        QVERIFY(page.exportRange("csv", a, b + 1, gui));
        QVERIFY(QTest::qWaitFor([&] { return !page.exporting(); }, 120000));  // on a worker thread
        QProcess p;
        p.start(AUXSCOPE_BINARY,
                {"export", synth_, "--format", "csv", "--time", QString("%1-%2").arg(a).arg(b), "-o", cli});
        QVERIFY(p.waitForFinished(120000));
        QCOMPARE(p.exitCode(), 0);
        auto rows = [](const QString& path) {
            QFile f(path);
            f.open(QIODevice::ReadOnly);
            QStringList out;
            while (!f.atEnd())
                out << QString::fromUtf8(f.readLine()).trimmed();
            out.sort();
            return out;
        };
        const QStringList g = rows(gui), c = rows(cli);
        QVERIFY(g.size() > 100);
        QCOMPARE(c, g);
    }

    // perf's Skylake Intel PT file and simpleperf's CoreSight file: the selection equals
    // computeRangeStats there too, and search counts match.
    void realTraces_data() {
        QTest::addColumn<QString>("path");
        QTest::newRow("skylake-pt") << QString::fromStdString(
            test_support::testDataPath("intel-pt/perf-intel_pt-skylake/perf.data.intel_pt-4.14"));
        QTest::newRow("coresight-etm")
            << QString::fromStdString(test_support::testDataPath("coresight/simpleperf-etm/perf_etm.data"));
    }
    // CoreSight (juno_r1_1's ETMv4 snapshot as a perf.data, its memory dump as the
    // image): the selection's statistics, and the AArch64 code view's counts.
    void coreSightSelectionAndCode() {
        AUXSCOPE_QNEED_TEST_DATA();
        const QString out = dir_.filePath("juno.data");
        QProcess snap;
        snap.start(
            AUXSCOPE_ETMSNAP,
            {QString::fromStdString(test_support::testDataPath("coresight/opencsd-snapshots/juno_r1_1")),
             "-o", out});
        QVERIFY(snap.waitForFinished(120000));
        QCOMPARE(snap.exitCode(), 0);
        TraceFilePage page(out);
        QVERIFY2(openDecoded(page), qPrintable(page.timelineStatus()->text()));
        RangeStats stats;
        selectionMatchesRangeStats(page, 0.0, 0.999, &stats);
        if (QTest::currentTestFailed()) return;
        QVERIFY(stats.instructions() > 1000);
        const auto data = page.timeline()->data();
        RangeQuery q;
        q.begin = data->decodedBegin, q.end = data->decodedEnd;
        auto whole = computeRangeStats(storesOf(*data), q);
        QVERIFY(whole);
        const FunctionStats top = whole->topFunctions(RangeSort::SelfInsns, 1).front();
        page.showCode(-1, top.function, q.begin, q.end);
        CodeView* code = page.codeView();
        QVERIFY(
            QTest::qWaitFor([&] { return code->code() && code->code()->function == top.function; }, 60000));
        QCOMPARE(code->code()->arch, std::string("AArch64"));
        QCOMPARE(code->code()->executed, top.cost.selfInsns);
        QVERIFY(code->code()->executedInstructions > 10);
    }

    void realTraces() {
        AUXSCOPE_QNEED_TEST_DATA();
        QFETCH(QString, path);
        TraceFilePage page(path);
        QVERIFY2(openDecoded(page),
                 qPrintable(page.timelineStatus() ? page.timelineStatus()->text() : "not opened"));
        selectionMatchesRangeStats(page, 0.0, 0.999);
        if (QTest::currentTestFailed()) return;
        const auto data = page.timeline()->data();
        // Search for the name of the function with the most spans.
        std::map<uint32_t, uint64_t> count;
        for (const auto& t : data->threads)
            t.spans.forEach(0, t.spans.size(), [&](size_t, const Span& s) {
                if (!s.isGap()) ++count[s.function];
            });
        if (count.empty()) return;  // gaps only (no images): nothing to search
        const auto best = std::max_element(count.begin(), count.end(),
                                           [](const auto& x, const auto& y) { return x.second < y.second; });
        const std::string name = (*data->functions)[best->first].name;
        page.searchBar()->setPattern(QRegularExpression::escape(QString::fromStdString(name)) + "$", true);
        uint64_t expected = 0;
        for (const auto& [f, n] : count) {
            const std::string& other = (*data->functions)[f].name;
            if (other.size() >= name.size() &&
                QString::fromStdString(other).endsWith(QString::fromStdString(name), Qt::CaseInsensitive))
                expected += n;
        }
        QCOMPARE(page.searchBar()->result().spanHits, expected);
        QVERIFY(page.searchBar()->step());
        QCOMPARE(page.timeline()->selection().kind, TimelineHit::ThreadSpan);
    }
};

QTEST_MAIN(RangeAnalysisTest)
#include "RangeAnalysisTest.moc"
