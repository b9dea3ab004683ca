// SPDX-License-Identifier: GPL-3.0-or-later
#include "UsdtProbes.h"

#include <endian.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

namespace auxscope {
namespace {

constexpr uint32_t kStapsdtNoteType = 3;

struct Load {
    uint64_t vaddr, offset, filesz;
};

// The file offset of a virtual address, through the PT_LOAD segment whose file
// contents hold it; false when none does.
bool fileOffsetOf(const std::vector<Load>& loads, uint64_t addr, uint64_t& out) {
    for (const Load& l : loads)
        if (addr >= l.vaddr && addr - l.vaddr < l.filesz) {
            out = addr - l.vaddr + l.offset;
            return true;
        }
    return false;
}

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
    return b;
}

}  // namespace

Expected<std::vector<UsdtProbe>> readUsdtProbes(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return makeError("libelf is unusable");
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError("cannot read '" + path + "': " + std::strerror(errno));
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    auto done = [&](Expected<std::vector<UsdtProbe>> r) {
        if (elf) elf_end(elf);
        close(fd);
        return r;
    };
    if (!elf || elf_kind(elf) != ELF_K_ELF) return done(makeError("'" + path + "' is not an ELF file"));
    GElf_Ehdr eh;
    if (!gelf_getehdr(elf, &eh)) return done(makeError("'" + path + "': unreadable ELF header"));
    const bool is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
    const bool little = eh.e_ident[EI_DATA] == ELFDATA2LSB;
    const size_t addrSize = is64 ? 8 : 4;

    std::vector<Load> loads;
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) == 0)
        for (size_t i = 0; i < phnum; ++i) {
            GElf_Phdr ph;
            if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_LOAD)
                loads.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
        }
    size_t shstrndx = 0;
    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        return done(makeError("'" + path + "': no section name table"));

    Elf_Scn* notes = nullptr;
    bool haveBase = false;
    uint64_t baseAddr = 0;
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
        if (!name) continue;
        if (sh.sh_type == SHT_NOTE && std::strcmp(name, ".note.stapsdt") == 0) notes = scn;
        if (std::strcmp(name, ".stapsdt.base") == 0) haveBase = true, baseAddr = sh.sh_addr;
    }
    std::vector<UsdtProbe> out;
    if (!notes) return done(out);
    Elf_Data* data = elf_getdata(notes, nullptr);
    if (!data) return done(out);
    auto readAddr = [&](const uint8_t* p) {
        uint64_t v = 0;
        if (is64) {
            std::memcpy(&v, p, 8);
            v = little ? le64toh(v) : be64toh(v);
        } else {
            uint32_t w = 0;
            std::memcpy(&w, p, 4);
            v = little ? le32toh(w) : be32toh(w);
        }
        return v;
    };
    GElf_Nhdr nh;
    size_t nameOff = 0, descOff = 0;
    for (size_t off = 0; (off = gelf_getnote(data, off, &nh, &nameOff, &descOff)) > 0;) {
        if (nh.n_type != kStapsdtNoteType || nh.n_namesz != 8 ||
            std::memcmp(static_cast<const char*>(data->d_buf) + nameOff, "stapsdt", 8) != 0)
            continue;
        const uint8_t* d = static_cast<const uint8_t*>(data->d_buf) + descOff;
        const size_t n = nh.n_descsz;
        if (n < 3 * addrSize + 3)
            return done(makeError("'" + path + "': a .note.stapsdt note of " + std::to_string(n) +
                                  " bytes is too short for a probe"));
        UsdtProbe p;
        p.address = readAddr(d);
        const uint64_t linkBase = readAddr(d + addrSize);
        p.semaphoreAddress = readAddr(d + 2 * addrSize);
        // Three strings, each NUL-terminated inside the descriptor.
        std::string* fields[3] = {&p.provider, &p.name, &p.args};
        size_t pos = 3 * addrSize;
        for (std::string* f : fields) {
            const void* nul = std::memchr(d + pos, 0, n - pos);
            if (!nul)
                return done(makeError("'" + path + "': a .note.stapsdt note's strings are not terminated"));
            const size_t len = size_t(static_cast<const uint8_t*>(nul) - (d + pos));
            f->assign(reinterpret_cast<const char*>(d + pos), len);
            pos += len + 1;
            if (pos > n && f != fields[2])
                return done(makeError("'" + path + "': a .note.stapsdt note ends inside its strings"));
        }
        if (haveBase && linkBase) {
            // Moved after the link: both addresses move with .stapsdt.base.
            p.address += baseAddr - linkBase;
            if (p.semaphoreAddress) p.semaphoreAddress += baseAddr - linkBase;
        }
        if (!fileOffsetOf(loads, p.address, p.fileOffset))
            return done(makeError("'" + path + "': USDT probe " + p.fullName() + " at " + hex(p.address) +
                                  " is outside every loaded segment"));
        if (p.semaphoreAddress && !fileOffsetOf(loads, p.semaphoreAddress, p.semaphoreOffset))
            return done(makeError("'" + path + "': the semaphore of USDT probe " + p.fullName() +
                                  " is outside the file's loaded contents"));
        out.push_back(std::move(p));
    }
    return done(out);
}

std::string listUsdtProbeNames(const std::vector<UsdtProbe>& probes, size_t max) {
    std::set<std::string> seen;
    std::string out;
    size_t listed = 0;
    for (const UsdtProbe& p : probes) {
        if (!seen.insert(p.fullName()).second) continue;
        if (listed == max) {
            out += ", ...";
            break;
        }
        out += (listed++ ? ", " : "") + p.fullName();
    }
    return out;
}

}  // namespace auxscope
