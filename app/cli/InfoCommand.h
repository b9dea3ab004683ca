// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <vector>

#include "perfdata/PerfDataReader.h"

namespace auxscope {

// `auxscope info [--json] FILE`: what a perf.data holds (header, events,
// features, records per CPU and type) and every loss and problem it records.
// Exit status: 0 when the file reads cleanly (warnings allowed), 1 when it has
// errors (everything before them is still shown) or cannot be read, 2 for usage.
// What `auxscope info ARGS` asks for.
struct InfoArgs {
    std::string file;  // "-": standard input
    bool json = false;
    bool help = false;
};
// Parses info's arguments (a pure function).
Expected<InfoArgs> parseInfoArgs(const std::vector<std::string>& args);

int runInfoCommand(const std::vector<std::string>& args);

std::string formatInfo(const PerfDataReader& reader);
std::string formatInfoJson(const PerfDataReader& reader);

}  // namespace auxscope
