// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view's frame time on synthetic spans (default 10 M; issue 13's
// scale: --spans 100000000 --threads 64 --cpus 64 --switches 1000000): threads
// of nested calls (a few thousand functions, depths up to ~30, a gap now and
// then) and CPU lanes of context switches, painted offscreen at 1920x1080 zoomed
// out (the whole recording), mid (1/100 of it), in (1/100000) and deep in
// (1/10^7), each --frames times (median and p95 printed), plus the one-off cost
// of setData (the per-thread summaries) and the bytes each stored span takes.
// The targets: smooth, <= 16 ms per frame at every zoom; <= 16 bytes per span.
// Not a test: run by hand or through `ninja run_bench_timeline`.
// usage: bench_timeline [--spans N] [--threads T] [--cpus C] [--switches S] [--frames F]
#include <QApplication>
#include <QImage>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gui/TimelineView.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Generator {
    std::mt19937_64 rng;
    uint32_t functions;
    std::vector<Span> spans;
    std::vector<Gap> gaps;
    void node(int depth, uint64_t start, uint64_t dur, size_t target) {
        Span s;
        s.start = start, s.end = start + dur, s.depth = depth;
        s.function = uint32_t(1 + (rng() % (functions - 1)));
        s.instructions = dur / 2 + 1;
        spans.push_back(s);
        if (depth >= 29 || dur < 60 || spans.size() >= target) return;
        const int children = int(1 + rng() % 5);
        const uint64_t slot = dur / uint64_t(children);
        for (int c = 0; c < children && spans.size() < target; ++c) {
            const uint64_t cd = slot * (50 + rng() % 45) / 100;
            if (cd < 2) break;
            node(depth + 1, start + uint64_t(c) * slot + (slot - cd) / 2, cd, target);
        }
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    size_t total = 10'000'000, switches = 0;
    int threads = 8, functions = 3000, frames = 5, cpus = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--spans")) total = std::strtoull(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--frames")) frames = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--cpus")) cpus = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--switches")) switches = std::strtoull(argv[i + 1], nullptr, 10);
    }
    frames = std::max(frames, 1);
    QApplication app(argc, argv);

    auto t0 = Clock::now();
    auto table = std::make_shared<FunctionTable>();
    for (int f = 1; f < functions; ++f)
        table->add({"ns" + std::to_string(f % 37) + "::function_" + std::to_string(f), "/usr/lib/libbench.so",
                    uint64_t(0x1000 + f * 64)});
    auto data = std::make_shared<TimelineData>();
    data->functions = table;
    const uint64_t base = 1'000'000'000'000ull;
    uint64_t end = base;
    for (int t = 0; t < threads; ++t) {
        Generator g{std::mt19937_64(uint64_t(t) + 1), uint32_t(functions), {}, {}};
        const size_t target = total / size_t(threads);
        g.spans.reserve(target + 64);
        uint64_t time = base;
        while (g.spans.size() < target) {
            const uint64_t dur = 20'000 + g.rng() % 2'000'000;
            g.node(0, time, dur, target);
            time += dur + 200 + g.rng() % 5000;
            if (g.rng() % 50 == 0) {
                Span gap;
                gap.start = time, gap.end = time + 3000, gap.gap = int32_t(g.gaps.size());
                g.gaps.push_back({GapReason::Overflow, "overflow at offset 0x1000", 0x1000, t});
                g.spans.push_back(gap);
                time += 3100;
            }
        }
        std::stable_sort(g.spans.begin(), g.spans.end(),
                         [](const Span& a, const Span& b) { return a.start < b.start; });
        TimelineData::Thread th;
        th.pid = 1000, th.tid = 1000 + t, th.name = "worker-" + std::to_string(t);
        th.spans.append(g.spans, g.gaps);
        end = std::max(end, time);
        data->threadNames[th.tid] = th.name;
        data->threads.push_back(std::move(th));
    }
    // CPU lanes: the threads switching every ~50 µs on 4 CPUs, or --switches
    // context switches spread evenly over --cpus CPUs.
    std::mt19937_64 rng(7);
    const uint64_t perCpu = switches ? std::max<uint64_t>(1, switches / uint64_t(cpus)) : 0;
    const uint64_t mean = perCpu ? std::max<uint64_t>(2, (end - base) / perCpu) : 50'000;
    for (int cpu = 0; cpu < cpus; ++cpu) {
        auto& lane = data->cpus[cpu];
        if (perCpu) lane.reserve(perCpu + 16);
        for (uint64_t t = base; t < end;) {
            const uint64_t d = perCpu ? 1 + mean / 2 + rng() % mean : 5'000 + rng() % 90'000;
            const uint64_t idle = perCpu ? 0 : rng() % 3000;
            lane.push_back({t, std::min(t + d, end), 1000, int32_t(1000 + rng() % uint64_t(threads))});
            t += d + idle;
        }
    }
    data->begin = base, data->end = end;
    data->decodedBegin = base, data->decodedEnd = end;
    size_t spans = 0, lanes = 0, spanBytes = 0;
    for (const auto& t : data->threads)
        spans += t.spans.size(), spanBytes += t.spans.spanBytes();
    for (const auto& [c, l] : data->cpus)
        lanes += l.size();
    std::printf(
        "bench_timeline: %zu spans in %d threads, %d functions, %zu CPU slices, %.3f s recorded "
        "(built in %.0f ms)\n",
        spans, threads, functions, lanes, double(end - base) / 1e9, since(t0));
    const double perSpan = spans ? double(spanBytes) / double(spans) : 0;
    // 16-byte packed spans plus a chunk index (one base per chunk) and a side table of wide values.
    std::printf(
        "  stored spans: %.1f MB, %.3f bytes per span (16 packed + index; target <= 16 per span: %s)\n",
        double(spanBytes) / 1e6, perSpan, perSpan < 16.5 ? "PASS" : "BELOW");

    TimelineView view;
    view.setAsyncSummaries(false);  // measure the summaries here, not on a worker thread
    view.resize(1920, 1080);
    QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
    t0 = Clock::now();
    view.setData(data);
    const double setData = since(t0);
    std::printf("  setData (per-thread summaries, once per data): %8.1f ms\n", setData);

    struct Zoom {
        const char* name;
        double fraction;
    };
    bool allPass = true;
    for (Zoom z : {Zoom{"zoomed out (whole)", 1.0}, Zoom{"mid (1/100)", 1e-2}, Zoom{"in (1/100000)", 1e-5},
                   Zoom{"deep in (1/10^7)", 1e-7}}) {
        const uint64_t w = std::max<uint64_t>(uint64_t(double(end - base) * z.fraction), 1000);
        const uint64_t mid = base + (end - base) / 2;
        view.setVisibleRange(z.fraction >= 1 ? base : mid - w / 2, z.fraction >= 1 ? end : mid + w / 2);
        view.render(&image);  // warm
        std::vector<double> ms;
        for (int f = 0; f < frames; ++f) {
            auto t = Clock::now();
            view.render(&image);
            ms.push_back(since(t));
        }
        std::sort(ms.begin(), ms.end());
        const double median = ms[ms.size() / 2];
        const double p95 = ms[std::min(ms.size() - 1, size_t(double(ms.size()) * 0.95))];
        const auto& st = view.lastFrame();
        const bool pass = median <= 16.0 && p95 <= 16.0;
        allPass = allPass && pass;
        std::printf(
            "  %-22s median %7.2f ms/frame, p95 %7.2f (min %6.2f, max %6.2f)  %s  [%llu rects, %llu spans "
            "walked, %llu summary cells, <= %d rects/row]\n",
            z.name, median, p95, ms.front(), ms.back(), pass ? "PASS" : "BELOW", (unsigned long long)st.rects,
            (unsigned long long)st.spansWalked, (unsigned long long)st.summaryCells, st.maxRectsPerRow);
    }
    std::printf("target: smooth = <= 16 ms per frame (median and p95) at every zoom: %s\n",
                allPass ? "PASS" : "BELOW");
    return 0;
}
