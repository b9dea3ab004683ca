// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One step of DWARF unwinding (a frame's registers -> its caller's), taken the
// way elfutils' libdwfl takes it (libdwfl/frame_unwind.c, elfutils 0.188), but
// from CFI rows libdw computed once and kept (CfiRowCache) instead of asking
// libdw again for every frame of every sample:
//   - a row's registers are evaluated over the frame's registers in register
//     order; a rule that cannot be evaluated (a register or a word that is not
//     known) leaves that register unknown in the caller, as libdwfl does;
//   - the caller's PC is its return-address register: undefined there, or 0,
//     ends the stack; not known, it ends it too (libdwfl cannot tell the two
//     apart; the outcome here can, for the stop reason);
//   - without a row, the architecture's frame-pointer walk libdwfl falls back
//     to (elfutils' backends/{x86_64,i386,aarch64}_unwind.c).
// DwarfUnwinder drives the steps and proves (tests) that they give libdwfl's frames.
#include <elfutils/libdw.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "samples/UserRegisters.h"

namespace auxscope {

class ImageResolver;

// The registers of one frame as the unwinder knows them (DWARF numbering).
struct UnwindFrame {
    static constexpr unsigned kMaxRegs = 128;
    uint64_t pc = 0;
    bool initial = false;  // the sampled frame: its PC is where it stopped, not a return address
    bool signal = false;   // unwound through a signal frame: its PC is where it was interrupted
    uint64_t set[2] = {0, 0};
    std::array<uint64_t, kMaxRegs> regs;

    bool get(unsigned r, uint64_t& v) const {
        if (r >= kMaxRegs || !(set[r >> 6] >> (r & 63) & 1)) return false;
        v = regs[r];
        return true;
    }
    void put(unsigned r, uint64_t v, bool elf32) {
        if (r >= kMaxRegs) return;
        regs[r] = elf32 ? v & 0xffffffffu : v;
        set[r >> 6] |= uint64_t(1) << (r & 63);
    }
    void clearRegisters() { set[0] = set[1] = 0; }
};

// What an unwinder may read of a sampled thread's memory: the stack copy
// ([sp, sp + size)), else the bytes of the mapped files (read-only data and
// code), else nothing. Remembers what failed, for the stop reason.
class UnwindMemory {
public:
    UnwindMemory(std::span<const uint8_t> stack, uint64_t sp, bool elf32, const ImageResolver& images,
                 int32_t pid)
        : stack_(stack), sp_(sp), word_(elf32 ? 4 : 8), images_(images), pid_(pid) {}
    // A word (4 bytes for a 32-bit task, else 8) at `addr`, zero-extended.
    bool read(uint64_t addr, uint64_t& value);
    void resetFailures() { failedAboveCopy_ = failedElsewhere_ = false; }
    // Since resetFailures(): a read past the end of the copy (the stack went on
    // beyond what the kernel copied), a read anywhere else that nothing holds.
    bool failedAboveCopy() const { return failedAboveCopy_; }
    bool failedElsewhere() const { return failedElsewhere_; }

private:
    std::span<const uint8_t> stack_;
    uint64_t sp_;
    unsigned word_;
    const ImageResolver& images_;
    int32_t pid_;
    bool failedAboveCopy_ = false, failedElsewhere_ = false;
};

// One row of call frame information: the rules that give a caller's registers
// at the addresses [start, end) (link-time addresses of its file), as libdw reports them
// (dwarf_frame_cfa, dwarf_frame_register over every register libdwfl tracks).
struct CfiRow {
    uint64_t start = 0, end = 0;
    enum class Cfa : uint8_t { RegisterOffset, Expression, Invalid };
    Cfa cfa = Cfa::Invalid;
    uint16_t cfaRegister = 0;
    uint64_t cfaOffset = 0;
    uint32_t cfaOps = 0, cfaOpCount = 0;  // Expression: ops[cfaOps, +cfaOpCount)
    enum class Rule : uint8_t {
        Same,        // the frame's own value
        AtCfa,       // the word at CFA + offset
        ValueOfCfa,  // CFA + offset
        Register,    // the frame's register `offset`
        Expression,  // ops[first, +count] with libdwfl's location/value convention
        Unusable,    // libdw could not give the rule: the register stays unknown
    };
    struct Register {
        uint16_t regno;
        Rule rule;
        uint64_t offset = 0;
        uint32_t first = 0, count = 0;
    };
    std::vector<Register> registers;  // by regno; registers not listed are undefined
    std::vector<Dwarf_Op> ops;
    unsigned returnAddress = 0;           // the CIE's return-address register
    bool returnAddressUndefined = false;  // its rule says undefined: the outermost frame
    bool signalFrame = false;             // the CIE's "S": the caller was interrupted, not calling
    // What DW_OP_addr operands are moved by, less the mapping's load bias (the
    // CFI section's own bias in its file).
    uint64_t addressBias = 0;
};

enum class StepKind : uint8_t {
    Unwound,  // `caller` holds the caller's frame
    End,      // the caller's PC is undefined (libdwfl ends the stack with success)
    Failed,   // no caller (libdwfl ends the stack with an error)
};

struct StepOutcome {
    StepKind kind = StepKind::Failed;
    bool noCfi = false;      // no CFI row covered the PC: the frame-pointer walk was tried
    bool outermost = false;  // End because the CFI says so (return address undefined) or it is 0
    bool badCfi = false;     // Failed: the row itself is unusable (return-address register out of range)
};

// Unwinds `frame` to `caller` with `row` (nullptr: no CFI covers the frame's PC);
// `loadBias`: where the row's file is loaded (runtime minus link-time address).
StepOutcome unwindStep(const UserRegisterLayout& layout, const UnwindFrame& frame, const CfiRow* row,
                       uint64_t loadBias, UnwindMemory& memory, UnwindFrame& caller);

}  // namespace auxscope
