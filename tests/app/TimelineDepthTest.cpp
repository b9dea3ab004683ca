// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline view's level of detail, offscreen: flame-chart rows deeper
// than 128 are laid out, hit and painted (a 400-deep stack in a store large
// enough to be summarized, and in a small one walked whole), and a CPU lane of
// 200 000 context switches painted zoomed out (from its summary) and zoomed in
// (from the slices) shows in each pixel column the process that ran most of
// it, as computed here from the slices; a mostly idle stretch is drawn low.
#include <QtTest>

#include <random>

#include "gui/timeline/TimelineView.h"

using namespace auxscope;

namespace {

constexpr uint64_t kBase = 1'000'000'000;
constexpr int kDeep = 400;

// Thread 7: `shallow` calls of 50 ns at depth 0 (every 100 ns from kBase on), then one stack kDeep levels
// deep at [kBase + 10 ms, kBase + 11 ms), level d in function "level<d>".
std::shared_ptr<TimelineData> deepStack(size_t shallow) {
    auto functions = std::make_shared<FunctionTable>();
    const uint32_t leaf = functions->add({"leaf", "/bin/prog", 0x100});
    std::vector<uint32_t> level;
    for (int d = 0; d < kDeep; ++d)
        level.push_back(
            functions->add({"level" + std::to_string(d), "/bin/prog", uint64_t(0x1000 + d * 16)}));
    std::vector<Span> spans;
    for (size_t i = 0; i < shallow; ++i)
        spans.push_back({kBase + i * 100, kBase + i * 100 + 50, leaf, 0, 10, -1});
    const uint64_t t0 = kBase + 10'000'000, t1 = kBase + 11'000'000;
    for (int d = 0; d < kDeep; ++d)
        spans.push_back({t0 + uint64_t(d) * 100, t1 - uint64_t(d) * 100, level[size_t(d)], d, 100, -1});
    std::stable_sort(spans.begin(), spans.end(),
                     [](const Span& a, const Span& b) { return a.start < b.start; });
    auto data = std::make_shared<TimelineData>();
    data->functions = functions;
    TimelineData::Thread t;
    t.pid = t.tid = 7;
    t.name = "deep";
    t.spans.append(spans);
    data->threads.push_back(std::move(t));
    data->begin = data->decodedBegin = kBase;
    data->end = data->decodedEnd = kBase + 12'000'000;
    return data;
}

// 20 stretches of 10 ms on CPU 3; in stretch k process 101 + k % 3 runs 70 %
// of the busy time in slices of ~1 µs, the two others the rest; every fifth
// stretch the CPU is idle four times as long as it runs.
std::shared_ptr<TimelineData> busyCpu() {
    auto data = std::make_shared<TimelineData>();
    std::mt19937_64 rng(5);
    auto& lane = data->cpus[3];
    for (int k = 0; k < 20; ++k) {
        const uint64_t s0 = kBase + uint64_t(k) * 10'000'000, s1 = s0 + 10'000'000;
        const int32_t dominant = 101 + k % 3;
        for (uint64_t t = s0; t < s1;) {
            const uint64_t d = 600 + rng() % 800;
            int32_t pid = dominant;
            if (rng() % 10 >= 7) pid = 101 + (dominant - 101 + 1 + int32_t(rng() % 2)) % 3;
            lane.push_back({t, std::min(t + d, s1), pid, pid * 10 + int32_t(rng() % 4)});
            t += d + (k % 5 == 4 ? 4 * d : 0);
        }
    }
    data->begin = kBase, data->end = kBase + 200'000'000;
    return data;
}

// Per pixel column of `view`: the pid that ran most of it and the share of the column threads ran.
struct Column {
    int32_t pid = -1;
    double share = 0, busy = 0;
};
std::vector<Column> reference(const TimelineView& view, const std::vector<TimelineData::CpuSlice>& slices) {
    std::vector<Column> out(size_t(view.plotWidth()));
    const auto range = view.visibleRange();
    const double px = double(range.end - range.begin) / view.plotWidth();
    auto it = slices.begin();
    for (size_t x = 0; x < out.size(); ++x) {
        const double a = double(range.begin) + double(x) * px, b = a + px;
        while (it != slices.end() && double(it->end) <= a)
            ++it;
        std::map<int32_t, double> ran;
        double busy = 0;
        for (auto s = it; s != slices.end() && double(s->start) < b; ++s) {
            const double o = std::min(b, double(s->end)) - std::max(a, double(s->start));
            if (o > 0) ran[s->pid] += o, busy += o;
        }
        for (const auto& [pid, t] : ran)
            if (t > out[x].share * px) out[x] = {pid, t / px, 0};
        out[x].busy = busy / px;
    }
    return out;
}

}  // namespace

