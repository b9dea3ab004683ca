// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one command-line option parser every `auxscope` command uses (record,
// info, export, decode with its perf.data, snapshot and --pt modes, report): a
// table of options, parsed the way perf's parse-options and getopt_long read
// what people type:
//   --name VALUE, --name=VALUE     every long option that takes a value
//   --name[=VALUE]                 an optional value, only ever attached
//   -x VALUE, -xVALUE              short options with a value (-F 99, -F99)
//   -abc                           short flags combined (-ag); the last may take a value (-aC0)
//   --                             the end of the options (record: the command follows)
//   -                              an operand (stdin), not an option
// An option the table lacks is refused with its name. Parsing is a pure
// function of the arguments: it opens nothing and prints nothing, so a fuzzer
// can feed it anything.
//
// Also here: option values that are numbers, parsed as what they are
// (std::from_chars, decimal, range-checked; no float-to-int casts), and the one
// --time syntax of decode, export and report.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "Result.h"

namespace auxscope {

enum class OptionArg {
    None,      // a flag
    Required,  // --name VALUE or --name=VALUE
    Optional,  // --name or --name=VALUE (a short one: -x or -xVALUE)
};

struct OptionSpec {
    const char* longName;  // without the "--"; "" for a short option only
    char shortName;        // 0: none
    OptionArg arg;
    const char* valueName;  // for the help text: "N", "LIST"
    const char* help;       // the help text's description (may hold newlines); "" not listed
};

struct ParsedOption {
    const OptionSpec* spec = nullptr;
    std::string spelling;  // as it names the option in messages: "--cpu" or "-C"
    std::optional<std::string> value;

    bool is(std::string_view longName) const { return spec && longName == spec->longName; }
    bool isShort(char c) const { return spec && spec->shortName == c; }
};

struct ParsedCommandLine {
    std::vector<ParsedOption> options;  // in the order given
    std::vector<std::string> operands;  // the arguments that are not options
    // With OperandsEnd::AtFirst: the first operand and everything after it, or
    // everything after "--" (a command to launch, as perf record reads it).
    std::vector<std::string> rest;
    bool dashDash = false;  // "--" was given
};

enum class OperandsEnd {
    Never,    // options and operands mixed (perf script FILE --opt); "--": the rest are operands
    AtFirst,  // the first operand ends the options (perf record cmd args...)
};

namespace option_parser_detail {
inline std::string spellingOf(const OptionSpec& s, bool asShort) {
    return asShort ? std::string("-") + s.shortName : std::string("--") + s.longName;
}
}  // namespace option_parser_detail

// Parses `args` (the command's arguments, without the command name) against `table`.
inline Expected<ParsedCommandLine> parseCommandLine(std::span<const OptionSpec> table,
                                                    const std::vector<std::string>& args,
                                                    OperandsEnd end = OperandsEnd::Never) {
    using option_parser_detail::spellingOf;
    ParsedCommandLine out;
    auto findLong = [&](std::string_view name) -> const OptionSpec* {
        for (const OptionSpec& s : table)
            if (*s.longName && name == s.longName) return &s;
        return nullptr;
    };
    auto findShort = [&](char c) -> const OptionSpec* {
        for (const OptionSpec& s : table)
            if (s.shortName && s.shortName == c) return &s;
        return nullptr;
    };
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--") {
            out.dashDash = true;
            for (size_t j = i + 1; j < args.size(); ++j)
                (end == OperandsEnd::AtFirst ? out.rest : out.operands).push_back(args[j]);
            break;
        }
        if (a.size() < 2 || a[0] != '-') {
            if (end == OperandsEnd::AtFirst) {
                out.rest.assign(args.begin() + long(i), args.end());
                break;
            }
            out.operands.push_back(a);
            continue;
        }
        if (a[1] == '-') {
            const size_t eq = a.find('=');
            const std::string_view name =
                std::string_view(a).substr(2, eq == std::string::npos ? a.npos : eq - 2);
            const OptionSpec* s = findLong(name);
            if (!s) return makeError("unknown option '--" + std::string(name) + "'");
            ParsedOption p{s, spellingOf(*s, false), std::nullopt};
            if (eq != std::string::npos) {
                if (s->arg == OptionArg::None)
                    return makeError("option '" + p.spelling + "' takes no value (got '" + a + "')");
                p.value = a.substr(eq + 1);
            } else if (s->arg == OptionArg::Required) {
                if (i + 1 >= args.size()) return makeError("option " + p.spelling + " needs a value");
                p.value = args[++i];
            }
            out.options.push_back(std::move(p));
            continue;
        }
        // One or more short options: -a, -ag, -F99, -F 99, -S, -Se4M.
        for (size_t k = 1; k < a.size(); ++k) {
            const OptionSpec* s = findShort(a[k]);
            if (!s) {
                if (a.size() == 2) return makeError("unknown option '" + a + "'");
                return makeError("unknown option '-" + std::string(1, a[k]) + "' (in '" + a + "')");
            }
            ParsedOption p{s, spellingOf(*s, true), std::nullopt};
            if (s->arg == OptionArg::None) {
                out.options.push_back(std::move(p));
                continue;
            }
            if (k + 1 < a.size()) {
                p.value = a.substr(k + 1);
            } else if (s->arg == OptionArg::Required) {
                if (i + 1 >= args.size()) return makeError("option " + p.spelling + " needs a value");
                p.value = args[++i];
            }
            out.options.push_back(std::move(p));
            break;
        }
    }
    return out;
}

