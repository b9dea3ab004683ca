// SPDX-License-Identifier: GPL-3.0-or-later
#include "SpeSynthTruth.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "SpeSynthEncoder.h"

namespace auxscope::spesynth {
namespace {

using spe::OpClass;
using spe::SpeRecord;

// Every SpeRecord field in declaration order: name, how to read it as a u64 and
// how to set it (with the range the field's type allows).
struct Field {
    const char* name;
    uint64_t (*get)(const SpeRecord&);
    void (*set)(SpeRecord&, uint64_t);
    int64_t min;
    uint64_t max;
    bool derived;  // may be left out of a --records CSV
};

#define AUXSCOPE_FIELD(name, type, derived)                                                                             \
    Field {                                                                                                             \
#name,                                                                                                          \
            [](const SpeRecord&                                                                                         \
                   r) { return uint64_t(r.name); },                                                                     \
                                                 [](SpeRecord & r,                                                      \
                                                    uint64_t                                                            \
                                                        v) { r.name = static_cast<type>(v); },                          \
                                                                                            std::numeric_limits <       \
                                                                                                type>                   \
                                                                                                ::is_signed             \
                                                                                            ? int64_t(                  \
                                                                                                  std::numeric_limits < \
                                                                                                      type>::           \
                                                                                                      min()) : 0,       \
                                                                                            uint64_t(                   \
                                                                                                std::numeric_limits <   \
                                                                                                    type>::             \
                                                                                                    max()),             \
                                                                                            derived                     \
    }

const std::vector<Field>& fields() {
    static const std::vector<Field> f = {
        AUXSCOPE_FIELD(timestamp, uint64_t, false),
        AUXSCOPE_FIELD(time, uint64_t, true),
        AUXSCOPE_FIELD(cpu, int, false),
        AUXSCOPE_FIELD(pid, int32_t, false),
        AUXSCOPE_FIELD(tid, int32_t, false),
        AUXSCOPE_FIELD(context, uint32_t, false),
        AUXSCOPE_FIELD(contextIndex, uint8_t, false),
        AUXSCOPE_FIELD(hasContext, bool, false),
        Field{"opClass", [](const SpeRecord& r) { return uint64_t(uint8_t(r.opClass)); },
              [](SpeRecord& r, uint64_t v) { r.opClass = OpClass(uint8_t(v)); }, 0, 255, false},
        AUXSCOPE_FIELD(opPayload, uint8_t, false),
        AUXSCOPE_FIELD(isLoad, bool, true),
        AUXSCOPE_FIELD(isStore, bool, true),
        AUXSCOPE_FIELD(isBranch, bool, true),
        AUXSCOPE_FIELD(isSve, bool, true),
        AUXSCOPE_FIELD(isAtomic, bool, true),
        AUXSCOPE_FIELD(isConditional, bool, true),
        AUXSCOPE_FIELD(pc, uint64_t, false),
        AUXSCOPE_FIELD(pcEl, uint8_t, false),
        AUXSCOPE_FIELD(pcNs, bool, false),
        AUXSCOPE_FIELD(hasPc, bool, false),
        AUXSCOPE_FIELD(branchTarget, uint64_t, false),
        AUXSCOPE_FIELD(hasBranchTarget, bool, false),
        AUXSCOPE_FIELD(prevBranchTarget, uint64_t, false),
        AUXSCOPE_FIELD(hasPrevBranchTarget, bool, false),
        AUXSCOPE_FIELD(dataVa, uint64_t, false),
        AUXSCOPE_FIELD(dataVaTag, uint8_t, false),
        AUXSCOPE_FIELD(hasDataVa, bool, false),
        AUXSCOPE_FIELD(dataPa, uint64_t, false),
        AUXSCOPE_FIELD(dataPaNs, bool, false),
        AUXSCOPE_FIELD(dataPaCh, bool, false),
        AUXSCOPE_FIELD(dataPaPat, uint8_t, false),
        AUXSCOPE_FIELD(hasDataPa, bool, false),
        AUXSCOPE_FIELD(totalLatency, uint16_t, false),
        AUXSCOPE_FIELD(issueLatency, uint16_t, false),
        AUXSCOPE_FIELD(translationLatency, uint16_t, false),
        AUXSCOPE_FIELD(hasTotalLatency, bool, false),
        AUXSCOPE_FIELD(hasIssueLatency, bool, false),
        AUXSCOPE_FIELD(hasTranslationLatency, bool, false),
        AUXSCOPE_FIELD(events, uint64_t, false),
        AUXSCOPE_FIELD(hasEvents, bool, false),
        AUXSCOPE_FIELD(dataSource, uint16_t, false),
        AUXSCOPE_FIELD(hasDataSource, bool, false),
    };
    return f;
}
#undef AUXSCOPE_FIELD

// Signed fields (cpu, pid, tid) are written as signed decimals.
bool isSigned(const Field& f) {
    return f.min < 0;
}

char* format(char* p, const SpeRecord& r) {
    bool first = true;
    for (const Field& f : fields()) {
        if (!first) *p++ = ',';
        first = false;
        const uint64_t v = f.get(r);
        if (isSigned(f))
            p = std::to_chars(p, p + 24, int64_t(int32_t(uint32_t(v)))).ptr;
        else
            p = std::to_chars(p, p + 24, v).ptr;
    }
    return p;
}

constexpr size_t kMaxRow = 42 * 24;

}  // namespace

const std::vector<std::string>& truthColumns() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> n;
        for (const Field& f : fields())
            n.push_back(f.name);
        return n;
    }();
    return names;
}

