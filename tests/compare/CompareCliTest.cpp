// SPDX-License-Identifier: GPL-3.0-or-later
// `auxscope compare` (and `auxscope report --diff`) end to end:
//   - perf as the oracle: one program built twice (slow_part twice the work in
//     one build), each recorded by perf record -e cpu-clock -c N; the samples
//     per symbol on both sides equal perf diff's (its period columns / N);
//   - exact truth: two auxscope-ptsynth traces of one generated program run for
//     different lengths; per function, both sides and the deltas of calls, self
//     and total instructions equal the generator's truth;
//   - bad input: clear errors that name the file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "PtSynthTruth.h"
#include "TestSupport.h"
#include "TruthCosts.h"

namespace fs = std::filesystem;
using auxscope::test_support::runCommand;

namespace {

const std::string kAuxscope = AUXSCOPE_BIN;

bool inCi() {
    const char* ci = std::getenv("CI");
    return ci && std::string(ci) == "true";
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n'))
        s.pop_back();
    size_t i = 0;
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t'))
        ++i;
    return s.substr(i);
}

std::vector<std::string> split(const std::string& line, char sep) {
    std::vector<std::string> out;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, sep))
        out.push_back(field);
    if (!line.empty() && line.back() == sep) out.push_back("");
    return out;
}

// One CSV line; text fields are quoted (and may hold commas), numbers are not.
std::vector<std::string> csvFields(const std::string& line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"')
            out.back() += '"', ++i;
        else if (c == '"')
            quoted = !quoted;
        else if (c == ',' && !quoted)
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

// compare --format csv: the function rows by (name, file), each column by its heading.
using Row = std::map<std::string, std::string>;
std::map<std::pair<std::string, std::string>, Row> functionRows(const std::string& csv) {
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    const auto heads = csvFields(line);
    std::map<std::pair<std::string, std::string>, Row> out;
    while (std::getline(in, line)) {
        const auto f = csvFields(line);
        if (f.size() != heads.size() || f[0] != "function") continue;
        Row row;
        for (size_t i = 0; i < f.size(); ++i)
            row[heads[i]] = f[i];
        out[{row["function"], row["file"]}] = row;
    }
    return out;
}

uint64_t u64(const Row& r, const std::string& col) {
    auto it = r.find(col);
    EXPECT_NE(it, r.end()) << col;
    return it == r.end() ? 0 : std::stoull(it->second);
}
int64_t i64(const Row& r, const std::string& col) {
    auto it = r.find(col);
    EXPECT_NE(it, r.end()) << col;
    return it == r.end() ? 0 : std::stoll(it->second);
}

// perf record -e EVENT -c PERIOD of `program`; "" when it worked, else why not.
std::string perfRecord(const std::string& event, uint64_t period, const std::string& program,
                       const fs::path& out) {
    std::string log;
    const int rc = runCommand("perf record -q -e " + event + " -c " + std::to_string(period) + " -o '" +
                                  out.string() + "' -- " + program,
                              &log);
    if (rc != 0 || !fs::exists(out))
        return "perf record -e " + event + " failed (exit " + std::to_string(rc) + "): " + log;
    return "";
}

#define SKIP_UNLESS_CI(why)                                   \
    do {                                                      \
        if (inCi()) FAIL() << (why) << " (CI=true: no skip)"; \
        GTEST_SKIP() << (why);                                \
    } while (0)

constexpr uint64_t kPeriod = 100000;  // cpu-clock: one sample per 100 us of CPU time

struct PerfFiles {
    auxscope::test_support::TempDir dir{"compare-perf"};
    fs::path fast, slow;
    std::string why;  // why not ("" when recorded)
};

PerfFiles& perfFiles() {
    static PerfFiles f;
    static const bool recorded = [] {
        f.fast = f.dir.path / "fast.data";
        f.slow = f.dir.path / "slow.data";
        if (runCommand("perf --version") != 0) {
            f.why = "perf is not installed";
            return false;
        }
        f.why = perfRecord("cpu-clock", kPeriod, std::string(AUXSCOPE_COMPARE_FAST) + " 100", f.fast);
        if (f.why.empty())
            f.why = perfRecord("cpu-clock", kPeriod, std::string(AUXSCOPE_COMPARE_SLOW) + " 100", f.slow);
        return f.why.empty();
    }();
    (void)recorded;
    return f;
}

}  // namespace

