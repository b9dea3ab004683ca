// SPDX-License-Identifier: GPL-3.0-or-later
#include "pt/PtSideband.h"

#include <elf.h>
#include <linux/perf_event.h>

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <list>

namespace auxscope {
namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buffer[256];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buffer, sizeof buffer, fmt, args);
    va_end(args);
    return std::string(buffer, n < 0 ? 0 : std::min<size_t>(n, sizeof buffer - 1));
}

template <typename T>
T load(const uint8_t* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

// ---------------------------------------------------------------- records

// One perf_event record with the sample_id_all fields behind it. Which of the
// plain fields mean something depends on `type` (named after perf's structs).
struct Record {
    uint32_t type = 0;
    uint16_t misc = 0;
    uint32_t pid = 0, tid = 0;    // MMAP*, COMM, EXIT/FORK, ITRACE_START; SWITCH_CPU_WIDE: next/prev task
    uint32_t ppid = 0, ptid = 0;  // EXIT, FORK
    uint64_t addr = 0, len = 0, pgoff = 0;  // MMAP*
    uint32_t maj = 0, min = 0, prot = 0, flags = 0;
    uint64_t ino = 0, inoGeneration = 0;      // MMAP2
    uint64_t time = 0, id = 0, streamId = 0;  // EXIT/FORK time; LOST id; THROTTLE all three
    uint64_t lost = 0;                        // LOST, LOST_SAMPLES
    uint64_t auxOffset = 0, auxSize = 0, auxFlags = 0;
    std::string name;  // MMAP* file name, COMM command

    struct Samples {
        std::optional<uint32_t> pid, tid, cpu;
        std::optional<uint64_t> time, id, streamId, identifier;
        uint64_t tsc = 0;  // `time` converted to TSC (after the channel's tsc offset)
    } sample;
};

// perf time -> TSC by perf_event_mmap_page's time_zero/shift/mult, split in
// quotient and remainder so the shift cannot overflow.
int perfTimeToTsc(uint64_t& tsc, uint64_t time, const PtPeventConfig& config) {
    if (!config.timeMult) return -pte_bad_config;
    time -= config.timeZero;
    uint64_t quotient = time / config.timeMult, remainder = time % config.timeMult;
    tsc = (quotient << config.timeShift) + ((remainder << config.timeShift) / config.timeMult);
    return 0;
}

// A NUL-terminated string at `at` inside [at, end), padded to 8 bytes as perf writes
// it: its padded size, or a negative pt_error_code when there is no NUL.
int readPaddedString(const uint8_t* at, const uint8_t* end, std::string& text) {
    const void* nul = at < end ? std::memchr(at, 0, static_cast<size_t>(end - at)) : nullptr;
    if (!nul) return -pte_bad_packet;
    size_t length = static_cast<size_t>(static_cast<const uint8_t*>(nul) - at);
    text.assign(reinterpret_cast<const char*>(at), length);
    return static_cast<int>((length + 1 + 7) & ~size_t{7});
}

// Reads the record at `begin`; its size, -pte_eos at the end of the data, or
// -pte_nosync when the record's size does not match its type and samples.
int readRecord(const uint8_t* begin, const uint8_t* end, const PtPeventConfig& config, Record& record) {
    constexpr size_t kHeader = 8;  // perf_event_header: u32 type, u16 misc, u16 size
    if (end - begin < static_cast<ptrdiff_t>(kHeader)) return -pte_eos;
    uint32_t type = load<uint32_t>(begin);
    uint16_t size = load<uint16_t>(begin + 6);
    if (!type || end - begin < size) return -pte_eos;
    if (size < kHeader) return -pte_nosync;  // would never advance
    end = begin + size;
    record = Record{};
    record.type = type;
    record.misc = load<uint16_t>(begin + 4);
    const uint8_t* pos = begin + kHeader;
    // The fixed part of a known record must fit before its samples are looked at.
    auto fixed = [&](size_t bytes) { return end - pos >= static_cast<ptrdiff_t>(bytes); };
    switch (type) {
        default:
            // Unknown (e.g. perf's own user records): skipped whole, no samples read.
            return size;
        case PERF_RECORD_MMAP:
        case PERF_RECORD_MMAP2: {
            size_t head = type == PERF_RECORD_MMAP ? 32 : 64;
            if (!fixed(head)) return -pte_nosync;
            record.pid = load<uint32_t>(pos);
            record.tid = load<uint32_t>(pos + 4);
            record.addr = load<uint64_t>(pos + 8);
            record.len = load<uint64_t>(pos + 16);
            record.pgoff = load<uint64_t>(pos + 24);
            if (type == PERF_RECORD_MMAP2) {
                record.maj = load<uint32_t>(pos + 32);
                record.min = load<uint32_t>(pos + 36);
                record.ino = load<uint64_t>(pos + 40);
                record.inoGeneration = load<uint64_t>(pos + 48);
                record.prot = load<uint32_t>(pos + 56);
                record.flags = load<uint32_t>(pos + 60);
            }
            int padded = readPaddedString(pos + head, end, record.name);
            if (padded < 0) return padded;
            pos += head + static_cast<size_t>(padded);
            break;
        }
        case PERF_RECORD_LOST:
            if (!fixed(16)) return -pte_nosync;
            record.id = load<uint64_t>(pos);
            record.lost = load<uint64_t>(pos + 8);
            pos += 16;
            break;
        case PERF_RECORD_COMM: {
            if (!fixed(8)) return -pte_nosync;
            record.pid = load<uint32_t>(pos);
            record.tid = load<uint32_t>(pos + 4);
            int padded = readPaddedString(pos + 8, end, record.name);
            if (padded < 0) return padded;
            pos += 8 + static_cast<size_t>(padded);
            break;
        }
        case PERF_RECORD_EXIT:
        case PERF_RECORD_FORK:
            if (!fixed(24)) return -pte_nosync;
            record.pid = load<uint32_t>(pos);
            record.ppid = load<uint32_t>(pos + 4);
            record.tid = load<uint32_t>(pos + 8);
            record.ptid = load<uint32_t>(pos + 12);
            record.time = load<uint64_t>(pos + 16);
            pos += 24;
            break;
        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
            if (!fixed(24)) return -pte_nosync;
            record.time = load<uint64_t>(pos);
            record.id = load<uint64_t>(pos + 8);
            record.streamId = load<uint64_t>(pos + 16);
            pos += 24;
            break;
        case PERF_RECORD_AUX:
            if (!fixed(24)) return -pte_nosync;
            record.auxOffset = load<uint64_t>(pos);
            record.auxSize = load<uint64_t>(pos + 8);
            record.auxFlags = load<uint64_t>(pos + 16);
            pos += 24;
            break;
        case PERF_RECORD_ITRACE_START:
        case PERF_RECORD_SWITCH_CPU_WIDE:
            if (!fixed(8)) return -pte_nosync;
            record.pid = load<uint32_t>(pos);
            record.tid = load<uint32_t>(pos + 4);
            pos += 8;
            break;
        case PERF_RECORD_LOST_SAMPLES:
            if (!fixed(8)) return -pte_nosync;
            record.lost = load<uint64_t>(pos);
            pos += 8;
            break;
        case PERF_RECORD_SWITCH:
            break;
    }
    // sample_id_all: the selected sample fields in perf's fixed order, 8 bytes each.
    const uint64_t sampleType = config.sampleType;
    auto take = [&]() -> std::optional<uint64_t> {
        const uint8_t* at = pos;
        pos += 8;
        if (pos > end) return std::nullopt;  // caught by the size check below
        return load<uint64_t>(at);
    };
    if (sampleType & PERF_SAMPLE_TID) {
        if (auto v = take()) {
            record.sample.pid = static_cast<uint32_t>(*v);
            record.sample.tid = static_cast<uint32_t>(*v >> 32);
        }
    }
    if (sampleType & PERF_SAMPLE_TIME) {
        auto v = take();
        if (!v) return -pte_nosync;
        record.sample.time = *v;
        if (int status = perfTimeToTsc(record.sample.tsc, *v, config); status < 0) return status;
    }
    if (sampleType & PERF_SAMPLE_ID) record.sample.id = take();
    if (sampleType & PERF_SAMPLE_STREAM_ID) record.sample.streamId = take();
    if (sampleType & PERF_SAMPLE_CPU) {
        if (auto v = take()) record.sample.cpu = static_cast<uint32_t>(*v);  // u32 cpu, u32 reserved
    }
    if (sampleType & PERF_SAMPLE_IDENTIFIER) record.sample.identifier = take();
    if (pos != end) return -pte_nosync;
    return size;
}

// The record's own fields, after the prefix columns: "NAME  fields" (compact) or
// "NAME\n  field: value..." (verbose).
std::string describeRecord(const Record& r, bool compact, bool verbose) {
    std::string text;
    auto both = [&](const std::string& name, const std::string& compactFields,
                    const std::vector<std::pair<const char*, std::string>>& fields) {
        if (compact) text += name + (compactFields.empty() ? "" : "  " + compactFields);
        if (verbose) {
            text += name;
            for (const auto& [label, value] : fields)
                text += std::string("\n  ") + label + ": " + value;
        }
    };
    auto x32 = [](uint32_t v) { return format("%" PRIx32, v); };
    auto x64 = [](uint64_t v) { return format("%" PRIx64, v); };
    switch (r.type) {
        default:
            if (compact) text += format("UNKNOWN (%" PRIx32 ", %x)", r.type, r.misc);
            if (verbose) text += format("UNKNOWN\n  type: %" PRIx32 "\n  misc: %x", r.type, r.misc);
            break;
        case PERF_RECORD_MMAP:
            both("PERF_RECORD_MMAP",
                 format("%" PRIx32 "/%" PRIx32 ", %" PRIx64 ", %" PRIx64 ", %" PRIx64 ", ", r.pid, r.tid,
                        r.addr, r.len, r.pgoff) +
                     r.name,
                 {{"pid", x32(r.pid)},
                  {"tid", x32(r.tid)},
                  {"addr", x64(r.addr)},
                  {"len", x64(r.len)},
                  {"pgoff", x64(r.pgoff)},
                  {"filename", r.name}});
            break;
        case PERF_RECORD_MMAP2:
            both("PERF_RECORD_MMAP2",
                 format("%" PRIx32 "/%" PRIx32 ", %" PRIx64 ", %" PRIx64 ", %" PRIx64 ", %" PRIx32
                        ", %" PRIx32 ", %" PRIx64 ", %" PRIx64 ", %" PRIx32 ", %" PRIx32 ", ",
                        r.pid, r.tid, r.addr, r.len, r.pgoff, r.maj, r.min, r.ino, r.inoGeneration, r.prot,
                        r.flags) +
                     r.name,
                 {{"pid", x32(r.pid)},
                  {"tid", x32(r.tid)},
                  {"addr", x64(r.addr)},
                  {"len", x64(r.len)},
                  {"pgoff", x64(r.pgoff)},
                  {"maj", x32(r.maj)},
                  {"min", x32(r.min)},
                  {"ino", x64(r.ino)},
                  {"ino_generation", x64(r.inoGeneration)},
                  {"prot", x32(r.prot)},
                  {"flags", x32(r.flags)},
                  {"filename", r.name}});
            break;
        case PERF_RECORD_LOST:
            both("PERF_RECORD_LOST", x64(r.id) + ", " + x64(r.lost),
                 {{"id", x64(r.id)}, {"lost", x64(r.lost)}});
            break;
        case PERF_RECORD_COMM: {
            std::string name =
                std::string("PERF_RECORD_COMM") + (r.misc & PERF_RECORD_MISC_COMM_EXEC ? ".EXEC" : "");
            both(name, x32(r.pid) + "/" + x32(r.tid) + ", " + r.name,
                 {{"pid", x32(r.pid)}, {"tid", x32(r.tid)}, {"comm", r.name}});
            break;
        }
        case PERF_RECORD_EXIT:
        case PERF_RECORD_FORK:
            both(r.type == PERF_RECORD_EXIT ? "PERF_RECORD_EXIT" : "PERF_RECORD_FORK",
                 x32(r.pid) + "/" + x32(r.tid) + ", " + x32(r.ppid) + "/" + x32(r.ptid) + ", " + x64(r.time),
                 {{"pid", x32(r.pid)},
                  {"ppid", x32(r.ppid)},
                  {"tid", x32(r.tid)},
                  {"ptid", x32(r.ptid)},
                  {"time", x64(r.time)}});
            break;
        case PERF_RECORD_THROTTLE:
        case PERF_RECORD_UNTHROTTLE:
            both(r.type == PERF_RECORD_THROTTLE ? "PERF_RECORD_THROTTLE" : "PERF_RECORD_UNTHROTTLE",
                 x64(r.time) + ", " + x64(r.id) + ", " + x64(r.streamId),
                 {{"time", x64(r.time)}, {"id", x64(r.id)}, {"stream_id", x64(r.streamId)}});
            break;
        case PERF_RECORD_AUX:
            both(
                std::string("PERF_RECORD_AUX") + (r.auxFlags & PERF_AUX_FLAG_TRUNCATED ? ".TRUNCATED" : ""),
                x64(r.auxOffset) + ", " + x64(r.auxSize) + ", " + x64(r.auxFlags),
                {{"aux offset", x64(r.auxOffset)}, {"aux size", x64(r.auxSize)}, {"flags", x64(r.auxFlags)}});
            break;
        case PERF_RECORD_ITRACE_START:
            both("PERF_RECORD_ITRACE_START", x32(r.pid) + "/" + x32(r.tid),
                 {{"pid", x32(r.pid)}, {"tid", x32(r.tid)}});
            break;
        case PERF_RECORD_LOST_SAMPLES:
            both("PERF_RECORD_LOST_SAMPLES", x64(r.lost), {{"lost", x64(r.lost)}});
            break;
        case PERF_RECORD_SWITCH:
            if (compact || verbose)
                text += std::string("PERF_RECORD_SWITCH.") +
                        (r.misc & PERF_RECORD_MISC_SWITCH_OUT ? "OUT" : "IN");
            break;
        case PERF_RECORD_SWITCH_CPU_WIDE: {
            bool out = r.misc & PERF_RECORD_MISC_SWITCH_OUT;
            both(std::string("PERF_RECORD_SWITCH_CPU_WIDE.") + (out ? "OUT" : "IN"),
                 x32(r.pid) + "/" + x32(r.tid),
                 {{(out ? "next pid" : "prev pid"), x32(r.pid)},
                  {(out ? "next tid" : "prev tid"), x32(r.tid)}});
            break;
        }
    }
    return text;
}

std::string describeSamples(const Record::Samples& s, bool compact, bool verbose) {
    std::string text;
    if (compact) {
        text += "  {";
        if (s.pid && s.tid) text += format(" %" PRIx32 "/%" PRIx32, *s.pid, *s.tid);
        if (s.time) text += format(" %" PRIx64, *s.time);
        if (s.id) text += format(" %" PRIx64, *s.id);
        if (s.cpu) text += format(" cpu-%" PRIx32, *s.cpu);
        if (s.streamId) text += format(" %" PRIx64, *s.streamId);
        if (s.identifier) text += format(" %" PRIx64, *s.identifier);
        text += " }";
    }
    if (verbose) {
        if (s.pid && s.tid) text += format("\n  pid: %" PRIx32 "\n  tid: %" PRIx32, *s.pid, *s.tid);
        if (s.time) text += format("\n  time: %" PRIx64, *s.time);
        if (s.id) text += format("\n  id: %" PRIx64, *s.id);
        if (s.cpu) text += format("\n  cpu: %" PRIx32, *s.cpu);
        if (s.streamId) text += format("\n  stream id: %" PRIx64, *s.streamId);
        if (s.identifier) text += format("\n  identifier: %" PRIx64, *s.identifier);
    }
    return text;
}

// ---------------------------------------------------------------- processes

enum class Abi { Unknown, X64, X32, Ia32 };

// The ABI of an ELF file, to pick the matching vdso; Unknown for anything else.
Abi elfAbi(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    unsigned char header[sizeof(Elf32_Ehdr)] = {};
    if (!file.read(reinterpret_cast<char*>(header), EI_NIDENT)) return Abi::Unknown;
    if (std::memcmp(header, ELFMAG, SELFMAG) != 0 || header[EI_VERSION] != EV_CURRENT) return Abi::Unknown;
    if (header[EI_CLASS] == ELFCLASS64) return Abi::X64;
    if (header[EI_CLASS] != ELFCLASS32) return Abi::Unknown;
    if (!file.read(reinterpret_cast<char*>(header) + EI_NIDENT, sizeof(Elf32_Ehdr) - EI_NIDENT))
        return Abi::Unknown;
    uint16_t machine = load<uint16_t>(header + offsetof(Elf32_Ehdr, e_machine));
    if (machine == EM_386) return Abi::Ia32;
    if (machine == EM_X86_64) return Abi::X32;
    return Abi::Unknown;
}

// One process: its code image, built from the MMAP records for its pid. Shared
// by the session's list and the channels that run in it or are about to, so an
// exec'ed process's old image stays alive until the decoder has left it.
struct Context {
    uint32_t pid = 0;
    std::string name;  // "pid-N" (hex), what --sb:switch shows
    pt_image* image = nullptr;
    Abi abi = Abi::Unknown;
    ~Context() { pt_image_free(image); }
};

// Where the trace is, as far as events tell: a context switch recorded by perf
// happens in the kernel, so it waits until the trace is (likely) there.
enum class Location { Unknown, LikelyKernel, Kernel, LikelyUser, User };

bool mayBeKernel(Location location) {
    return location == Location::Unknown || location == Location::LikelyKernel ||
           location == Location::Kernel;
}

// Non-negative diagnostics: the record was handled but something is missing.
enum class SidebandWarning { Lost = 1, TraceLost, SectionLost };

const char* warningText(SidebandWarning warning) {
    switch (warning) {
        case SidebandWarning::Lost:
            return "sideband lost";
        case SidebandWarning::TraceLost:
            return "trace lost";
        case SidebandWarning::SectionLost:
            return "image section lost";
    }
    return "bad warning";
}

// One sideband file being read.
struct Channel {
    PtSidebandFileSpec spec;
    std::vector<uint8_t> bytes;
    static constexpr size_t kNone = SIZE_MAX;
    size_t current = kNone;  // offset of the record in `record`
    size_t next = 0;         // offset of the record after it
    Record record;
    uint64_t tsc = 0;  // when `record` is due (0: at once, it has no time)
    std::shared_ptr<Context> context, nextContext;
    Location location = Location::Unknown;

    // A record was read and not yet used up: false once the file's end was reached.
    bool holdsRecord() const { return current != next; }
};

}  // namespace

