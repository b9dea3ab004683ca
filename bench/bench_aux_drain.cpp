// SPDX-License-Identifier: GPL-3.0-or-later
// AUX drain throughput against SimulatedAuxProducer: 4 simulated CPUs in full-trace
// mode drained by the product's own DrainThread (CaptureSession::openSimulated:
// epoll on the producers' wakeup eventfds, the data ring walk and parse of every
// PERF_RECORD_AUX, the AUX area drain, the re-enable of a producer the "kernel"
// disabled, statistics publishing). A sink on the drain thread copies every AUX
// chunk into a per-CPU buffer, as QueuedSink copies it into its queue; with
// --file the real perf.data writer (QueuedSink + writer thread) is added.
//
// Each "hardware" thread offers a paced rate: at time t it has offered rate * t
// bytes, in transactions of --chunk-kib, sleeping until the next transaction is
// due (absolute deadlines, so sleep overshoot does not accumulate). A producer
// thread that falls behind (CPU-starved: the simulator, not the hardware, is
// slow) skips ahead and counts the skipped bytes as shortfall, not as offered and
// not as loss; a step whose producers offered less than 95 % of its rate is marked
// "short" and proves nothing about loss at that rate. Bytes offered while the
// event is disabled, or cut off by TRUNCATED, are loss, as on real hardware.
//
// Per step: offered and drained GB/s, the drain thread's CPU % (its own CPU clock
// over wall), drained bytes per drain-thread CPU second (its capacity if it had a
// core to itself), producer CPU %, loss, TRUNCATED records, re-enables, CPU used
// by other processes meanwhile, and a plain single-thread memcpy of the same
// total bytes (the physical limit). Then a PASS/BELOW line per target.
//
// Not a test: run by hand or through `ninja run_bench_aux_drain`.
#include <fcntl.h>
#include <pthread.h>
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

#include "CaptureSession.h"
#include "SimulatedAuxProducer.h"
#include "auxtrace/LiveTraceDecoder.h"
#include "record/PerfDataWriterCapture.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;

struct Options {
    unsigned cpus = 4;
    uint64_t auxSize = 4 * kMiB;  // per simulated CPU
    size_t dataPages = 64;        // 256 KiB data ring: ~4096 PERF_RECORD_AUX
    uint64_t chunk = 256 * 1024;  // bytes per AUX transaction
    double seconds = 2.0;         // per step
    std::vector<double> ratesMBs = {100, 250, 500, 750, 1000, 1500};  // per CPU; 0 = unpaced
    bool unpaced = true;
    bool realtime = true;     // the drain thread at SCHED_FIFO, as `auxscope record` runs it
    std::string file;         // also write perf.data here (the real writer)
    bool liveDecode = false;  // also attach the live Intel PT decoder (its drain-thread cost)
};

double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// Busy seconds of the whole machine (/proc/stat) and of this process: their
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

