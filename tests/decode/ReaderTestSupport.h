// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers for the perf.data reader tests: temp dirs, running commands, and
// perf's own `perf report -D` as an oracle (its text is parsed here, in tests
// only, to compare against; never by auxscope itself). The shared data folder:
// tests/support/TestData.h.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "perfdata/PerfDataReader.h"

namespace auxscope::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

struct CommandResult {
    int status = -1;     // exit status, or -1 when it could not run / was killed
    std::string output;  // stdout (stderr too when asked)
};
// Runs `sh -c command`.
CommandResult runCommand(const std::string& command, bool withStderr = false);

// Full path of perf when it is installed and runs, else nullopt.
std::optional<std::string> perfBinary();

std::vector<uint8_t> readFileBytes(const std::string& path);
void writeFileBytes(const std::string& path, const std::vector<uint8_t>& bytes);

constexpr int64_t kCpuNotPrinted = INT64_MIN;

// What `perf report -D -i FILE` says about a file.
struct PerfDump {
    bool ran = false;
    std::string error;
    // One per record perf read from the file, in the order perf printed them:
    // (offset, type). In a pipe stream perf counts offsets from after its 16-byte header.
    // Records perf synthesizes itself (printed as "0@(null)") are kept apart.
    std::vector<std::pair<uint64_t, uint32_t>> records;
    std::map<uint32_t, uint64_t> synthesized;
    // The "Aggregated stats" block: perf's record-type name -> count.
    std::map<std::string, uint64_t> aggregated;
    // "CPU TIME 0xOFFSET [0xSIZE]: PERF_RECORD_..." lines: offset -> (cpu, time),
    // in order (records unpacked from a COMPRESSED record share its offset).
    // cpu is kCpuNotPrinted when the file's events lack PERF_SAMPLE_CPU.
    std::vector<std::pair<uint64_t, std::pair<int64_t, uint64_t>>> cpuLines;
};
PerfDump perfReportDump(const std::string& perf, const std::string& file);

// perf's names in "Aggregated stats" for record types.
std::optional<uint32_t> perfStatsNameToType(const std::string& name);

// Records in file order as the reader walks them.
std::vector<std::pair<uint64_t, uint32_t>> readerRecordList(const PerfDataReader& r, bool skipCompressed);

// Compares the reader's view of `file` with perf's. Returns the differences
// (empty when they agree). `perOffset`: also compare the (offset, type) of every
// record (as sorted lists: perf prints kernel records in time order) and the CPU
// of each kernel record.
std::vector<std::string> compareWithPerf(const PerfDataReader& r, const PerfDump& dump, bool perOffset);

}  // namespace auxscope::test
