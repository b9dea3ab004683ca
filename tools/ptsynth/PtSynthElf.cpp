// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthElf.h"

#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace auxscope::ptsynth {
namespace {

struct Blob {
    std::vector<uint8_t> v;
    template <typename T>
    void put(const T& t) {
        const auto* p = reinterpret_cast<const uint8_t*>(&t);
        v.insert(v.end(), p, p + sizeof t);
    }
    void align(size_t a) {
        while (v.size() % a)
            v.push_back(0);
    }
};

}  // namespace

Expected<PtSynthMapping> writeElfImage(const ElfImage& image) {
    const uint64_t base = image.base, codeAddr = image.base + image.codeOffset;
    const uint64_t textSize = std::min<uint64_t>(image.textSize, image.code.size());
    Blob f;
    f.v.resize(sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr));
    const size_t noteOff = f.v.size();
    f.put(Elf64_Nhdr{4, 20, NT_GNU_BUILD_ID});
    f.v.insert(f.v.end(), {'G', 'N', 'U', 0});
    f.v.insert(f.v.end(), image.buildId, image.buildId + 20);
    const size_t noteSize = f.v.size() - noteOff;
    if (f.v.size() > image.codeOffset)
        return makeError(image.path + ": the ELF headers (" + std::to_string(f.v.size()) +
                         " bytes) do not fit below the code's file offset " +
                         std::to_string(image.codeOffset));
    f.v.resize(image.codeOffset, 0);
    f.v.insert(f.v.end(), image.code.begin(), image.code.end());
    const size_t loadSize = f.v.size();

    // Symbols.
    f.align(8);
    std::string strtab(1, '\0');
    const size_t symOff = f.v.size();
    f.put(Elf64_Sym{});
    for (const ElfSymbol& sym : image.symbols) {
        Elf64_Sym s{};
        s.st_name = uint32_t(strtab.size());
        strtab += sym.name + '\0';
        s.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
        s.st_shndx = 2;
        s.st_value = sym.value;
        s.st_size = sym.size;
        f.put(s);
    }
    const size_t symSize = f.v.size() - symOff;
    const size_t strOff = f.v.size();
    f.v.insert(f.v.end(), strtab.begin(), strtab.end());
    const std::string shstr =
        std::string("\0.note.gnu.build-id\0.text\0.rodata\0.symtab\0.strtab\0.shstrtab\0", 61);
    const size_t shstrOff = f.v.size();
    f.v.insert(f.v.end(), shstr.begin(), shstr.end());
    f.align(8);
    const size_t shOff = f.v.size();
    auto section = [&](uint32_t name, uint32_t type, uint64_t flags, uint64_t addr, uint64_t off,
                       uint64_t size, uint32_t link, uint32_t info, uint64_t align, uint64_t entsize) {
        Elf64_Shdr s{};
        s.sh_name = name;
        s.sh_type = type;
        s.sh_flags = flags;
        s.sh_addr = addr;
        s.sh_offset = off;
        s.sh_size = size;
        s.sh_link = link;
        s.sh_info = info;
        s.sh_addralign = align;
        s.sh_entsize = entsize;
        f.put(s);
    };
    section(0, SHT_NULL, 0, 0, 0, 0, 0, 0, 0, 0);
    section(1, SHT_NOTE, SHF_ALLOC, base + noteOff, noteOff, noteSize, 0, 0, 4, 0);
    section(20, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, codeAddr, image.codeOffset, textSize, 0, 0, 16, 0);
    section(26, SHT_PROGBITS, SHF_ALLOC, codeAddr + textSize, image.codeOffset + textSize,
            image.code.size() - textSize, 0, 0, 8, 0);
    section(34, SHT_SYMTAB, 0, 0, symOff, symSize, 5, 1, 8, sizeof(Elf64_Sym));
    section(42, SHT_STRTAB, 0, 0, strOff, strtab.size(), 0, 0, 1, 0);
    section(50, SHT_STRTAB, 0, 0, shstrOff, shstr.size(), 0, 0, 1, 0);

    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
    eh.e_type = ET_EXEC;
    eh.e_machine = image.machine;
    eh.e_version = EV_CURRENT;
    eh.e_entry = image.entry;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_shoff = shOff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 2;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 7;
    eh.e_shstrndx = 6;
    std::memcpy(f.v.data(), &eh, sizeof eh);
    Elf64_Phdr load{};
    load.p_type = PT_LOAD;
    load.p_flags = PF_R | PF_X;
    load.p_offset = 0;
    load.p_vaddr = load.p_paddr = base;
    load.p_filesz = load.p_memsz = loadSize;
    load.p_align = 0x1000;
    std::memcpy(f.v.data() + sizeof eh, &load, sizeof load);
    Elf64_Phdr note{};
    note.p_type = PT_NOTE;
    note.p_flags = PF_R;
    note.p_offset = noteOff;
    note.p_vaddr = note.p_paddr = base + noteOff;
    note.p_filesz = note.p_memsz = noteSize;
    note.p_align = 4;
    std::memcpy(f.v.data() + sizeof eh + sizeof load, &note, sizeof note);

    const std::string& path = image.path;
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) return makeError(path + ": cannot create the program: " + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(f.v.data()), std::streamsize(f.v.size()));
        if (!out) return makeError(path + ": cannot write the program: " + std::strerror(errno));
    }
    ::chmod(path.c_str(), 0755);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return makeError(path + ": " + std::strerror(errno));
    PtSynthMapping map;
    map.start = base;
    map.end = base + ((loadSize + 0xfff) & ~uint64_t(0xfff));
    map.pgoff = 0;
    map.major = major(st.st_dev);
    map.minor = minor(st.st_dev);
    map.inode = st.st_ino;
    map.prot = PROT_READ | PROT_EXEC;
    map.flags = MAP_PRIVATE;
    map.path = std::filesystem::absolute(path).lexically_normal().string();
    return map;
}

}  // namespace auxscope::ptsynth
