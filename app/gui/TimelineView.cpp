// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/TimelineView.h"

#include <QContextMenuEvent>
#include <QCoreApplication>
#include <QHelpEvent>
#include <QImage>
#include <QKeyEvent>
#include <QLocale>
#include <QMenu>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QScrollBar>
#include <QTimer>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <map>
#include <thread>
#include <tuple>
#include <unordered_map>

namespace auxscope {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
// Summary cells: the function covering most of a bucket (24 bits), how much of
// the bucket it covers (7 bits, of 127) and whether a gap is in it (top bit).
constexpr uint32_t kGapBit = 0x80000000u, kFnMask = 0x00ffffffu, kEmptyFn = 0x00ffffffu;
constexpr uint32_t kEmptyCell = kEmptyFn;
// Flame-chart rows per thread: any real stack; a corrupt depth must not make millions of rows.
constexpr int kMaxRows = 1 << 16;
constexpr size_t kSummaryMin = 4096;   // smaller stores are walked whole
constexpr size_t kWalkAlways = 20000;  // fewer spans in view: walk them (exact)
constexpr uint32_t kMaxBuckets = 1u << 17;
constexpr size_t kCpuSummaryMin = 2048;  // CPU lanes of fewer slices are walked
constexpr int kNarrowRun = 4;            // summary runs narrower than this: pixels in an image
constexpr double kLabelMinWidth = 48;
constexpr int kRunBand = 9;            // thread lanes: run slices on top, sample ticks below
constexpr int kLossStrip = 5;          // CPU lanes: loss markers along the top
constexpr float kRingNearlyFull = 95;  // health lanes: a ring this full has no room for a large record

inline uint32_t coverOf(uint32_t cell) {
    return (cell >> 24) & 0x7f;
}
inline uint32_t fnOf(uint32_t cell) {
    return cell & kFnMask;
}

uint32_t fnv1a(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s)
        h = (h ^ c) * 16777619u;
    return h;
}

QString formatDuration(double ns) {
    const double a = std::fabs(ns);
    if (a < 1e3) return QString("%1 ns").arg(ns, 0, 'f', 0);
    if (a < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 2);
    if (a < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 3);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 4);
}

// An axis label: `ns` after the start, in the unit of the tick step.
QString formatTick(double ns, double step) {
    double unit = 1;
    const char* name = "ns";
    if (step >= 1e9)
        unit = 1e9, name = "s";
    else if (step >= 1e6)
        unit = 1e6, name = "ms";
    else if (step >= 1e3)
        unit = 1e3, name = "µs";
    const double v = ns / unit, s = step / unit;
    const int decimals = s >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(s) - 1e-9)));
    return QString("%1 %2").arg(v, 0, 'f', decimals).arg(name);
}

// A group's triangle: pointing down when open, right when collapsed.
void drawDisclosure(QPainter& p, int x, int y, int height, bool open) {
    const double cy = y + height / 2.0;
    QPolygonF tri;
    if (open)
        tri << QPointF(x, cy - 2.5) << QPointF(x + 9, cy - 2.5) << QPointF(x + 4.5, cy + 3);
    else
        tri << QPointF(x + 2, cy - 4.5) << QPointF(x + 2, cy + 4.5) << QPointF(x + 7.5, cy);
    p.save();
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(70, 75, 85));
    p.setRenderHint(QPainter::Antialiasing);
    p.drawPolygon(tri);
    p.restore();
}

// A pinned lane's mark in its label column.
void drawPin(QPainter& p, int x, int y) {
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(QColor(90, 90, 100), 1.2));
    p.drawLine(QPointF(x, y + 5), QPointF(x, y + 11));
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(200, 60, 60));
    p.drawEllipse(QPointF(x, y + 4), 3, 3);
    p.restore();
}

QColor cpuNoteColor() {
    return QColor(232, 232, 232);
}

}  // namespace

// Per-thread summary (see the header): level 0 has n[0] buckets of bucketDur[0]
// ns from t0 up to extentEnd; each further level halves the count. A depth
// with at least a span per level-0 bucket is summarized (cells, openAt, tail);
// a sparser one (the rare frames of a deep stack) keeps the indices of its
// spans (`sparse`), walked in view when zoomed in, and cells only from the
// first level with no more buckets than it has spans. So the summary takes at
// most about 12 bytes per span of either kind, however deep the stacks.
struct TimelineView::Lod {
    int rows = 1;
    size_t spans = 0;
    uint64_t t0 = 0, extentEnd = 0;
    std::vector<uint64_t> bucketDur;
    std::vector<uint32_t> n;
    std::vector<std::vector<std::vector<uint32_t>>> cells;  // [level][depth][bucket] (empty: not summarized)
    std::vector<std::vector<uint32_t>> openAt;              // [depth][bucket]: span covering its start
    std::vector<uint32_t> tail;                             // [depth]: a span reaching past extentEnd
    std::vector<std::vector<uint32_t>> sparse;              // [depth]: its spans by start (not summarized)
    bool summarized() const { return !cells.empty(); }
    size_t bytes() const {
        size_t b = sizeof(*this) + bucketDur.capacity() * 8 + n.capacity() * 4 + tail.capacity() * 4;
        for (const auto& level : cells)
            for (const auto& row : level)
                b += row.capacity() * 4 + sizeof(row);
        for (const auto* v : {&openAt, &sparse})
            for (const auto& row : *v)
                b += row.capacity() * 4 + sizeof(row);
        return b;
    }
};

// A CPU lane's summary: per bucket the process (a thread of no known process:
// the thread) that ran most of it, how much of the bucket it ran and how much
// any thread ran (the rest is idle), at a few resolutions as Lod; and the
// colour of every process on the lane, found once. A zoomed-out frame reads
// a few cells per pixel column instead of the lane's slices.
struct TimelineView::CpuLod {
    struct Cell {
        int32_t key = -1;   // into keys (-1: no thread ran)
        uint8_t cover = 0;  // of 255: the part of the bucket `key` ran
        uint8_t busy = 0;   // of 255: the part any thread ran
    };
    size_t slices = 0;
    std::vector<int64_t> keys;  // sorted: pid > 0, or -tid - 1
    std::vector<QRgb> rgb;      // per key
    uint64_t t0 = 0, extentEnd = 0;
    std::vector<uint64_t> bucketDur;
    std::vector<uint32_t> n;
    std::vector<std::vector<Cell>> cells;  // [level][bucket]
    bool summarized() const { return !cells.empty(); }
    int32_t keyIndex(int64_t key) const {
        auto it = std::lower_bound(keys.begin(), keys.end(), key);
        return it != keys.end() && *it == key ? int32_t(it - keys.begin()) : -1;
    }
    size_t bytes() const {
        size_t b = sizeof(*this) + keys.capacity() * 8 + rgb.capacity() * 4 + bucketDur.capacity() * 8 +
                   n.capacity() * 4;
        for (const auto& level : cells)
            b += level.capacity() * sizeof(Cell) + sizeof(level);
        return b;
    }
};

// Everything summarized once per data (on the worker thread when asynchronous).
struct TimelineView::Summaries {
    std::vector<std::unique_ptr<Lod>> threads;
    std::map<int, std::unique_ptr<CpuLod>> cpus;
    SummaryStats stats;
};

namespace {

std::unique_ptr<TimelineView::Lod> buildLod(const SpanStore& store, uint64_t decodedEnd) {
    auto lod = std::make_unique<TimelineView::Lod>();
    lod->spans = store.size();
    if (store.empty()) return lod;
    const size_t size = store.size();
    // Spans per depth (deeper than kMaxRows: not drawn).
    std::vector<size_t> count;
    store.forEach(0, size, [&](size_t, const Span& s) {
        if (s.depth < 0 || s.depth >= kMaxRows) return;
        if (count.size() <= size_t(s.depth)) count.resize(size_t(s.depth) + 1, 0);
        ++count[size_t(s.depth)];
    });
    lod->rows = std::max(1, int(count.size()));
    if (size < kSummaryMin) return lod;
    const uint64_t t0 = store.firstStart();
    uint64_t extentEnd = store.lastStart() + 1;
    if (decodedEnd > extentEnd && decodedEnd - t0 <= 2 * (extentEnd - t0)) extentEnd = decodedEnd;
    uint32_t n0 = 64;
    while (n0 < kMaxBuckets && uint64_t(n0) * 2 * 64 <= size)
        n0 *= 2;
    uint64_t bd = std::max<uint64_t>(1, (extentEnd - t0 + n0 - 1) / n0);
    n0 = uint32_t(std::min<uint64_t>(n0, (extentEnd - t0 + bd - 1) / bd));
    n0 = std::max<uint32_t>(n0, 1);
    lod->t0 = t0;
    lod->extentEnd = t0 + uint64_t(n0) * bd;
    extentEnd = lod->extentEnd;
    const size_t depths = count.size();
    auto& cells0 = lod->cells.emplace_back(depths);
    auto& open = lod->openAt;
    open.resize(depths);
    lod->tail.assign(depths, kNone);
    lod->sparse.resize(depths);
    for (size_t d = 0; d < depths; ++d) {
        if (count[d] >= n0) {
            cells0[d].assign(n0, kEmptyCell);
            open[d].assign(n0, kNone);
        } else {
            lod->sparse[d].reserve(count[d]);
        }
    }
    store.forEach(0, size, [&](size_t i, const Span& s) {
        if (s.depth < 0 || s.depth >= kMaxRows) return;
        const size_t d = size_t(s.depth);
        if (cells0[d].empty()) {
            lod->sparse[d].push_back(uint32_t(i));
            return;
        }
        const uint64_t a = std::max(s.start, t0), e = std::max(s.end, s.start + 1);
        if (e > extentEnd) lod->tail[d] = uint32_t(i);
        if (a >= extentEnd) return;
        const uint64_t b0 = (a - t0) / bd, b1 = (std::min(e, extentEnd) - 1 - t0) / bd;
        uint32_t* row = cells0[d].data();
        const uint32_t fn = std::min<uint32_t>(s.function, kEmptyFn - 1);
        for (uint64_t b = b0; b <= b1; ++b) {
            const uint64_t bs = t0 + b * bd, be = bs + bd;
            if (s.start <= bs) open[d][b] = uint32_t(i);
            uint32_t& cell = row[b];
            if (s.isGap()) {
                cell |= kGapBit;
                continue;
            }
            const uint64_t overlap = std::min(e, be) - std::max(a, bs);
            const uint32_t cover = std::max<uint32_t>(1, uint32_t((overlap * 127 + bd - 1) / bd));
            if (fnOf(cell) == kEmptyFn || cover > coverOf(cell)) cell = (cell & kGapBit) | (cover << 24) | fn;
        }
    });
    lod->bucketDur.push_back(bd);
    lod->n.push_back(n0);
    // A listed depth's cells, from the first level with no more buckets than it has spans.
    auto summarizeListed = [&](size_t d, uint64_t bdl, uint32_t nl, std::vector<uint32_t>& row) {
        row.assign(nl, kEmptyCell);
        for (const uint32_t i : lod->sparse[d]) {
            const Span s = store.at(i);
            const uint64_t a = std::max(s.start, t0), e = std::max(s.end, s.start + 1);
            if (e > extentEnd) lod->tail[d] = i;
            if (a >= extentEnd) continue;
            const uint64_t b0 = (a - t0) / bdl,
                           b1 = std::min<uint64_t>(nl - 1, (std::min(e, extentEnd) - 1 - t0) / bdl);
            const uint32_t fn = std::min<uint32_t>(s.function, kEmptyFn - 1);
            for (uint64_t b = b0; b <= b1; ++b) {
                const uint64_t bs = t0 + b * bdl;
                uint32_t& cell = row[b];
                if (s.isGap()) {
                    cell |= kGapBit;
                    continue;
                }
                const uint64_t overlap = std::min(e, bs + bdl) - std::max(a, bs);
                const uint32_t cover = std::max<uint32_t>(1, uint32_t((overlap * 127 + bdl - 1) / bdl));
                if (fnOf(cell) == kEmptyFn || cover > coverOf(cell))
                    cell = (cell & kGapBit) | (cover << 24) | fn;
            }
        }
    };
    // Coarser levels: each cell merges two; the better-covering function wins, gaps stay.
    while (lod->n.back() > 1) {
        const auto& prev = lod->cells.back();
        const uint32_t pn = lod->n.back(), nn = (pn + 1) / 2;
        std::vector<std::vector<uint32_t>> next(prev.size());
        for (size_t d = 0; d < prev.size(); ++d) {
            if (prev[d].empty()) {
                if (!lod->sparse[d].empty() && nn <= lod->sparse[d].size())
                    summarizeListed(d, lod->bucketDur.back() * 2, nn, next[d]);
                continue;
            }
            next[d].resize(nn);
            for (uint32_t b = 0; b < nn; ++b) {
                const uint32_t x = prev[d][2 * b], y = 2 * b + 1 < pn ? prev[d][2 * b + 1] : kEmptyCell;
                const uint32_t pick = coverOf(x) >= coverOf(y) ? x : y;
                const uint32_t cover = (coverOf(x) + coverOf(y) + 1) / 2;
                next[d][b] = ((x | y) & kGapBit) | (cover << 24) | fnOf(pick);
            }
        }
        lod->cells.push_back(std::move(next));
        lod->n.push_back(nn);
        lod->bucketDur.push_back(lod->bucketDur.back() * 2);
    }
    return lod;
}

// A slice's colour key: its process, or for a thread of no known process the thread.
inline int64_t laneKey(const TimelineData::CpuSlice& s) {
    return s.pid > 0 ? int64_t(s.pid) : -int64_t(s.tid) - 1;
}

inline uint8_t share255(uint64_t part, uint64_t whole) {
    return part ? uint8_t(std::clamp<uint64_t>((part * 255 + whole / 2) / whole, 1, 255)) : 0;
}

// Per pixel column (or bucket): the time each process ran in it, the most there
// is and the total; a column rarely sees more than a few processes.
struct ColumnTally {
    std::vector<std::pair<int32_t, uint64_t>> ran;
    uint64_t busy = 0;
    void add(int32_t key, uint64_t ns) {
        busy += ns;
        for (auto& [k, t] : ran)
            if (k == key) {
                t += ns;
                return;
            }
        ran.push_back({key, ns});
    }
    std::pair<int32_t, uint64_t> most() const {
        std::pair<int32_t, uint64_t> best{-1, 0};
        for (const auto& r : ran)
            if (r.second > best.second) best = r;
        return best;
    }
    void clear() {
        ran.clear();
        busy = 0;
    }
};

std::unique_ptr<TimelineView::CpuLod> buildCpuLod(const std::vector<TimelineData::CpuSlice>& slices) {
    using Cell = TimelineView::CpuLod::Cell;
    auto lod = std::make_unique<TimelineView::CpuLod>();
    lod->slices = slices.size();
    for (const auto& s : slices)
        if (s.tid > 0 && (lod->keys.empty() || lod->keys.back() != laneKey(s)))
            lod->keys.push_back(laneKey(s));
    std::sort(lod->keys.begin(), lod->keys.end());
    lod->keys.erase(std::unique(lod->keys.begin(), lod->keys.end()), lod->keys.end());
    lod->keys.shrink_to_fit();
    lod->rgb.reserve(lod->keys.size());
    for (int64_t k : lod->keys)
        lod->rgb.push_back(
            (k > 0 ? TimelineView::processColor(int32_t(k)) : TimelineView::threadColor(int32_t(-k - 1)))
                .rgb());
    if (slices.size() < kCpuSummaryMin) return lod;
    const uint64_t t0 = slices.front().start;
    uint64_t end = t0 + 1;
    for (const auto& s : slices)
        end = std::max(end, s.end);
    uint32_t n0 = 64;
    while (n0 < kMaxBuckets && uint64_t(n0) * 2 * 2 <= slices.size())
        n0 *= 2;
    const uint64_t bd = std::max<uint64_t>(1, (end - t0 + n0 - 1) / n0);
    n0 = std::max<uint32_t>(1, uint32_t(std::min<uint64_t>(n0, (end - t0 + bd - 1) / bd)));
    lod->t0 = t0;
    lod->extentEnd = t0 + uint64_t(n0) * bd;
    std::vector<Cell> level0(n0);
    ColumnTally tally;
    uint64_t current = UINT64_MAX;
    auto finish = [&] {
        if (current == UINT64_MAX) return;
        const auto [key, ran] = tally.most();
        level0[current] = {key, share255(ran, bd), share255(tally.busy, bd)};
        tally.clear();
    };
    int32_t lastKey = -1;
    int64_t lastLaneKey = INT64_MIN;
    for (const auto& s : slices) {
        if (s.tid <= 0 || s.end <= s.start) continue;
        if (laneKey(s) != lastLaneKey) lastLaneKey = laneKey(s), lastKey = lod->keyIndex(lastLaneKey);
        const uint64_t a = std::max(s.start, t0), e = std::min(s.end, lod->extentEnd);
        if (a >= e) continue;
        const uint64_t b0 = (a - t0) / bd, b1 = (e - 1 - t0) / bd;
        for (uint64_t b = b0; b <= b1; ++b) {
            if (b != current) {
                finish();
                current = b;
            }
            const uint64_t bs = t0 + b * bd;
            tally.add(lastKey, std::min(e, bs + bd) - std::max(a, bs));
        }
    }
    finish();
    lod->bucketDur.push_back(bd);
    lod->n.push_back(n0);
    lod->cells.push_back(std::move(level0));
    // Coarser levels: each cell merges two; the better-covering process wins.
    while (lod->n.back() > 1) {
        const auto& prev = lod->cells.back();
        const uint32_t pn = lod->n.back(), nn = (pn + 1) / 2;
        std::vector<Cell> next(nn);
        for (uint32_t b = 0; b < nn; ++b) {
            const Cell x = prev[2 * b], y = 2 * b + 1 < pn ? prev[2 * b + 1] : Cell{};
            Cell c;
            c.busy = uint8_t((x.busy + y.busy + 1) / 2);
            if (x.key == y.key) {
                c.key = x.key, c.cover = uint8_t((x.cover + y.cover + 1) / 2);
            } else {
                const Cell& w = x.cover >= y.cover ? x : y;
                c.key = w.key, c.cover = uint8_t((w.cover + 1) / 2);
            }
            next[b] = c;
        }
        lod->cells.push_back(std::move(next));
        lod->n.push_back(nn);
        lod->bucketDur.push_back(lod->bucketDur.back() * 2);
    }
    return lod;
}

// The first element of [from, end) that is not `before` (a prefix of them is):
// galloping from `from`, for a skip that is usually short in a long array.
template <typename It, typename Before>
It gallop(It from, It end, const Before& before) {
    It lo = from;
    ptrdiff_t step = 1;
    while (end - lo > step && before(*(lo + step))) {
        lo += step;
        step *= 2;
    }
    return std::partition_point(lo, end - lo > step ? lo + step + 1 : end, before);
}

// Paints per pixel column `colour` (0: nothing) from x = left on: over the
// height `h` where `busy` (of 255; null: everywhere) is at least half, over
// the lower third elsewhere; one image for the lane, not a rectangle per column. Returns the
// number of runs of one colour.
int paintColumns(QPainter& p, int left, int y, int h, const std::vector<QRgb>& colour,
                 const std::vector<uint8_t>* busy) {
    const int W = int(colour.size());
    int first = 0, last = W;
    while (first < W && !colour[size_t(first)])
        ++first;
    if (first == W || h <= 0) return 0;
    while (!colour[size_t(last - 1)])
        --last;
    const int w = last - first;
    std::vector<QRgb> full(static_cast<size_t>(w)), low(static_cast<size_t>(w));
    int runs = 0;
    for (int x = first; x < last; ++x) {
        const QRgb c = colour[size_t(x)];
        low[size_t(x - first)] = c;
        full[size_t(x - first)] = !busy || (*busy)[size_t(x)] >= 128 ? c : 0;
        runs += c && (x == first || colour[size_t(x - 1)] != c);
    }
    // One buffer for every lane and row painted (on the GUI thread): no allocation
    // and no fresh pages per lane.
    static QImage image;
    if (image.width() < w || image.height() < h)
        image = QImage(std::max(w, image.width()), std::max(h, image.height()),
                       QImage::Format_ARGB32_Premultiplied);
    const int lowTop = h - std::max(2, h / 3);
    for (int r = 0; r < h; ++r)
        std::memcpy(image.scanLine(r), (r < lowTop ? full : low).data(), size_t(w) * sizeof(QRgb));
    p.drawImage(QPoint(left + first, y), image, QRect(0, 0, w, h));
    return runs;
}

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent) {
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setMinimumSize(300, 150);
    vbar_ = new QScrollBar(Qt::Vertical, this);
    vbar_->setObjectName("timelineScroll");
    connect(vbar_, &QScrollBar::valueChanged, this, [this] { update(); });
    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(150);
    connect(debounce_, &QTimer::timeout, this, [this] {
        if (viewBegin_ == emittedBegin_ && viewEnd_ == emittedEnd_) return;
        emittedBegin_ = viewBegin_, emittedEnd_ = viewEnd_;
        emit visibleRangeChanged(viewBegin_, viewEnd_);
    });
}

