// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/LiveTraceDecoder.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "auxtrace/AuxTraceDecode.h"
#include "auxtrace/SpeAuxTrace.h"
#include "etm/EtmSyncIndex.h"
#include "perfdata/AuxtraceInfo.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PsbIndex.h"
#include "record/CaptureAuxtraceInfo.h"
#include "record/ProcSynth.h"
#include "spe/SpePacket.h"

namespace auxscope {

namespace {

constexpr size_t kChunkBytes = 256 << 10;  // bytes per kept chunk (small AUX transfers are coalesced)

bool isAddressSpaceRecord(uint32_t type) {
    switch (type) {
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
        case PERF_RECORD_COMM:
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT:
        case PERF_RECORD_KSYMBOL:
        case PERF_RECORD_TEXT_POKE:
            return true;
        default:
            return false;
    }
}

bool isTimelineRecord(uint32_t type) {
    return type == PERF_RECORD_SWITCH || type == PERF_RECORD_SWITCH_CPU_WIDE ||
           type == PERF_RECORD_ITRACE_START || type == PERF_RECORD_AUX;
}

// A memfd that a PerfDataWriter writes and a PerfDataReader reads by path.
class MemoryFile {
public:
    MemoryFile() : fd_(memfd_create("auxscope-live-decode", MFD_CLOEXEC)) {}
    ~MemoryFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;
    bool ok() const { return fd_ >= 0; }
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
    int fd_;
};

}  // namespace

Expected<std::unique_ptr<LiveTraceDecoder>> LiveTraceDecoder::attach(CaptureSession& session,
                                                                     LiveDecoderOptions options) {
    std::unique_ptr<LiveTraceDecoder> d(new LiveTraceDecoder);
    d->session_ = &session;
    d->options_ = std::move(options);
    const std::string what = "live decode";
    if (d->options_.auxtraceInfo) {
        d->auxtraceInfo_ = *d->options_.auxtraceInfo;
    } else {
        auto info = captureAuxtraceInfo(session);
        if (!info) return makeError(what + ": " + info.error().message);
        if (!*info) return makeError(what + ": the capture has no AUX-area trace event to decode");
        d->auxtraceInfo_ = std::move(**info);
    }
    if (d->auxtraceInfo_.type != auxtrace::kTypeIntelPt && d->auxtraceInfo_.type != auxtrace::kTypeCsEtm &&
        d->auxtraceInfo_.type != auxtrace::kTypeArmSpe)
        return makeError(what +
                         ": only Intel PT, CoreSight ETM and Arm SPE are decoded while capturing (the "
                         "capture's AUX trace is type " +
                         std::to_string(d->auxtraceInfo_.type) + ")");
    d->intelPt_ = d->auxtraceInfo_.type == auxtrace::kTypeIntelPt;
    d->spe_ = d->auxtraceInfo_.type == auxtrace::kTypeArmSpe;
    if (d->auxtraceInfo_.type == auxtrace::kTypeCsEtm) {
        auto info = decodeCsEtmInfo(d->auxtraceInfo_.priv);
        if (!info) return makeError(what + ": CoreSight AUXTRACE_INFO: " + info.error().message);
        for (const CsEtmCpuInfo& c : info->cpus)
            d->etmSources_[int(c.cpu)] = etm::fromCsEtmCpuInfo(c);
    }
    auto layout = captureFileLayout(session, what);
    if (!layout) return layout.error();
    d->attrs_ = std::move(layout->attrs);
    d->idIndex_ = std::move(layout->idIndex);
    if (session.ringCount()) {
        d->timePage_ = *session.ringMetaPage(0);
        d->haveTimePage_ = true;
    }
    d->snapshotMode_ = session.options().auxSnapshot;
    if (d->options_.synthesizeFromProc) {
        ProcSynth synth(layout->fallbackId, [&](std::span<const uint8_t> rec) -> Expected<void> {
            d->synthesized_.insert(d->synthesized_.end(), rec.begin(), rec.end());
            return {};
        });
        std::vector<std::string> notes;
        if (auto r = synthesizeCaptureSideband(session, synth, notes); !r)
            return makeError(what + ": " + r.error().message);
    }
    session.addSink(d.get());
    d->thread_ = std::thread([p = d.get()] { p->loop(); });
    return d;
}

LiveTraceDecoder::~LiveTraceDecoder() {
    stop();
}

void LiveTraceDecoder::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_ && !thread_.joinable()) return;
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
    // No tick will reach what is still held: those bytes are skipped (the last
    // tick stopped at the rate bound, or no way in came after them).
    std::lock_guard lock(mutex_);
    if (!snapshotMode_)
        for (auto& [cpu, t] : cpus_) {
            const uint64_t from = t.undecoded();
            if (t.end > from) stats_.skippedBytes += t.end - from;
            t.decodedTo = t.end;
        }
}

