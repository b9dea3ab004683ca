// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// auxscope's perf.data feature section for snapshot triggers: the triggers, their
// settings, every firing (trigger, pid/tid, CPU, entry and firing time, duration,
// the snapshot it asked for with its start time and window) and every skipped
// firing's count by reason. A feature bit of our own, next to the capture
// statistics' (perf's tools skip it without a word), rather than perf's records:
// perf has no record for "a snapshot was triggered", and a synthesized sample
// of a made-up event would be one more event perf report lists as the user's.
//
// Layout (little-endian): u32 version (1), u32 firing size (88), u32 trigger
// count, u32 reserved; u64 post_ns, max, gap_ns; u64 skipped[thread, limit, gap, pending];
// u64 samples, unmatched_ends, lost, depth_overflows, snapshots_requested,
// snapshots_taken, other_processes; per trigger: u32 name length, the name, padded to 8 bytes;
// u64 firing count, then firings: u32 trigger, i32 pid, i32 tid, i32 cpu, u64
// start, time, duration, snapshot (~0: none), snapshot_time, window_start, window_end,
// seen_mono, snapshot_mono (CLOCK_MONOTONIC ns).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "Result.h"
#include "TriggerReport.h"

namespace auxscope {

constexpr unsigned kFeatAuxscopeTriggers = 251;

struct TriggerFileData {
    TriggerReport report;
    uint64_t postNs = 0, max = 0, gapNs = 0;
};

std::vector<uint8_t> encodeTriggerFeature(const TriggerFileData& data);
// `where` names the file and offset for messages.
Expected<TriggerFileData> decodeTriggerFeature(std::span<const uint8_t> bytes, const std::string& where);
// The lines `auxscope record` and `auxscope info` print: per trigger its count,
// the skips by reason, then a line per firing (perf-clock times in seconds, as
// perf script prints them, less `timeBase` ns).
std::string formatTriggerReport(const TriggerFileData& data, uint64_t timeBase, size_t maxFirings = 1000);

}  // namespace auxscope
