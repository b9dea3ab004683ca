// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeSynthGenerator.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace auxscope::spesynth {
namespace {

using spe::OpClass;
using spe::SpeRecord;

constexpr uint64_t kEpochTicks = 4800;  // 200 us of the 24 MHz counter: a time slice
constexpr uint64_t kMeanGap = 8;        // ticks between two samples of a CPU
constexpr int kRoles = 3;               // thread roles: indexer, compute, I/O (FunctionBehaviour::role)
// Neoverse data sources (DATA-SOURCE payload on Neoverse N1/N2/V1).
constexpr uint16_t kDsL1d = 0x0, kDsL2 = 0x8, kDsPeerCore = 0x9, kDsLocalCluster = 0xa, kDsSysCache = 0xb,
                   kDsPeerCluster = 0xc, kDsRemote = 0xd, kDsDram = 0xe;

}  // namespace

std::vector<SpeProcess> generateProcesses(int threads) {
    const int nproc = threads >= 4 ? 2 : 1;
    static const char* kComm[] = {"dataproc", "indexer"};
    std::vector<SpeProcess> procs;
    for (int p = 0; p < nproc; ++p) {
        SpeProcess proc;
        proc.pid = 4100 + 100 * p;
        proc.comm = kComm[p];
        // brk heap a little above the program's data, 64 MiB.
        proc.heapStart = 0x2000000 + uint64_t(p) * 0x1000000;
        proc.heapEnd = proc.heapStart + 0x4000000;
        procs.push_back(proc);
    }
    for (int t = 0; t < threads; ++t) {
        SpeProcess& proc = procs[size_t(t % nproc)];
        SpeThread th;
        const size_t index = proc.threads.size();
        th.pid = proc.pid;
        th.tid = proc.pid + int32_t(index);
        th.comm = index == 0 ? proc.comm : proc.comm + "-w" + std::to_string(index);
        if (index == 0) {
            th.stackEnd = 0xfffffffff000ull - uint64_t(proc.pid % 7) * 0x100000;
            th.stackStart = th.stackEnd - 0x21000;  // 132 KiB, as the kernel sets it up
        } else {
            // pthread stacks: 8 MiB anonymous mappings below the libraries.
            th.stackEnd = 0xffff80000000ull - uint64_t(index) * 0x810000;
            th.stackStart = th.stackEnd - 0x800000;
        }
        proc.threads.push_back(th);
    }
    return procs;
}

