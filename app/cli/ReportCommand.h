// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cli/DecodeOptions.h"
#include "perfdata/PerfDataReader.h"
#include "samples/SampleProfile.h"
#include "spans/RangeStats.h"

namespace auxscope {

// `auxscope report FILE [--tid T] [--time A-B] [--sort self|total|calls|insns]
// [--format text|csv|json] [--top N] [--tree]`: the top functions and call tree
// of a time range of a decoded AUX trace (spans/RangeStats).
// What `auxscope report ARGS` asks for.
struct ReportArgs : DecodeSelection {
    std::string path;
    std::string format = "text";
    std::string source = "auto";  // auto, trace, samples, off-cpu
    std::string event;            // samples: the event's name
    std::string sortName = "self";
    size_t top = 30;
    bool tree = false;
    bool threadTable = false;
    bool inlineFrames = true;
    bool help = false;
};
// Parses report's arguments; a pure function but for the stat() of the files
// and folders the look-up options name.
Expected<ReportArgs> parseReportArgs(const std::vector<std::string>& args);

// One file's range statistics as `auxscope report` computes them (its decoded
// AUX trace when it has one and --source allows, else its samples), with what
// they refer to: the function table and thread names live as long as this.
struct ReportRange {
    std::unique_ptr<PerfDataReader> file;
    std::unique_ptr<AuxTraceSession> session;      // a decoded trace's
    std::shared_ptr<const SampleProfile> profile;  // a sampled profile's
    RangeStats stats;
    const FunctionTable* functions = nullptr;
    const TraceModel* model = nullptr;
    std::string sourceName;  // "Intel PT", "samples of cpu-clock", ...
    uint64_t recordingBegin = 0, recordingEnd = 0;
};
// Opens a.path and fills `out`; notes go to stderr as "COMMAND: FILE: note".
// Returns 0, or the exit status after printing the error with the file's name
// (1: the file cannot be read, decoded or has nothing to report; 2: a bad range).
int loadReportRange(const ReportArgs& a, const std::string& command, ReportRange& out);

int runReportCommand(const std::vector<std::string>& args);

}  // namespace auxscope
