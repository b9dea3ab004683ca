// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/SpanStore.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string_view>

namespace auxscope {

const char* gapReasonName(GapReason reason) {
    switch (reason) {
        case GapReason::Overflow:
            return "overflow";
        case GapReason::LostAux:
            return "lost AUX";
        case GapReason::DecodeError:
            return "decode error";
        case GapReason::Untraced:
            return "untraced";
        case GapReason::MissingImage:
            return "missing image";
        case GapReason::DecoderCrashed:
            return "decoder crashed";
        case GapReason::DecoderHung:
            return "decoder hung";
    }
    return "gap";
}

namespace {
constexpr uint32_t kMaxDepth = 0xffe;  // as SpanStore's, for the functions here
constexpr uint32_t kMaxInsns = 0xfffff;

inline uint32_t packedFunction(const Span& s, uint32_t gapBase) {
    if (s.isGap()) return SpanStore::kGapFlag | (gapBase + static_cast<uint32_t>(s.gap));
    return (s.function & SpanStore::kFunctionMask) | (s.foundRunning ? SpanStore::kFoundRunning : 0) |
           (s.outermost ? SpanStore::kOutermost : 0);
}
}  // namespace

namespace {
constexpr size_t kHugePage = size_t(2) << 20;

size_t bigMapping(size_t bytes) {
    return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

// AUXSCOPE_SPAN_ARRAYS_HUGE=1: big arrays in mappings of their own with huge
// pages advised (bench_pt_decode's scaling section compares the two). Read
// once: an array is freed the way it was allocated.
bool bigArraysHuge() {
    static const bool huge = [] {
        const char* v = std::getenv("AUXSCOPE_SPAN_ARRAYS_HUGE");
        return v && *v && std::string_view(v) != "0";
    }();
    return huge;
}
}  // namespace

// Operator new; or a mapping of its own, aligned to 2 MiB so that the kernel
// can back it with huge pages (MADV_HUGEPAGE: asked for where the system's
// setting is "madvise").
void* SpanStore::allocateBig(size_t bytes) {
    if (!bigArraysHuge()) return ::operator new(bytes);
    const size_t size = bigMapping(bytes);
    void* raw = ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > begin) ::munmap(raw, aligned - begin);
    const uintptr_t tail = aligned + size, end = begin + size + kHugePage;
    if (end > tail) ::munmap(reinterpret_cast<void*>(tail), end - tail);
#ifdef MADV_HUGEPAGE
    ::madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);  // a hint: no huge pages is fine
#endif
    return reinterpret_cast<void*>(aligned);
}

void SpanStore::deallocateBig(void* p, size_t bytes) noexcept {
    if (!bigArraysHuge())
        ::operator delete(p);
    else if (p)
        ::munmap(p, bigMapping(bytes));
}

// Room for `n` more spans, growing geometrically: appending many segments one by
// one must not reallocate (and copy) the whole store each time.
void SpanStore::reserveMore(size_t n) {
    const size_t needed = spans_.size() + n;
    if (needed > spans_.capacity()) spans_.reserve(std::max(needed, spans_.capacity() * 2));
}

void SpanStore::setArraySource(ArraySource* source) {
    arraySource_ = source;
}

bool SpanStore::plainChunks() const {
    return std::all_of(chunks_.begin(), chunks_.end(), [](const Chunk& c) { return !c.gapBase && !c.shift; });
}

void SpanStore::reserve(size_t spans) {
    spans_.reserve(spans);
}

void SpanStore::push(const Span& s, uint32_t gapBase) {
    uint64_t start = std::max(s.start, lastStart_);  // callers sort; clamp rather than corrupt
    lastStart_ = start;
    if (!extendsLastChunk(start)) chunks_.push_back(ownChunk(start));
    PackedSpan p{};
    p.startOffset = static_cast<uint32_t>(start - chunks_.back().base);
    uint64_t duration = s.end > start ? s.end - start : 0;
    p.function = packedFunction(s, gapBase);
    bool narrow =
        duration < kWide && s.depth >= 0 && uint32_t(s.depth) <= kMaxDepth && s.instructions <= kMaxInsns;
    if (narrow) {
        p.duration = static_cast<uint32_t>(duration);
        p.depthInsns = (uint32_t(s.depth) << 20) | uint32_t(s.instructions);
    } else {
        p.duration = kWide;
        p.depthInsns = kWide;
        wide_[static_cast<uint32_t>(size_)] = {duration, s.instructions, s.depth};
    }
    spans_.push_back(p);
    ++size_;
}

