// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/ElfSymbols.h"

#include <cxxabi.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

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
// Among aliases, perf prefers the name with fewer leading underscores (kentry over _text).
size_t leadingUnderscores(std::string_view name) {
    size_t n = 0;
    while (n < name.size() && name[n] == '_')
        ++n;
    return n;
}

std::string baseName(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A relocatable ELF's sections as the kernel places a module's core (see
// elfModuleSections()): per section index, its address, or 0 when not placed.
std::vector<uint64_t> moduleLayout(Elf* elf, uint64_t base, std::vector<ElfModuleSection>* sections) {
    size_t shnum = 0, shstrndx = 0;
    elf_getshdrnum(elf, &shnum);
    elf_getshdrstrndx(elf, &shstrndx);
    std::vector<uint64_t> address(shnum, 0);
    uint64_t offset = 0;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        if ((shdr.sh_flags & (SHF_ALLOC | SHF_EXECINSTR)) != (SHF_ALLOC | SHF_EXECINSTR)) continue;
        const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (name && std::strncmp(name, ".init", 5) == 0) continue;
        const uint64_t align = std::max<uint64_t>(shdr.sh_addralign, 1);
        offset = (offset + align - 1) / align * align;
        const size_t index = elf_ndxscn(scn);
        if (index < shnum) address[index] = base + offset;
        if (sections)
            sections->push_back({shdr.sh_offset, base + offset, shdr.sh_size, shdr.sh_type == SHT_PROGBITS});
        offset += shdr.sh_size;
    }
    return address;
}

struct PltSlot {
    uint64_t address, size;
    std::string name;       // the function the slot jumps to; empty for an IRELATIVE slot
    uint64_t resolver = 0;  // an IRELATIVE slot's addend: its ifunc's resolver (unbiased)
};

// The PLT slots of an executable or shared object: on x86 the slots follow a
// 16-byte header in .plt (or fill .plt.sec, with IBT), on AArch64 a 32-byte
// one; 16 bytes each. Slot k jumps through the k-th GOT entry of the PLT's
// relocations, so the relocations are taken in the order of the GOT entries
// they fill (r_offset), not in the table's order: a linker may list them
// otherwise (libc.so.6 lists its IRELATIVE ones last, their slots come first;
// objdump -d maps them so, perf 6.1 in table order).
std::vector<PltSlot> pltSlots(Elf* elf, Elf_Scn* relocations, const GElf_Shdr& plt, const GElf_Shdr& pltSec) {
    std::vector<PltSlot> out;
    GElf_Ehdr ehdr;
    GElf_Shdr rel;
    if (!relocations || !gelf_getehdr(elf, &ehdr) || !gelf_getshdr(relocations, &rel) || !rel.sh_entsize)
        return out;
    uint64_t header = 0;
    const uint64_t entry = 16;
    if (ehdr.e_machine == EM_X86_64 || ehdr.e_machine == EM_386)
        header = 16;
    else if (ehdr.e_machine == EM_AARCH64)
        header = 32;
    else
        return out;
    uint64_t first = plt.sh_addr + header, end = plt.sh_addr + plt.sh_size;
    if (pltSec.sh_size) first = pltSec.sh_addr, end = pltSec.sh_addr + pltSec.sh_size;
    if (!plt.sh_size && !pltSec.sh_size) return out;
    Elf_Scn* symbols = elf_getscn(elf, rel.sh_link);
    GElf_Shdr symShdr;
    if (!symbols || !gelf_getshdr(symbols, &symShdr)) return out;
    Elf_Data* symData = elf_getdata(symbols, nullptr);
    Elf_Data* data = elf_getdata(relocations, nullptr);
    if (!data || !symData) return out;
    struct Relocation {
        uint64_t got = 0;
        size_t symbol = 0;
        uint32_t type = 0;
        int64_t addend = 0;
    };
    std::vector<Relocation> table;
    const size_t count = rel.sh_size / rel.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
        if (rel.sh_type == SHT_RELA) {
            GElf_Rela r;
            if (gelf_getrela(data, int(i), &r))
                table.push_back(
                    {r.r_offset, GELF_R_SYM(r.r_info), uint32_t(GELF_R_TYPE(r.r_info)), r.r_addend});
        } else {
            GElf_Rel r;
            if (gelf_getrel(data, int(i), &r))
                table.push_back({r.r_offset, GELF_R_SYM(r.r_info), uint32_t(GELF_R_TYPE(r.r_info)), 0});
        }
    }
    std::stable_sort(table.begin(), table.end(),
                     [](const Relocation& a, const Relocation& b) { return a.got < b.got; });
    for (size_t i = 0; i < table.size(); ++i) {
        const uint64_t address = first + i * entry;
        if (address + entry > end) break;
        const Relocation& r = table[i];
        // R_X86_64_IRELATIVE, R_AARCH64_IRELATIVE: no symbol; the addend is
        // the ifunc's resolver, named by the caller after the ifunc there.
        if (!r.symbol && r.addend > 0 &&
            ((ehdr.e_machine == EM_X86_64 && r.type == R_X86_64_IRELATIVE) ||
             (ehdr.e_machine == EM_AARCH64 && r.type == R_AARCH64_IRELATIVE))) {
            out.push_back({address, entry, {}, uint64_t(r.addend)});
            continue;
        }
        GElf_Sym sym;
        if (!r.symbol || !gelf_getsym(symData, int(r.symbol), &sym)) continue;
        const char* name = elf_strptr(elf, symShdr.sh_link, sym.st_name);
        if (name && *name) out.push_back({address, entry, demangleSymbol(name)});
    }
    return out;
}

