// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/timeline/TimelinePalette.h"

#include <algorithm>

#include "gui/timeline/TimelineHit.h"

#include <algorithm>
#include <cmath>

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

QColor sampleValue(uint16_t value) {
    // log2 of 1 .. 4096 -> blue, teal, yellow, orange, red.
    static const QColor stops[] = {QColor(0x31, 0x68, 0xc8), QColor(0x1a, 0xa8, 0x9a),
                                   QColor(0xe0, 0xc0, 0x20), QColor(0xf0, 0x80, 0x20),
                                   QColor(0xd0, 0x20, 0x20)};
    const double v = std::clamp(std::log2(double(std::max<uint16_t>(value, 1))) / 12.0, 0.0, 1.0) * 4;
    const int i = std::min(3, int(v));
    const double f = v - i;
    const QColor a = stops[i], b = stops[i + 1];
    return QColor(int(a.red() + (b.red() - a.red()) * f), int(a.green() + (b.green() - a.green()) * f),
                  int(a.blue() + (b.blue() - a.blue()) * f));
}

QColor sampleKey(uint16_t key) {
    // 16 apart: the data sources of one CPU's encoding (0 .. 15) never share a colour.
    static const QColor colors[] = {QColor(0x4e79a7), QColor(0xf28e2b), QColor(0x59a14f), QColor(0xe15759),
                                    QColor(0x76b7b2), QColor(0xedc948), QColor(0xb07aa1), QColor(0xff9da7),
                                    QColor(0x9c755f), QColor(0x2f4b7c), QColor(0xd45087), QColor(0x66a61e),
                                    QColor(0xff7f0e), QColor(0x1b9e77), QColor(0x7570b3), QColor(0xa6761d)};
    if (key == 0) return sample;
    return colors[size_t(key - 1) % std::size(colors)];
}

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
