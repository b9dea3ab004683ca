// SPDX-License-Identifier: GPL-3.0-or-later
#include "DataRing.h"

#include <sys/mman.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <string>

namespace auxscope {

size_t pageSize() {
    static const size_t ps = size_t(sysconf(_SC_PAGESIZE));
    return ps;
}

size_t roundUpPow2(size_t pages) {
    size_t p = 1;
    while (p < pages)
        p <<= 1;
    return p;
}

DataRing& DataRing::operator=(DataRing&& o) noexcept {
    if (this != &o) {
        if (meta_ && mapLen_) munmap(meta_, mapLen_);
        meta_ = o.meta_;
        data_ = o.data_;
        size_ = o.size_;
        mapLen_ = o.mapLen_;
        o.meta_ = nullptr;
        o.data_ = nullptr;
        o.size_ = o.mapLen_ = 0;
    }
    return *this;
}

DataRing::~DataRing() {
    if (meta_ && mapLen_) munmap(meta_, mapLen_);
}

DataRing DataRing::view(perf_event_mmap_page* meta, const uint8_t* data, uint64_t size) {
    DataRing r;
    r.meta_ = meta;
    r.data_ = data;
    r.size_ = size;
    r.mapLen_ = 0;
    return r;
}

Expected<DataRing> DataRing::map(int fd, size_t dataPages) {
    if (dataPages == 0 || (dataPages & (dataPages - 1)) != 0)
        return makeError("data ring size must be a power of two pages, got " + std::to_string(dataPages));
    const size_t len = (1 + dataPages) * pageSize();
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        std::string msg = "cannot map a data ring of " + std::to_string(dataPages) + " pages (" +
                          std::to_string(dataPages * pageSize() / 1024) + " KiB): " + std::strerror(err);
        if (err == EPERM || err == ENOMEM)
            msg +=
                ". The locked-memory budget for perf rings is exceeded: use fewer pages (-m), run as root, "
                "or raise kernel.perf_event_mlock_kb / 'ulimit -l'.";
        return makeError(msg);
    }
    DataRing r;
    r.meta_ = static_cast<perf_event_mmap_page*>(p);
    r.data_ = static_cast<const uint8_t*>(p) + pageSize();
    r.size_ = dataPages * pageSize();
    r.mapLen_ = len;
    // Kernels that publish data_offset/data_size say where the data area is.
    if (r.meta_->data_size != 0) {
        r.data_ = static_cast<const uint8_t*>(p) + r.meta_->data_offset;
        r.size_ = r.meta_->data_size;
    }
    return r;
}

}  // namespace auxscope
