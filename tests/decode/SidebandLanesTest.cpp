// SPDX-License-Identifier: GPL-3.0-or-later
// The sideband lanes (decode/spans/SidebandLanes) of real captures made here
// (issue 13), Qt-free:
// - CPU lanes from sched:sched_switch tracepoint samples, recorded system-wide
//   with Debian's perf and with auxscope's own capture (--no-switch) around a
//   launched workload with two named threads: the CPU timeline has slices, the
//   workload's threads ran on the CPU lanes for a sane time, and the timeline
//   agrees slice by slice with `perf script -F cpu,time,event,trace` (the oracle);
//   where a capture has switch records too, they win on their CPUs.
// - Capture health from auxscope's statistics section: tiny rings under a
//   syscall storm pinned to one CPU: health points per CPU, and the lost count
//   grows where the LOST records are.
// - CPU notes: a capture of CPU 0 only says CPU 1 was not traced, and gives it a lane.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "PerfEvent.h"
#include "TestSupport.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/TracingData.h"
#include "sideband/Sideband.h"
#include "sideband/SortPieces.h"
#include "spans/SidebandLanes.h"
#include "spans/TimelineData.h"

using namespace auxscope;
using auxscope::test_support::runCommand;
using auxscope::test_support::TempDir;

namespace {

struct Loaded {
    std::unique_ptr<PerfDataReader> file;
    std::unique_ptr<Sideband> sideband;
    std::shared_ptr<const SidebandLanes> lanes;
};

// As TraceFilePage does: the sideband, then its lanes.
Loaded load(const std::string& path) {
    Loaded l;
    auto file = PerfDataReader::open(path);
    EXPECT_TRUE(file) << (file ? "" : file.error().message);
    if (!file) return l;
    l.file = std::make_unique<PerfDataReader>(std::move(file.value()));
    auto sb = Sideband::load(*l.file);
    EXPECT_TRUE(sb) << (sb ? "" : sb.error().message);
    if (!sb) return l;
    l.sideband = std::make_unique<Sideband>(std::move(sb.value()));
    l.lanes = buildSidebandLanes(*l.sideband, {});
    return l;
}

const SidebandLanes::Thread* threadNamed(const SidebandLanes& lanes, const std::string& name) {
    for (const SidebandLanes::Thread& t : lanes.threads)
        if (t.name == name) return &t;
    return nullptr;
}

struct OracleSlice {
    uint64_t start = 0, end = 0;  // end 0: the CPU's last (open until the recording ends)
    int32_t tid = 0;
};

// `perf script -F cpu,time,event,trace --ns` of the sched_switch samples: per CPU,
// the thread each switch names as next runs until the CPU's next switch, which
// switches away from it (prev_pid). Where the next switch names another prev_pid,
// switches went unrecorded between: that run's end is unknown and it is counted
// in *broken instead. *prevPids: every thread a switch switched away from.
std::map<int, std::vector<OracleSlice>> perfScriptSlices(const std::string& path, size_t* events,
                                                         size_t* broken,
                                                         std::set<int32_t>* prevPids = nullptr) {
    std::string out;
    const int rc = runCommand("perf script -i '" + path + "' -F cpu,time,event,trace --ns", &out, false);
    EXPECT_EQ(rc, 0) << out.substr(0, 2000);
    struct Switch {
        uint64_t time;
        int32_t prev, next;
    };
    std::map<int, std::vector<Switch>> switches;
    std::istringstream in(out);
    std::string line;
    *events = 0, *broken = 0;
    while (std::getline(in, line)) {
        if (line.find("sched:sched_switch:") == std::string::npos) continue;
        int cpu = -1;
        unsigned long long sec = 0, nsec = 0;
        if (std::sscanf(line.c_str(), " [%d] %llu.%llu:", &cpu, &sec, &nsec) != 3) {
            ADD_FAILURE() << "perf script line not understood: " << line;
            continue;
        }
        // Names may hold spaces: the numbers are found from the right.
        const size_t next = line.rfind("next_pid="), arrow = line.rfind(" ==> ");
        const size_t prev = arrow == std::string::npos ? arrow : line.rfind("prev_pid=", arrow);
        if (next == std::string::npos || prev == std::string::npos) {
            ADD_FAILURE() << "no prev_pid/next_pid in: " << line;
            continue;
        }
        switches[cpu].push_back({sec * 1000000000ull + nsec, int32_t(std::atoi(line.c_str() + prev + 9)),
                                 int32_t(std::atoi(line.c_str() + next + 9))});
        if (prevPids) prevPids->insert(switches[cpu].back().prev);
        ++*events;
    }
    std::map<int, std::vector<OracleSlice>> slices;
    for (auto& [cpu, v] : switches) {
        std::stable_sort(v.begin(), v.end(),
                         [](const Switch& a, const Switch& b) { return a.time < b.time; });
        for (size_t i = 0; i < v.size(); ++i) {
            if (v[i].next <= 0) continue;
            if (i + 1 == v.size())
                slices[cpu].push_back({v[i].time, 0, v[i].next});
            else if (v[i + 1].prev == v[i].next)
                slices[cpu].push_back({v[i].time, v[i + 1].time, v[i].next});
            else
                ++*broken;
        }
    }
    return slices;
}

// The CPU timeline of `l` against perf script's, slice by slice.
void expectAgreesWithPerfScript(const Loaded& l, const std::string& path) {
    size_t events = 0, broken = 0;
    const auto oracle = perfScriptSlices(path, &events, &broken);
    ASSERT_GT(events, 50u) << "perf script printed too few sched_switch samples";
    EXPECT_EQ(l.sideband->model().tracepointSwitches(), events);
    EXPECT_EQ(l.sideband->model().tracepointBroken(), broken);
    const auto& model = l.sideband->switchSlices();
    ASSERT_FALSE(oracle.empty());
    for (const auto& [cpu, want] : oracle) {
        SCOPED_TRACE("cpu " + std::to_string(cpu));
        ASSERT_TRUE(model.count(cpu));
        const auto& got = model.at(cpu);
        ASSERT_EQ(got.size(), want.size());
        size_t differ = 0;
        for (size_t i = 0; i < want.size(); ++i) {
            const bool same = got[i].start == want[i].start && got[i].tid == want[i].tid &&
                              (want[i].end == 0 ? got[i].end >= got[i].start : got[i].end == want[i].end);
            if (!same && differ++ < 5)
                ADD_FAILURE() << "slice " << i << ": auxscope [" << got[i].start << ", " << got[i].end
                              << ") tid " << got[i].tid << ", perf script [" << want[i].start << ", "
                              << want[i].end << ") tid " << want[i].tid;
        }
        EXPECT_EQ(differ, 0u);
    }
}

// The workload's two spinning threads (~300 ms each) ran on the CPU lanes.
void expectWorkloadOnCpuLanes(const Loaded& l) {
    const SidebandLanes& lanes = *l.lanes;
    EXPECT_FALSE(lanes.cpusWithSwitches.empty());
    for (const char* name : {"tl-spin-a", "tl-spin-b"}) {
        SCOPED_TRACE(name);
        const SidebandLanes::Thread* t = threadNamed(lanes, name);
        ASSERT_TRUE(t) << "no lane for the workload's thread";
        ASSERT_FALSE(t->runs.empty());
        // It spun for 300 ms of wall time: on a busy 2-core machine it gets less of a CPU, never more.
        EXPECT_GT(t->runTime, 20'000'000u);
        EXPECT_LT(t->runTime, 700'000'000u);
        const SidebandLanes::Process* p = lanes.process(t->pid);
        ASSERT_TRUE(p);
        EXPECT_EQ(p->name, "tl_workload");
        for (const SidebandLanes::Run& r : t->runs) {
            EXPECT_LE(r.start, r.end);
            EXPECT_TRUE(std::count(lanes.cpusWithSwitches.begin(), lanes.cpusWithSwitches.end(), r.cpu));
        }
    }
}

class SidebandLanesTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (auto reason = perfCaptureUnavailableReason()) GTEST_SKIP() << "perf_event_open: " << *reason;
        if (access("/sys/kernel/tracing/events/sched/sched_switch/format", R_OK) != 0)
            runCommand("mount -t tracefs nodev /sys/kernel/tracing");
        ASSERT_FALSE(dir_.path.empty());
    }
    std::string path(const std::string& name) const { return (dir_.path / name).string(); }
    TempDir dir_{"sideband-lanes"};
};

