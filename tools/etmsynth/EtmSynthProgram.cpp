// SPDX-License-Identifier: GPL-3.0-or-later
// The generated AArch64 program (encoder, generator) and its walk (the truth).
#include <cinttypes>
#include <cstdio>
#include <map>

#include "EtmSynth.h"

namespace auxscope::etmsynth {

namespace {

constexpr uint8_t kSp = 31, kZr = 31, kLr = 30, kFp = 29;
constexpr uint8_t kInput = 9;  // the register standing for an input the program read
// Condition codes (Arm ARM, C1.2.4).
constexpr uint8_t kLt = 0xb, kHi = 0x8, kLs = 0x9, kNe = 0x1, kGe = 0xa;

struct Rng {
    uint64_t s;
    uint64_t next() {  // splitmix64
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    uint32_t below(uint32_t n) { return uint32_t(next() % n); }
    uint32_t between(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
    bool chance(uint32_t percent) { return below(100) < percent; }
};

std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

// A tiny assembler: instructions with label targets, resolved at the end.
class Asm {
public:
    explicit Asm(uint64_t base) : base_(base) {}
    int label() {
        labels_.push_back(-1);
        return int(labels_.size()) - 1;
    }
    void bind(int l) { labels_[size_t(l)] = int64_t(code_.size()); }
    uint64_t here() const { return base_ + 4 * code_.size(); }
    void emit(Insn i) { code_.push_back(i); }
    void branch(Insn i, int l) {
        fixups_.push_back({code_.size(), l});
        code_.push_back(i);
    }
    void movz(uint8_t rd, int64_t imm) { emit({Op::Movz, rd, 0, 0, imm}); }
    void addImm(uint8_t rd, uint8_t rn, int64_t imm) { emit({Op::AddImm, rd, rn, 0, imm}); }
    void subImm(uint8_t rd, uint8_t rn, int64_t imm) { emit({Op::SubImm, rd, rn, 0, imm}); }
    void cmpImm(uint8_t rn, int64_t imm) { emit({Op::CmpImm, kZr, rn, 0, imm}); }
    void addReg(uint8_t rd, uint8_t rn, uint8_t rm) { emit({Op::AddReg, rd, rn, rm}); }
    void movReg(uint8_t rd, uint8_t rm) { emit({Op::MovReg, rd, kZr, rm}); }
    void prologue(int64_t frame) {
        emit({Op::StpPre, kFp, kSp, kLr, -frame});
        addImm(kFp, kSp, 0);
    }
    void epilogue(int64_t frame) {
        emit({Op::LdpPost, kFp, kSp, kLr, frame});
        emit({Op::Ret, 0, kLr});
    }
    Program finish() {
        Program p;
        p.base = base_;
        for (auto [at, l] : fixups_)
            code_[at].target = base_ + 4 * uint64_t(labels_[size_t(l)]);
        p.code = std::move(code_);
        return p;
    }

private:
    uint64_t base_;
    std::vector<Insn> code_;
    std::vector<int64_t> labels_;
    std::vector<std::pair<size_t, int>> fixups_;
};

uint32_t reg(uint8_t r) {
    return r & 31u;
}

uint32_t pairImm(int64_t imm) {
    return uint32_t((imm / 8) & 0x7f) << 15;
}

}  // namespace

uint32_t encode(const Insn& i, uint64_t pc) {
    const int64_t off = int64_t(i.target) - int64_t(pc);
    const uint32_t imm19 = uint32_t((off >> 2) & 0x7ffff) << 5;
    switch (i.op) {
        case Op::Nop:
            return 0xd503201f;
        case Op::Movz:
            return 0xd2800000 | uint32_t(i.imm & 0xffff) << 5 | reg(i.rd);
        case Op::AddImm:
            return 0x91000000 | uint32_t(i.imm & 0xfff) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::SubImm:
            return 0xd1000000 | uint32_t(i.imm & 0xfff) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::CmpImm:
            return 0xf1000000 | uint32_t(i.imm & 0xfff) << 10 | reg(i.rn) << 5 | kZr;
        case Op::AddReg:
            return 0x8b000000 | reg(i.rm) << 16 | reg(i.rn) << 5 | reg(i.rd);
        case Op::MovReg:
            return 0xaa000000 | reg(i.rm) << 16 | kZr << 5 | reg(i.rd);
        case Op::StpPre:
            return 0xa9800000 | pairImm(i.imm) | reg(i.rm) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::StpOff:
            return 0xa9000000 | pairImm(i.imm) | reg(i.rm) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::LdpOff:
            return 0xa9400000 | pairImm(i.imm) | reg(i.rm) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::LdpPost:
            return 0xa8c00000 | pairImm(i.imm) | reg(i.rm) << 10 | reg(i.rn) << 5 | reg(i.rd);
        case Op::B:
            return 0x14000000 | uint32_t((off >> 2) & 0x3ffffff);
        case Op::Bl:
            return 0x94000000 | uint32_t((off >> 2) & 0x3ffffff);
        case Op::BCond:
            return 0x54000000 | imm19 | (i.rn & 0xfu);
        case Op::Cbz:
            return 0xb4000000 | imm19 | reg(i.rd);
        case Op::Cbnz:
            return 0xb5000000 | imm19 | reg(i.rd);
        case Op::Ret:
            return 0xd65f0000 | reg(i.rn) << 5;
    }
    return 0;
}

std::vector<uint8_t> Program::bytes() const {
    std::vector<uint8_t> out;
    out.reserve(code.size() * 4);
    for (size_t k = 0; k < code.size(); ++k) {
        const uint32_t w = encode(code[k], base + 4 * k);
        for (int b = 0; b < 4; ++b)
            out.push_back(uint8_t(w >> (8 * b)));
    }
    return out;
}

Program generateProgram(uint64_t seed) {
    Rng rng{seed * 0x2545f4914f6cdd1dULL + 0x33};
    constexpr uint64_t kBase = 0x401000;
    Asm a(kBase);
    struct Fn {
        std::string name;
        int label;
        uint64_t start = 0, end = 0;
    };
    std::vector<Fn> fns;
    auto fn = [&](std::string name) {
        fns.push_back({std::move(name), a.label()});
        return fns.back().label;
    };
    auto begin = [&](int label) {
        for (Fn& f : fns)
            if (f.label == label) f.start = a.here();
        a.bind(label);
    };
    auto end = [&](int label) {
        for (Fn& f : fns)
            if (f.label == label) f.end = a.here();
    };
    auto alu = [&](uint32_t n) {
        for (uint32_t k = 0; k < n; ++k) {
            const uint8_t rd = uint8_t(rng.between(2, 8));
            const uint8_t rn = uint8_t(rng.between(2, 8));
            switch (rng.below(4)) {
                case 0:
                    a.addImm(rd, rn, rng.between(1, 255));
                    break;
                case 1:
                    a.subImm(rd, rn, rng.between(1, 63));
                    break;
                case 2:
                    a.addReg(rd, rn, uint8_t(rng.between(2, 8)));
                    break;
                default:
                    a.movReg(rd, rn);
                    break;
            }
        }
    };

    const int start = fn("_start"), mainFn = fn("main"), fib = fn("fib");
    static const char* const kWorkers[] = {"parse_header", "read_block", "update_stats",
                                           "emit_record",  "scan_table", "copy_rows"};
    static const char* const kLeaves[] = {"clamp", "mix", "hash_step", "checksum"};
    std::vector<int> workers, leaves, loops;
    const uint32_t nWorkers = rng.between(4, 6), nLeaves = rng.between(3, 4), nLoops = rng.between(2, 3);
    for (uint32_t k = 0; k < nWorkers; ++k)
        workers.push_back(fn(kWorkers[k]));
    for (uint32_t k = 0; k < nLeaves; ++k)
        leaves.push_back(fn(kLeaves[k]));
    std::vector<uint32_t> loopCounts;
    for (uint32_t k = 0; k < nLoops; ++k) {
        uint32_t n;
        bool fresh;
        do {  // distinct counts, so distinct names
            n = rng.between(3, 12);
            fresh = true;
            for (uint32_t c : loopCounts)
                fresh = fresh && c != n;
        } while (!fresh);
        loopCounts.push_back(n);
        loops.push_back(fn("loop_" + std::to_string(n)));
    }

    // _start: calls main; the walk ends when main returns to the NOP.
    begin(start);
    a.branch({Op::Bl}, mainFn);
    a.emit({Op::Nop});
    end(start);

    // main: a loop counting x19 down, each turn fib(x19 + k) and the workers.
    begin(mainFn);
    a.prologue(32);
    a.emit({Op::StpOff, 19, kSp, 20, 16});
    const uint32_t turns = rng.between(6, 8);
    a.movz(19, turns);
    a.movz(20, 0);
    const int top = a.label();
    a.bind(top);
    a.addImm(0, 19, rng.between(1, 2));
    a.branch({Op::Bl}, fib);
    a.addReg(20, 20, 0);
    std::vector<int> order = workers;
    for (size_t k = order.size(); k > 1; --k)
        std::swap(order[k - 1], order[rng.below(uint32_t(k))]);
    for (uint32_t extra = rng.between(2, 5); extra > 0; --extra)  // some called twice a turn
        order.insert(order.begin() + rng.below(uint32_t(order.size()) + 1), workers[rng.below(nWorkers)]);
    for (int w : order) {
        a.branch({Op::Bl}, w);
        if (rng.chance(40)) alu(1);
    }
    a.subImm(19, 19, 1);
    a.branch({Op::Cbnz, 19}, top);
    a.movReg(0, 20);
    a.emit({Op::LdpOff, 19, kSp, 20, 16});
    a.epilogue(32);
    end(mainFn);

    // fib(x0): recursive, the base case shares the final RET.
    begin(fib);
    const int base = a.label();
    a.cmpImm(0, 2);
    a.branch({Op::BCond, 0, kLt}, base);
    a.prologue(32);
    a.emit({Op::StpOff, 19, kSp, 20, 16});
    a.movReg(19, 0);
    a.subImm(0, 19, 1);
    a.branch({Op::Bl}, fib);
    a.movReg(20, 0);
    a.subImm(0, 19, 2);
    a.branch({Op::Bl}, fib);
    a.addReg(0, 0, 20);
    a.emit({Op::LdpOff, 19, kSp, 20, 16});
    a.emit({Op::LdpPost, kFp, kSp, kLr, 32});
    a.bind(base);
    a.emit({Op::Ret, 0, kLr});
    end(fib);

    // Workers: statements of ALU work, calls to leaves and loops, ifs on an
    // input, if/else on a computed value.
    for (int w : workers) {
        begin(w);
        a.prologue(16);
        const uint32_t statements = rng.between(4, 8);
        for (uint32_t s = 0; s < statements; ++s) {
            switch (rng.below(5)) {
                case 0:
                    alu(rng.between(1, 4));
                    break;
                case 1:
                    a.branch({Op::Bl}, leaves[rng.below(uint32_t(leaves.size()))]);
                    break;
                case 2:
                    a.branch({Op::Bl}, loops[rng.below(uint32_t(loops.size()))]);
                    break;
                case 3: {
                    const int skip = a.label();
                    a.branch({Op::Cbz, kInput, 0, 0, 0, 0, true}, skip);
                    alu(rng.between(1, 3));
                    if (rng.chance(50)) a.branch({Op::Bl}, leaves[rng.below(uint32_t(leaves.size()))]);
                    a.bind(skip);
                    break;
                }
                default: {
                    const int other = a.label(), join = a.label();
                    a.cmpImm(uint8_t(rng.between(2, 8)), rng.between(1, 4000));
                    a.branch({Op::BCond, 0, rng.chance(50) ? kLs : kGe}, other);
                    alu(rng.between(1, 3));
                    a.branch({Op::B}, join);
                    a.bind(other);
                    alu(rng.between(1, 3));
                    a.bind(join);
                    break;
                }
            }
        }
        a.epilogue(16);
        end(w);
    }
    // Leaves: ALU work around an input decision or a computed one.
    for (int l : leaves) {
        begin(l);
        alu(rng.between(1, 3));
        const int skip = a.label();
        if (rng.chance(60))
            a.branch({rng.chance(50) ? Op::Cbz : Op::Cbnz, kInput, 0, 0, 0, 0, true}, skip);
        else {
            a.cmpImm(uint8_t(rng.between(2, 8)), rng.between(1, 4000));
            a.branch({Op::BCond, 0, rng.chance(50) ? kHi : kNe}, skip);
        }
        alu(rng.between(1, 3));
        a.bind(skip);
        alu(rng.between(0, 2));
        a.emit({Op::Ret, 0, kLr});
        end(l);
    }
    // loop_N: N turns of a counted loop.
    for (size_t k = 0; k < loops.size(); ++k) {
        begin(loops[k]);
        a.movz(1, loopCounts[k]);
        const int body = a.label();
        a.bind(body);
        alu(rng.between(1, 2));
        a.subImm(1, 1, 1);
        a.branch({Op::Cbnz, 1}, body);
        a.emit({Op::Ret, 0, kLr});
        end(loops[k]);
    }

    Program p = a.finish();
    p.entry = kBase;
    for (const Fn& f : fns)
        p.functions.push_back({f.name, f.start, f.end - f.start});
    return p;
}

Expected<Truth> walk(const Program& p, uint64_t seed) {
    Rng rng{seed * 0x9e3779b97f4a7c15ULL + 0x77};
    Truth t;
    uint64_t x[32] = {};
    uint64_t sp = 0x7ffffff000;
    bool n = false, z = false, c = false, v = false;
    std::map<uint64_t, uint64_t> mem;
    const uint64_t exitPc = p.entry + 4;  // _start's NOP, after its BL main
    x[kLr] = exitPc;
    for (int r = 2; r <= 8; ++r)
        x[r] = rng.next() & 0xfff;
    auto r = [&](uint8_t k) -> uint64_t& { return k == 31 ? sp : x[k]; };
    auto rz = [&](uint8_t k) -> uint64_t { return k == 31 ? 0 : x[k]; };
    uint64_t pc = p.entry;
    t.startPc = pc;
    Range cur{pc};
    uint32_t depth = 0;
    constexpr uint64_t kLimit = 10'000'000;
    for (;;) {
        if (pc < p.base || pc >= p.base + 4 * p.code.size() || (pc & 3))
            return makeError("walk: pc " + hex(pc) + " is outside the program");
        if (t.instructions >= kLimit) return makeError("walk: no end after 10M instructions, at " + hex(pc));
        const Insn& i = p.code[(pc - p.base) / 4];
        ++t.instructions;
        ++cur.instructions;
        uint64_t next = pc + 4;
        bool branch = false, taken = false;
        switch (i.op) {
            case Op::Nop:
                break;
            case Op::Movz:
                x[i.rd] = uint64_t(i.imm);
                break;
            case Op::AddImm:
                r(i.rd) = r(i.rn) + uint64_t(i.imm);
                break;
            case Op::SubImm:
                r(i.rd) = r(i.rn) - uint64_t(i.imm);
                break;
            case Op::CmpImm: {
                const uint64_t a = x[i.rn], b = uint64_t(i.imm), d = a - b;
                n = int64_t(d) < 0;
                z = d == 0;
                c = a >= b;
                v = ((a ^ b) & (a ^ d)) >> 63;
                break;
            }
            case Op::AddReg:
                x[i.rd] = rz(i.rn) + rz(i.rm);
                break;
            case Op::MovReg:
                x[i.rd] = rz(i.rm);
                break;
            case Op::StpPre:
                sp += uint64_t(i.imm);
                mem[sp] = x[i.rd];
                mem[sp + 8] = x[i.rm];
                break;
            case Op::StpOff:
                mem[sp + uint64_t(i.imm)] = x[i.rd];
                mem[sp + uint64_t(i.imm) + 8] = x[i.rm];
                break;
            case Op::LdpOff:
                x[i.rd] = mem[sp + uint64_t(i.imm)];
                x[i.rm] = mem[sp + uint64_t(i.imm) + 8];
                break;
            case Op::LdpPost:
                x[i.rd] = mem[sp];
                x[i.rm] = mem[sp + 8];
                sp += uint64_t(i.imm);
                break;
            case Op::B:
                branch = taken = true;
                break;
            case Op::Bl:
                branch = taken = true;
                x[kLr] = pc + 4;
                ++t.calls;
                t.maxDepth = std::max(t.maxDepth, ++depth);
                break;
            case Op::BCond: {
                branch = true;
                bool res = false;
                switch (i.rn >> 1) {
                    case 0:
                        res = z;
                        break;
                    case 1:
                        res = c;
                        break;
                    case 2:
                        res = n;
                        break;
                    case 3:
                        res = v;
                        break;
                    case 4:
                        res = c && !z;
                        break;
                    case 5:
                        res = n == v;
                        break;
                    case 6:
                        res = n == v && !z;
                        break;
                    default:
                        res = true;
                        break;
                }
                taken = (i.rn & 1) && i.rn != 0xf ? !res : res;
                break;
            }
            case Op::Cbz:
            case Op::Cbnz:
                branch = true;
                if (i.input) x[i.rd] = rng.chance(55) ? 0 : 1 + (rng.next() & 0xff);
                taken = (x[i.rd] == 0) == (i.op == Op::Cbz);
                break;
            case Op::Ret:
                branch = taken = true;
                next = x[i.rn];
                ++t.returns;
                if (depth) --depth;
                break;
        }
        if (!branch) {
            pc = next;
            continue;
        }
        ++t.branches;
        if (taken && i.op != Op::Ret) next = i.target;
        cur.end = pc + 4;
        cur.taken = taken;
        cur.indirect = i.op == Op::Ret;
        cur.next = next;
        t.ranges.push_back(cur);
        if (i.op == Op::Ret && next == exitPc) break;
        pc = next;
        cur = Range{pc};
    }
    return t;
}

}  // namespace auxscope::etmsynth
