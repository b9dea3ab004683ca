// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the JIT readers (decode/images/JitCode.cpp, issue 27):
// the first byte of the input picks the reader, the rest is the file:
//   - even: a jitdump (parseJitDump): every code load's bytes, every unwinding
//     block and every debug line must lie inside the input; a stop says where
//     ("FILE: record at offset N: cause");
//   - odd: a perf map (parsePerfMap): every symbol has a size and no
//     wrap-around; malformed lines are counted, at most 10 named.
// Errors are fine; crashes, UB, reads outside the input or a walk that does not
// end are not. Built with clang and ASan/UBSan by tests/fuzz/jit_dump_fuzz.cmake.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "images/JitCode.h"

using namespace auxscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const std::span<const uint8_t> file(data + 1, size - 1);
    if ((data[0] & 1) == 0) {
        auto dump = parseJitDump(file, "fuzz.dump");
        if (!dump.ok()) {
            if (dump.error().message.rfind("fuzz.dump: ", 0) != 0) std::abort();
            return 0;
        }
        for (const JitCodeLoad& l : dump->loads)
            if (l.codeOffset > file.size() || l.size > file.size() - l.codeOffset) std::abort();
        for (const JitUnwindingInfo& u : dump->unwinding)
            if (u.dataOffset > file.size() || u.unwindingSize > file.size() - u.dataOffset) std::abort();
        size_t lines = 0;
        for (const JitDebugInfo& d : dump->debugInfo)
            lines += d.lines.size();
        if (lines * 17 > file.size()) std::abort();  // each entry takes at least 17 bytes of the file
        if (dump->error && dump->error->message.rfind("fuzz.dump: record at offset ", 0) != 0) std::abort();
    } else {
        const PerfMap map = parsePerfMap(std::string(file.begin(), file.end()), "perf-1.map");
        for (const PerfMapSymbol& s : map.symbols)
            if (s.size == 0 || s.start + s.size < s.start || s.name.empty()) std::abort();
        if (map.notes.size() > 10 || map.notes.size() > map.malformed) std::abort();
    }
    return 0;
}