// The per-symbol samples of both files equal perf diff's, symbol by symbol.
TEST(CompareCli, SampleCountsEqualPerfDiff) {
    PerfFiles& f = perfFiles();
    if (!f.why.empty()) SKIP_UNLESS_CI(f.why);
    // perf diff: baseline %, A's period, delta, B's period, dso, symbol.
    std::string diff;
    ASSERT_EQ(runCommand("perf diff --period --percentage absolute -s dso,sym -t ';' '" + f.fast.string() +
                             "' '" + f.slow.string() + "'",
                         &diff, false),
              0)
        << diff;
    std::map<std::pair<std::string, std::string>, std::pair<uint64_t, uint64_t>> perf;
    std::map<std::string, std::pair<uint64_t, uint64_t>> perfUnknown;  // by image
    std::istringstream in(diff);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto cols = split(line, ';');
        ASSERT_EQ(cols.size(), 6u) << line;
        std::string sym = trim(cols[5]);
        if (sym.size() > 4 && sym[0] == '[' && sym[2] == ']') sym = sym.substr(4);  // "[.] name"
        const std::string a = trim(cols[1]), b = trim(cols[3]);
        const uint64_t pa = a.empty() ? 0 : std::stoull(a), pb = b.empty() ? 0 : std::stoull(b);
        ASSERT_EQ(pa % kPeriod, 0u) << line;
        ASSERT_EQ(pb % kPeriod, 0u) << line;
        // An address perf found no symbol for ("0x000000000001462a" in an ld.so
        // without its debug file): ours is the image's "[unknown]" row; summed per image.
        if (sym.rfind("0x", 0) == 0) {
            auto& u = perfUnknown[trim(cols[4])];
            u.first += pa / kPeriod, u.second += pb / kPeriod;
            continue;
        }
        perf[{sym, trim(cols[4])}] = {pa / kPeriod, pb / kPeriod};
    }
    ASSERT_TRUE(perf.count({"slow_part", "compare_prog"})) << diff;
    ASSERT_TRUE(perf.count({"fixed_part", "compare_prog"})) << diff;

    // perf diff counts a sample in the function an inlined frame sits in: --no-inline.
    std::string csv;
    ASSERT_EQ(runCommand(kAuxscope + " compare '" + f.fast.string() + "' '" + f.slow.string() +
                             "' --format csv --limit 0 --no-inline",
                         &csv, false),
              0)
        << csv;
    const auto rows = functionRows(csv);
    for (const auto& [key, counts] : perf) {
        auto it = rows.find(key);
        ASSERT_NE(it, rows.end()) << key.first << " in " << key.second
                                  << " is in perf diff, not in auxscope compare";
        EXPECT_EQ(u64(it->second, "a_self_samples"), counts.first) << key.first << " [" << key.second << "]";
        EXPECT_EQ(u64(it->second, "b_self_samples"), counts.second) << key.first << " [" << key.second << "]";
        EXPECT_EQ(i64(it->second, "delta_self_samples"), int64_t(counts.second) - int64_t(counts.first))
            << key.first;
        EXPECT_EQ(u64(it->second, "a_self_period"), counts.first * kPeriod) << key.first;
    }
    std::cout << perf.size() << " symbols of perf diff compared, sample for sample\n";
    // perf's unresolved addresses of an image: our "[unknown]" row of it, as many samples.
    auto unknownRow = [](const std::pair<std::string, std::string>& key) {
        return key.first.rfind("[unknown]", 0) == 0;
    };
    for (const auto& [dso, counts] : perfUnknown) {
        uint64_t a = 0, b = 0;
        for (const auto& [key, row] : rows)
            if (key.second == dso && unknownRow(key))
                a += u64(row, "a_self_samples"), b += u64(row, "b_self_samples");
        EXPECT_EQ(a, counts.first) << "samples at addresses without a symbol in " << dso;
        EXPECT_EQ(b, counts.second) << "samples at addresses without a symbol in " << dso;
    }
    // And nothing with samples that perf diff does not list.
    for (const auto& [key, row] : rows) {
        if (unknownRow(key) && perfUnknown.count(key.second)) continue;
        if (u64(row, "a_self_samples") + u64(row, "b_self_samples") > 0) {
            EXPECT_TRUE(perf.count(key))
                << key.first << " [" << key.second << "] has samples perf diff does not show";
        }
    }
    // The change: slow_part about twice the samples, fixed_part about the same.
    const auto& slow = perf[{"slow_part", "compare_prog"}];
    const auto& fixed = perf[{"fixed_part", "compare_prog"}];
    EXPECT_GT(double(slow.second), 1.6 * double(slow.first));
    EXPECT_LT(double(fixed.second), 1.3 * double(fixed.first));

    // report --diff is the same code path: the same output.
    std::string viaReport;
    ASSERT_EQ(runCommand(kAuxscope + " report --diff '" + f.fast.string() + "' '" + f.slow.string() +
                             "' --format csv --limit 0 --no-inline",
                         &viaReport, false),
              0);
    EXPECT_EQ(viaReport, csv);
}

