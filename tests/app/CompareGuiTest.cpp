// SPDX-License-Identifier: GPL-3.0-or-later
// Before and after in the GUI (issue 30), offscreen:
//   - File > Compare with… (MainWindow::compareFiles) of two auxscope-ptsynth
//     traces of one program run for different lengths: every row of the pane's
//     top functions equals `auxscope compare A B --format csv --limit 0` (both
//     sides, deltas and %, one-side marks), absolute and per run; by symbol;
//   - the differential flame graph: widths from B, each box's colour (as
//     painted) follows its delta, the legend's ends blue and red;
//   - two ranges of one file: "Compare with another range", then a second
//     Shift+drag: the pane compares the two selections' statistics; and with
//     Ctrl+Shift+drag over a selected range;
//   - two Arm SPE files (records as samples) equal `auxscope compare`;
//   - two captures' timelines side by side: zoom and pan in step, lined up at
//     their starts or at a moment selected on each;
//   - Export CSV… writes what `auxscope compare --format csv --tree --bottom-up`
//     prints, byte for byte;
//   - bad input: a missing B names the file, nothing crashes.
#include <QAbstractItemModel>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QHelpEvent>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>
#include <QTreeWidget>
#include <QUrl>

#include <cmath>
#include <map>
#include <tuple>

#include "gui/MainWindow.h"
#include "gui/analysis/CompareLoader.h"
#include "gui/analysis/ComparePane.h"
#include "gui/analysis/FlameGraphWidget.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/timeline/TimelineLink.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/SideBySidePage.h"
#include "gui/trace/TraceFilePage.h"
#include "spans/RangeCompare.h"

using namespace auxscope;

