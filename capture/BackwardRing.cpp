// SPDX-License-Identifier: GPL-3.0-or-later
#include "BackwardRing.h"

#include <linux/membarrier.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "DataRing.h"
#include "RingReader.h"

namespace auxscope {

std::span<const uint8_t> BackwardSnapshot::record(size_t i) const {
    perf_event_header h;
    std::memcpy(&h, data.data() + offsets[i], sizeof h);
    return {data.data() + offsets[i], h.size};
}

BackwardSnapshot parseBackwardRing(const uint8_t* data, uint64_t size, uint64_t head, uint64_t headAfter) {
    BackwardSnapshot s;
    s.head = head;
    s.written = uint64_t(0) - head;
    s.wrapped = s.written > size;

    // The window the kernel has not overwritten: from head up to the ring's size,
    // or to where history began when the ring has not wrapped yet. Whatever a
    // writer still in flight at the pause published while we copied (head moved
    // down by `moved`) landed on the oldest `moved` bytes of that window.
    const int64_t movedSigned = int64_t(head - headAfter);
    const uint64_t moved = movedSigned > 0 ? uint64_t(movedSigned) : 0;
    const uint64_t full = std::min(s.written, size);
    const uint64_t limit = moved >= size ? 0 : std::min(full, size - moved);
    s.racedBytes = full - limit;
    const bool windowCut = limit < s.written;  // the window's oldest record may be torn

    // Walk newest to oldest in coordinates rebased to the head's ring offset, so
    // positions stay below 2 * size and never wrap the u64.
    const uint64_t mask = size - 1;
    const uint64_t start = head & mask;
    const uint64_t end = start + limit;
    std::vector<uint8_t> newestFirst;
    std::vector<uint32_t> newestOffsets;
    newestFirst.reserve(limit);
    RingReader reader;
    RingWalkResult r = reader.walk(data, size, start, end, [&](const perf_event_header&, auto rec) {
        newestOffsets.push_back(uint32_t(newestFirst.size()));
        newestFirst.insert(newestFirst.end(), rec.begin(), rec.end());
    });

    if (r.error) {
        const uint64_t pos = end - r.skippedBytes;
        const uint64_t avail = end - pos;
        perf_event_header hdr{};
        if (avail >= sizeof hdr) {
            for (size_t i = 0; i < sizeof hdr; ++i)
                reinterpret_cast<uint8_t*>(&hdr)[i] = data[(pos + i) & mask];
        }
        const bool torn = windowCut && (avail < sizeof hdr ||
                                        (hdr.size >= sizeof hdr && hdr.size > avail && hdr.size <= size));
        if (torn) {
            s.tornBytes = avail;
        } else {
            s.skippedBytes = r.skippedBytes;
            std::string what = avail < sizeof hdr ? "a header cut after " + std::to_string(avail) + " bytes"
                                                  : "type " + std::to_string(hdr.type) + ", size " +
                                                        std::to_string(hdr.size);
            std::string why = avail < sizeof hdr      ? ""
                              : hdr.size < sizeof hdr ? ", smaller than its 8-byte header"
                              : hdr.size > size       ? ", larger than the ring"
                                                      : ", past the " + std::to_string(avail) +
                                                      " bytes the kernel wrote after it";
            s.error = "backward ring: corrupt record at ring offset " + std::to_string(pos & mask) + " (" +
                      std::to_string(pos - start) + " bytes after data_head): " + what + why + "; the " +
                      std::to_string(r.records) + " newer records are kept, " +
                      std::to_string(r.skippedBytes) + " older bytes skipped";
        }
    }

    // Hand records out oldest first. The kernel reserves one chunk per output and
    // fills it forward: a PERF_RECORD_LOST it prefixes (records dropped before
    // this one, e.g. while paused) sits just below the record it came with, so
    // that pair is one unit and keeps its order.
    const size_t n = newestOffsets.size();
    auto typeAt = [&](size_t i) {
        perf_event_header h;
        std::memcpy(&h, newestFirst.data() + newestOffsets[i], sizeof h);
        return h.type;
    };
    std::vector<std::pair<size_t, size_t>> units;  // [first, last] walk indices, newest unit first
    for (size_t i = 0; i < n; ++i) {
        if (typeAt(i) == PERF_RECORD_LOST && i + 1 < n) {
            units.push_back({i, i + 1});
            ++i;
        } else {
            units.push_back({i, i});
        }
    }
    s.records = n;
    s.bytes = newestFirst.size();
    s.data.resize(newestFirst.size());
    s.offsets.reserve(n);
    size_t out = 0;
    for (size_t u = units.size(); u-- > 0;) {
        for (size_t i = units[u].first; i <= units[u].second; ++i) {
            const size_t from = newestOffsets[i];
            const size_t to = i + 1 < n ? newestOffsets[i + 1] : newestFirst.size();
            s.offsets.push_back(uint32_t(out));
            std::memcpy(s.data.data() + out, newestFirst.data() + from, to - from);
            out += to - from;
        }
    }
    s.overwrittenBytes = s.written - s.bytes - s.skippedBytes;
    return s;
}

BackwardRing& BackwardRing::operator=(BackwardRing&& o) noexcept {
    if (this != &o) {
        map_ = std::move(o.map_);  // unmaps ours, if any
        meta_ = std::exchange(o.meta_, nullptr);
        data_ = std::exchange(o.data_, nullptr);
        size_ = std::exchange(o.size_, 0);
        fd_ = std::exchange(o.fd_, -1);
        copy_ = std::move(o.copy_);
    }
    return *this;
}

Expected<BackwardRing> BackwardRing::map(int fd, size_t dataPages) {
    if (dataPages == 0 || (dataPages & (dataPages - 1)) != 0)
        return makeError("backward ring size must be a power of two pages, got " + std::to_string(dataPages));
    const size_t len = (1 + dataPages) * pageSize();
    // Read-only: the kernel then overwrites instead of waiting for data_tail.
    int err = 0;
    Expected<MappedRegion> m = MappedRegion::map(fd, len, PROT_READ, MAP_SHARED, 0, &err);
    if (!m) {
        std::string msg = "cannot map a backward (overwritable) ring of " + std::to_string(dataPages) +
                          " pages (" + std::to_string(dataPages * pageSize() / 1024) +
                          " KiB) read-only: " + std::strerror(err);
        if (err == EPERM || err == ENOMEM)
            msg +=
                ". The locked-memory budget for perf rings is exceeded: use fewer pages, run as root, "
                "or raise kernel.perf_event_mlock_kb / 'ulimit -l'.";
        return makeError(msg);
    }
    BackwardRing r;
    r.map_ = std::move(*m);
    const uint8_t* p = r.map_.bytes();
    r.meta_ = static_cast<const perf_event_mmap_page*>(r.map_.data());
    r.data_ = p + pageSize();
    r.size_ = dataPages * pageSize();
    r.fd_ = fd;
    if (r.meta_->data_size != 0) {
        r.data_ = p + r.meta_->data_offset;
        r.size_ = r.meta_->data_size;
    }
    return r;
}

Expected<void> BackwardRing::pauseOutput(bool pause) const {
    if (::ioctl(fd_, PERF_EVENT_IOC_PAUSE_OUTPUT, pause ? 1 : 0) != 0)
        return makeError(std::string("PERF_EVENT_IOC_PAUSE_OUTPUT(") + (pause ? "1" : "0") +
                         ") on the backward ring failed: " + std::strerror(errno));
    return {};
}

Expected<BackwardSnapshot> BackwardRing::snapshot(Quiesce quiesce) {
    if (!meta_) return makeError("backward ring is not mapped");
    if (auto p = pauseOutput(true); !p) return p.error();
    // Writers that saw the ring unpaused are inside an RCU read-side section;
    // a grace period lets them finish and publish data_head.
    const bool quiesced =
        quiesce == Quiesce::Caller ||
        (quiesce == Quiesce::Rcu && syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0);
    const uint64_t h = head();
    copy_.resize(size_);
    std::memcpy(copy_.data(), data_, size_);
    // A writer that began before the pause may publish during the copy; what it
    // wrote is excluded by comparing the head again (after the copy's loads).
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    const uint64_t after = head();
    if (auto p = pauseOutput(false); !p) return p.error();
    BackwardSnapshot s = parseBackwardRing(copy_.data(), size_, h, after);
    s.quiesced = quiesced;
    return s;
}

}  // namespace auxscope
