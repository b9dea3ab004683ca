// SPDX-License-Identifier: GPL-3.0-or-later
#include "DecodeCommand.h"

#include <cinttypes>
#include <cstdio>
#include <iostream>

#include "PtDecodeRequest.h"

namespace auxscope {
namespace {

const char* kHelp = R"(usage: auxscope decode --pt FILE [--raw BIN:ADDR]... [--elf ELF[:ADDR]]...
                       [--cpu F/M[/S]] [--mtc-freq N] [--nom-freq N] [--cpuid-15 EAX,EBX]
                       [--format ptxed|packets] [options]

Decodes raw Intel PT trace bytes (an AUX buffer) with libipt.
  --format packets  one line per packet, as libipt's ptdump prints them
  --format ptxed    the instruction flow (default), as libipt's ptxed --no-inst prints it:
                    one address per instruction, [events] in between

Trace and code:
  --pt FILE[:FROM[-TO]]       the trace (or only that byte range of it); FILE alone also works
  --raw BIN[:FROM[-TO]]:ADDR  raw code bytes loaded at ADDR
  --elf ELF[:BASE]            an ELF's PT_LOAD segments, moved so the lowest lands at BASE

The recording machine (from perf.data's AUXTRACE_INFO and CPUID header, or /proc/cpuinfo):
  --cpu F/M[/S]        family/model/stepping: selects libipt's errata workarounds
  --mtc-freq N         IA32_RTIT_CTL.MTCFreq
  --nom-freq N         max non-turbo ratio (MSR_PLATFORM_INFO[15:8])
  --cpuid-15 EAX,EBX   CPUID leaf 0x15 (TSC/CTC ratio); also --cpuid-0x15.eax N, --cpuid-0x15.ebx N
  --filter:addrN_cfg C, --filter:addrN_a A, --filter:addrN_b B   address filter N (0-3)

Packets (ptdump's options): --no-pad --no-timing --no-cyc --no-offset --raw-bytes --lastip
  --exec-mode --time --tcal --time-delta --no-tcal --no-wall-clock --no-sync --quiet
Flow (ptxed's options): --block-decoder (default) --insn-decoder --block:show-blocks
  --block:end-on-call --block:end-on-jump --event:ip --event:time --event:tick --offset --time
  --check --stat --stat:insn --stat:blocks --quiet (--no-inst is accepted: there is no disassembly)

Decode errors are printed inline where they happen ([offset: error] for packets,
[offset, ip: error: cause] for the flow), then summarised on stderr with the
file and offset; decoding resumes at the next PSB. Exit status 1 when any part
of the trace could not be decoded, 2 for bad arguments.
)";

}  // namespace

int runDecodeCommand(const std::vector<std::string>& args) {
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::cout << kHelp;
            return 0;
        }
    }
    if (args.empty()) {
        std::cerr << kHelp;
        return 2;
    }
    auto request = parsePtDecodeArguments(args);
    if (!request) {
        std::cerr << "auxscope decode: " << request.error().message << " (see auxscope decode --help)\n";
        return 2;
    }
    auto summary = runPtDecode(*request, std::cout);
    std::cout.flush();
    if (!summary) {
        std::cerr << "auxscope decode: " << summary.error().message << "\n";
        return 1;
    }
    // The inline diagnostics are in the listing; repeat the errors where a script sees them.
    size_t errors = 0;
    for (const PtDecodeIssue& issue : summary->issues) {
        if (issue.severity != PtDecodeIssue::Severity::Error) continue;
        if (++errors > 20) continue;
        char offset[64];
        std::snprintf(offset, sizeof offset, "offset 0x%" PRIx64 " (%" PRIu64 ")",
                      issue.offset + request->traceOffset, issue.offset + request->traceOffset);
        std::cerr << "auxscope decode: " << request->tracePath << ": " << offset << ": " << issue.what
                  << "\n";
    }
    if (errors > 20) std::cerr << "auxscope decode: ... and " << errors - 20 << " more errors\n";
    return errors ? 1 : 0;
}

}  // namespace auxscope