TimelineView::~TimelineView() = default;

void TimelineView::setDebounceMs(int ms) {
    debounce_->setInterval(ms);
}

QColor TimelineView::functionColor(const std::string& name) {
    const uint32_t h = fnv1a(name);
    // Hues away from pure red, which gaps use.
    return QColor::fromHsv(int(25 + h % 310), int(90 + (h >> 9) % 90), int(205 + (h >> 17) % 45));
}

QColor TimelineView::threadColor(int32_t tid) {
    const uint32_t h = fnv1a(std::to_string(tid)) * 2654435761u;
    return QColor::fromHsv(int(h % 360), int(70 + (h >> 11) % 80), int(190 + (h >> 19) % 50));
}

QColor TimelineView::processColor(int32_t pid) {
    return threadColor(pid);
}

QColor TimelineView::sampleColor() {
    return QColor(35, 35, 45);
}

QColor TimelineView::lossColor(int kind) {
    switch (kind) {
        case SidebandLanes::Loss::Throttle:
            return QColor(235, 130, 0);
        case SidebandLanes::Loss::Aux:
            return QColor(150, 0, 210);
        default:
            return QColor(220, 0, 0);
    }
}

QColor TimelineView::gapColor() {
    return QColor(255, 196, 196);
}

QColor TimelineView::gapHatchColor() {
    return QColor(200, 0, 0);
}

QColor TimelineView::healthRingColor() {
    return QColor(120, 160, 215);
}

QColor TimelineView::healthFullColor() {
    return QColor(235, 120, 40);
}

QColor TimelineView::healthAuxColor() {
    return QColor(20, 130, 70);
}

QColor TimelineView::colorOf(uint32_t function) const {
    if (function >= colors_.size()) {
        const size_t n = data_ && data_->functions ? data_->functions->size() : 0;
        colors_.resize(std::max<size_t>(function + 1, n));
    }
    QColor& c = colors_[function];
    // Kept as RGB: converting the HSV it is made from costs more than a pixel run.
    if (!c.isValid()) c = functionColor(functionName(function).toStdString()).toRgb();
    return c;
}

QString TimelineView::functionName(uint32_t id) const {
    if (data_ && data_->functions && id < data_->functions->size())
        return QString::fromStdString((*data_->functions)[id].name);
    return id == FunctionTable::kUnknown ? QString("[unknown]") : QString("function %1").arg(id);
}

TimelineView::Summaries TimelineView::buildLods(const TimelineData& data) {
    // The summaries, once per store, on a few threads when there is much to read.
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    Summaries out;
    const size_t n = data.threads.size();
    auto& lods = out.threads;
    lods.resize(n);
    size_t total = 0;
    for (const auto& t : data.threads)
        total += t.spans.size();
    const unsigned workers =
        total > 1'000'000 ? std::min<unsigned>(unsigned(n), std::max(1u, std::thread::hardware_concurrency()))
                          : 1;
    if (workers > 1) {
        std::atomic<size_t> next{0};
        std::vector<std::future<void>> jobs;
        for (unsigned w = 0; w < workers; ++w)
            jobs.push_back(std::async(std::launch::async, [&] {
                for (size_t i; (i = next++) < n;)
                    lods[i] = buildLod(data.threads[i].spans, data.decodedEnd);
            }));
        for (auto& j : jobs)
            j.get();
    } else {
        for (size_t i = 0; i < n; ++i)
            lods[i] = buildLod(data.threads[i].spans, data.decodedEnd);
    }
    const auto threadsDone = Clock::now();
    for (const auto& [cpu, slices] : data.cpus) {
        auto& lod = out.cpus[cpu];
        lod = buildCpuLod(slices);
        out.stats.cpuSlices += slices.size();
        out.stats.cpuBytes += lod->bytes();
    }
    out.stats.spans = total;
    for (const auto& lod : lods)
        out.stats.threadBytes += lod->bytes();
    out.stats.threadMs = std::chrono::duration<double, std::milli>(threadsDone - started).count();
    out.stats.cpuMs = std::chrono::duration<double, std::milli>(Clock::now() - threadsDone).count();
    return out;
}

void TimelineView::setData(std::shared_ptr<const TimelineData> data) {
    const uint64_t generation = ++dataGeneration_;
    size_t total = 0;
    if (data)
        for (const auto& t : data->threads)
            total += t.spans.size();
    if (!data || !asyncSummaries_ || total < asyncMinSpans_) {
        Summaries summaries;
        if (data) summaries = buildLods(*data);
        install(std::move(data), std::move(summaries));
        return;
    }
    // Large: summarize on a worker thread, showing the current data until then.
    preparing_ = true;
    QPointer<TimelineView> self(this);
    std::thread([self, data = std::move(data), generation] {
        auto lods = std::make_shared<Summaries>(buildLods(*data));
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, data, lods, generation] {
                if (!self || generation != self->dataGeneration_) return;  // a newer setData won
                self->preparing_ = false;
                self->install(data, std::move(*lods));
            },
            Qt::QueuedConnection);
    }).detach();
}

void TimelineView::install(std::shared_ptr<const TimelineData> data, Summaries summaries) {
    preparing_ = false;
    const bool first = !data_ || viewEnd_ <= viewBegin_;
    if (!data_ || !data || data_->functions != data->functions) colors_.clear();
    data_ = std::move(data);
    selected_ = {};
    lods_ = std::move(summaries.threads);
    cpuLods_ = std::move(summaries.cpus);
    summaryStats_ = summaries.stats;
    layoutTracks();
    emit dataShown();
    if (!data_) {
        update();
        return;
    }
    const uint64_t oldBegin = viewBegin_, oldEnd = viewEnd_;
    const uint64_t b = data_->begin, e = std::max(data_->end, data_->begin + 1);
    if (follow_) {
        // The newest `followSeconds_`, or everything kept until the user zooms.
        const uint64_t w = followSeconds_ > 0 ? uint64_t(followSeconds_ * 1e9) : e - b;
        viewEnd_ = e;
        viewBegin_ = e - std::min(w, e - b);
    } else if (first) {
        viewBegin_ = b, viewEnd_ = e;
    } else {
        // Keep the zoom; only keep it inside the recording.
        const uint64_t w = std::min(viewEnd_ - viewBegin_, e - b);
        if (viewBegin_ < b) viewBegin_ = b;
        if (viewBegin_ + w > e) viewBegin_ = e - w;
        viewEnd_ = viewBegin_ + w;
    }
    if (first && !follow_) {
        // The first data shows whole: nothing to ask for until the range moves.
        emittedBegin_ = emittedEnd_ = 0;
        update();
    } else if (viewBegin_ != oldBegin || viewEnd_ != oldEnd) {
        rangeChanged();
    } else {
        update();
    }
}

void TimelineView::setFollowLatest(bool follow, double seconds) {
    follow_ = follow;
    followSeconds_ = seconds;
    if (follow_ && data_) {
        const uint64_t b = data_->begin, e = std::max(data_->end, data_->begin + 1);
        const uint64_t w = followSeconds_ > 0 ? std::min(uint64_t(followSeconds_ * 1e9), e - b) : e - b;
        setVisibleRange(e - w, e);
    }
}

void TimelineView::setUndecodedHint(const QString& text) {
    if (hint_ == text) return;
    hint_ = text;
    update();
}

uint64_t TimelineView::minWidth() const {
    return std::max<uint64_t>(50, uint64_t(plotWidth()) / 10);
}

void TimelineView::setVisibleRange(uint64_t begin, uint64_t end) {
    if (end <= begin) end = begin + 1;
    uint64_t w = std::max(end - begin, minWidth());
    if (data_ && data_->end > data_->begin) {
        const uint64_t b = data_->begin, e = data_->end;
        w = std::min(w, e - b);
        begin = std::clamp(begin, b, e - w);
    }
    if (begin == viewBegin_ && begin + w == viewEnd_) return;
    viewBegin_ = begin;
    viewEnd_ = begin + w;
    rangeChanged();
}

void TimelineView::rangeChanged() {
    update();
    debounce_->start();
}

int TimelineView::plotWidth() const {
    return std::max(1, width() - kLabelWidth - (vbar_ ? vbar_->sizeHint().width() : 0));
}

double TimelineView::xOf(uint64_t t) const {
    const double w = double(viewEnd_ - viewBegin_);
    return kLabelWidth + (double(t) - double(viewBegin_)) * plotWidth() / (w > 0 ? w : 1);
}

uint64_t TimelineView::timeAt(double x) const {
    const double w = double(viewEnd_ - viewBegin_);
    const double t = double(viewBegin_) + (x - kLabelWidth) * w / plotWidth();
    return t <= 0 ? 0 : uint64_t(t);
}

int TimelineView::contentTop() const {
    return kAxisHeight - vbar_->value();
}

void TimelineView::layoutTracks() {
    tracks_.clear();
    threadFirstTrack_.assign(data_ ? data_->threads.size() : 0, kNoThread);
    healthPeak_.clear();
    pinnedHeight_ = 0;
    threadsShown_ = threadsTotal_ = 0;
    int y = 0;
    if (!data_) {
        contentHeight_ = y;
        updateScrollBar();
        return;
    }
    const SidebandLanes* lanes = data_->lanes.get();
    const TimelineLaneState& state = laneState_;
    bool pinning = false;  // laying out the pinned section
    // A thread: its header (with lanes: its runs and samples), then its flame chart.
    auto addThread = [&](long lane, size_t span) {
        Track header{Track::ThreadHeader, -1, span, 0, y, kHeaderHeight};
        header.lane = lane;
        header.pinned = pinning;
        if (span != kNoThread) threadFirstTrack_[span] = tracks_.size();
        tracks_.push_back(header);
        ++threadsShown_;
        y += kHeaderHeight;
        if (span == kNoThread) return;
        const int rows = lods_[span] ? std::max(1, lods_[span]->rows) : 1;
        for (int d = 0; d < rows; ++d) {
            Track row{Track::ThreadRow, -1, span, d, y, kRowHeight};
            row.pinned = pinning;
            tracks_.push_back(row);
            y += kRowHeight;
        }
        y += 2;
    };
    // The CPUs: those with lanes, and those the file names as offline or not traced.
    std::set<int> cpus;
    for (const auto& [cpu, slices] : data_->cpus)
        cpus.insert(cpu);
    if (lanes)
        for (const auto& [cpu, note] : lanes->cpuNotes)
            cpus.insert(cpu);
    auto addCpu = [&](int cpu) {
        Track t{Track::Cpu, cpu, 0, 0, y, kLaneHeight};
        t.pinned = pinning;
        tracks_.push_back(t);
        y += kLaneHeight;
    };

    // Threads in groups: a process (its lanes' threads, and threads with spans
    // the sideband has no lane for) or, without lanes, one flat group.
    struct Member {
        int32_t tid = -1, pid = -1;
        long lane = -1;
        size_t span = kNoThread;
        bool operator<(const Member& o) const { return tid < o.tid; }
    };
    struct Group {
        int32_t pid = -1;
        long process = -1;  // index into lanes->processes
        std::string name;
        bool header = true;
        std::vector<Member> members;
    };
    std::vector<Group> groups;
    if (!lanes) {
        Group flat;
        flat.header = false;
        for (size_t i = 0; i < data_->threads.size(); ++i)
            flat.members.push_back({data_->threads[i].tid, data_->threads[i].pid, -1, i});
        groups.push_back(std::move(flat));
    } else {
        // Grouped by process, in the lanes' order; threads with spans join their
        // process's lane, or a group of their own when the sideband has none for them.
        std::unordered_map<int32_t, size_t> spanOf;
        std::map<int32_t, std::vector<size_t>> spanOnly;  // by pid
        for (size_t i = 0; i < data_->threads.size(); ++i) {
            spanOf[data_->threads[i].tid] = i;
            if (lanes->threadIndex(data_->threads[i].tid) < 0) spanOnly[data_->threads[i].pid].push_back(i);
        }
        for (size_t p = 0; p < lanes->processes.size(); ++p) {
            const SidebandLanes::Process& proc = lanes->processes[p];
            Group g;
            g.pid = proc.pid, g.process = long(p), g.name = proc.name;
            for (size_t li : proc.threads) {
                const int32_t tid = lanes->threads[li].tid;
                auto found = spanOf.find(tid);
                g.members.push_back(
                    {tid, proc.pid, long(li), found == spanOf.end() ? kNoThread : found->second});
            }
            if (auto extra = spanOnly.find(proc.pid); extra != spanOnly.end()) {
                for (size_t i : extra->second)
                    g.members.push_back({data_->threads[i].tid, proc.pid, -1, i});
                spanOnly.erase(extra);
            }
            std::sort(g.members.begin(), g.members.end());
            groups.push_back(std::move(g));
        }
        for (const auto& [pid, spans] : spanOnly) {
            Group g;
            g.pid = pid;
            for (size_t i : spans)
                g.members.push_back({data_->threads[i].tid, pid, -1, i});
            groups.push_back(std::move(g));
        }
    }
    auto threadName = [&](const Member& m) -> const std::string& {
        return m.lane >= 0 ? lanes->threads[size_t(m.lane)].name : data_->threads[m.span].name;
    };
    for (const Group& g : groups)
        threadsTotal_ += int(g.members.size());
    if (state.sort == TimelineLaneState::Sort::Pid) {
        std::stable_sort(groups.begin(), groups.end(),
                         [](const Group& a, const Group& b) { return a.pid < b.pid; });
    } else if (state.sort == TimelineLaneState::Sort::Name) {
        std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
            const int c =
                QString::fromStdString(a.name).compare(QString::fromStdString(b.name), Qt::CaseInsensitive);
            return c != 0 ? c < 0 : a.pid < b.pid;
        });
    }

    // The filter: a name substring in any case, or a number naming a pid or tid.
    const QString filter = state.filter.trimmed();
    bool isNumber = false;
    const int32_t number = filter.toInt(&isNumber);
    auto nameMatches = [&](const std::string& name) {
        return QString::fromStdString(name).contains(filter, Qt::CaseInsensitive);
    };
    auto memberMatches = [&](const Member& m) {
        return filter.isEmpty() || nameMatches(threadName(m)) ||
               (isNumber && (m.tid == number || m.pid == number));
    };
    auto groupMatches = [&](const Group& g) {
        if (filter.isEmpty() || !g.header) return true;
        if (nameMatches(g.name) || (isNumber && g.pid == number)) return true;
        return std::any_of(g.members.begin(), g.members.end(), memberMatches);
    };

    std::set<int32_t> placedTids, placedPids;
    std::set<int> placedCpus;
    auto addGroup = [&](const Group& g) {
        if (g.header) {
            Track t{Track::ProcessHeader, -1, kNoThread, 0, y, kProcessHeight};
            t.pid = g.pid;
            t.process = g.process;
            t.pinned = pinning;
            tracks_.push_back(t);
            y += kProcessHeight;
            placedPids.insert(g.pid);
            if (state.collapsed.count(g.pid)) {
                y += 2;
                return;
            }
        }
        bool any = false;
        for (const Member& m : g.members) {
            if (placedTids.count(m.tid)) continue;
            // A flat list (no process headers) is filtered thread by thread.
            if (!g.header && !pinning && !memberMatches(m)) continue;
            placedTids.insert(m.tid);
            addThread(m.lane, m.span);
            any = true;
        }
        if (g.header || any) y += 2;
    };

    // Pinned lanes first, in the order pinned; they are not repeated below.
    pinning = true;
    for (const TimelineLaneState::Pin& pin : state.pinned) {
        if (pin.kind == TimelineLaneState::Pin::Cpu) {
            if (cpus.count(pin.id) && placedCpus.insert(pin.id).second) addCpu(pin.id);
        } else if (pin.kind == TimelineLaneState::Pin::Process) {
            for (const Group& g : groups)
                if (g.header && g.pid == pin.id && !placedPids.count(g.pid)) {
                    addGroup(g);
                    break;
                }
        } else if (!placedTids.count(pin.id)) {
            for (const Group& g : groups)
                for (const Member& m : g.members)
                    if (m.tid == pin.id && placedTids.insert(m.tid).second) addThread(m.lane, m.span);
        }
    }
    pinning = false;
    if (y > 0) {
        y += 6;
        pinnedHeight_ = y;
    }

    for (int cpu : cpus)
        if (!placedCpus.count(cpu)) addCpu(cpu);
    y += 4;
    // Capture health: a group with a lane per CPU.
    if (lanes && !lanes->health.empty()) {
        tracks_.push_back({Track::HealthHeader, -1, kNoThread, 0, y, kProcessHeight});
        y += kProcessHeight;
        for (const auto& [cpu, points] : lanes->health) {
            float peak = 0;
            for (const SidebandLanes::Health& h : points)
                peak = std::max(peak, h.ringFill);
            healthPeak_[cpu] = peak;
            if (state.healthCollapsed) continue;
            tracks_.push_back({Track::Health, cpu, kNoThread, 0, y, kHealthHeight});
            y += kHealthHeight;
        }
        y += 6;
    }
    for (const Group& g : groups) {
        if (g.header && placedPids.count(g.pid)) continue;
        if (!groupMatches(g)) continue;
        addGroup(g);
    }
    contentHeight_ = y;
    updateScrollBar();
}

