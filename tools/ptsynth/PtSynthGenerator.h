// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Generator mode: a random but executable x86-64 program (an ELF written next
// to the output) and the Intel PT of its execution, produced without running
// it: the generator walks the program's control flow itself, so it knows the
// true path, and encodes it at full speed.
//
// The program is built from structured pieces whose branch decisions depend
// only on state the walker reproduces exactly:
//   - r15 holds a 64-bit LCG (r15 = r15 * 1103515245 + 12345), stepped before
//     every data-dependent branch
//   - if/else:      bt r15, BIT ; jnc ELSE
//   - counted loops: a counter on the stack frame, sub [rsp+k], 1 ; jnz TOP
//   - switch:       jmp [TABLE + ((r15 >> s) & mask) * 8]   (jump table)
//   - indirect call: call [TABLE + ((r15 >> s) & mask) * 8] (function pointers)
//   - direct calls down a call graph without cycles, and fib-like recursive
//     functions (call themselves with edi - 1 and edi - 2 until edi <= 1)
//   - straight-line ALU code on scratch registers in between
// _start seeds r15 and calls the top-level functions through a pointer table
// in a loop of 2^31 iterations, then exits; running the ELF takes the same path.
//
// With threads > 1 (the example, PtSynthExample.h) the program has one entry
// function per further thread, thread_main_1 ... (its own seed and its own mix
// of top-level functions, then the exit system call), and each thread's walk is
// recorded as a FlowLog for a scheduler to replay on the CPUs' encoders. The
// loop counts of _start and the thread entries are then fitted (threadInsns) so
// that each thread exits by itself after about that many instructions. Nothing
// in the code starts the further threads (it has no clone): the example
// imagines them, each as if created at its entry function.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "PtSynthEncoder.h"
#include "PtSynthPerfData.h"
#include "PtSynthTruth.h"
#include "Result.h"

namespace auxscope::ptsynth {

struct GeneratorOptions {
    uint64_t seed = 1;
    uint64_t stopAtBytes = 1u << 20;  // stop once this much PT was produced
    uint64_t maxInsns = 0;            // and/or after this many instructions (0: no limit)
    unsigned functions = 120;         // ordinary functions (plus 3 recursive ones)
    unsigned levels = 5;              // depth of the call graph
    unsigned straight = 1;            // straight-line runs are 1-4 instructions times this
    std::string elfPath;              // where the program is written
    unsigned threads = 1;             // _start plus threads - 1 thread entry functions
    // Per thread (0: _start): the loop count is set so the thread runs at least
    // this many instructions and then exits (empty or 0: 2^31 iterations).
    std::vector<uint64_t> threadInsns;
    // Names that say what a function is (fib_N, task_N, stage_N, step_N, work_N,
    // leaf_N by level) instead of rec0 / f3_12.
    bool friendlyNames = false;
};

// One step of a thread's recorded control flow, as PtFlowEncoder takes it.
struct FlowOp {
    enum Kind : uint8_t {
        Retire,
        Cond,
        DirectCall,
        IndirectCall,
        IndirectJump,
        Ret,
        Sample,
        Halt,
        Exit,
        Start
    };
    Kind kind = Retire;
    bool taken = false;  // Cond
    uint32_t n = 0;      // Retire: instructions; Sample: index into FlowLog::samples
    uint64_t ip = 0;   // where execution goes on (Cond, calls, jump, Ret, Start; Halt: the next instruction)
    uint64_t ret = 0;  // calls: the return address
};

// A sample taken during a thread's walk: the interrupted instruction and the
// return addresses on its stack, innermost first (what a frame-pointer walk
// of the user stack gives the kernel's callchain).
struct WalkSample {
    uint64_t ip = 0;
    std::vector<uint64_t> returns;
};

// A thread's walk, recorded (PtGenerator::walkThread). It has the encoder's
// interface, so the generator's walker writes into it as into an encoder.
class FlowLog {
public:
    void enable(uint64_t ip, bool = false) { ops.push_back({FlowOp::Start, false, 0, ip, 0}); }
    void retire(uint64_t n) {
        if (!ops.empty() && ops.back().kind == FlowOp::Retire && ops.back().n + n < (1ull << 31))
            ops.back().n += uint32_t(n);
        else if (n)
            ops.push_back({FlowOp::Retire, false, uint32_t(n), 0, 0});
    }
    void conditional(bool taken, uint64_t nextIp) { ops.push_back({FlowOp::Cond, taken, 0, nextIp, 0}); }
    void directCall(uint64_t returnIp, uint64_t target) {
        ops.push_back({FlowOp::DirectCall, false, 0, target, returnIp});
    }
    void indirectCall(uint64_t returnIp, uint64_t target) {
        ops.push_back({FlowOp::IndirectCall, false, 0, target, returnIp});
    }
    void indirectJump(uint64_t target) { ops.push_back({FlowOp::IndirectJump, false, 0, target, 0}); }
    void ret(uint64_t target) { ops.push_back({FlowOp::Ret, false, 0, target, 0}); }
    void farTransferOut() { ops.push_back({FlowOp::Exit, false, 0, 0, 0}); }
    void asyncDisable(uint64_t ip) { ops.push_back({FlowOp::Halt, false, 0, ip, 0}); }
    void sample(uint64_t ip, const std::vector<uint64_t>& stack) {
        ops.push_back({FlowOp::Sample, false, uint32_t(samples.size()), ip, 0});
        samples.push_back({ip, std::vector<uint64_t>(stack.rbegin(), stack.rend())});
    }
    uint64_t bytes() const { return 0; }
    uint64_t tsc() const { return 0; }
    bool ok() const { return true; }
    Error error() const { return makeError("no error"); }

    std::vector<FlowOp> ops;
    std::vector<WalkSample> samples;
};

struct GeneratorStats {
    uint64_t codeBytes = 0;
    uint64_t segments = 0;  // straight runs walked
};

class PtGenerator {
public:
    // Generates the program and writes the ELF.
    static Expected<std::unique_ptr<PtGenerator>> create(const GeneratorOptions& options);
    ~PtGenerator();

    // The ELF's executable mapping as a loader would map it.
    const PtSynthMapping& mapping() const;
    uint64_t entry() const;
    const std::vector<TruthFunction>& functions() const;

    // Walks the program from _start until a limit is reached; the truth's
    // function list gets the call counts.
    Expected<void> run(PtFlowEncoder& encoder, Truth& truth);
    const GeneratorStats& stats() const;

    // Threads (options.threads): thread k's entry function, its name, and its
    // walk from there to its exit (or options.maxInsns), recorded into `log`
    // with a sample every `samplePeriod` instructions (0: none) starting at
    // `samplePhase`. `truth` gets the thread's instructions, hash, calls,
    // returns, syscalls and per-function call counts (its lists are not kept).
    unsigned threads() const;
    uint64_t threadEntry(unsigned k) const;
    const std::string& threadEntryName(unsigned k) const;
    Expected<void> walkThread(unsigned k, uint64_t samplePeriod, uint64_t samplePhase, FlowLog& log,
                              Truth& truth);

    struct Impl;

private:
    explicit PtGenerator(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> d_;
};

}  // namespace auxscope::ptsynth
