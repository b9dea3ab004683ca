// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The trigger editor's function picker: every function of a binary
// (listTriggerFunctions: its symbol table, demangled) in a list filtered as one
// types, by demangled or symbol name. The table is read on a worker thread (a
// libc or a big C++ library takes a moment), the dialog showing that it reads;
// what was read is kept per binary, so the next picker on it opens at once. The
// name it gives is the symbol's (mangled for C++), which resolveTrigger takes
// and which a spec can hold ('>' and '@' never occur in it).
#include <QDialog>
#include <QString>

#include <memory>
#include <vector>

#include "TriggerSpec.h"

class QLabel;
class QLineEdit;
class QListView;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTimer;

namespace auxscope {

// The function picker: a binary's functions, searchable.
class TriggerFunctionPicker : public QDialog {
    Q_OBJECT
public:
    TriggerFunctionPicker(const QString& binary, QWidget* parent = nullptr);
    // Loaded (the list is filled, or the error shown).
    bool loaded() const { return loaded_; }
    int functionCount() const;  // all of them
    int shownCount() const;     // those the filter lets through
    QLineEdit* filter() const { return filter_; }
    QListView* list() const { return list_; }
    QLabel* status() const { return status_; }
    // The name to put in the spec (the symbol's, mangled for C++), of the current row.
    QString chosen() const;
    // Every binary's functions read so far (by canonical path) are kept for the next picker.
    static void clearCache();

signals:
    void functionsLoaded();

private:
    void fill(const std::shared_ptr<const std::vector<TriggerFunction>>& functions);
    QLineEdit* filter_ = nullptr;
    QListView* list_ = nullptr;
    QLabel* status_ = nullptr;
    QStandardItemModel* model_ = nullptr;
    QSortFilterProxyModel* proxy_ = nullptr;
    QTimer* filterTimer_ = nullptr;
    bool loaded_ = false;
};

}  // namespace auxscope