// Two workloads at once: four spinning threads on this 2-CPU machine preempt each
// other every few ms, so the capture has switches however quiet the machine is (one
// workload alone may run each thread on a CPU of its own from start to exit: on an
// idle machine that is a few dozen switches, with the first switch-in of a thread
// sometimes not seen).
std::string twoWorkloads(int ms) {
    const std::string one = "'" AUXSCOPE_TL_WORKLOAD "' spin " + std::to_string(ms);
    return "sh -c \"" + one + " & " + one + "; wait\"";
}

bool havePerf() {
    return runCommand("perf --version >/dev/null") == 0;
}

}  // namespace

TEST_F(SidebandLanesTest, PerfSchedSwitchTracepointsGiveCpuLanes) {
    if (!havePerf()) GTEST_SKIP() << "perf is not installed";
    const std::string file = path("perf-sched.data");
    std::string out;
    ASSERT_EQ(
        runCommand("perf record -q -e sched:sched_switch -a -o '" + file + "' -- " + twoWorkloads(300), &out),
        0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    const TraceModel& model = l.sideband->model();
    // The layout came from the file's tracing data (no note), and it is this kernel's.
    for (const std::string& n : model.notes())
        EXPECT_EQ(n.find("where the kernel puts them"), std::string::npos) << n;
    EXPECT_GT(model.tracepointSwitches(), 100u);
    EXPECT_EQ(model.tracepointShort(), 0u);
    EXPECT_EQ(model.tracepointCpus().size(), size_t(sysconf(_SC_NPROCESSORS_ONLN)));
    EXPECT_TRUE(model.samples().empty()) << "sched_switch samples become switches, not sample ticks";
    expectWorkloadOnCpuLanes(l);
    expectAgreesWithPerfScript(l, file);

    // Without usable tracing data (its magic damaged in a copy) the fields are
    // read where the kernel puts them, with a note: the same timeline.
    const PerfRawFeature* td = nullptr;
    for (const PerfRawFeature& raw : l.file->features().raw)
        if (raw.id == perfdata::kFeatTracingData) td = &raw;
    ASSERT_TRUE(td);
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_LT(td->offset, bytes.size());
    bytes[td->offset] = char(bytes[td->offset] ^ 0xff);
    const std::string damagedPath = path("perf-sched-no-tracing-data.data");
    std::ofstream(damagedPath, std::ios::binary) << bytes;
    Loaded damaged = load(damagedPath);
    ASSERT_TRUE(damaged.lanes);
    bool noted = false;
    for (const std::string& n : damaged.sideband->model().notes())
        noted = noted || (n.find("no tracing data magic") != std::string::npos &&
                          n.find("where the kernel puts them") != std::string::npos);
    EXPECT_TRUE(noted) << "a note says the layout was assumed";
    expectAgreesWithPerfScript(damaged, file);
}

// A capture of one command's tasks: only their switches away are recorded, so
// between two samples of a CPU other switches went unseen. Only the runs both
// ends of which were recorded are kept: the workload's own; the rest are noted.
TEST_F(SidebandLanesTest, PerTaskSchedSwitchKeepsOnlyRunsWithBothEnds) {
    if (!havePerf()) GTEST_SKIP() << "perf is not installed";
    const std::string file = path("perf-task.data");
    std::string out;
    ASSERT_EQ(
        runCommand("perf record -q -e sched:sched_switch -o '" + file + "' -- " + twoWorkloads(200), &out), 0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    const TraceModel& model = l.sideband->model();
    EXPECT_GT(model.tracepointSwitches(), 10u);
    EXPECT_GT(model.tracepointBroken(), 0u);
    bool noted = false;
    for (const std::string& n : model.notes())
        noted = noted || n.find("switch away from another thread") != std::string::npos;
    EXPECT_TRUE(noted);
    // Every run kept ends in a switch away from it: a task the capture traced.
    size_t events = 0, broken = 0;
    std::set<int32_t> traced;
    perfScriptSlices(file, &events, &broken, &traced);
    EXPECT_EQ(model.tracepointBroken(), broken);
    ASSERT_FALSE(model.runSlices().empty());
    for (const auto& [cpu, slices] : l.sideband->switchSlices())  // a CPU's last run ends with the recording
        for (size_t i = 0; i + 1 < slices.size(); ++i)
            EXPECT_TRUE(traced.count(slices[i].tid))
                << "tid " << slices[i].tid << " never switched away in the capture";
}

// Pipe mode (perf record -o -): the tracing data comes as a TRACING_DATA record.
TEST_F(SidebandLanesTest, PerfPipeModeSchedSwitch) {
    if (!havePerf()) GTEST_SKIP() << "perf is not installed";
    const std::string file = path("perf-pipe.data");
    std::string out;
    ASSERT_EQ(runCommand("perf record -q -e sched:sched_switch -a -o - -- " + twoWorkloads(200) + " > '" +
                             file + "'",
                         &out),
              0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    ASSERT_EQ(l.file->mode(), PerfDataMode::Pipe);
    for (const std::string& n : l.sideband->model().notes())
        EXPECT_EQ(n.find("where the kernel puts them"), std::string::npos) << n;
    expectWorkloadOnCpuLanes(l);
    expectAgreesWithPerfScript(l, file);
}

TEST_F(SidebandLanesTest, TracingDataFormatMatchesTracefs) {
    if (!havePerf()) GTEST_SKIP() << "perf is not installed";
    const std::string file = path("perf-td.data");
    std::string out;
    ASSERT_EQ(runCommand("perf record -q -e sched:sched_switch -a -o '" + file + "' -- sleep 0.1", &out), 0)
        << out;
    auto reader = PerfDataReader::open(file);
    ASSERT_TRUE(reader);
    const PerfRawFeature* td = nullptr;
    for (const PerfRawFeature& raw : reader->features().raw)
        if (raw.id == perfdata::kFeatTracingData) td = &raw;
    ASSERT_TRUE(td);
    auto parsed = parseTracingData(td->bytes, file);
    ASSERT_TRUE(parsed) << parsed.error().message;
    const TraceEventFormat* fmt = parsed->find("sched", "sched_switch");
    ASSERT_TRUE(fmt);
    std::ifstream in("/sys/kernel/tracing/events/sched/sched_switch/format");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const TraceEventFormat live = parseTraceEventFormat(text, "sched");
    EXPECT_EQ(fmt->id, live.id);
    ASSERT_EQ(fmt->fields.size(), live.fields.size());
    for (size_t i = 0; i < live.fields.size(); ++i) {
        EXPECT_EQ(fmt->fields[i].name, live.fields[i].name);
        EXPECT_EQ(fmt->fields[i].offset, live.fields[i].offset);
        EXPECT_EQ(fmt->fields[i].size, live.fields[i].size);
    }
    // The layout a live capture would take from tracefs.
    auto layout = schedSwitchLayout(live);
    ASSERT_TRUE(layout) << layout.error().message;
    EXPECT_EQ(layout->nextPid, live.field("next_pid")->offset);
    EXPECT_EQ(layout->prevPid, live.field("prev_pid")->offset);
    EXPECT_EQ(layout->nextComm, live.field("next_comm")->offset);
    TraceEventFormat lacking = live;
    lacking.fields.erase(std::remove_if(lacking.fields.begin(), lacking.fields.end(),
                                        [](const TraceField& f) { return f.name == "next_pid"; }),
                         lacking.fields.end());
    auto refused = schedSwitchLayout(lacking);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("lacks next_pid"), std::string::npos) << refused.error().message;
    const TraceField* comm = fmt->field("next_comm");
    ASSERT_TRUE(comm);
    EXPECT_EQ(comm->arrayLength, 16u);
    EXPECT_EQ(uint64_t(fmt->id), reader->attrs().front().attr.config);
    // Cut short anywhere, it is an error naming the place, never a crash.
    for (size_t cut : {size_t(5), size_t(20), td->bytes.size() / 2}) {
        auto bad = parseTracingData(std::span(td->bytes).first(cut), "cut.data");
        if (bad) continue;  // cut past the formats: nothing missing that is read
        EXPECT_NE(bad.error().message.find("cut.data: byte "), std::string::npos) << bad.error().message;
    }
}

TEST_F(SidebandLanesTest, AuxscopeSchedSwitchTracepointsGiveCpuLanes) {
    const std::string file = path("auxscope-sched.data");
    std::string out;
    ASSERT_EQ(runCommand("sh -c \"'" AUXSCOPE_BINARY
                         "' record -a --no-switch -e sched:sched_switch --duration 1.2 -o '" +
                             file + "' > '" + path("rec.log") +
                             "' 2>&1 & sleep 0.4; '" AUXSCOPE_TL_WORKLOAD "' spin 300; wait\"",
                         &out),
              0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    const TraceModel& model = l.sideband->model();
    EXPECT_GT(model.tracepointSwitches(), 100u);
    EXPECT_EQ(model.tracepointCpus().size(), size_t(sysconf(_SC_NPROCESSORS_ONLN)));
    expectWorkloadOnCpuLanes(l);
    if (havePerf()) expectAgreesWithPerfScript(l, file);
}

// With switch records (auxscope records them by default) and sched_switch
// samples, each CPU keeps its switch records' timeline.
TEST_F(SidebandLanesTest, SwitchRecordsWinOverTracepoints) {
    const std::string file = path("both.data");
    std::string out;
    ASSERT_EQ(runCommand("sh -c \"'" AUXSCOPE_BINARY "' record -a -e sched:sched_switch --duration 1.0 -o '" +
                             file + "' > '" + path("rec.log") +
                             "' 2>&1 & sleep 0.3; '" AUXSCOPE_TL_WORKLOAD "' spin 200; wait\"",
                         &out),
              0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    const TraceModel& model = l.sideband->model();
    EXPECT_GT(model.tracepointSwitches(), 100u);
    EXPECT_TRUE(model.tracepointCpus().empty()) << "switch records on every CPU: no tracepoint timeline";
    EXPECT_FALSE(l.lanes->cpusWithSwitches.empty());
    EXPECT_TRUE(threadNamed(*l.lanes, "tl-spin-a"));
}

// A thread no COMM named is named by sched_switch's next_comm; a COMM wins.
TEST(SidebandLanesModel, NextCommNamesThreadsNoCommNamed) {
    TraceModel model;
    model.setSchedSwitchEvent(0, SchedSwitchLayout{});
    EventLayout event;
    event.descIndex = 0;
    std::vector<uint8_t> raw(64, 0);
    auto sw = [&](uint64_t t, int32_t prev, int32_t next, const char* comm) {
        std::memset(raw.data(), 0, raw.size());
        std::memcpy(raw.data() + 24, &prev, 4);
        std::memcpy(raw.data() + 56, &next, 4);
        std::memcpy(raw.data() + 40, comm, std::min<size_t>(std::strlen(comm), 16));
        ParsedRecord r;
        r.type = PERF_RECORD_SAMPLE;
        r.event = &event;
        r.hasSampleId = true;
        r.time = t;
        r.pid = r.tid = prev;
        r.raw = raw;
        model.addRecord(0, r);
    };
    sw(100, 0, 42, "worker-sixteen-c");  // 16 bytes, no NUL
    sw(200, 42, 0, "swapper/0");
    sw(300, 0, 43, "named-by-switch");
    ParsedRecord comm;
    comm.type = PERF_RECORD_COMM;
    comm.pid = comm.tid = 43;
    comm.comm = "named-by-comm";
    model.addRecord(0, comm);
    sw(400, 43, 0, "swapper/0");
    // Switches not recorded between (a capture of some tasks only): 44's run has
    // no known end and is left out, with a note.
    sw(500, 0, 44, "a");
    sw(600, 45, 46, "b");
    sw(700, 46, 0, "swapper/0");
    model.finish();
    EXPECT_EQ(model.tracepointBroken(), 1u);
    ASSERT_EQ(model.notes().size(), 1u);
    EXPECT_NE(model.notes()[0].find("1 sched_switch samples switch away from another thread"),
              std::string::npos);
    EXPECT_EQ(model.threadName(42), "worker-sixteen-c");
    EXPECT_EQ(model.threadName(43), "named-by-comm");
    ASSERT_EQ(model.runSlices().size(), 3u);
    EXPECT_EQ(model.runSlices()[2].tid, 46);
    EXPECT_EQ(model.runSlices()[0].start, 100u);
    EXPECT_EQ(model.runSlices()[0].end, 200u);
    EXPECT_EQ(model.runSlices()[0].tid, 42);
    EXPECT_EQ(model.runSlices()[1].tid, 43);
    // A sample too short for the layout is counted, not read past its end.
    raw.resize(40);
    ParsedRecord shortOne;
    shortOne.type = PERF_RECORD_SAMPLE;
    shortOne.event = &event;
    shortOne.raw = raw;
    TraceModel other;
    other.setSchedSwitchEvent(0, SchedSwitchLayout{});
    other.addRecord(0, shortOne);
    EXPECT_EQ(other.tracepointShort(), 1u);
    EXPECT_EQ(other.tracepointSwitches(), 0u);
}

// Per-CPU streams interleaved, each nearly in order (a few records stamped a
// little early), or in no order at all: the same result as one stable sort.
TEST(SidebandLanesModel, SortCpuStreamsEqualsStableSort) {
    struct Item {
        uint64_t time = 0;
        int cpu = -1;
        int seq = 0;
    };
    std::mt19937_64 rng(7);
    for (int round = 0; round < 40; ++round) {
        const int cpus = 1 + round % 9;
        std::vector<uint64_t> clock(size_t(cpus) + 1, 0);
        std::vector<Item> v;
        for (int i = 0; i < 20000; ++i) {
            const int cpu = int(rng() % uint64_t(cpus + 1)) - 1;  // -1: records that name no CPU
            uint64_t& t = clock[size_t(cpu + 1)];
            t += rng() % 50;
            uint64_t stamp = t;
            if (round % 2 && rng() % 20 == 0)
                stamp -= std::min<uint64_t>(stamp, rng() % 200);  // nested, early
            if (round % 10 == 9) stamp = rng() % 1000;            // no order
            v.push_back({stamp, cpu, i});
        }
        auto less = [](const Item& a, const Item& b) {
            return a.time < b.time || (a.time == b.time && a.cpu < b.cpu);
        };
        std::vector<Item> want = v;
        std::stable_sort(want.begin(), want.end(), less);
        sortCpuStreams(
            v, [](const Item& x) { return x.cpu; }, less);
        ASSERT_EQ(v.size(), want.size());
        for (size_t i = 0; i < v.size(); ++i) {
            ASSERT_FALSE(less(v[i], want[i]) || less(want[i], v[i])) << "round " << round << " at " << i;
            if (v[i].cpu == want[i].cpu) ASSERT_EQ(v[i].seq, want[i].seq) << "stable within a CPU";
        }
    }
}

TEST(SidebandLanesModel, CpuNotesSayOfflineAndNotTraced) {
    CaptureCpus cpus;
    cpus.available = 4;
    cpus.online = {0, 1, 3};
    cpus.traced = {0};
    const auto notes = cpuNotes(cpus);
    EXPECT_EQ(notes.size(), 3u);
    EXPECT_EQ(notes.at(1), "not traced");
    EXPECT_EQ(notes.at(2), "offline");
    EXPECT_EQ(notes.at(3), "not traced");
    cpus.traced.clear();  // a capture that does not say: no "not traced"
    EXPECT_EQ(cpuNotes(cpus).size(), 1u);
}

// 8 KiB rings under a syscall storm pinned to one CPU: health per CPU, lost
// growing where the LOST records are.
TEST_F(SidebandLanesTest, CaptureHealthFromStatisticsSection) {
    const int cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
    const int cpu = cpus > 1 ? 1 : 0;
    const std::string file = path("storm.data");
    std::string out;
    ASSERT_EQ(runCommand("'" AUXSCOPE_BINARY "' record -m 2 -e raw_syscalls:sys_enter -o '" + file +
                             "' -- '" AUXSCOPE_TL_WORKLOAD "' storm 400 " + std::to_string(cpu),
                         &out),
              0)
        << out;
    Loaded l = load(file);
    ASSERT_TRUE(l.lanes);
    const SidebandLanes& lanes = *l.lanes;
    ASSERT_EQ(lanes.health.size(), size_t(cpus)) << "health points on every CPU the capture opened";
    for (const auto& [c, points] : lanes.health) {
        SCOPED_TRACE("cpu " + std::to_string(c));
        ASSERT_GE(points.size(), 4u) << "~20 points a second over ~0.5 s";
        for (size_t i = 1; i < points.size(); ++i) {
            EXPECT_LE(points[i - 1].time, points[i].time);
            EXPECT_LE(points[i - 1].lostRecords, points[i].lostRecords) << "cumulative";
            EXPECT_LE(points[i - 1].bytes, points[i].bytes);
            EXPECT_GE(points[i].mibPerSec, 0.0f);
        }
        for (const SidebandLanes::Health& h : points) {
            EXPECT_EQ(h.auxFill, -1.0f) << "no AUX area";
            EXPECT_GE(h.ringFill, 0.0f);
            EXPECT_LE(h.ringFill, 100.0f);
        }
    }
    const auto& storm = lanes.health.at(cpu);
    // The LOST records of the storm's CPU, against its health: the count grows
    // past each LOST record by the next point, and ends at their sum.
    ASSERT_TRUE(lanes.losses.count(cpu));
    uint64_t lostSum = 0;
    for (const SidebandLanes::Loss& loss : lanes.losses.at(cpu)) {
        if (loss.kind != SidebandLanes::Loss::LostRecords) continue;
        lostSum += loss.count;
        auto after = std::lower_bound(storm.begin(), storm.end(), loss.time,
                                      [](const SidebandLanes::Health& h, uint64_t t) { return h.time < t; });
        ASSERT_NE(after, storm.end()) << "a point after the LOST record at " << loss.time;
        const uint64_t before = after == storm.begin() ? 0 : (after - 1)->lostRecords;
        EXPECT_GT(after->lostRecords, before) << "lost grows at the LOST record at " << loss.time;
    }
    EXPECT_GT(lostSum, 100u);
    EXPECT_EQ(storm.back().lostRecords, lostSum);
    float peakFill = 0, peakRate = 0;
    for (const SidebandLanes::Health& h : storm)
        peakFill = std::max(peakFill, h.ringFill), peakRate = std::max(peakRate, h.mibPerSec);
    EXPECT_GT(peakFill, 50.0f) << "the storm filled its tiny ring";
    EXPECT_GT(peakRate, 0.1f);
    // Elsewhere: little or nothing lost.
    for (const auto& [c, points] : lanes.health)
        if (c != cpu) EXPECT_LT(points.back().lostRecords * 20, lostSum + 20);
}

// A capture of CPU 0 only: CPU 1 "not traced", with a lane; CPU 0 no note.
TEST_F(SidebandLanesTest, CpuZeroCaptureSaysCpuOneNotTraced) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU online";
    std::vector<std::pair<std::string, std::string>> captures = {
        {"auxscope", "'" AUXSCOPE_BINARY "' record -C 0 -e cpu-clock --duration 0.3 -o '" +
                         path("c0-auxscope.data") + "'"}};
    if (havePerf())
        captures.push_back({"perf", "perf record -q -C 0 -e sched:sched_switch -o '" + path("c0-perf.data") +
                                        "' -- sleep 0.3"});
    for (const auto& [who, command] : captures) {
        SCOPED_TRACE(who);
        std::string out;
        ASSERT_EQ(runCommand(command, &out), 0) << out;
        Loaded l = load(path("c0-" + who + ".data"));
        ASSERT_TRUE(l.lanes);
        const SidebandLanes& lanes = *l.lanes;
        EXPECT_EQ(l.sideband->model().captureCpus().traced, std::vector<int>{0});
        ASSERT_TRUE(lanes.cpuNotes.count(1));
        EXPECT_EQ(lanes.cpuNotes.at(1), "not traced");
        EXPECT_FALSE(lanes.cpuNotes.count(0));
        TimelineData data;
        setTimelineLanes(data, l.lanes);
        EXPECT_TRUE(data.cpus.count(0));
        EXPECT_TRUE(data.cpus.count(1)) << "a lane that says why it is empty";
    }
}
