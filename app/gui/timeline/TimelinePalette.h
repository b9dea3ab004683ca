// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The timeline's colours: per function (stable: a hash of its name), per
// thread and process, samples, losses, gaps, capture health and CPU notes.
// The flame graph colours functions as the timeline does.
#include <QColor>

#include <cstdint>
#include <string>
#include <vector>

namespace auxscope {

struct TimelineData;

namespace palette {

QColor function(const std::string& name);
QColor thread(int32_t tid);
// CPU lanes and run slices are coloured by process (a thread of no known process: by thread).
QColor process(int32_t pid);
// Loss markers: LOST / LOST_SAMPLES, THROTTLE, AUX flags (SidebandLanes::Loss::Kind).
QColor loss(int kind);
// Sample ticks; gaps (and their hatching); a CPU the file names as offline or not traced.
inline const QColor sample{35, 35, 45}, gap{255, 196, 196}, gapHatch{200, 0, 0}, cpuNote{232, 232, 232};
// Health lanes: the ring's fill area (where it reached 95 %: healthFull), the AUX fill line.
inline const QColor healthRing{120, 160, 215}, healthFull{235, 120, 40}, healthAux{20, 130, 70};

// Samples that carry a value (Arm SPE: latency in cycles), from cool to hot on a
// log scale (1 .. 4096 and more), and a key (a data source) by a fixed palette.
QColor sampleValue(uint16_t value);
QColor sampleKey(uint16_t key);

}  // namespace palette

// Each function's colour (palette::function of its name), found on first need and kept as RGB:
// converting the HSV it is made from costs more than a pixel run.
class FunctionColors {
public:
    QColor of(uint32_t function, const TimelineData* data);
    void clear() { colors_.clear(); }

private:
    std::vector<QColor> colors_;
};

}  // namespace auxscope
