// SPDX-License-Identifier: GPL-3.0-or-later
// bench_flamegraph: the selection's flame graph (app/gui/FlameGraphWidget) drawn
// from the aggregated stacks of N synthetic spans, beside issue 14's target: a
// flame graph of 10 M spans drawn in <= 16 ms per frame.
//
// The spans are made as bench_report makes them (a program's call graph walked
// depth first per thread: a few thousand functions, stacks up to ~40 deep, some
// recursion, hot paths skewed, untraced gaps), aggregated once by
// computeRangeStats on every core (its time is bench_report's subject), then
// the widget (1600 x 900, offscreen) is timed for:
//   - first frame: a new tree laid out and painted (what a finished selection costs),
//   - repaint: painted from the layout (hover, expose),
//   - zoom: a click on a box: laid out again from it and painted,
//   - instructions: the metric switched (laid out by instructions) and painted.
// Usage: QT_QPA_PLATFORM=offscreen bench_flamegraph [--spans N] [--threads T] [--rounds R]
#include <QApplication>
#include <QImage>
#include <QPainter>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gui/FlameGraphWidget.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"
#include "spans/SpanStore.h"

using namespace auxscope;

namespace {

// The same program shape as bench_report's generator.
struct Generator {
    std::mt19937_64 rng;
    uint32_t functions = 4000;
    uint64_t time = 1'000'000'000;
    std::vector<Span> batch;
    std::vector<Gap> gaps;
    std::vector<std::vector<uint32_t>> callees;
    std::vector<bool> recursive;

    void makeProgram() {
        callees.assign(functions + 1, {});
        recursive.assign(functions + 1, false);
        for (uint32_t f = 1; f <= functions; ++f) {
            const uint32_t level = f * 10 / (functions + 1);
            if (level >= 9) continue;
            const unsigned n = 1 + unsigned(rng() % 5);
            for (unsigned k = 0; k < n; ++k) {
                const uint32_t lo = std::max<uint32_t>(f + 1, (level + 1) * (functions + 1) / 10);
                callees[f].push_back(lo + uint32_t(rng() % (functions + 1 - lo)));
            }
            recursive[f] = rng() % 8 == 0;
        }
    }

