// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An OpenCSD/DS-5 snapshot's trace buffer as a cs_etm perf.data, the way perf
// would have recorded it: AUXTRACE_INFO with every source's ETM registers, a
// process whose code is the snapshot's memory dumps (written as ELF files, one
// per cluster of dumps, each mapped by an MMAP2), and the buffer as N AUX
// buffers on one CPU (PERF_RECORD_AUX + AUXTRACE each; a frame-formatted copy
// after the first starts with the barrier a sink driver writes after a gap,
// four FSYNCs, so the copies also decode apart as one stream). A buffer several trace
// IDs share stays shared: its copies hold every ID, as a perf.data from a
// shared ETF/ETR sink does.
//
// For the tests and benchmarks (a trace with known content, decoded by
// trc_pkt_lister from the snapshot and by auxscope from the perf.data) and for
// people who have a snapshot and want the perf.data tools on it
// (auxscope-etmsnap), and for the generated CoreSight example (EtmSynth.h).
#include <cstdint>
#include <string>
#include <vector>

#include "PtSynthElf.h"
#include "PtSynthPerfData.h"
#include "Result.h"
#include "etm/EtmSnapshot.h"
#include "etm/EtmSourceConfig.h"

namespace auxscope::etmsnap {

struct Dump {
    uint64_t address = 0;
    std::vector<uint8_t> bytes;
};

struct SnapshotTrace {
    std::string dir;
    std::vector<uint8_t> buffer;  // the trace buffer's bytes
    std::string bufferName;
    etm::EtmInput input = etm::EtmInput::Formatted;
    std::vector<etm::SnapshotSource> sources;  // the buffer's sources with a configuration
    std::vector<int> cpus;                     // the CPU of each source (its core's cpu_N)
    std::vector<uint32_t> authStatus;          // TRCAUTHSTATUS of each source (0: none given)
    std::vector<Dump> dumps;                   // distinct memory dumps, by address
};

// Reads `dir`'s buffer `bufferName` (empty: the only buffer with decodable
// sources). Errors name the snapshot and the cause.
Expected<SnapshotTrace> readSnapshotTrace(const std::string& dir, const std::string& bufferName = {});

// The dumps as ELF files `pathPrefix`-N.elf (aarch64, one PT_LOAD each): dumps
// closer than 1 MiB share a file (zeros between them), farther ones get their own.
// `symbols` (functions, by address) go into the .symtab of the file that holds them.
Expected<std::vector<ptsynth::PtSynthMapping>> writeDumpElfs(
    const SnapshotTrace& s, const std::string& pathPrefix,
    const std::vector<ptsynth::ElfSymbol>& symbols = {});

struct SnapPerfDataOptions {
    int cpu = 0;          // the CPU whose AUX ring holds the copies
    unsigned copies = 1;  // the buffer, this many times, each its own AUX buffer
    int32_t pid = 4242;
    std::string comm = "snapshot";
    uint64_t startTime = 1'000'000'000;  // perf time of the first record, ns
    uint64_t bufferNs = 10'000'000;      // perf time between the copies' AUX records
    // Each copy as this many AUX records (cut at frame boundaries), evenly over
    // its bufferNs: a replay hands the trace over piece by piece, as a sink
    // drained while tracing would.
    unsigned auxRecords = 1;
    // The copies in one AUXTRACE buffer (one AUX record each): one stream a
    // decoder takes whole, as a live decoder or a big sink buffer gives it.
    bool oneAuxtrace = false;
    // A TIME_CONV record saying perf time = the trace units' timestamp (mult 1,
    // shift 0, zero 0): a snapshot with timestamps decodes to their times.
    bool timestampsArePerfTime = false;
    // Copy k's bytes, where given and not empty, instead of the buffer's (same
    // sources and configuration): a file whose copies differ (the tests' crash
    // input between two decodable copies, tests/decode/DecoderIsolationTest.cpp).
    std::vector<std::vector<uint8_t>> copyBytes;
};

// Writes the perf.data. `elfs` from writeDumpElfs.
Expected<void> writeSnapshotPerfData(const SnapshotTrace& s, const std::vector<ptsynth::PtSynthMapping>& elfs,
                                     const SnapPerfDataOptions& options, const std::string& path);

// All of it: reads `dir`'s buffer, writes the dumps' ELF files beside `out`
// (`out` without ".data", then "-dumpN.elf") and the perf.data. Returns what it read.
Expected<SnapshotTrace> snapshotToPerfData(const std::string& dir, const std::string& out,
                                           const SnapPerfDataOptions& options,
                                           const std::string& bufferName = {});

}  // namespace auxscope::etmsnap
