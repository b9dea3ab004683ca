// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Data symbols of one ELF file: its globals (STT_OBJECT), for naming data
// addresses symbol+offset (the SPE memory map). ElfSymbols keeps functions
// only; these are read apart, by file offset so that a mapping (MMAP2's start
// and pgoff) places them: a symbol in .bss lies past its segment's file bytes
// and gets the offset the segment's memory image continues to.
#include <cstdint>
#include <string>
#include <vector>

namespace auxscope {

struct ElfDataSymbol {
    uint64_t offset = 0, size = 0;  // in the file's (memory-image) offsets; size at least 1
    std::string name;
};

// From .symtab, else .dynsym. False when `path` is not a readable ELF file.
bool readElfDataSymbols(const std::string& path, std::vector<ElfDataSymbol>& out);

}  // namespace auxscope
