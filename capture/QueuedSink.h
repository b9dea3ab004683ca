// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The drain thread's side of a slow sink: every record is copied into a bounded
// SinkQueue (tens of MiB) and a writer thread of its own hands the records to a
// SinkWriter. The drain thread never waits for the writer, and nothing it hands
// over is dropped: when the queue has no room for a record, hasRoom() says so and
// the drain thread leaves the record in the kernel's ring (back-pressure); the
// only loss is then what the kernel itself counts when its ring fills.
//
// AUX area bytes are never copied: a full-mode chunk is queued as a reference to
// the mapped AUX area, the writer thread writes it from there, and only then
// releases it (auxReleased()), so the drain thread moves aux_tail past bytes
// that are in the file. A disk slower than the hardware therefore fills the AUX
// area, and the kernel stops the trace with a TRUNCATED record, which the file
// keeps. A snapshot copy is queued by reference to its buffer; the sink holds at
// most QueuedSinkOptions::maxHeldSnapshotBytes of them (hasAuxRoom() refuses
// more, and the drain thread keeps the copy until there is room).
//
// A FINISHED_ROUND is queued only after a pass in which no record was held back,
// so perf's readers can rely on every later record being newer than the rounds
// before it.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "RecordSink.h"
#include "SinkQueue.h"
#include "SinkWriter.h"

namespace auxscope {

struct QueuedSinkOptions {
    size_t queueBytes = size_t(32) << 20;
    // Snapshot copies the writer thread may hold at once, in bytes (the first
    // one is always taken, whatever its size).
    uint64_t maxHeldSnapshotBytes = uint64_t(1) << 30;
    std::string name = "sink";  // names the sink in losses and messages
    // Run on the writer thread before its first entry (e.g. what a file must
    // start with but takes long to gather): the capture need not wait for it,
    // its records wait in the queue (and, when that fills, in the rings). A
    // failure fails the sink like a write error.
    std::function<Expected<void>()> prelude;
};

class QueuedSink : public RecordSink {
public:
    // `cpus`: the CPU of each ring that feeds this sink, in ring order (onRecord()
    // names the CPU, onAux() the ring index).
    QueuedSink(std::vector<int> cpus, SinkWriter& writer, QueuedSinkOptions options = {});
    ~QueuedSink() override;
    QueuedSink(const QueuedSink&) = delete;
    QueuedSink& operator=(const QueuedSink&) = delete;

    // Starts the writer thread.
    void start();
    // Once no more records come (the capture finished): queues what is still owed
    // (pending lost counts), lets the writer thread write everything queued, and
    // joins it. Returns the writer's error, if it failed.
    Expected<void> finish();

    // Drain thread.
    void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) override;
    void onDrainPassEnd() override;
    bool hasRoom(int cpu, size_t bytes) override;
    void onAux(int cpu, uint32_t ringIndex, const AuxBytes& bytes) override;
    bool hasAuxRoom(uint32_t ringIndex, const AuxBytes& bytes) override;
    uint64_t auxReleased(uint32_t ringIndex) const override;

    std::vector<SinkLoss> losses() const override;
    std::vector<std::string> messages() const override;

