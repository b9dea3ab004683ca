// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CPU lane's level of detail: per bucket the process (a thread of no known
// process: the thread) that ran most of it, how much of the bucket it ran and
// how much any thread ran (the rest is idle), at a few resolutions as SpanLod;
// and the colour of every process on the lane, found once. A zoomed-out frame
// reads a few cells per pixel column instead of the lane's slices. Lanes of
// fewer than kCpuSummaryMin slices keep only their colours: they are walked.
#include <QRgb>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "spans/TimelineData.h"

namespace auxscope {

struct CpuLod {
    struct Cell {
        int32_t key = -1;   // into keys (-1: no thread ran)
        uint8_t cover = 0;  // of 255: the part of the bucket `key` ran
        uint8_t busy = 0;   // of 255: the part any thread ran
    };
    static constexpr size_t kCpuSummaryMin = 2048;
    size_t slices = 0;
    std::vector<int64_t> keys;  // sorted: pid > 0, or -tid - 1
    std::vector<QRgb> rgb;      // per key
    uint64_t t0 = 0, extentEnd = 0;
    std::vector<uint64_t> bucketDur;
    std::vector<uint32_t> n;
    std::vector<std::vector<Cell>> cells;  // [level][bucket]
    bool summarized() const { return !cells.empty(); }
    int32_t keyIndex(int64_t key) const {
        auto it = std::lower_bound(keys.begin(), keys.end(), key);
        return it != keys.end() && *it == key ? int32_t(it - keys.begin()) : -1;
    }
    size_t bytes() const;
};

std::unique_ptr<CpuLod> buildCpuLod(const std::vector<TimelineData::CpuSlice>& slices);

// A slice's colour key: its process, or for a thread of no known process the thread.
inline int64_t laneKey(const TimelineData::CpuSlice& s) {
    return s.pid > 0 ? int64_t(s.pid) : -int64_t(s.tid) - 1;
}

// `part` of `whole` in 255ths (at least 1 when there is any).
inline uint8_t share255(uint64_t part, uint64_t whole) {
    return part ? uint8_t(std::clamp<uint64_t>((part * 255 + whole / 2) / whole, 1, 255)) : 0;
}

// Per pixel column (or bucket): the time each process ran in it, the most there
// is and the total; a column rarely sees more than a few processes.
struct ColumnTally {
    std::vector<std::pair<int32_t, uint64_t>> ran;
    uint64_t busy = 0;
    void add(int32_t key, uint64_t ns) {
        busy += ns;
        for (auto& [k, t] : ran)
            if (k == key) {
                t += ns;
                return;
            }
        ran.push_back({key, ns});
    }
    std::pair<int32_t, uint64_t> most() const {
        std::pair<int32_t, uint64_t> best{-1, 0};
        for (const auto& r : ran)
            if (r.second > best.second) best = r;
        return best;
    }
    void clear() {
        ran.clear();
        busy = 0;
    }
};

}  // namespace auxscope