void TimelineView::updateScrollBar() {
    const int visible = std::max(0, height() - kAxisHeight);
    vbar_->setRange(0, std::max(0, contentHeight_ - visible));
    vbar_->setPageStep(visible);
    vbar_->setSingleStep(kRowHeight);
}

void TimelineView::resizeEvent(QResizeEvent*) {
    const int w = vbar_->sizeHint().width();
    vbar_->setGeometry(width() - w, kAxisHeight, w, height() - kAxisHeight);
    updateScrollBar();
}

int TimelineView::stickyHeight() const {
    // Pinned lanes stay under the axis while the rest scrolls, unless they would take most of the view.
    const int visible = height() - kAxisHeight;
    return pinnedHeight_ > 0 && pinnedHeight_ * 5 <= visible * 3 ? pinnedHeight_ : 0;
}

int TimelineView::trackY(const Track& t) const {
    return t.pinned && stickyHeight() > 0 ? kAxisHeight + t.y : contentTop() + t.y;
}

int TimelineView::rowY(int32_t tid, int depth) const {
    if (!data_) return -1;
    for (size_t i = 0; i < data_->threads.size(); ++i) {
        if (data_->threads[i].tid != tid) continue;
        if (threadFirstTrack_[i] == kNoThread || depth < 0) return -1;  // collapsed or filtered out
        const size_t first = threadFirstTrack_[i] + 1 + size_t(depth);
        if (first >= tracks_.size() || tracks_[first].kind != Track::ThreadRow || tracks_[first].thread != i)
            return -1;
        return trackY(tracks_[first]);
    }
    return -1;
}

int TimelineView::threadLaneY(int32_t tid) const {
    if (!data_) return -1;
    for (const Track& t : tracks_) {
        if (t.kind != Track::ThreadHeader) continue;
        if (t.lane >= 0 && data_->lanes && data_->lanes->threads[size_t(t.lane)].tid == tid) return trackY(t);
        if (t.thread != kNoThread && data_->threads[t.thread].tid == tid) return trackY(t);
    }
    return -1;
}

int TimelineView::processHeaderY(int32_t pid) const {
    for (const Track& t : tracks_)
        if (t.kind == Track::ProcessHeader && t.pid == pid) return trackY(t);
    return -1;
}

int TimelineView::cpuLaneY(int cpu) const {
    for (const Track& t : tracks_)
        if (t.kind == Track::Cpu && t.cpu == cpu) return trackY(t);
    return -1;
}

int TimelineView::healthHeaderY() const {
    for (const Track& t : tracks_)
        if (t.kind == Track::HealthHeader) return trackY(t);
    return -1;
}

int TimelineView::healthLaneY(int cpu) const {
    for (const Track& t : tracks_)
        if (t.kind == Track::Health && t.cpu == cpu) return trackY(t);
    return -1;
}

const TimelineView::Track* TimelineView::trackAt(int y) const {
    if (y < kAxisHeight) return nullptr;
    const int sticky = stickyHeight();
    const int cy = y < kAxisHeight + sticky ? y - kAxisHeight : y - contentTop();
    auto it =
        std::upper_bound(tracks_.begin(), tracks_.end(), cy, [](int v, const Track& t) { return v < t.y; });
    if (it == tracks_.begin()) return nullptr;
    const Track& t = *(it - 1);
    return cy < t.y + t.height ? &t : nullptr;
}

// ---- Painting ----

void TimelineView::paintEvent(QPaintEvent*) {
    frame_ = {};
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    if (!data_) {
        p.setPen(Qt::gray);
        p.drawText(rect(), Qt::AlignCenter, hint_.isEmpty() ? QString("No timeline yet") : hint_);
        return;
    }
    const int plotRight = kLabelWidth + plotWidth();
    const int top = contentTop();
    const int sticky = stickyHeight();
    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    p.setFont(small);
    // The tracks in view that scroll, below the pinned ones that stay.
    const int scrolledTop = kAxisHeight + sticky;
    auto first = std::upper_bound(tracks_.begin(), tracks_.end(), scrolledTop - top,
                                  [](int v, const Track& t) { return v < t.y + t.height; });
    paintTracks(p, first, tracks_.end(), top, QRect(0, scrolledTop, plotRight, height() - scrolledTop));
    if (sticky > 0) {
        // Lanes painted under the pinned ones are covered: they clip to their own rectangles.
        p.setClipping(false);
        p.fillRect(QRect(0, kAxisHeight, plotRight, sticky), Qt::white);
        auto end = std::find_if(tracks_.begin(), tracks_.end(), [](const Track& t) { return !t.pinned; });
        paintTracks(p, tracks_.begin(), end, kAxisHeight, QRect(0, kAxisHeight, plotRight, sticky));
        p.setClipping(false);
        p.fillRect(QRect(0, kAxisHeight + sticky - 4, plotRight, 4), QColor(236, 238, 242));
        p.setPen(QColor(170, 175, 185));
        p.drawLine(0, kAxisHeight + sticky - 1, plotRight, kAxisHeight + sticky - 1);
    }
    p.setClipping(false);
    paintAxis(p);
    paintOverlays(p);
    if (hasFocus()) {
        p.setPen(QPen(palette().highlight().color(), 1));
        p.drawRect(rect().adjusted(0, 0, -1, -1));
    }
}

void TimelineView::paintTracks(QPainter& p, std::vector<Track>::const_iterator begin,
                               std::vector<Track>::const_iterator end, int top, const QRect& clip) {
    const int plotRight = kLabelWidth + plotWidth();
    const int bottom = clip.y() + clip.height();
    const QFont small = p.font();
    p.setClipRect(clip);
    // A pinned lane's pin, beside its label.
    auto pinMark = [&](const Track& t, int y) {
        if (!t.pinned) return;
        using Pin = TimelineLaneState::Pin;
        bool pinned = false;
        if (t.kind == Track::Cpu)
            pinned = laneState_.isPinned(Pin::Cpu, t.cpu);
        else if (t.kind == Track::ThreadHeader)
            pinned = laneState_.isPinned(Pin::Thread, t.lane >= 0 && data_->lanes
                                                          ? data_->lanes->threads[size_t(t.lane)].tid
                                                          : data_->threads[t.thread].tid);
        if (pinned) drawPin(p, kLabelWidth - 9, y + (t.height - 12) / 2);
    };
    for (auto it = begin; it != end && top + it->y < bottom;) {
        const Track& t = *it;
        const int y = top + t.y;
        if (t.kind == Track::Cpu) {
            if (const std::string* note = cpuNote(t.cpu))
                paintCpuNote(p, t, y, *note);
            else
                paintCpuLane(p, t, y);
            p.setPen(QColor(200, 200, 200));
            p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + t.height - 1);
            pinMark(t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::HealthHeader) {
            paintHealthHeader(p, t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::Health) {
            paintHealthLane(p, t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::ProcessHeader) {
            paintProcessHeader(p, t, y);
            pinMark(t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::ThreadHeader && data_->lanes) {
            paintThreadLane(p, t, y);
            pinMark(t, y);
            ++it;
            continue;
        }
        if (t.kind == Track::ThreadHeader) {
            const auto& th = data_->threads[t.thread];
            p.fillRect(QRect(0, y, plotRight, t.height), QColor(240, 242, 245));
            QFont bold = small;
            bold.setBold(true);
            p.setFont(bold);
            p.setPen(QColor(30, 30, 30));
            const QString title =
                QString("%1  tid %2  pid %3").arg(QString::fromStdString(th.name)).arg(th.tid).arg(th.pid);
            p.drawText(QRect(6, y, plotRight - 12, t.height), Qt::AlignVCenter | Qt::AlignLeft, title);
            p.setFont(small);
            pinMark(t, y);
            ++it;
            continue;
        }
        // A run of a thread's rows: painted together, one walk of its spans.
        auto last = it;
        while (last + 1 != end && (last + 1)->kind == Track::ThreadRow && (last + 1)->thread == t.thread &&
               top + (last + 1)->y < bottom)
            ++last;
        const int firstRow = it->depth, lastRow = last->depth;
        const int y0 = top + it->y - firstRow * kRowHeight;
        p.setPen(QColor(150, 150, 150));
        for (auto r = it; r <= last; ++r)
            if (r->depth % 5 == 0 && r->depth)
                p.drawText(QRect(kLabelWidth - 40, top + r->y, 34, kRowHeight),
                           Qt::AlignRight | Qt::AlignVCenter, QString::number(r->depth));
        paintThreadRows(p, t.thread, firstRow, lastRow, y0);
        p.setClipRect(clip);
        p.setPen(QColor(200, 200, 200));
        p.drawLine(kLabelWidth - 1, top + it->y, kLabelWidth - 1, top + last->y + last->height - 1);
        it = last + 1;
    }
}

void TimelineView::paintAxis(QPainter& p) {
    const int plotRight = kLabelWidth + plotWidth();
    p.fillRect(QRect(0, 0, width(), kAxisHeight), QColor(248, 248, 248));
    p.setPen(QColor(190, 190, 190));
    p.drawLine(0, kAxisHeight - 1, width(), kAxisHeight - 1);
    const double span = double(viewEnd_ - viewBegin_);
    if (span <= 0) return;
    const double pxDur = span / plotWidth();
    double step = std::pow(10.0, std::floor(std::log10(std::max(1.0, pxDur * 90))));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (step * m >= pxDur * 90) {
            step *= m;
            break;
        }
    step = std::max(step, 1.0);
    const double origin = double(data_->begin);
    const double rel0 = double(viewBegin_) - origin;
    double tick = std::ceil(rel0 / step) * step;
    p.setPen(QColor(60, 60, 60));
    p.drawText(QRect(4, 0, kLabelWidth - 8, kAxisHeight), Qt::AlignVCenter | Qt::AlignLeft,
               "+" + formatDuration(span) + " in view");
    for (int guard = 0; guard < 1000 && tick <= rel0 + span; ++guard, tick += step) {
        const double x = kLabelWidth + (tick - rel0) / pxDur;
        if (x > plotRight) break;
        p.setPen(QColor(120, 120, 120));
        p.drawLine(QPointF(x, kAxisHeight - 7), QPointF(x, kAxisHeight - 1));
        p.setPen(QColor(40, 40, 40));
        p.drawText(QRectF(x + 3, 0, 120, kAxisHeight - 4), Qt::AlignVCenter | Qt::AlignLeft,
                   formatTick(tick, step));
    }
}

void TimelineView::paintCpuLane(QPainter& p, const Track& track, int y) {
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(250, 250, 250));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(6, y, kLabelWidth - 12, track.height), Qt::AlignVCenter,
               track.cpu < 0 ? QString("no CPU") : QString("CPU %1").arg(track.cpu));
    const auto found = data_->cpus.find(track.cpu);
    if (found == data_->cpus.end()) return;
    const auto& slices = found->second;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    const int h = track.height - 3;
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, plotWidth(), track.height));
    if (slices.empty() && data_->lanes) {
        // A CPU the sideband has records from but no switch timeline for.
        p.setPen(QColor(150, 150, 150));
        p.drawText(QRect(kLabelWidth + 6, y, plotWidth() - 12, track.height),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   track.cpu < 0 ? QString("records that name no CPU")
                                 : QString("no context switches recorded on this CPU"));
    } else if (!slices.empty()) {
        // Idle: a thin line from the first thread on (before it nothing is known);
        // the threads are painted over it.
        const double a = (double(slices.front().start) - double(viewBegin_)) / pxDur;
        const double b = (double(std::max(slices.back().end, data_->end)) - double(viewBegin_)) / pxDur;
        if (b > 0 && a < plotWidth()) {
            p.setPen(QColor(175, 175, 185));
            const int mid = y + 1 + h / 2;
            p.drawLine(QPointF(kLabelWidth + std::max(0.0, a), mid),
                       QPointF(kLabelWidth + std::min(double(plotWidth()), b), mid));
        }
    }
    auto nameOf = [&](int32_t tid) {
        auto it = data_->threadNames.find(tid);
        if (it != data_->threadNames.end()) return QString::fromStdString(it->second);
        for (const auto& t : data_->threads)
            if (t.tid == tid) return QString::fromStdString(t.name);
        return QString("tid %1").arg(tid);
    };
    const auto lodFound = cpuLods_.find(track.cpu);
    if (slices.empty() || lodFound == cpuLods_.end()) {
        paintLosses(p, track.cpu, y, track.height);
        p.restore();
        return;
    }
    const CpuLod& lod = *lodFound->second;
    const int W = plotWidth();
    // Coloured by process. A pixel column of several slices shows the process
    // that ran most of it: over the lane's height where threads ran at least
    // half of the column, over its lower third where the CPU was mostly idle.
    std::vector<QRgb> colour(size_t(W), 0);
    std::vector<uint8_t> busy(size_t(W), 0);
    ColumnTally tally;
    if (lod.summarized() && pxDur >= double(lod.bucketDur[0])) {
        // Zoomed out: a few summary cells per column.
        size_t level = 0;
        while (level + 1 < lod.bucketDur.size() && double(lod.bucketDur[level + 1]) <= pxDur)
            ++level;
        const double bd = double(lod.bucketDur[level]), t0 = double(lod.t0);
        const uint32_t n = lod.n[level];
        const CpuLod::Cell* row = lod.cells[level].data();
        for (int x = 0; x < W; ++x) {
            const double a = double(viewBegin_) + x * pxDur, b = a + pxDur;
            if (b <= t0 || a >= double(lod.extentEnd)) continue;
            const uint64_t ba = a <= t0 ? 0 : uint64_t((a - t0) / bd);
            const uint64_t bb = std::min<uint64_t>(n - 1, uint64_t(std::max(0.0, (b - t0) / bd)));
            tally.clear();
            uint32_t busySum = 0, cells = 0;
            for (uint64_t k = ba; k <= bb; ++k, ++cells) {
                const CpuLod::Cell c = row[k];
                busySum += c.busy;
                if (c.key >= 0) tally.add(c.key, c.cover);
            }
            frame_.summaryCells += cells;
            const int32_t key = tally.most().first;
            if (key < 0 || !busySum) continue;
            colour[size_t(x)] = lod.rgb[size_t(key)];
            busy[size_t(x)] = uint8_t((busySum + cells - 1) / cells);
        }
        frame_.rects += uint64_t(paintColumns(p, kLabelWidth, y + 1, h, colour, &busy));
    } else {
        // Zoomed in: the slices in view; one a pixel wide or more is drawn (and
        // named) as it is, narrower ones are tallied per column.
        struct Wide {
            QRect rect;
            QRgb rgb;
            int32_t tid;
        };
        std::vector<Wide> wide;
        auto it = std::upper_bound(slices.begin(), slices.end(), viewBegin_,
                                   [](uint64_t t, const TimelineData::CpuSlice& s) { return t < s.start; });
        if (it != slices.begin()) --it;
        int column = -1;
        ColumnTally spill;  // what reaches into the column after `column`
        auto finish = [&](ColumnTally& t, int x) {
            if (x >= 0 && x < W && t.busy) {
                const int32_t key = t.most().first;
                if (key >= 0) {
                    colour[size_t(x)] = lod.rgb[size_t(key)];
                    busy[size_t(x)] = share255(t.busy, std::max<uint64_t>(1, uint64_t(pxDur)));
                }
            }
            t.clear();
        };
        int32_t lastKey = -1;
        int64_t lastLaneKey = INT64_MIN;
        for (; it != slices.end() && it->start < viewEnd_; ++it) {
            const auto& s = *it;
            ++frame_.spansWalked;
            if (s.end <= viewBegin_ || s.tid <= 0) continue;
            if (laneKey(s) != lastLaneKey) lastLaneKey = laneKey(s), lastKey = lod.keyIndex(lastLaneKey);
            const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin_)) / pxDur);
            const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin_)) / pxDur);
            if (x1 - x0 >= 1) {
                const int a = int(std::floor(x0)), b = std::max(a + 1, int(std::ceil(x1)));
                const QRgb rgb = lastKey >= 0 ? lod.rgb[size_t(lastKey)]
                                              : (s.pid > 0 ? processColor(s.pid) : threadColor(s.tid)).rgb();
                wide.push_back({QRect(kLabelWidth + a, y + 1, b - a, h), rgb, s.tid});
                continue;
            }
            const int c0 = int(std::floor(x0));
            if (c0 != column) {
                finish(tally, column);
                if (c0 == column + 1) {
                    std::swap(tally, spill);
                } else {
                    finish(spill, column + 1);
                }
                column = c0;
            }
            // A slice narrower than a pixel reaches at most into the next column.
            const double split = std::min(x1, double(c0 + 1));
            if (lastKey < 0) continue;
            tally.add(lastKey, uint64_t((split - x0) * pxDur + 0.5));
            if (x1 > split) spill.add(lastKey, uint64_t((x1 - split) * pxDur + 0.5));
        }
        finish(tally, column);
        finish(spill, column + 1);
        frame_.rects += uint64_t(paintColumns(p, kLabelWidth, y + 1, h, colour, &busy));
        for (const Wide& w : wide) {
            p.fillRect(w.rect, QColor(w.rgb));
            ++frame_.rects;
            if (w.rect.width() >= kLabelMinWidth) {
                p.setPen(QColor(20, 20, 20));
                const QRect visible = w.rect.intersected(QRect(kLabelWidth, y, W, track.height));
                p.drawText(visible.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                           p.fontMetrics().elidedText(QString("%1 %2").arg(nameOf(w.tid)).arg(w.tid),
                                                      Qt::ElideRight, visible.width() - 5));
            }
        }
    }
    paintLosses(p, track.cpu, y, track.height);
    p.restore();
}

