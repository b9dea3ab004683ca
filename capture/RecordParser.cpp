// SPDX-License-Identifier: GPL-3.0-or-later
#include "RecordParser.h"

#include <bit>
#include <cstring>
#include <type_traits>

namespace auxscope {
namespace {

// Older uapi headers (bookworm's is 6.1) may lack the newest record numbers.
constexpr uint32_t kRecordCgroup = 19, kRecordTextPoke = 20, kRecordAuxOutputHwId = 21;
// PERF_RECORD_USER_TYPE_START in perf: record types the kernel never writes.
constexpr uint32_t kUserRecordTypeStart = 64;

class Cursor {
public:
    Cursor(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
    bool u64(uint64_t& v) { return take(&v, 8); }
    bool u32(uint32_t& v) { return take(&v, 4); }
    bool skip(size_t n) {
        if (size_t(end_ - p_) < n) return false;
        p_ += n;
        return true;
    }
    const uint8_t* pos() const { return p_; }
    size_t left() const { return size_t(end_ - p_); }

private:
    bool take(void* v, size_t n) {
        if (size_t(end_ - p_) < n) return false;
        std::memcpy(v, p_, n);
        p_ += n;
        return true;
    }
    const uint8_t* p_;
    const uint8_t* end_;
};

std::string_view cString(const uint8_t* p, size_t max) {
    auto s = reinterpret_cast<const char*>(p);
    return {s, strnlen(s, max)};
}

bool parseSampleIdTrailer(const uint8_t* body, size_t bodyLen, uint64_t st, ParsedRecord& out) {
    unsigned n = sampleIdSize(st);
    if (bodyLen < n) return false;
    Cursor c(body + bodyLen - n, n);
    uint64_t v = 0;
    if (st & PERF_SAMPLE_TID) {
        c.u64(v);
        out.pid = int32_t(v & 0xffffffff);
        out.tid = int32_t(v >> 32);
    }
    if (st & PERF_SAMPLE_TIME) c.u64(out.time);
    if (st & PERF_SAMPLE_ID) c.u64(out.id);
    if (st & PERF_SAMPLE_STREAM_ID) c.u64(v);
    if (st & PERF_SAMPLE_CPU) {
        c.u64(v);
        out.cpu = uint32_t(v & 0xffffffff);
    }
    if (st & PERF_SAMPLE_IDENTIFIER) c.u64(out.id);
    out.hasSampleId = true;
    return true;
}

// Finds the event a sample belongs to: by the id at each placement the table
// knows (the event found must itself place its id there), else the sole event.
const EventLayout* sampleEvent(const uint8_t* body, size_t len, const IdTable& ids, uint64_t& id,
                               bool& idRead) {
    idRead = false;
    for (const IdPlacement& p : ids.placements()) {
        if (p.inSample < 0 || len < size_t(p.inSample + 1) * 8) continue;
        uint64_t v;
        std::memcpy(&v, body + size_t(p.inSample) * 8, 8);
        if (!idRead) id = v, idRead = true;
        const EventLayout* ev = ids.find(v);
        if (ev && (ids.placements().size() == 1 || idPlacement(ev->sampleType, ev->sampleIdAll) == p)) {
            id = v;
            return ev;
        }
    }
    return ids.soleEvent();
}

std::optional<std::string> parseSample(const uint8_t* body, size_t len, const IdTable& ids,
                                       ParsedRecord& out) {
    bool idRead = false;
    out.event = sampleEvent(body, len, ids, out.id, idRead);
    if (!out.event) {
        if (!idRead) return "sample too short for its identifier";
        return std::string(kUnknownEventIdError) + " " + std::to_string(out.id);
    }
    Cursor c(body, len);
    const uint64_t st = out.event->sampleType;
    uint64_t v = 0;
    auto cut = [](const char* field) { return std::string("sample cut short in field ") + field; };
    if (st & PERF_SAMPLE_IDENTIFIER) {
        if (!c.u64(out.id)) return cut("identifier");
    }
    if ((st & PERF_SAMPLE_IP) && !c.u64(out.ip)) return cut("ip");
    if (st & PERF_SAMPLE_TID) {
        if (!c.u64(v)) return cut("tid");
        out.pid = int32_t(v & 0xffffffff);
        out.tid = int32_t(v >> 32);
    }
    if ((st & PERF_SAMPLE_TIME) && !c.u64(out.time)) return cut("time");
    if ((st & PERF_SAMPLE_ADDR) && !c.u64(out.addr)) return cut("addr");
    if (st & PERF_SAMPLE_ID) {
        if (!c.u64(v)) return cut("id");
        if (!(st & PERF_SAMPLE_IDENTIFIER)) out.id = v;
    }
    if ((st & PERF_SAMPLE_STREAM_ID) && !c.u64(v)) return cut("stream_id");
    if (st & PERF_SAMPLE_CPU) {
        if (!c.u64(v)) return cut("cpu");
        out.cpu = uint32_t(v & 0xffffffff);
    }
    if ((st & PERF_SAMPLE_PERIOD) && !c.u64(out.period)) return cut("period");
    if (st & PERF_SAMPLE_READ) {
        const uint64_t rf = out.event->readFormat;
        if (rf & PERF_FORMAT_GROUP) {
            uint64_t nr = 0;
            if (!c.u64(nr)) return cut("read");
            unsigned extra =
                ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) != 0) + ((rf & PERF_FORMAT_TOTAL_TIME_RUNNING) != 0);
            unsigned per = 1 + ((rf & PERF_FORMAT_ID) != 0) + ((rf & PERF_FORMAT_LOST) != 0);
            // nr comes from the record: bound it before multiplying.
            if (nr > c.left() / 8 || !c.skip(8 * (extra + nr * per))) return cut("read");
        } else {
            unsigned n = 1 + ((rf & PERF_FORMAT_TOTAL_TIME_ENABLED) != 0) +
                         ((rf & PERF_FORMAT_TOTAL_TIME_RUNNING) != 0) + ((rf & PERF_FORMAT_ID) != 0) +
                         ((rf & PERF_FORMAT_LOST) != 0);
            if (!c.skip(8 * n)) return cut("read");
        }
    }
    if (st & PERF_SAMPLE_CALLCHAIN) {
        uint64_t nr = 0;
        if (!c.u64(nr) || nr > c.left() / 8) return cut("callchain");
        out.callchain = {c.pos(), size_t(nr) * 8};
        c.skip(size_t(nr) * 8);
    }
    if (st & PERF_SAMPLE_RAW) {
        uint32_t size = 0;
        if (!c.u32(size) || size > c.left()) return cut("raw");
        out.raw = {c.pos(), size};
        c.skip(size);
    }
    // The fields below are read only when asked for: the fast path (auxscope's
    // own events) stops here. A sample cut short among them keeps what was read.
    out.hasSampleId = true;
    const EventLayout& ev = *out.event;
    if (st & PERF_SAMPLE_BRANCH_STACK) {
        uint64_t nr = 0;
        if (!c.u64(nr)) return cut("branch_stack");
        if ((ev.branchSampleType & PERF_SAMPLE_BRANCH_HW_INDEX) && !c.u64(out.branchHwIndex))
            return cut("branch_stack hw_idx");
        if (nr > c.left() / 24) return cut("branch_stack");
        out.branches = {c.pos(), size_t(nr) * 24};
        c.skip(size_t(nr) * 24);
        // Kernels from 6.8 add a u64 of event counts per branch (PERF_SAMPLE_BRANCH_COUNTERS).
        constexpr uint64_t kBranchCounters = 1ull << 19;
        if ((ev.branchSampleType & kBranchCounters) && !c.skip(size_t(nr) * 8))
            return cut("branch_stack counters");
    }
    // {u64 abi; u64 regs[popcount(mask)] when abi is not NONE}
    auto regs = [&](uint64_t mask, uint64_t& abi, std::span<const uint8_t>* into) {
        if (!c.u64(abi)) return false;
        if (abi == PERF_SAMPLE_REGS_ABI_NONE) return true;
        const size_t n = size_t(std::popcount(mask)) * 8;
        if (c.left() < n) return false;
        if (into) *into = {c.pos(), n};
        return c.skip(n);
    };
    if ((st & PERF_SAMPLE_REGS_USER) && !regs(ev.sampleRegsUser, out.regsUserAbi, &out.regsUser))
        return cut("regs_user");
    if (st & PERF_SAMPLE_STACK_USER) {
        uint64_t size = 0;
        if (!c.u64(size) || size > c.left()) return cut("stack_user");
        out.stackUserSize = size;
        if (size) {
            const uint8_t* data = c.pos();
            c.skip(size_t(size));
            uint64_t dyn = 0;
            if (!c.u64(dyn)) return cut("stack_user dyn_size");
            out.stackUser = {data, size_t(std::min(dyn, size))};
        }
    }
    if ((st & (PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT)) && !c.u64(out.weight)) return cut("weight");
    if ((st & PERF_SAMPLE_DATA_SRC) && !c.u64(out.dataSrc)) return cut("data_src");
    if ((st & PERF_SAMPLE_TRANSACTION) && !c.u64(out.transaction)) return cut("transaction");
    if (st & PERF_SAMPLE_REGS_INTR) {
        uint64_t abi = 0;
        if (!regs(ev.sampleRegsIntr, abi, nullptr)) return cut("regs_intr");
    }
    if ((st & PERF_SAMPLE_PHYS_ADDR) && !c.u64(out.physAddr)) return cut("phys_addr");
    return std::nullopt;
}

// Finds the event a non-sample record belongs to by the id at the end of its
// sample_id trailer, else the sole event; nullptr when neither applies.
const EventLayout* trailerEvent(const uint8_t* body, size_t len, const IdTable& ids) {
    for (const IdPlacement& p : ids.placements()) {
        if (p.fromEnd < 1 || len < size_t(p.fromEnd) * 8) continue;
        uint64_t id;
        std::memcpy(&id, body + len - size_t(p.fromEnd) * 8, 8);
        const EventLayout* ev = ids.find(id);
        if (ev && ev->sampleIdAll &&
            (ids.placements().size() == 1 || idPlacement(ev->sampleType, ev->sampleIdAll) == p))
            return ev;
    }
    return ids.soleEvent();
}

}  // namespace

