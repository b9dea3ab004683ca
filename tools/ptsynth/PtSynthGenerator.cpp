// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthGenerator.h"

#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "PtSynthElf.h"

namespace auxscope::ptsynth {
namespace {

constexpr uint64_t kBase = 0x400000;  // where the ELF's only PT_LOAD maps (file offset 0)
constexpr uint64_t kCodeOffset = 0x1000;
constexpr uint64_t kCodeAddr = kBase + kCodeOffset;
constexpr uint64_t kLcgMul = 1103515245, kLcgAdd = 12345;
constexpr uint32_t kMainIterations = 0x7fffffff;
// Scratch registers the straight-line code may clobber (never rbx, rsp, rbp,
// rdi or r15, which carry the program's state). None needs a SIB byte as a base.
constexpr uint8_t kScratch[] = {0, 1, 2, 6, 8, 9, 10, 11};

// A run of instructions always executed as a whole, and its contribution to the
// truth hash (see PtSynthTruth.h: h' = h * mul + add).
struct Segment {
    uint32_t first = 0, count = 0;
    uint64_t ip = 0, mul = 1, add = 0;
};

struct Node {
    enum class Kind : uint8_t { Straight, Call, ICall, If, Loop, Switch, Recurse };
    Kind kind = Kind::Straight;
    uint8_t shift = 0, mask = 0, bit = 0;
    bool hasElse = false;
    uint32_t seg = 0, seg2 = 0;            // head segment; If: "jmp END" after then; Loop: the latch
    uint32_t callee = 0;                   // Call, Recurse
    uint32_t count = 0;                    // Loop iterations, Recurse argument
    uint64_t ipA = 0, ipB = 0;             // If: then/else start; Loop: top/after; calls: return address
    std::vector<Node> a, b;                // If then/else, Loop body
    std::vector<uint32_t> targets;         // ICall: function of each table slot
    std::vector<uint64_t> caseIps;         // Switch: address of each case
    std::vector<std::vector<Node>> cases;  // Switch bodies
    std::vector<uint32_t> caseSegs;        // Switch: each case's "jmp END"
};

struct Function {
    std::string name;
    uint64_t entry = 0, end = 0;
    unsigned level = 0;
    bool recursive = false;
    uint64_t cost = 0;  // estimated instructions per call (recursive: unused)
    uint32_t pro = 0, epi = 0;
    unsigned slots = 0;
    std::vector<Node> body;
    uint32_t r[4] = {};  // recursive: entry test, first call, second call, base
    uint64_t recIp1 = 0, ret1 = 0, ret2 = 0, baseIp = 0;
};

struct Cost {
    uint64_t v = 0;
};

uint64_t recCost(uint32_t n) {
    if (int32_t(n) <= 1) return 6;
    return 10 + recCost(n - 1) + recCost(n - 2);
}

}  // namespace

struct PtGenerator::Impl {
    GeneratorOptions o;
    std::mt19937_64 rng;
    std::vector<uint8_t> code;      // bytes from kCodeAddr
    std::vector<uint64_t> insnIps;  // every instruction's address, in layout order
    std::vector<Segment> segs;
    std::vector<Function> funcs;
    std::vector<std::vector<uint64_t>> tables;  // entries (addresses)
    std::vector<uint64_t> tableAddr;
    struct Fix {
        size_t at;  // code offset of a disp32 naming a table
        uint32_t table;
    };
    std::vector<Fix> tableFixes;
    size_t segStart = 0;

    // _start (entries[0]) and the further threads' entry functions
    struct Entry {
        std::string name;
        uint32_t startSeg = 0, latchSeg = 0, exitSeg = 0;
        Node top;
        uint64_t topIp = 0, afterIp = 0, entryIp = 0, end = 0, seedValue = 0;
        size_t iterationsAt = 0;  // code offset of the loop count (imm32)
        uint32_t iterations = kMainIterations;
    };
    std::vector<Entry> entries;
    PtSynthMapping map;
    std::vector<TruthFunction> truthFns;
    GeneratorStats stats;

    uint64_t rand(uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); }
    uint64_t here() const { return kCodeAddr + code.size(); }

