// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A timeline hit in words: the tooltip of what is under the mouse, and the
// line the trace page and the span pane show for a selection.
#include <QString>

#include <cstdint>

#include "gui/timeline/TimelineHit.h"

namespace auxscope {

// The lines describing `hit`, times relative to `recordingBegin`.
QString describeHit(const TimelineHit& hit, uint64_t recordingBegin);
// What a CPU note ("offline", "not traced") means, for its lane's hover.
QString cpuNoteText(const QString& note);

}  // namespace auxscope
