// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TimelineTour.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSettings>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/timeline/TimelineView.h"

namespace auxscope {
namespace {

const char* kOffKey = "tour/timelineKeysOff";

}  // namespace

bool TimelineTour::wanted() {
    return !QSettings().value(kOffKey, false).toBool();
}

void TimelineTour::setWanted(bool on) {
    QSettings().setValue(kOffKey, !on);
}

TimelineTour::TimelineTour(QWidget* parent) : QFrame(parent) {
    setObjectName("timelineTour");
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    QPalette pal = palette();
    pal.setColor(QPalette::Window, QColor(0xe3, 0xf0, 0xff));
    pal.setColor(QPalette::WindowText, Qt::black);
    setPalette(pal);
    auto* title = new QLabel(
        "<b>A tour of the timeline</b>: each thread's calls, decoded from the trace, one row per call depth; "
        "click a span for its function and code. Its keys (<b>?</b> on the timeline, or Help &gt; Timeline "
        "keys, shows them again):");
    title->setObjectName("timelineTourTitle");
    title->setWordWrap(true);
    close_ = new QToolButton;
    close_->setObjectName("timelineTourClose");
    close_->setText(QString::fromUtf8("\u2715"));
    close_->setToolTip("Close the tour");
    close_->setAutoRaise(true);
    dontShow_ = new QCheckBox("Don't show again");
    dontShow_->setObjectName("timelineTourDontShow");
    auto* top = new QHBoxLayout;
    top->addWidget(title, 1);
    top->addWidget(dontShow_);
    top->addWidget(close_);
    // Every key, three columns of (key, what it does).
    auto* keys = new QGridLayout;
    keys->setHorizontalSpacing(12);
    keys->setVerticalSpacing(1);
    const QStringList lines = TimelineView::keysHelp().split('\n');
    const int rows = int((lines.size() + 2) / 3);
    for (int i = 0; i < lines.size(); ++i) {
        const QStringList kv = lines[i].split('\t');
        auto* key = new QLabel("<b>" + kv[0].toHtmlEscaped() + "</b>");
        auto* what = new QLabel(kv.value(1));
        const int row = i % rows, col = (i / rows) * 2;
        keys->addWidget(key, row, col, Qt::AlignRight);
        keys->addWidget(what, row, col + 1);
    }
    for (int c = 1; c < 6; c += 2)
        keys->setColumnStretch(c, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 4, 4, 6);
    layout->setSpacing(4);
    layout->addLayout(top);
    layout->addLayout(keys);
    connect(dontShow_, &QCheckBox::toggled, this, [](bool off) { setWanted(!off); });
    connect(close_, &QToolButton::clicked, this, [this] {
        hide();
        emit closed();
        deleteLater();
    });
}

}  // namespace auxscope