    // ------------------------------------------------------------ assembler
    void begin() { insnIps.push_back(here()); }
    void b(std::initializer_list<uint8_t> bytes) { code.insert(code.end(), bytes); }
    void u32(uint32_t v) {
        for (int i = 0; i < 4; ++i)
            code.push_back(uint8_t(v >> (8 * i)));
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i)
            code.push_back(uint8_t(v >> (8 * i)));
    }
    // A rel32 to patch later; returns the offset of the rel32.
    size_t rel32() {
        const size_t at = code.size();
        u32(0);
        return at;
    }
    void patchRel(size_t at, uint64_t target) {
        const int64_t rel = int64_t(target) - int64_t(kCodeAddr + at + 4);
        const uint32_t v = uint32_t(int32_t(rel));
        std::memcpy(&code[at], &v, 4);
    }
    void beginSeg() { segStart = insnIps.size(); }
    uint32_t endSeg() {
        Segment s;
        s.first = uint32_t(segStart);
        s.count = uint32_t(insnIps.size() - segStart);
        s.ip = insnIps[segStart];
        for (uint32_t i = 0; i < s.count; ++i) {
            s.add = truthHashStep(s.add, insnIps[s.first + i]);
            s.mul *= kTruthHashMul;
        }
        segs.push_back(s);
        return uint32_t(segs.size() - 1);
    }

    void lcgStep() {
        begin();
        b({0x4d, 0x69, 0xff});  // imul r15, r15, imm32
        u32(uint32_t(kLcgMul));
        begin();
        b({0x49, 0x81, 0xc7});  // add r15, imm32
        u32(uint32_t(kLcgAdd));
    }
    // rax = (r15 >> shift) & mask
    void indexFromState(uint8_t shift, uint8_t mask) {
        begin();
        b({0x4c, 0x89, 0xf8});  // mov rax, r15
        begin();
        b({0x48, 0xc1, 0xe8, shift});  // shr rax, shift
        begin();
        b({0x25});  // and eax, imm32
        u32(mask);
    }
    void tableRef(uint32_t table) {
        tableFixes.push_back({code.size(), table});
        u32(0);
    }
    void alu() {
        const uint8_t d = kScratch[rng() % std::size(kScratch)], s = kScratch[rng() % std::size(kScratch)];
        begin();
        switch (rng() % 5) {
            case 0: {
                static const uint8_t ops[] = {0x01, 0x29, 0x31, 0x21, 0x09, 0x89};
                b({uint8_t(0x48 | ((s >> 3) << 2) | (d >> 3)), ops[rng() % 6],
                   uint8_t(0xc0 | (s & 7) << 3 | (d & 7))});
                break;
            }
            case 1: {
                static const uint8_t ext[] = {0, 1, 4, 5, 6};
                b({uint8_t(0x48 | (d >> 3)), 0x83, uint8_t(0xc0 | ext[rng() % 5] << 3 | (d & 7)),
                   uint8_t(rng())});
                break;
            }
            case 2:
                b({uint8_t(0x48 | ((d >> 3) << 2) | (s >> 3)), 0x8d, uint8_t(0x40 | (d & 7) << 3 | (s & 7)),
                   uint8_t(rng())});
                break;
            case 3:
                b({uint8_t(0x48 | ((d >> 3) << 2) | (s >> 3)), 0x0f, 0xaf,
                   uint8_t(0xc0 | (d & 7) << 3 | (s & 7))});
                break;
            default:
                b({0x90});
                break;
        }
    }

    // ------------------------------------------------------------ program shape
    Node straight(unsigned k, uint64_t& cost) {
        Node n;
        n.kind = Node::Kind::Straight;
        beginSeg();
        for (unsigned i = 0; i < k; ++i)
            alu();
        n.seg = endSeg();
        cost += k;
        return n;
    }

    Node icall(std::vector<uint32_t> targets, uint64_t& cost) {
        Node n;
        n.kind = Node::Kind::ICall;
        n.mask = uint8_t(targets.size() - 1);
        n.shift = uint8_t(rand(20, 50));
        n.targets = std::move(targets);
        std::vector<uint64_t> entries;
        uint64_t worst = 0;
        for (uint32_t f : n.targets) {
            entries.push_back(funcs[f].entry);
            worst = std::max(worst, funcs[f].cost);
        }
        tables.push_back(std::move(entries));
        beginSeg();
        lcgStep();
        indexFromState(n.shift, n.mask);
        begin();
        b({0xff, 0x14, 0xc5});  // call [rax*8 + table]
        tableRef(uint32_t(tables.size() - 1));
        n.seg = endSeg();
        n.ipA = here();
        cost += 6 + worst;
        return n;
    }

    // Functions strictly below `level` whose cost fits.
    std::vector<uint32_t> callees(unsigned level, uint64_t budget) {
        std::vector<uint32_t> out;
        for (uint32_t i = 0; i < funcs.size(); ++i)
            if (!funcs[i].recursive && funcs[i].level > level && funcs[i].cost <= budget) out.push_back(i);
        return out;
    }

    std::vector<Node> nodes(Function& fn, unsigned depth, uint64_t budget, uint64_t& cost) {
        std::vector<Node> out;
        const unsigned count = depth == 0 ? unsigned(rand(2, 5)) : unsigned(rand(1, 3));
        for (unsigned i = 0; i < count; ++i) {
            const uint64_t left = budget > cost ? budget - cost : 0;
            out.push_back(node(fn, depth, left, cost));
        }
        return out;
    }

    Node node(Function& fn, unsigned depth, uint64_t budget, uint64_t& cost) {
        const bool leaf = fn.level + 1 >= o.levels;
        const bool nest = depth < 2 && budget > 40;
        for (int attempt = 0; attempt < 8; ++attempt) {
            // Weighted towards data-dependent branches and indirect transfers,
            // which is where PT spends its bytes (about 0.2-0.3 bytes per instruction).
            static const uint8_t kinds[] = {0, 2, 2, 2, 4, 6, 6, 6, 7, 8, 8, 8, 9};
            switch (kinds[rng() % std::size(kinds)]) {
                case 0:
                    break;  // straight line (below)
                case 2: {
                    if (!nest) break;
                    Node n;
                    n.kind = Node::Kind::If;
                    n.bit = uint8_t(rand(33, 60));
                    n.hasElse = rng() % 2;
                    beginSeg();
                    lcgStep();
                    begin();
                    b({0x49, 0x0f, 0xba, 0xe7, n.bit});  // bt r15, bit
                    begin();
                    b({0x0f, 0x83});  // jnc ELSE (jae)
                    const size_t jnc = rel32();
                    n.seg = endSeg();
                    n.ipA = here();
                    uint64_t thenCost = 0, elseCost = 0;
                    n.a = nodes(fn, depth + 1, (budget - 8) / 2, thenCost);
                    size_t jmp = 0;
                    if (n.hasElse) {
                        beginSeg();
                        begin();
                        b({0xe9});
                        jmp = rel32();
                        n.seg2 = endSeg();
                        ++thenCost;
                    }
                    n.ipB = here();
                    patchRel(jnc, n.ipB);
                    if (n.hasElse) {
                        n.b = nodes(fn, depth + 1, (budget - 8) / 2, elseCost);
                        patchRel(jmp, here());
                    }
                    cost += 4 + std::max(thenCost, elseCost);
                    return n;
                }
                case 4: {
                    if (!nest || fn.slots >= 15) break;
                    Node n;
                    n.kind = Node::Kind::Loop;
                    n.count = uint32_t(rand(2, 4));
                    const uint8_t disp = uint8_t(8 * fn.slots++);
                    beginSeg();
                    begin();
                    b({0x48, 0xc7, 0x44, 0x24, disp});  // mov qword [rsp+disp], count
                    u32(n.count);
                    n.seg = endSeg();
                    n.ipA = here();
                    uint64_t bodyCost = 0;
                    n.a = nodes(fn, depth + 1, budget / n.count, bodyCost);
                    beginSeg();
                    begin();
                    b({0x48, 0x83, 0x6c, 0x24, disp, 0x01});  // sub qword [rsp+disp], 1
                    begin();
                    b({0x0f, 0x85});  // jnz TOP
                    patchRel(rel32(), n.ipA);
                    n.seg2 = endSeg();
                    n.ipB = here();
                    cost += 1 + n.count * (bodyCost + 2);
                    return n;
                }
                case 6: {
                    if (!nest) break;
                    Node n;
                    n.kind = Node::Kind::Switch;
                    const unsigned cases = 2u << (rng() % 3);
                    n.mask = uint8_t(cases - 1);
                    n.shift = uint8_t(rand(20, 50));
                    tables.emplace_back();
                    const uint32_t table = uint32_t(tables.size() - 1);
                    beginSeg();
                    lcgStep();
                    indexFromState(n.shift, n.mask);
                    begin();
                    b({0xff, 0x24, 0xc5});  // jmp [rax*8 + table]
                    tableRef(table);
                    n.seg = endSeg();
                    std::vector<size_t> jumps;
                    uint64_t worst = 0;
                    for (unsigned c = 0; c < cases; ++c) {
                        n.caseIps.push_back(here());
                        uint64_t caseCost = 0;
                        n.cases.push_back(nodes(fn, depth + 1, budget / 2, caseCost));
                        beginSeg();
                        begin();
                        b({0xe9});  // jmp END
                        jumps.push_back(rel32());
                        n.caseSegs.push_back(endSeg());
                        worst = std::max(worst, caseCost + 1);
                    }
                    for (size_t j : jumps)
                        patchRel(j, here());
                    tables[table] = n.caseIps;
                    cost += 6 + worst;
                    return n;
                }
                case 7: {
                    if (leaf) break;
                    auto c = callees(fn.level, budget);
                    if (c.empty()) break;
                    Node n;
                    n.kind = Node::Kind::Call;
                    n.callee = c[rng() % c.size()];
                    beginSeg();
                    begin();
                    b({0xe8});  // call rel32
                    patchRel(rel32(), funcs[n.callee].entry);
                    n.seg = endSeg();
                    n.ipA = here();
                    cost += 1 + funcs[n.callee].cost;
                    return n;
                }
                case 8: {
                    if (leaf) break;
                    auto c = callees(fn.level, budget);
                    if (c.empty()) break;
                    std::vector<uint32_t> t(size_t(2) << (rng() % 2));
                    for (auto& f : t)
                        f = c[rng() % c.size()];
                    return icall(std::move(t), cost);
                }
                case 9: {
                    // Recursion's frames are 6-10 instructions whatever the
                    // straight-line length: a dense program (--straight) has none.
                    if (leaf || o.straight > 1) break;
                    Node n;
                    n.kind = Node::Kind::Recurse;
                    for (uint32_t i = 0; i < funcs.size(); ++i)
                        if (funcs[i].recursive && rng() % 2 == 0) n.callee = i;
                    if (!funcs[n.callee].recursive) n.callee = 0;
                    n.count = uint32_t(rand(2, 7));
                    while (n.count > 2 && recCost(n.count) + 2 > budget)
                        --n.count;
                    beginSeg();
                    begin();
                    b({0xbf});  // mov edi, n
                    u32(n.count);
                    begin();
                    b({0xe8});
                    patchRel(rel32(), funcs[n.callee].entry);
                    n.seg = endSeg();
                    n.ipA = here();
                    cost += 2 + recCost(n.count);
                    return n;
                }
            }
        }
        return straight(unsigned(rand(1, 4)) * o.straight, cost);
    }

    void recursiveFunction(unsigned index) {
        Function f;
        f.name = (o.friendlyNames ? "fib_" : "rec") + std::to_string(index);
        f.recursive = true;
        f.level = o.levels;
        f.entry = here();
        beginSeg();
        begin();
        b({0x53});  // push rbx
        begin();
        b({0x89, 0xfb});  // mov ebx, edi
        begin();
        b({0x83, 0xff, 0x01});  // cmp edi, 1
        begin();
        b({0x0f, 0x8e});  // jle BASE
        const size_t jle = rel32();
        f.r[0] = endSeg();
        f.recIp1 = here();
        beginSeg();
        begin();
        b({0x8d, 0x7b, 0xff});  // lea edi, [rbx-1]
        begin();
        b({0xe8});
        patchRel(rel32(), f.entry);
        f.r[1] = endSeg();
        f.ret1 = here();
        beginSeg();
        begin();
        b({0x8d, 0x7b, 0xfe});  // lea edi, [rbx-2]
        begin();
        b({0xe8});
        patchRel(rel32(), f.entry);
        f.r[2] = endSeg();
        f.ret2 = here();
        f.baseIp = here();
        patchRel(jle, f.baseIp);
        beginSeg();
        begin();
        b({0x5b});  // pop rbx
        begin();
        b({0xc3});  // ret
        f.r[3] = endSeg();
        f.end = here();
        funcs.push_back(std::move(f));
    }

    void function(unsigned level, unsigned index) {
        Function f;
        static const char* const kLevelNames[] = {"task_", "stage_", "step_", "work_", "leaf_"};
        if (o.friendlyNames && o.levels == std::size(kLevelNames))
            f.name = kLevelNames[level] + std::to_string(index);
        else
            f.name = "f" + std::to_string(level) + "_" + std::to_string(index);
        f.level = level;
        f.entry = here();
        beginSeg();
        begin();
        b({0x48, 0x81, 0xec});  // sub rsp, frame
        const size_t frame = code.size();
        u32(0);
        f.pro = endSeg();
        uint64_t cost = 3;
        // Budgets grow towards the top so that one call of a top-level function
        // is a few thousand instructions.
        const uint64_t budget = 60u << (2 * (o.levels - 1 - level));
        f.body = nodes(f, 0, budget, cost);
        const uint32_t size = 8 * std::max(1u, f.slots);
        std::memcpy(&code[frame], &size, 4);
        beginSeg();
        begin();
        b({0x48, 0x81, 0xc4});  // add rsp, frame
        u32(size);
        begin();
        b({0xc3});
        f.epi = endSeg();
        f.cost = cost;
        f.end = here();
        funcs.push_back(std::move(f));
    }

    // _start (k = 0) or thread k's entry function: seeds r15, calls top-level
    // functions through a table in a counted loop, exits. Thread k's table
    // takes every threads-th top-level function from the k-th on.
    void entryCode(unsigned k) {
        Entry e;
        e.name = k == 0 ? "_start" : "thread_main_" + std::to_string(k);
        e.entryIp = here();
        e.seedValue = (o.seed + k * 0x5851f42d4c957f2dULL) * 0x9e3779b97f4a7c15ULL + 1;
        beginSeg();
        begin();
        b({0x49, 0xbf});  // mov r15, imm64
        u64(e.seedValue);
        begin();
        b({0x48, 0x83, 0xec, 0x08});  // sub rsp, 8
        begin();
        b({0x48, 0xc7, 0x04, 0x24});  // mov qword [rsp], iterations
        e.iterationsAt = code.size();
        u32(kMainIterations);
        e.startSeg = endSeg();
        e.topIp = here();
        std::vector<uint32_t> roots;
        for (uint32_t i = 0; i < funcs.size(); ++i)
            if (!funcs[i].recursive && funcs[i].level == 0) roots.push_back(i);
        std::vector<uint32_t> t(8);
        const unsigned n = std::max(1u, o.threads);
        for (size_t i = 0; i < t.size(); ++i)
            t[i] = roots[(k + i * n) % roots.size()];
        uint64_t cost = 0;
        e.top = icall(std::move(t), cost);
        beginSeg();
        begin();
        b({0x48, 0x83, 0x2c, 0x24, 0x01});  // sub qword [rsp], 1
        begin();
        b({0x0f, 0x85});  // jnz TOP
        patchRel(rel32(), e.topIp);
        e.latchSeg = endSeg();
        e.afterIp = here();
        beginSeg();
        begin();
        b({0xb8, 0x3c, 0, 0, 0});  // mov eax, 60 (exit)
        begin();
        b({0x31, 0xff});  // xor edi, edi
        begin();
        b({0x0f, 0x05});  // syscall
        e.exitSeg = endSeg();
        e.end = here();
        entries.push_back(std::move(e));
    }
    void setIterations(Entry& e, uint32_t n) {
        e.iterations = n;
        std::memcpy(&code[e.iterationsAt], &n, 4);
    }

    void generate() {
        rng.seed(o.seed);
        for (unsigned r = 0; r < 3; ++r)
            recursiveFunction(r);
        const unsigned perLevel = std::max(1u, o.functions / o.levels);
        for (unsigned level = o.levels; level-- > 0;)
            for (unsigned i = 0; i < perLevel; ++i)
                function(level, i);
        for (unsigned k = 0; k < std::max(1u, o.threads); ++k)
            entryCode(k);
        // Tables after the code, 8-byte aligned, inside the same mapping.
        while (code.size() % 8)
            code.push_back(0xcc);
        for (auto& t : tables) {
            tableAddr.push_back(here());
            for (uint64_t e : t)
                u64(e);
        }
        for (const Fix& f : tableFixes) {
            const uint32_t a = uint32_t(tableAddr[f.table]);
            std::memcpy(&code[f.at], &a, 4);
        }
        stats.codeBytes = code.size();
        for (const auto& f : funcs)
            truthFns.push_back({f.entry, 0, f.name});
        for (const auto& e : entries)
            truthFns.push_back({e.entryIp, 0, e.name});
    }
    // Fits the loop counts to options.threadInsns (before the ELF is written).
    void fitIterations();

    Expected<void> writeElf();
};

