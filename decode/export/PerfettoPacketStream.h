// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes Perfetto TracePackets to a file as they are made (nothing is held),
// each on a packet sequence: the first packet of a sequence clears its
// incremental state, and packets that use interned data (or trace packet
// defaults) say they need it, as the importer requires of every writer.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "Result.h"
#include "export/ProtoWriter.h"

namespace auxscope {

class PerfettoPacketStream {
public:
    // The sequence of track descriptors and track events.
    static constexpr uint32_t kTrackEventSequence = 1;

    explicit PerfettoPacketStream(const std::string& path);
    bool opened() const { return bool(out_); }
    // Adds the sequence id and flags to `packet` and appends it as Trace.packet.
    // `interned`: the packet refers to (or defines) interned data or defaults,
    // which the importer only accepts on a sequence whose incremental state was cleared.
    void write(ProtoWriter& packet, bool interned = false, uint32_t sequence = kTrackEventSequence);
    Expected<void> close();

private:
    std::string path_;
    std::ofstream out_;
    ProtoWriter frame_;
    std::vector<bool> started_;  // per sequence id: its first packet is written
};

}  // namespace auxscope
