// SPDX-License-Identifier: GPL-3.0-or-later
#include "ElfSymbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace auxscope {

std::string demangleSymbol(const char* name) {
    if (name[0] != '_' || name[1] != 'Z') return name;
    int status = 0;
    char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status != 0 || !out) return name;
    std::string result(out);
    std::free(out);
    return result;
}

namespace {
std::string baseName(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

Expected<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::string& path, FunctionTable& functions,
                                                       const std::string& displayName) {
    static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
    if (!ready) return makeError("libelf: " + std::string(elf_errmsg(-1)));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf) elf_end(elf);
        ::close(fd);
        return makeError(path + ": not an ELF file");
    }
    auto result = std::make_unique<ElfSymbols>();
    size_t phnum = 0;
    elf_getphdrnum(elf, &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, int(i), &phdr) && phdr.p_type == PT_LOAD)
            result->segments_.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz});
    }
    size_t shstrndx = 0;
    elf_getshdrstrndx(elf, &shstrndx);
    Elf_Scn* symtab = nullptr;
    Elf_Scn* dynsym = nullptr;
    std::vector<std::pair<uint64_t, uint64_t>> plts;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        if (shdr.sh_type == SHT_SYMTAB) symtab = scn;
        if (shdr.sh_type == SHT_DYNSYM) dynsym = scn;
        const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (name && std::strncmp(name, ".plt", 4) == 0 && shdr.sh_size)
            plts.push_back({shdr.sh_addr, shdr.sh_addr + shdr.sh_size});
    }
    const std::string file = displayName.empty() ? path : displayName;
    struct Raw {
        uint64_t start, size;
        const char* name;
        bool global;
    };
    std::vector<Raw> raw;
    if (Elf_Scn* scn = symtab ? symtab : dynsym) {
        GElf_Shdr shdr;
        gelf_getshdr(scn, &shdr);
        Elf_Data* data = elf_getdata(scn, nullptr);
        size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
        for (size_t i = 0; data && i < count; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) continue;
            int type = GELF_ST_TYPE(sym.st_info);
            if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
                continue;
            const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
            if (!name || !*name) continue;
            raw.push_back({sym.st_value, sym.st_size, name, GELF_ST_BIND(sym.st_info) != STB_LOCAL});
        }
    }
    // Aliases share an address: keep one, preferring a global name.
    std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
        return a.start < b.start || (a.start == b.start && a.global > b.global);
    });
    for (size_t i = 0; i < raw.size(); ++i) {
        result->rawNames_.push_back({raw[i].name, raw[i].start});
        if (i && raw[i].start == raw[i - 1].start) continue;
        uint64_t end = raw[i].start + raw[i].size;
        if (!raw[i].size) {
            // No size: up to the next symbol.
            size_t j = i + 1;
            while (j < raw.size() && raw[j].start == raw[i].start)
                ++j;
            end = j < raw.size() ? raw[j].start : raw[i].start + 1;
        }
        uint32_t id = functions.add({demangleSymbol(raw[i].name), file, raw[i].start});
        result->symbols_.push_back({raw[i].start, end, id});
    }
    for (auto [start, end] : plts)
        result->symbols_.push_back({start, end, functions.add({"[plt] " + baseName(file), file, start})});
    std::sort(result->symbols_.begin(), result->symbols_.end(),
              [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
    std::sort(result->rawNames_.begin(), result->rawNames_.end());
    result->unknown_ = functions.add({"[unknown] " + baseName(file), file, 0});
    elf_end(elf);
    ::close(fd);
    return result;
}

uint32_t ElfSymbols::functionAtAddress(uint64_t vaddr) const {
    auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                               [](uint64_t a, const Symbol& s) { return a < s.start; });
    // Symbols may nest or overlap (a PLT section, an alias with a size): look a few back.
    for (int back = 0; back < 4 && it != symbols_.begin(); ++back) {
        --it;
        if (vaddr >= it->start && vaddr < it->end) return it->function;
    }
    return unknown_;
}

uint32_t ElfSymbols::functionAtFileOffset(uint64_t offset) const {
    for (const Segment& s : segments_)
        if (offset >= s.offset && offset < s.offset + s.size)
            return functionAtAddress(s.vaddr + (offset - s.offset));
    return unknown_;
}

std::optional<uint64_t> ElfSymbols::symbolAddress(std::string_view name) const {
    auto it = std::lower_bound(
        rawNames_.begin(), rawNames_.end(), name,
        [](const std::pair<std::string, uint64_t>& e, std::string_view n) { return e.first < n; });
    if (it == rawNames_.end() || it->first != name) return std::nullopt;
    return it->second;
}

}  // namespace auxscope
