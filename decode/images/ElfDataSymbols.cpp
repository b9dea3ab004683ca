// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/ElfDataSymbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>

namespace auxscope {

bool readElfDataSymbols(const std::string& path, std::vector<ElfDataSymbol>& out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf) elf_end(elf);
        ::close(fd);
        return false;
    }
    // PT_LOAD segments: a symbol's address -> its file offset.
    std::vector<GElf_Phdr> loads;
    size_t phnum = 0;
    elf_getphdrnum(elf, &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD) loads.push_back(ph);
    }
    auto scan = [&](Elf_Scn* scn, const GElf_Shdr& sh) {
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || !sh.sh_entsize) return;
        const size_t n = sh.sh_size / sh.sh_entsize;
        for (size_t i = 0; i < n; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) continue;
            if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
                sym.st_shndx >= SHN_LORESERVE)
                continue;
            const char* name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (!name || !*name) continue;
            for (const GElf_Phdr& ph : loads)
                if (sym.st_value >= ph.p_vaddr && sym.st_value < ph.p_vaddr + ph.p_memsz) {
                    // .bss lies past the file bytes: offsets continue the segment's.
                    out.push_back(
                        {sym.st_value - ph.p_vaddr + ph.p_offset, std::max<uint64_t>(sym.st_size, 1), name});
                    break;
                }
        }
    };
    Elf_Scn* dynsym = nullptr;
    GElf_Shdr dynsymHeader{};
    bool symtab = false;
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if (sh.sh_type == SHT_SYMTAB) {
            scan(scn, sh);
            symtab = true;
        } else if (sh.sh_type == SHT_DYNSYM) {
            dynsym = scn, dynsymHeader = sh;
        }
    }
    if (!symtab && dynsym) scan(dynsym, dynsymHeader);
    elf_end(elf);
    ::close(fd);
    return true;
}

}  // namespace auxscope
