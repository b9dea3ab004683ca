// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One mmap'd region, unmapped when its owner goes away.
//
// Why: the perf rings (DataRing, AuxRing, BackwardRing), the simulated producer's
// pages and SinkQueue's buffer each used to keep a raw address and length and
// call munmap by hand in a destructor and in a move-assignment. This is that
// ownership written once: move-only, munmap in the destructor and when a
// move-assignment replaces a region, nothing when empty or moved from. Owners
// keep their own pointers into the region (user page, data area, AUX area) and
// their own error messages; this type only owns the address and length.
// (Not "Mapping": decode/sideband has a Mapping, a process's memory map entry.)
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "Result.h"

namespace auxscope {

class MappedRegion {
public:
    MappedRegion() = default;
    MappedRegion(MappedRegion&& o) noexcept
        : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
    MappedRegion& operator=(MappedRegion&& o) noexcept;
    MappedRegion(const MappedRegion&) = delete;
    MappedRegion& operator=(const MappedRegion&) = delete;
    ~MappedRegion() { reset(); }

    // mmap(nullptr, length, prot, flags, fd, offset). On failure the error says
    // "mmap of <length> bytes at offset <offset> failed: <strerror>", and, where
    // `errnoOut` is given, *errnoOut is the errno (callers that explain particular
    // causes, e.g. the locked-memory budget, switch on it).
    static Expected<MappedRegion> map(int fd, size_t length, int prot, int flags, off_t offset = 0,
                                      int* errnoOut = nullptr);

    void* data() const { return addr_; }
    uint8_t* bytes() const { return static_cast<uint8_t*>(addr_); }
    size_t size() const { return len_; }
    bool mapped() const { return addr_ != nullptr; }
    explicit operator bool() const { return mapped(); }

    // Gives up ownership: returns the address and length, which the caller must
    // munmap; this MappedRegion is empty afterwards.
    std::pair<void*, size_t> release() noexcept {
        return {std::exchange(addr_, nullptr), std::exchange(len_, 0)};
    }
    // Unmaps now (if anything is mapped); empty afterwards.
    void reset() noexcept;

private:
    void* addr_ = nullptr;
    size_t len_ = 0;
};

}  // namespace auxscope
