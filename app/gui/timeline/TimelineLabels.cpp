// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineLabels.h"

#include <QFontMetrics>
#include <QPainter>
#include <QRect>
#include <QTransform>
#include <algorithm>

namespace auxscope {
namespace {

QStaticText prepared(const QString& text, const QFont& font) {
    QStaticText s(text);
    s.setTextFormat(Qt::PlainText);
    s.setPerformanceHint(QStaticText::AggressiveCaching);
    s.prepare(QTransform(), font);
    return s;
}

}  // namespace

void TimelineLabels::clear() {
    full_.clear();
    labels_.clear();
}

bool TimelineLabels::known(const QPainter& p, uint64_t key) {
    if (!haveFont_ || p.font() != font_) {
        clear();
        font_ = p.font();
        haveFont_ = true;
        ascentOffset_ = QFontMetrics(font_).height();
    }
    return full_.count(key) != 0;
}

void TimelineLabels::add(uint64_t key, const QString& text) {
    if (full_.size() + labels_.size() >= kMaxEntries) clear();
    ++laidOut_;
    Full f;
    f.text = text;
    f.width = QFontMetrics(font_).horizontalAdvance(text);
    f.whole = prepared(text, font_);
    full_.insert_or_assign(key, std::move(f));
}

const QStaticText* TimelineLabels::find(const QRect& room, uint64_t key) {
    const Full& f = full_.at(key);
    if (f.width <= room.width()) return &f.whole;
    const int bucket = std::min(room.width() / kBucket, 4095);
    if (bucket == 0) return nullptr;
    const uint64_t k = (key << 12) | uint64_t(bucket);
    auto l = labels_.find(k);
    if (l == labels_.end()) {
        if (full_.size() + labels_.size() >= kMaxEntries) labels_.clear();  // the whole texts stay
        ++laidOut_;
        const QString elided = QFontMetrics(font_).elidedText(f.text, Qt::ElideRight, bucket * kBucket);
        l = labels_.emplace(k, prepared(elided, font_)).first;
    }
    return &l->second;
}

void TimelineLabels::drawAt(QPainter& p, const QRect& room, const QStaticText& label) {
    if (log_) log_->push_back({room, label.text()});
    if (mode_ == Mode::ElideCached) {
        p.drawText(room, Qt::AlignVCenter | Qt::AlignLeft, label.text());
        return;
    }
    p.drawStaticText(QPointF(room.x(), room.y() + (room.height() - ascentOffset_) / 2.0), label);
}

bool TimelineLabels::drawDirect(QPainter& p, const QRect& room, const QString& text) {
    const QString elided = p.fontMetrics().elidedText(text, Qt::ElideRight, room.width());
    if (elided.isEmpty()) return false;
    if (log_) log_->push_back({room, elided});
    p.drawText(room, Qt::AlignVCenter | Qt::AlignLeft, elided);
    return true;
}

}  // namespace auxscope