// A per-CPU buffer the AUX bytes are copied into, reused round-robin.
struct CopyBuffer {
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

// On the drain thread: copies the AUX bytes (what a file sink's queue does; not
// with --file, where the real queue does it) and learns the drain thread's CPU clock.
class CopySink : public RecordSink {
public:
    CopySink(unsigned cpus, uint64_t bufBytes, bool copy) : bufs_(cpus), copy_(copy) {
        for (auto& b : bufs_)
            if (copy_) b.buf.assign(bufBytes, 0);  // prefaulted, as a warm queue would be
    }
    void onRecord(int, std::span<const uint8_t>, const ParsedRecord&) override { learnThread(); }
    void onAux(int cpu, uint32_t, const AuxBytes& bytes) override {
        learnThread();
        if (copy_) {
            bufs_[size_t(cpu)].put(bytes.first);
            bufs_[size_t(cpu)].put(bytes.second);
        }
        bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
    }
    std::vector<SinkLoss> losses() const override { return {}; }
    uint64_t bytes() const { return bytes_.load(); }
    // CPU seconds of the drain thread so far (0 before its first record).
    double drainCpuSeconds() const {
        if (!known_.load(std::memory_order_acquire)) return 0;
        timespec ts{};
        clock_gettime(clock_, &ts);
        return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
    }

private:
    void learnThread() {
        if (known_.load(std::memory_order_relaxed)) return;
        pthread_getcpuclockid(pthread_self(), &clock_);
        known_.store(true, std::memory_order_release);
    }
    std::vector<CopyBuffer> bufs_;
    bool copy_ = true;
    std::atomic<uint64_t> bytes_{0};
    clockid_t clock_{};
    std::atomic<bool> known_{false};
};

struct ProducerStats {
    uint64_t offered = 0;       // bytes the hardware wanted to write
    uint64_t lostDisabled = 0;  // of those, wanted while the event was disabled
    uint64_t shortfall = 0;     // paced bytes skipped because the thread lagged (not offered)
    double cpuSeconds = 0;
};

struct StepResult {
    double rateMBs = 0;    // per CPU; 0 = unpaced
    double wall = 0;       // producers running
    double drainWall = 0;  // until everything was drained
    uint64_t offered = 0, drained = 0, written = 0, lost = 0, shortfall = 0;
    uint64_t truncatedBytes = 0, noSpace = 0, disables = 0, enables = 0, truncRecs = 0, lostRecs = 0,
             recordsDropped = 0, reenables = 0, auxRecords = 0;
    uint64_t fileDroppedChunks = 0, fileDroppedBytes = 0, fileBytes = 0;
    double drainCpu = 0, prodCpu = 0, otherCpu = 0;
    double memcpyGBs = 0;
    bool consistent = true;
    std::string inconsistency;
    std::vector<std::string> messages;
};

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
            if (scheduled + chunk > due) {
                // Sleep to the absolute time the next transaction is due.
                const auto at = t0 + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(double(scheduled + chunk) / rateBps));
                std::this_thread::sleep_until(at);
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

// Everything written has been drained: AUX and data rings empty.
bool drainedAll(CaptureSession& s) {
    for (size_t i = 0; i < s.simulatedCount(); ++i) {
        const perf_event_mmap_page* pg = s.simulatedProducer(i).userPage();
        if (__atomic_load_n(&pg->aux_tail, __ATOMIC_ACQUIRE) !=
            __atomic_load_n(&pg->aux_head, __ATOMIC_ACQUIRE))
            return false;
        if (__atomic_load_n(&pg->data_tail, __ATOMIC_ACQUIRE) !=
            __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE))
            return false;
    }
    return true;
}

// The anchor: one thread memcpy-ing `total` bytes, 1 MiB at a time, round-robin from
// `cpus` source buffers of auxSize into `cpus` buffers of 2 * auxSize. Per second
// of the thread's own CPU time, like drain/CPU-s: on a shared, loaded machine the
// wall-clock rate would measure the scheduler, not the copy.
double memcpyGBs(uint64_t total, unsigned cpus, uint64_t auxSize) {
    std::vector<std::vector<uint8_t>> src(cpus, std::vector<uint8_t>(auxSize, 0x5a));
    std::vector<CopyBuffer> dst(cpus);
    for (CopyBuffer& s : dst)
        s.buf.assign(2 * auxSize, 0);
    const uint64_t piece = std::min<uint64_t>(kMiB, auxSize);
    uint64_t done = 0, srcOff = 0;
    unsigned i = 0;
    const double t0 = threadCpuSeconds();
    while (done < total) {
        const uint64_t n = std::min(piece, total - done);
        dst[i].put({src[i].data() + srcOff, n});
        done += n;
        if (++i == cpus) i = 0, srcOff = (srcOff + piece) % auxSize;
    }
    const double s = threadCpuSeconds() - t0;
    return s > 0 ? double(total) / s / 1e9 : 0;
}

[[noreturn]] void die(const std::string& why) {
    std::fprintf(stderr, "bench_aux_drain: %s\n", why.c_str());
    std::exit(1);
}

