// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/spans/ is what every decoder feeds and every view reads: the flow ->
// spans builder (FlowToSpans), this store, the function table, the decode
// window and statistics types, and the timeline data. It includes sideband/
// (and perfdata/ through it); no decoder.
//
// Per-thread call-stack spans as the timeline draws them, and the gaps between
// them. A decode can produce hundreds of millions of spans, so the store keeps
// each one in 16 bytes (see PackedSpan) and hands out an unpacked Span on read.
// Decoder-independent: Intel PT and CoreSight both fill it through FlowToSpans.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace auxscope {

// Why part of a thread's execution is not known.
enum class GapReason : uint8_t {
    Overflow,      // the trace unit dropped packets (Intel PT OVF)
    LostAux,       // AUX data missing from the file (lost, truncated or overwritten)
    DecodeError,   // the decoder failed; detail names the library's error and the trace offset
    Untraced,      // tracing was off (filtered, disabled, kernel in a user-only trace)
    MissingImage,  // the code the trace runs through is not available; detail names the file
    // The decoding library died on the segment (its worker process was killed by
    // a signal, spans/IsolatedDecode.h); detail: "decoder crashed (OpenCSD, SIGSEGV)".
    DecoderCrashed,
    // The decoding library made no progress on the segment for the watchdog's
    // time and its worker was killed; detail: "decoder hung (libipt, no progress for 30 s)".
    DecoderHung,
};
const char* gapReasonName(GapReason reason);  // "overflow", "lost AUX", ...

struct Gap {
    GapReason reason = GapReason::DecodeError;
    std::string detail;        // "missing image /usr/lib/libc.so.6", "decode error: ... at offset 0x1f0"
    uint64_t traceOffset = 0;  // in the CPU's concatenated AUX stream, where known
    int cpu = -1;
};

// One span, unpacked. Depths start at 0 for the outermost frame a decode knows.
struct Span {
    uint64_t start = 0, end = 0;  // perf clock, ns
    uint32_t function = 0;        // FunctionTable id (meaningless for a gap)
    int32_t depth = 0;
    uint64_t instructions = 0;
    int32_t gap = -1;  // index into the owner's gaps when this span is a gap
    // The decoder found the frame already running: no call or jump the trace
    // shows entered it (resumed in another function after untraced code, such
    // as a signal handler; returned into a function not on the stack), so it is
    // not a call.
    bool foundRunning = false;
    // It opened on an empty stack (a thread's, a segment's or a stretch's first
    // frame, a caller found by returning past the outermost known frame): no
    // span before it is still open and none is its caller. Implies foundRunning.
    bool outermost = false;
    bool isGap() const { return gap >= 0; }
    bool operator==(const Span&) const = default;
};

// 16 bytes per span: starts are 32-bit offsets from the base of a chunk of
// spans (a new chunk begins when the offset would not fit), durations, depths and
// instruction counts are narrow, and the rare span that does not fit keeps its
// wide values in a side table keyed by index.
struct PackedSpan {
    uint32_t startOffset;  // ns after the chunk's base
    uint32_t duration;     // ns; kWide: see the side table
    uint32_t function;     // kGapFlag | gap index; else FunctionTable id | kFoundRunning | kOutermost
    uint32_t depthInsns;   // depth in the top 12 bits, instructions in the low 20; kWide: side table
};
static_assert(sizeof(PackedSpan) == 16);

// Runs task(0) .. task(n - 1), possibly on several threads, returning when all
// have finished (a decoder's worker pool).
using ParallelRun = std::function<void(size_t n, const std::function<void(size_t)>& task)>;

class SpanStore {
    friend struct SpanStoreCodec;  // spans/IsolatedDecode.cpp: a store to bytes and back

public:
    static constexpr uint32_t kWide = 0xffffffffu;
    static constexpr uint32_t kGapFlag = 0x80000000u;
    // Bits of a frame's PackedSpan::function below kGapFlag: Span::foundRunning
    // and Span::outermost; function ids are below them (half a billion).
    static constexpr uint32_t kFoundRunning = 0x40000000u;
    static constexpr uint32_t kOutermost = 0x20000000u;
    static constexpr uint32_t kFunctionMask = kOutermost - 1;

