// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/PerfDataReader.h"

#include "perfdata/CaptureStatsFeature.h"
#include "perfdata/TriggerFeature.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "perfdata/PerfDataReaderInternal.h"

namespace auxscope {

using namespace perfdata;
using perfdata_detail::ByteCursor;
using perfdata_detail::cString;

namespace {

constexpr uint32_t kUserTypeStart = 64;           // PERF_RECORD_USER_TYPE_START
constexpr uint32_t kSimpleperfTypeStart = 32768;  // simpleperf's own record types
constexpr uint64_t kPipeHeaderSize = 16;
constexpr uint64_t kOldFileHeaderSize = 72;    // before the feature bitmap existed
constexpr uint64_t kPrefetchAhead = 1024;      // bytes the record walk prefetches ahead
constexpr size_t kMaxListedRecordIssues = 20;  // per kind; the rest are counted
// A COMPRESSED record is at most 64 KiB; zstd's ratio on perf records stays far
// below 1000, so anything beyond this is a damaged or hostile stream.
constexpr size_t kMaxPendingDecompressed = size_t(256) << 20;

std::string offsetText(uint64_t off) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "offset %" PRIu64 " (0x%" PRIx64 ")", off, off);
    return buf;
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return buf;
}

const char* userRecordName(uint32_t type) {
    switch (type) {
        case kRecordHeaderAttr:
            return "ATTR";
        case kRecordHeaderEventType:
            return "EVENT_TYPE";
        case kRecordHeaderTracingData:
            return "TRACING_DATA";
        case kRecordHeaderBuildId:
            return "BUILD_ID";
        case kRecordFinishedRound:
            return "FINISHED_ROUND";
        case kRecordIdIndex:
            return "ID_INDEX";
        case kRecordAuxtraceInfo:
            return "AUXTRACE_INFO";
        case kRecordAuxtrace:
            return "AUXTRACE";
        case kRecordAuxtraceError:
            return "AUXTRACE_ERROR";
        case kRecordThreadMap:
            return "THREAD_MAP";
        case kRecordCpuMap:
            return "CPU_MAP";
        case kRecordStatConfig:
            return "STAT_CONFIG";
        case kRecordStat:
            return "STAT";
        case kRecordStatRound:
            return "STAT_ROUND";
        case kRecordEventUpdate:
            return "EVENT_UPDATE";
        case kRecordTimeConv:
            return "TIME_CONV";
        case kRecordHeaderFeature:
            return "FEATURE";
        case kRecordCompressed:
            return "COMPRESSED";
        case kRecordFinishedInit:
            return "FINISHED_INIT";
        case kRecordCompressed2:
            return "COMPRESSED2";
        default:
            return nullptr;
    }
}

int64_t cpuValue(uint32_t cpu) {
    return cpu == UINT32_MAX ? -1 : int64_t(cpu);
}

// Owns the file's bytes: a read-only mapping of a regular file, or a copy of
// what could be read from anything else (a pipe, /dev/stdin).
struct FileBytes {
    void* map = nullptr;
    size_t mapLen = 0;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> bytes;

    FileBytes() = default;
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;
    ~FileBytes() {
        if (map) munmap(map, mapLen);
    }
};

std::optional<std::string> loadFile(const std::string& path, FileBytes& out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::string("cannot open: ") + std::strerror(errno);
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return std::string("cannot stat: ") + std::strerror(e);
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        return "is a directory (perf's directory format is not supported; give its data file)";
    }
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        // open() reads every record at once: mapping every page up front costs less
        // than a fault per 64 KiB during the walk (-8% on a 2.2 GB file in the page
        // cache). Not for a file beyond half the memory, whose pages cannot all stay.
        const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
        const bool populate =
            pages > 0 && pageSize > 0 && uint64_t(st.st_size) < uint64_t(pages) / 2 * uint64_t(pageSize);
        void* m =
            mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
        if (m != MAP_FAILED) {
            ::close(fd);
            out.map = m;
            out.mapLen = size_t(st.st_size);
            out.bytes = {static_cast<const uint8_t*>(m), out.mapLen};
            return std::nullopt;
        }
    }
    // Not mappable (a pipe, an empty or special file): read it all.
    uint8_t buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            ::close(fd);
            return std::string("cannot read: ") + std::strerror(e);
        }
        if (n == 0) break;
        out.owned.insert(out.owned.end(), buf, buf + n);
    }
    ::close(fd);
    out.bytes = out.owned;
    return std::nullopt;
}

}  // namespace

struct PerfDataReader::Impl {
    std::string path;
    FileBytes file;
    PerfDataMode mode = PerfDataMode::File;
    FileHeader header{};
    uint64_t dataOffset = 0, dataSize = 0;
    bool recovered = false;
    std::vector<PerfAttr> attrs;
    size_t sectionAttrs = 0;  // attrs from the header's attrs section (any others came as ATTR records)
    PerfFeatures features;
    PerfDataSummary summary;
    std::vector<PerfDataIssue> issues;

    std::span<const uint8_t> bytes() const { return file.bytes; }
    uint64_t size() const { return file.bytes.size(); }

    PerfDataIssue makeIssue(bool error, uint64_t offset, const std::string& cause) const {
        return PerfDataIssue{error, offset, cause, path + ": " + offsetText(offset) + ": " + cause};
    }
    void issue(bool error, uint64_t offset, const std::string& cause) {
        issues.push_back(makeIssue(error, offset, cause));
    }
    Error fatal(uint64_t offset, const std::string& cause) const {
        return Error{makeIssue(true, offset, cause).message};
    }

    Expected<void> readHeader();
    void readAttrs();
    void locateData();
    void readFeatures(uint64_t tableOffset);
    void addFeature(unsigned id, uint64_t offset, std::span<const uint8_t> bytes);
    void nameAttrs();
    void nameAttrsFromSimpleperf();
    void accountAux();
    void checkAuxtraceIndex();
};

// ---------------------------------------------------------------------------
// Header, attrs, data section and features (file mode)

Expected<void> PerfDataReader::Impl::readHeader() {
    if (size() == 0) return fatal(0, "the file is empty");
    if (size() < 8)
        return fatal(0,
                     "the file is " + std::to_string(size()) + " bytes, too short for the perf.data magic");
    uint64_t magic = 0;
    std::memcpy(&magic, bytes().data(), 8);
    if (magic == kMagicSwapped)
        return fatal(
            0, "a big-endian perf.data (written on a big-endian host), which this reader does not support");
    if (std::memcmp(bytes().data(), "PERFFILE", 8) == 0)
        return fatal(0, "a version 1 perf.data (magic PERFFILE), which this reader does not support");
    if (magic != kMagic) {
        std::string shown;
        for (size_t i = 0; i < 8; ++i) {
            uint8_t ch = bytes()[i];
            char buf[8];
            if (ch >= 0x20 && ch < 0x7f)
                shown += char(ch);
            else
                std::snprintf(buf, sizeof buf, "\\x%02x", ch), shown += buf;
        }
        return fatal(0, "not a perf.data file: wrong magic \"" + shown + "\" (expected \"PERFILE2\")");
    }
    if (size() < kPipeHeaderSize)
        return fatal(8, "the header is cut short: the file is " + std::to_string(size()) + " bytes");
    std::memcpy(&header, bytes().data(), kPipeHeaderSize);
    if (header.size == kPipeHeaderSize) {
        mode = PerfDataMode::Pipe;
        dataOffset = kPipeHeaderSize;
        dataSize = size() - kPipeHeaderSize;
        return {};
    }
    if (header.size != sizeof(FileHeader) && header.size != kOldFileHeaderSize)
        return fatal(8, "unexpected header size " + std::to_string(header.size) + " (expected " +
                            std::to_string(sizeof(FileHeader)) +
                            " for a perf.data file or 16 for a pipe stream)");
    if (size() < header.size)
        return fatal(size(), "the header is cut short: it needs " + std::to_string(header.size) +
                                 " bytes, the file has " + std::to_string(size()));
    std::memcpy(&header, bytes().data(), header.size);
    return {};
}

