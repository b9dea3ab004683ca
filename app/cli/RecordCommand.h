// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CaptureSession.h"
#include "Result.h"
#include "record/ReplaySource.h"

namespace auxscope {

// What `auxscope record ARGS` asks for, as parseRecordArgs reads it.
struct RecordArgs {
    CaptureOptions capture;  // target, events, rings, duration, command
    std::string output;      // -o FILE
    bool compress = false;   // -z
    // --writer-budget SIZE: the file writer's backlog in memory (nullopt: the default).
    std::optional<uint64_t> writerBudget;
    bool json = false;       // --json
    std::string replayFile;  // --replay FILE
    ReplayOptions replay;    // --replay-speed, --replay-loop
    bool replayOptionGiven = false;
    bool snapshotOnExit = false;  // -Se
    std::string controlSpec;      // --control
    TriggerSettings triggers;     // --trigger (parsed, not resolved), --trigger-post/-max/-gap/-tid
    bool help = false;            // -h, --help
    bool listEvents = false;      // --list-events
};

// Parses record's arguments: a pure function (opens, starts and prints
// nothing), so tests and the fuzzer call it directly. A refusal names the
// option and the text given.
Expected<RecordArgs> parseRecordArgs(const std::vector<std::string>& args);
// `auxscope record --help`: its options from the table the parser reads.
std::string recordHelp();

// `auxscope record ...`: headless capture over the same CaptureSession the GUI uses.
int runRecordCommand(const std::vector<std::string>& args);

// The per-CPU totals table printed at the end of a capture.
std::string formatSummary(const CaptureSummary& s);
// The summary as one JSON object; `members` (name, JSON value) are added to it.
std::string formatSummaryJson(const CaptureSummary& s,
                              const std::vector<std::pair<std::string, std::string>>& members = {});

}  // namespace auxscope
