// SPDX-License-Identifier: GPL-3.0-or-later
// bench_flamegraph: the selection's flame graph (app/gui/analysis/FlameGraphWidget) drawn
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

#include "SyntheticSpans.h"
#include "gui/analysis/FlameGraphWidget.h"
#include "spans/FunctionTable.h"
#include "spans/RangeStats.h"
#include "spans/SpanStore.h"

using namespace auxscope;
using auxscope::bench::makeSpans;

namespace {

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