void TimelineView::paintLosses(QPainter& p, int cpu, int y, int height) {
    if (!data_->lanes) return;
    const auto found = data_->lanes->losses.find(cpu);
    if (found == data_->lanes->losses.end()) return;
    const auto& losses = found->second;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    auto xOfTime = [&](uint64_t t) { return (double(t) - double(viewBegin_)) / pxDur; };
    // Throttles first: a translucent band for as long as sampling stopped.
    for (const SidebandLanes::Loss& l : losses) {
        if (l.kind != SidebandLanes::Loss::Throttle) continue;
        const uint64_t end = l.end ? l.end : data_->end;
        if (end < viewBegin_ || l.time > viewEnd_) continue;
        const double a = std::max(-2.0, xOfTime(l.time)), b = std::min(plotWidth() + 2.0, xOfTime(end));
        QColor band = lossColor(l.kind);
        band.setAlpha(70);
        p.fillRect(QRectF(kLabelWidth + a, y, std::max(1.0, b - a), height), band);
    }
    // Then a marker per loss (one per pixel column: the first there names the
    // colour): a strip along the top of the lane, and a triangle where markers
    // are far enough apart to be told apart, so the threads stay visible below.
    auto it = std::lower_bound(losses.begin(), losses.end(),
                               viewBegin_ > uint64_t(3 * pxDur) ? viewBegin_ - uint64_t(3 * pxDur) : 0,
                               [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
    double lastMarker = -1e9;
    while (it != losses.end() && double(it->time) <= double(viewEnd_) + 3 * pxDur) {
        const double x = std::floor(xOfTime(it->time));
        const QColor c = lossColor(it->kind);
        const int xi = kLabelWidth + int(x);
        const uint64_t next = uint64_t(std::max(0.0, double(viewBegin_) + (x + 1) * pxDur)) + 1;
        auto jump = std::lower_bound(it + 1, losses.end(), next,
                                     [](const SidebandLanes::Loss& l, uint64_t t) { return l.time < t; });
        const bool isolated = (jump == losses.end() || xOfTime(jump->time) - x >= 8) && x - lastMarker >= 8;
        p.fillRect(QRect(xi - 1, y, 2, kLossStrip), c);
        if (isolated) {
            const QPointF tri[3] = {QPointF(xi - 4.5, y), QPointF(xi + 4.5, y), QPointF(xi, y + 9)};
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawPolygon(tri, 3);
            p.fillRect(QRect(xi - 1, y, 2, height), c);
        }
        lastMarker = x;
        ++frame_.rects;
        it = jump > it ? jump : it + 1;
    }
    p.setBrush(Qt::NoBrush);
}

void TimelineView::paintProcessHeader(QPainter& p, const Track& track, int y) {
    const int plotRight = kLabelWidth + plotWidth();
    p.fillRect(QRect(0, y, plotRight, track.height), QColor(228, 233, 240));
    p.fillRect(QRect(0, y, 4, track.height), processColor(track.pid));
    drawDisclosure(p, 7, y, track.height, !processCollapsed(track.pid));
    QFont bold = p.font();
    bold.setBold(true);
    const QFont normal = p.font();
    p.setFont(bold);
    p.setPen(QColor(25, 25, 35));
    QString title;
    const SidebandLanes* lanes = data_->lanes.get();
    if (lanes && track.process >= 0) {
        const SidebandLanes::Process& proc = lanes->processes[size_t(track.process)];
        // A process the sideband never named is called "pid N" once, not "pid N  pid N".
        const QString name = QString::fromStdString(proc.name), byPid = QString("pid %1").arg(proc.pid);
        title = proc.pid <= 0                     ? name
                : name.isEmpty() || name == byPid ? byPid
                                                  : QString("%1  pid %2").arg(name).arg(proc.pid);
        title += QString("  ·  %1 %2  ·  %3 on CPU  ·  %4 samples")
                     .arg(proc.threads.size())
                     .arg(proc.threads.size() == 1 ? "thread" : "threads")
                     .arg(formatDuration(double(proc.runTime)))
                     .arg(proc.samples);
    } else {
        title = track.pid > 0 ? QString("pid %1").arg(track.pid) : QString("unknown process");
    }
    if (processCollapsed(track.pid)) title += "  ·  collapsed";
    if (lanes && track.process >= 0 && !laneState_.pinned.empty() && !track.pinned) {
        // Its threads pinned on top are not repeated here.
        int pinned = 0;
        for (size_t li : lanes->processes[size_t(track.process)].threads)
            pinned += laneState_.isPinned(TimelineLaneState::Pin::Thread, lanes->threads[li].tid);
        if (pinned) title += QString("  ·  %1 pinned on top").arg(pinned);
    }
    int left = 20;
    if (track.pinned && laneState_.isPinned(TimelineLaneState::Pin::Process, track.pid)) {
        drawPin(p, 23, y + (track.height - 12) / 2);
        left += 10;
    }
    p.drawText(QRect(left, y, plotRight - left - 6, track.height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(title, Qt::ElideRight, plotRight - left - 6));
    p.setFont(normal);
}

void TimelineView::paintCpuNote(QPainter& p, const Track& track, int y, const std::string& note) {
    // A CPU the file names but nothing was recorded on: grey, hatched, saying why.
    const QString text = QString::fromStdString(note);
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(244, 244, 244));
    p.setPen(QColor(120, 120, 120));
    p.drawText(QRect(6, y, kLabelWidth - 12, track.height), Qt::AlignVCenter,
               QString("CPU %1  %2").arg(track.cpu).arg(text));
    const QRect body(kLabelWidth, y + 1, plotWidth(), track.height - 2);
    p.fillRect(body, cpuNoteColor());
    p.fillRect(body, QBrush(QColor(185, 185, 185), Qt::BDiagPattern));
    QFont italic = p.font();
    const QFont normal = p.font();
    italic.setItalic(true);
    p.setFont(italic);
    const QString said = cpuNoteText(text).section('\n', 0, 0);
    const int w = p.fontMetrics().horizontalAdvance(said) + 12;
    const QRect label(kLabelWidth + 8, y + 2, std::min(w, plotWidth() - 16), track.height - 4);
    p.fillRect(label, cpuNoteColor());
    p.setPen(QColor(90, 90, 90));
    p.drawText(label, Qt::AlignCenter, p.fontMetrics().elidedText(said, Qt::ElideRight, label.width() - 4));
    p.setFont(normal);
}

void TimelineView::paintHealthHeader(QPainter& p, const Track& track, int y) {
    const int plotRight = kLabelWidth + plotWidth();
    p.fillRect(QRect(0, y, plotRight, track.height), QColor(232, 236, 230));
    p.fillRect(QRect(0, y, 4, track.height), healthRingColor());
    drawDisclosure(p, 7, y, track.height, !laneState_.healthCollapsed);
    const QFont normal = p.font();
    QFont bold = normal;
    bold.setBold(true);
    p.setFont(bold);
    p.setPen(QColor(25, 25, 35));
    const QString title = "Capture health";
    p.drawText(QRect(20, y, kLabelWidth, track.height), Qt::AlignVCenter | Qt::AlignLeft, title);
    p.setFont(normal);
    // A legend: what each mark means.
    int x = 20 + QFontMetrics(bold).horizontalAdvance(title) + 18;
    const int mid = y + track.height / 2;
    auto item = [&](const QColor& c, int kind, const QString& text) {
        if (kind == 0)
            p.fillRect(QRect(x, mid - 4, 12, 8), c);
        else if (kind == 1)
            p.fillRect(QRect(x, mid - 1, 12, 2), c);
        else
            p.fillRect(QRect(x + 5, mid - 6, 2, 12), c);
        x += 16;
        p.setPen(QColor(60, 60, 70));
        const int w = p.fontMetrics().horizontalAdvance(text);
        p.drawText(QRect(x, y, w + 4, track.height), Qt::AlignVCenter | Qt::AlignLeft, text);
        x += w + 16;
    };
    item(healthRingColor(), 0, "data ring fill (peak per interval, 0-100 %)");
    item(healthFullColor(), 0, "ring ≥ 95 % full");
    item(healthAuxColor(), 1, "AUX area fill");
    item(lossColor(SidebandLanes::Loss::LostRecords), 2, "records lost");
    if (laneState_.healthCollapsed && data_->lanes) {
        p.setPen(QColor(90, 90, 100));
        p.drawText(QRect(x, y, plotRight - x, track.height), Qt::AlignVCenter | Qt::AlignLeft,
                   QString("·  %1 CPUs collapsed").arg(data_->lanes->health.size()));
    }
}

void TimelineView::paintHealthLane(QPainter& p, const Track& track, int y) {
    const SidebandLanes& lanes = *data_->lanes;
    const auto& points = lanes.health.at(track.cpu);
    const int W = plotWidth(), h = track.height - 4, base = y + track.height - 2;
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(250, 250, 248));
    p.setPen(QColor(40, 40, 40));
    p.drawText(QRect(6, y, kLabelWidth - 12, track.height), Qt::AlignVCenter | Qt::AlignLeft,
               QString("CPU %1").arg(track.cpu));
    const float peak = healthPeak_.count(track.cpu) ? healthPeak_.at(track.cpu) : 0.0f;
    p.setPen(peak >= kRingNearlyFull ? lossColor(SidebandLanes::Loss::LostRecords) : QColor(110, 110, 120));
    p.drawText(QRect(6, y, kLabelWidth - 12, track.height), Qt::AlignVCenter | Qt::AlignRight,
               QString("peak %1 %").arg(double(peak), 0, 'f', 0));
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + track.height - 1);
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, W, track.height));
    p.fillRect(QRect(kLabelWidth, y, W, track.height), QColor(249, 250, 251));
    p.setPen(QPen(QColor(225, 228, 232), 1, Qt::DotLine));
    p.drawLine(kLabelWidth, base - h, kLabelWidth + W, base - h);
    p.drawLine(kLabelWidth, base - h / 2, kLabelWidth + W, base - h / 2);
    p.setPen(QColor(230, 232, 236));
    p.drawLine(kLabelWidth, y + track.height - 1, kLabelWidth + W, y + track.height - 1);
    if (points.empty()) {
        p.restore();
        return;
    }
    // Per pixel column: the highest ring and AUX fill of the points whose
    // intervals (previous point, this point] reach into it, and whether a
    // count of losses grew there.
    const double pxDur = double(viewEnd_ - viewBegin_) / W;
    auto col = [&](uint64_t t) { return (double(t) - double(viewBegin_)) / pxDur; };
    std::vector<float> ring(size_t(W), -1.0f), aux(size_t(W), -1.0f);
    std::vector<char> lost(size_t(W), 0);
    auto it = std::lower_bound(points.begin(), points.end(), viewBegin_,
                               [](const SidebandLanes::Health& a, uint64_t t) { return a.time < t; });
    for (; it != points.end(); ++it) {
        // The first point's peak is since the capture began: from the recording's start.
        const uint64_t from = it == points.begin() ? std::min(it->time, data_->begin) : (it - 1)->time;
        if (from > viewEnd_) break;
        const double c0 = col(from), c1 = col(it->time);
        const int a = std::max(0, int(std::floor(std::max(-1.0, c0)))),
                  b = std::min(W - 1, int(std::floor(std::min(double(W), c1))));
        for (int x = a; x <= b; ++x) {
            ring[size_t(x)] = std::max(ring[size_t(x)], it->ringFill);
            if (it->auxFill >= 0) aux[size_t(x)] = std::max(aux[size_t(x)], it->auxFill);
        }
        const bool grew = it == points.begin()
                              ? it->lostRecords + it->lostSamples + it->auxLost > 0
                              : it->lostRecords + it->lostSamples + it->auxLost >
                                    (it - 1)->lostRecords + (it - 1)->lostSamples + (it - 1)->auxLost;
        const int xt = int(std::floor(c1));
        if (grew && xt >= 0 && xt < W) lost[size_t(xt)] = 1;
        ++frame_.rects;
    }
    // At least a pixel: a point of 0 % still shows that there is data.
    auto yOf = [&](float v) {
        return std::min(double(base) - 1, double(base) - double(std::clamp(v, 0.0f, 100.0f)) * h / 100.0);
    };
    // The ring's fill: an area per run of columns with data, full columns over it in their colour.
    for (int x = 0; x < W;) {
        if (ring[size_t(x)] < 0) {
            ++x;
            continue;
        }
        QPolygonF area;
        area << QPointF(kLabelWidth + x, base);
        int e = x;
        for (; e < W && ring[size_t(e)] >= 0; ++e) {
            const double v = yOf(ring[size_t(e)]);
            area << QPointF(kLabelWidth + e, v) << QPointF(kLabelWidth + e + 1, v);
        }
        area << QPointF(kLabelWidth + e, base);
        p.setPen(Qt::NoPen);
        p.setBrush(healthRingColor());
        p.drawPolygon(area);
        for (int k = x; k < e; ++k)
            if (ring[size_t(k)] >= kRingNearlyFull)
                p.fillRect(QRectF(kLabelWidth + k, yOf(ring[size_t(k)]), 1, base - yOf(ring[size_t(k)])),
                           healthFullColor());
        x = e;
    }
    p.setBrush(Qt::NoBrush);
    // The AUX area's fill: a line.
    p.setPen(QPen(healthAuxColor(), 1.5));
    QPolygonF line;
    auto flushLine = [&] {
        if (line.size() > 1) p.drawPolyline(line);
        if (line.size() == 1) p.drawPoint(line.front());
        line.clear();
    };
    for (int x = 0; x < W; ++x) {
        if (aux[size_t(x)] < 0) {
            flushLine();
            continue;
        }
        line << QPointF(kLabelWidth + x + 0.5, yOf(aux[size_t(x)]));
    }
    flushLine();
    // Losses: a red tick where a count grew.
    const QColor red = lossColor(SidebandLanes::Loss::LostRecords);
    for (int x = 0; x < W; ++x) {
        if (!lost[size_t(x)]) continue;
        p.fillRect(QRect(kLabelWidth + x - 1, y + 1, 2, track.height - 2), red);
        const QPointF tri[3] = {QPointF(kLabelWidth + x - 4, y + 1), QPointF(kLabelWidth + x + 4, y + 1),
                                QPointF(kLabelWidth + x, y + 7)};
        p.setPen(Qt::NoPen);
        p.setBrush(red);
        p.drawPolygon(tri, 3);
        p.setBrush(Qt::NoBrush);
    }
    p.restore();
}

