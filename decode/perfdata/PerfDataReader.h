// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads perf.data: file mode (PERFILE2 header, attrs, data, features) and pipe
// mode (magic + size 16, then everything as records), as written by perf (any
// version writing PERFILE2) and by simpleperf. Qt-free; errors are values.
//
// open() maps the file, reads the header, attrs and features, and walks the data
// section once to build a summary (records per CPU and type, losses, AUX and
// AUXTRACE). Damage never stops it early without a trace: each problem becomes a
// PerfDataIssue naming the file, the byte offset and the cause, and whatever was
// read before it stays usable. Only a file that cannot be a perf.data at all
// (unreadable, empty, wrong magic, header cut short) is an Error from open().
#include <linux/perf_event.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "RecordParser.h"
#include "Result.h"
#include "perfdata/PerfDataFormat.h"

namespace auxscope {

enum class PerfDataMode { File, Pipe };

struct PerfDataIssue {
    bool error = false;   // false: a warning (what was read is complete and right)
    uint64_t offset = 0;  // byte offset in the file the issue applies to
    std::string cause;
    std::string message;  // "<file>: offset <N> (0x<N>): <cause>"
};

struct PerfAttr {
    perf_event_attr attr{};   // zero beyond what the file stored
    uint32_t sizeInFile = 0;  // bytes of perf_event_attr the file stored
    uint64_t fileOffset = 0;  // of the attr entry (file mode) or HEADER_ATTR record (pipe mode)
    std::vector<uint64_t> ids;
    std::string name;  // from HEADER_EVENT_DESC or EVENT_UPDATE; empty when the file names none
};

struct PerfBuildId {
    int32_t pid = -1;
    uint16_t misc = 0;
    std::vector<uint8_t> id;  // 20 bytes, or the length the entry states
    std::string filename;
    std::string hex() const;
};

struct PerfEventDesc {
    perf_event_attr attr{};
    std::string name;
    std::vector<uint64_t> ids;
};

struct PerfCpuTopology {
    std::vector<std::string> coreSiblings, threadSiblings;
    struct Cpu {
        uint32_t coreId = 0, socketId = 0;
    };
    std::vector<Cpu> cpus;  // present when the file has them (perf >= 4.18)
    std::vector<std::string> dieSiblings;
    std::vector<uint32_t> dieIds;
};

struct PerfPmuMapping {
    uint32_t type = 0;
    std::string name;
};

struct PerfGroupDesc {
    std::string name;
    uint32_t leaderIndex = 0, members = 0;
};

struct PerfNrCpus {
    uint32_t available = 0, online = 0;
};

struct PerfSampleTime {
    uint64_t first = 0, last = 0;
};

struct PerfClockData {
    uint32_t version = 0, clockid = 0;
    uint64_t wallClockNs = 0, clockidTimeNs = 0;
};

struct PerfRawFeature {
    unsigned id = 0;
    uint64_t offset = 0;  // in the file
    std::vector<uint8_t> bytes;
};

struct PerfFeatures {
    std::vector<unsigned> present;  // every feature the file carries (header bits or pipe records), ascending
    std::optional<std::string> hostname, osRelease, version, arch, cpuDesc, cpuId;
    std::optional<PerfNrCpus> nrCpus;
    std::optional<uint64_t> totalMemKb;
    std::optional<std::vector<std::string>> cmdline;
    std::optional<std::vector<PerfEventDesc>> eventDesc;
    std::optional<PerfCpuTopology> cpuTopology;
    std::optional<std::vector<PerfPmuMapping>> pmuMappings;
    std::optional<std::vector<PerfGroupDesc>> groupDesc;
    // HEADER_BUILD_ID, plus PERF_RECORD_HEADER_BUILD_ID records in pipe mode.
    std::optional<std::vector<PerfBuildId>> buildIds;
    // HEADER_AUXTRACE: where the AUXTRACE records are (perf: u64 count, then entries;
    // simpleperf writes the entries without the count). `size` is the record's header.size.
    std::optional<std::vector<perfdata::AuxtraceIndexEntry>> auxtraceIndex;
    std::optional<PerfSampleTime> sampleTime;
    // HEADER_CLOCKID: the resolution in ns of the clock perf record -k used (perf
    // prints it times 1000 as "clockid frequency: N MHz").
    std::optional<uint64_t> clockid;
    std::optional<PerfClockData> clockData;
    std::optional<perfdata::CompressedFeature> compressed;
    // simpleperf's META_INFO (feature 129): key/value pairs.
    std::optional<std::vector<std::pair<std::string, std::string>>> simpleperfMetaInfo;
    // Every feature not decoded above (tracing data, cache, NUMA, simpleperf's own, ...),
    // and any whose decoding failed, raw with its id.
    std::vector<PerfRawFeature> raw;
};

struct PerfAuxStats {
    uint64_t records = 0, bytes = 0;
    uint64_t truncated = 0, overwrite = 0, partial = 0, collision = 0, formatRaw = 0;
};

struct PerfCpuStats {
    std::map<uint32_t, uint64_t> recordsByType;
    uint64_t lostRecords = 0;         // PERF_RECORD_LOST records
    uint64_t lost = 0;                // the events they say were lost
    uint64_t lostSamplesRecords = 0;  // PERF_RECORD_LOST_SAMPLES records
    uint64_t lostSamples = 0;         // the samples they say were lost
    PerfAuxStats aux;
    uint64_t auxtraceBuffers = 0, auxtraceBytes = 0;
};

struct PerfAuxRecord {
    uint64_t fileOffset = 0;
    int64_t cpu = -1;
    int32_t tid = -1;  // from the sample_id (-1 when it has none)
    uint64_t time = 0;
    uint64_t auxOffset = 0, auxSize = 0, flags = 0;
};

struct PerfAuxtraceBuffer {
    uint64_t fileOffset = 0;  // of the PERF_RECORD_AUXTRACE header
    uint64_t dataOffset = 0;  // of its payload in the file
    uint64_t size = 0;        // payload bytes the record announces
    uint64_t available = 0;   // payload bytes the file holds (== size unless cut short)
    uint64_t auxOffset = 0;   // offset of the data in the AUX area
    uint64_t reference = 0;
    uint32_t idx = 0, tid = 0;
    int64_t cpu = -1;
    bool compressed = false;  // found inside a COMPRESSED record: dataOffset is not a file offset
};

struct PerfAuxtraceError {
    uint64_t fileOffset = 0;
    uint32_t type = 0, code = 0, pid = 0, tid = 0, fmt = 0;
    int64_t cpu = -1;
    uint64_t ip = 0, time = 0;
    std::string message;
};

struct PerfAuxtraceInfo {
    uint64_t fileOffset = 0;
    uint32_t type = 0;  // PERF_AUXTRACE_*: 1 Intel PT, 2 BTS, 3 CoreSight ETM, 4 Arm SPE, ...
    std::vector<uint64_t> priv;
};

struct PerfTimeConv {
    uint64_t timeShift = 0, timeMult = 0, timeZero = 0;
    bool hasCycles = false;  // the newer layout with the fields below
    uint64_t timeCycles = 0, timeMask = 0;
    bool capUserTimeZero = false, capUserTimeShort = false;
};

// AUX offsets of one AUX area that the file should hold once and does not.
enum class PerfAuxGapKind {
    // Announced by a PERF_RECORD_AUX (not OVERWRITE) and held by no AUXTRACE
    // record: the bytes were written to the AUX area but never reached the file.
    Missing,
    // An AUXTRACE record holds AUX offsets an earlier one of the area already held.
    Overlap,
    // An AUXTRACE record starts before the one before it in the file.
    Backwards,
};

struct PerfAuxGap {
    PerfAuxGapKind kind = PerfAuxGapKind::Missing;
    uint64_t auxOffset = 0, size = 0;  // the AUX offsets [auxOffset, auxOffset + size)
    // The record the gap is told at. Missing: the AUXTRACE record after which the
    // bytes are missing (the nearest one of the area ending at or before them),
    // or, when none precedes them, the PERF_RECORD_AUX that announced them.
    // Overlap, Backwards: the AUXTRACE record that holds them again.
    uint64_t fileOffset = 0;
    bool afterAuxtrace = false;  // Missing: fileOffset is that AUXTRACE record (else the AUX record)
    bool cutShort = false;       // ... and its payload was cut short by the end of the file
    bool compressed = false;     // that AUXTRACE record lies inside a COMPRESSED record at fileOffset
    // Missing: the PERF_RECORD_AUX that announced the first missing byte, and its time.
    uint64_t auxRecordOffset = 0, time = 0;
};

// One AUX area (an AUX ring the kernel filled): per CPU, or per thread. What the
// AUX records say was written to it against what the AUXTRACE records hold.
struct PerfAuxArea {
    int64_t cpu = -1;  // a per-CPU area; -1 for a per-thread one (or AUX records that name no CPU)
    int32_t tid = -1;  // a per-thread area (cpu -1): the thread; -1 for a per-CPU one
    // Some AUX records say OVERWRITE (snapshot mode): the hardware overwrites the
    // area by design and only snapshots are saved, so absent bytes are no loss:
    // the area announces nothing and has no gaps.
    bool snapshot = false;
    uint64_t auxRecords = 0;  // PERF_RECORD_AUX of this area
    // AUX offsets non-OVERWRITE AUX records announce (their union; 0 in a snapshot area).
    uint64_t announcedBytes = 0;
    uint64_t auxtraceRecords = 0;
    uint64_t presentBytes = 0;  // AUX offsets the AUXTRACE records hold (their union; what the file has)
    uint64_t missingBytes = 0;  // announced, not present: lost between the AUX area and the file
    // The kernel's own losses: AUX records flagged TRUNCATED (the AUX area was
    // full and the hardware stopped), PARTIAL, COLLISION. Those bytes never took
    // AUX offsets; they are not among missingBytes.
    uint64_t truncated = 0, partial = 0, collision = 0;
    std::vector<PerfAuxGap> gaps;    // Missing, by AUX offset
    std::vector<PerfAuxGap> damage;  // Overlap and Backwards, in file order
    uint64_t damageBytes = 0;        // AUX offsets held twice (or out of order)
};

// "cpu 3", "thread 1234", "no cpu".
std::string perfAuxAreaName(const PerfAuxArea& area);

struct PerfDataSummary {
    uint64_t records = 0;  // every record, including those unpacked from COMPRESSED records
    std::map<uint32_t, uint64_t> recordsByType;
    // Per CPU (from the record's sample_id, or the cpu field of AUXTRACE and
    // AUXTRACE_ERROR); key -1 holds records that name no CPU.
    std::map<int64_t, PerfCpuStats> cpus;
    std::vector<PerfAuxRecord> aux;
    std::vector<PerfAuxtraceBuffer> auxtrace;
    std::vector<PerfAuxtraceError> auxtraceErrors;
    std::vector<PerfAuxtraceInfo> auxtraceInfo;
    // Every AUX area the AUX or AUXTRACE records name, by cpu then tid: announced
    // against present AUX bytes, and each range missing from the file. The areas
    // are per CPU unless the AUXTRACE records are per thread (cpu -1); AUX records
    // go to their sample_id's thread then, else to its CPU.
    std::vector<PerfAuxArea> auxAreas;
    uint64_t auxMissingBytes = 0;    // summed over auxAreas
    uint64_t auxAnnouncedBytes = 0;  // summed over auxAreas
    std::optional<PerfTimeConv> timeConv;
    uint64_t compressedRecords = 0, compressedBytes = 0, decompressedBytes = 0;
    uint64_t parseErrors = 0;     // records whose fields could not all be read
    uint64_t unknownRecords = 0;  // records of types this reader does not know
    uint64_t dataEnd = 0;         // file offset just past the last complete record
};

// One record during forEachRecord(); spans are valid during the callback only.
struct PerfRecord {
    // Offset of the record's header in the file. For a record unpacked from a
    // COMPRESSED record: that record's offset (as perf reports it).
    uint64_t fileOffset = 0;
    bool compressed = false;
    uint64_t streamOffset = 0;  // compressed: offset in the decompressed stream; else == fileOffset
    perf_event_header header{};
    std::span<const uint8_t> bytes;  // header.size bytes, header included
    // Kernel records (type < 64): their fields and event; user records: type/misc only.
    ParsedRecord parsed;
    std::optional<std::string> parseError;
    int64_t cpu = -1;  // as counted in PerfDataSummary::cpus
    // PERF_RECORD_AUXTRACE and HEADER_TRACING_DATA: the payload that follows the
    // record and is not counted in header.size (may be cut short: see payloadSize).
    std::span<const uint8_t> payload;
    uint64_t payloadOffset = 0;
    uint64_t payloadSize = 0;  // as the record announces it
};

class PerfDataReader {
public:
    static Expected<PerfDataReader> open(const std::string& path);
    // Reads a perf.data held in memory; `name` stands for the file in messages.
    static Expected<PerfDataReader> fromBytes(std::vector<uint8_t> bytes, std::string name);

