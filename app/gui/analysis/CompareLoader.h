// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One side of a comparison loaded from a file, as `auxscope report FILE`
// computes it (and so `auxscope compare`): the whole recording, every thread,
// from its decoded AUX trace when it has one (Intel PT, CoreSight), else from
// its samples (the first sampled event that is not a context switch; an Arm SPE
// file's records are samples of its arm_spe events). Runs on
// any thread (the GUI calls it on a worker); what the statistics refer to lives
// as long as the result.
#include <QString>

#include <memory>
#include <string>

#include "Result.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"

namespace auxscope {

struct CompareSideData {
    std::shared_ptr<const RangeStats> stats;
    std::shared_ptr<const FunctionTable> functions;  // keeps the file and decoder open
    QString label;                                   // the file's path and what was counted
};

// Errors name the file and the cause.
Expected<CompareSideData> loadCompareSide(const std::string& path);

}  // namespace auxscope