// push() of every span `at(k)` returns, k < n, into memory reserved at once: a
// decoder appends each segment's spans (hundreds of thousands) this way.
template <typename At>
void SpanStore::pushAll(size_t n, uint32_t gapBase, At&& at) {
    const size_t first = spans_.size(), index = size_;
    bool haveChunk = extendsLastChunk(lastStart_);
    reserveMore(n);
    spans_.resize(first + n);  // uninitialized: written below
    PackedSpan* out = spans_.data() + first;
    uint64_t last = lastStart_;
    uint64_t base = haveChunk ? chunks_.back().base : 0;
    for (size_t k = 0; k < n; ++k) {
        const Span& s = at(k);
        const uint64_t start = std::max(s.start, last);  // callers sort; clamp rather than corrupt
        last = start;
        if (!haveChunk || start - base > UINT32_MAX) {
            chunks_.push_back({start, static_cast<uint32_t>(index + k), static_cast<uint32_t>(first + k)});
            base = start, haveChunk = true;
        }
        PackedSpan p;
        p.startOffset = static_cast<uint32_t>(start - base);
        const uint64_t duration = s.end > start ? s.end - start : 0;
        p.function = packedFunction(s, gapBase);
        if (duration < kWide && s.depth >= 0 && uint32_t(s.depth) <= kMaxDepth && s.instructions <= kMaxInsns)
            [[likely]] {
            p.duration = static_cast<uint32_t>(duration);
            p.depthInsns = (uint32_t(s.depth) << 20) | uint32_t(s.instructions);
        } else {
            p.duration = kWide;
            p.depthInsns = kWide;
            wide_[static_cast<uint32_t>(index + k)] = {duration, s.instructions, s.depth};
        }
        out[k] = p;
    }
    lastStart_ = last;
    size_ += n;
}

void SpanStore::append(std::span<const Span> spans, std::span<const Gap> gaps) {
    const uint32_t gapBase = static_cast<uint32_t>(gaps_.size());
    gaps_.insert(gaps_.end(), gaps.begin(), gaps.end());
    pushAll(spans.size(), gapBase, [&](size_t k) -> const Span& { return spans[k]; });
}

void SpanStore::append(std::span<const Span> spans, std::span<const uint32_t> order,
                       std::span<const Gap> gaps) {
    const uint32_t gapBase = static_cast<uint32_t>(gaps_.size());
    gaps_.insert(gaps_.end(), gaps.begin(), gaps.end());
    const size_t n = order.size();
    pushAll(n, gapBase, [&](size_t k) -> const Span& {
        // The order jumps about the spans (they closed in post-order): fetch ahead.
        if (k + 16 < n) __builtin_prefetch(&spans[order[k + 16]]);
        return spans[order[k]];
    });
}

