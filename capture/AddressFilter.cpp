// SPDX-License-Identifier: GPL-3.0-or-later
#include "AddressFilter.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>

namespace auxscope {
namespace {

const char* kFormatHint =
    " (format: filter|start|stop|tracestop START [/ SIZE] [@ FILE], where START and SIZE are numbers or "
    "function symbols; several filters are separated by commas or spaces)";

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n';
}

// --- parsing ------------------------------------------------------------------------------

class FilterLexer {
public:
    explicit FilterLexer(const std::string& s) : s_(s) {}

    bool atEnd() const { return pos_ >= s_.size(); }
    char peek() const { return atEnd() ? '\0' : s_[pos_]; }
    size_t pos() const { return pos_; }
    void advance() { ++pos_; }
    void skipSpaces() {
        while (!atEnd() && isSpace(s_[pos_]))
            ++pos_;
    }
    void skipSeparators() {
        while (!atEnd() && (isSpace(s_[pos_]) || s_[pos_] == ','))
            ++pos_;
    }
    // Characters up to (not including) any of `delims` or whitespace.
    std::string word(const char* delims) {
        size_t b = pos_;
        while (!atEnd() && !isSpace(s_[pos_]) && !std::strchr(delims, s_[pos_]))
            ++pos_;
        return s_.substr(b, pos_ - b);
    }
    std::string slice(size_t from, size_t to) const { return s_.substr(from, to - from); }

private:
    const std::string& s_;
    size_t pos_ = 0;
};

std::string trimmed(std::string s) {
    while (!s.empty() && (isSpace(s.back()) || s.back() == ','))
        s.pop_back();
    size_t b = 0;
    while (b < s.size() && isSpace(s[b]))
        ++b;
    return s.substr(b);
}

// A number as strtoull(..., 0) reads it (0x hex, leading 0 octal, else decimal); it must end
// at a delimiter so that "0x12zz" is an error rather than two filters.
Expected<uint64_t> lexNumber(FilterLexer& lx, const std::string& what) {
    std::string w = lx.word("/@,#");
    if (w.empty()) return makeError("expected " + what);
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(w.c_str(), &end, 0);
    if (errno || end == w.c_str() || *end != '\0') return makeError("'" + w + "' is not a valid number");
    return uint64_t(v);
}

// "#N" or "#g" after a symbol; -1 when absent.
Expected<int> lexSymbolIndex(FilterLexer& lx, const std::string& sym) {
    lx.skipSpaces();
    if (lx.peek() != '#') return -1;
    lx.advance();
    if (lx.peek() == 'g' || lx.peek() == 'G') {
        lx.advance();
        return 0;
    }
    std::string w = lx.word("/@,");
    char* end = nullptr;
    errno = 0;
    unsigned long v = std::strtoul(w.c_str(), &end, 10);
    if (w.empty() || errno || *end != '\0' || v > INT_MAX)
        return makeError("'#" + w + "' after symbol '" + sym +
                         "' is not #N (N'th symbol) or #g (the global one)");
    return int(v);
}

// START or SIZE: a number, or a symbol with an optional index.
Expected<void> lexAddrOrSymbol(FilterLexer& lx, const std::string& what, std::optional<uint64_t>& num,
                               std::string& sym, int& idx) {
    lx.skipSpaces();
    if (std::isdigit(static_cast<unsigned char>(lx.peek()))) {
        auto n = lexNumber(lx, what);
        if (!n) return n.error();
        num = *n;
        return {};
    }
    sym = lx.word("/@,#");
    if (sym.empty()) return makeError("expected " + what);
    auto i = lexSymbolIndex(lx, sym);
    if (!i) return i.error();
    idx = *i;
    return {};
}

// --- symbol lookup ------------------------------------------------------------------------

struct Candidate {
    uint64_t start = 0;  // what the kernel wants: file offset, or kernel address
    uint64_t size = 0;
    bool global = false;
};

struct NamedCandidate {
    std::string name;
    Candidate c;
};

// Picks `name` (with perf's #N / #g disambiguation) among symbols in address order.
Expected<Candidate> pickSymbol(const std::vector<NamedCandidate>& syms, const std::string& name, int idx,
                               const std::string& where) {
    std::vector<const NamedCandidate*> matches;
    for (auto& s : syms)
        if (s.name == name) matches.push_back(&s);
    if (matches.empty())
        return makeError("no function symbol '" + name + "' in " + where + " (only function symbols count)");
    if (idx > 0) {
        if (size_t(idx) > matches.size())
            return makeError("'" + name + " #" + std::to_string(idx) + "': " + where + " has only " +
                             std::to_string(matches.size()) + " function symbol(s) named '" + name + "'");
        return matches[idx - 1]->c;
    }
    if (idx == 0) {
        std::vector<const NamedCandidate*> globals;
        for (auto* m : matches)
            if (m->c.global) globals.push_back(m);
        if (globals.empty()) return makeError("no global function symbol '" + name + "' in " + where);
        matches = globals;
    }
    if (matches.size() > 1) {
        std::string list;
        for (size_t i = 0; i < matches.size() && i < 8; ++i)
            list += (i ? ", " : "") + std::string("#") + std::to_string(i + 1) + " " +
                    hex(matches[i]->c.start) + (matches[i]->c.global ? " global" : " local");
        if (matches.size() > 8) list += ", ...";
        return makeError("symbol '" + name + "' is ambiguous in " + where + ": " +
                         std::to_string(matches.size()) + " function symbols have that name (" + list +
                         "); write '" + name + " #N' for the N'th or '" + name + " #g' for the global one");
    }
    return matches[0]->c;
}

// --- ELF ----------------------------------------------------------------------------------

struct ElfHandle {
    int fd = -1;
    Elf* elf = nullptr;
    ~ElfHandle() {
        if (elf) elf_end(elf);
        if (fd >= 0) close(fd);
    }
};

// --- kallsyms -----------------------------------------------------------------------------

struct KernelSymbols {
    std::vector<NamedCandidate> functions;  // in file order, which is address order for the core kernel
    uint64_t firstFunction = 0, lastFunction = 0;
};

bool isKernelFunctionType(char t) {
    t = char(std::toupper(static_cast<unsigned char>(t)));
    return t == 'T' || t == 'W';
}

Expected<KernelSymbols> readKallsyms(const std::string& path) {
    std::ifstream in(path);
    if (!in) return makeError("cannot read " + path + ": " + std::strerror(errno));
    struct Line {
        uint64_t addr;
        char type;
        std::string name;
    };
    std::vector<Line> lines;
    std::string line;
    bool anyNonZero = false;
    while (std::getline(in, line)) {
        char* end = nullptr;
        unsigned long long addr = std::strtoull(line.c_str(), &end, 16);
        if (end == line.c_str() || *end != ' ' || end[1] == '\0' || end[2] != ' ') continue;
        char type = end[1];
        const char* name = end + 3;
        size_t n = std::strcspn(name, " \t");
        lines.push_back({addr, type, std::string(name, n)});
        anyNonZero |= addr != 0;
    }
    if (lines.empty()) return makeError(path + " holds no symbols");
    if (!anyNonZero)
        return makeError(path +
                         " shows every address as 0: kernel addresses are hidden (kernel.kptr_restrict; "
                         "reading them needs CAP_SYSLOG or kptr_restrict=0), so kernel symbols cannot be "
                         "resolved");
    KernelSymbols ks;
    bool first = true;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (!isKernelFunctionType(lines[i].type)) continue;
        // A kernel symbol's extent is where the next one starts (kallsyms has no sizes).
        uint64_t size = 0;
        if (i + 1 < lines.size() && lines[i + 1].addr > lines[i].addr)
            size = lines[i + 1].addr - lines[i].addr;
        bool global = std::isupper(static_cast<unsigned char>(lines[i].type));
        ks.functions.push_back({lines[i].name, {lines[i].addr, size, global}});
        if (first) ks.firstFunction = lines[i].addr;
        first = false;
        ks.lastFunction = lines[i].addr;
    }
    if (ks.functions.empty()) return makeError(path + " lists no function symbols");
    return ks;
}

}  // namespace

