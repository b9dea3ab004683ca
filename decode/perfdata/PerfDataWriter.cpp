// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/PerfDataWriter.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace auxscope {
namespace {

constexpr uint32_t kFinishedRound = perfdata::kRecordFinishedRound;
// A record's size is a u16: what one PERF_RECORD_COMPRESSED can carry.
constexpr size_t kMaxCompressedPayload = 0xffff - sizeof(perf_event_header);
constexpr uint32_t kCompressionZstd = 1;  // HEADER_COMPRESSED type (perf's PERF_COMP_ZSTD)

// PERF_RECORD_TIME_CONV, with the fields perf added for cap_user_time_short.
struct TimeConvRecord {
    perf_event_header header;
    perfdata::TimeConvRecordBody body;
};
static_assert(sizeof(TimeConvRecord) == 56);

}  // namespace

struct PerfDataWriter::Zstd {
    ZSTD_CCtx* cctx = nullptr;
    ~Zstd() {
        if (cctx) ZSTD_freeCCtx(cctx);
    }
};

// ---------------------------------------------------------------- RecordBuilder

RecordBuilder::RecordBuilder(uint32_t type, uint16_t misc) {
    perf_event_header h{type, misc, 0};
    raw(&h, sizeof h);
}

RecordBuilder& RecordBuilder::raw(const void* p, size_t n) {
    auto b = static_cast<const uint8_t*>(p);
    buf_.insert(buf_.end(), b, b + n);
    return *this;
}

RecordBuilder& RecordBuilder::str(std::string_view s, size_t align) {
    const size_t n = (s.size() + 1 + align - 1) / align * align;
    raw(s.data(), s.size());
    buf_.resize(buf_.size() + (n - s.size()), 0);
    return *this;
}

RecordBuilder& RecordBuilder::sampleId(const SampleIdSpec& spec, int32_t pid, int32_t tid, uint64_t time) {
    const uint64_t st = spec.sampleType;
    if (st & PERF_SAMPLE_TID) u32(uint32_t(pid)).u32(uint32_t(tid));
    if (st & PERF_SAMPLE_TIME) u64(time);
    if (st & PERF_SAMPLE_ID) u64(spec.id);
    if (st & PERF_SAMPLE_STREAM_ID) u64(spec.id);
    if (st & PERF_SAMPLE_CPU) u32(spec.cpu).u32(0);
    if (st & PERF_SAMPLE_IDENTIFIER) u64(spec.id);
    return *this;
}

std::span<const uint8_t> RecordBuilder::finish() {
    uint16_t size = uint16_t(buf_.size() > 0xffff ? 0xffff : buf_.size());
    std::memcpy(buf_.data() + offsetof(perf_event_header, size), &size, sizeof size);
    return {buf_.data(), buf_.size()};
}

// ---------------------------------------------------------------- PerfDataWriter

PerfDataWriter::~PerfDataWriter() {
    // Abandoned without finish(): keep what was buffered (the header still says
    // data size 0, as after a crash).
    if (fd_ >= 0 && !finished_ && !failed()) (void)flush();
    if (fd_ >= 0) close(fd_);
}

