// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cli/DecodeOptions.h"

namespace auxscope {

// `auxscope export FILE --format perfetto|csv -o OUT`
// What `auxscope export ARGS` asks for.
struct ExportArgs {
    std::string input, output, format = "perfetto";  // output: INPUT.pftrace / .csv when not given
    std::optional<bool> decode;                      // unset: when the file has a decodable AUX trace
    bool includeSamples = true;                      // --no-samples
    bool stacks = true;                              // --no-stacks
    DecodeSelection selection;
    bool help = false;
};
// Parses export's arguments; a pure function but for the stat() of the files
// and folders the look-up options name (--vmlinux, --binary-dir, ...).
Expected<ExportArgs> parseExportArgs(const std::vector<std::string>& args);

int runExportCommand(const std::vector<std::string>& args);

}  // namespace auxscope
