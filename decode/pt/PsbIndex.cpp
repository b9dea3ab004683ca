// SPDX-License-Identifier: GPL-3.0-or-later
#include "PsbIndex.h"

namespace auxscope {

namespace {

PsbRunIndex indexRun(const uint8_t* begin, const uint8_t* end, uint64_t base,
                     const PtConfigOptions& options) {
    PsbRunIndex index;
    PtConfig config = makePtConfig(options, begin, end);
    pt_packet_decoder* decoder = pt_pkt_alloc_decoder(&config.config);
    if (!decoder) return index;
    // A running TSC estimate: TSC packets set it; MTC packets advance it by the
    // CTC ticks since the previous one, scaled by CPUID 0x15's TSC/CTC ratio.
    uint64_t tsc = 0;
    bool haveCtc = false;
    uint32_t lastCtc = 0;
    bool inPsb = false;
    int status = pt_pkt_sync_forward(decoder);
    while (status != -pte_eos) {
        if (status < 0) {
            ++index.decodeErrors;
            status = pt_pkt_sync_forward(decoder);
            continue;
        }
        uint64_t offset = 0;
        pt_pkt_get_offset(decoder, &offset);
        pt_packet packet;
        status = pt_pkt_next(decoder, &packet, sizeof packet);
        if (status < 0) continue;
        if (packet.type < PtPacketCounts::kTypes) ++index.counts.byType[packet.type];
        switch (packet.type) {
            case ppt_psb:
                index.psbs.push_back({base + offset, 0});
                inPsb = true;
                break;
            case ppt_psbend:
                inPsb = false;
                break;
            case ppt_tsc:
                tsc = packet.payload.tsc.tsc;
                haveCtc = false;
                if (inPsb && !index.psbs.empty()) index.psbs.back().tsc = tsc;
                break;
            case ppt_tma:
                lastCtc = (uint32_t(packet.payload.tma.ctc) >> options.mtcFreq) & 0xff;  // in MTC units
                haveCtc = true;
                break;
            case ppt_mtc:
                if (haveCtc && tsc && options.cpuid15Eax) {
                    uint32_t ticks = (uint32_t(packet.payload.mtc.ctc) - lastCtc) & 0xff;
                    uint64_t ctc = uint64_t(ticks) << options.mtcFreq;
                    tsc += ctc * options.cpuid15Ebx / options.cpuid15Eax;
                }
                lastCtc = packet.payload.mtc.ctc;
                haveCtc = true;
                break;
            default:
                break;
        }
        if (tsc > index.endTsc) index.endTsc = tsc;
    }
    pt_pkt_free_decoder(decoder);
    return index;
}

}  // namespace

PsbIndex PsbIndex::build(const PtCpuTrace& trace, const PtConfigOptions& options) {
    PsbIndex index;
    for (const PtRun& run : trace.runs) {
        if (run.end <= run.begin) {
            index.runs.emplace_back();
            continue;
        }
        const uint8_t* data = trace.bytes.data();
        index.runs.push_back(indexRun(data + run.begin, data + run.end, run.begin, options));
    }
    return index;
}

size_t PsbIndex::psbCount() const {
    size_t n = 0;
    for (const PsbRunIndex& r : runs)
        n += r.psbs.size();
    return n;
}

PtPacketCounts PsbIndex::counts() const {
    PtPacketCounts total;
    for (const PsbRunIndex& r : runs)
        for (size_t i = 0; i < PtPacketCounts::kTypes; ++i)
            total.byType[i] += r.counts.byType[i];
    return total;
}

}  // namespace auxscope
