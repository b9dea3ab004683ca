// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Function symbols of one ELF file for address -> function lookups: STT_FUNC
// (and IFUNC) symbols of .symtab, or of .dynsym when the file is stripped,
// demangled, sorted by address; PLT sections count as one function "[plt]".
// Addresses outside every symbol map to one "[unknown] <file>" function per
// file, so a stripped library still reads as one frame rather than many.
// Each symbol gets its FunctionTable id when the file is loaded.
//
// The kernel's symbols come the same way from a vmlinux (moved by the KASLR
// offset: `bias` is added to every address) or from a kallsyms listing
// (/proc/kallsyms or perf's copy), whose module symbols ("name\t[mod]") name
// "[mod]" as their file.
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"
#include "spans/FunctionTable.h"

namespace auxscope {

// A PT_LOAD program header.
struct ElfLoadSegment {
    uint64_t offset = 0, vaddr = 0, fileSize = 0;
    bool executable = false;
};

// The PT_LOAD segments of an ELF file (a vmlinux, a kcore).
Expected<std::vector<ElfLoadSegment>> elfLoadSegments(const std::string& path);
// The value of symbol `name` in the ELF's .symtab (else .dynsym), any type.
std::optional<uint64_t> elfSymbolValue(const std::string& path, std::string_view name);
// A kernel module's (.ko, ET_REL) executable sections as the kernel lays out
// its core from `base` (the module's recorded map start): the SHF_ALLOC +
// SHF_EXECINSTR sections in file order, each at its alignment; .init* sections
// are freed after loading and left out. `hasBytes`: PROGBITS (code in the file
// at `offset`), else NOBITS (e.g. .plt, filled by the kernel).
struct ElfModuleSection {
    uint64_t offset = 0, vaddr = 0, size = 0;
    bool hasBytes = false;
};
// Fails for a file that is not a relocatable ELF.
Expected<std::vector<ElfModuleSection>> elfModuleSections(const std::string& path, uint64_t base);
// The GNU build-id of an ELF notes blob (an ELF's PT_NOTE, /sys/kernel/notes).
std::optional<std::vector<uint8_t>> buildIdFromNotes(std::span<const uint8_t> notes);
// The GNU build-id of an ELF file (its SHT_NOTE sections, else PT_NOTE segments).
std::optional<std::vector<uint8_t>> elfBuildId(const std::string& path);
// The separate debug file holding the symbols of an ELF whose own .symtab was
// stripped (distribution packages: libc6-dbg, *-dbgsym), where gdb and perf
// look: `root`/.build-id/xx/yyyy.debug by the file's build-id, then its
// .gnu_debuglink name beside the file, in its .debug/ folder and under
// `root` + the file's folder (the debug file's build-id must match the file's
// when both have one). "" when the file has its .symtab or no debug file is
// found. `root` is normally /usr/lib/debug.
std::string elfSeparateDebugFile(const std::string& path, const std::string& root = "/usr/lib/debug");
// The same over several roots in order (all of them by build-id first, then
// by .gnu_debuglink: beside the file, its .debug/, under each root).
// `forDwarf`: for DWARF readers (source lines, inlined frames): looked for even
// when the file has .symtab, "" when it has its own .debug_info.
std::string elfSeparateDebugFile(const std::string& path, const std::vector<std::string>& roots,
                                 bool forDwarf = false);
// Whether the ELF file has a .symtab (false: stripped, or not an ELF).
bool elfHasSymtab(const std::string& path);

class ElfSymbolCache;

class ElfSymbols {
public:
    // `displayName` is what function entries name as their file; `bias` moves
    // every address (symbols, segments: a vmlinux's KASLR offset). A kernel
    // module (.ko) is placed at `moduleBase` as elfModuleSections() lays it out.
    // `symbolFile` (optional): read the symbols from there instead (a stripped
    // file's separate debug file, elfSeparateDebugFile()); the segments, which a
    // debug file keeps without their file offsets, still come from `path`.
    static Expected<std::unique_ptr<ElfSymbols>> load(const std::string& path, FunctionTable& functions,
                                                      const std::string& displayName, int64_t bias = 0,
                                                      std::optional<uint64_t> moduleBase = {},
                                                      const std::string& symbolFile = {});
    // As load(), through `cache` (null: as load()): a file read before (same
    // arguments, the same file and symbol file by device, inode, size and
    // modification time) is not read again; its functions are added to
    // `functions` again, in the same order, and the symbols refer to them.
    static Expected<std::unique_ptr<ElfSymbols>> load(ElfSymbolCache* cache, const std::string& path,
                                                      FunctionTable& functions,
                                                      const std::string& displayName, int64_t bias = 0,
                                                      std::optional<uint64_t> moduleBase = {},
                                                      const std::string& symbolFile = {});
    // A kallsyms listing ("ADDR TYPE NAME[\t[MODULE]]"): its text symbols (t, T,
    // w, W), each up to the next listed address. Kernel symbols name
    // `kernelName` as their file, module ones "[MODULE]". Fails when the file
    // cannot be read or every address is zero (kptr_restrict).
    static Expected<std::unique_ptr<ElfSymbols>> loadKallsyms(const std::string& path,
                                                              FunctionTable& functions,
                                                              const std::string& kernelName);

    // The function containing link-time address `vaddr`.
    uint32_t functionAtAddress(uint64_t vaddr) const;
    // The function containing the byte at `offset` in the file (through PT_LOAD).
    uint32_t functionAtFileOffset(uint64_t offset) const;
    std::optional<uint64_t> symbolAddress(std::string_view name) const;
    // kallsyms: each module's symbol span [lowest, highest] (modules listed there).
    const std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>>& moduleSpans() const {
        return moduleSpans_;
    }
    size_t symbolCount() const { return symbols_.size(); }
    uint32_t unknownFunction() const { return unknown_; }

private:
    friend class ElfSymbolCache;
    // A copy whose function ids are moved by `shift` (ids taken from another table).
    std::unique_ptr<ElfSymbols> shifted(int64_t shift) const;
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
    std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> moduleSpans_;
};

// ELF files' symbols kept across loads, for a process that loads the same
// files over and over (a fuzzer: every input names the same libc and test
// program): at most `files` of them, the least recently used dropped. Only
// what a file says is kept (names, addresses, segments), never anything of
// the table or trace it was loaded for; a file that changed on disk (another
// inode, size or modification time) is read again; one rewritten in place at
// the same size within the filesystem's timestamp granularity is not noticed,
// so this is for files that stay as they are while the process runs (code
// files, not a file a program is writing). Safe to share between threads.
class ElfSymbolCache {
public:
    explicit ElfSymbolCache(size_t files = 8) : capacity_(files ? files : 1) {}
    size_t hits() const;
    size_t misses() const;

private:
    friend class ElfSymbols;
    struct Entry {
        std::string key;                  // arguments and file identities
        std::vector<FunctionInfo> added;  // the functions load() added, in order
        uint32_t base = 0;                // the first of their ids in the table they were loaded for
        std::shared_ptr<const ElfSymbols> symbols;
    };
    mutable std::mutex mutex_;
    std::list<Entry> entries_;  // most recently used first
    size_t capacity_;
    size_t hits_ = 0, misses_ = 0;
};

// The demangled form of a C++ (Itanium ABI) name; the name itself otherwise.
std::string demangleSymbol(const char* name);

}  // namespace auxscope
