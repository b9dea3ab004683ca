// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a QueuedSink's writer thread hands its records to. capture/ defines it
// and knows nothing of file formats; decode/ implements it (the perf.data
// writer), so capture/ never depends on decode/.
#include <cstdint>
#include <span>
#include <vector>

#include "RecordSink.h"
#include "Result.h"

namespace auxscope {

class SinkWriter {
public:
    virtual ~SinkWriter() = default;
    // All calls come from the QueuedSink's writer thread, in queue order. After an
    // error the sink stops calling (and stops the capture).

    // One record as the kernel wrote it into `cpu`'s data ring.
    virtual Expected<void> writeRecord(int cpu, std::span<const uint8_t> record) = 0;
    // `records` records of `cpu`'s ring were dropped since the last call (a record
    // larger than the queue could ever hold); `lastTime` is the newest perf
    // timestamp seen so far (0 if none), a time the LOST record can carry without
    // sorting before records already written.
    virtual Expected<void> writeLost(int cpu, uint64_t records, uint64_t lastTime) = 0;
    // AUX area bytes of ring `ringIndex` on `cpu`: `first` then `second` (empty
    // unless the bytes wrapped around the end of the AUX area), starting at
    // free-running AUX position `auxOffset` (perf.data: one PERF_RECORD_AUXTRACE).
    // They are read in place (from the mapped AUX area or a snapshot copy) and
    // valid during the call only. Writers that cannot keep AUX data refuse it (the
    // sink then stops the capture).
    virtual Expected<void> writeAux(int cpu, uint32_t ringIndex, uint64_t auxOffset,
                                    std::span<const uint8_t> first, std::span<const uint8_t> second) {
        (void)cpu, (void)ringIndex, (void)auxOffset, (void)first, (void)second;
        return makeError("this sink cannot store AUX area data");
    }
    // A drain pass over all rings ended (perf.data's FINISHED_ROUND).
    virtual Expected<void> endRound() = 0;
    // The queue is empty for now: a good moment to push buffered bytes out.
    virtual Expected<void> idle() { return {}; }
    // Thread-safe: records the writer accepted but could not keep (buffered when a
    // write failed), as losses; cpu -1 when they are not known per CPU.
    virtual std::vector<SinkLoss> writerLosses() const { return {}; }
};

}  // namespace auxscope