void PerfDataReader::Impl::readAttrs() {
    const FileSection s = header.attrs;
    if (s.size == 0) return;
    const uint64_t entry = header.attrSize;
    // An entry is a perf_event_attr (at least PERF_ATTR_SIZE_VER0, 64 bytes) and the
    // file section of its ids.
    if (entry < 64 + sizeof(FileSection) || entry > 4096) {
        issue(true, offsetof(FileHeader, attrSize),
              "attr entry size " + std::to_string(entry) + " is implausible; no attrs read");
        return;
    }
    uint64_t usable = s.size;
    if (s.offset > size() || s.size > size() - s.offset) {
        usable = s.offset > size() ? 0 : size() - s.offset;
        issue(true, s.offset,
              "attrs section of " + std::to_string(s.size) + " bytes runs past the end of the file (" +
                  std::to_string(size()) + " bytes); reading the " + std::to_string(usable / entry) +
                  " complete entries there");
    } else if (s.size % entry != 0) {
        issue(false, s.offset,
              "attrs section size " + std::to_string(s.size) + " is not a multiple of the entry size " +
                  std::to_string(entry));
    }
    const uint64_t n = usable / entry;
    const uint32_t attrBytes = uint32_t(entry - sizeof(FileSection));
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t off = s.offset + i * entry;
        PerfAttr a;
        a.fileOffset = off;
        a.sizeInFile = attrBytes;
        std::memcpy(&a.attr, bytes().data() + off, std::min<size_t>(attrBytes, sizeof a.attr));
        FileSection ids;
        std::memcpy(&ids, bytes().data() + off + attrBytes, sizeof ids);
        if (ids.size % 8 != 0 || ids.offset > size() || ids.size > size() - ids.offset) {
            issue(true, off + attrBytes,
                  "attr " + std::to_string(i) + ": its ids (" + std::to_string(ids.size) + " bytes at " +
                      hex(ids.offset) + ") lie outside the file or are not whole u64s");
        } else {
            a.ids.resize(ids.size / 8);
            if (ids.size) std::memcpy(a.ids.data(), bytes().data() + ids.offset, ids.size);
        }
        attrs.push_back(std::move(a));
    }
    sectionAttrs = attrs.size();
}

namespace {

// Whether a plausible feature-section table sits at `off`: every entry inside
// the file. A record header read as such an entry has an offset of at least
// 2^51 (its size field lands in the top bits), so the two cannot be confused.
bool featureTableAt(std::span<const uint8_t> file, uint64_t off, unsigned n) {
    if (n == 0 || off > file.size() || uint64_t(n) * sizeof(FileSection) > file.size() - off) return false;
    for (unsigned i = 0; i < n; ++i) {
        FileSection s;
        std::memcpy(&s, file.data() + off + i * sizeof s, sizeof s);
        if (s.offset > file.size() || s.size > file.size() - s.offset) return false;
    }
    return true;
}

unsigned featureCount(const FileHeader& h) {
    unsigned n = 0;
    for (uint64_t w : h.features)
        n += unsigned(std::popcount(w));
    return n;
}

}  // namespace

void PerfDataReader::Impl::locateData() {
    const FileSection d = header.data;
    dataOffset = d.offset;
    if (d.offset > size()) {
        issue(true, offsetof(FileHeader, data),
              "the data section at " + hex(d.offset) + " lies past the end of the file (" +
                  std::to_string(size()) + " bytes)");
        dataOffset = size();
        dataSize = 0;
        return;
    }
    if (d.offset < header.size)
        issue(false, offsetof(FileHeader, data),
              "the data section at " + hex(d.offset) + " overlaps the header");
    const uint64_t there = size() - d.offset;
    if (d.size == 0 && there > 0 &&
        !(header.size == sizeof(FileHeader) && featureTableAt(bytes(), d.offset, featureCount(header)))) {
        // perf writes the data size when the capture ends; a capture killed before
        // that (SIGKILL, power loss) leaves 0 and no feature sections. Walk the
        // records to find where they end.
        uint64_t pos = d.offset, records = 0;
        while (size() - pos >= sizeof(perf_event_header)) {
            perf_event_header h;
            std::memcpy(&h, bytes().data() + pos, sizeof h);
            if (h.size < sizeof h || h.size > size() - pos) break;
            uint64_t payload = 0;
            if (h.type == kRecordAuxtrace && h.size >= sizeof h + sizeof(AuxtraceRecord))
                std::memcpy(&payload, bytes().data() + pos + sizeof h, 8);
            else if (h.type == kRecordHeaderTracingData && h.size >= sizeof h + 4) {
                uint32_t p32;
                std::memcpy(&p32, bytes().data() + pos + sizeof h, 4);
                payload = p32;
            }
            if (payload > size() - pos - h.size) break;
            pos += h.size + payload;
            ++records;
        }
        dataSize = pos - d.offset;
        recovered = true;
        const std::string found =
            std::to_string(dataSize) + " bytes in " + std::to_string(records) + " records";
        issue(false, offsetof(FileHeader, data) + 8,
              "data size 0 in the header (the capture did not finish, e.g. perf was killed): "
              "data size recovered by scanning: " +
                  found);
        if (pos < size())
            issue(true, pos,
                  std::to_string(size() - pos) +
                      " bytes after the last complete record do not form a record (cut off when the capture "
                      "stopped)");
        if (featureCount(header) > 0)
            issue(false, offsetof(FileHeader, features),
                  "the header announces " + std::to_string(featureCount(header)) +
                      " features, but an unfinished capture has none written; features not read");
        return;
    }
    dataSize = d.size;
    if (d.size > there) {
        issue(true, d.offset + there,
              "the data section (" + std::to_string(d.size) + " bytes at " + hex(d.offset) +
                  ") runs past the end of the file (" + std::to_string(size()) +
                  " bytes): the file is truncated; " + std::to_string(d.size - there) +
                  " bytes of data are missing");
        dataSize = there;
    }
}

void PerfDataReader::Impl::addFeature(unsigned id, uint64_t offset, std::span<const uint8_t> bytes) {
    if (std::find(features.present.begin(), features.present.end(), id) == features.present.end()) {
        features.present.push_back(id);
        std::sort(features.present.begin(), features.present.end());
    }
    bool decoded = false;
    auto err = perfdata_detail::decodeFeature(id, bytes, features, decoded);
    if (err)
        issue(false, offset, "feature " + perfFeatureName(id) + " does not decode: " + *err + "; kept raw");
    if (err || !decoded) features.raw.push_back(PerfRawFeature{id, offset, {bytes.begin(), bytes.end()}});
}