std::string truthRow(const SpeRecord& r) {
    std::string s(kMaxRow, '\0');
    s.resize(size_t(format(s.data(), r) - s.data()));
    return s;
}

Expected<TruthWriter> TruthWriter::create(const std::string& path) {
    TruthWriter w;
    w.path_ = path;
    w.f_ = std::fopen(path.c_str(), "w");
    if (!w.f_) return makeError(path + ": cannot create: " + std::strerror(errno));
    w.buf_.resize(1 << 20);
    std::setvbuf(w.f_, w.buf_.data(), _IOFBF, w.buf_.size());
    std::string header;
    for (const std::string& n : truthColumns())
        header += (header.empty() ? "" : ",") + n;
    header += '\n';
    std::fwrite(header.data(), 1, header.size(), w.f_);
    return w;
}

TruthWriter::TruthWriter(TruthWriter&& o) noexcept
    : path_(std::move(o.path_)), f_(o.f_), buf_(std::move(o.buf_)) {
    o.f_ = nullptr;
}

TruthWriter::~TruthWriter() {
    if (f_) std::fclose(f_);
}

void TruthWriter::write(const SpeRecord& r) {
    char row[kMaxRow + 1];
    char* end = format(row, r);
    *end++ = '\n';
    std::fwrite(row, 1, size_t(end - row), f_);
}

Expected<void> TruthWriter::close() {
    if (!f_) return {};
    const bool bad = std::ferror(f_);
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (bad || rc != 0) return makeError(path_ + ": cannot write: " + std::strerror(errno));
    return {};
}

