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

void SpanStore::reserve(size_t spans) {
    spans_.reserve(spans);
}

void SpanStore::push(const Span& s, uint32_t gapBase) {
    uint64_t start = std::max(s.start, lastStart_);  // callers sort; clamp rather than corrupt
    lastStart_ = start;
    if (chunks_.empty() || start - chunks_.back().base > UINT32_MAX)
        chunks_.push_back({start, static_cast<uint32_t>(spans_.size())});
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
        wide_[static_cast<uint32_t>(spans_.size())] = {duration, s.instructions, s.depth};
    }
    spans_.push_back(p);
}

// push() of every span `at(k)` returns, k < n, into memory reserved at once: a
// decoder appends each segment's spans (hundreds of thousands) this way.
template <typename At>
void SpanStore::pushAll(size_t n, uint32_t gapBase, At&& at) {
    const size_t first = spans_.size();
    reserveMore(n);
    spans_.resize(first + n);  // uninitialized: written below
    PackedSpan* out = spans_.data() + first;
    uint64_t last = lastStart_;
    bool haveChunk = !chunks_.empty();
    uint64_t base = haveChunk ? chunks_.back().base : 0;
    for (size_t k = 0; k < n; ++k) {
        const Span& s = at(k);
        const uint64_t start = std::max(s.start, last);  // callers sort; clamp rather than corrupt
        last = start;
        if (!haveChunk || start - base > UINT32_MAX) {
            chunks_.push_back({start, static_cast<uint32_t>(first + k)});
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
            wide_[static_cast<uint32_t>(first + k)] = {duration, s.instructions, s.depth};
        }
        out[k] = p;
    }
    lastStart_ = last;
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
    reserveMore(other.spans_.size());
    const bool whole = begin == 0 && end == UINT64_MAX;
    size_t chunk = 0;
    for (size_t i = 0; i < other.spans_.size(); ++i) {
        while (chunk + 1 < other.chunks_.size() && other.chunks_[chunk + 1].first <= i)
            ++chunk;
        const PackedSpan& p = other.spans_[i];
        const uint64_t start = other.chunks_[chunk].base + p.startOffset;
        if (p.duration == kWide && p.depthInsns == kWide) {
            Span s = other.at(i);
            if (whole || (s.end >= begin && s.start <= end)) push(s, gapBase);
            continue;
        }
        if (!whole && (start + p.duration < begin || start > end)) continue;
        // Narrow values stay narrow: copy the packed fields, re-basing start and gap index.
        lastStart_ = start;
        if (chunks_.empty() || start - chunks_.back().base > UINT32_MAX)
            chunks_.push_back({start, static_cast<uint32_t>(spans_.size())});
        PackedSpan q = p;
        q.startOffset = static_cast<uint32_t>(start - chunks_.back().base);
        if (q.function & kGapFlag) q.function = kGapFlag | (gapBase + (q.function & ~kGapFlag));
        spans_.push_back(q);
    }
    return true;
}

