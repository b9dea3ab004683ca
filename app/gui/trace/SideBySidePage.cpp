// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/SideBySidePage.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include <optional>

#include "gui/timeline/TimeFormat.h"
#include "gui/timeline/TimelineLink.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"

namespace auxscope {

namespace {

TimelineState* stateOf(TraceFilePage* page) {
    TimelineView* view = page ? page->timeline() : nullptr;
    return view && view->state()->data() ? view->state() : nullptr;
}

// The moment chosen on a timeline: its selected span's start, else its selected range's.
std::optional<uint64_t> chosenMoment(const TimelineState& s) {
    if (s.selection().valid() && !s.rangeChosenLast()) return s.selection().start;
    if (auto r = s.timeSelection()) return r->begin;
    if (s.selection().valid()) return s.selection().start;
    return std::nullopt;
}

QWidget* labelled(const QString& side, const QString& path, QWidget* page) {
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    auto* title = new QLabel("<b>" + side + "</b>: " + path.toHtmlEscaped());
    title->setObjectName("side" + side);
    title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(title);
    layout->addWidget(page, 1);
    return box;
}

}  // namespace

SideBySidePage::SideBySidePage(const QString& a, const QString& b, QWidget* parent) : QWidget(parent) {
    a_ = new TraceFilePage(a);
    a_->setObjectName("sideA");
    b_ = new TraceFilePage(b);
    b_->setObjectName("sideB");
    align_ = new QComboBox;
    align_->setObjectName("alignChoice");
    align_->addItem("their starts", int(Align::Starts));
    align_->addItem("the selected span or range of each", int(Align::Selections));
    align_->setToolTip(
        "Which moments of A and B line up: the recordings' starts, or a moment chosen on each (click a span "
        "or "
        "Shift+drag a range on both timelines)");
    inStep_ = new QCheckBox("Zoom and pan in step");
    inStep_->setObjectName("inStep");
    inStep_->setChecked(true);
    note_ = new QLabel("Opening both captures…");
    note_->setObjectName("alignNote");
    note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel("Line up at"));
    controls->addWidget(align_);
    controls->addWidget(inStep_);
    controls->addWidget(note_, 1);
    split_ = new QSplitter(Qt::Vertical);
    split_->setObjectName("sideBySideSplit");
    split_->setChildrenCollapsible(false);
    split_->addWidget(labelled("A", a, a_));
    split_->addWidget(labelled("B", b, b_));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(controls);
    layout->addWidget(split_, 1);

    for (TraceFilePage* page : {a_, b_})
        connect(page, &TraceFilePage::timelineOpened, this, [this] { relink(); });
    connect(align_, &QComboBox::currentIndexChanged, this, [this] { applyAlignment(); });
    connect(inStep_, &QCheckBox::toggled, this, [this](bool on) {
        if (link_) link_->setEnabled(on);
        applyAlignment();
    });
}

void SideBySidePage::setAlign(Align align) {
    align_->setCurrentIndex(align_->findData(int(align)));
}

void SideBySidePage::relink() {
    TimelineState* sa = stateOf(a_);
    TimelineState* sb = stateOf(b_);
    if (!sa || !sb) return;
    delete link_;
    link_ = new TimelineLink(sa, sb, this);
    link_->setEnabled(inStep_->isChecked());
    // A moment chosen on either side lines them up there again (when that is the alignment).
    for (TimelineState* s : {sa, sb}) {
        connect(s, &TimelineState::spanSelected, link_, [this] {
            if (align_->currentData().toInt() == int(Align::Selections)) applyAlignment();
        });
        connect(s, &TimelineState::timeSelectionChanged, link_, [this] {
            if (align_->currentData().toInt() == int(Align::Selections)) applyAlignment();
        });
    }
    applyAlignment();
    emit linked();
}

void SideBySidePage::applyAlignment() {
    TimelineState* sa = stateOf(a_);
    TimelineState* sb = stateOf(b_);
    if (!link_ || !sa || !sb) return;
    uint64_t anchorA = sa->bounds().begin, anchorB = sb->bounds().begin;
    QString text = "Lined up at their starts";
    if (align_->currentData().toInt() == int(Align::Selections)) {
        const auto ma = chosenMoment(*sa), mb = chosenMoment(*sb);
        if (ma && mb) {
            anchorA = *ma, anchorB = *mb;
            text = QString("Lined up at A +%1 and B +%2")
                       .arg(formatNs(double(*ma - sa->bounds().begin)),
                            formatNs(double(*mb - sb->bounds().begin)));
        } else {
            text = QString(
                       "Select a span or a range on %1 to line them up there; lined up at their starts "
                       "meanwhile")
                       .arg(!ma && !mb ? "both timelines"
                            : !ma      ? "A"
                                       : "B");
        }
    }
    if (!inStep_->isChecked()) text += " (each zoomed and panned alone)";
    note_->setText(text);
    link_->setAnchors(anchorA, anchorB);
}

}  // namespace auxscope
