// SPDX-License-Identifier: GPL-3.0-or-later
// Feasibility prototype for issue 15: can a walker of our own over libipt's
// QUERY decoder follow Intel PT control flow faster than libipt's block decoder,
// with the same flow?
//
//   (a) the bare libipt block-decoder loop of bench_pt_decode (pt_blk_sync_forward
//       / pt_blk_event / pt_blk_next, default flags), one thread
//   (w) the walker: pt_qry_sync_forward / pt_qry_cond_branch /
//       pt_qry_indirect_branch / pt_qry_event over the same AUX runs and the same
//       images. Code is read once per process and start IP into a flat table
//       (open addressing, ip -> block): libipt's own instruction decoder (as
//       InsnProbe drives it) walks from the IP through direct jumps and calls,
//       which need no trace, to the first instruction that does. A block keeps
//       its instruction count, the return addresses its direct calls push, how
//       it ends (conditional, return, indirect jump or call, far transfer, or
//       cut at 512 instructions), fall-through and conditional target (from the
//       Jcc's displacement), and links to the blocks that follow, filled in as
//       they are first taken; a return address on our return stack carries the
//       call site, which caches the block the return lands on. Conditional
//       branches take a TNT bit, returns first try a TNT bit (return
//       compression: pop our own 64-deep return stack, libipt's ring semantics;
//       libipt tries the TNT bit first whatever the configuration, and so does
//       this) and else a TIP, indirect branches and far transfers take a TIP.
//       Events follow pt_block_decoder.c's binding rules (see event()): enabled
//       resumes at its IP; disabled binds to the next branch that needs trace
//       (or its IP); async_disabled / async_branch walk without trace to their
//       `at` / `from`; exec_mode, async_paging, async_vmcs apply when the walk
//       reaches their IP (with trace); tsx, exstop, mwait at their IP (without
//       trace); overflow resumes at its IP; paging, vmcs and ptwrite while
//       tracing are consumed without binding them to their instruction (they
//       change no flow; said so in a "consumed" line).
//   (a+t), (w+t) the same, asking the decoder's time before every block as
//       PtSession::decodeSegment does (pt_blk_time / pt_qry_time).
//       Anything it does not handle is counted and printed as "unhandled" with
//       the first offset; the run then resyncs at the next PSB, so the flow
//       check below fails rather than silently diverging.
//
// Correctness, per AUX run: the instruction count of (w) equals libipt's block
// decoder's, the totals equal the ptsynth truth, and a hash of the flow equals:
// every non-sequential transfer libipt's blocks show at an instruction that
// needs trace (a block ends at such an instruction, the next block starts
// elsewhere than after it: (end_ip, next ip); blocks that end at a direct jump
// or call, where libipt's block cache cuts them, do not count), plus the flow
// events (enabled, disabled, async_disabled, async_branch, overflow) with their
// IPs, in order. (w) hashes the same pairs as it walks: taken conditional
// branches, returns, indirect branches and far transfers whose destination is
// not the next instruction, each once the flow goes on from its destination
// (as libipt's next block shows it; an overflow, disable or enable first drops
// it on both sides).
//
// usage: bench_pt_walk [--rounds N] [--no-time] [--profile-walker N] [--mutate-psbs K]
//                      [--verify-only-file F]... FILE...
//   FILE: timed ((a), (w), (a+t), (w+t), N rounds each, interleaved) and verified;
//   --verify-only-file F: verified only (small traces, real code);
//   --profile-walker N: (w) alone N times, nothing else (for perf record);
//   --mutate-psbs K: every K-th PSB+ turned into an overflow or an async branch
//   (see mutateRun), for the event paths the generated traces lack.
// Not a test: a report, run by hand.
#include <intel-pt.h>
#include <sys/resource.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "images/ImageResolver.h"
#include "perfdata/PerfDataReader.h"
#include "pt/PtImages.h"
#include "pt/PtInsnProbe.h"
#include "pt/PtTraceSource.h"
#include "sideband/Sideband.h"
#include "spans/FunctionTable.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string load() {
    double l[3] = {};
    if (getloadavg(l, 3) < 3) return "load ?";
    char b[64];
    std::snprintf(b, sizeof b, "load %.2f %.2f %.2f", l[0], l[1], l[2]);
    return b;
}

uint64_t truthValue(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("ips ", 0) == 0) break;
        if (line.rfind(key + " ", 0) == 0) return std::strtoull(line.c_str() + key.size() + 1, nullptr, 0);
    }
    return 0;
}

std::string hex(uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "0x%" PRIx64, v);
    return b;
}

// The flow hash both sides compute (FNV-1a over 64-bit words).
struct FlowHash {
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t edges = 0, tokens = 0;
    void word(uint64_t v) {
        for (int i = 0; i < 8; ++i, v >>= 8)
            h = (h ^ (v & 0xff)) * 0x100000001b3ull;
    }
    void edge(uint64_t from, uint64_t to) {
        ++edges;
        word(from);
        word(to);
    }
    void token(uint64_t kind, uint64_t a = 0, uint64_t b = 0) {
        ++tokens;
        word(0xe0e0e0e000000000ull | kind);
        word(a);
        word(b);
    }
};

// What one AUX run decoded to, by either decoder.
struct RunResult {
    uint64_t instructions = 0, blocks = 0, errors = 0;
    FlowHash flow;
    std::string firstError;
};

// Things the walker met and does not handle (the run resynced there), or handled
// by consuming them without binding them to an instruction (flow unchanged).
struct Unhandled {
    struct Entry {
        uint64_t count = 0;
        std::string first;  // where it happened first
    };
    std::map<std::string, Entry> stopped, consumed;
    void add(std::map<std::string, Entry>& m, const std::string& what, const std::string& where) {
        Entry& e = m[what];
        if (!e.count) e.first = where;
        ++e.count;
    }
};

// ---------------------------------------------------------------- the trace

// --mutate-psbs K: events the generated traces lack, made from them. Every K-th
// PSB+ after a run's first whose FUP gives the IP (tracing on) is overwritten,
// in a copy of the run, alternately by OVF + FUP(ip) (an overflow resolved at
// ip) and by FUP(ip) + TIP(ip) (an asynchronous branch from ip to ip), padded
// with PAD to the PSB+'s length. A PSB+ sits between packets, after the TNT
// bits before it, at the IP the walk is at: the flow and the instruction count
// stay those of the truth, while both decoders take the overflow and
// async_branch event paths (and the PSB is gone as a sync point).
struct Mutations {
    uint64_t overflows = 0, asyncBranches = 0, skipped = 0;
};

