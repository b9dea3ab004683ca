// SPDX-License-Identifier: GPL-3.0-or-later
#include "sideband/LiveSideband.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "CaptureSession.h"
#include "perfdata/PerfDataFormat.h"

namespace auxscope {

namespace {

constexpr size_t kChunkBytes = size_t(1) << 20;

bool isIdentityRecord(uint32_t type) {
    return type == PERF_RECORD_COMM || type == PERF_RECORD_FORK || type == PERF_RECORD_EXIT;
}

bool isMappingRecord(uint32_t type) {
    return type == PERF_RECORD_MMAP || type == PERF_RECORD_MMAP2;
}

// Whether a MMAP / MMAP2 maps code (the tracking event has mmap_data on, so most
// are data): MMAP says so in misc, MMAP2 in its prot field, after the header,
// pid/tid, addr/len/pgoff and the 24-byte dev/inode or build-id union. Read
// from the bytes, as Sideband::Builder reads it: no parse on the drain thread.
bool isCodeMapping(uint32_t type, uint16_t misc, std::span<const uint8_t> bytes) {
    if (type == PERF_RECORD_MMAP) return !(misc & PERF_RECORD_MISC_MMAP_DATA);
    constexpr size_t kProt = 8 + 8 + 24 + 24;
    uint32_t prot = PROT_EXEC;  // a record too short to say: kept, the builder decides
    if (bytes.size() >= kProt + sizeof prot) std::memcpy(&prot, bytes.data() + kProt, sizeof prot);
    return prot & PROT_EXEC;
}

bool isWindowRecord(uint32_t type) {
    return type == PERF_RECORD_SAMPLE || type == PERF_RECORD_SWITCH || type == PERF_RECORD_SWITCH_CPU_WIDE ||
           type == PERF_RECORD_ITRACE_START;
}

// What the kernel says about loss: kept for the window's time whatever the
// record count (a storm of samples must not push its own LOST records out).
bool isLossRecord(const ParsedRecord& r) {
    switch (r.type) {
        case PERF_RECORD_LOST:
        case PERF_RECORD_LOST_SAMPLES:
        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
            return true;
        case PERF_RECORD_AUX:
            return r.auxFlags &
                   (perfdata::kAuxFlagTruncated | perfdata::kAuxFlagPartial | perfdata::kAuxFlagCollision);
        default:
            return false;
    }
}

}  // namespace

std::unique_ptr<LiveSideband> LiveSideband::attach(CaptureSession& session, Publish publish,
                                                   LiveSidebandOptions options) {
    auto s = start(session.ids(), std::move(publish), std::move(options));
    session.addSink(s.get());
    return s;
}

std::unique_ptr<LiveSideband> LiveSideband::start(const IdTable& ids, Publish publish,
                                                  LiveSidebandOptions options) {
    std::unique_ptr<LiveSideband> s(new LiveSideband);
    s->ids_ = ids;  // records parsed on the worker point into this copy
    s->options_ = std::move(options);
    s->publish_ = std::move(publish);
    s->builder_ = std::make_unique<Sideband::Builder>();
    if (s->options_.configure) s->options_.configure(s->builder_->model());
    s->identityBuilder_ = std::make_unique<Sideband::Builder>();
    if (s->options_.configure) s->options_.configure(s->identityBuilder_->model());
    s->thread_ = std::thread([p = s.get()] { p->loop(); });
    // Names of what ran before the capture: on a thread of its own (reading /proc
    // takes seconds on a busy machine), the timeline meanwhile shows tids.
    if (s->options_.preamble) {
        s->preamble_ = std::move(s->options_.preamble);
        s->preambleThread_ = std::thread([p = s.get()] { p->runPreamble(); });
    }
    return s;
}

LiveSideband::~LiveSideband() {
    stop();
}

void LiveSideband::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    wake_.notify_all();
    if (preambleThread_.joinable()) preambleThread_.join();
    if (thread_.joinable()) thread_.join();
}

void LiveSideband::flush() {
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    const uint64_t want = ++flushRequests_;
    wake_.notify_all();
    flushed_.wait(lock, [&] { return flushesDone_ >= want || stopping_; });
}

