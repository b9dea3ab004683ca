// SPDX-License-Identifier: GPL-3.0-or-later
// The command line's one option parser (capture/OptionParser.h) and the
// commands' parse functions (app/cli): what perf users type is read as perf
// reads it, every refusal names the option and the text given, numbers are
// numbers, and the help texts list exactly what the parsers take.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include "OptionParser.h"
#include "cli/CompareCommand.h"
#include "cli/DecodeCommand.h"
#include "cli/DecodeOptions.h"
#include "cli/ExportCommand.h"
#include "cli/InfoCommand.h"
#include "cli/JsonString.h"
#include "cli/RecordCommand.h"
#include "cli/ReportCommand.h"
#include "pt/PtDecodeRequest.h"

using namespace auxscope;

namespace {

using Args = std::vector<std::string>;

// The refusal's text, or "" when the arguments were taken.
template <typename F>
std::string refusal(F parse, const Args& args) {
    auto r = parse(args);
    return r ? std::string() : r.error().message;
}

std::string recordRefusal(const Args& args) {
    return refusal(parseRecordArgs, args);
}

// decode with the operand taken for a perf.data (nothing is opened).
Expected<DecodeArgs> decodePerf(const Args& args) {
    return parseDecodeArgs(args, [](const std::string&) { return DecodeInput::PerfData; });
}

TEST(OptionParser, ReadsWhatPerfUsersType) {
    auto r = parseRecordArgs({"-ag", "-F99", "-e", "cpu-clock,task-clock", "--mmap-pages=64,8",
                              "--duration=0.5", "-o", "out.data", "-z", "--json"});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->capture.target, TargetKind::SystemWide);
    EXPECT_EQ(r->capture.callGraph.mode, CallGraphMode::FramePointer);
    EXPECT_EQ(r->capture.sampleFreq, 99u);
    EXPECT_EQ(r->capture.events,
              (std::vector<std::string>{"cpu-clock", "task-clock"}));  // -e a,b: two events
    EXPECT_EQ(r->capture.dataPages, 64u);
    EXPECT_EQ(r->capture.auxPages, 8u);
    EXPECT_DOUBLE_EQ(r->capture.durationSeconds, 0.5);
    EXPECT_EQ(r->output, "out.data");
    EXPECT_TRUE(r->compress);
    EXPECT_TRUE(r->json);

    // -F 99 and --freq=99 are the same; a pmu/terms/ list keeps its commas.
    auto spaced = parseRecordArgs({"-F", "99", "--freq=98", "-e", "intel_pt/cyc,noretcomp/u", "-e", "dummy"});
    ASSERT_TRUE(spaced) << spaced.error().message;
    EXPECT_EQ(spaced->capture.sampleFreq, 98u);
    EXPECT_EQ(spaced->capture.events, (std::vector<std::string>{"intel_pt/cyc,noretcomp/u", "dummy"}));

    // -p PID, -pPID, --pid=PID; -C LIST, -C0-1.
    for (const Args& a : {Args{"-p", "42"}, Args{"-p42"}, Args{"--pid=42"}, Args{"--pid", "42"}}) {
        auto p = parseRecordArgs(a);
        ASSERT_TRUE(p) << a[0] << ": " << p.error().message;
        EXPECT_EQ(p->capture.pid, 42);
        EXPECT_EQ(p->capture.target, TargetKind::Process);
    }
    auto cpus = parseRecordArgs({"-aC0-1"});  // combined: -a, then -C with its value attached
    ASSERT_TRUE(cpus) << cpus.error().message;
    EXPECT_EQ(cpus->capture.cpus, (std::vector<int>{0, 1}));

    // -S's value is optional, so only ever attached.
    auto snap = parseRecordArgs({"-Se4M", "-e", "intel_pt//"});
    ASSERT_TRUE(snap) << snap.error().message;
    EXPECT_TRUE(snap->capture.auxSnapshot);
    EXPECT_TRUE(snap->snapshotOnExit);
    EXPECT_EQ(snap->capture.snapshotBytes, 4u << 20);
    auto snapLong = parseRecordArgs({"--snapshot", "-e", "intel_pt//"});
    ASSERT_TRUE(snapLong) << snapLong.error().message;
    EXPECT_TRUE(snapLong->capture.auxSnapshot);
    EXPECT_EQ(snapLong->capture.snapshotBytes, 0u);
}