// ---------------------------------------------------------------- ELF

// A minimal static executable (PtSynthElf): one PT_LOAD (R+X) mapping headers,
// build-id note, code and tables from file offset 0 at kBase, plus section
// headers and a symbol table so that tools can name the functions.
Expected<void> PtGenerator::Impl::writeElf() {
    ElfImage image;
    image.path = o.elfPath;
    image.base = kBase;
    image.codeOffset = kCodeOffset;
    image.code = code;
    image.textSize = tableAddr.empty() ? code.size() : tableAddr.front() - kCodeAddr;
    image.entry = entries[0].entryIp;
    // Build-id: 20 bytes derived from the code (stable for a given seed and shape).
    for (int i = 0; i < 5; ++i) {
        uint64_t h = kTruthHashSeed + uint64_t(i) * 0x9e3779b97f4a7c15ULL;
        for (uint8_t c : code)
            h = truthHashStep(h, c);
        std::memcpy(image.buildId + 4 * i, &h, 4);
    }
    for (const auto& fn : funcs)
        image.symbols.push_back({fn.name, fn.entry, fn.end - fn.entry});
    for (const auto& e : entries)
        image.symbols.push_back({e.name, e.entryIp, e.end - e.entryIp});
    auto written = writeElfImage(image);
    if (!written) return written.error();
    map = *written;
    return {};
}

