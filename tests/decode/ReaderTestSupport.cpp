// SPDX-License-Identifier: GPL-3.0-or-later
#include "ReaderTestSupport.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace auxscope::test {

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/auxscope-reader-test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back(0);
    if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

CommandResult runCommand(const std::string& command, bool withStderr) {
    CommandResult r;
    const std::string cmd = withStderr ? "(" + command + ") 2>&1" : command;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        r.output.append(buf, n);
    int st = pclose(p);
    r.status = (st != -1 && WIFEXITED(st)) ? WEXITSTATUS(st) : -1;
    return r;
}

std::optional<std::string> perfBinary() {
    for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/sbin"}) {
        std::string p = std::string(dir) + "/perf";
        if (access(p.c_str(), X_OK) != 0) continue;
        // Debian's /usr/bin/perf is a wrapper that fails when no perf matches the
        // running kernel; make sure it actually runs.
        if (runCommand(p + " version >/dev/null 2>&1").status == 0) return p;
    }
    return std::nullopt;
}

std::vector<uint8_t> readFileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void writeFileBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

namespace {

bool startsWith(const std::string& s, const char* prefix) {
    return s.rfind(prefix, 0) == 0;
}

// "0x2628@path [0x40]: event: 11"
bool parseEventLine(const std::string& line, uint64_t& offset, std::string& path, uint32_t& type) {
    const size_t at = line.find('@');
    const size_t ev = line.rfind("]: event: ");
    if (at == std::string::npos || ev == std::string::npos || at > ev) return false;
    const std::string off = line.substr(0, at);
    if (off.empty() || off.find_first_not_of("0123456789abcdefx") != std::string::npos) return false;
    offset = std::strtoull(off.c_str(), nullptr, 0);
    const size_t bracket = line.rfind(" [", ev);
    if (bracket == std::string::npos || bracket < at) return false;
    path = line.substr(at + 1, bracket - at - 1);
    type = uint32_t(std::strtoul(line.c_str() + ev + 10, nullptr, 10));
    return true;
}

// "7 1118693749982 0x2628 [0x40]: PERF_RECORD_AUX ..."
bool parseCpuLine(const std::string& line, uint64_t& offset, int64_t& cpu, uint64_t& time) {
    if (line.empty() || !(std::isdigit(static_cast<unsigned char>(line[0])) || line[0] == '-')) return false;
    if (line.find("]: PERF_RECORD_") == std::string::npos) return false;
    long long c = 0;
    unsigned long long t = 0, off = 0;
    unsigned size = 0;
    int n = 0;
    if (std::sscanf(line.c_str(), "%lld %llu 0x%llx [0x%x]:%n", &c, &t, &off, &size, &n) != 4 || n == 0) {
        // One number only: the file's events have TIME but no CPU (or the reverse).
        if (std::sscanf(line.c_str(), "%llu 0x%llx [0x%x]:%n", &t, &off, &size, &n) != 3 || n == 0)
            return false;
        cpu = kCpuNotPrinted;
        time = t;
        offset = off;
        return true;
    }
    cpu = (c == 4294967295LL || c < 0) ? -1 : c;
    time = t;
    offset = off;
    return true;
}

}  // namespace

PerfDump perfReportDump(const std::string& perf, const std::string& file) {
    PerfDump d;
    FILE* p = popen((perf + " report -D -i '" + file + "' 2>/dev/null").c_str(), "r");
    if (!p) {
        d.error = "cannot run perf";
        return d;
    }
    std::string line;
    bool inStats = false;
    char buf[8192];
    while (fgets(buf, sizeof buf, p)) {
        line.assign(buf);
        if (!line.empty() && line.back() == '\n') line.pop_back();
        if (line.empty()) {
            inStats = false;
            continue;
        }
        if (inStats) {
            // "           TOTAL events:       1164"
            const size_t ev = line.find(" events:");
            if (ev == std::string::npos) {
                inStats = false;
                continue;
            }
            std::string name = line.substr(0, ev);
            name.erase(0, name.find_first_not_of(' '));
            d.aggregated[name] = std::strtoull(line.c_str() + ev + 8, nullptr, 10);
            continue;
        }
        if (startsWith(line, "Aggregated stats")) {
            inStats = true;
            continue;
        }
        if (line[0] == '.' || line[0] == '#' || line[0] == ' ') continue;
        uint64_t off = 0;
        uint32_t type = 0;
        std::string path;
        if (line[0] == '0' && parseEventLine(line, off, path, type)) {
            if (path == "(null)")
                ++d.synthesized[type];
            else
                d.records.emplace_back(off, type);
            continue;
        }
        int64_t cpu;
        uint64_t time;
        if (parseCpuLine(line, off, cpu, time)) d.cpuLines.push_back({off, {cpu, time}});
    }
    const int st = pclose(p);
    d.ran = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && d.aggregated.count("TOTAL");
    if (!d.ran) d.error = "perf report -D failed or printed no Aggregated stats";
    return d;
}