TEST(OptionParser, TheCommandEndsTheOptions) {
    // After "--", and without it from the first operand on, everything is the command's.
    for (const Args& a :
         {Args{"-F", "10", "--", "sh", "-c", "exit 7"}, Args{"-F", "10", "sh", "-c", "exit 7"}}) {
        auto r = parseRecordArgs(a);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->capture.command, (std::vector<std::string>{"sh", "-c", "exit 7"}));
        EXPECT_EQ(r->capture.target, TargetKind::Command);
        EXPECT_EQ(r->capture.sampleFreq, 10u);
    }
    auto dashes = parseRecordArgs({"--", "ls", "--", "-l"});
    ASSERT_TRUE(dashes);
    EXPECT_EQ(dashes->capture.command, (std::vector<std::string>{"ls", "--", "-l"}));
    EXPECT_EQ(recordRefusal({"--"}), "-- wants a command after it");
    EXPECT_EQ(recordRefusal({"-a", "--", "true"}),
              "give either a command or -a/-C/-p, not both: -a and the command 'true'");
    // The spelling given is named (the fuzzer's rule: a refusal names what was given).
    EXPECT_EQ(recordRefusal({"-a", "--compress"}),
              "--compress compresses the perf.data file: give it with -o FILE");
    EXPECT_EQ(recordRefusal({"-az"}), "-z compresses the perf.data file: give it with -o FILE");
    EXPECT_EQ(recordRefusal({"--all-cpus", "ls", "-l"}),
              "give either a command or -a/-C/-p, not both: --all-cpus and the command 'ls'");
}

TEST(OptionParser, UnknownOptionsAreNamed) {
    EXPECT_EQ(recordRefusal({"--foo"}), "unknown option '--foo'");
    EXPECT_EQ(recordRefusal({"--foo=1"}), "unknown option '--foo'");
    EXPECT_EQ(recordRefusal({"-x"}), "unknown option '-x'");
    EXPECT_EQ(recordRefusal({"-ax"}), "unknown option '-x' (in '-ax')");
    EXPECT_EQ(recordRefusal({"--json=yes"}), "option '--json' takes no value (got '--json=yes')");
    EXPECT_EQ(recordRefusal({"-p"}), "option -p needs a value");
    EXPECT_EQ(recordRefusal({"--call-graph"}), "option --call-graph needs a value");
    EXPECT_EQ(refusal(parseInfoArgs, {"--bogus", "f"}), "unknown option '--bogus'");
    EXPECT_EQ(refusal(parseExportArgs, {"f", "--bogus"}), "unknown option '--bogus'");
    EXPECT_EQ(refusal(parseReportArgs, {"f", "--bogus"}), "unknown option '--bogus'");
    EXPECT_EQ(refusal(decodePerf, {"f", "--bogus"}), "unknown option '--bogus'");
    EXPECT_EQ(refusal(parsePtDecodeArguments, {"--pt", "t.pt", "--bogus"}), "unknown option '--bogus'");
    // "-" is an operand (standard input), not an option.
    auto stdinInfo = parseInfoArgs({"-", "--json"});
    ASSERT_TRUE(stdinInfo) << stdinInfo.error().message;
    EXPECT_EQ(stdinInfo->file, "-");
    EXPECT_TRUE(stdinInfo->json);
}