// ---------------------------------------------------------------- the walk

namespace {

// Follows the program the way the CPU would, telling the encoder (a
// PtFlowEncoder, or a FlowLog recording a thread) about every branch and the
// truth about every instruction. With a sample period (FlowLog only), it also
// keeps the return addresses on the stack and samples every that many
// instructions.
template <class Enc>
struct Walker {
    PtGenerator::Impl& g;
    Enc& enc;
    Truth& t;
    std::vector<uint64_t> calls;
    uint64_t r15 = 0;
    uint64_t maxInsns = 0, stopBytes = 0;
    bool stop = false;
    uint64_t samplePeriod = 0, nextSample = 0;
    std::vector<uint64_t> stack;  // return addresses (only while sampling)

    void lcg() { r15 = r15 * kLcgMul + kLcgAdd; }

    void halt(uint64_t ip) {
        stop = true;
        enc.asyncDisable(ip);
    }

    void seg(uint32_t i) {
        if (stop) return;
        const Segment& s = g.segs[i];
        ++g.stats.segments;
        if (enc.bytes() >= stopBytes || (maxInsns && t.instructions >= maxInsns)) return halt(s.ip);
        if (maxInsns && t.instructions + s.count > maxInsns) {
            // Cut inside the run: the instructions up to the limit only.
            uint32_t k = 0;
            for (; t.instructions < maxInsns; ++k)
                t.instruction(g.insnIps[s.first + k]);
            enc.retire(k);
            return halt(g.insnIps[s.first + k]);
        }
        if constexpr (requires { enc.sample(uint64_t(0), stack); }) {
            if (samplePeriod && t.instructions + s.count > nextSample) {
                // Samples land inside the run: the instructions before each, then it.
                uint64_t done = 0;
                while (t.instructions + s.count > nextSample) {
                    const uint64_t k = nextSample - t.instructions;
                    enc.retire(k - done);
                    done = k;
                    enc.sample(g.insnIps[s.first + k], stack);
                    nextSample += samplePeriod;
                }
                enc.retire(s.count - done);
            } else {
                enc.retire(s.count);
            }
        } else {
            enc.retire(s.count);
        }
        t.instructions += s.count;
        t.hash = t.hash * s.mul + s.add;
        if (t.keepLists)
            for (uint32_t k = 0; k < s.count; ++k)
                t.ips.push_back(g.insnIps[s.first + k]);
    }

