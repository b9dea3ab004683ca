// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Writes the samples of a sampled profile (samples/SampleProfile) as Perfetto
// perf samples (TracePacket.perf_sample: cpu, pid, tid, callstack_iid and the
// packet's timestamp), so that ui.perfetto.dev shows them as it shows
// traced_perf's: a "callstacks" track per thread (and per process) with a
// mark per sample and its stack on click, and a flame graph of the samples in
// a selected area. How Perfetto reads them (trace_processor's profile module
// and stack profile sequence state; the UI's LinuxPerf plugin):
//   - One packet sequence per sampled event, its number from
//     perfettoSampleSequence(): the importer makes one perf session per
//     sequence, and the UI one callstack track per thread and session, named
//     after the session's timebase. So the sequence's first packet clears its
//     incremental state and names the event in its TracePacketDefaults
//     (perf_sample_defaults.timebase: the name, and perf's counter or
//     tracepoint where the name is one).
//   - The stacks as interned data of that sequence, each entry once and in (or
//     before) the packet that first refers to it: function names; mappings
//     (the image's file as recorded, as the path, and its build-id as the raw
//     bytes perf recorded; every frame needs one, so functions outside any
//     image get "[unknown]"); frames; callstacks. A frame is a function of the
//     profile's FunctionTable (iid: its id + 1) with its image's mapping and
//     its link address as rel_pc: the stacks are the profile's function
//     stacks, as auxscope's own views show them (the flame graph merges
//     frames by function anyway). A callstack is a node of
//     SampleProfile::tree() (iid: the node), its frame_ids from the outermost
//     frame to the leaf: Perfetto reads Callstack.frame_ids "bottom frame
//     first", linking each frame as the callee of the one before it, the
//     sample's own callsite being the last.
//   - timebase_count: the event's period summed on the sample's CPU up to and
//     including the sample, as the event's counter would read, so the
//     importer's per-CPU timebase counter track shows the event's rate
//     (cpu-clock: the CPU's busy fraction).
// Samples whose stack is empty (node 0) are written without a callstack.
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "export/ProtoWriter.h"

namespace auxscope {

class PerfettoPacketStream;
class SampleProfile;

// The packet sequence of the samples of SampleProfile::events()[event].
uint32_t perfettoSampleSequence(int event);

class PerfettoSampleWriter {
public:
    PerfettoSampleWriter(const SampleProfile& profile, PerfettoPacketStream& stream);
    // Writes sample `i` of the profile (samples are written in time order by the caller).
    void write(size_t i);

private:
    struct Sequence {
        bool started = false;
        std::vector<bool> functions, mappings, nodes;  // interned on this sequence
        std::map<int, uint64_t> countOnCpu;            // the event's period so far, per CPU
    };
    void start(int event);
    void internCallstack(Sequence& seq, uint32_t node);
    void internFrame(Sequence& seq, uint32_t function);
    uint32_t mappingOf(uint32_t function);

    const SampleProfile& profile_;
    PerfettoPacketStream& stream_;
    std::vector<Sequence> sequences_;  // per event
    // Mappings: one per image file the functions name.
    std::vector<uint32_t> mappingOf_;  // per function (kNoMapping: not looked up yet)
    std::vector<std::string> mappingFiles_;
    std::vector<std::vector<uint8_t>> mappingBuildIds_;
    std::unordered_map<std::string, uint32_t> mappingIndex_;
    std::unordered_map<std::string, std::vector<uint8_t>> buildIdOfFile_;  // from the recorded mappings
    ProtoWriter packet_, sample_, interned_, entry_;
    static constexpr uint32_t kNoMapping = UINT32_MAX;
};

}  // namespace auxscope
