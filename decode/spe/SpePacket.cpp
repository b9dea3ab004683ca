// SPDX-License-Identifier: GPL-3.0-or-later
#include "spe/SpePacket.h"

#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace auxscope::spe {

namespace {

constexpr uint8_t sizeBytes(uint8_t header) {
    return uint8_t(1u << ((header >> 4) & 3));
}

// Address and counter headers share the short and the extended form's second byte.
constexpr HeaderInfo addrOrCounter(uint8_t h) {
    if ((h & 0xf8) == 0xb0) return {PacketKind::Address, sizeBytes(h), uint8_t(h & 7)};
    if ((h & 0xf8) == 0x98) return {PacketKind::Counter, sizeBytes(h), uint8_t(h & 7)};
    return {};
}

constexpr HeaderInfo classify(uint8_t h) {
    if (h == 0x00) return {PacketKind::Pad, 0, 0};
    if (h == 0x01) return {PacketKind::End, 0, 0};
    if (h == 0x71) return {PacketKind::Timestamp, 8, 0};
    if ((h & 0xcf) == 0x42) return {PacketKind::Events, sizeBytes(h), sizeBytes(h)};
    if ((h & 0xcf) == 0x43) return {PacketKind::DataSource, sizeBytes(h), 0};
    if ((h & 0xfc) == 0x64) return {PacketKind::Context, 4, uint8_t(h & 3)};
    if ((h & 0xfc) == 0x48) return {PacketKind::OpType, 1, uint8_t(h & 3)};
    if ((h & 0xfc) == 0x20) return {PacketKind::Extended, 0, uint8_t(h & 3)};
    return addrOrCounter(h);
}

constexpr std::array<HeaderInfo, 256> makeTable() {
    std::array<HeaderInfo, 256> t{};
    for (unsigned i = 0; i < 256; ++i)
        t[i] = classify(uint8_t(i));
    return t;
}

// The second byte of an extended header: address or counter (or 0x00, alignment).
constexpr std::array<HeaderInfo, 256> makeExtTable() {
    std::array<HeaderInfo, 256> t{};
    for (unsigned i = 0; i < 256; ++i)
        t[i] = i == 0 ? HeaderInfo{PacketKind::Alignment, 0, 0} : addrOrCounter(uint8_t(i));
    return t;
}

uint64_t readLe(const uint8_t* p, unsigned n) {
    switch (n) {
        case 1:
            return p[0];
        case 2: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return v;
        }
        case 4: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        default: {
            uint64_t v;
            std::memcpy(&v, p, 8);
            return v;
        }
    }
}

void append(std::string& s, const char* fmt, auto... args) {
    char buf[96];
    const int n = std::snprintf(buf, sizeof buf, fmt, args...);
    if (n > 0) s.append(buf, size_t(n) < sizeof buf ? size_t(n) : sizeof buf - 1);
}

}  // namespace

constexpr std::array<HeaderInfo, 256> kSpeHeaders = makeTable();
constexpr std::array<HeaderInfo, 256> kSpeExtHeaders = makeExtTable();

int speNextPacket(const uint8_t* p, size_t len, SpePacket& out, uint64_t offset) {
    out = SpePacket{};
    if (!len) return kSpeNeedMoreBytes;
    HeaderInfo h = kSpeHeaders[p[0]];
    unsigned headerLen = 1;
    if (h.kind == PacketKind::Extended) {
        // perf: an extended header with no second byte is a bad packet.
        if (len < 2) return kSpeBadPacket;
        const HeaderInfo& e = kSpeExtHeaders[p[1]];
        if (e.kind == PacketKind::Alignment) {
            const unsigned alignment = 1u << ((p[0] & 0xf) + 1);
            if (len < alignment) return kSpeNeedMoreBytes;
            out.kind = PacketKind::Pad;
            out.headerLen = 2;
            return int(alignment - (offset & (alignment - 1)));
        }
        if (e.kind == PacketKind::Bad) return kSpeBadPacket;
        h = {e.kind, e.payloadLen, uint8_t((h.index << 3) | e.index)};
        headerLen = 2;
    }
    if (h.kind == PacketKind::Bad) return kSpeBadPacket;
    const size_t total = headerLen + h.payloadLen;
    if (len < total) return kSpeNeedMoreBytes;
    out.kind = h.kind;
    out.index = h.index;
    out.headerLen = uint8_t(headerLen);
    out.payloadLen = h.payloadLen;
    if (h.payloadLen) out.payload = readLe(p + headerLen, h.payloadLen);
    return int(total);
}

const char* spePacketName(PacketKind kind) {
    switch (kind) {
        case PacketKind::Pad:
        case PacketKind::Alignment:
            return "PAD";
        case PacketKind::End:
            return "END";
        case PacketKind::Timestamp:
            return "TS";
        case PacketKind::Address:
            return "ADDR";
        case PacketKind::Counter:
            return "LAT";
        case PacketKind::Context:
            return "CONTEXT";
        case PacketKind::OpType:
            return "OP-TYPE";
        case PacketKind::Events:
            return "EVENTS";
        case PacketKind::DataSource:
            return "DATA-SOURCE";
        case PacketKind::Bad:
        case PacketKind::Extended:
            break;
    }
    return "BAD";
}

