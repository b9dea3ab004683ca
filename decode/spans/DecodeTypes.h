// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What every trace decoder (pt/, etm/) is asked and answers, independent of the
// trace kind: the window to decode, the blocks of flow it found, the spans it
// built and the statistics of the decode.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "spans/FlowToSpans.h"
#include "spans/SpanStore.h"

namespace auxscope {

struct DecodeWindow {
    uint64_t begin = 0, end = UINT64_MAX;  // perf time, ns
    std::optional<int> cpu;                // all CPUs when unset
    std::optional<int32_t> tid;            // all threads when unset
};

struct DecodeStats {
    uint64_t segments = 0;
    uint64_t traceBytes = 0;
    uint64_t blocks = 0;
    uint64_t instructions = 0;
    uint64_t decodeErrors = 0;
    // Segments decoded a second time by a slower decoder: Intel PT's flow walker
    // hands libipt's block decoder what it does not handle and segments with
    // decode errors (pt/PtFlowWalker.h).
    uint64_t segmentsRedecoded = 0;
    std::map<GapReason, uint64_t> gaps;
    std::map<std::string, uint64_t> missingImages;  // recorded file -> gaps it caused
    DecodeStats& operator+=(const DecodeStats& o);
};

// One block of the flow, for listings (auxscope decode --format insn).
struct FlowBlock {
    uint64_t time = 0;
    int cpu = -1;
    int32_t tid = -1;
    uint64_t ip = 0, endIp = 0;  // first and last instruction
    uint64_t instructions = 0;
    BranchClass last = BranchClass::Other;
    uint32_t function = 0;
};

// Where one decode call's wall time went (spans/SegmentedDecode.cpp), for the
// scaling figures of bench_pt_decode / bench_etm_decode: which parts run on
// the worker pool and which on the calling thread only.
struct DecodePhaseTimes {
    double lookupSeconds = 0;  // cache look-up, cache update, statistics: calling thread
    double decodeSeconds = 0;  // decoding the segments not cached: on the pool (or worker processes)
    double mergeSeconds = 0;   // merging per thread (joins and copies): on the pool
    // Of mergeSeconds: joining frames across cuts (joinParts, edits), summed over
    // the threads merged; one trace thread's joins run on one pool thread.
    double joinSeconds = 0;
};

// The spans of one decode call.
struct DecodedSpans {
    std::map<int32_t, SpanStore> threads;
    DecodeStats stats;         // of the segments decoded for this call (cached ones: as when decoded)
    DecodeStats decodedStats;  // of the segments decoded now only
    size_t decodedNow = 0, fromCache = 0;
    DecodePhaseTimes phases;
};

// Called between batches of segments: `done` of `total` segments decoded.
// Returning false stops the decode.
using DecodeProgress = std::function<bool(size_t done, size_t total)>;

struct TimeExtent {
    uint64_t begin = 0, end = 0;
};

}  // namespace auxscope