bool isRelocatable(Elf* elf) {
    GElf_Ehdr ehdr;
    return gelf_getehdr(elf, &ehdr) && ehdr.e_type == ET_REL;
}
}  // namespace

namespace {
// The ELF in a file's .gnu_debugdata section (xz-compressed), decompressed by
// libdwelf from an anonymous file holding the section, while symbols are read.
struct MiniDebugInfo {
    int fd = -1;
    Elf* elf = nullptr;
    Elf_Scn* symtab = nullptr;
    void open(Elf* outer, size_t shstrndx) {
        for (Elf_Scn* scn = elf_nextscn(outer, nullptr); scn; scn = elf_nextscn(outer, scn)) {
            GElf_Shdr shdr;
            if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS) continue;
            const char* name = elf_strptr(outer, shstrndx, shdr.sh_name);
            if (!name || std::strcmp(name, ".gnu_debugdata") != 0) continue;
            Elf_Data* data = elf_rawdata(scn, nullptr);
            if (!data || !data->d_buf || !data->d_size) return;
            fd = ::memfd_create("auxscope-gnu-debugdata", MFD_CLOEXEC);
            if (fd < 0) return;
            const char* p = static_cast<const char*>(data->d_buf);
            for (size_t left = data->d_size; left;) {
                const ssize_t n = ::write(fd, p, left);
                if (n <= 0) return;
                p += n, left -= size_t(n);
            }
            if (::lseek(fd, 0, SEEK_SET) != 0) return;
            elf = dwelf_elf_begin(fd);
            if (!elf || elf_kind(elf) != ELF_K_ELF) return;
            for (Elf_Scn* s = elf_nextscn(elf, nullptr); s; s = elf_nextscn(elf, s)) {
                GElf_Shdr h;
                if (gelf_getshdr(s, &h) && h.sh_type == SHT_SYMTAB) symtab = s;
            }
            return;
        }
    }
    ~MiniDebugInfo() {
        if (elf) elf_end(elf);
        if (fd >= 0) ::close(fd);
    }
};
}  // namespace