class TimelineDepthTest : public QObject {
    Q_OBJECT
private:
    // Row 300 of the deep stack: laid out, hit, and painted in level300's colour.
    void checkDepth300(size_t shallow) {
        auto data = deepStack(shallow);
        TimelineView view;
        view.resize(1000, 700);
        view.setData(data);
        view.zoomTo(kBase + 10'000'000, kBase + 11'000'000);
        view.scrollToThread(7, 300);
        const int y = view.rowY(7, 300);
        QVERIFY2(y >= TimelineView::kAxisHeight && y + TimelineView::kRowHeight <= view.height(),
                 qPrintable(QString::number(y)));
        QVERIFY(view.rowY(7, kDeep - 1) > y);
        QCOMPARE(view.rowY(7, kDeep), -1);
        const QPoint at(int(view.xOf(kBase + 10'500'000)), y + TimelineView::kRowHeight / 2);
        const TimelineHit hit = view.hitAt(at);
        QCOMPARE(int(hit.kind), int(TimelineHit::ThreadSpan));
        QCOMPARE(hit.span.depth, 300);
        QCOMPARE(hit.function, QString("level300"));
        QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
        view.render(&image);
        QCOMPARE(image.pixelColor(at).rgb(), TimelineView::functionColor("level300").rgb());
        QCOMPARE(image.pixelColor(at.x(), y + TimelineView::kRowHeight + 5).rgb(),
                 TimelineView::functionColor("level301").rgb());
        // Zoomed out to the whole recording, the row still shows the stack.
        view.setVisibleRange(data->begin, data->end);
        view.scrollToThread(7, 300);
        view.render(&image);
        const int y2 = view.rowY(7, 300) + TimelineView::kRowHeight / 2;
        int painted = 0;
        for (int x = view.plotLeft(); x < view.plotLeft() + view.plotWidth(); ++x)
            painted += image.pixelColor(x, y2).rgb() == TimelineView::functionColor("level300").rgb();
        QVERIFY2(painted >= 1 && painted < view.plotWidth() / 4, qPrintable(QString::number(painted)));
    }

private slots:
    void depthsBeyond128InASummarizedStore() { checkDepth300(100'000); }
    void depthsBeyond128InASmallStore() { checkDepth300(0); }

    // The CPU lane zoomed out (its summary) and zoomed in (its slices) against the
    // process that ran most of each pixel column, computed from the slices.
    void cpuLaneShowsWhoRanMost() {
        auto data = busyCpu();
        const auto& slices = data->cpus.at(3);
        TimelineView view;
        view.resize(1200, 300);
        view.setData(data);
        QImage image(view.size(), QImage::Format_ARGB32_Premultiplied);
        const int lane = view.cpuLaneY(3);
        const int top = lane + 2, bottom = lane + TimelineView::kLaneHeight - 3;
        struct Case {
            uint64_t begin, end;
            bool summary;
        };
        for (Case c :
             {Case{kBase, kBase + 200'000'000, true}, Case{kBase + 20'000'000, kBase + 22'000'000, false},
              Case{kBase + 40'000'000, kBase + 42'000'000, false}}) {
            view.setVisibleRange(c.begin, c.end);
            view.render(&image);
            const auto frame = view.lastFrame();
            if (c.summary) {
                QVERIFY2(frame.summaryCells > 0 && frame.spansWalked == 0,
                         qPrintable(QString("%1 %2").arg(frame.summaryCells).arg(frame.spansWalked)));
            } else {
                QVERIFY2(frame.summaryCells == 0 && frame.spansWalked > 0,
                         qPrintable(QString("%1 %2").arg(frame.summaryCells).arg(frame.spansWalked)));
            }
            const auto ref = reference(view, slices);
            int clear = 0, same = 0, idleClear = 0, idleSame = 0;
            for (size_t x = 0; x < ref.size(); ++x) {
                const int px = view.plotLeft() + int(x);
                if (ref[x].pid < 0 || ref[x].share < 0.6 * ref[x].busy) continue;
                const QRgb want = TimelineView::processColor(ref[x].pid).rgb();
                if (ref[x].busy > 0.9) {
                    ++clear;
                    same +=
                        image.pixelColor(px, top).rgb() == want && image.pixelColor(px, bottom).rgb() == want;
                } else if (ref[x].busy < 0.3) {
                    // Mostly idle: drawn low, in the colour of who ran most; the top stays clear.
                    ++idleClear;
                    idleSame +=
                        image.pixelColor(px, bottom).rgb() == want && image.pixelColor(px, top).rgb() != want;
                }
            }
            const QString what = QString("%1..%2: %3 of %4 busy columns, %5 of %6 idle ones")
                                     .arg(c.begin - kBase)
                                     .arg(c.end - kBase)
                                     .arg(same)
                                     .arg(clear)
                                     .arg(idleSame)
                                     .arg(idleClear);
            QVERIFY2(clear + idleClear > view.plotWidth() / 6, qPrintable(what));
            QVERIFY2(same >= clear * 9 / 10, qPrintable(what));
            QVERIFY2(idleSame >= idleClear * 9 / 10, qPrintable(what));
            if (c.summary) QVERIFY2(idleClear > 20, qPrintable(what));
        }
    }
};

QTEST_MAIN(TimelineDepthTest)
#include "TimelineDepthTest.moc"