// Per run: B scaled to A's total period; the totals then agree.
TEST(CompareCli, SamplesNormalisedPerRun) {
    PerfFiles& f = perfFiles();
    if (!f.why.empty()) SKIP_UNLESS_CI(f.why);
    std::string text;
    ASSERT_EQ(runCommand(kAuxscope + " compare '" + f.fast.string() + "' '" + f.slow.string() +
                             "' --normalize total --sort self:pct",
                         &text, false),
              0)
        << text;
    EXPECT_NE(text.find("normalised: total (A x 1, B x 0."), std::string::npos) << text;
    EXPECT_NE(text.find("(+0.0%)"), std::string::npos) << text;  // the totals, after scaling
}

// Bad input: each error names the file and the cause; nothing crashes.
TEST(CompareCli, BadInputNamesTheFile) {
    auxscope::test_support::TempDir dir("compare-bad");
    const std::string junk = (dir.path / "junk.data").string();
    ASSERT_EQ(runCommand("printf 'not a perf file' > '" + junk + "'"), 0);
    std::string out;
    // A missing file.
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + junk + "' /nonexistent/b.data", &out), 1);
    EXPECT_NE(out.find("auxscope compare: " + junk), std::string::npos) << out;
    EXPECT_EQ(
        runCommand(kAuxscope + " compare " + std::string(AUXSCOPE_COMPARE_FAST) + ".nothing '" + junk + "'",
                   &out),
        1);
    EXPECT_NE(out.find(".nothing"), std::string::npos) << out;
    // Two ptsynth traces, A good; B missing or not a perf.data.
    const fs::path trace = dir.path / "t.data";
    ASSERT_EQ(runCommand(std::string(AUXSCOPE_PTSYNTH) + " --generate 1 --seed 2 --max-insns 20000 -q -o '" +
                         trace.string() + "'"),
              0);
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + trace.string() + "' /nonexistent/b.data", &out), 1);
    EXPECT_NE(out.find("/nonexistent/b.data"), std::string::npos) << out;
    EXPECT_EQ(runCommand(kAuxscope + " report --diff '" + trace.string() + "' '" + junk + "'", &out), 1);
    EXPECT_NE(out.find("auxscope report --diff: " + junk), std::string::npos) << out;
    // Arguments.
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + trace.string() + "'", &out), 2);
    EXPECT_NE(out.find("only one file"), std::string::npos) << out;
    EXPECT_EQ(runCommand(kAuxscope + " compare a b --normalize twice", &out), 2);
    EXPECT_NE(out.find("--normalize twice"), std::string::npos) << out;
    EXPECT_EQ(
        runCommand(kAuxscope + " compare '" + trace.string() + "' '" + trace.string() + "' --sort samples",
                   &out),
        2);
    EXPECT_NE(out.find("--sort samples"), std::string::npos) << out;
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + trace.string() + "' '" + trace.string() +
                             "' --normalize per-call=no_such_function",
                         &out),
              1);
    EXPECT_NE(out.find("no_such_function"), std::string::npos) << out;

    // With perf: a trace against samples, two different events, an event a file
    // lacks, and a file with nothing to compare (no trace, no samples).
    PerfFiles& f = perfFiles();
    if (!f.why.empty()) SKIP_UNLESS_CI(f.why);
    const std::string cpu = f.fast.string();
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + trace.string() + "' '" + cpu + "'", &out), 1);
    EXPECT_NE(out.find("count different things"), std::string::npos) << out;
    EXPECT_NE(out.find(trace.string()), std::string::npos) << out;
    EXPECT_NE(out.find(cpu), std::string::npos) << out;
    const fs::path task = dir.path / "task.data";
    std::string why = perfRecord("task-clock", kPeriod, std::string(AUXSCOPE_COMPARE_FAST) + " 10", task);
    ASSERT_EQ(why, "");
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + cpu + "' '" + task.string() + "'", &out), 1);
    EXPECT_NE(out.find("samples of cpu-clock, B has samples of task-clock"), std::string::npos) << out;
    EXPECT_EQ(
        runCommand(kAuxscope + " compare '" + cpu + "' '" + task.string() + "' --event cpu-clock", &out), 1);
    EXPECT_NE(out.find(task.string() + ": no sampled event named cpu-clock (the file samples task-clock)"),
              std::string::npos)
        << out;
    const fs::path none = dir.path / "none.data";
    why = perfRecord("cpu-clock", 1000000000000ull, "true", none);
    ASSERT_EQ(why, "");
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + cpu + "' '" + none.string() + "'", &out), 1);
    EXPECT_NE(out.find(none.string() + ": no samples to report"), std::string::npos) << out;
    EXPECT_EQ(runCommand(kAuxscope + " compare '" + cpu + "' '" + cpu + "' --normalize per-call=main", &out),
              1);
    EXPECT_NE(out.find("samples do not count calls"), std::string::npos) << out;
}

