// SPDX-License-Identifier: GPL-3.0-or-later
#include "SimulatedAuxProducer.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace auxscope {
namespace {

constexpr uint16_t kTrailerSize = 32;  // TID, TIME, CPU, IDENTIFIER
constexpr uint16_t kAuxRecordSize = sizeof(perf_event_header) + 3 * 8 + kTrailerSize;
constexpr uint16_t kLostRecordSize = sizeof(perf_event_header) + 2 * 8 + kTrailerSize;

bool isPow2(uint64_t v) {
    return v != 0 && (v & (v - 1)) == 0;
}

// The kernel's CIRC_SPACE: free bytes between head and tail, always leaving one.
uint64_t circSpace(uint64_t head, uint64_t tail, uint64_t size) {
    return (tail - (head + 1)) & (size - 1);
}

void inc(std::atomic<uint64_t>& c, uint64_t by = 1) {
    c.fetch_add(by, std::memory_order_relaxed);
}

}  // namespace

Expected<std::unique_ptr<SimulatedAuxProducer>> SimulatedAuxProducer::create(
    const SimulatedAuxConfig& config) {
    if (!isPow2(config.dataPages))
        return makeError("simulated data ring: page count must be a power of two, got " +
                         std::to_string(config.dataPages));
    if (!isPow2(config.auxSize) || config.auxSize < 2)
        return makeError("simulated AUX area: size must be a power of two of at least 2 bytes, got " +
                         std::to_string(config.auxSize));
    std::unique_ptr<SimulatedAuxProducer> p(new SimulatedAuxProducer(config));
    if (p->cfg_.auxWatermark == 0) p->cfg_.auxWatermark = std::max<uint64_t>(1, config.auxSize / 2);
    const size_t ps = pageSize();
    const size_t auxOffset = (1 + config.dataPages) * ps;
    const size_t memLen = auxOffset + (config.auxSize + ps - 1) / ps * ps;
    // Anonymous pages start zeroed, like the kernel's (__GFP_ZERO) AUX pages.
    int err = 0;
    auto m = MappedRegion::map(-1, memLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, 0, &err);
    if (!m)
        return makeError("simulated AUX producer: cannot allocate " + std::to_string(memLen) +
                         " bytes: " + std::strerror(err));
    p->mem_ = std::move(*m);
    uint8_t* mem = p->mem_.bytes();
    p->meta_ = reinterpret_cast<perf_event_mmap_page*>(mem);
    p->data_ = mem + ps;
    p->aux_ = mem + auxOffset;
    p->dataSize_ = config.dataPages * ps;
    p->meta_->version = 0;
    p->meta_->data_offset = ps;
    p->meta_->data_size = p->dataSize_;
    p->meta_->aux_offset = auxOffset;
    p->meta_->aux_size = config.auxSize;
    p->wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (p->wakeFd_ < 0)
        return makeError(std::string("simulated AUX producer: eventfd: ") + std::strerror(errno));
    return p;
}

SimulatedAuxProducer::~SimulatedAuxProducer() {
    stop();
    if (wakeFd_ >= 0) close(wakeFd_);
}

DataRing SimulatedAuxProducer::dataRing() const {
    return DataRing::view(meta_, data_, dataSize_);
}

AuxRing SimulatedAuxProducer::auxRing() const {
    return AuxRing::view(meta_, aux_, cfg_.mode);
}

