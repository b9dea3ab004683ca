// SPDX-License-Identifier: GPL-3.0-or-later
#include "QueuedSink.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace auxscope {

QueuedSink::QueuedSink(std::vector<int> cpus, SinkWriter& writer, QueuedSinkOptions options)
    : writer_(writer), options_(std::move(options)), queue_(options_.queueBytes) {
    int maxCpu = -1;
    for (int c : cpus)
        maxCpu = std::max(maxCpu, c);
    slotOfCpu_.assign(size_t(maxCpu + 1), int16_t(-1));
    for (int c : cpus) {
        if (c < 0 || slotOfCpu_[size_t(c)] >= 0) continue;
        slotOfCpu_[size_t(c)] = int16_t(slots_.size());
        auto s = std::make_unique<Slot>();
        s->cpu = c;
        slots_.push_back(std::move(s));
    }
    if (slots_.empty()) {  // records of an unknown CPU still need somewhere to be counted
        auto s = std::make_unique<Slot>();
        slots_.push_back(std::move(s));
    }
    for (size_t i = 0; i < cpus.size(); ++i)
        auxRelease_.push_back(std::make_unique<AuxRelease>());
}

QueuedSink::~QueuedSink() {
    if (populateThread_.joinable()) populateThread_.join();
    if (thread_.joinable()) {
        stopping_.store(true, std::memory_order_release);
        wakeWriter();
        thread_.join();
    }
    // Never started: free the snapshot copies still queued.
    while (const SinkQueue::EntryHeader* e = queue_.front()) {
        if (e->kind == kAux) {
            AuxEntry a;
            std::memcpy(&a, queue_.payload(e).data(), sizeof a);
            delete a.owner;
        }
        queue_.pop();
    }
}

void QueuedSink::start() {
    // The queue's memory is backed before the drain thread needs it: its first
    // 4 MiB now (the first ~10 ms of a syscall storm), the rest in order on a
    // thread of its own, ahead of the drain thread, so that the drain thread never
    // stalls on page faults (slow where a VM's host must first provide the pages;
    // a drain thread that stalls 2 ms loses records from a 512 KiB ring).
    constexpr size_t kFirst = size_t(4) << 20, kStep = size_t(2) << 20;
    queue_.populate(0, kFirst);
    if (!populateThread_.joinable() && queue_.capacity() > kFirst)
        populateThread_ = std::thread([this] {
            for (size_t at = kFirst; at < queue_.capacity() && !stopping_.load(std::memory_order_relaxed);
                 at += kStep)
                queue_.populate(at, at + kStep);
        });
    if (!thread_.joinable()) thread_ = std::thread([this] { writerLoop(); });
}

size_t QueuedSink::slotIndex(int cpu) const {
    if (cpu >= 0 && size_t(cpu) < slotOfCpu_.size() && slotOfCpu_[size_t(cpu)] >= 0)
        return size_t(slotOfCpu_[size_t(cpu)]);
    return 0;  // a CPU the sink was not told about: counted with the first
}

bool QueuedSink::pushLost(Slot& s, size_t index) {
    // The newest time seen on any CPU: a LOST record queued now must not sort before
    // records perf may already have flushed (FINISHED_ROUND rules).
    uint64_t body[2] = {s.pendingLost, std::max(s.lastTime, maxTime_)};
    if (!queue_.tryPush(kLost, uint16_t(index), {reinterpret_cast<const uint8_t*>(body), sizeof body}))
        return false;
    s.pendingLost = 0;
    roundPending_ = true;
    return true;
}

bool QueuedSink::hasRoom(int cpu, size_t bytes) {
    // After a failure nothing can be written: the records are counted, not held.
    if (failed_.load(std::memory_order_relaxed) || bytes > queue_.maxPayload()) return true;
    const Slot& s = *slots_[slotIndex(cpu)];
    const bool room = s.pendingLost ? queue_.canPush({2 * sizeof(uint64_t), bytes}) : queue_.canPush({bytes});
    if (!room) {
        heldBackThisPass_ = true;
        bump(recordsHeldBack_, 1);
        // The writer has work; make sure it is awake to free the room.
        wakeWriter();
    }
    return room;
}