void mutateRun(std::vector<uint8_t>& buf, const PtConfigOptions& options, unsigned every, Mutations& m) {
    PtConfig config = makePtConfig(options, buf.data(), buf.data() + buf.size());
    pt_packet_decoder* d = pt_pkt_alloc_decoder(&config.config);
    if (!d) return;
    std::vector<uint64_t> psbs;
    while (pt_pkt_sync_forward(d) >= 0) {
        uint64_t offset = 0;
        if (pt_pkt_get_sync_offset(d, &offset) >= 0) psbs.push_back(offset);
    }
    for (size_t i = every; i < psbs.size(); i += every) {
        if (pt_pkt_sync_set(d, psbs[i]) < 0) continue;
        uint64_t ip = 0, end = 0;
        bool fup = false, done = false;
        pt_packet p;
        while (!done && pt_pkt_next(d, &p, sizeof p) >= 0) {
            // After a PSB the last IP is 0: any FUP with an IP gives it whole.
            if (p.type == ppt_fup && p.payload.ip.ipc != pt_ipc_suppressed) {
                fup = true;
                ip = p.payload.ip.ip;
            }
            if (p.type == ppt_psbend) done = pt_pkt_get_offset(d, &end) >= 0;
        }
        if (!done || !fup) {
            ++m.skipped;
            continue;
        }
        const bool overflow = (m.overflows + m.asyncBranches) % 2 == 0;
        uint8_t out[64] = {};
        pt_config ec;
        pt_config_init(&ec);
        ec.begin = out;
        ec.end = out + sizeof out;
        pt_encoder* e = pt_alloc_encoder(&ec);
        pt_packet packets[2];
        std::memset(packets, 0, sizeof packets);
        packets[0].type = overflow ? ppt_ovf : ppt_fup;
        packets[1].type = overflow ? ppt_fup : ppt_tip;
        for (pt_packet& q : packets) {
            q.payload.ip.ipc = pt_ipc_sext_48;
            q.payload.ip.ip = ip;
        }
        bool ok = e != nullptr;
        for (pt_packet& q : packets)
            ok = ok && pt_enc_next(e, &q) >= 0;
        uint64_t size = 0;
        ok = ok && pt_enc_get_offset(e, &size) >= 0 && size <= end - psbs[i];
        pt_free_encoder(e);
        if (!ok) {
            ++m.skipped;
            continue;
        }
        std::memset(buf.data() + psbs[i], 0, end - psbs[i]);  // PAD
        std::memcpy(buf.data() + psbs[i], out, size);
        ++(overflow ? m.overflows : m.asyncBranches);
    }
    pt_pkt_free_decoder(d);
}

struct LoadedTrace {
    std::unique_ptr<PerfDataReader> file;
    std::unique_ptr<PtTraceSource> trace;
    std::unique_ptr<Sideband> sideband;
    int32_t anyPid = -1;
    // Each run contiguous (libipt wants a run in one piece), per CPU.
    std::vector<std::vector<std::vector<uint8_t>>> copies;
    std::vector<std::vector<std::span<const uint8_t>>> runBytes;
    uint64_t bytes = 0;
};

bool loadTrace(const std::string& path, LoadedTrace& t, unsigned mutateEvery = 0) {
    auto file = PerfDataReader::open(path);
    if (!file) {
        std::printf("  %s: %s\n", path.c_str(), file.error().message.c_str());
        return false;
    }
    t.file = std::make_unique<PerfDataReader>(std::move(*file));
    auto trace = PtTraceSource::fromPerfData(*t.file);
    auto sideband = Sideband::load(*t.file);
    if (!trace || !sideband) {
        std::printf("  %s: cannot read the trace\n", path.c_str());
        return false;
    }
    t.trace = std::make_unique<PtTraceSource>(std::move(*trace));
    t.sideband = std::make_unique<Sideband>(std::move(*sideband));
    t.anyPid = t.sideband->processes().empty() ? -1 : t.sideband->processes().begin()->first;
    for (const PtCpuTrace& cpu : t.trace->cpus()) {
        t.copies.emplace_back(cpu.runs.size());
        t.runBytes.emplace_back();
        for (size_t r = 0; r < cpu.runs.size(); ++r) {
            t.runBytes.back().push_back(
                cpu.bytes.view(cpu.runs[r].begin, cpu.runs[r].end, t.copies.back()[r]));
            if (cpu.runs[r].end > cpu.runs[r].begin) t.bytes += cpu.runs[r].end - cpu.runs[r].begin;
        }
    }
    if (mutateEvery) {
        Mutations m;
        for (size_t c = 0; c < t.runBytes.size(); ++c)
            for (size_t r = 0; r < t.runBytes[c].size(); ++r) {
                std::vector<uint8_t>& copy = t.copies[c][r];
                if (copy.data() != t.runBytes[c][r].data())
                    copy.assign(t.runBytes[c][r].begin(), t.runBytes[c][r].end());
                mutateRun(copy, t.trace->configOptions(), mutateEvery, m);
                t.runBytes[c][r] = std::span<const uint8_t>(copy);
            }
        std::printf("  mutated: %" PRIu64 " PSB+ -> OVF FUP, %" PRIu64 " PSB+ -> FUP TIP, %" PRIu64
                    " skipped\n",
                    m.overflows, m.asyncBranches, m.skipped);
    }
    return true;
}

// The images bareLibipt in bench_pt_decode uses, made fresh for each pass so
// libipt's block cache (kept in the sections) starts cold each time.
struct Images {
    FunctionTable functions;
    ImageResolver resolver;
    std::unique_ptr<PtImages> pt;
    explicit Images(const Sideband& sideband) : resolver(sideband, functions, {}) {
        resolver.prepare();
        pt = std::make_unique<PtImages>(resolver);
    }
};

// ---------------------------------------------------------------- (a) libipt

// bench_pt_decode's bareLibipt loop, with blocks counted; with `perRun`, also the
// flow hash of each run (not timed: it decodes each block's last instruction).
struct ReferenceFlow {
    InsnProbe* probe = nullptr;
    pt_image* image = nullptr;
    // ip -> the IP after the instruction there; 0 when it is a direct jump or
    // call (no trace: not a transfer the hash counts) or cannot be decoded.
    std::unordered_map<uint64_t, uint64_t> falls;
    uint64_t fallOf(uint64_t ip, pt_exec_mode mode) {
        auto it = falls.find(ip);
        if (it != falls.end()) return it->second;
        InsnProbe::Walk w = probe->walk(image, ip, mode, 2);
        uint64_t fall = 0;
        if (!w.insns.empty()) {
            const pt_insn& i = w.insns[0];
            const bool direct = (i.iclass == ptic_call || i.iclass == ptic_jump) &&
                                (w.insns.size() > 1 || w.stoppedAt != 0 || w.status == 0);
            fall = direct ? 0 : ip + i.size;
        }
        falls.emplace(ip, fall);
        return fall;
    }
};

