// SPDX-License-Identifier: GPL-3.0-or-later
#include "record/PerfDataWriterSink.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

namespace auxscope {

PerfDataWriterSink::PerfDataWriterSink(PerfDataWriter& writer, PerfDataWriterSinkConfig config)
    : writer_(writer), config_(std::move(config)) {}

Expected<void> PerfDataWriterSink::checked(Expected<void> r) {
    if (!r) noteWriterState();
    return r;
}

void PerfDataWriterSink::noteWriterState() {
    const auto& st = writer_.stats();
    if (!writer_.failed()) return;
    unwrittenRecords_.store(st.streamRecords - st.streamRecordsOnDisk, std::memory_order_relaxed);
    unwrittenBytes_.store(st.streamBytes - st.streamBytesOnDisk, std::memory_order_relaxed);
    std::lock_guard lock(errorMutex_);
    error_ = writer_.errorMessage();
}

std::vector<SinkLoss> PerfDataWriterSink::writerLosses() const {
    const uint64_t n = unwrittenRecords_.load(std::memory_order_relaxed);
    if (!n) return {};
    std::lock_guard lock(errorMutex_);
    return {SinkLoss{"", -1, n, unwrittenBytes_.load(std::memory_order_relaxed),
                     "writer stopped: " + error_ + " (accepted, never reached the file)"}};
}

Expected<void> PerfDataWriterSink::writeRecord(int, std::span<const uint8_t> record) {
    observe(record);
    return checked(writer_.writeStreamRecord(record));
}

Expected<void> PerfDataWriterSink::writeLost(int cpu, uint64_t records, uint64_t lastTime) {
    auto it = config_.lostIdByCpu.find(cpu);
    const SampleIdSpec& spec = it != config_.lostIdByCpu.end() ? it->second : config_.fallbackLostId;
    SampleIdSpec s = spec;
    s.cpu = uint32_t(cpu);
    RecordBuilder b(PERF_RECORD_LOST);
    b.u64(s.id).u64(records).sampleId(s, 0, 0, lastTime);
    ++lostRecords_;
    lostCount_ += records;
    return checked(writer_.writeStreamRecord(b.finish()));
}

Expected<void> PerfDataWriterSink::writeAux(int cpu, uint32_t ringIndex, uint64_t auxOffset,
                                            std::span<const uint8_t> first, std::span<const uint8_t> second) {
    perfdata::AuxtraceRecord head{};
    head.offset = auxOffset;  // free-running position in the AUX area, as perf record writes it
    // perf record puts a time stamp here (the TSC on x86); its tools only compare
    // references for equality (snapshot dedup), so a per-file sequence number serves.
    head.reference = ++auxRecords_;
    head.idx = ringIndex;
    head.tid = uint32_t(-1);  // per-CPU ring, no thread
    head.cpu = uint32_t(cpu);
    auxBytes_ += first.size() + second.size();
    return checked(writer_.writeAuxtrace(head, first, second));
}

Expected<void> PerfDataWriterSink::endRound() {
    return checked(writer_.writeFinishedRound());
}

Expected<void> PerfDataWriterSink::idle() {
    auto now = std::chrono::steady_clock::now();
    if (now - lastFlush_ < config_.idleFlushInterval) return {};
    lastFlush_ = now;
    return checked(writer_.flush());
}

void PerfDataWriterSink::addMap(pid_t pid, uint64_t start, uint64_t len, const std::string_view& file) {
    if (len == 0) return;
    std::string name(file);
    auto [it, added] = fileIndex_.try_emplace(name, uint32_t(files_.size()));
    if (added) {
        files_.push_back(name);
        fileHit_.push_back(false);
    }
    auto& v = maps_[pid];
    const uint64_t end = start + len;
    // A new mapping replaces whatever it overlaps.
    v.erase(std::remove_if(v.begin(), v.end(), [&](const Map& m) { return m.start < end && start < m.end; }),
            v.end());
    auto pos =
        std::lower_bound(v.begin(), v.end(), start, [](const Map& m, uint64_t s) { return m.start < s; });
    v.insert(pos, Map{start, end, it->second});
}

void PerfDataWriterSink::hit(pid_t pid, uint64_t ip) {
    auto it = maps_.find(pid);
    if (it == maps_.end()) return;
    auto& v = it->second;
    auto m = std::upper_bound(v.begin(), v.end(), ip, [](uint64_t x, const Map& mm) { return x < mm.start; });
    if (m == v.begin()) return;
    --m;
    if (ip < m->end) fileHit_[m->file] = true;
}

void PerfDataWriterSink::observe(std::span<const uint8_t> record) {
    if (record.size() < sizeof(perf_event_header)) return;
    perf_event_header h;
    std::memcpy(&h, record.data(), sizeof h);
    switch (h.type) {
        case PERF_RECORD_SAMPLE:
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
        case PERF_RECORD_FORK:
            break;
        default:
            return;
    }
    if (!config_.ids) return;
    rec_ = ParsedRecord{};
    (void)parseRecord(record, *config_.ids, rec_);
    const uint16_t cpumode = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;
    switch (h.type) {
        case PERF_RECORD_SAMPLE:
            ++samples_;
            if (rec_.time) {
                if (!firstSample_ || rec_.time < firstSample_) firstSample_ = rec_.time;
                if (rec_.time > lastSample_) lastSample_ = rec_.time;
            }
            if (!config_.trackBuildIds) break;
            if (cpumode == PERF_RECORD_MISC_KERNEL)
                kernelHit_ = true;
            else if (cpumode == PERF_RECORD_MISC_USER)
                hit(rec_.pid, rec_.ip);
            break;
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
            if (!config_.trackBuildIds || cpumode != PERF_RECORD_MISC_USER) break;
            if (h.misc & PERF_RECORD_MISC_MMAP_DATA) break;  // data mappings hold no code
            if (h.type == PERF_RECORD_MMAP2 && record.size() >= 8 + 64) {
                uint32_t prot;
                std::memcpy(&prot, record.data() + 8 + 56, 4);
                if (!(prot & PROT_EXEC)) break;
            }
            addMap(rec_.pid, rec_.mapStart, rec_.mapLen, rec_.filename);
            break;
        }
        case PERF_RECORD_FORK:
            // A new process starts with its parent's mappings (threads share them anyway).
            if (config_.trackBuildIds && rec_.pid != rec_.ppid) {
                auto parent = maps_.find(rec_.ppid);
                if (parent != maps_.end()) {
                    auto copy = parent->second;
                    maps_[rec_.pid] = std::move(copy);
                }
            }
            break;
        default:
            break;
    }
}

std::vector<BuildIdEntry> PerfDataWriterSink::hitBuildIds(std::vector<std::string>* notes) const {
    std::vector<BuildIdEntry> out;
    if (kernelHit_) {
        if (auto id = FeatureWriter::kernelBuildId())
            out.push_back({"[kernel.kallsyms]", *id, true});
        else if (notes)
            notes->push_back("no kernel build-id in /sys/kernel/notes");
    }
    for (size_t i = 0; i < files_.size(); ++i) {
        if (!fileHit_[i]) continue;
        const std::string& f = files_[i];
        if (f.empty() || f[0] != '/' || f.rfind("//", 0) == 0) continue;  // [vdso], //anon, ...
        // Not files one can open by that name: memfd, deleted, device mappings.
        const std::string deleted = " (deleted)";
        if (f.rfind("/memfd:", 0) == 0 || f.rfind("/dev/", 0) == 0 ||
            (f.size() > deleted.size() && f.compare(f.size() - deleted.size(), deleted.size(), deleted) == 0))
            continue;
        if (auto id = FeatureWriter::elfBuildId(f))
            out.push_back({f, *id, false});
        else if (notes)
            notes->push_back("no build-id read from " + f);
    }
    return out;
}

}  // namespace auxscope
