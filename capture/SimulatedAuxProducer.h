// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Stands in for an AUX-capable PMU (Intel PT, CoreSight, SPE) and the kernel's
// AUX bookkeeping, for tests and replay on machines without trace hardware.
//
// It owns memory laid out exactly like the kernel's mapping of a perf fd: the
// user page (perf_event_mmap_page, with data_offset/data_size and
// aux_offset/aux_size filled in), 2^n data pages, then the AUX area (any power
// of two bytes; the simulation is not bound to pages). Each transaction follows
// perf_aux_output_begin/end:
// - full mode: space is CIRC_SPACE(aux_head, aux_tail, size) with aux_tail read
//   (acquire) from the user page, so one byte always stays free. No space at
//   begin: the event is disabled, no record. The hardware fills the space it had:
//   the record carries TRUNCATED and the event is disabled. enable() is
//   PERF_EVENT_IOC_ENABLE.
// - snapshot (overwrite) mode: aux_tail is ignored, every record carries
//   OVERWRITE and its offset is the new head; records with only OVERWRITE and
//   size 0 are not written. The head wraps inside the buffer (Intel PT, SPE) or
//   runs free (CoreSight ETM), by configuration.
// - the PERF_RECORD_AUX (with a sample_id trailer in auxscope's IDENTIFIER layout:
//   TID, TIME, CPU, IDENTIFIER) goes into the data ring first (data_head stored
//   with release), then aux_head is stored with release.
// - data ring full (CIRC_SPACE against data_tail, acquire): the record is dropped
//   and counted, and a PERF_RECORD_LOST {id, lost} precedes the next record that
//   fits, as the kernel does (flushLost() writes a pending one on its own, as a
//   session's stop provokes with its tracking events).
//
// The AUX bytes are a deterministic pattern: the byte at stream position p (p-th
// byte the hardware ever wrote) is patternByte(p), never zero, with a period
// (251) that no power-of-two size divides, so misplaced bytes are caught.
//
// Threads: step(), flushLost() and the background thread are the producer; only
// one of them may run at a time. enable(), the counters and the views are safe
// from any thread.
#include <linux/perf_event.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <thread>

#include "AuxRing.h"
#include "DataRing.h"
#include "MappedRegion.h"
#include "Result.h"

namespace auxscope {

struct SimulatedAuxConfig {
    size_t dataPages = 4;      // power of two, pages of pageSize()
    uint64_t auxSize = 65536;  // bytes, power of two
    AuxMode mode = AuxMode::Full;
    bool freeRunningOverwriteHead = false;  // snapshot mode: CoreSight-style head instead of PT/SPE-style
    uint64_t auxWatermark = 0;              // full mode wakeup every this many bytes; 0: auxSize / 2
    // sample_id of the records written
    uint64_t id = 1;
    uint32_t cpu = 0;
    int32_t pid = 100, tid = 101;
};

struct SimulatedAuxTransaction {
    bool started = false;        // false: the event was disabled, or had no AUX space (then disabled now)
    uint64_t requested = 0;      // bytes the hardware wanted to write
    uint64_t written = 0;        // bytes written
    uint64_t flags = 0;          // flags of the PERF_RECORD_AUX
    bool recordWritten = false;  // a PERF_RECORD_AUX reached the data ring
    bool recordDropped = false;  // one was due but the data ring was full
    uint64_t head = 0;           // aux_head published at the end
};

// Counters; each is exact once the producer is idle.
struct SimulatedAuxCounts {
    uint64_t transactions = 0;       // started (begin found space, or snapshot mode)
    uint64_t bytesWritten = 0;       // AUX bytes written (stream positions handed out)
    uint64_t bytesTruncated = 0;     // bytes the hardware wanted but had no room for (full mode)
    uint64_t noSpaceAtBegin = 0;     // begin found no space: disabled without a record
    uint64_t disables = 0;           // every disable (no space + truncated)
    uint64_t enables = 0;            // enable() calls that re-enabled a disabled event
    uint64_t auxRecords = 0;         // PERF_RECORD_AUX written to the data ring
    uint64_t truncatedRecords = 0;   // of those, with TRUNCATED
    uint64_t partialRecords = 0;     // with PARTIAL
    uint64_t collisionRecords = 0;   // with COLLISION
    uint64_t recordsDropped = 0;     // records (AUX or LOST) that found the data ring full
    uint64_t auxRecordsDropped = 0;  // of those, PERF_RECORD_AUX
    uint64_t truncatedDropped = 0;   // of those, with TRUNCATED
    uint64_t lostRecords = 0;        // PERF_RECORD_LOST written
    uint64_t lostReported = 0;       // sum of their counts
    uint64_t lostPending = 0;        // dropped, not reported yet
    uint64_t wakeups = 0;            // eventfd signals
    uint64_t userDisables = 0;       // disable() calls that stopped an enabled event
};

class SimulatedAuxProducer {
public:
    // Errors: sizes not powers of two, no memory.
    static Expected<std::unique_ptr<SimulatedAuxProducer>> create(const SimulatedAuxConfig& config);
    ~SimulatedAuxProducer();
    SimulatedAuxProducer(const SimulatedAuxProducer&) = delete;
    SimulatedAuxProducer& operator=(const SimulatedAuxProducer&) = delete;

