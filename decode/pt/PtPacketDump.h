// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Packet-level view of an Intel PT trace: one line per packet in the format of
// libipt's ptdump (offset, packet name, payload, optionally the tracked last IP,
// execution mode, estimated TSC or time calibration), with ptdump's inline
// "[offset: what: libipt error]" diagnostics, plus per-type packet counts (what
// `perf report -D` totals). Uses libipt's packet decoder; the time estimate
// (TSC + MTC + CYC) and calibration are auxscope's, since libipt keeps its own private.
#include <array>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "Result.h"
#include "pt/PtConfig.h"
#include "pt/PtSideband.h"

namespace auxscope {

// ptdump's switches, named after what they show (defaults: ptdump without flags).
struct PtPacketDumpOptions {
    bool showOffset = true;     // --no-offset clears: the trace offset column
    bool showRawBytes = false;  // --raw-bytes (ptdump --raw): the packet's bytes in hex
    bool showLastIp = false;    // --lastip: the full IP after each IP packet's update
    bool showExecMode = false;  // --exec-mode: the mode a mode.exec packet sets
    bool showTime = false;      // --time: estimated TSC at each timing packet
    bool showTcal = false;      // --tcal: the cycle-to-TSC calibration at each timing packet
    bool timeAsDelta = false;   // --time-delta: time/calibration as a change to the previous one
    bool quiet = false;         // --quiet: only diagnostics
    bool noPad = false;         // --no-pad: hide PAD packets
    bool noSync = false;        // --no-sync: start at offset 0 instead of the first PSB
    bool noTcal = false;        // --no-tcal: do not calibrate (CYC then cannot give time)
    bool noWallClock = false;   // --no-wall-clock: time without a TSC is relative, not an error
    bool noTiming = false;      // --no-timing: hide TSC, CBR, TMA, MTC, CYC
    bool noCyc = false;         // --no-cyc: hide CYC and leave it out of the time estimate
};

// Takes `flag` (with its `value`, which these switches have none of) if it is one
// of the flags above (ptdump's spelling, --raw-bytes for ptdump's --raw); false for
// any other option. --time and --tcal exclude each other, as in ptdump.
Expected<bool> parsePtPacketDumpFlag(PtPacketDumpOptions& options, const std::string& flag,
                                     const std::optional<std::string>& value);

// Packets decoded, by libipt packet type.
struct PtPacketCounts {
    static constexpr size_t kTypes = static_cast<size_t>(ppt_ptw) + 1;
    std::array<uint64_t, kTypes> byType{};

    uint64_t operator[](pt_packet_type type) const { return byType[static_cast<size_t>(type)]; }
    uint64_t total() const;
    // TNT packets of both sizes, as perf report -D counts "TNT".
    uint64_t tnt() const { return (*this)[ppt_tnt_8] + (*this)[ppt_tnt_64]; }
};

// ptdump's name for a packet type ("tip.pge", "tnt.8", "psb", ...).
const char* ptPacketTypeName(pt_packet_type type);

struct PtPacketDumpResult {
    PtPacketCounts counts;
    std::vector<PtDecodeIssue> issues;
    bool hasErrors() const;
};

// Dumps every packet from the first PSB (or offset 0 with noSync) to the end,
// resynchronising at the next PSB after a decode error as ptdump does. Lines go to
// `out`, nothing at all with options.quiet except diagnostics. An error only when
// libipt refuses the configuration. With `sideband`, its records are shown
// between the packets by time (at each timing packet), the rest at the end.
Expected<PtPacketDumpResult> dumpPtPackets(const PtConfig& config, const PtPacketDumpOptions& options,
                                           std::ostream& out, PtSidebandSession* sideband = nullptr);

}  // namespace auxscope