std::shared_ptr<const TimelineData> LiveTraceDecoder::latest() const {
    std::lock_guard lock(mutex_);
    return latest_;
}

LiveDecodeStats LiveTraceDecoder::stats() const {
    std::lock_guard lock(mutex_);
    LiveDecodeStats s = stats_;
    s.spe = spe_;
    s.pendingBytes = 0;
    for (const auto& [cpu, t] : cpus_)
        s.pendingBytes += t.end - std::min(t.end, t.undecoded());
    return s;
}

void LiveTraceDecoder::flush() {
    std::unique_lock lock(mutex_);
    if (stopping_) return;
    const uint64_t want = ++flushRequests_;
    wake_.notify_all();
    flushed_.wait(lock, [&] { return flushesDone_ >= want || stopping_; });
}

void LiveTraceDecoder::onRecord(int cpu, std::span<const uint8_t> bytes, const ParsedRecord& record) {
    const bool addressSpace = isAddressSpaceRecord(record.type);
    if (!addressSpace && !isTimelineRecord(record.type)) return;
    std::lock_guard lock(mutex_);
    if (record.hasSampleId && record.time) {
        newestTime_ = std::max(newestTime_, record.time);
        if (!firstTime_ || record.time < firstTime_) firstTime_ = record.time;
    }
    if (addressSpace) {
        if (addressSpace_.size() + bytes.size() > options_.sidebandBytes) {
            ++stats_.sidebandDropped;
            return;
        }
        addressSpace_.insert(addressSpace_.end(), bytes.begin(), bytes.end());
        ++stats_.sidebandRecords;
        return;
    }
    if (record.type == PERF_RECORD_AUX && !intelPt_ && !spe_)
        etmRaw_[cpu] = (record.auxFlags & perfdata::kAuxFlagCoresightFormatRaw) != 0;
    auto& q = switches_[cpu];
    q.push(record.time, bytes);
    ++stats_.sidebandRecords;
    // Keep the newest keepSeconds, and always the record before them: who was
    // running when the kept time began.
    const uint64_t keepNs = uint64_t(options_.keepSeconds * 1e9);
    const uint64_t cutoff = newestTime_ > keepNs ? newestTime_ - keepNs : 0;
    while (q.size > 1 && q.timeAt(1) < cutoff) {
        q.dropFront();
        --stats_.sidebandRecords;
    }
}

namespace {
constexpr size_t kSwitchBlockRecords = 4096;
}

uint64_t LiveTraceDecoder::SwitchQueue::timeAt(size_t i) const {
    i += first;
    for (const auto& b : blocks) {
        if (i < b->size()) return b->times[i];
        i -= b->size();
    }
    return UINT64_MAX;
}

void LiveTraceDecoder::SwitchQueue::push(uint64_t time, std::span<const uint8_t> bytes) {
    if (blocks.empty() || backSealed || blocks.back()->size() >= kSwitchBlockRecords) {
        blocks.push_back(std::make_shared<SwitchBlock>());
        backSealed = false;
    }
    SwitchBlock& b = *blocks.back();
    b.times.push_back(time);
    b.bytes.insert(b.bytes.end(), bytes.begin(), bytes.end());
    b.ends.push_back(uint32_t(b.bytes.size()));
    ++size;
}

void LiveTraceDecoder::SwitchQueue::dropFront() {
    if (!size) return;
    --size;
    if (++first >= blocks.front()->size()) {
        blocks.pop_front();
        first = 0;
    }
}

void LiveTraceDecoder::onAux(int cpu, uint32_t ringIndex, const AuxBytes& bytes) {
    std::lock_guard lock(mutex_);
    appendAux(cpu, ringIndex, bytes.offset, bytes.first);
    appendAux(cpu, ringIndex, bytes.offset + bytes.first.size(), bytes.second);
}

