// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/TraceText.h"

namespace auxscope {

QString relativeTime(uint64_t t, uint64_t origin) {
    const double ns = double(t) - double(origin);
    if (ns < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 1);
    if (ns < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 3);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 4);
}

QString megabytes(uint64_t bytes) {
    return QString::number(double(bytes) / double(1 << 20), 'f', bytes < (10u << 20) ? 1 : 0) + " MB";
}

}  // namespace auxscope
