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
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "OptionParser.h"

#include "Result.h"
#include "auxtrace/AuxTraceDecode.h"
#include "images/ImageResolver.h"

namespace auxscope {

struct DecodeSelection {
    DecodeWindow window;
    AuxTraceOptions session;
    unsigned threads = 0;  // 0: every CPU
    // --time as given; its absolute sides are in `window` already, the sides
    // after the recording's start (+N) once resolveTime() knows the start.
    std::optional<TimeRangeOption> time;
};

// The options above as the option table lists them (with their help), for
// the commands that take them: decode, export, report.
std::span<const OptionSpec> decodeSelectionOptions();
// `own` (the command's options) followed by decodeSelectionOptions().
std::vector<OptionSpec> withDecodeSelectionOptions(std::initializer_list<OptionSpec> own);
// Whether `o` is one of decodeSelectionOptions().
bool isDecodeSelectionOption(const ParsedOption& o);
// Applies one of them; errors name the option and the value given.
Expected<void> applyDecodeSelectionOption(const ParsedOption& o, DecodeSelection& selection);
// Moves the --time sides given after the recording's start (+N) to perf time;
// a range that ends before it begins is refused.
Expected<void> resolveTime(DecodeSelection& selection, uint64_t recordingStart);
// The opened file's folder is searched too (ImageOptions::binaryDirs): JIT
// files copied beside a recording (perf-<pid>.map, jit-<pid>.dump) are found.
void addOpenedFileFolder(const std::string& path, DecodeSelection& selection);
// The help text's lines for the look-up options, as every command lists them.
extern const char* const kImageLookupHelp;
// `help` with its "%LOOKUP%" line replaced by kImageLookupHelp.
std::string withImageLookupHelp(const char* help);
// One line on what debuginfod did for `images` ("" when no server was configured).
std::string debuginfodSummary(const ImageResolver& images);

}  // namespace auxscope
