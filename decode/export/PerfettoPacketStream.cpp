// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/PerfettoPacketStream.h"

#include <cerrno>
#include <cstring>

#include "export/PerfettoFields.h"

namespace auxscope {

PerfettoPacketStream::PerfettoPacketStream(const std::string& path)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {}

void PerfettoPacketStream::write(ProtoWriter& packet, bool interned, uint32_t sequence) {
    packet.u64(pf::kSequenceId, sequence);
    uint64_t flags = interned ? pf::kSeqNeedsIncrementalState : 0;
    if (sequence >= started_.size()) started_.resize(sequence + 1, false);
    if (!started_[sequence]) {
        flags |= pf::kSeqIncrementalStateCleared;
        started_[sequence] = true;
    }
    if (flags) packet.u64(pf::kSequenceFlags, flags);
    frame_.clear();
    frame_.msg(pf::kTracePacket, packet);
    out_.write(frame_.bytes().data(), std::streamsize(frame_.bytes().size()));
}

Expected<void> PerfettoPacketStream::close() {
    out_.close();
    if (!out_) return makeError(path_ + ": write failed: " + std::strerror(errno));
    return {};
}

}  // namespace auxscope
