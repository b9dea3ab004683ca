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

void CallTreeModel::setTree(CallTree tree, std::shared_ptr<const FunctionTable> functions) {
    beginResetModel();
    tree_ = std::move(tree);
    functions_ = std::move(functions);
    const size_t n = tree_.nodes.size();
    children_.assign(n, {});
    row_.assign(n, 0);
    for (uint32_t k = 1; k < n; ++k)
        if (tree_.nodes[k].parent < n) children_[tree_.nodes[k].parent].push_back(k);
    for (auto& c : children_) {
        std::stable_sort(c.begin(), c.end(), [&](uint32_t a, uint32_t b) {
            return tree_.nodes[a].cost.totalTime > tree_.nodes[b].cost.totalTime;
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
        column >= ColumnCount)
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
    return ColumnCount;
}

QVariant CallTreeModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid()) return {};
    const uint32_t n = nodeOf(index);
    const CallTree::Node& node = tree_.nodes[n];
    const RangeCost& c = node.cost;
    const double rootTime = double(std::max<uint64_t>(tree_.nodes[0].cost.totalTime, 1));
    if (role == Qt::UserRole) return QVariant::fromValue<uint>(n);
    if (role == Qt::UserRole + 1 || role == Qt::DisplayRole) {
        const bool raw = role == Qt::UserRole + 1;
        switch (index.column()) {
            case Function:
                return functionName(node.function);
            case TotalTime:
                return raw ? QVariant::fromValue<qulonglong>(c.totalTime)
                           : QVariant(QString("%1  %2%")
                                          .arg(formatNs(double(c.totalTime)))
                                          .arg(100.0 * double(c.totalTime) / rootTime, 0, 'f', 1));
            case SelfTime:
                return raw ? QVariant::fromValue<qulonglong>(c.selfTime)
                           : QVariant(formatNs(double(c.selfTime)));
            case Calls:
                return raw ? QVariant::fromValue<qulonglong>(c.calls) : QVariant(formatCount(c.calls));
            case TotalInsns:
                return raw ? QVariant::fromValue<qulonglong>(c.totalInsns)
                           : QVariant(formatCount(c.totalInsns));
            case SelfInsns:
                return raw ? QVariant::fromValue<qulonglong>(c.selfInsns)
                           : QVariant(formatCount(c.selfInsns));
            case Image:
                if (functions_ && node.function < functions_->size())
                    return QString::fromStdString((*functions_)[node.function].file);
                return QString();
        }
    }
    if (role == Qt::TextAlignmentRole && index.column() != Function && index.column() != Image)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ToolTipRole && index.column() == Function) return functionName(node.function);
    return {};
}

QVariant CallTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    static const char* names[] = {"Function",    "Total time", "Self time", "Calls",
                                  "Total insns", "Self insns", "Image"};
    return section >= 0 && section < ColumnCount ? QString(names[section]) : QString();
}

QString CallTreeModel::toText(size_t maxRows) const {
    QString out = "function\ttotal_ns\tself_ns\tcalls\ttotal_insns\tself_insns\n";
    size_t rows = 0;
    std::vector<std::pair<uint32_t, int>> stack;
    for (auto it = children_[0].rbegin(); it != children_[0].rend(); ++it)
        stack.push_back({*it, 0});
    while (!stack.empty() && rows < maxRows) {
        auto [n, depth] = stack.back();
        stack.pop_back();
        const RangeCost& c = tree_.nodes[n].cost;
        out += QString(depth * 2, ' ') + functionName(tree_.nodes[n].function) +
               QString("\t%1\t%2\t%3\t%4\t%5\n")
                   .arg(c.totalTime)
                   .arg(c.selfTime)
                   .arg(c.calls)
                   .arg(c.totalInsns)
                   .arg(c.selfInsns);
        ++rows;
        for (auto it = children_[n].rbegin(); it != children_[n].rend(); ++it)
            stack.push_back({*it, depth + 1});
    }
    if (!stack.empty()) out += QString("… (%1 rows shown)\n").arg(rows);
    return out;
}

}  // namespace auxscope
