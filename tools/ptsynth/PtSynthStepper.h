// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Runs a program under ptrace, one instruction at a time (PTRACE_SINGLESTEP,
// user space only), and hands every executed instruction with its class and
// successor to the PT encoder and the ground truth. What the kernel does
// (system calls, page faults, signal delivery) is invisible here, as it is to
// user-only Intel PT: a SYSCALL becomes TIP.PGD, resuming becomes TIP.PGE, and a
// signal handler entered at an instruction not yet executed becomes FUP + TIP.PGD
// there and TIP.PGE at the handler.
//
// Facts of single-stepping that the stepper corrects for:
//   - a REP string instruction traps after every iteration (same IP again): it
//     is one instruction, recorded once when it completes;
//   - injecting a caught, unblocked signal stops at the handler's first
//     instruction without executing the one the thread was at;
//   - a stop for another signal happens before any instruction executed.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "PtSynthEncoder.h"
#include "PtSynthPerfData.h"
#include "PtSynthTruth.h"
#include "Result.h"

namespace auxscope::ptsynth {

// How a PT decoder has to treat an instruction.
enum class InsnKind {
    Other,       // no control flow (or unknown to the disassembler)
    CondBranch,  // Jcc, JRCXZ, LOOPcc
    DirectJump,
    DirectCall,
    IndirectJump,
    IndirectCall,
    Return,    // near RET
    FarOut,    // SYSCALL, SYSENTER, INT n: into the kernel
    FarOther,  // far JMP/CALL/RET, IRET
};

struct InsnInfo {
    InsnKind kind = InsnKind::Other;
    uint8_t length = 0;  // 0: the disassembler did not know the instruction
};

// Classifies the x86-64 instruction at the start of `bytes` (capstone).
class InsnClassifier {
public:
    InsnClassifier();
    ~InsnClassifier();
    InsnClassifier(const InsnClassifier&) = delete;
    InsnClassifier& operator=(const InsnClassifier&) = delete;
    InsnInfo classify(const uint8_t* bytes, size_t size, uint64_t ip) const;
    bool ok() const { return handle_ != 0; }

private:
    size_t handle_ = 0;
};

struct StepOptions {
    std::vector<std::string> argv;
    uint64_t maxInsns = 30000;
    // Run untraced up to this function (ELF symbol of the main executable, e.g.
    // "main"), then trace from its first instruction. Empty: from the first
    // instruction after exec.
    std::string startSymbol;
    bool disableAslr = true;      // same addresses on every run (reproducible files)
    uint64_t syscallTicks = 500;  // virtual TSC ticks spent in the kernel per system call
};

struct StepResult {
    pid_t pid = 0;
    bool exited = false;  // the program ended on its own (else: cut at maxInsns)
    int exitStatus = 0;   // wait status when it ended
    uint64_t steps = 0;   // PTRACE_SINGLESTEP calls (REP iterations included)
    std::string comm;
    std::vector<std::string> notes;  // oddities met (unknown instructions, ...)
};

// Sideband of the run, written into the perf.data as it happens.
struct StepSideband {
    std::function<Expected<void>(pid_t pid, const std::string& comm, uint64_t tsc)> started;
    std::function<Expected<void>(const PtSynthMapping& map, uint64_t tsc)> mapped;
};

Expected<StepResult> runStepped(const StepOptions& options, PtFlowEncoder& encoder, Truth& truth,
                                const StepSideband& sideband);

// The executable mappings of a process from /proc/PID/maps.
std::vector<PtSynthMapping> executableMappings(pid_t pid);

}  // namespace auxscope::ptsynth