bool SpanStore::appendStore(const SpanStore& other, uint64_t begin, uint64_t end) {
    if (other.empty()) return true;
    if (!empty() && other.firstStart() < lastStart_) return false;
    const uint32_t gapBase = static_cast<uint32_t>(gaps_.size());
    gaps_.insert(gaps_.end(), other.gaps_.begin(), other.gaps_.end());
    reserveMore(other.size_);
    const bool whole = begin == 0 && end == UINT64_MAX;
    size_t chunk = 0;
    for (size_t i = 0; i < other.size_; ++i) {
        while (chunk + 1 < other.chunks_.size() && other.chunks_[chunk + 1].first <= i)
            ++chunk;
        const Chunk& c = other.chunks_[chunk];
        const PackedSpan& p = other.chunkData(c)[i - c.first];
        const uint64_t start = c.base + p.startOffset;
        if ((p.duration == kWide && p.depthInsns == kWide) || c.shift) {
            // Wide, or deeper than its array says: through its unpacked form.
            Span s;
            other.unpack(p, c, i, s);
            if (whole || (s.end >= begin && s.start <= end)) push(s, gapBase);
            continue;
        }
        if (!whole && (start + p.duration < begin || start > end)) continue;
        // Narrow values stay narrow: copy the packed fields, re-basing start and gap index.
        lastStart_ = start;
        if (!extendsLastChunk(start)) chunks_.push_back(ownChunk(start));
        PackedSpan q = p;
        q.startOffset = static_cast<uint32_t>(start - chunks_.back().base);
        if (q.function & kGapFlag) q.function = kGapFlag | (gapBase + c.gapBase + (q.function & ~kGapFlag));
        spans_.push_back(q);
        ++size_;
    }
    return true;
}

bool SpanStore::appendStores(std::span<const SpanStore* const> parts, uint64_t begin, uint64_t end,
                             const ParallelRun& parallel, std::span<const Edit* const> edits,
                             std::span<const std::shared_ptr<const void>> owners) {
    const bool whole = begin == 0 && end == UINT64_MAX;
    const size_t n = parts.size();
    std::vector<const SpanStore*> src(parts.begin(), parts.end());
    std::vector<const Edit*> editOf(n, nullptr);
    if (!edits.empty()) std::copy(edits.begin(), edits.end(), editOf.begin());
    std::vector<SpanStore> held(n);  // parts as the copying reads them
    std::vector<bool> refer(n, false);
    for (size_t k = 0; k < n; ++k) {
        if (src[k]->refSpans_ && !src[k]->plainChunks()) held[k] = src[k]->flattened(), src[k] = &held[k];
        const SpanStore& part = *src[k];
        // Referred to: an owner keeps it, and the window holds every span (each
        // starts no later than `end`, and no earlier than `begin` so ends after it).
        refer[k] = !owners.empty() && owners[k] && !part.empty() &&
                   (whole || (part.firstStart() >= begin && part.lastStart_ <= end));
        // A window selects by the edited spans' times: an edited copy first.
        if (!refer[k] && editOf[k] && !whole) {
            SpanStore fixed = part.edited(*editOf[k]);
            held[k] = std::move(fixed), src[k] = &held[k], editOf[k] = nullptr;
        }
    }
    uint64_t last = lastStart_;
    bool any = !empty();
    for (const SpanStore* part : src) {
        if (part->empty()) continue;
        if (any && part->firstStart() < last) return false;
        last = part->lastStart_, any = true;
    }
    auto selected = [&](const SpanStore& part, size_t i, size_t& chunk, uint64_t& start) {
        while (chunk + 1 < part.chunks_.size() && part.chunks_[chunk + 1].first <= i)
            ++chunk;
        const PackedSpan& p = part.packedAt(i, chunk);
        start = part.chunks_[chunk].base + p.startOffset;
        if (whole) return true;
        if (p.duration == kWide && p.depthInsns == kWide) {
            Span s = part.at(i);
            return s.end >= begin && s.start <= end;
        }
        return !(start + p.duration < begin || start > end);
    };
    // Pass 1: how many spans each part contributes, hence where they go (in this
    // store, and in its own array for a part that is copied).
    std::vector<size_t> counts(n);
    auto count = [&](size_t k) {
        const SpanStore& part = *src[k];
        if (whole || refer[k]) {
            counts[k] = part.size() - (editOf[k] ? std::min(part.size(), editOf[k]->drop.size()) : 0);
            return;
        }
        size_t c = 0, chunk = 0;
        uint64_t start = 0;
        for (size_t i = 0; i < part.size_; ++i)
            c += selected(part, i, chunk, start);
        counts[k] = c;
    };
    parallel(n, count);
    std::vector<size_t> at(n), index(n);
    std::vector<uint32_t> gapBase(n);
    size_t own = spans_.size(), total = size_;
    uint32_t gaps = static_cast<uint32_t>(gaps_.size());
    for (size_t k = 0; k < n; ++k) {
        at[k] = own, index[k] = total;
        total += counts[k];
        if (!refer[k]) own += counts[k];
        gapBase[k] = gaps, gaps += static_cast<uint32_t>(src[k]->gaps_.size());
    }
    spans_.resize(own);
    // Pass 2: copy, re-basing starts on the part's own chunks and gap indices on
    // the merged gaps; chunks and wide values are collected per part.
    struct Out {
        std::vector<Chunk> chunks;
        std::vector<std::pair<uint32_t, WideValues>> wide;
        uint64_t lastStart = 0;
    };
    std::vector<Out> outs(n);
    auto copy = [&](size_t k) {
        if (refer[k]) return;
        const SpanStore& part = *src[k];
        Out& out = outs[k];
        const size_t toIndex = index[k] - at[k];  // own array position -> index in this store
        size_t o = at[k], chunk = 0, drop = 0, replace = 0;
        uint64_t start = 0;
        const Edit* edit = editOf[k];
        for (size_t i = 0; i < part.size_; ++i) {
            if (!selected(part, i, chunk, start)) continue;
            if (edit && drop < edit->drop.size() && edit->drop[drop] == i) {
                ++drop;
                continue;
            }
            if (out.chunks.empty() || start - out.chunks.back().base > UINT32_MAX)
                out.chunks.push_back({start, static_cast<uint32_t>(o + toIndex), static_cast<uint32_t>(o)});
            PackedSpan q = part.packedAt(i, chunk);
            if (edit)
                part.editSpan(*edit, i, replace, q, out.wide, static_cast<uint32_t>(o + toIndex));
            else if (q.duration == kWide && q.depthInsns == kWide)
                out.wide.push_back(
                    {static_cast<uint32_t>(o + toIndex), part.wide_.at(static_cast<uint32_t>(i))});
            q.startOffset = static_cast<uint32_t>(start - out.chunks.back().base);
            if (q.function & kGapFlag) q.function = kGapFlag | (gapBase[k] + (q.function & ~kGapFlag));
            spans_[o++] = q;
            out.lastStart = start;
        }
    };
    parallel(n, copy);
    for (size_t k = 0; k < n; ++k) {
        gaps_.insert(gaps_.end(), src[k]->gaps_.begin(), src[k]->gaps_.end());
        if (refer[k]) {
            referTo(*src[k], editOf[k], gapBase[k]);
            owners_.push_back(owners[k]);
            continue;
        }
        chunks_.insert(chunks_.end(), outs[k].chunks.begin(), outs[k].chunks.end());
        for (auto& [i, w] : outs[k].wide)
            wide_[i] = w;
        size_ += counts[k];
        if (counts[k]) lastStart_ = outs[k].lastStart;
    }
    return true;
}