TEST(OptionParser, NumbersAreNumbers) {
    // Each refusal names the option and the text given.
    const std::pair<Args, std::string> cases[] = {
        {{"-p", "1.9"}, "-p '1.9': not a decimal integer (1 to 2147483647)"},
        {{"-p", "nan"}, "-p 'nan': not a decimal integer (1 to 2147483647)"},
        {{"-p", "0"}, "-p '0': out of range (1 to 2147483647)"},
        {{"-p", "2147483648"}, "-p '2147483648': out of range (1 to 2147483647)"},
        {{"--pid", "99999999999999999999999"},
         "--pid '99999999999999999999999': out of range (1 to 2147483647)"},
        {{"-p", " 5"}, "-p ' 5': not a decimal integer (1 to 2147483647)"},
        {{"-p", "5x"}, "-p '5x': not a decimal integer (1 to 2147483647)"},
        {{"-p", "0x10"}, "-p '0x10': not a decimal integer (1 to 2147483647)"},
        {{"-F", "inf"}, "-F 'inf': not a decimal integer (1 to 4294967295)"},
        {{"-F", "0"}, "-F '0': out of range (1 to 4294967295)"},
        {{"--freq=4294967296"}, "--freq '4294967296': out of range (1 to 4294967295)"},
        {{"-m", "1e30"},
         "-m wants a power of two number of data ring pages, got '1e30' (a decimal number from 1 to 2^30 is "
         "expected)"},
        {{"-m", "-1"},
         "-m wants a power of two number of data ring pages, got '-1' (a decimal number from 1 to 2^30 is "
         "expected)"},
        {{"-m", "100"}, "-m wants a power of two number of data ring pages, got '100'"},
        {{"-m", "64,3"}, "-m wants a power of two number of AUX area pages, got '3'"},
        {{"--mmap-pages", "2147483648"},
         "--mmap-pages wants a power of two number of data ring pages, got '2147483648' (a decimal number "
         "from 1 "
         "to 2^30 is expected)"},
        {{"--duration", "nan"}, "--duration 'nan': not a finite number"},
        {{"--duration", "inf"}, "--duration 'inf': not a finite number"},
        {{"--duration", "-1"}, "--duration '-1': must be greater than 0"},
        {{"--duration", "0"}, "--duration '0': must be greater than 0"},
        {{"--duration", "1e300"}, "--duration '1e300': more than a year"},
        {{"--duration", "3s"}, "--duration '3s': not a number"},
        {{"-C", "x"}, "-C 'x': bad CPU 'x' in CPU list 'x'"},
        {{"--replay-speed", "fast", "--replay", "f"}, "--replay-speed: bad replay speed 'fast'"},
    };
    for (const auto& [args, text] : cases) {
        const std::string got = recordRefusal(args);
        EXPECT_EQ(got.substr(0, text.size()), text) << args[0] << " " << (args.size() > 1 ? args[1] : "");
    }

    // Decimal, as perf reads pids and tids: 010 is ten, not octal eight.
    auto tid = decodePerf({"f.data", "--tid", "010", "--cpu=007", "-j", "08"});
    ASSERT_TRUE(tid) << tid.error().message;
    const auto& perf = std::get<PerfDecodeArgs>(tid->mode);
    EXPECT_EQ(perf.window.tid, 10);
    EXPECT_EQ(perf.window.cpu, 7);
    EXPECT_EQ(perf.threads, 8u);
    auto pid = parseRecordArgs({"-p", "010"});
    ASSERT_TRUE(pid);
    EXPECT_EQ(pid->capture.pid, 10);

    const std::pair<Args, std::string> decodeCases[] = {
        {{"f", "--cpu", "-1"}, "--cpu '-1': expected a number (0 to 65535)"},
        {{"f", "--cpu", "65536"}, "--cpu '65536': out of range (0 to 65535)"},
        {{"f", "--tid", "-1"}, "--tid '-1': expected a number (0 to 2147483647)"},
        {{"f", "--tid", "4294967295"}, "--tid '4294967295': out of range (0 to 2147483647)"},
        {{"f", "--tid", "1.5"}, "--tid '1.5': not a decimal integer (0 to 2147483647)"},
        {{"f", "-j", "nan"}, "-j 'nan': not a decimal integer (0 to 4096)"},
        {{"f", "-j-1"}, "-j '-1': expected a number (0 to 4096)"},
    };
    for (const auto& [args, text] : decodeCases) {
        EXPECT_EQ(refusal(decodePerf, args), text) << args[1];
        EXPECT_EQ(refusal(parseExportArgs, args), text) << args[1];
        EXPECT_EQ(refusal(parseReportArgs, args), text) << args[1];
    }
    EXPECT_EQ(refusal(parseReportArgs, {"f", "--top", "1e3"}),
              "--top '1e3': not a decimal integer (0 to "
              "18446744073709551615)");
}

