// SPDX-License-Identifier: GPL-3.0-or-later
// AUX drain throughput against SimulatedAuxProducer: 4 simulated CPUs in full-trace
// mode, each "hardware" thread producing at a paced rate (or unpaced, as fast as it
// can), and ONE drain thread doing per ring what the product's drain thread does:
// AuxRing full-mode drain of the window into a per-CPU sink buffer (a memcpy, as a
// file sink would), walk + parse of the data ring's PERF_RECORD_AUX / LOST records
// (RingReader + parseRecord), and re-enabling a producer the "kernel" disabled.
//
// Per rate step it prints: bytes offered by the producers and drained (GB/s), the
// drain thread's CPU % (CLOCK_THREAD_CPUTIME_ID over wall), drained bytes per
// drain-thread CPU second (the drain's capacity), the producers' CPU %, loss (bytes
// the hardware wanted to write but could not: TRUNCATED remainder, or the event was
// disabled), TRUNCATED records, disables, re-enables, LOST records, and beside it a
// plain single-thread memcpy of the same total bytes (the physical limit).
//
// Caveat: the 4 producer threads and the drain thread share the machine's cores;
// on a 2-core machine the producers (whose pattern fill is a per-byte loop) compete
// with the drain thread for CPU, so the unpaced figures are bound by the producers
// and the machine, not by the drain alone. The "per CPU-s" column factors that out.
//
// Not a test: run by hand or through `ninja run_bench_aux_drain`.
#include <poll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "AuxRing.h"
#include "DataRing.h"
#include "RecordParser.h"
#include "RingReader.h"
#include "SimulatedAuxProducer.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kIdFields = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
constexpr uint64_t kMiB = 1024 * 1024;

struct Options {
    unsigned cpus = 4;
    uint64_t auxSize = 4 * kMiB;                                // per simulated CPU
    size_t dataPages = 64;                                      // 256 KiB data ring: ~4096 AUX records
    uint64_t chunk = 64 * 1024;                                 // bytes per AUX transaction
    double seconds = 2.0;                                       // per step
    std::vector<double> ratesMBs = {100, 250, 500, 750, 1000};  // per CPU; 0 = unpaced
    bool unpaced = true;
    int drainNice = 0;  // setpriority() of the drain thread; < 0 needs CAP_SYS_NICE
};

double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Busy seconds of the whole machine (all CPUs, /proc/stat) and of this process: their
// difference over a step is CPU used by other processes, which skews every figure.
double machineBusySeconds() {
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return 0;
    unsigned long long v[8] = {};
    const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                              &v[4], &v[5], &v[6], &v[7]);
    std::fclose(f);
    if (n < 8) return 0;
    const unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];  // not idle, iowait
    return double(busy) / double(sysconf(_SC_CLK_TCK));
}

double processCpuSeconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double secondsSince(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What a file sink would do with the drained bytes: copy them into its own buffer.
struct Sink {
    std::vector<uint8_t> buf;
    size_t off = 0;
    void put(std::span<const uint8_t> b) {
        const uint8_t* p = b.data();
        size_t n = b.size();
        while (n) {
            if (off == buf.size()) off = 0;
            const size_t k = std::min(n, buf.size() - off);
            std::memcpy(buf.data() + off, p, k);
            off += k, p += k, n -= k;
        }
    }
};

struct ProducerStats {
    uint64_t offered = 0;       // bytes the hardware wanted to write
    uint64_t lostDisabled = 0;  // of those, requested while the event was disabled
    uint64_t shortfall = 0;     // paced bytes skipped because the producer thread lagged (not offered)
    double cpuSeconds = 0;
};

struct DrainStats {
    uint64_t bytes = 0, auxRecords = 0, auxRecordBytes = 0, truncatedRecords = 0, lostRecords = 0,
             lostSum = 0, parseErrors = 0, walkErrors = 0, auxErrors = 0, reenables = 0, passes = 0,
             idlePolls = 0;
    double cpuSeconds = 0;
};

struct StepResult {
    double rateMBs = 0;  // per CPU; 0 = unpaced
    double wall = 0;
    uint64_t offered = 0, drained = 0, written = 0, lost = 0, shortfall = 0;
    uint64_t truncatedBytes = 0, noSpace = 0, disables = 0, enables = 0, truncRecs = 0, lostRecs = 0,
             recordsDropped = 0;
    double drainCpu = 0, prodCpu = 0, otherCpu = 0;
    double memcpyGBs = 0;
    bool consistent = true;
    std::string inconsistency;
};

// Paced: at time t since start the hardware wants rate * t bytes, issued in chunks;
// ahead of schedule the thread sleeps (or yields the last ~100 us). Bytes wanted
// while the event is disabled are lost, as on real hardware. A producer thread
// that falls more than kMaxLagChunks behind (CPU-starved: the simulator, not the
// hardware, is slow) skips ahead; the skipped bytes are counted as shortfall (not
// offered, not loss), so a starved simulator cannot dump its backlog as "loss"
// the moment it gets disabled. Unpaced: one chunk after another, waiting (not
// counting) while disabled, as SimulatedAuxProducer::Plan does.
constexpr uint64_t kMaxLagChunks = 4;

void produce(SimulatedAuxProducer& p, double rateBps, uint64_t chunk, const std::atomic<bool>& stop,
             Clock::time_point t0, ProducerStats& st) {
    const double cpu0 = threadCpuSeconds();
    uint64_t scheduled = 0;  // offered + skipped
    while (!stop.load(std::memory_order_relaxed)) {
        if (rateBps > 0) {
            const double now = secondsSince(t0);
            const uint64_t due = uint64_t(rateBps * now);
            if (due > scheduled + kMaxLagChunks * chunk) {
                const uint64_t skip = due - scheduled - kMaxLagChunks * chunk;
                st.shortfall += skip;
                scheduled += skip;
            }
            const double ahead = double(scheduled + chunk) / rateBps - now;
            if (ahead > 0) {
                if (ahead > 100e-6)
                    std::this_thread::sleep_for(std::chrono::duration<double>(ahead - 60e-6));
                else
                    std::this_thread::yield();
                continue;
            }
        } else if (!p.enabled()) {
            std::this_thread::yield();
            continue;
        }
        const SimulatedAuxTransaction t = p.step(chunk);
        st.offered += chunk;
        scheduled += chunk;
        if (!t.started) st.lostDisabled += chunk;
    }
    st.cpuSeconds = threadCpuSeconds() - cpu0;
}

struct Ring {
    SimulatedAuxProducer* producer = nullptr;
    DataRing data;
    AuxRing aux;
    Sink sink;
};

// One pass over every ring; returns whether anything was found.
bool drainPass(std::vector<Ring>& rings, RingReader& reader, const IdTable& ids, DrainStats& st) {
    bool any = false;
    for (Ring& r : rings) {
        const AuxDrainResult d =
            r.aux.drain([&](std::span<const uint8_t> bytes, uint64_t) { r.sink.put(bytes); });
        if (d.error) ++st.auxErrors;
        st.bytes += d.bytes();
        any |= d.bytes() != 0;

        const uint64_t head = r.data.head(), tail = r.data.tail();
        if (head != tail) {
            any = true;
            const RingWalkResult w = reader.walk(r.data.data(), r.data.size(), tail, head,
                                                 [&](const perf_event_header&, std::span<const uint8_t> rec) {
                                                     ParsedRecord pr;
                                                     if (parseRecord(rec, ids, pr) || !pr.event) {
                                                         ++st.parseErrors;
                                                     } else if (pr.type == PERF_RECORD_AUX) {
                                                         ++st.auxRecords;
                                                         st.auxRecordBytes += pr.auxSize;
                                                         if (pr.auxFlags & kAuxFlagTruncated)
                                                             ++st.truncatedRecords;
                                                     } else if (pr.type == PERF_RECORD_LOST) {
                                                         ++st.lostRecords;
                                                         st.lostSum += pr.lost;
                                                     }
                                                 });
            if (w.error) ++st.walkErrors;
            r.data.setTail(w.newTail);
        }
        // Drained first, then PERF_EVENT_IOC_ENABLE, as the product does after TRUNCATED.
        if (!r.producer->enabled()) {
            r.producer->enable();
            ++st.reenables;
        }
    }
    ++st.passes;
    return any;
}

void drainLoop(std::vector<Ring>& rings, const std::atomic<bool>& producersDone, int nice, DrainStats& st) {
    if (nice != 0 && setpriority(PRIO_PROCESS, gettid(), nice) != 0)
        std::fprintf(stderr, "bench_aux_drain: setpriority(%d): %s\n", nice, std::strerror(errno));
    const double cpu0 = threadCpuSeconds();
    RingReader reader;
    IdTable ids;
    for (const Ring& r : rings)
        ids.add(r.producer->config().id, EventLayout{kIdFields, 0, 0, int(r.producer->config().cpu)});
    std::vector<pollfd> fds;
    for (const Ring& r : rings)
        fds.push_back({r.producer->wakeupFd(), POLLIN, 0});
    for (;;) {
        const bool done = producersDone.load(std::memory_order_acquire);
        const bool any = drainPass(rings, reader, ids, st);
        if (done && !any) break;  // the producers stopped before this pass and it found nothing
        if (!any) {
            // Idle: wait for a watermark / TRUNCATED / no-space wakeup, or 1 ms.
            ++st.idlePolls;
            if (poll(fds.data(), fds.size(), 1) > 0) {
                for (pollfd& f : fds) {
                    uint64_t v;
                    if (f.revents & POLLIN) (void)!read(f.fd, &v, sizeof v);
                }
            }
        }
    }
    st.cpuSeconds = threadCpuSeconds() - cpu0;
}

// The anchor: one thread memcpy-ing `total` bytes, 1 MiB at a time, round-robin from
// `cpus` source buffers of auxSize into `cpus` sinks of 2 * auxSize.
double memcpyGBs(uint64_t total, unsigned cpus, uint64_t auxSize) {
    std::vector<std::vector<uint8_t>> src(cpus, std::vector<uint8_t>(auxSize, 0x5a));
    std::vector<Sink> dst(cpus);
    for (Sink& s : dst)
        s.buf.assign(2 * auxSize, 0);
    const uint64_t piece = std::min<uint64_t>(kMiB, auxSize);
    uint64_t done = 0, srcOff = 0;
    unsigned i = 0;
    const auto t0 = Clock::now();
    while (done < total) {
        const uint64_t n = std::min(piece, total - done);
        dst[i].put({src[i].data() + srcOff, n});
        done += n;
        if (++i == cpus) i = 0, srcOff = (srcOff + piece) % auxSize;
    }
    const double s = secondsSince(t0);
    return s > 0 ? double(total) / s / 1e9 : 0;
}

StepResult runStep(const Options& o, double rateMBs) {
    StepResult res;
    res.rateMBs = rateMBs;
    std::vector<std::unique_ptr<SimulatedAuxProducer>> producers;
    std::vector<Ring> rings(o.cpus);
    for (unsigned c = 0; c < o.cpus; ++c) {
        SimulatedAuxConfig cfg;
        cfg.dataPages = o.dataPages;
        cfg.auxSize = o.auxSize;
        cfg.mode = AuxMode::Full;
        cfg.id = c + 1;
        cfg.cpu = c;
        auto p = SimulatedAuxProducer::create(cfg);
        if (!p.ok()) {
            std::fprintf(stderr, "bench_aux_drain: %s\n", p.error().message.c_str());
            std::exit(1);
        }
        producers.push_back(std::move(p.value()));
        rings[c].producer = producers.back().get();
        rings[c].data = producers.back()->dataRing();
        rings[c].aux = producers.back()->auxRing();
        rings[c].sink.buf.assign(2 * o.auxSize, 0);  // prefaulted, as a warm page cache would be
    }

    std::atomic<bool> stop{false}, producersDone{false};
    std::vector<ProducerStats> pst(o.cpus);
    DrainStats dst;
    const double machine0 = machineBusySeconds(), self0 = processCpuSeconds();
    const auto t0 = Clock::now();
    std::thread drain([&] { drainLoop(rings, producersDone, o.drainNice, dst); });
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < o.cpus; ++c)
        threads.emplace_back(produce, std::ref(*producers[c]), rateMBs * 1e6, o.chunk, std::cref(stop), t0,
                             std::ref(pst[c]));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop.store(true);
    for (auto& t : threads)
        t.join();
    producersDone.store(true, std::memory_order_release);
    drain.join();
    res.wall = secondsSince(t0);
    res.otherCpu = std::max(0.0, (machineBusySeconds() - machine0) - (processCpuSeconds() - self0));

    for (unsigned c = 0; c < o.cpus; ++c) {
        const SimulatedAuxCounts k = producers[c]->counts();
        res.offered += pst[c].offered;
        res.shortfall += pst[c].shortfall;
        res.written += k.bytesWritten;
        res.lost += pst[c].lostDisabled + k.bytesTruncated;
        res.truncatedBytes += k.bytesTruncated;
        res.noSpace += k.noSpaceAtBegin;
        res.disables += k.disables;
        res.enables += k.enables;
        res.truncRecs += k.truncatedRecords;
        res.recordsDropped += k.recordsDropped;
        res.prodCpu += pst[c].cpuSeconds;
    }
    res.drained = dst.bytes;
    res.drainCpu = dst.cpuSeconds;
    res.lostRecs = dst.lostRecords;
    // Bookkeeping checks: every byte written was drained and described by an AUX record.
    auto bad = [&](const std::string& what) {
        res.consistent = false;
        res.inconsistency += (res.inconsistency.empty() ? "" : "; ") + what;
    };
    if (res.drained != res.written)
        bad("drained " + std::to_string(res.drained) + " != written " + std::to_string(res.written));
    if (dst.auxRecordBytes != res.drained && res.recordsDropped == 0)
        bad("AUX record sizes " + std::to_string(dst.auxRecordBytes) + " != drained");
    if (res.offered != res.written + res.lost) bad("offered != written + lost");
    if (dst.parseErrors || dst.walkErrors || dst.auxErrors)
        bad("errors: parse " + std::to_string(dst.parseErrors) + ", walk " + std::to_string(dst.walkErrors) +
            ", aux " + std::to_string(dst.auxErrors));
    if (dst.reenables != res.enables) bad("re-enables counted differently");
    if (dst.truncatedRecords != res.truncRecs) bad("TRUNCATED records counted differently");

    res.memcpyGBs = memcpyGBs(std::max<uint64_t>(res.drained, 1), o.cpus, o.auxSize);
    return res;
}