// ---------------------------------------------------------------- the session

struct PtSidebandSession::Impl {
    PtSidebandOptions options;
    Style style = Style::Ptxed;
    pt_image_section_cache* cache = nullptr;
    std::ostream& out;
    bool printRecords = true;
    pt_image* kernel = nullptr;  // what every new process image starts from
    std::list<std::shared_ptr<Context>> contexts;
    std::vector<std::unique_ptr<Channel>> channels;
    // Channels by state. `active` is ordered by the time of the record each holds.
    std::list<Channel*> active, retired;
    std::vector<PtDecodeIssue> issues;
    pt_image* switchedTo = nullptr;  // set by a context switch during onEvent

    explicit Impl(std::ostream& stream) : out(stream) {}
    ~Impl() {
        channels.clear();
        contexts.clear();
        pt_image_free(kernel);
    }

    // ---- diagnostics

    void report(const Channel& channel, int errorCode,
                std::optional<SidebandWarning> warning = std::nullopt) {
        uint64_t offset = channel.current == Channel::kNone ? channel.next : channel.current;
        std::string what = warning ? warningText(*warning) : ptErrorName(errorCode);
        bool isError = !warning;
        issues.push_back({PtDecodeIssue::Severity::Warning, offset,
                          channel.spec.path + ": sideband " + (isError ? "error: " : "warning: ") + what});
        if (!isError && !options.warnings) return;
        const char* severity = style == Style::Ptdump ? "error" : isError ? "error" : "warning";
        out << '[' << channel.spec.path << ':' << format("%016" PRIx64, offset) << " sideband " << severity
            << ": " << what << "]\n";
    }

