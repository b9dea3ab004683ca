// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A raw-format CoreSight perf.data built from a frame-formatted one, for the
// tests (../shared has no raw-format file; ETE written by TRBE is raw):
// writeRawEtmCopy() reads a cs_etm perf.data (PerfDataReader) and writes a copy
// (PerfDataWriter) with the same attrs, records and features, AUXTRACE_INFO
// unchanged, but
//   - every AUXTRACE buffer replaced by its CPU's trace ID's bytes, deformatted
//     (etm/FrameDeformatter, memory-aligned frames, perf's 4-FSYNC reset frames);
//   - every PERF_RECORD_AUX flagged PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW (0x100),
//     its offset and size counted in raw bytes of that AUX area.
// Each AUX record's part of a buffer is deformatted on its own (the deformatter
// reset before it), as perf decodes each AUX record's fragment; the record's raw
// size is what its fragment yields for the CPU's trace ID. Bytes of other trace
// IDs (a buffer several sources share) are left out and counted in the report.
// A copy decodes to the same ranges as the original: the test for
// `auxscope decode FILE --format ranges` compares them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::etmtest {

struct RawEtmCopyReport {
    // Per CPU of an AUX area: the trace ID kept (from AUXTRACE_INFO).
    std::map<int64_t, uint8_t> traceIdByCpu;
    // Deformatted bytes per (CPU, trace ID) found in the formatted buffers.
    std::map<std::pair<int64_t, uint8_t>, uint64_t> bytesByCpuAndId;
    uint64_t formattedBytes = 0;  // AUXTRACE payload in
    uint64_t rawBytes = 0;        // AUXTRACE payload out (before the 8-byte padding)
    uint64_t auxRecords = 0, auxtraceBuffers = 0, records = 0;
    uint64_t droppedBytes = 0;  // deformatted bytes of other trace IDs, left out
    uint64_t unknownIdBytes = 0, resets = 0;
    std::vector<std::string> notes;  // e.g. "cpu 2: buffer holds trace IDs 0x10 0x12; kept 0x14"
};

// Writes the raw-format copy of `in` to `out`. Errors name the file and record offset.
Expected<RawEtmCopyReport> writeRawEtmCopy(const std::string& in, const std::string& out);

}  // namespace auxscope::etmtest
