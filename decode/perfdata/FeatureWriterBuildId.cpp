// SPDX-License-Identifier: GPL-3.0-or-later
// Build-ids for HEADER_BUILD_ID: the NT_GNU_BUILD_ID note of ELF files (libelf)
// and of the running kernel (/sys/kernel/notes).
#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "perfdata/FeatureWriter.h"

namespace auxscope {
namespace {

// Walks a buffer of ELF notes (4-byte aligned name and descriptor).
std::optional<std::vector<uint8_t>> findGnuBuildId(const uint8_t* p, size_t n) {
    size_t off = 0;
    while (off + 12 <= n) {
        uint32_t namesz, descsz, type;
        std::memcpy(&namesz, p + off, 4);
        std::memcpy(&descsz, p + off + 4, 4);
        std::memcpy(&type, p + off + 8, 4);
        off += 12;
        const size_t nameAt = off;
        off += (size_t(namesz) + 3) & ~size_t(3);
        const size_t descAt = off;
        off += (size_t(descsz) + 3) & ~size_t(3);
        if (off > n) break;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && std::memcmp(p + nameAt, "GNU", 4) == 0 && descsz > 0)
            return std::vector<uint8_t>(p + descAt, p + descAt + descsz);
    }
    return std::nullopt;
}

std::optional<std::vector<uint8_t>> fromData(Elf_Data* data) {
    if (!data || !data->d_buf) return std::nullopt;
    GElf_Nhdr nhdr;
    size_t off = 0, nameOff = 0, descOff = 0;
    while ((off = gelf_getnote(data, off, &nhdr, &nameOff, &descOff)) > 0) {
        auto base = static_cast<const uint8_t*>(data->d_buf);
        if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
            std::memcmp(base + nameOff, "GNU", 4) == 0 && nhdr.n_descsz > 0)
            return std::vector<uint8_t>(base + descOff, base + descOff + nhdr.n_descsz);
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::vector<uint8_t>> FeatureWriter::elfBuildId(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return std::nullopt;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::optional<std::vector<uint8_t>> id;
    if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
        if (elf_kind(elf) == ELF_K_ELF) {
            // Note sections first; program headers for files without section headers.
            for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn && !id; scn = elf_nextscn(elf, scn)) {
                GElf_Shdr shdr;
                if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
                    id = fromData(elf_getdata(scn, nullptr));
            }
            size_t phnum = 0;
            if (!id && elf_getphdrnum(elf, &phnum) == 0) {
                for (size_t i = 0; i < phnum && !id; ++i) {
                    GElf_Phdr ph;
                    if (gelf_getphdr(elf, int(i), &ph) && ph.p_type == PT_NOTE)
                        id = fromData(elf_getdata_rawchunk(elf, off_t(ph.p_offset), ph.p_filesz, ELF_T_NHDR));
                }
            }
        }
        elf_end(elf);
    }
    close(fd);
    return id;
}

std::optional<std::vector<uint8_t>> FeatureWriter::kernelBuildId() {
    std::ifstream in("/sys/kernel/notes", std::ios::binary);
    if (!in) return std::nullopt;
    std::vector<uint8_t> notes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return findGnuBuildId(notes.data(), notes.size());
}

}  // namespace auxscope
