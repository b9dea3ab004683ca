// SPDX-License-Identifier: GPL-3.0-or-later
#include "QueuedSink.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

namespace auxscope {

uint64_t writerBudgetFor(uint64_t memAvailable, size_t queueBytes) {
    constexpr uint64_t kCap = uint64_t(4) << 30;
    return std::max<uint64_t>(queueBytes, std::min(memAvailable / 4, kCap));
}

uint64_t defaultWriterBudget(size_t queueBytes) {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream f(line.substr(13));
            uint64_t kib = 0;
            if (f >> kib) return writerBudgetFor(kib << 10, queueBytes);
        }
    return queueBytes;
}

QueuedSink::QueuedSink(std::vector<int> cpus, SinkWriter& writer, QueuedSinkOptions options)
    : writer_(writer), options_(std::move(options)), queue_(options_.queueBytes) {
    if (options_.budgetBytes > queue_.capacity())
        spill_ =
            std::make_unique<SpillChain>(options_.budgetBytes - queue_.capacity(), options_.spillChunkBytes);
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
    if (spareThread_.joinable()) {
        stopping_.store(true, std::memory_order_release);
        spareWake_.fetch_add(1, std::memory_order_release);
        spareWake_.notify_one();
        spareThread_.join();
    }
    // Never started: free the snapshot copies still queued (in the queue or spilled).
    auto discard = [](const SinkQueue::EntryHeader* e, std::span<const uint8_t> payload) {
        if (e->kind == kAux) {
            AuxEntry a;
            std::memcpy(&a, payload.data(), sizeof a);
            delete a.owner;
        }
    };
    while (const SinkQueue::EntryHeader* e = queue_.front()) {
        discard(e, queue_.payload(e));
        queue_.pop();
    }
    if (spill_)
        while (const SinkQueue::EntryHeader* e = spill_->front()) {
            discard(e, spill_->payload(e));
            spill_->pop();
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
    // Spill chunks are mapped and backed here, ahead of the drain thread, when it
    // asks (requestSpares(): the queue is half full or entries are spilling).
    if (spill_ && !spareThread_.joinable())
        spareThread_ = std::thread([this] {
            for (;;) {
                const uint32_t seen = spareWake_.load(std::memory_order_acquire);
                if (stopping_.load(std::memory_order_acquire)) return;
                spill_->prepareSpares(kSpareChunks);
                spareWake_.wait(seen, std::memory_order_acquire);
            }
        });
}

void QueuedSink::requestSpares() {
    if (!spill_ || !spareThread_.joinable() || spill_->spares() >= kSpareChunks) return;
    spareWake_.fetch_add(1, std::memory_order_release);
    spareWake_.notify_one();
}

bool QueuedSink::push(uint16_t kind, uint16_t slot, std::span<const uint8_t> a, std::span<const uint8_t> b) {
    if (!spill_) return queue_.tryPush(kind, slot, a, b);
    const size_t payload = a.size() + b.size();
    // Every entry in the queue leaves room for a marker after it (the `0`), so a
    // run of spilled entries can always be announced there.
    if (spilling_ && spillClosable() && queue_.canPush({payload, 0})) {
        spill_->pushEnd(kSpillEnd);
        spilling_ = false;
    }
    if (!spilling_) {
        if (queue_.canPush({payload, 0})) return queue_.tryPush(kind, slot, a, b);
        if (!spill_->canPush({payload})) return false;
        queue_.tryPush(kSpillMark, 0, {});
        spilling_ = true;
        bump(spillRuns_, 1);
        requestSpares();
    }
    return spill_->tryPush(kind, slot, a, b);
}

bool QueuedSink::roomFor(size_t lost, size_t payload) {
    if (!spill_) return lost ? queue_.canPush({lost, payload}) : queue_.canPush({payload});
    if ((!spilling_ || spillClosable()) &&
        (lost ? queue_.canPush({lost, payload, 0}) : queue_.canPush({payload, 0})))
        return true;
    return lost ? spill_->canPush({lost, payload}) : spill_->canPush({payload});
}

void QueuedSink::noteBacklog() {
    const uint64_t spilled = spill_ ? spill_->usedBytes() : 0;
    if (spilled > maxSpilled_.load(std::memory_order_relaxed))
        maxSpilled_.store(spilled, std::memory_order_relaxed);
    const uint64_t used = queue_.usedBytes() + spilled;
    if (used > maxBacklog_.load(std::memory_order_relaxed))
        maxBacklog_.store(used, std::memory_order_relaxed);
    const size_t q = queue_.usedBytes();
    if (q > maxQueued_.load(std::memory_order_relaxed)) maxQueued_.store(q, std::memory_order_relaxed);
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
    if (!push(kLost, uint16_t(index), {reinterpret_cast<const uint8_t*>(body), sizeof body})) return false;
    s.pendingLost = 0;
    roundPending_ = true;
    return true;
}

bool QueuedSink::hasRoom(int cpu, size_t bytes) {
    // After a failure nothing can be written: the records are counted, not held.
    if (failed_.load(std::memory_order_relaxed) || bytes > queue_.maxPayload()) return true;
    const Slot& s = *slots_[slotIndex(cpu)];
    const bool room = roomFor(s.pendingLost ? 2 * sizeof(uint64_t) : 0, bytes);
    if (!room) {
        heldBackThisPass_ = true;
        bump(recordsHeldBack_, 1);
        if (spill_) bump(heldBackAtBudget_, 1);  // the queue and the spill's budget are full
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
    if ((s.pendingLost && !pushLost(s, index)) || !push(kRecord, uint16_t(index), bytes)) {
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
        noteBacklog();
        wakeWriter();
    }
}

size_t QueuedSink::auxPieceBytes() const {
    size_t piece = std::min(kAuxPieceBytes, queue_.maxPayload() - sizeof(AuxCopyHeader));
    piece = std::min(piece, spill_->maxPayload() - sizeof(AuxCopyHeader));
    return piece & ~size_t(7);
}

bool QueuedSink::shouldCopyAux(uint32_t ringIndex) const {
    if (!spill_ || ringIndex >= auxRelease_.size()) return false;
    const AuxRelease& r = *auxRelease_[ringIndex];
    return spilling_ || queue_.usedBytes() > queue_.capacity() / 2 ||
           r.done.load(std::memory_order_acquire) != r.handed;
}

bool QueuedSink::auxCopyRoom(const AuxBytes& bytes) const {
    const size_t piece = auxPieceBytes();
    const size_t pieces =
        (bytes.first.size() + piece - 1) / piece + (bytes.second.size() + piece - 1) / piece;
    const size_t entry = sizeof(SinkQueue::EntryHeader) + sizeof(AuxCopyHeader) + 8;
    // In the queue: every piece, one wrap's padding and the marker.
    if ((!spilling_ || spillClosable()) &&
        queue_.capacity() - queue_.usedBytes() >= bytes.size() + pieces * entry + piece + entry + 8)
        return true;
    return spill_->canPushRun(pieces, sizeof(AuxCopyHeader) + piece, sizeof(AuxCopyHeader) + piece);
}

bool QueuedSink::hasAuxRoom(uint32_t ringIndex, const AuxBytes& bytes) {
    if (failed_.load(std::memory_order_relaxed)) return true;
    const bool copy = !bytes.owner && shouldCopyAux(ringIndex);
    auxChoice_ = {ringIndex, bytes.offset, copy};
    bool room = copy ? auxCopyRoom(bytes) : roomFor(0, sizeof(AuxEntry));
    if (room && bytes.owner) {
        const uint64_t held = heldSnapshotBytes_.load(std::memory_order_acquire);
        room = held == 0 || held + bytes.size() <= options_.maxHeldSnapshotBytes;
    }
    if (!room) {
        heldBackThisPass_ = true;
        bump(auxHeldBack_, 1);
        if (spill_ && !bytes.owner) bump(heldBackAtBudget_, 1);
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
    const bool copy = !bytes.owner && (auxChoice_.ringIndex == ringIndex && auxChoice_.offset == bytes.offset
                                           ? auxChoice_.copy
                                           : shouldCopyAux(ringIndex));
    auxChoice_.ringIndex = UINT32_MAX;
    if (copy) {
        // Copied into the backlog in pieces: the AUX area is free again once the
        // drain thread returns (unless an earlier chunk is still written in place).
        if (!auxCopyRoom(bytes)) {
            bump(s.auxFullChunks, 1);
            bump(s.auxFullBytes, n);
            if (bytesSinceWake_) wakeWriter();
            return;
        }
        const size_t piece = auxPieceBytes();
        uint64_t offset = bytes.offset;
        for (std::span<const uint8_t> part : {bytes.first, bytes.second})
            for (size_t at = 0; at < part.size(); at += piece) {
                const size_t len = std::min(piece, part.size() - at);
                const AuxCopyHeader h{offset, ringIndex, 0};
                push(kAuxCopy, uint16_t(index), {reinterpret_cast<const uint8_t*>(&h), sizeof h},
                     part.subspan(at, len));
                offset += len;
            }
        roundPending_ = true;
        bump(queuedAuxChunks_, 1);
        bump(queuedAuxBytes_, n);
        bump(auxCopiedChunks_, 1);
        bump(auxCopiedBytes_, n);
        noteBacklog();
        wakeWriter();
        return;
    }
    AuxEntry e{bytes.offset,        bytes.first.data(),
               bytes.first.size(),  bytes.second.data(),
               bytes.second.size(), nullptr,
               ringIndex,           0};
    if (bytes.owner) e.owner = new std::shared_ptr<const std::vector<uint8_t>>(bytes.owner);
    if (!push(kAux, uint16_t(index), {reinterpret_cast<const uint8_t*>(&e), sizeof e})) {
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
    if (roundPending_ && !heldBack && push(kRound, 0, {})) roundPending_ = false;
    noteBacklog();
    if (spill_ && (spilling_ || queue_.usedBytes() > queue_.capacity() / 2)) requestSpares();
    if (bytesSinceWake_ || queue_.usedBytes() || (spill_ && spill_->usedBytes())) wakeWriter();
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
            if (push(kRound, 0, {})) {
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
    if (spareThread_.joinable()) {
        stopping_.store(true, std::memory_order_release);
        spareWake_.fetch_add(1, std::memory_order_release);
        spareWake_.notify_one();
        spareThread_.join();
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

Expected<void> QueuedSink::writeEntry(const SinkQueue::EntryHeader* e, std::span<const uint8_t> payload,
                                      bool failed) {
    Slot& s = *slots_[e->slot < slots_.size() ? e->slot : 0];
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
            const std::span<const uint8_t> first(a.first, a.firstBytes), second(a.second, a.secondBytes);
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
        case kAuxCopy: {
            AuxCopyHeader h;
            std::memcpy(&h, payload.data(), sizeof h);
            const auto bytes = payload.subspan(sizeof h);
            if (failed) {
                bump(s.auxDiscardedChunks, 1);
                bump(s.auxDiscardedBytes, bytes.size());
            } else {
                r = writer_.writeAux(s.cpu, h.ringIndex, h.auxOffset, bytes, {});
                bump(writtenAuxChunks_, 1);
                bump(writtenAuxBytes_, bytes.size());
            }
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
    return r;
}

void QueuedSink::writerLoop() {
    if (options_.prelude)
        if (auto r = options_.prelude(); !r) fail(r.error().message);
    bool inSpill = false;  // reading a run of spilled entries (after a kSpillMark)
    for (;;) {
        const uint32_t seen = wake_.load(std::memory_order_acquire);
        bool any = false;
        for (;;) {
            const SinkQueue::EntryHeader* e = inSpill ? spill_->front() : queue_.front();
            if (!e) break;
            any = true;
            if (!inSpill && e->kind == kSpillMark) {
                queue_.pop();
                inSpill = true;
                continue;
            }
            if (inSpill && e->kind == kSpillEnd) {
                spill_->pop();
                inSpill = false;
                continue;
            }
            const bool failed = failed_.load(std::memory_order_relaxed);
            Expected<void> r = writeEntry(e, inSpill ? spill_->payload(e) : queue_.payload(e), failed);
            if (inSpill)
                spill_->pop();
            else
                queue_.pop();
            if (!r) fail(r.error().message);
        }
        if (any && !failed_.load(std::memory_order_relaxed))
            if (auto r = writer_.idle(); !r) fail(r.error().message);
        if (stopping_.load(std::memory_order_acquire) && !(inSpill ? spill_->front() : queue_.front())) break;
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
        const uint64_t cap = spill_ ? options_.budgetBytes : queue_.capacity();
        const std::string full = std::string(spill_ ? "writer backlog at its budget (" : "queue full (") +
                                 (cap >= (uint64_t(1) << 20) ? std::to_string(cap >> 20) + " MiB)"
                                                             : std::to_string(cap >> 10) + " KiB)");
        add(s.fullRecords, s.fullBytes, full);
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
        add(s.auxFullChunks, s.auxFullBytes, "AUX data chunks: " + full);
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
    st.backlogBytes = queue_.usedBytes() + (spill_ ? spill_->usedBytes() : 0);
    st.maxBacklogBytes = std::max<uint64_t>(maxBacklog_.load(std::memory_order_relaxed), st.maxQueuedBytes);
    st.backlogBudget = spill_ ? options_.budgetBytes : queue_.capacity();
    if (spill_) {
        st.spillHeldBytes = spill_->heldBytes();
        st.maxSpillHeldBytes = spill_->peakHeldBytes();
        st.spillProducerMaps = spill_->producerMaps();
    }
    st.spillRuns = spillRuns_.load(std::memory_order_relaxed);
    st.maxSpilledBytes = maxSpilled_.load(std::memory_order_relaxed);
    st.auxCopiedChunks = auxCopiedChunks_.load(std::memory_order_relaxed);
    st.auxCopiedBytes = auxCopiedBytes_.load(std::memory_order_relaxed);
    st.heldBackAtBudget = heldBackAtBudget_.load(std::memory_order_relaxed);
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