    // ---- reading

    int fetch(Channel& channel) {
        channel.current = channel.next;
        const uint8_t* data = channel.bytes.data();
        int size =
            readRecord(data + channel.next, data + channel.bytes.size(), channel.spec.config, channel.record);
        if (size < 0) {
            if (size != -pte_eos) report(channel, size);
            return size;
        }
        channel.next += static_cast<size_t>(size);
        if (!channel.record.sample.time) {
            channel.tsc = 0;
            return 0;
        }
        // The offset moves this file's records earlier (or, negative, later),
        // clamped instead of wrapping so a channel is never pushed out of reach.
        uint64_t tsc = channel.record.sample.tsc, offset = channel.spec.config.tscOffset;
        if (static_cast<int64_t>(offset) >= 0) {
            tsc = offset <= tsc ? tsc - offset : 0;
        } else {
            uint64_t delay = 0 - offset;
            tsc = tsc <= UINT64_MAX - delay ? tsc + delay : UINT64_MAX;
        }
        channel.record.sample.tsc = tsc;  // shown with --sb:time
        channel.tsc = tsc;
        return 0;
    }

    void insertActive(Channel* channel) {
        auto at = active.begin();
        while (at != active.end() && channel->tsc > (*at)->tsc)
            ++at;
        active.insert(at, channel);
    }

