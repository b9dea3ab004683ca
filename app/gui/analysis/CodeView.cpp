// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/analysis/CodeView.h"

#include <QFile>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTextStream>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "gui/analysis/CallTreeModel.h"
#include "gui/common/WindowMemory.h"

namespace auxscope {
namespace {

// Executed rows: from a pale to a strong orange by log(count) / log(max).
QColor heat(uint64_t count, uint64_t max) {
    if (!count || !max) return {};
    const double f = max > 1 ? std::log1p(double(count)) / std::log1p(double(max)) : 1.0;
    return QColor(255, int(236 - 110 * f), int(200 - 160 * f));
}

}  // namespace

CodeView::CodeView(QWidget* parent) : QWidget(parent) {
    header_ = new QLabel(
        "Select a span and press “Show code”, or double-click a function in the selection's tables.");
    header_->setObjectName("codeHeader");
    header_->setWordWrap(true);
    header_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    insns_ = new QTreeWidget;
    insns_->setObjectName("codeInstructions");
    insns_->setRootIsDecorated(false);
    insns_->setUniformRowHeights(true);
    insns_->setHeaderLabels({"Address", "Count", "Bytes", "Instruction", "Source"});
    insns_->setFont(mono);
    insns_->setColumnWidth(0, 140);
    insns_->setColumnWidth(1, 70);
    insns_->setColumnWidth(2, 150);
    insns_->setColumnWidth(3, 290);
    source_ = new QTreeWidget;
    source_->setObjectName("codeSource");
    source_->setRootIsDecorated(false);
    source_->setUniformRowHeights(true);
    source_->setHeaderLabels({"Line", "Count", "Source"});
    source_->setFont(mono);
    source_->setColumnWidth(0, 60);
    source_->setColumnWidth(1, 90);
    source_->setVisible(false);
    split_ = new QSplitter(Qt::Horizontal);
    split_->addWidget(insns_);
    split_->addWidget(source_);
    split_->setStretchFactor(0, 3);
    split_->setStretchFactor(1, 2);
    window_memory::rememberSplitter(split_, "codeViewSplit");
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(header_);
    layout->addWidget(split_, 1);
    // A source line selected: its instructions selected too.
    connect(source_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
        const int line = item->data(0, Qt::UserRole).toInt();
        if (!code_) return;
        insns_->clearSelection();
        QTreeWidgetItem* first = nullptr;
        for (int i = 0; i < insns_->topLevelItemCount(); ++i) {
            const auto& a = code_->instructions[size_t(i)];
            if (a.line == line && a.file == code_->sourceFile) {
                insns_->topLevelItem(i)->setSelected(true);
                if (!first) first = insns_->topLevelItem(i);
            }
        }
        if (first) insns_->scrollToItem(first);
    });
}

void CodeView::showMessage(const QString& text, bool error) {
    code_.reset();
    insns_->clear();
    source_->clear();
    source_->setVisible(false);
    header_->setText(text);
    header_->setStyleSheet(error ? "color: #b00020;" : "");
}

