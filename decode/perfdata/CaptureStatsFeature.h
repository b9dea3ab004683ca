// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// auxscope's own perf.data feature section: every CPU's data-ring fill and loss
// counters over the capture, as the drain thread published them. It uses a
// feature bit far above perf's (perf's stop near 32; simpleperf's start at 128), so
// perf's tools skip it without a word and auxscope's exports can show buffer
// fill and loss as counter tracks.
//
// Layout (little-endian): u32 version (2), u32 entry size (128), u64 entry count,
// then entries: u64 perf_time, u64 monotonic_ns, i32 cpu, f32 fill_peak_percent,
// u64 bytes, records, lost_records, lost_samples, kernel_lost (cumulative);
// version 2 adds u32 has_aux, f32 aux_fill_percent, u64 aux_bytes,
// aux_truncated, aux_partial, aux_collision, aux_reenables, aux_snapshots,
// aux_snapshot_bytes (cumulative). Version 1 files (64-byte entries) still read.
#include <cstdint>
#include <span>
#include <vector>

#include "CaptureStats.h"
#include "Result.h"

namespace auxscope {

constexpr unsigned kFeatAuxscopeCaptureStats = 250;

std::vector<uint8_t> encodeCaptureStatsFeature(const std::vector<StatsSample>& history);
// `where` names the file and offset for messages.
Expected<std::vector<StatsSample>> decodeCaptureStatsFeature(std::span<const uint8_t> bytes,
                                                             const std::string& where);

}  // namespace auxscope
