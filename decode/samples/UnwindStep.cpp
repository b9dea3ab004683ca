// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/UnwindStep.h"

#include <dwarf.h>

#include <cstring>
#include <limits>

#include "images/ImageResolver.h"

namespace auxscope {

bool UnwindMemory::read(uint64_t addr, uint64_t& value) {
    value = 0;
    if (addr >= sp_ && addr - sp_ <= stack_.size() && stack_.size() - (addr - sp_) >= word_) {
        std::memcpy(&value, stack_.data() + (addr - sp_), word_);  // little-endian hosts and targets only
        return true;
    }
    const std::span<const uint8_t> file = images_.bytesAt(pid_, addr);
    if (file.size() >= word_) {
        std::memcpy(&value, file.data(), word_);
        return true;
    }
    // Past the copy's end the caller's frames go on, above the bytes the kernel
    // copied; anything below the sampled SP or far off is a bad address.
    if (addr >= sp_) {
        failedAboveCopy_ = true;
    } else {
        failedElsewhere_ = true;
    }
    return false;
}

namespace {

// libdwfl's bounds on one DWARF expression (frame_unwind.c).
constexpr size_t kExpressionStackMax = 0x100;
constexpr size_t kExpressionStepsMax = 0x1000;

// Evaluates one row's rules over one frame, computing the CFA once (libdwfl
// evaluates it again for every register that names it; the result is the same).
class RowEvaluator {
public:
    RowEvaluator(const UserRegisterLayout& layout, const UnwindFrame& frame, const CfiRow& row,
                 uint64_t loadBias, UnwindMemory& memory)
        : layout_(layout), frame_(frame), row_(row), addrBias_(loadBias + row.addressBias), memory_(memory) {}

    bool reg(uint64_t r, uint64_t& v) const { return r < layout_.frameRegs && frame_.get(unsigned(r), v); }

    bool cfa(uint64_t& v) {
        if (cfaState_ == 0) {
            bool ok = false;
            switch (row_.cfa) {
                case CfiRow::Cfa::RegisterOffset:
                    ok = reg(row_.cfaRegister, cfa_);
                    cfa_ += row_.cfaOffset;
                    break;
                case CfiRow::Cfa::Expression:
                    ok = evaluate(std::span(row_.ops).subspan(row_.cfaOps, row_.cfaOpCount), true, cfa_);
                    break;
                case CfiRow::Cfa::Invalid:
                    break;
            }
            cfaState_ = ok ? 1 : -1;
        }
        v = cfa_;
        return cfaState_ > 0;
    }

