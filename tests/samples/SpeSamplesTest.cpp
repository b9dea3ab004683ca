// SPDX-License-Identifier: GPL-3.0-or-later
// Arm SPE records as samples (auxtrace/SpeSamples: SampleProfile's synthetic
// events) and what the SPE views compute (auxtrace/SpeAnalysis: latency
// histogram, memory map, address space), over a perf.data written here that
// maps a real ELF (tests/samples/spe_fixture.c: functions and globals) plus a
// heap and a stack, and SPE records whose every field is known: each result
// is compared with a count made independently from the records.
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "TestSupport.h"
#include "auxtrace/SpeAnalysis.h"
#include "auxtrace/SpeSamples.h"
#include "perfdata/PerfDataReader.h"
#include "perfdata/PerfDataWriter.h"
#include "samples/SampleProfile.h"
#include "sideband/Sideband.h"

using namespace auxscope;
using test_support::runCommand;
using test_support::TempDir;

namespace {

constexpr int32_t kPid = 4242;
constexpr uint64_t kHeap = 0x10000000, kHeapSize = 0x21000;
constexpr uint64_t kStack = 0x7ffff7fde000, kStackSize = 0x21000;

// Symbol values of the fixture (nm), by name.
std::map<std::string, std::pair<uint64_t, uint64_t>> fixtureSymbols() {
    std::string out;
    EXPECT_EQ(runCommand(std::string("nm -S ") + AUXSCOPE_SPE_FIXTURE_ELF, &out), 0) << out;
    std::map<std::string, std::pair<uint64_t, uint64_t>> symbols;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream l(line);
        std::string value, size, type, name;
        if (l >> value >> size >> type >> name)
            symbols[name] = {std::stoull(value, nullptr, 16), std::stoull(size, nullptr, 16)};
    }
    return symbols;
}

struct Fixture {
    TempDir dir{"spe-samples"};
    std::string path;
    std::map<std::string, std::pair<uint64_t, uint64_t>> symbols;
    std::vector<spe::SpeRecord> records;
    std::vector<std::string> functionOf;  // per record: the function its PC is in
};

