// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/SnapshotIni.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace auxscope::etm {

const IniEntry* IniSection::find(std::string_view key) const {
    for (const auto& e : entries)
        if (e.key == key) return &e;
    return nullptr;
}

const IniSection* IniFile::find(std::string_view name) const {
    for (const auto& s : sections)
        if (s.name == name) return &s;
    return nullptr;
}

std::string IniFile::where(int line) const {
    return path + ":" + std::to_string(line);
}

std::string_view trimIni(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

std::string_view unquoteIni(std::string_view s) {
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
        return s.substr(1, s.size() - 2);
    return s;
}

namespace {

// A short, printable excerpt of a bad line for an error message.
std::string excerpt(std::string_view line) {
    std::string out;
    for (char c : line.substr(0, 60)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? c : '?';
    }
    if (line.size() > 60) out += "...";
    return out;
}

}  // namespace

Expected<IniFile> parseIni(std::string_view text, std::string path) {
    IniFile file;
    file.path = std::move(path);
    if (text.size() > kMaxIniBytes)
        return makeError(file.path + ": " + std::to_string(text.size()) +
                         " bytes, more than an .ini file may have (" + std::to_string(kMaxIniBytes) + ")");
    int lineNo = 0;
    size_t pos = 0;
    while (pos < text.size()) {
        ++lineNo;
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        if (line.find('\0') != std::string_view::npos)
            return makeError(file.where(lineNo) + ": NUL byte (not a text file?)");
        // Comments and CR end the line, wherever they are (OpenCSD's rule).
        if (size_t cut = line.find_first_of("\r;#"); cut != std::string_view::npos)
            line = line.substr(0, cut);
        line = trimIni(line);
        if (line.empty()) continue;
        if (line.front() == '[') {
            const size_t close = line.find(']');
            if (close == std::string_view::npos)
                return makeError(file.where(lineNo) + ": section header without ']': '" + excerpt(line) +
                                 "'");
            if (!trimIni(line.substr(close + 1)).empty())
                return makeError(file.where(lineNo) + ": text after the section header's ']': '" +
                                 excerpt(line) + "'");
            const std::string_view name = trimIni(line.substr(1, close - 1));
            if (name.empty()) return makeError(file.where(lineNo) + ": empty section name '[]'");
            if (name.find_first_of("[]") != std::string_view::npos)
                return makeError(file.where(lineNo) + ": bracket inside a section name: '" + excerpt(line) +
                                 "'");
            file.sections.push_back(IniSection{std::string(name), lineNo, {}});
            continue;
        }
        const size_t eq = line.find('=');
        if (eq == std::string_view::npos)
            return makeError(file.where(lineNo) + ": expected [section] or key=value, got '" + excerpt(line) +
                             "'");
        const std::string_view key = trimIni(line.substr(0, eq));
        const std::string_view value = trimIni(line.substr(eq + 1));
        if (key.empty())
            return makeError(file.where(lineNo) + ": empty key before '=': '" + excerpt(line) + "'");
        if (file.sections.empty())
            return makeError(file.where(lineNo) + ": '" + excerpt(key) +
                             "' is defined before any [section] header");
        file.sections.back().entries.push_back(IniEntry{std::string(key), std::string(value), lineNo});
    }
    return file;
}

Expected<IniFile> readIniFile(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        return makeError(path + ": not a regular file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError(path + ": cannot open: " + std::strerror(errno));
    std::string text;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxIniBytes)
            return makeError(path + ": more than " + std::to_string(kMaxIniBytes) +
                             " bytes, too large for an .ini file");
    }
    if (in.bad()) return makeError(path + ": read error: " + std::strerror(errno));
    return parseIni(text, path);
}

}  // namespace auxscope::etm
