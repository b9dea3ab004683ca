// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmMemory.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace auxscope::etm {

bool etmMemSpaceFromName(const std::string& name, uint8_t& space) {
    // The names OpenCSD's snapshot reader knows (older ones included).
    static const std::pair<const char*, uint8_t> names[] = {
        {"EL1S", kMemEl1S}, {"EL1N", kMemEl1N}, {"EL2", kMemEl2N},    {"EL2N", kMemEl2N}, {"EL2S", kMemEl2S},
        {"EL3", kMemEl3},   {"S", kMemSecure},  {"N", kMemNonSecure}, {"ANY", kMemAny},   {"H", kMemEl2N},
        {"P", kMemEl1N},    {"NP", kMemEl1N},   {"SP", kMemEl1S},
    };
    if (name.empty()) {
        space = kMemAny;
        return true;
    }
    for (const auto& [n, s] : names)
        if (name == n) {
            space = s;
            return true;
        }
    return false;
}

Expected<void> EtmImageMemory::addBuffer(uint64_t address, std::shared_ptr<const std::vector<uint8_t>> bytes,
                                         uint64_t offset, uint64_t length, uint8_t space, std::string name) {
    if (!bytes) return makeError(name + ": no bytes");
    if (offset > bytes->size())
        return makeError(name + ": offset 0x" + std::to_string(offset) + " is past its end (" +
                         std::to_string(bytes->size()) + " bytes)");
    const uint64_t avail = bytes->size() - offset;
    if (length == 0) length = avail;
    if (length > avail) length = avail;  // OpenCSD reads what the file has
    if (length == 0) return makeError(name + ": empty region");
    if (address + (length - 1) < address)
        return makeError(name + ": region wraps past the end of the address space");
    Region r{address, length, space, std::move(name), std::move(bytes), offset};
    auto it = std::lower_bound(regions_.begin(), regions_.end(), address,
                               [](const Region& a, uint64_t addr) { return a.address < addr; });
    auto overlaps = [&](const Region& o) {
        return o.address <= r.address + (r.size - 1) && r.address <= o.address + (o.size - 1);
    };
    for (auto n : {it, it == regions_.begin() ? regions_.end() : it - 1}) {
        if (n == regions_.end() || !overlaps(*n)) continue;
        if (n->address == r.address && n->size == r.size && n->bytes == r.bytes && n->offset == r.offset) {
            n->space |= r.space;  // the same region again (another core's dump of it)
            return {};
        }
        char buf[160];
        std::snprintf(
            buf, sizeof buf, "[0x%llx, 0x%llx) overlaps %s at [0x%llx, 0x%llx); the first one is kept",
            static_cast<unsigned long long>(r.address), static_cast<unsigned long long>(r.address + r.size),
            n->name.c_str(), static_cast<unsigned long long>(n->address),
            static_cast<unsigned long long>(n->address + n->size));
        return makeError(r.name + ": " + buf);
    }
    regions_.insert(it, std::move(r));
    return {};
}

Expected<void> EtmImageMemory::addFile(uint64_t address, const std::string& path, uint64_t offset,
                                       uint64_t length, uint8_t space) {
    std::shared_ptr<const std::vector<uint8_t>> bytes;
    for (const auto& [p, b] : files_)
        if (p == path) bytes = b;
    if (!bytes) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec))
            return makeError(path + ": memory image missing or not a file");
        std::ifstream in(path, std::ios::binary);
        if (!in) return makeError(path + ": cannot open: " + std::strerror(errno));
        auto v = std::make_shared<std::vector<uint8_t>>();
        v->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        if (in.bad()) return makeError(path + ": read error");
        bytes = v;
        files_.emplace_back(path, bytes);
    }
    return addBuffer(address, bytes, offset, length, space, path);
}

