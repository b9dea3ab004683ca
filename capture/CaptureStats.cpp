// SPDX-License-Identifier: GPL-3.0-or-later
#include "CaptureStats.h"

#include <cstring>

namespace auxscope {

static_assert(sizeof(CpuCounters) % 8 == 0, "CpuCounters must be a sequence of uint64_t");
constexpr size_t kCounterWords = sizeof(CpuCounters) / 8;

CaptureStats::CaptureStats(std::vector<int> cpus) {
    for (int c : cpus) {
        auto s = std::make_unique<Slot>();
        s->cpu = c;
        for (auto& a : s->counters)
            a.store(0, std::memory_order_relaxed);
        slots_.push_back(std::move(s));
    }
}

CpuStatsSnapshot CaptureStats::snapshot(size_t i) const {
    const Slot& s = *slots_[i];
    CpuStatsSnapshot out;
    out.cpu = s.cpu;
    uint64_t words[kCounterWords];
    for (size_t w = 0; w < kCounterWords; ++w)
        words[w] = s.counters[w].load(std::memory_order_relaxed);
    std::memcpy(&out.totals, words, sizeof words);
    out.ringBytes = s.ringBytes.load(std::memory_order_relaxed);
    out.auxRingBytes = s.auxRingBytes.load(std::memory_order_relaxed);
    out.fillPercent = s.fill.load(std::memory_order_relaxed);
    out.fillPeakPercent = s.fillPeak.load(std::memory_order_relaxed);
    out.fillMaxPercent = s.fillMax.load(std::memory_order_relaxed);
    out.bytesPerSecond = s.bps.load(std::memory_order_relaxed);
    out.recordsPerSecond = s.rps.load(std::memory_order_relaxed);
    out.auxFillPercent = s.auxFill.load(std::memory_order_relaxed);
    out.hasAux = s.hasAux.load(std::memory_order_relaxed);
    out.auxSnapshotMode = s.auxSnapshotMode.load(std::memory_order_relaxed);
    out.kernelLostAvailable = s.kernelLostAvailable.load(std::memory_order_relaxed);
    out.backwardMode = s.backwardMode.load(std::memory_order_relaxed);
    out.backwardWrittenBytes = s.backwardWritten.load(std::memory_order_relaxed);
    return out;
}

std::vector<CpuStatsSnapshot> CaptureStats::snapshotAll() const {
    std::vector<CpuStatsSnapshot> v;
    v.reserve(slots_.size());
    for (size_t i = 0; i < slots_.size(); ++i)
        v.push_back(snapshot(i));
    return v;
}

void CaptureStats::publish(size_t i, const CpuStatsSnapshot& in) {
    Slot& s = *slots_[i];
    uint64_t words[kCounterWords];
    std::memcpy(words, &in.totals, sizeof words);
    for (size_t w = 0; w < kCounterWords; ++w)
        s.counters[w].store(words[w], std::memory_order_relaxed);
    s.ringBytes.store(in.ringBytes, std::memory_order_relaxed);
    s.auxRingBytes.store(in.auxRingBytes, std::memory_order_relaxed);
    s.fill.store(in.fillPercent, std::memory_order_relaxed);
    s.fillPeak.store(in.fillPeakPercent, std::memory_order_relaxed);
    s.fillMax.store(in.fillMaxPercent, std::memory_order_relaxed);
    s.bps.store(in.bytesPerSecond, std::memory_order_relaxed);
    s.rps.store(in.recordsPerSecond, std::memory_order_relaxed);
    s.auxFill.store(in.auxFillPercent, std::memory_order_relaxed);
    s.hasAux.store(in.hasAux, std::memory_order_relaxed);
    s.auxSnapshotMode.store(in.auxSnapshotMode, std::memory_order_relaxed);
    s.kernelLostAvailable.store(in.kernelLostAvailable, std::memory_order_relaxed);
    s.backwardMode.store(in.backwardMode, std::memory_order_relaxed);
    s.backwardWritten.store(in.backwardWrittenBytes, std::memory_order_relaxed);
}

}  // namespace auxscope