void QueuedSink::onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) {
    const size_t index = slotIndex(cpu);
    Slot& s = *slots_[index];
    if (record.time) {
        s.lastTime = record.time;
        if (record.time > maxTime_) maxTime_ = record.time;
    }
    if (failed_.load(std::memory_order_relaxed)) {
        bump(s.stoppedRecords, 1);
        bump(s.stoppedBytes, bytes.size());
        return;
    }
    if (bytes.size() > queue_.maxPayload()) {
        bump(s.tooBigRecords, 1);
        bump(s.tooBigBytes, bytes.size());
        ++s.pendingLost;
        return;
    }
    // hasRoom() said yes, so this fits; the counters below only catch a caller
    // that did not ask.
    if ((s.pendingLost && !pushLost(s, index)) || !queue_.tryPush(kRecord, uint16_t(index), bytes)) {
        bump(s.fullRecords, 1);
        bump(s.fullBytes, bytes.size());
        ++s.pendingLost;
        if (bytesSinceWake_) wakeWriter();
        return;
    }
    roundPending_ = true;
    bump(queuedRecords_, 1);
    bump(queuedBytes_, bytes.size());
    bytesSinceWake_ += bytes.size();
    if (bytesSinceWake_ >= queue_.capacity() / 8) {
        const size_t used = queue_.usedBytes();
        if (used > maxQueued_.load(std::memory_order_relaxed))
            maxQueued_.store(used, std::memory_order_relaxed);
        wakeWriter();
    }
}

bool QueuedSink::hasAuxRoom(uint32_t ringIndex, const AuxBytes& bytes) {
    (void)ringIndex;
    if (failed_.load(std::memory_order_relaxed)) return true;
    bool room = queue_.canPush({sizeof(AuxEntry)});
    if (room && bytes.owner) {
        const uint64_t held = heldSnapshotBytes_.load(std::memory_order_acquire);
        room = held == 0 || held + bytes.size() <= options_.maxHeldSnapshotBytes;
    }
    if (!room) {
        heldBackThisPass_ = true;
        bump(auxHeldBack_, 1);
        wakeWriter();
    }
    return room;
}

void QueuedSink::onAux(int cpu, uint32_t ringIndex, const AuxBytes& bytes) {
    const size_t index = slotIndex(cpu);
    Slot& s = *slots_[index];
    const uint64_t n = bytes.size();
    if (n == 0) return;
    if (failed_.load(std::memory_order_relaxed)) {
        bump(s.auxStoppedChunks, 1);
        bump(s.auxStoppedBytes, n);
        return;
    }
    // Full-mode bytes are released per ring; a ring this sink was not told about
    // cannot be, so its bytes are not taken (and said so).
    if (!bytes.owner && ringIndex >= auxRelease_.size()) {
        bump(s.auxUnknownRingChunks, 1);
        bump(s.auxUnknownRingBytes, n);
        return;
    }
    AuxEntry e{bytes.offset,        bytes.first.data(),
               bytes.first.size(),  bytes.second.data(),
               bytes.second.size(), nullptr,
               ringIndex,           0};
    if (bytes.owner) e.owner = new std::shared_ptr<const std::vector<uint8_t>>(bytes.owner);
    if (!queue_.tryPush(kAux, uint16_t(index), {reinterpret_cast<const uint8_t*>(&e), sizeof e})) {
        // Only when the caller did not ask hasAuxRoom() first.
        delete e.owner;
        bump(s.auxFullChunks, 1);
        bump(s.auxFullBytes, n);
        if (bytesSinceWake_) wakeWriter();
        return;
    }
    if (bytes.owner) {
        const uint64_t held = heldSnapshotBytes_.fetch_add(n, std::memory_order_acq_rel) + n;
        if (held > maxHeldSnapshotBytes_.load(std::memory_order_relaxed))
            maxHeldSnapshotBytes_.store(held, std::memory_order_relaxed);
    } else {
        ++auxRelease_[ringIndex]->handed;
    }
    roundPending_ = true;
    bump(queuedAuxChunks_, 1);
    bump(queuedAuxBytes_, n);
    // The writer has a whole chunk to write: wake it now (the bytes sit in the
    // AUX area, which the hardware cannot refill until they are written).
    wakeWriter();
}

uint64_t QueuedSink::auxReleased(uint32_t ringIndex) const {
    if (ringIndex >= auxRelease_.size()) return kAuxAllReleased;
    const AuxRelease& r = *auxRelease_[ringIndex];
    if (r.done.load(std::memory_order_acquire) == r.handed) return kAuxAllReleased;
    return r.doneEnd.load(std::memory_order_relaxed);
}

void QueuedSink::releaseAux(const AuxEntry& e) {
    if (e.owner) {
        heldSnapshotBytes_.fetch_sub(e.firstBytes + e.secondBytes, std::memory_order_acq_rel);
        delete e.owner;
        return;
    }
    if (e.ringIndex >= auxRelease_.size()) return;
    AuxRelease& r = *auxRelease_[e.ringIndex];
    r.doneEnd.store(e.auxOffset + e.firstBytes + e.secondBytes, std::memory_order_relaxed);
    r.done.fetch_add(1, std::memory_order_release);
}

