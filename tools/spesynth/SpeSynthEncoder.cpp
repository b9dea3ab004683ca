// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeSynthEncoder.h"

#include <cstring>

namespace auxscope::spesynth {
namespace {

using spe::OpClass;
using spe::SpeRecord;

inline uint8_t* put(uint8_t* p, uint64_t v, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i)
        *p++ = uint8_t(v >> (8 * i));
    return p;
}

// log2 of a payload size in bytes (the header's sz field).
inline unsigned sizeField(unsigned bytes) {
    return bytes >= 8 ? 3 : bytes >= 4 ? 2 : bytes >= 2 ? 1 : 0;
}

inline unsigned bytesFor(uint64_t v, unsigned atLeast) {
    unsigned n = v > 0xffffffffull ? 8 : v > 0xffff ? 4 : v > 0xff ? 2 : 1;
    while (n < atLeast)
        n *= 2;
    return n > 8 ? 8 : n;
}

inline uint8_t* address(uint8_t* p, unsigned index, uint64_t payload, bool extended) {
    if (extended || index > 7) {
        *p++ = uint8_t(packet::kExtended | ((index >> 3) & 3));
        *p++ = uint8_t(packet::kAddress | (index & 7));
    } else {
        *p++ = uint8_t(packet::kAddress | index);
    }
    return put(p, payload, 8);
}

inline uint8_t* counter(uint8_t* p, unsigned index, uint16_t value, bool extended) {
    if (extended || index > 7) {
        *p++ = uint8_t(packet::kExtended | ((index >> 3) & 3));
        *p++ = uint8_t(packet::kCounter | (index & 7));
    } else {
        *p++ = uint8_t(packet::kCounter | index);
    }
    return put(p, value, 2);
}

constexpr uint64_t kAddrMask = (1ull << 56) - 1;

}  // namespace

size_t encodeRecord(const SpeRecord& r, const SpeEncodeStyle& s, uint8_t* out) {
    uint8_t* p = out;
    const uint64_t insnBits = (uint64_t(r.pcNs) << 63) | (uint64_t(r.pcEl & 3) << 61);
    if (r.hasPc) p = address(p, 0, (r.pc & kAddrMask) | insnBits, s.extendedMask & extendedAddress(0));
    if (r.hasContext) {
        *p++ = uint8_t(packet::kContext | (r.contextIndex & 3));
        p = put(p, r.context, 4);
    }
    if (r.opClass != OpClass::None) {
        *p++ = uint8_t(packet::kOpType | (uint8_t(r.opClass) & 3));
        *p++ = r.opPayload;
    }
    if (r.hasEvents) {
        const unsigned n = bytesFor(r.events, s.eventsBytes);
        *p++ = uint8_t(packet::kEvents | (sizeField(n) << 4));
        p = put(p, r.events, n);
    }
    if (r.hasBranchTarget)
        p = address(p, 1, (r.branchTarget & kAddrMask) | insnBits, s.extendedMask & extendedAddress(1));
    if (r.hasPrevBranchTarget)
        p = address(p, 4, (r.prevBranchTarget & kAddrMask) | insnBits, s.extendedMask & extendedAddress(4));
    if (r.hasDataVa)
        p = address(p, 2, (r.dataVa & kAddrMask) | (uint64_t(r.dataVaTag) << 56),
                    s.extendedMask & extendedAddress(2));
    if (r.hasTranslationLatency) p = counter(p, 2, r.translationLatency, s.extendedMask & extendedCounter(2));
    if (r.hasDataPa) {
        const uint64_t v = (r.dataPa & kAddrMask) | (uint64_t(r.dataPaNs) << 63) |
                           (uint64_t(r.dataPaCh) << 62) | (uint64_t(r.dataPaPat & 0xf) << 56);
        p = address(p, 3, v, s.extendedMask & extendedAddress(3));
    }
    if (r.hasDataSource) {
        const unsigned n = bytesFor(r.dataSource, s.dataSourceBytes);
        *p++ = uint8_t(packet::kDataSource | (sizeField(n) << 4));
        p = put(p, r.dataSource, n);
    }
    if (r.hasTotalLatency) p = counter(p, 0, r.totalLatency, s.extendedMask & extendedCounter(0));
    if (r.hasIssueLatency) p = counter(p, 1, r.issueLatency, s.extendedMask & extendedCounter(1));
    if (r.timestamp) {
        *p++ = packet::kTimestamp;
        p = put(p, r.timestamp, 8);
    } else {
        *p++ = packet::kEnd;
    }
    return size_t(p - out);
}

void encodeRecord(const SpeRecord& r, const SpeEncodeStyle& style, std::vector<uint8_t>& out) {
    const size_t at = out.size();
    out.resize(at + kMaxRecordBytes);
    out.resize(at + encodeRecord(r, style, out.data() + at));
}

void deriveOpFlags(SpeRecord& r) {
    const uint8_t p = r.opPayload;
    const bool ldst = r.opClass == OpClass::LoadStore;
    r.isLoad = ldst && !(p & 1);
    r.isStore = ldst && (p & 1);
    r.isAtomic = ldst && (p & 0xe2) == 0x02;
    r.isSve = (ldst && (p & 0x0a) == 0x08) || (r.opClass == OpClass::Other && (p & 0x89) == 0x08);
    r.isBranch = r.opClass == OpClass::Branch;
    r.isConditional = r.isBranch && (p & 1);
}

}  // namespace auxscope::spesynth