IdPlacement idPlacement(uint64_t st, bool sampleIdAll) {
    IdPlacement p;
    if (st & PERF_SAMPLE_IDENTIFIER) {
        p.inSample = 0;
        p.fromEnd = sampleIdAll ? 1 : -1;
    } else if (st & PERF_SAMPLE_ID) {
        p.inSample =
            std::popcount(st & (PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR));
        p.fromEnd = sampleIdAll ? 1 + std::popcount(st & (PERF_SAMPLE_CPU | PERF_SAMPLE_STREAM_ID)) : -1;
    }
    return p;
}

void IdTable::add(uint64_t id, EventLayout layout) {
    IdPlacement p = idPlacement(layout.sampleType, layout.sampleIdAll);
    bool known = false;
    for (const IdPlacement& q : placements_)
        known = known || q == p;
    if (!known) placements_.push_back(p);
    const auto at = std::lower_bound(ids_.begin(), ids_.end(), id);
    const size_t i = size_t(at - ids_.begin());
    if (at != ids_.end() && *at == id) {
        layouts_[slots_[i]] = layout;  // in place: pointers handed out stay valid
        return;
    }
    layouts_.push_back(layout);
    ids_.insert(at, id);
    slots_.insert(slots_.begin() + long(i), uint32_t(layouts_.size() - 1));
}