Expected<std::unique_ptr<PerfDataWriter>> PerfDataWriter::create(const std::string& path,
                                                                 std::vector<PerfDataEventAttr> attrs,
                                                                 PerfDataWriterOptions options) {
    if (attrs.empty()) {
        if (options.adoptFd >= 0) close(options.adoptFd);
        return makeError(path + ": a perf.data file needs at least one event");
    }
    std::unique_ptr<PerfDataWriter> w(new PerfDataWriter);
    w->path_ = path;
    w->options_ = options;
    if (options.adoptFd >= 0) {
        w->fd_ = options.adoptFd;
        if (ftruncate(w->fd_, 0) != 0 || lseek(w->fd_, 0, SEEK_SET) != 0)
            return makeError("cannot write " + path + ": " + std::strerror(errno));
    } else {
        w->fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    if (w->fd_ < 0) return makeError("cannot create " + path + ": " + std::strerror(errno));
    w->buf_.reserve(options.bufferBytes);
    if (options.compress) {
        w->zstd_ = std::make_unique<Zstd>();
        w->zstd_->cctx = ZSTD_createCCtx();
        if (!w->zstd_->cctx) return makeError(path + ": cannot create a zstd compression context");
        ZSTD_CCtx_setParameter(w->zstd_->cctx, ZSTD_c_compressionLevel, options.compressionLevel);
        w->chunk_.reserve(options.compressChunkBytes + 0x10000);
    }

    // Layout: header, every attr's ids, the attr entries, then data (perf's order).
    std::vector<uint8_t> head(sizeof(perfdata::FileHeader), 0);
    std::vector<perfdata::FileSection> idSections;
    for (auto& a : attrs) {
        idSections.push_back({head.size(), a.ids.size() * sizeof(uint64_t)});
        auto p = reinterpret_cast<const uint8_t*>(a.ids.data());
        head.insert(head.end(), p, p + a.ids.size() * sizeof(uint64_t));
    }
    w->attrsOffset_ = head.size();
    for (size_t i = 0; i < attrs.size(); ++i) {
        perf_event_attr attr = attrs[i].attr;
        attr.size = sizeof attr;
        auto p = reinterpret_cast<const uint8_t*>(&attr);
        head.insert(head.end(), p, p + sizeof attr);
        p = reinterpret_cast<const uint8_t*>(&idSections[i]);
        head.insert(head.end(), p, p + sizeof(perfdata::FileSection));
    }
    w->dataOffset_ = head.size();
    w->attrs_ = std::move(attrs);

    perfdata::FileHeader h{};
    h.magic = perfdata::kMagic;
    h.size = sizeof h;
    h.attrSize = sizeof(perf_event_attr) + sizeof(perfdata::FileSection);
    h.attrs = {w->attrsOffset_, w->dataOffset_ - w->attrsOffset_};
    h.data = {w->dataOffset_, 0};  // rewritten by finish(); 0 tells readers the capture did not finish
    std::memcpy(head.data(), &h, sizeof h);
    if (auto r = w->writeAll(head.data(), head.size()); !r) return r.error();
    w->committed_ = w->dataOffset_;
    return w;
}

Expected<void> PerfDataWriter::failWith(const std::string& what, int err) {
    if (firstError_.empty()) {
        firstError_ = "writing " + path_ + " (" + what + "): " + std::strerror(err);
        if (err == ENOSPC) firstError_ += " - the file system is full";
        if (err == EDQUOT) firstError_ += " - the disk quota is used up";
    }
    return stickyError();
}

Error PerfDataWriter::stickyError() const {
    return makeError(firstError_);
}

Expected<void> PerfDataWriter::writeAll(const void* p, size_t n, size_t* written) {
    auto b = static_cast<const uint8_t*>(p);
    uint64_t at = committed_;
    if (written) *written = 0;
    while (n) {
        ssize_t k = write(fd_, b, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            return failWith("at offset " + std::to_string(at), errno);
        }
        if (k == 0) return failWith("at offset " + std::to_string(at), EIO);
        b += k;
        n -= size_t(k);
        at += uint64_t(k);
        if (written) *written += size_t(k);
    }
    return {};
}

Expected<void> PerfDataWriter::writeAllv(std::span<const std::span<const uint8_t>> pieces) {
    std::vector<iovec> iov;
    iov.reserve(pieces.size());
    for (const auto& p : pieces)
        if (!p.empty()) iov.push_back({const_cast<uint8_t*>(p.data()), p.size()});
    uint64_t at = committed_;
    size_t i = 0;
    while (i < iov.size()) {
        const int count = int(std::min<size_t>(iov.size() - i, IOV_MAX));
        ssize_t k = writev(fd_, iov.data() + i, count);
        if (k < 0) {
            if (errno == EINTR) continue;
            return failWith("at offset " + std::to_string(at), errno);
        }
        if (k == 0) return failWith("at offset " + std::to_string(at), EIO);
        at += uint64_t(k);
        // Skip what was written; a piece written in part continues where it stopped.
        size_t n = size_t(k);
        while (i < iov.size() && n >= iov[i].iov_len)
            n -= iov[i++].iov_len;
        if (n) {
            iov[i].iov_base = static_cast<uint8_t*>(iov[i].iov_base) + n;
            iov[i].iov_len -= n;
        }
    }
    return {};
}

Expected<void> PerfDataWriter::flushBuffer() {
    if (failed()) return stickyError();
    if (buf_.empty()) return {};
    size_t written = 0;
    if (auto r = writeAll(buf_.data(), buf_.size(), &written); !r) {
        // The disk took part of the buffer (it filled): the whole rounds in that
        // part stay in the file, counted as on disk; finish() cuts the rest.
        for (auto it = bufRounds_.rbegin(); it != bufRounds_.rend(); ++it) {
            if (it->first > written) continue;
            const Pending& kept = it->second;
            committed_ += it->first;
            stats_.recordsOnDisk += kept.records;
            stats_.streamRecordsOnDisk += kept.streamRecords;
            stats_.streamBytesOnDisk += kept.streamBytes;
            inBuf_.records -= kept.records;
            inBuf_.streamRecords -= kept.streamRecords;
            inBuf_.streamBytes -= kept.streamBytes;
            buf_.erase(buf_.begin(), buf_.begin() + ptrdiff_t(it->first));
            break;
        }
        bufRounds_.clear();
        return r;
    }
    committed_ += buf_.size();
    buf_.clear();
    bufRounds_.clear();
    stats_.recordsOnDisk += inBuf_.records;
    stats_.streamRecordsOnDisk += inBuf_.streamRecords;
    stats_.streamBytesOnDisk += inBuf_.streamBytes;
    inBuf_ = {};
    return {};
}

Expected<void> PerfDataWriter::append(std::span<const uint8_t> bytes) {
    if (failed()) return stickyError();
    if (buf_.size() + bytes.size() > options_.bufferBytes)
        if (auto r = flushBuffer(); !r) return r;
    buf_.insert(buf_.end(), bytes.begin(), bytes.end());
    return {};
}

Expected<void> PerfDataWriter::emitRound() {
    perf_event_header h{kFinishedRound, 0, sizeof(perf_event_header)};
    ++stats_.rounds;
    ++stats_.records;
    recordsSinceRound_ = false;
    if (auto r = append({reinterpret_cast<const uint8_t*>(&h), sizeof h}); !r) return r;
    ++inBuf_.records;
    bufRounds_.push_back({buf_.size(), inBuf_});
    // A whole-record boundary finish() can cut back to on a full disk.
    roundEnds_.push_back(committed_ + buf_.size());
    if (roundEnds_.size() > 4096) roundEnds_.erase(roundEnds_.begin(), roundEnds_.begin() + 2048);
    return {};
}

Expected<void> PerfDataWriter::compressChunk() {
    if (chunk_.empty()) return {};
    if (failed()) return stickyError();
    // Everything up to the last round boundary, then FINISHED_ROUND, then the rest:
    // the marker must sit exactly between two rounds' records.
    auto pack = [&](const uint8_t* data, size_t len) -> Expected<void> {
        ZSTD_inBuffer in{data, len, 0};
        packed_.resize(sizeof(perf_event_header) + kMaxCompressedPayload);
        for (;;) {
            ZSTD_outBuffer out{packed_.data() + sizeof(perf_event_header), kMaxCompressedPayload, 0};
            size_t left = ZSTD_compressStream2(zstd_->cctx, &out, &in, ZSTD_e_flush);
            if (ZSTD_isError(left)) {
                firstError_ = "compressing records for " + path_ + ": " + ZSTD_getErrorName(left);
                return stickyError();
            }
            if (out.pos) {
                perf_event_header h{perfdata::kRecordCompressed, 0,
                                    uint16_t(sizeof(perf_event_header) + out.pos)};
                std::memcpy(packed_.data(), &h, sizeof h);
                ++stats_.compressedRecords;
                stats_.compressedBytes += h.size;
                if (auto r = append({packed_.data(), h.size}); !r) return r;
            }
            if (left == 0 && in.pos == in.size) return {};
        }
    };
    const size_t boundary = roundBoundary_;
    Expected<void> r;
    if (boundary) {
        r = pack(chunk_.data(), boundary);
        if (r) inBuf_ += inChunkAtBoundary_;
        if (r) r = emitRound();
    }
    if (r && boundary < chunk_.size()) {
        r = pack(chunk_.data() + boundary, chunk_.size() - boundary);
        Pending rest = inChunk_;
        rest.records -= inChunkAtBoundary_.records;
        rest.streamRecords -= inChunkAtBoundary_.streamRecords;
        rest.streamBytes -= inChunkAtBoundary_.streamBytes;
        if (r) inBuf_ += rest;
        recordsSinceRound_ = true;
    }
    if (!r) return r;  // the chunk's records stay counted as not written
    chunk_.clear();
    roundBoundary_ = 0;
    inChunk_ = inChunkAtBoundary_ = {};
    return r;
}

Expected<void> PerfDataWriter::writeRecord(std::span<const uint8_t> record) {
    if (zstd_ && !chunk_.empty())
        if (auto r = compressChunk(); !r) return r;
    ++stats_.records;
    recordsSinceRound_ = true;
    if (auto r = append(record); !r) return r;
    ++inBuf_.records;
    return {};
}

Expected<void> PerfDataWriter::writeStreamRecord(std::span<const uint8_t> record) {
    if (failed()) return stickyError();
    ++stats_.records;
    ++stats_.streamRecords;
    stats_.streamBytes += record.size();
    const Pending one{1, 1, record.size()};
    if (!zstd_) {
        recordsSinceRound_ = true;
        if (auto r = append(record); !r) {
            inBuf_ += one;  // counted as accepted and not written
            return r;
        }
        inBuf_ += one;
        return {};
    }
    chunk_.insert(chunk_.end(), record.begin(), record.end());
    inChunk_ += one;
    if (chunk_.size() >= options_.compressChunkBytes) return compressChunk();
    return {};
}

Expected<void> PerfDataWriter::writeFinishedRound() {
    if (failed()) return stickyError();
    if (zstd_) {
        // A boundary inside the pending chunk: the marker goes out with the chunk.
        if (!chunk_.empty()) {
            roundBoundary_ = chunk_.size();
            inChunkAtBoundary_ = inChunk_;
            return {};
        }
        // The round's records (if any) are already out.
        return recordsSinceRound_ ? emitRound() : Expected<void>();
    }
    if (!recordsSinceRound_) return {};
    return emitRound();
}

Expected<void> PerfDataWriter::writeIdIndex(std::span<const perfdata::IdIndexEntry> entries) {
    constexpr size_t kPerRecord = (0xffff - sizeof(perf_event_header) - 8) / sizeof(perfdata::IdIndexEntry);
    for (size_t i = 0; i < entries.size(); i += kPerRecord) {
        const size_t n = std::min(kPerRecord, entries.size() - i);
        RecordBuilder b(perfdata::kRecordIdIndex);
        b.u64(n).raw(entries.data() + i, n * sizeof(perfdata::IdIndexEntry));
        if (auto r = writeRecord(b.finish()); !r) return r;
    }
    return {};
}

Expected<bool> PerfDataWriter::writeTimeConv(const perf_event_mmap_page& page) {
    // The page is a seqlock: retry until `lock` is stable around the reads.
    TimeConvRecord rec{};
    const volatile perf_event_mmap_page* pc = &page;
    bool capZero = false, capShort = false;
    for (int attempt = 0; attempt < 1000; ++attempt) {
        const uint32_t seq = pc->lock;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        rec.body.timeShift = pc->time_shift;
        rec.body.timeMult = pc->time_mult;
        rec.body.timeZero = pc->time_zero;
        rec.body.timeCycles = pc->time_cycles;
        rec.body.timeMask = pc->time_mask;
        const uint64_t caps = pc->capabilities;
        capZero = (caps >> 4) & 1;   // cap_user_time_zero (bit 4 of the capabilities word)
        capShort = (caps >> 5) & 1;  // cap_user_time_short
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (pc->lock == seq) break;
    }
    if (!capZero) return false;
    rec.body.capUserTimeZero = 1;
    rec.body.capUserTimeShort = capShort;
    rec.header = {perfdata::kRecordTimeConv, 0, sizeof rec};
    if (auto r = writeRecord({reinterpret_cast<const uint8_t*>(&rec), sizeof rec}); !r) return r.error();
    return true;
}

Expected<void> PerfDataWriter::writeAuxtraceInfo(uint32_t type, std::span<const uint64_t> priv) {
    RecordBuilder b(perfdata::kRecordAuxtraceInfo);
    perfdata::AuxtraceInfoRecordHead head{type, 0};
    b.raw(&head, sizeof head).raw(priv.data(), priv.size_bytes());
    if (b.size() > 0xffff) return makeError(path_ + ": AUXTRACE_INFO private block too large");
    auxtraceInfo_ = true;
    return writeRecord(b.finish());
}

Expected<void> PerfDataWriter::writeAuxtrace(perfdata::AuxtraceRecord head, std::span<const uint8_t> payload,
                                             std::span<const uint8_t> more) {
    if (zstd_ && !chunk_.empty())
        if (auto r = compressChunk(); !r) return r;
    if (failed()) return stickyError();
    const size_t bytes = payload.size() + more.size();
    const size_t pad = (8 - bytes % 8) % 8;
    head.size = bytes + pad;
    perf_event_header h{perfdata::kRecordAuxtrace, 0, uint16_t(sizeof h + sizeof head)};
    // The records buffered so far, then the AUXTRACE header and payload: one
    // writev. The record's start is known once the buffered bytes are counted.
    const uint64_t offset = committed_ + buf_.size();
    const size_t buffered = buf_.size();
    buf_.insert(buf_.end(), reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h + 1));
    buf_.insert(buf_.end(), reinterpret_cast<const uint8_t*>(&head),
                reinterpret_cast<const uint8_t*>(&head + 1));
    static const uint8_t zeros[8] = {};
    const std::span<const uint8_t> pieces[] = {buf_, payload, more, {zeros, pad}};
    if (auto r = writeAllv(pieces); !r) {
        buf_.resize(buffered);  // the buffered records stay counted as not written
        return r;
    }
    committed_ += buf_.size() + bytes + pad;
    buf_.clear();
    bufRounds_.clear();
    stats_.recordsOnDisk += inBuf_.records;
    stats_.streamRecordsOnDisk += inBuf_.streamRecords;
    stats_.streamBytesOnDisk += inBuf_.streamBytes;
    inBuf_ = {};
    // perf's index entry size is the record's header.size (the payload is not
    // counted); perf checks it when it queues the AUX data from the index.
    auxIndex_.push_back({offset, h.size});
    ++stats_.auxtraceRecords;
    ++stats_.records;
    ++stats_.recordsOnDisk;
    stats_.auxtraceBytes += bytes;
    recordsSinceRound_ = true;
    return {};
}

