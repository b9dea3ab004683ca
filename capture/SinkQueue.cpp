// SPDX-License-Identifier: GPL-3.0-or-later
#include "SinkQueue.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>
#include <utility>

namespace auxscope {

SinkQueue::SinkQueue(size_t capacityBytes) {
    size_t c = 4096;
    while (c < capacityBytes)
        c <<= 1;
    capacity_ = c;
    mask_ = c - 1;
    // Anonymous pages, not zeroed up front (32 MiB of zeros would be paid for before
    // the capture starts; populate() backs them meanwhile), aligned for huge pages:
    // 16 page faults for 32 MiB instead of 8192.
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t len = c + (c >= kHuge ? kHuge : 0);
    auto m = MappedRegion::map(-1, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0);
    if (!m) throw std::bad_alloc();
    map_ = std::move(*m);
    uint8_t* base = map_.bytes();
    uint8_t* aligned = base;
    if (c >= kHuge) {
        aligned = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
        (void)madvise(aligned, c, MADV_HUGEPAGE);
    }
    buf_ = aligned;
}

bool SinkQueue::tryPush(uint16_t kind, uint16_t slot, std::span<const uint8_t> a,
                        std::span<const uint8_t> b) {
    const size_t payload = a.size() + b.size();
    if (payload > maxPayload()) return false;
    const size_t need = entrySize(payload);
    uint64_t head = head_.load(std::memory_order_relaxed);
    const size_t off = size_t(head & mask_);
    const size_t toEnd = capacity_ - off;
    const size_t total = need <= toEnd ? need : toEnd + need;  // padding first when it would wrap
    if (capacity_ - (head - cachedTail_) < total) {
        cachedTail_ = tail_.load(std::memory_order_acquire);
        if (capacity_ - (head - cachedTail_) < total) return false;
    }
    if (need > toEnd) {
        EntryHeader pad{uint32_t(toEnd), kPadding, 0};
        std::memcpy(buf_ + off, &pad, sizeof pad);
        head += toEnd;
    }
    uint8_t* p = buf_ + size_t(head & mask_);
    EntryHeader h{uint32_t(need), kind, slot};
    std::memcpy(p, &h, sizeof h);
    p += sizeof h;
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    if (!b.empty()) std::memcpy(p + a.size(), b.data(), b.size());
    const size_t tailPad = need - sizeof h - payload;
    if (tailPad) std::memset(p + payload, 0, tailPad);
    head_.store(head + need, std::memory_order_release);
    return true;
}

void SinkQueue::populate(size_t from, size_t to) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; bookworm's headers may lack it
#endif
    to = std::min(to, capacity_);
    if (from >= to) return;
    // On older kernels this fails (EINVAL) and the pages are faulted in on first use.
    (void)madvise(buf_ + from, to - from, MADV_POPULATE_WRITE);
}

bool SinkQueue::canPush(std::initializer_list<size_t> payloads) {
    uint64_t head = head_.load(std::memory_order_relaxed);
    uint64_t end = head;
    for (size_t payload : payloads) {
        if (payload > maxPayload()) return false;
        const size_t need = entrySize(payload);
        const size_t toEnd = capacity_ - size_t(end & mask_);
        end += need <= toEnd ? need : toEnd + need;
    }
    if (capacity_ - (head - cachedTail_) >= end - head) return true;
    cachedTail_ = tail_.load(std::memory_order_acquire);
    return capacity_ - (head - cachedTail_) >= end - head;
}

const SinkQueue::EntryHeader* SinkQueue::front() {
    uint64_t tail = tail_.load(std::memory_order_relaxed);
    for (;;) {
        if (tail == cachedHead_) {
            cachedHead_ = head_.load(std::memory_order_acquire);
            if (tail == cachedHead_) return nullptr;
        }
        auto* e = reinterpret_cast<const EntryHeader*>(buf_ + size_t(tail & mask_));
        if (e->kind != kPadding) {
            currentSize_ = e->size;
            return e;
        }
        tail += e->size;
        tail_.store(tail, std::memory_order_release);
    }
}

void SinkQueue::pop() {
    tail_.store(tail_.load(std::memory_order_relaxed) + currentSize_, std::memory_order_release);
    currentSize_ = 0;
}

}  // namespace auxscope