Expected<std::unique_ptr<ElfSymbols>> ElfSymbols::load(const std::string& path, FunctionTable& functions,
                                                       const std::string& displayName, int64_t bias,
                                                       std::optional<uint64_t> moduleBase,
                                                       const std::string& symbolFile) {
    static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
    if (!ready) return makeError("libelf: " + std::string(elf_errmsg(-1)));
    if (!symbolFile.empty()) {
        auto segments = elfLoadSegments(path);
        if (!segments) return segments.error();
        auto loaded = load(symbolFile, functions, displayName.empty() ? path : displayName, bias, moduleBase);
        if (!loaded) return loaded.error();
        (*loaded)->segments_.clear();
        for (const ElfLoadSegment& seg : *segments)
            (*loaded)->segments_.push_back({seg.offset, seg.vaddr + uint64_t(bias), seg.fileSize});
        return loaded;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (!elf || elf_kind(elf) != ELF_K_ELF) {
        if (elf) elf_end(elf);
        ::close(fd);
        return makeError(path + ": not an ELF file");
    }
    auto result = std::make_unique<ElfSymbols>();
    // A kernel module: symbols are offsets into their sections, placed as the kernel places them.
    std::vector<uint64_t> sectionAddress;
    if (moduleBase && isRelocatable(elf)) sectionAddress = moduleLayout(elf, *moduleBase, nullptr);
    const bool module = !sectionAddress.empty();
    size_t phnum = 0;
    elf_getphdrnum(elf, &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, int(i), &phdr) && phdr.p_type == PT_LOAD)
            result->segments_.push_back({phdr.p_offset, phdr.p_vaddr + uint64_t(bias), phdr.p_filesz});
    }
    size_t shstrndx = 0;
    elf_getshdrstrndx(elf, &shstrndx);
    Elf_Scn* symtab = nullptr;
    Elf_Scn* dynsym = nullptr;
    std::vector<std::pair<uint64_t, uint64_t>> plts;
    Elf_Scn* relaPlt = nullptr;
    GElf_Shdr plt{}, pltSec{};
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        if (shdr.sh_type == SHT_SYMTAB) symtab = scn;
        if (shdr.sh_type == SHT_DYNSYM) dynsym = scn;
        const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
        if (name && std::strncmp(name, ".plt", 4) == 0 && shdr.sh_size && !module)
            plts.push_back({shdr.sh_addr + uint64_t(bias), shdr.sh_addr + uint64_t(bias) + shdr.sh_size});
        if (name && std::strcmp(name, ".plt") == 0) plt = shdr;
        if (name && std::strcmp(name, ".plt.sec") == 0) pltSec = shdr;
        if (name && (std::strcmp(name, ".rela.plt") == 0 || std::strcmp(name, ".rel.plt") == 0))
            relaPlt = scn;
    }
    const std::string file = displayName.empty() ? path : displayName;
    struct Raw {
        uint64_t start, size;
        const char* name;
        bool global, weak;
        bool label = false;
    };
    std::vector<Raw> raw;
    // A stripped file's MiniDebugInfo (.gnu_debugdata, Fedora's): its .symtab
    // holds the functions .dynsym lacks; both are read, as perf reads them.
    MiniDebugInfo mini;
    if (!symtab && !module) mini.open(elf, shstrndx);
    auto collect = [&](Elf* elf, Elf_Scn* scn) {
        GElf_Shdr shdr;
        gelf_getshdr(scn, &shdr);
        Elf_Data* data = elf_getdata(scn, nullptr);
        size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
        for (size_t i = 0; data && i < count; ++i) {
            GElf_Sym sym;
            if (!gelf_getsym(data, int(i), &sym)) continue;
            int type = GELF_ST_TYPE(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF) continue;
            const bool label = type != STT_FUNC && type != STT_GNU_IFUNC;
            if (label) {
                // perf also takes named labels in code (assembly entry points such as
                // ld.so's _dl_start_user) as functions: STT_NOTYPE, visible, in an
                // executable section. Those inside a sized function are left out
                // below (a label in a function is not a function of its own).
                const int visibility = GELF_ST_VISIBILITY(sym.st_other);
                if (type != STT_NOTYPE || sym.st_shndx == SHN_ABS || sym.st_shndx >= SHN_LORESERVE ||
                    visibility == STV_HIDDEN || visibility == STV_INTERNAL || module)
                    continue;
                GElf_Shdr section;
                Elf_Scn* in = elf_getscn(elf, sym.st_shndx);
                if (!in || !gelf_getshdr(in, &section) || !(section.sh_flags & SHF_EXECINSTR)) continue;
            }
            uint64_t start = sym.st_value + uint64_t(bias);
            if (module) {
                // Offsets into a placed section (0 is a function at its start).
                if (sym.st_shndx >= sectionAddress.size() || !sectionAddress[sym.st_shndx]) continue;
                start = sectionAddress[sym.st_shndx] + sym.st_value;
            } else if (!sym.st_value) {
                continue;
            }
            const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
            if (!name || !*name) continue;
            raw.push_back({start, sym.st_size, name, GELF_ST_BIND(sym.st_info) == STB_GLOBAL,
                           GELF_ST_BIND(sym.st_info) == STB_WEAK, label});
        }
    };
    if (Elf_Scn* scn = symtab ? symtab : dynsym) collect(elf, scn);
    if (mini.symtab) collect(mini.elf, mini.symtab);
    {
        std::vector<std::pair<uint64_t, uint64_t>> sized;
        for (const Raw& r : raw)
            if (!r.label && r.size) sized.push_back({r.start, r.start + r.size});
        std::sort(sized.begin(), sized.end());
        // The largest end among functions starting at or before each one, for the containment test.
        for (size_t i = 1; i < sized.size(); ++i)
            sized[i].second = std::max(sized[i].second, sized[i - 1].second);
        std::erase_if(raw, [&](const Raw& r) {
            if (!r.label) return false;
            auto it = std::upper_bound(sized.begin(), sized.end(), std::pair{r.start, UINT64_MAX});
            return it != sized.begin() && std::prev(it)->second > r.start;
        });
    }
    // Aliases share an address: keep the one perf's symbols__fixup_duplicate
    // keeps (choose_best_symbol), so names read as perf report prints them: a
    // non-zero size, then not weak, then global, then fewer leading
    // underscores, then the longest name.
    std::sort(raw.begin(), raw.end(), [](const Raw& a, const Raw& b) {
        if (a.start != b.start) return a.start < b.start;
        if ((a.size != 0) != (b.size != 0)) return a.size != 0;
        if (a.weak != b.weak) return !a.weak;
        if (a.global != b.global) return a.global;
        const size_t ua = leadingUnderscores(a.name), ub = leadingUnderscores(b.name);
        if (ua != ub) return ua < ub;
        const size_t la = std::strlen(a.name), lb = std::strlen(b.name);
        if (la != lb) return la > lb;
        return std::strcmp(a.name, b.name) < 0;
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
    // Each PLT slot named after the function it jumps to ("sin@plt"), as perf's
    // dso__synthesize_plt_symbols names them. A slot of an IRELATIVE relocation
    // (libc's own calls to its ifuncs: strlen, memcpy) is named after the ifunc
    // whose resolver its addend is ("strlen@plt"; perf 6.1 prints "@plt",
    // later perfs "*ABS*+0x...@plt"). The rest of the PLT (its header, slots
    // nothing names) stays "[plt] FILE".
    for (const PltSlot& slot : pltSlots(elf, relaPlt, plt, pltSec)) {
        std::string name = slot.name;
        if (name.empty()) {
            const uint64_t at = slot.resolver + uint64_t(bias);
            auto it = std::lower_bound(raw.begin(), raw.end(), at,
                                       [](const Raw& r, uint64_t a) { return r.start < a; });
            if (it == raw.end() || it->start != at) continue;
            name = demangleSymbol(it->name);
        }
        result->symbols_.push_back({slot.address + uint64_t(bias), slot.address + uint64_t(bias) + slot.size,
                                    functions.add({name + "@plt", file, slot.address + uint64_t(bias)})});
    }
    for (auto [start, end] : plts)
        result->symbols_.push_back({start, end, functions.add({"[plt] " + baseName(file), file, start})});
    // By start, the wider first where two start together: a lookup finds the narrowest (a PLT slot in its
    // section).
    std::sort(result->symbols_.begin(), result->symbols_.end(), [](const Symbol& a, const Symbol& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::sort(result->rawNames_.begin(), result->rawNames_.end());
    result->unknown_ = functions.add({"[unknown] " + baseName(file), file, 0});
    elf_end(elf);
    ::close(fd);
    return result;
}

namespace {
// What identifies a file's contents for ElfSymbolCache ("" : cannot stat it).
std::string fileIdentity(const std::string& path) {
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return {};
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) +
           ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}
}  // namespace

size_t ElfSymbolCache::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

size_t ElfSymbolCache::misses() const {
    std::lock_guard lock(mutex_);
    return misses_;
}

std::unique_ptr<ElfSymbols> ElfSymbols::shifted(int64_t shift) const {
    auto copy = std::make_unique<ElfSymbols>(*this);
    for (Symbol& s : copy->symbols_)
        s.function = uint32_t(int64_t(s.function) + shift);
    copy->unknown_ = uint32_t(int64_t(copy->unknown_) + shift);
    return copy;
}

Expected<std::unique_ptr<ElfSymbols>> ElfSymbols::load(ElfSymbolCache* cache, const std::string& path,
                                                       FunctionTable& functions,
                                                       const std::string& displayName, int64_t bias,
                                                       std::optional<uint64_t> moduleBase,
                                                       const std::string& symbolFile) {
    if (!cache) return load(path, functions, displayName, bias, moduleBase, symbolFile);
    const std::string identity = fileIdentity(path);
    const std::string symbolIdentity = symbolFile.empty() ? std::string() : fileIdentity(symbolFile);
    if (identity.empty() || (!symbolFile.empty() && symbolIdentity.empty()))
        return load(path, functions, displayName, bias, moduleBase, symbolFile);  // errors are not kept
    std::string key = path;
    for (const std::string& part :
         {identity, displayName, std::to_string(bias),
          moduleBase ? std::to_string(*moduleBase) : std::string("-"), symbolFile, symbolIdentity})
        key += '\0' + part;
    {
        std::lock_guard lock(cache->mutex_);
        for (auto it = cache->entries_.begin(); it != cache->entries_.end(); ++it) {
            if (it->key != key) continue;
            cache->entries_.splice(cache->entries_.begin(), cache->entries_, it);
            ++cache->hits_;
            const uint32_t base = uint32_t(functions.size());
            for (const FunctionInfo& f : it->added)
                functions.add(f);
            return it->symbols->shifted(int64_t(base) - int64_t(it->base));
        }
        ++cache->misses_;
    }
    const uint32_t base = uint32_t(functions.size());
    auto loaded = load(path, functions, displayName, bias, moduleBase, symbolFile);
    if (!loaded) return loaded;
    ElfSymbolCache::Entry entry;
    entry.key = std::move(key);
    entry.base = base;
    for (size_t id = base; id < functions.size(); ++id)
        entry.added.push_back(functions[uint32_t(id)]);
    entry.symbols = std::make_shared<const ElfSymbols>(**loaded);
    std::lock_guard lock(cache->mutex_);
    cache->entries_.push_front(std::move(entry));
    while (cache->entries_.size() > cache->capacity_)
        cache->entries_.pop_back();
    return loaded;
}

Expected<std::unique_ptr<ElfSymbols>> ElfSymbols::loadKallsyms(const std::string& path,
                                                               FunctionTable& functions,
                                                               const std::string& kernelName) {
    FILE* f = std::fopen(path.c_str(), "re");
    if (!f) return makeError(path + ": cannot open: " + std::strerror(errno));
    struct Line {
        uint64_t address;
        bool text;
        std::string name, module;
        size_t order = 0;  // in the listing
    };
    std::vector<Line> lines;
    char* buffer = nullptr;
    size_t capacity = 0;
    bool anyNonZero = false;
    while (getline(&buffer, &capacity, f) > 0) {
        char* end = nullptr;
        uint64_t address = std::strtoull(buffer, &end, 16);
        if (end == buffer || *end != ' ') continue;
        char type = end[1];
        if (!type || end[2] != ' ') continue;
        std::string rest(end + 3);
        while (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r'))
            rest.pop_back();
        Line line{address, type == 't' || type == 'T' || type == 'w' || type == 'W', {}, {}};
        size_t tab = rest.find('\t');
        if (tab != std::string::npos) {
            line.module = rest.substr(tab + 1);
            rest.resize(tab);
        }
        line.name = std::move(rest);
        if (line.name.empty()) continue;
        anyNonZero = anyNonZero || address != 0;
        line.order = lines.size();
        lines.push_back(std::move(line));
    }
    std::free(buffer);
    std::fclose(f);
    if (lines.empty()) return makeError(path + ": no symbols in it (not a kallsyms listing)");
    if (!anyNonZero)
        return makeError(path +
                         ": every address is zero (kptr_restrict): read it as root, or set "
                         "kernel.kptr_restrict=0");
    // By address; among aliases text first, then the one listed last: perf
    // gives every alias but the last no size (symbols__fixup_end: up to the next
    // start, the same address) and keeps the one with a size
    // (choose_best_symbol), so __x64_sys_read, not __ia32_sys_read.
    std::sort(lines.begin(), lines.end(), [](const Line& a, const Line& b) {
        if (a.address != b.address) return a.address < b.address;
        if (a.text != b.text) return a.text;
        return a.order > b.order;
    });
    auto result = std::make_unique<ElfSymbols>();
    std::map<std::string, std::pair<uint64_t, uint64_t>> spans;
    for (size_t i = 0; i < lines.size(); ++i) {
        const Line& l = lines[i];
        result->rawNames_.push_back({l.name, l.address});
        if (!l.module.empty()) {
            auto [it, fresh] = spans.try_emplace(l.module, l.address, l.address);
            if (!fresh) it->second.second = std::max(it->second.second, l.address);
        }
        if (!l.text || !l.address || (i && lines[i - 1].address == l.address && lines[i - 1].text)) continue;
        // Up to the next listed address (any type); the last one gets a page.
        size_t j = i + 1;
        while (j < lines.size() && lines[j].address == l.address)
            ++j;
        uint64_t end = j < lines.size() ? lines[j].address : l.address + 4096;
        // A module's last function: not past the module (the next listed may be far away).
        if (!l.module.empty() && j < lines.size() && lines[j].module != l.module)
            end = std::min(end, l.address + 4096);
        std::string file = l.module.empty() ? kernelName : l.module;
        uint32_t id = functions.add({l.name, file, l.address});
        result->symbols_.push_back({l.address, end, id});
    }
    std::sort(result->rawNames_.begin(), result->rawNames_.end());
    for (auto& [module, span] : spans)
        result->moduleSpans_.push_back({module, span});
    result->unknown_ = functions.add({"[unknown] " + kernelName, kernelName, 0});
    return result;
}

std::optional<std::vector<uint8_t>> buildIdFromNotes(std::span<const uint8_t> notes) {
    size_t at = 0;
    auto align4 = [](size_t n) { return (n + 3) & ~size_t(3); };
    while (at + 12 <= notes.size()) {
        uint32_t namesz, descsz, type;
        std::memcpy(&namesz, notes.data() + at, 4);
        std::memcpy(&descsz, notes.data() + at + 4, 4);
        std::memcpy(&type, notes.data() + at + 8, 4);
        size_t name = at + 12, desc = name + align4(namesz), next = desc + align4(descsz);
        if (next > notes.size() || next <= at) break;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(notes.data() + name, "GNU", 4) == 0)
            return std::vector<uint8_t>(notes.data() + desc, notes.data() + desc + descsz);
        at = next;
    }
    return std::nullopt;
}

namespace {
// An ELF opened with libelf, closed on scope exit.
struct ElfFile {
    int fd = -1;
    Elf* elf = nullptr;
    explicit ElfFile(const std::string& path) {
        static const bool ready = elf_version(EV_CURRENT) != EV_NONE;
        if (!ready) return;
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        elf = elf_begin(fd, ELF_C_READ, nullptr);
        if (elf && elf_kind(elf) != ELF_K_ELF) elf_end(elf), elf = nullptr;
    }
    ~ElfFile() {
        if (elf) elf_end(elf);
        if (fd >= 0) ::close(fd);
    }
};
}  // namespace

namespace {
std::optional<std::vector<uint8_t>> buildIdOf(Elf* elf) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE) continue;
        Elf_Data* data = elf_getdata(scn, nullptr);
        if (!data || !data->d_buf) continue;
        if (auto id = buildIdFromNotes({static_cast<const uint8_t*>(data->d_buf), data->d_size})) return id;
    }
    return std::nullopt;
}
}  // namespace