void LiveTraceDecoder::appendAux(int cpu, uint32_t ringIndex, uint64_t auxOffset,
                                 std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;
    stats_.auxBytes += bytes.size();
    CpuTrace& t = cpus_[cpu];
    t.cpu = cpu;
    t.ringIndex = ringIndex;
    // A snapshot, or bytes that do not continue the previous ones (a loss the
    // sink was told about), start the CPU's stream afresh.
    // Kept bytes no tick decoded that leave the buffer are skipped: counted, as
    // the rate bound's are at a tick (a snapshot replaces the one before).
    auto dropTo = [&](uint64_t newBegin) {
        const uint64_t from = t.undecoded();
        if (!snapshotMode_ && newBegin > from) stats_.skippedBytes += newBegin - from;
        t.begin = newBegin;
    };
    if (snapshotMode_ || auxOffset != t.end || t.chunks.empty()) {
        dropTo(t.end);
        t.chunks.clear();
        t.syncPoints.clear();
        if (t.scanner) t.scanner->reset();
        t.begin = t.end = auxOffset;
        t.decodedTo = std::min(t.decodedTo, auxOffset);
        if (snapshotMode_) t.decodedTo = auxOffset;
        // SPE: a stream starts with a record (the driver writes whole records;
        // after lost data the next bytes start one too). A snapshot may start
        // inside one: the decoder then resyncs, counting what it skipped.
        t.speNext = t.speRecordEnd = auxOffset;
        t.speCarry.clear();
        if (spe_) t.syncPoints.push_back(auxOffset);
    }
    // The sync points, found as the bytes arrive.
    const uint64_t before = t.syncPoints.size();
    std::vector<uint64_t> found;
    if (spe_) {
        findSpeRecordEnds(t, bytes, found);
        t.syncPoints.insert(t.syncPoints.end(), found.begin(), found.end());
        stats_.syncPoints += found.size();
        found.clear();
    } else if (!intelPt_) {
        // CoreSight: the A-syncs, found across transfers (etm/EtmSyncScanner).
        // Raw data once the ring's AUX records say so (they may come after its
        // first bytes: the scanner then starts again).
        const bool raw = etmRaw_.count(cpu) && etmRaw_[cpu];
        const etm::EtmInput input = raw ? etm::EtmInput::Raw : etm::EtmInput::Formatted;
        if (!t.scanner || t.scanner->input() != input) {
            std::vector<etm::EtmSourceConfig> sources;
            if (raw) {
                auto it = etmSources_.find(cpu);
                if (it == etmSources_.end() && !etmSources_.empty()) it = etmSources_.begin();
                if (it != etmSources_.end()) sources.push_back(it->second);
            } else {
                for (const auto& [c, config] : etmSources_)
                    sources.push_back(config);
            }
            t.scanner = std::make_shared<etm::EtmSyncScanner>(std::move(sources), input);
        }
        std::vector<etm::EtmSyncScanner::Point> points;
        t.scanner->feed(t.end, bytes, points);
        // The ways in are where a decoder gets each A-sync whole.
        for (const etm::EtmSyncScanner::Point& p : points)
            if (auto at = std::lower_bound(t.syncPoints.begin(), t.syncPoints.end(), p.entry);
                at == t.syncPoints.end() || *at != p.entry)
                t.syncPoints.insert(at, p.entry);
        stats_.syncPoints += points.size();
    } else if (t.end > t.begin) {
        // Intel PT's PSBs: a PSB cut by the previous transfer's end starts in the
        // last 15 bytes kept, and is found in their junction with the new bytes.
        uint8_t junction[30];
        const size_t tail = size_t(std::min<uint64_t>(15, t.end - t.begin));
        size_t need = tail;
        for (auto c = t.chunks.rbegin(); need && c != t.chunks.rend(); ++c) {
            const size_t n = std::min(need, c->size());
            std::memcpy(junction + need - n, c->data() + c->size() - n, n);
            need -= n;
        }
        const size_t head = std::min<size_t>(15, bytes.size());
        std::memcpy(junction + tail, bytes.data(), head);
        findPsbs(std::span<const uint8_t>(junction, tail + head), 0, tail, found);
        for (uint64_t o : found)
            t.syncPoints.push_back(t.end - tail + o);
        found.clear();
    }
    if (intelPt_) {
        findPsbs(bytes, 0, bytes.size(), found);
        for (uint64_t o : found)
            t.syncPoints.push_back(t.end + o);
    }
    if (intelPt_) stats_.syncPoints += t.syncPoints.size() - before;

    // Keep the newest bytes only: twice a tick's budget, so a tick finds a sync point
    // before the budget's worth of newest bytes.
    const uint64_t keep = std::max<uint64_t>(2 * options_.bytesPerCpuPerTick, 1 << 20);
    std::span<const uint8_t> kept = bytes;
    if (kept.size() > keep) {
        const uint64_t cut = kept.size() - keep;
        t.chunks.clear();
        dropTo(t.end + cut);
        kept = kept.subspan(cut);
    }
    if (t.chunks.empty() || t.chunks.back().size() + kept.size() > kChunkBytes)
        t.chunks.emplace_back().reserve(std::max(kChunkBytes, kept.size()));
    t.chunks.back().insert(t.chunks.back().end(), kept.begin(), kept.end());
    t.end += bytes.size();
    while (t.chunks.size() > 1 && t.end - t.begin - t.chunks.front().size() >= keep) {
        dropTo(t.begin + t.chunks.front().size());
        t.chunks.pop_front();
    }
    auto firstKept = std::lower_bound(t.syncPoints.begin(), t.syncPoints.end(), t.begin);
    t.syncPoints.erase(t.syncPoints.begin(), firstKept);
}

