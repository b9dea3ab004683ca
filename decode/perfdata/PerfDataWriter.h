// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes a perf.data file (PERFILE2) as a stream:
//
//   [file header][ids of attr 0][ids of attr 1]...[attr entries][data ... ][feature index][features]
//
// create() writes the header with data size 0, the ids and the attrs at once;
// records are then appended to the data section (buffered, and under -z packed
// into PERF_RECORD_COMPRESSED records the way perf record -z does); finish()
// writes the feature sections and rewrites the header last. A capture that dies
// before finish() therefore leaves a file whose header says data size 0 and whose
// records follow the attrs: readers recover it by scanning.
//
// Errors are values naming the file, the offset and the cause. After the first
// write error nothing more is written to the data section; finish() still cuts
// the file at the last whole record that reached the disk and writes a valid
// header (features too, when they fit).
#include <linux/perf_event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"
#include "perfdata/PerfDataFormat.h"

namespace auxscope {

// One event of the file: its attr (written with the size of this build's
// perf_event_attr), the name for HEADER_EVENT_DESC and the ids of its instances.
struct PerfDataEventAttr {
    std::string name;
    perf_event_attr attr{};
    std::vector<uint64_t> ids;
};

struct PerfDataWriterOptions {
    bool compress = false;                  // zstd, like perf record -z
    int compressionLevel = 1;               // perf record -z's default
    size_t bufferBytes = size_t(1) << 20;   // user-space write buffer
    size_t compressChunkBytes = 256 << 10;  // raw bytes per zstd flush
    // Write into this descriptor (taken over: the writer closes it) instead of
    // creating the path, which then only names the file in messages. The
    // privileged capture helper writes into the file the GUI created this way.
    int adoptFd = -1;
};

struct PerfDataWriterStats {
    uint64_t records = 0;        // records accepted (before compression), of every kind
    uint64_t streamRecords = 0;  // records accepted through writeStreamRecord()
    uint64_t streamBytes = 0;    // their bytes
    uint64_t recordsOnDisk = 0;  // records known to be in the file (whole, before compression)
    uint64_t streamRecordsOnDisk = 0;
    uint64_t streamBytesOnDisk = 0;
    uint64_t compressedRecords = 0;  // PERF_RECORD_COMPRESSED written
    uint64_t compressedBytes = 0;    // their size on disk
    uint64_t rounds = 0;             // FINISHED_ROUND written
    uint64_t auxtraceRecords = 0;
    uint64_t auxtraceBytes = 0;  // AUX payload bytes
};

// Fields of a sample_id trailer a synthesized record carries (the values of the
// event whose id it names; only the fields its sample_type selects are written).
struct SampleIdSpec {
    uint64_t sampleType = 0;
    uint64_t id = 0;
    uint32_t cpu = 0;
};

// Builds one record in memory: header, body, optional sample_id trailer.
class RecordBuilder {
public:
    explicit RecordBuilder(uint32_t type, uint16_t misc = 0);
    RecordBuilder& u32(uint32_t v) { return raw(&v, 4); }
    RecordBuilder& u64(uint64_t v) { return raw(&v, 8); }
    RecordBuilder& raw(const void* p, size_t n);
    // A NUL-terminated string padded with NULs to a multiple of `align` bytes.
    RecordBuilder& str(std::string_view s, size_t align = 8);
    RecordBuilder& sampleId(const SampleIdSpec& spec, int32_t pid, int32_t tid, uint64_t time);
    // Sets header.size; the record must fit in its u16.
    std::span<const uint8_t> finish();
    size_t size() const { return buf_.size(); }

private:
    std::vector<uint8_t> buf_;
};

class PerfDataWriter {
public:
    ~PerfDataWriter();
    PerfDataWriter(const PerfDataWriter&) = delete;
    PerfDataWriter& operator=(const PerfDataWriter&) = delete;

    // Creates (truncates) `path` and writes the header, ids and attrs.
    static Expected<std::unique_ptr<PerfDataWriter>> create(const std::string& path,
                                                            std::vector<PerfDataEventAttr> attrs,
                                                            PerfDataWriterOptions options = {});