SimulatedAuxCounts SimulatedAuxProducer::counts() const {
    auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    SimulatedAuxCounts c;
    c.transactions = r(n_.transactions);
    c.bytesWritten = r(n_.bytesWritten);
    c.bytesTruncated = r(n_.bytesTruncated);
    c.noSpaceAtBegin = r(n_.noSpaceAtBegin);
    c.disables = r(n_.disables);
    c.enables = r(n_.enables);
    c.auxRecords = r(n_.auxRecords);
    c.truncatedRecords = r(n_.truncatedRecords);
    c.partialRecords = r(n_.partialRecords);
    c.collisionRecords = r(n_.collisionRecords);
    c.recordsDropped = r(n_.recordsDropped);
    c.auxRecordsDropped = r(n_.auxRecordsDropped);
    c.truncatedDropped = r(n_.truncatedDropped);
    c.lostRecords = r(n_.lostRecords);
    c.lostReported = r(n_.lostReported);
    c.lostPending = r(n_.lostPending);
    c.wakeups = r(n_.wakeups);
    c.userDisables = r(n_.userDisables);
    return c;
}

void SimulatedAuxProducer::enable() {
    if (!enabled_.exchange(true, std::memory_order_acq_rel)) inc(n_.enables);
}

void SimulatedAuxProducer::stallDisable() {
    if (enabled_.exchange(false, std::memory_order_acq_rel)) inc(n_.disables);
}

void SimulatedAuxProducer::disable() {
    // Dekker-style with transaction(): either the producer sees the event disabled
    // before it starts writing, or we see its transaction in flight and wait.
    if (enabled_.exchange(false, std::memory_order_seq_cst)) inc(n_.userDisables);
    while (inTransaction_.load(std::memory_order_seq_cst))
        std::this_thread::yield();
}

void SimulatedAuxProducer::wake() {
    const uint64_t one = 1;
    ssize_t w = write(wakeFd_, &one, sizeof one);
    (void)w;  // EAGAIN: the counter is saturated, the fd is readable anyway
    inc(n_.wakeups);
}

void SimulatedAuxProducer::writeAux(uint64_t bytes, const uint8_t* src) {
    const uint64_t size = cfg_.auxSize;
    // In overwrite mode only the last auxSize bytes of a long burst survive.
    uint64_t i = bytes > size ? bytes - size : 0;
    while (i < bytes) {
        const uint64_t pos = stream_ + i;
        const uint64_t off = pos & (size - 1);
        uint64_t n = std::min(bytes - i, size - off);  // up to the end of the buffer
        if (src) {
            std::memcpy(aux_ + off, src + i, n);
        } else {
            // The pattern repeats every 251 bytes: copy it from a table that holds
            // many periods, starting at the right phase.
            n = std::min<uint64_t>(n, kPatternTableSize - kPatternPeriod);
            std::memcpy(aux_ + off, patternTable() + pos % kPatternPeriod, n);
        }
        i += n;
    }
    stream_ += bytes;
    inc(n_.bytesWritten, bytes);
}

const uint8_t* SimulatedAuxProducer::patternTable() {
    static const std::vector<uint8_t> table = [] {
        std::vector<uint8_t> t(kPatternTableSize);
        for (size_t i = 0; i < t.size(); ++i)
            t[i] = patternByte(i);
        return t;
    }();
    return table.data();
}

void SimulatedAuxProducer::putTrailer(uint8_t* p) {
    const uint64_t v[4] = {uint64_t(uint32_t(cfg_.pid)) | uint64_t(uint32_t(cfg_.tid)) << 32, time_++,
                           uint64_t(cfg_.cpu), cfg_.id};
    std::memcpy(p, v, sizeof v);
}

void SimulatedAuxProducer::putData(const void* src, uint64_t n) {
    const uint64_t off = dataHead_ & (dataSize_ - 1);
    const uint64_t first = std::min(n, dataSize_ - off);
    std::memcpy(data_ + off, src, first);
    if (first < n) std::memcpy(data_, static_cast<const uint8_t*>(src) + first, n - first);
    dataHead_ += n;
}

