// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How the trace page writes times and sizes in its status lines.
#include <QString>

#include <cstdint>

namespace auxscope {

// `t` after `origin`: "12.5 µs", "3.250 ms", "1.2500 s".
QString relativeTime(uint64_t t, uint64_t origin);
// 1572864 -> "1.5 MB" (MiB; one decimal below 10).
QString megabytes(uint64_t bytes);

}  // namespace auxscope
