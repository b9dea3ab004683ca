// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The writer backlog's spill area: a single-producer single-consumer FIFO of
// variable-size entries (SinkQueue's entry format) in a chain of large mmap'd
// chunks that grows up to a byte budget and gives chunks back as the consumer
// empties them. QueuedSink puts entries here when its bounded SinkQueue is full,
// so a slow disk costs memory (up to the budget) before it costs the kernel's
// rings.
//
// The producer (the drain thread) never waits and never allocates per entry: it
// takes a new chunk at most once per chunk (a spare one prepared ahead by
// prepareSpares() on another thread when there is one, else it maps one itself).
// The consumer (the writer thread) reads entries in place; a chunk it has emptied
// goes back to the spares or is unmapped.
//
// The budget counts chunk memory (in use and spare): heldBytes() never exceeds it.
// Every chunk keeps kEndReserve bytes free for one empty entry, so the producer
// can always close what it wrote with pushEnd() (QueuedSink marks where a run of
// spilled entries ends).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <span>
#include <vector>

#include "SinkQueue.h"

namespace auxscope {

class SpillChain {
public:
    using EntryHeader = SinkQueue::EntryHeader;
    static constexpr size_t kDefaultChunkBytes = size_t(8) << 20;
    static constexpr size_t kEndReserve = sizeof(EntryHeader);

    // `budgetBytes`: the most chunk memory held at once (rounded down to whole
    // chunks). `chunkBytes`: each chunk's size (at least 64 KiB, rounded up to pages).
    explicit SpillChain(uint64_t budgetBytes, size_t chunkBytes = kDefaultChunkBytes);
    ~SpillChain();
    SpillChain(const SpillChain&) = delete;
    SpillChain& operator=(const SpillChain&) = delete;

    uint64_t budget() const { return budget_; }
    size_t chunkBytes() const { return chunkBytes_; }
    // Largest payload one entry can carry.
    size_t maxPayload() const;

    // Producer: whether entries of these payload sizes, pushed in this order, all
    // fit now (in the current chunk and new chunks within the budget). Room only
    // grows until the producer pushes.
    bool canPush(std::initializer_list<size_t> payloads) const;
    // Producer: whether `count` entries of `each` payload bytes (the last one
    // `last` bytes instead) fit, as canPush() (AUX bytes cut into pieces).
    bool canPushRun(size_t count, size_t each, size_t last) const;
    // Producer: copies the payload parts (concatenated) into one entry; false,
    // changing nothing, when it does not fit.
    bool tryPush(uint16_t kind, uint16_t slot, std::span<const uint8_t> a, std::span<const uint8_t> b = {});
    // Producer: an empty entry of `kind`, in the space every chunk keeps for it.
    // Call at most once after each tryPush() that succeeded.
    void pushEnd(uint16_t kind);

    // Consumer: the next entry or nullptr; valid until pop().
    const EntryHeader* front();
    std::span<const uint8_t> payload(const EntryHeader* e) const {
        return {reinterpret_cast<const uint8_t*>(e + 1), e->size - sizeof(EntryHeader)};
    }
    void pop();

    // Any thread (approximate while in use).
    // Entry bytes pushed and not yet popped.
    uint64_t usedBytes() const {
        return pushed_.load(std::memory_order_acquire) - popped_.load(std::memory_order_acquire);
    }
    // Chunk memory held now (in use and spare), and its high-water mark.
    uint64_t heldBytes() const { return uint64_t(chunks_.load(std::memory_order_acquire)) * chunkBytes_; }
    uint64_t peakHeldBytes() const {
        return uint64_t(peakChunks_.load(std::memory_order_relaxed)) * chunkBytes_;
    }
    size_t spares() const { return spareCount_.load(std::memory_order_acquire); }
    // Chunks the producer had to map itself (no spare was ready).
    uint64_t producerMaps() const { return producerMaps_.load(std::memory_order_relaxed); }
    // Any thread but the producer: maps and backs spare chunks until `n` are
    // ready or the budget is reached (e.g. on a helper thread, ahead of need).
    void prepareSpares(size_t n);

private:
    struct Chunk {
        uint8_t* data = nullptr;  // capacity bytes after the Chunk itself
        size_t capacity = 0;
        std::atomic<size_t> head{0};  // bytes written (producer)
        std::atomic<Chunk*> next{nullptr};
        size_t tail = 0;  // bytes read (consumer)
    };
    static size_t entrySize(size_t payload) { return (sizeof(EntryHeader) + payload + 7) & ~size_t(7); }
    Chunk* mapChunk();  // nullptr when mmap fails
    void unmapChunk(Chunk* c);
    // Producer: a chunk for the next entry (a spare or a new one), within the budget.
    Chunk* takeChunk();
    // Producer: whether `n` more chunks can be had now (spares, or new within the budget).
    bool canTakeChunks(size_t n) const {
        const size_t held = chunks_.load(std::memory_order_acquire);
        return n <= spareCount_.load(std::memory_order_acquire) + (maxChunks_ > held ? maxChunks_ - held : 0);
    }
    // Producer: whether `count` entries, the i-th of payload sizeAt(i), fit now.
    template <typename SizeAt>
    bool fits(size_t count, SizeAt sizeAt) const;

    uint64_t budget_;
    size_t chunkBytes_;
    size_t maxChunks_;
    std::atomic<size_t> chunks_{0}, peakChunks_{0};  // mapped chunks: in the chain and spare
    std::atomic<size_t> spareCount_{0};
    std::atomic<uint64_t> producerMaps_{0};
    std::mutex spareMutex_;  // held only to push or pop a pointer
    std::vector<Chunk*> spares_;
    // Producer side.
    Chunk* writeChunk_ = nullptr;
    alignas(64) std::atomic<uint64_t> pushed_{0};
    // Consumer side.
    Chunk* readChunk_ = nullptr;
    std::atomic<Chunk*> firstChunk_{nullptr};  // the chain's first chunk, until the consumer has it
    uint32_t currentSize_ = 0;
    alignas(64) std::atomic<uint64_t> popped_{0};
};

}  // namespace auxscope
