// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Function symbols of one ELF file for address -> function lookups: STT_FUNC
// (and IFUNC) symbols of .symtab, or of .dynsym when the file is stripped,
// demangled, sorted by address; PLT sections count as one function "[plt]".
// Addresses outside every symbol map to one "[unknown] <file>" function per
// file, so a stripped library still reads as one frame rather than many.
// Each symbol gets its FunctionTable id when the file is loaded.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "FunctionTable.h"
#include "Result.h"

namespace auxscope {

class ElfSymbols {
public:
    // `displayName` is what function entries name as their file.
    static Expected<std::unique_ptr<ElfSymbols>> load(const std::string& path, FunctionTable& functions,
                                                      const std::string& displayName);

    // The function containing link-time address `vaddr`.
    uint32_t functionAtAddress(uint64_t vaddr) const;
    // The function containing the byte at `offset` in the file (through PT_LOAD).
    uint32_t functionAtFileOffset(uint64_t offset) const;
    std::optional<uint64_t> symbolAddress(std::string_view name) const;
    size_t symbolCount() const { return symbols_.size(); }
    uint32_t unknownFunction() const { return unknown_; }

private:
    struct Segment {
        uint64_t offset, vaddr, size;
    };
    struct Symbol {
        uint64_t start, end;
        uint32_t function;
    };
    std::vector<Segment> segments_;
    std::vector<Symbol> symbols_;                             // by start
    std::vector<std::pair<std::string, uint64_t>> rawNames_;  // mangled name -> address, by name
    uint32_t unknown_ = 0;
};

// The demangled form of a C++ (Itanium ABI) name; the name itself otherwise.
std::string demangleSymbol(const char* name);

}  // namespace auxscope
