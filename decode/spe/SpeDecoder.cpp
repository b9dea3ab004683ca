// SPDX-License-Identifier: GPL-3.0-or-later
#include "spe/SpeDecoder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "perfdata/AuxStreams.h"
#include "perfdata/AuxtraceInfo.h"
#include "spe/SpePacket.h"

namespace auxscope::spe {

void SpeDecodeStats::addGap(const std::string& reason, uint64_t n) {
    if (!n) return;
    gapBytes += n;
    for (auto& [r, bytes] : gaps)
        if (r == reason) {
            bytes += n;
            return;
        }
    gaps.emplace_back(reason, n);
}

void SpeDecodeStats::add(const SpeDecodeStats& o) {
    bytes += o.bytes;
    packets += o.packets;
    records += o.records;
    droppedRecords += o.droppedRecords;
    for (const auto& [reason, n] : o.gaps)
        addGap(reason, n);
}

uint64_t SpeRecords::midrOf(int cpu) const {
    auto it = midr.find(cpu);
    return it == midr.end() ? 0 : it->second;
}

namespace {

inline void deriveFlags(SpeRecord& r) {
    const uint8_t v = r.opPayload;
    r.isLoad = r.isStore = r.isBranch = r.isSve = r.isAtomic = r.isConditional = false;
    switch (r.opClass) {
        case OpClass::Other:
            r.isSve = (v & 0x89) == 0x08;
            break;
        case OpClass::LoadStore:
            r.isStore = v & 1;
            r.isLoad = !r.isStore;
            r.isAtomic = (v & 0xe2) == 0x02;
            r.isSve = (v & 0x0a) == 0x08;
            break;
        case OpClass::Branch:
            r.isBranch = true;
            r.isConditional = v & 1;
            break;
        case OpClass::None:
            break;
    }
}

}  // namespace

void deriveOpFlags(SpeRecord& r) {
    deriveFlags(r);
}

namespace {

// perf's address fix-ups (util/arm-spe-decoder arm_spe_calc_ip).
inline uint64_t codeAddress(uint64_t v) {
    const bool ns = v >> 63;
    const unsigned el = (v >> 61) & 3;
    uint64_t a = v & ((uint64_t(1) << 56) - 1);
    if (ns && (el == 1 || el == 2)) a |= uint64_t(0xff) << 56;
    return a;
}

inline uint64_t dataAddress(uint64_t v) {
    uint64_t a = v & ((uint64_t(1) << 56) - 1);
    if (((a >> 48) & 0xff) == 0xff) a |= uint64_t(0xff) << 56;
    return a;
}

}  // namespace

namespace {

// What the record decoder does with a packet, straight from its header: one
// dispatch per packet (the address and counter indexes folded in).
enum Action : uint8_t {
    aBad,
    aExtended,
    aPad,
    aEnd,
    // Actions from here on belong to a record (open one if none is).
    aTimestamp,
    aPc,
    aBranchTarget,
    aDataVa,
    aDataPa,
    aPrevBranch,
    aOtherAddress,
    aTotalLatency,
    aIssueLatency,
    aTranslationLatency,
    aOtherCounter,
    aContext,
    aOpType,
    aEvents,
    aDataSource,
};

struct Step {
    Action action = aBad;
    uint8_t payloadLen = 0;
    uint8_t index = 0;
};

Step stepOf(const HeaderInfo& h, uint8_t index) {
    Step s{aBad, h.payloadLen, index};
    switch (h.kind) {
        case PacketKind::Pad:
            s.action = aPad;
            break;
        case PacketKind::End:
            s.action = aEnd;
            break;
        case PacketKind::Timestamp:
            s.action = aTimestamp;
            break;
        case PacketKind::Address:
            s.action = index == kAddrPc             ? aPc
                       : index == kAddrBranchTarget ? aBranchTarget
                       : index == kAddrDataVa       ? aDataVa
                       : index == kAddrDataPa       ? aDataPa
                       : index == kAddrPrevBranch   ? aPrevBranch
                                                    : aOtherAddress;
            break;
        case PacketKind::Counter:
            s.action = index == kCntTotal         ? aTotalLatency
                       : index == kCntIssue       ? aIssueLatency
                       : index == kCntTranslation ? aTranslationLatency
                                                  : aOtherCounter;
            break;
        case PacketKind::Context:
            s.action = aContext;
            break;
        case PacketKind::OpType:
            s.action = aOpType;
            break;
        case PacketKind::Events:
            s.action = aEvents;
            break;
        case PacketKind::DataSource:
            s.action = aDataSource;
            break;
        case PacketKind::Extended:
            s.action = aExtended;
            break;
        case PacketKind::Alignment:
        case PacketKind::Bad:
            break;
    }
    return s;
}

struct StepTable {
    Step step[256];
    StepTable() {
        for (unsigned b = 0; b < 256; ++b)
            step[b] = stepOf(kSpeHeaders[b], kSpeHeaders[b].index);
    }
};
const StepTable kSteps;

}  // namespace

void decodeSpeRun(std::span<const uint8_t> bytes, int cpu, std::vector<SpeRecord>& out, SpeDecodeStats& stats,
                  std::vector<uint64_t>* ends, uint64_t base) {
    // The payload of a packet with `len` bytes: one unaligned 8-byte load, masked
    // (the run's last 16 bytes are read exactly instead).
    static constexpr uint64_t kMask[9] = {0, 0xff, 0xffff, 0, 0xffffffffu, 0, 0, 0, ~uint64_t(0)};
    const uint8_t* p = bytes.data();
    const size_t n = bytes.size();
    const size_t fastEnd = n >= 16 ? n - 16 : 0;
    stats.bytes += n;
    // The open record (a non-PAD packet since the last record end) is built in
    // place at the back of `out`; cur is null between records.
    SpeRecord* cur = nullptr;
    SpeRecord blank;
    blank.cpu = cpu;
    size_t recStart = 0;  // offset of the open record's first packet
    size_t badStart = 0;  // offset of the first byte of a run of bad bytes
    bool inBad = false;
    uint64_t packets = 0, records = 0;
    auto dropOpen = [&](size_t upTo) {
        if (!cur) return;
        stats.addGap(kGapPartialRecord, upTo - recStart);
        ++stats.droppedRecords;
        out.pop_back();
        cur = nullptr;
    };
    size_t i = 0;
    while (i < n) {
        Step st = kSteps.step[p[i]];
        size_t headerLen = 1;
        if (st.action <= aExtended) [[unlikely]] {
            if (st.action == aExtended) {
                if (i + 1 >= n) {
                    st.action = aBad;
                } else {
                    const HeaderInfo& e = kSpeExtHeaders[p[i + 1]];
                    if (e.kind == PacketKind::Alignment) {
                        const size_t alignment = size_t(1) << ((p[i] & 0xf) + 1);
                        const size_t len = alignment - (i & (alignment - 1));
                        if (i + len > n) {
                            st.action = aBad;
                        } else {
                            if (inBad) stats.addGap(kGapReservedHeader, i - badStart), inBad = false;
                            ++packets;
                            i += len;
                            continue;
                        }
                    } else {
                        st = stepOf(e, uint8_t((st.index << 3) | e.index));
                        headerLen = 2;
                    }
                }
            }
            if (st.action == aBad) {
                if (!inBad) {
                    dropOpen(i);
                    inBad = true;
                    badStart = i;
                }
                ++i;
                continue;
            }
        }
        const size_t total = headerLen + st.payloadLen;
        uint64_t v;
        if (i < fastEnd) [[likely]] {
            std::memcpy(&v, p + i + headerLen, 8);
            v &= kMask[st.payloadLen];
        } else {
            if (i + total > n) {
                if (inBad) stats.addGap(kGapReservedHeader, i - badStart), inBad = false;
                dropOpen(i);
                stats.addGap(kGapTruncatedPacket, n - i);
                i = n;
                break;
            }
            v = 0;
            std::memcpy(&v, p + i + headerLen, st.payloadLen);
        }
        if (inBad) [[unlikely]] {
            stats.addGap(kGapReservedHeader, i - badStart);
            inBad = false;
        }
        ++packets;
        if (st.action >= aTimestamp && !cur) {
            cur = &out.emplace_back(blank);  // a copy: cheaper than value-initialising in place
            recStart = i;
        }
        switch (st.action) {
            case aPad:
                break;
            case aEnd:
                if (!cur) break;  // a record end with nothing before it
                if (ends) ends->push_back(base + i + total);
                ++records;
                cur = nullptr;
                break;
            case aTimestamp:
                cur->timestamp = v;
                if (ends) ends->push_back(base + i + total);
                ++records;
                cur = nullptr;
                break;
            case aPc:
                cur->pc = codeAddress(v);
                cur->pcEl = uint8_t((v >> 61) & 3);
                cur->pcNs = v >> 63;
                cur->hasPc = true;
                break;
            case aBranchTarget:
                cur->branchTarget = codeAddress(v);
                cur->hasBranchTarget = true;
                break;
            case aDataVa:
                cur->dataVa = dataAddress(v);
                cur->dataVaTag = uint8_t(v >> 56);
                cur->hasDataVa = true;
                break;
            case aDataPa:
                cur->dataPa = v & ((uint64_t(1) << 56) - 1);
                cur->dataPaNs = v >> 63;
                cur->dataPaCh = (v >> 62) & 1;
                cur->dataPaPat = uint8_t((v >> 56) & 0xf);
                cur->hasDataPa = true;
                break;
            case aPrevBranch:
                cur->prevBranchTarget = codeAddress(v);
                cur->hasPrevBranchTarget = true;
                break;
            case aTotalLatency:
                cur->totalLatency = uint16_t(v);
                cur->hasTotalLatency = true;
                break;
            case aIssueLatency:
                cur->issueLatency = uint16_t(v);
                cur->hasIssueLatency = true;
                break;
            case aTranslationLatency:
                cur->translationLatency = uint16_t(v);
                cur->hasTranslationLatency = true;
                break;
            case aContext:
                cur->context = uint32_t(v);
                cur->contextIndex = st.index;
                cur->hasContext = true;
                break;
            case aOpType:
                cur->opClass = st.index <= 2 ? OpClass(st.index) : OpClass::None;
                cur->opPayload = uint8_t(v);
                deriveFlags(*cur);
                break;
            case aEvents:
                cur->events = v;
                cur->hasEvents = true;
                break;
            case aDataSource:
                cur->dataSource = uint16_t(v);
                cur->hasDataSource = true;
                break;
            case aOtherAddress:
            case aOtherCounter:
            case aBad:
            case aExtended:
                break;
        }
        i += total;
    }
    if (inBad) stats.addGap(kGapReservedHeader, n - badStart);
    dropOpen(n);
    stats.packets += packets;
    stats.records += records;
}

std::string eventNames(uint64_t events) {
    static constexpr std::pair<int, const char*> kNames[] = {
        {0, "exception-gen"},  {1, "retired"},           {2, "L1D-access"},      {3, "L1D-refill"},
        {4, "TLB-access"},     {5, "TLB-walk"},          {6, "not-taken"},       {7, "mispredicted"},
        {8, "LLC-access"},     {9, "LLC-miss"},          {10, "remote-access"},  {11, "misaligned"},
        {16, "transactional"}, {17, "SVE-partial-pred"}, {18, "SVE-empty-pred"},
    };
    std::string s;
    for (int bit = 0; bit < 64; ++bit) {
        if (!(events & (uint64_t(1) << bit))) continue;
        const char* name = nullptr;
        for (const auto& [b, n] : kNames)
            if (b == bit) name = n;
        if (!s.empty()) s += ' ';
        s += name ? std::string(name) : "bit" + std::to_string(bit);
    }
    return s;
}

namespace {

// MIDR: implementer [31:24], part number [15:4]; perf matches every variant and revision.
constexpr uint64_t midrKey(uint64_t implementer, uint64_t part) {
    return implementer << 24 | part << 4;
}
constexpr uint64_t kMidrKeyMask = uint64_t(0xff) << 24 | uint64_t(0xfff) << 4;

// The cores perf gives the common data source encoding (util/arm-spe.c, common_ds_encoding_cpus).
constexpr uint64_t kCommonEncoding[] = {
    midrKey(0x41, 0xd0c),  // Neoverse N1
    midrKey(0x41, 0xd49),  // Neoverse N2
    midrKey(0x41, 0xd8e),  // Neoverse N3
    midrKey(0x41, 0xd40),  // Neoverse V1
    midrKey(0x41, 0xd4f),  // Neoverse V2
    midrKey(0x41, 0xd84),  // Neoverse V3
    midrKey(0x41, 0xd81),  // Cortex-A720
    midrKey(0x41, 0xd87),  // Cortex-A725
    midrKey(0x41, 0xd4c),  // Cortex-X1C
    midrKey(0x41, 0xd4e),  // Cortex-X3
    midrKey(0x41, 0xd85),  // Cortex-X925
};
constexpr uint64_t kAmpereOne[] = {
    midrKey(0xc0, 0xac3),  // AmpereOne
    midrKey(0xc0, 0xac4),  // AmpereOne A
};

std::string hex16(uint16_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", unsigned(v));
    return buf;
}

}  // namespace

std::string dataSourceName(uint16_t source, uint64_t midr) {
    const uint64_t key = midr & kMidrKeyMask;
    if (std::find(std::begin(kCommonEncoding), std::end(kCommonEncoding), key) != std::end(kCommonEncoding)) {
        switch (source) {
            case 0x0:
                return "L1D";
            case 0x8:
                return "L2";
            case 0x9:
                return "peer core";
            case 0xa:
                return "local cluster";
            case 0xb:
                return "system cache";
            case 0xc:
                return "peer cluster";
            case 0xd:
                return "remote";
            case 0xe:
                return "DRAM";
            default:
                break;
        }
    } else if (std::find(std::begin(kAmpereOne), std::end(kAmpereOne), key) != std::end(kAmpereOne)) {
        switch (source) {
            case 0x0:
                return "local chip cache or device";
            case 0x3:
                return "system cache";
            case 0x5:
                return "remote chip cache";
            case 0x7:
                return "DRAM";
            case 0x8:
                return "L1D";
            case 0x9:
                return "L2";
            default:
                break;
        }
    }
    return hex16(source);
}

Expected<SpeRecords> decodeSpeRecords(const PerfDataReader& file, const Sideband& sideband) {
    const PerfAuxtraceInfo* block = nullptr;
    for (const PerfAuxtraceInfo& i : file.summary().auxtraceInfo)
        if (i.type == auxtrace::kTypeArmSpe) block = &i;
    if (!block) return makeError(file.path() + ": no Arm SPE AUXTRACE_INFO record (not an arm_spe capture)");
    auto info = decodeArmSpeInfo(block->priv);
    if (!info)
        return makeError(file.path() + ": offset " + std::to_string(block->fileOffset) +
                         ": Arm SPE AUXTRACE_INFO: " + info.error().message);
    SpeRecords out;
    // MIDRs: the version 2 block's, else the file's CPUID (perf's fallback for version 1).
    uint64_t fileMidr = 0;
    if (const auto& id = file.features().cpuId) fileMidr = std::strtoull(id->c_str(), nullptr, 16);
    for (const ArmSpeCpuInfo& c : info->cpus)
        out.midr[int(c.cpu)] = c.midr;

    PerfClockConv conv;
    if (const auto& tc = file.summary().timeConv; tc && tc->timeMult) {
        conv = {true, tc->timeShift, tc->timeMult, tc->timeZero};
        if (tc->hasCycles && tc->capUserTimeShort)
            conv.shortCounter = true, conv.cycles = tc->timeCycles, conv.mask = tc->timeMask;
    } else {
        out.notes.push_back(
            "no TIME_CONV record: SPE timestamps are not converted to perf time (records keep time 0, "
            "threads come from CONTEXT packets only)");
    }

    std::vector<AuxStream> streams = collectAuxStreams(file, "record boundary", out.notes);
    std::vector<uint8_t> scratch;
    std::vector<std::vector<SpeRecord>> perStream;
    std::vector<std::vector<uint64_t>> keys;  // per record: its time, or the time of the record before it
    perStream.reserve(streams.size());
    keys.reserve(streams.size());
    for (const AuxStream& s : streams) {
        if (s.cpu >= 0 && !out.midr.count(s.cpu) && fileMidr) out.midr[s.cpu] = fileMidr;
        std::vector<SpeRecord>& recs = perStream.emplace_back();
        recs.reserve(size_t(s.bytes.size() / 48));
        std::vector<uint64_t> ends;
        ends.reserve(recs.capacity());
        for (const AuxRun& run : s.runs) {
            if (run.lostBefore) out.stats.addGap(kGapLostAux, run.lostBefore);
            if (run.lostAfter) out.stats.addGap(kGapLostAux, run.lostAfter);
            decodeSpeRun(s.bytes.view(run.begin, run.end, scratch), s.cpu, recs, out.stats, &ends, run.begin);
        }
        std::vector<uint64_t>& key = keys.emplace_back();
        key.reserve(recs.size());
        uint64_t last = 0;
        // Consecutive records mostly share their thread: the last look-ups are kept.
        int32_t pidTid = INT32_MIN, pidOfTid = -1;
        auto pidOf = [&](int32_t tid) {
            if (tid != pidTid) pidTid = tid, pidOfTid = sideband.pidOf(tid);
            return pidOfTid;
        };
        uint64_t runFrom = 1, runUntil = 0;  // [runFrom, runUntil): `running` holds on s.cpu
        RunningThread running;
        for (SpeRecord& r : recs) {
            if (r.timestamp && conv.valid) r.time = conv.toPerfTime(r.timestamp);
            if (r.time) last = r.time;
            key.push_back(last);
            if (r.hasContext) {
                r.tid = int32_t(r.context);
                r.pid = pidOf(r.tid);
            } else if (s.tid >= 0) {
                r.tid = s.tid;
                r.pid = pidOf(r.tid);
            } else if (last && s.cpu >= 0) {
                // Without a timestamp: the thread at the time of the record before it.
                if (last < runFrom || last >= runUntil) {
                    running = sideband.runningAt(s.cpu, last);
                    runFrom = last;
                    runUntil = sideband.nextSwitchAfter(s.cpu, last);
                }
                r.tid = running.tid;
                r.pid = running.tid >= 0 ? (running.pid > 0 ? running.pid : pidOf(running.tid)) : -1;
                if (running.tid == 0) r.pid = 0;
            }
        }
        // The buffers and the records that ended in each.
        size_t k = 0;
        for (const AuxBufferPlace& place : s.places) {
            SpeRecords::Buffer b{s.cpu, s.tid, place.begin, place.end, place.auxOffset};
            while (k < ends.size() && ends[k] <= place.end) {
                const uint64_t t = recs[k].time;
                if (t) {
                    if (!b.firstTime || t < b.firstTime) b.firstTime = t;
                    b.lastTime = std::max(b.lastTime, t);
                }
                ++b.records;
                ++k;
            }
            out.buffers.push_back(b);
        }
    }
    // Merge the streams by time; a record without a timestamp keeps its place
    // after the record before it on its CPU (its key is that record's time), and
    // ties go to the lower CPU (streams come in ascending CPU order).
    size_t total = 0;
    for (size_t k = 0; k < perStream.size(); ++k) {
        total += perStream[k].size();
        std::vector<SpeRecord>& v = perStream[k];
        std::vector<uint64_t>& key = keys[k];
        if (!std::is_sorted(key.begin(), key.end())) {
            // Timestamps out of order (a corrupt or wrapped counter): order by them, stably.
            std::vector<size_t> order(v.size());
            for (size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key[a] < key[b]; });
            std::vector<SpeRecord> sorted;
            std::vector<uint64_t> sortedKey;
            sorted.reserve(v.size());
            sortedKey.reserve(v.size());
            for (size_t i : order)
                sorted.push_back(v[i]), sortedKey.push_back(key[i]);
            v = std::move(sorted);
            key = std::move(sortedKey);
        }
    }
    if (perStream.size() == 1) {  // one ring: already in order
        out.records = std::move(perStream.front());
        perStream.clear();
    }
    out.records.reserve(total);
    std::vector<size_t> next(perStream.size(), 0);
    for (;;) {
        size_t best = SIZE_MAX;
        for (size_t k = 0; k < perStream.size(); ++k)
            if (next[k] < perStream[k].size() &&
                (best == SIZE_MAX || keys[k][next[k]] < keys[best][next[best]]))
                best = k;
        if (best == SIZE_MAX) break;
        // Take the run of this stream up to the next stream's head key.
        uint64_t limit = UINT64_MAX;
        for (size_t k = 0; k < perStream.size(); ++k)
            if (k != best && next[k] < perStream[k].size())
                limit = std::min(limit, keys[k][next[k]] + (k < best ? 0 : 1));
        size_t i = next[best];
        const std::vector<uint64_t>& key = keys[best];
        while (i < key.size() && (limit == UINT64_MAX || key[i] < limit))
            ++i;
        if (i == next[best]) ++i;
        out.records.insert(out.records.end(), perStream[best].begin() + std::ptrdiff_t(next[best]),
                           perStream[best].begin() + std::ptrdiff_t(i));
        next[best] = i;
    }
    if (out.stats.gapBytes)
        out.notes.push_back(std::to_string(out.stats.gapBytes) + " SPE bytes in gaps (" +
                            std::to_string(out.stats.droppedRecords) + " partial records dropped)");
    return out;
}

}  // namespace auxscope::spe