namespace {

using auxscope::test_support::TruthCosts;

// A generated program (seed 7) run for `insns` instructions, written as
// FOLDER/NAME.data (its code as FOLDER/NAME-code.elf); its truth's costs.
TruthCosts synthesize(const fs::path& folder, const std::string& name, uint64_t insns) {
    fs::create_directories(folder);
    const fs::path out = folder / (name + ".data");
    std::string log;
    EXPECT_EQ(runCommand(std::string(AUXSCOPE_PTSYNTH) + " --generate 1 --seed 7 --truth-list --max-insns " +
                             std::to_string(insns) + " -q -o '" + out.string() + "'",
                         &log),
              0)
        << log;
    auto truth = auxscope::ptsynth::Truth::read(out.string() + ".truth");
    EXPECT_TRUE(truth.ok()) << (truth.ok() ? "" : truth.error().message);
    if (!truth.ok()) return {};
    const auxscope::test_support::TruthProgram program(*truth);
    TruthCosts costs;
    auxscope::test_support::addTruthCosts(*truth, program, 0, truth->ips.size(), costs);
    return costs;
}

}  // namespace

// Two traces of one program, the second run longer: both sides and the deltas
// of calls and instructions per function equal the truth's exactly.
TEST(CompareCli, TraceDeltasEqualTruth) {
    auxscope::test_support::TempDir dir("compare-truth");
    const TruthCosts a = synthesize(dir.path / "a", "run", 150000);
    const TruthCosts b = synthesize(dir.path / "b", "run", 400000);
    ASSERT_FALSE(a.empty());
    std::string csv;
    const std::string files =
        " '" + (dir.path / "a" / "run.data").string() + "' '" + (dir.path / "b" / "run.data").string() + "'";
    ASSERT_EQ(
        runCommand(kAuxscope + " compare" + files + " --format csv --limit 0 --sort calls", &csv, false), 0)
        << csv;
    const auto rows = functionRows(csv);
    size_t checked = 0, changed = 0, onlyB = 0;
    std::map<std::string, const Row*> byName;
    for (const auto& [key, row] : rows)
        byName[key.first] = &row;
    auto all = b;
    for (const auto& [name, cost] : a)
        all[name];
    for (const auto& [name, unused] : all) {
        const auto ta = a.count(name) ? a.at(name) : auxscope::test_support::TruthCost{};
        const auto tb = b.count(name) ? b.at(name) : auxscope::test_support::TruthCost{};
        if (ta == auxscope::test_support::TruthCost{} && tb == auxscope::test_support::TruthCost{}) continue;
        ASSERT_TRUE(byName.count(name)) << name << " is in the truth, not in the comparison";
        const Row& r = *byName[name];
        EXPECT_EQ(r.at("file"), "run-code.elf") << name;
        EXPECT_EQ(u64(r, "a_calls"), ta.calls) << name;
        EXPECT_EQ(u64(r, "b_calls"), tb.calls) << name;
        EXPECT_EQ(i64(r, "delta_calls"), int64_t(tb.calls) - int64_t(ta.calls)) << name;
        EXPECT_EQ(u64(r, "a_self_insns"), ta.selfInsns) << name;
        EXPECT_EQ(u64(r, "b_self_insns"), tb.selfInsns) << name;
        EXPECT_EQ(i64(r, "delta_self_insns"), int64_t(tb.selfInsns) - int64_t(ta.selfInsns)) << name;
        EXPECT_EQ(u64(r, "a_total_insns"), ta.totalInsns) << name;
        EXPECT_EQ(u64(r, "b_total_insns"), tb.totalInsns) << name;
        EXPECT_EQ(i64(r, "delta_total_insns"), int64_t(tb.totalInsns) - int64_t(ta.totalInsns)) << name;
        const bool inA = ta.selfInsns > 0 || ta.calls > 0, inB = tb.selfInsns > 0 || tb.calls > 0;
        EXPECT_EQ(r.at("side"), inA && inB ? "both" : inA ? "a" : "b") << name;
        changed += ta != tb;
        onlyB += !inA && inB;
        ++checked;
    }
    EXPECT_GT(checked, 10u);
    EXPECT_GT(changed, 5u) << "the longer run should change several functions";
    std::cout << checked << " functions checked against the truth, " << changed << " changed, " << onlyB
              << " only in B\n";

    // By name only: the same deltas when the binaries' names differ; by name
    // and binary nothing matches.
    synthesize(dir.path / "c", "other", 400000);
    const std::string renamed = " '" + (dir.path / "a" / "run.data").string() + "' '" +
                                (dir.path / "c" / "other.data").string() + "'";
    std::string strict, loose;
    ASSERT_EQ(runCommand(kAuxscope + " compare" + renamed + " --format csv --limit 0", &strict, false), 0);
    for (const auto& [key, row] : functionRows(strict))
        EXPECT_NE(row.at("side"), "both") << key.first;
    ASSERT_EQ(
        runCommand(kAuxscope + " compare" + renamed + " --by-symbol --format csv --limit 0", &loose, false),
        0);
    const auto looseRows = functionRows(loose);
    for (const auto& [name, tb] : b) {
        if (!a.count(name)) continue;
        const Row* r = nullptr;
        for (const auto& [key, row] : looseRows)
            if (key.first == name) r = &row;
        ASSERT_NE(r, nullptr) << name;
        EXPECT_EQ(i64(*r, "delta_calls"), int64_t(tb.calls) - int64_t(a.at(name).calls)) << name;
        EXPECT_EQ(i64(*r, "delta_total_insns"), int64_t(tb.totalInsns) - int64_t(a.at(name).totalInsns))
            << name;
    }

    // Per call of a function both runs call: that function's calls are 1 a side.
    std::string perCallName;
    for (const auto& [name, tb] : b)
        if (a.count(name) && a.at(name).calls > 0 && tb.calls > a.at(name).calls) perCallName = name;
    ASSERT_FALSE(perCallName.empty());
    std::string pc;
    ASSERT_EQ(runCommand(kAuxscope + " compare" + files +
                             " --format csv --limit 0 --normalize per-call=" + perCallName,
                         &pc, false),
              0)
        << pc;
    const auto pcRows = functionRows(pc);
    const Row& r = pcRows.at({perCallName, "run-code.elf"});
    EXPECT_EQ(r.at("a_calls"), "1.00");
    EXPECT_EQ(r.at("b_calls"), "1.00");
    char want[64];
    std::snprintf(want, sizeof want, "%.2f",
                  double(b.at(perCallName).selfInsns) / double(b.at(perCallName).calls));
    EXPECT_EQ(r.at("b_self_insns"), want);

    // The merged tree: its root children's totals add up to each side's instructions.
    std::string tree;
    ASSERT_EQ(runCommand(kAuxscope + " compare" + files + " --format csv --limit 1 --tree --bottom-up", &tree,
                         false),
              0);
    uint64_t rootA = 0, rootB = 0, insA = 0, insB = 0;
    for (const auto& [name, c] : a)
        insA += c.selfInsns;
    for (const auto& [name, c] : b)
        insB += c.selfInsns;
    std::istringstream lines(tree);
    std::string line;
    std::getline(lines, line);
    const auto heads = csvFields(line);
    size_t bottomUp = 0;
    while (std::getline(lines, line)) {
        auto fl = csvFields(line);
        Row row;
        for (size_t i = 0; i < fl.size() && i < heads.size(); ++i)
            row[heads[i]] = fl[i];
        if (row["kind"] == "node" && row["depth"] == "0") {
            rootA += u64(row, "a_total_insns");
            rootB += u64(row, "b_total_insns");
        }
        bottomUp += row["kind"] == "bottom-up";
    }
    EXPECT_EQ(rootA, insA);
    EXPECT_EQ(rootB, insB);
    EXPECT_GT(bottomUp, 0u);
}

