// SPDX-License-Identifier: GPL-3.0-or-later
#include "SinkQueue.h"

namespace auxscope {

SinkQueue::SinkQueue(size_t capacityBytes) {
    size_t c = 4096;
    while (c < capacityBytes)
        c <<= 1;
    capacity_ = c;
    mask_ = c - 1;
    // Not value-initialised: 32 MiB of zeros would be paid for before the capture starts;
    // the pages are touched as the queue first fills.
    buf_ = std::unique_ptr<uint8_t[]>(new uint8_t[c]);
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
        std::memcpy(buf_.get() + off, &pad, sizeof pad);
        head += toEnd;
    }
    uint8_t* p = buf_.get() + size_t(head & mask_);
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
        auto* e = reinterpret_cast<const EntryHeader*>(buf_.get() + size_t(tail & mask_));
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
