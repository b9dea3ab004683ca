// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's label cache (app/gui/timeline/TimelineLabels), offscreen: a
// cached label puts its ink where QPainter::drawText puts the same text, an
// elided one never inks past its room, widths in one bucket share one layout, a
// text that fits whole has one entry for every width, the cache stays bounded, and
// a new font lays the labels out again. And a whole scene (a 40-deep thread of
// long C++ names with gaps, summarized when zoomed out, and a CPU lane) painted by
// TimelineView with the cache and with the straightforward path (elidedText to the
// room's exact width and drawText for every label) at several zooms: the same
// pixels outside the labels, a label in the same room wherever the straightforward
// path draws one, the same text where it fits whole, the same elision a bucket
// shorter at most where it does not, and the same ink where the texts are equal.
#include <QFontMetrics>
#include <QImage>
#include <QPainter>
#include <QtTest>

#include <random>

#include "gui/timeline/TimelineLabels.h"
#include "gui/timeline/TimelineView.h"

using namespace auxscope;

namespace {

const QString kLong = "std::vector<int>::_M_realloc_insert<int const&>(iterator, int const&)";

QImage canvas() {
    QImage img(600, 40, QImage::Format_RGB32);
    img.fill(Qt::white);
    return img;
}

// The ink's bounding box (pixels darker than mid grey).
QRect ink(const QImage& img) {
    int x0 = img.width(), y0 = img.height(), x1 = -1, y1 = -1;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            if (qGray(img.pixel(x, y)) < 160) {
                x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
            }
    return x1 < 0 ? QRect() : QRect(QPoint(x0, y0), QPoint(x1, y1));
}

constexpr uint64_t kBase = 1'000'000'000;

// Thread 7: 1600 stacks of 6..40 levels (each level 40 ns inside its caller), names of
// 4 to 90 characters, a gap every 50 stacks; CPU 0: slices of three named threads.
std::shared_ptr<TimelineData> scene() {
    auto functions = std::make_shared<FunctionTable>();
    std::vector<uint32_t> ids;
    std::mt19937_64 rng(3);
    for (int f = 0; f < 300; ++f) {
        std::string name = "f" + std::to_string(f);
        if (f % 4 == 1) name = "ns::Parser::parse_" + std::to_string(f);
        if (f % 4 == 2)
            name =
                "std::vector<int>::_M_realloc_insert<int const&>(iterator, int const&) #" + std::to_string(f);
        if (f % 4 == 3) name = "WWWW_mmmm_iiii_" + std::to_string(f) + "_llll::operator()";
        ids.push_back(functions->add({name, "/bin/prog", uint64_t(0x1000 + f * 16)}));
    }
    std::vector<Span> spans;
    std::vector<Gap> gaps;
    uint64_t t = kBase;
    for (int c = 0; c < 1600; ++c) {
        const int depth = 6 + int(rng() % 35);
        const uint64_t len = uint64_t(depth) * 80 + 500 + rng() % 60'000;
        for (int d = 0; d < depth; ++d)
            spans.push_back({t + uint64_t(d) * 40, t + len - uint64_t(d) * 40,
                             ids[size_t(d * 7 + int(rng() % 5)) % ids.size()], d, 10, -1});
        t += len + 50 + rng() % 3000;
        if (c % 50 == 49) {
            Span gap{t, t + 20'000, 0, 0, 0, int32_t(gaps.size())};
            gaps.push_back({GapReason::Overflow, "overflow", 0x1000, 7});
            spans.push_back(gap);
            t += 20'100;
        }
    }
    auto data = std::make_shared<TimelineData>();
    data->functions = functions;
    TimelineData::Thread th;
    th.pid = th.tid = 7;
    th.name = "deep";
    th.spans.append(spans, gaps);
    data->threads.push_back(std::move(th));
    data->threadNames = {{7, "deep"}, {8, "a_worker_thread_with_a_long_name"}, {9, "io"}};
    auto& lane = data->cpus[0];
    for (uint64_t s = kBase; s < t;) {
        const uint64_t d = 300 + rng() % 400'000;
        const int32_t tid = int32_t(7 + rng() % 3);
        lane.push_back({s, std::min(s + d, t), 7, tid});
        s += d;
    }
    data->begin = data->decodedBegin = kBase;
    data->end = data->decodedEnd = t;
    return data;
}

struct Painted {
    QImage image;
    std::vector<TimelineLabels::Drawn> labels;
};

Painted paint(TimelineView& view, TimelineLabels::Mode mode) {
    Painted out;
    view.labels().setMode(mode);
    view.labels().setLog(&out.labels);
    out.image = QImage(view.size(), QImage::Format_ARGB32_Premultiplied);
    out.image.fill(Qt::white);
    view.render(&out.image);
    view.labels().setLog(nullptr);
    return out;
}

QString stem(const QString& elided) {
    return elided.endsWith(QChar(0x2026)) ? elided.left(elided.size() - 1) : elided;
}

}  // namespace

class TimelineLabelsTest : public QObject {
    Q_OBJECT
private slots:
    // A text that fits: the same ink box as drawText(room, AlignVCenter | AlignLeft) gives, within a pixel.
    void inkWhereDrawTextPutsIt() {
        const QRect room(10, 4, 400, 18);
        QImage a = canvas(), b = canvas();
        {
            QPainter p(&a);
            p.setPen(Qt::black);
            p.drawText(room, Qt::AlignVCenter | Qt::AlignLeft, "parse_request");
        }
        TimelineLabels labels;
        {
            QPainter p(&b);
            p.setPen(Qt::black);
            labels.draw(p, room, TimelineLabels::functionKey(1), [] { return QString("parse_request"); });
        }
        const QRect ia = ink(a), ib = ink(b);
        QVERIFY(!ia.isNull());
        QVERIFY2(std::abs(ia.left() - ib.left()) <= 1 && std::abs(ia.right() - ib.right()) <= 1 &&
                     std::abs(ia.top() - ib.top()) <= 1 && std::abs(ia.bottom() - ib.bottom()) <= 1,
                 qPrintable(QString("drawText ink %1,%2 %3x%4; cached %5,%6 %7x%8")
                                .arg(ia.x())
                                .arg(ia.y())
                                .arg(ia.width())
                                .arg(ia.height())
                                .arg(ib.x())
                                .arg(ib.y())
                                .arg(ib.width())
                                .arg(ib.height())));
    }

