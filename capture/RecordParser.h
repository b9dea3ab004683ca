// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Decodes the records the kernel writes into a perf data ring (and that perf.data
// stores verbatim). Every record is attributed to its event by id, and that
// event's sample_type says how to read the rest.
//
// All events auxscope opens carry PERF_SAMPLE_IDENTIFIER and sample_id_all: the id
// is then the first u64 of a sample and the last u64 of any other record (the fast
// path). Files written by perf or simpleperf often use PERF_SAMPLE_ID instead, or
// no id at all when they hold a single event; IdTable follows perf's rule for
// where the id sits then (see IdPlacement) and attributes every record to the sole
// event of a single-event file.
#include <linux/perf_event.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace auxscope {

// Record types this build knows by name; newer kernels may send higher numbers,
// which are counted as "unknown type N", never dropped silently.
constexpr uint32_t kRecordTypeSlots = 32;
const char* recordTypeName(uint32_t type);

struct EventLayout {
    uint64_t sampleType = 0;
    uint64_t readFormat = 0;
    int descIndex = -1;  // which EventDesc of the session this id belongs to
    int cpu = -1;
    bool sampleIdAll = true;  // attr.sample_id_all: non-sample records end in a sample_id trailer
    // What the later sample fields' sizes depend on (attr.sample_regs_user,
    // attr.branch_sample_type, attr.sample_regs_intr).
    uint64_t sampleRegsUser = 0;
    uint64_t branchSampleType = 0;
    uint64_t sampleRegsIntr = 0;
};

// The layout an event's attr gives its records.
inline EventLayout eventLayoutOf(const perf_event_attr& a, int descIndex, int cpu) {
    return EventLayout{a.sample_type,      a.read_format,        descIndex,         cpu, a.sample_id_all != 0,
                       a.sample_regs_user, a.branch_sample_type, a.sample_regs_intr};
}

// Where an event's records carry its id, by perf's rule. In a sample: the index of
// the u64 holding it, counting the sample's u64 fields from the first (0 with
// IDENTIFIER, else the number of IP/TID/TIME/ADDR fields before ID). In any other
// record: how many u64 from the record's end (1 with IDENTIFIER, else 1 + the
// CPU/STREAM_ID fields after ID). -1: such records carry no id.
struct IdPlacement {
    int inSample = -1;
    int fromEnd = -1;
    bool operator==(const IdPlacement&) const = default;
};
IdPlacement idPlacement(uint64_t sampleType, bool sampleIdAll = true);

class IdTable {
public:
    void add(uint64_t id, EventLayout layout);
    // Looked up for every record on the drain and writer threads: a sorted array
    // of ids (a capture has a few per CPU), scanned or bisected, beats hashing.
    const EventLayout* find(uint64_t id) const {
        const size_t n = ids_.size();
        size_t i = 0;
        if (n <= 16) {
            while (i < n && ids_[i] < id)
                ++i;
        } else {
            i = size_t(std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin());
        }
        return i < n && ids_[i] == id ? &layouts_[slots_[i]] : nullptr;
    }
    size_t size() const { return ids_.size(); }

    // The file holds one event only: every record belongs to it, with or without an id.
    void setSoleEvent(EventLayout layout) { sole_ = layout, hasSole_ = true; }
    void clearSoleEvent() { hasSole_ = false; }
    const EventLayout* soleEvent() const { return hasSole_ ? &sole_ : nullptr; }

    // The distinct id placements of the events added, in the order first seen.
    // auxscope's own sessions have exactly one: {0, 1} (IDENTIFIER).
    const std::vector<IdPlacement>& placements() const { return placements_; }

private:
    std::vector<uint64_t> ids_;        // sorted
    std::vector<uint32_t> slots_;      // layouts_ index of ids_[i]
    std::deque<EventLayout> layouts_;  // stable addresses: records keep pointers to them
    std::vector<IdPlacement> placements_;
    EventLayout sole_;
    bool hasSole_ = false;
};

struct ParsedRecord {
    uint32_t type = 0;
    uint16_t misc = 0;
    const EventLayout* event = nullptr;
    // sample_id fields (or the sample's own fields for SAMPLE)
    bool hasSampleId = false;
    int32_t pid = -1, tid = -1;
    uint64_t time = 0;
    uint64_t id = 0;
    uint32_t cpu = UINT32_MAX;
    // SAMPLE
    uint64_t ip = 0, addr = 0, period = 0;
    std::span<const uint8_t> raw;
    // SAMPLE call stacks, as views into the record (empty when not sampled).
    // They are not aligned: read them with callchainAt() / regAt() or memcpy.
    std::span<const uint8_t> callchain;   // PERF_SAMPLE_CALLCHAIN: u64 ips, PERF_CONTEXT_* markers among them
    std::span<const uint8_t> branches;    // PERF_SAMPLE_BRANCH_STACK: 24-byte {from, to, flags} entries
    uint64_t branchHwIndex = UINT64_MAX;  // PERF_SAMPLE_BRANCH_HW_INDEX (UINT64_MAX: not sampled)
    uint64_t regsUserAbi = 0;             // PERF_SAMPLE_REGS_ABI_* (0: no registers, e.g. a kernel thread)
    std::span<const uint8_t> regsUser;    // u64 per bit of EventLayout::sampleRegsUser, lowest bit first
    std::span<const uint8_t> stackUser;   // PERF_SAMPLE_STACK_USER: the bytes the kernel copied (dyn_size)
    uint64_t stackUserSize = 0;           // the size asked for (attr.sample_stack_user); 0: not sampled
    uint64_t weight = 0, dataSrc = 0, transaction = 0, physAddr = 0;
    size_t callchainSize() const { return callchain.size() / 8; }
    uint64_t callchainAt(size_t i) const { return load64(callchain, i); }
    size_t branchCount() const { return branches.size() / 24; }
    size_t regsUserCount() const { return regsUser.size() / 8; }
    uint64_t regUserAt(size_t i) const { return load64(regsUser, i); }
    static uint64_t load64(std::span<const uint8_t> s, size_t i) {
        uint64_t v;
        std::memcpy(&v, s.data() + 8 * i, 8);
        return v;
    }
    // LOST (lost records) and LOST_SAMPLES (lost samples)
    uint64_t lost = 0;
    // SWITCH / SWITCH_CPU_WIDE: for a switch-out the next task, for a switch-in the previous one
    bool switchOut = false;
    int32_t nextPrevPid = -1, nextPrevTid = -1;
    // COMM, FORK, EXIT, MMAP, MMAP2, ITRACE_START
    int32_t ppid = -1, ptid = -1;
    std::string_view comm;
    std::string_view filename;
    uint64_t mapStart = 0, mapLen = 0, mapPgoff = 0;
    // AUX
    uint64_t auxOffset = 0, auxSize = 0, auxFlags = 0;
};

// Parses one record. Returns an error message (naming the cause) for records
// that are shorter than their type requires, and for samples no event can be found
// for; `out` then holds what was read. Records perf itself writes (type >= 64) are
// only classified: they have no sample_id trailer.
std::optional<std::string> parseRecord(std::span<const uint8_t> rec, const IdTable& ids, ParsedRecord& out);
// How the error for a sample of an unknown event id begins (the other errors are
// records cut short), so that callers can count the two kinds apart.
constexpr std::string_view kUnknownEventIdError = "sample with unknown event id";

// Size of the sample_id trailer implied by a sample_type.
unsigned sampleIdSize(uint64_t sampleType);

}  // namespace auxscope
