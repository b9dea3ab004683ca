// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFont>
#include <QStaticText>
#include <QString>

#include <cstdint>
#include <unordered_map>

class QPainter;
class QRect;

namespace auxscope {

// The names drawn inside spans and CPU slices, laid out once and drawn many times.
// Laying text out is what a label costs (eliding it measures it, drawing it into a
// rectangle lays it out again): a deep stack puts over a thousand labels on one
// frame. Each label is kept as a QStaticText, per text (a key the caller gives:
// a function, a gap reason, a thread) and per width bucket (kBucket pixels: a label
// is elided to the bucket's width, never wider than its room), so a frame draws
// prepared glyph runs. A text that fits whole has one entry for every width. The
// cache holds at most kMaxEntries and starts again when full or when the font
// changes.
class TimelineLabels {
public:
    static constexpr int kBucket = 8;
    static constexpr size_t kMaxEntries = 1 << 15;

    // Keys for draw(): functions, gap reasons and threads never share one.
    static uint64_t functionKey(uint32_t function) { return function; }
    static uint64_t gapKey(int reason) { return (uint64_t(1) << 32) | uint32_t(reason); }
    static uint64_t threadKey(int32_t tid) { return (uint64_t(2) << 32) | uint32_t(tid); }

    // Draws the text of `key` (made by `text` the first time) left-aligned and
    // vertically centred in `room`, elided on the right to fit its width, in the
    // painter's font and pen.
    // `text` runs only when the key is new: a frame of cached labels makes no strings.
    template <typename MakeText>
    void draw(QPainter& p, const QRect& room, uint64_t key, const MakeText& text) {
        if (room.width() <= 0) return;
        if (!known(p, key)) add(key, text());
        if (const QStaticText* label = find(room, key)) drawAt(p, room, *label);
    }
    void clear();
    size_t size() const { return labels_.size() + full_.size(); }

private:
    // Whether `key`'s text is held (in the painter's font: a new font starts the cache again).
    bool known(const QPainter& p, uint64_t key);
    void add(uint64_t key, const QString& text);
    // The prepared label of a known `key` for `room` (elided to its bucket, made on first use);
    // nullptr when the room is too narrow for any.
    const QStaticText* find(const QRect& room, uint64_t key);
    void drawAt(QPainter& p, const QRect& room, const QStaticText& label) const;

    struct Full {
        QString text;
        int width = 0;  // its advance in font_
        QStaticText whole;
    };
    QFont font_;
    bool haveFont_ = false;
    std::unordered_map<uint64_t, Full> full_;           // key -> the whole text
    std::unordered_map<uint64_t, QStaticText> labels_;  // key * 2^12 + bucket -> elided
    int ascentOffset_ = 0;                              // font height, for centring
};

}  // namespace auxscope
