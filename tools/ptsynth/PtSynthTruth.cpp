// SPDX-License-Identifier: GPL-3.0-or-later
#include "PtSynthTruth.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace auxscope::ptsynth {

const char* truthEventName(TruthEvent::Kind kind) {
    switch (kind) {
        case TruthEvent::Kind::Call:
            return "call";
        case TruthEvent::Kind::Ret:
            return "ret";
        case TruthEvent::Kind::Syscall:
            return "syscall";
        case TruthEvent::Kind::Signal:
            return "signal";
    }
    return "?";
}

Expected<void> Truth::write(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return makeError(path + ": cannot create the truth file: " + std::strerror(errno));
    std::fprintf(f, "# auxscope-ptsynth truth 1\nmode %s\ncommand %s\npid %" PRId64 "\ntid %" PRId64 "\n",
                 mode.c_str(), command.c_str(), pid, tid);
    std::fprintf(f, "instructions %" PRIu64 "\nhash 0x%016" PRIx64 "\n", instructions, hash);
    std::fprintf(f, "calls %" PRIu64 "\nreturns %" PRIu64 "\nsyscalls %" PRIu64 "\nsignals %" PRIu64 "\n",
                 calls, returns, syscalls, signals);
    std::fprintf(f, "tsc-first %" PRIu64 "\ntsc-last %" PRIu64 "\n", tscFirst, tscLast);
    for (const auto& m : maps)
        std::fprintf(f, "map %" PRIx64 " %" PRIx64 " %" PRIx64 " %s\n", m.start, m.end, m.pgoff,
                     m.path.c_str());
    for (const auto& fn : functions)
        std::fprintf(f, "function %" PRIx64 " %" PRIu64 " %s\n", fn.entry, fn.calls, fn.name.c_str());
    for (const auto& th : threads) {
        std::fprintf(f,
                     "thread %" PRId64 " %d %" PRIu64 " 0x%016" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                     " %" PRIu64 " %s\n",
                     th.tid, th.cpu, th.instructions, th.hash, th.calls, th.returns, th.syscalls, th.samples,
                     th.name.c_str());
        for (const auto& [entry, n] : th.functionCalls)
            std::fprintf(f, "thread-function %" PRId64 " %" PRIx64 " %" PRIu64 "\n", th.tid, entry, n);
    }
    std::fprintf(f, "ips %zu\n", ips.size());
    for (uint64_t ip : ips)
        std::fprintf(f, "%" PRIx64 "\n", ip);
    std::fprintf(f, "events %zu\n", events.size());
    for (const auto& e : events)
        std::fprintf(f, "%" PRIu64 " %s %" PRIx64 " %" PRIx64 "\n", e.tsc, truthEventName(e.kind), e.from,
                     e.to);
    if (!psbs.empty()) {
        std::fprintf(f, "psbs %zu\n", psbs.size());
        for (const auto& p : psbs)
            std::fprintf(f, "%" PRIu64 " %" PRIu64 "\n", p.tsc, p.instructions);
    }
    const bool bad = std::ferror(f);
    if (std::fclose(f) != 0 || bad)
        return makeError(path + ": cannot write the truth file: " + std::strerror(errno));
    return {};
}