    // Appends spans in start order (each start >= the previous one's); gap indices
    // in `spans` refer to `gaps`, which are appended too.
    void append(std::span<const Span> spans, std::span<const Gap> gaps = {});
    // Appends spans[order[0]], spans[order[1]], ... (an order that sorts them by
    // start): what a decoder does with spans that closed out of start order,
    // without moving the spans themselves.
    void append(std::span<const Span> spans, std::span<const uint32_t> order, std::span<const Gap> gaps);
    // Appends the spans of `other` that overlap [begin, end] (with its gaps), when
    // its first span starts no earlier than this store's last one; false (and
    // nothing appended) otherwise. Segments decoded apart merge this way without
    // being unpacked and sorted again.
    bool appendStore(const SpanStore& other, uint64_t begin = 0, uint64_t end = UINT64_MAX);
    // appendStore() of each of `parts` in turn, the copying spread over `parallel`:
    // merging a window's segments is a copy of hundreds of MB of packed spans,
    // as long as decoding them on a few cores. Each part starts a chunk of its
    // own, so parts are copied independently. False (nothing appended) when the
    // parts are not in start order. `edits` (empty, or one per part, null for
    // none; the whole range only: begin 0, end UINT64_MAX): each part as
    // edited() would give it, in the same copy.
    struct Edit;
    //
    // `owners` (empty, or one per part, null for none): what keeps each part's
    // spans alive. A part with an owner whose spans all fall in [begin, end] is
    // not copied: this store refers to its packed spans (and keeps the owner),
    // its edit applied as they are read (drops and replaced spans split it into
    // pieces, depth shifts are a piece's). A window of a trace whose segments are
    // cached (spans/SegmentedDecode.h) is then written once, by the decoder.
    bool appendStores(std::span<const SpanStore* const> parts, uint64_t begin, uint64_t end,
                      const ParallelRun& parallel, std::span<const Edit* const> edits = {},
                      std::span<const std::shared_ptr<const void>> owners = {});
    void reserve(size_t spans);