// The table as the help text lists it: "  -C, --cpu LIST     help", the help's
// further lines indented under the first.
inline std::string formatOptionHelp(std::span<const OptionSpec> table, size_t column = 26) {
    std::string out;
    for (const OptionSpec& s : table) {
        if (!*s.help) continue;
        std::string_view help = s.help;
        const bool blankAfter = help.back() == '\n';
        if (blankAfter) help.remove_suffix(1);
        if (!s.shortName && !*s.longName) {  // a heading: as written
            out += std::string(help) + "\n";
            if (blankAfter) out += "\n";
            continue;
        }
        std::string left = "  ";
        left +=
            s.shortName ? std::string("-") + s.shortName + (*s.longName ? ", " : "") : std::string("    ");
        if (*s.longName) left += std::string("--") + s.longName;
        if (s.arg == OptionArg::Required)
            left += std::string(" ") + s.valueName;
        else if (s.arg == OptionArg::Optional)
            left += std::string(*s.longName ? "[=" : "[") + s.valueName + "]";
        // A long left column: two blanks, then the text; its next lines at the column.
        out += left + std::string(left.size() + 2 > column ? 2 : column - left.size(), ' ');
        bool first = true;
        for (;;) {
            const size_t nl = help.find('\n');
            if (!first) out += std::string(column, ' ');
            out += help.substr(0, nl);
            out += '\n';
            first = false;
            if (nl == std::string_view::npos) break;
            help.remove_prefix(nl + 1);
        }
        if (blankAfter) out += "\n";
    }
    return out;
}

// ---- option values -------------------------------------------------------

// A decimal integer in [min, max], the whole text: "010" is ten (perf reads
// pids, tids, CPUs and counts as decimal), no sign unless min < 0, no blanks,
// no fraction or exponent. Errors name the option and the text given.
inline Expected<int64_t> parseIntegerOption(std::string_view option, std::string_view text, int64_t min,
                                            int64_t max) {
    const std::string what = std::string(option) + " '" + std::string(text) + "'";
    const std::string range = " (" + std::to_string(min) + " to " + std::to_string(max) + ")";
    if (text.empty()) return makeError(what + ": expected a number" + range);
    std::string_view digits = text;
    if (digits.front() == '+') digits.remove_prefix(1);  // from_chars takes no '+'
    if (digits.empty() || (digits.front() == '-' && min >= 0))
        return makeError(what + ": expected a number" + range);
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
    if (ec == std::errc::result_out_of_range) return makeError(what + ": out of range" + range);
    if (ec != std::errc() || p != digits.data() + digits.size())
        return makeError(what + ": not a decimal integer" + range);
    if (v < min || v > max) return makeError(what + ": out of range" + range);
    return v;
}