// A perf.data of the fixture's process: COMM, MMAP2 of the ELF (executable),
// of [heap] and [stack] (data mappings), and the SPE records beside it.
void write(Fixture& fx) {
    fx.symbols = fixtureSymbols();
    for (const char* name : {"spe_load_loop", "spe_store_loop", "main", "spe_counters", "spe_buffer"})
        ASSERT_TRUE(fx.symbols.count(name)) << name;
    fx.path = (fx.dir.path / "spe.data").string();
    PerfDataEventAttr tracking;
    tracking.name = "dummy:u";
    tracking.attr.type = PERF_TYPE_SOFTWARE;
    tracking.attr.config = PERF_COUNT_SW_DUMMY;
    tracking.attr.size = sizeof(perf_event_attr);
    tracking.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
    tracking.attr.sample_id_all = 1;
    tracking.attr.mmap_data = 1;
    tracking.ids = {1};
    auto writer = PerfDataWriter::create(fx.path, {tracking});
    ASSERT_TRUE(writer) << writer.error().message;
    PerfDataWriter& w = **writer;
    SampleIdSpec id{tracking.attr.sample_type, 1, 0};
    auto add = [&](RecordBuilder&& b) {
        auto bytes = b.finish();
        ASSERT_TRUE(w.writeRecord(bytes));
    };
    auto mmap2 = [&](uint64_t start, uint64_t len, uint32_t prot, const std::string& name, uint64_t time) {
        add(std::move(
            RecordBuilder(PERF_RECORD_MMAP2,
                          PERF_RECORD_MISC_USER | (prot & PROT_EXEC ? 0 : PERF_RECORD_MISC_MMAP_DATA))
                .u32(kPid)
                .u32(kPid)
                .u64(start)
                .u64(len)
                .u64(0)
                .u32(0)
                .u32(0)
                .u64(0)
                .u64(0)
                .u32(prot)
                .u32(MAP_PRIVATE)
                .str(name)
                .sampleId(id, kPid, kPid, time)));
    };
    add(std::move(
        RecordBuilder(PERF_RECORD_COMM).u32(kPid).u32(kPid).str("spe_fixture").sampleId(id, kPid, kPid, 10)));
    // The static ELF mapped whole at the link address of its first byte.
    const std::string elf = AUXSCOPE_SPE_FIXTURE_ELF;
    const uint64_t base = fx.symbols["main"].first & ~uint64_t(0x3fffff);
    const uint64_t size = (std::filesystem::file_size(elf) + 0xfff) & ~uint64_t(0xfff);
    // .data/.bss lie past the file's bytes: map enough for them.
    const uint64_t end =
        std::max(base + size, (fx.symbols["spe_buffer"].first + 8192 + 0xfff) & ~uint64_t(0xfff));
    mmap2(base, end - base, PROT_READ | PROT_EXEC, elf, 20);
    mmap2(kHeap, kHeapSize, PROT_READ | PROT_WRITE, "[heap]", 30);
    mmap2(kStack, kStackSize, PROT_READ | PROT_WRITE, "[stack]", 40);
    ASSERT_TRUE(w.finish());

    // The records: loads in spe_load_loop (globals and heap), stores in
    // spe_store_loop (spe_buffer and stack), branches in main, others anywhere.
    std::mt19937_64 rng(31);
    const uint16_t sources[] = {0x0, 0x8, 0x9, 0xa, 0xb};
    for (int i = 0; i < 3000; ++i) {
        spe::SpeRecord r;
        r.time = 1000 + uint64_t(i) * 1000;
        r.timestamp = r.time;
        r.cpu = i % 2;
        r.pid = kPid, r.tid = i % 3 == 0 ? kPid : kPid + 1;
        const int op = int(rng() % 4);
        std::string fn;
        if (op == 0) {
            fn = "spe_load_loop";
            r.opClass = spe::OpClass::LoadStore, r.isLoad = true;
            r.dataVa =
                rng() % 2 ? fx.symbols["spe_counters"].first + 8 * (rng() % 64) : kHeap + rng() % kHeapSize;
        } else if (op == 1) {
            fn = "spe_store_loop";
            r.opClass = spe::OpClass::LoadStore, r.isStore = true;
            r.dataVa =
                rng() % 2 ? fx.symbols["spe_buffer"].first + rng() % 8192 : kStack + rng() % kStackSize;
        } else {
            fn = "main";
            r.opClass = op == 2 ? spe::OpClass::Branch : spe::OpClass::Other, r.isBranch = op == 2;
        }
        r.hasDataVa = op < 2;
        const auto [fnStart, fnSize] = fx.symbols[fn];
        r.pc = fnStart + rng() % std::max<uint64_t>(fnSize, 1), r.hasPc = true;
        if (rng() % 10) {
            r.hasTotalLatency = r.hasIssueLatency = true;
            r.totalLatency = uint16_t(1 + rng() % 3000);
            r.issueLatency = uint16_t(rng() % 40);
        }
        if (op < 2) {
            r.hasDataSource = true;
            r.dataSource = sources[rng() % 5];
            r.hasTranslationLatency = true;
            r.translationLatency = uint16_t(rng() % 100);
        }
        r.hasEvents = true;
        r.events = spe::kEvRetired | (rng() % 3 == 0 ? spe::kEvL1dRefill : 0) |
                   (rng() % 5 == 0 ? spe::kEvLlcMiss : 0) | (rng() % 7 == 0 ? spe::kEvTlbWalk : 0) |
                   (op == 2 && rng() % 4 == 0 ? spe::kEvMispredicted : 0) |
                   (rng() % 11 == 0 ? spe::kEvRemoteAccess : 0);
        fx.records.push_back(r);
        fx.functionOf.push_back(fn);
    }
}

std::shared_ptr<const SampleProfile> loadProfile(const Fixture& fx) {
    auto file = PerfDataReader::open(fx.path);
    EXPECT_TRUE(file) << file.error().message;
    if (!file) return nullptr;
    auto sideband = Sideband::load(*file);
    EXPECT_TRUE(sideband) << sideband.error().message;
    if (!sideband) return nullptr;
    SampleProfileOptions options;
    options.synthetic = std::make_shared<const SyntheticSamples>(speSyntheticSamples(fx.records));
    auto profile =
        SampleProfile::load(*file, std::make_shared<const Sideband>(std::move(*sideband)), options);
    EXPECT_TRUE(profile) << profile.error().message;
    return profile ? *profile : nullptr;
}

}  // namespace

