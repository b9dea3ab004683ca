// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Arm SPE records as samples of the sampled profile (samples/SampleProfile):
// one event per question people ask of SPE, each record a sample of every
// event it belongs to, as perf's arm_spe synthesizes its l1d-miss, tlb-miss,
// llc-miss, branch-miss, remote-access, memory and instructions events. The
// selection's views (top functions, call tree, bottom-up, flame graph, per
// thread) and `auxscope report --event` then work on them as on cpu-clock.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "samples/SampleProfile.h"
#include "spe/SpeRecord.h"

namespace auxscope {

// The SPE events, in SyntheticSamples::events order.
enum class SpeEvent : uint32_t {
    AllOps,        // every record, period 1
    Loads,         // isLoad
    Stores,        // isStore
    Branches,      // isBranch
    L1dRefill,     // kEvL1dRefill
    LlcMiss,       // kEvLlcMiss
    TlbWalk,       // kEvTlbWalk
    Mispredicted,  // kEvMispredicted
    Remote,        // kEvRemoteAccess
    TotalLatency,  // every record with a total latency, period = totalLatency (cycles)
    Count
};
// "arm_spe: all ops", "arm_spe: loads", ... (as SampledEvent::name spells them).
std::string speEventName(SpeEvent event);
// Whether `r` is a sample of `event` (TotalLatency: it carries a total latency).
bool speRecordHasEvent(const spe::SpeRecord& r, SpeEvent event);

// Every event (all of them, with or without samples) and, per record, a sample
// of each event it belongs to: time, pid/tid, cpu, PC (user code at EL0, else
// kernel by EL and address). Records without a PC are samples at address 0 ("[unknown]").
SyntheticSamples speSyntheticSamples(std::span<const spe::SpeRecord> records);

}  // namespace auxscope
