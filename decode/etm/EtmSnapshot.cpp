// SPDX-License-Identifier: GPL-3.0-or-later
#include "etm/EtmSnapshot.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "etm/SnapshotIni.h"

namespace auxscope::etm {

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

// An unsigned number as strtoul(s, 0, 0) reads one (0x.. hex, 0.. octal, else
// decimal), but the whole value must be the number and it must fit 64 bits.
bool parseNumber(std::string_view s, uint64_t& out) {
    s = unquoteIni(s);
    if (s.empty()) return false;
    unsigned base = 10;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s.remove_prefix(2);
    } else if (s.size() > 1 && s[0] == '0') {
        base = 8;
        s.remove_prefix(1);
    }
    uint64_t v = 0;
    for (char c : s) {
        unsigned d;
        if (c >= '0' && c <= '9')
            d = static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = static_cast<unsigned>(c - 'A' + 10);
        else
            return false;
        if (d >= base) return false;
        if (v > (~0ull - d) / base) return false;
        v = v * base + d;
    }
    out = v;
    return true;
}

std::string joinPath(const std::string& dir, const std::string& file) {
    if (!file.empty() && file.front() == '/') return file;
    return (std::filesystem::path(dir) / file).string();
}

// Keys that may appear once in a section: an error names both lines.
class OnceKeys {
public:
    OnceKeys(const IniFile& f, const IniSection& s) : f_(f), s_(s) {}
    Expected<void> take(const IniEntry& e) {
        for (const auto& [k, line] : seen_)
            if (k == e.key)
                return makeError(f_.where(e.line) + ": duplicate key '" + e.key + "' in [" + s_.name +
                                 "] (first on line " + std::to_string(line) + ")");
        seen_.emplace_back(e.key, e.line);
        return {};
    }

private:
    const IniFile& f_;
    const IniSection& s_;
    std::vector<std::pair<std::string, int>> seen_;
};

Expected<SnapshotDevice> readDevice(const std::string& dir, const std::string& iniName) {
    auto ini = readIniFile(joinPath(dir, iniName));
    if (!ini) return ini.error();
    const IniFile& f = *ini;
    SnapshotDevice dev;
    dev.iniFile = iniName;
    bool gotDevice = false, gotRegs = false;
    for (const auto& s : f.sections) {
        OnceKeys once(f, s);
        if (s.name == "device") {
            if (gotDevice) return makeError(f.where(s.line) + ": a second [device] section");
            gotDevice = true;
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                if (e.key == "name")
                    dev.name = e.value;
                else if (e.key == "class")
                    dev.deviceClass = e.value;
                else if (e.key == "type")
                    dev.type = e.value;
                // other keys are OpenCSD's to ignore, and ours
            }
            if (dev.name.empty()) return makeError(f.where(s.line) + ": [device] has no name");
        } else if (s.name == "regs") {
            if (gotRegs) return makeError(f.where(s.line) + ": a second [regs] section");
            gotRegs = true;
            dev.regsLine = s.line;
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                SnapshotRegister reg;
                const size_t paren = e.key.find('(');
                reg.name = std::string(trimIni(std::string_view(e.key).substr(0, paren)));
                if (reg.name.empty())
                    return makeError(f.where(e.line) + ": register without a name: '" + e.key + "'");
                if (paren != std::string::npos && e.key.back() != ')')
                    return makeError(f.where(e.line) + ": register name '" + e.key + "' has an unclosed '('");
                if (!parseNumber(e.value, reg.value))
                    return makeError(f.where(e.line) + ": register " + reg.name + ": '" + e.value +
                                     "' is not an unsigned 64-bit number");
                for (const auto& other : dev.regs)
                    if (iequals(other.name, reg.name))
                        return makeError(f.where(e.line) + ": register " + reg.name +
                                         " again (first on line " + std::to_string(other.line) + ")");
                reg.line = e.line;
                dev.regs.push_back(std::move(reg));
            }
        } else if (s.name.rfind("dump", 0) == 0) {
            SnapshotDump d;
            d.where = f.where(s.line);
            bool gotFile = false, gotAddress = false;
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                uint64_t v = 0;
                if (e.key == "file") {
                    d.file = std::string(unquoteIni(e.value));
                    if (d.file.empty()) return makeError(f.where(e.line) + ": empty dump file name");
                    gotFile = true;
                } else if (e.key == "space") {
                    d.spaceName = std::string(unquoteIni(e.value));
                    if (!etmMemSpaceFromName(d.spaceName, d.space))
                        return makeError(f.where(e.line) + ": unknown memory space '" + d.spaceName +
                                         "' (EL1S, EL1N, EL2, EL2N, EL2S, EL3, S, N, ANY, H, P, NP, SP)");
                } else if (e.key == "address" || e.key == "length" || e.key == "offset") {
                    if (!parseNumber(e.value, v))
                        return makeError(f.where(e.line) + ": dump " + e.key + " '" + e.value +
                                         "' is not an unsigned 64-bit number");
                    if (e.key == "address") {
                        d.address = v;
                        gotAddress = true;
                    } else if (e.key == "length") {
                        d.length = v;
                    } else {
                        d.offset = v;
                    }
                } else {
                    return makeError(f.where(e.line) + ": unknown key '" + e.key + "' in [" + s.name +
                                     "] (file, address, length, offset, space)");
                }
            }
            if (!gotFile) return makeError(d.where + ": [" + s.name + "] has no file=");
            if (!gotAddress) return makeError(d.where + ": [" + s.name + "] has no address=");
            d.path = joinPath(dir, d.file);
            dev.dumps.push_back(std::move(d));
        }
        // [global], [extendregs] and unknown sections: nothing the decode needs.
    }
    if (!gotDevice) return makeError(f.path + ": no [device] section");
    return dev;
}