const char* addrFilterActionName(AddrFilterAction a) {
    switch (a) {
        case AddrFilterAction::Filter:
            return "filter";
        case AddrFilterAction::Start:
            return "start";
        case AddrFilterAction::Stop:
            return "stop";
        case AddrFilterAction::TraceStop:
            return "tracestop";
    }
    return "?";
}

std::string ResolvedAddrFilter::kernelString() const {
    // The kernel has no "tracestop": it is "stop" over a region.
    std::string s = action == AddrFilterAction::TraceStop ? "stop" : addrFilterActionName(action);
    s += " " + hex(start);
    if (range) s += "/" + hex(size);
    if (!file.empty()) s += "@" + file;
    return s;
}

Expected<std::vector<AddrFilterSpec>> parseAddrFilters(const std::string& text) {
    std::vector<AddrFilterSpec> out;
    FilterLexer lx(text);
    lx.skipSeparators();
    while (!lx.atEnd()) {
        size_t begin = lx.pos();
        AddrFilterSpec f;
        auto fail = [&](const std::string& why) -> Error {
            std::string shown = trimmed(lx.slice(begin, std::min(text.size(), lx.pos() + 1)));
            return makeError("address filter '" + shown + "': " + why + kFormatHint);
        };
        std::string action = lx.word(",");
        if (action == "filter")
            f.action = AddrFilterAction::Filter;
        else if (action == "start")
            f.action = AddrFilterAction::Start;
        else if (action == "stop")
            f.action = AddrFilterAction::Stop;
        else if (action == "tracestop")
            f.action = AddrFilterAction::TraceStop;
        else
            return fail("unknown action '" + action + "'");

        if (auto r = lexAddrOrSymbol(lx, "a start address or symbol after '" + action + "'", f.addr,
                                     f.symFrom, f.symFromIdx);
            !r)
            return fail(r.error().message);
        lx.skipSpaces();
        if (lx.peek() == '/') {
            lx.advance();
            f.hasSize = true;
            if (auto r = lexAddrOrSymbol(lx, "a size or end symbol after '/'", f.size, f.symTo, f.symToIdx);
                !r)
                return fail(r.error().message);
        }
        lx.skipSpaces();
        if (lx.peek() == '@') {
            lx.advance();
            lx.skipSpaces();
            f.file = lx.word(",");
            if (f.file.empty()) return fail("expected a file name after '@'");
        }
        lx.skipSpaces();
        if (!lx.atEnd() && lx.peek() != ',' && !std::isalpha(static_cast<unsigned char>(lx.peek())))
            return fail("unexpected '" + std::string(1, lx.peek()) + "'");
        f.text = trimmed(lx.slice(begin, lx.pos()));
        out.push_back(std::move(f));
        lx.skipSeparators();
    }
    if (out.empty()) return makeError("address filter '" + text + "' is empty" + kFormatHint);
    return out;
}