void TimelineView::paintThreadLane(QPainter& p, const Track& track, int y) {
    const int plotRight = kLabelWidth + plotWidth();
    const SidebandLanes::Thread* lane =
        track.lane >= 0 ? &data_->lanes->threads[size_t(track.lane)] : nullptr;
    const TimelineData::Thread* spans = track.thread != kNoThread ? &data_->threads[track.thread] : nullptr;
    const int32_t pid = lane ? lane->pid : spans->pid, tid = lane ? lane->tid : spans->tid;
    const QString name = QString::fromStdString(lane ? lane->name : spans->name);
    p.fillRect(QRect(0, y, kLabelWidth, track.height), QColor(246, 247, 249));
    p.setPen(QColor(225, 228, 232));
    p.drawLine(0, y + track.height - 1, plotRight, y + track.height - 1);
    p.setPen(QColor(30, 30, 30));
    p.drawText(QRect(14, y, kLabelWidth - 20, track.height), Qt::AlignVCenter | Qt::AlignLeft,
               p.fontMetrics().elidedText(
                   name == QString("tid %1").arg(tid) ? name : QString("%1 %2").arg(name).arg(tid),
                   Qt::ElideMiddle, kLabelWidth - 20));
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, y, kLabelWidth - 1, y + track.height - 1);
    if (!lane) return;
    const double pxDur = double(viewEnd_ - viewBegin_) / plotWidth();
    const double W = plotWidth();
    p.save();
    p.setClipRect(QRect(kLabelWidth, y, plotWidth(), track.height));
    // Runs, merged where narrower than a pixel.
    const QColor run = pid > 0 ? processColor(pid) : threadColor(tid);
    const auto& runs = lane->runs;
    auto it = std::upper_bound(runs.begin(), runs.end(), viewBegin_,
                               [](uint64_t t, const SidebandLanes::Run& r) { return t < r.start; });
    if (it != runs.begin()) --it;
    double px0 = 0, px1 = -1e300;
    bool pending = false;
    auto flush = [&] {
        if (!pending) return;
        const int a = int(std::floor(px0)), b = std::max(a + 1, int(std::ceil(px1)));
        p.fillRect(QRect(kLabelWidth + a, y + 3, b - a, kRunBand), run);
        ++frame_.rects;
        pending = false;
    };
    while (it != runs.end() && it->start < viewEnd_) {
        if (it->end <= viewBegin_) {
            ++it;
            continue;
        }
        const double x0 = std::max(-2.0, (double(it->start) - double(viewBegin_)) / pxDur);
        const double x1 = std::min(W + 2.0, (double(it->end) - double(viewBegin_)) / pxDur);
        if (pending && x0 < px1 + 1) {
            px1 = std::max(px1, x1);
        } else {
            flush();
            pending = true, px0 = x0, px1 = x1;
        }
        const uint64_t next = viewBegin_ + uint64_t((std::floor(x1) + 1) * pxDur) + 1;
        auto jump =
            gallop(it + 1, runs.end(), [next](const SidebandLanes::Run& r) { return r.start < next; });
        if (jump - it > 2) {
            px1 = std::max(px1, std::min(W + 2.0, (double((jump - 1)->end) - double(viewBegin_)) / pxDur));
            it = jump;
        } else {
            ++it;
        }
    }
    flush();
    // Samples: a tick per pixel column that has any (ticks side by side: one rectangle).
    const auto& samples = lane->samples;
    auto si = std::lower_bound(samples.begin(), samples.end(), viewBegin_,
                               [](const SidebandLanes::Sample& s, uint64_t t) { return s.time < t; });
    const QColor tick = sampleColor();
    int tick0 = 0, tick1 = -2;  // the pending run of ticked columns
    auto flushTicks = [&] {
        if (tick1 < tick0) return;
        p.fillRect(
            QRect(kLabelWidth + tick0, y + 4 + kRunBand, tick1 - tick0 + 1, track.height - 6 - kRunBand),
            tick);
        ++frame_.rects;
    };
    while (si != samples.end() && si->time < viewEnd_) {
        const double x = std::floor((double(si->time) - double(viewBegin_)) / pxDur);
        if (int(x) == tick1 + 1) {
            tick1 = int(x);
        } else if (int(x) > tick1) {
            flushTicks();
            tick0 = tick1 = int(x);
        }
        const uint64_t next = viewBegin_ + uint64_t((x + 1) * pxDur) + 1;
        auto jump =
            gallop(si + 1, samples.end(), [next](const SidebandLanes::Sample& s) { return s.time < next; });
        si = jump > si ? jump : si + 1;
    }
    flushTicks();
    p.restore();
}

void TimelineView::paintThreadRows(QPainter& p, size_t thread, int firstRow, int lastRow, int y0) {
    const TimelineData::Thread& th = data_->threads[thread];
    const Lod& lod = *lods_[thread];
    const SpanStore& store = th.spans;
    const int W = plotWidth();
    const double pxDur = double(viewEnd_ - viewBegin_) / W;
    const int rowsTop = y0 + firstRow * kRowHeight, rowsBottom = y0 + (lastRow + 1) * kRowHeight;
    // Decoded window in pixels; outside it: shaded, nothing drawn.
    const double dx0 = std::clamp((double(data_->decodedBegin) - double(viewBegin_)) / pxDur, 0.0, double(W));
    const double dx1 = std::clamp((double(data_->decodedEnd) - double(viewBegin_)) / pxDur, 0.0, double(W));
    const int decodedLeft = int(std::floor(dx0)), decodedRight = int(std::ceil(dx1));
    const QColor shade(226, 226, 230);
    if (decodedLeft > 0) p.fillRect(QRect(kLabelWidth, rowsTop, decodedLeft, rowsBottom - rowsTop), shade);
    if (decodedRight < W)
        p.fillRect(QRect(kLabelWidth + decodedRight, rowsTop, W - decodedRight, rowsBottom - rowsTop), shade);
    if (!hint_.isEmpty() && (decodedLeft > 0 || decodedRight < W) && firstRow == 0) {
        const int w = decodedLeft >= W - decodedRight ? decodedLeft : W - decodedRight;
        const int x = decodedLeft >= W - decodedRight ? 0 : decodedRight;
        p.setPen(QColor(90, 90, 100));
        p.drawText(QRect(kLabelWidth + x, rowsTop, w, kRowHeight), Qt::AlignCenter,
                   p.fontMetrics().elidedText(hint_, Qt::ElideRight, w - 4));
    }
    if (decodedRight <= decodedLeft || store.empty()) return;
    p.save();
    p.setClipRect(
        QRect(kLabelWidth + decodedLeft, rowsTop, decodedRight - decodedLeft, rowsBottom - rowsTop));

    QBrush gapBrush(gapHatchColor(), Qt::BDiagPattern);
    const QColor gapBase = gapColor();
    std::vector<int> rectsInRow(size_t(lastRow + 1), 0);
    auto fill = [&](int depth, int a, int b, uint32_t function, bool gap, size_t index, bool merged,
                    bool label) {
        const QRect r(kLabelWidth + a, y0 + depth * kRowHeight, std::max(1, b - a), kRowHeight - 1);
        ++frame_.rects;
        ++rectsInRow[size_t(depth)];
        if (gap) {
            p.fillRect(r, gapBase);
            if (r.width() >= 3)
                p.fillRect(r, gapBrush);
            else
                p.fillRect(r, gapHatchColor());
        } else if (!highlight_.empty() && (function >= highlight_.size() || !highlight_[function])) {
            // A search is on and this is not a hit: faded, as Perfetto draws slices that do not match.
            const QColor c = colorOf(function);
            p.fillRect(r,
                       QColor((c.red() + 3 * 245) / 4, (c.green() + 3 * 245) / 4, (c.blue() + 3 * 245) / 4));
        } else {
            p.fillRect(r, colorOf(function));
        }
        const bool isSelected = selected_.kind == TimelineHit::ThreadSpan && selected_.tid == th.tid &&
                                !merged && selected_.index == index && index != SIZE_MAX;
        if (isSelected) {
            p.setPen(QPen(Qt::black, 2));
            p.drawRect(r.adjusted(1, 1, -1, -1));
        }
        if (r.width() >= kLabelMinWidth && label) {
            const QRect visible = r.intersected(QRect(kLabelWidth, r.y(), W, r.height()));
            QString text = gap ? QString("gap") : functionName(function);
            if (gap && index < store.size()) {
                const Span g = store.at(index);
                if (g.isGap() && size_t(g.gap) < store.gaps().size())
                    text = QString("gap: ") + gapReasonName(store.gaps()[size_t(g.gap)].reason);
            }
            p.setPen(QColor(20, 20, 20));
            p.drawText(visible.adjusted(3, 0, -2, 0), Qt::AlignVCenter | Qt::AlignLeft,
                       p.fontMetrics().elidedText(text, Qt::ElideRight, visible.width() - 5));
        }
    };

    const size_t lo = store.lowerBound(viewBegin_), hi = store.lowerBound(viewEnd_);
    const bool summary = lod.summarized() && pxDur >= double(lod.bucketDur[0]) && hi - lo >= kWalkAlways;
    if (summary) {
        size_t level = 0;
        while (level + 1 < lod.bucketDur.size() && double(lod.bucketDur[level + 1]) <= pxDur)
            ++level;
        const uint64_t bd = lod.bucketDur[level];
        const uint32_t n = lod.n[level];
        const auto& cells = lod.cells[level];
        // Runs of a few pixels go into an image per row, the others are filled (and named).
        std::vector<QRgb> narrow(size_t(W), 0);
        auto shownRgb = [&](uint32_t function) {
            const QColor c = colorOf(function);
            if (highlight_.empty() || (function < highlight_.size() && highlight_[function])) return c.rgb();
            return qRgb((c.red() + 3 * 245) / 4, (c.green() + 3 * 245) / 4, (c.blue() + 3 * 245) / 4);
        };
        for (int d = firstRow; d <= lastRow && size_t(d) < cells.size(); ++d) {
            if (cells[size_t(d)].empty()) continue;
            const uint32_t* row = cells[size_t(d)].data();
            int runStart = -1;
            uint32_t runKey = 0;
            auto flush = [&](int x) {
                if (runStart < 0) return;
                if (x - runStart < kNarrowRun && !(runKey & kGapBit)) {
                    // A few pixels: into the row's image (a rectangle each would cost more).
                    const QRgb c = shownRgb(runKey & kFnMask);
                    for (int i = runStart; i < x; ++i)
                        narrow[size_t(i)] = c;
                    ++frame_.rects;
                    ++rectsInRow[size_t(d)];
                } else {
                    fill(d, runStart, x, runKey & kFnMask, runKey & kGapBit, SIZE_MAX, true,
                         !(runKey & kGapBit));
                }
                runStart = -1;
            };
            for (int x = std::max(0, decodedLeft); x < std::min(W, decodedRight); ++x) {
                const double a = double(viewBegin_) + x * pxDur, b = a + pxDur;
                if (b <= double(lod.t0) || a >= double(lod.extentEnd)) {
                    flush(x);
                    continue;
                }
                const uint64_t ba = a <= double(lod.t0) ? 0 : uint64_t((a - double(lod.t0)) / double(bd));
                uint64_t bb = uint64_t(std::max(0.0, (b - double(lod.t0)) / double(bd)));
                if (bb >= n) bb = n - 1;
                uint32_t gap = 0, best = kEmptyCell;
                for (uint64_t k = ba; k <= bb && k < n; ++k) {
                    const uint32_t c = row[k];
                    gap |= c & kGapBit;
                    if (fnOf(c) != kEmptyFn && coverOf(c) > coverOf(best)) best = c;
                }
                frame_.summaryCells += bb >= ba ? bb - ba + 1 : 0;
                if (!gap && fnOf(best) == kEmptyFn) {
                    flush(x);
                    continue;
                }
                const uint32_t key = gap ? kGapBit : fnOf(best);
                if (runStart >= 0 && key == runKey) continue;
                flush(x);
                runStart = x, runKey = key;
            }
            flush(std::min(W, decodedRight));
            paintColumns(p, kLabelWidth, y0 + d * kRowHeight, kRowHeight - 1, narrow, nullptr);
            std::fill(narrow.begin(), narrow.end(), 0);
        }
        // Spans reaching past the summary's end.
        for (int d = firstRow; d <= lastRow && size_t(d) < lod.tail.size(); ++d) {
            if (lod.tail[size_t(d)] == kNone) continue;
            const Span s = store.at(lod.tail[size_t(d)]);
            const double x0 = (double(std::max(lod.extentEnd, s.start)) - double(viewBegin_)) / pxDur;
            const double x1 = (double(s.end) - double(viewBegin_)) / pxDur;
            if (x1 <= 0 || x0 >= W) continue;
            fill(d, int(std::floor(std::max(-2.0, x0))), int(std::ceil(std::min(W + 2.0, x1))), s.function,
                 s.isGap(), lod.tail[size_t(d)], false, true);
        }
        // Depths too sparse to summarize (a deep stack's rare frames): their spans
        // in view, merged where narrower than a pixel, skipping to the next pixel
        // column past those that merge anyway.
        for (int d = firstRow; d <= lastRow && size_t(d) < lod.sparse.size(); ++d) {
            const std::vector<uint32_t>& list = lod.sparse[size_t(d)];
            if (list.empty() || !cells[size_t(d)].empty()) continue;  // painted from its cells
            auto startOf = [&](uint32_t i) { return store.at(i).start; };
            // Spans of one depth do not overlap: the last one starting before the view may reach into it.
            size_t k = size_t(std::partition_point(list.begin(), list.end(),
                                                   [&](uint32_t i) { return startOf(i) < viewBegin_; }) -
                              list.begin());
            if (k > 0) --k;
            double px0 = 0, px1 = -1e300;
            uint32_t pfn = 0;
            bool pending = false, pgap = false, pmerged = false;
            size_t pindex = 0;
            auto flushRow = [&] {
                if (pending)
                    fill(d, int(std::floor(px0)), std::max(int(std::floor(px0)) + 1, int(std::ceil(px1))),
                         pfn, pgap, pindex, pmerged, !pmerged);
                pending = false;
            };
            while (k < list.size()) {
                const Span s = store.at(list[k]);
                ++frame_.spansWalked;
                if (s.start >= viewEnd_) break;
                if (s.end <= viewBegin_) {
                    ++k;
                    continue;
                }
                const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin_)) / pxDur);
                const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin_)) / pxDur);
                if (x1 - x0 >= 1) {
                    flushRow();
                    fill(d, int(std::floor(x0)), int(std::ceil(x1)), s.function, s.isGap(), list[k], false,
                         true);
                    ++k;
                    continue;
                }
                if (pending && x0 < px1 + 1 && std::floor(x0) <= std::floor(px1)) {
                    px1 = std::max(px1, x1);
                    pmerged = true;
                    pgap = pgap || s.isGap();
                } else {
                    flushRow();
                    pending = true, pmerged = false;
                    px0 = x0, px1 = x1, pfn = s.function, pgap = s.isGap(), pindex = list[k];
                }
                const uint64_t next = viewBegin_ + uint64_t((std::floor(x0) + 1) * pxDur) + 1;
                size_t lo = k + 1, step = 1;
                while (lo + step < list.size() && startOf(list[lo + step]) < next) {
                    lo += step;
                    step *= 2;
                }
                const size_t hi = std::min(list.size(), lo + step + 1);
                const size_t jump =
                    lo >= hi ? lo
                             : size_t(std::partition_point(list.begin() + ptrdiff_t(lo),
                                                           list.begin() + ptrdiff_t(hi),
                                                           [&](uint32_t i) { return startOf(i) < next; }) -
                                      list.begin());
                if (jump > k + 2) {
                    const Span last = store.at(list[jump - 1]);
                    px1 = std::max(px1, std::min(W + 2.0, (double(last.end) - double(viewBegin_)) / pxDur));
                    pmerged = true;
                    pgap = pgap || last.isGap();
                    k = jump;
                } else {
                    ++k;
                }
            }
            flushRow();
        }
    } else {
        // Walk the spans in view, per row merging what is narrower than a pixel.
        struct Pending {
            double x0 = 0, x1 = -1e300;
            uint32_t function = 0;
            bool gap = false, active = false, merged = false;
            size_t index = 0;
        };
        std::vector<Pending> pending(size_t(lastRow + 1));
        auto flush = [&](int d) {
            Pending& q = pending[size_t(d)];
            if (!q.active) return;
            fill(d, int(std::floor(q.x0)), std::max(int(std::floor(q.x0)) + 1, int(std::ceil(q.x1))),
                 q.function, q.gap, q.index, q.merged, !q.merged);
            q.active = false;
        };
        auto visit = [&](const Span& s, size_t index) {
            ++frame_.spansWalked;
            if (s.depth < firstRow || s.depth > lastRow) return;
            if (s.end <= viewBegin_ && !(s.end == s.start && s.start == viewBegin_)) return;
            const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin_)) / pxDur);
            const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin_)) / pxDur);
            Pending& q = pending[size_t(s.depth)];
            if (x1 - x0 >= 1) {
                flush(s.depth);
                fill(s.depth, int(std::floor(x0)), int(std::ceil(x1)), s.function, s.isGap(), index, false,
                     true);
                return;
            }
            if (q.active && x0 < q.x1 + 1 && std::floor(x0) <= std::floor(q.x1)) {
                q.x1 = std::max(q.x1, x1);
                q.merged = true;
                if (s.isGap()) q.gap = true;
                return;
            }
            flush(s.depth);
            q = {x0, x1, s.function, s.isGap(), true, false, index};
        };
        size_t i0 = 0;
        if (lod.summarized()) {
            const uint64_t from = std::max(viewBegin_, lod.t0);
            uint64_t b = (from - lod.t0) / lod.bucketDur[0];
            if (b >= lod.n[0]) b = lod.n[0] - 1;
            i0 = store.lowerBound(lod.t0 + b * lod.bucketDur[0]);
            // The spans open at the bucket's start, row by row, before the rest.
            std::vector<std::pair<uint32_t, int>> open;
            for (int d = firstRow; d <= lastRow && size_t(d) < lod.openAt.size(); ++d)
                if (!lod.openAt[size_t(d)].empty() && lod.openAt[size_t(d)][b] != kNone &&
                    lod.openAt[size_t(d)][b] < i0)
                    open.push_back({lod.openAt[size_t(d)][b], d});
            // Sparse depths: the last span before i0 may still be open.
            for (int d = firstRow; d <= lastRow && size_t(d) < lod.sparse.size(); ++d) {
                const std::vector<uint32_t>& list = lod.sparse[size_t(d)];
                auto k = std::lower_bound(list.begin(), list.end(), uint32_t(i0));
                if (k != list.begin()) open.push_back({*(k - 1), d});
            }
            std::sort(open.begin(), open.end());
            for (const auto& [index, d] : open)
                visit(store.at(index), index);
        }
        for (size_t i = i0; i < store.size(); ++i) {
            const Span s = store.at(i);
            if (s.start >= viewEnd_) break;
            visit(s, i);
        }
        for (int d = firstRow; d <= lastRow; ++d)
            flush(d);
    }
    for (int n : rectsInRow)
        frame_.maxRectsPerRow = std::max(frame_.maxRectsPerRow, n);
    p.restore();
}

