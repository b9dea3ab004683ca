// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <vector>

namespace auxscope {

// `auxscope decode --pt FILE [--raw BIN:ADDR]... [--elf ELF[:ADDR]]... --format ptxed|packets ...`
int runDecodeCommand(const std::vector<std::string>& args);

}  // namespace auxscope
