// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/tracks/FlameChartTrack.h"

#include <QPainter>

#include <algorithm>
#include <cmath>
#include <vector>

#include "gui/timeline/TimelineLabels.h"
#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/TimelineState.h"
#include "gui/timeline/lod/PixelColumns.h"

namespace auxscope {

using namespace timeline_metrics;
using namespace span_lod;

namespace {
constexpr int kNarrowRun = 4;  // summary runs narrower than this: pixels in an image
}  // namespace

void FlameChartTrack::paint(TrackPaintContext& ctx, int top) const {
    // The rows in the section painted: from the first whose bottom is below its top to the last
    // whose top is above its bottom, painted together, one walk of the thread's spans.
    const int clipTop = ctx.clip.y(), bottom = ctx.clip.y() + ctx.clip.height();
    int firstRow = 0;
    while (firstRow + 1 < rows_ && top + (firstRow + 1) * kRowHeight <= clipTop)
        ++firstRow;
    int lastRow = firstRow;
    while (lastRow + 1 < rows_ && top + (lastRow + 1) * kRowHeight < bottom)
        ++lastRow;
    QPainter& p = ctx.p;
    p.setPen(QColor(150, 150, 150));
    for (int r = firstRow; r <= lastRow; ++r)
        if (r % 5 == 0 && r)
            p.drawText(QRect(kLabelWidth - 40, top + r * kRowHeight, 34, kRowHeight),
                       Qt::AlignRight | Qt::AlignVCenter, QString::number(r));
    paintRows(ctx, firstRow, lastRow, top);
    p.setClipRect(ctx.clip);
    p.setPen(QColor(200, 200, 200));
    p.drawLine(kLabelWidth - 1, top + firstRow * kRowHeight, kLabelWidth - 1,
               top + (lastRow + 1) * kRowHeight - 1);
}

TimelineHit FlameChartTrack::hit(const TrackHitContext& ctx, int dy, uint64_t t, uint64_t tolerance) const {
    const TimelineData& data = ctx.data;
    if (t < data.decodedBegin || t >= data.decodedEnd) return {};
    auto index = findSpan(ctx, dy / kRowHeight, t, tolerance);
    if (!index) return {};
    return spanHit(data, data.threads[thread], *index);
}

std::optional<size_t> FlameChartTrack::findSpan(const TrackHitContext& ctx, int depth, uint64_t t,
                                                uint64_t tolerance) const {
    const SpanStore& store = ctx.data.threads[thread].spans;
    const SpanLod& lod = *ctx.summaries.threads[thread];
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

void FlameChartTrack::paintRows(TrackPaintContext& ctx, int firstRow, int lastRow, int y0) const {
    QPainter& p = ctx.p;
    const TimelineData& data = ctx.data;
    const uint64_t viewBegin = ctx.viewBegin, viewEnd = ctx.viewEnd;
    const std::vector<bool>& highlight = ctx.state.highlightedFunctions();
    const TimelineHit& selected = ctx.state.selection();
    const TimelineData::Thread& th = data.threads[thread];
    const SpanLod& lod = *ctx.summaries.threads[thread];
    const SpanStore& store = th.spans;
    const int W = ctx.plotWidth;
    const double pxDur = double(viewEnd - viewBegin) / W;
    const int rowsTop = y0 + firstRow * kRowHeight, rowsBottom = y0 + (lastRow + 1) * kRowHeight;
    // Decoded window in pixels; outside it: shaded, nothing drawn.
    const double dx0 = std::clamp((double(data.decodedBegin) - double(viewBegin)) / pxDur, 0.0, double(W));
    const double dx1 = std::clamp((double(data.decodedEnd) - double(viewBegin)) / pxDur, 0.0, double(W));
    const int decodedLeft = int(std::floor(dx0)), decodedRight = int(std::ceil(dx1));
    const QColor shade(226, 226, 230);
    if (decodedLeft > 0) p.fillRect(QRect(kLabelWidth, rowsTop, decodedLeft, rowsBottom - rowsTop), shade);
    if (decodedRight < W)
        p.fillRect(QRect(kLabelWidth + decodedRight, rowsTop, W - decodedRight, rowsBottom - rowsTop), shade);
    if (!ctx.hint.isEmpty() && (decodedLeft > 0 || decodedRight < W) && firstRow == 0) {
        const int w = decodedLeft >= W - decodedRight ? decodedLeft : W - decodedRight;
        const int x = decodedLeft >= W - decodedRight ? 0 : decodedRight;
        p.setPen(QColor(90, 90, 100));
        p.drawText(QRect(kLabelWidth + x, rowsTop, w, kRowHeight), Qt::AlignCenter,
                   p.fontMetrics().elidedText(ctx.hint, Qt::ElideRight, w - 4));
    }
    if (decodedRight <= decodedLeft || store.empty()) return;
    p.save();
    p.setClipRect(
        QRect(kLabelWidth + decodedLeft, rowsTop, decodedRight - decodedLeft, rowsBottom - rowsTop));

    QBrush gapBrush(palette::gapHatch, Qt::BDiagPattern);
    const QColor gapBase = palette::gap;
    std::vector<int> rectsInRow(size_t(lastRow + 1), 0);
    auto fill = [&](int depth, int a, int b, uint32_t function, bool gap, size_t index, bool merged,
                    bool label) {
        const QRect r(kLabelWidth + a, y0 + depth * kRowHeight, std::max(1, b - a), kRowHeight - 1);
        ++ctx.frame.rects;
        ++rectsInRow[size_t(depth)];
        if (gap) {
            p.fillRect(r, gapBase);
            if (r.width() >= 3)
                p.fillRect(r, gapBrush);
            else
                p.fillRect(r, palette::gapHatch);
        } else if (!highlight.empty() && (function >= highlight.size() || !highlight[function])) {
            // A search is on and this is not a hit: faded, as Perfetto draws slices that do not match.
            const QColor c = ctx.colors.of(function, &data);
            p.fillRect(r,
                       QColor((c.red() + 3 * 245) / 4, (c.green() + 3 * 245) / 4, (c.blue() + 3 * 245) / 4));
        } else {
            p.fillRect(r, ctx.colors.of(function, &data));
        }
        const bool isSelected = selected.kind == TimelineHit::ThreadSpan && selected.tid == th.tid &&
                                !merged && selected.index == index && index != SIZE_MAX;
        if (isSelected) {
            p.setPen(QPen(Qt::black, 2));
            p.drawRect(r.adjusted(1, 1, -1, -1));
        }
        if (r.width() >= kLabelMinWidth && label) {
            const QRect visible = r.intersected(QRect(kLabelWidth, r.y(), W, r.height()));
            int reason = -1;  // a gap whose reason is known
            if (gap && index < store.size()) {
                const Span g = store.at(index);
                if (g.isGap() && size_t(g.gap) < store.gaps().size())
                    reason = int(store.gaps()[size_t(g.gap)].reason);
            }
            p.setPen(QColor(20, 20, 20));
            const uint64_t key =
                !gap ? TimelineLabels::functionKey(function) : TimelineLabels::gapKey(reason);
            if (ctx.labels.draw(p, visible.adjusted(3, 0, -2, 0), key, [&] {
                    if (!gap) return functionNameOf(&data, function);
                    return reason < 0 ? QString("gap") : QString("gap: ") + gapReasonName(GapReason(reason));
                }))
                ++ctx.frame.labels;
        }
    };

    const size_t lo = store.lowerBound(viewBegin), hi = store.lowerBound(viewEnd);
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
            const QColor c = ctx.colors.of(function, &data);
            if (highlight.empty() || (function < highlight.size() && highlight[function])) return c.rgb();
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
                    ++ctx.frame.rects;
                    ++rectsInRow[size_t(d)];
                } else {
                    fill(d, runStart, x, runKey & kFnMask, runKey & kGapBit, SIZE_MAX, true,
                         !(runKey & kGapBit));
                }
                runStart = -1;
            };
            for (int x = std::max(0, decodedLeft); x < std::min(W, decodedRight); ++x) {
                const double a = double(viewBegin) + x * pxDur, b = a + pxDur;
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
                ctx.frame.summaryCells += bb >= ba ? bb - ba + 1 : 0;
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
            const double x0 = (double(std::max(lod.extentEnd, s.start)) - double(viewBegin)) / pxDur;
            const double x1 = (double(s.end) - double(viewBegin)) / pxDur;
            if (x1 <= 0 || x0 >= W) continue;
            fill(d, int(std::floor(std::max(-2.0, x0))), int(std::ceil(std::min(W + 2.0, x1))), s.function,
                 s.isGap(), lod.tail[size_t(d)], false, true);
        }
        // Depths too sparse to summarize (a deep stack's rare frames): their spans
        // in view, merged where narrower than a pixel, skipping to the next pixel
        // column past those that merge anyway. Zoomed out a little from where the
        // spans are walked, a deep stack's rows hold thousands of spans a pixel or
        // two wide each: those of a few pixels go into the row's image (painted
        // after the row, as the summarized rows' narrow runs are), the wider ones
        // are filled and clear the image under them, so what is drawn last wins as
        // when each is filled in turn.
        auto put = [&](int d, int a, int b, uint32_t function, bool gap, size_t index, bool merged,
                       bool label) {
            const bool isSelected = selected.kind == TimelineHit::ThreadSpan && selected.tid == th.tid &&
                                    !merged && selected.index == index && index != SIZE_MAX;
            const int from = std::max(0, a), to = std::min(W, std::max(a + 1, b));
            if (b - a >= kNarrowRun || gap || isSelected) {
                for (int x = from; x < to; ++x)
                    narrow[size_t(x)] = 0;
                fill(d, a, b, function, gap, index, merged, label);
                return;
            }
            const QRgb c = shownRgb(function);
            for (int x = from; x < to; ++x)
                narrow[size_t(x)] = c;
            ++ctx.frame.rects;
            ++rectsInRow[size_t(d)];
        };
        for (int d = firstRow; d <= lastRow && size_t(d) < lod.sparse.size(); ++d) {
            const std::vector<uint32_t>& list = lod.sparse[size_t(d)];
            if (list.empty() || !cells[size_t(d)].empty()) continue;  // painted from its cells
            auto startOf = [&](uint32_t i) { return store.at(i).start; };
            // Spans of one depth do not overlap: the last one starting before the view may reach into it.
            size_t k = size_t(std::partition_point(list.begin(), list.end(),
                                                   [&](uint32_t i) { return startOf(i) < viewBegin; }) -
                              list.begin());
            if (k > 0) --k;
            double px0 = 0, px1 = -1e300;
            uint32_t pfn = 0;
            bool pending = false, pgap = false, pmerged = false;
            size_t pindex = 0;
            auto flushRow = [&] {
                if (pending)
                    put(d, int(std::floor(px0)), std::max(int(std::floor(px0)) + 1, int(std::ceil(px1))), pfn,
                        pgap, pindex, pmerged, !pmerged);
                pending = false;
            };
            while (k < list.size()) {
                const Span s = store.at(list[k]);
                ++ctx.frame.spansWalked;
                if (s.start >= viewEnd) break;
                if (s.end <= viewBegin) {
                    ++k;
                    continue;
                }
                const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin)) / pxDur);
                const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin)) / pxDur);
                if (x1 - x0 >= 1) {
                    flushRow();
                    put(d, int(std::floor(x0)), int(std::ceil(x1)), s.function, s.isGap(), list[k], false,
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
                const uint64_t next = viewBegin + uint64_t((std::floor(x0) + 1) * pxDur) + 1;
                // The span after next already starts past this pixel (spans about a pixel wide): no
                // search, nothing to skip.
                if (k + 2 >= list.size() || startOf(list[k + 2]) >= next) {
                    ++k;
                    continue;
                }
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
                    px1 = std::max(px1, std::min(W + 2.0, (double(last.end) - double(viewBegin)) / pxDur));
                    pmerged = true;
                    pgap = pgap || last.isGap();
                    k = jump;
                } else {
                    ++k;
                }
            }
            flushRow();
            paintColumns(p, kLabelWidth, y0 + d * kRowHeight, kRowHeight - 1, narrow, nullptr);
            std::fill(narrow.begin(), narrow.end(), 0);
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
            ++ctx.frame.spansWalked;
            if (s.depth < firstRow || s.depth > lastRow) return;
            if (s.end <= viewBegin && !(s.end == s.start && s.start == viewBegin)) return;
            const double x0 = std::max(-2.0, (double(s.start) - double(viewBegin)) / pxDur);
            const double x1 = std::min(W + 2.0, (double(s.end) - double(viewBegin)) / pxDur);
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
            const uint64_t from = std::max(viewBegin, lod.t0);
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
            if (s.start >= viewEnd) break;
            visit(s, i);
        }
        for (int d = firstRow; d <= lastRow; ++d)
            flush(d);
    }
    for (int n : rectsInRow)
        ctx.frame.maxRectsPerRow = std::max(ctx.frame.maxRectsPerRow, n);
    p.restore();
}

}  // namespace auxscope