bool SpanStore::appendStores(std::span<const SpanStore* const> parts, uint64_t begin, uint64_t end,
                             const ParallelRun& parallel, std::span<const Edit* const> edits) {
    const bool whole = begin == 0 && end == UINT64_MAX;
    if (!edits.empty() && !whole) {
        // A window selects by the edited spans' times: edited copies first.
        std::vector<SpanStore> fixed(parts.size());
        std::vector<const SpanStore*> plain(parts.begin(), parts.end());
        for (size_t k = 0; k < parts.size(); ++k)
            if (edits[k]) fixed[k] = parts[k]->edited(*edits[k]), plain[k] = &fixed[k];
        return appendStores(plain, begin, end, parallel);
    }
    auto editOf = [&](size_t k) { return edits.empty() ? nullptr : edits[k]; };
    uint64_t last = lastStart_;
    bool any = !empty();
    for (const SpanStore* part : parts) {
        if (part->empty()) continue;
        if (any && part->firstStart() < last) return false;
        last = part->lastStart_, any = true;
    }
    auto selected = [&](const SpanStore& part, size_t i, size_t& chunk, uint64_t& start) {
        while (chunk + 1 < part.chunks_.size() && part.chunks_[chunk + 1].first <= i)
            ++chunk;
        const PackedSpan& p = part.spans_[i];
        start = part.chunks_[chunk].base + p.startOffset;
        if (whole) return true;
        if (p.duration == kWide && p.depthInsns == kWide) {
            Span s = part.at(i);
            return s.end >= begin && s.start <= end;
        }
        return !(start + p.duration < begin || start > end);
    };
    // Pass 1: how many spans each part contributes, hence where they go.
    std::vector<size_t> counts(parts.size());
    auto count = [&](size_t k) {
        const SpanStore& part = *parts[k];
        if (whole) {
            counts[k] = part.size() - (editOf(k) ? std::min(part.size(), editOf(k)->drop.size()) : 0);
            return;
        }
        size_t n = 0, chunk = 0;
        uint64_t start = 0;
        for (size_t i = 0; i < part.spans_.size(); ++i)
            n += selected(part, i, chunk, start);
        counts[k] = n;
    };
    parallel(parts.size(), count);
    std::vector<size_t> at(parts.size());
    std::vector<uint32_t> gapBase(parts.size());
    size_t total = spans_.size();
    uint32_t gaps = static_cast<uint32_t>(gaps_.size());
    for (size_t k = 0; k < parts.size(); ++k) {
        at[k] = total, total += counts[k];
        gapBase[k] = gaps, gaps += static_cast<uint32_t>(parts[k]->gaps_.size());
    }
    spans_.resize(total);
    // Pass 2: copy, re-basing starts on the part's own chunks and gap indices on
    // the merged gaps; chunks and wide values are collected per part.
    struct Out {
        std::vector<Chunk> chunks;
        std::vector<std::pair<uint32_t, WideValues>> wide;
        uint64_t lastStart = 0;
    };
    std::vector<Out> outs(parts.size());
    auto copy = [&](size_t k) {
        const SpanStore& part = *parts[k];
        Out& out = outs[k];
        size_t o = at[k], chunk = 0, drop = 0, replace = 0;
        uint64_t start = 0;
        const Edit* edit = editOf(k);
        for (size_t i = 0; i < part.spans_.size(); ++i) {
            if (!selected(part, i, chunk, start)) continue;
            if (edit && drop < edit->drop.size() && edit->drop[drop] == i) {
                ++drop;
                continue;
            }
            if (out.chunks.empty() || start - out.chunks.back().base > UINT32_MAX)
                out.chunks.push_back({start, static_cast<uint32_t>(o)});
            PackedSpan q = part.spans_[i];
            if (edit)
                part.editSpan(*edit, i, replace, q, out.wide, static_cast<uint32_t>(o));
            else if (q.duration == kWide && q.depthInsns == kWide)
                out.wide.push_back({static_cast<uint32_t>(o), part.wide_.at(static_cast<uint32_t>(i))});
            q.startOffset = static_cast<uint32_t>(start - out.chunks.back().base);
            if (q.function & kGapFlag) q.function = kGapFlag | (gapBase[k] + (q.function & ~kGapFlag));
            spans_[o++] = q;
            out.lastStart = start;
        }
    };
    parallel(parts.size(), copy);
    for (size_t k = 0; k < parts.size(); ++k) {
        gaps_.insert(gaps_.end(), parts[k]->gaps_.begin(), parts[k]->gaps_.end());
        chunks_.insert(chunks_.end(), outs[k].chunks.begin(), outs[k].chunks.end());
        for (auto& [i, w] : outs[k].wide)
            wide_[i] = w;
        if (counts[k]) lastStart_ = outs[k].lastStart;
    }
    return true;
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
            out.chunks_.push_back({chunks_[chunk].base, static_cast<uint32_t>(n)});
            chunkOpen = true;
        }
        PackedSpan p = spans_[i];
        editSpan(edit, i, replace, p, wide, uint32_t(n));
        to[n++] = p;
    }
    out.spans_.resize(n);
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
    const PackedSpan& p = spans_[index];
    Span s;
    s.start = chunkOf(index).base + p.startOffset;
    if (p.duration == kWide && p.depthInsns == kWide) {
        const WideValues& w = wide_.at(static_cast<uint32_t>(index));
        s.end = s.start + w.duration;
        s.instructions = w.instructions;
        s.depth = w.depth;
    } else {
        s.end = s.start + p.duration;
        s.depth = static_cast<int32_t>(p.depthInsns >> 20);
        s.instructions = p.depthInsns & kMaxInsns;
    }
    if (p.function & kGapFlag) {
        s.gap = static_cast<int32_t>(p.function & ~kGapFlag);
        s.function = 0;
    } else {
        s.function = p.function & kFunctionMask;
        s.foundRunning = (p.function & kFoundRunning) != 0;
        s.outermost = (p.function & kOutermost) != 0;
    }
    return s;
}

void SpanStore::wideValues(size_t index, Span& s) const {
    const WideValues& w = wide_.at(static_cast<uint32_t>(index));
    s.end = s.start + w.duration;
    s.instructions = w.instructions;
    s.depth = w.depth;
}

size_t SpanStore::lowerBound(uint64_t time) const {
    size_t lo = 0, hi = spans_.size();
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (chunkOf(mid).base + spans_[mid].startOffset < time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t SpanStore::spanBytes() const {
    // Side-table entries cost roughly their payload plus a hash node.
    return spans_.capacity() * sizeof(PackedSpan) + chunks_.capacity() * sizeof(Chunk) +
           wide_.size() * (sizeof(WideValues) + 32);
}

}  // namespace auxscope
