// SPDX-License-Identifier: GPL-3.0-or-later
#include "samples/ElfCfi.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace auxscope {

namespace {

char* gDebuginfoPath = nullptr;  // libdwfl's default: the file's dir, .debug, /usr/lib/debug

const Dwfl_Callbacks kFileCallbacks = {
    nullptr,
    dwfl_standard_find_debuginfo,
    dwfl_offline_section_address,
    &gDebuginfoPath,
};

}  // namespace

// The MiniDebugInfo ELF decompressed from .gnu_debugdata, while its CFI is used.
struct ElfCfi::MiniDebugInfo {
    int fd = -1;
    Elf* elf = nullptr;
    Dwarf* dwarf = nullptr;
    ~MiniDebugInfo() {
        if (dwarf) dwarf_end(dwarf);
        if (elf) elf_end(elf);
        if (fd >= 0) ::close(fd);
    }
};

ElfCfi::ElfCfi(const std::string& path, const std::string& name, unsigned frameRegs) : frameRegs_(frameRegs) {
    dwfl_ = dwfl_begin(&kFileCallbacks);
    if (!dwfl_) return;
    dwfl_report_begin(dwfl_);
    // At its link-time addresses (an ET_DYN at p_vaddr + 0): rows are looked up
    // by link-time address and serve every process that maps the file.
    Dwfl_Module* module = dwfl_report_elf(dwfl_, name.c_str(), path.c_str(), -1, 0, true);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    if (!module) return;
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(module, &bias);
    GElf_Ehdr ehdr;
    if (!elf || !gelf_getehdr(elf, &ehdr) || (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN)) return;
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) != 0) return;
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
            loads_.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
    }
    const unsigned char* bits = nullptr;
    GElf_Addr idAddress = 0;
    const int idSize = dwfl_module_build_id(module, &bits, &idAddress);
    if (idSize > 0) buildId_.assign(bits, bits + idSize);
    mainBias_ = bias;
    module_ = module;
}

ElfCfi::~ElfCfi() {
    miniDebugInfo_.reset();
    if (dwfl_) dwfl_end(dwfl_);
}

bool ElfCfi::loadBias(uint64_t start, uint64_t pgoff, uint64_t& bias) const {
    for (const Load& l : loads_) {
        if (pgoff < l.offset || pgoff - l.offset >= l.fileSize) continue;
        bias = start - (l.vaddr + (pgoff - l.offset));
        return true;
    }
    return false;
}

Dwarf_CFI* ElfCfi::miniDebugInfoCfi(uint64_t& toCfi) {
    GElf_Addr bias;
    Elf* elf = dwfl_module_getelf(module_, &bias);
    size_t shstrndx;
    if (!elf || elf_getshdrstrndx(elf, &shstrndx) != 0) return nullptr;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (!name || std::strcmp(name, ".gnu_debugdata") != 0 || shdr.sh_type != SHT_PROGBITS) continue;
        Elf_Data* data = elf_rawdata(scn, nullptr);
        if (!data || !data->d_buf || !data->d_size) return nullptr;
        // dwelf_elf_begin decompresses a whole xz file from a descriptor: hand it the section as one.
        auto mini = std::make_unique<MiniDebugInfo>();
        mini->fd = ::memfd_create("auxscope-gnu-debugdata", MFD_CLOEXEC);
        if (mini->fd < 0) return nullptr;
        const char* p = static_cast<const char*>(data->d_buf);
        for (size_t left = data->d_size; left;) {
            const ssize_t n = ::write(mini->fd, p, left);
            if (n <= 0) return nullptr;
            p += n, left -= size_t(n);
        }
        if (::lseek(mini->fd, 0, SEEK_SET) != 0) return nullptr;
        mini->elf = dwelf_elf_begin(mini->fd);
        if (!mini->elf || elf_kind(mini->elf) != ELF_K_ELF) return nullptr;
        mini->dwarf = dwarf_begin_elf(mini->elf, DWARF_C_READ, nullptr);
        if (!mini->dwarf) return nullptr;
        Dwarf_CFI* cfi = dwarf_getcfi(mini->dwarf);
        if (!cfi) return nullptr;
        toCfi = 0;  // a copy of the file's sections at their own addresses
        miniDebugInfo_ = std::move(mini);
        return cfi;
    }
    return nullptr;
}

