// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The part of a timeline that needs no trace decoder: what the sideband of any
// perf.data says (perf's, simpleperf's, auxscope's; with or without AUX trace).
// Per thread, when it ran on which CPU (from the switch timeline TraceModel
// derives) and its samples with their IP resolved to a function (and, given a
// sampled profile's stacks, each sample's call stack as a node of one tree);
// threads
// grouped under their process (COMM / FORK / EXIT); per CPU, every loss the
// kernel reported (LOST, LOST_SAMPLES, THROTTLE, AUX TRUNCATED / PARTIAL /
// COLLISION). Built once per file on a worker thread, immutable afterwards and
// shared by every TimelineData of that file (TimelineData::lanes), so decoding
// windows of AUX trace never copies it. Qt-free; app/gui/TimelineView draws it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "spans/FunctionTable.h"

namespace auxscope {

class Sideband;
struct TimelineData;
struct StatsSample;
struct CaptureCpus;
struct CallTree;  // spans/RangeStats.h

struct SidebandLanes {
    // A stretch of time a thread ran on `cpu`.
    struct Run {
        uint64_t start = 0, end = 0;
        int32_t cpu = -1;
    };
    struct Sample {
        uint64_t time = 0;
        uint64_t ip = 0;
        uint32_t function = FunctionTable::kUnknown;  // in `functions`
        int16_t cpu = -1;
        int16_t event = -1;  // index into `events`
    };
    struct Thread {
        int32_t pid = -1, tid = -1;
        std::string name;             // COMM
        std::vector<Run> runs;        // by start
        std::vector<Sample> samples;  // by time
        uint64_t runTime = 0;         // ns on any CPU
        // Per sample (the same index as `samples`), its call stack: a node of
        // SidebandLanes::stacks (0: none known). Empty when the lanes were built
        // without stacks (kept apart from Sample, which stays 24 bytes).
        std::vector<uint32_t> sampleStacks;
        // Per sample (the same index as `samples`), where lanes carry samples
        // from outside the sideband (SidebandLanesOptions::extraSamples): their
        // value and key (Arm SPE: total latency in cycles, data source + 1), 0
        // for the sideband's own samples. Empty when the thread has none.
        std::vector<uint16_t> sampleValue, sampleKey;
    };
    struct Process {
        int32_t pid = -1;  // -1: threads whose process the sideband never named
        std::string name;
        std::vector<size_t> threads;  // into `threads`, by tid
        uint64_t runTime = 0;
        size_t samples = 0;
    };
    // A loss the kernel reported, on the CPU whose ring said so.
    struct Loss {
        enum Kind { LostRecords, LostSamples, Throttle, Aux } kind = LostRecords;
        uint64_t time = 0;
        uint64_t end = 0;    // Throttle: when sampling resumed (0: it did not in the recording)
        uint64_t count = 0;  // LostRecords / LostSamples: how many
        uint64_t auxFlags = 0, auxOffset = 0, auxSize = 0;  // Aux: PERF_AUX_FLAG_*, the record's range
        int32_t pid = -1, tid = -1;                         // as the record's sample_id said
    };

    std::vector<Thread> threads;              // threads that ran or were sampled, by pid, then tid
    std::vector<Process> processes;           // by CPU time, the busiest first (ties: by pid)
    std::map<int, std::vector<Loss>> losses;  // per CPU (-1: records that named none), by time
    // Capture health, from auxscope's statistics section (AUXSCOPE_CAPTURE_STATS,
    // perfdata/CaptureStatsFeature.h): per CPU, what the drain thread published
    // over the capture (about 20 points a second). Empty: the file has no such section.
    struct Health {
        uint64_t time = 0;                 // perf clock, ns
        float ringFill = 0;                // data ring fill %, the peak since the previous point
        float auxFill = -1;                // AUX area fill % at this point (-1: no AUX area on this CPU)
        float mibPerSec = 0;               // data + AUX bytes drained per second since the previous point
        uint64_t bytes = 0, auxBytes = 0;  // cumulative, drained
        uint64_t lostRecords = 0, lostSamples = 0,
                 auxLost = 0;  // cumulative (auxLost: TRUNCATED+PARTIAL+COLLISION)
    };
    std::map<int, std::vector<Health>> health;  // per CPU, by time
    // Why a CPU's lane is empty, for CPUs the file names (HEADER_NRCPUS / CPU_TOPOLOGY,
    // the capture's CPU list): "offline" (the machine had it but it was not online),
    // "not traced" (online, but the capture did not open it). No entry: traced.
    std::map<int, std::string> cpuNotes;
    std::vector<std::string> events;  // sample event names, by SampleEvent::event
    int extraEvent = -1;              // the extra samples' index in `events` (-1: none)
    std::string extraValueName;       // what Thread::sampleValue counts ("total latency, cycles")
    std::map<uint16_t, std::string> extraKeyNames;  // Thread::sampleKey's names ("DRAM")
    std::vector<int> cpus;                          // every CPU the sideband has records from
    std::vector<int> cpusWithSwitches;              // those with a switch timeline
    // Names of Sample::function ids (the same table as TimelineData::functions
    // when a decoder's session resolved them).
    std::shared_ptr<const FunctionTable> functions;
    // The samples' call stacks (Thread::sampleStacks), functions named by
    // `functions`: a node's path from the root is the stack from its outermost
    // frame in. Null: the samples carry no stacks.
    std::shared_ptr<const CallTree> stacks;
    size_t sampleCount = 0, idleSamples = 0;  // idle: samples of tid 0, on no thread lane

