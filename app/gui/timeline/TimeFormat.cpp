// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimeFormat.h"

#include <QLocale>

#include <algorithm>
#include <cmath>

namespace auxscope {

QString formatNs(double ns) {
    const double a = std::fabs(ns);
    if (a < 1e3) return QString("%1 ns").arg(ns, 0, 'f', 0);
    if (a < 1e6) return QString("%1 µs").arg(ns / 1e3, 0, 'f', 2);
    if (a < 1e9) return QString("%1 ms").arg(ns / 1e6, 0, 'f', 3);
    return QString("%1 s").arg(ns / 1e9, 0, 'f', 4);
}

QString formatCount(uint64_t n) {
    return QLocale(QLocale::English).toString(qulonglong(n));
}

QString formatTick(double ns, double step) {
    double unit = 1;
    const char* name = "ns";
    if (step >= 1e9)
        unit = 1e9, name = "s";
    else if (step >= 1e6)
        unit = 1e6, name = "ms";
    else if (step >= 1e3)
        unit = 1e3, name = "µs";
    const double v = ns / unit, s = step / unit;
    const int decimals = s >= 1 ? 0 : std::min(6, int(std::ceil(-std::log10(s) - 1e-9)));
    return QString("%1 %2").arg(v, 0, 'f', decimals).arg(name);
}

}  // namespace auxscope
