// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view's frame time on synthetic spans (default 10 M; issue 13's
// scale: --spans 100000000 --threads 64 --cpus 64 --switches 1000000): threads
// of nested calls (a few thousand functions, depths up to ~30, a gap now and
// then) and CPU lanes of context switches, painted offscreen at 1920x1080 zoomed
// out (the whole recording), mid (1/100 of it), in (1/100000) and deep in
// (1/10^7), each --frames times (median and p95 printed), plus the one-off cost
// of setData (the per-thread and per-CPU-lane summaries: time and bytes) and the
// bytes each stored span takes. Then a thread of --deep levels (default 1000;
// 0: none) of nested calls, --deep-spans spans, painted scrolled to its middle
// rows at the same zooms; with --lanes, sideband thread lanes (the CPU slices'
// runs per thread, a sample every --sample-us µs of its run time) painted scrolled to them.
// --labels picks how span names are drawn, to measure what the label cache buys:
// cached (the view's way: glyph runs prepared once per name and 8-px width bucket),
// elide (the elided texts cached per bucket, laid out by drawText every frame) or
// direct (elidedText to the exact width and drawText for every label, every frame).
// The targets: smooth, <= 16 ms per frame at every zoom; <= 16 bytes per span.
// Not a test: run by hand or through `ninja run_bench_timeline`. BENCH_TIMELINE_FRAMES=1
// prints each zooming frame; BENCH_TIMELINE_SAVE=DIR saves each case's last frame (and
// every tenth zooming one) there, to compare two builds pixel by pixel.
// usage: bench_timeline [--spans N] [--threads T] [--cpus C] [--switches S] [--frames F]
//                       [--deep D] [--deep-spans N] [--lanes] [--sample-us U]
//                       [--labels cached|elide|direct]
#include <QApplication>
#include <QImage>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gui/timeline/TimelineView.h"

using namespace auxscope;
using Clock = std::chrono::steady_clock;

namespace {

// The process's CPU time (every thread: Qt's raster engine fills on a pool), in ms: what a
// frame costs on this machine apart from the waits other processes on its cores make it.
double cpuMs() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}

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