std::optional<uint32_t> perfStatsNameToType(const std::string& name) {
    static const std::map<std::string, uint32_t> kNames = {
        {"MMAP", 1},
        {"LOST", 2},
        {"COMM", 3},
        {"EXIT", 4},
        {"THROTTLE", 5},
        {"UNTHROTTLE", 6},
        {"FORK", 7},
        {"READ", 8},
        {"SAMPLE", 9},
        {"MMAP2", 10},
        {"AUX", 11},
        {"ITRACE_START", 12},
        {"LOST_SAMPLES", 13},
        {"SWITCH", 14},
        {"SWITCH_CPU_WIDE", 15},
        {"NAMESPACES", 16},
        {"KSYMBOL", 17},
        {"BPF_EVENT", 18},
        {"CGROUP", 19},
        {"TEXT_POKE", 20},
        {"AUX_OUTPUT_HW_ID", 21},
        {"ATTR", 64},
        {"EVENT_TYPE", 65},
        {"TRACING_DATA", 66},
        {"BUILD_ID", 67},
        {"FINISHED_ROUND", 68},
        {"ID_INDEX", 69},
        {"AUXTRACE_INFO", 70},
        {"AUXTRACE", 71},
        {"AUXTRACE_ERROR", 72},
        {"THREAD_MAP", 73},
        {"CPU_MAP", 74},
        {"STAT_CONFIG", 75},
        {"STAT", 76},
        {"STAT_ROUND", 77},
        {"EVENT_UPDATE", 78},
        {"TIME_CONV", 79},
        {"FEATURE", 80},
        {"COMPRESSED", 81},
        {"FINISHED_INIT", 82},
        {"COMPRESSED2", 83},
    };
    auto it = kNames.find(name);
    if (it == kNames.end()) return std::nullopt;
    return it->second;
}

std::vector<std::pair<uint64_t, uint32_t>> readerRecordList(const PerfDataReader& r, bool skipCompressed) {
    std::vector<std::pair<uint64_t, uint32_t>> v;
    (void)r.forEachRecord([&](const PerfRecord& rec) {
        const uint32_t t = rec.header.type;
        if (!(skipCompressed && (t == perfdata::kRecordCompressed || t == perfdata::kRecordCompressed2)))
            v.emplace_back(rec.fileOffset, t);
        return true;
    });
    return v;
}