std::string rateLabel(const StepResult& r, unsigned cpus) {
    char b[48];
    if (r.rateMBs > 0)
        std::snprintf(b, sizeof b, "%u x %.0f MB/s", cpus, r.rateMBs);
    else
        std::snprintf(b, sizeof b, "%u x unpaced", cpus);
    return b;
}

void usage() {
    std::fprintf(stderr,
                 "usage: bench_aux_drain [--seconds S] [--aux-kib N] [--chunk-kib N] [--data-pages N]\n"
                 "                       [--rates MB/s,MB/s,...] [--no-unpaced] [--drain-nice N]\n"
                 "  4 simulated CPUs, one drain thread; rates are per CPU, in MB/s (10^6 bytes).\n");
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) usage(), std::exit(2);
            return argv[++i];
        };
        if (a == "--seconds") {
            o.seconds = std::atof(next());
        } else if (a == "--aux-kib") {
            o.auxSize = std::strtoull(next(), nullptr, 10) * 1024;
        } else if (a == "--chunk-kib") {
            o.chunk = std::strtoull(next(), nullptr, 10) * 1024;
        } else if (a == "--data-pages") {
            o.dataPages = std::strtoull(next(), nullptr, 10);
        } else if (a == "--rates") {
            o.ratesMBs.clear();
            std::string s = next();
            for (size_t p = 0; p < s.size();) {
                size_t q = s.find(',', p);
                if (q == std::string::npos) q = s.size();
                o.ratesMBs.push_back(std::atof(s.substr(p, q - p).c_str()));
                p = q + 1;
            }
        } else if (a == "--drain-nice") {
            o.drainNice = std::atoi(next());
        } else if (a == "--no-unpaced") {
            o.unpaced = false;
        } else {
            usage();
            return 2;
        }
    }
    if (o.seconds <= 0 || o.chunk == 0) return usage(), 2;

    const unsigned hw = std::thread::hardware_concurrency();
    std::printf(
        "bench_aux_drain: %u simulated CPUs (full-trace mode, AUX %" PRIu64
        " KiB, data ring %zu pages),\n"
        "  %" PRIu64
        " KiB per AUX transaction, %.1f s per step, 1 drain thread; machine: %u cores.\n"
        "  %u producer threads + 1 drain thread share %u cores: producers compete with the drain.\n\n",
        o.cpus, o.auxSize / 1024, o.dataPages, o.chunk / 1024, o.seconds, hw, o.cpus, hw);

    std::vector<double> steps = o.ratesMBs;
    if (o.unpaced) steps.push_back(0);
    std::vector<StepResult> results;
    std::printf("%-18s %7s %8s %8s %7s %9s %7s %10s %8s %7s %8s %8s %6s %8s %6s\n", "producers", "target",
                "offered", "drained", "drain", "drain/", "prod", "lost", "lost", "TRUNC", "disables", "re-",
                "LOST", "memcpy", "other");
    std::printf("%-18s %7s %8s %8s %7s %9s %7s %10s %8s %7s %8s %8s %6s %8s %6s\n", "(per CPU)", "GB/s",
                "GB/s", "GB/s", "CPU %", "CPU-s GB", "CPU %", "MiB", "%", "recs", "", "enables", "recs",
                "GB/s", "CPU %");
    for (double rate : steps) {
        StepResult r = runStep(o, rate);
        const double offeredGBs = double(r.offered) / r.wall / 1e9;
        const double drainedGBs = double(r.drained) / r.wall / 1e9;
        const double perCpuS = r.drainCpu > 0 ? double(r.drained) / r.drainCpu / 1e9 : 0;
        char target[16] = "-";
        if (r.rateMBs > 0) std::snprintf(target, sizeof target, "%.3f", o.cpus * r.rateMBs / 1e3);
        std::printf("%-18s %7s %8.3f %8.3f %7.1f %9.2f %7.1f %10.1f %8.3f %7" PRIu64 " %8" PRIu64 " %8" PRIu64
                    " %6" PRIu64 " %8.2f %6.0f%s\n",
                    rateLabel(r, o.cpus).c_str(), target, offeredGBs, drainedGBs, 100.0 * r.drainCpu / r.wall,
                    perCpuS, 100.0 * r.prodCpu / r.wall, double(r.lost) / kMiB,
                    r.offered ? 100.0 * double(r.lost) / double(r.offered) : 0.0, r.truncRecs, r.disables,
                    r.enables, r.lostRecs, r.memcpyGBs, 100.0 * r.otherCpu / r.wall,
                    r.consistent ? "" : "  [!]");
        if (!r.consistent) std::printf("    inconsistent: %s\n", r.inconsistency.c_str());
        std::fflush(stdout);
        results.push_back(r);
    }

    std::printf(
        "\ntarget: the paced rate, all CPUs. offered: bytes the producers wanted to write; below target\n"
        "when the producer threads were CPU-starved (lag beyond 4 chunks is skipped, not counted as loss).\n"
        "drained: bytes the drain thread copied out. drain/CPU-s: drained bytes per second of drain-thread\n"
        "CPU (its capacity if it had a core to itself). prod CPU %%: sum over the producer threads (100 =\n"
        "one core). lost: TRUNCATED remainders + bytes wanted while disabled. memcpy: one thread copying\n"
        "the same total bytes, 1 MiB at a time. other CPU %%: CPU used by other processes during the\n"
        "step (machine busy time from /proc/stat minus this process); non-zero skews every figure.\n\n");

    // Verdicts.
    const StepResult* best = nullptr;
    for (const StepResult& r : results)
        if (!best || double(r.drained) / r.wall > double(best->drained) / best->wall) best = &r;
    if (best) {
        const double gbs = double(best->drained) / best->wall / 1e9;
        const double perCpuS = best->drainCpu > 0 ? double(best->drained) / best->drainCpu / 1e9 : 0;
        std::printf(
            "target >= 2 GB/s per drain thread: %s  (best: %.3f GB/s drained at %s, drain CPU %.1f %%, "
            "%.2f GB per drain CPU-second; memcpy anchor %.2f GB/s)\n",
            gbs >= 2.0 ? "PASS" : "FAIL", gbs, rateLabel(*best, o.cpus).c_str(),
            100.0 * best->drainCpu / best->wall, perCpuS, best->memcpyGBs);
    }
    // A paced step counts only if the producers offered at least 95 % of its rate.
    auto reached = [&](const StepResult& r) {
        return double(r.offered) / r.wall >= 0.95 * o.cpus * r.rateMBs * 1e6;
    };
    auto noLoss = [](const StepResult& r) { return r.lost == 0 && r.lostRecs == 0; };
    const StepResult* at500 = nullptr;
    for (const StepResult& r : results)
        if (r.rateMBs == 500) at500 = &r;
    if (at500) {
        const double offeredGBs = double(at500->offered) / at500->wall / 1e9;
        const char* verdict = !noLoss(*at500) ? "FAIL" : reached(*at500) ? "PASS" : "INCONCLUSIVE";
        std::printf("target 0 loss at %u x 500 MB/s: %s  (lost %" PRIu64 " bytes of %" PRIu64
                    " offered, %.3f GB/s offered of %.3f target, %" PRIu64 " TRUNCATED, %" PRIu64
                    " disables, %" PRIu64 " LOST records)\n",
                    o.cpus, verdict, at500->lost, at500->offered, offeredGBs, o.cpus * 0.5, at500->truncRecs,
                    at500->disables, at500->lostRecs);
        if (!reached(*at500))
            std::printf("  the producer threads could not offer the target rate here (CPU-starved).\n");
    } else {
        std::printf("target 0 loss at %u x 500 MB/s: not measured (500 not among --rates)\n", o.cpus);
    }
    double best0 = -1, best0Short = -1;
    for (const StepResult& r : results) {
        if (r.rateMBs <= 0 || !noLoss(r)) continue;
        double& best = reached(r) ? best0 : best0Short;
        best = std::max(best, r.rateMBs);
    }
    if (best0 > 0)
        std::printf("highest paced rate with 0 loss (offered >= 95 %% of it): %u x %.0f MB/s\n", o.cpus,
                    best0);
    else
        std::printf("highest paced rate with 0 loss (offered >= 95 %% of it): none of the rates measured\n");
    if (best0Short > best0)
        std::printf("  (0 loss also at the %u x %.0f MB/s step, but its producers fell short of that rate)\n",
                    o.cpus, best0Short);
    bool allConsistent = true;
    for (const StepResult& r : results)
        allConsistent &= r.consistent;
    std::printf("bookkeeping (drained == written == sum of AUX record sizes, no parse errors): %s\n",
                allConsistent ? "ok" : "INCONSISTENT");
    return allConsistent ? 0 : 1;
}
