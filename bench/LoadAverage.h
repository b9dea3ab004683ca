// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// "load 1.23 1.10 0.98": printed beside every benchmark figure, since the
// machine is shared.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace auxscope::bench {

inline std::string loadAverage() {
    double l[3] = {};
    if (getloadavg(l, 3) < 3) return "load ?";
    char b[64];
    std::snprintf(b, sizeof b, "load %.2f %.2f %.2f", l[0], l[1], l[2]);
    return b;
}

}  // namespace auxscope::bench
