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
// The writer backlog may grow past the queue (QueuedSinkOptions::budgetBytes):
// when the queue has no room, entries go to a SpillChain (mmap'd chunks, grown
// up to the budget) instead, and only when that is full too does back-pressure
// leave records in the kernel's rings. A marker entry in the queue says where a
// run of spilled entries goes, and an end entry in the spill where it ends, so
// the writer sees every entry in the order the drain thread handed it over.
// While the writer is behind (entries spilled, the queue half full, or this
// ring's previous AUX chunk not yet written), full-mode AUX bytes are copied
// into the backlog (1 MiB pieces) and their AUX area released at once, so the
// hardware keeps tracing while the backlog has room.
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
#include "SpillChain.h"

namespace auxscope {

struct QueuedSinkOptions {
    size_t queueBytes = size_t(32) << 20;
    // The writer backlog's budget in bytes: the queue and the spill chunks behind
    // it together. At most the queue's capacity (e.g. 0): no spill, records wait
    // in the kernel's rings once the queue is full (the behaviour before spilling).
    uint64_t budgetBytes = 0;
    size_t spillChunkBytes = SpillChain::kDefaultChunkBytes;
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

// The default writer backlog budget: a quarter of MemAvailable (/proc/meminfo),
// at most 4 GiB, at least `queueBytes`; `queueBytes` when MemAvailable cannot be read.
uint64_t defaultWriterBudget(size_t queueBytes = size_t(32) << 20);
// `memAvailable`: bytes; the rule above.
uint64_t writerBudgetFor(uint64_t memAvailable, size_t queueBytes);

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
        // The writer backlog: entry bytes held in the queue and the spill now, their
        // high-water mark, and the budget (queue capacity when there is no spill).
        uint64_t backlogBytes = 0, maxBacklogBytes = 0, backlogBudget = 0;
        uint64_t spillHeldBytes = 0, maxSpillHeldBytes = 0;  // spill chunk memory (in use and spare)
        uint64_t maxSpilledBytes = 0;                        // high-water mark of entry bytes in the spill
        uint64_t spillRuns = 0;                              // times entries started going to the spill
        uint64_t spillProducerMaps = 0;                      // spill chunks the drain thread mapped itself
        uint64_t auxCopiedChunks = 0, auxCopiedBytes = 0;    // AUX bytes copied into the backlog
        // Held back (recordsHeldBack/auxHeldBack) while the whole budget was in use:
        // what the kernel then loses, it loses because the writer was behind.
        uint64_t heldBackAtBudget = 0;
    };
    Stats stats() const;
    // The writer's first error (its message), once it failed.
    std::optional<std::string> writerError() const;

private:
    enum Kind : uint16_t {
        kRecord = 1,
        kLost = 2,
        kRound = 3,
        kAux = 4,
        kSpillMark = 5,
        kSpillEnd = 6,
        kAuxCopy = 7
    };
    // A kAuxCopy entry's payload starts with this; the AUX bytes follow.
    struct AuxCopyHeader {
        uint64_t auxOffset;
        uint32_t ringIndex;
        uint32_t reserved;
    };
    static constexpr size_t kAuxPieceBytes = size_t(1) << 20;
    // Spill chunks the helper thread keeps mapped and backed ahead of the drain
    // thread while the queue is over half full (4 x 8 MiB: ~0.1 s at 300 MB/s).
    static constexpr size_t kSpareChunks = 4;
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
    // Drain thread: one entry into the queue, or the spill when the queue is full
    // (or entries are going there already); false when neither has room.
    bool push(uint16_t kind, uint16_t slot, std::span<const uint8_t> a, std::span<const uint8_t> b = {});
    // Drain thread: whether push() would take entries of these sizes now
    // (`lost`: a lost entry's payload first, 0 for none).
    bool roomFor(size_t lost, size_t payload);
    bool spillClosable() const { return spill_->usedBytes() == 0 || queue_.usedBytes() == 0; }
    size_t auxPieceBytes() const;
    bool shouldCopyAux(uint32_t ringIndex) const;
    bool auxCopyRoom(const AuxBytes& bytes) const;
    void noteBacklog();
    void requestSpares();
    // Writer thread (or the destructor): one entry; `failed` whether the writer failed.
    Expected<void> writeEntry(const SinkQueue::EntryHeader* e, std::span<const uint8_t> payload,
                              bool discard);
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
    std::unique_ptr<SpillChain> spill_;  // null: no budget beyond the queue
    std::thread thread_;
    std::thread populateThread_;
    std::thread spareThread_;  // prepares spill chunks ahead of the drain thread
    std::atomic<uint32_t> spareWake_{0};
    std::atomic<uint32_t> wake_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> failed_{false};
    // Drain-thread state.
    bool roundPending_ = false;
    bool heldBackThisPass_ = false;
    uint64_t maxTime_ = 0;  // newest perf timestamp seen on any CPU
    size_t bytesSinceWake_ = 0;
    bool spilling_ = false;  // entries go to the spill until it ends the run
    struct {
        uint32_t ringIndex = UINT32_MAX;
        uint64_t offset = 0;
        bool copy = false;
    } auxChoice_;  // hasAuxRoom()'s choice, for the onAux() that follows
    std::atomic<uint64_t> maxBacklog_{0}, maxSpilled_{0}, spillRuns_{0}, heldBackAtBudget_{0};
    std::atomic<uint64_t> auxCopiedChunks_{0}, auxCopiedBytes_{0};
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