bool SimulatedAuxProducer::emitRecord(const void* rec, uint16_t size, bool isAux, uint64_t flags) {
    const uint64_t need = size + (lost_ ? kLostRecordSize : 0);
    const uint64_t tail = __atomic_load_n(&meta_->data_tail, __ATOMIC_ACQUIRE);
    if (circSpace(dataHead_, tail, dataSize_) < need) {
        // Like __perf_output_begin's fail path: count it, report it with the next record that fits.
        ++lost_;
        inc(n_.recordsDropped);
        inc(n_.lostPending);
        if (isAux) inc(n_.auxRecordsDropped);
        if (isAux && (flags & kAuxFlagTruncated)) inc(n_.truncatedDropped);
        return false;
    }
    if (lost_) {
        uint8_t lost[kLostRecordSize];
        const perf_event_header h{PERF_RECORD_LOST, 0, kLostRecordSize};
        const uint64_t body[2] = {cfg_.id, lost_};
        std::memcpy(lost, &h, sizeof h);
        std::memcpy(lost + sizeof h, body, sizeof body);
        putTrailer(lost + sizeof h + sizeof body);
        putData(lost, kLostRecordSize);
        inc(n_.lostRecords);
        inc(n_.lostReported, lost_);
        n_.lostPending.fetch_sub(lost_, std::memory_order_relaxed);
        lost_ = 0;
    }
    putData(rec, size);
    // Pairs with the consumer's acquire of data_head: the record bytes are visible first.
    __atomic_store_n(&meta_->data_head, dataHead_, __ATOMIC_RELEASE);
    const uint64_t watermark = dataSize_ / 2;
    if (dataHead_ - dataWakeup_ > watermark) {
        dataWakeup_ += watermark;
        wake();
    }
    return true;
}

bool SimulatedAuxProducer::flushLost() {
    if (!lost_) return true;
    const uint64_t tail = __atomic_load_n(&meta_->data_tail, __ATOMIC_ACQUIRE);
    if (circSpace(dataHead_, tail, dataSize_) < kLostRecordSize) return false;
    uint8_t lost[kLostRecordSize];
    const perf_event_header h{PERF_RECORD_LOST, 0, kLostRecordSize};
    const uint64_t body[2] = {cfg_.id, lost_};
    std::memcpy(lost, &h, sizeof h);
    std::memcpy(lost + sizeof h, body, sizeof body);
    putTrailer(lost + sizeof h + sizeof body);
    putData(lost, kLostRecordSize);
    __atomic_store_n(&meta_->data_head, dataHead_, __ATOMIC_RELEASE);
    inc(n_.lostRecords);
    inc(n_.lostReported, lost_);
    n_.lostPending.fetch_sub(lost_, std::memory_order_relaxed);
    lost_ = 0;
    return true;
}

bool SimulatedAuxProducer::writeRecord(const void* record, uint16_t size) {
    return emitRecord(record, size, false, 0);
}

SimulatedAuxTransaction SimulatedAuxProducer::step(uint64_t bytes, uint64_t injectFlags) {
    return transaction(bytes, injectFlags, nullptr);
}

SimulatedAuxTransaction SimulatedAuxProducer::stepBytes(std::span<const uint8_t> bytes,
                                                        uint64_t injectFlags) {
    return transaction(bytes.size(), injectFlags, bytes.data());
}