namespace {

QString synth(const QString& path, int insns) {
    QProcess p;
    p.start(AUXSCOPE_PTSYNTH,
            {"--generate", "1", "--seed", "7", "--max-insns", QString::number(insns), "-q", "-o", path});
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return "ptsynth failed: " + p.readAllStandardError();
    return {};
}

// One CSV line; text fields are quoted (and may hold commas), numbers are not.
QStringList csvFields(const QString& line) {
    QStringList out{QString()};
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
            out.back() += '"', ++i;
        else if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

// `auxscope compare A B --format csv --limit 0 EXTRA`: function rows by (name, file), each column by heading.
using Row = std::map<QString, QString>;
std::map<std::pair<QString, QString>, Row> cliRows(const QString& a, const QString& b,
                                                   const QStringList& extra) {
    QProcess p;
    p.start(AUXSCOPE_BINARY, QStringList{"compare", a, b, "--format", "csv", "--limit", "0"} + extra);
    std::map<std::pair<QString, QString>, Row> out;
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        qWarning() << "auxscope compare failed:" << p.readAllStandardError();
        return out;
    }
    const QStringList lines = QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    const QStringList heads = csvFields(lines.value(0));
    for (const QString& line : lines.mid(1)) {
        const QStringList f = csvFields(line);
        if (f.size() != heads.size() || f[0] != "function") continue;
        Row row;
        for (qsizetype i = 0; i < f.size(); ++i)
            row[heads[i]] = f[i];
        out[{row["function"], row["file"]}] = row;
    }
    return out;
}

// `auxscope compare A B --format csv --tree|--bottom-up`: the tree rows of `kind` ("node", "bottom-up") by
// id.
std::map<uint32_t, Row> cliTreeRows(const QString& a, const QString& b, const QString& option,
                                    const QString& kind) {
    QProcess p;
    p.start(AUXSCOPE_BINARY, {"compare", a, b, "--format", "csv", "--limit", "0", option});
    std::map<uint32_t, Row> out;
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return out;
    const QStringList lines = QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    const QStringList heads = csvFields(lines.value(0));
    for (const QString& line : lines.mid(1)) {
        const QStringList f = csvFields(line);
        if (f.size() != heads.size() || f[0] != kind) continue;
        Row row;
        for (qsizetype i = 0; i < f.size(); ++i)
            row[heads[i]] = f[i];
        out[row["id"].toUInt()] = row;
    }
    return out;
}

// A merged tree view's rows (those filled: the top level and what is expanded)
// equal the CLI's rows of the same nodes; returns the rows compared.
int checkTreeAgainstCli(ComparePane& pane, QTreeWidget* view, const std::map<uint32_t, Row>& cli) {
    int checked = 0;
    std::vector<QTreeWidgetItem*> todo;
    for (int i = 0; i < view->topLevelItemCount(); ++i)
        todo.push_back(view->topLevelItem(i));
    while (!todo.empty()) {
        QTreeWidgetItem* item = todo.back();
        todo.pop_back();
        if (item->data(0, Qt::UserRole).isNull()) continue;  // a placeholder
        auto it = cli.find(item->data(0, Qt::UserRole).toUInt());
        if (it == cli.end() || !item->text(0).startsWith(it->second.at("function"))) {
            qWarning() << "tree node" << item->data(0, Qt::UserRole) << item->text(0) << "not the CLI's";
            return -1;
        }
        int c = 1;
        for (CompareMetric m : pane.metrics()) {
            const QString n = compareMetricName(m);
            const QString expect[3] = {it->second.at("a_" + n), it->second.at("b_" + n),
                                       it->second.at("delta_" + n)};
            for (int k = 0; k < 3; ++k) {
                QString shown = item->text(c + k);
                if (shown.startsWith('+')) shown.remove(0, 1);
                if (shown != expect[k]) {
                    qWarning() << item->text(0) << n << k << "tree" << item->text(c + k) << "CLI"
                               << expect[k];
                    return -1;
                }
            }
            c += 4;
        }
        ++checked;
        for (int i = 0; i < item->childCount(); ++i)
            todo.push_back(item->child(i));
    }
    return checked;
}

// The pane's rows equal the CLI's, cell by cell; returns the rows compared.
int checkAgainstCli(ComparePane& pane, const std::map<std::pair<QString, QString>, Row>& cli) {
    QTreeWidget* t = pane.table();
    if (t->topLevelItemCount() != int(cli.size())) {
        qWarning() << "pane rows" << t->topLevelItemCount() << "CLI rows" << cli.size();
        return -1;
    }
    int checked = 0;
    for (int i = 0; i < t->topLevelItemCount(); ++i) {
        const QTreeWidgetItem* item = t->topLevelItem(i);
        auto it = cli.find({item->text(0), item->text(1)});
        if (it == cli.end()) {
            qWarning() << "not in the CLI's rows:" << item->text(0) << item->text(1);
            return -1;
        }
        const Row& r = it->second;
        const QString side = r.at("side");
        if (item->text(2) != (side == "both" ? "" : side == "a" ? "A only" : "B only")) {
            qWarning() << item->text(0) << "side" << item->text(2) << "CLI" << side;
            return -1;
        }
        int c = ComparePane::kFirstMetricColumn;
        for (CompareMetric m : pane.metrics()) {
            const QString n = compareMetricName(m);
            const QString expect[3] = {r.at("a_" + n), r.at("b_" + n), r.at("delta_" + n)};
            for (int k = 0; k < 3; ++k) {
                // The pane writes a delta with its sign (+N), CSV without; else the same printf.
                QString shown = item->text(c + k);
                if (shown.startsWith('+')) shown.remove(0, 1);
                if (shown != expect[k]) {
                    qWarning() << item->text(0) << n << k << "pane" << item->text(c + k) << "CLI"
                               << expect[k];
                    return -1;
                }
            }
            const QString pct = r.at("delta_pct_" + n);
            const QVariant v = item->data(c + 3, Qt::UserRole);
            if (pct.isEmpty()
                    ? (v.isValid() &&
                       costOf(pane.result()->functions[item->data(0, Qt::UserRole).toUInt()].b, m) != 0)
                    : std::abs(v.toDouble() - pct.toDouble()) > 0.0006) {
                qWarning() << item->text(0) << n << "% pane" << v << "CLI" << pct;
                return -1;
            }
            c += 4;
        }
        ++checked;
    }
    return checked;
}

}  // namespace

// `path` on a trace page of `w` (shown), read and its timeline's first window decoded.
bool openDecoded(MainWindow& w, const QString& path, TraceFilePage*& page) {
    w.resize(1400, 1000);
    page = w.openFile(path);
    page->setAutoDecodeLimit(0);
    w.show();
    if (!QTest::qWaitFor([&] { return page->loaded() || page->failed(); }, 30000) || !page->loaded())
        return false;
    return QTest::qWaitFor(
        [&] {
            return page->timeline() && page->timeline()->data() &&
                   page->timeline()->data()->decodedEnd > page->timeline()->data()->decodedBegin &&
                   !page->timelineDecoding();
        },
        60000);
}

class CompareGuiTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString a_, b_;

