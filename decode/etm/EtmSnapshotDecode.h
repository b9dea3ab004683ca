// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `auxscope decode SNAPSHOT_DIR`: every trace buffer of an OpenCSD/DS-5
// snapshot decoded with the snapshot's memory dumps.
//   ranges:  one executed instruction range per line,
//            "0x10 0xffffffc000096a00 0xffffffc000096a0c 4 A64"
//            (trace ID, first instruction, last instruction, instruction count, ISA):
//            trc_pkt_lister's OCSD_GEN_TRC_ELEM_INSTR_RANGE
//            "exec range=START:[END] num_i(N) last_sz(S) (ISA=...)" is START, END-S, N, ISA;
//   packets: the protocol packets per trace ID, worded by OpenCSD's packet
//            printers in trc_pkt_lister's layout ("Idx:1650; ID:10;\tI_ASYNC : ...").
// Lines starting with '#' say which buffer and sources follow.
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::etm {

enum class EtmOutputFormat { Ranges, Packets };

// True when `path` is a directory holding a snapshot.ini.
bool isEtmSnapshotDir(const std::string& path);

struct EtmTraceIdCounts {
    uint64_t ranges = 0, instructions = 0, packets = 0;
    uint64_t notAccessible = 0, noSync = 0, traceOn = 0, exceptions = 0, decodeErrors = 0;
};

struct EtmBufferSummary {
    std::string name, file;
    uint64_t bytes = 0;
    std::map<uint8_t, EtmTraceIdCounts> traceIds;
};

struct EtmSnapshotSummary {
    std::vector<EtmBufferSummary> buffers;
    std::vector<std::string> notes;   // tolerated problems (missing dumps, undecodable sources)
    std::vector<std::string> errors;  // a buffer that could not be decoded (the others still are)
};

// Decodes every buffer into `out`; notes and per-buffer errors are collected in
// the summary. An error only where the snapshot cannot be read at all.
Expected<EtmSnapshotSummary> decodeSnapshot(const std::string& dir, EtmOutputFormat format,
                                            std::ostream& out);

// The same for a command line: output to `out`; notes, errors and a per-trace-ID
// summary to `err`. Returns 0, or 1 when anything failed.
int decodeSnapshot(const std::string& dir, EtmOutputFormat format, std::ostream& out, std::ostream& err);

}  // namespace auxscope::etm
