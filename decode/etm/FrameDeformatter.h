// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CoreSight trace formatter's frames taken apart: one frame-formatted
// stream (ETB/ETF/ETR buffers, perf's cs_etm AUX data, TPIU/DSTREAM captures)
// in, one byte stream per trace ID out, each ready for a decoder in raw mode
// (EtmInput::Raw) or for a per-trace-ID packet listing.
//
// A frame is 16 bytes. Bytes 0, 2, ..., 14 are "even" bytes, 1, 3, ..., 13
// "odd" ones, byte 15 holds one auxiliary bit per even byte (bit i for byte 2i).
//   - An even byte with bit 0 clear is data: its bits 7..1 and the aux bit as bit 0.
//   - An even byte with bit 0 set names a trace ID (bits 7..1). When it changes
//     the ID and its aux bit is set, the odd byte after it still belongs to the
//     old ID and the new one starts after it (the "delayed ID" rule); otherwise
//     the odd byte is the new ID's. Byte 14 naming an ID applies to the next frame.
//   - Odd bytes are always data of the ID in force.
// ID 0x00 is null trace and 0x70..0x7f are reserved: their bytes are counted and
// dropped, as are bytes before the first ID byte of a stream.
//
// Sync (CoreSight Architecture spec, as OpenCSD's trc_frame_deformatter reads it):
//   MemoryAligned: frames back to back from the stream's first byte, no sync
//                  packets (ETB/ETR and perf's cs_etm data). With resetOn4xFsync a
//                  frame of four FSYNCs (perf's padding between buffers) resets the
//                  ID state and is reported to the sink.
//   Fsync:         TPIU-style: bytes before the first FSYNC (FF FF FF 7F) are
//                  dropped; FSYNCs may stand before any frame, never inside one;
//                  with hsyncs, HSYNC half-words (FF 7F) inside frames are dropped.
//
// feed() takes bytes in any chunk size at increasing offsets (partial frames
// wait for the next feed); the sink gets each trace ID's bytes in stream order,
// consecutive bytes of one ID merged into one call within a feed(). Errors name
// the stream offset; after one, reset() is needed.
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::etm {

enum class FrameSync : uint8_t {
    MemoryAligned,  // 16-byte frames from the first byte, no FSYNC/HSYNC (ETB, ETR, perf cs_etm)
    Fsync,          // FSYNCs between frames, optionally HSYNCs within them (TPIU, DSTREAM)
};

struct FrameDeformatterOptions {
    FrameSync sync = FrameSync::MemoryAligned;
    bool hsyncs = false;          // Fsync only: HSYNCs may appear inside frames
    bool resetOn4xFsync = false;  // MemoryAligned only: a frame of 4 FSYNCs resets the ID state
};

struct FrameDeformatterStats {
    uint64_t frames = 0;
    uint64_t dataBytes = 0;        // handed to the sink (trace IDs 0x01..0x6f)
    uint64_t nullIdBytes = 0;      // trace ID 0x00: dropped
    uint64_t reservedIdBytes = 0;  // trace IDs 0x70..0x7f: dropped
    uint64_t unknownIdBytes = 0;   // before the stream's first ID byte: dropped
    uint64_t syncBytes = 0;        // FSYNC and HSYNC bytes
    uint64_t unsyncedBytes = 0;    // Fsync: bytes before the first FSYNC
    uint64_t resets = 0;           // frames of 4 FSYNCs (resetOn4xFsync)
};

class FrameDeformatterSink {
public:
    virtual ~FrameDeformatterSink() = default;
    // Bytes of `traceId` (0x01..0x6f), in stream order; `index` is the formatted
    // stream's offset of the first of them.
    virtual void data(uint8_t traceId, uint64_t index, std::span<const uint8_t> bytes) = 0;
    // A frame of 4 FSYNCs at `index` (resetOn4xFsync): no source's bytes continue across it.
    virtual void reset(uint64_t /*index*/) {}
};

class FrameDeformatter {
public:
    static constexpr size_t kFrameSize = 16;
    static constexpr uint8_t kNoId = 0xff;  // no ID byte seen since the stream started
    // Trace IDs a source may use (0 is null trace, 0x70..0x7f are reserved).
    static bool validTraceId(uint8_t id) { return id >= 0x01 && id <= 0x6f; }

    explicit FrameDeformatter(FrameDeformatterSink& sink, FrameDeformatterOptions options = {});

    // `bytes` start at offset `index` of the stream; each feed continues the last
    // one (the first after construction or reset() may start anywhere).
    Expected<void> feed(uint64_t index, std::span<const uint8_t> bytes);
    // The end of the stream: an error when an incomplete frame (or, Fsync, no FSYNC
    // at all) is left; the complete frames' bytes have been handed over.
    Expected<void> finish();
    // Forgets the stream: ID, partial frame, sync. Statistics are kept.
    void reset();

    const FrameDeformatterStats& stats() const { return stats_; }
    const FrameDeformatterOptions& options() const { return options_; }
    // The ID in force (kNoId before the first ID byte).
    uint8_t currentId() const { return cur_; }
    // Fsync: an FSYNC has been seen since the last reset (MemoryAligned: always).
    bool synced() const { return synced_; }

private:
    Expected<void> feedAligned(std::span<const uint8_t> bytes);
    Expected<void> feedFsync(std::span<const uint8_t> bytes);
    Expected<void> fail(uint64_t index, const std::string& cause);
    void unpack(const uint8_t* frame, const uint64_t* pairIndex);
    void emit(uint8_t id, uint8_t byte, uint64_t index);
    void flushRun();

    FrameDeformatterSink& sink_;
    FrameDeformatterOptions options_;
    FrameDeformatterStats stats_;
    bool started_ = false;  // bytes fed since the last reset
    uint64_t next_ = 0;     // offset the next feed must start at
    bool synced_ = true;
    bool failed_ = false;
    std::string error_;
    uint8_t cur_ = kNoId;
    // The frame being assembled, with each byte pair's stream offset.
    uint8_t frame_[kFrameSize] = {};
    uint64_t pairIndex_[kFrameSize / 2] = {};
    size_t frameLen_ = 0;
    // Fsync: bytes not looked at yet (at most a frame and a sync word), from pendIndex_.
    std::vector<uint8_t> pend_;
    uint64_t pendIndex_ = 0;
    // The run of one ID's bytes being gathered.
    std::vector<uint8_t> run_;
    uint8_t runId_ = kNoId;
    uint64_t runIndex_ = 0;
};

// A whole buffer deformatted into one byte vector per trace ID.
struct DeformattedBuffer {
    std::map<uint8_t, std::vector<uint8_t>> streams;  // by trace ID
    FrameDeformatterStats stats;
};
Expected<DeformattedBuffer> deformatBuffer(std::span<const uint8_t> bytes,
                                           const FrameDeformatterOptions& options = {});

}  // namespace auxscope::etm
