// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Generated SPE records of a realistic mix, with the schedule that ran them.
//
// The machine: `cpus` CPUs; `threads` threads in one process (two when there
// are four threads or more), each with a stack, each process with a heap, all
// running the standard program (SpeSynthElf.h). Time goes in 200 us slices of a
// 24 MHz counter; each slice a CPU runs a thread (threads migrate, now and then
// a CPU idles), the changes being context switches. A running CPU samples one
// operation every ~8 ticks (the CPUs in step):
//   loads 36% / stores 16% (GP, SIMD&FP, atomics and exclusives in the lock
//   functions, SVE in the *_sve functions, MOPS memcpy/memset), with a data VA
//   in a global, the heap or the thread's stack, its PA, translation latency,
//   a data source (loads: L1D, L2, system cache, peer core, local and peer
//   cluster, DRAM, remote) with the events and latency it implies (L1D/TLB
//   access and refill/walk, LLC access/miss, remote access, misalignment, SVE
//   predicates);
//   branches 28% (conditional taken or not, direct, indirect, mispredicted),
//   with the target when taken;
//   other 20% (plain, conditional select, SVE).
// Functions behave as their names say: hash, btree and list functions chase
// pointers (g_hash_buckets, the whole heap: DRAM), matrix, SVE and copy
// functions stream (g_matrix_*, the heap: L2 and the system cache), counters
// and locks are shared with other cores (peer core, clusters), argument and
// output formatting stay on the stack (L1D). Threads have roles (indexer,
// compute, I/O) that favour their functions.
// Every record has a PC, a CONTEXT (the tid; unless options.context is off),
// EVENTS and total/issue latency; about a third a previous-branch target; one
// in 64 ends with END (no timestamp; never the first of a slice), the rest with
// a TIMESTAMP. Some packets use the extended header, some EVENTS and
// DATA-SOURCE payloads have another size.
#include <cstdint>
#include <vector>

#include "SpeSynthElf.h"
#include "SpeSynthEncoder.h"
#include "SpeSynthPerfData.h"
#include "spe/SpeRecord.h"

namespace auxscope::spesynth {

struct GenerateOptions {
    uint64_t records = 0;
    uint64_t seed = 1;
    int cpus = 4;
    int threads = 6;
    // CONTEXT packets (Linux writes the tid to CONTEXTIDR_EL1 when the
    // event's config asks for it). Without them a record's thread is the one
    // the switch records say ran on its CPU.
    bool context = true;
    // Which CONTEXTIDR the CONTEXT packets come from: 0 EL1, 1 EL2 (a kernel
    // running at EL2, VHE, writes the tid there).
    uint8_t contextIndex = 0;
};

struct GeneratedRecord {
    spe::SpeRecord record;
    SpeEncodeStyle style;
};

struct SwitchEvent {
    uint64_t tick = 0;
    int cpu = 0;
    SpePerfDataWriter::Task prev, next;
};

// The processes and threads of a generated file (pids from 4100, heaps and
// stacks at Linux-like addresses).
std::vector<SpeProcess> generateProcesses(int threads);

class SpeGenerator {
public:
    SpeGenerator(const GenerateOptions& options, const SpeElfLayout& program,
                 std::vector<SpeProcess> processes, const SpeTimeConv& timeConv);

    uint64_t startTick() const { return startTick_; }
    // The next epoch: its switches (at its start) and records, in truth order
    // (time, then CPU). False once every record was generated.
    bool nextEpoch(std::vector<SwitchEvent>& switches, std::vector<GeneratedRecord>& records);
    // The last tick used (after the last epoch).
    uint64_t endTick() const { return tick_; }

private:
    struct Rng {
        uint64_t s;
        uint64_t next() {
            uint64_t z = (s += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            return z ^ (z >> 31);
        }
        uint64_t below(uint64_t n) { return n ? next() % n : 0; }
        bool chance(unsigned percentTimes10) { return below(1000) < percentTimes10; }
    };
    struct ThreadRef {
        size_t process, thread;
        int role;  // which functions it mostly runs (see the .cpp)
    };
    // What a function's loads and stores touch and how well that caches.
    enum class Region { Mixed, Objects, Heap, Stack };
    enum class Locality { Default, Hot, Streaming, PointerChasing, Shared };
    struct FunctionBehaviour {
        Region region = Region::Mixed;
        std::vector<size_t> objects;  // indexes into program_.objects
        Locality locality = Locality::Default;
        int role = -1;  // the thread role that runs it most, -1 none
    };
    void makeRecord(const ThreadRef& t, int cpu, uint64_t tick, GeneratedRecord& out);
    size_t pickFunction(int role = -1);
    uint16_t pickSource(Locality locality);
    uint64_t physical(int32_t pid, uint64_t va) const;

    GenerateOptions options_;
    SpeElfLayout program_;
    std::vector<SpeProcess> processes_;
    SpeTimeConv timeConv_;
    Rng rng_;
    std::vector<ThreadRef> threads_;
    std::vector<int> running_;                  // per CPU: index into threads_, -1 idle
    std::vector<double> functionCdf_;           // any thread
    std::vector<std::vector<double>> roleCdf_;  // per role
    std::vector<FunctionBehaviour> behaviour_;  // per function
    std::vector<size_t> sveFunctions_, lockFunctions_;
    size_t memcpyFunction_ = 0, memsetFunction_ = 0;
    std::vector<uint64_t> lastTick_;  // per CPU
    uint64_t startTick_ = 0, tick_ = 0, made_ = 0;
};

}  // namespace auxscope::spesynth
