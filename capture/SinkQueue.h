// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A bounded single-producer single-consumer queue of variable-size entries in
// one power-of-two byte ring. The producer (the drain thread) never waits: it
// asks canPush() first, and when an entry does not fit it leaves what it would
// have queued where it is (back-pressure). The consumer (a writer thread) reads
// entries in place.
//
// Entry layout: an 8-byte header {u32 size, u16 kind, u16 slot} followed by the
// payload, padded to 8 bytes; `size` includes the header. An entry never wraps:
// when it does not fit before the end of the ring, a padding entry fills the rest
// and the entry starts at offset 0.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>

#include "MappedRegion.h"

namespace auxscope {

class SinkQueue {
public:
    struct EntryHeader {
        uint32_t size;  // whole entry, header included, multiple of 8
        uint16_t kind;
        uint16_t slot;
    };
    static_assert(sizeof(EntryHeader) == 8);
    static constexpr uint16_t kPadding = 0xffff;

    // `capacityBytes` is rounded up to a power of two (at least 4 KiB).
    explicit SinkQueue(size_t capacityBytes);
    SinkQueue(const SinkQueue&) = delete;
    SinkQueue& operator=(const SinkQueue&) = delete;

    size_t capacity() const { return capacity_; }
    // Backs bytes [from, to) of the ring with memory now, without changing them
    // (MADV_POPULATE_WRITE, huge pages where the kernel offers them), so the
    // producer does not wait for page faults in the middle of a drain. Safe while
    // the queue is in use (e.g. from a thread of its own).
    void populate(size_t from, size_t to);
    // Largest payload an entry can carry (half the ring, less the header).
    size_t maxPayload() const { return capacity_ / 2 - sizeof(EntryHeader); }
    // Bytes queued and not yet released (approximate from any thread).
    size_t usedBytes() const {
        return size_t(head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire));
    }

    // Producer: whether entries of these payload sizes, pushed in this order, all
    // fit now. Room only grows until the producer pushes, so a true answer holds
    // for the tryPush() calls that follow.
    bool canPush(std::initializer_list<size_t> payloads);
    // Producer: copies the payload parts (concatenated) into one entry. Returns
    // false, changing nothing, when there is no room.
    bool tryPush(uint16_t kind, uint16_t slot, std::span<const uint8_t> a, std::span<const uint8_t> b = {});

    // Consumer: the next entry, or nullptr when the queue is empty. The entry's
    // bytes stay valid until pop(). Padding entries are skipped here.
    const EntryHeader* front();
    std::span<const uint8_t> payload(const EntryHeader* e) const {
        return {reinterpret_cast<const uint8_t*>(e + 1), e->size - sizeof(EntryHeader)};
    }
    void pop();

private:
    static size_t entrySize(size_t payload) { return (sizeof(EntryHeader) + payload + 7) & ~size_t(7); }

    size_t capacity_;
    size_t mask_;
    MappedRegion map_;        // anonymous pages; buf_ is aligned inside them
    uint8_t* buf_ = nullptr;  // capacity_ bytes
    // Producer side: head_ (written by the producer) and its cached view of tail_.
    alignas(64) std::atomic<uint64_t> head_{0};
    uint64_t cachedTail_ = 0;
    // Consumer side: tail_ (written by the consumer), its cached view of head_, and
    // the size of the entry front() returned.
    alignas(64) std::atomic<uint64_t> tail_{0};
    uint64_t cachedHead_ = 0;
    uint32_t currentSize_ = 0;
};

}  // namespace auxscope
