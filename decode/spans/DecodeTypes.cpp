// SPDX-License-Identifier: GPL-3.0-or-later
#include "spans/DecodeTypes.h"

namespace auxscope {

DecodeStats& DecodeStats::operator+=(const DecodeStats& o) {
    segments += o.segments, traceBytes += o.traceBytes, blocks += o.blocks, instructions += o.instructions;
    decodeErrors += o.decodeErrors, segmentsRedecoded += o.segmentsRedecoded;
    for (auto& [k, v] : o.gaps)
        gaps[k] += v;
    for (auto& [k, v] : o.missingImages)
        missingImages[k] += v;
    return *this;
}

}  // namespace auxscope
