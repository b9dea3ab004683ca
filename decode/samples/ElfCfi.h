// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The call frame information of one ELF file for the unwinder (UnwindStep):
// libdwfl opens the file as a module of its own at its link-time addresses,
// so its CFI comes from where libdwfl's unwinder takes it, in the same order:
// .eh_frame, then .debug_frame of the file or of its separate debug file (found
// the standard way: the file itself, /usr/lib/debug/.build-id/xx/yyyy.debug,
// .gnu_debuglink beside the file and under /usr/lib/debug). Then, where
// libdwfl's unwinder stops looking, the .debug_frame of the MiniDebugInfo in
// .gnu_debugdata (an xz-compressed ELF inside the file).
//
// Each row libdw computes holds from the address asked for up to the next
// address the CFI program moves to; the rows are kept, so libdw runs once per
// such range and file, not once per frame: .eh_frame rows by range, every
// lookup by its exact address (return addresses repeat). One per file and
// worker thread; not thread-safe.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "samples/UnwindStep.h"

typedef struct Dwfl Dwfl;
typedef struct Dwfl_Module Dwfl_Module;
typedef struct Dwarf_CFI_s Dwarf_CFI;

namespace auxscope {

class ElfCfi {
public:
    // `frameRegs`: how many registers rows describe (UserRegisterLayout::frameRegs).
    ElfCfi(const std::string& path, const std::string& name, unsigned frameRegs);
    ~ElfCfi();
    ElfCfi(const ElfCfi&) = delete;
    ElfCfi& operator=(const ElfCfi&) = delete;

    // The file is an ELF executable or shared object libdwfl could open.
    bool opened() const { return module_ != nullptr; }
    const std::vector<uint8_t>& buildId() const { return buildId_; }
    // The runtime minus link-time address of a mapping of file offset `pgoff`
    // at `start` (through the PT_LOAD holding that offset); false when no
    // PT_LOAD holds it.
    bool loadBias(uint64_t start, uint64_t pgoff, uint64_t& bias) const;

    // The row for link-time address `vaddr`; nullptr when no CFI covers it.
    const CfiRow* rowAt(uint64_t vaddr);

    struct Stats {
        uint64_t lookups = 0;   // rowAt() calls
        uint64_t computed = 0;  // ... that asked libdw
        uint64_t rows = 0;      // rows kept
    };
    const Stats& stats() const { return stats_; }

private:
    struct Source {
        Dwarf_CFI* cfi = nullptr;
        uint64_t toCfi = 0;  // CFI address minus link-time address
        bool tried = false;
    };
    bool compute(Source& source, uint64_t vaddr, bool keepRange, const CfiRow*& out);
    Dwarf_CFI* miniDebugInfoCfi(uint64_t& toCfi);

    unsigned frameRegs_;
    Dwfl* dwfl_ = nullptr;
    Dwfl_Module* module_ = nullptr;
    uint64_t mainBias_ = 0;
    std::vector<uint8_t> buildId_;
    struct Load {
        uint64_t offset, vaddr, fileSize;
    };
    std::vector<Load> loads_;
    Source eh_, debug_, mini_;
    struct MiniDebugInfo;
    std::unique_ptr<MiniDebugInfo> miniDebugInfo_;
    std::deque<CfiRow> rows_;
    std::map<uint64_t, const CfiRow*> ehRanges_;  // .eh_frame rows by link-time start
    // Every address looked up -> its row (or none): open addressing, linear
    // probing, a power-of-two size at most half full; ~0 marks a free slot.
    struct Slot {
        uint64_t vaddr = ~uint64_t(0);
        const CfiRow* row = nullptr;
    };
    std::vector<Slot> byAddress_;
    size_t byAddressUsed_ = 0;
    const Slot* findSlot(uint64_t vaddr) const;
    void remember(uint64_t vaddr, const CfiRow* row);
    Stats stats_;
};

}  // namespace auxscope