std::vector<std::string> compareWithPerf(const PerfDataReader& r, const PerfDump& dump, bool perOffset) {
    std::vector<std::string> diffs;
    const auto& mine = r.summary().recordsByType;

    // 1. perf's Aggregated stats, less the records perf synthesizes itself (simpleperf's
    //    CoreSight files make perf add ATTR records that are not in the file).
    std::map<uint32_t, uint64_t> fromStats;
    for (const auto& [name, n] : dump.aggregated) {
        if (name == "TOTAL") continue;
        auto type = perfStatsNameToType(name);
        if (!type) {
            diffs.push_back("perf reports a record type this test does not know: " + name);
            continue;
        }
        auto syn = dump.synthesized.find(*type);
        const uint64_t synthesized = syn == dump.synthesized.end() ? 0 : syn->second;
        if (n > synthesized) fromStats[*type] = n - synthesized;
    }
    if (fromStats != mine) {
        std::ostringstream o;
        o << "counts by type differ from perf's Aggregated stats:";
        std::map<uint32_t, std::pair<uint64_t, uint64_t>> all;
        for (auto& [t, n] : fromStats)
            all[t].first = n;
        for (auto& [t, n] : mine)
            all[t].second = n;
        for (auto& [t, p] : all)
            if (p.first != p.second)
                o << " " << perfRecordTypeName(t) << " perf " << p.first << " reader " << p.second;
        diffs.push_back(o.str());
    }
    uint64_t total = 0;
    for (auto& [t, n] : fromStats)
        total += n;
    uint64_t synthesizedTotal = 0;
    for (auto& [t, n] : dump.synthesized)
        synthesizedTotal += n;
    if (dump.aggregated.count("TOTAL") && dump.aggregated.at("TOTAL") != total + synthesizedTotal)
        diffs.push_back("perf's TOTAL does not add up (test parsing problem)");

    // 2. perf's per-record lines agree with its own stats (COMPRESSED records get no line).
    std::map<uint32_t, uint64_t> fromLines;
    for (auto& [off, t] : dump.records)
        ++fromLines[t];
    for (uint32_t t : {uint32_t(perfdata::kRecordCompressed), perfdata::kRecordCompressed2}) {
        auto it = fromStats.find(t);
        if (it != fromStats.end()) fromLines[t] += it->second;
    }
    if (fromLines != fromStats) diffs.push_back("perf's per-record lines disagree with its Aggregated stats");
    if (!perOffset) return diffs;

    // perf prints offsets in a pipe stream from the end of its 16-byte header.
    const uint64_t shift = r.mode() == PerfDataMode::Pipe ? 16 : 0;
    auto perfRecords = dump.records;
    for (auto& [off, t] : perfRecords)
        off += shift;

    // 3. The same records at the same offsets. perf prints kernel records when
    //    its time-ordering queue delivers them, so compare the sorted lists.
    auto list = readerRecordList(r, true);
    std::sort(list.begin(), list.end());
    std::sort(perfRecords.begin(), perfRecords.end());
    if (list != perfRecords) {
        size_t i = 0;
        while (i < list.size() && i < perfRecords.size() && list[i] == perfRecords[i])
            ++i;
        std::ostringstream o;
        o << "sorted record lists differ at index " << i << " (reader " << list.size() << " records, perf "
          << perfRecords.size() << ")";
        if (i < list.size()) o << "; reader: " << list[i].second << " at 0x" << std::hex << list[i].first;
        if (i < perfRecords.size())
            o << "; perf: " << std::dec << perfRecords[i].second << " at 0x" << std::hex
              << perfRecords[i].first;
        diffs.push_back(o.str());
    }

    // 4. The CPU of every kernel record: perf prints it before the offset. perf gives
    //    records synthesized with id 0 to its first event and prints "0 0"; the
    //    reader counts them under "no cpu" rather than inventing cpu 0.
    std::map<uint64_t, std::vector<std::pair<int64_t, uint64_t>>> perfCpu;
    for (auto& [off, ct] : dump.cpuLines)
        perfCpu[off + shift].push_back(ct);
    std::map<uint64_t, std::vector<int64_t>> readerCpu;
    (void)r.forEachRecord([&](const PerfRecord& rec) {
        if (rec.header.type < 64) readerCpu[rec.fileOffset].push_back(rec.cpu);
        return true;
    });
    size_t mismatches = 0;
    for (auto& [off, cpus] : readerCpu) {
        auto it = perfCpu.find(off);
        if (it == perfCpu.end() || it->second.size() != cpus.size()) {
            if (mismatches++ < 5)
                diffs.push_back("offset " + std::to_string(off) + ": perf printed " +
                                std::to_string(it == perfCpu.end() ? 0 : it->second.size()) +
                                " cpu lines, the reader has " + std::to_string(cpus.size()) +
                                " kernel records");
            continue;
        }
        for (size_t i = 0; i < cpus.size(); ++i) {
            const auto [pcpu, ptime] = it->second[i];
            if (pcpu == kCpuNotPrinted) continue;
            const bool ok = cpus[i] >= 0 ? pcpu == cpus[i] : (pcpu == -1 || (pcpu == 0 && ptime == 0));
            if (!ok && mismatches++ < 5)
                diffs.push_back("offset " + std::to_string(off) + " record " + std::to_string(i) +
                                ": perf cpu " + std::to_string(pcpu) + ", reader cpu " +
                                std::to_string(cpus[i]));
        }
    }
    if (mismatches > 5) diffs.push_back(std::to_string(mismatches) + " cpu mismatches in all");
    return diffs;
}

}  // namespace auxscope::test