// A file against itself: every function on both sides, no change; --time-b
// takes B's range alone (two ranges of one file).
TEST(CompareCli, OneFileTwiceAndTwoRanges) {
    auxscope::test_support::TempDir dir("compare-ranges");
    const TruthCosts truth = synthesize(dir.path, "run", 200000);
    ASSERT_FALSE(truth.empty());
    const std::string file = "'" + (dir.path / "run.data").string() + "'";
    std::string csv;
    ASSERT_EQ(
        runCommand(kAuxscope + " compare " + file + " " + file + " --format csv --limit 0", &csv, false), 0)
        << csv;
    const auto rows = functionRows(csv);
    EXPECT_GT(rows.size(), 10u);
    for (const auto& [key, row] : rows) {
        EXPECT_EQ(row.at("side"), "both") << key.first;
        EXPECT_EQ(row.at("delta_calls"), "0") << key.first;
        EXPECT_EQ(row.at("delta_self_insns"), "0") << key.first;
        EXPECT_EQ(row.at("delta_total_ns"), "0") << key.first;
        EXPECT_EQ(row.at("a_self_insns"), row.at("b_self_insns")) << key.first;
    }
    // The first half against the second: B's range is --time-b's, A's --time's.
    std::string json;
    ASSERT_EQ(runCommand(kAuxscope + " compare " + file + " " + file +
                             " --time +0-+50000 --time-b +50000- --format json",
                         &json, false),
              0)
        << json;
    const auto field = [&](const std::string& side, const std::string& name) {
        const size_t at = json.find("\"" + side + "\":{");
        const size_t f = json.find("\"" + name + "\":", at);
        return std::stoull(json.substr(f + name.size() + 3));
    };
    EXPECT_EQ(field("a", "begin"), field("a", "recording_begin"));
    EXPECT_EQ(field("a", "end"), field("a", "recording_begin") + 50000);
    EXPECT_EQ(field("b", "begin"), field("b", "recording_begin") + 50000);
    EXPECT_GT(field("b", "end"), field("b", "begin"));
    std::string bad;
    EXPECT_EQ(runCommand(kAuxscope + " compare " + file + " " + file + " --time-b 5", &bad), 2);
    EXPECT_NE(bad.find("--time-b '5'"), std::string::npos) << bad;
    EXPECT_EQ(runCommand(kAuxscope + " compare " + file + " " + file + " --time-b +99999999999-", &bad), 2);
    EXPECT_NE(bad.find("run.data: the range starts at"), std::string::npos) << bad;
    EXPECT_NE(bad.find("after the recording's end"), std::string::npos) << bad;
}

