// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// `s` without the blanks (spaces, tabs; a trailing CR too) around it: for the
// line-based texts auxscope reads (control FIFO commands, tracefs event formats).
#include <string_view>

namespace auxscope {

inline std::string_view trimBlanks(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

}  // namespace auxscope
