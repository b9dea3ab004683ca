// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A minimal static ELF64 executable around one code image: one PT_LOAD (R+X)
// mapping everything from file offset 0 at `base` (headers, a GNU build-id
// note, the image at `base + codeOffset`), section headers (.note.gnu.build-id,
// .text, .rodata) and a symbol table so that tools can name the functions.
// auxscope-ptsynth writes its generated programs with it; bench_etm_decode
// wraps a CoreSight snapshot's memory dump in it (the code images resolver
// only maps ELF files).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "PtSynthPerfData.h"
#include "Result.h"

namespace auxscope::ptsynth {

struct ElfSymbol {
    std::string name;
    uint64_t value = 0, size = 0;
};

struct ElfImage {
    std::string path;
    uint16_t machine = 62;         // e_machine (EM_X86_64; EM_AARCH64 is 183)
    uint64_t base = 0x400000;      // address of file offset 0 (the PT_LOAD's p_vaddr)
    uint64_t codeOffset = 0x1000;  // file offset of `code`, so its address is base + codeOffset
    std::span<const uint8_t> code;
    uint64_t textSize = 0;  // the first textSize bytes of `code` are .text, the rest .rodata
    uint64_t entry = 0;
    uint8_t buildId[20] = {};
    std::vector<ElfSymbol> symbols;  // STT_FUNC, in .text
};

// Writes the executable (mode 0755) and returns its mapping as a loader would
// map it. Fails when the headers do not fit below `codeOffset`, or on I/O errors.
Expected<PtSynthMapping> writeElfImage(const ElfImage& image);

}  // namespace auxscope::ptsynth
