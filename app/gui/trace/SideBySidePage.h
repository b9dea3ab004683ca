// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Two captures side by side on the timeline (issue 30: before and after): the
// page of A above the page of B, each a whole trace page (its lanes, overview,
// and the answers under them), their timelines kept in step by a TimelineLink:
// zooming or panning either moves the other to the same width at the same
// distance from its anchor. They line up at their recordings' starts, or at a
// moment chosen on each (the selected span's start, else the selected range's):
// the same request in two runs, the same phase of two builds. A trace page
// remade (Symbols & binaries changed) is linked again.
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QSplitter;

namespace auxscope {

class TimelineLink;
class TraceFilePage;

class SideBySidePage : public QWidget {
    Q_OBJECT
public:
    enum class Align { Starts, Selections };
    SideBySidePage(const QString& a, const QString& b, QWidget* parent = nullptr);

    TraceFilePage* pageA() const { return a_; }
    TraceFilePage* pageB() const { return b_; }
    // Null until both timelines have opened.
    TimelineLink* link() const { return link_; }
    QComboBox* alignChoice() const { return align_; }
    QCheckBox* inStepBox() const { return inStep_; }
    // What the alignment is ("Lined up at their starts", or why not at the selections).
    QLabel* note() const { return note_; }
    void setAlign(Align align);

signals:
    // Both timelines are open and linked (again, after a page remade its timeline).
    void linked();

private:
    void relink();
    void applyAlignment();

    TraceFilePage* a_ = nullptr;
    TraceFilePage* b_ = nullptr;
    QSplitter* split_ = nullptr;
    QComboBox* align_ = nullptr;
    QCheckBox* inStep_ = nullptr;
    QLabel* note_ = nullptr;
    TimelineLink* link_ = nullptr;
};

}  // namespace auxscope
