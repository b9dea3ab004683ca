// SPDX-License-Identifier: GPL-3.0-or-later
// The timeline's label cache (app/gui/timeline/TimelineLabels), offscreen: a
// cached label puts its ink where QPainter::drawText puts the same text, an
// elided one never inks past its room, widths in one bucket share one layout, a
// text that fits whole has one entry for every width, the cache stays bounded, and
// a new font lays the labels out again.
#include <QFontMetrics>
#include <QImage>
#include <QPainter>
#include <QtTest>

#include "gui/timeline/TimelineLabels.h"

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
};

QTEST_MAIN(TimelineLabelsTest)
#include "TimelineLabelsTest.moc"