// The pieces of `part` (plain chunks) as `edit` leaves them, referred to at
// this store's end: runs between dropped and replaced spans and the edges of
// the depth shifts; a replaced span is copied, edited.
void SpanStore::referTo(const SpanStore& part, const Edit* edit, uint32_t gapBase) {
    static const Edit kNone;
    const Edit& e = edit ? *edit : kNone;
    const size_t n = part.size_, index0 = size_;
    auto shiftAt = [&](size_t i) {
        return (i < e.shiftEnd ? e.shift : 0) + (i >= e.lastBegin ? e.lastShift : 0);
    };
    std::vector<std::pair<uint32_t, WideValues>> wide;
    size_t drop = 0, replace = 0, next = size_, lastKept = SIZE_MAX;
    for (size_t c = 0; c < part.chunks_.size(); ++c) {
        const Chunk& from = part.chunks_[c];
        const size_t cEnd = c + 1 < part.chunks_.size() ? part.chunks_[c + 1].first : n;
        for (size_t i = from.first; i < cEnd;) {
            if (drop < e.drop.size() && e.drop[drop] == i) {
                ++drop, ++i;
                continue;
            }
            lastKept = i;
            if (replace < e.replace.size() && e.replace[replace].first == i) {
                PackedSpan q = part.packedAt(i, c);
                part.editSpan(e, i, replace, q, wide, static_cast<uint32_t>(next));
                if (q.function & kGapFlag) q.function = kGapFlag | (gapBase + (q.function & ~kGapFlag));
                Chunk one = ownChunk(from.base);
                one.first = static_cast<uint32_t>(next);
                chunks_.push_back(one);
                spans_.push_back(q);
                ++next, ++i;
                continue;
            }
            size_t runEnd = cEnd;
            if (drop < e.drop.size()) runEnd = std::min<size_t>(runEnd, e.drop[drop]);
            if (replace < e.replace.size()) runEnd = std::min<size_t>(runEnd, e.replace[replace].first);
            if (i < e.shiftEnd) runEnd = std::min<size_t>(runEnd, e.shiftEnd);
            if (i < e.lastBegin) runEnd = std::min<size_t>(runEnd, e.lastBegin);
            Chunk piece{from.base, static_cast<uint32_t>(next)};
            piece.data = &part.packedAt(i, c);
            piece.gapBase = gapBase;
            piece.shift = shiftAt(i);
            chunks_.push_back(piece);
            refSpans_ += runEnd - i;
            next += runEnd - i;
            lastKept = runEnd - 1;
            i = runEnd;
        }
    }
    // Wide spans of the runs: their values as read, shifted as the edit says.
    for (const auto& [i, w] : part.wide_) {
        if (std::binary_search(e.drop.begin(), e.drop.end(), i)) continue;
        auto r = std::lower_bound(e.replace.begin(), e.replace.end(), i,
                                  [](const std::pair<uint32_t, Span>& x, uint32_t v) { return x.first < v; });
        if (r != e.replace.end() && r->first == i) continue;  // editSpan's
        const size_t dropped = size_t(std::lower_bound(e.drop.begin(), e.drop.end(), i) - e.drop.begin());
        WideValues v = w;
        const SpanStore::Chunk& in = part.chunkOf(i);
        const uint32_t f = part.chunkData(in)[i - in.first].function;
        if (!(f & kGapFlag) || part.gaps_[f & ~kGapFlag].reason == GapReason::Untraced) v.depth += shiftAt(i);
        wide_[static_cast<uint32_t>(index0 + i - dropped)] = v;
    }
    for (auto& [i, w] : wide)
        wide_[i] = w;
    if (lastKept != SIZE_MAX) lastStart_ = part.at(lastKept).start;
    size_ = next;
}