void CodeView::showCode(const AnnotatedCode& code, const QString& context, const QString& sampledEvent) {
    code_ = code;
    countsSamples_ = !sampledEvent.isEmpty();
    const QString count = countsSamples_ ? "Samples" : "Count";
    insns_->setHeaderLabels({"Address", count, "Bytes", "Instruction", "Source"});
    source_->setHeaderLabels({"Line", count, "Source"});
    header_->setStyleSheet("");
    insns_->clear();
    source_->clear();
    uint64_t max = 0;
    for (const auto& a : code.instructions)
        max = std::max(max, a.count);
    QList<QTreeWidgetItem*> rows;
    QTreeWidgetItem* hottest = nullptr;
    for (const auto& a : code.instructions) {
        auto* item = new QTreeWidgetItem;
        item->setText(0, QString("0x%1").arg(a.address, 0, 16));
        item->setText(1, a.count ? formatCount(a.count) : QString());
        item->setData(1, Qt::UserRole, QVariant::fromValue<qulonglong>(a.count));
        item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
        item->setText(2, QString::fromStdString(a.bytes));
        item->setText(3, QString::fromStdString(a.text));
        if (a.line)
            item->setText(
                4, QString("%1:%2").arg(QFileInfo(QString::fromStdString(a.file)).fileName()).arg(a.line));
        item->setToolTip(4, QString::fromStdString(a.file));
        if (a.count) {
            const QColor c = heat(a.count, max);
            for (int col = 0; col < 5; ++col)
                item->setBackground(col, c);
            if (a.count == max && !hottest) hottest = item;
        } else {
            item->setForeground(3, QColor(140, 140, 140));
        }
        rows << item;
    }
    insns_->addTopLevelItems(rows);
    if (hottest) insns_->scrollToItem(hottest, QAbstractItemView::PositionAtCenter);
    QString text = QString("<b>%1</b> in %2 (%3, pid %4) · %5 · ")
                       .arg(QString::fromStdString(code.name).toHtmlEscaped())
                       .arg(QString::fromStdString(code.image).toHtmlEscaped())
                       .arg(QString::fromStdString(code.arch))
                       .arg(code.pid)
                       .arg(context.toHtmlEscaped());
    text += countsSamples_
                ? QString(
                      "%1 samples of %2 whose leaf is here (%3 of %4 instructions sampled): counts "
                      "are samples, not executions")
                      .arg(formatCount(code.executed))
                      .arg(sampledEvent.toHtmlEscaped())
                      .arg(code.executedInstructions)
                      .arg(code.instructions.size())
                : QString(
                      "%1 instructions executed (%2 of %3 distinct instructions), counts from "
                      "the decoded flow")
                      .arg(formatCount(code.executed))
                      .arg(code.executedInstructions)
                      .arg(code.instructions.size());
    for (const std::string& note : code.notes)
        text += "<br>" + QString::fromStdString(note).toHtmlEscaped();
    // The source file, when it can be read: the lines around the function's, with counts.
    bool shown = false;
    if (!code.sourceFile.empty() && !code.lineCounts.empty()) {
        QFile file(QString::fromStdString(code.sourceFile));
        if (file.open(QIODevice::ReadOnly | QIODevice::Text)) {
            QTextStream in(&file);
            const int first = std::max(1, code.lineCounts.begin()->first - 3);
            const int last = code.lineCounts.rbegin()->first + 3;
            uint64_t lineMax = 0;
            for (const auto& [line, n] : code.lineCounts)
                lineMax = std::max(lineMax, n);
            QList<QTreeWidgetItem*> lines;
            for (int no = 1; !in.atEnd() && no <= last; ++no) {
                const QString t = in.readLine();
                if (no < first) continue;
                auto* item = new QTreeWidgetItem({QString::number(no), QString(), t});
                item->setData(0, Qt::UserRole, no);
                if (auto it = code.lineCounts.find(no); it != code.lineCounts.end()) {
                    item->setText(1, formatCount(it->second));
                    item->setData(1, Qt::UserRole, QVariant::fromValue<qulonglong>(it->second));
                    if (it->second)
                        for (int col = 0; col < 3; ++col)
                            item->setBackground(col, heat(it->second, lineMax));
                }
                lines << item;
            }
            source_->addTopLevelItems(lines);
            shown = !lines.isEmpty();
            text += QString("<br>Source: %1").arg(QString::fromStdString(code.sourceFile).toHtmlEscaped());
        } else {
            text += QString("<br>Source %1 cannot be read here: lines are shown beside the instructions")
                        .arg(QString::fromStdString(code.sourceFile).toHtmlEscaped());
        }
    }
    source_->setVisible(shown);
    header_->setText(text);
}

}  // namespace auxscope
