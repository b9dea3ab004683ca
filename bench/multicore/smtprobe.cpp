// SPDX-License-Identifier: GPL-3.0-or-later
// Whether a machine's CPUs are cores or hardware threads sharing cores, measured
// rather than read from lscpu (a VM's topology may not say): the same fixed work
// per thread, an integer loop with much instruction-level parallelism (two
// hardware threads of one core share its execution units, so they slow each
// other) and a latency-bound one (they barely do), at 1 .. N threads. On N cores
// both take the same time at every count; on N/2 cores with two threads each the
// ILP loop takes ~2x longer above N/2 threads.
//   g++ -O2 -pthread -o smtprobe smtprobe.cpp && ./smtprobe 1,2,4,8,12,16
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

uint64_t ilp(uint64_t n) {
    uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
    for (uint64_t i = 0; i < n; ++i) {
        a += b ^ i, b += c ^ i, c += d ^ i, d += e ^ i;
        e += f ^ i, f += g ^ i, g += h ^ i, h += a ^ i;
        asm volatile("" : "+r"(a), "+r"(e));
    }
    return a + b + c + d + e + f + g + h;
}

uint64_t latency(uint64_t n) {
    uint64_t x = 1;
    for (uint64_t i = 0; i < n; ++i)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

double timed(unsigned threads, uint64_t (*work)(uint64_t), uint64_t n) {
    std::vector<std::thread> pool;
    std::vector<uint64_t> sink(threads * 8);
    const auto t0 = std::chrono::steady_clock::now();
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] { sink[t * 8] = work(n); });
    for (auto& t : pool)
        t.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<unsigned> counts;
    std::string list = argc > 1 ? argv[1] : "1,2,4,8,16";
    for (size_t at = 0; at < list.size();) {
        counts.push_back(unsigned(std::strtoul(list.c_str() + at, nullptr, 10)));
        const size_t comma = list.find(',', at);
        at = comma == std::string::npos ? list.size() : comma + 1;
    }
    std::printf("smtprobe: the same work per thread; time relative to 1 thread (1.00: a core each)\n");
    std::printf("%8s %12s %8s %12s %8s\n", "threads", "ilp s", "x1", "latency s", "x1");
    double ilp1 = 0, lat1 = 0;
    for (unsigned t : counts) {
        const double a = timed(t, ilp, 400'000'000), b = timed(t, latency, 400'000'000);
        if (!ilp1) ilp1 = a, lat1 = b;
        std::printf("%8u %12.3f %8.2f %12.3f %8.2f\n", t, a, a / ilp1, b, b / lat1);
    }
    return 0;
}
