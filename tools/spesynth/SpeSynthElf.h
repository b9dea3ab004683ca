// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The AArch64 executable a synthesized SPE file maps: code with named functions
// (STT_FUNC in .text) and data with named globals (STT_OBJECT in .data and
// .bss), two PT_LOAD segments as a linker lays them out (text R+X from file
// offset 0, data R+W at its own page with the same offset modulo the page
// size), a GNU build-id note. The code is NOPs with a RET ending each function:
// SPE names instructions by address only, perf and auxscope need the symbols.
#include <cstdint>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::spesynth {

struct ElfSymbolDef {
    std::string name;
    uint64_t address = 0, size = 0;
};

struct SpeElfLayout {
    uint64_t textStart = 0, textEnd = 0;  // .text
    uint64_t dataStart = 0, dataEnd = 0;  // .data
    uint64_t bssStart = 0, bssEnd = 0;    // .bss
    std::vector<ElfSymbolDef> functions;  // in .text, by address
    std::vector<ElfSymbolDef> objects;    // in .data or .bss, by address
};

// A mapping of the written file, as the loader maps it (for MMAP2).
struct ElfMapping {
    uint64_t start = 0, end = 0, pgoff = 0;
    uint32_t prot = 0;
};

struct WrittenElf {
    std::string path;  // absolute
    uint32_t major = 0, minor = 0;
    uint64_t inode = 0;
    ElfMapping text, data;
};

// The program every synthesized file maps (fixed, so that --records files map
// the same functions and globals): about 40 functions at 0x400000 and globals
// in .data and .bss above them.
SpeElfLayout standardProgram();

Expected<WrittenElf> writeSpeElf(const std::string& path, const SpeElfLayout& layout);

}  // namespace auxscope::spesynth