SpeGenerator::SpeGenerator(const GenerateOptions& options, const SpeElfLayout& program,
                           std::vector<SpeProcess> processes, const SpeTimeConv& timeConv)
    : options_(options), program_(program), processes_(std::move(processes)), timeConv_(timeConv) {
    rng_.s = options.seed * 0x2545f4914f6cdd1dull + 0x5eed;
    for (size_t p = 0; p < processes_.size(); ++p)
        for (size_t t = 0; t < processes_[p].threads.size(); ++t)
            threads_.push_back({p, t, int(threads_.size() % kRoles)});
    running_.assign(size_t(options.cpus), -1);
    lastTick_.assign(size_t(options.cpus), 0);
    // An hour and a bit of uptime on the counter.
    startTick_ = tick_ = 24000000ull * 3700 + rng_.below(24000000);
    // Function popularity: Zipf over a seeded permutation.
    std::vector<size_t> order(program_.functions.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    for (size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[rng_.below(i)]);
    std::vector<double> weight(order.size());
    for (size_t rank = 0; rank < order.size(); ++rank)
        weight[order[rank]] = 1.0 / std::pow(double(rank + 1), 0.9);
    // What each function touches (by its name) and which role runs it.
    behaviour_.resize(program_.functions.size());
    auto object = [&](const char* name) {
        for (size_t i = 0; i < program_.objects.size(); ++i)
            if (program_.objects[i].name == name) return i;
        return size_t(0);
    };
    for (size_t i = 0; i < program_.functions.size(); ++i) {
        const std::string& n = program_.functions[i].name;
        FunctionBehaviour& b = behaviour_[i];
        auto is = [&](std::initializer_list<const char*> names) {
            for (const char* x : names)
                if (n == x) return true;
            return false;
        };
        if (n.starts_with("hash_")) {
            b = {Region::Objects, {object("g_hash_buckets")}, Locality::PointerChasing, 0};
        } else if (n.starts_with("btree_") || n.starts_with("list_")) {
            b = {Region::Heap, {}, Locality::PointerChasing, 0};
        } else if (n.starts_with("bloom_filter")) {
            b = {Region::Objects, {object("g_bloom_bits")}, Locality::Streaming, 0};
        } else if (is({"matrix_multiply", "vector_dot_sve", "vector_scale_sve"})) {
            b = {Region::Objects,
                 {object("g_matrix_a"), object("g_matrix_b"), object("g_matrix_c")},
                 Locality::Streaming,
                 1};
        } else if (is({"memcpy_fast", "memset_fast", "compress_block", "decompress_block",
                       "checksum_page"})) {
            b = {Region::Heap, {}, Locality::Streaming, 1};
        } else if (n == "crc32_update") {
            b = {Region::Objects, {object("g_crc_table")}, Locality::Hot, 1};
        } else if (n.starts_with("ring_buffer")) {
            b = {Region::Objects, {object("g_ring_buffer")}, Locality::Shared, 2};
        } else if (is({"atomic_counter_inc", "update_stats", "histogram_add"})) {
            b = {Region::Objects, {object("g_counters"), object("g_stats")}, Locality::Shared, 2};
        } else if (is({"spin_lock", "spin_unlock"})) {
            b = {Region::Objects, {object("g_lock")}, Locality::Shared, 2};
        } else if (is({"parse_args", "load_config", "format_output", "write_output"})) {
            b = {Region::Stack, {object("g_config"), object("g_format_strings")}, Locality::Hot, 2};
        } else if (is({"alloc_object", "free_object", "queue_pop", "queue_push", "sort_records",
                       "merge_runs"})) {
            b = {Region::Heap, {}, Locality::Default, n.starts_with("queue") ? 2 : 0};
        } else {
            b = {Region::Mixed, {object("g_scratch"), object("g_lookup_table")}, Locality::Default, -1};
        }
    }
    auto cdf = [&](int role) {
        std::vector<double> c;
        double sum = 0;
        for (size_t i = 0; i < weight.size(); ++i)
            c.push_back(sum += weight[i] * (role >= 0 && behaviour_[i].role == role ? 12.0 : 1.0));
        for (double& x : c)
            x /= sum;
        return c;
    };
    functionCdf_ = cdf(-1);
    for (int role = 0; role < kRoles; ++role)
        roleCdf_.push_back(cdf(role));
    for (size_t i = 0; i < program_.functions.size(); ++i) {
        const std::string& n = program_.functions[i].name;
        if (n.ends_with("_sve")) sveFunctions_.push_back(i);
        if (n == "atomic_counter_inc" || n == "spin_lock" || n == "spin_unlock") lockFunctions_.push_back(i);
        if (n == "memcpy_fast") memcpyFunction_ = i;
        if (n == "memset_fast") memsetFunction_ = i;
    }
}

size_t SpeGenerator::pickFunction(int role) {
    const std::vector<double>& cdf = role >= 0 ? roleCdf_[size_t(role)] : functionCdf_;
    const double u = double(rng_.next() >> 11) / double(1ull << 53);
    return size_t(std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin()) % cdf.size();
}

uint16_t SpeGenerator::pickSource(Locality locality) {
    // Per mille thresholds over L1D, L2, system cache, peer core, local
    // cluster, peer cluster, DRAM; the rest is remote.
    static const uint16_t kSources[] = {kDsL1d,          kDsL2,          kDsSysCache, kDsPeerCore,
                                        kDsLocalCluster, kDsPeerCluster, kDsDram,     kDsRemote};
    static const uint16_t kCdf[][7] = {
        {600, 780, 860, 890, 910, 930, 990},   // Default
        {900, 980, 995, 997, 998, 999, 1000},  // Hot
        {400, 750, 940, 945, 950, 955, 995},   // Streaming
        {200, 350, 600, 610, 620, 630, 950},   // PointerChasing
        {500, 560, 600, 850, 930, 990, 995},   // Shared
    };
    const uint16_t* c = kCdf[int(locality)];
    const uint64_t s = rng_.below(1000);
    for (int i = 0; i < 7; ++i)
        if (s < c[i]) return kSources[i];
    return kSources[7];
}

uint64_t SpeGenerator::physical(int32_t pid, uint64_t va) const {
    uint64_t h = (va >> 12) * 0x9e3779b97f4a7c15ull ^ uint64_t(pid) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    const uint64_t pfn = 0x80000 + h % 0x400000;  // 16 GiB of DRAM from 2 GiB
    return (pfn << 12) | (va & 0xfff);
}

bool SpeGenerator::nextEpoch(std::vector<SwitchEvent>& switches, std::vector<GeneratedRecord>& records) {
    switches.clear();
    records.clear();
    if (made_ >= options_.records) return false;
    const uint64_t begin = tick_;
    // Who runs where: a shuffled assignment; now and then a CPU idles.
    std::vector<int> perm(threads_.size());
    for (size_t i = 0; i < perm.size(); ++i)
        perm[i] = int(i);
    for (size_t i = perm.size(); i > 1; --i)
        std::swap(perm[i - 1], perm[rng_.below(i)]);
    for (size_t c = 0; c < running_.size(); ++c) {
        int next = c < perm.size() ? perm[c] : -1;
        if (next >= 0 && rng_.chance(80)) next = -1;
        if (next != running_[c]) {
            auto task = [&](int t) {
                if (t < 0) return SpePerfDataWriter::Task{};
                const SpeThread& th =
                    processes_[threads_[size_t(t)].process].threads[threads_[size_t(t)].thread];
                return SpePerfDataWriter::Task{th.pid, th.tid};
            };
            switches.push_back({begin, int(c), task(running_[c]), task(next)});
            running_[c] = next;
        }
    }
    // Samples: each running CPU from 4 ticks after the switch to 4 before the
    // next, the CPUs in step (the earliest next sample first).
    std::vector<std::vector<GeneratedRecord>> perCpu(running_.size());
    const uint64_t end = begin + kEpochTicks;
    std::vector<uint64_t> next(running_.size(), UINT64_MAX);
    for (size_t c = 0; c < running_.size(); ++c)
        if (running_[c] >= 0) next[c] = begin + 4 + rng_.below(kMeanGap);
    while (made_ < options_.records) {
        size_t c = 0;
        for (size_t i = 1; i < next.size(); ++i)
            if (next[i] < next[c]) c = i;
        const uint64_t t = next[c];
        if (t == UINT64_MAX || t + 4 >= end) break;
        GeneratedRecord g;
        makeRecord(threads_[size_t(running_[c])], int(c), t, g);
        // The first record of a slice has a timestamp: one without would
        // seem to belong to the slice before (its time is the last one seen).
        if (perCpu[c].empty() && !g.record.timestamp) {
            g.record.timestamp = t;
            g.record.time = timeConv_.perfTime(t);
        }
        perCpu[c].push_back(g);
        ++made_;
        next[c] = t + 1 + rng_.below(2 * kMeanGap - 1);
    }
    // Truth order: time, then CPU; a record without a timestamp stays after the
    // one before it on its CPU.
    struct Key {
        uint64_t tick;
        int cpu;
        size_t index;
    };
    std::vector<Key> keys;
    for (size_t c = 0; c < perCpu.size(); ++c) {
        uint64_t eff = lastTick_[c];
        for (size_t i = 0; i < perCpu[c].size(); ++i) {
            if (perCpu[c][i].record.timestamp) eff = perCpu[c][i].record.timestamp;
            keys.push_back({eff, int(c), i});
        }
        lastTick_[c] = eff;
    }
    std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
        return a.tick != b.tick ? a.tick < b.tick : a.cpu < b.cpu;
    });
    records.reserve(keys.size());
    for (const Key& k : keys)
        records.push_back(perCpu[size_t(k.cpu)][k.index]);
    tick_ = end;
    return true;
}

