// SPDX-License-Identifier: GPL-3.0-or-later
#include "perfdata/TracingData.h"
#include "TextTrim.h"

#include <charconv>
#include <cstring>

namespace auxscope {

const TraceField* TraceEventFormat::field(std::string_view n) const {
    for (const TraceField& f : fields)
        if (f.name == n) return &f;
    return nullptr;
}

const TraceEventFormat* TracingData::find(std::string_view system, std::string_view name) const {
    for (const TraceEventFormat& e : events)
        if (e.system == system && e.name == name) return &e;
    return nullptr;
}

const TraceEventFormat* TracingData::findId(uint64_t id) const {
    for (const TraceEventFormat& e : events)
        if (e.id >= 0 && uint64_t(e.id) == id) return &e;
    return nullptr;
}

namespace {

bool number(std::string_view s, uint64_t& out) {
    s = trimBlanks(s);
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;"
bool parseField(std::string_view line, TraceField& f) {
    line = trimBlanks(line);
    if (line.substr(0, 6) != "field:") return false;
    line.remove_prefix(6);
    bool haveOffset = false, haveSize = false;
    bool first = true;
    while (!line.empty()) {
        const size_t semi = line.find(';');
        std::string_view part = trimBlanks(line.substr(0, semi));
        line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
        if (first) {
            first = false;
            // The declaration: type then name, the name possibly with [N].
            size_t end = part.size();
            if (end && part[end - 1] == ']') {
                const size_t open = part.rfind('[');
                if (open == std::string_view::npos) return false;
                uint64_t n = 0;
                if (number(part.substr(open + 1, end - open - 2), n)) f.arrayLength = uint32_t(n);
                end = open;
            }
            const std::string_view decl = trimBlanks(part.substr(0, end));
            const size_t space = decl.find_last_of(" \t*");
            if (space == std::string_view::npos) return false;
            f.name = std::string(decl.substr(space + 1));
            f.type = std::string(trimBlanks(part.substr(0, space + 1)));
            if (f.arrayLength || end != part.size())
                f.type += std::string(part.substr(end));  // keep "[16]" / "[]" with the type
            continue;
        }
        const size_t colon = part.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = trimBlanks(part.substr(0, colon));
        uint64_t v = 0;
        if (!number(part.substr(colon + 1), v)) continue;
        if (key == "offset")
            f.offset = uint32_t(v), haveOffset = true;
        else if (key == "size")
            f.size = uint32_t(v), haveSize = true;
        else if (key == "signed")
            f.isSigned = v != 0;
    }
    return haveOffset && haveSize && !f.name.empty();
}

class Cursor {
public:
    Cursor(std::span<const uint8_t> b, bool bigEndian) : b_(b), big_(bigEndian) {}
    size_t pos() const { return pos_; }
    size_t left() const { return b_.size() - pos_; }
    void setBigEndian(bool big) { big_ = big; }
    template <typename T>
    bool read(T& out) {
        if (left() < sizeof(T)) return false;
        uint8_t tmp[sizeof(T)];
        std::memcpy(tmp, b_.data() + pos_, sizeof(T));
        if (big_ != (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
            for (size_t i = 0; i < sizeof(T) / 2; ++i)
                std::swap(tmp[i], tmp[sizeof(T) - 1 - i]);
        std::memcpy(&out, tmp, sizeof(T));
        pos_ += sizeof(T);
        return true;
    }
    bool cstring(std::string& out) {
        const void* nul = std::memchr(b_.data() + pos_, 0, left());
        if (!nul) return false;
        const size_t n = size_t(static_cast<const uint8_t*>(nul) - (b_.data() + pos_));
        out.assign(reinterpret_cast<const char*>(b_.data() + pos_), n);
        pos_ += n + 1;
        return true;
    }
    bool bytes(uint64_t n, std::string_view& out) {
        if (n > left()) return false;
        out = {reinterpret_cast<const char*>(b_.data() + pos_), size_t(n)};
        pos_ += size_t(n);
        return true;
    }

private:
    std::span<const uint8_t> b_;
    size_t pos_ = 0;
    bool big_ = false;
};

}  // namespace

TraceEventFormat parseTraceEventFormat(std::string_view text, std::string system) {
    TraceEventFormat e;
    e.system = std::move(system);
    while (!text.empty()) {
        const size_t nl = text.find('\n');
        const std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        const std::string_view t = trimBlanks(line);
        if (t.substr(0, 5) == "name:") {
            e.name = std::string(trimBlanks(t.substr(5)));
        } else if (t.substr(0, 3) == "ID:") {
            uint64_t id = 0;
            if (number(t.substr(3), id)) e.id = int64_t(id);
        } else if (t.substr(0, 6) == "field:") {
            TraceField f;
            if (parseField(t, f)) e.fields.push_back(std::move(f));
        } else if (t.substr(0, 10) == "print fmt:") {
            break;
        }
    }
    return e;
}

Expected<TracingData> parseTracingData(std::span<const uint8_t> bytes, const std::string& where) {
    TracingData td;
    Cursor c(bytes, false);
    auto fail = [&](const std::string& cause) {
        return makeError(where + ": byte " + std::to_string(c.pos()) + " of the tracing data: " + cause);
    };
    static const uint8_t kMagic[] = {0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return fail("no tracing data magic (\\x17\\x08\\x44tracing)");
    std::string_view skip;
    c.bytes(sizeof kMagic, skip);
    if (!c.cstring(td.version)) return fail("the version string has no end");
    uint8_t big = 0;
    if (!c.read(big) || !c.read(td.longSize)) return fail("cut short in the byte order and long size");
    td.bigEndian = big != 0;
    c.setBigEndian(td.bigEndian);
    if (!c.read(td.pageSize)) return fail("cut short in the page size");
    for (const char* name : {"header_page", "header_event"}) {
        std::string got;
        if (!c.cstring(got)) return fail(std::string("cut short before ") + name);
        if (got != name) return fail(std::string("expected \"") + name + "\", found \"" + got + "\"");
        uint64_t size = 0;
        if (!c.read(size) || !c.bytes(size, skip)) return fail(std::string(name) + " cut short");
    }
    auto formats = [&](const std::string& system) -> Expected<void> {
        uint32_t count = 0;
        if (!c.read(count)) return fail("cut short in the count of " + system + " event formats");
        for (uint32_t i = 0; i < count; ++i) {
            uint64_t size = 0;
            std::string_view text;
            if (!c.read(size) || !c.bytes(size, text))
                return fail("event format " + std::to_string(i) + " of " + std::to_string(count) + " (" +
                            system + ") cut short");
            td.events.push_back(parseTraceEventFormat(text, system));
        }
        return {};
    };
    if (auto r = formats("ftrace"); !r) return r.error();
    uint32_t systems = 0;
    if (!c.read(systems)) return fail("cut short in the count of event systems");
    for (uint32_t s = 0; s < systems; ++s) {
        std::string system;
        if (!c.cstring(system)) return fail("system " + std::to_string(s) + " has no name");
        if (auto r = formats(system); !r) return r.error();
    }
    return td;
}

}  // namespace auxscope