Expected<Truth> Truth::read(const std::string& path) {
    std::ifstream in(path);
    if (!in) return makeError(path + ": cannot open the truth file");
    Truth t;
    std::string line;
    uint64_t lineNo = 0;
    auto bad = [&](const std::string& why) {
        return makeError(path + ": line " + std::to_string(lineNo) + ": " + why);
    };
    while (std::getline(in, line)) {
        ++lineNo;
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        std::string key;
        ls >> key;
        std::string rest;
        std::getline(ls, rest);
        if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        std::istringstream rs(rest);
        if (key == "mode")
            t.mode = rest;
        else if (key == "command")
            t.command = rest;
        else if (key == "pid")
            rs >> t.pid;
        else if (key == "tid")
            rs >> t.tid;
        else if (key == "instructions")
            rs >> t.instructions;
        else if (key == "hash")
            t.hash = std::strtoull(rest.c_str(), nullptr, 16);
        else if (key == "calls")
            rs >> t.calls;
        else if (key == "returns")
            rs >> t.returns;
        else if (key == "syscalls")
            rs >> t.syscalls;
        else if (key == "signals")
            rs >> t.signals;
        else if (key == "tsc-first")
            rs >> t.tscFirst;
        else if (key == "tsc-last")
            rs >> t.tscLast;
        else if (key == "map") {
            TruthMap m;
            rs >> std::hex >> m.start >> m.end >> m.pgoff;
            std::getline(rs, m.path);
            if (!m.path.empty() && m.path[0] == ' ') m.path.erase(0, 1);
            t.maps.push_back(m);
        } else if (key == "function") {
            TruthFunction fn;
            rs >> std::hex >> fn.entry >> std::dec >> fn.calls >> fn.name;
            t.functions.push_back(fn);
        } else if (key == "thread") {
            TruthThread th;
            std::string hash;
            rs >> th.tid >> th.cpu >> th.instructions >> hash >> th.calls >> th.returns >> th.syscalls >>
                th.samples;
            if (!rs)
                return bad(
                    "a thread line needs tid, cpu, instructions, hash, calls, returns, syscalls, "
                    "samples and a name");
            th.hash = std::strtoull(hash.c_str(), nullptr, 16);
            std::getline(rs, th.name);
            if (!th.name.empty() && th.name[0] == ' ') th.name.erase(0, 1);
            t.threads.push_back(th);
        } else if (key == "thread-function") {
            int64_t tid = 0;
            uint64_t entry = 0, n = 0;
            rs >> tid >> std::hex >> entry >> std::dec >> n;
            if (!rs) return bad("a thread-function line needs tid, entry and calls");
            auto it = std::find_if(t.threads.begin(), t.threads.end(),
                                   [&](const TruthThread& th) { return th.tid == tid; });
            if (it == t.threads.end())
                return bad("thread-function of thread " + std::to_string(tid) + " before its thread line");
            it->functionCalls[entry] = n;
        } else if (key == "ips") {
            uint64_t n = 0;
            rs >> n;
            t.ips.reserve(n);
            for (uint64_t i = 0; i < n; ++i) {
                if (!std::getline(in, line)) return bad("the IP list ends early");
                ++lineNo;
                t.ips.push_back(std::strtoull(line.c_str(), nullptr, 16));
            }
        } else if (key == "events") {
            uint64_t n = 0;
            rs >> n;
            for (uint64_t i = 0; i < n; ++i) {
                if (!std::getline(in, line)) return bad("the event list ends early");
                ++lineNo;
                std::istringstream es(line);
                TruthEvent e;
                std::string kind;
                es >> e.tsc >> kind >> std::hex >> e.from >> e.to;
                if (kind == "call")
                    e.kind = TruthEvent::Kind::Call;
                else if (kind == "ret")
                    e.kind = TruthEvent::Kind::Ret;
                else if (kind == "syscall")
                    e.kind = TruthEvent::Kind::Syscall;
                else if (kind == "signal")
                    e.kind = TruthEvent::Kind::Signal;
                else
                    return bad("unknown event kind '" + kind + "'");
                t.events.push_back(e);
            }
        } else if (key == "psbs") {
            uint64_t n = 0;
            rs >> n;
            for (uint64_t i = 0; i < n; ++i) {
                if (!std::getline(in, line)) return bad("the PSB list ends early");
                ++lineNo;
                TruthPsb p;
                std::istringstream ps(line);
                ps >> p.tsc >> p.instructions;
                t.psbs.push_back(p);
            }
        } else {
            return bad("unknown key '" + key + "'");
        }
    }
    return t;
}

}  // namespace auxscope::ptsynth
