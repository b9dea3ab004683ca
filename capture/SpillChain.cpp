// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpillChain.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <new>

namespace auxscope {

namespace {
constexpr size_t kChunkHeader = 64;  // the Chunk itself, at the start of its mapping
static_assert(kChunkHeader % 8 == 0);

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; bookworm's headers may lack it
#endif
}  // namespace

SpillChain::SpillChain(uint64_t budgetBytes, size_t chunkBytes) : budget_(budgetBytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    chunkBytes = std::max(chunkBytes, size_t(64) << 10);
    chunkBytes_ = (chunkBytes + page - 1) / page * page;
    maxChunks_ = size_t(budget_ / chunkBytes_);
    static_assert(sizeof(Chunk) <= kChunkHeader);
}

SpillChain::~SpillChain() {
    Chunk* c = readChunk_ ? readChunk_ : firstChunk_.load(std::memory_order_acquire);
    while (c) {
        Chunk* next = c->next.load(std::memory_order_acquire);
        unmapChunk(c);
        c = next;
    }
    for (Chunk* s : spares_)
        unmapChunk(s);
}

size_t SpillChain::maxPayload() const {
    const size_t capacity = chunkBytes_ - kChunkHeader;
    return (capacity - kEndReserve - sizeof(EntryHeader)) & ~size_t(7);
}

SpillChain::Chunk* SpillChain::mapChunk() {
    // Reserve the chunk within the budget first: the producer and prepareSpares()
    // may both be mapping one.
    size_t held = chunks_.load(std::memory_order_acquire);
    do {
        if (held >= maxChunks_) return nullptr;
    } while (!chunks_.compare_exchange_weak(held, held + 1, std::memory_order_acq_rel));
    // Aligned to 2 MiB so that transparent huge pages back it: 4 page faults for
    // 8 MiB instead of 2048 (the excess address space is given back at once).
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t extra = chunkBytes_ >= kHuge ? kHuge : 0;
    void* m = mmap(nullptr, chunkBytes_ + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        chunks_.fetch_sub(1, std::memory_order_acq_rel);
        return nullptr;
    }
    auto* base = static_cast<uint8_t*>(m);
    uint8_t* p = base;
    if (extra) {
        p = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
        if (p > base) munmap(base, size_t(p - base));
        if (const size_t tail = size_t(base + chunkBytes_ + extra - (p + chunkBytes_)))
            munmap(p + chunkBytes_, tail);
    }
    (void)madvise(p, chunkBytes_, MADV_HUGEPAGE);
    auto* c = new (p) Chunk;
    c->data = static_cast<uint8_t*>(p) + kChunkHeader;
    c->capacity = chunkBytes_ - kChunkHeader;
    const size_t n = held + 1;
    size_t peak = peakChunks_.load(std::memory_order_relaxed);
    while (n > peak && !peakChunks_.compare_exchange_weak(peak, n, std::memory_order_relaxed)) {
    }
    return c;
}

void SpillChain::unmapChunk(Chunk* c) {
    c->~Chunk();
    munmap(c, chunkBytes_);
    chunks_.fetch_sub(1, std::memory_order_acq_rel);
}

void SpillChain::prepareSpares(size_t n) {
    for (;;) {
        {
            std::lock_guard lock(spareMutex_);
            if (spares_.size() >= n) return;
        }
        Chunk* c = mapChunk();
        if (!c) return;
        // Backed now, here, so the producer does not take the page faults.
        (void)madvise(c, chunkBytes_, MADV_POPULATE_WRITE);
        std::lock_guard lock(spareMutex_);
        spares_.push_back(c);
        spareCount_.store(spares_.size(), std::memory_order_release);
    }
}

SpillChain::Chunk* SpillChain::takeChunk() {
    {
        std::lock_guard lock(spareMutex_);
        if (!spares_.empty()) {
            Chunk* c = spares_.back();
            spares_.pop_back();
            spareCount_.store(spares_.size(), std::memory_order_release);
            return c;
        }
    }
    Chunk* c = mapChunk();
    if (c) producerMaps_.fetch_add(1, std::memory_order_relaxed);
    return c;
}

template <typename SizeAt>
bool SpillChain::fits(size_t count, SizeAt sizeAt) const {
    size_t room = writeChunk_ ? writeChunk_->capacity - writeChunk_->head.load(std::memory_order_relaxed) : 0;
    const size_t capacity = chunkBytes_ - kChunkHeader;
    size_t newChunks = 0;
    for (size_t i = 0; i < count; ++i) {
        const size_t payload = sizeAt(i);
        if (payload > maxPayload()) return false;
        const size_t need = entrySize(payload);
        if (need + kEndReserve <= room) {
            room -= need;
        } else {
            ++newChunks;
            room = capacity - need;
        }
    }
    return newChunks == 0 || canTakeChunks(newChunks);
}

bool SpillChain::canPush(std::initializer_list<size_t> payloads) const {
    return fits(payloads.size(), [&](size_t i) { return payloads.begin()[i]; });
}

bool SpillChain::canPushRun(size_t count, size_t each, size_t last) const {
    if (count == 0) return true;
    return fits(count, [&](size_t i) { return i + 1 == count ? last : each; });
}

bool SpillChain::tryPush(uint16_t kind, uint16_t slot, std::span<const uint8_t> a,
                         std::span<const uint8_t> b) {
    const size_t payload = a.size() + b.size();
    if (payload > maxPayload()) return false;
    const size_t need = entrySize(payload);
    Chunk* c = writeChunk_;
    size_t head = c ? c->head.load(std::memory_order_relaxed) : 0;
    if (!c || need + kEndReserve > c->capacity - head) {
        Chunk* n = takeChunk();
        if (!n) return false;
        n->head.store(0, std::memory_order_relaxed);
        n->next.store(nullptr, std::memory_order_relaxed);
        n->tail = 0;
        if (c)
            c->next.store(n, std::memory_order_release);  // c is complete: the consumer may move on
        else
            firstChunk_.store(n, std::memory_order_release);
        writeChunk_ = c = n;
        head = 0;
    }
    uint8_t* p = c->data + head;
    const EntryHeader h{uint32_t(need), kind, slot};
    std::memcpy(p, &h, sizeof h);
    p += sizeof h;
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    if (!b.empty()) std::memcpy(p + a.size(), b.data(), b.size());
    if (const size_t pad = need - sizeof h - payload) std::memset(p + payload, 0, pad);
    c->head.store(head + need, std::memory_order_release);
    pushed_.store(pushed_.load(std::memory_order_relaxed) + need, std::memory_order_release);
    return true;
}

void SpillChain::pushEnd(uint16_t kind) {
    Chunk* c = writeChunk_;
    if (!c) return;
    const size_t head = c->head.load(std::memory_order_relaxed);
    if (c->capacity - head < kEndReserve) return;  // not after a tryPush(): nothing to close
    const EntryHeader h{uint32_t(kEndReserve), kind, 0};
    std::memcpy(c->data + head, &h, sizeof h);
    c->head.store(head + kEndReserve, std::memory_order_release);
    pushed_.store(pushed_.load(std::memory_order_relaxed) + kEndReserve, std::memory_order_release);
}

const SpillChain::EntryHeader* SpillChain::front() {
    if (!readChunk_) {
        readChunk_ = firstChunk_.load(std::memory_order_acquire);
        if (!readChunk_) return nullptr;
    }
    for (;;) {
        Chunk* c = readChunk_;
        if (c->tail < c->head.load(std::memory_order_acquire)) {
            auto* e = reinterpret_cast<const EntryHeader*>(c->data + c->tail);
            currentSize_ = e->size;
            return e;
        }
        Chunk* next = c->next.load(std::memory_order_acquire);
        if (!next) return nullptr;
        // The producer finished c before it published next: look once more.
        if (c->tail < c->head.load(std::memory_order_acquire)) continue;
        readChunk_ = next;
        // c is empty and the producer has left it: a spare for later, or gone.
        bool kept = false;
        {
            std::lock_guard lock(spareMutex_);
            if (spares_.size() < 2) {
                spares_.push_back(c);
                spareCount_.store(spares_.size(), std::memory_order_release);
                kept = true;
            }
        }
        if (!kept) unmapChunk(c);
    }
}

void SpillChain::pop() {
    readChunk_->tail += currentSize_;
    popped_.store(popped_.load(std::memory_order_relaxed) + currentSize_, std::memory_order_release);
    currentSize_ = 0;
}

}  // namespace auxscope
