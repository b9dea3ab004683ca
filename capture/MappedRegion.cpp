// SPDX-License-Identifier: GPL-3.0-or-later
#include "MappedRegion.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace auxscope {

MappedRegion& MappedRegion::operator=(MappedRegion&& o) noexcept {
    if (this != &o) {
        reset();
        addr_ = std::exchange(o.addr_, nullptr);
        len_ = std::exchange(o.len_, 0);
    }
    return *this;
}

void MappedRegion::reset() noexcept {
    if (addr_) munmap(addr_, len_);
    addr_ = nullptr;
    len_ = 0;
}

Expected<MappedRegion> MappedRegion::map(int fd, size_t length, int prot, int flags, off_t offset,
                                         int* errnoOut) {
    void* p = mmap(nullptr, length, prot, flags, fd, offset);
    if (p == MAP_FAILED) {
        const int err = errno;
        if (errnoOut) *errnoOut = err;
        return makeError("mmap of " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
                         " failed: " + std::strerror(err));
    }
    if (errnoOut) *errnoOut = 0;
    MappedRegion m;
    m.addr_ = p;
    m.len_ = length;
    return m;
}

}  // namespace auxscope