    void call(uint64_t from, uint64_t ret, uint64_t target, bool direct) {
        if (direct)
            enc.directCall(ret, target);
        else
            enc.indirectCall(ret, target);
        ++t.calls;
        if (samplePeriod) stack.push_back(ret);
        t.event(TruthEvent::Kind::Call, enc.tsc(), from, target);
    }
    void ret(uint64_t from, uint64_t target) {
        enc.ret(target);
        if (samplePeriod && !stack.empty()) stack.pop_back();
        ++t.returns;
        t.event(TruthEvent::Kind::Ret, enc.tsc(), from, target);
    }

    void nodes(const std::vector<Node>& v) {
        for (const Node& n : v) {
            if (stop) return;
            node(n);
        }
    }

    uint64_t lastIp(uint32_t segment) const {
        const Segment& s = g.segs[segment];
        return g.insnIps[s.first + s.count - 1];
    }

    void node(const Node& n) {
        switch (n.kind) {
            case Node::Kind::Straight:
                seg(n.seg);
                return;
            case Node::Kind::Call: {
                seg(n.seg);
                if (stop) return;
                const uint64_t target = g.funcs[n.callee].entry;
                call(lastIp(n.seg), n.ipA, target, true);
                function(n.callee, n.ipA);
                return;
            }
            case Node::Kind::ICall: {
                lcg();
                seg(n.seg);
                if (stop) return;
                const uint32_t f = n.targets[(r15 >> n.shift) & n.mask];
                call(lastIp(n.seg), n.ipA, g.funcs[f].entry, false);
                function(f, n.ipA);
                return;
            }
            case Node::Kind::If: {
                lcg();
                seg(n.seg);
                if (stop) return;
                const bool bit = (r15 >> n.bit) & 1;  // CF after bt; jnc jumps when it is clear
                enc.conditional(!bit, bit ? n.ipA : n.ipB);
                if (bit) {
                    nodes(n.a);
                    if (n.hasElse) seg(n.seg2);
                } else {
                    nodes(n.b);
                }
                return;
            }
            case Node::Kind::Loop:
                seg(n.seg);
                for (uint32_t k = 0; k < n.count && !stop; ++k) {
                    nodes(n.a);
                    seg(n.seg2);
                    if (stop) return;
                    const bool again = k + 1 < n.count;
                    enc.conditional(again, again ? n.ipA : n.ipB);
                }
                return;
            case Node::Kind::Switch: {
                lcg();
                seg(n.seg);
                if (stop) return;
                const size_t c = (r15 >> n.shift) & n.mask;
                enc.indirectJump(n.caseIps[c]);
                nodes(n.cases[c]);
                seg(n.caseSegs[c]);
                return;
            }
            case Node::Kind::Recurse: {
                seg(n.seg);
                if (stop) return;
                const uint64_t target = g.funcs[n.callee].entry;
                call(lastIp(n.seg), n.ipA, target, true);
                recurse(n.callee, n.count, n.ipA);
                return;
            }
        }
    }