StepResult runStep(const Options& o, double rateMBs) {
    StepResult res;
    res.rateMBs = rateMBs;
    SimulatedCaptureOptions so;
    so.cpus = o.cpus;
    so.producer.dataPages = o.dataPages;
    so.producer.auxSize = o.auxSize;
    so.producer.mode = AuxMode::Full;
    so.realtimeDrain = o.realtime;
    so.label = "bench_aux_drain";
    auto session = CaptureSession::openSimulated(so);
    if (!session) die(session.error().message);
    CaptureSession& s = **session;
    CopySink sink(o.cpus, 2 * o.auxSize, o.file.empty());
    s.addSink(&sink);
    std::unique_ptr<PerfDataWriterCapture> file;
    if (!o.file.empty()) {
        PerfDataWriterCaptureOptions fo;
        fo.path = o.file;
        fo.queueBytes = 256 * kMiB;
        auto f = PerfDataWriterCapture::open(s, fo);
        if (!f) die(f.error().message);
        file = std::move(f.value());
    }
    std::unique_ptr<LiveTraceDecoder> live;
    if (o.liveDecode) {
        // The producers' bytes are not PT: the decoder finds no PSB and decodes
        // nothing; what is measured is its cost on the drain thread (copying the
        // newest bytes, the PSB search) beside the same step without it.
        LiveDecoderOptions lo;
        lo.auxtraceInfo = PerfDataWriterCaptureOptions::AuxtraceInfoBlock{1, {}};
        auto l = LiveTraceDecoder::attach(s, lo);
        if (!l) die(l.error().message);
        live = std::move(l.value());
    }
    if (auto r = s.start(); !r) die(r.error().message);

    std::atomic<bool> stop{false};
    std::vector<ProducerStats> pst(o.cpus);
    const double machine0 = machineBusySeconds(), self0 = processCpuSeconds();
    const double drainCpu0 = sink.drainCpuSeconds();
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < o.cpus; ++c)
        threads.emplace_back(produce, std::ref(s.simulatedProducer(c)), rateMBs * 1e6, o.chunk,
                             std::cref(stop), t0, std::ref(pst[c]));
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop.store(true);
    for (auto& t : threads)
        t.join();
    res.wall = secondsSince(t0);
    // The drain thread catches up with what the producers left in the rings.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!drainedAll(s) && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    res.drainWall = secondsSince(t0);
    res.drainCpu = sink.drainCpuSeconds() - drainCpu0;
    res.otherCpu = std::max(0.0, (machineBusySeconds() - machine0) - (processCpuSeconds() - self0));
    s.requestStop();
    s.wait();
    if (live) live->stop();
    if (file) {
        if (auto r = file->finish(); !r) res.messages.push_back("perf.data: " + r.error().message);
        const auto rep = file->report();
        res.fileBytes = rep.fileBytes;
        res.fileDroppedChunks = file->sink().stats().droppedAuxChunks;
        res.fileDroppedBytes = file->sink().stats().droppedAuxBytes;
        std::remove(o.file.c_str());
    }

    for (unsigned c = 0; c < o.cpus; ++c) {
        const SimulatedAuxCounts k = s.simulatedProducer(c).counts();
        const CpuCounters t = s.stats().snapshot(c).totals;
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
        res.reenables += t.auxReenables;
        res.lostRecs += t.byType[PERF_RECORD_LOST];
        res.auxRecords += t.byType[PERF_RECORD_AUX];
        res.drained += t.auxBytes;
    }
    for (auto& m : s.summary().messages)
        res.messages.push_back(m);
    // Bookkeeping: every byte written was drained and reached the sink.
    auto bad = [&](const std::string& what) {
        res.consistent = false;
        res.inconsistency += (res.inconsistency.empty() ? "" : "; ") + what;
    };
    if (res.drained != res.written)
        bad("drained " + std::to_string(res.drained) + " != written " + std::to_string(res.written));
    if (sink.bytes() != res.drained) bad("sink got " + std::to_string(sink.bytes()) + " != drained");
    if (res.offered != res.written + res.lost) bad("offered != written + lost");
    if (res.reenables != res.enables) bad("re-enables counted differently");
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
    std::fprintf(
        stderr,
        "usage: bench_aux_drain [--seconds S] [--aux-kib N] [--chunk-kib N] [--data-pages N]\n"
        "                       [--rates MB/s,MB/s,...] [--no-unpaced] [--no-realtime] [--file PATH]\n"
        "                       [--live-decode]\n"
        "  4 simulated CPUs, the product's drain thread; rates are per CPU, in MB/s (10^6 bytes).\n"
        "  --file: also stream perf.data to PATH through the real writer (deleted after each step).\n"
        "  --live-decode: also attach the live Intel PT decoder (its cost on the drain thread).\n");
}

}  // namespace