inline Expected<uint64_t> parseUnsignedOption(std::string_view option, std::string_view text,
                                              uint64_t min = 0,
                                              uint64_t max = std::numeric_limits<uint64_t>::max()) {
    const std::string what = std::string(option) + " '" + std::string(text) + "'";
    const std::string range = " (" + std::to_string(min) + " to " + std::to_string(max) + ")";
    std::string_view digits = text;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    if (digits.empty() || digits.front() == '-') return makeError(what + ": expected a number" + range);
    uint64_t v = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
    if (ec == std::errc::result_out_of_range) return makeError(what + ": out of range" + range);
    if (ec != std::errc() || p != digits.data() + digits.size())
        return makeError(what + ": not a decimal integer" + range);
    if (v < min || v > max) return makeError(what + ": out of range" + range);
    return v;
}

// A finite real number greater than 0 (durations, speeds): "nan", "inf",
// negative numbers and 0 are refused with the option's name.
inline Expected<double> parsePositiveRealOption(std::string_view option, std::string_view text) {
    const std::string what = std::string(option) + " '" + std::string(text) + "'";
    double v = 0;
    const auto [p, ec] =
        std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::general);
    if (text.empty() || ec != std::errc() || p != text.data() + text.size())
        return makeError(what + ": not a number");
    if (!std::isfinite(v)) return makeError(what + ": not a finite number");
    if (!(v > 0)) return makeError(what + ": must be greater than 0");
    return v;
}

// --time: the window [A, B] of decode, export and report, one syntax for all:
//   A-B, A- (from A), -B (up to B); perf's comma also separates: A,B
//   each side: N (ns of perf time, as the records carry it), S.F (seconds with
//   a fraction, as perf script --time prints them: 1234.5678 is 1234567800000 ns),
//   +N / +S.F (after the recording's start, as the side's first record).
struct TimeRangeOption {
    std::optional<uint64_t> begin, end;  // ns
    bool beginRelative = false, endRelative = false;
};

namespace option_parser_detail {
// One side of a --time range, ns; nullopt when malformed or too large.
inline std::optional<uint64_t> timeSide(std::string_view s) {
    const size_t dot = s.find('.');
    const std::string_view whole = s.substr(0, dot);
    if (whole.empty() || whole.front() == '+' || whole.front() == '-') return std::nullopt;
    uint64_t w = 0;
    auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), w, 10);
    if (ec != std::errc() || p != whole.data() + whole.size()) return std::nullopt;
    if (dot == std::string_view::npos) return w;
    std::string_view frac = s.substr(dot + 1);
    if (frac.empty() || frac.size() > 9) return std::nullopt;
    uint64_t f = 0;
    auto [q, ec2] = std::from_chars(frac.data(), frac.data() + frac.size(), f, 10);
    if (ec2 != std::errc() || q != frac.data() + frac.size() || frac.front() == '+' || frac.front() == '-')
        return std::nullopt;
    for (size_t i = frac.size(); i < 9; ++i)
        f *= 10;
    if (w > (std::numeric_limits<uint64_t>::max() - f) / 1000000000ull) return std::nullopt;
    return w * 1000000000ull + f;
}
}  // namespace option_parser_detail

inline Expected<TimeRangeOption> parseTimeRangeOption(std::string_view option, std::string_view text) {
    const std::string error = std::string(option) + " '" + std::string(text) +
                              "': expected A-B, A- or -B (N: ns of perf time, S.F: seconds, +: after the "
                              "recording's start; A,B as perf)";
    // The separator: a comma, else the first '-' (a side never starts with one).
    size_t sep = text.find(',');
    if (sep == std::string_view::npos) sep = text.find('-');
    if (sep == std::string_view::npos || text.size() < 2) return makeError(error);
    TimeRangeOption out;
    auto side = [&](std::string_view s, std::optional<uint64_t>& into, bool& relative) {
        if (s.empty()) return true;
        if (s.front() == '+') relative = true, s.remove_prefix(1);
        into = option_parser_detail::timeSide(s);
        return into.has_value();
    };
    if (!side(text.substr(0, sep), out.begin, out.beginRelative) ||
        !side(text.substr(sep + 1), out.end, out.endRelative))
        return makeError(error);
    if (out.begin && out.end && out.beginRelative == out.endRelative && *out.end < *out.begin)
        return makeError(std::string(option) + " '" + std::string(text) + "': the end lies before the begin");
    return out;
}

}  // namespace auxscope
