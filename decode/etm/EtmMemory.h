// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where OpenCSD reads the traced code from. The decoder asks for the opcodes of
// every instruction it walks, so EtmMemoryCache sits between it and whatever
// reads files (snapshot dumps here; ELF images by MMAP2 for perf.data later):
// a hit costs a hash and a memcpy, and the file layer sees one read per page.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::etm {

// OpenCSD's ocsd_mem_space_acc_t bits: the security state and exception level
// the code ran at.
enum EtmMemSpace : uint8_t {
    kMemEl1S = 0x1,
    kMemEl1N = 0x2,
    kMemEl2N = 0x4,
    kMemEl3 = 0x8,
    kMemEl2S = 0x10,
    kMemSecure = 0x19,
    kMemNonSecure = 0x6,
    kMemAny = 0x1f,
};
// A snapshot's dump `space=` value ("EL1N", "EL2", "S", "ANY", ...; empty: any).
// False for a name OpenCSD does not know.
bool etmMemSpaceFromName(const std::string& name, uint8_t& space);

// The code the trace runs through. read() copies up to out.size() bytes at
// `address` and returns how many it could: fewer where the image ends, 0 where
// nothing is mapped (the decoder then reports the address as not accessible).
class EtmMemory {
public:
    virtual ~EtmMemory() = default;
    virtual size_t read(uint64_t address, uint8_t traceId, uint8_t space, std::span<uint8_t> out) = 0;
    // The image's bytes from `address` on, where they lie in memory that stays
    // put until version() changes (a mapped file, a loaded dump): the decoder
    // then copies from them directly. Empty: use read().
    virtual std::span<const uint8_t> view(uint64_t /*address*/, uint8_t /*traceId*/, uint8_t /*space*/) {
        return {};
    }
    // Changes whenever what read() or view() give may have (another process's images).
    uint64_t version() const { return version_; }

protected:
    void changed() { ++version_; }

private:
    uint64_t version_ = 0;
};

// Fixed images: byte ranges at addresses, from files or buffers. The first
// region added wins where regions overlap.
class EtmImageMemory final : public EtmMemory {
public:
    // `bytes` [offset, offset+length) at `address`; length 0: to the end of bytes.
    Expected<void> addBuffer(uint64_t address, std::shared_ptr<const std::vector<uint8_t>> bytes,
                             uint64_t offset, uint64_t length, uint8_t space = kMemAny,
                             std::string name = {});
    // A file (read once, shared between regions of the same path).
    Expected<void> addFile(uint64_t address, const std::string& path, uint64_t offset, uint64_t length,
                           uint8_t space = kMemAny);

    size_t read(uint64_t address, uint8_t traceId, uint8_t space, std::span<uint8_t> out) override;
    std::span<const uint8_t> view(uint64_t address, uint8_t traceId, uint8_t space) override;

    struct Region {
        uint64_t address = 0, size = 0;
        uint8_t space = kMemAny;
        std::string name;
        std::shared_ptr<const std::vector<uint8_t>> bytes;
        uint64_t offset = 0;
    };
    const std::vector<Region>& regions() const { return regions_; }

private:
    std::vector<Region> regions_;  // sorted by address
    std::vector<std::pair<std::string, std::shared_ptr<const std::vector<uint8_t>>>> files_;
};

// A page cache in front of another EtmMemory, keyed by trace ID, memory space
// and page. Call invalidate() when what the inner memory returns changes (a new
// process on that trace ID, a module loaded).
class EtmMemoryCache final : public EtmMemory {
public:
    explicit EtmMemoryCache(EtmMemory& inner, size_t pages = 256);
    size_t read(uint64_t address, uint8_t traceId, uint8_t space, std::span<uint8_t> out) override;
    std::span<const uint8_t> view(uint64_t address, uint8_t traceId, uint8_t space) override {
        return inner_.view(address, traceId, space);
    }
    void invalidate();
    void invalidate(uint8_t traceId);

    struct Stats {
        uint64_t hits = 0, misses = 0, notMapped = 0;  // notMapped: answered from the miss table
    };
    const Stats& stats() const { return stats_; }

    static constexpr uint64_t kPageSize = 4096;

private:
    struct Page {
        uint64_t base = ~0ull;  // page address; ~0: empty
        uint8_t traceId = 0, space = 0;
        uint32_t from = 0, to = 0;  // valid bytes [from, to) within the page
        std::vector<uint8_t> bytes;
    };
    Page& slot(uint64_t base, uint8_t traceId, uint8_t space);

    // Addresses the inner memory has nothing at: the decoder asks again and again
    // for code it cannot read (until the next address packet).
    struct Miss {
        uint64_t address = ~0ull;
        uint8_t traceId = 0, space = 0;
    };
    static constexpr size_t kMisses = 64;

    EtmMemory& inner_;
    std::vector<Page> pages_;
    Miss misses_[kMisses];
    Stats stats_;
};

}  // namespace auxscope::etm