// "ETM4.1" -> "ETM4" (OpenCSD drops the minor version).
std::string protocolPart(const std::string& type) {
    return type.substr(0, type.find('.'));
}

}  // namespace

const SnapshotRegister* SnapshotDevice::reg(const std::string& n) const {
    for (const auto& r : regs)
        if (iequals(r.name, n)) return &r;
    return nullptr;
}

const SnapshotDevice* EtmSnapshot::device(const std::string& name) const {
    for (const auto& d : devices_)
        if (d.name == name) return &d;
    return nullptr;
}

const SnapshotBuffer* EtmSnapshot::buffer(const std::string& name) const {
    for (const auto& b : buffers_)
        if (b.name == name) return &b;
    return nullptr;
}

Expected<EtmSnapshot> EtmSnapshot::read(const std::string& dir) {
    EtmSnapshot snap;
    snap.dir_ = dir;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) return makeError(dir + ": not a directory");
    const std::string snapshotIni = joinPath(dir, "snapshot.ini");
    if (!std::filesystem::exists(snapshotIni, ec))
        return makeError(dir + ": no snapshot.ini (not an OpenCSD/DS-5 snapshot directory)");
    auto ini = readIniFile(snapshotIni);
    if (!ini) return ini.error();
    const IniFile& f = *ini;

    std::string traceIni;
    int traceIniLine = 0;
    std::vector<std::pair<std::string, int>> deviceFiles;
    bool gotSnapshot = false, gotTrace = false;
    for (const auto& s : f.sections) {
        OnceKeys once(f, s);
        if (s.name == "snapshot") {
            if (gotSnapshot) return makeError(f.where(s.line) + ": a second [snapshot] section");
            gotSnapshot = true;
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                if (e.key == "version") {
                    if (e.value != "1.0" && e.value != "1")
                        return makeError(f.where(e.line) + ": snapshot version '" + e.value +
                                         "' (only 1.0 is defined)");
                    snap.version_ = e.value;
                }
            }
        } else if (s.name == "device_list") {
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                if (e.value.empty())
                    return makeError(f.where(e.line) + ": device '" + e.key + "' names no file");
                deviceFiles.emplace_back(std::string(unquoteIni(e.value)), e.line);
            }
        } else if (s.name == "trace") {
            if (gotTrace) return makeError(f.where(s.line) + ": a second [trace] section");
            gotTrace = true;
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                if (e.key == "metadata") {
                    traceIni = std::string(unquoteIni(e.value));
                    traceIniLine = e.line;
                }
            }
        }
    }
    if (traceIni.empty())
        return makeError(snapshotIni +
                         ": no trace metadata ([trace] metadata=trace.ini): no trace to decode");

    for (const auto& [file, line] : deviceFiles) {
        auto dev = readDevice(dir, file);
        if (!dev) {
            // Name the line that listed the device when the file itself is missing.
            if (!std::filesystem::exists(joinPath(dir, file), ec))
                return makeError(f.where(line) + ": device file " + file + " is missing");
            return dev.error();
        }
        if (const SnapshotDevice* other = snap.device(dev->name))
            return makeError(joinPath(dir, file) + ": device name '" + dev->name + "' is also used by " +
                             other->iniFile);
        snap.devices_.push_back(std::move(*dev));
    }

    const std::string tracePath = joinPath(dir, traceIni);
    if (!std::filesystem::exists(tracePath, ec))
        return makeError(f.where(traceIniLine) + ": trace metadata file " + traceIni + " is missing");
    auto tini = readIniFile(tracePath);
    if (!tini) return tini.error();
    const IniFile& t = *tini;
    std::vector<std::pair<std::string, int>> bufferSections;
    for (const auto& s : t.sections) {
        OnceKeys once(t, s);
        if (s.name == "trace_buffers") {
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                if (e.key != "buffers") continue;
                std::string_view list = e.value;
                while (true) {
                    const size_t comma = list.find(',');
                    const std::string_view name = trimIni(list.substr(0, comma));
                    if (name.empty()) return makeError(t.where(e.line) + ": empty name in the buffer list");
                    bufferSections.emplace_back(std::string(name), e.line);
                    if (comma == std::string_view::npos) break;
                    list.remove_prefix(comma + 1);
                }
            }
        } else if (s.name == "source_buffers") {
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                snap.sourceBuffer_.emplace_back(e.key, e.value);
            }
        } else if (s.name == "core_trace_sources") {
            for (const auto& e : s.entries) {
                if (auto r = once.take(e); !r) return r.error();
                for (const auto& [core, source] : snap.coreSource_)
                    if (source == e.value)
                        return makeError(t.where(e.line) + ": trace source " + e.value + " is given to " +
                                         core + " and to " + e.key);
                snap.coreSource_.emplace_back(e.key, e.value);
            }
        }
    }
    if (bufferSections.empty())
        return makeError(tracePath + ": no [trace_buffers] buffers= list: no trace buffer");
    for (const auto& [sectionName, listLine] : bufferSections) {
        const IniSection* s = t.find(sectionName);
        if (!s)
            return makeError(t.where(listLine) + ": buffer section [" + sectionName +
                             "] is listed but not defined");
        OnceKeys once(t, *s);
        SnapshotBuffer b;
        b.where = t.where(s->line);
        int formatLine = s->line;
        for (const auto& e : s->entries) {
            if (auto r = once.take(e); !r) return r.error();
            if (e.key == "name")
                b.name = e.value;
            else if (e.key == "file")
                b.file = std::string(unquoteIni(e.value));
            else if (e.key == "format") {
                b.format = e.value;
                formatLine = e.line;
            }
        }
        if (b.name.empty()) return makeError(b.where + ": [" + sectionName + "] has no buffer name=");
        if (b.file.empty()) return makeError(b.where + ": [" + sectionName + "] has no file=");
        if (b.format.empty() || b.format == "coresight")
            b.input = EtmInput::Formatted;
        else if (b.format == "dstream_coresight")
            b.input = EtmInput::FormattedFsync;
        else if (b.format == "source_data")
            b.input = EtmInput::Raw;
        else
            return makeError(t.where(formatLine) + ": unknown buffer format '" + b.format +
                             "' (coresight, dstream_coresight, source_data)");
        if (snap.buffer(b.name)) return makeError(b.where + ": a second buffer named '" + b.name + "'");
        b.path = joinPath(dir, b.file);
        snap.buffers_.push_back(std::move(b));
    }
    // Every source must write to a buffer that exists.
    for (const auto& s : t.sections) {
        if (s.name != "source_buffers") continue;
        for (const auto& e : s.entries)
            if (!snap.buffer(e.value))
                return makeError(t.where(e.line) + ": trace source " + e.key + " writes to buffer '" +
                                 e.value + "', which [trace_buffers] does not define");
    }
    return snap;
}