unsigned sampleIdSize(uint64_t st) {
    // Six bits tested one by one: on every non-sample record of a walk, and
    // std::popcount is a call into libgcc where the build may not assume the
    // POPCNT instruction (3 % of a sideband walk's time).
    return 8u * unsigned(((st & PERF_SAMPLE_TID) != 0) + ((st & PERF_SAMPLE_TIME) != 0) +
                         ((st & PERF_SAMPLE_ID) != 0) + ((st & PERF_SAMPLE_STREAM_ID) != 0) +
                         ((st & PERF_SAMPLE_CPU) != 0) + ((st & PERF_SAMPLE_IDENTIFIER) != 0));
}

const char* recordTypeName(uint32_t type) {
    switch (type) {
        case PERF_RECORD_MMAP:
            return "MMAP";
        case PERF_RECORD_LOST:
            return "LOST";
        case PERF_RECORD_COMM:
            return "COMM";
        case PERF_RECORD_EXIT:
            return "EXIT";
        case PERF_RECORD_THROTTLE:
            return "THROTTLE";
        case PERF_RECORD_UNTHROTTLE:
            return "UNTHROTTLE";
        case PERF_RECORD_FORK:
            return "FORK";
        case PERF_RECORD_READ:
            return "READ";
        case PERF_RECORD_SAMPLE:
            return "SAMPLE";
        case PERF_RECORD_MMAP2:
            return "MMAP2";
        case PERF_RECORD_AUX:
            return "AUX";
        case PERF_RECORD_ITRACE_START:
            return "ITRACE_START";
        case PERF_RECORD_LOST_SAMPLES:
            return "LOST_SAMPLES";
        case PERF_RECORD_SWITCH:
            return "SWITCH";
        case PERF_RECORD_SWITCH_CPU_WIDE:
            return "SWITCH_CPU_WIDE";
        case PERF_RECORD_NAMESPACES:
            return "NAMESPACES";
        case PERF_RECORD_KSYMBOL:
            return "KSYMBOL";
        case PERF_RECORD_BPF_EVENT:
            return "BPF_EVENT";
        case kRecordCgroup:
            return "CGROUP";
        case kRecordTextPoke:
            return "TEXT_POKE";
        case kRecordAuxOutputHwId:
            return "AUX_OUTPUT_HW_ID";
        default:
            return nullptr;
    }
}

