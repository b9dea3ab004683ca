// SPDX-License-Identifier: GPL-3.0-or-later
#include "DataRing.h"

#include <sys/mman.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

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
        map_ = std::move(o.map_);  // unmaps ours, if we own one
        meta_ = std::exchange(o.meta_, nullptr);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
    }
    return *this;
}

DataRing DataRing::view(perf_event_mmap_page* meta, const uint8_t* data, uint64_t size) {
    DataRing r;
    r.meta_ = meta;
    r.data_ = data;
    r.size_ = size;
    return r;
}

Expected<DataRing> DataRing::map(int fd, size_t dataPages) {
    if (dataPages == 0 || (dataPages & (dataPages - 1)) != 0)
        return makeError("data ring size must be a power of two pages, got " + std::to_string(dataPages));
    const size_t len = (1 + dataPages) * pageSize();
    int err = 0;
    Expected<MappedRegion> m = MappedRegion::map(fd, len, PROT_READ | PROT_WRITE, MAP_SHARED, 0, &err);
    if (!m) {
        std::string msg = "cannot map a data ring of " + std::to_string(dataPages) + " pages (" +
                          std::to_string(dataPages * pageSize() / 1024) + " KiB): " + std::strerror(err);
        if (err == EPERM || err == ENOMEM)
            msg +=
                ". The locked-memory budget for perf rings is exceeded: use fewer pages (-m), run as root, "
                "or raise kernel.perf_event_mlock_kb / 'ulimit -l'.";
        return makeError(msg);
    }
    DataRing r;
    r.map_ = std::move(*m);
    const uint8_t* p = r.map_.bytes();
    r.meta_ = static_cast<perf_event_mmap_page*>(r.map_.data());
    r.data_ = p + pageSize();
    r.size_ = dataPages * pageSize();
    // Kernels that publish data_offset/data_size say where the data area is.
    if (r.meta_->data_size != 0) {
        r.data_ = p + r.meta_->data_offset;
        r.size_ = r.meta_->data_size;
    }
    return r;
}

}  // namespace auxscope
