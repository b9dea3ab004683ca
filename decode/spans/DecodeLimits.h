// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Caps on what one decode call of a trace session decodes (issue 28): trace
// bytes, instructions and spans. Every count 0, the default everywhere auxscope
// decodes for a person, means no cap: a decode never stops early unless asked.
// The fuzzers set them (tests/fuzz/*PerfDataFuzzer.cpp), so that an input
// decodes a few segments of its trace, not all of it, and a run tries many
// inputs a second.
//
// Segments are the unit (spans/SegmentedDecode.h): with a cap set, the segments
// a call needs are decoded one after another in trace order, and a segment is
// begun only while every count so far is below its cap, so a call stops at the
// first segment boundary at or past a cap (it overshoots by at most the segment
// that crossed it). The report says which cap stopped it and how much was and
// was not decoded; the session says so in its trace notes.
#include <cstddef>
#include <cstdint>
#include <string>

namespace auxscope {

struct DecodeLimits {
    uint64_t traceBytes = 0;    // trace bytes decoded per call; 0: no cap
    uint64_t instructions = 0;  // instructions decoded per call; 0: no cap
    // Spans (gaps included) the segments made per call, before the merge joins
    // frames across cuts (spans/SegmentedDecode.h); 0: no cap.
    uint64_t spans = 0;
    bool any() const { return traceBytes || instructions || spans; }
};

// What the caps did to the last decode call.
struct DecodeLimitReport {
    bool stopped = false;  // a cap was reached before the call's last segment
    std::string cap;       // which: "trace bytes", "instructions" or "spans"
    uint64_t limit = 0;    // its value
    size_t segmentsDecoded = 0, segmentsLeft = 0;
    uint64_t traceBytes = 0, instructions = 0, spans = 0;  // decoded by the call
    // "decode stopped at the cap of 4096 trace bytes: 1 of 5 segments decoded
    // (4100 trace bytes, 812 instructions, 37 spans), 4 not decoded"; empty when
    // nothing was stopped.
    std::string note() const;
};

}  // namespace auxscope