    // A DWARF expression as libdwfl's expr_eval runs it: DW_OP_call_frame_cfa
    // (which libdw puts before a register's rule) makes the result a location
    // to read, DW_OP_stack_value a value. `inCfa`: the CFA's own expression.
    bool evaluate(std::span<const Dwarf_Op> ops, bool inCfa, uint64_t& result) {
        if (ops.empty()) return false;
        uint64_t stack[kExpressionStackMax];
        size_t used = 0;
        auto push = [&](uint64_t v) {
            if (used >= kExpressionStackMax) return false;
            stack[used++] = v;
            return true;
        };
        auto pop = [&](uint64_t& v) {
            if (!used) return false;
            v = stack[--used];
            return true;
        };
        bool location = false;
        size_t steps = 0;
        const unsigned addressBytes = layout_.elf32 ? 4 : 8;
        for (size_t i = 0; i < ops.size(); ++i) {
            if (++steps > kExpressionStepsMax) return false;
            const Dwarf_Op& op = ops[i];
            uint64_t a, b, c;
            const uint8_t atom = op.atom;
            if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
                if (!push(atom - DW_OP_lit0)) return false;
                continue;
            }
            if (atom >= DW_OP_reg0 && atom <= DW_OP_reg31) {
                if (!reg(atom - DW_OP_reg0, a) || !push(a)) return false;
                continue;
            }
            if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
                if (!reg(atom - DW_OP_breg0, a) || !push(a + op.number)) return false;
                continue;
            }
            switch (atom) {
                case DW_OP_addr:
                    if (!push(op.number + addrBias_)) return false;
                    break;
                case DW_OP_const1u:
                case DW_OP_const1s:
                case DW_OP_const2u:
                case DW_OP_const2s:
                case DW_OP_const4u:
                case DW_OP_const4s:
                case DW_OP_const8u:
                case DW_OP_const8s:
                case DW_OP_constu:
                case DW_OP_consts:
                    if (!push(op.number)) return false;
                    break;
                case DW_OP_regx:
                    if (!reg(op.number, a) || !push(a)) return false;
                    break;
                case DW_OP_bregx:
                    if (!reg(op.number, a) || !push(a + op.number2)) return false;
                    break;
                case DW_OP_dup:
                    if (!pop(a) || !push(a) || !push(a)) return false;
                    break;
                case DW_OP_drop:
                    if (!pop(a)) return false;
                    break;
                case DW_OP_pick:
                    if (used <= op.number || !push(stack[used - 1 - op.number])) return false;
                    break;
                case DW_OP_over:
                    if (!pop(a) || !pop(b) || !push(b) || !push(a) || !push(b)) return false;
                    break;
                case DW_OP_swap:
                    if (!pop(a) || !pop(b) || !push(a) || !push(b)) return false;
                    break;
                case DW_OP_rot:
                    if (!pop(a) || !pop(b) || !pop(c) || !push(a) || !push(c) || !push(b)) return false;
                    break;
                case DW_OP_deref:
                case DW_OP_deref_size:
                    if (!pop(a) || !memory_.read(a, a)) return false;
                    if (atom == DW_OP_deref_size) {
                        if (op.number > addressBytes) return false;
                        if (op.number < 8) a &= (uint64_t(1) << (op.number * 8)) - 1;
                    }
                    if (!push(a)) return false;
                    break;
                case DW_OP_abs:
                    if (!pop(a) || !push(int64_t(a) < 0 ? 0 - a : a)) return false;
                    break;
                case DW_OP_neg:
                    if (!pop(a) || !push(0 - a)) return false;
                    break;
                case DW_OP_not:
                    if (!pop(a) || !push(~a)) return false;
                    break;
                case DW_OP_plus_uconst:
                    if (!pop(a) || !push(a + op.number)) return false;
                    break;
                case DW_OP_div:
                    if (!pop(b) || !pop(a) || b == 0) return false;
                    // Signed, as libdwfl divides (INT64_MIN / -1 kept defined).
                    if (!push(int64_t(b) == -1 ? 0 - a : uint64_t(int64_t(a) / int64_t(b)))) return false;
                    break;
                case DW_OP_mod:
                    if (!pop(b) || !pop(a) || b == 0 || !push(a % b)) return false;
                    break;
                case DW_OP_and:
                case DW_OP_minus:
                case DW_OP_mul:
                case DW_OP_or:
                case DW_OP_plus:
                case DW_OP_shl:
                case DW_OP_shr:
                case DW_OP_shra:
                case DW_OP_xor:
                case DW_OP_le:
                case DW_OP_ge:
                case DW_OP_eq:
                case DW_OP_lt:
                case DW_OP_gt:
                case DW_OP_ne:
                    if (!pop(b) || !pop(a) || !push(binary(atom, a, b))) return false;
                    break;
                case DW_OP_bra:
                    if (!pop(a)) return false;
                    if (a == 0) break;
                    [[fallthrough]];
                case DW_OP_skip: {
                    // The operand is a byte offset from the end of this 3-byte op.
                    const uint64_t target = op.offset + 1 + 2 + uint64_t(int64_t(int16_t(op.number)));
                    size_t j = 0;
                    while (j < ops.size() && ops[j].offset != target)
                        ++j;
                    if (j == ops.size()) return false;
                    i = j - 1;  // the loop's ++i runs the target next
                    break;
                }
                case DW_OP_nop:
                    break;
                case DW_OP_call_frame_cfa:
                    if (inCfa || !cfa(a) || !push(a)) return false;
                    location = true;
                    break;
                case DW_OP_stack_value:
                    location = false;
                    break;
                default:  // DW_OP_GNU_encoded_addr and every op CFI has no use for
                    return false;
            }
        }
        if (!pop(result)) return false;
        return !location || memory_.read(result, result);
    }

private:
    static uint64_t binary(uint8_t atom, uint64_t a, uint64_t b) {
        const int64_t sa = int64_t(a), sb = int64_t(b);
        switch (atom) {
            case DW_OP_and:
                return a & b;
            case DW_OP_minus:
                return a - b;
            case DW_OP_mul:
                return a * b;
            case DW_OP_or:
                return a | b;
            case DW_OP_plus:
                return a + b;
            // Shifts by 64 or more: what x86 computes for libdwfl's C shifts.
            case DW_OP_shl:
                return a << (b & 63);
            case DW_OP_shr:
                return a >> (b & 63);
            case DW_OP_shra:
                return uint64_t(sa >> (b & 63));
            case DW_OP_xor:
                return a ^ b;
            case DW_OP_le:
                return sa <= sb;
            case DW_OP_ge:
                return sa >= sb;
            case DW_OP_eq:
                return sa == sb;
            case DW_OP_lt:
                return sa < sb;
            case DW_OP_gt:
                return sa > sb;
            default:  // DW_OP_ne
                return sa != sb;
        }
    }

    const UserRegisterLayout& layout_;
    const UnwindFrame& frame_;
    const CfiRow& row_;
    uint64_t addrBias_;
    UnwindMemory& memory_;
    int cfaState_ = 0;  // 0: not computed, 1: known, -1: cannot be known
    uint64_t cfa_ = 0;
};