    void frame(uint32_t function, int32_t depth, size_t& budget) {
        const size_t at = batch.size();
        batch.push_back({time, 0, function, depth, 0, -1});
        uint64_t insns = 1 + rng() % 40;
        time += 1 + rng() % 30;
        const auto& graph = callees[function];
        const unsigned calls =
            graph.empty() || depth >= 40 ? 0 : unsigned(rng() % (2 * graph.size() + 1)) + (depth < 3);
        for (unsigned c = 0; c < calls && budget > 0; ++c) {
            --budget;
            if (rng() % 200 == 0) {
                gaps.push_back({GapReason::Untraced, "tracing disabled", 0, 0});
                const uint64_t d = 100 + rng() % 2000;
                batch.push_back({time, time + d, 0, depth + 1, 0, int32_t(gaps.size() - 1)});
                time += d;
                continue;
            }
            const size_t n = graph.size(), k = (rng() % n) * (rng() % n) / n;
            const uint32_t callee = recursive[function] && rng() % 4 == 0 ? function : graph[k];
            frame(callee, depth + 1, budget);
            const uint64_t more = rng() % 20;
            insns += more;
            time += more;
        }
        batch[at].end = time;
        batch[at].instructions = insns;
    }
};

std::map<int32_t, SpanStore> makeSpans(uint64_t total, unsigned threadCount, uint64_t seed) {
    std::map<int32_t, SpanStore> stores;
    for (unsigned t = 0; t < threadCount; ++t) {
        Generator g;
        g.rng.seed(seed);
        g.makeProgram();
        g.rng.seed(seed * 1000 + t);
        SpanStore& store = stores[int32_t(1000 + t)];
        const uint64_t want = total / threadCount + (t < total % threadCount ? 1 : 0);
        store.reserve(want);
        uint64_t made = 0;
        while (made < want) {
            g.batch.clear();
            g.gaps.clear();
            while (g.batch.size() < (1u << 20) && made + g.batch.size() < want) {
                size_t budget = std::min<uint64_t>(4000, want - made - g.batch.size() - 1);
                g.frame(1 + uint32_t(g.rng() % 40), 0, budget);
            }
            if (made + g.batch.size() > want) g.batch.resize(want - made);
            store.append(g.batch, g.gaps);
            made += g.batch.size();
        }
    }
    return stores;
}

double ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    uint64_t spans = 10'000'000;
    unsigned threads = 4, rounds = 20;
    for (int i = 1; i < argc; ++i) {
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : "0"; };
        if (!std::strcmp(argv[i], "--spans"))
            spans = std::strtoull(next(), nullptr, 10);
        else if (!std::strcmp(argv[i], "--threads"))
            threads = unsigned(std::atoi(next()));
        else if (!std::strcmp(argv[i], "--rounds"))
            rounds = unsigned(std::atoi(next()));
        else {
            std::fprintf(stderr, "usage: bench_flamegraph [--spans N] [--threads T] [--rounds R]\n");
            return 2;
        }
    }
    QApplication app(argc, argv);
    const auto t0 = std::chrono::steady_clock::now();
    auto stores = makeSpans(spans, std::max(1u, threads), 1);
    auto functions = std::make_shared<FunctionTable>();
    for (uint32_t f = 1; f <= 4000; ++f)
        functions->add(
            {"function_" + std::to_string(f) + "(some::Type const&, int)", "/usr/lib/libbench.so", 0});
    const auto t1 = std::chrono::steady_clock::now();
    RangeQuery q;
    q.threads = 0;
    auto stats = computeRangeStats(stores, q);
    if (!stats) {
        std::fprintf(stderr, "bench_flamegraph: %s\n", stats.error().message.c_str());
        return 1;
    }
    const auto t2 = std::chrono::steady_clock::now();
    std::printf(
        "bench_flamegraph: %llu spans in %u threads made in %.0f ms, aggregated in %.0f ms (all cores): "
        "%zu call tree nodes (stacks), max depth ~40\n",
        (unsigned long long)spans, threads, ms(t1 - t0), ms(t2 - t1), stats->tree.size());

    FlameGraphWidget widget;
    widget.resize(1600, 900);
    QImage image(1600, 900, QImage::Format_ARGB32_Premultiplied);
    auto paint = [&] {
        QPainter p(&image);
        widget.render(&p);
    };
    std::vector<double> first, repaint, zoom, insns;
    size_t boxes = 0, painted = 0;
    for (unsigned r = 0; r < rounds; ++r) {
        CallTree copy = stats->tree;  // setTree takes its own; the copy is not timed
        auto a = std::chrono::steady_clock::now();
        widget.setTree(std::move(copy), functions);
        widget.resize(1600, 900);
        paint();
        auto b = std::chrono::steady_clock::now();
        first.push_back(ms(b - a));
        boxes = widget.boxes().size();
        painted = widget.lastPainted();
        a = std::chrono::steady_clock::now();
        paint();
        b = std::chrono::steady_clock::now();
        repaint.push_back(ms(b - a));
        // Zoom into the widest box two rows up (a click).
        uint32_t target = 0;
        double widest = -1;
        for (const auto& box : widget.boxes())
            if (box.depth == 2 && box.width > widest) widest = box.width, target = box.node;
        a = std::chrono::steady_clock::now();
        widget.zoomTo(target);
        paint();
        b = std::chrono::steady_clock::now();
        zoom.push_back(ms(b - a));
        widget.zoomTo(0);
        a = std::chrono::steady_clock::now();
        widget.setMetric(FlameGraphWidget::Metric::Instructions);
        paint();
        b = std::chrono::steady_clock::now();
        insns.push_back(ms(b - a));
        widget.setMetric(FlameGraphWidget::Metric::Time);
    }
    std::printf("  widget 1600x900: %zu boxes laid out, %zu painted (rows visible)\n", boxes, painted);
    std::printf("  %-42s %8.2f ms median of %u   target <= 16 ms\n", "first frame (setTree + layout + paint)",
                median(first), rounds);
    std::printf("  %-42s %8.2f ms median of %u   target <= 16 ms\n", "repaint (cached layout)",
                median(repaint), rounds);
    std::printf("  %-42s %8.2f ms median of %u   target <= 16 ms\n", "zoom to a box (layout + paint)",
                median(zoom), rounds);
    std::printf("  %-42s %8.2f ms median of %u   target <= 16 ms\n",
                "widths by instructions (layout + paint)", median(insns), rounds);
    return 0;
}