// With `withTime`, the decoder's time is asked before every block, as
// PtSession::decodeSegment does (pt_blk_time).
uint64_t libiptPass(const LoadedTrace& t, std::vector<RunResult>* perRun, uint64_t& blocksOut,
                    uint64_t& errorsOut, bool withTime = false, uint64_t* timeChanges = nullptr) {
    uint64_t lastTsc = 0, changes = 0;
    Images images(*t.sideband);
    uint64_t instructions = 0, blocks = 0, errors = 0;
    for (size_t c = 0; c < t.trace->cpus().size(); ++c) {
        const PtCpuTrace& cpu = t.trace->cpus()[c];
        pt_image* image = images.pt->newImage(cpu.tid > 0 ? t.sideband->pidOf(cpu.tid) : t.anyPid);
        std::unique_ptr<InsnProbe> probe;
        ReferenceFlow ref;
        for (size_t r = 0; r < cpu.runs.size(); ++r) {
            const PtRun& run = cpu.runs[r];
            if (run.end <= run.begin) continue;
            std::span<const uint8_t> bytes = t.runBytes[c][r];
            PtConfig config =
                makePtConfig(t.trace->configOptions(), bytes.data(), bytes.data() + bytes.size());
            pt_block_decoder* decoder = pt_blk_alloc_decoder(&config.config);
            if (!decoder) continue;
            pt_blk_set_image(decoder, image);
            if (perRun && !probe) {
                probe = std::make_unique<InsnProbe>(config.config);
                ref.probe = probe.get();
                ref.image = image;
            }
            RunResult rr;
            bool prevValid = false;
            uint64_t prevEnd = 0;
            pt_exec_mode prevMode = ptem_64bit;
            auto resolvePrev = [&](uint64_t to) {
                if (!prevValid) return;
                uint64_t fall = ref.fallOf(prevEnd, prevMode);
                if (fall && to != fall) rr.flow.edge(prevEnd, to);
                prevValid = false;
            };
            int status = pt_blk_sync_forward(decoder);
            while (status != -pte_eos) {
                if (status < 0) {
                    ++errors;
                    if (perRun) {
                        ++rr.errors;
                        if (rr.firstError.empty()) {
                            uint64_t offset = 0;
                            pt_blk_get_offset(decoder, &offset);
                            rr.firstError = ptErrorName(status) + " at offset " + hex(offset);
                        }
                        prevValid = false;
                    }
                    status = pt_blk_sync_forward(decoder);
                    continue;
                }
                while (status & pts_event_pending) {
                    pt_event ev;
                    status = pt_blk_event(decoder, &ev, sizeof ev);
                    if (status < 0) break;
                    if (!perRun) continue;
                    switch (ev.type) {
                        case ptev_enabled:
                            prevValid = false;
                            rr.flow.token(1, ev.variant.enabled.ip);
                            break;
                        case ptev_disabled:
                            prevValid = false;
                            rr.flow.token(2);
                            break;
                        case ptev_async_disabled:
                            resolvePrev(ev.variant.async_disabled.at);
                            rr.flow.token(3, ev.variant.async_disabled.at);
                            break;
                        case ptev_async_branch:
                            resolvePrev(ev.variant.async_branch.from);
                            rr.flow.token(4, ev.variant.async_branch.from, ev.variant.async_branch.to);
                            break;
                        case ptev_overflow:
                            prevValid = false;
                            rr.flow.token(5, ev.ip_suppressed ? 0 : ev.variant.overflow.ip);
                            break;
                        default:
                            break;
                    }
                }
                if (status < 0) continue;
                if (withTime) {
                    uint64_t tsc = 0;
                    uint32_t lostMtc = 0, lostCyc = 0;
                    if (pt_blk_time(decoder, &tsc, &lostMtc, &lostCyc) >= 0 && tsc != lastTsc) {
                        lastTsc = tsc;
                        ++changes;
                    }
                }
                pt_block block;
                block.ninsn = 0;
                status = pt_blk_next(decoder, &block, sizeof block);
                instructions += block.ninsn;
                if (block.ninsn) ++blocks;
                if (perRun) {
                    rr.instructions += block.ninsn;
                    // pt_blk_next starts a block at the decoder's IP: where the
                    // last branch went, also when nothing could be decoded there.
                    resolvePrev(block.ip);
                    if (block.ninsn) {
                        ++rr.blocks;
                        prevValid = status >= 0;
                        prevEnd = block.end_ip;
                        prevMode = block.mode;
                    }
                }
            }
            pt_blk_free_decoder(decoder);
            if (perRun) perRun->push_back(std::move(rr));
        }
        pt_image_free(image);
    }
    blocksOut = blocks;
    errorsOut = errors;
    if (timeChanges) *timeChanges = changes;
    return instructions;
}

// ---------------------------------------------------------------- (w) the walker

// A block is the path from its start IP up to and including the first
// instruction that needs trace, through direct jumps and calls (libipt's
// instruction decoder follows those itself), or cut at kMaxBlock instructions.
// The direct calls on the path push their return addresses, in order.
enum class End : uint8_t {
    Straight,  // cut at the length limit: continue at `fall` without trace
    Cond,      // one TNT bit: target or fall
    Return,    // TNT bit (compressed: pop) or TIP
    IndJump,   // TIP
    IndCall,   // push fall, TIP
    Far,       // far call / jump / return: TIP
    Fault,     // the instruction after the path cannot be decoded: `error` at `target`
};

struct Block {
    uint64_t ip = 0;
    uint64_t fall = 0;    // the IP after the last instruction (Straight: where the path goes on)
    uint64_t target = 0;  // Cond: the branch target; Fault: the IP that cannot be decoded
    uint64_t last = 0;    // IP of the last instruction
    uint32_t ninsn = 0;
    uint32_t offsets = 0;  // index of the first instruction's offset in BlockTable::offsets
    uint32_t next[2] = {UINT32_MAX, UINT32_MAX};  // [0] fall / not taken, [1] taken
    uint32_t pushes = 0;                          // index of the first push in BlockTable::pushes
    uint16_t npush = 0;                           // direct calls on the path
    uint32_t indRet = UINT32_MAX;                 // End::IndCall: its entry in BlockTable::pushes
    End end = End::Straight;
    bool farCall = false;  // End::Far: a far call (a disable there resumes after it)
    bool movCr3 = false;   // a MOV to CR3 on the path (a synchronous disable may bind there)
    int error = 0;         // End::Fault: the decode error
};

// A call on a block's path: its return address, pushed after instruction `at`,
// and the block a return to it lands on (UINT32_MAX until first needed).
struct Push {
    uint32_t at;  // index of the call in the path
    uint32_t block;
    uint64_t ret;
};

// ip -> block index, open addressing (key 0: free).
class IpIndex {
public:
    IpIndex() { reset(4096); }
    [[gnu::always_inline]] uint32_t find(uint64_t ip) const {
        for (size_t i = slot(ip);; i = (i + 1) & mask_) {
            const Entry& e = table_[i];
            if (e.key == ip) [[likely]]
                return e.value;
            if (!e.key) return UINT32_MAX;
        }
    }
    void insert(uint64_t ip, uint32_t value) {
        if ((count_ + 1) * 4 > (mask_ + 1) * 3) grow();
        size_t i = slot(ip);
        while (table_[i].key && table_[i].key != ip)
            i = (i + 1) & mask_;
        if (!table_[i].key) ++count_;
        table_[i] = {ip, value};
    }
    void clear() { reset(4096); }

private:
    struct Entry {
        uint64_t key;
        uint32_t value;
    };
    size_t slot(uint64_t ip) const { return size_t((ip * 0x9e3779b97f4a7c15ull) >> shift_); }
    void reset(size_t capacity) {
        table_.assign(capacity, Entry{0, 0});
        mask_ = capacity - 1;
        shift_ = 64 - unsigned(std::countr_zero(capacity));
        count_ = 0;
    }
    void grow() {
        std::vector<Entry> old = std::move(table_);
        reset((mask_ + 1) * 2);
        for (const Entry& e : old)
            if (e.key) insert(e.key, e.value);
    }
    std::vector<Entry> table_;
    size_t mask_ = 0, count_ = 0;
    unsigned shift_ = 0;
};