namespace {

// perf 6.1's arm_spe_pkt_desc_op_type; false where perf prints the raw form.
bool describeOpType(const SpePacket& pk, std::string& s) {
    const uint64_t v = pk.payload;
    switch (pk.index) {
        case 0:  // other
            if ((v & 0x89) == 0x08) {
                append(s, "SVE-OTHER EVLEN %d", int(32 << ((v >> 4) & 7)));
                if (v & 0x2) s += " FP";
                if (v & 0x4) s += " PRED";
            } else {
                s += (v & 1) ? "OTHER COND-SELECT" : "OTHER INSN-OTHER";
            }
            return true;
        case 1:  // load/store/atomic
            s += (v & 1) ? "ST" : "LD";
            if ((v & 0xe2) == 0x02) {
                if (v & 0x4) s += " AT";
                if (v & 0x8) s += " EXCL";
                if (v & 0x10) s += " AR";
            }
            switch (v & 0xfe) {
                case 0x04:
                    s += " SIMD-FP";
                    break;
                case 0x00:
                    s += " GP-REG";
                    break;
                case 0x10:
                    s += " UNSPEC-REG";
                    break;
                case 0x30:
                    s += " NV-SYSREG";
                    break;
                default:
                    break;
            }
            if ((v & 0x0a) == 0x08) {
                append(s, " EVLEN %d", int(32 << ((v >> 4) & 7)));
                if (v & 0x4) s += " PRED";
                if (v & 0x80) s += " SG";
            }
            return true;
        case 2:  // branch / exception return
            s += "B";
            if (v & 1) s += " COND";
            if ((v & 0xfe) == 0x02) s += " IND";
            return true;
        default:
            return false;
    }
}

}  // namespace

std::string speDescribePacket(const SpePacket& pk) {
    std::string s;
    const uint64_t v = pk.payload;
    bool ok = true;
    switch (pk.kind) {
        case PacketKind::Pad:
        case PacketKind::Alignment:
        case PacketKind::End:
            s = spePacketName(pk.kind);
            break;
        case PacketKind::Events: {
            static constexpr std::pair<int, const char*> kNames[] = {
                {0, " EXCEPTION-GEN"},     {1, " RETIRED"},         {2, " L1D-ACCESS"},
                {3, " L1D-REFILL"},        {4, " TLB-ACCESS"},      {5, " TLB-REFILL"},
                {6, " NOT-TAKEN"},         {7, " MISPRED"},         {8, " LLC-ACCESS"},
                {9, " LLC-REFILL"},        {10, " REMOTE-ACCESS"},  {11, " ALIGNMENT"},
                {17, " SVE-PARTIAL-PRED"}, {18, " SVE-EMPTY-PRED"},
            };
            s = "EV";
            for (const auto& [bit, name] : kNames)
                if (v & (uint64_t(1) << bit)) s += name;
            break;
        }
        case PacketKind::OpType:
            ok = describeOpType(pk, s);
            break;
        case PacketKind::DataSource:
        case PacketKind::Timestamp:
            append(s, "%s %lld", spePacketName(pk.kind), (long long)v);
            break;
        case PacketKind::Address: {
            const int ns = int(v >> 63), el = int((v >> 61) & 3);
            const unsigned long long addr = v & ((uint64_t(1) << 56) - 1);
            switch (pk.index) {
                case kAddrPc:
                case kAddrBranchTarget:
                    append(s, "%s 0x%llx el%d ns=%d", pk.index == kAddrPc ? "PC" : "TGT", addr, el, ns);
                    break;
                case kAddrDataVa:
                    append(s, "VA 0x%llx", (unsigned long long)v);
                    break;
                case kAddrDataPa:
                    append(s, "PA 0x%llx ns=%d ch=%d pat=%x", addr, ns, int((v >> 62) & 1),
                           unsigned((v >> 56) & 0xf));
                    break;
                default:  // perf 6.1 does not name the previous branch target (index 4)
                    ok = false;
                    break;
            }
            break;
        }
        case PacketKind::Context:
            append(s, "CONTEXT 0x%lx el%d", (unsigned long)v, int(pk.index) + 1);
            break;
        case PacketKind::Counter:
            append(s, "LAT %d ", int((unsigned short)v));
            if (pk.index == kCntTotal) s += "TOT";
            if (pk.index == kCntIssue) s += "ISSUE";
            if (pk.index == kCntTranslation) s += "XLAT";
            break;
        case PacketKind::Bad:
        case PacketKind::Extended:
            ok = false;
            break;
    }
    if (!ok) {
        s.clear();
        append(s, "%s 0x%llx (%d)", spePacketName(pk.kind), (unsigned long long)v, int(pk.index));
    }
    return s;
}

}  // namespace auxscope::spe
