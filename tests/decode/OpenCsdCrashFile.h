// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CoreSight perf.data whose middle AUX buffer crashes OpenCSD 1.3.3, for the
// decoder isolation tests (command line, library, GUI). The crash input is
// tests/fuzz/opencsd-1.3.3-crashes/etmv4-mispredict-atom.bin, an etm_fuzzer
// input (selector 2, then 0x03: ETE, frame formatted, EtmFuzzer.cpp's fixed
// configuration and code page) fed as two halves; OpenCSD's own trc_pkt_lister
// dies on its second half. The file holds 321 AUX buffers on cpu 0 (through
// etmsnap, as a snapshot of that configuration and code would be recorded):
// the first half 160 times, the second half (the crash), the first half 160
// times again: 2.6 MB of trace, several segments at auxscope's default size,
// the crash in a middle one.
#include <string>

#include "Result.h"

namespace auxscope::isolationtest {

// Writes the file (and its code as ELF files beside it). `input`: the crash input's path.
Expected<void> writeOpenCsdCrashPerfData(const std::string& input, const std::string& path);

}  // namespace auxscope::isolationtest
