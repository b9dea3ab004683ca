// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Sorting what the sideband gives nearly in order: records of one CPU come in
// time order, but the CPUs' streams are interleaved in the file. So a vector of
// slices or samples is sorted by bucketing it by CPU (stably, O(n)), checking
// each bucket (a damaged file's is sorted on its own) and merging the buckets
// pairwise: O(n log CPUs) instead of a full sort's O(n log n). Qt-free.
#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace auxscope {

// Sorts [b, e) stably where it is nearly in order already: a record of one CPU
// can be stamped a little before the one written ahead of it (an interrupt's
// sample nested in another's). Insertion sort moves those few; past 8 moves per
// element it gives up for a stable sort (a damaged or unordered input).
template <typename It, typename Less>
void sortNearlySorted(It b, It e, Less less) {
    if (e - b < 2) return;
    const size_t budget = 8 * size_t(e - b) + 64;
    size_t moved = 0;
    for (It i = b + 1; i < e; ++i) {
        if (!less(*i, *(i - 1))) continue;
        auto v = std::move(*i);
        It j = i;
        do {
            *j = std::move(*(j - 1));
            --j;
            ++moved;
        } while (j > b && less(v, *(j - 1)));
        *j = std::move(v);
        if (moved > budget) {
            std::stable_sort(b, e, less);
            return;
        }
    }
}

// Sorts `v` by `less` (stable within a bucket). `cpuOf(x)` names x's stream;
// values outside [-1, 65535) fall back to one stable sort of everything.
template <typename T, typename CpuOf, typename Less>
void sortCpuStreams(std::vector<T>& v, CpuOf cpuOf, Less less) {
    if (std::is_sorted(v.begin(), v.end(), less)) return;
    int maxSlot = 0;
    bool oneCpu = true;
    for (const T& x : v) {
        const long slot = long(cpuOf(x)) + 1;
        if (slot < 0 || slot > 65535) {
            std::stable_sort(v.begin(), v.end(), less);
            return;
        }
        maxSlot = std::max(maxSlot, int(slot));
        oneCpu = oneCpu && cpuOf(x) == cpuOf(v.front());
    }
    if (oneCpu) {  // one stream: in place
        sortNearlySorted(v.begin(), v.end(), less);
        return;
    }
    std::vector<size_t> start(size_t(maxSlot) + 2, 0);
    for (const T& x : v)
        ++start[size_t(long(cpuOf(x)) + 1) + 1];
    for (size_t i = 1; i < start.size(); ++i)
        start[i] += start[i - 1];
    // Bucketed into a buffer left uninitialised (its pages are written once), then
    // merged pairwise back and forth between it and `v`'s own storage: no
    // inplace_merge, whose temporary buffer took fresh pages from the kernel for
    // every merge (a tenth of a sideband load's time in page clearing).
    const size_t n = v.size();
    auto buffer = std::make_unique_for_overwrite<T[]>(n);
    T* src = buffer.get();
    T* dst = v.data();
    std::vector<size_t> fill(start.begin(), start.end() - 1);
    for (T& x : v)
        src[fill[size_t(long(cpuOf(x)) + 1)]++] = std::move(x);
    std::vector<std::pair<size_t, size_t>> blocks;
    for (size_t i = 0; i + 1 < start.size(); ++i)
        if (start[i] < start[i + 1]) blocks.push_back({start[i], start[i + 1]});
    for (const auto& [b, e] : blocks)
        sortNearlySorted(src + b, src + e, less);
    while (blocks.size() > 1) {
        std::vector<std::pair<size_t, size_t>> merged;
        for (size_t i = 0; i < blocks.size(); i += 2) {
            if (i + 1 == blocks.size()) {
                std::move(src + blocks[i].first, src + blocks[i].second, dst + blocks[i].first);
                merged.push_back(blocks[i]);
                break;
            }
            // std::merge takes the first range's element on ties: stable, as inplace_merge.
            std::merge(std::make_move_iterator(src + blocks[i].first),
                       std::make_move_iterator(src + blocks[i].second),
                       std::make_move_iterator(src + blocks[i + 1].first),
                       std::make_move_iterator(src + blocks[i + 1].second), dst + blocks[i].first, less);
            merged.push_back({blocks[i].first, blocks[i + 1].second});
        }
        blocks = std::move(merged);
        std::swap(src, dst);
    }
    if (src != v.data()) std::move(src, src + n, v.data());
}

}  // namespace auxscope