Expected<EtmSourceConfig> EtmSnapshot::sourceConfig(const SnapshotDevice& dev, const std::string& coreType) {
    EtmSourceConfig c;
    const std::string proto = protocolPart(dev.type);
    if (proto == "ETM4")
        c.protocol = EtmProtocol::EtmV4;
    else if (proto == "ETE")
        c.protocol = EtmProtocol::Ete;
    else if (proto == "ETM3")
        c.protocol = EtmProtocol::EtmV3;
    else if (proto == "PTM1" || proto == "PFT1")
        c.protocol = EtmProtocol::Ptm;
    else if (proto == "STM")
        c.protocol = EtmProtocol::Stm;
    else
        return makeError(dev.iniFile + ": no decoder for trace source type '" + dev.type + "'");
    const std::string where =
        dev.iniFile + (dev.regsLine ? ":" + std::to_string(dev.regsLine) : std::string());
    auto get = [&](const char* name, bool required, uint32_t& out) -> Expected<void> {
        const SnapshotRegister* r = dev.reg(name);
        if (!r) {
            if (required)
                return makeError(where + ": " + dev.name + " (" + dev.type + ") lacks register " + name +
                                 ", which its decoder needs");
            return {};  // keep the default
        }
        if (r->value > 0xffffffffull)
            return makeError(dev.iniFile + ":" + std::to_string(r->line) + ": register " + name +
                             " does not fit 32 bits");
        out = static_cast<uint32_t>(r->value);
        return {};
    };
    std::vector<Expected<void>> results;
    switch (c.protocol) {
        case EtmProtocol::EtmV4:
        case EtmProtocol::Ete:
            results.push_back(get("TRCCONFIGR", true, c.trcconfigr));
            results.push_back(get("TRCTRACEIDR", true, c.trctraceidr));
            results.push_back(get("TRCIDR0", true, c.trcidr0));
            results.push_back(get("TRCIDR1", false, c.trcidr1));
            results.push_back(get("TRCIDR2", true, c.trcidr2));
            results.push_back(get("TRCIDR8", false, c.trcidr8));
            if (c.protocol == EtmProtocol::Ete) {
                results.push_back(get("TRCDEVARCH", false, c.trcdevarch));
            } else {
                results.push_back(get("TRCIDR9", false, c.trcidr9));
                results.push_back(get("TRCIDR10", false, c.trcidr10));
                results.push_back(get("TRCIDR11", false, c.trcidr11));
                results.push_back(get("TRCIDR12", false, c.trcidr12));
                results.push_back(get("TRCIDR13", false, c.trcidr13));
            }
            break;
        case EtmProtocol::EtmV3:
        case EtmProtocol::Ptm:
            results.push_back(get("ETMIDR", true, c.etmidr));
            results.push_back(get("ETMCR", true, c.etmcr));
            results.push_back(get("ETMCCER", true, c.etmccer));
            results.push_back(get("ETMTRACEIDR", true, c.etmtraceidr));
            break;
        case EtmProtocol::Stm:
            results.push_back(get("STMTCSR", true, c.stmtcsr));
            break;
    }
    for (auto& r : results)
        if (!r) return r.error();
    if (c.protocol != EtmProtocol::Stm) {
        c.core = etmCoreArchFromName(coreType);
        if (!c.core.known())
            return makeError(dev.iniFile + ": core type '" + coreType + "' of the core traced by " +
                             dev.name + " is unknown (its architecture and profile are needed to decode)");
    }
    const uint8_t id = c.traceId();
    if (id == 0 || id >= 0x70) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "trace ID 0x%x is reserved (valid: 0x01..0x6f)", id);
        return makeError(where + ": " + dev.name + ": " + buf);
    }
    return c;
}