    void print(const Channel& channel) {
        if (!printRecords) return;
        const PtSidebandOptions& o = options;
        if (!o.printsRecords()) return;
        std::string line;
        std::string offset = format("%016" PRIx64, static_cast<uint64_t>(channel.current));
        if (o.filename && o.offset)
            line += channel.spec.path + ":" + offset + "  ";
        else if (o.filename)
            line += channel.spec.path + "  ";
        else if (o.offset)
            line += offset + "  ";
        const Record& record = channel.record;
        if (o.time && record.sample.time) line += format("%016" PRIx64 "  ", record.sample.tsc);
        // At most one of compact/verbose is set: the later of --sb:compact/--sb:verbose.
        line += describeRecord(record, o.compact, o.verbose);
        if (channel.spec.config.sampleType) line += describeSamples(record.sample, o.compact, o.verbose);
        out << line << '\n';
    }

    // ---- processes

    std::shared_ptr<Context> findContext(uint32_t pid) const {
        for (const auto& context : contexts)
            if (context->pid == pid) return context;
        return nullptr;
    }

    Expected<std::shared_ptr<Context>> context(uint32_t pid) {
        if (auto found = findContext(pid)) return found;
        auto created = std::make_shared<Context>();
        created->pid = pid;
        created->name = format("pid-%" PRIx32, pid);
        created->image = pt_image_alloc(created->name.c_str());
        if (!created->image) return makeError("out of memory for the image of " + created->name);
        if (int err = pt_image_copy(created->image, kernel); err < 0)
            return makeError(created->name + ": cannot copy the kernel image: " + ptErrorName(err));
        contexts.push_front(created);
        return created;
    }

