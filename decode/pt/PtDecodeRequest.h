// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One Intel PT decode as `auxscope decode` runs it: which trace, which code
// images, which machine parameters, which view (packets as ptdump shows them or
// the instruction flow as ptxed shows it). The command line and the tests parse
// the same arguments here and run the same runPtDecode(), so what the
// conformance tests check is exactly what the command prints.
#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "OptionParser.h"
#include "Result.h"
#include "pt/PtConfig.h"
#include "pt/PtInsnFlow.h"
#include "pt/PtPacketDump.h"
#include "pt/PtSideband.h"

namespace auxscope {

// A code image file: `--raw FILE[:FROM[-TO]]:ADDRESS` or `--elf FILE[:BASE]`.
struct PtImageFileSpec {
    enum class Kind { Raw, Elf };
    Kind kind = Kind::Raw;
    std::string path;
    std::optional<uint64_t> address;  // raw: where its first byte goes; ELF: optional base
    uint64_t fileOffset = 0;          // raw: first byte of the file to map
    uint64_t size = 0;                // raw: bytes to map, 0 to the end of the file
};

enum class PtOutputFormat {
    Packets,  // ptdump's packet listing
    Ptxed,    // ptxed's instruction flow (addresses and events)
};

struct PtDecodeRequest {
    std::string tracePath;
    uint64_t traceOffset = 0;  // `--pt FILE:FROM[-TO]`: decode only that byte range of the file
    uint64_t traceSize = 0;    // 0: to the end of the file
    PtConfigOptions config;
    std::vector<PtImageFileSpec> images;
    PtOutputFormat format = PtOutputFormat::Ptxed;
    PtPacketDumpOptions packets;
    PtInsnFlowOptions flow;
    PtSidebandOptions sideband;  // --pevent:*, --sb:*: perf-event sideband files
};

// `--pt FILE` (or FILE alone), `--raw`, `--elf`, `--format ptxed|packets`, and the
// flags of PtConfigOptions, PtPacketDumpOptions, PtInsnFlowOptions and
// PtSidebandOptions (a flag both views know, like --quiet or --time, applies to
// both). Errors name the argument.
Expected<PtDecodeRequest> parsePtDecodeArguments(const std::vector<std::string>& args);
// The options parsePtDecodeArguments reads (ptxed's and ptdump's spellings), as
// the common option parser takes them: --opt VALUE and --opt=VALUE alike.
std::span<const OptionSpec> ptDecodeOptionTable();

struct PtDecodeSummary {
    PtPacketCounts packetCounts;  // packets view
    uint64_t instructions = 0;    // flow view
    uint64_t blocks = 0;
    std::vector<PtDecodeIssue> issues;
    bool hasErrors() const;
};

// Loads the trace and images and writes the chosen view to `out`. An error for
// what stops the decode from starting (unreadable file, bad ELF, no image for
// the flow); trouble inside the trace is in the summary's issues, with the
// output up to and after it kept.
Expected<PtDecodeSummary> runPtDecode(const PtDecodeRequest& request, std::ostream& out);

}  // namespace auxscope