TEST(OptionParser, OneTimeSyntax) {
    struct Case {
        std::string text;
        std::optional<uint64_t> begin, end;
        bool beginRelative, endRelative;
    };
    const Case ok[] = {
        {"100-200", 100, 200, false, false},
        {"100-", 100, std::nullopt, false, false},
        {"-200", std::nullopt, 200, false, false},
        {"1.5-2.000000001", 1500000000, 2000000001, false, false},         // seconds.fraction
        {"1234.5678,1234.9", 1234567800000, 1234900000000, false, false},  // perf's comma
        {"+1000-+2000", 1000, 2000, true, true},
        {"+0.5-", 500000000, std::nullopt, true, false},
    };
    for (const Case& c : ok) {
        auto t = parseTimeRangeOption("--time", c.text);
        ASSERT_TRUE(t) << c.text << ": " << t.error().message;
        EXPECT_EQ(t->begin, c.begin) << c.text;
        EXPECT_EQ(t->end, c.end) << c.text;
        EXPECT_EQ(t->beginRelative, c.beginRelative) << c.text;
        EXPECT_EQ(t->endRelative, c.endRelative) << c.text;
    }
    const std::string syntax =
        "': expected A-B, A- or -B (N: ns of perf time, S.F: seconds, +: after the recording's start; A,B as "
        "perf)";
    for (const char* bad : {"", "-", "100", "a-b", "1e3-2e3", "nan-", "1.-2", "1.0000000001-2", "--5",
                            "1-2-3", "99999999999999999999-", "18446744073.8-", "+-1", "1..2-3"}) {
        const std::string text = std::string("--time '") + bad + syntax;
        // One syntax, one error text: decode, export and report alike.
        EXPECT_EQ(refusal(decodePerf, {"f", "--time", bad}), text) << bad;
        EXPECT_EQ(refusal(parseExportArgs, {"f", "--time", bad}), text) << bad;
        EXPECT_EQ(refusal(parseReportArgs, {"f", "--time", bad}), text) << bad;
    }
    EXPECT_EQ(refusal(decodePerf, {"f", "--time=200-100"}),
              "--time '200-100': the end lies before the begin");

    // Absolute sides land in the window at once; relative ones once the start is known.
    auto d = decodePerf({"f", "--time=+10-500"});
    ASSERT_TRUE(d) << d.error().message;
    auto sel = std::get<PerfDecodeArgs>(d->mode);
    EXPECT_EQ(sel.window.end, 500u);
    ASSERT_TRUE(resolveTime(sel, 1000) ? false : true);  // 1010 > 500: refused
    sel.time->end.reset();
    ASSERT_TRUE(resolveTime(sel, 1000));
    EXPECT_EQ(sel.window.begin, 1010u);
    EXPECT_EQ(sel.window.end, UINT64_MAX);
}

TEST(OptionParser, RealNumbers) {
    EXPECT_DOUBLE_EQ(*parsePositiveRealOption("--duration", "0.25"), 0.25);
    EXPECT_DOUBLE_EQ(*parsePositiveRealOption("--duration", "1e-3"), 0.001);
    for (const char* bad : {"nan", "-nan", "inf", "-inf", "infinity", "", " 1", "1 ", "0x10", "-0", "0"}) {
        auto r = parsePositiveRealOption("--duration", bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.error().message.rfind(std::string("--duration '") + bad + "'", 0), 0u)
            << r.error().message;
    }
}

TEST(OptionParser, DecodeModes) {
    // --pt options take --opt=value too; a lone file is raw trace.
    auto pt = parseDecodeArgs({"--pt=trace.pt", "--mtc-freq=3", "--cpu", "6/85", "--elf=a.out:0x400000"},
                              [](const std::string&) { return DecodeInput::Other; });
    ASSERT_TRUE(pt) << pt.error().message;
    const auto& request = std::get<PtDecodeRequest>(pt->mode);
    EXPECT_EQ(request.tracePath, "trace.pt");
    EXPECT_EQ(request.config.mtcFreq, 3);
    ASSERT_EQ(request.images.size(), 1u);
    EXPECT_EQ(request.images[0].address, 0x400000u);
    EXPECT_EQ(refusal(parsePtDecodeArguments, {"--pt", "t.pt", "--mtc-freq=300"}),
              "--mtc-freq: value 300 too big (at most 255)");
    EXPECT_EQ(refusal(parsePtDecodeArguments, {"--pt", "t.pt", "--time=1"}),
              "option '--time' takes no value (got '--time=1')");
    // The whole --raw value is named, not only its FILE:RANGE part (found by cli_parse_fuzz).
    EXPECT_EQ(
        refusal(parsePtDecodeArguments, {"--pt", "t.pt", "--raw", "code.bin:0x10-0x8:0x1000"}),
        "--raw code.bin:0x10-0x8:0x1000: code.bin:0x10-0x8: empty range 0x10-0x8 (end must lie after begin)");

    // A snapshot folder takes --format only.
    auto snapshot = [](const Args& a) {
        return parseDecodeArgs(a, [](const std::string& p) {
            return p == "snap" ? DecodeInput::EtmSnapshot : DecodeInput::Other;
        });
    };
    auto s = snapshot({"--format=packets", "snap"});
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(std::get<SnapshotDecodeArgs>(s->mode).format, etm::EtmOutputFormat::Packets);
    EXPECT_EQ(refusal(snapshot, {"snap", "--cpu", "0"}),
              "--cpu: not an option for a snapshot directory (snap)");
    // A perf.data with an option only --pt takes: that option is refused, the file not read as raw trace.
    EXPECT_EQ(refusal(decodePerf, {"f.data", "--tcal"}), "unknown option '--tcal'");
}

