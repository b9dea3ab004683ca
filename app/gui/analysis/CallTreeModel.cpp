// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/CallTreeModel.h"

#include <QLocale>

#include <algorithm>
#include <cmath>

namespace auxscope {

CallTreeModel::CallTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void CallTreeModel::clear() {
    setTree(CallTree{}, functions_);
}

void CallTreeModel::setSource(const RangeSource& source) {
    source_ = source;
}

int CallTreeModel::columnOf(CostColumn cost) const {
    for (size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i] == cost) return int(i) + 1;
    return -1;
}

std::optional<CostColumn> CallTreeModel::costAt(int column) const {
    if (column >= 1 && size_t(column) <= columns_.size()) return columns_[size_t(column - 1)];
    return std::nullopt;
}

void CallTreeModel::setTree(CallTree tree, std::shared_ptr<const FunctionTable> functions) {
    beginResetModel();
    columns_ = costColumns(source_);
    tree_ = std::move(tree);
    functions_ = std::move(functions);
    const size_t n = tree_.nodes.size();
    children_.assign(n, {});
    row_.assign(n, 0);
    for (uint32_t k = 1; k < n; ++k)
        if (tree_.nodes[k].parent < n) children_[tree_.nodes[k].parent].push_back(k);
    // Children by total time (spans), or by total period (samples, as auxscope report lists them).
    const CostColumn key = isSampled(source_) ? CostColumn::TotalPeriod : CostColumn::TotalTime;
    for (auto& c : children_) {
        std::stable_sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
            return costValue(key, tree_.nodes[a].cost) > costValue(key, tree_.nodes[b].cost);
        });
        for (size_t r = 0; r < c.size(); ++r)
            row_[c[r]] = uint32_t(r);
    }
    endResetModel();
}

uint32_t CallTreeModel::nodeOf(const QModelIndex& index) const {
    return index.isValid() ? uint32_t(index.internalId()) : 0;
}

QModelIndex CallTreeModel::indexOf(uint32_t node, int column) const {
    if (node == 0 || node >= tree_.nodes.size()) return {};
    return createIndex(int(row_[node]), column, quintptr(node));
}

QString CallTreeModel::functionName(uint32_t function) const {
    if (functions_ && function < functions_->size())
        return QString::fromStdString((*functions_)[function].name);
    return QString("[function %1]").arg(function);
}

QModelIndex CallTreeModel::index(int row, int column, const QModelIndex& parent) const {
    const uint32_t p = nodeOf(parent);
    if (p >= children_.size() || row < 0 || size_t(row) >= children_[p].size() || column < 0 ||
        column >= columnCount())
        return {};
    return createIndex(row, column, quintptr(children_[p][size_t(row)]));
}

QModelIndex CallTreeModel::parent(const QModelIndex& child) const {
    if (!child.isValid()) return {};
    const uint32_t p = tree_.nodes[nodeOf(child)].parent;
    return p == 0 || p == CallTree::kNone ? QModelIndex() : indexOf(p);
}

int CallTreeModel::rowCount(const QModelIndex& parent) const {
    if (parent.isValid() && parent.column() != 0) return 0;
    const uint32_t p = nodeOf(parent);
    return p < children_.size() ? int(children_[p].size()) : 0;
}

int CallTreeModel::columnCount(const QModelIndex&) const {
    return int(columns_.size()) + 2;  // the function, the costs, the image
}

QVariant CallTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const uint32_t n = nodeOf(index);
    const CallTree::Node& node = tree_.nodes[n];
    const RangeCost& c = node.cost;
    const int column = index.column();
    const std::optional<CostColumn> cost = costAt(column);
    if (role == Qt::UserRole) return QVariant::fromValue<uint>(n);
    if (role == Qt::UserRole + 1 || role == Qt::DisplayRole) {
        if (column == Function) return functionName(node.function);
        if (column == imageColumn()) {
            if (functions_ && node.function < functions_->size())
                return QString::fromStdString((*functions_)[node.function].file);
            return QString();
        }
        if (!cost) return {};
        if (role == Qt::UserRole + 1) return QVariant::fromValue<qulonglong>(costValue(*cost, c));
        // The first column (total time, or total period) with its share of the whole.
        const bool share = column == 1;
        return costText(*cost, c, source_, share ? int64_t(costValue(*cost, tree_.nodes[0].cost)) : -1);
    }
    if (role == Qt::TextAlignmentRole && cost) return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && column == Function) return functionName(node.function);
    return {};
}

QVariant CallTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    if (section == Function) return QString("Function");
    if (section == imageColumn()) return QString("Image");
    if (auto cost = costAt(section)) return costLabel(*cost, source_);
    return QString();
}

QString CallTreeModel::toText(size_t maxRows) const {
    QString out = "function";
    for (CostColumn column : columns_)
        out += "\t" + costKey(column, source_);
    out += "\n";
    size_t rows = 0;
    std::vector<std::pair<uint32_t, int>> stack;
    for (auto it = children_[0].rbegin(); it != children_[0].rend(); ++it)
        stack.push_back({*it, 0});
    while (!stack.empty() && rows < maxRows) {
        auto [n, depth] = stack.back();
        stack.pop_back();
        const RangeCost& c = tree_.nodes[n].cost;
        out += QString(depth * 2, ' ') + functionName(tree_.nodes[n].function);
        for (CostColumn column : columns_)
            out += QString("\t%1").arg(costValue(column, c));
        out += "\n";
        ++rows;
        for (auto it = children_[n].rbegin(); it != children_[n].rend(); ++it)
            stack.push_back({*it, depth + 1});
    }
    if (!stack.empty()) out += QString("… (%1 rows shown)\n").arg(rows);
    return out;
}

}  // namespace auxscope
