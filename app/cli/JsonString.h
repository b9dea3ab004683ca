// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// JSON string literals for the command line's --json output.
#include <string>

namespace auxscope {

// `s` quoted and escaped as a JSON string; bytes that are not valid UTF-8 (file
// names, comm strings from a trace) become U+FFFD, so the output always parses.
std::string jsonString(const std::string& s);

}  // namespace auxscope
