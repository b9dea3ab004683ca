// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The options that choose what of a perf.data's AUX trace is decoded, shared by
// `auxscope decode` and `auxscope export`: --cpu N, --tid T, --time A-B (perf
// time in ns; either end may be left out), --symfs DIR, -j N, and the kernel's
// code and symbols: --vmlinux FILE, --kcore DIR|FILE, --kallsyms FILE; JIT code:
// --jit-dump FILE, --perf-map FILE (each may be given more than once).
#include <string>

#include "Result.h"
#include "auxtrace/AuxTraceDecode.h"

namespace auxscope {

struct DecodeSelection {
    DecodeWindow window;
    AuxTraceOptions session;
    unsigned threads = 0;  // 0: every CPU
};

// Whether `option` is one of the above (it then takes a value).
bool isDecodeSelectionOption(const std::string& option);
// Applies `option value`; errors say what was expected.
Expected<void> applyDecodeSelectionOption(const std::string& option, const std::string& value,
                                          DecodeSelection& selection);
// The opened file's folder is searched too (ImageOptions::binaryDirs): JIT
// files copied beside a recording (perf-<pid>.map, jit-<pid>.dump) are found.
void addOpenedFileFolder(const std::string& path, DecodeSelection& selection);

}  // namespace auxscope