    // Elided to its room (bucketed down, never up): no ink past the room's right edge, and some ink.
    void elidedStaysInItsRoom() {
        TimelineLabels labels;
        for (int w : {20, 47, 64, 101, 150, 233}) {
            QImage img = canvas();
            const QRect room(30, 4, w, 18);
            {
                QPainter p(&img);
                p.setPen(Qt::black);
                labels.draw(p, room, TimelineLabels::functionKey(7), [] { return kLong; });
            }
            const QRect i = ink(img);
            if (w >= 2 * TimelineLabels::kBucket)
                QVERIFY2(!i.isNull(), qPrintable(QString("width %1").arg(w)));
            if (!i.isNull())
                QVERIFY2(i.right() <= room.right() && i.left() >= room.left(),
                         qPrintable(QString("width %1: ink %2..%3").arg(w).arg(i.left()).arg(i.right())));
        }
    }

    // Widths within one bucket share a layout; every width the whole text fits shares one entry.
    void bucketsAndWholeTextsShareEntries() {
        TimelineLabels labels;
        QImage img = canvas();
        QPainter p(&img);
        const int whole = QFontMetrics(p.font()).horizontalAdvance("main");
        for (int w = whole; w < whole + 300; ++w)
            labels.draw(p, QRect(0, 0, w, 18), TimelineLabels::functionKey(3),
                        [] { return QString("main"); });
        QCOMPARE(labels.size(), size_t(1));
        const size_t before = labels.size();
        for (int w = 8 * 8; w < 9 * 8; ++w)  // one bucket
            labels.draw(p, QRect(0, 0, w, 18), TimelineLabels::functionKey(4), [] { return kLong; });
        QCOMPARE(labels.size(), before + 2);  // the whole text and one elided layout
        // Functions, gaps and threads with the same number are different texts.
        int made = 0;
        labels.draw(p, QRect(0, 0, 500, 18), TimelineLabels::gapKey(3),
                    [&] { return ++made, QString("gap: x"); });
        labels.draw(p, QRect(0, 0, 500, 18), TimelineLabels::threadKey(3),
                    [&] { return ++made, QString("t 3"); });
        labels.draw(p, QRect(0, 0, 500, 18), TimelineLabels::threadKey(3),
                    [&] { return ++made, QString("t 3"); });
        QCOMPARE(made, 2);
    }

    // Many texts: bounded.
    void boundedAndFontAware() {
        TimelineLabels labels;
        QImage img = canvas();
        QPainter p(&img);
        for (uint32_t f = 0; f < 3 * TimelineLabels::kMaxEntries; ++f)
            labels.draw(p, QRect(0, 0, 200, 18), TimelineLabels::functionKey(f),
                        [&] { return QString("function %1").arg(f); });
        QVERIFY(labels.size() <= TimelineLabels::kMaxEntries);
        // A bigger font: the label is laid out again, and inks wider.
        img.fill(Qt::white);
        labels.draw(p, QRect(0, 0, 590, 40), TimelineLabels::functionKey(1),
                    [] { return QString("parse_request"); });
        p.end();
        const int narrow = ink(img).width();
        QImage big = canvas();
        QPainter q(&big);
        QFont f = q.font();
        f.setPointSizeF(f.pointSizeF() * 1.8);
        q.setFont(f);
        labels.draw(q, QRect(0, 0, 590, 40), TimelineLabels::functionKey(1),
                    [] { return QString("parse_request"); });
        q.end();
        QVERIFY2(ink(big).width() > narrow * 3 / 2,
                 qPrintable(QString("%1 vs %2").arg(ink(big).width()).arg(narrow)));
    }

