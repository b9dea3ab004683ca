// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeSynthElf.h"

#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace auxscope::spesynth {
namespace {

constexpr uint64_t kPage = 0x1000;
constexpr uint64_t kBase = 0x400000;

uint64_t alignUp(uint64_t v, uint64_t a) {
    return (v + a - 1) & ~(a - 1);
}

struct Blob {
    std::vector<uint8_t> v;
    template <typename T>
    void put(const T& t) {
        const auto* p = reinterpret_cast<const uint8_t*>(&t);
        v.insert(v.end(), p, p + sizeof t);
    }
    void padTo(size_t n) {
        if (v.size() < n) v.resize(n, 0);
    }
};

}  // namespace

SpeElfLayout standardProgram() {
    // Functions of a small data-processing program (names and sizes in bytes).
    static const std::pair<const char*, uint64_t> kFunctions[] = {
        {"_start", 0x40},
        {"main", 0x180},
        {"parse_args", 0x2c0},
        {"load_config", 0x1a0},
        {"worker_main", 0x240},
        {"queue_pop", 0xc0},
        {"queue_push", 0xc0},
        {"hash_lookup", 0x1e0},
        {"hash_insert", 0x2a0},
        {"hash_resize", 0x3c0},
        {"btree_search", 0x300},
        {"btree_insert", 0x4a0},
        {"matrix_multiply", 0x600},
        {"vector_dot_sve", 0x1c0},
        {"vector_scale_sve", 0x180},
        {"memcpy_fast", 0x140},
        {"memset_fast", 0x100},
        {"strcmp_fast", 0xe0},
        {"list_walk", 0xa0},
        {"list_append", 0x80},
        {"compress_block", 0x800},
        {"decompress_block", 0x700},
        {"crc32_update", 0x120},
        {"sort_records", 0x380},
        {"merge_runs", 0x2e0},
        {"histogram_add", 0x90},
        {"atomic_counter_inc", 0x40},
        {"spin_lock", 0x60},
        {"spin_unlock", 0x30},
        {"alloc_object", 0x1c0},
        {"free_object", 0x100},
        {"format_output", 0x420},
        {"write_output", 0x160},
        {"checksum_page", 0x1a0},
        {"bloom_filter_test", 0xe0},
        {"bloom_filter_add", 0xc0},
        {"ring_buffer_read", 0x120},
        {"ring_buffer_write", 0x140},
        {"update_stats", 0xa0},
        {"shutdown", 0x80},
    };
    // Globals: name, size, in .bss.
    struct Obj {
        const char* name;
        uint64_t size;
        bool bss;
    };
    static const Obj kObjects[] = {
        {"g_config", 0x100, false},         {"g_lookup_table", 0x10000, false}, {"g_crc_table", 0x400, false},
        {"g_format_strings", 0x800, false}, {"g_stats", 0x200, false},          {"g_lock", 0x40, false},
        {"g_hash_buckets", 0x100000, true}, {"g_ring_buffer", 0x40000, true},   {"g_counters", 0x1000, true},
        {"g_bloom_bits", 0x20000, true},    {"g_matrix_a", 0x80000, true},      {"g_matrix_b", 0x80000, true},
        {"g_matrix_c", 0x80000, true},      {"g_scratch", 0x8000, true},
    };
    SpeElfLayout l;
    uint64_t at = kBase + kPage;  // headers and the note in the first page
    l.textStart = at;
    for (const auto& [name, size] : kFunctions) {
        l.functions.push_back({name, at, size});
        at += size;
    }
    l.textEnd = at;
    // The data segment: a page boundary and a page of distance, as ld does.
    at = alignUp(at, kPage) + 0x10000;
    l.dataStart = at;
    for (const Obj& o : kObjects)
        if (!o.bss) {
            at = alignUp(at, 64);
            l.objects.push_back({o.name, at, o.size});
            at += o.size;
        }
    l.dataEnd = at;
    at = alignUp(at, 64);
    l.bssStart = at;
    for (const Obj& o : kObjects)
        if (o.bss) {
            at = alignUp(at, 64);
            l.objects.push_back({o.name, at, o.size});
            at += o.size;
        }
    l.bssEnd = at;
    return l;
}

