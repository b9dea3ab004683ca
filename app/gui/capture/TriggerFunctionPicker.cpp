// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/TriggerFunctionPicker.h"

#include <QApplication>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <map>
#include <mutex>
#include <thread>

namespace auxscope {

namespace {

constexpr const char* kErrorStyle = "color: #b00020;";

// What the last pickers read, per binary: a second "Pick…" on libc opens at once.
std::mutex gCacheMutex;
std::map<std::string, std::shared_ptr<const std::vector<TriggerFunction>>> gCache;

}  // namespace

TriggerFunctionPicker::TriggerFunctionPicker(const QString& binary, QWidget* parent) : QDialog(parent) {
    setObjectName("triggerFunctionPicker");
    setWindowTitle("Functions of " + binary);
    resize(640, 520);
    status_ = new QLabel("Reading the functions of " + binary + "…");
    status_->setObjectName("pickerStatus");
    status_->setWordWrap(true);
    filter_ = new QLineEdit;
    filter_->setObjectName("pickerFilter");
    filter_->setPlaceholderText("Filter: part of a name (demangled or not)");
    filter_->setClearButtonEnabled(true);
    model_ = new QStandardItemModel(this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(model_);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy_->setFilterRole(Qt::UserRole + 1);  // demangled and symbol names both
    list_ = new QListView;
    list_->setObjectName("pickerList");
    list_->setModel(proxy_);
    list_->setUniformItemSizes(true);  // fast with a hundred thousand names
    list_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(status_);
    layout->addWidget(filter_);
    layout->addWidget(list_, 1);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (!chosen().isEmpty()) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(list_, &QListView::activated, this, [this] {
        if (!chosen().isEmpty()) accept();
    });
    // Filtering as one types, a little after the last key (a big C++ binary has
    // a hundred thousand functions).
    filterTimer_ = new QTimer(this);
    filterTimer_->setSingleShot(true);
    filterTimer_->setInterval(60);
    connect(filter_, &QLineEdit::textChanged, filterTimer_, qOverload<>(&QTimer::start));
    connect(filterTimer_, &QTimer::timeout, this, [this] {
        proxy_->setFilterFixedString(filter_->text().trimmed());
        if (loaded_ && model_->rowCount())
            status_->setText(QString("%1 of %2 functions").arg(shownCount()).arg(functionCount()));
        if (proxy_->rowCount()) list_->setCurrentIndex(proxy_->index(0, 0));
    });

    const std::string path = binary.toStdString();
    {
        std::lock_guard lock(gCacheMutex);
        if (auto it = gCache.find(path); it != gCache.end()) {
            auto functions = it->second;
            QMetaObject::invokeMethod(
                this, [this, functions] { fill(functions); }, Qt::QueuedConnection);
            return;
        }
    }
    // The symbol table of a libc-sized binary is read (and demangled) on a worker.
    QPointer<TriggerFunctionPicker> self(this);
    std::thread([self, path] {
        auto listed = listTriggerFunctions(path);
        std::shared_ptr<const std::vector<TriggerFunction>> functions;
        QString error;
        if (listed) {
            auto v = std::make_shared<std::vector<TriggerFunction>>(std::move(*listed));
            std::sort(v->begin(), v->end(), [](const TriggerFunction& a, const TriggerFunction& b) {
                return a.demangled < b.demangled;
            });
            functions = v;
            std::lock_guard lock(gCacheMutex);
            gCache[path] = functions;
        } else {
            error = QString::fromStdString(listed.error().message);
        }
        QMetaObject::invokeMethod(
            qApp,
            [self, functions, error] {
                if (!self) return;
                if (functions) return self->fill(functions);
                self->status_->setText("Cannot list the functions: " + error);
                self->status_->setStyleSheet(kErrorStyle);
                self->loaded_ = true;
                emit self->functionsLoaded();
            },
            Qt::QueuedConnection);
    }).detach();
}

void TriggerFunctionPicker::fill(const std::shared_ptr<const std::vector<TriggerFunction>>& functions) {
    model_->clear();
    QList<QStandardItem*> items;
    items.reserve(qsizetype(functions->size()));
    for (const TriggerFunction& f : *functions) {
        const QString demangled = QString::fromStdString(f.demangled), name = QString::fromStdString(f.name);
        auto* item = new QStandardItem(demangled);
        item->setData(name, Qt::UserRole);
        item->setData(demangled == name ? name : demangled + "\n" + name, Qt::UserRole + 1);
        item->setToolTip(
            demangled == name
                ? QString("%1 (%2 bytes at file offset 0x%3)").arg(name).arg(f.size).arg(f.fileOffset, 0, 16)
                : QString("%1\nsymbol %2 (%3 bytes at file offset 0x%4)")
                      .arg(demangled, name)
                      .arg(f.size)
                      .arg(f.fileOffset, 0, 16));
        items.append(item);
    }
    model_->invisibleRootItem()->appendRows(items);
    proxy_->setFilterFixedString(filter_->text().trimmed());
    loaded_ = true;
    status_->setText(QString("%1 of %2 functions").arg(shownCount()).arg(functionCount()));
    if (proxy_->rowCount()) list_->setCurrentIndex(proxy_->index(0, 0));
    filter_->setFocus();
    emit functionsLoaded();
}

int TriggerFunctionPicker::functionCount() const {
    return model_->rowCount();
}

int TriggerFunctionPicker::shownCount() const {
    return proxy_->rowCount();
}

QString TriggerFunctionPicker::chosen() const {
    const QModelIndex i = list_->currentIndex();
    return i.isValid() ? i.data(Qt::UserRole).toString() : QString();
}

void TriggerFunctionPicker::clearCache() {
    std::lock_guard lock(gCacheMutex);
    gCache.clear();
}

}  // namespace auxscope
