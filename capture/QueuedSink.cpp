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
}

QueuedSink::~QueuedSink() {
    if (thread_.joinable()) {
        stopping_.store(true, std::memory_order_release);
        wakeWriter();
        thread_.join();
    }
}

void QueuedSink::start() {
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
    if ((s.pendingLost && !pushLost(s, index)) || !queue_.tryPush(kRecord, uint16_t(index), bytes)) {
        bump(s.fullRecords, 1);
        bump(s.fullBytes, bytes.size());
        ++s.pendingLost;
        // Let the writer know there is work even if this pass never ends cleanly.
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

void QueuedSink::onAux(int cpu, uint32_t ringIndex, uint64_t auxOffset, std::span<const uint8_t> bytes) {
    const size_t index = slotIndex(cpu);
    Slot& s = *slots_[index];
    if (bytes.empty()) return;
    if (failed_.load(std::memory_order_relaxed)) {
        bump(s.auxStoppedChunks, 1);
        bump(s.auxStoppedBytes, bytes.size());
        return;
    }
    const size_t maxPiece = std::min<size_t>(queue_.maxPayload() - sizeof(AuxEntryHead), UINT32_MAX);
    while (!bytes.empty()) {
        const auto piece = bytes.first(std::min(bytes.size(), maxPiece));
        const AuxEntryHead head{auxOffset, uint32_t(piece.size()), ringIndex};
        if (!queue_.tryPush(kAux, uint16_t(index), {reinterpret_cast<const uint8_t*>(&head), sizeof head},
                            piece)) {
            // The rest of the chunk is lost as one piece.
            bump(s.auxFullChunks, 1);
            bump(s.auxFullBytes, bytes.size());
            if (bytesSinceWake_) wakeWriter();
            return;
        }
        roundPending_ = true;
        bump(queuedAuxChunks_, 1);
        bump(queuedAuxBytes_, piece.size());
        bytesSinceWake_ += piece.size();
        auxOffset += piece.size();
        bytes = bytes.subspan(piece.size());
        if (bytesSinceWake_ >= queue_.capacity() / 8) {
            const size_t used = queue_.usedBytes();
            if (used > maxQueued_.load(std::memory_order_relaxed))
                maxQueued_.store(used, std::memory_order_relaxed);
            wakeWriter();
        }
    }
}

void QueuedSink::onDrainPassEnd() {
    if (failed_.load(std::memory_order_relaxed)) return;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i]->pendingLost) pushLost(*slots_[i], i);
    if (roundPending_ && queue_.tryPush(kRound, 0, {})) roundPending_ = false;
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
                    AuxEntryHead head;
                    std::memcpy(&head, payload.data(), sizeof head);
                    const auto bytes = payload.subspan(sizeof head, head.bytes);
                    if (failed) {
                        bump(s.auxDiscardedChunks, 1);
                        bump(s.auxDiscardedBytes, bytes.size());
                    } else {
                        r = writer_.writeAux(s.cpu, head.ringIndex, head.auxOffset, bytes);
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
    for (auto& s : slots_) {
        auto r = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
        st.queueFullAuxChunks += r(s->auxFullChunks);
        st.queueFullAuxBytes += r(s->auxFullBytes);
        st.droppedAuxChunks += r(s->auxFullChunks) + r(s->auxStoppedChunks) + r(s->auxDiscardedChunks);
        st.droppedAuxBytes += r(s->auxFullBytes) + r(s->auxStoppedBytes) + r(s->auxDiscardedBytes);
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