// The target of a conditional branch (Jcc rel8/rel16/rel32, LOOP*, JrCXZ) from
// its bytes: libipt's public pt_insn has the class and size but not the
// displacement; after the opcode these instructions hold only the displacement.
bool condTarget(const pt_insn& insn, uint64_t& target) {
    size_t i = 0;
    const size_t size = insn.size;
    auto at = [&](size_t n) { return n < size ? int(insn.raw[n]) : -1; };
    for (;; ++i) {
        int b = at(i);
        if (b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0xf0 || b == 0x2e || b == 0x36 ||
            b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65)
            continue;
        break;
    }
    if (insn.mode == ptem_64bit && (at(i) & 0xf0) == 0x40) ++i;  // REX
    int op = at(i);
    size_t dispAt = 0;
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3))
        dispAt = i + 1;
    else if (op == 0x0f && at(i + 1) >= 0x80 && at(i + 1) <= 0x8f)
        dispAt = i + 2;
    else
        return false;
    const size_t n = size - dispAt;
    int64_t disp = 0;
    if (n == 1)
        disp = int8_t(insn.raw[dispAt]);
    else if (n == 4) {
        int32_t d;
        std::memcpy(&d, insn.raw + dispAt, 4);
        disp = d;
    } else {
        return false;  // rel16 (16-bit operand size): IP wraps to 16 bits, not handled
    }
    target = insn.ip + insn.size + uint64_t(disp);
    return true;
}

// MOV CR3, r (0f 22 /r with ModRM.reg 3): libipt binds a synchronous disable
// with a suppressed IP (and a paging event) to it. Kernel code only.
bool isMovToCr3(const pt_insn& insn) {
    size_t i = 0;
    while (i < insn.size &&
           (insn.raw[i] == 0x66 || insn.raw[i] == 0x67 || insn.raw[i] == 0xf2 || insn.raw[i] == 0xf3 ||
            insn.raw[i] == 0xf0 || insn.raw[i] == 0x2e || insn.raw[i] == 0x36 || insn.raw[i] == 0x3e ||
            insn.raw[i] == 0x26 || insn.raw[i] == 0x64 || insn.raw[i] == 0x65))
        ++i;
    if (insn.mode == ptem_64bit && i < insn.size && (insn.raw[i] & 0xf0) == 0x40) ++i;
    return i + 2 < insn.size && insn.raw[i] == 0x0f && insn.raw[i + 1] == 0x22 &&
           ((insn.raw[i + 2] >> 3) & 7) == 3;
}

// libipt's return stack (pt_retstack.c): 64 entries in a ring of 65, the oldest
// overwritten when full, popping an empty one is an error.
// Beside each address, the call site that pushed it (an index into
// BlockTable::pushes, which caches the block the return lands on).
struct RetStack {
    uint64_t stack[65];
    uint32_t site[65];
    uint8_t top = 0, bottom = 0;
    void clear() { top = bottom = 0; }
    void forgetSites() { std::fill(std::begin(site), std::end(site), UINT32_MAX); }
    [[gnu::always_inline]] void push(uint64_t ip, uint32_t from) {
        stack[top] = ip;
        site[top] = from;
        top = top == 64 ? 0 : top + 1;
        if (bottom == top) bottom = bottom == 64 ? 0 : bottom + 1;
    }
    [[gnu::always_inline]] bool pop(uint64_t& ip, uint32_t& from) {
        if (top == bottom) return false;
        top = top ? top - 1 : 64;
        ip = stack[top];
        from = site[top];
        return true;
    }
};

// One process's code: blocks by start IP, built on first use, kept across runs.
class BlockTable {
public:
    BlockTable(pt_image* image, const pt_config& base) : image_(image), probe_(base) {}

    std::vector<Block> blocks;
    std::vector<int32_t> offsets;  // per block: each instruction's IP minus the block's start
    std::vector<Push> pushes;
    uint64_t built = 0;
    double buildSeconds = 0;
    pt_exec_mode mode = ptem_64bit;

    // The block starting at `ip`, built when new.
    [[gnu::always_inline]] uint32_t at(uint64_t ip) {
        uint32_t i = index_.find(ip);
        if (i != UINT32_MAX) [[likely]]
            return i;
        return build(ip);
    }
    void setMode(pt_exec_mode m, Unhandled& u) {
        if (m == mode || m == ptem_unknown) return;
        if (!blocks.empty())
            u.add(u.consumed, "exec mode change: block table rebuilt",
                  "mode " + std::to_string(int(mode)) + " -> " + std::to_string(int(m)));
        mode = m;
        blocks.clear();
        offsets.clear();
        pushes.clear();
        index_.clear();
    }

private:
    static constexpr size_t kMaxBlock = 512;

    [[gnu::noinline]] uint32_t build(uint64_t ip) {
        auto t0 = Clock::now();
        ++built;
        Block b;
        b.ip = ip;
        b.offsets = uint32_t(offsets.size());
        b.pushes = uint32_t(pushes.size());
        InsnProbe::Walk w = probe_.walk(image_, ip, mode, kMaxBlock + 1);
        // The walk went on past direct jumps and calls and stopped at the first
        // instruction needing trace (or one it could not decode).
        size_t n = std::min(w.insns.size(), kMaxBlock);
        for (size_t j = 0; j < n; ++j) {
            const pt_insn& insn = w.insns[j];
            offsets.push_back(int32_t(insn.ip - ip));
            if (insn.iclass == ptic_other && isMovToCr3(insn)) b.movCr3 = true;
            const bool onPath = j + 1 < w.insns.size();  // the decoder went on: no trace needed
            if (insn.iclass == ptic_call && onPath && w.insns[j + 1].ip != insn.ip + insn.size) {
                pushes.push_back({uint32_t(j), UINT32_MAX, insn.ip + insn.size});
                ++b.npush;
            }
        }
        b.ninsn = uint32_t(n);
        if (n) b.last = w.insns[n - 1].ip;
        if (n) b.fall = b.last + w.insns[n - 1].size;
        const pt_insn* end = n ? &w.insns[n - 1] : nullptr;
        if (n == kMaxBlock && w.insns.size() > kMaxBlock) {
            b.end = End::Straight;  // cut: the path goes on at the next instruction
            b.fall = w.insns[kMaxBlock].ip;
        } else if (w.status >= 0 || w.stoppedAt != 0 || !end) {
            // The walk ended on an instruction it could not decode (after a
            // direct branch or straight code) -- or, status 0, on the count.
            b.end = End::Fault;
            b.error = w.status < 0 ? w.status : -pte_internal;
            b.target = w.stoppedAt;
        } else {
            switch (end->iclass) {
                case ptic_cond_jump:
                    b.end = End::Cond;
                    if (!condTarget(*end, b.target)) {
                        b.end = End::Fault;
                        b.error = -pte_bad_insn;
                        b.target = end->ip;
                        unknownCond = end->ip;
                    }
                    break;
                case ptic_return:
                    b.end = End::Return;
                    break;
                case ptic_far_call:
                case ptic_far_return:
                case ptic_far_jump:
                    b.end = End::Far;
                    b.farCall = end->iclass == ptic_far_call;
                    break;
                case ptic_call:
                    b.end = End::IndCall;
                    b.indRet = uint32_t(pushes.size());
                    pushes.push_back({uint32_t(n - 1), UINT32_MAX, b.fall});
                    break;
                case ptic_jump:
                    b.end = End::IndJump;
                    break;
                default:
                    // Stopped at an instruction that needs no trace: not expected.
                    b.end = End::Fault;
                    b.error = w.status;
                    b.target = end->ip;
                    break;
            }
        }
        blocks.push_back(b);
        const uint32_t i = uint32_t(blocks.size() - 1);
        index_.insert(ip, i);
        buildSeconds += since(t0);
        return i;
    }