void SpanStore::editSpan(const Edit& edit, size_t i, size_t& replace, PackedSpan& p,
                         std::vector<std::pair<uint32_t, WideValues>>& wide, uint32_t n) const {
    const bool isWide = p.duration == kWide && p.depthInsns == kWide;
    const bool gap = (p.function & kGapFlag) != 0;
    int32_t shift = 0;
    if (!gap || gaps_[p.function & ~kGapFlag].reason == GapReason::Untraced)
        shift = (i < edit.shiftEnd ? edit.shift : 0) + (i >= edit.lastBegin ? edit.lastShift : 0);
    const bool replaced = replace < edit.replace.size() && edit.replace[replace].first == i;
    if (!isWide && !replaced) [[likely]] {
        if (shift) {
            const int32_t depth = int32_t(p.depthInsns >> 20) + shift;
            if (depth >= 0 && uint32_t(depth) <= kMaxDepth) {
                p.depthInsns = (uint32_t(depth) << 20) | (p.depthInsns & kMaxInsns);
            } else {
                wide.push_back({n, {p.duration, p.depthInsns & kMaxInsns, depth}});
                p.duration = p.depthInsns = kWide;
            }
        }
        return;
    }
    // A wide or replaced span: through its unpacked form.
    Span s = at(i);
    if (replaced) {
        const Span& r = edit.replace[replace++].second;
        s.end = std::max(r.end, s.start);
        s.instructions = r.instructions;
        s.function = r.function;
        s.foundRunning = r.foundRunning;
        s.outermost = r.outermost;
    }
    s.depth += shift;
    const uint32_t gapPart = p.function & kGapFlag ? p.function : 0;
    p.function = gapPart ? gapPart : packedFunction(s, 0);
    const uint64_t duration = s.end - s.start;
    if (duration < kWide && s.depth >= 0 && uint32_t(s.depth) <= kMaxDepth && s.instructions <= kMaxInsns) {
        p.duration = static_cast<uint32_t>(duration);
        p.depthInsns = (uint32_t(s.depth) << 20) | uint32_t(s.instructions);
    } else {
        p.duration = p.depthInsns = kWide;
        wide.push_back({n, {duration, s.instructions, s.depth}});
    }
}