namespace {

// `out = ParsedRecord{}`, which GCC makes a `rep stos` of its 328 bytes and then
// stores the fields that are not zero: 20-35 ns a record on this VM's EPYC, a
// third of parseRecord's time in a perf.data walk. Copied from a constant in
// 16-byte pieces, the compiler stores the constant's values directly: 11 ns.
void resetRecord(ParsedRecord& out) {
    static_assert(std::is_trivially_copyable_v<ParsedRecord>);
    static constexpr ParsedRecord kEmpty{};
    auto* to = reinterpret_cast<unsigned char*>(&out);
    const auto* from = reinterpret_cast<const unsigned char*>(&kEmpty);
    constexpr size_t n = sizeof(ParsedRecord);
#pragma GCC unroll 64
    for (size_t i = 0; i < n; i += 16)
        std::memcpy(to + i, from + i, n - i < 16 ? n - i : 16);
}

}  // namespace

std::optional<std::string> parseRecord(std::span<const uint8_t> rec, const IdTable& ids, ParsedRecord& out) {
    resetRecord(out);
    perf_event_header hdr;
    if (rec.size() < sizeof hdr) return "record shorter than its header";
    std::memcpy(&hdr, rec.data(), sizeof hdr);
    out.type = hdr.type;
    out.misc = hdr.misc;
    const uint8_t* body = rec.data() + sizeof hdr;
    size_t len = rec.size() - sizeof hdr;

    if (hdr.type == PERF_RECORD_SAMPLE) return parseSample(body, len, ids, out);
    // perf's own records (HEADER_ATTR, AUXTRACE, FINISHED_ROUND, ...) and
    // simpleperf's (>= 32768) carry no sample_id trailer.
    if (hdr.type >= kUserRecordTypeStart) return std::nullopt;

    // Every other kernel record ends in sample_id (when the event asked for
    // sample_id_all); the id sits at a fixed distance from its end.
    if (const EventLayout* ev = trailerEvent(body, len, ids)) {
        out.event = ev;
        if (ev->sampleIdAll && parseSampleIdTrailer(body, len, ev->sampleType, out))
            len -= sampleIdSize(ev->sampleType);
    }
    Cursor c(body, len);
    uint32_t a = 0, b = 0;
    uint64_t v = 0;
    auto cut = [&](const char* what) {
        return std::string(recordTypeName(hdr.type) ? recordTypeName(hdr.type) : "record") +
               " record too short for " + what;
    };
    switch (hdr.type) {
        case PERF_RECORD_LOST:
            if (!c.u64(v) || !c.u64(out.lost)) return cut("id and lost count");
            break;
        case PERF_RECORD_LOST_SAMPLES:
            if (!c.u64(out.lost)) return cut("lost count");
            break;
        case PERF_RECORD_COMM:
            if (!c.u32(a) || !c.u32(b)) return cut("pid/tid");
            out.pid = int32_t(a), out.tid = int32_t(b);
            out.comm = cString(c.pos(), c.left());
            break;
        case PERF_RECORD_FORK:
        case PERF_RECORD_EXIT: {
            uint32_t pid, ppid, tid, ptid;
            if (!c.u32(pid) || !c.u32(ppid) || !c.u32(tid) || !c.u32(ptid) || !c.u64(out.time))
                return cut("pids and time");
            out.pid = int32_t(pid), out.ppid = int32_t(ppid), out.tid = int32_t(tid),
            out.ptid = int32_t(ptid);
            break;
        }
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2:
            if (!c.u32(a) || !c.u32(b) || !c.u64(out.mapStart) || !c.u64(out.mapLen) || !c.u64(out.mapPgoff))
                return cut("mapping");
            out.pid = int32_t(a), out.tid = int32_t(b);
            if (hdr.type == PERF_RECORD_MMAP2 && !c.skip(24 + 8))
                return cut("device/build-id, prot and flags");
            out.filename = cString(c.pos(), c.left());
            break;
        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
            if (!c.u64(out.time)) return cut("time");
            break;
        case PERF_RECORD_AUX:
            if (!c.u64(out.auxOffset) || !c.u64(out.auxSize) || !c.u64(out.auxFlags))
                return cut("offset/size/flags");
            break;
        case PERF_RECORD_ITRACE_START:
            if (!c.u32(a) || !c.u32(b)) return cut("pid/tid");
            out.pid = int32_t(a), out.tid = int32_t(b);
            break;
        case PERF_RECORD_SWITCH:
            out.switchOut = hdr.misc & PERF_RECORD_MISC_SWITCH_OUT;
            break;
        case PERF_RECORD_SWITCH_CPU_WIDE:
            out.switchOut = hdr.misc & PERF_RECORD_MISC_SWITCH_OUT;
            if (!c.u32(a) || !c.u32(b)) return cut("next/prev pid");
            out.nextPrevPid = int32_t(a), out.nextPrevTid = int32_t(b);
            break;
        default:
            break;  // kept and counted by type; no fields needed yet
    }
    return std::nullopt;
}

}  // namespace auxscope
