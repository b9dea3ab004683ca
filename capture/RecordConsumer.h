// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <span>
#include <string>

#include "RecordParser.h"

namespace auxscope {

// Receives every record the drain thread takes from a ring, on the drain thread.
// Implementations must not block: anything slow (disk, GUI) goes through a
// bounded queue whose overflow is counted.
class RecordConsumer {
public:
    virtual ~RecordConsumer() = default;
    virtual void onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) = 0;
};

}  // namespace auxscope