    void function(uint32_t fi, uint64_t retIp) {
        const Function& f = g.funcs[fi];
        const uint64_t before = t.instructions;
        seg(f.pro);
        if (t.instructions > before) ++calls[fi];  // its first instruction ran
        nodes(f.body);
        seg(f.epi);
        if (stop) return;
        ret(lastIp(f.epi), retIp);
    }

    void recurse(uint32_t fi, uint32_t n, uint64_t retIp) {
        const Function& f = g.funcs[fi];
        const uint64_t before = t.instructions;
        seg(f.r[0]);
        if (t.instructions > before) ++calls[fi];
        if (stop) return;
        const bool base = int32_t(n) <= 1;
        enc.conditional(base, base ? f.baseIp : f.recIp1);
        if (!base) {
            seg(f.r[1]);
            if (stop) return;
            call(lastIp(f.r[1]), f.ret1, f.entry, true);
            recurse(fi, n - 1, f.ret1);
            seg(f.r[2]);
            if (stop) return;
            call(lastIp(f.r[2]), f.ret2, f.entry, true);
            recurse(fi, n - 2, f.ret2);
        }
        seg(f.r[3]);
        if (stop) return;
        ret(lastIp(f.r[3]), retIp);
    }
};

}  // namespace

PtGenerator::PtGenerator(std::unique_ptr<Impl> impl) : d_(std::move(impl)) {}
PtGenerator::~PtGenerator() = default;

