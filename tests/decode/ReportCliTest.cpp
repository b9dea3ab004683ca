// SPDX-License-Identifier: GPL-3.0-or-later
// `auxscope report` end to end on a generated Intel PT trace: text, csv and json
// parse and say the same; ranges and thread filters; bad arguments.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <QByteArray>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "TestSupport.h"

namespace fs = std::filesystem;

namespace {

int run(const std::string& command, std::string* out, bool withStderr = false) {
    return auxscope::test_support::runCommand(command, out, withStderr);
}

struct Row {
    uint64_t calls = 0, totalNs = 0, selfNs = 0, totalInsns = 0, selfInsns = 0;
    bool operator==(const Row&) const = default;
};

// CSV with every text field quoted.
std::vector<std::string> csvFields(const std::string& line) {
    std::vector<std::string> out;
    std::string field;
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                field += '"', ++i;
            else if (c == '"')
                quoted = false;
            else
                field += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            out.push_back(field);
            field.clear();
        } else {
            field += c;
        }
    }
    out.push_back(field);
    return out;
}

class ReportCli : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        char tmpl[] = "/tmp/auxscope-report-XXXXXX";
        dir_ = mkdtemp(tmpl);
        file_ = (fs::path(dir_) / "gen.data").string();
        std::string log;
        ASSERT_EQ(
            run(std::string(AUXSCOPE_PTSYNTH) + " -q --generate 1 --seed 9 --max-insns 200000 -o " + file_,
                &log, true),
            0)
            << log;
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
    static std::string report(const std::string& args, int* status = nullptr) {
        std::string out;
        const int s = run(std::string(AUXSCOPE_BIN) + " report " + file_ + " " + args, &out);
        if (status) *status = s;
        return out;
    }
    static inline std::string dir_, file_;
};

TEST_F(ReportCli, TextCsvAndJsonAgree) {
    int status = -1;
    const std::string text = report("--top 0", &status);
    ASSERT_EQ(status, 0) << text;
    const std::string csv = report("--top 0 --format csv", &status);
    ASSERT_EQ(status, 0);
    const std::string json = report("--top 0 --format json --tree", &status);
    ASSERT_EQ(status, 0);

    // CSV: one row per function.
    std::map<std::string, Row> fromCsv;
    std::istringstream cs(csv);
    std::string line;
    std::getline(cs, line);
    EXPECT_EQ(line, "kind,id,parent,depth,function,file,calls,total_ns,self_ns,total_insns,self_insns");
    while (std::getline(cs, line)) {
        auto f = csvFields(line);
        ASSERT_EQ(f.size(), 11u) << line;
        if (f[0] != "function") continue;
        fromCsv[f[4]] = {std::stoull(f[6]), std::stoull(f[7]), std::stoull(f[8]), std::stoull(f[9]),
                         std::stoull(f[10])};
    }
    ASSERT_GT(fromCsv.size(), 10u);

    // JSON: parses; functions equal the CSV's; the tree's roots add up to the instructions.
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &error);
    ASSERT_EQ(error.error, QJsonParseError::NoError) << error.errorString().toStdString();
    const QJsonObject root = doc.object();
    EXPECT_EQ(root["trace"].toString().toStdString(), "Intel PT");
    const uint64_t instructions = uint64_t(root["instructions"].toDouble());
    EXPECT_GT(instructions, 150000u);
    std::map<std::string, Row> fromJson;
    uint64_t selfSum = 0;
    for (const auto& v : root["functions"].toArray()) {
        const QJsonObject o = v.toObject();
        Row r{uint64_t(o["calls"].toDouble()), uint64_t(o["total_ns"].toDouble()),
              uint64_t(o["self_ns"].toDouble()), uint64_t(o["total_insns"].toDouble()),
              uint64_t(o["self_insns"].toDouble())};
        fromJson[o["name"].toString().toStdString()] = r;
        selfSum += r.selfInsns;
    }
    EXPECT_EQ(selfSum, instructions);
    EXPECT_TRUE(fromJson == fromCsv);
    uint64_t rootInsns = 0;
    for (const auto& v : root["tree"].toArray())
        if (v.toObject()["depth"].toInt() == 0) rootInsns += uint64_t(v.toObject()["total_insns"].toDouble());
    EXPECT_EQ(rootInsns, instructions);

    // Text: the same numbers in its columns (self ns, %, total ns, %, calls, self insns, total insns, name).
    std::istringstream ts(text);
    size_t rows = 0;
    bool inTable = false;
    while (std::getline(ts, line)) {
        if (line.find("self insns") != std::string::npos) {
            inTable = true;
            continue;
        }
        if (!inTable || line.empty()) continue;
        std::istringstream ls(line);
        Row r;
        std::string pct1, pct2, name;
        ls >> r.selfNs >> pct1 >> r.totalNs >> pct2 >> r.calls >> r.selfInsns >> r.totalInsns;
        std::getline(ls, name);
        name.erase(0, name.find_first_not_of(' '));
        ASSERT_TRUE(fromCsv.count(name)) << line;
        EXPECT_EQ(fromCsv[name], r) << line;
        ++rows;
    }
    EXPECT_EQ(rows, fromCsv.size());
    EXPECT_NE(text.find("Intel PT, range "), std::string::npos) << text;
}