    pt_image* image_;
    InsnProbe probe_;
    IpIndex index_;

public:
    // The instruction at `ip` is VMLAUNCH (0f 01 c2) or VMRESUME (0f 01 c3).
    bool isVmEntry(uint64_t ip) {
        InsnProbe::Walk w = probe_.walk(image_, ip, mode, 1);
        if (w.insns.empty()) return false;
        const pt_insn& i = w.insns[0];
        for (uint8_t k = 0; k + 2 < i.size; ++k)
            if (i.raw[k] == 0x0f && i.raw[k + 1] == 0x01 && (i.raw[k + 2] == 0xc2 || i.raw[k + 2] == 0xc3))
                return k + 3 == i.size;
        return false;
    }

public:
    uint64_t unknownCond = 0;  // a conditional branch whose displacement was not understood
};

// Walks one process's runs.
class Walker {
public:
    Walker(BlockTable& table, Unhandled& unhandled) : t_(table), u_(unhandled) {}

    uint64_t instructions = 0, blocks = 0, queries = 0, errors = 0, timeChanges = 0;
    // Verify: answered queries by kind: TNT for a conditional, TNT for a
    // return (compressed), TIP for a return, TIP for an indirect jump or call,
    // TIP for a far transfer.
    uint64_t kinds[5] = {};

    // Decodes one AUX run; with Verify, hashes the flow into `rr`; with Time,
    // asks the decoder's time after every query (before every block, as
    // PtSession::decodeSegment asks it).
    template <bool Verify, bool Time = false>
    void run(const pt_config& config, RunResult* rr) {
        rr_ = rr;
        q_ = pt_qry_alloc_decoder(&config);
        if (!q_) return;
        uint64_t i0 = instructions;
        int status = sync();
        for (;;) {
            if (status < 0) {
                if (status == -pte_eos) break;
                ++errors;
                if (Verify) {
                    ++rr->errors;
                    if (rr->firstError.empty())
                        rr->firstError = ptErrorName(status) + " at offset " + hex(offset());
                }
                status = sync();
                continue;
            }
            if (status & pts_event_pending) {
                status = events<Verify>(status);
                continue;
            }
            if (!enabled_) {
                status = (status & pts_eos) ? -pte_eos : -pte_no_enable;
                continue;
            }
            status = hot<Verify, Time>();
        }
        if (Verify) {
            pending_ = false;
            rr->instructions += instructions - i0;
        }
        pt_qry_free_decoder(q_);
        q_ = nullptr;
    }

private:
    uint64_t offset() const {
        uint64_t o = 0;
        pt_qry_get_offset(q_, &o);
        return o;
    }

    // Verify: a transfer is hashed once the flow goes on from its destination
    // (the next block runs, or fails to decode there, or an async event leaves
    // from there): libipt's blocks show it only then, and not at all when an
    // overflow, disable or enable comes first.
    void pend(uint64_t from, uint64_t to) {
        flush();
        pending_ = true;
        pendFrom_ = from;
        pendTo_ = to;
    }
    void flush() {
        if (pending_) rr_->flow.edge(pendFrom_, pendTo_);
        pending_ = false;
    }

    int sync() {
        pending_ = false;
        ret_.clear();
        enabled_ = false;
        ip_ = 0;
        mode_ = ptem_unknown;  // as pt_blk_reset: PSB+ tells it
        int status = pt_qry_sync_forward(q_, &ip_);
        if (status >= 0 && !(status & pts_ip_suppressed)) enabled_ = true;
        return status;
    }

    // A stop the walker does not handle: counted, then the run resyncs.
    int unhandled(const std::string& what) {
        u_.add(u_.stopped, what, "offset " + hex(offset()) + ", ip " + hex(ip_));
        return -pte_internal;
    }

    // The branch at the end of `b` (which needs trace): its destination.
    // Returns the query status; `slot` the link to use (-1: none).
    // `site`: for a compressed return, the call site it returns to.
    template <bool Verify>
    [[gnu::always_inline]] int query(const Block& b, uint64_t& dst, int& slot, uint32_t& site) {
        int s;
        switch (b.end) {
            case End::Cond: {
                int taken;
                s = pt_qry_cond_branch(q_, &taken);
                if (s < 0) return s;
                if (Verify) ++kinds[0];
                slot = taken;
                dst = taken ? b.target : b.fall;
                if (Verify && taken && dst != b.fall) pend(b.last, dst);
                return s;
            }
            case End::Return: {
                int taken;
                s = pt_qry_cond_branch(q_, &taken);
                if (s >= 0) {
                    if (Verify) ++kinds[1];
                    if (!taken) return -pte_bad_retcomp;
                    if (!ret_.pop(dst, site)) return -pte_retstack_empty;
                    break;
                }
                if (s != -pte_bad_query) return s;
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                if (Verify) ++kinds[2];
                break;
            }
            case End::IndJump:
            case End::Far:
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                break;
            case End::IndCall:
                ret_.push(b.fall, b.indRet);
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                break;
            default:
                return -pte_internal;
        }
        slot = -1;
        if (Verify && b.end != End::Return) ++kinds[b.end == End::Far ? 4 : 3];
        if (Verify && dst != b.fall) pend(b.last, dst);
        return s;
    }

    // Tracing enabled, no event pending: blocks until a query reports an event
    // pending or fails. Returns that status, ip_ at the next instruction.
    // Counters and table pointers stay in registers (reloaded after a build).
    template <bool Verify, bool Time>
    int hot() {
        if (mode_ == ptem_unknown) [[unlikely]]
            return -pte_bad_insn;
        if (t_.mode != mode_) {
            t_.setMode(mode_, u_);
            ret_.forgetSites();
        }
        uint32_t cur = t_.at(ip_);
        Block* base = t_.blocks.data();
        Push* pushes = t_.pushes.data();
        auto reload = [&] {
            base = t_.blocks.data();
            pushes = t_.pushes.data();
        };
        uint64_t ins = 0, nb = 0, nq = 0;
        int result;
        for (;;) {
            const Block* b = base + cur;
            if (Verify) flush();
            ins += b->ninsn;
            ++nb;
            for (uint32_t k = 0; k < b->npush; ++k)
                ret_.push(pushes[b->pushes + k].ret, b->pushes + k);
            uint32_t next;
            if (b->end == End::Straight) [[unlikely]] {
                next = b->next[0];
                if (next == UINT32_MAX) {
                    next = t_.at(b->fall);
                    reload();
                    base[cur].next[0] = next;
                }
            } else if (b->end == End::Fault) [[unlikely]] {
                ip_ = b->target;
                result = b->error;
                break;
            } else {
                ++nq;
                // The next block is known only after the query: fetch both
                // successors of a conditional while libipt works.
                if (b->end == End::Cond) {
                    const uint32_t n0 = b->next[0], n1 = b->next[1];
                    __builtin_prefetch(base + (n0 != UINT32_MAX ? n0 : cur));
                    __builtin_prefetch(base + (n1 != UINT32_MAX ? n1 : cur));
                }
                uint64_t dst = 0;
                int slot = -1;
                uint32_t site = UINT32_MAX;
                int s = query<Verify>(*b, dst, slot, site);
                if (s < 0) [[unlikely]] {
                    ip_ = b->last;
                    result = s;
                    break;
                }
                if (Time) {
                    uint64_t tsc = 0;
                    uint32_t lostMtc = 0, lostCyc = 0;
                    if (pt_qry_time(q_, &tsc, &lostMtc, &lostCyc) >= 0 && tsc != lastTsc_) {
                        lastTsc_ = tsc;
                        ++timeChanges;
                    }
                }
                if (slot >= 0) [[likely]] {
                    next = b->next[slot];
                    if (next == UINT32_MAX) [[unlikely]] {
                        next = t_.at(dst);
                        reload();
                        base[cur].next[slot] = next;
                    }
                } else if (site != UINT32_MAX) {
                    // A compressed return: the block its call site returns to.
                    next = pushes[site].block;
                    if (next == UINT32_MAX) [[unlikely]] {
                        next = t_.at(dst);
                        reload();
                        pushes[site].block = next;
                    }
                } else {
                    // Other returns, indirect branches: the last destination, else the index.
                    next = b->next[0];
                    if (next == UINT32_MAX || base[next].ip != dst) {
                        next = t_.at(dst);
                        reload();
                        base[cur].next[0] = next;
                    }
                }
                if (s & pts_event_pending) [[unlikely]] {
                    ip_ = dst;
                    result = s;
                    break;
                }
            }
            cur = next;
        }
        instructions += ins;
        blocks += nb;
        queries += nq;
        return result;
    }

