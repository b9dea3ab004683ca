// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Versions of the trace-decoding libraries auxscope is linked against, for
// `auxscope --version` and bug reports.
#include <string>
#include <utility>
#include <vector>

namespace auxscope {

std::vector<std::pair<std::string, std::string>> decodeLibraryVersions();

}  // namespace auxscope