LiveSidebandStats LiveSideband::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void LiveSideband::append(std::vector<Chunk>& to, int cpu, std::span<const uint8_t> bytes, uint64_t time) {
    if (to.empty() || to.back().bytes.size() + bytes.size() > kChunkBytes) {
        to.emplace_back();
        to.back().bytes.reserve(std::max(kChunkBytes, bytes.size()));
        to.back().entries.reserve(kChunkBytes / 32);
    }
    Chunk& c = to.back();
    c.entries.push_back({uint32_t(c.bytes.size()), int32_t(cpu)});
    c.bytes.insert(c.bytes.end(), bytes.begin(), bytes.end());
    if (time) {
        c.minTime = std::min(c.minTime, time);
        c.maxTime = std::max(c.maxTime, time);
    }
}

void LiveSideband::onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) {
    const bool mapping = isMappingRecord(record.type);
    if (mapping && !isCodeMapping(record.type, record.misc, bytes)) return;
    const bool identity = isIdentityRecord(record.type), loss = !identity && !mapping && isLossRecord(record);
    if (!identity && !mapping && !loss && !isWindowRecord(record.type)) return;
    const uint64_t time = record.hasSampleId ? record.time : 0;
    std::lock_guard lock(mutex_);
    if (identity) {
        if (identityTaken_ + bytes.size() > options_.identityBytes) {
            ++stats_.identityDropped;
            return;
        }
        identityTaken_ += bytes.size();
        append(pendingIdentity_, cpu, bytes, time);
    } else if (mapping) {
        // With the names, in arrival order: an exec's COMM clears what was mapped before it.
        if (mappingTaken_ + bytes.size() > options_.mappingBytes) {
            ++stats_.mappingsDropped;
            return;
        }
        mappingTaken_ += bytes.size();
        append(pendingIdentity_, cpu, bytes, time);
    } else if (loss) {
        append(pendingLoss_, cpu, bytes, time);
    } else {
        if (pendingSize_ + bytes.size() > options_.pendingBytes) {
            ++stats_.droppedBehind;
            return;
        }
        pendingSize_ += bytes.size();
        append(pending_, cpu, bytes, time);
    }
    ++stats_.records;
}

void LiveSideband::loop() {
    using Clock = std::chrono::steady_clock;
    // Below the drain thread and the traced workload (per-thread nice on Linux).
    (void)setpriority(PRIO_PROCESS, uint32_t(gettid()), 10);
    const double interval = 1 / std::clamp(options_.maxRateHz, 0.1, 1000.0);
    auto next = Clock::now();
    for (;;) {
        uint64_t serving = 0;
        {
            std::unique_lock lock(mutex_);
            wake_.wait_until(lock, next, [&] { return stopping_ || flushRequests_ > flushesDone_; });
            if (stopping_) break;
            serving = flushRequests_;
        }
        const auto t0 = Clock::now();
        tick();
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        {
            std::lock_guard lock(mutex_);
            flushesDone_ = std::max(flushesDone_, serving);
        }
        flushed_.notify_all();
        // The next tick an interval after this one began (a rate of maxRateHz, not
        // a little less), or later when this one took more than cpuShare of it.
        const double share = std::clamp(options_.cpuShare, 0.01, 1.0);
        const double period = std::max(interval, took / share);
        next = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period));
    }
    flushed_.notify_all();
}

void LiveSideband::runPreamble() {
    (void)setpriority(PRIO_PROCESS, uint32_t(gettid()), 10);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Chunk> pre;
    size_t bytes = 0, mappingBytes = 0;
    // `emit` may be handed several records at once: walk them by their headers.
    preamble_([&](std::span<const uint8_t> records) {
        perf_event_header h;
        for (size_t off = 0; off + sizeof h <= records.size(); off += h.size) {
            std::memcpy(&h, records.data() + off, sizeof h);
            if (h.size < sizeof h || off + h.size > records.size()) break;
            const auto rec = records.subspan(off, h.size);
            if (isMappingRecord(h.type)) {
                if (!isCodeMapping(h.type, h.misc, rec)) continue;
                mappingBytes += h.size;
            } else if (isIdentityRecord(h.type)) {
                bytes += h.size;
            } else {
                continue;
            }
            append(pre, -1, rec, 0);
        }
    });
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Handed to the worker as the drain thread hands records: its next tick takes them.
    std::lock_guard lock(mutex_);
    identityTaken_ += bytes;
    mappingTaken_ += mappingBytes;
    for (Chunk& c : pre)
        pendingPreamble_.push_back(std::move(c));
    stats_.preambleSeconds = took;
}

