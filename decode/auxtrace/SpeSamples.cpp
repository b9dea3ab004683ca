// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/SpeSamples.h"

namespace auxscope {

std::string speEventName(SpeEvent event) {
    switch (event) {
        case SpeEvent::AllOps:
            return "arm_spe: all ops";
        case SpeEvent::Loads:
            return "arm_spe: loads";
        case SpeEvent::Stores:
            return "arm_spe: stores";
        case SpeEvent::Branches:
            return "arm_spe: branches";
        case SpeEvent::L1dRefill:
            return "arm_spe: L1D refill";
        case SpeEvent::LlcMiss:
            return "arm_spe: LLC miss";
        case SpeEvent::TlbWalk:
            return "arm_spe: TLB walk";
        case SpeEvent::Mispredicted:
            return "arm_spe: mispredicted";
        case SpeEvent::Remote:
            return "arm_spe: remote";
        case SpeEvent::TotalLatency:
            return "arm_spe: total latency (cycles)";
        case SpeEvent::Count:
            break;
    }
    return "arm_spe: ?";
}

bool speRecordHasEvent(const spe::SpeRecord& r, SpeEvent event) {
    switch (event) {
        case SpeEvent::AllOps:
            return true;
        case SpeEvent::Loads:
            return r.isLoad;
        case SpeEvent::Stores:
            return r.isStore;
        case SpeEvent::Branches:
            return r.isBranch;
        case SpeEvent::L1dRefill:
            return r.events & spe::kEvL1dRefill;
        case SpeEvent::LlcMiss:
            return r.events & spe::kEvLlcMiss;
        case SpeEvent::TlbWalk:
            return r.events & spe::kEvTlbWalk;
        case SpeEvent::Mispredicted:
            return r.events & spe::kEvMispredicted;
        case SpeEvent::Remote:
            return r.events & spe::kEvRemoteAccess;
        case SpeEvent::TotalLatency:
            return r.hasTotalLatency;
        case SpeEvent::Count:
            break;
    }
    return false;
}

SyntheticSamples speSyntheticSamples(std::span<const spe::SpeRecord> records) {
    SyntheticSamples out;
    constexpr uint32_t kEvents = uint32_t(SpeEvent::Count);
    for (uint32_t e = 0; e < kEvents; ++e) {
        SyntheticEvent ev;
        ev.name = speEventName(SpeEvent(e));
        ev.periodUnit = SpeEvent(e) == SpeEvent::TotalLatency ? "cycles" : "ops";
        out.events.push_back(std::move(ev));
    }
    out.samples.reserve(records.size() * 2);
    for (const spe::SpeRecord& r : records) {
        SyntheticSample s;
        s.time = r.time;
        s.pid = r.pid;
        s.tid = r.tid;
        s.cpu = r.cpu;
        s.ip = r.hasPc ? r.pc : 0;
        // EL0 is user code; EL1 the kernel, and so is EL2 where the kernel runs
        // there (VHE): by its address, the upper half.
        s.context = r.pcEl == 0 && !(s.ip >> 63) ? FrameContext::User : FrameContext::Kernel;
        for (uint32_t e = 0; e < kEvents; ++e) {
            if (!speRecordHasEvent(r, SpeEvent(e))) continue;
            s.event = e;
            s.period = SpeEvent(e) == SpeEvent::TotalLatency ? r.totalLatency : 1;
            out.samples.push_back(s);
        }
    }
    return out;
}

}  // namespace auxscope