    PerfDataReader(PerfDataReader&&) noexcept;
    PerfDataReader& operator=(PerfDataReader&&) noexcept;
    ~PerfDataReader();

    const std::string& path() const;
    PerfDataMode mode() const;
    uint64_t fileSize() const;
    // File mode: the header as stored. Pipe mode: magic and size only.
    const perfdata::FileHeader& header() const;
    // The data section as read: for a file whose header says 0 (capture killed
    // before perf could finish it) the size recovered by scanning.
    uint64_t dataOffset() const;
    uint64_t dataSize() const;
    bool dataSizeRecovered() const;

    const std::vector<PerfAttr>& attrs() const;
    const PerfFeatures& features() const;
    const PerfDataSummary& summary() const;
    const std::vector<PerfDataIssue>& issues() const;
    bool hasErrors() const;

    // Walks the data section again, in file order (records inside COMPRESSED
    // records right after it). Return false from the visitor to stop. Returns the
    // error that ended the walk early, if any (also listed in issues()).
    using RecordVisitor = std::function<bool(const PerfRecord&)>;
    Expected<void> forEachRecord(const RecordVisitor& visit) const;

    // Bytes of the file, e.g. an AUXTRACE buffer's payload; empty when out of range.
    std::span<const uint8_t> fileBytes(uint64_t offset, uint64_t size) const;

    struct Impl;

private:
    explicit PerfDataReader(std::unique_ptr<Impl> d);
    std::unique_ptr<Impl> d_;
};

// "HOSTNAME", "AUXTRACE", "simpleperf META_INFO", "feature 140".
std::string perfFeatureName(unsigned id);
// "SAMPLE", "AUXTRACE", "FINISHED_ROUND", "simpleperf 32769", "unknown 99".
std::string perfRecordTypeName(uint32_t type);
// Whether this reader knows the type (kernel types recordTypeName() names, perf's 64..83).
bool perfRecordTypeKnown(uint32_t type);

}  // namespace auxscope