// The other anchor with --file: the disk's own rate, as `dd bs=1M` measures it, in
// the same directory: 1 MiB write()s of `total` bytes to a new file (the page
// cache's rate, what the writer's writev meets), and the same with fdatasync at
// the end (what reaches the device).
struct DiskRate {
    double cachedGBs = 0, syncedGBs = 0;
    std::string error;
};
DiskRate diskRate(const std::string& path, uint64_t total) {
    DiskRate d;
    std::vector<uint8_t> block(kMiB, 0x5a);
    for (int synced = 0; synced < 2; ++synced) {
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            d.error = path + ": " + std::strerror(errno);
            return d;
        }
        const auto t0 = Clock::now();
        for (uint64_t done = 0; done < total; done += kMiB)
            if (::write(fd, block.data(), block.size()) != ssize_t(block.size())) {
                d.error = path + ": write: " + std::strerror(errno);
                break;
            }
        if (synced) ::fdatasync(fd);
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        ::close(fd);
        ::unlink(path.c_str());
        (synced ? d.syncedGBs : d.cachedGBs) = double(total) / s / 1e9;
    }
    return d;
}

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
        } else if (a == "--live-decode") {
            o.liveDecode = true;
        } else if (a == "--no-unpaced") {
            o.unpaced = false;
        } else if (a == "--no-realtime") {
            o.realtime = false;
        } else if (a == "--file") {
            o.file = next();
        } else {
            usage();
            return 2;
        }
    }
    if (o.seconds <= 0 || o.chunk == 0 || o.chunk >= o.auxSize) return usage(), 2;

    const unsigned hw = std::thread::hardware_concurrency();
    double load[3] = {};
    getloadavg(load, 3);
    std::printf(
        "bench_aux_drain: %u simulated CPUs (full-trace mode, AUX %" PRIu64
        " KiB, data ring %zu pages), %" PRIu64
        " KiB per AUX transaction,\n"
        "  %.1f s per step, the product's drain thread (%s)%s; machine: %u cores, load average %.2f %.2f "
        "%.2f.\n"
        "  %u producer threads + the drain thread share %u cores.\n\n",
        o.cpus, o.auxSize / 1024, o.dataPages, o.chunk / 1024, o.seconds,
        o.realtime ? "SCHED_FIFO where permitted" : "normal priority",
        o.file.empty() ? ", AUX chunks copied into per-CPU buffers" : ", + the perf.data writer", hw, load[0],
        load[1], load[2], o.cpus, hw);

    DiskRate disk;
    if (!o.file.empty()) {
        disk = diskRate(o.file + ".dd", 1024 * kMiB);
        if (!disk.error.empty())
            std::printf("disk anchor: %s\n\n", disk.error.c_str());
        else
            std::printf(
                "disk anchor (dd bs=1M, 1 GiB beside --file): %.2f GB/s into the page cache, %.2f GB/s "
                "with fdatasync\n\n",
                disk.cachedGBs, disk.syncedGBs);
    }
    std::vector<double> steps = o.ratesMBs;
    if (o.unpaced) steps.push_back(0);
    std::vector<StepResult> results;
    std::printf("%-18s %7s %8s %8s %6s %7s %9s %7s %9s %7s %6s %6s %8s %6s\n", "producers", "target",
                "offered", "drained", "offer", "drain", "drain/", "prod", "lost", "TRUNC", "re-", "LOST",
                "memcpy/", "other");
    std::printf("%-18s %7s %8s %8s %6s %7s %9s %7s %9s %7s %6s %6s %8s %6s\n", "(per CPU)", "GB/s", "GB/s",
                "GB/s", "", "CPU %", "CPU-s GB", "CPU %", "MiB", "recs", "enabl", "recs", "CPU-s GB",
                "CPU %");
    const double fullRate = 0.95;
    for (double rate : steps) {
        StepResult r = runStep(o, rate);
        const double offeredGBs = double(r.offered) / r.wall / 1e9;
        const double drainedGBs = double(r.drained) / r.drainWall / 1e9;
        const double perCpuS = r.drainCpu > 0 ? double(r.drained) / r.drainCpu / 1e9 : 0;
        char target[16] = "-";
        const char* offer = "";
        if (r.rateMBs > 0) {
            std::snprintf(target, sizeof target, "%.3f", o.cpus * r.rateMBs / 1e3);
            offer = offeredGBs >= fullRate * o.cpus * r.rateMBs / 1e3 ? "full" : "short";
        }
        std::printf("%-18s %7s %8.3f %8.3f %6s %7.1f %9.2f %7.1f %9.1f %7" PRIu64 " %6" PRIu64 " %6" PRIu64
                    " %8.2f %6.0f%s\n",
                    rateLabel(r, o.cpus).c_str(), target, offeredGBs, drainedGBs, offer,
                    100.0 * r.drainCpu / r.drainWall, perCpuS, 100.0 * r.prodCpu / r.wall,
                    double(r.lost) / kMiB, r.truncRecs, r.reenables, r.lostRecs, r.memcpyGBs,
                    100.0 * r.otherCpu / r.drainWall, r.consistent ? "" : "  [!]");
        if (!r.consistent) std::printf("    inconsistent: %s\n", r.inconsistency.c_str());
        if (!o.file.empty())
            std::printf(
                "    perf.data: %" PRIu64 " MiB written; writer-side loss %" PRIu64
                " AUX chunks (%.1f MiB)%s; a writer slower than the producers shows as the\n"
                "    kernel-side loss above (areas full while their bytes were being written: TRUNCATED)\n",
                r.fileBytes / kMiB, r.fileDroppedChunks, double(r.fileDroppedBytes) / kMiB,
                r.fileDroppedChunks ? ": LOSS AT THE FILE" : "");
        for (auto& m : r.messages)
            std::printf("    note: %s\n", m.c_str());
        std::fflush(stdout);
        results.push_back(r);
    }

    std::printf(
        "\ntarget: the paced rate, all CPUs. offered: bytes the producers offered; \"short\": under\n"
        "95 %% of the target, the producer threads were CPU-starved (lag beyond 4 transactions is\n"
        "skipped, not counted as loss). drained: bytes the drain thread handed to its sinks, over the\n"
        "time until it had drained everything. drain CPU %%: the drain thread's own CPU clock over that\n"
        "time. drain/CPU-s: drained bytes per second of drain-thread CPU (its capacity with a core to\n"
        "itself). prod CPU %%: sum over the producer threads (100 = one core). lost: TRUNCATED\n"
        "remainders + bytes offered while the event was disabled. memcpy/CPU-s: one thread copying the\n"
        "same total bytes, 1 MiB at a time, per second of its CPU time (one core's physical limit,\n"
        "comparable to drain/CPU-s). other CPU %%: CPU used by other processes during the step\n"
        "(/proc/stat minus this process); it skews every figure.\n\n");

    // Verdicts. Drain capacity: the best drained rate, and what one drain-thread CPU
    // second moves (the figure that does not depend on sharing 2 cores with producers).
    const StepResult* best = nullptr;
    double bestPerCpuS = 0;
    for (const StepResult& r : results) {
        // A step that lost AUX bytes at the writer did less work per byte than a
        // drain into a file does; it does not count.
        if (r.fileDroppedChunks) continue;
        if (!best || double(r.drained) / r.drainWall > double(best->drained) / best->drainWall) best = &r;
        if (r.drainCpu > 0.05) bestPerCpuS = std::max(bestPerCpuS, double(r.drained) / r.drainCpu / 1e9);
    }
    if (!best)
        std::printf("target >= 2 GB/s per drain thread: not measured (every step dropped at the file)\n");
    if (best) {
        const double gbs = double(best->drained) / best->drainWall / 1e9;
        std::printf(
            "target >= 2 GB/s per drain thread: %s  (best drained %.3f GB/s at %s with drain CPU %.1f %%; "
            "capacity %.2f GB per drain-thread CPU-second; memcpy anchor %.2f GB per CPU-second)\n",
            gbs >= 2.0           ? "PASS"
            : bestPerCpuS >= 2.0 ? "PASS (capacity; wall rate bound by the producers)"
                                 : "BELOW",
            gbs, rateLabel(*best, o.cpus).c_str(), 100.0 * best->drainCpu / best->drainWall, bestPerCpuS,
            best->memcpyGBs);
    }
    auto reached = [&](const StepResult& r) {
        return double(r.offered) / r.wall >= fullRate * o.cpus * r.rateMBs * 1e6;
    };
    // With --file, bytes the writer's queue had to drop are loss too: they never reach the file.
    auto noLoss = [](const StepResult& r) {
        return r.lost == 0 && r.lostRecs == 0 && r.recordsDropped == 0 && r.fileDroppedChunks == 0;
    };
    const StepResult* at500 = nullptr;
    for (const StepResult& r : results)
        if (r.rateMBs == 500) at500 = &r;
    if (at500) {
        const double offeredGBs = double(at500->offered) / at500->wall / 1e9;
        const char* verdict = !noLoss(*at500) ? "BELOW" : reached(*at500) ? "PASS" : "NOT MEASURED";
        std::printf("target 0 loss at %u x 500 MB/s: %s  (lost %" PRIu64 " bytes of %" PRIu64
                    " offered, %.3f GB/s offered of %.3f target, %" PRIu64 " TRUNCATED, %" PRIu64
                    " disables, %" PRIu64 " LOST records%s)\n",
                    o.cpus, verdict, at500->lost, at500->offered, offeredGBs, o.cpus * 0.5, at500->truncRecs,
                    at500->disables, at500->lostRecs,
                    o.file.empty() ? ""
                                   : (", " + std::to_string(at500->fileDroppedBytes) +
                                      " bytes dropped by the perf.data writer's queue")
                                         .c_str());
        if (!reached(*at500))
            std::printf(
                "  the producer threads could not offer the target rate (CPU-starved): no verdict.\n");
    } else {
        std::printf("target 0 loss at %u x 500 MB/s: not measured (500 not among --rates)\n", o.cpus);
    }
    double best0 = -1, best0Short = -1;
    for (const StepResult& r : results) {
        if (r.rateMBs <= 0 || !noLoss(r)) continue;
        double& b = reached(r) ? best0 : best0Short;
        b = std::max(b, r.rateMBs);
    }
    double bestMemcpy = 0;
    for (const StepResult& r : results)
        bestMemcpy = std::max(bestMemcpy, r.memcpyGBs);
    if (best0 > 0)
        std::printf(
            "highest paced rate with 0 loss (offered >= 95 %% of it): %u x %.0f MB/s = %.2f GB/s%s"
            " (memcpy %.2f GB/s per CPU-second%s)\n",
            o.cpus, best0, o.cpus * best0 / 1e3, o.file.empty() ? "" : " into perf.data", bestMemcpy,
            o.file.empty() || !disk.error.empty()
                ? ""
                : (", disk " + std::to_string(disk.cachedGBs).substr(0, 4) + " GB/s page cache, " +
                   std::to_string(disk.syncedGBs).substr(0, 4) + " GB/s synced")
                      .c_str());
    else
        std::printf("highest paced rate with 0 loss (offered >= 95 %% of it): none of the rates measured\n");
    if (best0Short > best0)
        std::printf("  (0 loss also at the %u x %.0f MB/s step, but its producers fell short of that rate)\n",
                    o.cpus, best0Short);
    bool allConsistent = true;
    for (const StepResult& r : results)
        allConsistent &= r.consistent;
    if (!o.file.empty()) {
        uint64_t writerLoss = 0;
        for (const StepResult& r : results)
            writerLoss += r.fileDroppedBytes;
        std::printf("target writer-side loss 0 (every step, into %s): %s (%" PRIu64 " bytes)\n",
                    o.file.c_str(), writerLoss == 0 ? "PASS" : "FAIL", writerLoss);
    }
    std::printf("bookkeeping (drained == written == bytes the sink got, re-enables match): %s\n",
                allConsistent ? "ok" : "INCONSISTENT");
    return allConsistent ? 0 : 1;
}