SimulatedAuxTransaction SimulatedAuxProducer::transaction(uint64_t bytes, uint64_t injectFlags,
                                                          const uint8_t* src) {
    SimulatedAuxTransaction t;
    t.requested = bytes;
    t.head = auxHead_;
    inTransaction_.store(true, std::memory_order_seq_cst);
    struct EndTransaction {
        std::atomic<bool>& flag;
        ~EndTransaction() { flag.store(false, std::memory_order_seq_cst); }
    } end{inTransaction_};
    if (!enabled_.load(std::memory_order_seq_cst)) return t;
    const uint64_t size = cfg_.auxSize;
    const bool full = cfg_.mode == AuxMode::Full;
    uint64_t flags = injectFlags & ~(kAuxFlagTruncated | kAuxFlagOverwrite);
    uint64_t written = 0, offset = 0;
    if (full) {
        // perf_aux_output_begin: the room is what aux_tail leaves.
        const uint64_t tail = __atomic_load_n(&meta_->aux_tail, __ATOMIC_ACQUIRE);
        const uint64_t space = auxHead_ - tail < size ? circSpace(auxHead_, tail, size) : 0;
        if (space == 0) {
            inc(n_.noSpaceAtBegin);
            stallDisable();
            wake();
            return t;
        }
        written = std::min(bytes, space);
        if (written < bytes) {
            flags |= kAuxFlagTruncated;
            inc(n_.bytesTruncated, bytes - written);
        }
        writeAux(written, src);
        offset = auxHead_;
        auxHead_ += written;
    } else {
        written = bytes;
        writeAux(written, src);
        flags |= kAuxFlagOverwrite;
        auxHead_ = cfg_.freeRunningOverwriteHead ? auxHead_ + written : (auxHead_ + written) & (size - 1);
        offset = auxHead_;  // the driver's new head
    }
    t.started = true;
    t.written = written;
    t.flags = flags;
    inc(n_.transactions);
    // perf_aux_output_end: the record first, then aux_head.
    if (written || (flags & ~kAuxFlagOverwrite)) {
        uint8_t rec[kAuxRecordSize];
        const perf_event_header h{PERF_RECORD_AUX, 0, kAuxRecordSize};
        const uint64_t body[3] = {offset, written, flags};
        std::memcpy(rec, &h, sizeof h);
        std::memcpy(rec + sizeof h, body, sizeof body);
        putTrailer(rec + sizeof h + sizeof body);
        if (emitRecord(rec, kAuxRecordSize, true, flags)) {
            t.recordWritten = true;
            inc(n_.auxRecords);
            if (flags & kAuxFlagTruncated) inc(n_.truncatedRecords);
            if (flags & kAuxFlagPartial) inc(n_.partialRecords);
            if (flags & kAuxFlagCollision) inc(n_.collisionRecords);
        } else {
            t.recordDropped = true;
        }
    }
    // Pairs with AuxRing::head()'s acquire: the AUX bytes are visible first.
    __atomic_store_n(&meta_->aux_head, auxHead_, __ATOMIC_RELEASE);
    t.head = auxHead_;
    bool wakeup = flags & kAuxFlagTruncated;
    if (full && auxHead_ - auxWakeup_ >= cfg_.auxWatermark) {
        auxWakeup_ = auxHead_ / cfg_.auxWatermark * cfg_.auxWatermark;
        wakeup = true;
    }
    if (wakeup) {
        if (flags & kAuxFlagTruncated) stallDisable();
        wake();
    }
    return t;
}

void SimulatedAuxProducer::start(const Plan& plan) {
    stop();
    stop_.store(false);
    finished_.store(false);
    thread_ = std::thread([this, plan] {
        uint64_t x = plan.seed | 1;
        const uint64_t span = plan.maxBytes >= plan.minBytes ? plan.maxBytes - plan.minBytes + 1 : 1;
        for (uint64_t i = 1; i <= plan.transactions; ++i) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const uint64_t bytes = plan.minBytes + x % span;
            uint64_t flags = 0;
            if (plan.collisionEvery && i % plan.collisionEvery == 0) flags |= kAuxFlagCollision;
            if (plan.partialEvery && i % plan.partialEvery == 0) flags |= kAuxFlagPartial;
            // A disabled event produces nothing until it is enabled again.
            while (!enabled() && !stop_.load(std::memory_order_relaxed))
                std::this_thread::yield();
            if (stop_.load(std::memory_order_relaxed)) break;
            step(bytes, flags);
        }
        finished_.store(true, std::memory_order_release);
    });
}

void SimulatedAuxProducer::join() {
    if (thread_.joinable()) thread_.join();
}

void SimulatedAuxProducer::stop() {
    stop_.store(true);
    join();
}

}  // namespace auxscope