void LiveTraceDecoder::findSpeRecordEnds(CpuTrace& t, std::span<const uint8_t> bytes,
                                         std::vector<uint64_t>& found) {
    // bytes[0] is at stream offset t.end; t.speCarry holds the first bytes of a
    // packet cut by the previous transfer, at t.speNext == t.end - speCarry.size().
    uint64_t at = t.speNext;
    spe::SpePacket packet;
    // Follows the packet at p[pos] (size bytes available): its length, 0 when it
    // runs past the end. A reserved header is followed a byte at a time (resync).
    auto step = [&](const uint8_t* p, size_t size, size_t pos) -> size_t {
        const int n = spe::speNextPacket(p + pos, size - pos, packet, at);
        if (n == spe::kSpeNeedMoreBytes) return 0;
        const size_t len = n > 0 ? size_t(n) : 1;
        if (n > 0 && (packet.kind == spe::PacketKind::End || packet.kind == spe::PacketKind::Timestamp)) {
            found.push_back(at + len);
            t.speRecordEnd = at + len;
        } else if (n > 0 && packet.kind == spe::PacketKind::Pad && at == t.speRecordEnd) {
            // Padding after a record (the driver pads buffers): still between
            // records, so a tick may end after it (one way in per run of PADs).
            if (!found.empty() && found.back() == at)
                found.back() = at + len;
            else
                found.push_back(at + len);
            t.speRecordEnd = at + len;
        }
        at += len;
        return len;
    };
    size_t pos = 0;
    if (!t.speCarry.empty()) {
        // The packets that start in the carry, over a copy of it and the new
        // bytes' start (all of them if a packet is longer: ALIGNMENT pads).
        std::vector<uint8_t> joined = std::move(t.speCarry);
        t.speCarry.clear();
        const size_t carried = joined.size();
        size_t take = std::min<size_t>(bytes.size(), 64);
        const uint64_t from = at;
        const size_t foundBefore = found.size();
        for (;;) {
            joined.resize(carried);
            joined.insert(joined.end(), bytes.begin(), bytes.begin() + ptrdiff_t(take));
            size_t j = 0, len = 1;
            while (j < carried && (len = step(joined.data(), joined.size(), j)))
                j += len;
            if (j >= carried) {
                pos = j - carried;
                break;
            }
            if (take < bytes.size()) {  // a long packet: again over every new byte
                at = from;
                found.resize(foundBefore);
                take = bytes.size();
                continue;
            }
            t.speCarry.assign(joined.begin() + ptrdiff_t(j), joined.end());  // still cut
            t.speNext = at;
            return;
        }
    }
    const uint8_t* p = bytes.data();
    const size_t size = bytes.size();
    while (pos < size) {
        const size_t len = step(p, size, pos);
        if (!len) {
            t.speCarry.assign(p + pos, p + size);
            break;
        }
        pos += len;
    }
    t.speNext = at;
}

