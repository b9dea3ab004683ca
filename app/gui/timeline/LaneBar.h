// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A bar above a timeline for managing its lanes: a filter (a process or
// thread name, or a pid / tid), the processes' order (CPU time, pid, name),
// Expand all / Collapse all, and how many threads are shown of how many. It
// edits its TimelineState's lane state (TimelineLaneState: collapsed
// processes, pinned lanes, filter, order), which it keeps in QSettings per
// file, keyed by the file's canonical path: setFile() restores what was chosen
// for that file and every change saves it, so the lanes survive zooming,
// reloading and reopening the file.
#include <QPointer>
#include <QString>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace auxscope {

class TimelineState;
class TimelineView;

class LaneBar : public QWidget {
    Q_OBJECT
public:
    explicit LaneBar(TimelineState* state, QWidget* parent = nullptr);
    // The bar of `view`'s state.
    explicit LaneBar(TimelineView* view, QWidget* parent = nullptr);

    // The file whose lane state this is: restores it (none saved: the default
    // state) and saves every later change under it. Empty: nothing is saved.
    void setFile(const QString& path);
    const QString& file() const { return file_; }
    // The QSettings key of a file's lane state ("timelineLanes/<sha1 of its canonical path>").
    static QString settingsKey(const QString& path);

    QLineEdit* filterEdit() const { return filter_; }
    QComboBox* sortBox() const { return sort_; }
    QLabel* countLabel() const { return count_; }

private:
    void syncFromState();  // the widgets show the lane state and counts
    void save() const;

    QPointer<TimelineState> state_;
    QString file_;
    QLineEdit* filter_;
    QComboBox* sort_;
    QPushButton* expand_;
    QPushButton* collapse_;
    QLabel* count_;
    bool syncing_ = false;
};

}  // namespace auxscope