    // Changes for edited(): what joining a segment's spans to the segments
    // around it (spans/SegmentedDecode.h) does to them.
    struct Edit {
        std::span<const uint32_t> drop;  // spans left out, ascending
        // Added to the depths of spans [0, shiftEnd) and [lastBegin, size()),
        // except gaps other than untraced ones.
        int32_t shift = 0;
        uint32_t shiftEnd = 0;
        int32_t lastShift = 0;
        uint32_t lastBegin = UINT32_MAX;
        // Spans whose other fields change (start, gap and depth are kept), ascending.
        std::span<const std::pair<uint32_t, Span>> replace;
    };
    // This store with `edit` applied, worked on the packed spans (a copy, not an
    // unpack and pack).
    SpanStore edited(const Edit& edit) const;
    uint64_t firstStart() const {
        return size_ == 0 ? 0 : chunks_.front().base + chunkData(chunks_.front())[0].startOffset;
    }
    uint64_t lastStart() const { return lastStart_; }
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Spans this store refers to in other stores (appendStores' owners) rather than holds.
    size_t referencedSpans() const { return refSpans_; }
    Span at(size_t index) const;
    // Calls visit(index, span) with at(from) .. at(to - 1) in turn: one chunk
    // lookup for the lot rather than one per span, unpacked inline, for passes
    // over millions of spans.
    template <typename Visit>
    void forEach(size_t from, size_t to, Visit&& visit) const;
    const std::vector<Gap>& gaps() const { return gaps_; }
    // First span whose start is >= time.
    size_t lowerBound(uint64_t time) const;
    // Heap bytes the spans take (packed array + chunk bases + side table, and the
    // packed spans it refers to), excluding gaps' text.
    size_t spanBytes() const;

    // Where this process's span arrays come from when not the heap: a decoder's
    // worker process puts them in shared memory its parent then reads them from
    // in place (spans/IsolatedDecode.h). allocate() returns null when it is full
    // (the heap then); release() says whether the array was its own.
    struct ArraySource {
        virtual void* allocate(size_t bytes) = 0;
        virtual bool release(void* p, size_t bytes) noexcept = 0;

    protected:
        ~ArraySource() = default;
    };
    static void setArraySource(ArraySource* source);

private:
    // Growing the array for a merge must not write every element twice (zeroing,
    // then copying): elements are left uninitialized until written. Arrays of
    // kBigArray bytes and more (a segment's spans, a merged window) go through
    // allocateBig(): operator new, or with AUXSCOPE_SPAN_ARRAYS_HUGE=1 mappings
    // of their own in transparent huge pages (a window's spans are written into
    // fresh memory two or three times; 25x fewer page faults, but on a 2-core VM
    // zeroing huge pages cost more CPU than the faults saved: opt-in, to measure).
    static constexpr size_t kBigArray = size_t(4) << 20;
    static void* allocateBig(size_t bytes);
    static void deallocateBig(void* p, size_t bytes) noexcept;
    template <typename T>
    struct UninitAllocator : std::allocator<T> {
        template <typename U>
        struct rebind {
            using other = UninitAllocator<U>;
        };
        UninitAllocator() = default;
        template <typename U>
        UninitAllocator(const UninitAllocator<U>&) noexcept {}
        T* allocate(size_t n) {
            if (ArraySource* source = arraySource_)
                if (void* p = source->allocate(n * sizeof(T))) return static_cast<T*>(p);
            if (n * sizeof(T) < kBigArray) return std::allocator<T>::allocate(n);
            return static_cast<T*>(allocateBig(n * sizeof(T)));
        }
        void deallocate(T* p, size_t n) noexcept {
            if (ArraySource* source = arraySource_; source && source->release(p, n * sizeof(T))) return;
            if (n * sizeof(T) < kBigArray)
                std::allocator<T>::deallocate(p, n);
            else
                deallocateBig(p, n * sizeof(T));
        }
        template <typename U>
        void construct(U* p) noexcept {
            ::new (static_cast<void*>(p)) U;
        }
        template <typename U, typename... Args>
        void construct(U* p, Args&&... args) {
            ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
        }
    };
    // A run of spans that share a base time and one array: this store's own
    // (data null: spans_[own] on) or a part's it refers to (data: its first
    // span). Its gap spans' indices are the array's plus gapBase; its frames and
    // untraced gaps are `shift` deeper than the array says (not its wide spans:
    // wide_ holds their values as they are read).
    struct Chunk {
        uint64_t base;
        uint32_t first;  // index (in this store) of its first span
        uint32_t own = 0;
        const PackedSpan* data = nullptr;
        uint32_t gapBase = 0;
        int32_t shift = 0;
    };
    const PackedSpan* chunkData(const Chunk& c) const { return c.data ? c.data : spans_.data() + c.own; }
    // A chunk of this store's own starting at span `size_` (the next one) at `base`.
    Chunk ownChunk(uint64_t base) const {
        return {base, static_cast<uint32_t>(size_), static_cast<uint32_t>(spans_.size())};
    }
    // The last chunk is this store's own, ends its array, and `start` fits it.
    bool extendsLastChunk(uint64_t start) const {
        if (chunks_.empty()) return false;
        const Chunk& c = chunks_.back();
        return !c.data && c.own + (size_ - c.first) == spans_.size() && start - c.base <= UINT32_MAX;
    }
    // Every chunk's spans read as its array holds them (no gap re-basing, no
    // shift): what the copying paths and referTo() read directly.
    bool plainChunks() const;
    const PackedSpan& packedAt(size_t index, size_t chunk) const {
        return chunkData(chunks_[chunk])[index - chunks_[chunk].first];
    }
    static inline ArraySource* arraySource_ = nullptr;
    void unpack(const PackedSpan& p, const Chunk& c, size_t index, Span& s) const;
    void shiftDepth(const PackedSpan& p, const Chunk& c, Span& s) const;
    // This store with every span its own (what the copying paths read).
    SpanStore flattened() const;
    // appendStores() of one part it refers to, at this store's end.
    void referTo(const SpanStore& part, const Edit* edit, uint32_t gapBase);
    struct WideValues {
        uint64_t duration;
        uint64_t instructions;
        int32_t depth;
    };
    // The edited form of span `i` (not dropped): `p` (its packed form, re-based
    // by the caller) changed in place; a span that does not fit the packed form
    // goes to `wide` with the index `n` it will have.
    void editSpan(const Edit& edit, size_t i, size_t& replace, PackedSpan& p,
                  std::vector<std::pair<uint32_t, WideValues>>& wide, uint32_t n) const;
    static constexpr uint32_t kMaxDepth = 0xffe;    // 12 bits, 0xfff marks a wide depth
    static constexpr uint32_t kMaxInsns = 0xfffff;  // 20 bits
    const Chunk& chunkOf(size_t index) const;
    void wideValues(size_t index, Span& s) const;  // duration, depth and instructions from the side table
    void push(const Span& s, uint32_t gapBase);
    template <typename At>
    void pushAll(size_t n, uint32_t gapBase, At&& at);
    void reserveMore(size_t n);

    std::vector<PackedSpan, UninitAllocator<PackedSpan>> spans_;
    std::vector<Chunk> chunks_;
    std::unordered_map<uint32_t, WideValues> wide_;
    std::vector<Gap> gaps_;
    uint64_t lastStart_ = 0;
    size_t size_ = 0;      // spans, own and referred to
    size_t refSpans_ = 0;  // of them referred to
    std::vector<std::shared_ptr<const void>> owners_;
};

inline void SpanStore::shiftDepth(const PackedSpan& p, const Chunk& c, Span& s) const {
    if (!(p.function & kGapFlag) || gaps_[c.gapBase + (p.function & ~kGapFlag)].reason == GapReason::Untraced)
        s.depth += c.shift;
}

// Span `index`, packed as `p` in chunk `c`, into `s` (every field).
inline void SpanStore::unpack(const PackedSpan& p, const Chunk& c, size_t index, Span& s) const {
    s.start = c.base + p.startOffset;
    if (p.duration == kWide && p.depthInsns == kWide) [[unlikely]] {
        wideValues(index, s);
    } else {
        s.end = s.start + p.duration;
        s.depth = static_cast<int32_t>(p.depthInsns >> 20);
        s.instructions = p.depthInsns & kMaxInsns;
        if (c.shift) [[unlikely]]
            shiftDepth(p, c, s);
    }
    const bool gap = (p.function & kGapFlag) != 0;
    s.gap = gap ? static_cast<int32_t>(c.gapBase + (p.function & ~kGapFlag)) : -1;
    s.function = gap ? 0 : p.function & kFunctionMask;
    s.foundRunning = !gap && (p.function & kFoundRunning);
    s.outermost = !gap && (p.function & kOutermost);
}

template <typename Visit>
void SpanStore::forEach(size_t from, size_t to, Visit&& visit) const {
    if (from >= to) return;
    size_t chunk = size_t(&chunkOf(from) - chunks_.data());
    size_t nextFirst = chunk + 1 < chunks_.size() ? chunks_[chunk + 1].first : SIZE_MAX;
    const PackedSpan* data = chunkData(chunks_[chunk]);
    size_t first = chunks_[chunk].first;
    Span s;
    for (size_t i = from; i < to; ++i) {
        if (i >= nextFirst) [[unlikely]] {
            ++chunk;
            nextFirst = chunk + 1 < chunks_.size() ? chunks_[chunk + 1].first : SIZE_MAX;
            data = chunkData(chunks_[chunk]);
            first = chunks_[chunk].first;
        }
        unpack(data[i - first], chunks_[chunk], i, s);
        visit(i, static_cast<const Span&>(s));
    }
}

}  // namespace auxscope