    // A record written as is, never compressed (synthesized and perf-defined records).
    Expected<void> writeRecord(std::span<const uint8_t> record);
    // A record from a data ring: compressed under -z, else as is.
    Expected<void> writeStreamRecord(std::span<const uint8_t> record);
    // PERF_RECORD_FINISHED_ROUND, written only when records came since the last one
    // (under -z, once the round's compressed data is out).
    Expected<void> writeFinishedRound();
    // PERF_RECORD_ID_INDEX (split over several records when needed).
    Expected<void> writeIdIndex(std::span<const perfdata::IdIndexEntry> entries);
    // PERF_RECORD_TIME_CONV from a ring's perf_event_mmap_page. Writes nothing and
    // returns false when the kernel offers no user time conversion
    // (cap_user_time_zero clear), as perf record does.
    Expected<bool> writeTimeConv(const perf_event_mmap_page& page);
    // PERF_RECORD_AUXTRACE_INFO: the AUX PMU's type (PERF_AUXTRACE_*) and its private block.
    Expected<void> writeAuxtraceInfo(uint32_t type, std::span<const uint64_t> priv);
    // PERF_RECORD_AUXTRACE followed by its payload, `payload` then `more` (never
    // compressed, padded to 8 bytes; `head.size` is set from the payload). The
    // payload is not copied: the buffered records, the record's header and the
    // payload's pieces go to the file in one writev, as perf record writes an AUX
    // area's two pieces. Recorded in the AUXTRACE index.
    Expected<void> writeAuxtrace(perfdata::AuxtraceRecord head, std::span<const uint8_t> payload,
                                 std::span<const uint8_t> more = {});
    // Pushes buffered bytes (and under -z the pending chunk) to the file.
    Expected<void> flush();

    // A feature section to write at finish() (HEADER_AUXTRACE and HEADER_COMPRESSED
    // are added by the writer itself).
    void setFeature(unsigned bit, std::vector<uint8_t> body) { features_[bit] = std::move(body); }

    // Writes the rest of the data, the features and the final header, and closes
    // the file. Returns the first error met since create(), if any.
    Expected<void> finish();

    const std::string& path() const { return path_; }
    uint64_t dataOffset() const { return dataOffset_; }
    // Bytes of the data section so far (what reached the file plus what is buffered).
    uint64_t dataSize() const { return committed_ + buf_.size() - dataOffset_; }
    // The file's size once finish() returned.
    uint64_t fileSize() const { return fileSize_; }
    const PerfDataWriterStats& stats() const { return stats_; }
    const std::vector<perfdata::AuxtraceIndexEntry>& auxtraceIndex() const { return auxIndex_; }
    bool failed() const { return !firstError_.empty(); }
    // The first error's message (empty while none).
    const std::string& errorMessage() const { return firstError_; }
    bool compressing() const { return options_.compress; }

private:
    PerfDataWriter() = default;
    Expected<void> append(std::span<const uint8_t> bytes);
    Expected<void> flushBuffer();
    Expected<void> compressChunk();
    Expected<void> emitRound();
    // `written`, where given: how much reached the file (all of it, or less on an error).
    Expected<void> writeAll(const void* p, size_t n, size_t* written = nullptr);
    // Writes every piece, in order, with as few writev calls as the kernel allows.
    Expected<void> writeAllv(std::span<const std::span<const uint8_t>> pieces);
    Expected<void> failWith(const std::string& what, int err);
    Error stickyError() const;

    std::string path_;
    int fd_ = -1;
    PerfDataWriterOptions options_;
    std::vector<PerfDataEventAttr> attrs_;
    uint64_t attrsOffset_ = 0, dataOffset_ = 0;
    uint64_t committed_ = 0;  // file offset up to which whole records are on disk
    uint64_t fileSize_ = 0;
    std::vector<uint8_t> buf_;
    bool recordsSinceRound_ = false;
    // -z
    struct Zstd;
    std::unique_ptr<Zstd> zstd_;
    // Records in buf_ and in chunk_ (not yet in the file): after a failed write
    // they are what the file misses.
    struct Pending {
        uint64_t records = 0, streamRecords = 0, streamBytes = 0;
        Pending& operator+=(const Pending& o) {
            records += o.records, streamRecords += o.streamRecords, streamBytes += o.streamBytes;
            return *this;
        }
    };
    Pending inBuf_, inChunk_, inChunkAtBoundary_;
    // The FINISHED_ROUNDs in buf_: where each ends (an offset in buf_) and what
    // buf_ held up to there, so a buffer the disk took only part of keeps its
    // whole rounds (flushBuffer).
    std::vector<std::pair<size_t, Pending>> bufRounds_;
    std::vector<uint8_t> chunk_;  // raw records waiting to be compressed
    size_t roundBoundary_ = 0;    // chunk_ offset where the last complete round ends
    std::vector<uint8_t> packed_;
    std::map<unsigned, std::vector<uint8_t>> features_;
    std::vector<perfdata::AuxtraceIndexEntry> auxIndex_;
    std::vector<uint64_t> roundEnds_;  // file offsets right after recent FINISHED_ROUNDs
    bool auxtraceInfo_ = false;
    PerfDataWriterStats stats_;
    std::string firstError_;
    bool finished_ = false;
};

}  // namespace auxscope