    // Index into `threads` of `tid`, or -1.
    long threadIndex(int32_t tid) const;
    const Process* process(int32_t pid) const;

    std::unordered_map<int32_t, size_t> byTid_;
    std::unordered_map<int32_t, size_t> byPid_;
};

struct SidebandLanesOptions {
    std::vector<std::string> events;  // attr names, by index
    // The function at `ip` in process `pid` (ImageResolver::functionAt, the
    // decoders' symbol code); unset: every sample is FunctionTable::kUnknown.
    std::function<uint32_t(int32_t pid, uint64_t ip)> functionAt;
    std::shared_ptr<const FunctionTable> functions;  // what functionAt's ids name
    // The call stack of thread `tid`'s sample at `time` of event `event` (an
    // index into `events`): a node of `stacks` (0: none known). Called for each
    // thread's samples in time order, one thread after another. A sampled
    // profile (samples/SampleProfile, which spans/ does not know) answers it,
    // matching its samples by thread and time. Unset: no stacks.
    std::function<uint32_t(int32_t tid, uint64_t time, int event)> stackAt;
    std::shared_ptr<const CallTree> stacks;  // what stackAt's nodes are in
    // Samples from outside the sideband (an Arm SPE trace's sampled
    // operations), all of the event `extraEvent`, each with a value and a key
    // its tick can be coloured by (SPE: total latency, data source + 1; 0: none).
    struct ExtraSample {
        uint64_t time = 0, ip = 0;
        int32_t pid = -1, tid = -1;
        int16_t cpu = -1;
        uint16_t value = 0, key = 0;
    };
    std::string extraEvent;
    std::vector<ExtraSample> extraSamples;
    std::string extraValueName;                     // "total latency, cycles"
    std::map<uint16_t, std::string> extraKeyNames;  // by key
    // Hears samples resolved of the total; false cancels (the build returns null).
    std::function<bool(uint64_t done, uint64_t total)> progress;
};

std::shared_ptr<const SidebandLanes> buildSidebandLanes(const Sideband& sideband,
                                                        const SidebandLanesOptions& options);

// SidebandLanes::health from auxscope's statistics history (TraceModel::statsHistory):
// per CPU by time, throughput from the bytes drained between points.
std::map<int, std::vector<SidebandLanes::Health>> captureHealth(const std::vector<StatsSample>& history);
// SidebandLanes::cpuNotes from what the file says of the machine's and the capture's CPUs.
std::map<int, std::string> cpuNotes(const CaptureCpus& cpus);

// Puts `lanes` into `data`: the names of its threads, and a CPU lane (empty
// where there was no switch timeline) for every CPU the sideband, a loss or a
// CPU note names.
void setTimelineLanes(TimelineData& data, std::shared_ptr<const SidebandLanes> lanes);

// What a loss marker says when hovered: how much and why, one line each.
std::string describeLoss(const SidebandLanes::Loss& loss);
// "LOST", "LOST_SAMPLES", "THROTTLE", "AUX TRUNCATED" (flags joined by '+').
std::string lossKindName(const SidebandLanes::Loss& loss);

}  // namespace auxscope