void QueuedSink::onDrainPassEnd() {
    if (failed_.load(std::memory_order_relaxed)) return;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i]->pendingLost) pushLost(*slots_[i], i);
    // A pass that left records in a ring does not end a round: those records may
    // be older than records of this pass, and perf's readers sort only within rounds.
    const bool heldBack = heldBackThisPass_;
    heldBackThisPass_ = false;
    if (roundPending_ && !heldBack && queue_.tryPush(kRound, 0, {})) roundPending_ = false;
    const size_t used = queue_.usedBytes();
    if (used > maxQueued_.load(std::memory_order_relaxed)) maxQueued_.store(used, std::memory_order_relaxed);
    if (bytesSinceWake_ || used) wakeWriter();
}

void QueuedSink::wakeWriter() {
    bytesSinceWake_ = 0;
    wake_.fetch_add(1, std::memory_order_release);
    wake_.notify_one();
}

Expected<void> QueuedSink::finish() {
    if (populateThread_.joinable()) populateThread_.join();
    if (thread_.joinable()) {
        // The drain thread is done: this thread is the producer now. Queue the lost
        // counts still owed, waiting for room while the writer makes progress.
        for (size_t i = 0; i < slots_.size(); ++i) {
            Slot& s = *slots_[i];
            while (s.pendingLost && !failed_.load(std::memory_order_acquire) && !pushLost(s, i)) {
                wakeWriter();
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        while (roundPending_ && !failed_.load(std::memory_order_acquire)) {
            if (queue_.tryPush(kRound, 0, {})) {
                roundPending_ = false;
                break;
            }
            wakeWriter();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        stopping_.store(true, std::memory_order_release);
        wakeWriter();
        thread_.join();
    }
    if (auto e = writerError()) return makeError(*e);
    return {};
}

void QueuedSink::fail(std::string message) {
    {
        std::lock_guard lock(errorMutex_);
        if (!error_) error_ = std::move(message);
    }
    failed_.store(true, std::memory_order_release);
    requestCaptureStop();
}

void QueuedSink::writerLoop() {
    if (options_.prelude)
        if (auto r = options_.prelude(); !r) fail(r.error().message);
    for (;;) {
        const uint32_t seen = wake_.load(std::memory_order_acquire);
        bool any = false;
        while (const SinkQueue::EntryHeader* e = queue_.front()) {
            any = true;
            const bool failed = failed_.load(std::memory_order_relaxed);
            Slot& s = *slots_[e->slot < slots_.size() ? e->slot : 0];
            auto payload = queue_.payload(e);
            Expected<void> r;
            switch (e->kind) {
                case kRecord: {
                    // The payload is padded to 8 bytes; the record's own header has its size.
                    perf_event_header h;
                    std::memcpy(&h, payload.data(), sizeof h);
                    if (h.size > payload.size()) h.size = uint16_t(payload.size());
                    if (failed) {
                        bump(s.discardedRecords, 1);
                        bump(s.discardedBytes, h.size);
                    } else {
                        r = writer_.writeRecord(s.cpu, payload.first(h.size));
                        bump(writtenRecords_, 1);
                    }
                    break;
                }
                case kLost: {
                    uint64_t body[2];
                    std::memcpy(body, payload.data(), sizeof body);
                    if (!failed) {
                        r = writer_.writeLost(s.cpu, body[0], body[1]);
                        bump(lostEntries_, 1);
                    }
                    break;
                }
                case kAux: {
                    AuxEntry a;
                    std::memcpy(&a, payload.data(), sizeof a);
                    const std::span<const uint8_t> first(a.first, a.firstBytes),
                        second(a.second, a.secondBytes);
                    if (failed) {
                        bump(s.auxDiscardedChunks, 1);
                        bump(s.auxDiscardedBytes, first.size() + second.size());
                    } else {
                        r = writer_.writeAux(s.cpu, a.ringIndex, a.auxOffset, first, second);
                        bump(writtenAuxChunks_, 1);
                        bump(writtenAuxBytes_, first.size() + second.size());
                    }
                    releaseAux(a);
                    break;
                }
                case kRound:
                    if (!failed) {
                        r = writer_.endRound();
                        bump(rounds_, 1);
                    }
                    break;
                default:
                    break;
            }
            queue_.pop();
            if (!r) fail(r.error().message);
        }
        if (any && !failed_.load(std::memory_order_relaxed))
            if (auto r = writer_.idle(); !r) fail(r.error().message);
        if (stopping_.load(std::memory_order_acquire) && !queue_.front()) break;
        if (!any) wake_.wait(seen, std::memory_order_acquire);
    }
}

std::vector<SinkLoss> QueuedSink::losses() const {
    std::vector<SinkLoss> out;
    std::string stopped = "writer stopped";
    if (auto e = writerError()) stopped += ": " + *e;
    for (auto& sp : slots_) {
        const Slot& s = *sp;
        auto add = [&](const std::atomic<uint64_t>& r, const std::atomic<uint64_t>& b,
                       const std::string& why) {
            uint64_t n = r.load(std::memory_order_relaxed);
            if (n) out.push_back({options_.name, s.cpu, n, b.load(std::memory_order_relaxed), why});
        };
        const size_t cap = queue_.capacity();
        add(s.fullRecords, s.fullBytes,
            "queue full (" + (cap >= (size_t(1) << 20) ? std::to_string(cap >> 20) + " MiB)"
                                                       : std::to_string(cap >> 10) + " KiB)"));
        add(s.tooBigRecords, s.tooBigBytes, "record larger than the queue allows");
        add(s.auxUnknownRingChunks, s.auxUnknownRingBytes,
            "AUX data chunks of a ring the sink was not set up for");
        uint64_t n = s.stoppedRecords.load(std::memory_order_relaxed) +
                     s.discardedRecords.load(std::memory_order_relaxed);
        if (n)
            out.push_back({options_.name, s.cpu, n,
                           s.stoppedBytes.load(std::memory_order_relaxed) +
                               s.discardedBytes.load(std::memory_order_relaxed),
                           stopped});
        // AUX chunks ("records" counts chunks there).
        add(s.auxFullChunks, s.auxFullBytes,
            "AUX data chunks: queue full (" + (cap >= (size_t(1) << 20)
                                                   ? std::to_string(cap >> 20) + " MiB)"
                                                   : std::to_string(cap >> 10) + " KiB)"));
        n = s.auxStoppedChunks.load(std::memory_order_relaxed) +
            s.auxDiscardedChunks.load(std::memory_order_relaxed);
        if (n)
            out.push_back({options_.name, s.cpu, n,
                           s.auxStoppedBytes.load(std::memory_order_relaxed) +
                               s.auxDiscardedBytes.load(std::memory_order_relaxed),
                           "AUX data chunks: " + stopped});
    }
    for (auto& l : writer_.writerLosses()) {
        out.push_back(l);
        out.back().sink = options_.name;
    }
    return out;
}

std::vector<std::string> QueuedSink::messages() const {
    std::vector<std::string> m;
    if (auto e = writerError()) m.push_back(options_.name + " failed: " + *e + "; the capture was stopped");
    return m;
}

QueuedSink::Stats QueuedSink::stats() const {
    Stats st;
    st.queuedRecords = queuedRecords_.load(std::memory_order_relaxed);
    st.queuedBytes = queuedBytes_.load(std::memory_order_relaxed);
    st.writtenRecords = writtenRecords_.load(std::memory_order_relaxed);
    st.lostEntries = lostEntries_.load(std::memory_order_relaxed);
    st.rounds = rounds_.load(std::memory_order_relaxed);
    st.queueCapacity = queue_.capacity();
    st.maxQueuedBytes = maxQueued_.load(std::memory_order_relaxed);
    st.queuedAuxChunks = queuedAuxChunks_.load(std::memory_order_relaxed);
    st.queuedAuxBytes = queuedAuxBytes_.load(std::memory_order_relaxed);
    st.writtenAuxChunks = writtenAuxChunks_.load(std::memory_order_relaxed);
    st.writtenAuxBytes = writtenAuxBytes_.load(std::memory_order_relaxed);
    st.recordsHeldBack = recordsHeldBack_.load(std::memory_order_relaxed);
    st.auxHeldBack = auxHeldBack_.load(std::memory_order_relaxed);
    st.maxHeldSnapshotBytes = maxHeldSnapshotBytes_.load(std::memory_order_relaxed);
    for (auto& s : slots_) {
        auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        st.queueFullAuxChunks += r(s->auxFullChunks);
        st.queueFullAuxBytes += r(s->auxFullBytes);
        st.droppedAuxChunks += r(s->auxFullChunks) + r(s->auxStoppedChunks) + r(s->auxDiscardedChunks) +
                               r(s->auxUnknownRingChunks);
        st.droppedAuxBytes +=
            r(s->auxFullBytes) + r(s->auxStoppedBytes) + r(s->auxDiscardedBytes) + r(s->auxUnknownRingBytes);
        st.queueFullRecords +=
            s->fullRecords.load(std::memory_order_relaxed) + s->tooBigRecords.load(std::memory_order_relaxed);
        st.writerStoppedRecords += s->stoppedRecords.load(std::memory_order_relaxed) +
                                   s->discardedRecords.load(std::memory_order_relaxed);
    }
    for (auto& l : writer_.writerLosses())
        st.writerStoppedRecords += l.records;
    st.droppedRecords = st.queueFullRecords + st.writerStoppedRecords;
    return st;
}

std::optional<std::string> QueuedSink::writerError() const {
    std::lock_guard lock(errorMutex_);
    return error_;
}

}  // namespace auxscope
