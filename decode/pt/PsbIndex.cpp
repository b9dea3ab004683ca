// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PsbIndex.h"

#include <algorithm>
#include <cstring>

namespace auxscope {

namespace {

// libipt's pt_opc_psb / pt_ext_psb: a PSB is this pair 8 times (pt_opcodes.h).
constexpr uint8_t kPsbHi = 0x02, kPsbLo = 0x82;
constexpr size_t kPsbSize = 16;
// Any 16 bytes of the pattern contain 8 bytes at a multiple of 8 from wherever a
// scan starts, and those 8 bytes are one of two words (little-endian loads).
constexpr uint64_t kWordHiFirst = 0x8202820282028202ull;  // 02 82 02 82 ...
constexpr uint64_t kWordLoFirst = 0x0282028202820282ull;  // 82 02 82 02 ...
// A PSB+ (PSB, TSC, TMA, CBR, PIP, VMCS, MODEs, FUP, PSBEND, maybe PADs) is well
// under this: the header reader looks no further.
constexpr uint64_t kPsbPlusWindow = 512;

// The running TSC estimate of the original full-index pass: TSC packets set it,
// MTC packets advance it by the CTC ticks since the previous one, scaled by
// CPUID 0x15's TSC/CTC ratio.
struct TscTracker {
    const PtConfigOptions& options;
    uint64_t tsc = 0;
    bool haveCtc = false;
    uint32_t lastCtc = 0;
    void packet(const pt_packet& p) {
        switch (p.type) {
            case ppt_tsc:
                tsc = p.payload.tsc.tsc;
                haveCtc = false;
                break;
            case ppt_tma:
                // MTC's frequency is a 4-bit field; a file may say anything: no MTC timing then.
                if (options.mtcFreq > 15) break;
                lastCtc = (uint32_t(p.payload.tma.ctc) >> options.mtcFreq) & 0xff;  // in MTC units
                haveCtc = true;
                break;
            case ppt_mtc:
                if (options.mtcFreq > 15) break;
                if (haveCtc && tsc && options.cpuid15Eax) {
                    uint32_t ticks = (uint32_t(p.payload.mtc.ctc) - lastCtc) & 0xff;
                    uint64_t ctc = uint64_t(ticks) << options.mtcFreq;
                    tsc += ctc * options.cpuid15Ebx / options.cpuid15Eax;
                }
                lastCtc = p.payload.mtc.ctc;
                haveCtc = true;
                break;
            default:
                break;
        }
    }
};

// The TSC of the PSB+ starting at bytes[0] (a PSB), 0 when it has none.
uint64_t psbPlusTsc(std::span<const uint8_t> bytes, const PtConfigOptions& options) {
    PtConfig config = makePtConfig(options, bytes.data(), bytes.data() + bytes.size());
    pt_packet_decoder* decoder = pt_pkt_alloc_decoder(&config.config);
    if (!decoder) return 0;
    uint64_t tsc = 0;
    if (pt_pkt_sync_set(decoder, 0) >= 0) {
        pt_packet packet;
        for (int n = 0; n < 64 && pt_pkt_next(decoder, &packet, sizeof packet) >= 0; ++n) {
            if (packet.type == ppt_tsc) tsc = packet.payload.tsc.tsc;
            if (packet.type == ppt_psbend) break;
        }
    }
    pt_pkt_free_decoder(decoder);
    return tsc;
}

// The TSC at the end of `bytes` (which starts at a PSB), from its packets.
uint64_t tailTsc(std::span<const uint8_t> bytes, const PtConfigOptions& options) {
    PtConfig config = makePtConfig(options, bytes.data(), bytes.data() + bytes.size());
    pt_packet_decoder* decoder = pt_pkt_alloc_decoder(&config.config);
    if (!decoder) return 0;
    TscTracker tracker{options};
    uint64_t best = 0;
    int status = pt_pkt_sync_forward(decoder);
    while (status != -pte_eos) {
        if (status < 0) {
            status = pt_pkt_sync_forward(decoder);
            continue;
        }
        pt_packet packet;
        status = pt_pkt_next(decoder, &packet, sizeof packet);
        if (status < 0) continue;
        tracker.packet(packet);
        best = std::max(best, tracker.tsc);
    }
    pt_pkt_free_decoder(decoder);
    return best;
}

}  // namespace

void findPsbs(std::span<const uint8_t> bytes, size_t ownFrom, size_t ownTo, std::vector<uint64_t>& out) {
    const uint8_t* p = bytes.data();
    const size_t n = bytes.size();
    for (size_t i = 0; i + 8 <= n;) {
        uint64_t word;
        std::memcpy(&word, p + i, 8);
        if (word != kWordHiFirst && word != kWordLoFirst) {
            i += 8;
            continue;
        }
        // Like libipt's sync: the PSB is the last 16 bytes of the pattern run, so
        // a packet ending in 02 82 just before it does not shift it.
        size_t e = word == kWordHiFirst ? i : i + 1;
        while (e + 1 < n && p[e] == kPsbHi && p[e + 1] == kPsbLo)
            e += 2;
        if (e >= kPsbSize) {
            size_t s = e - kPsbSize;
            bool valid = true;
            for (size_t k = s; k < e && valid; k += 2)
                valid = p[k] == kPsbHi && p[k + 1] == kPsbLo;
            if (valid && s >= ownFrom && s < ownTo) out.push_back(s);
        }
        i = std::max(i + 8, (e + 7) & ~size_t(7));
    }
}

PsbIndex PsbIndex::build(const PtCpuTrace& trace, const PtConfigOptions& options,
                         const ParallelFor& parallel) {
    PsbIndex index;
    index.trace_ = &trace;
    index.options_ = options;
    index.runs.resize(trace.runs.size());
    const auto& pieces = trace.bytes.pieces();
    auto runOf = [&](uint64_t offset) {
        auto it = std::upper_bound(trace.runs.begin(), trace.runs.end(), offset,
                                   [](uint64_t off, const PtRun& r) { return off < r.begin; });
        return it == trace.runs.begin() ? size_t(0) : size_t(it - trace.runs.begin() - 1);
    };
    // Per piece: the PSBs inside it, then those that straddle its start (from the
    // previous piece of the same run; perf cuts AUXTRACE buffers anywhere).
    std::vector<std::vector<PsbEntry>> found(pieces.size());
    auto scanPiece = [&](size_t k) {
        const PtTraceBytes::Piece& piece = pieces[k];
        const size_t r = runOf(piece.begin);
        if (r >= trace.runs.size()) return;
        const PtRun& run = trace.runs[r];
        std::vector<uint64_t> offsets;
        std::vector<uint8_t> scratch;
        const uint64_t b = piece.begin;
        if (k > 0 && b > run.begin) {
            uint64_t from = std::max(b >= 32 ? b - 32 : 0, run.begin);
            uint64_t to = std::min(b + 32, run.end);
            auto window = trace.bytes.view(from, to, scratch);
            std::vector<uint64_t> straddling;
            // Those starting in the previous piece only: a PSB can straddle a piece
            // shorter than itself too, and belongs to the first boundary it crosses.
            uint64_t ownFrom = std::max({from, b >= 15 ? b - 15 : 0, pieces[k - 1].begin});
            findPsbs(window, size_t(ownFrom - from), size_t(b - from), straddling);
            for (uint64_t o : straddling)
                offsets.push_back(from + o);
        }
        const size_t len = piece.bytes.size();
        std::vector<uint64_t> inside;
        findPsbs(piece.bytes, 0, len >= kPsbSize ? len - kPsbSize + 1 : 0, inside);
        for (uint64_t o : inside)
            offsets.push_back(b + o);
        std::vector<PsbEntry>& out = found[k];
        out.reserve(offsets.size());
        for (uint64_t o : offsets) {
            if (o < run.begin || o >= run.end) continue;
            auto header = trace.bytes.view(o, std::min(o + kPsbPlusWindow, run.end), scratch);
            out.push_back({o, psbPlusTsc(header, options)});
        }
    };
    if (parallel)
        parallel(pieces.size(), scanPiece);
    else
        for (size_t k = 0; k < pieces.size(); ++k)
            scanPiece(k);
    for (std::vector<PsbEntry>& psbs : found)
        for (const PsbEntry& e : psbs)
            index.runs[runOf(e.offset)].psbs.push_back(e);
    std::vector<uint8_t> scratch;
    for (size_t r = 0; r < trace.runs.size(); ++r) {
        PsbRunIndex& run = index.runs[r];
        for (const PsbEntry& e : run.psbs)
            run.endTsc = std::max(run.endTsc, e.tsc);
        if (run.psbs.empty()) continue;
        auto tail = trace.bytes.view(run.psbs.back().offset, trace.runs[r].end, scratch);
        run.endTsc = std::max(run.endTsc, tailTsc(tail, options));
    }
    return index;
}

size_t PsbIndex::psbCount() const {
    size_t n = 0;
    for (const PsbRunIndex& r : runs)
        n += r.psbs.size();
    return n;
}

void PsbIndex::countPackets() const {
    std::call_once(lazy_->once, [&] {
        if (!trace_) return;
        std::vector<uint8_t> scratch;
        for (const PtRun& run : trace_->runs) {
            if (run.end <= run.begin) continue;
            auto bytes = trace_->bytes.view(run.begin, run.end, scratch);
            PtConfig config = makePtConfig(options_, bytes.data(), bytes.data() + bytes.size());
            pt_packet_decoder* decoder = pt_pkt_alloc_decoder(&config.config);
            if (!decoder) continue;
            int status = pt_pkt_sync_forward(decoder);
            while (status != -pte_eos) {
                if (status < 0) {
                    ++lazy_->errors;
                    status = pt_pkt_sync_forward(decoder);
                    continue;
                }
                pt_packet packet;
                status = pt_pkt_next(decoder, &packet, sizeof packet);
                if (status < 0) continue;
                if (packet.type < PtPacketCounts::kTypes) ++lazy_->counts.byType[packet.type];
            }
            pt_pkt_free_decoder(decoder);
        }
    });
}

PtPacketCounts PsbIndex::counts() const {
    countPackets();
    return lazy_->counts;
}

uint64_t PsbIndex::packetDecodeErrors() const {
    countPackets();
    return lazy_->errors;
}

}  // namespace auxscope