// Two threads of one file (--tid, --tid-b): each side's instructions and each
// function's calls are its thread's in the truth of auxscope-ptsynth --example.
TEST(CompareCli, TwoThreadsEqualTruth) {
    auxscope::test_support::TempDir dir("compare-threads");
    const fs::path file = dir.path / "ex.data";
    std::string log;
    ASSERT_EQ(runCommand(std::string(AUXSCOPE_PTSYNTH) + " --example -q -o '" + file.string() + "'", &log), 0)
        << log;
    // "function ENTRY N NAME"; "thread TID CPU INSTRUCTIONS ..."; "thread-function TID ENTRY CALLS".
    std::map<std::string, std::string> nameAt;
    std::map<int, uint64_t> insns;
    std::map<int, std::map<std::string, uint64_t>> calls;  // by thread, function name
    std::ifstream truth(file.string() + ".truth");
    std::string line;
    while (std::getline(truth, line)) {
        auto f = split(line, ' ');
        if (f.size() > 3 && f[0] == "function") nameAt[f[1]] = f[3];
        if (f.size() > 3 && f[0] == "thread") insns[std::stoi(f[1])] = std::stoull(f[3]);
        if (f.size() > 3 && f[0] == "thread-function")
            calls[std::stoi(f[1])][nameAt.at(f[2])] = std::stoull(f[3]);
    }
    ASSERT_GE(insns.size(), 3u);
    const int ta = std::next(insns.begin())->first, tb = std::next(insns.begin(), 2)->first;
    ASSERT_NE(insns[ta], insns[tb]);
    const std::string both = " '" + file.string() + "' '" + file.string() + "' --tid " + std::to_string(ta) +
                             " --tid-b " + std::to_string(tb);
    std::string json;
    ASSERT_EQ(runCommand(kAuxscope + " compare" + both + " --format json --limit 1", &json, false), 0)
        << json;
    auto number = [&](const std::string& after, const std::string& name) {
        const size_t at = json.find(after);
        const size_t f = json.find("\"" + name + "\":", at);
        EXPECT_NE(f, std::string::npos) << after << " " << name;
        return f == std::string::npos ? 0 : std::stoull(json.substr(f + name.size() + 3));
    };
    EXPECT_EQ(number("\"a\":{\"file\"", "tid"), uint64_t(ta));
    EXPECT_EQ(number("\"b\":{\"file\"", "tid"), uint64_t(tb));
    EXPECT_EQ(number("\"totals\":{\"a\":{", "total_insns"), insns[ta]);
    const size_t totalsB = json.find("\"b\":{", json.find("\"totals\":{"));
    ASSERT_NE(totalsB, std::string::npos);
    EXPECT_EQ(std::stoull(json.substr(json.find("\"total_insns\":", totalsB) + 14)), insns[tb]);

    std::string csv;
    ASSERT_EQ(runCommand(kAuxscope + " compare" + both + " --format csv --limit 0", &csv, false), 0) << csv;
    size_t checked = 0;
    for (const auto& [key, row] : functionRows(csv)) {
        // A thread's first function was running when its trace began: not a call.
        if (key.first.starts_with("thread_main_")) continue;
        const uint64_t ca = calls[ta].count(key.first) ? calls[ta][key.first] : 0;
        const uint64_t cb = calls[tb].count(key.first) ? calls[tb][key.first] : 0;
        EXPECT_EQ(u64(row, "a_calls"), ca) << key.first;
        EXPECT_EQ(u64(row, "b_calls"), cb) << key.first;
        EXPECT_EQ(i64(row, "delta_calls"), int64_t(cb) - int64_t(ca)) << key.first;
        ++checked;
    }
    EXPECT_GT(checked, 20u);
}
