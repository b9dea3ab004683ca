// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Walks the perf records in a power-of-two ring between tail and head. Records
// that straddle the end of the ring (in the header or in the payload) are copied
// into a scratch buffer so the consumer always sees one contiguous record.
// Corrupt headers (size smaller than the header, larger than what head says was
// written) end the walk with an error naming the offset; the caller skips the
// rest of that window and counts it.
#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace auxscope {

struct RingWalkResult {
    uint64_t newTail = 0;       // where the caller should set data_tail
    uint64_t records = 0;       // complete records handed to the consumer
    uint64_t bytes = 0;         // bytes of those records
    uint64_t skippedBytes = 0;  // bytes given up after a corrupt header
    bool stopped = false;       // the consumer refused a record: it and the rest stay in the ring
    std::optional<std::string> error;
};

class RingReader {
public:
    // `fn(const perf_event_header&, std::span<const uint8_t> record)` is called for each
    // record; the span covers the whole record including its header. When `fn`
    // returns bool, false refuses the record: the walk ends before it (newTail
    // points at it), so that it and the records after it stay in the ring.
    template <typename Fn>
    RingWalkResult walk(const uint8_t* base, uint64_t size, uint64_t tail, uint64_t head, Fn&& fn) {
        RingWalkResult r;
        const uint64_t mask = size - 1;
        uint64_t pos = tail;
        while (pos < head) {
            const uint64_t avail = head - pos;
            if (avail < sizeof(perf_event_header)) {
                r.error = "record header at ring offset " + std::to_string(pos) + " is cut: only " +
                          std::to_string(avail) + " bytes before data_head";
                break;
            }
            perf_event_header hdr;
            copyOut(base, size, pos & mask, &hdr, sizeof hdr);
            if (hdr.size < sizeof(perf_event_header)) {
                r.error = "record at ring offset " + std::to_string(pos) + " (type " +
                          std::to_string(hdr.type) + ") has size " + std::to_string(hdr.size) +
                          ", smaller than its 8-byte header";
                break;
            }
            if (hdr.size > avail || hdr.size > size) {
                r.error = "record at ring offset " + std::to_string(pos) + " (type " +
                          std::to_string(hdr.type) + ") has size " + std::to_string(hdr.size) + " but only " +
                          std::to_string(avail) + " bytes were published before data_head";
                break;
            }
            const uint64_t off = pos & mask;
            std::span<const uint8_t> rec;
            if (off + hdr.size <= size) {
                rec = {base + off, hdr.size};
            } else {
                scratch_.resize(hdr.size);
                copyOut(base, size, off, scratch_.data(), hdr.size);
                rec = {scratch_.data(), hdr.size};
            }
            if constexpr (std::is_same_v<decltype(fn(hdr, rec)), bool>) {
                if (!fn(hdr, rec)) {
                    r.stopped = true;
                    break;
                }
            } else {
                fn(hdr, rec);
            }
            pos += hdr.size;
            ++r.records;
            r.bytes += hdr.size;
        }
        if (r.error) {
            r.skippedBytes = head - pos;
            pos = head;
        }
        r.newTail = pos;
        return r;
    }

private:
    static void copyOut(const uint8_t* base, uint64_t size, uint64_t off, void* dst, uint64_t n) {
        const uint64_t first = std::min(n, size - off);
        std::memcpy(dst, base + off, first);
        if (first < n) std::memcpy(static_cast<uint8_t*>(dst) + first, base, n - first);
    }
    std::vector<uint8_t> scratch_;
};

}  // namespace auxscope
