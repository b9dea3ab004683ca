// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers shared by the writer and AUXTRACE_INFO tests: running a command (perf as
// an oracle), parsing perf report --stats, and a plain reading of a perf.data's
// records independent of auxscope's reader.
#include <linux/perf_event.h>
#include <sys/wait.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "perfdata/PerfDataFormat.h"

namespace auxscope::writertest {

struct CommandResult {
    int status = -1;  // wait status
    std::string out, err;
    bool exitedZero() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};
CommandResult runCommand(const std::vector<std::string>& argv, double timeoutSeconds);
// Debian's perf, or nullopt when linux-perf is not installed.
std::optional<std::string> perfBinary();
// How many times `pattern` (ECMAScript regex) matches in `text`, e.g. record
// lines of `perf report -D`.
size_t countMatches(const std::string& text, const std::string& pattern);
// `perf report --stats` output: record type name -> count.
std::map<std::string, uint64_t> parsePerfStats(const std::string& text);

struct FileRecord {
    uint64_t offset = 0;
    perf_event_header header{};
    std::vector<uint8_t> bytes;
};
struct PerfDataFileView {
    std::vector<uint8_t> file;
    perfdata::FileHeader header{};
    std::vector<FileRecord> records;
    std::map<unsigned, perfdata::FileSection> features;
    bool ok = false;
    std::string error;
};
PerfDataFileView readPerfDataFile(const std::string& path);
std::string makeTempDir(const std::string& tag);

}  // namespace auxscope::writertest
