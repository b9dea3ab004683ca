// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <vector>

namespace auxscope {

// `auxscope export FILE --format perfetto|csv -o OUT`
int runExportCommand(const std::vector<std::string>& args);

}  // namespace auxscope