    enum class Trace { Allowed, Forbidden, BindDisable };

    // Walks from ip_ until ip_ == `to` (kNoIp: never), instruction by
    // instruction where `to` lies on a block's path, else a block at a time.
    // Trace::Allowed queries branches on the way, Forbidden fails at one
    // (-pte_bad_query, as libipt's pt_blk_proceed_to_ip), BindDisable stops after
    // executing the first branch that needs trace (a synchronous disable binds
    // there) and returns 1. Returns 0 when `to` was reached.
    static constexpr uint64_t kNoIp = ~0ull;
    template <bool Verify>
    int walkTo(uint64_t to, Trace trace, int& status) {
        if (ip_ != to && mode_ == ptem_unknown) return -pte_bad_insn;
        if (t_.mode != mode_) {
            t_.setMode(mode_, u_);
            ret_.forgetSites();
        }
        for (uint64_t steps = 0; steps < (1u << 22); ++steps) {
            if (ip_ == to) return 0;
            const uint32_t cur = t_.at(ip_);
            if (Verify) flush();
            const Block b = t_.blocks[cur];
            if (trace == Trace::BindDisable && b.movCr3)
                return unhandled("synchronous disable on a path with MOV CR3 (libipt binds it there)");
            uint32_t upTo = b.ninsn;  // instructions of the path executed
            if (to != kNoIp)
                for (uint32_t j = 1; j < b.ninsn; ++j)
                    if (b.ip + uint64_t(int64_t(t_.offsets[b.offsets + j])) == to) {
                        upTo = j;
                        break;
                    }
            instructions += upTo;
            ++blocks;
            for (uint32_t k = 0; k < b.npush; ++k)
                if (t_.pushes[b.pushes + k].at < upTo) ret_.push(t_.pushes[b.pushes + k].ret, b.pushes + k);
            if (upTo < b.ninsn) {
                ip_ = to;
                return 0;
            }
            switch (b.end) {
                case End::Straight:
                    ip_ = b.fall;
                    continue;
                case End::Fault:
                    ip_ = b.target;
                    return b.error;
                default:
                    break;
            }
            if (trace == Trace::Forbidden) {
                ip_ = b.last;
                return -pte_bad_query;
            }
            if (trace == Trace::BindDisable) {
                // pt_blk_set_disable_resume_ip: after a (far) call, where it
                // returns to; else unknown. libipt logged the call's return
                // address when it decoded the call.
                if (b.end == End::IndCall) ret_.push(b.fall, b.indRet);
                ip_ = b.end == End::IndCall || b.farCall ? b.fall : 0;
                return 1;
            }
            uint64_t dst = 0;
            int slot = -1;
            uint32_t site = UINT32_MAX;
            ++queries;
            int s = query<Verify>(b, dst, slot, site);
            if (s < 0) {
                ip_ = b.last;
                return s;
            }
            status = s;
            ip_ = dst;
        }
        return unhandled("event IP not reached within 4 M blocks");
    }

    // Handles the pending events; returns the status to go on with.
    template <bool Verify>
    int events(int status) {
        while (status >= 0 && (status & pts_event_pending)) {
            pt_event ev;
            status = pt_qry_event(q_, &ev, sizeof ev);
            if (status < 0) return status;
            int s = event<Verify>(ev, status);
            if (s < 0) return s;
        }
        return status;
    }