private slots:
    void initTestCase() {
        QVERIFY(dir_.isValid());
        a_ = dir_.filePath("a/run.data");
        b_ = dir_.filePath("b/run.data");
        QDir().mkpath(dir_.filePath("a"));
        QDir().mkpath(dir_.filePath("b"));
        QCOMPARE(synth(a_, 150000), QString());
        QCOMPARE(synth(b_, 400000), QString());
    }

    // File > Compare with…: every row equals the CLI's, absolute, per run and by symbol.
    void twoCapturesEqualCli() {
        MainWindow w;
        ComparePane* pane = w.compareFiles(a_, b_);
        QVERIFY(pane);
        QTRY_VERIFY_WITH_TIMEOUT(pane->result() != nullptr, 120000);
        QCOMPARE(pane->result()->source.kind, RangeSource::Spans);
        QVERIFY2(pane->summary()->text().contains("run.data"), qPrintable(pane->summary()->text()));
        // The merged call tree and bottom-up tree: their rows, two levels expanded, equal the CLI's.
        for (int i = 0; i < pane->callTree()->topLevelItemCount(); ++i)
            pane->callTree()->topLevelItem(i)->setExpanded(true);
        QVERIFY(pane->callTree()->topLevelItemCount() > 0 &&
                pane->callTree()->topLevelItem(0)->childCount() > 0);
        QVERIFY(checkTreeAgainstCli(*pane, pane->callTree(), cliTreeRows(a_, b_, "--tree", "node")) > 3);
        QVERIFY(pane->bottomUpTree() == nullptr);  // made when first shown
        pane->tabs()->setCurrentWidget(pane->bottomUp());
        QVERIFY(pane->bottomUpTree() != nullptr);
        for (int i = 0; i < pane->bottomUp()->topLevelItemCount(); ++i)
            pane->bottomUp()->topLevelItem(i)->setExpanded(true);
        QVERIFY(checkTreeAgainstCli(*pane, pane->bottomUp(),
                                    cliTreeRows(a_, b_, "--bottom-up", "bottom-up")) > 10);
        pane->tabs()->setCurrentIndex(0);
        // At first: the largest self-time delta first.
        const int selfDelta = ComparePane::kFirstMetricColumn + 2;
        QCOMPARE(pane->table()->sortColumn(), selfDelta);
        for (int i = 1; i < pane->table()->topLevelItemCount(); ++i)
            QVERIFY(pane->table()->topLevelItem(i - 1)->data(selfDelta, Qt::UserRole).toDouble() >=
                    pane->table()->topLevelItem(i)->data(selfDelta, Qt::UserRole).toDouble());
        const int absolute = checkAgainstCli(*pane, cliRows(a_, b_, {}));
        QVERIFY2(absolute > 10, "absolute: the pane's rows differ from auxscope compare's");
        // Some functions changed, in both directions or at least upwards (B ran longer).
        int grew = 0;
        for (int i = 0; i < pane->table()->topLevelItemCount(); ++i)
            grew += pane->table()
                        ->topLevelItem(i)
                        ->data(ComparePane::kFirstMetricColumn + 4 + 2, Qt::UserRole)
                        .toDouble() > 0;  // calls delta
        QVERIFY(grew > 3);

        pane->normalizeChoice()->setCurrentIndex(1);  // per run
        QVERIFY(pane->result() && pane->result()->scaleB != 1.0);
        QVERIFY2(checkAgainstCli(*pane, cliRows(a_, b_, {"--normalize", "total"})) == absolute,
                 "per run: the pane's rows differ from auxscope compare --normalize total");
        pane->normalizeChoice()->setCurrentIndex(0);
        pane->matchChoice()->setCurrentIndex(1);  // by symbol
        QVERIFY(checkAgainstCli(*pane, cliRows(a_, b_, {"--by-symbol"})) > 10);

        // Sortable by any column: the B calls column descending is in order.
        const int callsB = ComparePane::kFirstMetricColumn + 2 * 4 + 1;
        pane->table()->sortByColumn(callsB, Qt::DescendingOrder);
        for (int i = 1; i < pane->table()->topLevelItemCount(); ++i)
            QVERIFY(pane->table()->topLevelItem(i - 1)->data(callsB, Qt::UserRole).toDouble() >=
                    pane->table()->topLevelItem(i)->data(callsB, Qt::UserRole).toDouble());
        // Copy gives both sides: the files' names and each row's A and B.
        const QString text = pane->text();
        QVERIFY(text.contains("A: " + a_ + " (Intel PT)") && text.contains("B: " + b_ + " (Intel PT)"));
        QVERIFY(text.contains("calls A\tcalls B\tcalls Δ\tcalls Δ%"));
        QCOMPARE(text.count('\n'),
                 pane->summary()->text().count('\n') + 2 + pane->table()->topLevelItemCount());

        // Per call of rec0 (offered by the field's completer): as auxscope compare --normalize per-call=rec0.
        QVERIFY(pane->perCallFunction()->completer());
        QVERIFY(pane->perCallFunction()
                    ->completer()
                    ->model()
                    ->match(pane->perCallFunction()->completer()->model()->index(0, 0), Qt::DisplayRole,
                            "rec0", 1, Qt::MatchExactly)
                    .size() == 1);
        pane->perCallFunction()->setText("rec0");
        pane->normalizeChoice()->setCurrentIndex(2);
        QVERIFY(pane->result() && pane->result()->scaleA != 1.0);
        QVERIFY2(
            checkAgainstCli(*pane, cliRows(a_, b_, {"--by-symbol", "--normalize", "per-call=rec0"})) > 10,
            "per call: the pane's rows differ from auxscope compare --normalize per-call=rec0");
        // Per call of a function neither side has: a clear error, no comparison.
        pane->normalizeChoice()->setCurrentIndex(2);
        pane->perCallFunction()->setText("no_such_function");
        emit pane->perCallFunction()->editingFinished();
        QVERIFY(pane->result() == nullptr);
        QVERIFY2(pane->summary()->text().contains("no_such_function"), qPrintable(pane->summary()->text()));
    }

    // Export CSV…: the file is byte for byte what `auxscope compare --format csv --tree
    // --bottom-up --limit 0` prints with the pane's options (absolute, and per run by symbol).
    void exportCsvEqualsCli() {
        MainWindow w;
        ComparePane* pane = w.compareFiles(a_, b_);
        QVERIFY(!pane->exportCsvButton()->isEnabled());
        QTRY_VERIFY_WITH_TIMEOUT(pane->result() != nullptr, 120000);
        QVERIFY(pane->exportCsvButton()->isEnabled());
        auto cli = [&](const QStringList& extra) {
            QProcess p;
            p.start(AUXSCOPE_BINARY, QStringList{"compare", a_, b_, "--format", "csv", "--limit", "0",
                                                 "--tree", "--bottom-up"} +
                                         extra);
            if (!p.waitForFinished(120000) || p.exitCode() != 0) return QByteArray("failed");
            return p.readAllStandardOutput();
        };
        auto exported = [&] {
            const QString path = dir_.filePath("compare.csv");
            QString error;
            if (!pane->exportCsv(path, &error)) return error.toUtf8();
            QFile f(path);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("unreadable");
        };
        const QByteArray absolute = exported();
        QVERIFY(absolute.count('\n') > 50);
        QVERIFY(absolute.contains("\nnode,") && absolute.contains("\nbottom-up,"));
        QCOMPARE(absolute, cli({}));
        pane->matchChoice()->setCurrentIndex(1);
        pane->normalizeChoice()->setCurrentIndex(1);
        QCOMPARE(exported(), cli({"--by-symbol", "--normalize", "total"}));
        // An unwritable path: refused with the path and the cause.
        QString error;
        QVERIFY(!pane->exportCsv("/nonexistent/dir/compare.csv", &error));
        QVERIFY2(error.contains("/nonexistent/dir/compare.csv"), qPrintable(error));
    }

    // The differential flame graph: widths from B, colours from the deltas, as painted.
    void flameColoursFollowDeltas() {
        MainWindow w;
        w.resize(1400, 900);
        ComparePane* pane = w.compareFiles(a_, b_);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QTRY_VERIFY_WITH_TIMEOUT(pane->result() != nullptr, 120000);
        pane->tabs()->setCurrentIndex(1);
        FlameGraphWidget* flame = pane->flameGraph();
        QTRY_VERIFY(flame->isVisible() && flame->width() > 600);
        QVERIFY(flame->isDiff());
        // Absolute (B ran longer: much grew) and per run (B scaled to A's total: some shrank).
        int grew = 0, shrank = 0, same = 0, checked = 0;
        for (int normalize : {0, 1}) {
            pane->normalizeChoice()->setCurrentIndex(normalize);
            QVERIFY(pane->result());
            const CompareResult& r = *pane->result();
            const CompareMetric m = CompareMetric::TotalTime;
            const double root = r.scaledB(r.tree.b[0], m);
            QVERIFY(root > 0);
            const QImage image = flame->grab().toImage();
            const QRect legend = flame->legendRect();
            for (const FlameGraphWidget::Box& box : flame->boxes()) {
                if (box.node == 0) continue;
                const double a = r.scaledA(r.tree.a[box.node], m), b = r.scaledB(r.tree.b[box.node], m);
                QCOMPARE(flame->diffA(box.node), a);
                QCOMPARE(flame->diffB(box.node), b);
                // Widths from B (unzoomed: the share of B's total).
                QVERIFY(std::abs(box.width - b / root * flame->width()) < 1e-6 * flame->width());
                const QColor want = FlameGraphWidget::diffColor(flame->diffChange(box.node));
                // Red for growth, blue for shrinking (strictly once the change is over 1 %).
                const bool clear = std::abs(flame->diffChange(box.node)) > 0.01;
                if (b > a) {
                    QVERIFY(clear ? want.red() > want.blue() : want.red() >= want.blue());
                    ++grew;
                } else if (b < a) {
                    QVERIFY(clear ? want.blue() > want.red() : want.blue() >= want.red());
                    ++shrank;
                } else {
                    QCOMPARE(want, FlameGraphWidget::diffColor(0));
                    ++same;
                }
                const QRect rect = flame->boxRect(box);
                if (rect.width() < 4 || rect.intersects(legend.adjusted(-6, -4, 6, 4))) continue;
                // The painted colour, left of any label.
                const QColor got = image.pixelColor(rect.left() + 1, rect.top() + 1);
                QVERIFY2(got == want, qPrintable(QString("box %1: painted %2, change %3 wants %4")
                                                     .arg(box.node)
                                                     .arg(got.name())
                                                     .arg(flame->diffChange(box.node))
                                                     .arg(want.name())));
                ++checked;
            }
            // The legend: blue at the left, red at the right.
            QVERIFY(legend.left() > 0 && legend.right() < flame->width());
            const QColor left = image.pixelColor(legend.left() + 2, legend.top() + 6);
            const QColor right = image.pixelColor(legend.right() - 2, legend.top() + 6);
            QVERIFY2(left.blue() > left.red() + 100, qPrintable(left.name()));
            QVERIFY2(right.red() > right.blue() + 100, qPrintable(right.name()));
        }
        QVERIFY(grew > 0);
        QVERIFY(shrank > 0);
        QVERIFY(checked > 10);
        // The hover: the box's name, A's value, B's and the delta with its %.
        const CompareResult& r = *pane->result();
        for (const FlameGraphWidget::Box& box : flame->boxes()) {
            const QRect rect = flame->boxRect(box);
            if (box.node == 0 || rect.width() < 40 || flame->diffA(box.node) == 0 ||
                flame->diffA(box.node) == flame->diffB(box.node))
                continue;
            QHelpEvent help(QEvent::ToolTip, rect.center(), flame->mapToGlobal(rect.center()));
            QApplication::sendEvent(flame, &help);
            const QString tip = QToolTip::text();
            const CompareKey& key = r.keys[r.tree.shape.nodes[box.node].function];
            QVERIFY2(tip.startsWith(QString::fromStdString(key.name) + "\nA: "), qPrintable(tip));
            const double change = flame->diffChange(box.node);
            QVERIFY2(tip.contains(QString("\ndelta: %1").arg(change > 0 ? "+" : "-")), qPrintable(tip));
            QVERIFY2(tip.contains(QString("%1%2%)").arg(change > 0 ? "+" : "").arg(100 * change, 0, 'f', 1)),
                     qPrintable(tip));
            break;
        }
        QVERIFY(!QToolTip::text().isEmpty());
        qInfo() << grew << "boxes grew," << shrank << "shrank," << same << "unchanged;" << checked
                << "checked as painted";
        // Stronger for a larger change; full red for new.
        QVERIFY(FlameGraphWidget::diffColor(0.4).green() < FlameGraphWidget::diffColor(0.1).green());
        QVERIFY(FlameGraphWidget::diffColor(-0.4).red() < FlameGraphWidget::diffColor(-0.1).red());
        QCOMPARE(FlameGraphWidget::diffColor(std::numeric_limits<double>::infinity()),
                 FlameGraphWidget::diffColor(FlameGraphWidget::kDiffFullScale));
    }

    // Two ranges of one file: "Compare with another range", then the next selection is B.
    void twoRanges() {
        MainWindow w;
        TraceFilePage* page = nullptr;
        QVERIFY(openDecoded(w, a_, page));
        // File > Compare with… is there for a trace page; a file dropped with Ctrl is compared with it.
        auto* compareWith = w.findChild<QAction*>("compareWith");
        QVERIFY(compareWith && compareWith->isEnabled());
        {
            QMimeData mime;
            mime.setUrls({QUrl::fromLocalFile(b_)});
            QDragEnterEvent enter(QPoint(100, 100), Qt::CopyAction, &mime, Qt::LeftButton,
                                  Qt::ControlModifier);
            QApplication::sendEvent(&w, &enter);
            QVERIFY(enter.isAccepted());
            QDropEvent drop(QPointF(100, 100), Qt::CopyAction, &mime, Qt::LeftButton, Qt::ControlModifier);
            const int before = w.findChildren<ComparePane*>().size();
            QApplication::sendEvent(&w, &drop);
            const auto panes = w.findChildren<ComparePane*>();
            QCOMPARE(panes.size(), before + 1);
            QTRY_VERIFY_WITH_TIMEOUT(panes.back()->result() != nullptr, 120000);
            QVERIFY(panes.back()->summary()->text().contains("A: " + a_) &&
                    panes.back()->summary()->text().contains("B: " + b_));
            w.findChild<QTabWidget*>("tabs")->setCurrentWidget(page);
        }
        RangeStatsPane* stats = page->rangeStats();
        const auto& data = *page->timeline()->data();
        const uint64_t t0 = data.decodedBegin, span = data.decodedEnd - data.decodedBegin;
        page->timeline()->setTimeSelection(t0, t0 + span / 2);
        QTRY_VERIFY_WITH_TIMEOUT(!stats->busy() && stats->stats(), 60000);
        QVERIFY(!stats->compareButton()->isHidden() && stats->compareButton()->isEnabled());
        QVERIFY(stats->compareWithNextRange());
        QVERIFY(stats->waitingForRangeB());
        QSignalSpy requested(stats, &RangeStatsPane::compareRequested);
        const int tabs = w.findChildren<ComparePane*>().size();
        page->timeline()->setTimeSelection(t0 + span / 2, t0 + span);
        QTRY_VERIFY_WITH_TIMEOUT(requested.size() == 1, 60000);
        QVERIFY(!stats->waitingForRangeB());
        const auto panes = w.findChildren<ComparePane*>();
        QCOMPARE(panes.size(), tabs + 1);
        ComparePane* pane = panes.back();
        QVERIFY(pane->result());
        const auto sa = requested[0][0].value<CompareSideData>();
        const auto sb = requested[0][1].value<CompareSideData>();
        QCOMPARE(sa.stats->begin, t0);
        QCOMPARE(sb.stats->begin, t0 + span / 2);
        QCOMPARE(sb.stats.get(), stats->stats());
        // Each side's calls per function are its range's, by name.
        std::map<QString, uint64_t> callsA, callsB;
        for (const FunctionStats& f : sa.stats->functions)
            callsA[QString::fromStdString((*sa.functions)[f.function].name)] += f.cost.calls;
        for (const FunctionStats& f : sb.stats->functions)
            callsB[QString::fromStdString((*sb.functions)[f.function].name)] += f.cost.calls;
        const int calls = ComparePane::kFirstMetricColumn + 2 * 4;
        int changed = 0;
        for (int i = 0; i < pane->table()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = pane->table()->topLevelItem(i);
            QCOMPARE(uint64_t(item->data(calls, Qt::UserRole).toDouble()), callsA[item->text(0)]);
            QCOMPARE(uint64_t(item->data(calls + 1, Qt::UserRole).toDouble()), callsB[item->text(0)]);
            changed += callsA[item->text(0)] != callsB[item->text(0)];
        }
        QVERIFY(pane->table()->topLevelItemCount() > 5);
        QVERIFY(changed > 0);
        QVERIFY(pane->summary()->text().contains("range "));
    }

    // Ctrl+Shift+drag over a selected range: the new range is B, compared with the selected one (A).
    void ctrlShiftDragComparesWithTheSelectedRange() {
        MainWindow w;
        TraceFilePage* page = nullptr;
        QVERIFY(openDecoded(w, a_, page));
        TimelineView* view = page->timeline();
        RangeStatsPane* stats = page->rangeStats();
        const uint64_t t0 = view->state()->window().begin, t1 = view->state()->window().end;
        view->setTimeSelection(t0, t0 + (t1 - t0) / 3);
        QTRY_VERIFY_WITH_TIMEOUT(!stats->busy() && stats->stats(), 60000);
        const RangeStats* a = stats->stats();
        QSignalSpy requested(stats, &RangeStatsPane::compareRequested);
        const int panes = w.findChildren<ComparePane*>().size();
        // A drag with Ctrl+Shift from the middle to near the end, on a lane below the axis.
        const int x0 = int(view->xOf(t0 + (t1 - t0) / 2)), x1 = int(view->xOf(t1 - (t1 - t0) / 20));
        const int y = view->kAxisHeight + 40;
        const auto mods = Qt::ShiftModifier | Qt::ControlModifier;
        QTest::mousePress(view, Qt::LeftButton, mods, QPoint(x0, y));
        QVERIFY(stats->waitingForRangeB());
        for (int x = x0; x <= x1; x += std::max(1, (x1 - x0) / 8)) {
            QMouseEvent move(QEvent::MouseMove, QPointF(x, y), view->mapToGlobal(QPointF(x, y)), Qt::NoButton,
                             Qt::LeftButton, mods);
            QApplication::sendEvent(view, &move);
        }
        QMouseEvent last(QEvent::MouseMove, QPointF(x1, y), view->mapToGlobal(QPointF(x1, y)), Qt::NoButton,
                         Qt::LeftButton, mods);
        QApplication::sendEvent(view, &last);
        QTest::mouseRelease(view, Qt::LeftButton, mods, QPoint(x1, y));
        QTRY_VERIFY_WITH_TIMEOUT(requested.size() == 1, 60000);
        QCOMPARE(w.findChildren<ComparePane*>().size(), panes + 1);
        const auto sa = requested[0][0].value<CompareSideData>();
        const auto sb = requested[0][1].value<CompareSideData>();
        QCOMPARE(sa.stats->begin, a->begin);
        QCOMPARE(sa.stats->end, a->end);
        QVERIFY2(sb.stats->begin > t0 + (t1 - t0) / 3, "B is the range dragged, after A");
        QVERIFY(sb.stats->end > sb.stats->begin);
        // A plain Shift+drag now selects a range and compares nothing.
        QVERIFY(!stats->waitingForRangeB());
    }

    // Two captures side by side: B's timeline under A's, zoom and pan in step,
    // lined up at their starts or at a moment chosen on each.
    void timelinesSideBySideMoveInStep() {
        MainWindow w;
        w.resize(1400, 1000);
        ComparePane* pane = w.compareFiles(a_, b_);
        QVERIFY(pane->sideBySideButton() && !pane->sideBySideButton()->isHidden());
        const int before = w.findChildren<SideBySidePage*>().size();
        pane->sideBySideButton()->click();
        const auto pages = w.findChildren<SideBySidePage*>();
        QCOMPARE(pages.size(), before + 1);
        SideBySidePage* page = pages.back();
        QCOMPARE(w.findChild<QTabWidget*>("tabs")->currentWidget(), page);
        w.show();
        QSignalSpy linked(page, &SideBySidePage::linked);
        QTRY_VERIFY_WITH_TIMEOUT(page->link() != nullptr, 60000);
        TimelineState* sa = page->pageA()->timeline()->state();
        TimelineState* sb = page->pageB()->timeline()->state();
        QCOMPARE(page->pageA()->path(), a_);
        QCOMPARE(page->pageB()->path(), b_);
        const uint64_t a0 = sa->bounds().begin, b0 = sb->bounds().begin;
        QVERIFY(sa->bounds().end - a0 < sb->bounds().end - b0);  // B ran longer
        QVERIFY2(page->note()->text().contains("starts"), qPrintable(page->note()->text()));
        // Zoom A: B shows the same width at the same distance from its start.
        const uint64_t w0 = (sa->bounds().end - a0) / 10;
        sa->setWindow(a0 + w0, a0 + 3 * w0);
        QCOMPARE(sb->window().begin - b0, w0);
        QCOMPARE(sb->window().end - sb->window().begin, 2 * w0);
        // Pan B: A follows.
        sb->setWindow(b0 + 2 * w0, b0 + 4 * w0);
        QCOMPARE(sa->window().begin - a0, 2 * w0);
        QCOMPARE(sa->window().end - sa->window().begin, 2 * w0);
        // Not in step: each alone.
        page->inStepBox()->setChecked(false);
        sa->setWindow(a0, a0 + w0);
        QCOMPARE(sb->window().begin - b0, 2 * w0);
        page->inStepBox()->setChecked(true);
        QCOMPARE(sb->window().begin - b0, 0u);  // lined up again
        // Lined up at a moment chosen on each: A's range at +w0, B's at +3 w0.
        page->setAlign(SideBySidePage::Align::Selections);
        QVERIFY2(page->note()->text().contains("Select a span or a range on both"),
                 qPrintable(page->note()->text()));
        sa->setTimeSelection(a0 + w0, a0 + 2 * w0);
        QVERIFY2(page->note()->text().contains("on B"), qPrintable(page->note()->text()));
        sb->setTimeSelection(b0 + 3 * w0, b0 + 4 * w0);
        QCOMPARE(page->link()->anchorA(), a0 + w0);
        QCOMPARE(page->link()->anchorB(), b0 + 3 * w0);
        QVERIFY2(page->note()->text().startsWith("Lined up at A +"), qPrintable(page->note()->text()));
        sa->setWindow(a0 + w0 / 2, a0 + w0 / 2 + w0);
        QCOMPARE(sb->window().begin, b0 + 3 * w0 - (w0 - w0 / 2));
        QCOMPARE(sb->window().end - sb->window().begin, w0);
        // The File menu offers it for a trace page too.
        w.findChild<QTabWidget*>("tabs")->setCurrentWidget(page);
        QVERIFY(w.findChild<QAction*>("sideBySideWith"));
    }

    // Samples: two perf cpu-clock recordings of one program built twice (slow_part twice the work):
    // the pane equals auxscope compare's rows, and the flame graph is drawn by period.
    void twoSampledCapturesEqualCli() {
        const bool ci = qgetenv("CI") == "true";
        QProcess version;
        version.start("perf", {"--version"});
        if (!version.waitForFinished(10000) || version.exitCode() != 0) {
            if (ci) QFAIL("perf is not installed (CI=true: no skip)");
            QSKIP("perf is not installed");
        }
        const QString fast = dir_.filePath("fast.data"), slow = dir_.filePath("slow.data");
        for (const auto& [program, out] : {std::pair{QString(AUXSCOPE_COMPARE_FAST), fast},
                                           std::pair{QString(AUXSCOPE_COMPARE_SLOW), slow}}) {
            QProcess record;
            record.start(
                "perf", {"record", "-q", "-e", "cpu-clock", "-c", "100000", "-o", out, "--", program, "100"});
            if (!record.waitForFinished(120000) || record.exitCode() != 0 || !QFileInfo::exists(out)) {
                const QString why = "perf record failed: " + QString::fromUtf8(record.readAllStandardError());
                if (ci) QFAIL(qPrintable(why + " (CI=true: no skip)"));
                QSKIP(qPrintable(why));
            }
        }
        MainWindow w;
        ComparePane* pane = w.compareFiles(fast, slow);
        QTRY_VERIFY_WITH_TIMEOUT(pane->result() != nullptr, 120000);
        QCOMPARE(pane->result()->source.kind, RangeSource::Samples);
        QVERIFY2(pane->summary()->text().contains("samples of cpu-clock"),
                 qPrintable(pane->summary()->text()));
        QVERIFY(checkAgainstCli(*pane, cliRows(fast, slow, {})) > 2);
        QCOMPARE(pane->flameGraph()->metric(), FlameGraphWidget::Metric::Period);
        // slow_part: more samples in B (twice the work).
        bool found = false;
        for (int i = 0; i < pane->table()->topLevelItemCount(); ++i) {
            const QTreeWidgetItem* item = pane->table()->topLevelItem(i);
            if (item->text(0) != "slow_part") continue;
            found = true;
            const int selfSamples = ComparePane::kFirstMetricColumn;
            QVERIFY(item->data(selfSamples + 1, Qt::UserRole).toDouble() >
                    1.5 * item->data(selfSamples, Qt::UserRole).toDouble());
        }
        QVERIFY(found);
    }

    // Arm SPE: two auxscope-spesynth files, their records as samples of the
    // arm_spe events (as `auxscope compare` reads them): the pane's rows equal the CLI's.
    void twoSpeCapturesEqualCli() {
        const QString a = dir_.filePath("spe-a/spe.data"), b = dir_.filePath("spe-b/spe.data");
        QDir().mkpath(dir_.filePath("spe-a"));
        QDir().mkpath(dir_.filePath("spe-b"));
        for (const auto& [path, n, seed] : {std::tuple{a, 20000, 3}, std::tuple{b, 30000, 4}}) {
            QProcess p;
            p.start(AUXSCOPE_SPESYNTH,
                    {"--generate", QString::number(n), "--seed", QString::number(seed), "-o", path});
            QVERIFY2(p.waitForFinished(120000) && p.exitCode() == 0, p.readAllStandardError().constData());
        }
        MainWindow w;
        ComparePane* pane = w.compareFiles(a, b);
        QTRY_VERIFY_WITH_TIMEOUT(pane->result() != nullptr || pane->summary()->text().startsWith("Cannot"),
                                 120000);
        QVERIFY2(pane->result(), qPrintable(pane->summary()->text()));
        QCOMPARE(pane->result()->source.kind, RangeSource::Samples);
        QVERIFY2(pane->summary()->text().contains("samples of arm_spe"), qPrintable(pane->summary()->text()));
        QVERIFY(checkAgainstCli(*pane, cliRows(a, b, {})) > 3);
    }

    // A B that is missing: the pane names it and why; the window lives on.
    void badInput() {
        MainWindow w;
        const QString missing = dir_.filePath("missing.data");
        ComparePane* pane = w.compareFiles(a_, missing);
        QTRY_VERIFY_WITH_TIMEOUT(pane->summary()->text().startsWith("Cannot compare"), 60000);
        QVERIFY(pane->result() == nullptr);
        QVERIFY2(pane->summary()->text().contains(missing), qPrintable(pane->summary()->text()));
        auto notData = loadCompareSide(AUXSCOPE_PTSYNTH);
        QVERIFY(!notData);
        QVERIFY2(QString::fromStdString(notData.error().message).contains(AUXSCOPE_PTSYNTH),
                 notData.error().message.c_str());
    }
};

QTEST_MAIN(CompareGuiTest)
#include "CompareGuiTest.moc"
