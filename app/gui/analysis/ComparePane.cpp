// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/ComparePane.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QCompleter>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <cmath>
#include <limits>
#include <sstream>

#include "export/CompareCsv.h"
#include "gui/analysis/FlameGraphWidget.h"

namespace auxscope {

namespace {

// A row sorted by each column's number (Qt::UserRole) where it has one; a
// delta % of a function new on B's side (no number) sorts above every other.
class CompareItem : public QTreeWidgetItem {
public:
    using QTreeWidgetItem::QTreeWidgetItem;
    bool operator<(const QTreeWidgetItem& other) const override {
        const int c = treeWidget() ? treeWidget()->sortColumn() : 0;
        if (c < ComparePane::kFirstMetricColumn) return text(c) < other.text(c);
        auto number = [c](const QTreeWidgetItem& item) {
            const QVariant v = item.data(c, Qt::UserRole);
            return v.isValid() ? v.toDouble() : std::numeric_limits<double>::infinity();
        };
        return number(*this) < number(other);
    }
};

}  // namespace

ComparePane::ComparePane(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    summary_ = new QLabel("Loading both sides…", this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(summary_);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel("Match functions by", this));
    match_ = new QComboBox(this);
    match_->addItems({"name and binary", "name only"});
    controls->addWidget(match_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel("Normalise", this));
    normalize_ = new QComboBox(this);
    normalize_->addItems({"absolute", "per run (B scaled to A's total)", "per call of"});
    controls->addWidget(normalize_);
    perCall_ = new QLineEdit(this);
    perCall_->setPlaceholderText("function name");
    perCall_->setEnabled(false);
    controls->addWidget(perCall_);
    controls->addSpacing(12);
    controls->addWidget(new QLabel("Flame graph by", this));
    flameMetric_ = new QComboBox(this);
    controls->addWidget(flameMetric_);
    controls->addStretch(1);
    sideBySide_ = new QPushButton("Timelines side by side", this);
    sideBySide_->setObjectName("sideBySide");
    sideBySide_->setToolTip("Both captures' timelines, B's lanes under A's, zoomed and panned in step");
    sideBySide_->setVisible(false);
    controls->addWidget(sideBySide_);
    exportCsv_ = new QPushButton("Export CSV…", this);
    exportCsv_->setObjectName("compareExportCsv");
    exportCsv_->setToolTip(
        "Both sides and the deltas of every function, the merged call tree and bottom-up tree, as auxscope "
        "compare --format csv --tree --bottom-up writes them");
    exportCsv_->setEnabled(false);
    controls->addWidget(exportCsv_);
    copy_ = new QPushButton("Copy", this);
    copy_->setToolTip("Copy both sides and the deltas as tab-separated text");
    controls->addWidget(copy_);
    layout->addLayout(controls);
    tabs_ = new QTabWidget(this);
    table_ = new QTreeWidget(this);
    table_->setRootIsDecorated(false);
    table_->setSortingEnabled(true);
    table_->setAlternatingRowColors(true);
    table_->setUniformRowHeights(true);
    tabs_->addTab(table_, "Top functions");
    for (QTreeWidget** view : {&callTree_, &bottomUp_}) {
        *view = new QTreeWidget(this);
        (*view)->setUniformRowHeights(true);
        (*view)->setAlternatingRowColors(true);
    }
    auto* scroll = new QScrollArea(this);
    flame_ = new FlameGraphWidget;
    scroll->setWidget(flame_);
    scroll->setWidgetResizable(true);
    tabs_->addTab(scroll, "Flame graph");
    tabs_->addTab(callTree_, "Call tree");
    tabs_->addTab(bottomUp_, "Bottom-up");
    layout->addWidget(tabs_, 1);

    connect(match_, &QComboBox::currentIndexChanged, this, [this] { recompute(); });
    connect(normalize_, &QComboBox::currentIndexChanged, this, [this](int i) {
        perCall_->setEnabled(i == 2);
        if (i != 2 || !perCall_->text().trimmed().isEmpty()) recompute();
    });
    connect(perCall_, &QLineEdit::editingFinished, this, [this] {
        if (normalize_->currentIndex() == 2) recompute();
    });
    connect(flameMetric_, &QComboBox::currentIndexChanged, this, [this] { fillFlame(); });
    for (QTreeWidget* view : {callTree_, bottomUp_})
        connect(view, &QTreeWidget::itemExpanded, this, [this, view](QTreeWidgetItem* item) {
            if (!result_ || item->childCount() != 1 || !item->child(0)->data(0, Qt::UserRole).isNull())
                return;
            delete item->takeChild(0);  // the placeholder
            const CompareTree* tree = view == callTree_ ? &result_->tree : bottomUpTree();
            if (tree) addChildren(view, *tree, item, item->data(0, Qt::UserRole).toUInt());
        });
    connect(tabs_, &QTabWidget::currentChanged, this, [this] {
        if (result_ && tabs_->currentWidget() == bottomUp_ && !bottomUpTree_) {
            bottomUpTree_ = result_->bottomUp();
            fillTree(bottomUp_, *bottomUpTree_);
        }
    });
    connect(sideBySide_, &QPushButton::clicked, this, [this] { emit sideBySideRequested(fileA_, fileB_); });
    connect(exportCsv_, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export the comparison as CSV", "compare.csv",
                                                          "CSV files (*.csv);;All files (*)");
        if (path.isEmpty()) return;
        QString error;
        if (!exportCsv(path, &error)) QMessageBox::warning(this, "Export CSV", error);
    });
    connect(copy_, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(text()); });
}