// ---- Hit testing ----

std::optional<size_t> TimelineView::findSpan(size_t thread, int depth, uint64_t t, uint64_t tolerance) const {
    const SpanStore& store = data_->threads[thread].spans;
    const Lod& lod = *lods_[thread];
    if (store.empty()) return std::nullopt;
    const uint64_t from = t > tolerance ? t - tolerance : 0;
    size_t i0 = 0;
    std::optional<size_t> best;
    uint64_t bestDistance = UINT64_MAX;
    auto consider = [&](size_t i, const Span& s) {
        if (s.depth != depth) return;
        const uint64_t distance = t < s.start ? s.start - t : (t >= s.end ? t - s.end + 1 : 0);
        // Containment first; then the nearest; a gap before a function at the same distance.
        if (distance < bestDistance || (distance == bestDistance && s.isGap())) {
            bestDistance = distance;
            best = i;
        }
    };
    if (lod.summarized() && size_t(depth) < lod.sparse.size() && !lod.sparse[size_t(depth)].empty()) {
        // A sparse depth: its own spans, from the last one starting before `from`.
        const std::vector<uint32_t>& list = lod.sparse[size_t(depth)];
        auto k = std::partition_point(list.begin(), list.end(),
                                      [&](uint32_t i) { return store.at(i).start < from; });
        if (k != list.begin()) --k;
        for (; k != list.end(); ++k) {
            const Span s = store.at(*k);
            if (s.start > t + tolerance) break;
            consider(*k, s);
        }
        if (!best || bestDistance > tolerance) return std::nullopt;
        return best;
    }
    if (lod.summarized()) {
        uint64_t b = from <= lod.t0 ? 0 : (from - lod.t0) / lod.bucketDur[0];
        if (b >= lod.n[0]) b = lod.n[0] - 1;
        i0 = store.lowerBound(lod.t0 + b * lod.bucketDur[0]);
        if (size_t(depth) < lod.openAt.size() && !lod.openAt[size_t(depth)].empty()) {
            const uint32_t open = lod.openAt[size_t(depth)][b];
            if (open != kNone) consider(open, store.at(open));
        }
    }
    for (size_t i = i0, n = 0; i < store.size() && n < 4'000'000; ++i, ++n) {
        const Span s = store.at(i);
        if (s.start > t + tolerance) break;
        consider(i, s);
    }
    if (!best || bestDistance > tolerance) return std::nullopt;
    return best;
}

TimelineHit TimelineView::cpuHit(const Track& track, uint64_t t, uint64_t tolerance) const {
    TimelineHit hit;
    hit.cpu = track.cpu;
    // A loss marker first: they are drawn over the threads.
    if (data_->lanes) {
        const auto found = data_->lanes->losses.find(track.cpu);
        if (found != data_->lanes->losses.end()) {
            const auto& losses = found->second;
            const uint64_t reach = tolerance * 2;
            auto it = std::lower_bound(losses.begin(), losses.end(), t > reach ? t - reach : 0,
                                       [](const SidebandLanes::Loss& l, uint64_t v) { return l.time < v; });
            const SidebandLanes::Loss* best = nullptr;
            uint64_t bestDistance = UINT64_MAX;
            uint64_t total = 0;
            for (; it != losses.end() && it->time <= t + reach; ++it) {
                const uint64_t d = it->time > t ? it->time - t : t - it->time;
                total += it->count;
                if (d < bestDistance) bestDistance = d, best = &*it;
            }
            if (!best) {
                // Inside a throttle's band.
                for (const SidebandLanes::Loss& l : losses)
                    if (l.kind == SidebandLanes::Loss::Throttle && l.time <= t &&
                        t < (l.end ? l.end : data_->end))
                        best = &l;
            }
            if (best) {
                hit.kind = TimelineHit::Loss;
                hit.start = best->time;
                hit.end = best->kind == SidebandLanes::Loss::Throttle ? (best->end ? best->end : data_->end)
                                                                      : best->time;
                hit.loss = QString::fromStdString(describeLoss(*best));
                if (best->kind <= SidebandLanes::Loss::LostSamples && total > best->count)
                    hit.loss += QString("\n(%1 lost in the markers under the mouse)").arg(total);
                hit.pid = best->pid, hit.tid = best->tid;
                return hit;
            }
        }
    }
    const auto& slices = data_->cpus.at(track.cpu);
    auto it = std::upper_bound(slices.begin(), slices.end(), t,
                               [](uint64_t v, const TimelineData::CpuSlice& s) { return v < s.start; });
    const TimelineData::CpuSlice* found = nullptr;
    if (it != slices.begin() && (it - 1)->end > t)
        found = &*(it - 1);
    else if (it != slices.begin() && t - (it - 1)->end <= tolerance)
        found = &*(it - 1);
    else if (it != slices.end() && it->start - t <= tolerance)
        found = &*it;
    if (!found || found->tid <= 0) {
        // Between threads (after the first one): idle.
        if (it == slices.begin() || slices.empty()) return {};
        hit.kind = TimelineHit::CpuIdle;
        hit.start = (it - 1)->end;
        hit.end = it != slices.end() ? it->start : std::max(data_->end, hit.start);
        hit.pid = hit.tid = 0;
        return hit;
    }
    hit.kind = TimelineHit::CpuSlice;
    hit.pid = found->pid, hit.tid = found->tid;
    hit.start = found->start, hit.end = found->end;
    auto name = data_->threadNames.find(found->tid);
    if (name != data_->threadNames.end()) hit.threadName = QString::fromStdString(name->second);
    if (data_->lanes)
        if (const SidebandLanes::Process* proc = data_->lanes->process(found->pid))
            hit.processName = QString::fromStdString(proc->name);
    return hit;
}

TimelineHit TimelineView::laneHit(const Track& track, uint64_t t, uint64_t tolerance) const {
    TimelineHit hit;
    if (track.lane < 0 || !data_->lanes) return hit;
    const SidebandLanes& lanes = *data_->lanes;
    const SidebandLanes::Thread& th = lanes.threads[size_t(track.lane)];
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    if (const SidebandLanes::Process* proc = lanes.process(th.pid))
        hit.processName = QString::fromStdString(proc->name);
    // The nearest sample within a couple of pixels.
    const auto& samples = th.samples;
    auto it = std::lower_bound(samples.begin(), samples.end(), t > tolerance ? t - tolerance : 0,
                               [](const SidebandLanes::Sample& s, uint64_t v) { return s.time < v; });
    const SidebandLanes::Sample* best = nullptr;
    uint64_t bestDistance = UINT64_MAX;
    size_t here = 0;
    for (; it != samples.end() && it->time <= t + tolerance; ++it) {
        ++here;
        const uint64_t d = it->time > t ? it->time - t : t - it->time;
        if (d < bestDistance) bestDistance = d, best = &*it;
    }
    if (best) {
        hit.kind = TimelineHit::Sample;
        hit.start = hit.end = best->time;
        hit.cpu = best->cpu;
        hit.ip = best->ip;
        hit.samplesHere = here;
        if (best->event >= 0 && size_t(best->event) < lanes.events.size())
            hit.event = QString::fromStdString(lanes.events[size_t(best->event)]);
        const FunctionTable* functions = lanes.functions ? lanes.functions.get() : data_->functions.get();
        if (functions && best->function < functions->size() && best->function != FunctionTable::kUnknown) {
            hit.function = QString::fromStdString((*functions)[best->function].name);
            hit.file = QString::fromStdString((*functions)[best->function].file);
        }
        return hit;
    }
    const auto& runs = th.runs;
    auto r = std::upper_bound(runs.begin(), runs.end(), t,
                              [](uint64_t v, const SidebandLanes::Run& x) { return v < x.start; });
    if (r != runs.begin() && (r - 1)->end + tolerance > t) {
        --r;
        hit.kind = TimelineHit::ThreadRun;
        hit.start = r->start, hit.end = r->end;
        hit.cpu = r->cpu;
        return hit;
    }
    return {};
}

TimelineHit TimelineView::healthHit(const Track& track, uint64_t t, uint64_t tolerance) const {
    TimelineHit hit;
    if (!data_->lanes) return hit;
    const auto found = data_->lanes->health.find(track.cpu);
    if (found == data_->lanes->health.end() || found->second.empty()) return hit;
    const auto& points = found->second;
    auto lostAt = [&](size_t i) {
        const auto& h = points[i];
        return h.lostRecords + h.lostSamples + h.auxLost;
    };
    auto grew = [&](size_t i) { return i == 0 ? lostAt(0) > 0 : lostAt(i) > lostAt(i - 1); };
    // The point whose interval (previous point, point] holds `t` (the first's
    // from the recording's start); a red tick
    // within reach wins (the nearest), as it is drawn over the fill.
    size_t i =
        size_t(std::lower_bound(points.begin(), points.end(), t,
                                [](const SidebandLanes::Health& h, uint64_t v) { return h.time < v; }) -
               points.begin());
    const uint64_t reach = tolerance * 2;
    auto near = std::lower_bound(points.begin(), points.end(), t > reach ? t - reach : 0,
                                 [](const SidebandLanes::Health& h, uint64_t v) { return h.time < v; });
    uint64_t bestDistance = UINT64_MAX;
    for (; near != points.end() && near->time <= t + reach; ++near) {
        const size_t k = size_t(near - points.begin());
        const uint64_t d = near->time > t ? near->time - t : t - near->time;
        if (grew(k) && d < bestDistance) bestDistance = d, i = k;
    }
    if (i == points.size()) {
        if (t - points.back().time > tolerance) return hit;  // after the last point
        i = points.size() - 1;
    }
    const uint64_t first = std::min(points[0].time, data_->begin);  // the first point's interval begins here
    if (i == 0 && t + tolerance < first && bestDistance == UINT64_MAX) return hit;
    const SidebandLanes::Health& h = points[i];
    hit.kind = TimelineHit::Health;
    hit.cpu = track.cpu;
    hit.health = h;
    hit.start = i > 0 ? points[i - 1].time : first;
    hit.end = h.time;
    const SidebandLanes::Health none;
    const SidebandLanes::Health& prev = i > 0 ? points[i - 1] : none;
    hit.lostRecordsHere = h.lostRecords - std::min(h.lostRecords, prev.lostRecords);
    hit.lostSamplesHere = h.lostSamples - std::min(h.lostSamples, prev.lostSamples);
    hit.auxLostHere = h.auxLost - std::min(h.auxLost, prev.auxLost);
    return hit;
}

TimelineHit TimelineView::spanHit(const TimelineData::Thread& th, size_t index) const {
    TimelineHit hit;
    hit.kind = TimelineHit::ThreadSpan;
    hit.index = index;
    hit.span = th.spans.at(index);
    hit.pid = th.pid, hit.tid = th.tid;
    hit.threadName = QString::fromStdString(th.name);
    hit.start = hit.span.start, hit.end = hit.span.end;
    if (hit.span.isGap()) {
        const Gap& g = th.spans.gaps()[size_t(hit.span.gap)];
        hit.gapReason = QString::fromUtf8(gapReasonName(g.reason));
        hit.gapDetail = QString::fromStdString(g.detail);
    } else {
        hit.function = functionName(hit.span.function);
        if (data_->functions && hit.span.function < data_->functions->size())
            hit.file = QString::fromStdString((*data_->functions)[hit.span.function].file);
    }
    return hit;
}

TimelineHit TimelineView::hitAt(QPoint pos) const {
    TimelineHit hit;
    if (!data_ || pos.x() < kLabelWidth || pos.x() >= kLabelWidth + plotWidth()) return hit;
    const Track* track = trackAt(pos.y());
    if (!track || track->kind == Track::ProcessHeader || track->kind == Track::HealthHeader) return hit;
    const uint64_t t = timeAt(pos.x() + 0.5);
    const uint64_t tolerance = uint64_t(2.0 * double(viewEnd_ - viewBegin_) / plotWidth());
    if (track->kind == Track::Cpu) {
        if (const std::string* note = cpuNote(track->cpu)) {
            hit.kind = TimelineHit::CpuNote;
            hit.cpu = track->cpu;
            hit.loss = QString::fromStdString(*note);
            hit.start = data_->begin, hit.end = data_->end;
            return hit;
        }
        if (!data_->cpus.count(track->cpu)) return hit;
        return cpuHit(*track, t, tolerance);
    }
    if (track->kind == Track::Health) return healthHit(*track, t, tolerance);
    if (track->kind == Track::ThreadHeader) return laneHit(*track, t, tolerance);
    const auto& th = data_->threads[track->thread];
    if (t < data_->decodedBegin || t >= data_->decodedEnd) return hit;
    auto index = findSpan(track->thread, track->depth, t, tolerance);
    if (!index) return hit;
    return spanHit(th, *index);
}

