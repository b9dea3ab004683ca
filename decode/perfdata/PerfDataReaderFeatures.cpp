// SPDX-License-Identifier: GPL-3.0-or-later
// Decoding of perf.data feature sections (the HEADER_* bits of the file header,
// or PERF_RECORD_HEADER_FEATURE records in pipe mode). Layouts follow Linux's
// tools/perf/Documentation/perf.data-file-format.txt; where perf's writer differs
// from that text (NRCPUS order, TOTAL_MEM unit, the AUXTRACE index entry size)
// the comments say what perf actually writes.
#include <algorithm>
#include <cstdio>

#include "perfdata/PerfDataReaderInternal.h"

namespace auxscope::perfdata_detail {
namespace {

using perfdata::AuxtraceIndexEntry;

std::string tooShort(const char* what, size_t left) {
    return std::string("cut short in ") + what + " (" + std::to_string(left) + " bytes left)";
}

// An element count read from the file, bounded by how many elements of at least
// `minElementSize` bytes could possibly follow (so damaged counts cannot make us
// reserve or loop beyond the section).
bool readCount(ByteCursor& c, uint32_t& n, size_t minElementSize) {
    if (!c.read(n)) return false;
    return minElementSize == 0 || n <= c.left() / minElementSize;
}

std::optional<std::string> stringList(ByteCursor& c, std::vector<std::string>& out, const char* what) {
    uint32_t nr = 0;
    if (!readCount(c, nr, 4)) return tooShort(what, c.left());
    out.reserve(nr);
    for (uint32_t i = 0; i < nr; ++i) {
        std::string s;
        if (!c.perfString(s)) return tooShort(what, c.left());
        out.push_back(std::move(s));
    }
    return std::nullopt;
}

std::optional<std::string> oneString(ByteCursor& c, std::optional<std::string>& out, const char* what) {
    std::string s;
    if (!c.perfString(s)) return tooShort(what, c.left());
    out = std::move(s);
    return std::nullopt;
}

std::optional<std::string> eventDesc(ByteCursor& c, PerfFeatures& out) {
    uint32_t nr = 0, attrSize = 0;
    if (!c.read(nr) || !c.read(attrSize)) return tooShort("event_desc header", c.left());
    // The smallest perf_event_attr ever written (PERF_ATTR_SIZE_VER0) is 64 bytes.
    if (attrSize < 64 || attrSize > 4096)
        return "event_desc attr size " + std::to_string(attrSize) + " is implausible";
    if (nr > c.left() / (attrSize + 8))
        return "event_desc count " + std::to_string(nr) + " exceeds the section";
    std::vector<PerfEventDesc> events;
    events.reserve(nr);
    for (uint32_t i = 0; i < nr; ++i) {
        PerfEventDesc e;
        std::span<const uint8_t> attr;
        if (!c.take(attrSize, attr)) return tooShort("event_desc attr", c.left());
        std::memcpy(&e.attr, attr.data(), std::min<size_t>(attrSize, sizeof e.attr));
        uint32_t nrIds = 0;
        if (!c.read(nrIds)) return tooShort("event_desc id count", c.left());
        if (!c.perfString(e.name)) return tooShort("event_desc name", c.left());
        if (nrIds > c.left() / 8)
            return "event_desc id count " + std::to_string(nrIds) + " exceeds the section";
        e.ids.resize(nrIds);
        for (auto& id : e.ids)
            c.read(id);
        events.push_back(std::move(e));
    }
    out.eventDesc = std::move(events);
    return std::nullopt;
}

std::optional<std::string> cpuTopology(ByteCursor& c, PerfFeatures& out) {
    PerfCpuTopology t;
    if (auto e = stringList(c, t.coreSiblings, "core siblings")) return e;
    if (auto e = stringList(c, t.threadSiblings, "thread siblings")) return e;
    // perf >= 4.18 appends core and socket id per CPU (as many as NRCPUS says are
    // available), perf >= 5.5 then die siblings and a die id per CPU.
    if (c.left() > 0 && out.nrCpus) {
        const uint32_t n = out.nrCpus->available;
        if (c.left() >= size_t(n) * 8) {
            t.cpus.resize(n);
            for (auto& cpu : t.cpus)
                c.read(cpu.coreId), c.read(cpu.socketId);
            if (c.left() > 0) {
                if (auto e = stringList(c, t.dieSiblings, "die siblings")) return e;
                if (c.left() >= size_t(n) * 4) {
                    t.dieIds.resize(n);
                    for (auto& d : t.dieIds)
                        c.read(d);
                }
            }
        }
    }
    out.cpuTopology = std::move(t);
    return std::nullopt;
}

std::optional<std::string> pmuMappings(ByteCursor& c, PerfFeatures& out) {
    uint32_t nr = 0;
    if (!readCount(c, nr, 8)) return tooShort("pmu_mappings", c.left());
    std::vector<PerfPmuMapping> v(nr);
    for (auto& m : v)
        if (!c.read(m.type) || !c.perfString(m.name)) return tooShort("pmu_mappings entry", c.left());
    out.pmuMappings = std::move(v);
    return std::nullopt;
}

std::optional<std::string> groupDesc(ByteCursor& c, PerfFeatures& out) {
    uint32_t nr = 0;
    if (!readCount(c, nr, 12)) return tooShort("group_desc", c.left());
    std::vector<PerfGroupDesc> v(nr);
    for (auto& g : v)
        if (!c.perfString(g.name) || !c.read(g.leaderIndex) || !c.read(g.members))
            return tooShort("group_desc entry", c.left());
    out.groupDesc = std::move(v);
    return std::nullopt;
}

std::optional<std::string> buildIds(ByteCursor& c, PerfFeatures& out) {
    // A sequence of entries, each sized by its own header.
    std::vector<PerfBuildId> v = out.buildIds.value_or(std::vector<PerfBuildId>{});
    std::span<const uint8_t> all = c.rest();
    size_t pos = 0;
    while (pos < all.size()) {
        perf_event_header h;
        if (all.size() - pos < sizeof h) return tooShort("build_id entry header", all.size() - pos);
        std::memcpy(&h, all.data() + pos, sizeof h);
        if (h.size < sizeof h || h.size > all.size() - pos)
            return "build_id entry of size " + std::to_string(h.size) + " does not fit the " +
                   std::to_string(all.size() - pos) + " bytes left";
        PerfBuildId b;
        if (auto e = decodeBuildIdEntry(all.subspan(pos, h.size), b)) return e;
        v.push_back(std::move(b));
        pos += h.size;
    }
    out.buildIds = std::move(v);
    return std::nullopt;
}

std::optional<std::string> auxtraceIndex(ByteCursor& c, PerfFeatures& out) {
    const size_t size = c.left();
    std::vector<AuxtraceIndexEntry> v;
    uint64_t nr = 0;
    // perf: u64 count, then the entries. simpleperf writes the entries alone; the
    // two cannot be confused, as perf's size is 8 modulo 16 and simpleperf's 0.
    if (size >= 8 && (size - 8) % sizeof(AuxtraceIndexEntry) == 0) {
        c.read(nr);
        if (nr != (size - 8) / sizeof(AuxtraceIndexEntry))
            return "auxtrace index count " + std::to_string(nr) + " does not match its " +
                   std::to_string(size) + " bytes";
    } else if (size % sizeof(AuxtraceIndexEntry) == 0) {
        nr = size / sizeof(AuxtraceIndexEntry);
    } else {
        return "auxtrace index of " + std::to_string(size) +
               " bytes is neither perf's nor simpleperf's layout";
    }
    v.resize(nr);
    for (auto& e : v)
        c.read(e);
    out.auxtraceIndex = std::move(v);
    return std::nullopt;
}

std::optional<std::string> metaInfo(ByteCursor& c, PerfFeatures& out) {
    // NUL-separated strings: key, value, key, value, ...
    std::vector<std::pair<std::string, std::string>> kv;
    std::vector<std::string> parts;
    std::span<const uint8_t> all = c.rest();
    size_t start = 0;
    for (size_t i = 0; i < all.size(); ++i) {
        if (all[i] != 0) continue;
        parts.emplace_back(reinterpret_cast<const char*>(all.data() + start), i - start);
        start = i + 1;
    }
    for (size_t i = 0; i + 1 < parts.size(); i += 2)
        kv.emplace_back(parts[i], parts[i + 1]);
    out.simpleperfMetaInfo = std::move(kv);
    return std::nullopt;
}

}  // namespace

bool ByteCursor::perfString(std::string& s) {
    uint32_t len = 0;
    std::span<const uint8_t> bytes;
    if (!read(len) || !take(len, bytes)) return false;
    s = cString(bytes);
    return true;
}

std::string cString(std::span<const uint8_t> bytes) {
    auto p = reinterpret_cast<const char*>(bytes.data());
    return std::string(p, strnlen(p, bytes.size()));
}

std::optional<std::string> decodeBuildIdEntry(std::span<const uint8_t> entry, PerfBuildId& out) {
    ByteCursor c(entry);
    perf_event_header h;
    std::span<const uint8_t> id;
    if (!c.read(h) || !c.read(out.pid) || !c.take(24, id)) return tooShort("build_id entry", c.left());
    out.misc = h.misc;
    // With PERF_RECORD_MISC_BUILD_ID_SIZE, byte 20 says how many of the first 20
    // bytes are the id; older writers always mean 20.
    size_t n = 20;
    if ((h.misc & perfdata::kBuildIdMiscSize) && id[20] <= 20) n = id[20];
    out.id.assign(id.begin(), id.begin() + n);
    out.filename = cString(c.rest());
    return std::nullopt;
}

std::optional<std::string> decodeFeature(unsigned id, std::span<const uint8_t> bytes, PerfFeatures& out,
                                         bool& decoded) {
    using namespace perfdata;
    ByteCursor c(bytes);
    decoded = true;
    switch (id) {
        case kFeatHostname:
            return oneString(c, out.hostname, "hostname");
        case kFeatOsRelease:
            return oneString(c, out.osRelease, "osrelease");
        case kFeatVersion:
            return oneString(c, out.version, "version");
        case kFeatArch:
            return oneString(c, out.arch, "arch");
        case kFeatCpuDesc:
            return oneString(c, out.cpuDesc, "cpudesc");
        case kFeatCpuId:
            return oneString(c, out.cpuId, "cpuid");
        case kFeatNrCpus: {
            // perf writes the CPUs available (max present) first, then those online.
            PerfNrCpus n;
            if (!c.read(n.available) || !c.read(n.online)) return tooShort("nrcpus", c.left());
            out.nrCpus = n;
            return std::nullopt;
        }
        case kFeatTotalMem: {
            uint64_t kb = 0;  // perf stores kB (MemTotal of /proc/meminfo)
            if (!c.read(kb)) return tooShort("total_mem", c.left());
            out.totalMemKb = kb;
            return std::nullopt;
        }
        case kFeatCmdline: {
            std::vector<std::string> v;
            if (auto e = stringList(c, v, "cmdline")) return e;
            out.cmdline = std::move(v);
            return std::nullopt;
        }
        case kFeatEventDesc:
            return eventDesc(c, out);
        case kFeatCpuTopology:
            return cpuTopology(c, out);
        case kFeatPmuMappings:
            return pmuMappings(c, out);
        case kFeatGroupDesc:
            return groupDesc(c, out);
        case kFeatBuildId:
            return buildIds(c, out);
        case kFeatAuxtrace:
            return auxtraceIndex(c, out);
        case kFeatSampleTime: {
            PerfSampleTime t;
            if (!c.read(t.first) || !c.read(t.last)) return tooShort("sample_time", c.left());
            out.sampleTime = t;
            return std::nullopt;
        }
        case kFeatClockId: {
            uint64_t v = 0;
            if (!c.read(v)) return tooShort("clockid", c.left());
            out.clockid = v;
            return std::nullopt;
        }
        case kFeatClockData: {
            PerfClockData d;
            if (!c.read(d.version) || !c.read(d.clockid) || !c.read(d.wallClockNs) ||
                !c.read(d.clockidTimeNs))
                return tooShort("clock_data", c.left());
            out.clockData = d;
            return std::nullopt;
        }
        case kFeatCompressed: {
            CompressedFeature f;
            if (!c.read(f)) return tooShort("compressed", c.left());
            out.compressed = f;
            return std::nullopt;
        }
        case kSimpleperfFeatMetaInfo:
            return metaInfo(c, out);
        default:
            decoded = false;
            return std::nullopt;
    }
}

}  // namespace auxscope::perfdata_detail

namespace auxscope {

std::string PerfBuildId::hex() const {
    std::string s;
    char buf[3];
    for (uint8_t b : id) {
        std::snprintf(buf, sizeof buf, "%02x", b);
        s += buf;
    }
    return s;
}

}  // namespace auxscope
