// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reads HEADER_TRACING_DATA (the feature section of a file-mode perf.data, or
// the payload of a pipe-mode PERF_RECORD_HEADER_TRACING_DATA): the tracefs
// format of every tracepoint the file samples, so the raw data of those samples
// (PERF_SAMPLE_RAW) can be read field by field. The layout is perf's
// (tools/perf/util/trace-event-read.c), as FeatureWriterTracing.cpp writes it:
//
//   "\x17\x08\x44" "tracing" VERSION "\0", u8 big-endian, u8 sizeof(long), u32 page size,
//   "header_page\0" u64 size + text, "header_event\0" u64 size + text,
//   u32 count of ftrace formats, each u64 size + text,
//   u32 count of systems, each: name "\0", u32 count, each u64 size + text,
//   then kallsyms, printk formats and saved cmdlines (not read here).
//
// Numbers are in the byte order the section names. Qt-free.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope {

struct TraceField {
    std::string name;  // "next_pid"; arrays without their "[16]"
    std::string type;  // as written: "pid_t", "char", "long", "__data_loc char[]", ...
    uint32_t offset = 0, size = 0;
    bool isSigned = false;
    uint32_t arrayLength = 0;  // "char next_comm[16]": 16; 0 for a scalar
};

struct TraceEventFormat {
    std::string system, name;  // "sched", "sched_switch"
    int64_t id = -1;           // the tracepoint's id: perf_event_attr.config of its events
    std::vector<TraceField> fields;
    const TraceField* field(std::string_view name) const;
};

struct TracingData {
    std::string version;  // "0.6"
    bool bigEndian = false;
    uint8_t longSize = 8;
    uint32_t pageSize = 0;
    std::vector<TraceEventFormat> events;  // the ftrace formats, then each system's events
    const TraceEventFormat* find(std::string_view system, std::string_view name) const;
    const TraceEventFormat* findId(uint64_t id) const;
};

// Parses one tracefs "format" file ("name: ...\nID: ...\nformat:\n\tfield:...").
// Lines it does not understand are skipped; `system` is what the caller knows.
TraceEventFormat parseTraceEventFormat(std::string_view text, std::string system = {});

// `where` names the file and the section's offset in it: errors read
// "<where>: byte N of the tracing data: <cause>".
Expected<TracingData> parseTracingData(std::span<const uint8_t> bytes, const std::string& where);

}  // namespace auxscope