std::optional<std::vector<uint8_t>> elfBuildId(const std::string& path) {
    ElfFile file(path);
    if (!file.elf) return std::nullopt;
    return buildIdOf(file.elf);
}

std::string elfSeparateDebugFile(const std::string& path, const std::string& root) {
    return elfSeparateDebugFile(path, std::vector<std::string>{root});
}

bool elfHasSymtab(const std::string& path) {
    ElfFile file(path);
    if (!file.elf) return false;
    for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB) return true;
    }
    return false;
}

std::string elfSeparateDebugFile(const std::string& path, const std::vector<std::string>& roots,
                                 bool forDwarf) {
    ElfFile file(path);
    if (!file.elf) return {};
    size_t shstrndx = 0;
    elf_getshdrstrndx(file.elf, &shstrndx);
    std::string debuglink;
    for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        if (shdr.sh_type == SHT_SYMTAB && !forDwarf) return {};  // its own symbols are all there is to read
        const char* name = elf_strptr(file.elf, shstrndx, shdr.sh_name);
        if (forDwarf && name && shdr.sh_type != SHT_NOBITS && std::strcmp(name, ".debug_info") == 0)
            return {};  // its own DWARF
        if (name && std::strcmp(name, ".gnu_debuglink") == 0) {
            Elf_Data* data = elf_getdata(scn, nullptr);
            if (data && data->d_buf && data->d_size)
                debuglink.assign(static_cast<const char*>(data->d_buf),
                                 strnlen(static_cast<const char*>(data->d_buf), data->d_size));
        }
    }
    const auto id = buildIdOf(file.elf);
    auto matches = [&](const std::string& candidate) {
        if (candidate == path) return false;
        ElfFile debug(candidate);
        if (!debug.elf) return false;
        const auto theirs = buildIdOf(debug.elf);
        return !id || !theirs || *id == *theirs;
    };
    if (id && id->size() >= 2) {
        static const char* hex = "0123456789abcdef";
        std::string text;
        for (uint8_t b : *id)
            text += hex[b >> 4], text += hex[b & 15];
        for (const std::string& root : roots) {
            const std::string candidate =
                root + "/.build-id/" + text.substr(0, 2) + "/" + text.substr(2) + ".debug";
            if (matches(candidate)) return candidate;
        }
    }
    if (!debuglink.empty()) {
        const size_t slash = path.rfind('/');
        const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
        std::vector<std::string> candidates = {dir + "/" + debuglink, dir + "/.debug/" + debuglink};
        for (const std::string& root : roots)
            candidates.push_back(root + dir + "/" + debuglink);
        for (const std::string& root : roots)
            candidates.push_back(root + "/" + debuglink);  // a debug folder holding the file by name
        for (const std::string& candidate : candidates)
            if (matches(candidate)) return candidate;
    }
    return {};
}

