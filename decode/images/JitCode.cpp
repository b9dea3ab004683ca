// SPDX-License-Identifier: GPL-3.0-or-later
#include "images/JitCode.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "MappedRegion.h"

namespace auxscope {

namespace {

constexpr size_t kNotesKept = 10;  // malformed lines named one by one; the rest counted

// A hex number as perf maps write them ("7f00a000", "0x7f00a000"): the whole token.
bool parseHex(const std::string& token, uint64_t& out) {
    size_t i = token.rfind("0x", 0) == 0 || token.rfind("0X", 0) == 0 ? 2 : 0;
    if (i >= token.size() || token.size() - i > 16) return false;
    uint64_t v = 0;
    for (; i < token.size(); ++i) {
        const char c = token[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return false;
        v = v << 4 | uint64_t(d);
    }
    out = v;
    return true;
}

std::string offsetText(uint64_t offset) {
    char b[32];
    std::snprintf(b, sizeof b, "%" PRIu64, offset);
    return b;
}

uint32_t swap32(uint32_t v) {
    return __builtin_bswap32(v);
}
uint64_t swap64(uint64_t v) {
    return __builtin_bswap64(v);
}

// Reads fields of one record at a cursor, in the file's byte order, never past `end`.
class Cursor {
public:
    Cursor(std::span<const uint8_t> bytes, uint64_t at, uint64_t end, bool swapped)
        : bytes_(bytes), at_(at), end_(end), swapped_(swapped) {}
    bool u32(uint32_t& v) {
        if (end_ - at_ < 4) return false;
        std::memcpy(&v, bytes_.data() + at_, 4);
        if (swapped_) v = swap32(v);
        at_ += 4;
        return true;
    }
    bool u64(uint64_t& v) {
        if (end_ - at_ < 8) return false;
        std::memcpy(&v, bytes_.data() + at_, 8);
        if (swapped_) v = swap64(v);
        at_ += 8;
        return true;
    }
    // A NUL-terminated string within the record.
    bool string(std::string& s) {
        const uint8_t* from = bytes_.data() + at_;
        const void* nul = std::memchr(from, 0, size_t(end_ - at_));
        if (!nul) return false;
        const size_t n = size_t(static_cast<const uint8_t*>(nul) - from);
        s.assign(reinterpret_cast<const char*>(from), n);
        at_ += n + 1;
        return true;
    }
    uint64_t at() const { return at_; }
    uint64_t left() const { return end_ - at_; }

private:
    std::span<const uint8_t> bytes_;
    uint64_t at_, end_;
    bool swapped_;
};

enum RecordId : uint32_t {
    kCodeLoad = 0,
    kCodeMove = 1,
    kDebugInfo = 2,
    kClose = 3,
    kUnwindingInfo = 4,
};

constexpr uint64_t kRecordHeaderSize = 16;  // id, total_size, timestamp

}  // namespace

int32_t pidFromJitFileName(const std::string& path) {
    const size_t slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string digits;
    if (name.rfind("perf-", 0) == 0 && name.size() > 9 && name.compare(name.size() - 4, 4, ".map") == 0)
        digits = name.substr(5, name.size() - 9);
    else if (name.rfind("jit-", 0) == 0 && name.size() > 9 && name.compare(name.size() - 5, 5, ".dump") == 0)
        digits = name.substr(4, name.size() - 9);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
        return -1;
    return int32_t(std::stol(digits));
}

PerfMap parsePerfMap(const std::string& text, const std::string& path) {
    PerfMap map;
    map.path = path;
    std::istringstream in(text);
    std::string line;
    size_t number = 0;
    auto malformed = [&](const std::string& cause) {
        ++map.malformed;
        if (map.notes.size() < kNotesKept)
            map.notes.push_back(path + ":" + std::to_string(number) + ": " + cause);
    };
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank
        // START SIZE name: the name is the rest of the line (it may hold spaces).
        const size_t a = line.find_first_not_of(" \t");
        const size_t aEnd = line.find_first_of(" \t", a);
        const size_t b = aEnd == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", aEnd);
        const size_t bEnd = b == std::string::npos ? std::string::npos : line.find_first_of(" \t", b);
        const size_t c = bEnd == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", bEnd);
        if (c == std::string::npos) {
            malformed("expected \"START SIZE name\" (hex START and SIZE)");
            continue;
        }
        PerfMapSymbol s;
        if (!parseHex(line.substr(a, aEnd - a), s.start)) {
            malformed("START '" + line.substr(a, aEnd - a) + "' is not a hex number");
            continue;
        }
        if (!parseHex(line.substr(b, bEnd - b), s.size)) {
            malformed("SIZE '" + line.substr(b, bEnd - b) + "' is not a hex number");
            continue;
        }
        if (s.size == 0 || s.start + s.size < s.start) {
            malformed(s.size == 0 ? "SIZE is 0" : "START + SIZE is beyond the address space");
            continue;
        }
        s.name = line.substr(c);
        map.symbols.push_back(std::move(s));
    }
    return map;
}

Expected<PerfMap> loadPerfMap(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return makeError(path + ": cannot read: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return makeError(path + ": read error: " + std::strerror(errno));
    return parsePerfMap(text.str(), path);
}

Expected<JitDump> parseJitDump(std::span<const uint8_t> bytes, const std::string& path) {
    JitDump dump;
    dump.path = path;
    if (bytes.size() < kJitDumpHeaderSize)
        return makeError(path + ": " + std::to_string(bytes.size()) +
                         " bytes, shorter than a jitdump header (40 bytes)");
    uint32_t magic;
    std::memcpy(&magic, bytes.data(), 4);
    if (magic == swap32(kJitDumpMagic))
        dump.byteSwapped = true;
    else if (magic != kJitDumpMagic)
        return makeError(path + ": offset 0: not a jitdump (magic 0x" + [&] {
            char b[16];
            std::snprintf(b, sizeof b, "%08x", magic);
            return std::string(b);
        }() + ", expected 0x4a695444 \"JiTD\")");
    Cursor header(bytes, 4, kJitDumpHeaderSize, dump.byteSwapped);
    uint32_t headerSize = 0, pad = 0;
    header.u32(dump.version), header.u32(headerSize), header.u32(dump.elfMach), header.u32(pad);
    header.u32(dump.pid), header.u64(dump.timestamp), header.u64(dump.flags);
    if (dump.version != 1)
        return makeError(path + ": offset 4: jitdump version " + std::to_string(dump.version) +
                         ", this reader knows version 1");
    if (headerSize < kJitDumpHeaderSize || headerSize > bytes.size())
        return makeError(path + ": offset 8: header size " + std::to_string(headerSize) + " (file of " +
                         std::to_string(bytes.size()) + " bytes; at least 40)");
    uint64_t at = headerSize;
    const uint64_t end = bytes.size();
    auto stop = [&](uint64_t offset, const std::string& cause) {
        dump.error = makeError(path + ": record at offset " + offsetText(offset) + ": " + cause);
    };
    while (at < end && !dump.error) {
        if (end - at < kRecordHeaderSize) {
            stop(at, "truncated: " + std::to_string(end - at) + " bytes left, a record header needs 16");
            break;
        }
        Cursor rh(bytes, at, end, dump.byteSwapped);
        uint32_t id = 0, size = 0;
        uint64_t time = 0;
        rh.u32(id), rh.u32(size), rh.u64(time);
        if (size < kRecordHeaderSize) {
            stop(at, "size " + std::to_string(size) + " is smaller than a record header (16)");
            break;
        }
        if (size > end - at) {
            stop(at, "truncated: the record claims " + std::to_string(size) + " bytes, " +
                         std::to_string(end - at) + " are left");
            break;
        }
        Cursor r(bytes, at + kRecordHeaderSize, at + size, dump.byteSwapped);
        switch (id) {
            case kCodeLoad: {
                JitCodeLoad l;
                l.time = time;
                if (!r.u32(l.pid) || !r.u32(l.tid) || !r.u64(l.vma) || !r.u64(l.address) || !r.u64(l.size) ||
                    !r.u64(l.index)) {
                    stop(at,
                         "JIT_CODE_LOAD of " + std::to_string(size) + " bytes is too short for its fields");
                    break;
                }
                if (!r.string(l.name)) {
                    stop(at, "JIT_CODE_LOAD: the function name has no terminating NUL within the record");
                    break;
                }
                if (l.size > r.left()) {
                    stop(at, "JIT_CODE_LOAD '" + l.name + "': code size " + std::to_string(l.size) +
                                 " but the record holds " + std::to_string(r.left()) +
                                 " bytes after the name");
                    break;
                }
                if (l.address + l.size < l.address) {
                    stop(at, "JIT_CODE_LOAD '" + l.name + "': code beyond the address space");
                    break;
                }
                l.codeOffset = r.at();
                dump.loads.push_back(std::move(l));
                break;
            }
            case kCodeMove: {
                JitCodeMove m;
                m.time = time;
                if (!r.u32(m.pid) || !r.u32(m.tid) || !r.u64(m.vma) || !r.u64(m.oldAddress) ||
                    !r.u64(m.newAddress) || !r.u64(m.size) || !r.u64(m.index)) {
                    stop(at,
                         "JIT_CODE_MOVE of " + std::to_string(size) + " bytes is too short for its fields");
                    break;
                }
                dump.moves.push_back(m);
                break;
            }
            case kDebugInfo: {
                JitDebugInfo d;
                d.time = time;
                uint64_t count = 0;
                if (!r.u64(d.codeAddress) || !r.u64(count)) {
                    stop(at, "JIT_CODE_DEBUG_INFO of " + std::to_string(size) + " bytes is too short");
                    break;
                }
                // Each entry takes at least 17 bytes (address, line, discriminator, a NUL).
                if (count > r.left() / 17) {
                    stop(at, "JIT_CODE_DEBUG_INFO claims " + std::to_string(count) +
                                 " entries, the record holds " + std::to_string(r.left()) + " bytes");
                    break;
                }
                d.lines.reserve(size_t(count));
                std::string previous;
                for (uint64_t i = 0; i < count; ++i) {
                    JitLine line;
                    uint32_t lineNo = 0, discriminator = 0;
                    const uint64_t entryAt = r.at();
                    if (!r.u64(line.address) || !r.u32(lineNo) || !r.u32(discriminator) ||
                        !r.string(line.file)) {
                        stop(at, "JIT_CODE_DEBUG_INFO entry " + std::to_string(i) + " at offset " +
                                     offsetText(entryAt) + " runs past the record's end");
                        break;
                    }
                    // "\xff": the same file as the entry before (perf's jitdump writers use it).
                    if (line.file == "\xff") line.file = previous;
                    previous = line.file;
                    line.line = int32_t(lineNo), line.discriminator = int32_t(discriminator);
                    d.lines.push_back(std::move(line));
                }
                if (!dump.error) dump.debugInfo.push_back(std::move(d));
                break;
            }
            case kClose:
                dump.closed = true;
                break;
            case kUnwindingInfo: {
                JitUnwindingInfo u;
                u.time = time;
                if (!r.u64(u.unwindingSize) || !r.u64(u.ehFrameHdrSize) || !r.u64(u.mappedSize)) {
                    stop(at, "JIT_CODE_UNWINDING_INFO of " + std::to_string(size) + " bytes is too short");
                    break;
                }
                if (u.unwindingSize > r.left() || u.ehFrameHdrSize > u.unwindingSize) {
                    stop(at, "JIT_CODE_UNWINDING_INFO: unwinding data of " + std::to_string(u.unwindingSize) +
                                 " bytes (.eh_frame_hdr " + std::to_string(u.ehFrameHdrSize) +
                                 ") but the record holds " + std::to_string(r.left()));
                    break;
                }
                u.dataOffset = r.at();
                dump.unwinding.push_back(u);
                break;
            }
            default:
                ++dump.unknownRecords;
                break;
        }
        at += size;
    }
    return dump;
}

Expected<JitDump> loadJitDump(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return makeError(path + ": cannot open: " + std::strerror(errno));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return makeError(path + ": not a regular file");
    }
    if (st.st_size == 0) {
        ::close(fd);
        return makeError(path + ": empty file, not a jitdump");
    }
    auto region = MappedRegion::map(fd, size_t(st.st_size), PROT_READ, MAP_PRIVATE, 0);
    ::close(fd);
    if (!region) return makeError(path + ": " + region.error().message);
    return parseJitDump({region->bytes(), region->size()}, path);
}

}  // namespace auxscope
