// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The ground truth of a synthesized trace: what really executed, for tests to
// compare any decoder's output with. Written as OUT.truth, a text file:
//
//   # auxscope-ptsynth truth 1
//   mode step|generate|example
//   command <the traced command line, or the generator's parameters>
//   pid <pid> / tid <tid>
//   instructions <N>             every instruction executed while traced
//   hash <0x16 hex digits>       poly64 of the IP sequence (below; example: the main thread's)
//   calls <N> / returns <N> / syscalls <N> / signals <N>
//   tsc-first <TSC> / tsc-last <TSC>
//   map <start> <end> <pgoff> <path>           (hex; executable mappings)
//   function <entry> <calls> <name>            (hex entry; generator only)
//   thread <tid> <cpu> <instructions> <hash> <calls> <returns> <syscalls> <samples> <name>
//                      (the example, one line per thread: what it executed, hash
//                      in hex, on which CPU, how many cpu-clock samples it has;
//                      the totals above are the sums over the threads)
//   thread-function <tid> <entry> <calls>      (hex entry; the functions that thread
//                      entered and how often; example only)
//   ips <N>            then N lines: one instruction address in hex each, in
//                      execution order (0 when the list was not kept)
//   events <M>         then M lines "<tsc> <kind> <from> <to>" (hex addresses,
//                      decimal TSC), TSC-ordered; kind is one of
//                      call (from = the call instruction, to = its target),
//                      ret (from = the return instruction, to = where it went),
//                      syscall (from = the syscall instruction, to = where user
//                      space resumed, 0 when it never did),
//                      signal (from = the interrupted IP, to = the handler).
//   psbs <K>           (only when the lists are kept and the trace has PSBs; older
//                      files have no such line) then K lines "<tsc> <instructions>":
//                      each PSB+'s TSC and how many instructions ran before it, so
//                      the instructions of a sync-point segment are ips[a, b).
//
// poly64: h = 0xcbf29ce484222325; for each IP: h = h * 0x100000001b3 + ip (mod 2^64).
// Unlike FNV it composes per block (h' = h * mul^n + sum), so the generator can
// hash billions of instructions at the cost of one multiply-add per block.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Result.h"

namespace auxscope::ptsynth {

constexpr uint64_t kTruthHashSeed = 0xcbf29ce484222325ULL;
constexpr uint64_t kTruthHashMul = 0x100000001b3ULL;

inline uint64_t truthHashStep(uint64_t h, uint64_t ip) {
    return h * kTruthHashMul + ip;
}

struct TruthEvent {
    enum class Kind { Call, Ret, Syscall, Signal };
    uint64_t tsc = 0;
    Kind kind = Kind::Call;
    uint64_t from = 0, to = 0;
};

struct TruthPsb {
    uint64_t tsc = 0;
    uint64_t instructions = 0;  // executed before the PSB+: the index of the next one in ips
};

struct TruthMap {
    uint64_t start = 0, end = 0, pgoff = 0;
    std::string path;
};

struct TruthFunction {
    uint64_t entry = 0;
    uint64_t calls = 0;
    std::string name;
};

struct TruthThread {
    int64_t tid = 0;
    int cpu = -1;
    uint64_t instructions = 0, hash = kTruthHashSeed;
    uint64_t calls = 0, returns = 0, syscalls = 0, samples = 0;
    std::string name;
    std::map<uint64_t, uint64_t> functionCalls;  // entry -> calls, entered functions only
};

struct Truth {
    std::string mode;     // "step", "generate" or "example"
    std::string command;  // what ran
    int64_t pid = 0, tid = 0;
    uint64_t instructions = 0;
    uint64_t hash = kTruthHashSeed;
    uint64_t calls = 0, returns = 0, syscalls = 0, signals = 0;
    uint64_t tscFirst = 0, tscLast = 0;
    std::vector<TruthMap> maps;
    std::vector<TruthFunction> functions;
    std::vector<TruthThread> threads;
    bool keepLists = true;  // keep every IP and event (small traces)
    std::vector<uint64_t> ips;
    std::vector<TruthEvent> events;
    std::vector<TruthPsb> psbs;

    void instruction(uint64_t ip) {
        ++instructions;
        hash = truthHashStep(hash, ip);
        if (keepLists) ips.push_back(ip);
    }
    void event(TruthEvent::Kind kind, uint64_t tsc, uint64_t from, uint64_t to) {
        if (keepLists) events.push_back({tsc, kind, from, to});
    }
    void psb(uint64_t tsc) {
        if (keepLists) psbs.push_back({tsc, instructions});
    }

    Expected<void> write(const std::string& path) const;
    static Expected<Truth> read(const std::string& path);
};

const char* truthEventName(TruthEvent::Kind kind);

}  // namespace auxscope::ptsynth