template <typename F>
uint64_t LiveSideband::forEachParsed(const Chunk& chunk, F&& f) const {
    uint64_t refused = 0;
    ParsedRecord r;
    for (size_t i = 0; i < chunk.entries.size(); ++i) {
        const Entry& e = chunk.entries[i];
        const size_t end = i + 1 < chunk.entries.size() ? chunk.entries[i + 1].offset : chunk.bytes.size();
        const std::span<const uint8_t> rec(chunk.bytes.data() + e.offset, end - e.offset);
        r = ParsedRecord{};
        if (parseRecord(rec, ids_, r)) {
            ++refused;
            continue;
        }
        f(e.cpu, r, rec);
    }
    return refused;
}

void LiveSideband::feed(const Chunk& chunk) {
    own_.parseErrors +=
        forEachParsed(chunk, [&](int cpu, const ParsedRecord& r, std::span<const uint8_t> rec) {
            builder_->addRecord(cpu, r, rec);
            if (r.hasSampleId && r.time && !isIdentityRecord(r.type) && !isMappingRecord(r.type))
                builderFrom_ = std::min(builderFrom_, r.time);
        });
    changed_ = true;
}

void LiveSideband::feedIdentity(const Chunk& chunk) {
    identityParseErrors_ +=
        forEachParsed(chunk, [&](int cpu, const ParsedRecord& r, std::span<const uint8_t> rec) {
            identityBuilder_->addRecord(cpu, r, rec);
        });
}

void LiveSideband::rebuild() {
    // What feeding identity_ to a new builder gives, without feeding it: a copy of
    // the builder that took it (sharing its processes, mappings and names).
    builder_ = std::make_unique<Sideband::Builder>(*identityBuilder_);
    own_.parseErrors += identityParseErrors_;
    if (!identity_.empty()) changed_ = true;  // as feeding it would say
    builderFrom_ = UINT64_MAX;
    for (const Chunk& c : losses_)
        feed(c);
    builderRecords_ = 0;
    for (const Chunk& c : window_) {
        feed(c);
        builderRecords_ += c.size();
    }
    ++own_.rebuilds;
}

