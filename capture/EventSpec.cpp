// SPDX-License-Identifier: GPL-3.0-or-later
#include "EventSpec.h"

#include <charconv>
#include <cstring>
#include <sstream>

#include "Tracefs.h"

namespace auxscope {
namespace {

struct Symbolic {
    const char* name;
    uint32_t type;
    uint64_t config;
};

// perf's symbolic names (tools/perf/util/parse-events.c), with their aliases.
const Symbolic kSymbolic[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS},
    {"dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY},
    {"bpf-output", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES},
    {"ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES},
    {"stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND},
    {"stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND},
};

const Symbolic* findSymbolic(const std::string& name) {
    for (auto& s : kSymbolic)
        if (name == s.name) return &s;
    return nullptr;
}

bool parseNumber(const std::string& s, uint64_t& out) {
    std::string_view v = s;
    int base = 10;
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        v.remove_prefix(2);
        base = 16;
    }
    if (v.empty()) return false;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
    return ec == std::errc() && p == v.data() + v.size();
}

perf_event_attr baseAttr(uint32_t type, uint64_t config) {
    perf_event_attr a;
    std::memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    return a;
}

}  // namespace

std::vector<std::string> EventParser::splitList(const std::string& spec) {
    std::vector<std::string> out;
    std::string cur;
    int slashes = 0;
    for (char c : spec) {
        if (c == '/') ++slashes;
        if (c == ',' && slashes % 2 == 0) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            continue;
        }
        cur += c;
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

Expected<std::vector<EventDesc>> EventParser::parse(const std::string& spec) const {
    std::vector<EventDesc> all;
    auto parts = splitList(spec);
    if (parts.empty()) return makeError("empty event specification");
    for (auto& part : parts) {
        auto one = parseOne(part);
        if (!one) return one.error();
        for (auto& e : one.value())
            all.push_back(std::move(e));
    }
    return all;
}

Expected<void> EventParser::applyModifiers(const std::string& mods, const std::string& spec,
                                           perf_event_attr& attr) const {
    bool u = false, k = false, h = false;
    for (char c : mods) {
        switch (c) {
            case 'u':
                u = true;
                break;
            case 'k':
                k = true;
                break;
            case 'h':
                h = true;
                break;
            case 'p':
                if (attr.precise_ip < 3) ++attr.precise_ip;
                break;
            case 'H':
                attr.exclude_guest = 1;
                break;
            case 'G':
                attr.exclude_host = 1;
                break;
            default:
                return makeError("event '" + spec + "': unknown modifier '" + std::string(1, c) +
                                 "' (known: u user, k kernel, h hypervisor, p precise, H host, G guest)");
        }
    }
    if (u || k || h) {
        attr.exclude_user = !u;
        attr.exclude_kernel = !k;
        attr.exclude_hv = !h;
    }
    return {};
}

void EventParser::applySamplingDefaults(EventDesc& ev, bool explicitPeriod) const {
    if (explicitPeriod) return;
    if (ev.isTracepoint || ev.isAux) {
        // Every tracepoint hit is a sample; AUX events produce trace, not samples.
        ev.attr.sample_period = 1;
        return;
    }
    if (ev.attr.type == PERF_TYPE_SOFTWARE && ev.attr.config == PERF_COUNT_SW_DUMMY) return;
    ev.attr.freq = 1;
    ev.attr.sample_freq = defaults_.sampleFreq;
}

Expected<std::vector<EventDesc>> EventParser::parseOne(const std::string& specIn) const {
    std::string spec = specIn;
    if (spec.find('/') != std::string::npos) {
        auto ev = parsePmuForm(spec);
        if (!ev) return ev.error();
        return std::vector<EventDesc>{std::move(ev.value())};
    }
    auto colon = spec.find(':');
    std::string head = spec.substr(0, colon);
    if (auto* sym = findSymbolic(head)) {
        EventDesc ev;
        ev.name = spec;
        ev.attr = baseAttr(sym->type, sym->config);
        if (colon != std::string::npos) {
            if (auto r = applyModifiers(spec.substr(colon + 1), spec, ev.attr); !r) return r.error();
        }
        applySamplingDefaults(ev, false);
        return std::vector<EventDesc>{ev};
    }
    if (colon != std::string::npos) {
        std::string sys = head;
        std::string rest = spec.substr(colon + 1);
        auto tps = Tracefs::resolve(sys, rest);
        if (!tps) return makeError("event '" + spec + "': " + tps.error().message);
        std::vector<EventDesc> out;
        for (auto& tp : tps.value()) {
            EventDesc ev;
            ev.name = tp.name;
            ev.isTracepoint = true;
            ev.attr = baseAttr(PERF_TYPE_TRACEPOINT, tp.id);
            ev.attr.sample_type |= PERF_SAMPLE_RAW;
            applySamplingDefaults(ev, false);
            out.push_back(ev);
        }
        return out;
    }
    return makeError("unknown event '" + spec +
                     "': not a symbolic event (cpu-clock, task-clock, context-switches, page-faults, cycles, "
                     "instructions, ...), not a tracepoint (sys:name) and not a PMU event (pmu/terms/)");
}

Expected<EventDesc> EventParser::parsePmuForm(const std::string& spec) const {
    auto first = spec.find('/');
    auto second = spec.find('/', first + 1);
    if (second == std::string::npos)
        return makeError("event '" + spec + "': missing closing '/' after PMU terms");
    std::string pmuName = spec.substr(0, first);
    std::string terms = spec.substr(first + 1, second - first - 1);
    std::string mods = spec.substr(second + 1);
    const PmuInfo* pmu = pmus_.find(pmuName);
    if (!pmu)
        return makeError("event '" + spec + "': unknown PMU '" + pmuName +
                         "' (no /sys/bus/event_source/devices/" + pmuName +
                         " on this machine; PMUs here: " + pmus_.names() + ")");
    EventDesc ev;
    ev.name = spec;
    ev.isAux = pmu->isAuxPmu();
    ev.attr = baseAttr(pmu->type, 0);
    bool explicitPeriod = false;
    uint64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0;

    // Expand a named PMU event ("cpu/cycles/") into its own terms first.
    std::vector<std::string> termList;
    {
        std::stringstream ss(terms);
        std::string t;
        while (std::getline(ss, t, ',')) {
            if (t.empty()) continue;
            if (t.find('=') == std::string::npos && !pmu->format.count(t) && pmu->events.count(t)) {
                std::stringstream es(pmu->events.at(t));
                std::string et;
                while (std::getline(es, et, ','))
                    termList.push_back(et);
            } else {
                termList.push_back(t);
            }
        }
    }
    for (auto& t : termList) {
        auto eq = t.find('=');
        std::string key = t.substr(0, eq);
        uint64_t value = 1;
        if (eq != std::string::npos && !parseNumber(t.substr(eq + 1), value)) {
            if (key == "name") {
                ev.name = t.substr(eq + 1);
                continue;
            }
            return makeError("event '" + spec + "': term '" + t + "' needs a number");
        }
        if (key == "config")
            c0 = value;
        else if (key == "config1")
            c1 = value;
        else if (key == "config2")
            c2 = value;
        else if (key == "config3")
            c3 = value;
        else if (key == "period") {
            ev.attr.sample_period = value;
            ev.attr.freq = 0;
            explicitPeriod = true;
        } else if (key == "freq") {
            ev.attr.sample_freq = value;
            ev.attr.freq = 1;
            explicitPeriod = true;
        } else if (auto it = pmu->format.find(key); it != pmu->format.end()) {
            if (auto r = it->second.apply(value, c0, c1, c2, c3); !r)
                return makeError("event '" + spec + "': term '" + key + "': " + r.error().message);
        } else {
            std::string known;
            for (auto& [name, _] : pmu->format)
                known += (known.empty() ? "" : ", ") + name;
            return makeError("event '" + spec + "': PMU '" + pmuName + "' has no term '" + key +
                             "' (its format terms: " + (known.empty() ? "none" : known) + ")");
        }
    }
    ev.attr.config = c0;
    ev.attr.config1 = c1;
    ev.attr.config2 = c2;
    if (c3 != 0)  // config3 is newer than the uapi header this builds against
        return makeError("event '" + spec + "': sets config3 bits, which this build's perf_event_attr lacks");
    if (auto r = applyModifiers(mods, spec, ev.attr); !r) return r.error();
    applySamplingDefaults(ev, explicitPeriod);
    return ev;
}

}  // namespace auxscope
