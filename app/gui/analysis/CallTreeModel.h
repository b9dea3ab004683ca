// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CallTree (spans/RangeStats.h) as a Qt item model: the selection's call tree
// (top-down) and its bottom-up tree are shown through it, so the rows are
// exactly RangeStats' nodes, nothing aggregated again. Each node's children are
// listed by total time, largest first. Columns: function, total time, self
// time, calls, total instructions, self instructions, the image the function
// lives in. Item data under Qt::UserRole is the node index; under
// Qt::UserRole + 1 the numeric value of a column (for sorting and tests).
// A tree of samples or off-CPU time (setSource) has that source's columns
// instead (CostColumns.h: function, total and self period, total and self
// samples, image) and lists children by total period, as auxscope report does.
#include <QAbstractItemModel>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

#include "gui/analysis/CostColumns.h"
#include "gui/timeline/TimeFormat.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"

namespace auxscope {

class CallTreeModel : public QAbstractItemModel {
    Q_OBJECT
public:
    // The columns of a tree of decoded spans (the default source).
    enum Column { Function, TotalTime, SelfTime, Calls, TotalInsns, SelfInsns, Image, ColumnCount };
    explicit CallTreeModel(QObject* parent = nullptr);

    // Shows `tree` (copied), names from `functions` (kept alive).
    void setTree(CallTree tree, std::shared_ptr<const FunctionTable> functions);
    // What the costs count (the next setTree shows its columns); default: decoded spans.
    void setSource(const RangeSource& source);
    const RangeSource& source() const { return source_; }
    // The column showing `cost` (-1: the source has none), and the image's column.
    int columnOf(CostColumn cost) const;
    int imageColumn() const { return int(columns_.size()) + 1; }
    void clear();
    const CallTree& tree() const { return tree_; }
    uint32_t nodeOf(const QModelIndex& index) const;
    QModelIndex indexOf(uint32_t node, int column = 0) const;
    QString functionName(uint32_t function) const;
    // The tree as indented text (what "Copy" puts on the clipboard), up to `maxRows` rows.
    QString toText(size_t maxRows = 20000) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::optional<CostColumn> costAt(int column) const;

    RangeSource source_;
    std::vector<CostColumn> columns_ = costColumns(RangeSource{});
    CallTree tree_;
    std::shared_ptr<const FunctionTable> functions_;
    std::vector<std::vector<uint32_t>> children_;  // per node, by total time descending
    std::vector<uint32_t> row_;                    // per node, its row under its parent
};

}  // namespace auxscope