std::shared_ptr<const std::vector<spe::SpeRecord>> LiveTraceDecoder::latestSpe() const {
    std::lock_guard lock(mutex_);
    return latestSpe_;
}

void LiveTraceDecoder::loop() {
    using Clock = std::chrono::steady_clock;
    // Below the drain thread and the traced workload (per-thread nice on Linux).
    (void)setpriority(PRIO_PROCESS, uint32_t(gettid()), 10);
    auto next = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(options_.intervalSeconds));
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
        {
            std::lock_guard lock(mutex_);
            flushesDone_ = std::max(flushesDone_, serving);
        }
        flushed_.notify_all();
        const double took = std::chrono::duration<double>(Clock::now() - t0).count();
        const double share = std::clamp(options_.cpuShare, 0.01, 1.0);
        const double wait = std::max(options_.intervalSeconds - took, took * (1 / share - 1));
        next =
            Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait));
    }
    flushed_.notify_all();
}

void LiveTraceDecoder::tick() {
    // Under the lock: the bytes to decode and the sideband, copied out.
    std::map<int, TickTrace> trace;
    std::vector<uint8_t> sideband;
    struct FlatRecord {
        uint64_t time;
        const uint8_t* bytes;
        size_t size;
    };
    std::vector<std::pair<std::shared_ptr<const SwitchBlock>, size_t>> switchBlocks;  // from record index
    bool redo = false;
    {
        std::lock_guard lock(mutex_);
        // CoreSight's ways in are sparse (an A-sync per few KiB): a tick that entered a
        // CPU's trace at a way in and decoded to its end leaves the bytes that
        // arrive next with no way in of their own. Such a tick is redone, from
        // the same ways in through the newest bytes, while that fits the rate
        // bound for every CPU it decoded (and its result replaces the earlier
        // one's): nothing is lost between ticks. Intel PT enters at the next PSB.
        if (!intelPt_ && !spe_ && !snapshotMode_ && !lastTickCpus_.empty()) {
            bool fits = true, newer = false;
            for (int cpu : lastTickCpus_) {
                auto it = cpus_.find(cpu);
                if (it == cpus_.end()) {
                    fits = false;
                    break;
                }
                const CpuTrace& t = it->second;
                fits &= t.tickBegin != UINT64_MAX && t.tickBegin >= t.begin && t.tickBegin <= t.decodedTo &&
                        t.end - t.tickBegin <= options_.bytesPerCpuPerTick;
            }
            for (const auto& [cpu, t] : cpus_)
                newer |= t.end > t.undecoded();
            redo = fits && newer;
        }
        if (redo) {
            for (int cpu : lastTickCpus_) {
                CpuTrace& t = cpus_[cpu];
                const uint64_t begin = t.tickBegin, end = t.end;
                TickTrace& slice = trace[cpu];
                slice.ringIndex = t.ringIndex;
                slice.auxOffset = begin;
                slice.bytes.reserve(end - begin);
                uint64_t pos = t.begin;
                for (const auto& c : t.chunks) {
                    const uint64_t cEnd = pos + c.size();
                    if (cEnd > begin && pos < end) {
                        const uint64_t a = std::max(pos, begin) - pos, b = std::min(cEnd, end) - pos;
                        slice.bytes.insert(slice.bytes.end(), c.begin() + ptrdiff_t(a),
                                           c.begin() + ptrdiff_t(b));
                    }
                    pos = cEnd;
                }
                stats_.decodedBytes += end - std::max(t.decodedTo, begin);  // the new bytes only
                t.decodedTo = end;
            }
        }
        for (auto& [cpu, t] : cpus_) {
            if (trace.count(cpu)) continue;
            uint64_t from = t.undecoded();
            if (from >= t.end) continue;
            // The earliest sync point at or after `from` that keeps the decode within budget.
            auto first = std::lower_bound(t.syncPoints.begin(), t.syncPoints.end(), from);
            if (first == t.syncPoints.end()) continue;  // no way in yet: wait for one
            auto start = first;
            while (start + 1 != t.syncPoints.end() && t.end - *start > options_.bytesPerCpuPerTick)
                ++start;
            const uint64_t begin = *start;
            uint64_t end = std::min(t.end, begin + options_.bytesPerCpuPerTick);
            if (spe_) {
                // SPE: end at a record's end, so no record is cut between two
                // ticks; the rest waits for the next tick.
                auto last = std::upper_bound(start, t.syncPoints.end(), end);
                if (last == start + 1) continue;  // no whole record yet
                end = *(last - 1);
            }
            stats_.skippedBytes += begin - from;
            TickTrace& slice = trace[cpu];
            slice.ringIndex = t.ringIndex;
            slice.auxOffset = begin;
            std::vector<uint8_t>& out = slice.bytes;
            out.reserve(end - begin);
            uint64_t pos = t.begin;
            for (const auto& c : t.chunks) {
                const uint64_t cEnd = pos + c.size();
                if (cEnd > begin && pos < end) {
                    const uint64_t a = std::max(pos, begin) - pos, b = std::min(cEnd, end) - pos;
                    out.insert(out.end(), c.begin() + ptrdiff_t(a), c.begin() + ptrdiff_t(b));
                }
                pos = cEnd;
            }
            t.decodedTo = end;
            t.tickBegin = begin;
            stats_.decodedBytes += end - begin;
        }
        if (trace.empty()) return;
        lastTickCpus_.clear();
        for (const auto& [cpu, slice] : trace)
            lastTickCpus_.push_back(cpu);
        // Switch, ITRACE_START and AUX records of every CPU: the newest blocks
        // are sealed and shared, not copied; ordering them by time happens after
        // the lock is released, so the drain thread and the GUI (stats(),
        // latest()) never wait for it, however many records are kept.
        for (auto& [cpu, q] : switches_) {
            q.backSealed = true;
            size_t from = q.first;
            for (const auto& b : q.blocks) {
                switchBlocks.push_back({b, from});
                from = 0;
            }
        }
        sideband.reserve(synthesized_.size() + addressSpace_.size());
        sideband.insert(sideband.end(), synthesized_.begin(), synthesized_.end());
        sideband.insert(sideband.end(), addressSpace_.begin(), addressSpace_.end());
    }
    // In time order (stable: equal times keep CPU, then arrival order).
    std::vector<FlatRecord> switchRecs;
    size_t switchBytes = 0;
    for (const auto& [block, from] : switchBlocks)
        for (size_t i = from; i < block->size(); ++i) {
            const uint32_t begin = i ? block->ends[i - 1] : 0;
            switchRecs.push_back({block->times[i], block->bytes.data() + begin, block->ends[i] - begin});
            switchBytes += block->ends[i] - begin;
        }
    std::stable_sort(switchRecs.begin(), switchRecs.end(),
                     [](const FlatRecord& a, const FlatRecord& b) { return a.time < b.time; });
    sideband.reserve(sideband.size() + switchBytes);
    for (const FlatRecord& r : switchRecs)
        sideband.insert(sideband.end(), r.bytes, r.bytes + r.size);
    switchRecs = {};
    switchBlocks = {};
    const auto t0 = std::chrono::steady_clock::now();
    auto r = decodeTick(trace, sideband, redo);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(mutex_);
    ++stats_.ticks;
    stats_.lastTickSeconds = seconds;
    stats_.tickSeconds += seconds;
    stats_.lastError = r ? std::string() : r.error().message;
}

