// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A perf data ring: one user page (perf_event_mmap_page) followed by 2^n data
// pages, mapped read-write so that we own data_tail. data_head is read with
// acquire semantics (pairs with the kernel's store after writing records) and
// data_tail is written with release semantics (the kernel may reuse the space
// only after our reads of it are done).
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

#include "MappedRegion.h"
#include "Result.h"

namespace auxscope {

class DataRing {
public:
    DataRing() = default;
    DataRing(DataRing&& o) noexcept { *this = static_cast<DataRing&&>(o); }
    DataRing& operator=(DataRing&& o) noexcept;
    DataRing(const DataRing&) = delete;
    DataRing& operator=(const DataRing&) = delete;

    // `dataPages` must be a power of two.
    static Expected<DataRing> map(int fd, size_t dataPages);
    // A ring over memory laid out like the kernel's mapping but not mapped from a
    // perf fd (the simulated AUX producer's pages): the same reading code drains it.
    // Not owned: never unmapped. `size` must be a power of two.
    static DataRing view(perf_event_mmap_page* meta, const uint8_t* data, uint64_t size);

    uint64_t head() const { return __atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE); }
    uint64_t tail() const { return meta_->data_tail; }
    void setTail(uint64_t tail) { __atomic_store_n(&meta_->data_tail, tail, __ATOMIC_RELEASE); }
    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    const perf_event_mmap_page* meta() const { return meta_; }
    // Writable user page: AuxRing sets aux_offset/aux_size through it before mapping the AUX area.
    perf_event_mmap_page* userPage() const { return meta_; }
    bool mapped() const { return meta_ != nullptr; }

private:
    perf_event_mmap_page* meta_ = nullptr;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    MappedRegion map_;  // empty: a view, not owned
};

// Picks a power-of-two page count >= `pages` (at least 1).
size_t roundUpPow2(size_t pages);
size_t pageSize();

}  // namespace auxscope