namespace {

size_t slotOf(uint64_t vaddr, size_t mask) {
    return size_t((vaddr * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

}  // namespace

const ElfCfi::Slot* ElfCfi::findSlot(uint64_t vaddr) const {
    if (byAddress_.empty()) return nullptr;
    const size_t mask = byAddress_.size() - 1;
    for (size_t i = slotOf(vaddr, mask);; i = (i + 1) & mask) {
        const Slot& s = byAddress_[i];
        if (s.vaddr == vaddr) return &s;
        if (s.vaddr == ~uint64_t(0)) return nullptr;
    }
}

void ElfCfi::remember(uint64_t vaddr, const CfiRow* row) {
    if (vaddr == ~uint64_t(0)) return;  // the free-slot mark: looked up again each time
    if (2 * (byAddressUsed_ + 1) > byAddress_.size()) {
        std::vector<Slot> old(std::max<size_t>(1024, 2 * byAddress_.size()));
        old.swap(byAddress_);
        byAddressUsed_ = 0;
        for (const Slot& s : old)
            if (s.vaddr != ~uint64_t(0)) remember(s.vaddr, s.row);
    }
    const size_t mask = byAddress_.size() - 1;
    size_t i = slotOf(vaddr, mask);
    while (byAddress_[i].vaddr != ~uint64_t(0))
        i = (i + 1) & mask;
    byAddress_[i] = {vaddr, row};
    ++byAddressUsed_;
}

const CfiRow* ElfCfi::rowAt(uint64_t vaddr) {
    ++stats_.lookups;
    if (const Slot* s = findSlot(vaddr)) return s->row;
    const CfiRow* row = nullptr;
    if (auto it = ehRanges_.upper_bound(vaddr); it != ehRanges_.begin()) {
        --it;
        if (vaddr < it->second->end) row = it->second;
    }
    if (!row && module_) {
        // libdwfl's order: .eh_frame, then .debug_frame; MiniDebugInfo last.
        if (!eh_.tried) {
            eh_.tried = true;
            Dwarf_Addr cfiBias = 0;
            eh_.cfi = dwfl_module_eh_cfi(module_, &cfiBias);
            eh_.toCfi = mainBias_ - cfiBias;
        }
        if (!compute(eh_, vaddr, true, row)) {
            if (!debug_.tried) {
                debug_.tried = true;
                Dwarf_Addr cfiBias = 0;
                debug_.cfi = dwfl_module_dwarf_cfi(module_, &cfiBias);
                debug_.toCfi = mainBias_ - cfiBias;
            }
            if (!compute(debug_, vaddr, false, row)) {
                if (!mini_.tried) {
                    mini_.tried = true;
                    mini_.cfi = miniDebugInfoCfi(mini_.toCfi);
                }
                compute(mini_, vaddr, false, row);
            }
        }
    }
    remember(vaddr, row);
    return row;
}

// One row from libdw: the CFA rule and every register's rule, in the forms
// UnwindStep evaluates without libdw.
bool ElfCfi::compute(Source& source, uint64_t vaddr, bool keepRange, const CfiRow*& out) {
    if (!source.cfi) return false;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(source.cfi, vaddr + source.toCfi, &frame) != 0 || !frame) return false;
    ++stats_.computed;
    CfiRow row;
    Dwarf_Addr start = 0, end = 0;
    bool signal = false;
    const int ra = dwarf_frame_info(frame, &start, &end, &signal);
    // The row holds from the address asked for to the next location the CFI
    // program moves to (`end`): every address in between takes the same walk
    // through the program. Its reported start can be too low: after
    // DW_CFA_restore_state libdw reports the start of the row that was remembered.
    row.start = vaddr;
    row.end = end - source.toCfi;
    row.returnAddress = ra < 0 ? ~0u : unsigned(ra);
    row.signalFrame = signal;
    // DW_OP_addr in the process is moved by its CFI bias: the load bias plus this.
    row.addressBias = 0 - source.toCfi;

    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops > 0) {
        if (nops == 1 && ops[0].atom == DW_OP_bregx) {
            row.cfa = CfiRow::Cfa::RegisterOffset;
            row.cfaRegister = uint16_t(std::min<Dwarf_Word>(ops[0].number, 0xffff));
            row.cfaOffset = ops[0].number2;
        } else {
            row.cfa = CfiRow::Cfa::Expression;
            row.cfaOps = uint32_t(row.ops.size());
            row.cfaOpCount = uint32_t(nops);
            row.ops.insert(row.ops.end(), ops, ops + nops);
        }
    }
    for (unsigned regno = 0; regno < frameRegs_; ++regno) {
        Dwarf_Op mem[3];
        ops = nullptr, nops = 0;
        CfiRow::Register r{uint16_t(regno), CfiRow::Rule::Unusable};
        if (dwarf_frame_register(frame, int(regno), mem, &ops, &nops) != 0) {
            row.registers.push_back(r);
            continue;
        }
        if (nops == 0) {
            if (ops == mem) {  // undefined
                if (regno == row.returnAddress) row.returnAddressUndefined = true;
                continue;
            }
            if (ops == nullptr) r.rule = CfiRow::Rule::Same;
            row.registers.push_back(r);
            continue;
        }
        // libdw's forms: offset(N) = {call_frame_cfa[, plus_uconst N]}, val_offset
        // adds stack_value, register(R) = {regx R}; anything else an expression.
        size_t n = nops;
        const bool value = ops[n - 1].atom == DW_OP_stack_value;
        if (value) --n;
        if (n >= 1 && n <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
            (n == 1 || ops[1].atom == DW_OP_plus_uconst)) {
            r.rule = value ? CfiRow::Rule::ValueOfCfa : CfiRow::Rule::AtCfa;
            r.offset = n == 2 ? ops[1].number : 0;
        } else if (nops == 1 && ops[0].atom == DW_OP_regx) {
            r.rule = CfiRow::Rule::Register;
            r.offset = ops[0].number;
        } else {
            r.rule = CfiRow::Rule::Expression;
            r.first = uint32_t(row.ops.size());
            r.count = uint32_t(nops);
            row.ops.insert(row.ops.end(), ops, ops + nops);
        }
        row.registers.push_back(r);
    }
    std::free(frame);
    rows_.push_back(std::move(row));
    const CfiRow* kept = &rows_.back();
    ++stats_.rows;
    if (keepRange && vaddr < kept->end) ehRanges_[vaddr] = kept;
    out = kept;
    return true;
}

}  // namespace auxscope
