// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Decodes the records the kernel writes into a perf data ring (and that perf.data
// stores verbatim). All events we open carry PERF_SAMPLE_IDENTIFIER and
// sample_id_all, so any record can be attributed to its event by id, and that
// event's sample_type says how to read the rest.
#include <linux/perf_event.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

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
};

class IdTable {
public:
    void add(uint64_t id, EventLayout layout) { byId_[id] = layout; }
    const EventLayout* find(uint64_t id) const {
        auto it = byId_.find(id);
        return it == byId_.end() ? nullptr : &it->second;
    }
    size_t size() const { return byId_.size(); }

private:
    std::unordered_map<uint64_t, EventLayout> byId_;
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
// that are shorter than their type requires; `out` then holds what was read.
std::optional<std::string> parseRecord(std::span<const uint8_t> rec, const IdTable& ids, ParsedRecord& out);

// Size of the sample_id trailer implied by a sample_type.
unsigned sampleIdSize(uint64_t sampleType);

}  // namespace auxscope