TEST_F(ReportCli, RangesThreadsAndSorting) {
    // The recording-relative range and the absolute one give the same numbers.
    const std::string json = report("--format json");
    const QJsonObject all = QJsonDocument::fromJson(QByteArray::fromStdString(json)).object();
    const uint64_t start = uint64_t(all["recording_begin"].toDouble()), end = uint64_t(all["end"].toDouble());
    ASSERT_GT(end, start);
    const uint64_t mid = (end - start) / 2;
    const std::string rel = report("--format csv --time +0-+" + std::to_string(mid));
    const std::string abs =
        report("--format csv --time " + std::to_string(start) + "-" + std::to_string(start + mid));
    EXPECT_EQ(rel, abs);
    const std::string rest = report("--format json --time +" + std::to_string(mid) + "-");
    const QJsonObject second = QJsonDocument::fromJson(QByteArray::fromStdString(rest)).object();
    const QJsonObject first =
        QJsonDocument::fromJson(
            QByteArray::fromStdString(report("--format json --time +0-+" + std::to_string(mid))))
            .object();
    EXPECT_EQ(uint64_t(first["instructions"].toDouble()) + uint64_t(second["instructions"].toDouble()),
              uint64_t(all["instructions"].toDouble()));
    // --tid: the generator's one thread, or nothing.
    EXPECT_EQ(report("--format json --tid 4242"), json);
    const QJsonObject none =
        QJsonDocument::fromJson(QByteArray::fromStdString(report("--format json --tid 1"))).object();
    EXPECT_EQ(none["instructions"].toDouble(), 0.0);
    // --sort calls orders by calls.
    const QJsonArray byCalls =
        QJsonDocument::fromJson(QByteArray::fromStdString(report("--format json --sort calls --top 5")))
            .object()["functions"]
            .toArray();
    ASSERT_EQ(byCalls.size(), 5);
    for (int i = 1; i < byCalls.size(); ++i)
        EXPECT_GE(byCalls[i - 1].toObject()["calls"].toDouble(), byCalls[i].toObject()["calls"].toDouble());
}

TEST_F(ReportCli, ErrorsNameTheCause) {
    std::string out;
    EXPECT_EQ(run(std::string(AUXSCOPE_BIN) + " report " + file_ + " --sort fastest", &out, true), 2);
    EXPECT_NE(out.find("--sort fastest: expected self, total, calls, insns or total-insns"),
              std::string::npos)
        << out;
    EXPECT_EQ(run(std::string(AUXSCOPE_BIN) + " report /nonexistent/x.data", &out, true), 1);
    EXPECT_NE(out.find("/nonexistent/x.data"), std::string::npos) << out;
    EXPECT_EQ(run(std::string(AUXSCOPE_BIN) + " report --help", &out, true), 0);
    EXPECT_NE(out.find("+N is N ns after the start of the recording"), std::string::npos) << out;
}

}  // namespace