    void removeContext(uint32_t pid) {
        contexts.remove_if([pid](const std::shared_ptr<Context>& c) { return c->pid == pid; });
    }

    void prepareSwitch(Channel& channel, const std::shared_ptr<Context>& target) {
        // Already on the way there, or there already: nothing to postpone.
        if (channel.nextContext == target) return;
        channel.nextContext.reset();  // a newer switch overrides one not yet placed
        if (channel.context == target) return;
        channel.nextContext = target;
    }

    int prepareSwitchToPid(Channel& channel, uint32_t pid) {
        auto target = context(pid);
        if (!target) return -pte_nomem;
        prepareSwitch(channel, *target);
        return 0;
    }

    void switchContexts(Channel& channel) {
        if (options.showSwitch) out << "[context: " << channel.nextContext->name << "]\n";
        switchedTo = channel.nextContext->image;
        channel.context = std::move(channel.nextContext);
        channel.nextContext.reset();
    }

    int map(Channel& channel, const Record& record) {
        auto target = context(record.pid);
        if (!target) return -pte_nomem;
        Context& process = **target;
        const PtPeventConfig& config = channel.spec.config;
        std::string path = record.name;
        if (!path.empty() && path[0] == '[') {
            // Pseudo files: the vdso has stand-ins by ABI; the rest ([kernel.kallsyms], ...) cannot be read.
            if (path != "[vdso]") {
                report(channel, 0, SidebandWarning::SectionLost);
                return 0;
            }
            const std::string* vdso = process.abi == Abi::X64    ? &config.vdsoX64
                                      : process.abi == Abi::X32  ? &config.vdsoX32
                                      : process.abi == Abi::Ia32 ? &config.vdsoIa32
                                                                 : nullptr;
            if (!vdso || vdso->empty()) {
                report(channel, -pte_bad_config);
                return 0;
            }
            path = *vdso;
        } else if (path == "//anon" || path.find(" (deleted)") != std::string::npos) {
            // JIT code and deleted files: nothing to read the instructions from.
            report(channel, 0, SidebandWarning::SectionLost);
            return 0;
        } else {
            path = config.sysroot + path;
        }
        if (process.abi == Abi::Unknown) process.abi = elfAbi(path);
        if (!cache) return -pte_internal;
        int isid = pt_iscache_add_file(cache, path.c_str(), record.pgoff, record.len, record.addr);
        if (isid < 0) return isid;
        return pt_image_add_cached(process.image, cache, isid, nullptr);
    }

