// SPDX-License-Identifier: GPL-3.0-or-later
#include "auxtrace/SpeAnalysis.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <filesystem>
#include <set>

#include "images/ElfDataSymbols.h"
#include "perfdata/PerfDataReader.h"

namespace auxscope {

const char* speLatencyKindName(SpeLatencyKind kind) {
    switch (kind) {
        case SpeLatencyKind::Issue:
            return "issue";
        case SpeLatencyKind::Translation:
            return "translation";
        default:
            return "total";
    }
}

bool speLatency(const spe::SpeRecord& r, SpeLatencyKind kind, uint16_t& out) {
    switch (kind) {
        case SpeLatencyKind::Total:
            out = r.totalLatency;
            return r.hasTotalLatency;
        case SpeLatencyKind::Issue:
            out = r.issueLatency;
            return r.hasIssueLatency;
        case SpeLatencyKind::Translation:
            out = r.translationLatency;
            return r.hasTranslationLatency;
    }
    return false;
}

int speLatencyBucket(uint16_t cycles) {
    return cycles == 0 ? 0 : int(std::bit_width(unsigned(cycles)));
}

std::string speLatencyBucketLabel(int bucket) {
    if (bucket <= 0) return "0";
    if (bucket == 1) return "1";
    const uint64_t lo = uint64_t(1) << (bucket - 1);
    return std::to_string(lo) + "-" + std::to_string(2 * lo - 1);
}

SpeHistogram speLatencyHistogram(std::span<const spe::SpeRecord> records, const SpeSelection& selection,
                                 SpeLatencyKind kind,
                                 const std::function<std::string(uint16_t)>& sourceName) {
    SpeHistogram h;
    h.kind = kind;
    std::map<uint16_t, SpeHistogramSeries> bySource;
    SpeHistogramSeries none;
    none.name = "no source";
    for (const spe::SpeRecord& r : records) {
        if (!selection.takes(r)) continue;
        uint16_t v = 0;
        if (!speLatency(r, kind, v)) {
            ++h.withoutLatency;
            continue;
        }
        SpeHistogramSeries& s = r.hasDataSource ? bySource[r.dataSource] : none;
        ++s.counts[size_t(speLatencyBucket(v))];
        ++s.records;
        ++h.records;
    }
    for (auto& [source, s] : bySource) {
        s.hasSource = true;
        s.source = source;
        s.name = sourceName ? sourceName(source) : std::to_string(source);
        h.series.push_back(std::move(s));
    }
    if (none.records) h.series.push_back(std::move(none));
    return h;
}

// ---- Address space --------------------------------------------------------

SpeAddressSpace SpeAddressSpace::load(const PerfDataReader& file,
                                      const std::vector<std::string>& searchDirs) {
    SpeAddressSpace space;
    struct FileMap {
        int32_t pid;
        uint64_t start, len, pgoff;
    };
    std::map<std::string, std::vector<FileMap>> byFile;
    (void)file.forEachRecord([&](const PerfRecord& rec) {
        const uint32_t type = rec.header.type;
        if (type != PERF_RECORD_MMAP && type != PERF_RECORD_MMAP2) return true;
        const ParsedRecord& r = rec.parsed;
        const uint16_t cpumode = r.misc & PERF_RECORD_MISC_CPUMODE_MASK;
        if (cpumode == PERF_RECORD_MISC_KERNEL || cpumode == PERF_RECORD_MISC_GUEST_KERNEL || r.pid == -1)
            return true;
        std::string name(r.filename);
        space.addMapping(r.pid, {r.mapStart, r.mapStart + r.mapLen, name.empty() ? "[anon]" : name});
        if (!name.empty() && name[0] == '/')
            byFile[name].push_back({r.pid, r.mapStart, r.mapLen, r.mapPgoff});
        return true;
    });
    for (const auto& [path, maps] : byFile) {
        std::vector<ElfDataSymbol> symbols;
        bool found = readElfDataSymbols(path, symbols);
        for (size_t d = 0; !found && d < searchDirs.size(); ++d)
            found = readElfDataSymbols(
                (std::filesystem::path(searchDirs[d]) / std::filesystem::path(path).filename()).string(),
                symbols);
        if (!found) {
            if (path.rfind("/dev/", 0) != 0 && path.rfind("//anon", 0) != 0 && path.rfind("/memfd:", 0) != 0)
                space.notes_.push_back(path + ": not found, its data symbols are not named");
            continue;
        }
        // Each symbol where a mapping of its file offset placed it (once per process).
        std::set<std::pair<int32_t, uint64_t>> placed;
        for (const FileMap& m : maps)
            for (const ElfDataSymbol& s : symbols) {
                if (s.offset < m.pgoff || s.offset >= m.pgoff + m.len) continue;
                const uint64_t at = m.start + (s.offset - m.pgoff);
                if (placed.insert({m.pid, at}).second) space.addSymbol(m.pid, {at, at + s.size, s.name});
            }
    }
    space.sort();
    return space;
}

void SpeAddressSpace::addMapping(int32_t pid, SpeRegion region) {
    processes_[pid].maps.push_back(std::move(region));
}
void SpeAddressSpace::addSymbol(int32_t pid, SpeRegion symbol) {
    processes_[pid].symbols.push_back(std::move(symbol));
}

void SpeAddressSpace::sort() {
    auto byStart = [](const SpeRegion& a, const SpeRegion& b) { return a.start < b.start; };
    for (auto& [pid, p] : processes_) {
        std::stable_sort(p.maps.begin(), p.maps.end(), byStart);
        std::stable_sort(p.symbols.begin(), p.symbols.end(), byStart);
    }
}

const std::vector<SpeRegion>& SpeAddressSpace::mappings(int32_t pid) const {
    static const std::vector<SpeRegion> none;
    auto it = processes_.find(pid);
    return it == processes_.end() ? none : it->second.maps;
}

const std::vector<SpeRegion>& SpeAddressSpace::symbols(int32_t pid) const {
    static const std::vector<SpeRegion> none;
    auto it = processes_.find(pid);
    return it == processes_.end() ? none : it->second.symbols;
}

namespace {
// The last region starting at or before `address` that covers it (regions sorted by start;
// later mappings of the same start win, as a later mmap replaces an earlier one).
const SpeRegion* covering(const std::vector<SpeRegion>& regions, uint64_t address) {
    auto it = std::upper_bound(regions.begin(), regions.end(), address,
                               [](uint64_t a, const SpeRegion& r) { return a < r.start; });
    // Look back a little for a region that started earlier and still covers it.
    for (int k = 0; it != regions.begin() && k < 64; ++k) {
        --it;
        if (address < it->end) return &*it;
    }
    return nullptr;
}
}  // namespace

const SpeRegion* SpeAddressSpace::mappingAt(int32_t pid, uint64_t address) const {
    return covering(mappings(pid), address);
}
const SpeRegion* SpeAddressSpace::symbolAt(int32_t pid, uint64_t address) const {
    return covering(symbols(pid), address);
}

std::string SpeAddressSpace::name(int32_t pid, uint64_t address) const {
    char buf[32];
    auto plus = [&](const SpeRegion& r) {
        const uint64_t off = address - r.start;
        if (!off) return r.name;
        std::snprintf(buf, sizeof buf, "+0x%llx", static_cast<unsigned long long>(off));
        return r.name + buf;
    };
    if (const SpeRegion* s = symbolAt(pid, address)) return plus(*s);
    if (const SpeRegion* m = mappingAt(pid, address)) return plus(*m);
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(address));
    return buf;
}

