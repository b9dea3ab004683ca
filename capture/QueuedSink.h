// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The drain thread's side of a slow sink: every record is copied into a bounded
// SinkQueue (tens of MiB) and a writer thread of its own hands the records to a
// SinkWriter. The drain thread never waits for the writer: when the queue is
// full the record is dropped and counted per CPU, and the next time there is
// room a "lost" entry tells the writer how many records of that CPU are missing
// (the perf.data writer turns it into PERF_RECORD_LOST, so perf's tools see the
// gap too).
//
// AUX area bytes (onAux) go through the same queue, as entries of their own (a
// chunk larger than an entry may hold is split). A chunk that finds the queue
// full is dropped and counted per CPU with its bytes; the AUX stream of that
// ring then has a gap, which the next chunk's AUX offset shows.
#include <atomic>
#include <cstdint>
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
    std::string name = "sink";  // names the sink in losses and messages
};

class QueuedSink : public RecordSink {
public:
    // `cpus`: the CPUs whose rings feed this sink (as onRecord() will name them).
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
    void onAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> bytes) override;

    std::vector<SinkLoss> losses() const override;
    std::vector<std::string> messages() const override;

    struct Stats {
        uint64_t queuedRecords = 0;  // records that made it into the queue
        uint64_t queuedBytes = 0;
        uint64_t writtenRecords = 0;        // records handed to the writer
        uint64_t droppedRecords = 0;        // all reasons
        uint64_t queueFullRecords = 0;      // the queue had no room (the file marks them with LOST)
        uint64_t writerStoppedRecords = 0;  // after the writer failed (incl. what it had buffered)
        uint64_t lostEntries = 0;           // lost notices handed to the writer
        uint64_t rounds = 0;                // endRound() calls
        size_t queueCapacity = 0;
        size_t maxQueuedBytes = 0;  // high-water mark of the queue
        // AUX area data (counted apart from the records above).
        uint64_t queuedAuxChunks = 0, queuedAuxBytes = 0;
        uint64_t writtenAuxChunks = 0, writtenAuxBytes = 0;      // handed to the writer
        uint64_t droppedAuxChunks = 0, droppedAuxBytes = 0;      // all reasons
        uint64_t queueFullAuxChunks = 0, queueFullAuxBytes = 0;  // the queue had no room
    };
    Stats stats() const;
    // The writer's first error (its message), once it failed.
    std::optional<std::string> writerError() const;

private:
    enum Kind : uint16_t { kRecord = 1, kLost = 2, kRound = 3, kAux = 4 };
    // Leads an AUX entry's payload; the AUX bytes follow.
    struct AuxEntryHead {
        uint64_t auxOffset;
        uint32_t bytes;
        uint32_t ringIndex;
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
    void fail(std::string message);

    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<int16_t> slotOfCpu_;
    SinkWriter& writer_;
    QueuedSinkOptions options_;
    SinkQueue queue_;
    std::thread thread_;
    std::atomic<uint32_t> wake_{0};
    std::atomic<bool> stopping_{false};
    std::atomic<bool> failed_{false};
    // Drain-thread state.
    bool roundPending_ = false;
    uint64_t maxTime_ = 0;  // newest perf timestamp seen on any CPU
    size_t bytesSinceWake_ = 0;
    std::atomic<uint64_t> queuedRecords_{0}, queuedBytes_{0}, maxQueued_{0};
    std::atomic<uint64_t> queuedAuxChunks_{0}, queuedAuxBytes_{0};
    // Writer-thread state.
    std::atomic<uint64_t> writtenRecords_{0}, lostEntries_{0}, rounds_{0};
    std::atomic<uint64_t> writtenAuxChunks_{0}, writtenAuxBytes_{0};
    mutable std::mutex errorMutex_;
    std::optional<std::string> error_;
};

}  // namespace auxscope