Expected<WrittenElf> writeSpeElf(const std::string& path, const SpeElfLayout& l) {
    // File layout: [ehdr][3 phdrs][build-id note] ... .text at (textStart - base)
    // ... .data at an offset congruent to dataStart modulo the page.
    const uint64_t textOff = l.textStart - kBase;
    const uint64_t textSize = l.textEnd - l.textStart;
    const uint64_t dataOff = alignUp(textOff + textSize, kPage) + (l.dataStart % kPage);
    const uint64_t dataSize = l.dataEnd - l.dataStart;
    const uint64_t bssSize = l.bssEnd - l.dataEnd;  // memsz beyond the file, alignment included

    Blob f;
    f.v.resize(sizeof(Elf64_Ehdr) + 3 * sizeof(Elf64_Phdr));
    const size_t noteOff = f.v.size();
    uint8_t buildId[20];
    {
        uint64_t h = 0xcbf29ce484222325ull;
        for (const auto& s : l.functions)
            for (char c : s.name + std::to_string(s.address))
                h = (h ^ uint8_t(c)) * 0x100000001b3ull;
        for (int i = 0; i < 20; ++i) {
            h = (h ^ uint64_t(i)) * 0x100000001b3ull;
            buildId[i] = uint8_t(h >> 32);
        }
    }
    f.put(Elf64_Nhdr{4, 20, NT_GNU_BUILD_ID});
    f.v.insert(f.v.end(), {'G', 'N', 'U', 0});
    f.v.insert(f.v.end(), buildId, buildId + 20);
    const size_t noteSize = f.v.size() - noteOff;
    f.padTo(textOff);
    // Code: NOPs, a RET at the end of each function.
    const uint32_t nop = 0xd503201f, ret = 0xd65f03c0;
    f.v.resize(textOff + textSize);
    for (uint64_t a = l.textStart; a < l.textEnd; a += 4) {
        const uint32_t insn = nop;
        std::memcpy(f.v.data() + textOff + (a - l.textStart), &insn, 4);
    }
    for (const ElfSymbolDef& fn : l.functions)
        std::memcpy(f.v.data() + textOff + (fn.address + fn.size - 4 - l.textStart), &ret, 4);
    f.padTo(dataOff);
    // .data: each object filled with a byte pattern of its index.
    f.v.resize(dataOff + dataSize, 0);
    for (size_t i = 0; i < l.objects.size(); ++i) {
        const ElfSymbolDef& o = l.objects[i];
        if (o.address >= l.dataEnd) continue;
        std::memset(f.v.data() + dataOff + (o.address - l.dataStart), int(0x11 * (i % 15 + 1)), o.size);
    }

    // Symbol table: functions (.text, section 2), objects (.data 3 / .bss 4).
    while (f.v.size() % 8)
        f.v.push_back(0);
    std::string strtab(1, '\0');
    const size_t symOff = f.v.size();
    f.put(Elf64_Sym{});
    auto sym = [&](const ElfSymbolDef& d, unsigned char type, uint16_t shndx) {
        Elf64_Sym s{};
        s.st_name = uint32_t(strtab.size());
        strtab += d.name + '\0';
        s.st_info = ELF64_ST_INFO(STB_GLOBAL, type);
        s.st_shndx = shndx;
        s.st_value = d.address;
        s.st_size = d.size;
        f.put(s);
    };
    for (const ElfSymbolDef& fn : l.functions)
        sym(fn, STT_FUNC, 2);
    for (const ElfSymbolDef& o : l.objects)
        sym(o, STT_OBJECT, o.address >= l.bssStart ? 4 : 3);
    const size_t symSize = f.v.size() - symOff;
    const size_t strOff = f.v.size();
    f.v.insert(f.v.end(), strtab.begin(), strtab.end());
    static const char kShstr[] = "\0.note.gnu.build-id\0.text\0.data\0.bss\0.symtab\0.strtab\0.shstrtab";
    const size_t shstrOff = f.v.size();
    f.v.insert(f.v.end(), kShstr, kShstr + sizeof kShstr);
    while (f.v.size() % 8)
        f.v.push_back(0);
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
    // Name offsets in kShstr.
    const uint32_t nNote = 1, nText = 20, nData = 26, nBss = 32, nSymtab = 37, nStrtab = 45, nShstrtab = 53;
    section(0, SHT_NULL, 0, 0, 0, 0, 0, 0, 0, 0);
    section(nNote, SHT_NOTE, SHF_ALLOC, kBase + noteOff, noteOff, noteSize, 0, 0, 4, 0);
    section(nText, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, l.textStart, textOff, textSize, 0, 0, 16, 0);
    section(nData, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, l.dataStart, dataOff, dataSize, 0, 0, 64, 0);
    section(nBss, SHT_NOBITS, SHF_ALLOC | SHF_WRITE, l.bssStart, dataOff + (l.bssStart - l.dataStart),
            l.bssEnd - l.bssStart, 0, 0, 64, 0);
    section(nSymtab, SHT_SYMTAB, 0, 0, symOff, symSize, 6, 1, 8, sizeof(Elf64_Sym));
    section(nStrtab, SHT_STRTAB, 0, 0, strOff, strtab.size(), 0, 0, 1, 0);
    section(nShstrtab, SHT_STRTAB, 0, 0, shstrOff, sizeof kShstr, 0, 0, 1, 0);

    Elf64_Ehdr eh{};
    std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
    eh.e_type = ET_EXEC;
    eh.e_machine = EM_AARCH64;
    eh.e_version = EV_CURRENT;
    eh.e_entry = l.functions.empty() ? l.textStart : l.functions.front().address;
    eh.e_phoff = sizeof(Elf64_Ehdr);
    eh.e_shoff = shOff;
    eh.e_ehsize = sizeof(Elf64_Ehdr);
    eh.e_phentsize = sizeof(Elf64_Phdr);
    eh.e_phnum = 3;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 8;
    eh.e_shstrndx = 7;
    std::memcpy(f.v.data(), &eh, sizeof eh);
    Elf64_Phdr ph[3]{};
    ph[0].p_type = PT_LOAD;
    ph[0].p_flags = PF_R | PF_X;
    ph[0].p_offset = 0;
    ph[0].p_vaddr = ph[0].p_paddr = kBase;
    ph[0].p_filesz = ph[0].p_memsz = textOff + textSize;
    ph[0].p_align = kPage;
    ph[1].p_type = PT_LOAD;
    ph[1].p_flags = PF_R | PF_W;
    ph[1].p_offset = dataOff;
    ph[1].p_vaddr = ph[1].p_paddr = l.dataStart;
    ph[1].p_filesz = dataSize;
    ph[1].p_memsz = dataSize + bssSize;
    ph[1].p_align = kPage;
    ph[2].p_type = PT_NOTE;
    ph[2].p_flags = PF_R;
    ph[2].p_offset = noteOff;
    ph[2].p_vaddr = ph[2].p_paddr = kBase + noteOff;
    ph[2].p_filesz = ph[2].p_memsz = noteSize;
    ph[2].p_align = 4;
    std::memcpy(f.v.data() + sizeof eh, ph, sizeof ph);

    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        if (!out) return makeError(path + ": cannot create the program: " + std::strerror(errno));
        out.write(reinterpret_cast<const char*>(f.v.data()), std::streamsize(f.v.size()));
        if (!out) return makeError(path + ": cannot write the program: " + std::strerror(errno));
    }
    ::chmod(path.c_str(), 0755);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return makeError(path + ": " + std::strerror(errno));
    WrittenElf w;
    w.path = std::filesystem::absolute(path).lexically_normal().string();
    w.major = major(st.st_dev);
    w.minor = minor(st.st_dev);
    w.inode = st.st_ino;
    w.text = {kBase, alignUp(l.textEnd, kPage), 0, PROT_READ | PROT_EXEC};
    const uint64_t dataPage = l.dataStart & ~(kPage - 1);
    w.data = {dataPage, alignUp(l.bssEnd, kPage), dataOff & ~(kPage - 1), PROT_READ | PROT_WRITE};
    return w;
}

}  // namespace auxscope::spesynth
