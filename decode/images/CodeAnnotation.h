// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A function's code annotated with what the trace executed: its instructions
// disassembled by capstone from the code image the decoders read
// (ImageResolver), each with the number of times the decoded flow executed it,
// and the source file and line libdw finds for it when the image has debug
// information (in the file, or a separate debug file libdwfl's standard search
// finds).
//
// Counts come from flow blocks (spans/DecodeTypes.h FlowBlock: the run of
// instructions from ip to endIp the decoder reports between branches, going on
// across unconditional direct jumps and calls as libipt's block decoder may):
// every distinct block is disassembled once and each of its instructions gets
// the block's count, so a function's counts add up to the instructions its
// blocks executed: what its spans count as self instructions. A block that
// does not disassemble to its last instruction in as many instructions as the
// decoder counted (the image differs from what ran) is counted as far as it
// does, and the notes say how many such blocks there were.
//
// The function's extent is the run of addresses the resolver maps to it
// (ImageResolver::functionAt) around the executed ones, capped at kMaxBytes
// either side; an "[unknown]" function is shown over its executed blocks only.
// The instruction set is the image's ELF machine (x86-64, i386, AArch64, Arm;
// Thumb for an Arm function whose symbol address is odd).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Result.h"
#include "images/ImageResolver.h"
#include "spans/FunctionTable.h"

namespace auxscope {

struct ExecutedBlock {
    uint64_t ip = 0, endIp = 0;  // first and last instruction
    uint64_t instructions = 0;   // as the decoder counted them in one execution
    uint64_t count = 0;          // executions
};

struct AnnotatedInstruction {
    uint64_t address = 0;
    uint32_t size = 0;
    std::string bytes;  // hex
    std::string text;   // "mov rax, qword ptr [rdi]"
    uint64_t count = 0;
    uint64_t jumpTarget = 0;  // an unconditional direct jump's target (a block goes on there)
    int line = 0;             // source line (0: none)
    std::string file;         // source file ("" : none)
};

struct AnnotatedCode {
    uint32_t function = 0;
    std::string name, image;
    int32_t pid = -1;
    std::string arch;             // "x86-64", "AArch64", ...
    uint64_t begin = 0, end = 0;  // addresses disassembled [begin, end)
    std::vector<AnnotatedInstruction> instructions;
    uint64_t executed = 0;              // sum of the counts
    uint64_t blockInstructions = 0;     // what the blocks said they executed (sum of count * instructions)
    uint64_t executedInstructions = 0;  // distinct instructions executed at least once
    // The source file most of the function's lines are in, with per-line counts.
    std::string sourceFile;
    std::map<int, uint64_t> lineCounts;
    std::vector<std::string> notes;
};

// Annotates `function` of process `pid` with `blocks` (those executed in it).
// Errors name the function and what is missing (no code image, no bytes at an address).
Expected<AnnotatedCode> annotateFunction(const ImageResolver& images, const FunctionTable& functions,
                                         int32_t pid, uint32_t function,
                                         const std::vector<ExecutedBlock>& blocks);

}  // namespace auxscope