// The frame-pointer walks elfutils' backends take where no CFI covers a PC.
bool framePointerStep(const UserRegisterLayout& layout, const UnwindFrame& frame, UnwindMemory& memory,
                      UnwindFrame& caller) {
    uint64_t v;
    const bool elf32 = layout.elf32;
    switch (layout.machine) {
        case 62: {  // EM_X86_64: rbp chain; the caller's SP must lie above this frame's
            uint64_t fp, sp = 0, previous = 0, ret;
            if (!frame.get(layout.fpReg, fp) || fp == 0) return false;
            if (frame.get(layout.spReg, v)) sp = v;
            if (!memory.read(fp, previous)) previous = 0;
            if (!memory.read(fp + 8, ret)) return false;
            caller.put(layout.fpReg, previous, elf32);
            caller.put(layout.spReg, fp + 16, elf32);
            caller.pc = ret;
            return sp < fp + 16;
        }
        case 3: {  // EM_386: ebp chain, with sanity checks on both ends
            uint64_t sp, fp, ret;
            if (!frame.get(layout.spReg, sp) || !frame.get(layout.fpReg, fp)) return false;
            if (fp == 0 || sp == 0 || fp < sp) return false;
            if (!memory.read(fp + 4, ret) || ret == 0) return false;
            sp = fp + 8;
            if (!memory.read(fp, fp) || fp == 0 || sp >= fp) return false;
            caller.put(layout.spReg, sp, elf32);
            caller.put(layout.fpReg, fp, elf32);
            caller.pc = ret;
            return true;
        }
        case 183: {  // EM_AARCH64: the link register, then the frame record at x29
            uint64_t lr, fp = 0, sp = 0, newLr, newFp;
            if (!frame.get(30, lr) || lr == 0) return false;
            caller.pc = lr;
            if (frame.get(layout.fpReg, v)) fp = v;
            if (frame.get(layout.spReg, v)) sp = v;
            if (!memory.read(fp + 8, newLr)) newLr = 0;
            if (!memory.read(fp, newFp)) newFp = 0;
            caller.put(30, newLr, elf32);
            caller.put(layout.fpReg, newFp, elf32);
            caller.put(layout.spReg, fp + 16, elf32);
            return fp == 0 || fp + 16 > sp;
        }
        default:
            return false;
    }
}

}  // namespace

StepOutcome unwindStep(const UserRegisterLayout& layout, const UnwindFrame& frame, const CfiRow* row,
                       uint64_t loadBias, UnwindMemory& memory, UnwindFrame& caller) {
    StepOutcome out;
    caller.clearRegisters();
    caller.initial = false;
    caller.signal = false;
    caller.pc = 0;
    if (!row) {
        out.noCfi = true;
        out.kind = framePointerStep(layout, frame, memory, caller) ? StepKind::Unwound : StepKind::Failed;
        return out;
    }
    caller.signal = row->signalFrame;
    RowEvaluator eval(layout, frame, *row, loadBias, memory);
    for (const CfiRow::Register& r : row->registers) {
        if (r.regno >= layout.frameRegs) continue;
        uint64_t v, cfa;
        bool ok = false;
        switch (r.rule) {
            case CfiRow::Rule::Same:
                ok = eval.reg(r.regno, v);
                break;
            case CfiRow::Rule::AtCfa:
                ok = eval.cfa(cfa) && memory.read(cfa + r.offset, v);
                break;
            case CfiRow::Rule::ValueOfCfa:
                ok = eval.cfa(cfa);
                v = cfa + r.offset;
                break;
            case CfiRow::Rule::Register:
                ok = eval.reg(r.offset, v);
                break;
            case CfiRow::Rule::Expression:
                ok = eval.evaluate(std::span(row->ops).subspan(r.first, r.count), false, v);
                break;
            case CfiRow::Rule::Unusable:
                break;
        }
        if (ok) caller.put(r.regno, v, layout.elf32);
    }
    if (row->returnAddressUndefined) {
        out.kind = StepKind::End;
        out.outermost = true;
        return out;
    }
    if (row->returnAddress >= layout.frameRegs) {
        out.kind = StepKind::Failed;
        out.badCfi = true;
        return out;
    }
    uint64_t ra;
    if (!caller.get(row->returnAddress, ra)) {
        out.kind = StepKind::End;  // not known: libdwfl ends the stack here too
        return out;
    }
    if (ra == 0) {  // libdwfl: no architecture it unwinds has code at 0
        out.kind = StepKind::End;
        out.outermost = true;
        return out;
    }
    caller.pc = ra;
    out.kind = StepKind::Unwound;
    return out;
}

}  // namespace auxscope
