// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Records of a busy machine for LiveSideband, made in memory (no capture): one
// event (IDENTIFIER | IP | TID | TIME | CPU, sample_id_all) that samples, context
// switches on every CPU, and for the names and mappings a COMM per process, a
// FORK per thread and MMAP2s of code per process. Each record comes parsed, as
// the drain thread hands it to a RecordSink. For tests/ and bench/.
#include <sys/mman.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "RecordParser.h"
#include "perfdata/PerfDataWriter.h"

namespace auxscope::testsupport {

class LiveSidebandFeed {
public:
    // `processes` processes of `threadsPerProcess` threads each (the first is the
    // process itself), `mapsPerProcess` code mappings each, on `cpus` CPUs; the
    // window's records `stepNs` apart.
    LiveSidebandFeed(int cpus, int processes, int threadsPerProcess, int mapsPerProcess, uint64_t stepNs)
        : cpus_(cpus),
          processes_(processes),
          threadsPerProcess_(threadsPerProcess),
          maps_(mapsPerProcess),
          step_(stepNs) {
        spec_.sampleType =
            PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
        spec_.id = kId;
        EventLayout layout;
        layout.sampleType = spec_.sampleType;
        layout.descIndex = 0;
        ids_.add(kId, layout);
    }
    const IdTable& ids() const { return ids_; }
    uint64_t now() const { return time_; }
    int threads() const { return processes_ * threadsPerProcess_; }

    // COMM, FORK and MMAP2 records naming every process and thread and mapping
    // their code; emit(cpu, bytes, parsed) for each.
    template <typename Emit>
    void identity(Emit&& emit) {
        for (int p = 0; p < processes_; ++p) {
            const int32_t pid = pidOf(p);
            RecordBuilder comm(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
            comm.u32(uint32_t(pid)).u32(uint32_t(pid)).str("proc-" + std::to_string(p));
            send(comm.sampleId(spec_, pid, pid, tick()), 0, emit);
            for (int m = 0; m < maps_; ++m) {
                RecordBuilder mmap(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
                mmap.u32(uint32_t(pid)).u32(uint32_t(pid));
                mmap.u64(0x400000 + uint64_t(m) * 0x100000).u64(0x80000).u64(0);
                mmap.u32(8).u32(1).u64(1000 + uint64_t(m)).u64(0);
                mmap.u32(PROT_READ | PROT_EXEC).u32(MAP_PRIVATE);
                mmap.str("/usr/lib/x86_64-linux-gnu/libsomething-" + std::to_string(m) + ".so.1.2.3");
                send(mmap.sampleId(spec_, pid, pid, tick()), 0, emit);
            }
            for (int t = 1; t < threadsPerProcess_; ++t) {
                const int32_t tid = pid + t;
                RecordBuilder fork(PERF_RECORD_FORK);
                fork.u32(uint32_t(pid)).u32(uint32_t(pid)).u32(uint32_t(tid)).u32(uint32_t(pid)).u64(time_);
                send(fork.sampleId(spec_, pid, tid, tick()), 0, emit);
            }
        }
    }

    // `n` records of the window: on each CPU in turn the running thread switches
    // out, the next one in, and two samples of it.
    template <typename Emit>
    void window(size_t n, Emit&& emit) {
        for (size_t i = 0; i < n; ++i, ++at_) {
            const int cpu = int(at_ % uint64_t(cpus_));
            const uint64_t round = at_ / uint64_t(cpus_);
            const int thread = int((round / 4 * uint64_t(cpus_) + uint64_t(cpu)) % uint64_t(threads()));
            const int next = (thread + cpus_) % threads();
            const int32_t pid = pidOf(thread / threadsPerProcess_), tid = pid + thread % threadsPerProcess_;
            const int32_t npid = pidOf(next / threadsPerProcess_), ntid = npid + next % threadsPerProcess_;
            spec_.cpu = uint32_t(cpu);
            switch (round % 4) {
                case 0:
                case 1: {  // samples of the running thread
                    RecordBuilder s(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
                    s.u64(kId).u64(0x400000 + (at_ * 64) % 0x80000);
                    s.u32(uint32_t(pid)).u32(uint32_t(tid)).u64(tick()).u32(uint32_t(cpu)).u32(0);
                    send(s, cpu, emit);
                    break;
                }
                case 2: {
                    RecordBuilder out(PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT);
                    out.u32(uint32_t(npid)).u32(uint32_t(ntid));
                    send(out.sampleId(spec_, pid, tid, tick()), cpu, emit);
                    break;
                }
                default: {
                    RecordBuilder in(PERF_RECORD_SWITCH_CPU_WIDE);
                    in.u32(uint32_t(pid)).u32(uint32_t(tid));
                    send(in.sampleId(spec_, npid, ntid, tick()), cpu, emit);
                    break;
                }
            }
        }
    }

private:
    static constexpr uint64_t kId = 42;
    static int32_t pidOf(int process) { return 1000 + process * 1000; }
    uint64_t tick() { return time_ += step_; }
    template <typename Emit>
    void send(RecordBuilder& b, int cpu, Emit& emit) {
        const std::span<const uint8_t> bytes = b.finish();
        ParsedRecord r;
        if (auto error = parseRecord(bytes, ids_, r)) throw std::runtime_error(*error);
        emit(cpu, bytes, r);
    }

    IdTable ids_;
    SampleIdSpec spec_;
    int cpus_, processes_, threadsPerProcess_, maps_;
    uint64_t step_, time_ = 1'000'000'000, at_ = 0;
};

}  // namespace auxscope::testsupport
