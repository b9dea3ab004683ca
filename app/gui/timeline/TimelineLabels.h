// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <QFont>
#include <QStaticText>
#include <QString>

#include <QRect>

#include <cstdint>
#include <unordered_map>
#include <vector>

class QPainter;

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

    // How labels are drawn. Cached is the view's way; the others are there to measure
    // what the cache buys (bench_timeline --labels) and as the reference it is checked
    // against (timeline_labels_tests): Direct is the straightforward path, elided to the
    // room's exact width with QFontMetrics::elidedText and laid out by drawText on every
    // draw; ElideCached keeps the elided texts per bucket but lays them out every time.
    enum class Mode { Cached, ElideCached, Direct };
    void setMode(Mode mode) {
        mode_ = mode;
        clear();
    }
    Mode mode() const { return mode_; }

    // A label drawn: its room and its text (as elided). With a log set, every draw()
    // that inks a label adds one (tests compare what two paths draw).
    struct Drawn {
        QRect room;
        QString text;
    };
    void setLog(std::vector<Drawn>* log) { log_ = log; }

    // Keys for draw(): functions, gap reasons and threads never share one.
    static uint64_t functionKey(uint32_t function) { return function; }
    static uint64_t gapKey(int reason) { return (uint64_t(1) << 32) | uint32_t(reason); }
    static uint64_t threadKey(int32_t tid) { return (uint64_t(2) << 32) | uint32_t(tid); }

    // Draws the text of `key` (made by `text` the first time) left-aligned and
    // vertically centred in `room`, elided on the right to fit its width, in the
    // painter's font and pen.
    // `text` runs only when the key is new: a frame of cached labels makes no strings.
    // Returns whether a label was drawn (false: the room is too narrow for any).
    template <typename MakeText>
    bool draw(QPainter& p, const QRect& room, uint64_t key, const MakeText& text) {
        if (room.width() <= 0) return false;
        if (mode_ == Mode::Direct) return drawDirect(p, room, text());
        if (!known(p, key)) add(key, text());
        const QStaticText* label = find(room, key);
        if (!label) return false;
        drawAt(p, room, *label);
        return true;
    }
    void clear();
    size_t size() const { return labels_.size() + full_.size(); }
    // Labels laid out so far (texts and elisions made: the cache's misses), for benchmarks.
    uint64_t laidOut() const { return laidOut_; }

private:
    // Whether `key`'s text is held (in the painter's font: a new font starts the cache again).
    bool known(const QPainter& p, uint64_t key);
    void add(uint64_t key, const QString& text);
    // The prepared label of a known `key` for `room` (elided to its bucket, made on first use);
    // nullptr when the room is too narrow for any.
    const QStaticText* find(const QRect& room, uint64_t key);
    void drawAt(QPainter& p, const QRect& room, const QStaticText& label);
    bool drawDirect(QPainter& p, const QRect& room, const QString& text);

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
    Mode mode_ = Mode::Cached;
    uint64_t laidOut_ = 0;
    std::vector<Drawn>* log_ = nullptr;
};

}  // namespace auxscope