// Every option a help text names is one its parser takes, and every option of
// the tables is in the help: the two cannot drift apart.
std::set<std::string> helpOptions(const std::string& help) {
    std::set<std::string> names;
    static const std::regex option(
        "(^|[\\s\\[(,|])(--[a-z][a-z0-9:._-]*[a-z0-9]|-[a-zA-Z])(?=[\\s\\[\\]=,|)]|$)");
    for (auto it = std::sregex_iterator(help.begin(), help.end(), option); it != std::sregex_iterator(); ++it)
        names.insert((*it)[2]);
    return names;
}

void expectHelpMatchesParser(const std::string& command, const std::string& help,
                             const std::function<std::string(const Args&)>& refuse,
                             const std::set<std::string>& prose) {
    const auto names = helpOptions(help);
    EXPECT_GT(names.size(), 3u) << command;
    for (const std::string& name : names) {
        if (prose.count(name)) continue;
        // With a value after it and without: neither is an unknown option.
        for (const Args& a : {Args{name, "1"}, Args{name}}) {
            const std::string r = refuse(a);
            EXPECT_EQ(r.find("unknown option"), std::string::npos) << command << " " << name << ": " << r;
        }
    }
}

std::string captured(int (*run)(const std::vector<std::string>&)) {
    std::ostringstream out;
    auto* old = std::cout.rdbuf(out.rdbuf());
    run({"--help"});
    std::cout.rdbuf(old);
    return out.str();
}

TEST(OptionParser, HelpAndParserAgree) {
    // Options of other programs the help texts name in prose (perf's, ptxed's).
    const std::string record = recordHelp();
    expectHelpMatchesParser("record", record, [](const Args& a) { return recordRefusal(a); }, {"--opt"});
    for (const char* o : {"-a, --all-cpus", "-C, --cpu LIST", "-S, --snapshot[=[e]SIZE]",
                          "--control fifo:CTL[,ACK]", "-g  ", "--call-graph MODE"})
        EXPECT_NE(record.find(o), std::string::npos) << o;

    const std::string decode = captured(runDecodeCommand);
    expectHelpMatchesParser("decode", decode,
                            [](const Args& a) {
                                Args full = a;
                                full.push_back("f");
                                // Either parser may own the option: the perf.data one, or --pt's.
                                const std::string perf = refusal(decodePerf, full);
                                const std::string raw = refusal(parsePtDecodeArguments, full);
                                return perf.find("unknown option") != std::string::npos ? raw : perf;
                            },
                            {"-S", "-o", "--jit", "--opt"});
    for (const OptionSpec& s : ptDecodeOptionTable()) {
        // The help names the address filters once: --filter:addrN_cfg for N = 0..3.
        std::string name = std::string("--") + s.longName;
        if (name.rfind("--filter:addr", 0) == 0) name[13] = 'N';
        EXPECT_NE(decode.find(name), std::string::npos) << name;
    }
    for (const OptionSpec& s : decodeSelectionOptions()) {
        const std::string name =
            *s.longName ? std::string("--") + s.longName : std::string("-") + s.shortName;
        EXPECT_NE(decode.find(name), std::string::npos) << name;
        EXPECT_NE(captured(runExportCommand).find(name), std::string::npos) << name;
        EXPECT_NE(captured(runReportCommand).find(name), std::string::npos) << name;
    }
    expectHelpMatchesParser("export", captured(runExportCommand),
                            [](const Args& a) {
                                Args full = a;
                                full.push_back("f");
                                return refusal(parseExportArgs, full);
                            },
                            {"--call-graph", "-g", "-c"});  // perf record's, uniq's
    expectHelpMatchesParser("info", captured(runInfoCommand),
                            [](const Args& a) { return refusal(parseInfoArgs, a); },
                            {"-z"});  // perf record's
    // report's help has the --diff form too, which takes compare's options.
    expectHelpMatchesParser("report", captured(runReportCommand),
                            [](const Args& a) {
                                // --diff: runReportCommand hands the rest to compare's parser.
                                if (a[0] == "--diff") return refusal(parseCompareArgs, {"f", "g"});
                                Args full = a;
                                full.push_back("f");
                                const std::string r = refusal(parseReportArgs, full);
                                if (r.find("unknown option") == std::string::npos) return r;
                                full.push_back("g");
                                return refusal(parseCompareArgs, full);
                            },
                            {"--children", "--call-graph", "-g"});  // perf report's and perf record's
    const auto compareRun = +[](const std::vector<std::string>& a) { return runCompareCommand(a); };
    expectHelpMatchesParser("compare", captured(compareRun),
                            [](const Args& a) {
                                Args full = a;
                                full.push_back("f");
                                full.push_back("g");
                                return refusal(parseCompareArgs, full);
                            },
                            {"--diff"});  // report --diff, the same command
    for (const OptionSpec& s : decodeSelectionOptions()) {
        const std::string name =
            *s.longName ? std::string("--") + s.longName : std::string("-") + s.shortName;
        EXPECT_NE(captured(compareRun).find(name), std::string::npos) << name;
    }
}

}  // namespace

