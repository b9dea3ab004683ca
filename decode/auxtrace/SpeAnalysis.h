// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the SPE views draw, Qt-free: a latency histogram (log2 buckets, one
// series per data source, over a selection) and a memory map (data address x
// time, loads and stores, count and mean latency per cell), with the address
// axis labelled by the processes' mappings (every MMAP/MMAP2, data ones too:
// binaries' segments, [heap], [stack]) and the ELF's data symbols (STT_OBJECT,
// STT_TLS: globals), and data addresses named `symbol+offset` where a symbol
// covers them.
//
// The memory map's address axis is compressed: only the 4 KiB pages that some
// access touched are on it, side by side in address order (page k's bytes at
// [k * 4096, (k + 1) * 4096)), so a heap at 0x5555… and a stack at 0x7ffc…
// share one picture; zooming narrows the axis down to single bytes.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "spe/SpeRecord.h"

namespace auxscope {

class PerfDataReader;

// Which records a view takes: a time range [begin, end), a thread (-1: every
// one), and (histogram) a predicate on the record, e.g. its function.
struct SpeSelection {
    uint64_t begin = 0, end = UINT64_MAX;
    int32_t tid = -1;
    std::function<bool(const spe::SpeRecord&)> accept;  // null: every record
    bool takes(const spe::SpeRecord& r) const {
        return r.time >= begin && (end == UINT64_MAX || r.time < end) && (tid < 0 || r.tid == tid) &&
               (!accept || accept(r));
    }
};

enum class SpeLatencyKind { Total, Issue, Translation };
const char* speLatencyKindName(SpeLatencyKind kind);  // "total", "issue", "translation"
// The latency of that kind; false when the record has none.
bool speLatency(const spe::SpeRecord& r, SpeLatencyKind kind, uint16_t& out);

// Buckets: 0 holds latency 0, bucket k >= 1 holds [2^(k-1), 2^k) cycles.
constexpr int kSpeLatencyBuckets = 17;
int speLatencyBucket(uint16_t cycles);
std::string speLatencyBucketLabel(int bucket);  // "0", "1", "2-3", "4-7", ..., "32768-65535"

struct SpeHistogramSeries {
    bool hasSource = false;  // false: the records without a DATA-SOURCE packet
    uint16_t source = 0;
    std::string name;  // from `sourceName`, "no source" without one
    std::array<uint64_t, kSpeLatencyBuckets> counts{};
    uint64_t records = 0;
};
struct SpeHistogram {
    SpeLatencyKind kind = SpeLatencyKind::Total;
    std::vector<SpeHistogramSeries> series;  // by source, "no source" last
    uint64_t records = 0;                    // in the selection with a latency of that kind
    uint64_t withoutLatency = 0;             // in the selection, without one
};
SpeHistogram speLatencyHistogram(std::span<const spe::SpeRecord> records, const SpeSelection& selection,
                                 SpeLatencyKind kind, const std::function<std::string(uint16_t)>& sourceName);

// One mapping of a process (MMAP/MMAP2 of any protection), or a data symbol.
struct SpeRegion {
    uint64_t start = 0, end = 0;  // [start, end)
    std::string name;             // "/usr/bin/prog", "[heap]", "[stack]", or a symbol's name
};

// The processes' mappings and the data symbols in them, for the address axis
// and symbol+offset names.
class SpeAddressSpace {
public:
    // Every MMAP/MMAP2 of the file; data symbols from the mapped ELF files found
    // at their recorded path (or in `searchDirs` by name). Files not found are noted.
    static SpeAddressSpace load(const PerfDataReader& file, const std::vector<std::string>& searchDirs = {});
    void addMapping(int32_t pid, SpeRegion region);
    void addSymbol(int32_t pid, SpeRegion symbol);

    const std::vector<SpeRegion>& mappings(int32_t pid) const;
    const std::vector<SpeRegion>& symbols(int32_t pid) const;
    // The mapping and the symbol covering `address` in `pid` (null when none).
    const SpeRegion* mappingAt(int32_t pid, uint64_t address) const;
    const SpeRegion* symbolAt(int32_t pid, uint64_t address) const;
    // "counter+0x8", else "[heap]+0x1f0", else "0x7ffc12345678".
    std::string name(int32_t pid, uint64_t address) const;
    const std::vector<std::string>& notes() const { return notes_; }

private:
    void sort();
    struct Process {
        std::vector<SpeRegion> maps, symbols;  // by start
    };
    std::map<int32_t, Process> processes_;
    std::vector<std::string> notes_;
};

// Pages touched by the records' data addresses (loads and stores), and the
// compressed axis over them.
class SpeAddressAxis {
public:
    static constexpr uint64_t kPage = 4096;
    explicit SpeAddressAxis(std::span<const spe::SpeRecord> records);
    uint64_t size() const { return pages_.size() * kPage; }  // compressed bytes
    bool empty() const { return pages_.empty(); }
    // Compressed position of a touched address (UINT64_MAX: not on the axis).
    uint64_t position(uint64_t address) const;
    uint64_t address(uint64_t position) const;  // and back
    // Page boundaries where the touched pages are not contiguous (a gap in the addresses).
    const std::vector<uint64_t>& pages() const { return pages_; }

private:
    std::vector<uint64_t> pages_;  // page numbers, sorted
};

struct SpeMemoryMapQuery {
    uint64_t begin = 0, end = 0;        // time [begin, end)
    uint64_t posBegin = 0, posEnd = 0;  // compressed addresses [posBegin, posEnd)
    int timeBins = 100, addressBins = 100;
    int32_t tid = -1;  // -1: every thread
    bool loads = true, stores = true;
};
struct SpeMemoryMap {
    SpeMemoryMapQuery query;
    // Per cell [addressBin * timeBins + timeBin]: accesses, and the sum of their total latency.
    std::vector<uint32_t> count;
    std::vector<uint64_t> latencySum;
    uint32_t maxCount = 0;
    double maxMeanLatency = 0;
    uint64_t accesses = 0;
};
// Whether `r` is an access the map draws (a load or store with a data address, of the query's kinds).
bool speMapTakes(const spe::SpeRecord& r, const SpeMemoryMapQuery& q);
// The cell of `r` (false: outside the map).
bool speMapCell(const SpeAddressAxis& axis, const SpeMemoryMapQuery& q, const spe::SpeRecord& r, int& timeBin,
                int& addressBin);
SpeMemoryMap speMemoryMap(std::span<const spe::SpeRecord> records, const SpeAddressAxis& axis,
                          const SpeMemoryMapQuery& query);
// The records in one cell (indices into `records`, by time).
std::vector<size_t> speMapCellRecords(std::span<const spe::SpeRecord> records, const SpeAddressAxis& axis,
                                      const SpeMemoryMapQuery& query, int timeBin, int addressBin);

}  // namespace auxscope