// A case's frame times: wall and CPU ms per frame, sorted, with the verdict
// (median and p95 of wall time within a 60 Hz frame).
struct FrameFigures {
    double median = 0, p95 = 0, min = 0, max = 0, cpuMedian = 0, cpuP95 = 0;
    bool pass = false;
};
FrameFigures frameFigures(std::vector<double> ms, std::vector<double> cpu) {
    FrameFigures f;
    if (ms.empty() || cpu.empty()) return f;
    std::sort(ms.begin(), ms.end());
    std::sort(cpu.begin(), cpu.end());
    auto p95 = [](const std::vector<double>& v) {
        return v[std::min(v.size() - 1, size_t(double(v.size()) * 0.95))];
    };
    f.median = ms[ms.size() / 2];
    f.p95 = p95(ms);
    f.min = ms.front();
    f.max = ms.back();
    f.cpuMedian = cpu[cpu.size() / 2];
    f.cpuP95 = p95(cpu);
    f.pass = f.median <= 16.0 && f.p95 <= 16.0;
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    if (!std::getenv("QT_QPA_PLATFORM")) setenv("QT_QPA_PLATFORM", "offscreen", 1);
    size_t total = 10'000'000, switches = 0, deepSpans = 2'000'000;
    int threads = 8, functions = 3000, frames = 5, cpus = 4, deep = 1000;
    bool withLanes = false;
    double sampleUs = 100;
    TimelineLabels::Mode labelMode = TimelineLabels::Mode::Cached;
    const char* labelName = "cached";
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], "--lanes")) withLanes = true;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--lanes")) {
            --i;
            continue;
        }
        if (!std::strcmp(argv[i], "--deep")) deep = std::max(0, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--deep-spans")) deepSpans = std::strtoull(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--sample-us")) sampleUs = std::max(0.01, std::atof(argv[i + 1]));
        if (!std::strcmp(argv[i], "--spans")) total = std::strtoull(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--frames")) frames = std::atoi(argv[i + 1]);
        if (!std::strcmp(argv[i], "--cpus")) cpus = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--switches")) switches = std::strtoull(argv[i + 1], nullptr, 10);
        if (!std::strcmp(argv[i], "--labels")) {
            labelName = argv[i + 1];
            if (!std::strcmp(labelName, "cached"))
                labelMode = TimelineLabels::Mode::Cached;
            else if (!std::strcmp(labelName, "elide"))
                labelMode = TimelineLabels::Mode::ElideCached;
            else if (!std::strcmp(labelName, "direct"))
                labelMode = TimelineLabels::Mode::Direct;
            else {
                std::fprintf(stderr, "bench_timeline: --labels %s: expected cached, elide or direct\n",
                             labelName);
                return 2;
            }
        }
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
        "(built in %.0f ms); labels %s\n",
        spans, threads, functions, lanes, double(end - base) / 1e9, since(t0), labelName);
    const double perSpan = spans ? double(spanBytes) / double(spans) : 0;
    // 16-byte packed spans plus a chunk index (one base per chunk) and a side table of wide values.
    std::printf(
        "  stored spans: %.1f MB, %.3f bytes per span (16 packed + index; target <= 16 per span: %s)\n",
        double(spanBytes) / 1e6, perSpan, perSpan < 16.5 ? "PASS" : "BELOW");

    // Sideband thread lanes: each thread's runs from the CPU slices, a sample every --sample-us.
    if (withLanes) {
        auto lanes = std::make_shared<SidebandLanes>();
        std::map<int32_t, SidebandLanes::Thread> byTid;
        for (const auto& [cpu, slices] : data->cpus)
            for (const auto& s : slices) {
                auto& th = byTid[s.tid];
                th.pid = s.pid, th.tid = s.tid;
                th.runs.push_back({s.start, s.end, int32_t(cpu)});
                th.runTime += s.end - s.start;
            }
        SidebandLanes::Process proc;
        proc.pid = 1000, proc.name = "bench";
        size_t runs = 0, samples = 0;
        const uint64_t every = uint64_t(sampleUs * 1000);
        for (auto& [tid, th] : byTid) {
            th.name = "worker-" + std::to_string(tid - 1000);
            std::sort(
                th.runs.begin(), th.runs.end(),
                [](const SidebandLanes::Run& a, const SidebandLanes::Run& b) { return a.start < b.start; });
            uint64_t ran = 0;  // since the last sample
            for (const auto& r : th.runs)
                for (ran += r.end - r.start; ran >= every; ran -= every) {
                    const uint64_t t = r.end - (ran - every) * (r.end - r.start) / std::max<uint64_t>(1, ran);
                    th.samples.push_back({std::clamp(t, r.start, r.end - 1), 0x1000 + t % 4096,
                                          FunctionTable::kUnknown, int16_t(r.cpu), 0});
                }
            std::sort(th.samples.begin(), th.samples.end(),
                      [](const SidebandLanes::Sample& a, const SidebandLanes::Sample& b) {
                          return a.time < b.time;
                      });
            runs += th.runs.size(), samples += th.samples.size();
            proc.runTime += th.runTime, proc.samples += th.samples.size();
            lanes->byTid_[tid] = lanes->threads.size();
            proc.threads.push_back(lanes->threads.size());
            lanes->threads.push_back(std::move(th));
        }
        lanes->byPid_[proc.pid] = 0;
        lanes->processes.push_back(std::move(proc));
        lanes->events = {"cycles"};
        lanes->sampleCount = samples;
        for (const auto& [cpu, slices] : data->cpus)
            lanes->cpus.push_back(cpu), lanes->cpusWithSwitches.push_back(cpu);
        data->lanes = lanes;
        std::printf("  sideband lanes: %zu threads, %zu runs, %zu samples\n", lanes->threads.size(), runs,
                    samples);
    }

    TimelineView view;
    view.labels().setMode(labelMode);
    view.setAsyncSummaries(false);  // measure the summaries here, not on a worker thread
    view.resize(1920, 1080);
    QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
    t0 = Clock::now();
    view.setData(data);
    const double setData = since(t0);
    const auto& sum = view.summaryStats();
    std::printf("  setData (summaries, once per data): %8.1f ms\n", setData);
    std::printf("    per-thread summaries: %8.1f ms, %.1f MB, %.3f bytes per span\n", sum.threadMs,
                double(sum.threadBytes) / 1e6, sum.spans ? double(sum.threadBytes) / double(sum.spans) : 0.0);
    std::printf("    CPU-lane summaries:   %8.1f ms, %.1f MB, %.3f bytes per slice (%zu slices)\n", sum.cpuMs,
                double(sum.cpuBytes) / 1e6,
                sum.cpuSlices ? double(sum.cpuBytes) / double(sum.cpuSlices) : 0.0, sum.cpuSlices);

    struct Zoom {
        const char* name;
        double fraction;
    };
    const Zoom zooms[] = {Zoom{"zoomed out (whole)", 1.0}, Zoom{"mid (1/100)", 1e-2},
                          Zoom{"in (1/100000)", 1e-5}, Zoom{"deep in (1/10^7)", 1e-7}};
    bool allPass = true;
    // Paints `v` at each zoom (centred on the recording's middle), `frames` times.
    auto measure = [&](TimelineView& v, uint64_t b, uint64_t e, const char* prefix,
                       const std::function<void()>& scroll) {
        for (const Zoom& z : zooms) {
            const uint64_t w = std::max<uint64_t>(uint64_t(double(e - b) * z.fraction), 1000);
            const uint64_t mid = b + (e - b) / 2;
            v.setVisibleRange(z.fraction >= 1 ? b : mid - w / 2, z.fraction >= 1 ? e : mid + w / 2);
            if (scroll) scroll();
            v.render(&image);  // warm
            std::vector<double> ms, cpu;
            for (int f = 0; f < frames; ++f) {
                auto t = Clock::now();
                const double c = cpuMs();
                v.render(&image);
                ms.push_back(since(t));
                cpu.push_back(cpuMs() - c);
            }
            if (const char* dir = std::getenv("BENCH_TIMELINE_SAVE"))
                image.save(QString("%1/%2%3.png").arg(dir, prefix).arg(int(&z - zooms)));
            const FrameFigures f = frameFigures(ms, cpu);
            const auto& st = v.lastFrame();
            allPass = allPass && f.pass;
            std::printf(
                "  %s%-22s median %7.2f ms/frame, p95 %7.2f (min %6.2f, max %6.2f; CPU median %6.2f)  %s  "
                "[%llu "
                "rects, %llu labels, %llu spans walked, %llu summary cells, <= %d rects/row]\n",
                prefix, z.name, f.median, f.p95, f.min, f.max, f.cpuMedian, f.pass ? "PASS" : "BELOW",
                (unsigned long long)st.rects, (unsigned long long)st.labels,
                (unsigned long long)st.spansWalked, (unsigned long long)st.summaryCells, st.maxRectsPerRow);
        }
    };
    // A wheel zoom as a person makes it: from the whole recording to 1/10^5 of it, 5 % per frame,
    // every frame at a new zoom (new label widths: the label cache's misses are in these frames).
    auto zooming = [&](TimelineView& v, uint64_t b, uint64_t e, const char* prefix,
                       const std::function<void()>& scroll) {
        std::vector<double> ms, cpu;
        uint64_t labels = 0, laidOut = 0, mostLaidOut = 0;
        const uint64_t mid = b + (e - b) / 2;
        for (double f = 1.0; f > 1e-5; f *= 0.95) {
            const uint64_t w = std::max<uint64_t>(uint64_t(double(e - b) * f), 1000);
            v.setVisibleRange(mid - std::min(w / 2, mid - b), mid - std::min(w / 2, mid - b) + w);
            if (scroll) scroll();
            const uint64_t before = v.labels().laidOut();
            auto t = Clock::now();
            const double c = cpuMs();
            v.render(&image);
            ms.push_back(since(t));
            cpu.push_back(cpuMs() - c);
            labels += v.lastFrame().labels;
            laidOut += v.labels().laidOut() - before;
            mostLaidOut = std::max(mostLaidOut, v.labels().laidOut() - before);
            if (const char* dir = std::getenv("BENCH_TIMELINE_SAVE"); dir && ms.size() % 10 == 0)
                image.save(QString("%1/%2zooming%3.png").arg(dir, prefix).arg(ms.size()));
            if (std::getenv("BENCH_TIMELINE_FRAMES"))
                std::printf(
                    "    %s%.3g: %.2f ms, CPU %.2f, %llu labels, %llu laid out, %llu rects, %llu walked, "
                    "%llu cells\n",
                    prefix, f, ms.back(), cpu.back(), (unsigned long long)v.lastFrame().labels,
                    (unsigned long long)(v.labels().laidOut() - before),
                    (unsigned long long)v.lastFrame().rects, (unsigned long long)v.lastFrame().spansWalked,
                    (unsigned long long)v.lastFrame().summaryCells);
        }
        const size_t n = ms.size();
        const FrameFigures f = frameFigures(ms, cpu);
        allPass = allPass && f.pass;
        std::printf(
            "  %s%-22s median %7.2f ms/frame, p95 %7.2f (min %6.2f, max %6.2f; CPU median %6.2f, p95 "
            "%6.2f)  %s  [%zu frames, %.0f "
            "labels/frame, %.0f laid out/frame, <= %llu]\n",
            prefix, "zooming in (5 %/frame)", f.median, f.p95, f.min, f.max, f.cpuMedian, f.cpuP95,
            f.pass ? "PASS" : "BELOW", n, double(labels) / double(n), double(laidOut) / double(n),
            (unsigned long long)mostLaidOut);
    };
    std::printf(" top of the view (the CPU lanes):\n");
    measure(view, base, end, "", {});
    zooming(view, base, end, "", {});
    if (withLanes) {
        std::printf(" scrolled to the sideband thread lanes (runs and sample ticks):\n");
        const int32_t tid = data->lanes->threads[data->lanes->threads.size() / 2].tid;
        measure(view, base, end, "lanes ", [&] { view.scrollToThread(tid, -1); });
        zooming(view, base, end, "lanes ", [&] { view.scrollToThread(tid, -1); });
    }

    if (deep > 0) {
        // One thread of nested calls `deep` levels deep (chains of random depth
        // up to it, a few calls at the bottom), the rows around its middle in view.
        Clock::time_point d0 = Clock::now();
        auto deepData = std::make_shared<TimelineData>();
        deepData->functions = table;
        std::mt19937_64 r(11);
        std::vector<Span> spans;
        spans.reserve(deepSpans + size_t(deep) + 8);
        uint64_t time = base;
        while (spans.size() < deepSpans) {
            const int depth = deep / 2 + int(r() % uint64_t(deep / 2 + 1));
            const uint64_t len = uint64_t(depth) * 40 + 2'000 + r() % 20'000;
            for (int d = 0; d < depth; ++d) {
                Span s;
                s.start = time + uint64_t(d) * 10, s.end = time + len - uint64_t(d) * 10, s.depth = d;
                s.function = uint32_t(1 + (uint64_t(d) * 7 + r() % 3) % uint64_t(functions - 1));
                s.instructions = (s.end - s.start) / 2 + 1;
                spans.push_back(s);
            }
            time += len + 100 + r() % 2000;
        }
        TimelineData::Thread th;
        th.pid = 2000, th.tid = 2000, th.name = "deep";
        th.spans.append(spans);
        deepData->threads.push_back(std::move(th));
        deepData->begin = deepData->decodedBegin = base;
        deepData->end = deepData->decodedEnd = time;
        TimelineView deepView;
        deepView.labels().setMode(labelMode);
        deepView.setAsyncSummaries(false);
        deepView.resize(1920, 1080);
        const double built = since(d0);
        d0 = Clock::now();
        deepView.setData(deepData);
        const auto& ds = deepView.summaryStats();
        std::printf(
            "deep thread: %zu spans, %d levels deep (generated in %.0f ms); setData %.1f ms, summary %.1f "
            "MB, "
            "%.3f bytes per span; row %d at y %d\n",
            spans.size(), deep, built, since(d0), double(ds.threadBytes) / 1e6,
            double(ds.threadBytes) / double(std::max<size_t>(1, ds.spans)), deep / 2,
            deepView.rowY(2000, deep / 2));
        measure(deepView, base, time, "deep ", [&] { deepView.scrollToThread(2000, deep / 2); });
        zooming(deepView, base, time, "deep ", [&] { deepView.scrollToThread(2000, deep / 2); });
    }
    std::printf("target: smooth = <= 16 ms per frame (median and p95) at every zoom: %s\n",
                allPass ? "PASS" : "BELOW");
    return 0;
}
