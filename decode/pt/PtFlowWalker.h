// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Intel PT control flow followed over libipt's query decoder, for the span
// decode (PtSession::decodeSegment): the same flow libipt's block decoder gives,
// at more than twice its speed (bench_pt_decode: (w) beside (a); ptsynth_tests
// check that the spans equal those through the block decoder).
//
// libipt's block decoder spends most of its time per block on bookkeeping (its
// block cache per section, event checks, the image lookup) around the few
// queries a block needs. Here each process's code is read once per start IP into
// a flat table of blocks: the path from that IP through the direct jumps and
// calls that need no trace (libipt's own instruction decoder walks it, as
// InsnProbe does) up to and including the first instruction that needs trace,
// with its instruction count, the return addresses its direct calls push, how it
// ends, and links to the blocks that follow (filled in as they are taken). The
// walk then asks the query decoder only what the trace says: a TNT bit for a
// conditional branch, a TNT bit or a TIP for a return (return compression pops
// our own 64-deep return stack, libipt's ring semantics), a TIP for an indirect
// branch or a far transfer. Events are bound to the instruction libipt's block
// decoder binds them to (pt_block_decoder.c): enabled resumes at its IP;
// disabled binds to the next branch that needs trace (or its IP); async
// disabled and async branch walk without trace to their IP; exec mode, async
// paging and async VMCS apply when the walk reaches their IP; TSX, EXSTOP and
// MWAIT at their IP; overflow resumes at its IP.
//
// What it does not handle -- a disable under erratum SKL014 with address
// filters, an async disable on VMLAUNCH/VMRESUME under SKD022, a synchronous
// disable on a path through MOV CR3, a 16-bit conditional displacement, an event
// IP inside an instruction or never reached, an unknown event -- returns
// kUnhandled: the caller decodes the segment again with libipt's block decoder,
// so such a trace is decoded as before, only slower.
#include <intel-pt.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <vector>

#include "pt/PtInsnProbe.h"
#include "spans/FlowToSpans.h"