void LiveTraceDecoder::collectSpe(AuxTraceSession& session) {
    auto* speSession = dynamic_cast<SpeAuxTraceSession*>(&session);
    if (!speSession) return;
    const spe::SpeRecords& decoded = speSession->records();
    LiveDecodeStats add;
    for (const spe::SpeRecord& r : decoded.records) {
        ++add.speRecords;
        if (r.isLoad)
            ++add.speLoads;
        else if (r.isStore)
            ++add.speStores;
        else if (r.isBranch)
            ++add.speBranches;
        else
            ++add.speOther;
        if (r.hasTotalLatency) add.speLatencyCycles += r.totalLatency, ++add.speWithLatency;
    }
    keptSpe_.push_back(decoded.records);
    while (keptSpe_.size() > std::max(1u, options_.keepTicks))
        keptSpe_.pop_front();
    auto all = std::make_shared<std::vector<spe::SpeRecord>>();
    for (const auto& k : keptSpe_)
        all->insert(all->end(), k.begin(), k.end());
    std::stable_sort(all->begin(), all->end(),
                     [](const spe::SpeRecord& a, const spe::SpeRecord& b) { return a.time < b.time; });
    std::lock_guard lock(mutex_);
    stats_.speRecords += add.speRecords;
    stats_.speLoads += add.speLoads;
    stats_.speStores += add.speStores;
    stats_.speBranches += add.speBranches;
    stats_.speOther += add.speOther;
    stats_.speLatencyCycles += add.speLatencyCycles;
    stats_.speWithLatency += add.speWithLatency;
    // A tick's file holds the newest bytes only: what its AUX records announce
    // beyond them is not lost (earlier ticks decoded it, or it was skipped and counted).
    for (const auto& [reason, n] : decoded.stats.gaps)
        if (reason != spe::kGapLostAux) stats_.speGapBytes += n;
    latestSpe_ = std::move(all);
}

