// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A perf AUX area (Intel PT, CoreSight, SPE trace bytes) and the user page that
// governs it, either mmapped from a perf fd or viewed over memory owned by
// SimulatedAuxProducer: the reading code is the same for both.
//
// The kernel protocol (kernel/events/ring_buffer.c, perf_aux_output_begin/end):
// - Full-trace mode (AUX mapped PROT_READ|PROT_WRITE): aux_head is free-running
//   and owned by the kernel, aux_tail by us. The hardware may write at most
//   CIRC_SPACE(aux_head, aux_tail, size) bytes, i.e. size - 1 - used: one byte is
//   always left unused. With no space at all the event is disabled without any
//   record; when the hardware fills the space it had, the transaction ends with
//   PERF_AUX_FLAG_TRUNCATED and the event is disabled. Either way user space must
//   drain and PERF_EVENT_IOC_ENABLE again.
// - Snapshot (overwrite) mode (AUX mapped PROT_READ): aux_tail is ignored and the
//   driver supplies aux_head. Intel PT and SPE report an offset that wraps inside
//   the buffer; CoreSight ETM a free-running count. See AuxSnapshotTracker.
// - At every transaction end the kernel writes PERF_RECORD_AUX {offset, size,
//   flags} into the DATA ring first, and only then stores aux_head. In full mode
//   offset is the old aux_head (where the bytes start); in overwrite mode it is
//   the new head the driver reported (where the bytes end).
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "DataRing.h"
#include "MappedRegion.h"
#include "Result.h"

namespace auxscope {

// PERF_AUX_FLAG_* (uapi); bookworm's header lacks some of the newer names.
constexpr uint64_t kAuxFlagTruncated = 0x01;
constexpr uint64_t kAuxFlagOverwrite = 0x02;
constexpr uint64_t kAuxFlagPartial = 0x04;
constexpr uint64_t kAuxFlagCollision = 0x08;

enum class AuxMode {
    Full,      // PROT_READ|PROT_WRITE: we own aux_tail, nothing is overwritten, the event stops when full
    Snapshot,  // PROT_READ: the hardware overwrites, aux_tail ignored; copy the newest bytes on a trigger
};

// The new bytes of a full-mode AUX ring: [from, to) in free-running positions,
// as at most two contiguous pieces of the mapping (two when the window wraps).
struct AuxWindow {
    uint64_t from = 0, to = 0;
    std::span<const uint8_t> first, second;
    std::optional<std::string> error;  // aux_head inconsistent with aux_tail (nothing is handed out)
    uint64_t bytes() const { return to - from; }
};

struct AuxDrainResult {
    uint64_t from = 0, to = 0;  // aux_tail before and after
    unsigned chunks = 0;        // 0, 1 or 2 callback calls
    std::optional<std::string> error;
    uint64_t bytes() const { return to - from; }
};

enum class WrapDetection {
    Tracked,   // the caller says whether the buffer has wrapped (AuxSnapshotTracker)
    ZeroScan,  // wrapped iff any byte at or after the head offset is non-zero (fresh AUX pages are zeroed)
};

struct AuxSnapshot {
    uint64_t head = 0;           // aux_head as read (acquire)
    uint64_t headOffset = 0;     // head & (size - 1): where the next byte would go
    bool wrapped = false;        // as decided by the detection used
    std::vector<uint8_t> bytes;  // the newest bytes, oldest first
};

class AuxRing {
public:
    AuxRing() = default;
    AuxRing(AuxRing&& o) noexcept { *this = static_cast<AuxRing&&>(o); }
    AuxRing& operator=(AuxRing&& o) noexcept;
    AuxRing(const AuxRing&) = delete;
    AuxRing& operator=(const AuxRing&) = delete;

    // Sets aux_offset (right after the data area) and aux_size in `data`'s user
    // page, then mmaps `auxPages` (a power of two) pages of `fd` there: read-write
    // for Full, read-only for Snapshot. Errors name the cause (event without an AUX
    // area, locked-memory budget, an AUX area of another size already mapped).
    static Expected<AuxRing> map(int fd, const DataRing& data, size_t auxPages, AuxMode mode);
    // Over memory laid out like the kernel's mapping (meta->aux_size bytes at `aux`).
    // Not owned. aux_size must be a power of two (any size: the simulation is not
    // bound to pages).
    static AuxRing view(perf_event_mmap_page* meta, const uint8_t* aux, AuxMode mode);

    bool mapped() const { return meta_ != nullptr; }
    AuxMode mode() const { return mode_; }
    uint64_t size() const { return size_; }
    const uint8_t* data() const { return aux_; }
    const perf_event_mmap_page* meta() const { return meta_; }

