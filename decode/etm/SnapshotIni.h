// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A small, strict .ini parser for OpenCSD/DS-5 trace snapshots (snapshot.ini,
// trace.ini, cpu_*.ini, device_*.ini). It accepts what OpenCSD's snapshot
// parser accepts in the shared snapshots and refuses the rest with an error that
// names file:line and the cause:
// - `[section]` headers; whitespace around the brackets and around the name is ignored;
// - `key=value` lines, split at the first '='; key and value are trimmed of spaces
//   and tabs; the key must not be empty;
// - ';' and '#' start a comment anywhere on a line (as in OpenCSD: there is no
//   quoting that protects them), '\r' ends a line;
// - blank lines are skipped; a key before any section header, a line that is
//   neither a header nor key=value, text after a header's ']', a NUL byte, and
//   a file larger than kMaxIniBytes are errors.
// Sections keep their order and may repeat (several [dump] sections); what a
// key means and whether it may repeat is the reader's business (EtmSnapshot).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope::etm {

constexpr size_t kMaxIniBytes = 16u << 20;

struct IniEntry {
    std::string key;
    std::string value;
    int line = 0;  // 1-based
};

struct IniSection {
    std::string name;
    int line = 0;  // of the header
    std::vector<IniEntry> entries;

    // The first entry with this key (exact match), or nullptr.
    const IniEntry* find(std::string_view key) const;
};

struct IniFile {
    std::string path;  // as given to parse(); errors name it
    std::vector<IniSection> sections;

    // The first section with this name (exact match), or nullptr.
    const IniSection* find(std::string_view name) const;
    // "path:line"
    std::string where(int line) const;
};

// Parses `text`; `path` is only used in error messages ("trace.ini:7: ...").
Expected<IniFile> parseIni(std::string_view text, std::string path);
// Reads and parses a file; a missing or unreadable file is an error naming it.
Expected<IniFile> readIniFile(const std::string& path);

// Trims spaces and tabs at both ends.
std::string_view trimIni(std::string_view s);
// Strips one pair of matching quotes ("..." or '...') around a value.
std::string_view unquoteIni(std::string_view s);

}  // namespace auxscope::etm
