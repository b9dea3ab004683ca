// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Perf-event sideband for an Intel PT decode, in the form libipt's tools take it:
// files of raw perf_event records (what `perf record` wrote into its ring buffer:
// MMAP, COMM, FORK, SWITCH, ITRACE_START, ...) with the sample fields
// perf_event_attr.sample_type selects, time-correlated with the trace through the
// perf_event_mmap_page time conversion. The records are shown between packets
// (ptdump) or events (ptxed) in the order of their time, and in the instruction
// flow they build one code image per process and switch the decoder between them
// (ITRACE_START, COMM.EXEC, SWITCH records), as libipt-sb does for ptxed.
#include <intel-pt.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "Result.h"
#include "pt/PtConfig.h"

namespace auxscope {

// How to read one sideband file: ptxed's --pevent:* values in effect when the
// file was named (later --pevent:* options do not change earlier files).
struct PtPeventConfig {
    uint64_t sampleType = 0;  // perf_event_attr.sample_type (sample_id_all assumed)
    uint64_t timeZero = 0;    // perf_event_mmap_page.time_zero/_shift/_mult: perf time -> TSC
    uint16_t timeShift = 0;
    uint32_t timeMult = 1;
    // Records are applied this many TSC ticks earlier (two's complement: later).
    uint64_t tscOffset = 0;
    // Addresses from here up are the kernel's: tells user from kernel at events,
    // which decides when a postponed context switch may take effect.
    uint64_t kernelStart = UINT64_MAX;
    std::string sysroot;                     // put in front of MMAP file names
    std::string vdsoX64, vdsoX32, vdsoIa32;  // files standing in for "[vdso]" per ABI
};

struct PtSidebandFileSpec {
    std::string path;     // as given: diagnostics name it so
    uint64_t begin = 0;   // FILE:FROM-TO byte range
    uint64_t end = 0;     // 0: to the end of the file
    bool primary = true;  // --pevent:primary: its switches and trace losses concern this trace
    PtPeventConfig config;
};

struct PtSidebandOptions {
    // What a record line shows (ptxed/ptdump --sb:*); none set: records are applied silently.
    bool compact = false;     // --sb:compact / --sb: one line per record
    bool verbose = false;     // --sb:verbose: one line per field
    bool filename = false;    // --sb:filename: the sideband file's name in front
    bool offset = false;      // --sb:offset: the record's offset in its file in front
    bool time = false;        // --sb:time: the record's TSC in front
    bool showSwitch = false;  // --sb:switch: "[context: pid-N]" when the decoder changes image
    bool warnings = false;    // --sb:warn: print warnings (lost records, unmappable files), not only errors
    PtPeventConfig pending;   // --pevent:* values for the next --pevent:primary/secondary
    std::vector<PtSidebandFileSpec> files;

    bool any() const { return !files.empty(); }
    bool printsRecords() const { return compact || verbose || filename || offset || time; }
};

// Takes `flag` ("--name" as the command line's parser normalized it, with its
// `value` when it has one) if it is a --sb:* or --pevent:* option; false for any
// other option. Numbers in C syntax; errors name the option and the value.
Expected<bool> parsePtSidebandFlag(PtSidebandOptions& options, const std::string& flag,
                                   const std::optional<std::string>& value);

// The sideband of one decode: every file's records merged by time.
class PtSidebandSession {
public:
    // Diagnostics look like ptxed's ("sideband error"/"sideband warning") or
    // ptdump's (which calls both "sideband error").
    enum class Style { Ptxed, Ptdump };

    ~PtSidebandSession();
    PtSidebandSession(const PtSidebandSession&) = delete;
    PtSidebandSession& operator=(const PtSidebandSession&) = delete;

    // Loads the files and reads each one's first record. `cache` holds the
    // sections MMAP records add (the instruction flow reads instruction bytes
    // through it); null for a packet dump. Records and diagnostics go to `out`.
    // An error when a file cannot be read.
    static Expected<std::unique_ptr<PtSidebandSession>> open(const PtSidebandOptions& options, Style style,
                                                             pt_image_section_cache* cache, std::ostream& out,
                                                             bool printRecords = true);

    // Packet dump: shows every record due at `tsc` (UINT64_MAX: all that are left).
    void dumpUntil(uint64_t tsc);

    // Instruction flow: shows and applies the records due at the event's time and
    // lets postponed context switches take effect at it. Returns the image the
    // decoder must use from now on, or null to keep the current one.
    pt_image* onEvent(const pt_event& event);

    // Errors and warnings so far (each was also printed when its kind is shown).
    const std::vector<PtDecodeIssue>& issues() const;

    struct Impl;

private:
    explicit PtSidebandSession(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace auxscope
