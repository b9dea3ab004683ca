// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <span>
#include <string>

#include "RecordParser.h"

namespace auxscope {

// Receives every record the drain thread takes from a ring, on the drain thread.
// Implementations must not block: anything slow (disk, GUI) goes through a
// bounded hand-off.
class RecordConsumer {
public:
    virtual ~RecordConsumer() = default;
    virtual void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) = 0;
    // Back-pressure. Asked on the drain thread before a record of `bytes` bytes of
    // `cpu`'s ring is handed to any consumer. A consumer whose bounded hand-off
    // has no room for it now answers false: the drain thread then leaves that
    // record, and the rest of that ring, in the kernel ring for a later pass, so
    // nothing we hold is ever dropped; if the ring fills meanwhile the kernel
    // counts what it could not write (PERF_RECORD_LOST). Must not block. A
    // consumer that answered true must take the record in onRecord().
    virtual bool hasRoom(int cpu, size_t bytes) {
        (void)cpu, (void)bytes;
        return true;
    }
};

}  // namespace auxscope
