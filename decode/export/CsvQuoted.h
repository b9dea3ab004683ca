// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A CSV field always quoted (function names hold commas: templates, argument
// lists), quotes doubled: what the command line's --format csv and the
// comparison's CSV write.
#include <string>

namespace auxscope {

inline std::string csvQuoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    return out + "\"";
}

}  // namespace auxscope