    // What a record does to the processes; `primary`: the file belongs to this
    // trace's CPU, so its starts, switches and losses concern the decoder.
    int applyRecord(Channel& channel, const Record& record) {
        const bool primary = channel.spec.primary;
        switch (record.type) {
            default:
                return 0;
            case PERF_RECORD_ITRACE_START:
                if (!primary) return 0;
                if (int err = prepareSwitchToPid(channel, record.pid); err < 0) return err;
                // Tracing just started in this process: no reason to wait for the kernel.
                if (channel.nextContext) switchContexts(channel);
                return 0;
            case PERF_RECORD_FORK: {
                if (record.ppid == record.pid) return 0;  // a new thread shares its process's image
                if (record.pid != record.tid) return -pte_internal;
                // The exit of an earlier process with this pid comes while it still runs: its
                // context goes only now.
                removeContext(record.pid);
                auto child = context(record.pid);
                if (!child) return -pte_nomem;
                auto parent = findContext(record.ppid);
                if (!parent) return 0;
                return pt_image_copy((*child)->image, parent->image);
            }
            case PERF_RECORD_COMM: {
                if (!(record.misc & PERF_RECORD_MISC_COMM_EXEC)) return 0;
                // A new context rather than a cleared image: the trace is still inside
                // the old program until it enters the kernel.
                removeContext(record.pid);
                auto fresh = context(record.pid);
                if (!fresh) return -pte_nomem;
                if (primary) prepareSwitch(channel, *fresh);
                return 0;
            }
            case PERF_RECORD_SWITCH:
                if (!primary || (record.misc & PERF_RECORD_MISC_SWITCH_OUT)) return 0;
                if (!record.sample.pid)
                    return -pte_bad_config;  // switch-in names the task only by its sample
                return prepareSwitchToPid(channel, *record.sample.pid);
            case PERF_RECORD_SWITCH_CPU_WIDE:
                if (!primary) return 0;
                if (record.misc & PERF_RECORD_MISC_SWITCH_OUT) return prepareSwitchToPid(channel, record.pid);
                if (!record.sample.pid) return 0;  // the switch-out before it named the next task
                return prepareSwitchToPid(channel, *record.sample.pid);
            case PERF_RECORD_MMAP:
            case PERF_RECORD_MMAP2:
                // Kernel code on disk differs from what runs (patched at boot/insmod): not mapped.
                if ((record.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL) return 0;
                return map(channel, record);
            case PERF_RECORD_LOST:
                report(channel, 0, SidebandWarning::Lost);
                return 0;
            case PERF_RECORD_AUX:
                if (primary && (record.auxFlags & PERF_AUX_FLAG_TRUNCATED))
                    report(channel, 0, SidebandWarning::TraceLost);
                return 0;
        }
    }

    Location locationOf(uint64_t ip, const Channel& channel) const {
        return ip < channel.spec.config.kernelStart ? Location::User : Location::Kernel;
    }

    // Tracing stopped at an unknown IP: the opposite of where it was.
    static Location acrossFrom(Location from) {
        switch (from) {
            case Location::LikelyKernel:
            case Location::Kernel:
                return Location::LikelyUser;
            case Location::LikelyUser:
            case Location::User:
                return Location::LikelyKernel;
            default:
                return Location::Unknown;
        }
    }

    Location locationAfter(const pt_event& event, const Channel& channel) const {
        const auto& v = event.variant;
        const bool ip = !event.ip_suppressed;
        switch (event.type) {
            case ptev_enabled:
                return locationOf(v.enabled.ip, channel);
            case ptev_disabled:
                return ip ? locationOf(v.disabled.ip, channel) : acrossFrom(channel.location);
            case ptev_async_disabled:
                return ip ? locationOf(v.async_disabled.ip, channel)
                          : acrossFrom(locationOf(v.async_disabled.at, channel));
            case ptev_async_branch:
                return locationOf(v.async_branch.to, channel);
            case ptev_async_paging:
                if (ip) return locationOf(v.async_paging.ip, channel);
                return Location::LikelyKernel;
            case ptev_paging:
                return Location::LikelyKernel;  // CR3 writes happen in the kernel
            case ptev_overflow:
                return ip ? locationOf(v.overflow.ip, channel) : Location::Unknown;
            case ptev_exec_mode:
                return ip ? locationOf(v.exec_mode.ip, channel) : Location::Unknown;
            case ptev_tsx:
                return ip ? locationOf(v.tsx.ip, channel) : Location::Unknown;
            case ptev_exstop:
                return ip ? locationOf(v.exstop.ip, channel) : Location::Unknown;
            case ptev_mwait:
                return ip ? locationOf(v.mwait.ip, channel) : Location::Unknown;
            case ptev_ptwrite:
                return ip ? locationOf(v.ptwrite.ip, channel) : Location::Unknown;
            case ptev_tick:
                return ip ? locationOf(v.tick.ip, channel) : Location::Unknown;
            default:
                return Location::Unknown;
        }
    }

    // The event reached this channel: apply its record if due, else let a
    // postponed context switch happen if the trace may be in the kernel around
    // the event. -pte_eos when the channel has nothing left to do.
    int present(Channel& channel, const pt_event& event) {
        const Record& record = channel.record;
        int status = 0;
        if (channel.holdsRecord() && (!record.sample.time || record.sample.tsc <= event.tsc)) {
            status = applyRecord(channel, record);
        } else {
            Location before = channel.location;
            channel.location = locationAfter(event, channel);
            if (!channel.nextContext) return channel.holdsRecord() ? 0 : -pte_eos;
            if (mayBeKernel(before) || mayBeKernel(channel.location)) switchContexts(channel);
        }
        // Trouble with one record is reported; the channel goes on with the next.
        if (status < 0) report(channel, status);
        return 0;
    }

    void presentAll(std::list<Channel*>& list, const pt_event& event) {
        for (auto it = list.begin(); it != list.end();) {
            if (present(**it, event) < 0)
                it = list.erase(it);
            else
                ++it;
        }
    }
};

PtSidebandSession::PtSidebandSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PtSidebandSession::~PtSidebandSession() = default;

const std::vector<PtDecodeIssue>& PtSidebandSession::issues() const {
    return impl_->issues;
}

Expected<std::unique_ptr<PtSidebandSession>> PtSidebandSession::open(const PtSidebandOptions& options,
                                                                     Style style,
                                                                     pt_image_section_cache* cache,
                                                                     std::ostream& out, bool printRecords) {
    auto impl = std::make_unique<Impl>(out);
    impl->options = options;
    impl->style = style;
    impl->cache = cache;
    impl->printRecords = printRecords;
    impl->kernel = pt_image_alloc("kernel");
    if (!impl->kernel) return makeError("out of memory for the kernel image");
    for (const PtSidebandFileSpec& spec : options.files) {
        std::ifstream file(spec.path, std::ios::binary);
        if (!file) return makeError(spec.path + ": cannot open the sideband file");
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        uint64_t end = spec.end ? std::min<uint64_t>(spec.end, bytes.size()) : bytes.size();
        if (spec.begin > end)
            return makeError(spec.path + ": offset " + std::to_string(spec.begin) +
                             " is beyond the end of the sideband file (" + std::to_string(bytes.size()) +
                             " bytes)");
        auto channel = std::make_unique<Channel>();
        channel->spec = spec;
        channel->bytes.assign(bytes.begin() + static_cast<ptrdiff_t>(spec.begin),
                              bytes.begin() + static_cast<ptrdiff_t>(end));
        impl->channels.push_back(std::move(channel));
    }
    // The first records, latest-named file first (libipt-sb's order, which decides
    // whose diagnostics come first and which of two records with one time shows first).
    for (auto it = impl->channels.rbegin(); it != impl->channels.rend(); ++it) {
        Channel& channel = **it;
        if (impl->fetch(channel) == 0) impl->insertActive(&channel);
    }
    return std::unique_ptr<PtSidebandSession>(new PtSidebandSession(std::move(impl)));
}

void PtSidebandSession::dumpUntil(uint64_t tsc) {
    Impl& s = *impl_;
    while (!s.active.empty() && s.active.front()->tsc <= tsc) {
        Channel* channel = s.active.front();
        s.active.pop_front();
        s.print(*channel);
        if (s.fetch(*channel) == 0) s.insertActive(channel);
    }
}

pt_image* PtSidebandSession::onEvent(const pt_event& event) {
    Impl& s = *impl_;
    s.switchedTo = nullptr;
    // Every record due by the event's time, oldest first across all files. The
    // event's time counts even without a TSC (relative time correlates, too).
    while (!s.active.empty() && s.active.front()->tsc <= event.tsc) {
        Channel* channel = s.active.front();
        s.active.pop_front();
        s.print(*channel);
        s.present(*channel, event);
        int status = s.fetch(*channel);
        if (status == 0)
            s.insertActive(channel);
        else if (status == -pte_eos)
            s.retired.push_front(channel);  // may still owe a context switch
    }
    // Then each channel sees the event itself: postponed switches take effect here.
    s.presentAll(s.active, event);
    s.presentAll(s.retired, event);
    return s.switchedTo;
}

// ---------------------------------------------------------------- options

namespace {

Expected<PtSidebandFileSpec> parseSidebandFile(const std::string& argument) {
    PtSidebandFileSpec spec;
    spec.path = argument;
    // FILE:FROM[-TO]; a suffix that is no number range stays part of the name.
    size_t colon = argument.rfind(':');
    if (colon == std::string::npos) return spec;
    std::string suffix = argument.substr(colon + 1);
    size_t dash = suffix.find('-');
    auto from = parsePtNumber(suffix.substr(0, dash));
    if (!from) return spec;
    uint64_t to = 0;
    if (dash != std::string::npos) {
        auto end = parsePtNumber(suffix.substr(dash + 1));
        if (!end) return spec;
        if (*end <= *from)
            return makeError(argument + ": empty range " + suffix + " (end must lie after begin)");
        to = *end;
    }
    spec.path = argument.substr(0, colon);
    spec.begin = *from;
    spec.end = to;
    return spec;
}

}  // namespace

Expected<bool> parsePtSidebandFlag(PtSidebandOptions& options, const std::string& flag,
                                   const std::optional<std::string>& valueGiven) {
    if (flag.rfind("--sb", 0) != 0 && flag.rfind("--pevent", 0) != 0) return false;
    if (flag == "--sb" || flag == "--sb:compact" || flag == "--sb:verbose") {
        // The later of the two formats wins, as in ptxed.
        options.compact = flag != "--sb:verbose";
        options.verbose = flag == "--sb:verbose";
        return true;
    }
    struct Switch {
        const char* name;
        bool PtSidebandOptions::*member;
    };
    static const Switch kSwitches[] = {
        {"--sb:filename", &PtSidebandOptions::filename}, {"--sb:offset", &PtSidebandOptions::offset},
        {"--sb:time", &PtSidebandOptions::time},         {"--sb:switch", &PtSidebandOptions::showSwitch},
        {"--sb:warn", &PtSidebandOptions::warnings},
    };
    for (const Switch& s : kSwitches) {
        if (flag != s.name) continue;
        options.*s.member = true;
        return true;
    }
    if (!valueGiven) return makeError(flag + ": missing value");
    const std::string& value = *valueGiven;
    PtPeventConfig& pending = options.pending;
    auto number = [&](uint64_t limit) -> Expected<uint64_t> {
        auto parsed = parsePtNumber(value);
        if (!parsed || *parsed > limit)
            return makeError(flag + " " + value + ": not a number" +
                             (limit == UINT64_MAX ? "" : " up to " + std::to_string(limit)));
        return *parsed;
    };
    if (flag == "--pevent" || flag == "--pevent:primary" || flag == "--pevent:secondary") {
        auto spec = parseSidebandFile(value);
        if (!spec) return spec.error();
        spec->primary = flag != "--pevent:secondary";
        spec->config = pending;  // later --pevent:* values apply to later files only
        options.files.push_back(*spec);
    } else if (flag == "--pevent:sample-type" || flag == "--pevent:time-zero" ||
               flag == "--pevent:tsc-offset" || flag == "--pevent:kernel-start") {
        auto v = number(UINT64_MAX);
        if (!v) return v.error();
        (flag == "--pevent:sample-type"  ? pending.sampleType
         : flag == "--pevent:time-zero"  ? pending.timeZero
         : flag == "--pevent:tsc-offset" ? pending.tscOffset
                                         : pending.kernelStart) = *v;
    } else if (flag == "--pevent:time-shift") {
        auto v = number(63);  // a shift by 64 or more is no conversion (and undefined in C++)
        if (!v) return v.error();
        pending.timeShift = static_cast<uint16_t>(*v);
    } else if (flag == "--pevent:time-mult") {
        auto v = number(UINT32_MAX);
        if (!v) return v.error();
        pending.timeMult = static_cast<uint32_t>(*v);
    } else if (flag == "--pevent:sysroot") {
        pending.sysroot = value;
    } else if (flag == "--pevent:vdso-x64") {
        pending.vdsoX64 = value;
    } else if (flag == "--pevent:vdso-x32") {
        pending.vdsoX32 = value;
    } else if (flag == "--pevent:vdso-ia32") {
        pending.vdsoIa32 = value;
    } else if (flag == "--pevent:kcore") {
        return makeError(flag + " " + value +
                         ": kernel core dumps are not supported; give the kernel code with --elf/--raw");
    } else {
        return makeError("unknown sideband option '" + flag + "'");
    }
    return true;
}

}  // namespace auxscope