namespace auxscope::ptwalk {

// Returned where the walker stops without an answer (see the top).
constexpr int kUnhandled = -1000;

enum class End : uint8_t {
    Straight,  // cut at the length limit: continue at `fall` without trace
    Cond,      // one TNT bit: target or fall
    Return,    // a TNT bit (compressed: pop) or a TIP
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
    uint32_t offsets = 0;  // index of the first instruction in BlockTable::offsets / classes
    uint32_t next[2] = {UINT32_MAX, UINT32_MAX};  // [0] fall / not taken / last taken, [1] taken
    uint32_t pushes = 0;                          // index of the first push in BlockTable::pushes
    uint16_t npush = 0;                           // direct calls on the path
    uint32_t indRet = UINT32_MAX;                 // End::IndCall: its entry in BlockTable::pushes
    End end = End::Straight;
    BranchClass lastClass = BranchClass::Other;  // how the last instruction leaves
    bool farCall = false;                        // End::Far: a far call (a disable there resumes after it)
    bool movCr3 = false;                         // a MOV to CR3 on the path
    int error = 0;                               // End::Fault: the decode error
    // The sink's own per-block cache (PtSession: the block's function and where
    // it changes function), valid for the table's process; `known` once set.
    uint32_t sinkFunction = 0;
    const void* sinkShape = nullptr;
    bool known = false;
};

// A call on a block's path: its return address, pushed after instruction `at`,
// and the block a return to it lands on (UINT32_MAX until first needed).
struct Push {
    uint32_t at;
    uint32_t block;
    uint64_t ret;
};

// ip -> value, open addressing with linear probing (key 0: free; no code runs
// at 0). The hot loops look up every block's start: a flat table keeps that to
// one multiply and, with key and value side by side, usually one cache line.
template <typename V>
class IpMap {
public:
    explicit IpMap(size_t capacity = 1024) { reset(capacity); }
    // The value for `ip`, null when absent.
    [[gnu::always_inline]] const V* find(uint64_t ip) const {
        for (size_t i = slot(ip);; i = (i + 1) & mask_) {
            const Entry& e = table_[i];
            if (e.key == ip) [[likely]]
                return &e.value;
            if (!e.key) return nullptr;
        }
    }
    // `ip` must not be 0.
    void insert(uint64_t ip, V value) {
        if ((count_ + 1) * 4 > (mask_ + 1) * 3) grow();
        size_t i = slot(ip);
        while (table_[i].key && table_[i].key != ip)
            i = (i + 1) & mask_;
        if (!table_[i].key) ++count_;
        table_[i] = {ip, value};
    }
    void clear(size_t capacity = 1024) { reset(capacity); }

private:
    struct Entry {
        uint64_t key;
        V value;
    };
    size_t slot(uint64_t ip) const { return size_t((ip * 0x9e3779b97f4a7c15ull) >> shift_); }
    void reset(size_t capacity) {
        table_.assign(capacity, Entry{0, V{}});
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

// Whether `b` is an x86 legacy prefix (operand/address size, REP, LOCK, segment).
inline bool isX86Prefix(uint8_t b) {
    return b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0xf0 || b == 0x2e || b == 0x36 ||
           b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65;
}

// libipt's return stack (pt_retstack.c): 64 entries in a ring of 65, the oldest
// overwritten when full; popping an empty one is an error. Beside each address
// the call site that pushed it (BlockTable::pushes), which caches the block a
// return to it lands on.
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

BranchClass branchClassOf(pt_insn_class iclass);
// The target of a conditional branch (Jcc rel8/rel32, LOOP*, JrCXZ) from its
// bytes; false for a form it does not know (rel16).
bool condTarget(const pt_insn& insn, uint64_t& target);
// MOV CR3, r (0f 22 /r, ModRM.reg 3).
bool isMovToCr3(const pt_insn& insn);

// One process's code in one execution mode: blocks by start IP, built on first use.
class BlockTable {
public:
    // `image` must outlive the table.
    BlockTable(pt_image* image, const pt_config& base) : image_(image), probe_(base) {}

    std::vector<Block> blocks;
    std::vector<int32_t> offsets;      // per block: each instruction's IP minus the block's start
    std::vector<BranchClass> classes;  // per block: how each instruction leaves
    std::vector<Push> pushes;
    pt_exec_mode mode = ptem_64bit;
    int32_t owner = -1;  // the process whose code it is (for the sink's own use)

    // The block starting at `ip`, built when new.
    [[gnu::always_inline]] uint32_t at(uint64_t ip) {
        if (ip) [[likely]]
            if (const uint32_t* i = index_.find(ip)) [[likely]]
                return *i;
        return build(ip);
    }
    // Another execution mode decodes the same bytes differently: the table starts afresh.
    void setMode(pt_exec_mode m);
    // The instruction at `ip` is VMLAUNCH or VMRESUME.
    bool isVmEntry(uint64_t ip);

private:
    static constexpr size_t kMaxBlock = 512;
    [[gnu::noinline]] uint32_t build(uint64_t ip);

    pt_image* image_;
    InsnProbe probe_;
    IpMap<uint32_t> index_{4096};
    // The block at IP 0, which index_ cannot hold (0 marks its free slots): a
    // corrupt trace may name it (a fuzzer's input did).
    uint32_t zeroBlock_ = UINT32_MAX;
};

// The walk over one segment's query decoder. Sink:
//   bool block(Block& b, uint32_t count, BranchClass last): the first
//     `count` instructions of `b` run (count < b.ninsn: up to an event's IP;
//     `last`: how the count-th leaves); called before the block's branch is
//     queried, so the decoder's time is the block's. True when the process
//     changed: *table then points to its table, used from the next block on.
//   int event(const pt_event& ev): after the walker bound `ev`; 0 goes on, a
//     negative status stops the walk with it.
template <typename Sink>
class Walker {
public:
    Walker(pt_query_decoder* decoder, BlockTable** table, Sink& sink)
        : q_(decoder), table_(table), sink_(sink) {}

    uint64_t ip() const { return ip_; }
    bool enabled() const { return enabled_; }
    uint64_t offset() const {
        uint64_t o = 0;
        pt_qry_get_offset(q_, &o);
        return o;
    }

    int sync() {
        ret_.clear();
        enabled_ = false;
        ip_ = 0;
        mode_ = ptem_unknown;  // as pt_blk_reset: PSB+ tells it
        int status = pt_qry_sync_forward(q_, &ip_);
        if (status >= 0 && !(status & pts_ip_suppressed)) enabled_ = true;
        return status;
    }

    // Tracing enabled, no event pending: blocks until a query reports an event
    // pending or fails. Returns that status, ip() at the next instruction (at a
    // failing one: the instruction whose branch failed, or the IP that could not
    // be decoded).
    int hot() {
        if (mode_ == ptem_unknown) [[unlikely]]
            return -pte_bad_insn;
        BlockTable* t = *table_;
        if (t->mode != mode_) {
            t->setMode(mode_);
            ret_.forgetSites();
        }
        uint32_t cur = t->at(ip_);
        Block* base = t->blocks.data();
        Push* pushes = t->pushes.data();
        auto reload = [&] {
            base = t->blocks.data();
            pushes = t->pushes.data();
        };
        for (;;) {
            Block* b = base + cur;
            const bool switched = sink_.block(*b, b->ninsn, b->lastClass);
            for (uint32_t k = 0; k < b->npush; ++k)
                ret_.push(pushes[b->pushes + k].ret, switched ? UINT32_MAX : b->pushes + k);
            if (b->end == End::Straight) [[unlikely]] {
                if (switched) {
                    ip_ = b->fall;
                    ret_.forgetSites();  // they index the other process's table
                    return 0;
                }
                uint32_t next = b->next[0];
                if (next == UINT32_MAX) {
                    next = t->at(b->fall);
                    reload();
                    base[cur].next[0] = next;
                }
                cur = next;
                continue;
            }
            if (b->end == End::Fault) [[unlikely]] {
                ip_ = b->target;
                return b->error;
            }
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
            const int s = query(*b, dst, slot, site, switched);
            if (s < 0) [[unlikely]] {
                ip_ = b->last;
                return s;
            }
            if (switched || (s & pts_event_pending)) [[unlikely]] {
                ip_ = dst;
                if (switched) ret_.forgetSites();
                return s;
            }
            uint32_t next;
            if (slot >= 0) [[likely]] {
                next = b->next[slot];
                if (next == UINT32_MAX) [[unlikely]] {
                    next = t->at(dst);
                    reload();
                    base[cur].next[slot] = next;
                }
            } else if (site != UINT32_MAX) {
                // A compressed return: the block its call site returns to.
                next = pushes[site].block;
                if (next == UINT32_MAX) [[unlikely]] {
                    next = t->at(dst);
                    reload();
                    pushes[site].block = next;
                }
            } else {
                // Other returns, indirect branches: the last destination, else the index.
                next = b->next[0];
                if (next == UINT32_MAX || base[next].ip != dst) {
                    next = t->at(dst);
                    reload();
                    base[cur].next[0] = next;
                }
            }
            cur = next;
        }
    }

    // Handles the pending events; returns the status to go on with.
    int events(int status) {
        while (status >= 0 && (status & pts_event_pending)) {
            pt_event ev;
            status = pt_qry_event(q_, &ev, sizeof ev);
            if (status < 0) return status;
            if (int s = event(ev, status); s < 0) return s;
            if (int s = sink_.event(ev); s < 0) return s;
        }
        return status;
    }

private:
    [[gnu::always_inline]] int query(const Block& b, uint64_t& dst, int& slot, uint32_t& site,
                                     bool switched) {
        int s;
        switch (b.end) {
            case End::Cond: {
                int taken;
                s = pt_qry_cond_branch(q_, &taken);
                if (s < 0) return s;
                slot = taken;
                dst = taken ? b.target : b.fall;
                return s;
            }
            case End::Return: {
                int taken;
                s = pt_qry_cond_branch(q_, &taken);
                if (s >= 0) {
                    if (!taken) return -pte_bad_retcomp;
                    if (!ret_.pop(dst, site)) return -pte_retstack_empty;
                    break;
                }
                if (s != -pte_bad_query) return s;
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                break;
            }
            case End::IndJump:
            case End::Far:
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                break;
            case End::IndCall:
                ret_.push(b.fall, switched ? UINT32_MAX : b.indRet);
                s = pt_qry_indirect_branch(q_, &dst);
                if (s < 0) return s;
                if (s & pts_ip_suppressed) return -pte_noip;
                break;
            default:
                return -pte_internal;
        }
        slot = -1;
        return s;
    }

    enum class Trace { Allowed, Forbidden, BindDisable };
    static constexpr uint64_t kNoIp = ~0ull;

    // Walks from ip_ until ip_ == `to` (kNoIp: never), instruction by
    // instruction where `to` lies on a block's path, else a block at a time.
    // Allowed queries branches on the way, Forbidden fails at one
    // (-pte_bad_query, as pt_blk_proceed_to_ip), BindDisable stops after the
    // first branch that needs trace (a synchronous disable binds there) and
    // returns 1. Returns 0 when `to` was reached.
    int walkTo(uint64_t to, Trace trace, int& status) {
        if (ip_ != to && mode_ == ptem_unknown) return -pte_bad_insn;
        for (uint64_t steps = 0; steps < (1u << 22); ++steps) {
            if (ip_ == to) return 0;
            BlockTable* t = *table_;
            if (t->mode != mode_) {
                t->setMode(mode_);
                ret_.forgetSites();
            }
            const uint32_t cur = t->at(ip_);
            if (trace == Trace::BindDisable && t->blocks[cur].movCr3) return kUnhandled;
            Block& b = t->blocks[cur];
            uint32_t upTo = b.ninsn;  // instructions of the path executed
            if (to != kNoIp)
                for (uint32_t j = 1; j < b.ninsn; ++j)
                    if (b.ip + uint64_t(int64_t(t->offsets[b.offsets + j])) == to) {
                        upTo = j;
                        break;
                    }
            const BranchClass last = upTo < b.ninsn ? t->classes[b.offsets + upTo - 1] : b.lastClass;
            const bool switched = sink_.block(b, upTo, last);
            for (uint32_t k = 0; k < b.npush; ++k)
                if (t->pushes[b.pushes + k].at < upTo)
                    ret_.push(t->pushes[b.pushes + k].ret, switched ? UINT32_MAX : b.pushes + k);
            if (switched) ret_.forgetSites();
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
                // returns to; else unknown.
                if (b.end == End::IndCall) ret_.push(b.fall, UINT32_MAX);
                ip_ = b.end == End::IndCall || b.farCall ? b.fall : 0;
                return 1;
            }
            uint64_t dst = 0;
            int slot = -1;
            uint32_t site = UINT32_MAX;
            int s = query(b, dst, slot, site, true);
            if (s < 0) {
                ip_ = b.last;
                return s;
            }
            status = s;
            ip_ = dst;
        }
        return kUnhandled;  // the event's IP was never reached
    }

    int event(const pt_event& ev, int& status) {
        switch (ev.type) {
            case ptev_enabled:
                if (ev.status_update) return -pte_bad_context;
                if (ev.ip_suppressed) return -pte_noip;
                if (enabled_) return -pte_bad_context;
                ip_ = ev.variant.enabled.ip;
                enabled_ = true;
                return 0;
            case ptev_disabled: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                const pt_config* c = pt_qry_get_config(q_);
                if (ev.ip_suppressed && c->addr_filter.config.addr_cfg && c->errata.skl014) return kUnhandled;
                int s = walkTo(ev.ip_suppressed ? kNoIp : ev.variant.disabled.ip, Trace::BindDisable, status);
                if (s < 0) return s;
                enabled_ = false;
                return 0;
            }
            case ptev_async_disabled: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                int s = walkTo(ev.variant.async_disabled.at, Trace::Forbidden, status);
                if (s < 0) return s;
                if (pt_qry_get_config(q_)->errata.skd022 &&
                    (*table_)->isVmEntry(ev.variant.async_disabled.at))
                    return kUnhandled;
                enabled_ = false;
                return 0;
            }
            case ptev_async_branch: {
                if (ev.status_update || !enabled_) return -pte_bad_context;
                int s = walkTo(ev.variant.async_branch.from, Trace::Forbidden, status);
                if (s < 0) return s;
                ip_ = ev.variant.async_branch.to;
                return 0;
            }
            case ptev_overflow:
                if (ev.status_update) return -pte_bad_context;
                enabled_ = !ev.ip_suppressed;
                ip_ = ev.ip_suppressed ? 0 : ev.variant.overflow.ip;
                return 0;
            case ptev_exec_mode: {
                if (enabled_ && !ev.ip_suppressed) {
                    int s = walkTo(ev.variant.exec_mode.ip, Trace::Allowed, status);
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
                    int s = walkTo(at, Trace::Allowed, status);
                    if (s < 0) return s;
                }
                return 0;
            case ptev_tsx:
                if (enabled_ && !ev.ip_suppressed) {
                    int s = walkTo(ev.variant.tsx.ip, Trace::Forbidden, status);
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
                    int s = walkTo(at, Trace::Forbidden, status);
                    if (s < 0) return s;
                }
                return 0;
            case ptev_paging:
            case ptev_vmcs:
            case ptev_ptwrite:
                // Bound by libipt to the next MOV CR3 / VMPTRLD / PTWRITE: no
                // flow change; a block decoder ends its block there, the span
                // decode does not care.
                return 0;
            case ptev_pwre:
            case ptev_pwrx:
            case ptev_tick:
            case ptev_cbr:
            case ptev_mnt:
                return 0;
        }
        return kUnhandled;
    }

    pt_query_decoder* q_;
    BlockTable** table_;
    Sink& sink_;
    RetStack ret_;
    uint64_t ip_ = 0;
    bool enabled_ = false;
    pt_exec_mode mode_ = ptem_64bit;
};

}  // namespace auxscope::ptwalk
