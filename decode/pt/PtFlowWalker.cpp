// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtFlowWalker.h"

namespace auxscope::ptwalk {

BranchClass branchClassOf(pt_insn_class iclass) {
    switch (iclass) {
        case ptic_call:
            return BranchClass::Call;
        case ptic_return:
            return BranchClass::Return;
        case ptic_jump:
        case ptic_cond_jump:
            return BranchClass::Jump;
        case ptic_far_call:
            return BranchClass::FarCall;
        case ptic_far_return:
            return BranchClass::FarReturn;
        case ptic_far_jump:
            return BranchClass::FarJump;
        default:
            return BranchClass::Other;
    }
}

namespace {

// The opcode's index in the instruction's bytes, past prefixes and REX.
size_t opcodeAt(const pt_insn& insn) {
    size_t i = 0;
    while (i < insn.size && isX86Prefix(insn.raw[i]))
        ++i;
    if (insn.mode == ptem_64bit && i < insn.size && (insn.raw[i] & 0xf0) == 0x40) ++i;
    return i;
}

}  // namespace

// After the opcode these instructions hold only the displacement.
bool condTarget(const pt_insn& insn, uint64_t& target) {
    const size_t i = opcodeAt(insn);
    if (i >= insn.size) return false;
    const int op = insn.raw[i];
    size_t dispAt = 0;
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3))
        dispAt = i + 1;
    else if (op == 0x0f && i + 1 < insn.size && insn.raw[i + 1] >= 0x80 && insn.raw[i + 1] <= 0x8f)
        dispAt = i + 2;
    else
        return false;
    const size_t n = insn.size - dispAt;
    int64_t disp = 0;
    if (n == 1) {
        disp = int8_t(insn.raw[dispAt]);
    } else if (n == 4) {
        int32_t d;
        std::memcpy(&d, insn.raw + dispAt, 4);
        disp = d;
    } else {
        return false;  // rel16: the IP wraps to 16 bits
    }
    target = insn.ip + insn.size + uint64_t(disp);
    return true;
}

bool isMovToCr3(const pt_insn& insn) {
    const size_t i = opcodeAt(insn);
    return i + 2 < insn.size && insn.raw[i] == 0x0f && insn.raw[i + 1] == 0x22 &&
           ((insn.raw[i + 2] >> 3) & 7) == 3;
}

void BlockTable::setMode(pt_exec_mode m) {
    if (m == mode || m == ptem_unknown) return;
    mode = m;
    blocks.clear();
    offsets.clear();
    classes.clear();
    pushes.clear();
    index_.clear(4096);
    zeroBlock_ = UINT32_MAX;
}

bool BlockTable::isVmEntry(uint64_t ip) {
    InsnProbe::Walk w = probe_.walk(image_, ip, mode, 1);
    if (w.insns.empty()) return false;
    const pt_insn& i = w.insns[0];
    for (uint8_t k = 0; k + 2 < i.size; ++k)
        if (i.raw[k] == 0x0f && i.raw[k + 1] == 0x01 && (i.raw[k + 2] == 0xc2 || i.raw[k + 2] == 0xc3))
            return k + 3 == i.size;
    return false;
}

uint32_t BlockTable::build(uint64_t ip) {
    if (!ip && zeroBlock_ != UINT32_MAX) return zeroBlock_;
    Block b;
    b.ip = ip;
    b.offsets = uint32_t(offsets.size());
    b.pushes = uint32_t(pushes.size());
    // libipt's instruction decoder goes on past direct jumps and calls and stops
    // at the first instruction needing trace (or one it cannot decode).
    InsnProbe::Walk w = probe_.walk(image_, ip, mode, kMaxBlock + 1);
    const size_t n = std::min(w.insns.size(), kMaxBlock);
    for (size_t j = 0; j < n; ++j) {
        const pt_insn& insn = w.insns[j];
        offsets.push_back(int32_t(insn.ip - ip));
        classes.push_back(branchClassOf(insn.iclass));
        if (insn.iclass == ptic_other && isMovToCr3(insn)) b.movCr3 = true;
        const bool onPath = j + 1 < w.insns.size();  // the decoder went on: no trace needed
        if (insn.iclass == ptic_call && onPath && w.insns[j + 1].ip != insn.ip + insn.size) {
            pushes.push_back({uint32_t(j), UINT32_MAX, insn.ip + insn.size});
            ++b.npush;
        }
    }
    b.ninsn = uint32_t(n);
    const pt_insn* end = n ? &w.insns[n - 1] : nullptr;
    if (end) {
        b.last = end->ip;
        b.fall = end->ip + end->size;
        b.lastClass = branchClassOf(end->iclass);
    }
    if (n == kMaxBlock && w.insns.size() > kMaxBlock) {
        b.end = End::Straight;  // cut: the path goes on at the next instruction
        b.fall = w.insns[kMaxBlock].ip;
    } else if (w.status >= 0 || w.stoppedAt != 0 || !end) {
        // The walk ended on an instruction it could not decode (after a direct
        // branch or straight code), or on the count.
        b.end = End::Fault;
        b.error = w.status < 0 ? w.status : -pte_internal;
        b.target = w.stoppedAt;
    } else {
        switch (end->iclass) {
            case ptic_cond_jump:
                b.end = End::Cond;
                if (!condTarget(*end, b.target)) {
                    b.end = End::Fault;
                    b.error = kUnhandled;
                    b.target = end->ip;
                }
                break;
            case ptic_return:
                b.end = End::Return;
                break;
            case ptic_far_call:
            case ptic_far_return:
            case ptic_far_jump:
                b.end = End::Far;
                b.farCall = end->iclass == ptic_far_call;
                break;
            case ptic_call:
                b.end = End::IndCall;
                b.indRet = uint32_t(pushes.size());
                pushes.push_back({uint32_t(n - 1), UINT32_MAX, b.fall});
                break;
            case ptic_jump:
                b.end = End::IndJump;
                break;
            default:
                // Stopped at an instruction that needs no trace: not expected.
                b.end = End::Fault;
                b.error = w.status < 0 ? w.status : -pte_internal;
                b.target = end->ip;
                break;
        }
    }
    blocks.push_back(b);
    const uint32_t i = uint32_t(blocks.size() - 1);
    if (ip)
        index_.insert(ip, i);
    else
        zeroBlock_ = i;
    return i;
}

}  // namespace auxscope::ptwalk