Expected<std::unique_ptr<PtGenerator>> PtGenerator::create(const GeneratorOptions& options) {
    auto impl = std::make_unique<Impl>();
    impl->o = options;
    if (impl->o.levels < 2) impl->o.levels = 2;
    if (impl->o.functions < impl->o.levels) impl->o.functions = impl->o.levels;
    impl->generate();
    impl->fitIterations();
    if (auto r = impl->writeElf(); !r) return r.error();
    return std::unique_ptr<PtGenerator>(new PtGenerator(std::move(impl)));
}

const PtSynthMapping& PtGenerator::mapping() const {
    return d_->map;
}
uint64_t PtGenerator::entry() const {
    return d_->entries[0].entryIp;
}
const std::vector<TruthFunction>& PtGenerator::functions() const {
    return d_->truthFns;
}
const GeneratorStats& PtGenerator::stats() const {
    return d_->stats;
}

namespace {

// An encoder that keeps nothing: fitting a loop count only counts.
struct NullFlow {
    void enable(uint64_t, bool = false) {}
    void retire(uint64_t) {}
    void conditional(bool, uint64_t) {}
    void directCall(uint64_t, uint64_t) {}
    void indirectCall(uint64_t, uint64_t) {}
    void indirectJump(uint64_t) {}
    void ret(uint64_t) {}
    void farTransferOut() {}
    void asyncDisable(uint64_t) {}
    uint64_t bytes() const { return 0; }
    uint64_t tsc() const { return 0; }
    bool ok() const { return true; }
    Error error() const { return makeError("no error"); }
};

// Walks entry k (0: _start) from its first instruction to its exit system
// call or a limit. `fitTo` > 0: stops after the first loop iteration that
// reaches that many instructions and returns the iterations walked (for
// fitIterations); else returns 0.
template <class Enc>
Expected<uint32_t> walkEntry(PtGenerator::Impl& g, Enc& encoder, Truth& truth, unsigned k, uint64_t maxInsns,
                             uint64_t stopBytes, uint64_t samplePeriod, uint64_t samplePhase,
                             uint64_t fitTo) {
    const auto& e = g.entries[k];
    Walker<Enc> w{g, encoder, truth, std::vector<uint64_t>(g.funcs.size() + g.entries.size(), 0)};
    w.maxInsns = maxInsns;
    w.stopBytes = stopBytes;
    w.samplePeriod = samplePeriod;
    w.nextSample = samplePhase ? samplePhase : samplePeriod;
    w.r15 = e.seedValue;
    truth.maps.push_back({g.map.start, g.map.end, g.map.pgoff, g.map.path});
    truth.tscFirst = encoder.tsc();
    encoder.enable(e.entryIp);
    w.calls[g.funcs.size() + k] = 1;  // entered by the kernel (a new thread: by clone)
    w.seg(e.startSeg);
    const uint32_t iterations = fitTo ? kMainIterations : e.iterations;
    for (uint32_t n = 0; n < iterations && !w.stop; ++n) {
        w.node(e.top);
        w.seg(e.latchSeg);
        if (w.stop) break;
        if (fitTo && truth.instructions >= fitTo) return n + 1;
        const bool again = n + 1 < iterations;
        encoder.conditional(again, again ? e.topIp : e.afterIp);
        if (!encoder.ok()) return encoder.error();
    }
    if (!w.stop) {
        w.seg(e.exitSeg);
        if (!w.stop) {
            ++truth.syscalls;
            encoder.farTransferOut();
        }
    }
    truth.tscLast = encoder.tsc();
    truth.functions = g.truthFns;
    for (size_t i = 0; i < truth.functions.size(); ++i)
        truth.functions[i].calls = w.calls[i];
    if (!encoder.ok()) return encoder.error();
    return 0u;
}

}  // namespace

