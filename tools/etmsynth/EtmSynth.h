// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CoreSight example made from nothing but a seed: a generated AArch64
// program (functions with BL calls and RET, a recursive fib, loops, CBZ/CBNZ
// and B.cond decisions), one run of it walked here (so the exact instruction
// path is known: the truth), that path encoded as the ETMv4 instruction trace
// a trace unit with the return stack and branch broadcast off would write
// (A-sync, Trace Info, Trace On, address with context, atoms, an address after
// every RET, periodic re-sync), in 16-byte CoreSight frames, written as an
// OpenCSD snapshot folder (trc_pkt_lister -ss_dir decodes it) and, through
// etmsnap's conversion, as a cs_etm perf.data (auxscope decodes it).
//
// auxscope-etmsnap --example writes it: the package's CoreSight example, with
// no recorded (licensed) data in it.
#include <cstdint>
#include <string>
#include <vector>

#include "PtSynthElf.h"
#include "Result.h"

namespace auxscope::etmsynth {

// The A64 instructions the generator uses, as it wants them executed.
enum class Op : uint8_t {
    Nop,
    Movz,     // rd = imm
    AddImm,   // rd = rn + imm (31 is SP)
    SubImm,   // rd = rn - imm (31 is SP)
    CmpImm,   // flags of rn - imm (SUBS XZR)
    AddReg,   // rd = rn + rm
    MovReg,   // rd = rm (ORR rd, XZR, rm)
    StpPre,   // stp rd, rm, [sp, #imm]!
    StpOff,   // stp rd, rm, [sp, #imm]
    LdpOff,   // ldp rd, rm, [sp, #imm]
    LdpPost,  // ldp rd, rm, [sp], #imm
    B,
    Bl,
    BCond,  // cond in rn
    Cbz,
    Cbnz,
    Ret,
};

struct Insn {
    Op op = Op::Nop;
    uint8_t rd = 0, rn = 0, rm = 0;
    int64_t imm = 0;
    uint64_t target = 0;  // branches: the target address
    // A CBZ/CBNZ on an input the program read (x9): the walk decides it with
    // the seeded generator (and sets x9 to agree).
    bool input = false;
};

// The A64 encoding of `insn` at address `pc`.
uint32_t encode(const Insn& insn, uint64_t pc);

struct Program {
    uint64_t base = 0;  // address of code[0]
    std::vector<Insn> code;
    std::vector<ptsynth::ElfSymbol> functions;
    uint64_t entry = 0;  // _start
    std::vector<uint8_t> bytes() const;
};

// A program generated from `seed`: _start calls main, whose loop calls fib and
// the generated workers (which call leaf functions and loop_N functions).
Program generateProgram(uint64_t seed);

// One executed range as an ETM decoder reports it: the instructions from
// `start` up to and including the branch at `end - 4`, whose outcome an atom
// gives.
struct Range {
    uint64_t start = 0, end = 0;
    uint32_t instructions = 0;
    bool taken = false;
    bool indirect = false;  // a RET: an address packet gives `next`
    uint64_t next = 0;      // where execution went on
};

struct Truth {
    std::vector<Range> ranges;
    uint64_t startPc = 0;
    uint64_t instructions = 0;
    uint64_t branches = 0;  // waypoints: every executed branch (one atom each)
    uint64_t calls = 0;     // BLs executed
    uint64_t returns = 0;   // RETs executed
    uint32_t maxDepth = 0;
};

// Runs the program from its entry until main returns to _start; decisions
// on inputs come from `seed`. Fails (with the address) on a run away walk.
Expected<Truth> walk(const Program& program, uint64_t seed);

struct EtmConfig {
    uint8_t traceId = 0x10;
    uint32_t syncPeriod = 1024;  // bytes of trace between re-syncs (A-sync, Trace Info, address)
};

// The truth's path as one trace unit's ETMv4 instruction trace bytes.
std::vector<uint8_t> encodeEtmv4(const Truth& truth, const EtmConfig& config);

// `raw` (one trace ID's bytes) in 16-byte CoreSight formatter frames
// (memory-aligned, as an ETB/ETR holds them); the last frame is padded with
// the null ID 0.
std::vector<uint8_t> formatFrames(const std::vector<uint8_t>& raw, uint8_t traceId);

struct Example {
    Program program;
    Truth truth;
    std::string snapshotDir;
    std::vector<uint8_t> buffer;  // cstrace.bin
    std::string elfPath;
};

// Writes the snapshot folder `out` (without ".data") + "-snapshot" and, from
// it, the perf.data `out` with its code ELF (with function symbols) beside it.
// Errors name the path and the cause.
Expected<Example> writeExample(const std::string& out, uint64_t seed);

}  // namespace auxscope::etmsynth