Expected<std::vector<ElfFunctionSymbol>> readElfFunctionSymbols(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE)
        return makeError("libelf is unusable: " + std::string(elf_errmsg(-1)));
    ElfHandle h;
    h.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (h.fd < 0) return makeError("cannot open '" + path + "': " + std::strerror(errno));
    h.elf = elf_begin(h.fd, ELF_C_READ_MMAP, nullptr);
    if (!h.elf || elf_kind(h.elf) != ELF_K_ELF) return makeError("'" + path + "' is not an ELF file");
    GElf_Ehdr ehdr;
    if (!gelf_getehdr(h.elf, &ehdr)) return makeError("'" + path + "': bad ELF header: " + elf_errmsg(-1));

    // Prefer the full symbol table; stripped objects keep only the dynamic one.
    Elf_Scn* symtab = nullptr;
    Elf_Scn* dynsym = nullptr;
    for (Elf_Scn* scn = elf_nextscn(h.elf, nullptr); scn; scn = elf_nextscn(h.elf, scn)) {
        GElf_Shdr sh;
        if (!gelf_getshdr(scn, &sh)) continue;
        if (sh.sh_type == SHT_SYMTAB) symtab = scn;
        if (sh.sh_type == SHT_DYNSYM) dynsym = scn;
    }
    Elf_Scn* table = symtab ? symtab : dynsym;
    if (!table) return makeError("'" + path + "' has no symbol table (.symtab or .dynsym)");
    GElf_Shdr tsh;
    gelf_getshdr(table, &tsh);
    Elf_Data* data = elf_getdata(table, nullptr);
    if (!data || tsh.sh_entsize == 0) return makeError("'" + path + "': unreadable symbol table");

    std::vector<ElfFunctionSymbol> out;
    size_t count = tsh.sh_size / tsh.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, int(i), &sym)) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
            sym.st_shndx >= SHN_LORESERVE)
            continue;
        const char* name = elf_strptr(h.elf, tsh.sh_link, sym.st_name);
        if (!name || !*name) continue;
        // The kernel matches filters against file offsets: move the symbol from its section's
        // address to the section's place in the file.
        Elf_Scn* sec = elf_getscn(h.elf, sym.st_shndx);
        GElf_Shdr ssh;
        if (!sec || !gelf_getshdr(sec, &ssh) || ssh.sh_type == SHT_NOBITS) continue;
        if (ehdr.e_type != ET_REL && (sym.st_value < ssh.sh_addr || sym.st_value > ssh.sh_addr + ssh.sh_size))
            continue;
        uint64_t offset =
            ehdr.e_type == ET_REL ? ssh.sh_offset + sym.st_value : sym.st_value - ssh.sh_addr + ssh.sh_offset;
        out.push_back({name, sym.st_value, sym.st_size, offset, GELF_ST_BIND(sym.st_info) == STB_GLOBAL});
    }
    std::sort(out.begin(), out.end(),
              [](auto& a, auto& b) { return a.value != b.value ? a.value < b.value : a.name < b.name; });
    out.erase(std::unique(out.begin(), out.end(),
                          [](auto& a, auto& b) { return a.value == b.value && a.name == b.name; }),
              out.end());
    // Hand-written assembly often has st_size 0: such a function runs to the next one.
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i].size) continue;
        for (size_t j = i + 1; j < out.size(); ++j)
            if (out[j].value > out[i].value) {
                out[i].size = out[j].value - out[i].value;
                break;
            }
    }
    return out;
}

