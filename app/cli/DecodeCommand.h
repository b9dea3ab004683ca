// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "cli/DecodeOptions.h"
#include "etm/EtmSnapshotDecode.h"
#include "pt/PtDecodeRequest.h"

namespace auxscope {

// `auxscope decode --pt FILE [--raw BIN:ADDR]... [--elf ELF[:ADDR]]... --format ptxed|packets ...`
// `auxscope decode PERF.DATA ...`
struct PerfDecodeArgs : DecodeSelection {
    std::string path;
    // Empty: the file's default (spans; an Arm SPE file: summary).
    std::string format;
};
// `auxscope decode SNAPSHOT_DIR [--format ranges|packets]`
struct SnapshotDecodeArgs {
    std::string dir;
    etm::EtmOutputFormat format = etm::EtmOutputFormat::Ranges;
};
// What decode's operand is: the one thing parseDecodeArgs asks of the disk.
enum class DecodeInput { PerfData, EtmSnapshot, Other };
using DecodeInputClassifier = std::function<DecodeInput(const std::string& path)>;
// The three modes of `auxscope decode`; `help`: -h or --help.
struct DecodeArgs {
    std::variant<PerfDecodeArgs, SnapshotDecodeArgs, PtDecodeRequest> mode;
    bool help = false;
};

// Parses decode's arguments. A pure function but for `classify` (which says
// whether an operand is a perf.data or a snapshot folder; the command passes
// one that looks at the file): nothing is decoded or printed.
Expected<DecodeArgs> parseDecodeArgs(const std::vector<std::string>& args,
                                     const DecodeInputClassifier& classify);
// What the command passes: the file's magic, the folder's snapshot.ini.
DecodeInput classifyDecodeInput(const std::string& path);

int runDecodeCommand(const std::vector<std::string>& args);

}  // namespace auxscope
