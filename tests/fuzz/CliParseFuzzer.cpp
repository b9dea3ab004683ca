// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer harness for the command line's parsers (issue 32): random argument
// vectors for every command's parse function (app/cli: record, info, export,
// decode in its perf.data, snapshot and --pt modes, report, compare; decode/pt's
// parsePtDecodeArguments), parse only: nothing is captured, opened or
// decoded (the look-up options stat() the paths they name, which exist or not).
// The input: the first byte picks the command (and, for decode, what its
// operand is taken for), the rest is the arguments separated by NUL bytes.
// Checked for every input:
//   - no crash, leak or UB (ASan/UBSan);
//   - every refusal names something the person typed: an argument, an option's
//     name (--name of --name=value, -x of a short cluster) or a value, or says
//     that a file is missing when none was given;
//   - parsing twice gives the same answer (no hidden state).
// Built with clang and ASan/UBSan by tests/fuzz/cli_parse_fuzz.cmake.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "OptionParser.h"
#include "cli/CompareCommand.h"
#include "cli/DecodeCommand.h"
#include "cli/ExportCommand.h"
#include "cli/InfoCommand.h"
#include "cli/RecordCommand.h"
#include "cli/ReportCommand.h"
#include "pt/PtDecodeRequest.h"

using namespace auxscope;

namespace {

// What a refusal may name: each argument, the option part and the value part
// of --name=value, and each short option of a -abc cluster with what follows it.
bool namesAnArgument(const std::string& message, const std::vector<std::string>& args) {
    auto has = [&](const std::string& s) { return s.size() >= 2 && message.find(s) != std::string::npos; };
    for (const std::string& a : args) {
        if (has(a) || message.find("'" + a + "'") != std::string::npos) return true;
        const size_t eq = a.find('=');
        if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
            if (has(a.substr(0, eq)) || has(a.substr(eq + 1)) ||
                message.find("'" + a.substr(eq + 1) + "'") != std::string::npos)
                return true;
        }
        if (a.size() > 2 && a[0] == '-' && a[1] != '-')
            for (size_t k = 1; k < a.size(); ++k)
                if (has(std::string("-") + a[k]) || has(a.substr(k))) return true;
    }
    return false;
}

// Refusals for an argument that is missing altogether cannot name it.
bool saysWhatIsMissing(const std::string& message) {
    for (const char* missing : {"no file given", "which file?", "no trace given", "no input file given"})
        if (message.rfind(missing, 0) == 0) return true;
    return false;
}

void check(const char* command, const std::vector<std::string>& args, const Error* error) {
    if (!error) return;
    const std::string& m = error->message;
    if (m.empty() || (!namesAnArgument(m, args) && !saysWhatIsMissing(m))) {
        std::fprintf(stderr, "auxscope %s: the refusal names nothing given: '%s'\narguments:", command,
                     m.c_str());
        for (const std::string& a : args)
            std::fprintf(stderr, " [%s]", a.c_str());
        std::fprintf(stderr, "\n");
        std::abort();
    }
}

template <typename T>
const Error* errorOf(const Expected<T>& r) {
    return r ? nullptr : &r.error();
}

template <typename T>
void sameTwice(const Expected<T>& a, const Expected<T>& b) {
    if (bool(a) != bool(b) || (!a && a.error().message != b.error().message)) {
        std::fprintf(stderr, "a second parse of the same arguments answered differently\n");
        std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const uint8_t selector = data[0];
    std::vector<std::string> args;
    std::string cur;
    for (size_t i = 1; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(cur);
            cur.clear();
        } else {
            cur += char(data[i]);
        }
    }
    if (size > 1) args.push_back(cur);
    if (args.size() > 64) return 0;

    switch (selector % 8) {
        case 0: {
            auto r = parseRecordArgs(args);
            sameTwice(r, parseRecordArgs(args));
            check("record", args, errorOf(r));
            break;
        }
        case 1: {
            auto r = parseInfoArgs(args);
            check("info", args, errorOf(r));
            break;
        }
        case 2: {
            auto r = parseExportArgs(args);
            check("export", args, errorOf(r));
            break;
        }
        case 3:
        case 4: {
            // The operand taken for a perf.data, a snapshot folder or raw trace by the selector's bits.
            const DecodeInput kinds[] = {DecodeInput::PerfData, DecodeInput::EtmSnapshot, DecodeInput::Other};
            auto r = parseDecodeArgs(
                args, [&](const std::string& path) { return kinds[(selector / 8 + path.size()) % 3]; });
            check("decode", args, errorOf(r));
            break;
        }
        case 5: {
            auto r = parseReportArgs(args);
            check("report", args, errorOf(r));
            break;
        }
        case 6: {
            auto r = parsePtDecodeArguments(args);
            sameTwice(r, parsePtDecodeArguments(args));
            check("decode --pt", args, errorOf(r));
            // --time's parser alone, on each argument.
            for (const std::string& a : args) {
                auto t = parseTimeRangeOption("--time", a);
                if (t && t->begin && t->end && !t->beginRelative && !t->endRelative && *t->end < *t->begin)
                    std::abort();  // refused by the parser
                if (!t && t.error().message.rfind("--time '" + a + "'", 0) != 0) std::abort();
            }
            break;
        }
        case 7: {
            auto r = parseCompareArgs(args);
            sameTwice(r, parseCompareArgs(args));
            check("compare", args, errorOf(r));
            break;
        }
    }
    return 0;
}
