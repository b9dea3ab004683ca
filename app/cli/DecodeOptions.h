// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The options that choose what of a perf.data's AUX trace is decoded, shared by
// `auxscope decode` and `auxscope export`: --cpu N, --tid T, --time A-B (perf
// time in ns; either end may be left out), --symfs DIR, -j N, and the kernel's
// code and symbols: --vmlinux FILE, --kcore DIR|FILE, --kallsyms FILE; JIT code:
// --jit-dump FILE, --perf-map FILE; where mapped files and their debug files are
// looked for: --binary-dir DIR, --debug-dir DIR, --debuginfod URL (each of these
// repeatable), and the flag --no-debuginfod (no server asked, whatever
// DEBUGINFOD_URLS says).
#include <string>

#include "Result.h"
#include "auxtrace/AuxTraceDecode.h"
#include "images/ImageResolver.h"

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
// Whether `option` is one of the flags above (no value), and applies it.
bool isDecodeSelectionFlag(const std::string& option);
void applyDecodeSelectionFlag(const std::string& option, DecodeSelection& selection);
// The help text's lines for the look-up options, as every command lists them.
extern const char* const kImageLookupHelp;
// `help` with its "%LOOKUP%" line replaced by kImageLookupHelp.
std::string withImageLookupHelp(const char* help);
// One line on what debuginfod did for `images` ("" when no server was configured).
std::string debuginfodSummary(const ImageResolver& images);

}  // namespace auxscope
