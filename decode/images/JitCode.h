// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Code a JIT compiler made at run time, as the two files perf documents for it
// describe it (tools/perf/Documentation/jit-interface.txt and
// jitdump-specification.txt):
//   - a perf map, /tmp/perf-<pid>.map: one "START SIZE name" line per function
//     (START and SIZE in hex, with or without 0x): names, no code;
//   - a jitdump, jit-<pid>.dump: a header (magic "JiTD", version, ELF machine,
//     pid, timestamp, flags) and records: JIT_CODE_LOAD (name, address and the
//     code bytes), JIT_CODE_MOVE, JIT_CODE_DEBUG_INFO (a line table),
//     JIT_CODE_UNWINDING_INFO (.eh_frame) and JIT_CODE_CLOSE. A JIT writes it
//     as it compiles and maps it executable once (perf's marker mmap), so the
//     recording's MMAP2 records name it.
// The code bytes stay in the dump: a load record says where (codeOffset), so a
// decoder reads them from the file as it reads ELF code.
//
// Bad input never throws: a malformed perf map line is counted and named
// (file:line: cause), the others kept; a jitdump record that cannot be read
// ends the walk with an error naming the file, the record's offset and the
// cause, the records before it kept.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope {

struct PerfMapSymbol {
    uint64_t start = 0, size = 0;
    std::string name;
};

struct PerfMap {
    std::string path;
    std::vector<PerfMapSymbol> symbols;  // in file order (a later line wins where two overlap)
    size_t malformed = 0;                // lines that are not "START SIZE name"
    std::vector<std::string> notes;      // the first malformed lines: "FILE:LINE: cause"
};

// Reads a perf map; the error only when the file cannot be read.
Expected<PerfMap> loadPerfMap(const std::string& path);
PerfMap parsePerfMap(const std::string& text, const std::string& path);

// The pid in a perf map's or a jitdump's name ("perf-123.map", "jit-123.dump"), -1 when none.
int32_t pidFromJitFileName(const std::string& path);

constexpr uint32_t kJitDumpMagic = 0x4A695444;  // "JiTD"
constexpr uint64_t kJitDumpHeaderSize = 40;
constexpr uint64_t kJitDumpFlagArchTimestamp = 1;  // timestamps are the CPU's (TSC), not CLOCK_MONOTONIC

struct JitCodeLoad {
    uint64_t time = 0;
    uint32_t pid = 0, tid = 0;
    uint64_t vma = 0, address = 0, size = 0, index = 0;
    std::string name;
    uint64_t codeOffset = 0;  // of the code bytes in the dump file
};

struct JitCodeMove {
    uint64_t time = 0;
    uint32_t pid = 0, tid = 0;
    uint64_t vma = 0, oldAddress = 0, newAddress = 0, size = 0, index = 0;
};

struct JitLine {
    uint64_t address = 0;
    int32_t line = 0, discriminator = 0;
    std::string file;
};

struct JitDebugInfo {
    uint64_t time = 0;
    uint64_t codeAddress = 0;  // of the function the lines belong to (its load record follows)
    std::vector<JitLine> lines;
};

struct JitUnwindingInfo {
    uint64_t time = 0;
    uint64_t unwindingSize = 0, ehFrameHdrSize = 0, mappedSize = 0;
    uint64_t dataOffset = 0;  // of the unwinding data in the dump file
};

struct JitDump {
    std::string path;
    uint32_t version = 0, elfMach = 0, pid = 0;
    uint64_t timestamp = 0, flags = 0;
    bool byteSwapped = false;  // written on a machine of the other byte order
    std::vector<JitCodeLoad> loads;
    std::vector<JitCodeMove> moves;
    std::vector<JitDebugInfo> debugInfo;
    std::vector<JitUnwindingInfo> unwinding;
    bool closed = false;        // a JIT_CODE_CLOSE record was read
    size_t unknownRecords = 0;  // records of ids this reader does not know (skipped by their size)
    // Where the walk stopped before the file's end: "FILE: record at offset N: cause".
    std::optional<Error> error;
};

// Reads a jitdump; the error when the file cannot be read or has no jitdump header.
Expected<JitDump> loadJitDump(const std::string& path);
Expected<JitDump> parseJitDump(std::span<const uint8_t> bytes, const std::string& path);

}  // namespace auxscope
