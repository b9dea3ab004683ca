// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "cli/DecodeOptions.h"

namespace auxscope {

// `auxscope report FILE [--tid T] [--time A-B] [--sort self|total|calls|insns]
// [--format text|csv|json] [--top N] [--tree]`: the top functions and call tree
// of a time range of a decoded AUX trace (spans/RangeStats).
// What `auxscope report ARGS` asks for.
struct ReportArgs : DecodeSelection {
    std::string path;
    std::string format = "text";
    std::string source = "auto";  // auto, trace, samples, off-cpu
    std::string event;            // samples: the event's name
    std::string sortName = "self";
    size_t top = 30;
    bool tree = false;
    bool threadTable = false;
    bool inlineFrames = true;
    bool help = false;
};
// Parses report's arguments; a pure function but for the stat() of the files
// and folders the look-up options name.
Expected<ReportArgs> parseReportArgs(const std::vector<std::string>& args);

int runReportCommand(const std::vector<std::string>& args);

}  // namespace auxscope