void PtGenerator::Impl::fitIterations() {
    for (size_t k = 0; k < entries.size() && k < o.threadInsns.size(); ++k) {
        if (!o.threadInsns[k]) continue;
        NullFlow null;
        Truth scratch;
        scratch.keepLists = false;
        auto n = walkEntry(*this, null, scratch, unsigned(k), 0, UINT64_MAX, 0, 0, o.threadInsns[k]);
        if (n && *n) setIterations(entries[k], *n);
    }
}

Expected<void> PtGenerator::run(PtFlowEncoder& encoder, Truth& truth) {
    Impl& g = *d_;
    auto r = walkEntry(g, encoder, truth, 0, g.o.maxInsns, g.o.stopAtBytes ? g.o.stopAtBytes : UINT64_MAX, 0,
                       0, 0);
    if (!r) return r.error();
    return {};
}

unsigned PtGenerator::threads() const {
    return unsigned(d_->entries.size());
}
uint64_t PtGenerator::threadEntry(unsigned k) const {
    return d_->entries.at(k).entryIp;
}
const std::string& PtGenerator::threadEntryName(unsigned k) const {
    return d_->entries.at(k).name;
}

Expected<void> PtGenerator::walkThread(unsigned k, uint64_t samplePeriod, uint64_t samplePhase, FlowLog& log,
                                       Truth& truth) {
    if (k >= d_->entries.size()) return makeError("no thread " + std::to_string(k) + " in the program");
    truth.keepLists = false;
    auto r = walkEntry(*d_, log, truth, k, d_->o.maxInsns, UINT64_MAX, samplePeriod, samplePhase, 0);
    if (!r) return r.error();
    return {};
}

}  // namespace auxscope::ptsynth