// ---- Memory map -----------------------------------------------------------

SpeAddressAxis::SpeAddressAxis(std::span<const spe::SpeRecord> records) {
    for (const spe::SpeRecord& r : records)
        if (r.hasDataVa && (r.isLoad || r.isStore)) pages_.push_back(r.dataVa / kPage);
    std::sort(pages_.begin(), pages_.end());
    pages_.erase(std::unique(pages_.begin(), pages_.end()), pages_.end());
}

uint64_t SpeAddressAxis::position(uint64_t address) const {
    auto it = std::lower_bound(pages_.begin(), pages_.end(), address / kPage);
    if (it == pages_.end() || *it != address / kPage) return UINT64_MAX;
    return uint64_t(it - pages_.begin()) * kPage + address % kPage;
}

uint64_t SpeAddressAxis::address(uint64_t position) const {
    if (pages_.empty()) return 0;
    const size_t k = std::min<size_t>(position / kPage, pages_.size() - 1);
    return pages_[k] * kPage + position % kPage;
}

bool speMapTakes(const spe::SpeRecord& r, const SpeMemoryMapQuery& q) {
    return r.hasDataVa && ((q.loads && r.isLoad) || (q.stores && r.isStore)) && (q.tid < 0 || r.tid == q.tid);
}

bool speMapCell(const SpeAddressAxis& axis, const SpeMemoryMapQuery& q, const spe::SpeRecord& r, int& timeBin,
                int& addressBin) {
    if (!speMapTakes(r, q) || r.time < q.begin || r.time >= q.end || q.posEnd <= q.posBegin) return false;
    const uint64_t pos = axis.position(r.dataVa);
    if (pos == UINT64_MAX || pos < q.posBegin || pos >= q.posEnd) return false;
    timeBin = int((unsigned __int128)(r.time - q.begin) * unsigned(q.timeBins) / (q.end - q.begin));
    addressBin =
        int((unsigned __int128)(pos - q.posBegin) * unsigned(q.addressBins) / (q.posEnd - q.posBegin));
    return true;
}

SpeMemoryMap speMemoryMap(std::span<const spe::SpeRecord> records, const SpeAddressAxis& axis,
                          const SpeMemoryMapQuery& query) {
    SpeMemoryMap m;
    m.query = query;
    const size_t cells = size_t(std::max(query.timeBins, 0)) * size_t(std::max(query.addressBins, 0));
    m.count.assign(cells, 0);
    m.latencySum.assign(cells, 0);
    if (!cells || query.end <= query.begin) return m;
    for (const spe::SpeRecord& r : records) {
        int t = 0, a = 0;
        if (!speMapCell(axis, query, r, t, a)) continue;
        const size_t c = size_t(a) * size_t(query.timeBins) + size_t(t);
        ++m.count[c];
        m.latencySum[c] += r.totalLatency;
        ++m.accesses;
    }
    for (size_t c = 0; c < cells; ++c) {
        if (!m.count[c]) continue;
        m.maxCount = std::max(m.maxCount, m.count[c]);
        m.maxMeanLatency = std::max(m.maxMeanLatency, double(m.latencySum[c]) / m.count[c]);
    }
    return m;
}

std::vector<size_t> speMapCellRecords(std::span<const spe::SpeRecord> records, const SpeAddressAxis& axis,
                                      const SpeMemoryMapQuery& query, int timeBin, int addressBin) {
    std::vector<size_t> out;
    for (size_t i = 0; i < records.size(); ++i) {
        int t = 0, a = 0;
        if (speMapCell(axis, query, records[i], t, a) && t == timeBin && a == addressBin) out.push_back(i);
    }
    std::stable_sort(out.begin(), out.end(),
                     [&](size_t x, size_t y) { return records[x].time < records[y].time; });
    return out;
}

}  // namespace auxscope
