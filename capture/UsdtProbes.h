// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// USDT probes (SystemTap's statically defined tracing, <sys/sdt.h>): a binary
// lists them in ELF notes of the non-allocated section .note.stapsdt, owner
// "stapsdt", type 3. Each note's descriptor holds three addresses (8 bytes each
// in a 64-bit ELF): the probe's instruction (a nop), the link-time address of
// .stapsdt.base, and the probe's semaphore (0: none), then three strings:
// provider, name, argument description. Where the binary was moved after the
// link (prelink), .stapsdt.base's address differs from the one in the note and
// both other addresses move by the difference. The uprobe goes at the file
// offset of the probe's address (through the PT_LOAD program header that maps
// it); the semaphore, a 16-bit counter the program tests before doing the
// work of a probe's arguments, is given to the kernel as a file offset too
// (the uprobe PMU's ref_ctr_offset, config:32-63), and the kernel increments
// it in every process that maps the binary while the probe is registered.
#include <cstdint>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

struct UsdtProbe {
    std::string provider, name, args;
    uint64_t address = 0;     // of the probe's instruction, after the .stapsdt.base adjustment
    uint64_t fileOffset = 0;  // where the uprobe goes
    uint64_t semaphoreAddress = 0, semaphoreOffset = 0;  // 0: no semaphore
    std::string fullName() const { return provider + ":" + name; }
};

// Every probe site of the binary, in note order (a probe written at several
// places of the source has a note per site). No notes: an empty list. Errors:
// the file cannot be read, is not an ELF file, or a note is malformed.
Expected<std::vector<UsdtProbe>> readUsdtProbes(const std::string& path);

// "a:b, c:d" (each name once, in order), for messages.
std::string listUsdtProbeNames(const std::vector<UsdtProbe>& probes, size_t max = 20);

}  // namespace auxscope