SpanStore SpanStore::edited(const Edit& edit) const {
    if (refSpans_) return flattened().edited(edit);
    SpanStore out;
    out.gaps_ = gaps_;
    out.lastStart_ = lastStart_;
    out.spans_.resize(spans_.size() - std::min(spans_.size(), edit.drop.size()));
    PackedSpan* to = out.spans_.data();
    size_t n = 0, drop = 0, replace = 0, chunk = 0;
    bool chunkOpen = false;  // the current chunk has a span in `out`
    std::vector<std::pair<uint32_t, WideValues>> wide;
    for (size_t i = 0; i < spans_.size(); ++i) {
        while (chunk + 1 < chunks_.size() && chunks_[chunk + 1].first == i)
            ++chunk, chunkOpen = false;
        if (drop < edit.drop.size() && edit.drop[drop] == i) {
            ++drop;
            continue;
        }
        if (!chunkOpen) {
            out.chunks_.push_back({chunks_[chunk].base, static_cast<uint32_t>(n), static_cast<uint32_t>(n)});
            chunkOpen = true;
        }
        PackedSpan p = spans_[i];
        editSpan(edit, i, replace, p, wide, uint32_t(n));
        to[n++] = p;
    }
    out.spans_.resize(n);
    out.size_ = n;
    for (auto& [k, w] : wide)
        out.wide_[k] = w;
    return out;
}

const SpanStore::Chunk& SpanStore::chunkOf(size_t index) const {
    auto it = std::upper_bound(chunks_.begin(), chunks_.end(), index,
                               [](size_t i, const Chunk& c) { return i < c.first; });
    return *(it - 1);
}

Span SpanStore::at(size_t index) const {
    const Chunk& c = chunkOf(index);
    Span s;
    unpack(chunkData(c)[index - c.first], c, index, s);
    return s;
}

SpanStore SpanStore::flattened() const {
    SpanStore out;
    out.gaps_ = gaps_;
    constexpr size_t kBlock = 64 << 10;
    std::vector<Span> block;
    block.reserve(std::min(size_, kBlock));
    for (size_t from = 0; from < size_; from += kBlock) {
        block.clear();
        forEach(from, std::min(size_, from + kBlock), [&](size_t, const Span& s) { block.push_back(s); });
        out.pushAll(block.size(), 0, [&](size_t k) -> const Span& { return block[k]; });
    }
    return out;
}

void SpanStore::wideValues(size_t index, Span& s) const {
    const WideValues& w = wide_.at(static_cast<uint32_t>(index));
    s.end = s.start + w.duration;
    s.instructions = w.instructions;
    s.depth = w.depth;
}

size_t SpanStore::lowerBound(uint64_t time) const {
    size_t lo = 0, hi = size_;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const Chunk& c = chunkOf(mid);
        if (c.base + chunkData(c)[mid - c.first].startOffset < time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t SpanStore::spanBytes() const {
    // Side-table entries cost roughly their payload plus a hash node.
    return (spans_.capacity() + refSpans_) * sizeof(PackedSpan) + chunks_.capacity() * sizeof(Chunk) +
           wide_.size() * (sizeof(WideValues) + 32);
}

}  // namespace auxscope
