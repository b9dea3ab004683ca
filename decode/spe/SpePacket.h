// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Arm SPE packets: the header byte(s), the payload, and the one-line text
// `perf report -D` (perf 6.1, util/arm-spe-decoder) prints for each. Layout
// (Arm ARM, "Statistical Profiling Extension" packet formats):
//   0x00 PAD          0x01 END            0x71 TIMESTAMP (8 bytes)
//   01ss0010 EVENTS   01ss0011 DATA-SOURCE (ss: payload 1 << ss bytes)
//   011001ii CONTEXT (4 bytes, ii: 0 CONTEXTIDR_EL1, 1 CONTEXTIDR_EL2)
//   010010cc OP-TYPE (1 byte, cc: 0 other, 1 load/store/atomic, 2 branch)
//   10110iii ADDRESS (8 bytes)          10011iii COUNTER (2 bytes)
//   001000hh then a second header byte: the extended form of ADDRESS and
//   COUNTER (index = hh << 3 | iii); 0x20 0x00 is the ALIGNMENT pad.
// Every other first byte is reserved: not a packet. The header dispatch is a
// table of 256 entries (speHeader()), so decoding a packet is a load, a
// bounds check and a little-endian read.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace auxscope::spe {

enum class PacketKind : uint8_t {
    Bad,  // reserved header (or an extended header whose second byte is)
    Pad,
    End,
    Timestamp,
    Address,
    Counter,
    Context,
    OpType,
    Events,
    DataSource,
    Alignment,  // 0x20 0x00: pad up to an alignment boundary
    Extended,   // first byte of a 2-byte header (table only: speNextPacket resolves it)
};

// ADDRESS packet indexes.
enum AddressIndex : uint8_t {
    kAddrPc = 0,
    kAddrBranchTarget = 1,
    kAddrDataVa = 2,
    kAddrDataPa = 3,
    kAddrPrevBranch = 4
};
// COUNTER packet indexes.
enum CounterIndex : uint8_t { kCntTotal = 0, kCntIssue = 1, kCntTranslation = 2 };

// What one header byte says: the kind, the payload length and the index bits.
struct HeaderInfo {
    PacketKind kind = PacketKind::Bad;
    uint8_t payloadLen = 0;
    uint8_t index = 0;
};
// The table of first header bytes, and that of an extended header's second byte
// (0x00: Alignment; address and counter headers; the rest Bad).
extern const std::array<HeaderInfo, 256> kSpeHeaders;
extern const std::array<HeaderInfo, 256> kSpeExtHeaders;
inline const HeaderInfo& speHeader(uint8_t byte) {
    return kSpeHeaders[byte];
}

struct SpePacket {
    PacketKind kind = PacketKind::Bad;
    uint8_t index = 0;      // ADDRESS/COUNTER index, CONTEXT index, OP-TYPE class
    uint8_t headerLen = 1;  // 1 or 2
    uint8_t payloadLen = 0;
    uint64_t payload = 0;
};

// Result codes of speNextPacket besides a length > 0.
constexpr int kSpeNeedMoreBytes = -1;  // the packet runs past `len`
constexpr int kSpeBadPacket = -2;      // a reserved header

// Decodes the packet at `p` (`len` bytes available): its length in bytes, or
// kSpeNeedMoreBytes / kSpeBadPacket. An ALIGNMENT packet's length is the
// distance to the next multiple of its alignment counted from `offset` (the
// packet's offset in its buffer).
int speNextPacket(const uint8_t* p, size_t len, SpePacket& out, uint64_t offset = 0);

// perf 6.1's packet text (arm_spe_pkt_desc): "TS 1234", "PC 0x4005d0 el0 ns=1",
// "LAT 12 TOT", "EV RETIRED L1D-ACCESS", "LD GP-REG", ... A packet perf cannot
// describe prints raw: "<NAME> 0x<payload> (<index>)".
std::string speDescribePacket(const SpePacket& packet);

// perf's packet names: "PAD", "END", "TS", "ADDR", "LAT", "CONTEXT", "OP-TYPE", "EV", "DATA-SOURCE".
const char* spePacketName(PacketKind kind);

}  // namespace auxscope::spe
