// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/perfdata/ owns the perf.data format: this layout, the reader
// (PerfDataReader), the writer (PerfDataWriter, FeatureWriter), the feature
// sections (auxscope's capture statistics among them) and the AUXTRACE_INFO
// private blocks (AuxtraceInfo). It is the bottom of decode/: it includes only
// capture/'s record parser and types, nothing else of decode/.
//
// The perf.data on-disk format (PERFILE2), as documented in the Linux source
// tree's tools/perf/Documentation/perf.data-file-format.txt. Shared by the
// reader and the writer; all values are little-endian on the machines we serve.
#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>

namespace auxscope::perfdata {

// "PERFILE2" read as a little-endian u64.
constexpr uint64_t kMagic = 0x32454c4946524550ULL;
// The same bytes in big-endian order (a file written on a big-endian host).
constexpr uint64_t kMagicSwapped = 0x50455246494c4532ULL;

struct FileSection {
    uint64_t offset;
    uint64_t size;
};

// File mode: this header at offset 0, then attrs, data and feature sections.
struct FileHeader {
    uint64_t magic;
    uint64_t size;  // sizeof(FileHeader)
    uint64_t
        attrSize;  // size of one FileAttr entry: sizeof(perf_event_attr as written) + sizeof(FileSection)
    FileSection attrs;
    FileSection data;
    FileSection eventTypes;  // unused, zero
    uint64_t features[4];    // bitmap of HEADER_* features present after the data section
};
static_assert(sizeof(FileHeader) == 104);

// Pipe mode: only magic and size (16); everything else comes as records.
struct PipeHeader {
    uint64_t magic;
    uint64_t size;
};

// Feature bits (HEADER_*). Their sections follow the data section in bit order,
// located by an array of FileSection, one per set bit.
enum Feature : unsigned {
    kFeatTracingData = 1,
    kFeatBuildId = 2,
    kFeatHostname = 3,
    kFeatOsRelease = 4,
    kFeatVersion = 5,
    kFeatArch = 6,
    kFeatNrCpus = 7,
    kFeatCpuDesc = 8,
    kFeatCpuId = 9,
    kFeatTotalMem = 10,
    kFeatCmdline = 11,
    kFeatEventDesc = 12,
    kFeatCpuTopology = 13,
    kFeatNumaTopology = 14,
    kFeatBranchStack = 15,
    kFeatPmuMappings = 16,
    kFeatGroupDesc = 17,
    kFeatAuxtrace = 18,
    kFeatStat = 19,
    kFeatCache = 20,
    kFeatSampleTime = 21,
    kFeatMemTopology = 22,
    kFeatClockId = 23,
    kFeatDirFormat = 24,
    kFeatBpfProgInfo = 25,
    kFeatBpfBtf = 26,
    kFeatCompressed = 27,
    kFeatCpuPmuCaps = 28,
    kFeatClockData = 29,
    kFeatHybridTopology = 30,
    kFeatPmuCaps = 31,
    kFeatLastKnown = 31,
};

// Records perf itself writes into perf.data (never produced by the kernel).
enum UserRecordType : uint32_t {
    kRecordHeaderAttr = 64,
    kRecordHeaderEventType = 65,
    kRecordHeaderTracingData = 66,
    kRecordHeaderBuildId = 67,
    kRecordFinishedRound = 68,
    kRecordIdIndex = 69,
    kRecordAuxtraceInfo = 70,
    kRecordAuxtrace = 71,
    kRecordAuxtraceError = 72,
    kRecordThreadMap = 73,
    kRecordCpuMap = 74,
    kRecordStatConfig = 75,
    kRecordStat = 76,
    kRecordStatRound = 77,
    kRecordEventUpdate = 78,
    kRecordTimeConv = 79,
    kRecordHeaderFeature = 80,
    kRecordCompressed = 81,
    kRecordFinishedInit = 82,
};

// PERF_RECORD_AUXTRACE: header, then this, then `size` bytes of AUX data that are
// NOT counted in header.size.
struct AuxtraceRecord {
    uint64_t size;
    uint64_t offset;  // offset of the data in the AUX area
    uint64_t reference;
    uint32_t idx;  // mmap index (per-CPU: the CPU's position in the map)
    uint32_t tid;
    uint32_t cpu;
    uint32_t reserved;
};

// PERF_RECORD_AUXTRACE_INFO: header, then type, reserved, then the PMU's private
// u64 array (Intel PT and CoreSight layouts are defined by perf).
struct AuxtraceInfoRecordHead {
    uint32_t type;  // PERF_AUXTRACE_* (1 Intel PT, 2 Intel BTS, 3 CoreSight ETM, 4 Arm SPE, ...)
    uint32_t reserved;
};

// HEADER_AUXTRACE feature: u64 count, then this entry per AUXTRACE record.
struct AuxtraceIndexEntry {
    uint64_t fileOffset;  // of the PERF_RECORD_AUXTRACE header
    uint64_t size;        // the record's header.size (perf's tools reject header + payload here)
};

// PERF_RECORD_TIME_CONV: perf time <-> TSC, from the mmap user page.
struct TimeConvRecordBody {
    uint64_t timeShift;
    uint64_t timeMult;
    uint64_t timeZero;
    // Newer layout (cap_user_time_short) adds:
    uint64_t timeCycles;
    uint64_t timeMask;
    uint8_t capUserTimeZero;
    uint8_t capUserTimeShort;
    uint8_t reserved[6];
};

// PERF_RECORD_ID_INDEX: u64 nr, then entries.
struct IdIndexEntry {
    uint64_t id;
    uint64_t idx;  // mmap index
    uint64_t cpu;
    uint64_t tid;
};

// --- Added for the reader (additive; nothing above changes) ---

// PERF_RECORD_COMPRESSED2 (newer perf): header, u64 data_size, then data_size
// bytes of zstd data, padded so header.size stays a multiple of 8.
constexpr uint32_t kRecordCompressed2 = 83;

// PERF_RECORD_AUX flags (uapi names PERF_AUX_FLAG_*; bookworm's header lacks the newest).
constexpr uint64_t kAuxFlagTruncated = 0x01;
constexpr uint64_t kAuxFlagOverwrite = 0x02;
constexpr uint64_t kAuxFlagPartial = 0x04;
constexpr uint64_t kAuxFlagCollision = 0x08;
constexpr uint64_t kAuxFlagCoresightFormatRaw = 0x100;

// PERF_RECORD_AUXTRACE_ERROR body (after the header). With fmt 0 (perf before
// 4.20) the NUL-terminated message follows ip directly; with fmt >= 1 a u64 time
// comes first, and fmt >= 2 appends u32 machine_pid, u32 vcpu after the message.
struct AuxtraceErrorRecordHead {
    uint32_t type;  // 1: PERF_AUXTRACE_ERROR_ITRACE
    uint32_t code;
    uint32_t cpu;
    uint32_t pid;
    uint32_t tid;
    uint32_t fmt;
    uint64_t ip;
};
constexpr size_t kAuxtraceErrorMsgSize = 64;

// HEADER_COMPRESSED feature.
struct CompressedFeature {
    uint32_t version;
    uint32_t type;  // 1: zstd
    uint32_t level;
    uint32_t ratio;
    uint32_t mmapLen;
};

// Build-id entries (HEADER_BUILD_ID feature and PERF_RECORD_HEADER_BUILD_ID):
// header, pid, 24 bytes of build id, then a NUL-terminated file name. With this
// bit in header.misc, byte 20 of the 24 holds the build id's length.
constexpr uint16_t kBuildIdMiscSize = 1u << 15;

// simpleperf numbers its own features from 128 upwards.
constexpr unsigned kSimpleperfFeatMetaInfo = 129;  // NUL-separated key/value strings

}  // namespace auxscope::perfdata