    // A scene painted with the cache and with the straightforward path: see the file's comment.
    void sceneAsTheStraightforwardPathDrawsIt() {
        auto data = scene();
        TimelineView view;
        view.setAsyncSummaries(false);
        view.resize(1100, 700);
        view.setData(data);
        const uint64_t span = data->end - data->begin;
        QFont small = view.font();  // the font the view draws names in
        small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
        const QFontMetrics fm(small);
        size_t total = 0, elided = 0, whole = 0, skipped = 0;
        struct Zoom {
            uint64_t begin, end;
        };
        // Whole (summarized), and windows that cut stacks at both edges.
        const Zoom zooms[] = {
            {data->begin, data->end},
            {data->begin + span / 3, data->begin + span / 3 + span / 20},
            {data->begin + span / 2 + 777, data->begin + span / 2 + 777 + span / 200},
            {data->begin + span / 5 + 12'345, data->begin + span / 5 + 12'345 + span / 1500},
            {data->begin + span / 7 + 31, data->begin + span / 7 + 31 + 40'000}};
        for (const Zoom& z : zooms) {
            view.setVisibleRange(z.begin, z.end);
            view.scrollToThread(7, 0);
            const Painted direct = paint(view, TimelineLabels::Mode::Direct);
            const Painted cached = paint(view, TimelineLabels::Mode::Cached);
            const QString where = QString("window %1..%2").arg(z.begin - kBase).arg(z.end - kBase);
            // The labels, room by room in the order drawn; the cache skips only rooms narrower than a bucket.
            size_t c = 0;
            for (const auto& d : direct.labels) {
                if (c < cached.labels.size() && cached.labels[c].room == d.room) {
                    const auto& k = cached.labels[c++];
                    ++total;
                    QVERIFY2(fm.horizontalAdvance(k.text) <= d.room.width(),
                             qPrintable(where + ": '" + k.text + "' wider than its room"));
                    if (!d.text.endsWith(QChar(0x2026))) {
                        ++whole;
                        QVERIFY2(k.text == d.text,
                                 qPrintable(where + ": '" + k.text + "' vs '" + d.text + "'"));
                        continue;
                    }
                    ++elided;
                    QVERIFY2(k.text.endsWith(QChar(0x2026)) && stem(d.text).startsWith(stem(k.text)),
                             qPrintable(where + ": '" + k.text + "' vs '" + d.text + "'"));
                    QVERIFY2(fm.horizontalAdvance(d.text) - fm.horizontalAdvance(k.text) <=
                                 TimelineLabels::kBucket + fm.maxWidth(),
                             qPrintable(where + ": '" + k.text + "' much shorter than '" + d.text + "'"));
                    continue;
                }
                QVERIFY2(d.room.width() < TimelineLabels::kBucket,
                         qPrintable(where + QString(": no cached label in a room %1 wide for '%2'")
                                                .arg(d.room.width())
                                                .arg(d.text)));
                ++skipped;
            }
            QVERIFY2(c == cached.labels.size(),
                     qPrintable(where + ": the cache drew labels the path did not"));
            // Every pixel outside the labels' rooms: the same.
            std::vector<char> inRoom(size_t(view.width() * view.height()), 0);
            for (const auto& d : direct.labels) {
                const QRect r = d.room.intersected(QRect(QPoint(0, 0), view.size()));
                for (int y = r.top(); y <= r.bottom(); ++y)
                    for (int x = r.left(); x <= r.right(); ++x)
                        inRoom[size_t(y * view.width() + x)] = 1;
            }
            int differ = 0;
            for (int y = 0; y < view.height(); ++y)
                for (int x = 0; x < view.width(); ++x)
                    if (!inRoom[size_t(y * view.width() + x)] &&
                        direct.image.pixel(x, y) != cached.image.pixel(x, y))
                        ++differ;
            QVERIFY2(differ == 0,
                     qPrintable(where + QString(": %1 pixels differ outside the labels").arg(differ)));
            // Where the texts are equal: the ink in the room where drawText put it, within a pixel.
            c = 0;
            int compared = 0;
            for (const auto& d : direct.labels) {
                if (c >= cached.labels.size() || cached.labels[c].room != d.room) continue;
                if (cached.labels[c++].text != d.text || d.room.width() < 20 || compared >= 60) continue;
                const QRect ia = ink(direct.image.copy(d.room)), ib = ink(cached.image.copy(d.room));
                QVERIFY2(std::abs(ia.left() - ib.left()) <= 1 && std::abs(ia.right() - ib.right()) <= 1 &&
                             std::abs(ia.top() - ib.top()) <= 1 && std::abs(ia.bottom() - ib.bottom()) <= 1,
                         qPrintable(where + ": ink of '" + d.text + "' moved"));
                ++compared;
            }
        }
        qInfo("%zu labels compared: %zu whole, %zu elided; %zu rooms under %d px left unnamed by the cache",
              total, whole, elided, skipped, TimelineLabels::kBucket);
        QVERIFY2(
            whole >= 100 && elided >= 100,
            qPrintable(QString("the scene named too little: %1 whole, %2 elided").arg(whole).arg(elided)));
    }
};

QTEST_MAIN(TimelineLabelsTest)
#include "TimelineLabelsTest.moc"