uint32_t LiveTraceDecoder::liveFunction(const FunctionTable& table, uint32_t id,
                                        std::vector<uint32_t>& remap) {
    if (id >= table.size()) return FunctionTable::kUnknown;
    if (remap[id] != UINT32_MAX) return remap[id];
    const FunctionInfo& f = table[id];
    std::string key = f.name;
    key += '\0';
    key += f.file;
    key += '\0';
    key += std::to_string(f.address);
    auto [it, added] = functionIds_.try_emplace(std::move(key), 0);
    if (added) it->second = id == FunctionTable::kUnknown ? FunctionTable::kUnknown : functions_.add(f);
    return remap[id] = it->second;
}

Expected<void> LiveTraceDecoder::decodeTick(const std::map<int, TickTrace>& trace,
                                            const std::vector<uint8_t>& sideband, bool redo) {
    // The newest trace as a small perf.data in memory, decoded like any file.
    MemoryFile mem;
    if (!mem.ok()) return makeError("live decode: memfd_create failed");
    {
        auto w = PerfDataWriter::create(mem.path(), attrs_);
        if (!w) return w.error();
        PerfDataWriter& writer = **w;
        if (auto r = writer.writeIdIndex(idIndex_); !r) return r.error();
        if (haveTimePage_)
            if (auto r = writer.writeTimeConv(timePage_); !r) return r.error();
        if (auto r = writer.writeAuxtraceInfo(auxtraceInfo_.type, auxtraceInfo_.priv); !r) return r.error();
        // The kept sideband, record by record (headers give the sizes).
        for (size_t off = 0; off + sizeof(perf_event_header) <= sideband.size();) {
            perf_event_header h;
            std::memcpy(&h, sideband.data() + off, sizeof h);
            if (h.size < sizeof h || off + h.size > sideband.size()) break;
            if (auto r = writer.writeRecord({sideband.data() + off, h.size}); !r) return r.error();
            off += h.size;
        }
        if (auto r = writer.writeFinishedRound(); !r) return r.error();
        uint64_t reference = 0;
        for (const auto& [cpu, slice] : trace) {
            perfdata::AuxtraceRecord head{};
            head.offset = slice.auxOffset;
            head.reference = ++reference;
            head.idx = slice.ringIndex;
            head.tid = uint32_t(-1);
            head.cpu = uint32_t(cpu);
            if (auto r = writer.writeAuxtrace(head, slice.bytes); !r) return r.error();
        }
        if (auto r = writer.finish(); !r) return r.error();
    }
    auto opened = PerfDataReader::open(mem.path());
    if (!opened) return opened.error();
    auto reader = std::make_unique<PerfDataReader>(std::move(*opened));
    AuxTraceOptions so;
    so.images = options_.images;
    const auto open0 = std::chrono::steady_clock::now();
    auto session = options_.carrySession ? AuxTraceSession::open(*reader, so, &carry_)
                                         : AuxTraceSession::open(*reader, so);
    const double openSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - open0).count();
    if (!session) return session.error();
    {
        std::lock_guard lock(mutex_);
        stats_.openSeconds += openSeconds;
        stats_.filesLoaded += (*session)->filesLoaded();
        stats_.sessionsCarried += (*session)->carried() ? 1 : 0;
    }
    DecodedSpans result = (*session)->decodeSpans({}, 1);
    if (spe_) collectSpe(**session);

    // Function ids into the decoder's own table, so spans of every tick share it.
    const FunctionTable& table = (*session)->functions();
    std::vector<uint32_t> remap(table.size(), UINT32_MAX);
    TickSpans tick;
    tick.begin = UINT64_MAX;
    std::vector<Span> spans;
    for (auto& [tid, store] : result.threads) {
        spans.clear();
        spans.reserve(store.size());
        for (size_t i = 0; i < store.size(); ++i) {
            Span s = store.at(i);
            if (!s.isGap()) s.function = liveFunction(table, s.function, remap);
            tick.begin = std::min(tick.begin, s.start);
            tick.end = std::max(tick.end, s.end);
            spans.push_back(s);
        }
        tick.threads[tid].append(spans, store.gaps());
    }
    if (tick.begin == UINT64_MAX) tick.begin = tick.end = 0;

    // A redone tick takes the place of the one it decodes again.
    TickCounts undo;
    if (redo) {
        undo = lastTick_;
        if (undo.kept && !kept_.empty()) kept_.pop_back();
    }
    lastTick_ = TickCounts{};
    lastTick_.instructions = result.decodedStats.instructions;
    lastTick_.decodeErrors = result.decodedStats.decodeErrors;
    for (const auto& [reason, n] : result.decodedStats.gaps)
        lastTick_.gaps += n;
    if (!tick.threads.empty()) {
        lastTick_.kept = true;
        kept_.push_back(std::move(tick));
        while (kept_.size() > std::max(1u, options_.keepTicks))
            kept_.pop_front();
    }

    auto data = std::make_shared<TimelineData>();
    if (functions_.size() != publishedFunctionCount_ || !publishedFunctions_) {
        publishedFunctions_ = std::make_shared<const FunctionTable>(functions_);
        publishedFunctionCount_ = functions_.size();
    }
    data->functions = publishedFunctions_;
    // Which thread ran on each CPU, over the switch sideband kept; the threads'
    // pids and names from the address-space sideband, which is kept whole.
    const Sideband& recorded = (*session)->sideband();
    setTimelineCpus(*data, recorded);
    std::map<int32_t, SpanStore> merged;
    for (const TickSpans& k : kept_)
        for (const auto& [tid, store] : k.threads) {
            SpanStore& m = merged[tid];
            // Ticks follow each other in time on one CPU; a thread that moved
            // between CPUs can overlap an older tick: the newer one is kept then.
            if (!m.appendStore(store)) {
                m = SpanStore();
                m.appendStore(store);
            }
        }
    uint64_t spanCount = 0;
    for (const auto& [tid, store] : merged)
        spanCount += store.size();
    addTimelineThreads(*data, std::move(merged), recorded);
    if (!kept_.empty()) {
        data->decodedBegin = kept_.front().begin;
        data->decodedEnd = kept_.back().end;
        for (const TickSpans& k : kept_)
            data->decodedBegin = std::min(data->decodedBegin, k.begin),
            data->decodedEnd = std::max(data->decodedEnd, k.end);
    }
    LiveDecodeStats snapshot;
    {
        std::lock_guard lock(mutex_);
        stats_.instructions += lastTick_.instructions - undo.instructions;
        stats_.decodeErrors += lastTick_.decodeErrors - undo.decodeErrors;
        stats_.gaps += lastTick_.gaps - undo.gaps;
        stats_.spans = spanCount;
        data->begin = firstTime_ ? firstTime_ : data->decodedBegin;
        data->end = std::max(newestTime_, data->decodedEnd);
        snapshot = stats_;
    }
    char note[200];
    std::snprintf(note, sizeof note,
                  "live decode: newest %.1f MB per CPU every %.1f s; %.1f of %.1f MB of trace decoded so far",
                  double(options_.bytesPerCpuPerTick) / 1e6, options_.intervalSeconds,
                  double(snapshot.decodedBytes) / 1e6, double(snapshot.auxBytes) / 1e6);
    data->notes.push_back(note);
    if (options_.carrySession) {
        carry_ = std::move(*session);  // the previous tick's session was taken over or goes now
        carryFile_ = std::move(reader);
    }
    std::lock_guard lock(mutex_);
    latest_ = std::move(data);
    return {};
}

}  // namespace auxscope