size_t EtmImageMemory::read(uint64_t address, uint8_t, uint8_t space, std::span<uint8_t> out) {
    size_t done = 0;
    auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                               [](uint64_t addr, const Region& r) { return addr < r.address; });
    if (it == regions_.begin()) return 0;
    --it;
    while (done < out.size() && it != regions_.end()) {
        const uint64_t a = address + done;
        if (a < it->address || a - it->address >= it->size || !(it->space & space)) break;
        const uint64_t off = a - it->address;
        const size_t n = static_cast<size_t>(std::min<uint64_t>(out.size() - done, it->size - off));
        std::memcpy(out.data() + done, it->bytes->data() + it->offset + off, n);
        done += n;
        ++it;
    }
    return done;
}

std::span<const uint8_t> EtmImageMemory::view(uint64_t address, uint8_t, uint8_t space) {
    auto it = std::upper_bound(regions_.begin(), regions_.end(), address,
                               [](uint64_t addr, const Region& r) { return addr < r.address; });
    if (it == regions_.begin()) return {};
    --it;
    if (address - it->address >= it->size || !(it->space & space)) return {};
    const uint64_t off = address - it->address;
    return {it->bytes->data() + it->offset + off, size_t(it->size - off)};
}

EtmMemoryCache::EtmMemoryCache(EtmMemory& inner, size_t pages)
    : inner_(inner), pages_(std::max<size_t>(pages, 1)) {}

EtmMemoryCache::Page& EtmMemoryCache::slot(uint64_t base, uint8_t traceId, uint8_t space) {
    uint64_t h = (base / kPageSize) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t(traceId) << 8 | space) * 0xC2B2AE3D27D4EB4Full;
    return pages_[(h >> 32) % pages_.size()];
}

size_t EtmMemoryCache::read(uint64_t address, uint8_t traceId, uint8_t space, std::span<uint8_t> out) {
    size_t done = 0;
    while (done < out.size()) {
        const uint64_t a = address + done;
        const uint64_t base = a & ~(kPageSize - 1);
        const auto off = static_cast<uint32_t>(a - base);
        Page& p = slot(base, traceId, space);
        if (!(p.base == base && p.traceId == traceId && p.space == space && off >= p.from && off < p.to)) {
            Miss& m = misses_[(a >> 1) % kMisses];
            if (m.address == a && m.traceId == traceId && m.space == space) {
                ++stats_.notMapped;
                return done;
            }
            ++stats_.misses;
            if (p.bytes.size() != kPageSize) p.bytes.resize(kPageSize);
            p.base = ~0ull;
            // The whole page where the image covers it, else from the address on
            // (an image that starts inside the page).
            size_t n = inner_.read(base, traceId, space, std::span<uint8_t>(p.bytes.data(), kPageSize));
            uint32_t from = 0;
            if (n <= off) {
                from = off;
                n = inner_.read(a, traceId, space, std::span<uint8_t>(p.bytes.data() + off, kPageSize - off));
                if (n == 0) {
                    m = Miss{a, traceId, space};
                    return done;
                }
                n += off;
            }
            p.base = base;
            p.traceId = traceId;
            p.space = space;
            p.from = from;
            p.to = static_cast<uint32_t>(n);
        } else {
            ++stats_.hits;
        }
        const size_t take = std::min<size_t>(out.size() - done, p.to - off);
        std::memcpy(out.data() + done, p.bytes.data() + off, take);
        done += take;
        if (p.to < kPageSize) break;  // the image ends inside this page
    }
    return done;
}

void EtmMemoryCache::invalidate() {
    changed();
    for (auto& p : pages_)
        p.base = ~0ull;
    for (auto& m : misses_)
        m = Miss{};
}

void EtmMemoryCache::invalidate(uint8_t traceId) {
    changed();
    for (auto& p : pages_)
        if (p.traceId == traceId) p.base = ~0ull;
    for (auto& m : misses_)
        if (m.traceId == traceId) m = Miss{};
}

}  // namespace auxscope::etm