void PerfDataReader::Impl::readFeatures(uint64_t tableOffset) {
    const unsigned n = featureCount(header);
    if (n == 0) return;
    if (tableOffset > size() || uint64_t(n) * sizeof(FileSection) > size() - tableOffset) {
        issue(true, std::min<uint64_t>(tableOffset, size()),
              "the feature table (" + std::to_string(n) + " sections at " + hex(tableOffset) +
                  ") runs past the end of the file (" + std::to_string(size()) +
                  " bytes); features not read");
        return;
    }
    unsigned i = 0;
    for (unsigned bit = 0; bit < 256; ++bit) {
        if (!(header.features[bit / 64] >> (bit % 64) & 1)) continue;
        FileSection s;
        const uint64_t at = tableOffset + uint64_t(i++) * sizeof s;
        std::memcpy(&s, bytes().data() + at, sizeof s);
        if (s.offset > size() || s.size > size() - s.offset) {
            issue(true, at,
                  "feature " + perfFeatureName(bit) + ": its section (" + std::to_string(s.size) +
                      " bytes at " + hex(s.offset) + ") runs past the end of the file (" +
                      std::to_string(size()) + " bytes)");
            if (std::find(features.present.begin(), features.present.end(), bit) == features.present.end())
                features.present.push_back(bit);
            continue;
        }
        addFeature(bit, s.offset, bytes().subspan(s.offset, s.size));
    }
}

void PerfDataReader::Impl::nameAttrs() {
    if (features.simpleperfMetaInfo) nameAttrsFromSimpleperf();
    if (!features.eventDesc) return;
    const auto& descs = *features.eventDesc;
    for (size_t i = 0; i < attrs.size(); ++i) {
        PerfAttr& a = attrs[i];
        if (!a.name.empty()) continue;
        // perf matches descriptions to attrs by id; without ids, by position.
        for (const PerfEventDesc& d : descs) {
            if (!a.ids.empty() && std::find(d.ids.begin(), d.ids.end(), a.ids.front()) != d.ids.end()) {
                a.name = d.name;
                break;
            }
        }
        if (a.name.empty() && a.ids.empty() && descs.size() == attrs.size()) a.name = descs[i].name;
    }
}

// simpleperf names its events in META_INFO's event_type_info: one
// "name,type,config" line per event. It may record the config before adding its
// own bits (cs-etm: 0 there, 0x4000 in the attr), so an event whose type alone is
// unambiguous on both sides is matched by type.
void PerfDataReader::Impl::nameAttrsFromSimpleperf() {
    struct Named {
        std::string name;
        uint32_t type;
        uint64_t config;
    };
    std::vector<Named> named;
    for (const auto& [key, value] : *features.simpleperfMetaInfo) {
        if (key != "event_type_info") continue;
        size_t start = 0;
        while (start < value.size()) {
            size_t end = value.find('\n', start);
            if (end == std::string::npos) end = value.size();
            const std::string line = value.substr(start, end - start);
            start = end + 1;
            const size_t c2 = line.rfind(',');
            if (c2 == std::string::npos || c2 == 0) continue;
            const size_t c1 = line.rfind(',', c2 - 1);
            if (c1 == std::string::npos) continue;
            named.push_back({line.substr(0, c1), uint32_t(std::strtoul(line.c_str() + c1 + 1, nullptr, 10)),
                             std::strtoull(line.c_str() + c2 + 1, nullptr, 10)});
        }
    }
    auto countType = [](auto& v, uint32_t type, auto typeOf) {
        return std::count_if(v.begin(), v.end(), [&](auto& e) { return typeOf(e) == type; });
    };
    for (PerfAttr& a : attrs) {
        if (!a.name.empty()) continue;
        for (const Named& n : named)
            if (n.type == a.attr.type && n.config == a.attr.config) a.name = n.name;
        if (!a.name.empty()) continue;
        for (const Named& n : named)
            if (n.type == a.attr.type &&
                countType(named, n.type, [](const Named& e) { return e.type; }) == 1 &&
                countType(attrs, n.type, [](const PerfAttr& e) { return e.attr.type; }) == 1)
                a.name = n.name;
    }
}

// ---------------------------------------------------------------------------
// AUX accounting: what the AUX records announce against what the AUXTRACE
// records hold, per AUX area.

