// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/PerfettoSampleWriter.h"

#include <algorithm>

#include "export/PerfettoFields.h"
#include "export/PerfettoPacketStream.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"

namespace auxscope {
namespace {

// The track-event sequence is 1; samples follow.
constexpr uint32_t kFirstSampleSequence = PerfettoPacketStream::kTrackEventSequence + 1;

// PerfEvents.Counter for perf's names of the generic events (older importers
// name a session by it; newer ones by Timebase.name, which is always set).
uint64_t perfCounterOf(const std::string& name) {
    static const std::pair<const char*, uint64_t> kCounters[] = {
        {"cpu-clock", 1},         {"page-faults", 2},      {"faults", 2},
        {"task-clock", 3},        {"context-switches", 4}, {"cs", 4},
        {"cpu-migrations", 5},    {"migrations", 5},       {"minor-faults", 6},
        {"major-faults", 7},      {"alignment-faults", 8}, {"emulation-faults", 9},
        {"cycles", 10},           {"cpu-cycles", 10},      {"instructions", 11},
        {"cache-references", 12}, {"cache-misses", 13},    {"branch-instructions", 14},
        {"branches", 14},         {"branch-misses", 15},   {"bus-cycles", 16},
        {"ref-cycles", 19},
    };
    // Without modifiers and terms: "cycles:u", "cpu-clock/period=1000000/".
    const std::string base = name.substr(0, name.find_first_of(":/"));
    for (const auto& [n, counter] : kCounters)
        if (base == n) return counter;
    return 0;
}

}  // namespace

uint32_t perfettoSampleSequence(int event) {
    return kFirstSampleSequence + uint32_t(event);
}

PerfettoSampleWriter::PerfettoSampleWriter(const SampleProfile& profile, PerfettoPacketStream& stream)
    : profile_(profile), stream_(stream), sequences_(profile.events().size()) {
    // Build-ids by recorded file name; the kernel's functions name their image
    // "[kernel.kallsyms]", its recorded map "[kernel.kallsyms]_text".
    auto add = [&](const Mapping& m) {
        if (m.buildId.empty()) return;
        buildIdOfFile_.try_emplace(m.file, m.buildId);
        if (m.kernel && m.file.rfind("[kernel.kallsyms]", 0) == 0)
            buildIdOfFile_.try_emplace("[kernel.kallsyms]", m.buildId);
    };
    for (const Mapping& m : profile.sideband().kernelMaps())
        add(m);
    for (const auto& [pid, process] : profile.sideband().processes())
        for (const Mapping& m : process.maps)
            add(m);
}

uint32_t PerfettoSampleWriter::mappingOf(uint32_t function) {
    if (function >= mappingOf_.size()) mappingOf_.resize(profile_.functions().size(), kNoMapping);
    if (mappingOf_[function] != kNoMapping) return mappingOf_[function];
    const std::string& file = profile_.functions()[function].file;
    const std::string key = file.empty() ? "[unknown]" : file;
    auto [it, fresh] = mappingIndex_.try_emplace(key, uint32_t(mappingFiles_.size()));
    if (fresh) {
        mappingFiles_.push_back(key);
        auto id = buildIdOfFile_.find(key);
        mappingBuildIds_.push_back(id == buildIdOfFile_.end() ? std::vector<uint8_t>() : id->second);
    }
    return mappingOf_[function] = it->second;
}

void PerfettoSampleWriter::start(int event) {
    const std::string& name = profile_.events()[size_t(event)].name;
    ProtoWriter timebase, defaults, packetDefaults;
    if (const uint64_t counter = perfCounterOf(name)) {
        timebase.u64(pf::kTimebaseCounter, counter);
    } else if (name.find(':') != std::string::npos) {
        ProtoWriter tracepoint;
        tracepoint.str(pf::kTracepointName, name);
        timebase.msg(pf::kTimebaseTracepoint, tracepoint);
    }
    timebase.str(pf::kTimebaseName, name);
    defaults.msg(pf::kPerfDefaultsTimebase, timebase);
    packetDefaults.msg(pf::kDefaultsPerfSample, defaults);
    packet_.clear();
    packet_.msg(pf::kTracePacketDefaults, packetDefaults);
    // The stream clears the sequence's incremental state on its first packet:
    // the defaults hold from here on.
    stream_.write(packet_, true, perfettoSampleSequence(event));
    sequences_[size_t(event)].started = true;
}

void PerfettoSampleWriter::internFrame(Sequence& seq, uint32_t function) {
    if (function >= seq.functions.size()) seq.functions.resize(profile_.functions().size(), false);
    if (seq.functions[function]) return;
    seq.functions[function] = true;
    const FunctionInfo& info = profile_.functions()[function];
    const uint32_t mapping = mappingOf(function);
    if (mapping >= seq.mappings.size()) seq.mappings.resize(mapping + 1, false);
    if (!seq.mappings[mapping]) {
        seq.mappings[mapping] = true;
        const uint64_t iid = uint64_t(mapping) + 1;
        entry_.clear();
        entry_.u64(pf::kInternedIid, iid);
        entry_.str(pf::kInternedName, mappingFiles_[mapping]);
        interned_.msg(pf::kInternedMappingPaths, entry_);
        const std::vector<uint8_t>& buildId = mappingBuildIds_[mapping];
        if (!buildId.empty()) {
            entry_.clear();
            entry_.u64(pf::kInternedIid, iid);
            entry_.str(pf::kInternedName,
                       std::string_view(reinterpret_cast<const char*>(buildId.data()), buildId.size()));
            interned_.msg(pf::kInternedBuildIds, entry_);
        }
        entry_.clear();
        entry_.u64(pf::kMappingIid, iid);
        if (!buildId.empty()) entry_.u64(pf::kMappingBuildId, iid);
        entry_.u64(pf::kMappingPathIds, iid);
        interned_.msg(pf::kInternedMappings, entry_);
    }
    const uint64_t iid = uint64_t(function) + 1;
    entry_.clear();
    entry_.u64(pf::kInternedIid, iid);
    entry_.str(pf::kInternedName, info.name);
    interned_.msg(pf::kInternedFunctionNames, entry_);
    entry_.clear();
    entry_.u64(pf::kFrameIid, iid);
    entry_.u64(pf::kFrameFunctionName, iid);
    entry_.u64(pf::kFrameMapping, uint64_t(mapping) + 1);
    entry_.u64(pf::kFrameRelPc, info.address);
    interned_.msg(pf::kInternedFrames, entry_);
}

void PerfettoSampleWriter::internCallstack(Sequence& seq, uint32_t node) {
    if (node >= seq.nodes.size()) seq.nodes.resize(profile_.tree().size(), false);
    if (seq.nodes[node]) return;
    seq.nodes[node] = true;
    const std::vector<uint32_t> path = profile_.tree().stack(node);  // outermost first
    for (uint32_t function : path)
        internFrame(seq, function);
    entry_.clear();
    entry_.u64(pf::kCallstackIid, node);
    // Repeated, not packed: the field is declared unpacked, and Perfetto's
    // decoder reads it as declared.
    for (uint32_t function : path)
        entry_.u64(pf::kCallstackFrames, uint64_t(function) + 1);
    interned_.msg(pf::kInternedCallstacks, entry_);
}

void PerfettoSampleWriter::write(size_t i) {
    const int event = profile_.event(i);
    Sequence& seq = sequences_[size_t(event)];
    if (!seq.started) start(event);
    packet_.clear(), sample_.clear(), interned_.clear();
    packet_.u64(pf::kTimestamp, profile_.time(i));
    const int cpu = profile_.cpu(i);
    if (cpu >= 0) sample_.u64(pf::kPerfCpu, uint64_t(cpu));
    // A sample whose process is unknown is given its thread's id as its
    // process: a thread of its own rather than one of the idle task (pid 0).
    const int32_t tid = profile_.tid(i), pid = profile_.pid(i) >= 0 ? profile_.pid(i) : tid;
    if (tid >= 0) {
        sample_.u64(pf::kPerfPid, uint32_t(pid));
        sample_.u64(pf::kPerfTid, uint32_t(tid));
    }
    if (const uint32_t node = profile_.node(i); node != 0) {
        internCallstack(seq, node);
        sample_.u64(pf::kPerfCallstack, node);
    }
    uint64_t& count = seq.countOnCpu[cpu];
    count += profile_.period(i);
    sample_.u64(pf::kPerfTimebaseCount, count);
    packet_.msg(pf::kPerfSample, sample_);
    if (!interned_.bytes().empty()) packet_.msg(pf::kInternedData, interned_);
    stream_.write(packet_, true, perfettoSampleSequence(event));
}

}  // namespace auxscope
