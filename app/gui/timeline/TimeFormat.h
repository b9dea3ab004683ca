// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How times and counts are written on the timeline and in every pane that reads it.
#include <QString>

#include <cstdint>

namespace auxscope {

// 1234567 -> "1.235 ms"; shared by the timeline and the selection panes.
QString formatNs(double ns);
// 1234567 -> "1,234,567".
QString formatCount(uint64_t n);
// An axis label: `ns` after the recording's start, in the unit of the tick step.
QString formatTick(double ns, double step);

}  // namespace auxscope
