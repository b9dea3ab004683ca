// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The ground truth of a synthesized SPE file, FILE.truth: CSV, a header row
// naming the columns, then one row per record in time order (ties: by CPU; a
// record without a TIMESTAMP keeps its place after the record before it on its
// CPU). The columns are every field of auxscope::spe::SpeRecord in declaration
// order, named as the struct spells them; integers in decimal, bools 0 or 1,
// opClass as its integer value (0 Other, 1 LoadStore, 2 Branch, 255 None).
// Fields a record does not carry are 0 with their has* flag 0. `auxscope decode
// FILE --format records` prints the same layout.
//
// --records reads the same layout: the columns may come in any order, and the
// derived ones (isLoad ... isConditional) may be left out (then derived from
// opClass and opPayload); so may `time` (computed from `timestamp`). Every
// other column is required.
#include <cstdio>
#include <string>
#include <vector>

#include "Result.h"
#include "spe/SpeRecord.h"

namespace auxscope::spesynth {

// The column names, in SpeRecord's declaration order.
const std::vector<std::string>& truthColumns();

// Writes the header row and the records (as they are: the caller orders them).
class TruthWriter {
public:
    static Expected<TruthWriter> create(const std::string& path);
    TruthWriter(TruthWriter&&) noexcept;
    TruthWriter& operator=(TruthWriter&&) = delete;
    ~TruthWriter();
    void write(const spe::SpeRecord& r);
    Expected<void> close();

private:
    TruthWriter() = default;
    std::string path_;
    FILE* f_ = nullptr;
    std::vector<char> buf_;
};

// One row formatted as the truth writes it (no newline).
std::string truthRow(const spe::SpeRecord& r);

struct TruthRead {
    std::vector<spe::SpeRecord> records;
    std::vector<size_t> lines;  // each record's line in the file
    bool hasTime = false;       // the file had a `time` column
};

// Reads a CSV in the truth layout. Errors name the file, the line and the cause
// (unknown or missing column, a value that is not a number or out of range, a
// row with too few or too many fields).
Expected<TruthRead> readTruthCsv(const std::string& path);

}  // namespace auxscope::spesynth
