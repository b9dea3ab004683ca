// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelineLabels.h"

#include <QFontMetrics>
#include <QPainter>
#include <QRect>
#include <QTransform>

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

void TimelineLabels::draw(QPainter& p, const QRect& room, uint64_t key,
                          const std::function<QString()>& text) {
    if (room.width() <= 0) return;
    if (!haveFont_ || p.font() != font_) {
        clear();
        font_ = p.font();
        haveFont_ = true;
        ascentOffset_ = QFontMetrics(font_).height();
    }
    if (full_.size() + labels_.size() >= kMaxEntries) clear();
    auto it = full_.find(key);
    if (it == full_.end()) {
        Full f;
        f.text = text();
        f.width = QFontMetrics(font_).horizontalAdvance(f.text);
        f.whole = prepared(f.text, font_);
        it = full_.emplace(key, std::move(f)).first;
    }
    const QPointF at(room.x(), room.y() + (room.height() - ascentOffset_) / 2.0);
    const Full& f = it->second;
    if (f.width <= room.width()) {
        p.drawStaticText(at, f.whole);
        return;
    }
    const int bucket = room.width() / kBucket;
    if (bucket == 0) return;
    const uint64_t k = (key << 12) | uint64_t(std::min(bucket, 4095));
    auto l = labels_.find(k);
    if (l == labels_.end()) {
        const QString elided =
            QFontMetrics(font_).elidedText(f.text, Qt::ElideRight, std::min(bucket, 4095) * kBucket);
        l = labels_.emplace(k, prepared(elided, font_)).first;
    }
    p.drawStaticText(at, l->second);
}

}  // namespace auxscope