QString TimelineView::describe(const TimelineHit& hit, uint64_t recordingBegin) {
    if (!hit.valid()) return {};
    QStringList lines;
    auto thread = [&] {
        QString text = QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) text += QString(" in %1").arg(hit.processName);
        return text;
    };
    if (hit.kind == TimelineHit::CpuNote) {
        return QString("CPU %1: %2").arg(hit.cpu).arg(cpuNoteText(hit.loss));
    }
    if (hit.kind == TimelineHit::Health) {
        const SidebandLanes::Health& h = hit.health;
        auto at = [&](uint64_t t) { return "+" + formatDuration(double(t) - double(recordingBegin)); };
        auto count = [](uint64_t n) { return QLocale(QLocale::English).toString(qulonglong(n)); };
        lines << QString("CPU %1 capture health at %2").arg(hit.cpu).arg(at(h.time));
        if (hit.end > hit.start)
            lines << QString("Ring fill: %1 % (the peak since %2)")
                         .arg(double(h.ringFill), 0, 'f', 1)
                         .arg(at(hit.start));
        else
            lines << QString("Ring fill: %1 %").arg(double(h.ringFill), 0, 'f', 1);
        lines << (h.auxFill >= 0 ? QString("AUX fill: %1 %").arg(double(h.auxFill), 0, 'f', 1)
                                 : QString("AUX fill: no AUX area on this CPU"));
        lines << QString("Throughput: %1 MiB/s").arg(double(h.mibPerSec), 0, 'f', 2);
        lines << QString("Lost so far: %1 records, %2 samples, %3 AUX records")
                     .arg(count(h.lostRecords), count(h.lostSamples), count(h.auxLost));
        if (hit.lostRecordsHere + hit.lostSamplesHere + hit.auxLostHere > 0) {
            const QString when = hit.end > hit.start
                                     ? QString("between %1 and %2").arg(at(hit.start), at(hit.end))
                                     : QString("by %1").arg(at(hit.end));
            lines << QString("Lost %1: %2 records, %3 samples, %4 AUX records (ring fill then %5 %)")
                         .arg(when, count(hit.lostRecordsHere), count(hit.lostSamplesHere),
                              count(hit.auxLostHere))
                         .arg(double(h.ringFill), 0, 'f', 1);
        }
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::Loss) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.loss);
        lines << QString("At: +%1").arg(formatDuration(double(hit.start) - double(recordingBegin)));
        if (hit.end > hit.start)
            lines << QString("Until: +%1").arg(formatDuration(double(hit.end) - double(recordingBegin)));
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::Sample) {
        lines << QString("Sample: %1").arg(hit.event.isEmpty() ? QString("(unnamed event)") : hit.event);
        lines << QString("Function: %1").arg(hit.function.isEmpty() ? QString("[unknown]") : hit.function);
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
        lines << QString("IP: 0x%1").arg(hit.ip, 0, 16);
        lines << QString("CPU %1, at +%2")
                     .arg(hit.cpu)
                     .arg(formatDuration(double(hit.start) - double(recordingBegin)));
        if (hit.samplesHere > 1) lines << QString("%1 samples of this thread here").arg(hit.samplesHere);
        lines << thread();
        return lines.join('\n');
    }
    if (hit.kind == TimelineHit::CpuIdle) {
        lines << QString("CPU %1: idle").arg(hit.cpu);
    } else if (hit.kind == TimelineHit::ThreadRun) {
        lines << QString("%1 ran on CPU %2").arg(hit.threadName).arg(hit.cpu);
        lines << thread();
    } else if (hit.kind == TimelineHit::CpuSlice) {
        lines << QString("CPU %1: %2").arg(hit.cpu).arg(hit.threadName.isEmpty() ? "thread" : hit.threadName);
        lines << QString("tid %1, pid %2").arg(hit.tid).arg(hit.pid);
        if (!hit.processName.isEmpty()) lines << QString("Process: %1").arg(hit.processName);
    } else if (hit.span.isGap()) {
        lines << QString("Gap: %1").arg(hit.gapReason);
        if (!hit.gapDetail.isEmpty()) lines << hit.gapDetail;
    } else {
        lines << hit.function;
        if (!hit.file.isEmpty()) lines << QString("File: %1").arg(hit.file);
    }
    lines << QString("Start: +%1").arg(formatDuration(double(hit.start) - double(recordingBegin)));
    lines << QString("Duration: %1").arg(formatDuration(double(hit.end - hit.start)));
    if (hit.kind == TimelineHit::ThreadSpan) {
        if (!hit.span.isGap()) lines << QString("Instructions: %1").arg(hit.span.instructions);
        lines << QString("Depth: %1").arg(hit.span.depth);
        lines << QString("Thread: %1 (tid %2, pid %3)").arg(hit.threadName).arg(hit.tid).arg(hit.pid);
    }
    return lines.join('\n');
}

QString TimelineView::toolTipAt(QPoint pos) const {
    const TimelineHit hit = hitAt(pos);
    if (!hit.valid()) {
        if (!data_) return {};
        const Track* track = trackAt(pos.y());
        if (track && track->kind == Track::Cpu && pos.x() < kLabelWidth)
            if (const std::string* note = cpuNote(track->cpu))
                return QString("CPU %1: %2").arg(track->cpu).arg(cpuNoteText(QString::fromStdString(*note)));
        if (track && (track->kind == Track::ProcessHeader || track->kind == Track::HealthHeader) &&
            pos.x() < kLabelWidth)
            return QString("Click (or C) to collapse or expand; right-click to pin");
        if (!data_ || hint_.isEmpty()) return {};
        const uint64_t t = timeAt(pos.x());
        if (track && track->kind == Track::ThreadRow && pos.x() >= kLabelWidth &&
            (t < data_->decodedBegin || t >= data_->decodedEnd))
            return hint_;
        return {};
    }
    return describe(hit, data_ ? data_->begin : 0);
}

// ---- Interaction ----

void TimelineView::zoomAround(double x, double factor) {
    if (!data_ || viewEnd_ <= viewBegin_) return;
    if (follow_) {
        // Following: zoom keeps the newest time at the right edge.
        const double w = std::max(double(minWidth()), double(viewEnd_ - viewBegin_) * factor);
        followSeconds_ = w / 1e9;
        setVisibleRange(viewEnd_ > uint64_t(w) ? viewEnd_ - uint64_t(w) : 0, viewEnd_);
        return;
    }
    x = std::clamp(x, double(kLabelWidth), double(kLabelWidth + plotWidth()));
    const double t = double(viewBegin_) + (x - kLabelWidth) * double(viewEnd_ - viewBegin_) / plotWidth();
    double w = double(viewEnd_ - viewBegin_) * factor;
    w = std::max(w, double(minWidth()));
    const double begin = t - (t - double(viewBegin_)) * w / double(viewEnd_ - viewBegin_);
    setVisibleRange(uint64_t(std::max(0.0, std::round(begin))),
                    uint64_t(std::max(0.0, std::round(begin + w))));
}

void TimelineView::panBy(double pixels) {
    if (!data_ || viewEnd_ <= viewBegin_) return;
    follow_ = false;
    const double dt = pixels * double(viewEnd_ - viewBegin_) / plotWidth();
    const double begin = std::max(0.0, double(viewBegin_) + dt);
    const uint64_t w = viewEnd_ - viewBegin_;
    setVisibleRange(uint64_t(begin), uint64_t(begin) + w);
}

void TimelineView::wheelEvent(QWheelEvent* e) {
    const QPoint d = e->angleDelta();
    const double x = e->position().x();
    if (e->modifiers() & Qt::ControlModifier) {
        zoomAround(x, std::pow(0.8, d.y() / 120.0));
    } else if (d.x() != 0 || (e->modifiers() & Qt::ShiftModifier)) {
        panBy(-(d.x() != 0 ? d.x() : d.y()) / 120.0 * plotWidth() * 0.1);
    } else {
        vbar_->setValue(vbar_->value() - d.y() / 120 * 3 * kRowHeight);
    }
    e->accept();
}

void TimelineView::keyPressEvent(QKeyEvent* e) {
    const double x = lastMouse_.x() >= kLabelWidth && lastMouse_.x() < kLabelWidth + plotWidth()
                         ? lastMouse_.x()
                         : kLabelWidth + plotWidth() / 2.0;
    switch (e->key()) {
        case Qt::Key_W:
            zoomAround(x, 0.8);
            break;
        case Qt::Key_S:
            zoomAround(x, 1.25);
            break;
        case Qt::Key_A:
            panBy(-plotWidth() * 0.1);
            break;
        case Qt::Key_D:
            panBy(plotWidth() * 0.1);
            break;
        case Qt::Key_Home:
        case Qt::Key_0:
            if (data_) setVisibleRange(data_->begin, data_->end);
            break;
        case Qt::Key_Up:
            vbar_->setValue(vbar_->value() - kRowHeight);
            break;
        case Qt::Key_Down:
            vbar_->setValue(vbar_->value() + kRowHeight);
            break;
        case Qt::Key_PageUp:
            vbar_->setValue(vbar_->value() - vbar_->pageStep());
            break;
        case Qt::Key_PageDown:
            vbar_->setValue(vbar_->value() + vbar_->pageStep());
            break;
        case Qt::Key_Escape:
            // Perfetto: Esc clears the selection, whatever it is (and the keys' overlay).
            helpVisible_ = false;
            selected_ = {};
            clearTimeSelection();
            update();
            break;
        case Qt::Key_F:
            focusSelection();
            break;
        case Qt::Key_M:
            toggleMark();
            break;
        case Qt::Key_Question:
            setKeysHelpVisible(!helpVisible_);
            break;
        case Qt::Key_Slash:
            emit searchRequested();
            break;
        case Qt::Key_C:
            // The process under the mouse (its header or a thread's lane), else the selected thread's.
            if (!toggleProcessAt(lastMouse_.y()) && selected_.valid() && selected_.pid >= 0 && data_ &&
                data_->lanes && processHeaderY(selected_.pid) >= 0)
                setProcessCollapsed(selected_.pid, !processCollapsed(selected_.pid));
            break;
        default:
            if (e->text() == "?") {
                setKeysHelpVisible(!helpVisible_);
                break;
            }
            QWidget::keyPressEvent(e);
            return;
    }
    e->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* e) {
    setFocus(Qt::MouseFocusReason);
    if (e->button() != Qt::LeftButton) return;
    pressed_ = true;
    dragged_ = false;
    pressPos_ = e->position().toPoint();
    // Shift+drag in the tracks or any drag on the time axis selects a range (Perfetto).
    rangeDrag_ = data_ && pressPos_.x() >= kLabelWidth &&
                 ((e->modifiers() & Qt::ShiftModifier) || pressPos_.y() < kAxisHeight);
    pressTime_ =
        timeAt(std::clamp(double(pressPos_.x()), double(kLabelWidth), double(kLabelWidth + plotWidth())));
    pressBegin_ = viewBegin_, pressEnd_ = viewEnd_;
    pressScroll_ = vbar_->value();
}

void TimelineView::mouseMoveEvent(QMouseEvent* e) {
    const QPoint pos = e->position().toPoint();
    lastMouse_ = pos;
    if (!pressed_) return;
    const QPoint delta = pos - pressPos_;
    if (!dragged_ && delta.manhattanLength() < 4) return;
    dragged_ = true;
    if (rangeDrag_) {
        setCursor(Qt::IBeamCursor);
        const uint64_t t =
            timeAt(std::clamp(double(pos.x()), double(kLabelWidth), double(kLabelWidth + plotWidth())));
        selBegin_ = std::min(t, pressTime_), selEnd_ = std::max(t, pressTime_);
        if (selEnd_ == selBegin_) ++selEnd_;
        rangeChosenLast_ = true;
        update();
        emit timeSelectionDragged(selBegin_, selEnd_);
        return;
    }
    setCursor(Qt::ClosedHandCursor);
    const double dt = double(delta.x()) * double(pressEnd_ - pressBegin_) / plotWidth();
    const double begin = std::max(0.0, double(pressBegin_) - dt);
    if (delta.x() != 0) {
        follow_ = false;
        setVisibleRange(uint64_t(begin), uint64_t(begin) + (pressEnd_ - pressBegin_));
    }
    vbar_->setValue(pressScroll_ - delta.y());
}

void TimelineView::mouseReleaseEvent(QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || !pressed_) return;
    pressed_ = false;
    unsetCursor();
    if (dragged_ && rangeDrag_) {
        rangeDrag_ = false;
        emit timeSelectionChanged(selBegin_, selEnd_);
        return;
    }
    rangeDrag_ = false;
    if (dragged_) return;
    if (e->position().y() < kAxisHeight) return;  // a click on the axis selects nothing
    if (const Track* t = trackAt(int(e->position().y()));
        t && (t->kind == Track::ProcessHeader || t->kind == Track::HealthHeader)) {
        // A group's header: collapses or expands it.
        if (t->kind == Track::HealthHeader)
            setHealthCollapsed(!laneState_.healthCollapsed);
        else
            setProcessCollapsed(t->pid, !processCollapsed(t->pid));
        return;
    }
    selected_ = hitAt(e->position().toPoint());
    if (selected_.valid()) rangeChosenLast_ = false;
    update();
    if (selected_.valid()) emit spanSelected(selected_);
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* e) {
    const TimelineHit hit = hitAt(e->position().toPoint());
    if (!hit.valid()) return;
    const uint64_t w = std::max<uint64_t>(hit.end - hit.start, 1);
    const uint64_t margin = std::max<uint64_t>(w / 20, 1);
    follow_ = false;
    setVisibleRange(hit.start > margin ? hit.start - margin : 0, hit.end + margin);
}

bool TimelineView::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        const QString text = toolTipAt(help->pos());
        if (text.isEmpty()) {
            QToolTip::hideText();
            e->ignore();
        } else {
            QToolTip::showText(help->globalPos(), text, this);
        }
        return true;
    }
    if (e->type() == QEvent::Leave) lastMouse_ = {-1, -1};
    if (e->type() == QEvent::FocusIn || e->type() == QEvent::FocusOut) update();
    return QWidget::event(e);
}

// ---- Range selection, marks, search highlights ----

std::optional<TimelineView::Range> TimelineView::timeSelection() const {
    if (selEnd_ <= selBegin_) return std::nullopt;
    return Range{selBegin_, selEnd_};
}

void TimelineView::setTimeSelection(uint64_t begin, uint64_t end) {
    if (end <= begin) begin = end = 0;
    if (begin == selBegin_ && end == selEnd_) return;
    selBegin_ = begin, selEnd_ = end;
    if (end > begin) rangeChosenLast_ = true;
    update();
    emit timeSelectionChanged(begin, end);
}

void TimelineView::zoomTo(uint64_t begin, uint64_t end, double margin) {
    if (!data_) return;
    const uint64_t w = std::max<uint64_t>(end > begin ? end - begin : 1, 1);
    const uint64_t m = std::max<uint64_t>(uint64_t(double(w) * margin), 1);
    follow_ = false;
    setVisibleRange(begin > m ? begin - m : 0, end + m);
}

void TimelineView::focusSelection() {
    if (rangeChosenLast_ || !selected_.valid()) {
        if (auto r = timeSelection()) return zoomTo(r->begin, r->end);
    }
    if (selected_.valid()) zoomTo(selected_.start, std::max(selected_.end, selected_.start + 1));
}

bool TimelineView::toggleMark() {
    Range r;
    if (auto sel = timeSelection(); sel && (rangeChosenLast_ || !selected_.valid()))
        r = *sel;
    else if (selected_.valid())
        r = {selected_.start, selected_.end};
    else
        return false;
    auto same = std::find_if(marks_.begin(), marks_.end(),
                             [&](const Range& m) { return m.begin == r.begin && m.end == r.end; });
    const bool added = same == marks_.end();
    if (added)
        marks_.push_back(r);
    else
        marks_.erase(same);
    update();
    emit marksChanged();
    return added;
}

QString TimelineView::keysHelp() {
    return QStringLiteral(
        "Ctrl+wheel, W / S\tzoom around the mouse\n"
        "A / D, drag\tpan\n"
        "wheel, Up / Down\tscroll the tracks\n"
        "0, Home\tshow everything\n"
        "click\tselect a span (details, code)\n"
        "double-click\tzoom to a span\n"
        "Shift+drag, drag on the axis\tselect a time range (statistics)\n"
        "F\tzoom to the selection\n"
        "M\tmark / unmark the selection\n"
        "Esc\tclear the selection\n"
        "click a header, C\tcollapse / expand a process\n"
        "right-click a lane\tpin it to the top\n"
        "/\tsearch functions and threads\n"
        "Enter / Shift+Enter\tnext / previous hit\n"
        "?\tthis help");
}

void TimelineView::setKeysHelpVisible(bool on) {
    if (helpVisible_ == on) return;
    helpVisible_ = on;
    update();
}

bool TimelineView::selectSpan(int32_t tid, size_t index) {
    if (!data_) return false;
    for (size_t i = 0; i < data_->threads.size(); ++i) {
        const auto& th = data_->threads[i];
        if (th.tid != tid || index >= th.spans.size()) continue;
        selected_ = spanHit(th, index);
        rangeChosenLast_ = false;
        update();
        emit spanSelected(selected_);
        return true;
    }
    return false;
}