    template <bool Verify>
    int event(const pt_event& ev, int& status) {
        switch (ev.type) {
            case ptev_enabled:
                if (ev.status_update) return -pte_bad_context;
                if (ev.ip_suppressed) return -pte_noip;
                if (enabled_) return -pte_bad_context;
                ip_ = ev.variant.enabled.ip;
                enabled_ = true;
                if (Verify) {
                    pending_ = false;
                    rr_->flow.token(1, ip_);
                }
                return 0;
            case ptev_disabled: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                const pt_config* c = pt_qry_get_config(q_);
                if (ev.ip_suppressed && c->addr_filter.config.addr_cfg && c->errata.skl014)
                    return unhandled("disabled event under erratum SKL014 with address filters");
                int s = walkTo<Verify>(ev.ip_suppressed ? kNoIp : ev.variant.disabled.ip, Trace::BindDisable,
                                       status);
                if (s < 0) return s;
                enabled_ = false;
                if (Verify) {
                    pending_ = false;
                    rr_->flow.token(2);
                }
                return 0;
            }
            case ptev_async_disabled: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                int s = walkTo<Verify>(ev.variant.async_disabled.at, Trace::Forbidden, status);
                if (s < 0) return s;
                if (pt_qry_get_config(q_)->errata.skd022 && t_.isVmEntry(ev.variant.async_disabled.at))
                    return unhandled("async disable on VMLAUNCH/VMRESUME under erratum SKD022");
                enabled_ = false;
                if (Verify) {
                    flush();
                    rr_->flow.token(3, ev.variant.async_disabled.at);
                }
                return 0;
            }
            case ptev_async_branch: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                int s = walkTo<Verify>(ev.variant.async_branch.from, Trace::Forbidden, status);
                if (s < 0) return s;
                ip_ = ev.variant.async_branch.to;
                if (Verify) {
                    flush();
                    rr_->flow.token(4, ev.variant.async_branch.from, ev.variant.async_branch.to);
                }
                return 0;
            }
            case ptev_overflow:
                if (ev.status_update) return -pte_bad_context;
                enabled_ = !ev.ip_suppressed;
                ip_ = ev.ip_suppressed ? 0 : ev.variant.overflow.ip;
                if (Verify) {
                    pending_ = false;
                    rr_->flow.token(5, ip_);
                }
                return 0;
            case ptev_exec_mode: {
                if (enabled_ && !ev.ip_suppressed) {
                    int s = walkTo<Verify>(ev.variant.exec_mode.ip, Trace::Allowed, status);
                    if (s < 0) return s;
                }
                const pt_exec_mode m = ev.variant.exec_mode.mode;
                if (ev.status_update && enabled_ && mode_ != ptem_unknown && mode_ != m)
                    return -pte_bad_status_update;
                mode_ = m;
                return 0;
            }
            case ptev_async_paging:
            case ptev_async_vmcs:
                if (enabled_ && !ev.ip_suppressed) {
                    const uint64_t at =
                        ev.type == ptev_async_paging ? ev.variant.async_paging.ip : ev.variant.async_vmcs.ip;
                    int s = walkTo<Verify>(at, Trace::Allowed, status);
                    if (s < 0) return s;
                }
                return 0;
            case ptev_paging:
            case ptev_vmcs:
                // Binds to the next MOV CR3 / VMPTRLD / far branch; no flow change.
                if (enabled_)
                    u_.add(u_.consumed,
                           ev.type == ptev_paging ? "paging event while tracing (not bound)"
                                                  : "vmcs event while tracing (not bound)",
                           "offset " + hex(offset()));
                return 0;
            case ptev_tsx:
                if (ev.variant.tsx.aborted && pt_qry_get_config(q_)->errata.bdm64)
                    u_.add(u_.consumed, "TSX abort under erratum BDM64 (not checked)",
                           "offset " + hex(offset()));
                if (enabled_ && !ev.ip_suppressed) {
                    int s = walkTo<Verify>(ev.variant.tsx.ip, Trace::Forbidden, status);
                    if (s < 0) return s;
                }
                return 0;
            case ptev_stop:
                if (ev.status_update || enabled_) return -pte_bad_context;
                return 0;
            case ptev_exstop:
            case ptev_mwait:
                if (enabled_ && !ev.ip_suppressed) {
                    const uint64_t at = ev.type == ptev_exstop ? ev.variant.exstop.ip : ev.variant.mwait.ip;
                    int s = walkTo<Verify>(at, Trace::Forbidden, status);
                    if (s < 0) return s;
                }
                return 0;
            case ptev_ptwrite:
                if (enabled_)
                    u_.add(u_.consumed, "ptwrite event (not bound to its PTWRITE)",
                           "offset " + hex(offset()));
                return 0;
            case ptev_pwre:
            case ptev_pwrx:
            case ptev_tick:
            case ptev_cbr:
            case ptev_mnt:
                return 0;
        }
        return unhandled("event type " + std::to_string(int(ev.type)));
    }

    BlockTable& t_;
    Unhandled& u_;
    RunResult* rr_ = nullptr;
    pt_query_decoder* q_ = nullptr;
    RetStack ret_;
    bool pending_ = false;
    uint64_t pendFrom_ = 0, pendTo_ = 0;
    uint64_t ip_ = 0;
    uint64_t lastTsc_ = 0;
    bool enabled_ = false;
    pt_exec_mode mode_ = ptem_64bit;
};

struct WalkFigure {
    uint64_t instructions = 0, blocks = 0, queries = 0, errors = 0, built = 0, timeChanges = 0;
    uint64_t kinds[5] = {};
    double buildSeconds = 0;
};

// Every CPU's runs; one block table per process, shared by its CPUs.
template <bool Verify, bool Time = false>
WalkFigure walkPass(const LoadedTrace& t, std::vector<RunResult>* perRun, Unhandled& u) {
    Images images(*t.sideband);
    WalkFigure f;
    struct Process {
        pt_image* image = nullptr;
        std::unique_ptr<BlockTable> table;
    };
    std::map<int32_t, Process> processes;
    for (size_t c = 0; c < t.trace->cpus().size(); ++c) {
        const PtCpuTrace& cpu = t.trace->cpus()[c];
        const int32_t pid = cpu.tid > 0 ? t.sideband->pidOf(cpu.tid) : t.anyPid;
        Process& p = processes[pid];
        if (!p.image) p.image = images.pt->newImage(pid);
        std::unique_ptr<Walker> walker;
        for (size_t r = 0; r < cpu.runs.size(); ++r) {
            const PtRun& run = cpu.runs[r];
            if (run.end <= run.begin) continue;
            std::span<const uint8_t> bytes = t.runBytes[c][r];
            PtConfig config =
                makePtConfig(t.trace->configOptions(), bytes.data(), bytes.data() + bytes.size());
            if (!p.table) p.table = std::make_unique<BlockTable>(p.image, config.config);
            if (!walker) walker = std::make_unique<Walker>(*p.table, u);
            RunResult rr;
            walker->run<Verify, Time>(config.config, Verify ? &rr : nullptr);
            if (Verify) perRun->push_back(std::move(rr));
        }
        if (walker) {
            f.instructions += walker->instructions;
            f.blocks += walker->blocks;
            f.queries += walker->queries;
            f.errors += walker->errors;
            f.timeChanges += walker->timeChanges;
            for (int k = 0; k < 5; ++k)
                f.kinds[k] += walker->kinds[k];
        }
    }
    for (auto& [pid, p] : processes) {
        if (p.table) {
            f.built += p.table->built;
            f.buildSeconds += p.table->buildSeconds;
            if (p.table->unknownCond)
                u.add(u.stopped, "conditional branch displacement not understood",
                      "ip " + hex(p.table->unknownCond));
        }
        p.table.reset();
        pt_image_free(p.image);
    }
    return f;
}

// ---------------------------------------------------------------- report

void timeFile(const std::string& path, const LoadedTrace& t, unsigned rounds) {
    std::printf("  timing, %u round(s) each, interleaved, one thread:\n", rounds);
    double best[4] = {1e30, 1e30, 1e30, 1e30};  // (a), (w), (a+t), (w+t)
    auto line = [&](const char* name, double sec, uint64_t insns, uint64_t blocks, uint64_t errors,
                    const std::string& before, const std::string& extra) {
        std::printf("  %-27s %8.3f s %8.1f Minsn/s %11" PRIu64 " blocks %11" PRIu64 " insns %" PRIu64
                    " errors  [%s before, %s after]%s\n",
                    name, sec, double(insns) / sec / 1e6, blocks, insns, errors, before.c_str(),
                    load().c_str(), extra.c_str());
        std::fflush(stdout);
    };
    for (unsigned k = 0; k < rounds; ++k) {
        for (int timed = 0; timed < 2; ++timed) {
            uint64_t blocksA = 0, errorsA = 0, changesA = 0;
            std::string before = load();
            auto t0 = Clock::now();
            uint64_t insA = libiptPass(t, nullptr, blocksA, errorsA, timed, &changesA);
            double sa = since(t0);
            best[timed ? 2 : 0] = std::min(best[timed ? 2 : 0], sa);
            line(timed ? "(a+t) libipt + pt_blk_time" : "(a) libipt block decoder", sa, insA, blocksA,
                 errorsA, before, timed ? "  " + std::to_string(changesA) + " time changes" : std::string());
            Unhandled u;
            before = load();
            t0 = Clock::now();
            WalkFigure w =
                timed ? walkPass<false, true>(t, nullptr, u) : walkPass<false, false>(t, nullptr, u);
            double sw = since(t0);
            best[timed ? 3 : 1] = std::min(best[timed ? 3 : 1], sw);
            char extra[160];
            std::snprintf(extra, sizeof extra,
                          "\n      %" PRIu64 " queries, %" PRIu64 " blocks built in %.3f s%s", w.queries,
                          w.built, w.buildSeconds,
                          timed ? (", " + std::to_string(w.timeChanges) + " time changes").c_str() : "");
            line(timed ? "(w+t) walker + pt_qry_time" : "(w) walker over pt_qry", sw, w.instructions,
                 w.blocks, w.errors, before, extra);
        }
    }
    std::printf("  speed, best of %u: (w)/(a) %.2fx, (w+t)/(a+t) %.2fx  (%s, %s)\n", rounds,
                best[0] / best[1], best[2] / best[3], path.c_str(), load().c_str());
}

