// SPDX-License-Identifier: GPL-3.0-or-later
#include "TriggerSpec.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <grp.h>
#include <libelf.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "AddressFilter.h"
#include "Tracefs.h"
#include "UsdtProbes.h"

namespace auxscope {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

bool isIdent(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

std::string demangle(const std::string& name) {
    if (!name.starts_with("_Z")) return name;
    int status = 0;
    char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
    if (status != 0 || !d) return name;
    std::string out(d);
    std::free(d);
    return out;
}

// The demangled name without its parameter list: "ns::Foo::bar(int) const" -> "ns::Foo::bar".
std::string withoutParameters(const std::string& demangled) {
    int depth = 0;
    for (size_t i = 0; i < demangled.size(); ++i) {
        const char c = demangled[i];
        if (c == '<') ++depth;
        if (c == '>') --depth;
        if (c == '(' && depth == 0) return demangled.substr(0, i);
    }
    return demangled;
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// Whether the ELF has a full symbol table (.symtab): without it, only the
// exported functions of .dynsym can be named.
bool hasSymtab(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return false;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool found = false;
    if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
        for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
            GElf_Shdr sh;
            if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) found = true;
        }
        elf_end(elf);
    }
    close(fd);
    return found;
}

struct TracepointField {
    int offset = -1;
    int size = 0;
};

// A field of a tracepoint's raw record, from tracefs's format file.
Expected<TracepointField> tracepointField(const std::string& system, const std::string& event,
                                          const std::string& field) {
    auto root = Tracefs::locate();
    if (!root) return root.error();
    const std::string path = (root.value() / "events" / system / event / "format").string();
    std::ifstream in(path);
    if (!in) return makeError("cannot read " + path + ": " + std::strerror(errno));
    std::string line;
    while (std::getline(in, line)) {
        const size_t f = line.find("field:");
        if (f == std::string::npos) continue;
        const size_t semi = line.find(';', f);
        if (semi == std::string::npos) continue;
        std::string decl = line.substr(f + 6, semi - f - 6);
        const size_t space = decl.find_last_of(" *");
        const std::string name = space == std::string::npos ? decl : decl.substr(space + 1);
        if (name != field) continue;
        TracepointField out;
        const size_t o = line.find("offset:"), s = line.find("size:");
        if (o == std::string::npos || s == std::string::npos) break;
        out.offset = std::atoi(line.c_str() + o + 7);
        out.size = std::atoi(line.c_str() + s + 5);
        if (out.size != 4 && out.size != 8)
            return makeError("field '" + field + "' of " + system + ":" + event + " is " +
                             std::to_string(out.size) +
                             " bytes; a thread key must be a 4- or 8-byte integer");
        return out;
    }
    return makeError(system + ":" + event + " has no field '" + field + "' (" + path + ")");
}

Expected<uint64_t> resolveTracepoint(const std::string& system, const std::string& event,
                                     const std::string& trigger) {
    auto ids = Tracefs::resolve(system, event);
    if (!ids) return makeError("trigger '" + trigger + "': " + ids.error().message);
    if (ids->size() != 1)
        return makeError("trigger '" + trigger + "': '" + system + ":" + event + "' names " +
                         std::to_string(ids->size()) + " tracepoints; name exactly one");
    return ids->front().id;
}

}  // namespace

Expected<uint64_t> parseTriggerDuration(std::string_view text, std::string_view what) {
    const std::string where = std::string(what) + " '" + std::string(text) + "'";
    std::string_view t = trim(text);
    size_t i = 0;
    while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.'))
        ++i;
    const std::string_view number = t.substr(0, i), unit = trim(t.substr(i));
    double value = 0;
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || ec != std::errc() || p != number.data() + number.size())
        return makeError(where + ": expected a number with a unit (ns, us, ms, s), e.g. 5ms");
    double scale = 0;
    if (unit == "ns")
        scale = 1;
    else if (unit == "us")
        scale = 1e3;
    else if (unit == "ms")
        scale = 1e6;
    else if (unit == "s")
        scale = 1e9;
    else
        return makeError(where + ": unknown unit '" + std::string(unit) + "' (ns, us, ms or s)");
    const double ns = value * scale;
    if (!(ns >= double(kTriggerMinThresholdNs)) || ns > double(kTriggerMaxThresholdNs))
        return makeError(where + ": out of range (1us to 3600s)");
    return uint64_t(ns + 0.5);
}

