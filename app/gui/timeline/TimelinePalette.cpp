// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelinePalette.h"

#include <algorithm>

#include "gui/timeline/TimelineHit.h"

namespace auxscope {
namespace {

uint32_t fnv1a(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s)
        h = (h ^ c) * 16777619u;
    return h;
}

}  // namespace

namespace palette {

QColor function(const std::string& name) {
    const uint32_t h = fnv1a(name);
    // Hues away from pure red, which gaps use.
    return QColor::fromHsv(int(25 + h % 310), int(90 + (h >> 9) % 90), int(205 + (h >> 17) % 45));
}

QColor thread(int32_t tid) {
    const uint32_t h = fnv1a(std::to_string(tid)) * 2654435761u;
    return QColor::fromHsv(int(h % 360), int(70 + (h >> 11) % 80), int(190 + (h >> 19) % 50));
}

QColor process(int32_t pid) {
    return thread(pid);
}

QColor loss(int kind) {
    switch (kind) {
        case SidebandLanes::Loss::Throttle:
            return QColor(235, 130, 0);
        case SidebandLanes::Loss::Aux:
            return QColor(150, 0, 210);
        default:
            return QColor(220, 0, 0);
    }
}

}  // namespace palette

QColor FunctionColors::of(uint32_t function, const TimelineData* data) {
    if (function >= colors_.size()) {
        const size_t n = data && data->functions ? data->functions->size() : 0;
        colors_.resize(std::max<size_t>(function + 1, n));
    }
    QColor& c = colors_[function];
    if (!c.isValid()) c = palette::function(functionNameOf(data, function).toStdString()).toRgb();
    return c;
}

}  // namespace auxscope