void ComparePane::setSides(CompareSideData a, CompareSideData b) {
    a_ = std::move(a);
    b_ = std::move(b);
    namesDone_ = false;
    recompute();
}

void ComparePane::showError(const QString& message) {
    result_.reset();
    exportCsv_->setEnabled(false);
    summary_->setText(message);
    table_->clear();
    callTree_->clear();
    bottomUp_->clear();
    bottomUpTree_.reset();
    flame_->setTree({}, nullptr);
}

CompareOptions ComparePane::options() const {
    CompareOptions o;
    o.match = match_->currentIndex() == 1 ? MatchBy::Name : MatchBy::NameAndBinary;
    switch (normalize_->currentIndex()) {
        case 1:
            o.normalize.kind = CompareNormalize::Total;
            break;
        case 2:
            o.normalize.kind = CompareNormalize::PerCall;
            o.normalize.function = perCall_->text().trimmed().toStdString();
            break;
        default:
            break;
    }
    return o;
}

void ComparePane::setOptions(const CompareOptions& options) {
    const QSignalBlocker b1(match_), b2(normalize_), b3(perCall_);
    match_->setCurrentIndex(options.match == MatchBy::Name ? 1 : 0);
    normalize_->setCurrentIndex(options.normalize.kind == CompareNormalize::Total     ? 1
                                : options.normalize.kind == CompareNormalize::PerCall ? 2
                                                                                      : 0);
    perCall_->setEnabled(options.normalize.kind == CompareNormalize::PerCall);
    perCall_->setText(QString::fromStdString(options.normalize.function));
    recompute();
}

void ComparePane::recompute() {
    if (!a_ || !b_ || !a_->stats || !b_->stats) return;
    const CompareOptions o = options();
    if (o.normalize.kind == CompareNormalize::PerCall && o.normalize.function.empty()) {
        showError("Per call: name the function whose calls each side is divided by.");
        return;
    }
    auto r = compareRanges({a_->stats.get(), a_->functions.get()}, {b_->stats.get(), b_->functions.get()}, o);
    if (!r) {
        showError(QString("%1 against %2: %3")
                      .arg(a_->label, b_->label, QString::fromStdString(r.error().message)));
        return;
    }
    result_ = std::move(*r);
    exportCsv_->setEnabled(true);
    if (!namesDone_ && result_->source.kind == RangeSource::Spans) {
        // Per call: the functions both sides call, offered as one types.
        QStringList names;
        for (const ComparedFunction& f : result_->functions)
            if (f.a.calls && f.b.calls) names << QString::fromStdString(result_->keys[f.key].name);
        names.removeDuplicates();
        names.sort();
        auto* completer = new QCompleter(names, perCall_);
        completer->setCaseSensitivity(Qt::CaseInsensitive);
        completer->setFilterMode(Qt::MatchContains);
        delete perCall_->completer();
        perCall_->setCompleter(completer);
        namesDone_ = true;
    }
    const bool spans = result_->source.kind == RangeSource::Spans;
    if (spans)
        metrics_ = {CompareMetric::SelfTime, CompareMetric::TotalTime, CompareMetric::Calls,
                    CompareMetric::SelfInsns, CompareMetric::TotalInsns};
    else
        metrics_ = {CompareMetric::SelfSamples, CompareMetric::TotalSamples, CompareMetric::SelfPeriod,
                    CompareMetric::TotalPeriod};
    {
        const QSignalBlocker block(flameMetric_);
        const int was = flameMetric_->currentIndex();
        flameMetric_->clear();
        if (spans)
            flameMetric_->addItems({"time", "instructions"});
        else
            flameMetric_->addItems({"period", "samples"});
        flameMetric_->setCurrentIndex(std::max(0, was));
    }
    const size_t onlyA = result_->onlyInA().size(), onlyB = result_->onlyInB().size();
    summary_->setText(QString("A: %1\nB: %2\n%3 functions matched by %4; %5 in A only, %6 in B only%7")
                          .arg(a_->label, b_->label)
                          .arg(result_->functions.size())
                          .arg(o.match == MatchBy::Name ? "name" : "name and binary")
                          .arg(onlyA)
                          .arg(onlyB)
                          .arg(result_->scaleA != 1.0 || result_->scaleB != 1.0
                                   ? QString("; scaled: A x %1, B x %2")
                                         .arg(result_->scaleA, 0, 'g', 6)
                                         .arg(result_->scaleB, 0, 'g', 6)
                                   : QString()));
    fillTable();
    fillFlame();
    fillTree(callTree_, result_->tree);
    bottomUpTree_.reset();
    bottomUp_->clear();
    if (tabs_->currentWidget() == bottomUp_) {
        bottomUpTree_ = result_->bottomUp();
        fillTree(bottomUp_, *bottomUpTree_);
    }
}