void SpeGenerator::makeRecord(const ThreadRef& ref, int cpu, uint64_t tick, GeneratedRecord& g) {
    const SpeProcess& proc = processes_[ref.process];
    const SpeThread& th = proc.threads[ref.thread];
    SpeRecord& r = g.record;
    r = SpeRecord{};
    r.cpu = cpu;
    r.pid = th.pid;
    r.tid = th.tid;
    if (options_.context) {
        r.context = uint32_t(th.tid);
        r.contextIndex = options_.contextIndex;
        r.hasContext = true;
    }
    if (rng_.below(64) != 0) {
        r.timestamp = tick;
        r.time = timeConv_.perfTime(tick);
    }

    // What kind of operation.
    enum Kind { Load, Store, Branch, Other } kind;
    const uint64_t k = rng_.below(100);
    kind = k < 36 ? Load : k < 52 ? Store : k < 80 ? Branch : Other;
    bool sve = false, atomic = false;
    size_t fn;
    if ((kind == Load || kind == Store || kind == Other) && rng_.chance(kind == Other ? 150 : 40)) {
        sve = true;
        fn = sveFunctions_[rng_.below(sveFunctions_.size())];
    } else if ((kind == Load || kind == Store) && rng_.chance(30)) {
        atomic = true;
        fn = lockFunctions_[rng_.below(lockFunctions_.size())];
    } else {
        fn = pickFunction(ref.role);
    }
    const ElfSymbolDef& f = program_.functions[fn];
    const FunctionBehaviour& behaviour = behaviour_[fn];
    r.pc = f.address + 4 * rng_.below(f.size / 4 - 1);
    r.pcEl = 0;
    r.pcNs = true;
    r.hasPc = true;

    uint64_t events = rng_.chance(985) ? uint64_t(spe::kEvRetired) : 0;
    uint16_t issue = uint16_t(rng_.chance(50) ? 20 + rng_.below(100) : 1 + rng_.below(8));
    uint32_t total = issue;

    if (kind == Load || kind == Store) {
        const bool store = kind == Store;
        r.opClass = OpClass::LoadStore;
        uint8_t p = store ? 1 : 0;
        if (sve) {
            p |= 0x08 | uint8_t((2 + rng_.below(3)) << 4) | 0x04;  // SVE, EVL 128..512, predicated
            if (rng_.chance(250)) p |= 0x80;                       // gather/scatter
        } else if (atomic) {
            p |= rng_.chance(500) ? 0x06 : 0x1a;  // LDADD-like (AT), or LDAXR/STLXR (EXCL, AR)
        } else if (fn == memcpyFunction_ && rng_.chance(400)) {
            p |= 0x20;  // MOPS memcpy
        } else if (fn == memsetFunction_ && store && rng_.chance(400)) {
            p = 0x25;  // MOPS memset
        } else if (rng_.chance(120)) {
            p |= 0x04;  // SIMD&FP register
        }
        r.opPayload = p;

        // Where the data is: what the function works on, now and then its stack.
        uint64_t va;
        Region region = behaviour.region;
        if (region == Region::Mixed || (region != Region::Stack && rng_.chance(150))) {
            const uint64_t x = rng_.below(100);
            region = x < 35 ? Region::Objects : x < 75 ? Region::Heap : Region::Stack;
        }
        if (region == Region::Stack && !behaviour.objects.empty() && rng_.chance(300))
            region = Region::Objects;
        const bool onStack = region == Region::Stack;
        if (region == Region::Objects) {
            const auto& objs = program_.objects;
            const size_t i = behaviour.objects.empty() || behaviour.region == Region::Mixed
                                 ? rng_.below(objs.size())
                                 : behaviour.objects[rng_.below(behaviour.objects.size())];
            const ElfSymbolDef& o = objs[i];
            va = o.address + (rng_.below(o.size) & ~uint64_t(7));
        } else if (region == Region::Heap) {
            // The heap: a hot first MiB, the rest colder (pointer chasing: all of it).
            const bool hot = behaviour.locality != Locality::PointerChasing && rng_.chance(700);
            const uint64_t span = hot ? 0x100000 : proc.heapEnd - proc.heapStart;
            va = proc.heapStart + (rng_.below(span) & ~uint64_t(7));
        } else {
            va = th.stackEnd - 16 - (rng_.below(ref.thread == 0 ? 0x4000 : 0x10000) & ~uint64_t(7));
        }
        if (rng_.chance(10)) {
            va |= 3;  // misaligned
            events |= spe::kEvAlignment;
        }
        r.dataVa = va;
        r.hasDataVa = true;
        if (!onStack && rng_.chance(25)) r.dataVaTag = uint8_t(0x01 + rng_.below(15));  // a tagged pointer
        if (rng_.chance(980)) {
            r.dataPa = physical(th.pid, va);
            r.hasDataPa = true;
            r.dataPaNs = true;
            if (r.dataVaTag) {
                r.dataPaCh = true;
                r.dataPaPat = r.dataVaTag & 0xf;
            }
        }
        // Translation.
        events |= spe::kEvTlbAccess;
        uint16_t xlat = uint16_t(1 + rng_.below(3));
        if (rng_.chance(30)) {
            events |= spe::kEvTlbWalk;
            xlat = uint16_t(20 + rng_.below(180));
        }
        r.translationLatency = xlat;
        r.hasTranslationLatency = true;
        // The memory hierarchy.
        const uint16_t source = pickSource(onStack ? Locality::Hot : behaviour.locality);
        uint32_t mem = 4;
        events |= spe::kEvL1dAccess;
        if (source != kDsL1d) events |= spe::kEvL1dRefill;
        switch (source) {
            case kDsL2:
                mem = 11 + uint32_t(rng_.below(5));
                break;
            case kDsSysCache:
                mem = 35 + uint32_t(rng_.below(20));
                break;
            case kDsPeerCore:
                mem = 50 + uint32_t(rng_.below(30));
                break;
            case kDsLocalCluster:
                mem = 55 + uint32_t(rng_.below(25));
                break;
            case kDsPeerCluster:
                mem = 80 + uint32_t(rng_.below(40));
                break;
            case kDsDram:
                mem = 180 + uint32_t(rng_.below(220));
                break;
            case kDsRemote:
                mem = 350 + uint32_t(rng_.below(450));
                break;
            default:
                break;
        }
        if (source == kDsSysCache || source == kDsLocalCluster || source == kDsPeerCluster ||
            source == kDsDram || source == kDsRemote)
            events |= spe::kEvLlcAccess;
        if (source == kDsDram || source == kDsRemote) events |= spe::kEvLlcMiss;
        if (source == kDsRemote) events |= spe::kEvRemoteAccess;
        if (store) {
            // Stores retire into the store buffer; Neoverse reports no source for them.
            total += xlat + 2 + uint32_t(rng_.below(5));
        } else {
            r.dataSource = source;
            r.hasDataSource = true;
            total += xlat + mem + uint32_t(rng_.below(3));
        }
        if (sve && rng_.chance(200)) events |= spe::kEvPartialPredicate;
        if (sve && rng_.chance(50)) events |= spe::kEvEmptyPredicate;
    } else if (kind == Branch) {
        r.opClass = OpClass::Branch;
        const uint64_t b = rng_.below(100);
        bool taken = true;
        uint64_t target;
        uint8_t p;
        bool mispredicted;
        if (b < 60) {  // conditional, direct, within the function
            p = 0x01;
            taken = rng_.chance(550);
            if (!taken) events |= spe::kEvNotTaken;
            target = f.address + 4 * rng_.below(f.size / 4);
            mispredicted = rng_.chance(40);
        } else if (b < 85) {  // B / BL to a function
            p = 0x00;
            const ElfSymbolDef& callee = program_.functions[pickFunction()];
            target = callee.address;
            mispredicted = rng_.chance(5);
        } else {  // BR / BLR / RET
            p = 0x02;
            const ElfSymbolDef& other = program_.functions[pickFunction()];
            target = other.address + 4 * rng_.below(other.size / 4);
            mispredicted = rng_.chance(100);
        }
        r.opPayload = p;
        if (mispredicted) {
            events |= spe::kEvMispredicted;
            total += 11 + uint32_t(rng_.below(8));
        }
        if (taken) {
            r.branchTarget = target;
            r.hasBranchTarget = true;
        }
        total += 1 + uint32_t(rng_.below(4));
    } else {
        r.opClass = OpClass::Other;
        if (sve) {
            r.opPayload = uint8_t(0x08 | ((2 + rng_.below(3)) << 4) | (rng_.chance(600) ? 0x02 : 0) |
                                  (rng_.chance(500) ? 0x04 : 0));
            total += 3 + uint32_t(rng_.below(8));
            if ((r.opPayload & 0x04) && rng_.chance(200)) events |= spe::kEvPartialPredicate;
        } else {
            r.opPayload = rng_.chance(150) ? 0x01 : 0x00;  // conditional select or other
            total += 1 + uint32_t(rng_.below(6));
            if (rng_.chance(2)) events |= spe::kEvGenerated;  // an SVC
        }
    }
    deriveOpFlags(r);
    // The previous taken branch's target (SPEv1p2): somewhere before the PC in
    // this function, often its entry.
    if (rng_.chance(350)) {
        r.prevBranchTarget =
            rng_.chance(400) ? f.address : f.address + 4 * rng_.below((r.pc - f.address) / 4 + 1);
        r.hasPrevBranchTarget = true;
    }
    r.events = events;
    r.hasEvents = true;
    r.totalLatency = uint16_t(std::min<uint32_t>(total, 0xffff));
    r.hasTotalLatency = true;
    r.issueLatency = issue;
    r.hasIssueLatency = true;

    // Layout choices.
    SpeEncodeStyle& s = g.style;
    const uint64_t h = rng_.next();
    if ((h & 15) == 0) s.extendedMask |= extendedAddress(4);
    if (((h >> 4) & 31) == 0) s.extendedMask |= extendedCounter(2);
    if (((h >> 9) & 63) == 0) s.extendedMask |= extendedAddress(0);
    if (((h >> 15) & 63) == 0) s.extendedMask |= extendedCounter(0);
    if (((h >> 21) & 127) == 0)
        s.extendedMask |= extendedAddress(2) | extendedAddress(3) | extendedAddress(1);
    if (((h >> 28) & 15) == 0) s.eventsBytes = 1;
    if (((h >> 32) & 15) == 0) s.eventsBytes = 4;
    if (((h >> 36) & 7) == 0) s.dataSourceBytes = 1;
}

}  // namespace auxscope::spesynth
