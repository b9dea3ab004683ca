// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/LaneBar.h"

#include <QComboBox>
#include <QCryptographicHash>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>

#include "gui/timeline/TimelineView.h"

namespace auxscope {

namespace {

QString canonical(const QString& path) {
    const QFileInfo info(path);
    const QString c = info.canonicalFilePath();
    return c.isEmpty() ? info.absoluteFilePath() : c;
}

}  // namespace

LaneBar::LaneBar(TimelineView* view, QWidget* parent) : LaneBar(view->state(), parent) {}

LaneBar::LaneBar(TimelineState* state, QWidget* parent) : QWidget(parent), state_(state) {
    setObjectName("laneBar");
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 2, 0, 2);
    filter_ = new QLineEdit(this);
    filter_->setObjectName("laneFilter");
    filter_->setPlaceholderText("Filter lanes: name or pid");
    filter_->setClearButtonEnabled(true);
    filter_->setToolTip(
        "Keeps the processes whose name or pid, or any of whose threads' name or tid, matches");
    filter_->setMinimumWidth(filter_->fontMetrics().horizontalAdvance(filter_->placeholderText()) + 48);
    filter_->setMaximumWidth(320);
    sort_ = new QComboBox(this);
    sort_->setObjectName("laneSort");
    using Sort = TimelineLaneState::Sort;
    for (Sort s : {Sort::CpuTime, Sort::Pid, Sort::Name})
        sort_->addItem("Sort by " + TimelineLaneState::sortName(s), int(s));
    sort_->setToolTip("The order of the processes");
    expand_ = new QPushButton("Expand all", this);
    expand_->setObjectName("laneExpandAll");
    collapse_ = new QPushButton("Collapse all", this);
    collapse_->setObjectName("laneCollapseAll");
    count_ = new QLabel(this);
    count_->setObjectName("laneCount");
    count_->setToolTip("Right-click a lane to pin it to the top; click a process's header to collapse it");
    layout->addWidget(filter_);
    layout->addWidget(sort_);
    layout->addWidget(expand_);
    layout->addWidget(collapse_);
    layout->addWidget(count_);
    layout->addStretch(1);

    connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
        if (!syncing_) state_->setLaneFilter(text);
    });
    connect(sort_, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (!syncing_ && index >= 0) state_->setLaneSort(Sort(sort_->itemData(index).toInt()));
    });
    connect(expand_, &QPushButton::clicked, state_, [this] { state_->setAllProcessesCollapsed(false); });
    connect(collapse_, &QPushButton::clicked, state_, [this] { state_->setAllProcessesCollapsed(true); });
    connect(state_, &TimelineState::laneStateChanged, this, [this] {
        syncFromState();
        save();
    });
    // New data (a window decoded, a reload): other counts, the same state.
    connect(state_, &TimelineState::dataChanged, this, &LaneBar::syncFromState);
    syncFromState();
}

QString LaneBar::settingsKey(const QString& path) {
    const QByteArray hash = QCryptographicHash::hash(canonical(path).toUtf8(), QCryptographicHash::Sha1);
    return "timelineLanes/" + QString::fromLatin1(hash.toHex());
}

void LaneBar::setFile(const QString& path) {
    file_ = path;
    TimelineLaneState state;
    if (!path.isEmpty()) {
        const QVariantMap saved = QSettings().value(settingsKey(path)).toMap();
        state = TimelineLaneState::fromVariant(saved.value("state").toMap());
    }
    if (state != state_->laneState())
        state_->setLaneState(state);  // saves it (laneStateChanged)
    else
        syncFromState();
}

void LaneBar::save() const {
    if (file_.isEmpty()) return;
    QVariantMap entry;
    entry["path"] = canonical(file_);  // for whoever reads the settings file
    entry["state"] = state_->laneState().toVariant();
    QSettings().setValue(settingsKey(file_), entry);
}

void LaneBar::syncFromState() {
    syncing_ = true;
    const TimelineLaneState& state = state_->laneState();
    if (filter_->text() != state.filter) filter_->setText(state.filter);
    const int index = sort_->findData(int(state.sort));
    if (index >= 0 && index != sort_->currentIndex()) sort_->setCurrentIndex(index);
    const int shown = state_->lanes().threadsShown, total = state_->lanes().threadsTotal;
    count_->setText(
        QString("%1 of %2 %3 shown").arg(shown).arg(total).arg(total == 1 ? "thread" : "threads"));
    QStringList why;
    if (!state.collapsed.empty()) why << QString("%1 collapsed").arg(state.collapsed.size());
    if (!state.filter.trimmed().isEmpty()) why << "filtered";
    if (!state.pinned.empty()) why << QString("%1 pinned").arg(state.pinned.size());
    if (!why.isEmpty()) count_->setText(count_->text() + "  (" + why.join(", ") + ")");
    syncing_ = false;
}

}  // namespace auxscope