const TimelineView::Track* TimelineView::trackOfThread(int32_t tid, int depth) const {
    if (!data_) return nullptr;
    const Track* header = nullptr;
    for (const Track& t : tracks_) {
        const bool mine = (t.thread != kNoThread && t.kind != Track::Cpu && t.kind != Track::ProcessHeader &&
                           data_->threads.size() > t.thread && data_->threads[t.thread].tid == tid) ||
                          (t.kind == Track::ThreadHeader && t.lane >= 0 && data_->lanes &&
                           data_->lanes->threads[size_t(t.lane)].tid == tid);
        if (!mine) continue;
        if (t.kind == Track::ThreadHeader) header = &t;
        if (t.kind == Track::ThreadRow && t.depth == depth) return &t;
    }
    return header;
}

void TimelineView::scrollToThread(int32_t tid, int depth) {
    const Track* t = trackOfThread(tid, depth);
    if (!t && data_ && data_->lanes) {
        // In a collapsed process: expanded to show it.
        const long lane = data_->lanes->threadIndex(tid);
        int32_t pid = lane >= 0 ? data_->lanes->threads[size_t(lane)].pid : -1;
        for (const auto& th : data_->threads)
            if (th.tid == tid) pid = th.pid;
        if (pid != -1 && processCollapsed(pid)) {
            setProcessCollapsed(pid, false);
            t = trackOfThread(tid, depth);
        }
    }
    if (!t || (t->pinned && stickyHeight() > 0)) return;
    const int visible = std::max(0, height() - kAxisHeight), sticky = stickyHeight();
    const int y = t->y, v = vbar_->value();
    if (y < v + sticky || y + t->height > v + visible)
        vbar_->setValue(std::max(0, y - sticky - (visible - sticky) / 3));
}

// ---- Lanes people manage ----

bool TimelineLaneState::isPinned(Pin::Kind kind, int32_t id) const {
    return std::find(pinned.begin(), pinned.end(), Pin{kind, id}) != pinned.end();
}

QString TimelineLaneState::sortName(Sort sort) {
    switch (sort) {
        case Sort::Pid:
            return "pid";
        case Sort::Name:
            return "name";
        case Sort::CpuTime:
            break;
    }
    return "CPU time";
}

QVariantMap TimelineLaneState::toVariant() const {
    QVariantMap map;
    QVariantList pids;
    for (int32_t pid : collapsed)
        pids << pid;
    map["collapsed"] = pids;
    QStringList pins;
    for (const Pin& pin : pinned)
        pins << QString("%1:%2")
                    .arg(pin.kind == Pin::Cpu       ? "cpu"
                         : pin.kind == Pin::Process ? "pid"
                                                    : "tid")
                    .arg(pin.id);
    map["pinned"] = pins;
    map["filter"] = filter;
    map["sort"] = sort == Sort::Pid ? "pid" : sort == Sort::Name ? "name" : "cpu-time";
    map["healthCollapsed"] = healthCollapsed;
    return map;
}

TimelineLaneState TimelineLaneState::fromVariant(const QVariantMap& map) {
    TimelineLaneState state;
    for (const QVariant& v : map.value("collapsed").toList()) {
        bool ok = false;
        const int pid = v.toInt(&ok);
        if (ok) state.collapsed.insert(pid);
    }
    for (const QString& text : map.value("pinned").toStringList()) {
        const QString kind = text.section(':', 0, 0);
        bool ok = false;
        const int id = text.section(':', 1).toInt(&ok);
        if (!ok) continue;
        Pin pin;
        if (kind == "cpu")
            pin.kind = Pin::Cpu;
        else if (kind == "pid")
            pin.kind = Pin::Process;
        else if (kind == "tid")
            pin.kind = Pin::Thread;
        else
            continue;
        pin.id = id;
        if (!state.isPinned(pin.kind, pin.id)) state.pinned.push_back(pin);
    }
    state.filter = map.value("filter").toString();
    const QString sort = map.value("sort").toString();
    state.sort = sort == "pid" ? Sort::Pid : sort == "name" ? Sort::Name : Sort::CpuTime;
    state.healthCollapsed = map.value("healthCollapsed").toBool();
    return state;
}

void TimelineView::laneStateEdited() {
    layoutTracks();
    update();
    emit laneStateChanged();
}

void TimelineView::setLaneState(const TimelineLaneState& state) {
    if (state == laneState_) return;
    laneState_ = state;
    laneStateEdited();
}

void TimelineView::setProcessCollapsed(int32_t pid, bool collapsed) {
    if (collapsed == processCollapsed(pid)) return;
    if (collapsed)
        laneState_.collapsed.insert(pid);
    else
        laneState_.collapsed.erase(pid);
    laneStateEdited();
}

void TimelineView::setAllProcessesCollapsed(bool collapsed) {
    std::set<int32_t> pids;
    if (collapsed && data_ && data_->lanes) {
        for (const SidebandLanes::Process& proc : data_->lanes->processes)
            pids.insert(proc.pid);
        for (const auto& th : data_->threads)
            if (data_->lanes->threadIndex(th.tid) < 0) pids.insert(th.pid);
    }
    if (pids == laneState_.collapsed) return;
    laneState_.collapsed = std::move(pids);
    laneStateEdited();
}

void TimelineView::setPinned(TimelineLaneState::Pin::Kind kind, int32_t id, bool pinned) {
    if (pinned == laneState_.isPinned(kind, id)) return;
    auto& pins = laneState_.pinned;
    if (pinned)
        pins.push_back({kind, id});
    else
        pins.erase(std::remove(pins.begin(), pins.end(), TimelineLaneState::Pin{kind, id}), pins.end());
    laneStateEdited();
}

void TimelineView::setLaneFilter(const QString& text) {
    if (text == laneState_.filter) return;
    laneState_.filter = text;
    laneStateEdited();
}

void TimelineView::setLaneSort(TimelineLaneState::Sort sort) {
    if (sort == laneState_.sort) return;
    laneState_.sort = sort;
    laneStateEdited();
}

void TimelineView::setHealthCollapsed(bool collapsed) {
    if (collapsed == laneState_.healthCollapsed) return;
    laneState_.healthCollapsed = collapsed;
    laneStateEdited();
}

const std::string* TimelineView::cpuNote(int cpu) const {
    if (!data_ || !data_->lanes) return nullptr;
    const auto found = data_->lanes->cpuNotes.find(cpu);
    return found == data_->lanes->cpuNotes.end() ? nullptr : &found->second;
}

QString TimelineView::cpuNoteText(const QString& note) {
    if (note == "offline")
        return "offline: the machine has this CPU, but it was not online during the capture\n"
               "Nothing can have run on it, so its lane is empty.";
    if (note == "not traced")
        return "not traced: this CPU was online, but the capture did not record it\n"
               "Its CPU list left it out: what ran there is unknown, not idle.";
    return note + "\nThe file says so about this CPU; nothing was recorded on it.";
}

bool TimelineView::toggleProcessAt(int y) {
    const Track* t = y >= 0 ? trackAt(y) : nullptr;
    if (!t || !data_) return false;
    if (t->kind == Track::HealthHeader || t->kind == Track::Health) {
        setHealthCollapsed(!laneState_.healthCollapsed);
        return true;
    }
    int32_t pid = -1;
    if (t->kind == Track::ProcessHeader) {
        pid = t->pid;
    } else if (t->kind == Track::ThreadHeader || t->kind == Track::ThreadRow) {
        if (!data_->lanes) return false;
        pid = t->lane >= 0 ? data_->lanes->threads[size_t(t->lane)].pid : data_->threads[t->thread].pid;
    } else {
        return false;
    }
    if (processHeaderY(pid) < 0) return false;
    setProcessCollapsed(pid, !processCollapsed(pid));
    return true;
}

QMenu* TimelineView::laneMenu(QPoint pos) {
    auto* menu = new QMenu(this);
    const Track* t = data_ ? trackAt(pos.y()) : nullptr;
    if (!t) return menu;
    using Pin = TimelineLaneState::Pin;
    // What the lane is: a CPU, a process (its header) or a thread (its lane or flame chart).
    int32_t tid = -1, pid = -1;
    const bool lanes = data_->lanes != nullptr;
    if (t->kind == Track::ThreadHeader || t->kind == Track::ThreadRow) {
        const bool ofLane = t->lane >= 0 && lanes;
        tid = ofLane ? data_->lanes->threads[size_t(t->lane)].tid : data_->threads[t->thread].tid;
        pid = ofLane ? data_->lanes->threads[size_t(t->lane)].pid : data_->threads[t->thread].pid;
    } else if (t->kind == Track::ProcessHeader) {
        pid = t->pid;
    }
    auto pinAction = [&](Pin::Kind kind, int32_t id, const QString& what) {
        const bool pinned = laneState_.isPinned(kind, id);
        QAction* a = menu->addAction(pinned ? "Unpin" : "Pin to top");
        a->setToolTip(what);
        a->setData(what);
        connect(a, &QAction::triggered, this, [this, kind, id, pinned] { setPinned(kind, id, !pinned); });
    };
    if (t->kind == Track::Cpu) {
        menu->setTitle(QString("CPU %1").arg(t->cpu));
        pinAction(Pin::Cpu, t->cpu, QString("CPU %1").arg(t->cpu));
    } else if (t->kind == Track::ProcessHeader) {
        menu->setTitle(QString("pid %1").arg(pid));
        pinAction(Pin::Process, pid, QString("pid %1").arg(pid));
    } else if (tid != -1) {
        menu->setTitle(QString("tid %1").arg(tid));
        pinAction(Pin::Thread, tid, QString("tid %1").arg(tid));
        if (lanes && processHeaderY(pid) >= 0) {
            const bool pinned = laneState_.isPinned(Pin::Process, pid);
            QAction* a = menu->addAction(pinned ? "Unpin its process" : "Pin its process to top");
            connect(a, &QAction::triggered, this,
                    [this, pid, pinned] { setPinned(Pin::Process, pid, !pinned); });
        }
    }
    if (lanes && pid != -1 && processHeaderY(pid) >= 0) {
        const bool collapsed = processCollapsed(pid);
        QAction* a = menu->addAction(collapsed ? "Expand process" : "Collapse process");
        connect(a, &QAction::triggered, this,
                [this, pid, collapsed] { setProcessCollapsed(pid, !collapsed); });
    }
    if (t->kind == Track::HealthHeader || t->kind == Track::Health) {
        QAction* a =
            menu->addAction(laneState_.healthCollapsed ? "Expand capture health" : "Collapse capture health");
        connect(a, &QAction::triggered, this, [this] { setHealthCollapsed(!laneState_.healthCollapsed); });
    }
    if (lanes) {
        menu->addSeparator();
        connect(menu->addAction("Expand all"), &QAction::triggered, this,
                [this] { setAllProcessesCollapsed(false); });
        connect(menu->addAction("Collapse all"), &QAction::triggered, this,
                [this] { setAllProcessesCollapsed(true); });
    }
    if (!laneState_.pinned.empty())
        connect(menu->addAction("Unpin all"), &QAction::triggered, this, [this] {
            TimelineLaneState state = laneState_;
            state.pinned.clear();
            setLaneState(state);
        });
    return menu;
}

void TimelineView::contextMenuEvent(QContextMenuEvent* e) {
    QMenu* menu = laneMenu(e->pos());
    if (!menu->isEmpty()) menu->exec(e->globalPos());
    delete menu;
    e->accept();
}

void TimelineView::setHighlight(std::vector<bool> functions, std::set<int32_t> threads) {
    highlight_ = std::move(functions);
    highlightThreads_ = std::move(threads);
    update();
}

void TimelineView::paintOverlays(QPainter& p) {
    const int plotRight = kLabelWidth + plotWidth();
    const QRect plot(kLabelWidth, 0, plotWidth(), height());
    p.save();
    p.setClipRect(plot);
    // Threads whose names a search matched: their labels outlined.
    if (!highlightThreads_.empty() && data_) {
        p.setClipping(false);
        for (const Track& t : tracks_) {
            if (t.kind != Track::ThreadHeader) continue;
            int32_t tid = -1;
            if (t.lane >= 0 && data_->lanes)
                tid = data_->lanes->threads[size_t(t.lane)].tid;
            else if (t.thread != kNoThread)
                tid = data_->threads[t.thread].tid;
            if (!highlightThreads_.count(tid)) continue;
            const int y = trackY(t);
            if (y + t.height < kAxisHeight || y > height()) continue;
            p.setPen(QPen(QColor(255, 140, 0), 2));
            p.setBrush(Qt::NoBrush);
            p.drawRect(QRect(1, std::max(y, kAxisHeight) + 1, kLabelWidth - 3, t.height - 2));
        }
        p.setClipRect(plot);
    }
    // Marks: amber areas over the tracks, flags on the axis.
    const QColor amber(230, 150, 0);
    for (const Range& m : marks_) {
        const double x0 = xOf(m.begin), x1 = xOf(m.end);
        if (x1 < kLabelWidth || x0 > plotRight) continue;
        if (x1 - x0 >= 1) {
            QColor area = amber;
            area.setAlpha(40);
            p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height() - kAxisHeight), area);
        }
        p.setPen(QPen(amber, 1, Qt::DashLine));
        p.drawLine(QPointF(x0, kAxisHeight), QPointF(x0, height()));
        if (x1 - x0 >= 1) p.drawLine(QPointF(x1, kAxisHeight), QPointF(x1, height()));
        QPolygonF flag;
        flag << QPointF(x0, 2) << QPointF(x0 + 9, 6) << QPointF(x0, 10);
        p.setPen(QPen(amber.darker(120), 1));
        p.setBrush(amber);
        p.drawLine(QPointF(x0, 2), QPointF(x0, kAxisHeight - 1));
        p.drawPolygon(flag);
        p.setBrush(Qt::NoBrush);
    }
    // The selected range: a blue band, its ends, and its length on the axis.
    if (auto sel = timeSelection()) {
        const double x0 = xOf(sel->begin), x1 = std::max(xOf(sel->end), x0 + 1);
        const QColor blue(40, 110, 220);
        QColor band = blue;
        band.setAlpha(45);
        p.fillRect(QRectF(x0, kAxisHeight, x1 - x0, height() - kAxisHeight), band);
        QColor shade(0, 0, 0, 22);
        p.fillRect(QRectF(kLabelWidth, kAxisHeight, std::max(0.0, x0 - kLabelWidth), height()), shade);
        p.fillRect(QRectF(x1, kAxisHeight, std::max(0.0, plotRight - x1), height()), shade);
        p.setPen(QPen(blue, 1));
        p.drawLine(QPointF(x0, 0), QPointF(x0, height()));
        p.drawLine(QPointF(x1, 0), QPointF(x1, height()));
        const QRectF bar(x0, kAxisHeight - 12, x1 - x0, 11);
        p.fillRect(bar, QColor(40, 110, 220, 200));
        const QString text = formatDuration(double(sel->end - sel->begin));
        QFont f = font();
        f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.8));
        f.setBold(true);
        p.setFont(f);
        const int tw = p.fontMetrics().horizontalAdvance(text) + 8;
        QRectF label = bar;
        if (label.width() < tw) label = QRectF((x0 + x1 - tw) / 2, bar.y(), tw, bar.height());
        p.fillRect(label, QColor(40, 110, 220));
        p.setPen(Qt::white);
        p.drawText(label, Qt::AlignCenter, text);
    }
    p.restore();
    if (helpVisible_) {
        const QStringList lines = keysHelp().split('\n');
        QFont f = font();
        p.setFont(f);
        const QFontMetrics fm(f);
        QFont boldKeys = f;
        boldKeys.setBold(true);
        const QFontMetrics bm(boldKeys);
        int keyW = 0, descW = 0;
        for (const QString& l : lines) {
            const QStringList kv = l.split('\t');
            keyW = std::max(keyW, bm.horizontalAdvance(kv[0]));
            descW = std::max(descW, fm.horizontalAdvance(kv.value(1)));
        }
        const int lh = fm.height() + 2;
        const QRect box(0, 0, keyW + descW + 48, lh * (int(lines.size()) + 1) + 16);
        QRect r = box;
        r.moveCenter(rect().center());
        p.setPen(QColor(120, 120, 120));
        p.setBrush(QColor(255, 255, 255, 240));
        p.drawRoundedRect(r, 6, 6);
        p.setPen(QColor(20, 20, 20));
        QFont bold = f;
        bold.setBold(true);
        p.setFont(bold);
        p.drawText(QRect(r.x() + 12, r.y() + 8, r.width() - 24, lh), Qt::AlignLeft, "Keys (? or Esc closes)");
        for (int i = 0; i < lines.size(); ++i) {
            const QStringList kv = lines[i].split('\t');
            const int y = r.y() + 8 + lh * (i + 1);
            p.setFont(bold);
            p.drawText(QRect(r.x() + 12, y, keyW + 8, lh), Qt::AlignLeft, kv[0]);
            p.setFont(f);
            p.drawText(QRect(r.x() + 24 + keyW, y, descW + 8, lh), Qt::AlignLeft, kv.value(1));
        }
        p.setBrush(Qt::NoBrush);
    }
}

}  // namespace auxscope
