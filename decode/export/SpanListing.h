// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The text listings of `auxscope decode --format spans|insn` (app/cli/DecodeCommand.cpp),
// formatted through LineBuffer: the same bytes the printf formats below gave,
// at tens of millions of lines a second, the spans on several threads.
#include <ostream>

#include "export/LineBuffer.h"
#include "spans/DecodeTypes.h"
#include "spans/FunctionTable.h"

namespace auxscope {

class Sideband;

// --format spans: per thread (in tid order) "thread TID (NAME) pid PID: N spans",
// then one line per span as "%" PRIu64 " %" PRIu64 " %3d %8" PRIu64 " %*s" (start,
// end, depth, instructions, two spaces a level up to 40 levels) and the function,
// or "[reason: detail]" for a gap. Long stores are cut into chunks formatted on
// `threads` threads and written in order. False when writing failed.
bool writeSpanListing(const DecodedSpans& spans, const Sideband& sideband, const FunctionTable& functions,
                      unsigned threads, std::ostream& out);

// --format insn: one block as "%" PRIu64 " %3d %6d %016" PRIx64 "-%016" PRIx64 " %5" PRIu64
// " %-10s " (time, cpu, tid, first and last address, instructions, how it ends),
// then the function and a newline.
void appendInsnLine(LineBuffer& text, const FlowBlock& block, const FunctionTable& functions);

// "jump", "call", "far-return", ...: how --format insn names a block's last branch.
const char* branchClassName(BranchClass c);

}  // namespace auxscope
