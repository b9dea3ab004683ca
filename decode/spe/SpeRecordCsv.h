// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// SPE records as CSV: the layout `auxscope decode FILE --format records` prints
// and auxscope-spesynth's FILE.truth uses. A header row naming every field of
// spe::SpeRecord in declaration order, spelled as there; then one row per
// record: integers in decimal, bools 0/1, opClass as its number (0, 1, 2, 255).
#include <string>
#include <string_view>

#include "spe/SpeRecord.h"

namespace auxscope::spe {

// The header row, without its newline.
std::string_view speCsvHeader();
// Appends one record's row and its newline to `out`.
void appendSpeCsvRow(const SpeRecord& r, std::string& out);

}  // namespace auxscope::spe