TEST(SpeSamples, EveryRecordIsASampleOfEachOfItsEvents) {
    Fixture fx;
    write(fx);
    const SyntheticSamples s = speSyntheticSamples(fx.records);
    ASSERT_EQ(s.events.size(), size_t(SpeEvent::Count));
    std::map<uint32_t, uint64_t> samples, period;
    for (const SyntheticSample& x : s.samples)
        ++samples[x.event], period[x.event] += x.period;
    for (uint32_t e = 0; e < uint32_t(SpeEvent::Count); ++e) {
        uint64_t n = 0, p = 0;
        for (const spe::SpeRecord& r : fx.records)
            if (speRecordHasEvent(r, SpeEvent(e)))
                ++n, p += SpeEvent(e) == SpeEvent::TotalLatency ? r.totalLatency : 1;
        EXPECT_EQ(samples[e], n) << s.events[e].name;
        EXPECT_EQ(period[e], p) << s.events[e].name;
    }
    EXPECT_EQ(samples[uint32_t(SpeEvent::AllOps)], fx.records.size());
    EXPECT_GT(samples[uint32_t(SpeEvent::Mispredicted)], 0u);
}

TEST(SpeSamples, TopFunctionsOfEachEventMatchTheRecords) {
    Fixture fx;
    write(fx);
    auto profile = loadProfile(fx);
    ASSERT_TRUE(profile);
    EXPECT_EQ(profile->firstSyntheticEvent(), 1u);  // after the file's dummy event
    for (uint32_t e = 0; e < uint32_t(SpeEvent::Count); ++e) {
        const std::string name = speEventName(SpeEvent(e));
        const int event = profile->eventIndex(name);
        ASSERT_GE(event, 0) << name;
        const SampledEvent& ev = profile->events()[size_t(event)];
        EXPECT_EQ(ev.attr, -1);
        std::map<std::string, std::pair<uint64_t, uint64_t>> expected;  // samples, period per function
        for (size_t i = 0; i < fx.records.size(); ++i)
            if (speRecordHasEvent(fx.records[i], SpeEvent(e))) {
                auto& c = expected[fx.functionOf[i]];
                ++c.first;
                c.second += SpeEvent(e) == SpeEvent::TotalLatency ? fx.records[i].totalLatency : 1;
            }
        SampleQuery q;
        q.event = event;
        auto stats = computeSampleRangeStats(*profile, q);
        ASSERT_TRUE(stats) << stats.error().message;
        std::map<std::string, std::pair<uint64_t, uint64_t>> got;
        for (const FunctionStats& f : stats->functions)
            if (f.cost.selfSamples)
                got[profile->functions()[f.function].name] = {f.cost.selfSamples, f.cost.selfPeriod};
        EXPECT_EQ(got, expected) << name;
        // A time range and a thread: only those samples.
        q.begin = 500000, q.end = 1500000, q.tids = {kPid + 1};
        stats = computeSampleRangeStats(*profile, q);
        ASSERT_TRUE(stats);
        uint64_t inRange = 0, counted = 0;
        for (const spe::SpeRecord& r : fx.records)
            inRange +=
                speRecordHasEvent(r, SpeEvent(e)) && r.time >= q.begin && r.time < q.end && r.tid == kPid + 1;
        for (const auto& [tid, t] : stats->threads)
            counted += t.samples;
        EXPECT_EQ(counted, inRange) << name;
    }
}

TEST(SpeAnalysis, LatencyHistogramCountsEachRecordInItsLog2Bucket) {
    Fixture fx;
    write(fx);
    for (auto kind : {SpeLatencyKind::Total, SpeLatencyKind::Issue, SpeLatencyKind::Translation}) {
        SpeSelection sel;
        sel.begin = 200000, sel.end = 2500000, sel.tid = kPid;
        const SpeHistogram h =
            speLatencyHistogram(fx.records, sel, kind, [](uint16_t s) { return std::to_string(s); });
        std::map<std::pair<int, int>, uint64_t> expected;  // (source or -1, bucket) -> records
        uint64_t without = 0;
        for (const spe::SpeRecord& r : fx.records) {
            if (r.time < sel.begin || r.time >= sel.end || r.tid != kPid) continue;
            uint16_t v = 0;
            bool has = kind == SpeLatencyKind::Total   ? (v = r.totalLatency, r.hasTotalLatency)
                       : kind == SpeLatencyKind::Issue ? (v = r.issueLatency, r.hasIssueLatency)
                                                       : (v = r.translationLatency, r.hasTranslationLatency);
            if (!has) {
                ++without;
                continue;
            }
            int bucket = 0;
            while (bucket < 17 && v >= (1u << bucket))
                ++bucket;
            ++expected[{r.hasDataSource ? int(r.dataSource) : -1, bucket}];
        }
        std::map<std::pair<int, int>, uint64_t> got;
        for (const SpeHistogramSeries& s : h.series)
            for (int b = 0; b < kSpeLatencyBuckets; ++b)
                if (s.counts[size_t(b)]) got[{s.hasSource ? int(s.source) : -1, b}] = s.counts[size_t(b)];
        EXPECT_EQ(got, expected) << speLatencyKindName(kind);
        EXPECT_EQ(h.withoutLatency, without);
    }
    EXPECT_EQ(speLatencyBucket(0), 0);
    EXPECT_EQ(speLatencyBucket(1), 1);
    EXPECT_EQ(speLatencyBucket(3), 2);
    EXPECT_EQ(speLatencyBucket(4), 3);
    EXPECT_EQ(speLatencyBucket(65535), 16);
    EXPECT_EQ(speLatencyBucketLabel(3), "4-7");
}