    static uint8_t patternByte(uint64_t position) { return uint8_t(position % kPatternPeriod + 1); }
    static constexpr uint64_t kPatternPeriod = 251;

    // Views for the consumer, exactly as if mapped from a perf fd.
    DataRing dataRing() const;
    AuxRing auxRing() const;
    perf_event_mmap_page* userPage() const { return meta_; }
    // Readable (EFD_NONBLOCK eventfd) when the kernel would wake a poller: AUX
    // watermark crossed, TRUNCATED, no space at begin, data watermark crossed.
    int wakeupFd() const { return wakeFd_; }

    // One AUX transaction of `bytes` (begin, write, end) with extra flags
    // (PARTIAL, COLLISION; TRUNCATED is decided here, OVERWRITE by the mode).
    SimulatedAuxTransaction step(uint64_t bytes, uint64_t injectFlags = 0);
    // The same transaction writing the given bytes instead of the pattern (replay
    // of recorded trace). Stream positions still advance by bytes.size().
    SimulatedAuxTransaction stepBytes(std::span<const uint8_t> bytes, uint64_t injectFlags = 0);
    // Writes any other record (sideband: MMAP2, COMM, SWITCH_CPU_WIDE, ...) into
    // the data ring, with the kernel's LOST accounting when it does not fit. The
    // caller lays out the record, its sample_id trailer included. False: dropped.
    bool writeRecord(const void* record, uint16_t size);
    // The TIME of the sample_id trailers of the records written from now on
    // (replay keeps the recorded timestamps); otherwise a counter from 1000.
    void setTime(uint64_t time) { time_ = time; }
    // Writes a pending PERF_RECORD_LOST if the data ring has room; true if none is pending after.
    bool flushLost();

    void enable();  // PERF_EVENT_IOC_ENABLE
    // PERF_EVENT_IOC_DISABLE as user space issues it (e.g. to take a snapshot):
    // returns once no transaction is in flight, as the kernel's disable only
    // returns after the hardware stopped and the transaction ended. Counted in
    // userDisables, not in disables (which are the kernel's own, for want of space).
    void disable();
    bool enabled() const { return enabled_.load(std::memory_order_acquire); }
    SimulatedAuxCounts counts() const;
    const SimulatedAuxConfig& config() const { return cfg_; }

    // Background "hardware": `transactions` transactions of [minBytes, maxBytes]
    // bytes (xorshift from `seed`), waiting while the event is disabled; every
    // `collisionEvery`-th (0: none) gets COLLISION, every `partialEvery`-th PARTIAL.
    struct Plan {
        uint64_t transactions = 1000;
        uint64_t minBytes = 1, maxBytes = 4096;
        uint64_t seed = 1;
        uint64_t collisionEvery = 0, partialEvery = 0;
    };
    void start(const Plan& plan);
    bool finished() const { return finished_.load(std::memory_order_acquire); }
    void stop();  // asks the thread to end early and joins it
    void join();

private:
    explicit SimulatedAuxProducer(const SimulatedAuxConfig& config) : cfg_(config) {}
    SimulatedAuxTransaction transaction(uint64_t bytes, uint64_t injectFlags, const uint8_t* src);
    void stallDisable();
    static constexpr size_t kPatternTableSize = 251 * 1024;
    static const uint8_t* patternTable();
    void wake();
    void writeAux(uint64_t bytes, const uint8_t* src);
    bool emitRecord(const void* rec, uint16_t size, bool isAux, uint64_t flags);
    void putTrailer(uint8_t* p);
    void putData(const void* src, uint64_t n);

    SimulatedAuxConfig cfg_;
    MappedRegion mem_;  // user page, data area and AUX area, anonymous (zeroed) pages
    perf_event_mmap_page* meta_ = nullptr;
    uint8_t* data_ = nullptr;
    uint8_t* aux_ = nullptr;
    uint64_t dataSize_ = 0;
    int wakeFd_ = -1;

    // Producer-only state.
    uint64_t auxHead_ = 0;    // rb->aux_head
    uint64_t stream_ = 0;     // bytes ever written: the next pattern position
    uint64_t auxWakeup_ = 0;  // rb->aux_wakeup
    uint64_t dataHead_ = 0, dataWakeup_ = 0;
    uint64_t lost_ = 0;  // rb->lost
    uint64_t time_ = 1000;

    std::atomic<bool> enabled_{true};
    std::atomic<bool> inTransaction_{false};  // with enabled_, lets disable() wait for the hardware
    std::atomic<bool> stop_{false}, finished_{false};
    std::thread thread_;
    // Counters, written by the producer, read anywhere.
    struct Atomics {
        std::atomic<uint64_t> transactions{0}, bytesWritten{0}, bytesTruncated{0}, noSpaceAtBegin{0},
            disables{0}, enables{0}, auxRecords{0}, truncatedRecords{0}, partialRecords{0},
            collisionRecords{0}, recordsDropped{0}, auxRecordsDropped{0}, truncatedDropped{0}, lostRecords{0},
            lostReported{0}, lostPending{0}, wakeups{0}, userDisables{0};
    } n_;
};

}  // namespace auxscope
