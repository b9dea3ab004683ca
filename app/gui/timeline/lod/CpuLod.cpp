// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/lod/CpuLod.h"

#include "gui/timeline/TimelinePalette.h"
#include "gui/timeline/lod/SpanLod.h"

namespace auxscope {

using span_lod::kMaxBuckets;

size_t CpuLod::bytes() const {
    size_t b = sizeof(*this) + keys.capacity() * 8 + rgb.capacity() * 4 + bucketDur.capacity() * 8 +
               n.capacity() * 4;
    for (const auto& level : cells)
        b += level.capacity() * sizeof(Cell) + sizeof(level);
    return b;
}

std::unique_ptr<CpuLod> buildCpuLod(const std::vector<TimelineData::CpuSlice>& slices) {
    using Cell = CpuLod::Cell;
    auto lod = std::make_unique<CpuLod>();
    lod->slices = slices.size();
    for (const auto& s : slices)
        if (s.tid > 0 && (lod->keys.empty() || lod->keys.back() != laneKey(s)))
            lod->keys.push_back(laneKey(s));
    std::sort(lod->keys.begin(), lod->keys.end());
    lod->keys.erase(std::unique(lod->keys.begin(), lod->keys.end()), lod->keys.end());
    lod->keys.shrink_to_fit();
    lod->rgb.reserve(lod->keys.size());
    for (int64_t k : lod->keys)
        lod->rgb.push_back((k > 0 ? palette::process(int32_t(k)) : palette::thread(int32_t(-k - 1))).rgb());
    if (slices.size() < CpuLod::kCpuSummaryMin) return lod;
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

}  // namespace auxscope
