// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// JSON string and number literals for the command line's --json output, and
// CSV fields for its --format csv.
#include <string>

#include "export/CsvQuoted.h"  // csvQuoted, for --format csv

namespace auxscope {

// `s` quoted and escaped as a JSON string; bytes that are not valid UTF-8 (file
// names, comm strings from a trace) become U+FFFD, so the output always parses.
std::string jsonString(const std::string& s);

// `v` as a JSON number, the shortest text that reads back as the same double;
// NaN and the infinities, which JSON cannot hold, are null.
std::string jsonNumber(double v);

}  // namespace auxscope