TEST(SpeAnalysis, AddressSpaceNamesGlobalsHeapAndStack) {
    Fixture fx;
    write(fx);
    auto file = PerfDataReader::open(fx.path);
    ASSERT_TRUE(file);
    const SpeAddressSpace space = SpeAddressSpace::load(*file);
    EXPECT_TRUE(space.notes().empty());
    const uint64_t counters = fx.symbols["spe_counters"].first;
    EXPECT_EQ(space.name(kPid, counters), "spe_counters");
    EXPECT_EQ(space.name(kPid, counters + 0x18), "spe_counters+0x18");
    EXPECT_EQ(space.name(kPid, fx.symbols["spe_buffer"].first + 0x100), "spe_buffer+0x100");
    EXPECT_EQ(space.name(kPid, kHeap + 0x10), "[heap]+0x10");
    EXPECT_EQ(space.name(kPid, kStack + 0x20000), "[stack]+0x20000");
    EXPECT_EQ(space.name(kPid, 0x1234), "0x1234");
    // Functions are not data symbols.
    EXPECT_EQ(space.symbolAt(kPid, fx.symbols["main"].first), nullptr);
}

TEST(SpeAnalysis, MemoryMapCellsHoldExactlyTheirAccesses) {
    Fixture fx;
    write(fx);
    const SpeAddressAxis axis(fx.records);
    // The touched pages: of the globals, the heap and the stack only.
    std::set<uint64_t> pages;
    for (const spe::SpeRecord& r : fx.records)
        if (r.hasDataVa) pages.insert(r.dataVa / 4096);
    ASSERT_EQ(axis.pages().size(), pages.size());
    EXPECT_EQ(axis.size(), pages.size() * 4096);
    for (const spe::SpeRecord& r : fx.records)
        if (r.hasDataVa) ASSERT_EQ(axis.address(axis.position(r.dataVa)), r.dataVa);
    SpeMemoryMapQuery q;
    q.begin = 0, q.end = 4000000;
    q.posBegin = 0, q.posEnd = axis.size();
    q.timeBins = 30, q.addressBins = 20;
    const SpeMemoryMap map = speMemoryMap(fx.records, axis, q);
    uint64_t total = 0;
    for (size_t c = 0; c < map.count.size(); ++c) {
        const int t = int(c % 30), a = int(c / 30);
        const std::vector<size_t> cell = speMapCellRecords(fx.records, axis, q, t, a);
        ASSERT_EQ(cell.size(), map.count[c]);
        total += cell.size();
        uint64_t latency = 0;
        for (size_t i : cell) {
            const spe::SpeRecord& r = fx.records[i];
            latency += r.totalLatency;
            // Its bin, computed here from its time and its page's rank.
            const uint64_t rank = uint64_t(std::distance(pages.begin(), pages.find(r.dataVa / 4096)));
            const uint64_t pos = rank * 4096 + r.dataVa % 4096;
            EXPECT_EQ(int(r.time * 30 / 4000000), t);
            EXPECT_EQ(int(pos * 20 / axis.size()), a);
        }
        EXPECT_EQ(latency, map.latencySum[c]);
    }
    uint64_t accesses = 0;
    for (const spe::SpeRecord& r : fx.records)
        accesses += r.hasDataVa && (r.isLoad || r.isStore);
    EXPECT_EQ(total, accesses);
    EXPECT_EQ(map.accesses, accesses);
    // Stores only, one thread, a zoomed address range.
    q.loads = false, q.tid = kPid, q.posBegin = axis.size() / 3 * 2, q.posEnd = axis.size() - 4096;
    const SpeMemoryMap stores = speMemoryMap(fx.records, axis, q);
    uint64_t expected = 0;
    for (const spe::SpeRecord& r : fx.records) {
        if (!r.isStore || r.tid != kPid) continue;
        const uint64_t pos = axis.position(r.dataVa);
        expected += pos >= q.posBegin && pos < q.posEnd;
    }
    EXPECT_EQ(stores.accesses, expected);
    EXPECT_GT(expected, 0u);
}