    struct Stats {
        uint64_t queuedRecords = 0;  // records that made it into the queue
        uint64_t queuedBytes = 0;
        uint64_t writtenRecords = 0;        // records handed to the writer
        uint64_t droppedRecords = 0;        // all reasons
        uint64_t queueFullRecords = 0;      // too large for the queue (the file marks them with LOST)
        uint64_t writerStoppedRecords = 0;  // after the writer failed (incl. what it had buffered)
        uint64_t lostEntries = 0;           // lost notices handed to the writer
        uint64_t rounds = 0;                // endRound() calls
        size_t queueCapacity = 0;
        size_t maxQueuedBytes = 0;  // high-water mark of the queue
        // AUX area data (counted apart from the records above).
        uint64_t queuedAuxChunks = 0, queuedAuxBytes = 0;
        uint64_t writtenAuxChunks = 0, writtenAuxBytes = 0;      // handed to the writer
        uint64_t droppedAuxChunks = 0, droppedAuxBytes = 0;      // all reasons
        uint64_t queueFullAuxChunks = 0, queueFullAuxBytes = 0;  // could not be queued
        // Back-pressure: times hasRoom()/hasAuxRoom() said no (the data stayed
        // where it was, nothing was dropped).
        uint64_t recordsHeldBack = 0, auxHeldBack = 0;
        uint64_t maxHeldSnapshotBytes = 0;  // high-water mark of snapshot copies held
    };
    Stats stats() const;
    // The writer's first error (its message), once it failed.
    std::optional<std::string> writerError() const;

private:
    enum Kind : uint16_t { kRecord = 1, kLost = 2, kRound = 3, kAux = 4 };
    // An AUX entry's payload: where the bytes are (the mapped AUX area, or a
    // snapshot copy kept alive by `owner`, which the writer deletes).
    struct AuxEntry {
        uint64_t auxOffset;
        const uint8_t* first;
        uint64_t firstBytes;
        const uint8_t* second;
        uint64_t secondBytes;
        std::shared_ptr<const std::vector<uint8_t>>* owner;
        uint32_t ringIndex;
        uint32_t reserved;
    };
    // Full-mode AUX chunks of one ring handed to the writer, and how far it is done.
    struct alignas(64) AuxRelease {
        uint64_t handed = 0;  // drain thread only
        std::atomic<uint64_t> done{0}, doneEnd{0};
    };
    // Per-CPU counters. Producer-side ones are written by the drain thread only
    // (relaxed stores; read by anyone); `discarded*` by the writer thread only.
    struct alignas(64) Slot {
        int cpu = -1;
        std::atomic<uint64_t> fullRecords{0}, fullBytes{0};            // queue full
        std::atomic<uint64_t> tooBigRecords{0}, tooBigBytes{0};        // larger than the queue allows
        std::atomic<uint64_t> stoppedRecords{0}, stoppedBytes{0};      // writer had failed
        std::atomic<uint64_t> discardedRecords{0}, discardedBytes{0};  // queued, then writer failed
        // The same for AUX chunks.
        std::atomic<uint64_t> auxFullChunks{0}, auxFullBytes{0};
        std::atomic<uint64_t> auxUnknownRingChunks{0}, auxUnknownRingBytes{0};
        std::atomic<uint64_t> auxStoppedChunks{0}, auxStoppedBytes{0};
        std::atomic<uint64_t> auxDiscardedChunks{0}, auxDiscardedBytes{0};
        uint64_t pendingLost = 0;  // dropped since the last lost entry was queued
        uint64_t lastTime = 0;
    };
    static void bump(std::atomic<uint64_t>& a, uint64_t n) {
        a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    size_t slotIndex(int cpu) const;
    bool pushLost(Slot& s, size_t index);
    void wakeWriter();
    void writerLoop();
    // Writer thread: an AUX entry written or discarded; its bytes may be reused.
    void releaseAux(const AuxEntry& e);
    void fail(std::string message);

    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<int16_t> slotOfCpu_;
    std::vector<std::unique_ptr<AuxRelease>> auxRelease_;  // per ring
    SinkWriter& writer_;
    QueuedSinkOptions options_;
    SinkQueue queue_;
    std::thread thread_;
    std::thread populateThread_;
    std::atomic<uint32_t> wake_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> failed_{false};
    // Drain-thread state.
    bool roundPending_ = false;
    bool heldBackThisPass_ = false;
    uint64_t maxTime_ = 0;  // newest perf timestamp seen on any CPU
    size_t bytesSinceWake_ = 0;
    std::atomic<uint64_t> queuedRecords_{0}, queuedBytes_{0}, maxQueued_{0};
    std::atomic<uint64_t> queuedAuxChunks_{0}, queuedAuxBytes_{0};
    std::atomic<uint64_t> recordsHeldBack_{0}, auxHeldBack_{0};
    std::atomic<uint64_t> heldSnapshotBytes_{0}, maxHeldSnapshotBytes_{0};
    // Writer-thread state.
    std::atomic<uint64_t> writtenRecords_{0}, lostEntries_{0}, rounds_{0};
    std::atomic<uint64_t> writtenAuxChunks_{0}, writtenAuxBytes_{0};
    mutable std::mutex errorMutex_;
    std::optional<std::string> error_;
};

}  // namespace auxscope
