// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A short tour of the timeline's keys (TimelineView::keysHelp(), the same text
// as Help > Timeline keys and the view's `?`), shown as a banner at the top of a
// trace page opened as an example (issue 33): not a dialog, so nothing waits on
// it. It closes with its ✕; "Don't show again" is remembered (QSettings
// "tour/timelineKeysOff") as soon as it is ticked.
#include <QFrame>

class QCheckBox;
class QToolButton;

namespace auxscope {

class TimelineTour : public QFrame {
    Q_OBJECT
public:
    explicit TimelineTour(QWidget* parent = nullptr);
    // Whether the tour is still wanted (the person never ticked "Don't show again").
    static bool wanted();
    static void setWanted(bool on);
    QCheckBox* dontShowAgain() const { return dontShow_; }
    QToolButton* closeButton() const { return close_; }

signals:
    void closed();

private:
    QCheckBox* dontShow_ = nullptr;
    QToolButton* close_ = nullptr;
};

}  // namespace auxscope