Expected<std::vector<ElfLoadSegment>> elfLoadSegments(const std::string& path) {
    ElfFile file(path);
    if (file.fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    if (!file.elf) return makeError(path + ": not an ELF file");
    std::vector<ElfLoadSegment> out;
    size_t phnum = 0;
    elf_getphdrnum(file.elf, &phnum);
    for (size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(file.elf, int(i), &phdr) && phdr.p_type == PT_LOAD)
            out.push_back({phdr.p_offset, phdr.p_vaddr, phdr.p_filesz, (phdr.p_flags & PF_X) != 0});
    }
    return out;
}

Expected<std::vector<ElfModuleSection>> elfModuleSections(const std::string& path, uint64_t base) {
    ElfFile file(path);
    if (file.fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    if (!file.elf) return makeError(path + ": not an ELF file");
    if (!isRelocatable(file.elf)) return makeError(path + ": not a kernel module (ELF type is not ET_REL)");
    std::vector<ElfModuleSection> sections;
    moduleLayout(file.elf, base, &sections);
    return sections;
}

std::optional<uint64_t> elfSymbolValue(const std::string& path, std::string_view name) {
    ElfFile file(path);
    if (!file.elf) return std::nullopt;
    Elf_Scn* found = nullptr;
    for (Elf_Scn* scn = elf_nextscn(file.elf, nullptr); scn; scn = elf_nextscn(file.elf, scn)) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr)) continue;
        if (shdr.sh_type == SHT_SYMTAB) found = scn;
        if (shdr.sh_type == SHT_DYNSYM && !found) found = scn;
    }
    if (!found) return std::nullopt;
    GElf_Shdr shdr;
    gelf_getshdr(found, &shdr);
    Elf_Data* data = elf_getdata(found, nullptr);
    size_t count = shdr.sh_entsize ? shdr.sh_size / shdr.sh_entsize : 0;
    for (size_t i = 0; data && i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, int(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
        const char* n = elf_strptr(file.elf, shdr.sh_link, sym.st_name);
        if (n && name == n) return sym.st_value;
    }
    return std::nullopt;
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