void LiveSideband::tick() {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Chunk> taken, takenIdentity, takenLoss, takenPreamble;
    {
        std::lock_guard lock(mutex_);
        taken.swap(pending_);
        takenIdentity.swap(pendingIdentity_);
        takenLoss.swap(pendingLoss_);
        takenPreamble.swap(pendingPreamble_);
        pendingSize_ = 0;
    }
    // Names first: a thread's COMM may come in the same pass as its first switch.
    for (Chunk& c : takenIdentity) {
        identitySize_ += c.bytes.size();
        own_.identity += c.size();  // counted as fed: the snapshot below has them
        feed(c);
        feedIdentity(c);
        identity_.push_back(std::move(c));
    }
    for (Chunk& c : takenLoss) {
        feed(c);
        if (c.maxTime) newest_ = std::max(newest_, c.maxTime);
        losses_.push_back(std::move(c));
    }
    for (Chunk& c : taken) {
        feed(c);
        if (c.maxTime) newest_ = std::max(newest_, c.maxTime);
        windowRecords_ += c.size();
        builderRecords_ += c.size();
        window_.push_back(std::move(c));
    }
    // The window: the newest windowSeconds, at most recordBound_ records.
    if (!recordBound_) recordBound_ = options_.maxRecords;
    const uint64_t windowNs = uint64_t(std::max(options_.windowSeconds, 0.001) * 1e9);
    const uint64_t cutoff = newest_ > windowNs ? newest_ - windowNs : 0;
    bool dropped = false;
    while (window_.size() > 1 &&
           ((window_.front().maxTime && window_.front().maxTime < cutoff) || windowRecords_ > recordBound_)) {
        own_.agedOut += window_.front().size();
        windowRecords_ -= window_.front().size();
        window_.pop_front();
        dropped = true;
    }
    while (!losses_.empty() && losses_.front().maxTime && losses_.front().maxTime < cutoff) {
        own_.agedOut += losses_.front().size();
        losses_.pop_front();
    }
    uint64_t windowBegin = UINT64_MAX;
    for (const Chunk& c : window_)
        windowBegin = std::min(windowBegin, c.minTime);
    if (windowBegin == UINT64_MAX) windowBegin = 0;
    if (!takenPreamble.empty()) {
        // What existed before the capture comes before everything the capture
        // recorded (it reaches the worker later: /proc is read on a thread of its
        // own): a program that exec'd or mapped code since keeps the newer name
        // and mappings. Built again once, with the preamble first.
        for (const Chunk& c : takenPreamble) {
            identitySize_ += c.bytes.size();
            own_.identity += c.size();
        }
        identity_.insert(identity_.begin(), std::make_move_iterator(takenPreamble.begin()),
                         std::make_move_iterator(takenPreamble.end()));
        identityBuilder_ = std::make_unique<Sideband::Builder>();
        if (options_.configure) options_.configure(identityBuilder_->model());
        identityParseErrors_ = 0;
        for (const Chunk& c : identity_)
            feedIdentity(c);
        rebuild();
    } else if (dropped && ((builderFrom_ != UINT64_MAX && windowBegin > builderFrom_ &&
                            windowBegin - builderFrom_ > windowNs / 4) ||
                           builderRecords_ > recordBound_ + recordBound_ / 4)) {
        // What the builder holds beyond the window, a quarter window at most.
        rebuild();
    }
    own_.kept = windowRecords_;
    // The snapshot holds what the builder was fed since it was last built: from builderFrom_.
    own_.windowBegin = builderFrom_ != UINT64_MAX ? builderFrom_ : windowBegin;
    own_.windowEnd = newest_;
    LiveSidebandStats published;
    auto merge = [&] {
        std::lock_guard lock(mutex_);
        stats_.kept = own_.kept;
        stats_.agedOut = own_.agedOut;
        stats_.recordBound = own_.recordBound;
        stats_.parseErrors = own_.parseErrors;
        stats_.snapshots = own_.snapshots;
        stats_.rebuilds = own_.rebuilds;
        stats_.windowBegin = own_.windowBegin;
        stats_.windowEnd = own_.windowEnd;
        stats_.lastTickSeconds = own_.lastTickSeconds;
        stats_.identity = own_.identity;
        published = stats_;
    };
    const bool changed = changed_;
    if (changed) {
        changed_ = false;
        if (snapshot_) retired_.push_back(std::move(snapshot_));
        snapshot_ = std::make_shared<const Sideband>(builder_->snapshot());
        ++own_.snapshots;
    }
    merge();
    if (publish_) publish_(snapshot_, changed, published);
    // The snapshots no reader holds any more: freed here, on the worker. (Only
    // the worker copies from retired_'s pointers, so a count of 1 stays 1.)
    std::erase_if(retired_, [](const std::shared_ptr<const Sideband>& s) { return s.use_count() == 1; });
    own_.lastTickSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Keep the rate: a tick may take the cpuShare of the interval. Its cost is about
    // proportional to the window's records, so scale the bound toward what fits
    // (shrinking at once, growing by a quarter at most per tick).
    if (options_.adaptWindow && changed && windowRecords_ > 0) {
        const double budget =
            std::clamp(options_.cpuShare, 0.01, 1.0) / std::clamp(options_.maxRateHz, 0.1, 1000.0);
        const double fits = double(windowRecords_) * budget / std::max(own_.lastTickSeconds, 1e-6);
        const size_t lo = std::min(options_.minRecords, options_.maxRecords);
        if (own_.lastTickSeconds > budget)
            recordBound_ = std::max(lo, size_t(0.9 * fits));
        else if (windowRecords_ >= recordBound_ * 3 / 4)
            recordBound_ = size_t(std::min(double(recordBound_) * 1.25, 0.9 * fits));
        recordBound_ = std::clamp(recordBound_, lo, options_.maxRecords);
    }
    own_.recordBound = recordBound_;
}

}  // namespace auxscope
