// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Before and after: two sides (two captures, or two ranges of one) compared by
// spans/RangeCompare, as `auxscope compare A B` prints them. The "Top functions"
// tab lists every matched function with, per column, A, B, the delta and the
// delta in % (sortable by any; a function one side lacks is marked "A only" or
// "B only"); the "Flame graph" tab is the differential flame graph
// (FlameGraphWidget::setDiff); "Call tree" and "Bottom-up" the merged trees,
// each stack with both sides (the bottom-up one made when first shown). Above
// them: how functions are matched (name and binary, or name only) and the
// normalisation (absolute, per run, per call of a function named), each
// recomputing the comparison. Export CSV… writes the table and both trees as
// `auxscope compare --format csv` does. Copy puts both sides' top functions on the
// clipboard.
#include <QWidget>

#include <memory>
#include <optional>

#include "gui/analysis/CompareLoader.h"
#include "spans/RangeCompare.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTabWidget;
class QTreeWidget;
class QTreeWidgetItem;

namespace auxscope {

class FlameGraphWidget;

class ComparePane : public QWidget {
    Q_OBJECT
public:
    explicit ComparePane(QWidget* parent = nullptr);

    // The two sides; compares them (what the controls say).
    void setSides(CompareSideData a, CompareSideData b);
    // Shown instead of a comparison (a side that could not be loaded).
    void showError(const QString& message);
    // Compares again with these options (and sets the controls to them).
    void setOptions(const CompareOptions& options);
    CompareOptions options() const;

    // The comparison shown (null: none, or an error).
    const CompareResult* result() const { return result_ ? &*result_ : nullptr; }
    // The metrics the table's columns show, in order (4 columns each after Function, Binary, Side).
    const std::vector<CompareMetric>& metrics() const { return metrics_; }
    static constexpr int kFirstMetricColumn = 3;

    QTreeWidget* table() const { return table_; }
    // The merged call tree (top-down) and bottom-up tree, each stack with both
    // sides' columns as the table's (children filled when expanded, the larger
    // of the two sides' totals first); the item's Qt::UserRole in column 0 is its node.
    QTreeWidget* callTree() const { return callTree_; }
    QTreeWidget* bottomUp() const { return bottomUp_; }
    // The merged bottom-up tree shown (made when its tab is first shown; null before).
    const CompareTree* bottomUpTree() const { return bottomUpTree_ ? &*bottomUpTree_ : nullptr; }
    FlameGraphWidget* flameGraph() const { return flame_; }
    QComboBox* matchChoice() const { return match_; }
    QComboBox* normalizeChoice() const { return normalize_; }
    QLineEdit* perCallFunction() const { return perCall_; }
    QComboBox* flameMetric() const { return flameMetric_; }
    QTabWidget* tabs() const { return tabs_; }
    QLabel* summary() const { return summary_; }
    QPushButton* copyButton() const { return copy_; }
    // Two files compared (not two ranges of one): shows "Timelines side by side",
    // which asks for them (sideBySideRequested).
    void setFiles(const QString& a, const QString& b);
    QPushButton* sideBySideButton() const { return sideBySide_; }
    // Export CSV…: the comparison shown as `auxscope compare --format csv --tree
    // --bottom-up --limit 0` writes it with the same options (export/CompareCsv).
    bool exportCsv(const QString& path, QString* error = nullptr) const;
    QPushButton* exportCsvButton() const { return exportCsv_; }
    // Both sides' names, the options and the table as tab-separated text (what Copy copies).
    QString text() const;

signals:
    void sideBySideRequested(const QString& a, const QString& b);

private:
    void recompute();
    void fillTable();
    void fillFlame();
    QStringList headers(const QString& first) const;
    // Sets `item`'s metric columns from a and b (and its number for sorting).
    void setCosts(QTreeWidgetItem* item, const RangeCost& a, const RangeCost& b) const;
    void fillTree(QTreeWidget* view, const CompareTree& tree);
    void addChildren(QTreeWidget* view, const CompareTree& tree, QTreeWidgetItem* parent, uint32_t node);

    std::optional<CompareSideData> a_, b_;
    std::optional<CompareResult> result_;
    std::vector<CompareMetric> metrics_;
    bool sorted_ = false;
    bool namesDone_ = false;  // the per-call field offers the sides' functions  // the table was filled (its
                              // sort column is the person's)
    QLabel* summary_;
    QComboBox* match_;
    QComboBox* normalize_;
    QLineEdit* perCall_;
    QComboBox* flameMetric_;
    QPushButton* copy_;
    QPushButton* sideBySide_ = nullptr;
    QPushButton* exportCsv_ = nullptr;
    QString fileA_, fileB_;
    QTabWidget* tabs_;
    QTreeWidget* table_;
    QTreeWidget* callTree_;
    QTreeWidget* bottomUp_;
    std::optional<CompareTree> bottomUpTree_;
    FlameGraphWidget* flame_;
};

}  // namespace auxscope
