// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <string>
#include <vector>

#include "CaptureSession.h"

namespace auxscope {

// `auxscope record ...`: headless capture over the same CaptureSession the GUI uses.
int runRecordCommand(const std::vector<std::string>& args);

// The per-CPU totals table printed at the end of a capture.
std::string formatSummary(const CaptureSummary& s);
std::string formatSummaryJson(const CaptureSummary& s);

}  // namespace auxscope
