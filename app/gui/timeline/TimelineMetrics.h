// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The timeline's geometry in pixels, shared by the view, its track layout, its
// tracks and its overlays (TimelineView repeats them as its public constants).
namespace auxscope::timeline_metrics {

constexpr int kAxisHeight = 26;        // the time axis on top
constexpr int kLaneHeight = 20;        // a CPU lane
constexpr int kHeaderHeight = 22;      // a thread's header (with sideband lanes: its runs and samples)
constexpr int kRowHeight = 18;         // a flame-chart row
constexpr int kLabelWidth = 170;       // the label column left of the plot
constexpr int kProcessHeight = 20;     // a process's (or the capture-health group's) header
constexpr int kHealthHeight = 32;      // a CPU's capture-health lane
constexpr double kLabelMinWidth = 48;  // a slice or span at least this wide is named

}  // namespace auxscope::timeline_metrics