namespace {

struct AreaKey {
    int64_t cpu;
    int32_t tid;
    auto operator<=>(const AreaKey&) const = default;
};

struct Range {
    uint64_t begin, end;
};

// Sorted, merged union of `ranges` (empty ranges dropped).
std::vector<Range> unite(std::vector<Range> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::vector<Range> out;
    for (const Range& r : ranges) {
        if (r.end <= r.begin) continue;
        if (!out.empty() && r.begin <= out.back().end)
            out.back().end = std::max(out.back().end, r.end);
        else
            out.push_back(r);
    }
    return out;
}

uint64_t total(const std::vector<Range>& ranges) {
    uint64_t n = 0;
    for (const Range& r : ranges)
        n += r.end - r.begin;
    return n;
}

std::string plural(uint64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string perfAuxAreaName(const PerfAuxArea& area) {
    if (area.cpu >= 0) return "cpu " + std::to_string(area.cpu);
    if (area.tid >= 0) return "thread " + std::to_string(area.tid);
    return "no cpu";
}

void PerfDataReader::Impl::accountAux() {
    PerfDataSummary& s = summary;
    // Which areas the AUXTRACE records fill: per CPU (cpu >= 0, whatever their tid
    // says) or per thread (cpu -1, by tid).
    std::set<AreaKey> bufferAreas;
    std::set<int32_t> threadAreas;
    bool cpuAreas = false;
    auto areaOfBuffer = [](const PerfAuxtraceBuffer& b) {
        return b.cpu >= 0 ? AreaKey{b.cpu, -1} : AreaKey{-1, int32_t(b.tid)};
    };
    for (const PerfAuxtraceBuffer& b : s.auxtrace) {
        bufferAreas.insert(areaOfBuffer(b));
        if (b.cpu >= 0)
            cpuAreas = true;
        else
            threadAreas.insert(int32_t(b.tid));
    }
    // An AUX record belongs to its thread's area when the areas are per thread,
    // else to its CPU's; one that names neither, to the only area there is.
    auto areaOfRecord = [&](const PerfAuxRecord& a) {
        if (!threadAreas.empty() && a.tid >= 0 && (!cpuAreas || threadAreas.count(a.tid)))
            return AreaKey{-1, a.tid};
        if (a.cpu >= 0) return AreaKey{a.cpu, -1};
        if (bufferAreas.size() == 1) return *bufferAreas.begin();
        return AreaKey{-1, a.tid};
    };
    struct Work {
        std::vector<const PerfAuxRecord*> records;
        std::vector<const PerfAuxtraceBuffer*> buffers;  // file order
    };
    std::map<AreaKey, Work> work;
    for (const PerfAuxRecord& a : s.aux)
        work[areaOfRecord(a)].records.push_back(&a);
    for (const PerfAuxtraceBuffer& b : s.auxtrace)
        work[areaOfBuffer(b)].buffers.push_back(&b);

    s.auxAreas.clear();
    s.auxMissingBytes = s.auxAnnouncedBytes = 0;
    for (auto& [key, w] : work) {
        PerfAuxArea area;
        area.cpu = key.cpu;
        area.tid = key.tid;
        area.auxRecords = w.records.size();
        area.auxtraceRecords = w.buffers.size();

        // Announced: every non-OVERWRITE AUX record's range, by offset.
        std::vector<const PerfAuxRecord*> announcing;
        for (const PerfAuxRecord* a : w.records) {
            area.truncated += (a->flags & kAuxFlagTruncated) != 0;
            area.partial += (a->flags & kAuxFlagPartial) != 0;
            area.collision += (a->flags & kAuxFlagCollision) != 0;
            if (a->flags & kAuxFlagOverwrite)
                area.snapshot = true;
            else if (a->auxSize > 0 && a->auxOffset + a->auxSize > a->auxOffset)
                announcing.push_back(a);
        }
        if (area.snapshot) announcing.clear();  // overwritten by design: nothing is owed to the file
        std::stable_sort(
            announcing.begin(), announcing.end(),
            [](const PerfAuxRecord* a, const PerfAuxRecord* b) { return a->auxOffset < b->auxOffset; });
        std::vector<Range> announcedRanges;
        std::vector<uint64_t> announcedEnds;
        for (const PerfAuxRecord* a : announcing) {
            announcedRanges.push_back({a->auxOffset, a->auxOffset + a->auxSize});
            announcedEnds.push_back(a->auxOffset + a->auxSize);
        }
        std::sort(announcedEnds.begin(), announcedEnds.end());
        const std::vector<Range> announced = unite(announcedRanges);
        area.announcedBytes = total(announced);

        // Held: each AUXTRACE record's payload as the file has it. perf (and
        // auxscope) pad a payload to 8 bytes and count the padding in its size,
        // the next buffer starting at the unpadded end: where no buffer follows
        // at once, the buffer ends at the AUX record boundary within its padding.
        struct Held {
            uint64_t begin, end;
            const PerfAuxtraceBuffer* buffer;
        };
        std::vector<Held> held;
        for (const PerfAuxtraceBuffer* b : w.buffers)
            if (b->available > 0 && b->auxOffset + b->available > b->auxOffset)
                held.push_back({b->auxOffset, b->auxOffset + b->available, b});
        std::stable_sort(held.begin(), held.end(),
                         [](const Held& a, const Held& b) { return a.begin < b.begin; });
        for (size_t i = 0; i < held.size(); ++i) {
            Held& h = held[i];
            const uint64_t next = i + 1 < held.size() ? held[i + 1].begin : UINT64_MAX;
            const bool padded = h.buffer->available == h.buffer->size;
            if (padded && next > h.end &&
                !std::binary_search(announcedEnds.begin(), announcedEnds.end(), h.end)) {
                auto it = std::lower_bound(announcedEnds.begin(), announcedEnds.end(), h.end);
                if (it != announcedEnds.begin() && *(it - 1) + 8 > h.end && *(it - 1) > h.begin)
                    h.end = *(it - 1);
            }
        }
        std::vector<Range> heldRanges;
        for (const Held& h : held)
            heldRanges.push_back({h.begin, h.end});
        const std::vector<Range> present = unite(heldRanges);
        area.presentBytes = total(present);

        // Missing: announced minus present.
        std::vector<Held> byEnd = held;
        std::sort(byEnd.begin(), byEnd.end(), [](const Held& a, const Held& b) { return a.end < b.end; });
        auto addGap = [&](uint64_t begin, uint64_t end) {
            PerfAuxGap g;
            g.kind = PerfAuxGapKind::Missing;
            g.auxOffset = begin;
            g.size = end - begin;
            // The AUX record announcing `begin`: the last one starting at or before it.
            auto a =
                std::upper_bound(announcing.begin(), announcing.end(), begin,
                                 [](uint64_t off, const PerfAuxRecord* r) { return off < r->auxOffset; });
            if (a != announcing.begin()) {
                --a;
                g.auxRecordOffset = (*a)->fileOffset;
                g.time = (*a)->time;
            }
            // The AUXTRACE record ending nearest before `begin`.
            auto h = std::upper_bound(byEnd.begin(), byEnd.end(), begin,
                                      [](uint64_t off, const Held& x) { return off < x.end; });
            if (h != byEnd.begin()) {
                --h;
                g.fileOffset = h->buffer->fileOffset;
                g.afterAuxtrace = true;
                g.cutShort = h->buffer->available < h->buffer->size;
                g.compressed = h->buffer->compressed;
            } else {
                g.fileOffset = g.auxRecordOffset;
            }
            area.missingBytes += g.size;
            area.gaps.push_back(g);
        };
        size_t p = 0;
        for (const Range& a : announced) {
            uint64_t at = a.begin;
            while (p < present.size() && present[p].end <= at)
                ++p;
            for (size_t q = p; q < present.size() && present[q].begin < a.end && at < a.end; ++q) {
                if (present[q].begin > at) addGap(at, present[q].begin);
                at = std::max(at, present[q].end);
            }
            if (at < a.end) addGap(at, a.end);
        }

        // Damage: in full-trace mode each buffer continues where the one before
        // it ended (up to the 7 bytes of padding back).
        if (!area.snapshot) {
            uint64_t maxEnd = 0, prevBegin = 0;
            bool first = true;
            for (const PerfAuxtraceBuffer* b : w.buffers) {
                const uint64_t begin = b->auxOffset, end = b->auxOffset + b->available;
                if (!first && (begin < prevBegin || begin + 8 <= maxEnd)) {
                    PerfAuxGap g;
                    g.kind = begin < prevBegin ? PerfAuxGapKind::Backwards : PerfAuxGapKind::Overlap;
                    g.auxOffset = begin;
                    g.size = std::min(maxEnd, std::max(end, begin)) - begin;
                    g.fileOffset = b->fileOffset;
                    g.afterAuxtrace = true;
                    g.compressed = b->compressed;
                    area.damageBytes += g.size;
                    area.damage.push_back(g);
                }
                if (first || end > maxEnd) maxEnd = end;
                prevBegin = begin;
                first = false;
            }
        }
        s.auxMissingBytes += area.missingBytes;
        s.auxAnnouncedBytes += area.announcedBytes;
        s.auxAreas.push_back(std::move(area));
    }

    // Issues: a file without any AUXTRACE record (one error for all), else one per
    // area that misses announced bytes, and one per area whose buffers overlap.
    if (s.auxtrace.empty() && s.auxAnnouncedBytes > 0) {
        std::string cpus, threads;
        for (const PerfAuxArea& a : s.auxAreas) {
            if (!a.missingBytes) continue;
            if (a.cpu >= 0)
                cpus += (cpus.empty() ? "cpu " : ", ") + std::to_string(a.cpu);
            else
                threads += (threads.empty() ? "" : ", ") + perfAuxAreaName(a);
        }
        std::string where = cpus + (cpus.empty() || threads.empty() ? "" : ", ") + threads;
        uint64_t first = UINT64_MAX;
        for (const PerfAuxRecord& a : s.aux)
            if (!(a.flags & kAuxFlagOverwrite) && a.auxSize) first = std::min(first, a.fileOffset);
        issue(true, first == UINT64_MAX ? dataOffset : first,
              "AUX records announce " + std::to_string(s.auxAnnouncedBytes) + " bytes of trace (" + where +
                  ") but the file holds no AUXTRACE record: the AUX data is missing");
    } else {
        for (const PerfAuxArea& a : s.auxAreas) {
            if (!a.gaps.empty()) {
                const PerfAuxGap& g = a.gaps.front();
                std::string firstGap = std::to_string(g.size) + " bytes at AUX offset " + hex(g.auxOffset);
                if (g.afterAuxtrace)
                    firstGap += std::string(", after the AUXTRACE record ") +
                                (g.compressed ? "in the COMPRESSED record here" : "here") +
                                (g.cutShort ? ", which the end of the file cuts short" : "");
                else
                    firstGap += ", announced by the AUX record here before any AUXTRACE record of " +
                                perfAuxAreaName(a);
                issue(true, g.fileOffset,
                      perfAuxAreaName(a) + ": " + std::to_string(a.missingBytes) + " of " +
                          std::to_string(a.announcedBytes) +
                          " announced AUX bytes are missing from the file in " +
                          plural(a.gaps.size(), "gap", "gaps") + " (first: " + firstGap +
                          "): AUX records announce them, no AUXTRACE record holds them");
            }
            if (!a.damage.empty()) {
                const PerfAuxGap& g = a.damage.front();
                issue(
                    false, g.fileOffset,
                    perfAuxAreaName(a) + ": " +
                        plural(a.damage.size(), "AUXTRACE record", "AUXTRACE records") +
                        " hold AUX offsets out of order or again (" + std::to_string(a.damageBytes) +
                        " bytes; first here: " +
                        (g.kind == PerfAuxGapKind::Backwards ? "goes back to AUX offset "
                                                             : "overlaps the record before at AUX offset ") +
                        hex(g.auxOffset) + ")");
            }
        }
    }
}

void PerfDataReader::Impl::checkAuxtraceIndex() {
    const PerfDataSummary& s = summary;
    if (!features.auxtraceIndex) return;
    std::vector<uint64_t> found;
    for (const auto& b : s.auxtrace)
        if (!b.compressed) found.push_back(b.fileOffset);
    std::sort(found.begin(), found.end());
    size_t missing = 0;
    uint64_t firstMissing = 0;
    for (const auto& e : *features.auxtraceIndex) {
        if (std::binary_search(found.begin(), found.end(), e.fileOffset)) continue;
        if (missing++ == 0) firstMissing = e.fileOffset;
    }
    if (missing)
        issue(false, firstMissing,
              std::to_string(missing) + " of " + std::to_string(features.auxtraceIndex->size()) +
                  " AUXTRACE index entries point where no AUXTRACE record starts (first: " +
                  hex(firstMissing) + ")");
    if (features.auxtraceIndex->size() < found.size())
        issue(false, dataOffset,
              "the AUXTRACE index lists " + std::to_string(features.auxtraceIndex->size()) +
                  " buffers, the data section holds " + std::to_string(found.size()));
}

// ---------------------------------------------------------------------------
// The walk over the data section, shared by open() (which collects the summary,
// pipe-mode attrs and features, and issues) and forEachRecord().

namespace {

class Scanner {
public:
    Scanner(const PerfDataReader::Impl& d, PerfDataReader::Impl* collect,
            const PerfDataReader::RecordVisitor* visit)
        : d_(d), c_(collect), visit_(visit) {
        for (size_t i = 0; i < d.sectionAttrs; ++i) {
            addAttrIds(d.attrs[i], int(i));
            ++attrCount_;
        }
        updateSole();
    }
    ~Scanner() {
        if (dctx_) ZSTD_freeDCtx(dctx_);
    }
    Scanner(const Scanner&) = delete;
    Scanner& operator=(const Scanner&) = delete;

    Expected<void> run();

private:
    void addAttrIds(const PerfAttr& a, int index) {
        EventLayout l = eventLayoutOf(a.attr, index, -1);
        for (uint64_t id : a.ids)
            ids_.add(id, l);
        if (attrCount_ == 0) first_ = l;
    }
    void updateSole() {
        if (attrCount_ == 1)
            ids_.setSoleEvent(first_);
        else
            ids_.clearSoleEvent();
    }
    void note(bool error, uint64_t offset, std::string cause) {
        if (c_) c_->issue(error, offset, std::move(cause));
    }
    Error stop(uint64_t offset, const std::string& cause) {
        note(true, offset, cause);
        return d_.fatal(offset, cause);
    }

    // Returns false when the visitor asked to stop.
    bool handle(PerfRecord& r);
    void userRecord(PerfRecord& r);
    void collect(const PerfRecord& r);
    void unpack(const PerfRecord& outer);
    void recordIssue(const PerfRecord& r, const std::string& cause);

    static uint64_t payloadSize(const perf_event_header& h, const uint8_t* body) {
        if (h.type == kRecordAuxtrace && h.size >= sizeof h + sizeof(AuxtraceRecord)) {
            uint64_t n;
            std::memcpy(&n, body, 8);
            return n;
        }
        if (h.type == kRecordHeaderTracingData && h.size >= sizeof h + 4) {
            uint32_t n;
            std::memcpy(&n, body, 4);
            return n;
        }
        return 0;
    }

    const PerfDataReader::Impl& d_;
    PerfDataReader::Impl* c_;
    const PerfDataReader::RecordVisitor* visit_;
    IdTable ids_;
    EventLayout first_;
    size_t attrCount_ = 0;
    bool stopped_ = false;

    // COMPRESSED records form one zstd stream; records may straddle them.
    ZSTD_DCtx* dctx_ = nullptr;
    std::vector<uint8_t> pending_;  // decompressed bytes not yet forming a whole record
    uint64_t streamPos_ = 0;        // decompressed-stream offset of pending_[0]
    bool streamBroken_ = false;
    uint64_t lastCompressedOffset_ = 0;

    PerfRecord record_;  // the record being handled (see run())

    // Kernel records per CPU and type, counted here during the walk and added to
    // the summary's maps at its end (flushCounts): two map look-ups per record
    // cost a tenth of open()'s time.
    static constexpr int64_t kMaxCountedCpu = 4096;
    std::vector<std::array<uint64_t, kUserTypeStart>> kernelCounts_;  // [cpu + 1][type]
    void flushCounts();

    size_t listedRecordIssues_ = 0;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> unknown_;  // type -> first offset, count
};

Expected<void> Scanner::run() {
    const auto file = d_.bytes();
    const uint64_t end = d_.dataOffset + d_.dataSize;
    uint64_t pos = d_.dataOffset;
    Expected<void> result;
    while (pos < end && !stopped_) {
        const uint64_t left = end - pos;
        perf_event_header h;
        if (left < sizeof h) {
            result = stop(pos, std::to_string(left) +
                                   " bytes at the end of the data section are too few for a record "
                                   "header (8 bytes)");
            break;
        }
        // Records are read once, in order: ask for the bytes a few records ahead
        // (the reads of fresh lines stalled the walk more than all its parsing).
        if (left > kPrefetchAhead) __builtin_prefetch(file.data() + pos + kPrefetchAhead);
        std::memcpy(&h, file.data() + pos, sizeof h);
        if (h.size < sizeof h) {
            result =
                stop(pos, "record of type " + std::to_string(h.type) + " has size " + std::to_string(h.size) +
                              ", less than its 8-byte header; the records after it cannot be found");
            break;
        }
        if (h.size > left) {
            result = stop(pos, perfRecordTypeName(h.type) + " record of " + std::to_string(h.size) +
                                   " bytes runs past the end of the data section at " + hex(end) + " (" +
                                   std::to_string(h.size - left) + " bytes missing)");
            break;
        }
        // One PerfRecord for the whole walk, its fields set anew for each record:
        // building a fresh one (some 460 bytes, zeroed) per record cost more than
        // parsing it.
        PerfRecord& r = record_;
        r.fileOffset = r.streamOffset = pos;
        r.compressed = false;
        r.header = h;
        r.bytes = file.subspan(pos, h.size);
        const uint64_t payload = payloadSize(h, file.data() + pos + sizeof h);
        r.payloadSize = payload;
        r.payloadOffset = pos + h.size;
        const uint64_t avail = std::min<uint64_t>(payload, left - h.size);
        r.payload = file.subspan(pos + h.size, avail);
        if (!handle(r)) break;
        if (payload > left - h.size) {
            result = stop(pos, perfRecordTypeName(h.type) + " payload of " + std::to_string(payload) +
                                   " bytes runs past the end of the data section at " + hex(end) + " (" +
                                   std::to_string(payload - (left - h.size)) + " bytes missing)");
            if (c_) c_->summary.dataEnd = pos;
            break;
        }
        if ((h.type == kRecordCompressed || h.type == kRecordCompressed2) && !stopped_) unpack(r);
        pos += h.size + payload;
        if (c_) c_->summary.dataEnd = pos;
    }
    if (!stopped_ && !pending_.empty() && result.ok())
        note(false, lastCompressedOffset_,
             std::to_string(pending_.size()) +
                 " decompressed bytes at the end of the compressed stream do not form a whole record");
    if (c_) {
        flushCounts();
        for (auto& [type, firstCount] : unknown_)
            c_->issue(false, firstCount.first,
                      std::to_string(firstCount.second) + " record(s) of unknown type " +
                          std::to_string(type) + " (first here): counted and skipped");
        if (c_->summary.parseErrors > listedRecordIssues_)
            c_->issue(false, d_.dataOffset,
                      std::to_string(c_->summary.parseErrors - listedRecordIssues_) +
                          " more records whose fields could not all be read (not listed)");
    }
    return result;
}

void Scanner::flushCounts() {
    PerfDataSummary& s = c_->summary;
    for (size_t slot = 0; slot < kernelCounts_.size(); ++slot)
        for (uint32_t type = 0; type < kUserTypeStart; ++type)
            if (const uint64_t n = kernelCounts_[slot][type]) {
                s.recordsByType[type] += n;
                s.cpus[int64_t(slot) - 1].recordsByType[type] += n;
            }
    kernelCounts_.clear();
}

void Scanner::recordIssue(const PerfRecord& r, const std::string& cause) {
    if (!c_) return;
    ++c_->summary.parseErrors;
    if (listedRecordIssues_ >= kMaxListedRecordIssues) return;
    ++listedRecordIssues_;
    std::string where = r.compressed ? " (inside the COMPRESSED record here, at decompressed offset " +
                                           std::to_string(r.streamOffset) + ")"
                                     : "";
    c_->issue(false, r.fileOffset, perfRecordTypeName(r.header.type) + " record" + where + ": " + cause);
}

bool Scanner::handle(PerfRecord& r) {
    const uint32_t type = r.header.type;
    r.cpu = -1;
    if (type < kUserTypeStart) {
        r.parseError = parseRecord(r.bytes, ids_, r.parsed);
        r.cpu = cpuValue(r.parsed.cpu);
    } else {
        r.parsed = ParsedRecord{};
        r.parsed.type = type;
        r.parsed.misc = r.header.misc;
        r.parseError.reset();
        userRecord(r);
    }
    if (r.parseError) recordIssue(r, *r.parseError);
    if (c_) collect(r);
    if (visit_ && !(*visit_)(r)) {
        stopped_ = true;
        return false;
    }
    return true;
}

// perf's own records: the ones that change how later records are read (attrs,
// id index) are applied on every walk; the rest only when collecting.
void Scanner::userRecord(PerfRecord& r) {
    ByteCursor c(r.bytes.subspan(sizeof(perf_event_header)));
    const uint64_t at = r.fileOffset;
    switch (r.header.type) {
        case kRecordHeaderAttr: {
            PerfAttr a;
            a.fileOffset = at;
            uint32_t attrSize = 0;
            std::span<const uint8_t> body = c.rest();
            if (body.size() >= 8) std::memcpy(&attrSize, body.data() + 4, 4);  // perf_event_attr.size
            if (attrSize == 0) attrSize = 64;                                  // PERF_ATTR_SIZE_VER0
            if (attrSize > body.size() || attrSize < 64) {
                r.parseError =
                    "ATTR record too short for its perf_event_attr (" + std::to_string(attrSize) + " bytes)";
                return;
            }
            std::memcpy(&a.attr, body.data(), std::min<size_t>(attrSize, sizeof a.attr));
            a.sizeInFile = attrSize;
            a.ids.resize((body.size() - attrSize) / 8);
            if (!a.ids.empty()) std::memcpy(a.ids.data(), body.data() + attrSize, a.ids.size() * 8);
            // Its index in attrs(): appended when collecting, found again on later walks.
            int index = -1;
            if (c_) {
                index = int(c_->attrs.size());
                c_->attrs.push_back(a);
            } else {
                for (size_t i = d_.sectionAttrs; i < d_.attrs.size() && index < 0; ++i)
                    if (d_.attrs[i].fileOffset == at) index = int(i);
            }
            addAttrIds(a, index);
            ++attrCount_;
            updateSole();
            return;
        }
        case kRecordIdIndex: {
            uint64_t nr = 0;
            if (!c.read(nr) || nr > c.left() / sizeof(IdIndexEntry)) {
                r.parseError = "ID_INDEX record too short for its entries";
                return;
            }
            for (uint64_t i = 0; i < nr; ++i) {
                IdIndexEntry e;
                c.read(e);
                if (const EventLayout* l = ids_.find(e.id)) {
                    EventLayout copy = *l;
                    copy.cpu = e.cpu == UINT64_MAX ? -1 : int(e.cpu);
                    ids_.add(e.id, copy);
                }
            }
            return;
        }
        case kRecordAuxtrace: {
            AuxtraceRecord a;
            if (!c.read(a)) {
                r.parseError = "AUXTRACE record too short (" + std::to_string(r.header.size) + " bytes)";
                return;
            }
            r.cpu = cpuValue(a.cpu);
            r.parsed.cpu = a.cpu;
            r.parsed.tid = int32_t(a.tid);
            return;
        }
        case kRecordAuxtraceError: {
            AuxtraceErrorRecordHead e;
            if (!c.read(e)) {
                r.parseError =
                    "AUXTRACE_ERROR record too short (" + std::to_string(r.header.size) + " bytes)";
                return;
            }
            r.cpu = cpuValue(e.cpu);
            r.parsed.cpu = e.cpu;
            return;
        }
        default:
            return;
    }
}

void Scanner::collect(const PerfRecord& r) {
    PerfDataSummary& s = c_->summary;
    const uint32_t type = r.header.type;
    ++s.records;
    if (type < kUserTypeStart && r.cpu >= -1 && r.cpu < kMaxCountedCpu) {
        const size_t slot = size_t(r.cpu + 1);
        if (slot >= kernelCounts_.size()) kernelCounts_.resize(slot + 1);
        ++kernelCounts_[slot][type];
    } else {
        ++s.recordsByType[type];
        ++s.cpus[r.cpu].recordsByType[type];
    }
    if (!perfRecordTypeKnown(type)) {
        ++s.unknownRecords;
        auto [it, fresh] = unknown_.try_emplace(type, r.fileOffset, 0);
        ++it->second.second;
    }
    ByteCursor c(r.bytes.subspan(sizeof(perf_event_header)));
    switch (type) {
        case PERF_RECORD_LOST: {
            PerfCpuStats& cpu = s.cpus[r.cpu];
            ++cpu.lostRecords;
            cpu.lost += r.parsed.lost;
            break;
        }
        case PERF_RECORD_LOST_SAMPLES: {
            PerfCpuStats& cpu = s.cpus[r.cpu];
            ++cpu.lostSamplesRecords;
            cpu.lostSamples += r.parsed.lost;
            break;
        }
        case PERF_RECORD_AUX: {
            if (r.parseError) break;
            const uint64_t f = r.parsed.auxFlags;
            PerfAuxStats& a = s.cpus[r.cpu].aux;
            ++a.records;
            a.bytes += r.parsed.auxSize;
            a.truncated += (f & kAuxFlagTruncated) != 0;
            a.overwrite += (f & kAuxFlagOverwrite) != 0;
            a.partial += (f & kAuxFlagPartial) != 0;
            a.collision += (f & kAuxFlagCollision) != 0;
            a.formatRaw += (f & kAuxFlagCoresightFormatRaw) != 0;
            s.aux.push_back(PerfAuxRecord{r.fileOffset, r.cpu, r.parsed.hasSampleId ? r.parsed.tid : -1,
                                          r.parsed.time, r.parsed.auxOffset, r.parsed.auxSize, f});
            break;
        }
        case kRecordAuxtrace: {
            AuxtraceRecord a;
            if (!c.read(a)) break;
            PerfAuxtraceBuffer b;
            b.fileOffset = r.fileOffset;
            b.dataOffset = r.compressed ? r.streamOffset + r.header.size : r.payloadOffset;
            b.size = a.size;
            b.available = r.payload.size();
            b.auxOffset = a.offset;
            b.reference = a.reference;
            b.idx = a.idx;
            b.tid = a.tid;
            b.cpu = cpuValue(a.cpu);
            b.compressed = r.compressed;
            s.auxtrace.push_back(b);
            PerfCpuStats& cpu = s.cpus[r.cpu];
            ++cpu.auxtraceBuffers;
            cpu.auxtraceBytes += a.size;
            break;
        }
        case kRecordAuxtraceError: {
            AuxtraceErrorRecordHead h;
            if (!c.read(h)) break;
            PerfAuxtraceError e;
            e.fileOffset = r.fileOffset;
            e.type = h.type, e.code = h.code, e.pid = h.pid, e.tid = h.tid, e.fmt = h.fmt, e.ip = h.ip;
            e.cpu = cpuValue(h.cpu);
            if (h.fmt >= 1) c.read(e.time);  // with fmt 0 the message follows ip directly
            std::span<const uint8_t> msg;
            c.take(std::min(c.left(), kAuxtraceErrorMsgSize), msg);
            e.message = cString(msg);
            s.auxtraceErrors.push_back(std::move(e));
            break;
        }
        case kRecordAuxtraceInfo: {
            PerfAuxtraceInfo info;
            info.fileOffset = r.fileOffset;
            AuxtraceInfoRecordHead h;
            if (!c.read(h)) {
                recordIssue(r, "too short for its type");
                break;
            }
            info.type = h.type;
            info.priv.resize(c.left() / 8);
            for (auto& v : info.priv)
                c.read(v);
            s.auxtraceInfo.push_back(std::move(info));
            break;
        }
        case kRecordTimeConv: {
            PerfTimeConv t;
            if (!c.read(t.timeShift) || !c.read(t.timeMult) || !c.read(t.timeZero)) {
                recordIssue(r, "too short for shift, mult and zero");
                break;
            }
            if (c.read(t.timeCycles) && c.read(t.timeMask)) {
                uint8_t caps[2] = {0, 0};
                if (c.read(caps)) {
                    t.hasCycles = true;
                    t.capUserTimeZero = caps[0];
                    t.capUserTimeShort = caps[1];
                }
            }
            // A shift of 64 or more (no kernel writes one: perf_event_mmap_page's
            // time_shift is below 32) cannot convert a time: the record is not used.
            if (t.timeShift >= 64) {
                recordIssue(r, "time_shift " + std::to_string(t.timeShift) +
                                   " is not below 64: not a usable TSC conversion (ignored)");
                break;
            }
            if (!s.timeConv) s.timeConv = t;
            break;
        }
        case kRecordHeaderFeature: {
            uint64_t id = 0;
            if (!c.read(id)) {
                recordIssue(r, "too short for its feature id");
                break;
            }
            if (id >= 256) {
                recordIssue(r, "feature id " + std::to_string(id) + " is out of range");
                break;
            }
            c_->addFeature(unsigned(id), r.fileOffset + 16, c.rest());
            break;
        }
        case kRecordHeaderBuildId: {
            PerfBuildId b;
            if (auto e = perfdata_detail::decodeBuildIdEntry(r.bytes, b)) {
                recordIssue(r, *e);
                break;
            }
            if (!c_->features.buildIds) c_->features.buildIds.emplace();
            c_->features.buildIds->push_back(std::move(b));
            break;
        }
        case kRecordEventUpdate: {
            // u64 type (2: NAME), u64 id, then the name.
            uint64_t kind = 0, id = 0;
            if (!c.read(kind) || !c.read(id) || kind != 2) break;
            const std::string name = cString(c.rest());
            for (PerfAttr& a : c_->attrs)
                if (a.name.empty() && std::find(a.ids.begin(), a.ids.end(), id) != a.ids.end()) a.name = name;
            break;
        }
        case kRecordCompressed:
        case kRecordCompressed2:
            ++s.compressedRecords;
            s.compressedBytes += r.header.size;
            break;
        default:
            break;
    }
}

void Scanner::unpack(const PerfRecord& outerRecord) {
    // The records unpacked here reuse record_, which `outerRecord` is: keep what is needed of it.
    struct Outer {
        uint64_t fileOffset;
        bool compressed;
        perf_event_header header;
        std::span<const uint8_t> bytes;
    } const outer{outerRecord.fileOffset, outerRecord.compressed, outerRecord.header, outerRecord.bytes};
    lastCompressedOffset_ = outer.fileOffset;
    if (streamBroken_) return;
    if (outer.compressed) {
        note(false, outer.fileOffset, "a COMPRESSED record inside compressed data: not unpacked");
        return;
    }
    std::span<const uint8_t> in = outer.bytes.subspan(sizeof(perf_event_header));
    if (outer.header.type == kRecordCompressed2) {
        uint64_t n = 0;
        if (in.size() < 8) {
            note(true, outer.fileOffset, "COMPRESSED2 record too short for its data size");
            return;
        }
        std::memcpy(&n, in.data(), 8);
        in = in.subspan(8, std::min<uint64_t>(n, in.size() - 8));
    }
    if (!dctx_) dctx_ = ZSTD_createDCtx();
    if (!dctx_) {
        note(true, outer.fileOffset, "cannot create a zstd decompression context");
        streamBroken_ = true;
        return;
    }
    ZSTD_inBuffer zin{in.data(), in.size(), 0};
    size_t produced = 0;
    for (;;) {
        const size_t used = pending_.size();
        const size_t chunk = std::max<size_t>(ZSTD_DStreamOutSize(), 64 * 1024);
        if (used + chunk > kMaxPendingDecompressed) {
            note(true, outer.fileOffset,
                 "decompressed data pending a whole record exceeds " +
                     std::to_string(kMaxPendingDecompressed >> 20) +
                     " MiB: the compressed stream is damaged; later COMPRESSED records are counted, not "
                     "unpacked");
            streamBroken_ = true;
            pending_.clear();
            return;
        }
        pending_.resize(used + chunk);
        ZSTD_outBuffer zout{pending_.data() + used, chunk, 0};
        const size_t ret = ZSTD_decompressStream(dctx_, &zout, &zin);
        pending_.resize(used + zout.pos);
        produced += zout.pos;
        if (ZSTD_isError(ret)) {
            note(true, outer.fileOffset,
                 std::string("COMPRESSED record does not decompress: zstd: ") + ZSTD_getErrorName(ret) +
                     "; later COMPRESSED records are counted, not unpacked");
            streamBroken_ = true;
            pending_.clear();
            return;
        }
        // Done when all input is consumed and zstd had room to spare (nothing buffered).
        if (zin.pos == zin.size && zout.pos < zout.size) break;
    }
    if (c_) c_->summary.decompressedBytes += produced;

    size_t pos = 0;
    while (!stopped_ && pending_.size() - pos >= sizeof(perf_event_header)) {
        perf_event_header h;
        std::memcpy(&h, pending_.data() + pos, sizeof h);
        const size_t left = pending_.size() - pos;
        if (h.size < sizeof h) {
            note(true, outer.fileOffset,
                 "record inside COMPRESSED data (decompressed offset " + std::to_string(streamPos_ + pos) +
                     ") has size " + std::to_string(h.size) +
                     ", less than its header: the compressed stream is damaged; later COMPRESSED records are "
                     "counted, not unpacked");
            streamBroken_ = true;
            pending_.clear();
            return;
        }
        if (h.size > left) break;  // the rest comes with the next COMPRESSED record
        const uint64_t payload = payloadSize(h, pending_.data() + pos + sizeof h);
        if (payload > left - h.size) break;
        PerfRecord& r = record_;
        r.fileOffset = outer.fileOffset;
        r.compressed = true;
        r.streamOffset = streamPos_ + pos;
        r.header = h;
        r.bytes = std::span<const uint8_t>(pending_).subspan(pos, h.size);
        r.payloadSize = payload;
        r.payloadOffset = outer.fileOffset;
        r.payload = std::span<const uint8_t>(pending_).subspan(pos + h.size, payload);
        pos += h.size + payload;
        if (!handle(r)) break;
    }
    pending_.erase(pending_.begin(), pending_.begin() + pos);
    streamPos_ += pos;
}

}  // namespace

// ---------------------------------------------------------------------------
// PerfDataReader

PerfDataReader::PerfDataReader(std::unique_ptr<Impl> d) : d_(std::move(d)) {}
PerfDataReader::PerfDataReader(PerfDataReader&&) noexcept = default;
PerfDataReader& PerfDataReader::operator=(PerfDataReader&&) noexcept = default;
PerfDataReader::~PerfDataReader() = default;

namespace {

Expected<PerfDataReader> readAll(std::unique_ptr<PerfDataReader::Impl> d,
                                 PerfDataReader (*make)(std::unique_ptr<PerfDataReader::Impl>)) {
    if (auto ok = d->readHeader(); !ok) return ok.error();
    if (d->mode == PerfDataMode::File) {
        d->readAttrs();
        d->locateData();
        if (!d->recovered && d->header.size == sizeof(FileHeader)) {
            uint64_t table;
            if (__builtin_add_overflow(d->header.data.offset, d->header.data.size, &table))
                table = UINT64_MAX;
            d->readFeatures(table);
        }
    }
    d->summary.dataEnd = d->dataOffset;
    Scanner scan(*d, d.get(), nullptr);
    (void)scan.run();  // a stop is already an issue; what came before stays
    if (d->mode == PerfDataMode::File && d->attrs.empty())
        d->issue(true, offsetof(FileHeader, attrs), "the file describes no events (no attrs)");
    d->nameAttrs();
    d->accountAux();
    d->checkAuxtraceIndex();
    return make(std::move(d));
}

}  // namespace

Expected<PerfDataReader> PerfDataReader::open(const std::string& path) {
    auto d = std::make_unique<Impl>();
    d->path = path;
    if (auto err = loadFile(path, d->file)) return Error{path + ": " + *err};
    return readAll(std::move(d), [](std::unique_ptr<Impl> i) { return PerfDataReader(std::move(i)); });
}

Expected<PerfDataReader> PerfDataReader::fromBytes(std::vector<uint8_t> bytes, std::string name) {
    auto d = std::make_unique<Impl>();
    d->path = std::move(name);
    d->file.owned = std::move(bytes);
    d->file.bytes = d->file.owned;
    return readAll(std::move(d), [](std::unique_ptr<Impl> i) { return PerfDataReader(std::move(i)); });
}

const std::string& PerfDataReader::path() const {
    return d_->path;
}
PerfDataMode PerfDataReader::mode() const {
    return d_->mode;
}
uint64_t PerfDataReader::fileSize() const {
    return d_->size();
}
const FileHeader& PerfDataReader::header() const {
    return d_->header;
}
uint64_t PerfDataReader::dataOffset() const {
    return d_->dataOffset;
}
uint64_t PerfDataReader::dataSize() const {
    return d_->dataSize;
}
bool PerfDataReader::dataSizeRecovered() const {
    return d_->recovered;
}
const std::vector<PerfAttr>& PerfDataReader::attrs() const {
    return d_->attrs;
}
const PerfFeatures& PerfDataReader::features() const {
    return d_->features;
}
const PerfDataSummary& PerfDataReader::summary() const {
    return d_->summary;
}
const std::vector<PerfDataIssue>& PerfDataReader::issues() const {
    return d_->issues;
}
bool PerfDataReader::hasErrors() const {
    return std::any_of(d_->issues.begin(), d_->issues.end(), [](const PerfDataIssue& i) { return i.error; });
}

Expected<void> PerfDataReader::forEachRecord(const RecordVisitor& visit) const {
    Scanner scan(*d_, nullptr, &visit);
    return scan.run();
}

std::span<const uint8_t> PerfDataReader::fileBytes(uint64_t offset, uint64_t size) const {
    if (offset > d_->size() || size > d_->size() - offset) return {};
    return d_->bytes().subspan(offset, size);
}

// ---------------------------------------------------------------------------
// Names

std::string perfFeatureName(unsigned id) {
    static const char* const kNames[] = {
        "RESERVED",        "TRACING_DATA", "BUILD_ID",     "HOSTNAME",     "OSRELEASE",
        "VERSION",         "ARCH",         "NRCPUS",       "CPUDESC",      "CPUID",
        "TOTAL_MEM",       "CMDLINE",      "EVENT_DESC",   "CPU_TOPOLOGY", "NUMA_TOPOLOGY",
        "BRANCH_STACK",    "PMU_MAPPINGS", "GROUP_DESC",   "AUXTRACE",     "STAT",
        "CACHE",           "SAMPLE_TIME",  "MEM_TOPOLOGY", "CLOCKID",      "DIR_FORMAT",
        "BPF_PROG_INFO",   "BPF_BTF",      "COMPRESSED",   "CPU_PMU_CAPS", "CLOCK_DATA",
        "HYBRID_TOPOLOGY", "PMU_CAPS",
    };
    if (id < std::size(kNames)) return kNames[id];
    if (id == kSimpleperfFeatMetaInfo) return "simpleperf META_INFO (" + std::to_string(id) + ")";
    if (id == kFeatAuxscopeCaptureStats) return "AUXSCOPE_CAPTURE_STATS";
    if (id == kFeatAuxscopeTriggers) return "AUXSCOPE_TRIGGERS";
    if (id >= 128) return "simpleperf feature " + std::to_string(id);
    return "feature " + std::to_string(id);
}

bool perfRecordTypeKnown(uint32_t type) {
    if (type < kUserTypeStart) return recordTypeName(type) != nullptr;
    return userRecordName(type) != nullptr;
}

std::string perfRecordTypeName(uint32_t type) {
    if (type < kUserTypeStart) {
        if (const char* n = recordTypeName(type)) return n;
    } else if (const char* n = userRecordName(type)) {
        return n;
    } else if (type >= kSimpleperfTypeStart) {
        return "simpleperf " + std::to_string(type);
    }
    return "unknown " + std::to_string(type);
}

}  // namespace auxscope