Expected<ResolvedAddrFilter> resolveAddrFilter(const AddrFilterSpec& spec,
                                               const AddrFilterResolveOptions& opts) {
    ResolvedAddrFilter r;
    r.action = spec.action;
    r.range = spec.isRange();
    r.text = spec.text;
    auto fail = [&](const std::string& why) -> Error {
        return makeError("address filter '" + spec.text + "': " + why);
    };

    std::vector<NamedCandidate> syms;
    std::string where;
    uint64_t wholeStart = 0, wholeSize = 0;
    const bool needSymbols = !spec.symFrom.empty() || !spec.symTo.empty();
    if (!spec.file.empty()) {
        char buf[PATH_MAX];
        if (!realpath(spec.file.c_str(), buf))
            return fail("cannot use '" + spec.file + "': " + std::strerror(errno));
        r.file = buf;
        where = "'" + r.file + "'";
        if (needSymbols) {
            auto elfSyms = readElfFunctionSymbols(r.file);
            if (!elfSyms) return fail(elfSyms.error().message);
            if (elfSyms->empty())
                return fail(where +
                            " defines no function symbols (a stripped object keeps only .dynsym, which "
                            "may list none: give an address instead)");
            for (auto& s : *elfSyms)
                syms.push_back({s.name, {s.fileOffset, s.size, s.global}});
            wholeStart = syms.front().c.start;
            uint64_t end = 0;
            for (auto& s : syms)
                end = std::max(end, s.c.start + s.c.size);
            wholeSize = end - wholeStart;
        }
    } else if (needSymbols) {
        auto ks = readKallsyms(opts.kallsyms);
        if (!ks) return fail(ks.error().message);
        where = "the kernel (" + opts.kallsyms + ")";
        syms = std::move(ks->functions);
        // Where the kernel text ends is not listed: include the page after the last function.
        const uint64_t page = 4096;
        wholeStart = ks->firstFunction;
        wholeSize = ((ks->lastFunction + page - 1) / page * page) + page - wholeStart;
    }

    uint64_t fromSize = 0;
    if (spec.symFrom == "*") {
        r.start = wholeStart;
        r.size = wholeSize;
        r.range = true;
        return r;
    }
    if (!spec.symFrom.empty()) {
        auto c = pickSymbol(syms, spec.symFrom, spec.symFromIdx, where);
        if (!c) return fail(c.error().message);
        r.start = c->start;
        fromSize = c->size;
    } else {
        r.start = *spec.addr;
    }

    if (!spec.symTo.empty()) {
        auto c = pickSymbol(syms, spec.symTo, spec.symToIdx, where);
        if (!c) return fail(c.error().message);
        if (c->start + c->size < r.start)
            return fail("end symbol '" + spec.symTo + "' (" + hex(c->start) + ") comes before the start (" +
                        hex(r.start) + ")");
        if (c->size == 0) return fail("cannot tell where symbol '" + spec.symTo + "' ends (it has no size)");
        r.size = c->start + c->size - r.start;
    } else if (spec.size) {
        r.size = *spec.size;
    } else if (r.range && !spec.symFrom.empty()) {
        // A region named by one symbol covers that symbol, as perf does.
        if (fromSize == 0)
            return fail("cannot tell where symbol '" + spec.symFrom + "' ends (it has no size)");
        r.size = fromSize;
    }
    if (r.range && r.size == 0)
        return fail(std::string("'") + addrFilterActionName(spec.action) +
                    "' needs a region: give a size (ADDR/SIZE) or a function symbol; the kernel refuses an "
                    "empty one");
    return r;
}

std::string kernelFilterString(const std::vector<ResolvedAddrFilter>& filters) {
    std::string s;
    for (auto& f : filters)
        s += (s.empty() ? "" : ",") + f.kernelString();
    return s;
}

Expected<std::string> buildKernelAddrFilter(const std::string& text, const AddrFilterResolveOptions& opts) {
    auto specs = parseAddrFilters(text);
    if (!specs) return specs.error();
    std::vector<ResolvedAddrFilter> resolved;
    for (auto& s : *specs) {
        auto r = resolveAddrFilter(s, opts);
        if (!r) return r.error();
        resolved.push_back(std::move(r.value()));
    }
    return kernelFilterString(resolved);
}

}  // namespace auxscope
