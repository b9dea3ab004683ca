// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A thread's level of detail: per flame-chart depth a summary of its spans at
// a few resolutions, so a zoomed-out frame reads about one cell per pixel
// column instead of every span.
//
// Level 0 has n[0] buckets of bucketDur[0] ns from t0 up to extentEnd; each
// further level halves the count. A cell holds the function covering most of
// its bucket (24 bits), how much of the bucket it covers (7 bits, of 127) and
// whether a gap is in it (top bit). A depth with at least a span per level-0
// bucket is summarized (cells, openAt: the span covering each bucket's start,
// tail: a span reaching past extentEnd); a sparser one (the rare frames of a
// deep stack) keeps the indices of its spans (`sparse`), walked in view when
// zoomed in, and cells only from the first level with no more buckets than it
// has spans. So the summary takes at most about 12 bytes per span of either
// kind, however deep the stacks. Stores of fewer than kSummaryMin spans are
// not summarized: they are walked whole.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "spans/SpanStore.h"

namespace auxscope {

namespace span_lod {
constexpr uint32_t kNone = UINT32_MAX;
constexpr uint32_t kGapBit = 0x80000000u, kFnMask = 0x00ffffffu, kEmptyFn = 0x00ffffffu;
constexpr uint32_t kEmptyCell = kEmptyFn;
// Flame-chart rows per thread: any real stack; a corrupt depth must not make millions of rows.
constexpr int kMaxRows = 1 << 16;
constexpr size_t kSummaryMin = 4096;   // smaller stores are walked whole
constexpr size_t kWalkAlways = 20000;  // fewer spans in view: walk them (exact)
constexpr uint32_t kMaxBuckets = 1u << 17;
inline uint32_t coverOf(uint32_t cell) {
    return (cell >> 24) & 0x7f;
}
inline uint32_t fnOf(uint32_t cell) {
    return cell & kFnMask;
}
}  // namespace span_lod

struct SpanLod {
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
    size_t bytes() const;
};

// The summary of `store`; `decodedEnd` may stretch its extent to the end of the decoded window.
std::unique_ptr<SpanLod> buildSpanLod(const SpanStore& store, uint64_t decodedEnd);

}  // namespace auxscope