// --json numbers: the shortest text that reads back exactly, and null where JSON
// has no number (a record summary of a capture that never sampled its fill).
TEST(JsonOutput, NumbersReadBackAndNonFiniteIsNull) {
    EXPECT_EQ(jsonNumber(0.0), "0");
    EXPECT_EQ(jsonNumber(2.5), "2.5");
    EXPECT_EQ(jsonNumber(-3.0), "-3");
    EXPECT_EQ(std::stod(jsonNumber(0.1 + 0.2)), 0.1 + 0.2);
    EXPECT_EQ(jsonNumber(std::nan("")), "null");
    EXPECT_EQ(jsonNumber(HUGE_VAL), "null");
    EXPECT_EQ(jsonNumber(-HUGE_VAL), "null");
    EXPECT_EQ(jsonString("a\"b\\c\td"), "\"a\\\"b\\\\c\\td\"");
}

// -S's size is decimal like every other number (perf's base-0 read takes -S010 as 8 bytes).
TEST(OptionParser, SnapshotSizeIsDecimal) {
    auto ten = parseRecordArgs({"-S010", "-e", "intel_pt//"});
    ASSERT_TRUE(ten) << ten.error().message;
    EXPECT_EQ(ten->capture.snapshotBytes, 10u);
    auto big = parseRecordArgs({"--snapshot=e16G", "-e", "intel_pt//"});
    ASSERT_TRUE(big) << big.error().message;
    EXPECT_EQ(big->capture.snapshotBytes, 16ull << 30);
    for (const char* bad :
         {"-S0x10", "-S0", "-S4T", "-S-4", "-S4MM", "-S18446744073709551616", "-Se", "-S17179869184G"}) {
        auto r = parseRecordArgs({bad, "-e", "intel_pt//"});
        if (std::string(bad) == "-Se") {  // 'e' alone: the whole area, one more at the end
            ASSERT_TRUE(r) << r.error().message;
            EXPECT_EQ(r->capture.snapshotBytes, 0u);
            continue;
        }
        ASSERT_FALSE(r) << bad;
        EXPECT_NE(r.error().message.find("bad snapshot size"), std::string::npos) << r.error().message;
    }
}

TEST(OptionParser, WriterBudgetIsASize) {
    auto none = parseRecordArgs({"-a"});
    ASSERT_TRUE(none) << none.error().message;
    EXPECT_FALSE(none->writerBudget) << "no option: the default (a fraction of MemAvailable)";
    auto g = parseRecordArgs({"-a", "--writer-budget", "2G"});
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_EQ(g->writerBudget, std::optional<uint64_t>(2ull << 30));
    auto m = parseRecordArgs({"-a", "--writer-budget=512M"});
    ASSERT_TRUE(m) << m.error().message;
    EXPECT_EQ(m->writerBudget, std::optional<uint64_t>(512ull << 20));
    auto zero = parseRecordArgs({"-a", "--writer-budget", "0"});
    ASSERT_TRUE(zero) << zero.error().message;
    EXPECT_EQ(zero->writerBudget, std::optional<uint64_t>(0));
    for (const char* bad : {"", "x", "1x", "-1", "e4M", "0x10", "2T", "5000000000G"})
        EXPECT_EQ(recordRefusal({"-a", "--writer-budget", bad}),
                  std::string("--writer-budget '") + bad +
                      "': a size in bytes expected, e.g. 512M or 2G (0: no spill)")
            << bad;
}