QStringList ComparePane::headers(const QString& first) const {
    QStringList out{first};
    for (CompareMetric m : metrics_) {
        const QString h = compareMetricHeading(m);
        out << h + " A" << h + " B" << h + " Δ" << h + " Δ%";
    }
    return out;
}

void ComparePane::setCosts(QTreeWidgetItem* item, const RangeCost& ca, const RangeCost& cb) const {
    const CompareResult& r = *result_;
    const bool scaled = r.scaleA != 1.0 || r.scaleB != 1.0;
    auto number = [scaled](double v, bool sign) {
        return scaled ? QString::asprintf(sign ? "%+.2f" : "%.2f", v)
                      : QString::asprintf(sign ? "%+.0f" : "%.0f", v);
    };
    int c = item->treeWidget() == table_ ? kFirstMetricColumn : 1;
    for (CompareMetric m : metrics_) {
        const double a = r.scaledA(ca, m), b = r.scaledB(cb, m), d = r.delta(ca, cb, m);
        const double p = r.deltaPercent(ca, cb, m);
        item->setText(c, number(a, false));
        item->setData(c, Qt::UserRole, a);
        item->setText(c + 1, number(b, false));
        item->setData(c + 1, Qt::UserRole, b);
        item->setText(c + 2, number(d, true));
        item->setData(c + 2, Qt::UserRole, d);
        if (std::isnan(p)) {
            item->setText(c + 3, costOf(cb, m) ? "new" : "");
            if (!costOf(cb, m)) item->setData(c + 3, Qt::UserRole, 0.0);
        } else {
            item->setText(c + 3, QString::asprintf("%+.1f%%", p));
            item->setData(c + 3, Qt::UserRole, p);
        }
        if (d != 0) item->setForeground(c + 2, d > 0 ? QColor(180, 30, 30) : QColor(30, 70, 190));
        for (int i = 0; i < 4; ++i)
            item->setTextAlignment(c + i, Qt::AlignRight | Qt::AlignVCenter);
        c += 4;
    }
}

void ComparePane::fillTree(QTreeWidget* view, const CompareTree& tree) {
    view->clear();
    view->setHeaderLabels(headers("Function"));
    addChildren(view, tree, nullptr, 0);
    // Room for the stacks' names as they are expanded.
    view->resizeColumnToContents(0);
    view->setColumnWidth(0, std::max(view->columnWidth(0), 320));
}

void ComparePane::addChildren(QTreeWidget* view, const CompareTree& tree, QTreeWidgetItem* parent,
                              uint32_t node) {
    const CompareResult& r = *result_;
    const CompareMetric key =
        r.source.kind == RangeSource::Spans ? CompareMetric::TotalTime : CompareMetric::TotalPeriod;
    auto size = [&](uint32_t n) { return std::max(r.scaledA(tree.a[n], key), r.scaledB(tree.b[n], key)); };
    std::vector<uint32_t> kids = tree.shape.children(node);
    std::stable_sort(kids.begin(), kids.end(), [&](uint32_t x, uint32_t y) { return size(x) > size(y); });
    QList<QTreeWidgetItem*> items;
    for (uint32_t k : kids) {
        auto* item = new QTreeWidgetItem;
        const CompareKey& f = r.keys[tree.shape.nodes[k].function];
        const bool inA = tree.a[k] != RangeCost{}, inB = tree.b[k] != RangeCost{};
        item->setText(0, QString::fromStdString(f.inlined ? f.name + " (inlined)" : f.name) +
                             (inA && inB ? QString()
                              : inA      ? QString("  [A only]")
                                         : QString("  [B only]")));
        item->setToolTip(0, QString::fromStdString(f.file));
        item->setData(0, Qt::UserRole, k);
        items.push_back(item);
    }
    if (parent)
        parent->addChildren(items);
    else
        view->addTopLevelItems(items);
    for (QTreeWidgetItem* item : items) {
        const uint32_t k = item->data(0, Qt::UserRole).toUInt();
        setCosts(item, tree.a[k], tree.b[k]);
        if (tree.shape.nodes[k].firstChild != CallTree::kNone)
            item->addChild(new QTreeWidgetItem);  // placeholder
    }
}