Expected<TruthRead> readTruthCsv(const std::string& path) {
    std::ifstream in(path);
    if (!in) return makeError(path + ": cannot open: " + std::strerror(errno));
    std::string line;
    size_t lineNo = 0;
    auto where = [&](size_t l) { return path + ":" + std::to_string(l) + ": "; };
    auto split = [](const std::string& s) {
        std::vector<std::string> out;
        size_t from = 0;
        while (true) {
            const size_t comma = s.find(',', from);
            std::string cell = s.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
            while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\r' || cell.back() == '\t'))
                cell.pop_back();
            size_t lead = 0;
            while (lead < cell.size() && (cell[lead] == ' ' || cell[lead] == '\t'))
                ++lead;
            out.push_back(cell.substr(lead));
            if (comma == std::string::npos) break;
            from = comma + 1;
        }
        return out;
    };
    // Header: the first line that is neither empty nor a # comment.
    std::vector<const Field*> columns;
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.empty() || line[0] == '#' || line == "\r") continue;
        std::map<std::string, const Field*> byName;
        for (const Field& f : fields())
            byName[f.name] = &f;
        std::map<std::string, bool> seen;
        for (const std::string& name : split(line)) {
            auto it = byName.find(name);
            if (it == byName.end())
                return makeError(where(lineNo) + "unknown column \"" + name +
                                 "\" (the columns are SpeRecord's fields)");
            if (seen[name]) return makeError(where(lineNo) + "column \"" + name + "\" appears twice");
            seen[name] = true;
            columns.push_back(it->second);
        }
        for (const Field& f : fields())
            if (!f.derived && !seen[f.name]) return makeError(where(lineNo) + "no column \"" + f.name + "\"");
        break;
    }
    if (columns.empty()) return makeError(path + ": empty: no header row");
    TruthRead out;
    for (const Field* f : columns)
        if (std::string(f->name) == "time") out.hasTime = true;
    bool allDerived = true;
    for (const char* d : {"isLoad", "isStore", "isBranch", "isSve", "isAtomic", "isConditional"}) {
        bool has = false;
        for (const Field* f : columns)
            has |= std::string(f->name) == d;
        allDerived &= has;
    }
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.empty() || line[0] == '#' || line == "\r") continue;
        const auto cells = split(line);
        if (cells.size() != columns.size())
            return makeError(where(lineNo) + std::to_string(cells.size()) + " fields, the header names " +
                             std::to_string(columns.size()));
        SpeRecord r;
        for (size_t i = 0; i < cells.size(); ++i) {
            const Field& f = *columns[i];
            const std::string& c = cells[i];
            const char* b = c.data();
            const char* e = b + c.size();
            uint64_t v = 0;
            std::from_chars_result res{};
            if (isSigned(f) && !c.empty() && c[0] == '-') {
                int64_t s = 0;
                res = std::from_chars(b, e, s);
                if (res.ec == std::errc() && res.ptr == e && s < f.min)
                    return makeError(where(lineNo) + "column " + f.name + ": " + c + " is out of range");
                v = uint64_t(s);
            } else if (c.size() > 2 && c[0] == '0' && (c[1] == 'x' || c[1] == 'X')) {
                res = std::from_chars(b + 2, e, v, 16);
            } else {
                res = std::from_chars(b, e, v);
            }
            if (c.empty() || res.ec != std::errc() || res.ptr != e)
                return makeError(where(lineNo) + "column " + f.name + ": \"" + c + "\" is not a number");
            if (!(isSigned(f) && c[0] == '-') && v > f.max)
                return makeError(where(lineNo) + "column " + f.name + ": " + c +
                                 " is out of range (at most " + std::to_string(f.max) + ")");
            f.set(r, v);
        }
        const uint8_t cls = uint8_t(r.opClass);
        if (cls > 2 && cls != 0xff)
            return makeError(where(lineNo) + "column opClass: " + std::to_string(cls) +
                             " is not an op class (0 Other, 1 LoadStore, 2 Branch, 255 None)");
        if (r.contextIndex > 3) return makeError(where(lineNo) + "column contextIndex: at most 3");
        if (r.pcEl > 3) return makeError(where(lineNo) + "column pcEl: at most 3");
        if (r.dataPaPat > 15) return makeError(where(lineNo) + "column dataPaPat: at most 15");
        if (r.cpu < 0) return makeError(where(lineNo) + "column cpu: a record's CPU cannot be negative");
        if (r.cpu > 4095) return makeError(where(lineNo) + "column cpu: at most 4095");
        if (!allDerived) deriveOpFlags(r);
        out.records.push_back(r);
        out.lines.push_back(lineNo);
    }
    return out;
}

}  // namespace auxscope::spesynth
