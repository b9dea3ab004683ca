// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The user registers a sample recorded (PERF_SAMPLE_REGS_USER) as DWARF
// registers: the kernel stores one u64 per bit of attr.sample_regs_user, in the
// perf_regs numbering of the recording's architecture (arch/*/include/uapi/asm/
// perf_regs.h); CFI names registers by their DWARF numbers (the psABI's). Each
// layout maps one to the other and says which registers an unwinder starts from.
//
// A 32-bit process on a 64-bit x86 kernel records PERF_SAMPLE_REGS_ABI_32 with
// the x86_64 bit numbering: its registers become i386 DWARF registers (eax..eip),
// as elfutils' i386 backend numbers them. 32-bit Arm (and Arm64's compat tasks)
// is not supported.
#include <cstdint>
#include <span>

namespace auxscope {

// Where the DWARF registers of one sample come from.
struct UserRegisterLayout {
    uint16_t machine = 0;    // EM_X86_64, EM_386, EM_AARCH64: what elfutils' backend unwinds as
    bool elf32 = false;      // register values are 32 bits wide (and so are stack words)
    unsigned frameRegs = 0;  // DWARF registers an unwinder tracks: elfutils' ebl_frame_nregs
    unsigned spReg = 0;      // DWARF number of the stack pointer
    unsigned fpReg = 0;      // ... of the frame pointer (rbp, ebp, x29)
    // DWARF number of the program counter; frameRegs when the PC is no DWARF
    // register (AArch64: set with dwfl_thread_state_register_pc).
    unsigned pcReg = 0;
    // perf_regs bit of each DWARF register in [0, frameRegs), -1 where the
    // sample cannot carry it; and the PC's bit.
    std::span<const int8_t> perfBitOf;
    int pcPerfBit = -1;
};

// The layout for samples of a recording made on `machine` (EM_*) with user
// register ABI `abi` (PERF_SAMPLE_REGS_ABI_32 / _64); nullptr when unsupported
// (ABI_NONE, an unknown machine, a 32-bit task on Arm64).
const UserRegisterLayout* userRegisterLayout(uint16_t machine, uint64_t abi);

// Reads perf_regs bit `bit` of a sample's registers (`regs`: one u64 per set bit of
// `mask`, lowest first). False when the mask has no such bit or `regs` is too short.
bool readPerfRegister(uint64_t mask, std::span<const uint8_t> regs, int bit, uint64_t& value);

}  // namespace auxscope