Expected<void> PerfDataWriter::flush() {
    if (zstd_)
        if (auto r = compressChunk(); !r) return r;
    return flushBuffer();
}

Expected<void> PerfDataWriter::finish() {
    if (finished_) return failed() ? Expected<void>(stickyError()) : Expected<void>();
    finished_ = true;
    (void)flush();  // an error here is remembered in firstError_
    uint64_t dataEnd = committed_;
    // After a failed write the file may hold part of a buffer: cut it at the last
    // whole record. (Shrinking needs no space, so this works on a full disk.)
    if (failed() && ftruncate(fd_, off_t(dataEnd)) != 0 && firstError_.empty())
        (void)failWith("truncating after a write error", errno);

    // The feature sections after the data: the writer's own (the AUXTRACE index of
    // the buffers before `end`, the compression parameters) and those set by the
    // caller. Returns 0 or the write's errno.
    uint64_t bits[4] = {};
    uint64_t end = dataEnd;
    auto writeFeatures = [&](uint64_t cut) -> int {
        if (auxtraceInfo_ || !auxIndex_.empty()) {
            std::vector<uint8_t> idx(8);
            uint64_t n = 0;
            for (const auto& e : auxIndex_)
                if (e.fileOffset < cut) {
                    auto p = reinterpret_cast<const uint8_t*>(&e);
                    idx.insert(idx.end(), p, p + sizeof e);
                    ++n;
                }
            std::memcpy(idx.data(), &n, 8);
            features_[perfdata::kFeatAuxtrace] = std::move(idx);
        }
        if (zstd_) {
            perfdata::CompressedFeature c{};
            c.version = 0;
            c.type = kCompressionZstd;
            c.level = uint32_t(options_.compressionLevel);
            c.ratio =
                stats_.compressedBytes
                    ? uint32_t((stats_.streamBytes + stats_.compressedBytes / 2) / stats_.compressedBytes)
                    : 1;
            // Decompressed bytes per record never exceed one chunk (plus one record).
            c.mmapLen = uint32_t(options_.compressChunkBytes + 0x10000);
            auto p = reinterpret_cast<const uint8_t*>(&c);
            features_[perfdata::kFeatCompressed] = std::vector<uint8_t>(p, p + sizeof c);
        }
        // Feature index (one section per set bit, in bit order), then the sections.
        std::memset(bits, 0, sizeof bits);
        std::vector<perfdata::FileSection> index;
        std::vector<uint8_t> bodies;
        const uint64_t at = cut + features_.size() * sizeof(perfdata::FileSection);
        for (auto& [bit, body] : features_) {
            if (bit >= 256) continue;
            bits[bit / 64] |= uint64_t(1) << (bit % 64);
            index.push_back({at + bodies.size(), body.size()});
            bodies.insert(bodies.end(), body.begin(), body.end());
        }
        std::vector<uint8_t> blob(index.size() * sizeof(perfdata::FileSection));
        if (!index.empty()) std::memcpy(blob.data(), index.data(), blob.size());
        blob.insert(blob.end(), bodies.begin(), bodies.end());
        size_t done = 0;
        while (done < blob.size()) {
            ssize_t k = pwrite(fd_, blob.data() + done, blob.size() - done, off_t(cut + done));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) return k < 0 ? errno : EIO;
            done += size_t(k);
        }
        end = cut + blob.size();
        return 0;
    };
    if (int err = writeFeatures(dataEnd)) {
        (void)failWith("feature sections at offset " + std::to_string(dataEnd), err);
        // No room for them on a full disk. perf cannot read a file without some of
        // them (tracepoints need the tracing data), so the data section is cut back
        // to earlier round boundaries until they fit; the error says where.
        bool written = false;
        for (auto it = roundEnds_.rbegin(); it != roundEnds_.rend() && !written; ++it) {
            if (*it >= dataEnd || *it <= dataOffset_) continue;
            if (ftruncate(fd_, off_t(*it)) != 0) break;
            if (writeFeatures(*it) == 0) {
                firstError_ += "; the data section was cut back to offset " + std::to_string(*it) +
                               " to make room for them";
                dataEnd = *it;
                written = true;
            }
        }
        if (!written) {
            // The file stays a valid perf.data without them.
            if (ftruncate(fd_, off_t(dataEnd)) != 0) {
            }
            std::memset(bits, 0, sizeof bits);
            end = dataEnd;
        }
    }

    // The header last: from here on the file says how much data it holds.
    perfdata::FileHeader h{};
    h.magic = perfdata::kMagic;
    h.size = sizeof h;
    h.attrSize = sizeof(perf_event_attr) + sizeof(perfdata::FileSection);
    h.attrs = {attrsOffset_, dataOffset_ - attrsOffset_};
    h.data = {dataOffset_, dataEnd - dataOffset_};
    std::memcpy(h.features, bits, sizeof bits);
    if (pwrite(fd_, &h, sizeof h, 0) != ssize_t(sizeof h)) (void)failWith("rewriting the header", errno);
    if (close(fd_) != 0) (void)failWith("closing", errno);
    fd_ = -1;
    fileSize_ = end;
    if (failed()) return stickyError();
    return {};
}

}  // namespace auxscope
