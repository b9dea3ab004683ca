// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Arm SPE packets from SpeRecords: an encoder written from the Arm ARM's SPE
// chapter (D10, "Statistical Profiling Extension": the packet formats), checked
// against perf's `report -D`, independent of auxscope's decoder (decode/spe) so
// that the one tests the other.
//
// One record is, in this order (what a Neoverse core writes):
//   ADDRESS PC (index 0), CONTEXT, OP-TYPE, EVENTS, ADDRESS branch target (1),
//   ADDRESS previous branch target (4), ADDRESS data VA (2), COUNTER
//   translation latency (2), ADDRESS data PA (3), DATA-SOURCE, COUNTER total
//   latency (0), COUNTER issue latency (1), then TIMESTAMP when the record has a
//   timestamp (non-zero), else END: a record ends at either.
// Each packet only when the record carries the field (its has* flag; OP-TYPE
// unless opClass is None). Instruction addresses (PC, targets) carry the PC's
// EL and NS bits; the payload keeps address bits [55:0], as the hardware does.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spe/SpeRecord.h"

namespace auxscope::spesynth {

// How one record's packets are laid out, beyond what the record says: choices
// the hardware may make either way, which a decoder must read alike.
struct SpeEncodeStyle {
    // ADDRESS / COUNTER packets written with the 2-byte extended header (index
    // bits [4:3] in the first byte), by index: bit i of the mask = ADDRESS
    // index i, bit 8+i = COUNTER index i.
    uint16_t extendedMask = 0;
    uint8_t eventsBytes = 2;      // EVENTS payload size (1, 2, 4, 8; grown to fit the bits)
    uint8_t dataSourceBytes = 2;  // DATA-SOURCE payload size (1 or 2; grown to fit)
};

constexpr uint16_t extendedAddress(unsigned index) {
    return uint16_t(1u << index);
}
constexpr uint16_t extendedCounter(unsigned index) {
    return uint16_t(1u << (8 + index));
}

// Packet header bytes (Arm ARM D10.1).
namespace packet {
constexpr uint8_t kPad = 0x00;
constexpr uint8_t kEnd = 0x01;
constexpr uint8_t kTimestamp = 0x71;   // 8-byte payload
constexpr uint8_t kEvents = 0x42;      // | size << 4
constexpr uint8_t kDataSource = 0x43;  // | size << 4
constexpr uint8_t kContext = 0x64;     // | index; 4-byte payload
constexpr uint8_t kOpType = 0x48;      // | class; 1-byte payload
constexpr uint8_t kAddress = 0xb0;     // | index[2:0]; 8-byte payload
constexpr uint8_t kCounter = 0x98;     // | index[2:0]; 2-byte payload
constexpr uint8_t kExtended = 0x20;    // | index[4:3]; followed by the ADDRESS/COUNTER header
}  // namespace packet

// Largest encoded record (every packet, extended headers, 8-byte EVENTS).
constexpr size_t kMaxRecordBytes = 128;

// Appends the record's packets to `out` (at most kMaxRecordBytes); returns the
// bytes written.
size_t encodeRecord(const spe::SpeRecord& r, const SpeEncodeStyle& style, uint8_t* out);
void encodeRecord(const spe::SpeRecord& r, const SpeEncodeStyle& style, std::vector<uint8_t>& out);

// The derived flags of a record (isLoad ... isConditional) from opClass and
// opPayload, as the Arm ARM's OP-TYPE payload defines them:
//   isLoad/isStore   LoadStore class, payload bit 0 clear/set
//   isAtomic         LoadStore, payload & 0xe2 == 0x02 (atomic/exclusive/acquire-release)
//   isSve            LoadStore with payload & 0x0a == 0x08, or Other with
//                    payload & 0x89 == 0x08 (SVE data processing)
//   isBranch         Branch class; isConditional: Branch with payload bit 0
void deriveOpFlags(spe::SpeRecord& r);

}  // namespace auxscope::spesynth