std::string formatTriggerDuration(uint64_t ns) {
    char buf[48];
    if (ns % 1'000'000'000 == 0)
        std::snprintf(buf, sizeof buf, "%llus", static_cast<unsigned long long>(ns / 1'000'000'000));
    else if (ns % 1'000'000 == 0)
        std::snprintf(buf, sizeof buf, "%llums", static_cast<unsigned long long>(ns / 1'000'000));
    else if (ns % 1'000 == 0)
        std::snprintf(buf, sizeof buf, "%lluus", static_cast<unsigned long long>(ns / 1'000));
    else
        std::snprintf(buf, sizeof buf, "%lluns", static_cast<unsigned long long>(ns));
    return buf;
}

Expected<TriggerSpec> parseTriggerSpec(std::string_view input) {
    TriggerSpec s;
    s.text = std::string(input);
    const std::string quoted = "trigger '" + s.text + "'";
    auto fail = [&](const std::string& why) -> Error { return makeError(quoted + ": " + why); };
    std::string_view t = trim(input);
    if (t.empty())
        return fail(
            "empty (func, func@binary, binary:0xoffset, func>5ms, syscall:read>10ms, "
            "sys:a->b>2ms, marker)");
    // The threshold: the last '>' that is not part of "->" and is followed by a
    // number (a C++ name may hold '>' of its own: ns::f<int>>5ms).
    std::string_view body = t;
    bool slow = false;
    for (size_t i = t.size(); i-- > 0;) {
        if (t[i] != '>' || (i > 0 && t[i - 1] == '-')) continue;
        std::string_view after = trim(t.substr(i + 1));
        if (after.empty() || !(std::isdigit(static_cast<unsigned char>(after[0])) || after[0] == '.')) {
            if (i + 1 == t.size()) return fail("'>' wants a threshold after it (e.g. >5ms)");
            break;
        }
        auto ns = parseTriggerDuration(after, quoted + ": the threshold");
        if (!ns) return ns.error();
        s.thresholdNs = *ns;
        slow = true;
        body = trim(t.substr(0, i));
        break;
    }
    if (body.empty()) return fail("nothing before the threshold");

    if (body.starts_with("syscall:")) {
        s.kind = TriggerKind::SyscallSlow;
        s.syscall = std::string(body.substr(8));
        if (!isIdent(s.syscall)) return fail("'" + s.syscall + "' is not a system call name");
        if (!slow) return fail("a syscall trigger wants a threshold (syscall:" + s.syscall + ">10ms)");
        return s;
    }
    if (const size_t arrow = body.find("->"); arrow != std::string_view::npos) {
        s.kind = TriggerKind::TracepointPair;
        if (!slow) return fail("a tracepoint pair wants a threshold (sys:a->b>2ms)");
        std::string_view a = trim(body.substr(0, arrow)), b = trim(body.substr(arrow + 2));
        const size_t ca = a.find(':');
        if (ca == std::string_view::npos) return fail("the first tracepoint wants its system (sys:event)");
        s.firstSystem = std::string(a.substr(0, ca));
        s.firstEvent = std::string(a.substr(ca + 1));
        if (const size_t cb = b.find(':'); cb != std::string_view::npos) {
            s.secondSystem = std::string(b.substr(0, cb));
            s.secondEvent = std::string(b.substr(cb + 1));
        } else {
            s.secondSystem = s.firstSystem;
            s.secondEvent = std::string(b);
        }
        for (const std::string* part : {&s.firstSystem, &s.firstEvent, &s.secondSystem, &s.secondEvent}) {
            std::string name = *part;
            if (const size_t dot = name.find('.');
                dot != std::string::npos && part != &s.firstSystem && part != &s.secondSystem)
                if (!isIdent(name.substr(dot + 1))) return fail("bad field name in '" + name + "'");
            name = name.substr(0, name.find('.'));
            if (!isIdent(name)) return fail("'" + *part + "' is not a tracepoint name");
        }
        return s;
    }
    if (body.starts_with("usdt:")) {
        if (slow) return fail("a USDT probe has no duration (give no threshold)");
        std::string_view rest = body.substr(5);
        if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
            s.binary = std::string(trim(rest.substr(at + 1)));
            if (s.binary.empty()) return fail("'@' wants a binary after it");
            rest = trim(rest.substr(0, at));
        }
        const size_t colon = rest.find(':');
        if (colon == std::string_view::npos)
            return fail("a USDT probe is named usdt:PROVIDER:NAME (e.g. usdt:myapp:request_done)");
        s.usdtProvider = std::string(rest.substr(0, colon));
        s.usdtName = std::string(rest.substr(colon + 1));
        if (!isIdent(s.usdtProvider)) return fail("'" + s.usdtProvider + "' is not a USDT provider name");
        if (!isIdent(s.usdtName)) return fail("'" + s.usdtName + "' is not a USDT probe name");
        return s;
    }
    if (body == "marker" || body.starts_with("marker@")) {
        if (slow) return fail("a marker has no duration (give no threshold)");
        s.marker = true;
        s.function = kTriggerMarkerFunction;
        if (body.size() > 6) s.binary = std::string(trim(body.substr(7)));
        if (body.size() > 6 && s.binary.empty()) return fail("'@' wants a binary after it");
        return s;
    }
    s.kind = slow ? TriggerKind::FunctionSlow : TriggerKind::FunctionEntry;
    // BINARY:0xOFFSET
    if (const size_t c = body.rfind(":0x"); c != std::string_view::npos && c > 0 && body[c - 1] != ':') {
        s.binary = std::string(body.substr(0, c));
        const std::string_view hexPart = body.substr(c + 3);
        uint64_t off = 0;
        auto [p, ec] = std::from_chars(hexPart.data(), hexPart.data() + hexPart.size(), off, 16);
        if (hexPart.empty() || ec != std::errc() || p != hexPart.data() + hexPart.size())
            return fail("'" + std::string(hexPart) + "' after ':0x' is not a hexadecimal offset");
        s.offset = off;
        return s;
    }
    const size_t at = body.rfind('@');
    s.function = std::string(trim(body.substr(0, at)));
    if (at != std::string_view::npos) {
        s.binary = std::string(trim(body.substr(at + 1)));
        if (s.binary.empty()) return fail("'@' wants a binary after it");
    }
    if (s.function.empty()) return fail("no function named");
    return s;
}

Expected<std::string> findExecutable(const std::string& name) {
    std::string candidate;
    if (name.find('/') != std::string::npos) {
        candidate = name;
    } else {
        const char* path = std::getenv("PATH");
        std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
        std::string dir;
        while (std::getline(dirs, dir, ':')) {
            const std::string p = (dir.empty() ? "." : dir) + "/" + name;
            if (access(p.c_str(), X_OK) == 0) {
                candidate = p;
                break;
            }
        }
        if (candidate.empty()) return makeError("'" + name + "' is not found on PATH");
    }
    char buf[PATH_MAX];
    if (!realpath(candidate.c_str(), buf)) return makeError("'" + candidate + "': " + std::strerror(errno));
    return std::string(buf);
}

Expected<void> userMayReadFile(const std::string& path, uid_t user) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return makeError("'" + path + "': " + std::strerror(errno));
    if (user == 0) return {};
    bool may = false;
    if (st.st_uid == user) {
        may = st.st_mode & S_IRUSR;
    } else {
        bool inGroup = false;
        if (const passwd* pw = getpwuid(user)) {
            int n = 64;
            std::vector<gid_t> groups(static_cast<size_t>(n));
            if (getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &n) < 0) {
                groups.resize(size_t(n));
                getgrouplist(pw->pw_name, pw->pw_gid, groups.data(), &n);
            }
            groups.resize(size_t(std::max(n, 0)));
            inGroup = std::find(groups.begin(), groups.end(), st.st_gid) != groups.end();
        }
        may = inGroup ? (st.st_mode & S_IRGRP) : (st.st_mode & S_IROTH);
    }
    if (may) return {};
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
    return makeError("cannot read '" + path + "' as uid " + std::to_string(user) +
                     " (the user the capture is for): mode " + mode + ", owner uid " +
                     std::to_string(st.st_uid) +
                     " (its symbols and the uprobe need a binary that user may read)");
}

Expected<std::vector<TriggerFunction>> listTriggerFunctions(const std::string& path) {
    auto syms = readElfFunctionSymbols(path);
    if (!syms) return syms.error();
    std::vector<TriggerFunction> out;
    out.reserve(syms->size());
    for (auto& s : *syms)
        out.push_back({s.name, demangle(s.name), s.fileOffset, s.size});
    return out;
}

Expected<ResolvedTrigger> resolveTrigger(const TriggerSpec& spec, const TriggerResolveOptions& opts) {
    ResolvedTrigger r;
    r.spec = spec;
    r.name = std::string(trim(spec.text));
    const std::string quoted = "trigger '" + r.name + "'";
    auto fail = [&](const std::string& why) -> Error { return makeError(quoted + ": " + why); };

    if (spec.kind == TriggerKind::SyscallSlow) {
        auto enter = resolveTracepoint("syscalls", "sys_enter_" + spec.syscall, r.name);
        if (!enter)
            return fail(
                "no tracepoint syscalls:sys_enter_" + spec.syscall + " (is '" + spec.syscall +
                "' a system call of this kernel? glibc's sleep() and nanosleep() call clock_nanosleep)");
        auto exit = resolveTracepoint("syscalls", "sys_exit_" + spec.syscall, r.name);
        if (!exit) return exit.error();
        r.firstTracepoint = *enter;
        r.secondTracepoint = *exit;
        return r;
    }
    if (spec.kind == TriggerKind::TracepointPair) {
        auto split = [](const std::string& ev, std::string& name, std::string& field) {
            const size_t dot = ev.find('.');
            name = ev.substr(0, dot);
            field = dot == std::string::npos ? std::string() : ev.substr(dot + 1);
        };
        std::string firstEvent, secondEvent;
        split(spec.firstEvent, firstEvent, r.firstKeyField);
        split(spec.secondEvent, secondEvent, r.secondKeyField);
        // Scheduling latency: the wakeup names the woken thread, the switch the thread switched in.
        if (spec.firstSystem == "sched" && firstEvent.starts_with("sched_wakeup") && r.firstKeyField.empty())
            r.firstKeyField = "pid";
        if (spec.secondSystem == "sched" && secondEvent == "sched_switch" && r.secondKeyField.empty())
            r.secondKeyField = "next_pid";
        auto a = resolveTracepoint(spec.firstSystem, firstEvent, r.name);
        if (!a) return a.error();
        auto b = resolveTracepoint(spec.secondSystem, secondEvent, r.name);
        if (!b) return b.error();
        r.firstTracepoint = *a;
        r.secondTracepoint = *b;
        if (!r.firstKeyField.empty()) {
            auto f = tracepointField(spec.firstSystem, firstEvent, r.firstKeyField);
            if (!f) return fail(f.error().message);
            r.firstKeyOffset = f->offset, r.firstKeySize = f->size;
        }
        if (!r.secondKeyField.empty()) {
            auto f = tracepointField(spec.secondSystem, secondEvent, r.secondKeyField);
            if (!f) return fail(f.error().message);
            r.secondKeyOffset = f->offset, r.secondKeySize = f->size;
        }
        if (spec.secondSystem == "sched" && secondEvent == "sched_switch" && r.secondKeyField == "next_pid") {
            r.secondClearField = "prev_pid";
            auto f = tracepointField(spec.secondSystem, secondEvent, r.secondClearField);
            if (!f) return fail(f.error().message);
            r.secondClearOffset = f->offset, r.secondClearSize = f->size;
        }
        return r;
    }

    // Uprobes.
    std::string binary = spec.binary.empty() ? opts.defaultBinary : spec.binary;
    if (binary.empty())
        return fail("name the binary (" + (spec.function.empty() ? std::string("func") : spec.function) +
                    "@/path/to/program): a system-wide capture has no program of its own");
    auto path = findExecutable(binary);
    if (!path) {
        // Not executable through PATH: a library given by path is fine too.
        char buf[PATH_MAX];
        if (binary.find('/') == std::string::npos || !realpath(binary.c_str(), buf))
            return fail("binary " + path.error().message);
        path = std::string(buf);
    }
    r.path = *path;
    if (opts.readableBy)
        if (auto may = userMayReadFile(r.path, *opts.readableBy); !may) return fail(may.error().message);
    if (access(r.path.c_str(), R_OK) != 0)
        return fail("cannot read '" + r.path + "': " + std::strerror(errno) +
                    " (its symbols and the uprobe need a readable binary)");
    struct stat st {};
    if (stat(r.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return fail("'" + r.path + "' is not a regular file");
    // USDT probes: the named one, or the marker's where the binary has it.
    if (!spec.usdtProvider.empty() || spec.marker) {
        auto probes = readUsdtProbes(r.path);
        if (!probes) return fail(probes.error().message);
        const std::string provider = spec.marker ? kTriggerMarkerProvider : spec.usdtProvider;
        const std::string name = spec.marker ? kTriggerMarkerProbe : spec.usdtName;
        std::vector<const UsdtProbe*> sites;
        for (const UsdtProbe& p : *probes)
            if (p.provider == provider && p.name == name) sites.push_back(&p);
        if (!sites.empty()) {
            r.usdt = provider + ":" + name;
            r.offset = sites.front()->fileOffset;
            r.refCtrOffset = sites.front()->semaphoreOffset;
            for (size_t i = 1; i < sites.size(); ++i) {
                if (sites[i]->semaphoreOffset != r.refCtrOffset)
                    return fail("the sites of USDT probe " + r.usdt + " in '" + r.path +
                                "' have different semaphores");
                if (sites[i]->fileOffset != r.offset) r.moreOffsets.push_back(sites[i]->fileOffset);
            }
            if (r.refCtrOffset > 0xffffffffull)
                return fail("the semaphore of USDT probe " + r.usdt + " is past 4 GiB into '" + r.path +
                            "' (the kernel takes a 32-bit offset)");
            return r;
        }
        const std::string there = probes->empty() ? std::string("it has no USDT probes (no .note.stapsdt)")
                                                  : "its USDT probes: " + listUsdtProbeNames(*probes);
        if (!spec.marker)
            return fail("no USDT probe " + provider + ":" + name + " in '" + r.path + "' (" + there + ")");
        // The marker without a USDT probe: the auxscope_trigger() function, below.
        auto fns = listTriggerFunctions(r.path);
        if (!fns) return fail(fns.error().message);
        const bool hasFunction = std::any_of(fns->begin(), fns->end(), [](const TriggerFunction& f) {
            return f.name == kTriggerMarkerFunction;
        });
        if (!hasFunction)
            return fail("'" + r.path + "' has neither a USDT probe " + provider + ":" + name +
                        " nor a function " + kTriggerMarkerFunction + "() (" + there + ")");
    }
    if (spec.offset) {
        if (*spec.offset >= uint64_t(st.st_size))
            return fail("offset " + hex(*spec.offset) + " is past the end of '" + r.path + "' (" +
                        std::to_string(st.st_size) + " bytes)");
        r.offset = *spec.offset;
        return r;
    }
    auto fns = listTriggerFunctions(r.path);
    if (!fns) return fail(fns.error().message);
    std::vector<const TriggerFunction*> hits;
    for (auto& f : *fns)
        if (f.name == spec.function) hits.push_back(&f);
    if (hits.empty())
        for (auto& f : *fns)
            if (f.demangled == spec.function) hits.push_back(&f);
    if (hits.empty())
        for (auto& f : *fns)
            if (withoutParameters(f.demangled) == spec.function) hits.push_back(&f);
    std::set<uint64_t> offsets;
    for (auto* h : hits)
        offsets.insert(h->fileOffset);
    if (offsets.empty()) {
        if (!hasSymtab(r.path))
            return fail("no function '" + spec.function + "' in '" + r.path +
                        "', which is stripped (no .symtab; its .dynsym lists " + std::to_string(fns->size()) +
                        " exported functions): give binary:0xOFFSET, or a binary with symbols");
        return fail("no function '" + spec.function + "' in '" + r.path + "' (" +
                    std::to_string(fns->size()) +
                    " functions; names may be given plain, mangled or demangled)");
    }
    if (offsets.size() > 1) {
        std::string list;
        for (size_t i = 0; i < hits.size() && i < 4; ++i)
            list += (i ? ", " : "") + hits[i]->demangled + " at " + hex(hits[i]->fileOffset);
        return fail("'" + spec.function + "' names " + std::to_string(offsets.size()) + " functions in '" +
                    r.path + "' (" + list + "): give the full signature or binary:0xOFFSET");
    }
    r.offset = *offsets.begin();
    r.symbol = hits.front()->name;
    return r;
}

}  // namespace auxscope
