// SPDX-License-Identifier: GPL-3.0-or-later
#include "AuxRing.h"

#include <sys/mman.h>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace auxscope {

AuxRing& AuxRing::operator=(AuxRing&& o) noexcept {
    if (this != &o) {
        map_ = std::move(o.map_);  // unmaps ours, if we own one
        meta_ = std::exchange(o.meta_, nullptr);
        aux_ = std::exchange(o.aux_, nullptr);
        size_ = std::exchange(o.size_, 0);
        mode_ = o.mode_;
    }
    return *this;
}

Expected<AuxRing> AuxRing::map(int fd, const DataRing& data, size_t auxPages, AuxMode mode) {
    if (auxPages == 0 || (auxPages & (auxPages - 1)) != 0)
        return makeError("AUX area size must be a power of two pages, got " + std::to_string(auxPages));
    if (!data.mapped()) return makeError("cannot map an AUX area: its event's data ring is not mapped");
    perf_event_mmap_page* meta = data.userPage();
    // The AUX area goes right after the data area (the kernel requires
    // aux_offset >= end of the data area, page aligned).
    const uint64_t dataEnd = uint64_t(data.data() - reinterpret_cast<const uint8_t*>(meta)) + data.size();
    const uint64_t offset = (dataEnd + pageSize() - 1) / pageSize() * pageSize();
    const uint64_t len = uint64_t(auxPages) * pageSize();
    meta->aux_offset = offset;
    meta->aux_size = len;
    const int prot = mode == AuxMode::Full ? PROT_READ | PROT_WRITE : PROT_READ;
    int err = 0;
    Expected<MappedRegion> m = MappedRegion::map(fd, len, prot, MAP_SHARED, off_t(offset), &err);
    if (!m) {
        std::string msg = "cannot map an AUX area of " + std::to_string(auxPages) + " pages (" +
                          std::to_string(len / 1024) + " KiB) at offset " + std::to_string(offset) + " (" +
                          (mode == AuxMode::Full ? "full-trace, read-write" : "snapshot, read-only") +
                          "): " + std::strerror(err);
        switch (err) {
            case EOPNOTSUPP:
                msg +=
                    ". This event's PMU has no AUX area (only trace PMUs such as intel_pt, cs_etm and "
                    "arm_spe have one).";
                break;
            case EINVAL:
                msg +=
                    ". The kernel refused the AUX layout: the event has no AUX area (not a trace PMU), or "
                    "its "
                    "data ring is not mapped, or an AUX area of another size or offset is already mapped.";
                break;
            case EPERM:
            case ENOMEM:
                msg +=
                    ". The locked-memory budget for perf rings is exceeded: use fewer AUX pages, run as root "
                    "(CAP_IPC_LOCK), or raise kernel.perf_event_mlock_kb / 'ulimit -l'.";
                break;
            case EBUSY:
                msg += ". The ring is busy (another mapping of it is being torn down); retry.";
                break;
            default:
                break;
        }
        meta->aux_offset = meta->aux_size = 0;
        return makeError(msg);
    }
    AuxRing r;
    r.map_ = std::move(*m);
    r.meta_ = meta;
    r.aux_ = r.map_.bytes();
    r.size_ = len;
    r.mode_ = mode;
    return r;
}

AuxRing AuxRing::view(perf_event_mmap_page* meta, const uint8_t* aux, AuxMode mode) {
    AuxRing r;
    r.meta_ = meta;
    r.aux_ = aux;
    r.size_ = meta->aux_size;
    r.mode_ = mode;
    return r;
}

AuxWindow AuxRing::window() const {
    return window(tail());
}

AuxWindow AuxRing::window(uint64_t from) const {
    AuxWindow w;
    w.from = w.to = from;
    if (mode_ != AuxMode::Full) {
        w.error = "AUX area is in snapshot mode: it has no tail to drain from; take a snapshot";
        return w;
    }
    const uint64_t head = this->head();
    const uint64_t tail = this->tail();
    if (head - tail > size_ || from - tail > head - tail) {
        // head behind tail, or more than the whole buffer ahead: not a state the
        // kernel produces; hand out nothing rather than garbage.
        w.error = "aux_head " + std::to_string(head) + " is inconsistent with aux_tail " +
                  std::to_string(tail) +
                  (from != tail ? " (bytes handed out up to " + std::to_string(from) + ")" : std::string()) +
                  " in an AUX area of " + std::to_string(size_) + " bytes";
        return w;
    }
    w.to = head;
    const uint64_t n = head - w.from;
    if (n == 0) return w;
    const uint64_t off = w.from & (size_ - 1);
    const uint64_t first = std::min(n, size_ - off);
    w.first = {aux_ + off, first};
    if (first < n) w.second = {aux_, n - first};
    return w;
}

AuxSnapshot AuxRing::snapshot(uint64_t want, WrapDetection how, bool wrapped) const {
    AuxSnapshot s;
    s.head = head();
    s.headOffset = s.head & (size_ - 1);
    s.wrapped = how == WrapDetection::ZeroScan ? wrappedByZeroScan(aux_, size_, s.headOffset) : wrapped;
    copyNewest(aux_, size_, s.headOffset, s.wrapped, want, s.bytes);
    return s;
}

void AuxRing::copyNewest(const uint8_t* base, uint64_t size, uint64_t headOffset, bool wrapped, uint64_t want,
                         std::vector<uint8_t>& out) {
    headOffset &= size - 1;
    // Before the first wrap only [0, head) holds data; after it the whole buffer
    // does, oldest byte at the head.
    const uint64_t avail = wrapped ? size : headOffset;
    const uint64_t n = std::min(avail, want);
    const uint64_t start = (headOffset - n) & (size - 1);
    out.resize(n);
    const uint64_t first = std::min(n, size - start);
    if (first) std::memcpy(out.data(), base + start, first);
    if (first < n) std::memcpy(out.data() + first, base, n - first);
}

bool AuxRing::wrappedByZeroScan(const uint8_t* base, uint64_t size, uint64_t headOffset) {
    headOffset &= size - 1;
    // With headOffset 0 this scans the whole buffer: nothing written, or exactly
    // whole turns of it.
    for (uint64_t i = headOffset; i < size; ++i)
        if (base[i] != 0) return true;
    return false;
}

void AuxSnapshotTracker::observeHead(uint64_t head) {
    if (freeRunning_) {
        if (head >= size_) wrapped_ = true;
    } else if (seenHead_ && head < lastHead_) {
        wrapped_ = true;
    }
    seenHead_ = true;
    lastHead_ = head;
}

void AuxSnapshotTracker::observeRecord(uint64_t offset, uint64_t size) {
    if (sizesReliable_) {
        written_ += size;
        if (written_ >= size_) wrapped_ = true;
    }
    observeHead(offset);
}

}  // namespace auxscope