void ComparePane::fillTable() {
    const CompareResult& r = *result_;
    QStringList headers = this->headers("Function");
    headers.insert(1, "Binary");
    headers.insert(2, "Side");
    const int sortColumn = table_->sortColumn();
    const Qt::SortOrder order = table_->header()->sortIndicatorOrder();
    table_->setSortingEnabled(false);
    table_->clear();
    table_->setHeaderLabels(headers);
    QList<QTreeWidgetItem*> items;
    items.reserve(qsizetype(r.functions.size()));
    for (const ComparedFunction& f : r.functions) {
        auto* item = new CompareItem;
        const CompareKey& k = r.keys[f.key];
        item->setText(0, QString::fromStdString(k.inlined ? k.name + " (inlined)" : k.name));
        item->setText(1, QString::fromStdString(k.file));
        item->setText(2, f.inA && f.inB ? "" : f.inA ? "A only" : "B only");
        item->setData(0, Qt::UserRole, f.key);
        if (!(f.inA && f.inB)) {
            const QColor tint = f.inA ? QColor(38, 92, 214) : QColor(214, 39, 40);
            item->setForeground(2, tint);
        }
        items.push_back(item);
    }
    table_->addTopLevelItems(items);
    for (QTreeWidgetItem* item : items) {
        const ComparedFunction& f = r.functions[item->data(0, Qt::UserRole).toUInt()];
        setCosts(item, f.a, f.b);
    }
    table_->setSortingEnabled(true);
    // The default: the largest change of the first column (self time or self samples) first.
    if (sorted_ && sortColumn >= 0 && sortColumn < headers.size())
        table_->sortByColumn(sortColumn, order);
    else
        table_->sortByColumn(kFirstMetricColumn + 2, Qt::DescendingOrder);
    sorted_ = true;
    table_->resizeColumnToContents(0);
}

void ComparePane::fillFlame() {
    if (!result_) return;
    const bool spans = result_->source.kind == RangeSource::Spans;
    const bool second = flameMetric_->currentIndex() == 1;
    const CompareMetric m = spans ? (second ? CompareMetric::TotalInsns : CompareMetric::TotalTime)
                                  : (second ? CompareMetric::TotalSamples : CompareMetric::TotalPeriod);
    flame_->setDiff(*result_, m);
}

QString ComparePane::text() const {
    QString out;
    if (!result_) return summary_->text() + "\n";
    out += summary_->text() + "\n";
    QStringList heads;
    for (int c = 0; c < table_->columnCount(); ++c)
        heads << table_->headerItem()->text(c);
    out += heads.join('\t') + "\n";
    for (int i = 0; i < table_->topLevelItemCount(); ++i) {
        const QTreeWidgetItem* item = table_->topLevelItem(i);
        QStringList cells;
        for (int c = 0; c < table_->columnCount(); ++c)
            cells << item->text(c);
        out += cells.join('\t') + "\n";
    }
    return out;
}

bool ComparePane::exportCsv(const QString& path, QString* error) const {
    if (!result_) {
        if (error) *error = "Nothing to export: no comparison shown";
        return false;
    }
    std::ostringstream text;
    CompareCsvOptions options;
    options.sort = compareColumns(*result_).front();
    options.tree = options.bottomUp = true;
    writeCompareCsv(text, *result_, options);
    QFile file(path);
    const std::string bytes = text.str();
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        file.write(bytes.data(), qint64(bytes.size())) != qint64(bytes.size()) || !file.flush()) {
        if (error) *error = path + ": cannot write: " + file.errorString();
        return false;
    }
    return true;
}

void ComparePane::setFiles(const QString& a, const QString& b) {
    fileA_ = a;
    fileB_ = b;
    sideBySide_->setVisible(!a.isEmpty() && !b.isEmpty());
}

}  // namespace auxscope
