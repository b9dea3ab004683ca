// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/lod/SpanLod.h"

#include <algorithm>

namespace auxscope {

using namespace span_lod;

size_t SpanLod::bytes() const {
    size_t b = sizeof(*this) + bucketDur.capacity() * 8 + n.capacity() * 4 + tail.capacity() * 4;
    for (const auto& level : cells)
        for (const auto& row : level)
            b += row.capacity() * 4 + sizeof(row);
    for (const auto* v : {&openAt, &sparse})
        for (const auto& row : *v)
            b += row.capacity() * 4 + sizeof(row);
    return b;
}

std::unique_ptr<SpanLod> buildSpanLod(const SpanStore& store, uint64_t decodedEnd) {
    auto lod = std::make_unique<SpanLod>();
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

}  // namespace auxscope
