// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/UserRegisters.h"

#include <elf.h>
#include <linux/perf_event.h>

#include <array>
#include <bit>
#include <cstring>

namespace auxscope {

namespace {

// x86 perf_regs bits (arch/x86/include/uapi/asm/perf_regs.h).
enum X86PerfBit : int8_t {
    kAx = 0,
    kBx = 1,
    kCx = 2,
    kDx = 3,
    kSi = 4,
    kDi = 5,
    kBp = 6,
    kSp = 7,
    kIp = 8,
    kR8 = 16,
    kR9,
    kR10,
    kR11,
    kR12,
    kR13,
    kR14,
    kR15,
};

// x86-64 psABI DWARF numbers: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then the
// return address (rip) as 16.
constexpr std::array<int8_t, 17> kX8664Bits = {kAx, kDx,  kCx,  kBx,  kSi,  kDi,  kBp,  kSp, kR8,
                                               kR9, kR10, kR11, kR12, kR13, kR14, kR15, kIp};
// i386 psABI DWARF numbers: eax ecx edx ebx esp ebp esi edi eip.
constexpr std::array<int8_t, 9> kI386Bits = {kAx, kCx, kDx, kBx, kSp, kBp, kSi, kDi, kIp};

// AArch64: perf's X0..X30 and SP are bits 0..31 and DWARF 0..31; PC is bit 32
// and no DWARF register. elfutils tracks 97 (with v0..v31 at 64..95), which a
// sample never carries.
constexpr std::array<int8_t, 97> kAarch64Bits = [] {
    std::array<int8_t, 97> bits{};
    for (int i = 0; i < 97; ++i)
        bits[size_t(i)] = i < 32 ? int8_t(i) : int8_t(-1);
    return bits;
}();

const UserRegisterLayout kX8664{EM_X86_64, false, 17, 7, 6, 16, kX8664Bits, kIp};
const UserRegisterLayout kI386{EM_386, true, 9, 4, 5, 8, kI386Bits, kIp};
const UserRegisterLayout kAarch64{EM_AARCH64, false, 97, 31, 29, 97, kAarch64Bits, 32};

}  // namespace

const UserRegisterLayout* userRegisterLayout(uint16_t machine, uint64_t abi) {
    if (abi == PERF_SAMPLE_REGS_ABI_NONE) return nullptr;
    switch (machine) {
        case EM_X86_64:
            return abi == PERF_SAMPLE_REGS_ABI_32 ? &kI386 : &kX8664;
        case EM_386:
            return &kI386;
        case EM_AARCH64:
            return abi == PERF_SAMPLE_REGS_ABI_64 ? &kAarch64 : nullptr;
        default:
            return nullptr;
    }
}

bool readPerfRegister(uint64_t mask, std::span<const uint8_t> regs, int bit, uint64_t& value) {
    if (bit < 0 || bit > 63 || !(mask >> bit & 1)) return false;
    const size_t index = size_t(std::popcount(mask & ((uint64_t(1) << bit) - 1)));
    if (regs.size() < 8 * (index + 1)) return false;
    std::memcpy(&value, regs.data() + 8 * index, 8);
    return true;
}

}  // namespace auxscope