    uint64_t head() const { return __atomic_load_n(&meta_->aux_head, __ATOMIC_ACQUIRE); }
    uint64_t tail() const { return __atomic_load_n(&meta_->aux_tail, __ATOMIC_RELAXED); }
    // Release: our reads of the bytes before `tail` happen before the kernel may reuse them.
    void setTail(uint64_t tail) { __atomic_store_n(&meta_->aux_tail, tail, __ATOMIC_RELEASE); }

    // Full mode. The bytes published since aux_tail, without releasing them.
    AuxWindow window() const;
    // Full mode. The bytes published after position `from` (at or after aux_tail:
    // bytes before it were handed out already and are still held).
    AuxWindow window(uint64_t from) const;
    // Full mode. Hands [aux_tail, aux_head) to `fn(std::span<const uint8_t> bytes,
    // uint64_t position)` as at most two chunks, then stores aux_tail.
    template <typename Fn>
    AuxDrainResult drain(Fn&& fn) {
        AuxWindow w = window();
        AuxDrainResult r{w.from, w.from, 0, w.error};
        if (w.error || w.bytes() == 0) return r;
        fn(w.first, w.from), ++r.chunks;
        if (!w.second.empty()) fn(w.second, w.from + w.first.size()), ++r.chunks;
        setTail(w.to);
        r.to = w.to;
        return r;
    }

    // Snapshot mode: the newest min(size, want) bytes ending at aux_head, oldest
    // first. Tracked: `wrapped` says whether the hardware has gone round the buffer
    // at least once; ZeroScan ignores it and looks for non-zero bytes beyond the head.
    // The hardware must be stopped (disable or pause the event) while this copies.
    AuxSnapshot snapshot(uint64_t want, WrapDetection how, bool wrapped = false) const;

    // The pure pieces, over any power-of-two buffer.
    static void copyNewest(const uint8_t* base, uint64_t size, uint64_t headOffset, bool wrapped,
                           uint64_t want, std::vector<uint8_t>& out);
    static bool wrappedByZeroScan(const uint8_t* base, uint64_t size, uint64_t headOffset);

private:
    perf_event_mmap_page* meta_ = nullptr;
    const uint8_t* aux_ = nullptr;
    uint64_t size_ = 0;
    MappedRegion map_;  // the AUX area; empty: a view, not owned (meta_ belongs to the DataRing)
    AuxMode mode_ = AuxMode::Full;
};

// Decides whether a snapshot-mode buffer has wrapped, from what the consumer sees:
// PERF_RECORD_AUX records (each one's size is what that transaction wrote, its
// offset the new head) and aux_head readings.
//
// When each applies:
// - Tracked (this class) is exact when the driver reports the bytes it really
//   wrote and no AUX record was lost from the data ring: the buffer has wrapped
//   once the sizes add up to its size. A head reading lower than the previous one
//   also proves a wrap (wrapping heads: PT, SPE); a free-running head (CoreSight)
//   proves it once it reaches the size. Heads alone can miss a wrap that happened
//   between two readings. Intel PT reports the whole buffer as the size of every
//   snapshot-mode record, so record sizes say nothing there.
// - ZeroScan needs no history (works after a LOST, or when attaching late) but
//   relies on the AUX pages being zeroed when allocated (the kernel allocates them
//   with __GFP_ZERO) and on the trace never leaving zero bytes right up to the
//   end of the buffer (Intel PT PAD packets are 0x00): the newest data after a
//   wrap is then misjudged as "not wrapped" and the older part is dropped.
class AuxSnapshotTracker {
public:
    // recordSizesReliable: false where the driver reports the whole buffer as the
    // size of every record (Intel PT): then only a head going backwards proves a
    // wrap, and nothing proves there was none, so certain() sends the caller to
    // ZeroScan until a wrap is proven.
    explicit AuxSnapshotTracker(uint64_t size, bool freeRunningHead = false, bool recordSizesReliable = true)
        : size_(size), freeRunning_(freeRunningHead), sizesReliable_(recordSizesReliable) {}
    void observeHead(uint64_t head);
    // A PERF_RECORD_AUX of this event (offset = the new head, size = bytes written).
    void observeRecord(uint64_t offset, uint64_t size);
    // A PERF_RECORD_LOST on the data ring: some record sizes are unknown.
    void noteLost() { uncertain_ = true; }
    bool wrapped() const { return wrapped_; }
    // False after a LOST while no wrap was proven: fall back to ZeroScan.
    bool certain() const { return wrapped_ || (!uncertain_ && sizesReliable_); }
    uint64_t bytesReported() const { return written_; }

private:
    uint64_t size_;
    bool freeRunning_;
    bool sizesReliable_;
    bool wrapped_ = false, uncertain_ = false, seenHead_ = false;
    uint64_t lastHead_ = 0, written_ = 0;
};

}  // namespace auxscope