bool verifyFile(const std::string& path, const LoadedTrace& t) {
    std::vector<RunResult> ref, mine;
    uint64_t blocksA = 0, errorsA = 0;
    auto t0 = Clock::now();
    uint64_t insA = libiptPass(t, &ref, blocksA, errorsA);
    double sa = since(t0);
    Unhandled u;
    t0 = Clock::now();
    WalkFigure w = walkPass<true>(t, &mine, u);
    double sw = since(t0);
    const uint64_t truth = truthValue(path + ".truth", "instructions");
    std::printf("  verify (hashing, not timed: %.1f s / %.1f s): %zu runs; instructions: truth %" PRIu64
                ", libipt %" PRIu64 ", walker %" PRIu64 "; errors: libipt %" PRIu64 ", walker %" PRIu64 "\n",
                sa, sw, ref.size(), truth, insA, w.instructions, errorsA, w.errors);
    std::printf("  queries answered: TNT conditional %" PRIu64 ", TNT return %" PRIu64 ", TIP return %" PRIu64
                ", TIP indirect %" PRIu64 ", TIP far %" PRIu64 "; %" PRIu64 " blocks built\n",
                w.kinds[0], w.kinds[1], w.kinds[2], w.kinds[3], w.kinds[4], w.built);
    bool ok = true;
    size_t bad = 0;
    uint64_t edges = 0, tokens = 0;
    if (ref.size() != mine.size()) {
        std::printf("  FAIL   runs decoded: libipt %zu, walker %zu\n", ref.size(), mine.size());
        ok = false;
    }
    for (size_t i = 0; i < std::min(ref.size(), mine.size()); ++i) {
        const RunResult& a = ref[i];
        const RunResult& b = mine[i];
        edges += a.flow.edges;
        tokens += a.flow.tokens;
        if (a.instructions == b.instructions && a.flow.h == b.flow.h && a.flow.edges == b.flow.edges &&
            a.flow.tokens == b.flow.tokens)
            continue;
        ok = false;
        if (++bad <= 8)
            std::printf("  FAIL   run %zu: instructions %" PRIu64 " / %" PRIu64 ", edges %" PRIu64
                        " / %" PRIu64 ", events %" PRIu64 " / %" PRIu64 ", hash %016" PRIx64 " / %016" PRIx64
                        " (libipt / walker); first errors: '%s' / '%s'\n",
                        i, a.instructions, b.instructions, a.flow.edges, b.flow.edges, a.flow.tokens,
                        b.flow.tokens, a.flow.h, b.flow.h, a.firstError.c_str(), b.firstError.c_str());
    }
    std::printf("  %-6s per-run instruction counts and flow hashes equal (%zu runs, %" PRIu64
                " transfers, %" PRIu64 " flow events; %zu runs differ)\n",
                ok ? "PASS" : "FAIL", ref.size(), edges, tokens, bad);
    // Where libipt itself falls short of the truth (code not in the images, e.g.
    // the vDSO of a stepped program), the walker must fall short the same way.
    const bool truthOk = truth == 0 || w.instructions == truth || (w.instructions == insA && insA != truth);
    const char* verdict = truth == 0                                 ? "SKIP"
                          : w.instructions == truth && insA == truth ? "PASS"
                          : w.instructions == insA                   ? "SAME"
                                                                     : "FAIL";
    std::printf(
        "  %-6s total instructions: walker %" PRIu64 ", libipt %" PRIu64 ", truth %s%s\n", verdict,
        w.instructions, insA, truth ? std::to_string(truth).c_str() : "(no .truth)",
        std::strcmp(verdict, "SAME") == 0 ? " (both decoders short of the truth: see their errors)" : "");
    for (const auto& [what, e] : u.stopped)
        std::printf("  unhandled (run resynced) %" PRIu64 " x %s; first at %s\n", e.count, what.c_str(),
                    e.first.c_str());
    for (const auto& [what, e] : u.consumed)
        std::printf("  consumed without binding %" PRIu64 " x %s; first at %s\n", e.count, what.c_str(),
                    e.first.c_str());
    if (u.stopped.empty() && u.consumed.empty()) std::printf("  unhandled: none\n");
    return ok && truthOk && u.stopped.empty();
}

}  // namespace

int main(int argc, char** argv) {
    unsigned rounds = 2;
    unsigned profileRounds = 0;  // --profile-walker N: the walker alone, N times (for perf record)
    unsigned mutateEvery = 0;    // --mutate-psbs K
    bool time = true;
    std::vector<std::pair<std::string, bool>> files;  // path, timed
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--rounds" && i + 1 < argc)
            rounds = unsigned(std::strtoul(argv[++i], nullptr, 0));
        else if (a == "--no-time")
            time = false;
        else if (a == "--mutate-psbs" && i + 1 < argc)
            mutateEvery = unsigned(std::strtoul(argv[++i], nullptr, 0));
        else if (a == "--profile-walker" && i + 1 < argc)
            profileRounds = unsigned(std::strtoul(argv[++i], nullptr, 0));
        else if (a == "--verify-only-file" && i + 1 < argc)
            files.emplace_back(argv[++i], false);
        else if (!a.empty() && a[0] != '-')
            files.emplace_back(a, true);
        else {
            std::printf(
                "usage: bench_pt_walk [--rounds N (2)] [--no-time] [--profile-walker N] [--mutate-psbs K]\n"
                "                     [--verify-only-file F]... FILE...\n");
            return a == "-h" || a == "--help" ? 0 : 2;
        }
    }
    std::printf("bench_pt_walk: %s\n", load().c_str());
    bool allOk = true;
    for (const auto& [path, timed] : files) {
        LoadedTrace t;
        std::printf("\n== %s\n", path.c_str());
        if (!loadTrace(path, t, mutateEvery)) {
            allOk = false;
            continue;
        }
        std::printf("  %zu CPUs, %" PRIu64 " bytes of PT\n", t.trace->cpus().size(), t.bytes);
        if (profileRounds) {
            for (unsigned k = 0; k < profileRounds; ++k) {
                Unhandled u;
                auto t0 = Clock::now();
                WalkFigure w = walkPass<false>(t, nullptr, u);
                std::printf("  (w) %.3f s, %" PRIu64 " instructions [%s]\n", since(t0), w.instructions,
                            load().c_str());
            }
            continue;
        }
        if (timed && time) timeFile(path, t, rounds);
        allOk = verifyFile(path, t) && allOk;
    }
    std::printf("\n%s bench_pt_walk: %s\n", allOk ? "PASS" : "FAIL", load().c_str());
    return allOk ? 0 : 1;
}
