// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One OpenCSD decode tree: a CoreSight frame-formatted stream (several trace
// IDs, deformatted here) or a single source's raw stream (ETE via TRBE, or one
// trace ID already deformatted), with a decoder per trace source. It does not
// care where the bytes come from (snapshot buffer, perf.data AUXTRACE, a live
// ring): feed() them in order with their byte offset, flush() or finish() at
// the end, reset() before bytes that do not continue the previous ones.
//
// Elements come out synchronously from feed()/flush()/finish(), in trace order
// per trace ID, through EtmElementSink; memory for the opcodes comes from an
// EtmMemory (put an EtmMemoryCache in front of a file layer). A decoder is
// used by one thread at a time; separate decoders run in parallel.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"
#include "etm/EtmElement.h"
#include "etm/EtmMemory.h"
#include "etm/EtmSourceConfig.h"

namespace auxscope::etm {

class EtmElementSink {
public:
    virtual ~EtmElementSink() = default;
    virtual void element(const EtmElement& e) = 0;
    // OpenCSD reported an error it recovers from (bad packet, resync): where and what.
    virtual void decodeError(uint64_t /*index*/, uint8_t /*traceId*/, std::string_view /*message*/) {}
};

// The protocol packets, as OpenCSD's packet printers word them.
class EtmPacketSink {
public:
    virtual ~EtmPacketSink() = default;
    // index: byte offset of the packet's first byte; text: OpenCSD's description.
    virtual void packet(uint8_t traceId, uint64_t index, std::string_view text) = 0;
    // The end of a trace ID's packets (finish()).
    virtual void endOfTrace(uint8_t /*traceId*/) {}
};

enum class EtmInput : uint8_t {
    Formatted,       // CoreSight frame formatter output, 16-byte frames, memory aligned (ETR/ETB/perf)
    FormattedFsync,  // frame formatted with FSYNCs (DSTREAM / TPIU capture)
    Raw,  // one source's packets, no frames (ETE written by TRBE; PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW)
};

struct EtmDecoderOptions {
    EtmInput input = EtmInput::Formatted;
    // Packets only: no instruction flow, no memory reads (the `packets` listing, indexing).
    bool packetsOnly = false;
    // Frame formatted: reset the decoders on 4 frame-aligned FSYNCs (perf's
    // workaround for the padding some sinks write between buffers).
    bool resetOn4xFsync = false;
};

class EtmDecoder {
public:
    // `sources`: at most one per trace ID (for EtmInput::Raw exactly one);
    // `memory` may be null (packetsOnly, or every address inaccessible); `elements`
    // may be null with packetsOnly; `packets` may be null.
    static Expected<std::unique_ptr<EtmDecoder>> create(std::span<const EtmSourceConfig> sources,
                                                        const EtmDecoderOptions& options, EtmMemory* memory,
                                                        EtmElementSink* elements,
                                                        EtmPacketSink* packets = nullptr);
    ~EtmDecoder();
    EtmDecoder(const EtmDecoder&) = delete;
    EtmDecoder& operator=(const EtmDecoder&) = delete;

    // Decodes `bytes`, which start at byte offset `index` of the caller's stream
    // (elements carry these offsets). Offsets must increase; a fatal decoder
    // error is returned naming the offset, after which reset() is needed.
    Expected<void> feed(uint64_t index, std::span<const uint8_t> bytes);
    // Pushes out what the decoders hold, keeping their state (more data follows).
    Expected<void> flush();
    // The end of the data: flushes and ends every trace ID (EndOfTrace elements).
    Expected<void> finish();
    // Forgets the decode state: the next bytes start a new stream at `index`
    // (a new AUX buffer, a discontinuity). Decoders resynchronise.
    Expected<void> reset(uint64_t index);

    const std::vector<EtmSourceConfig>& sources() const { return sources_; }
    uint64_t bytesFed() const { return bytesFed_; }

    struct Impl;

private:
    EtmDecoder() = default;
    std::vector<EtmSourceConfig> sources_;
    std::unique_ptr<Impl> impl_;
    uint64_t bytesFed_ = 0;
};

}  // namespace auxscope::etm
