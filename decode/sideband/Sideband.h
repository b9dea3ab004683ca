// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// decode/sideband/ owns what the records around a trace say: threads,
// processes, mappings, which thread ran on which CPU when, samples, losses and
// counters (TraceModel, its loader, and this decoder's view of it). Every view
// and decoder reads it; it includes perfdata/ only.
//
// What a hardware trace decoder needs from the perf records around the trace:
// which thread ran on which CPU when (the per-CPU switch timeline TraceModel
// already builds from SWITCH / SWITCH_CPU_WIDE records), which process each
// thread belongs to and what it is called (COMM, FORK, EXIT), and each process's
// executable mappings (MMAP, MMAP2 with file offset and, when the kernel put it
// there, the build-id) plus the kernel's own (pid -1). Decoder-independent.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "Result.h"
#include "perfdata/PerfDataReader.h"
#include "sideband/CopyOnWrite.h"
#include "sideband/TraceModel.h"

namespace auxscope {

struct Mapping {
    uint64_t start = 0, length = 0;
    uint64_t pgoff = 0;  // file offset of `start` (the kernel map: its start address, as perf stores it)
    std::string file;    // as recorded: a path, "[vdso]", "[kernel.kallsyms]_text", "//anon", ...
    std::vector<uint8_t> buildId;  // from MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID, or HEADER_BUILD_ID
    uint64_t time = 0;             // when it was mapped
    bool kernel = false;
    uint64_t end() const { return start + length; }
};

struct ProcessSideband {
    int32_t pid = -1;
    std::string name;
    std::vector<Mapping> maps;  // executable mappings, in record order (since the last exec)
};

struct RunningThread {
    int32_t pid = -1, tid = -1;  // tid -1: nothing known; 0: idle
};

class Sideband {
public:
    // `progress` (optional) hears how far the walk is, in bytes of the data
    // section, every few thousand records; returning false stops the walk and
    // the load fails with "cancelled". A Builder fed the file's records.
    using Progress = std::function<bool(uint64_t done, uint64_t total)>;
    static Expected<Sideband> load(const PerfDataReader& file, const Progress& progress = {});

    const TraceModel& model() const { return model_; }
    const std::map<int32_t, ProcessSideband>& processes() const { return *processes_; }
    const std::vector<Mapping>& kernelMaps() const { return *kernelMaps_; }
    const ProcessSideband* process(int32_t pid) const;
    int32_t pidOf(int32_t tid) const;  // -1 when unknown
    bool hasSwitches(int cpu) const;

    // Which thread ran on `cpu` at perf time `time` (by the switch records).
    RunningThread runningAt(int cpu, uint64_t time) const;
    // The first switch on `cpu` strictly after `time` (UINT64_MAX when none): until
    // then runningAt() gives the same answer.
    uint64_t nextSwitchAfter(int cpu, uint64_t time) const;

    // The switch timeline itself: per CPU, which thread ran in [start, end), by
    // start (pid as recorded: <= 0 when the record did not say, see pidOf()).
    // Between slices the CPU was idle.
    struct Slice {
        uint64_t start, end;
        int32_t pid, tid;
    };
    const std::map<int, std::vector<Slice>>& switchSlices() const { return slices_; }

    // Builds a Sideband record by record (below).
    class Builder;

    // The parts a copy shares with this one until one of them changes (processes,
    // mappings, names, thread -> process; the model's too): for a holder that wants
    // to be the one that frees them.
    std::vector<std::shared_ptr<const void>> sharedParts() const;

private:
    TraceModel model_;
    // Made of many small blocks (a node per process and thread, a string per
    // mapping) and changed by few records: shared with copies (a live snapshot)
    // until they change.
    CopyOnWrite<std::map<int32_t, ProcessSideband>> processes_;
    CopyOnWrite<std::vector<Mapping>> kernelMaps_;
    std::map<int, std::vector<Slice>> slices_;  // per CPU, by start
    // What COMM, FORK, MMAP and ITRACE_START said; pidOf() asks model_ next.
    CopyOnWrite<std::map<int32_t, int32_t>> pidOf_;
};

// Builds a Sideband record by record, from a file (load()) or from a live
// capture's records as they arrive (LiveSideband): one code path for both.
// snapshot() gives what the records so far say, as load() would for a file
// that ended there, and leaves the builder to take more.
class Sideband::Builder {
public:
    // Build-ids of the file's HEADER_BUILD_ID, by file name: for mappings whose
    // MMAP2 carries none.
    explicit Builder(std::map<std::string, std::vector<uint8_t>> headerBuildIds = {});
    // `cpu`: the ring the record came from (-1: unknown); `bytes`: the record
    // as recorded (MMAP2's build-id and protection are read from it).
    void addRecord(int cpu, const ParsedRecord& r, std::span<const uint8_t> bytes);
    // The model being built, for settings a caller makes before feeding it.
    TraceModel& model() { return sb_.model_; }
    size_t records() const { return records_; }
    // What the records so far say (a copy: O(what is kept)).
    Sideband snapshot() const;
    // The same without the copy; the builder is left empty.
    Sideband finish() &&;

private:
    static void complete(Sideband& sb, std::map<int, std::vector<Slice>> itraceStarts);
    Sideband sb_;  // before complete(): the model unfinished, no slices
    std::map<std::string, std::vector<uint8_t>> headerBuildIds_;
    std::map<int, std::vector<Slice>> itraceStarts_;  // per CPU, in record order
    // Per process, the time of its last exec (COMM with PERF_RECORD_MISC_COMM_EXEC):
    // records come in file order, which is not time order across CPUs (a child's
    // exec and mappings may come before the FORK its parent's CPU recorded).
    CopyOnWrite<std::map<int32_t, uint64_t>> execTime_;  // shared with copies until it changes
    size_t records_ = 0;
};

}  // namespace auxscope
