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

    struct Impl;

private:
    explicit PtGenerator(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> d_;
};

}  // namespace auxscope::ptsynth