Expected<std::vector<SnapshotSource>> EtmSnapshot::sources(const std::string& bufferName) const {
    std::vector<std::pair<std::string, std::string>> inBuffer = sourceBuffer_;
    std::sort(inBuffer.begin(), inBuffer.end());  // OpenCSD walks a std::map
    std::vector<SnapshotSource> out;
    for (const auto& [source, buf] : inBuffer) {
        if (buf != bufferName) continue;
        SnapshotSource s;
        s.name = source;
        for (const auto& [core, src] : coreSource_)
            if (src == source) s.core = core;
        const SnapshotDevice* dev = device(source);
        if (!dev) {
            s.note = "trace source " + source + " has no device file in snapshot.ini; not decoded";
            out.push_back(std::move(s));
            continue;
        }
        std::string coreType;
        if (!s.core.empty()) {
            const SnapshotDevice* core = device(s.core);
            if (!core) {
                s.note = "core " + s.core + " of trace source " + source +
                         " has no device file in snapshot.ini; not decoded";
                out.push_back(std::move(s));
                continue;
            }
            coreType = core->type;
        }
        static const char* const decodable[] = {"ETM4", "ETE", "ETM3", "PTM1", "PFT1", "STM"};
        const std::string proto = protocolPart(dev->type);
        if (std::find(std::begin(decodable), std::end(decodable), proto) == std::end(decodable) ||
            (s.core.empty() && proto != "STM")) {
            s.note = "trace source " + source + " (" + dev->type + ") is not decoded (no decoder for it)";
            out.push_back(std::move(s));
            continue;
        }
        auto cfg = sourceConfig(*dev, coreType);
        if (!cfg) return cfg.error();
        s.config = *cfg;
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<SnapshotDump> EtmSnapshot::dumps(const std::string& bufferName) const {
    std::vector<SnapshotDump> out;
    auto srcs = sources(bufferName);
    if (!srcs) return out;
    for (const auto& s : *srcs) {
        if (!s.config || s.core.empty()) continue;
        const SnapshotDevice* core = device(s.core);
        if (!core) continue;
        for (const auto& d : core->dumps) {
            bool dup = false;
            for (const auto& o : out)
                dup |= o.path == d.path && o.address == d.address && o.offset == d.offset &&
                       o.length == d.length && o.space == d.space;
            if (!dup) out.push_back(d);
        }
    }
    return out;
}

}  // namespace auxscope::etm
