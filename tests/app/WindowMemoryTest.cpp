// SPDX-License-Identifier: GPL-3.0-or-later
// What the GUI remembers between runs (app/gui/WindowMemory), offscreen, with its
// settings in a temporary folder: the main window's size after it closed, a
// splitter's sizes after the person dragged its handle, and the folder each kind
// of file dialog was last pointed at (forgotten when the folder is gone).
#include <QLabel>
#include <QMouseEvent>
#include <QSettings>
#include <QSplitter>
#include <QSplitterHandle>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

#include "gui/MainWindow.h"
#include "gui/common/WindowMemory.h"

using namespace auxscope;

namespace {

// A shown 600 x 200 splitter of two labels whose sizes are remembered under `key`.
std::unique_ptr<QSplitter> rememberedSplitter(const QString& key) {
    auto s = std::make_unique<QSplitter>(Qt::Horizontal);
    s->addWidget(new QLabel("left"));
    s->addWidget(new QLabel("right"));
    s->resize(600, 200);
    window_memory::rememberSplitter(s.get(), key);
    s->show();
    return s;
}

}  // namespace

class WindowMemoryTest : public QObject {
    Q_OBJECT
    QTemporaryDir settingsDir_;

private slots:
    void initTestCase() {
        QVERIFY(settingsDir_.isValid());
        QSettings::setDefaultFormat(QSettings::IniFormat);
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, settingsDir_.path());
        QCoreApplication::setOrganizationName("auxscope-window-memory-test");
        QCoreApplication::setApplicationName("auxscope-window-memory-test");
        QSettings().clear();
    }

    void windowSizeAfterClosing() {
        QSize fresh, closedAt;
        {
            MainWindow w;
            QVERIFY(!window_memory::restoreWindow(&w));  // nothing saved yet
            w.show();
            QVERIFY(QTest::qWaitForWindowExposed(&w));
            fresh = w.size();
            w.resize(fresh + QSize(213, 157));
            QTRY_VERIFY(w.size() != fresh);
            closedAt = w.size();
            QVERIFY(w.close());
        }
        MainWindow again;
        QVERIFY(window_memory::restoreWindow(&again));
        again.show();
        QVERIFY(QTest::qWaitForWindowExposed(&again));
        QCOMPARE(again.size(), closedAt);
    }

    void splitterAfterDragging() {
        QList<int> dragged;
        {
            auto s = rememberedSplitter("test");
            QVERIFY(QTest::qWaitForWindowExposed(s.get()));
            const QList<int> before = s->sizes();
            // The person drags the handle 120 px to the left.
            QSplitterHandle* handle = s->handle(1);
            const QPoint mid(handle->width() / 2, handle->height() / 2), to = mid - QPoint(120, 0);
            QTest::mousePress(handle, Qt::LeftButton, {}, mid);
            QMouseEvent move(QEvent::MouseMove, QPointF(to), handle->mapToGlobal(to), Qt::NoButton,
                             Qt::LeftButton, Qt::NoModifier);
            QApplication::sendEvent(handle, &move);
            QTest::mouseRelease(handle, Qt::LeftButton, {}, to);
            dragged = s->sizes();
            QVERIFY2(dragged != before && dragged[0] < before[0], "the drag did not move the handle");
        }
        auto t = rememberedSplitter("test");
        QVERIFY(QTest::qWaitForWindowExposed(t.get()));
        QCOMPARE(t->sizes(), dragged);
        // Another role keeps its own sizes.
        auto u = rememberedSplitter("other");
        QVERIFY(QTest::qWaitForWindowExposed(u.get()));
        QVERIFY(u->sizes() != dragged);
    }

    void foldersPerKind() {
        QTemporaryDir a, b;
        QCOMPARE(window_memory::lastFolder("open", "/fallback"), QString("/fallback"));
        window_memory::setLastFolder("open", a.filePath("trace.data"));
        window_memory::setLastFolder("export", b.path());
        QCOMPARE(window_memory::lastFolder("open"), a.path());
        QCOMPARE(window_memory::lastFolder("export"), b.path());
        QCOMPARE(window_memory::inLastFolder("export", "/somewhere/run-1.pftrace"),
                 b.filePath("run-1.pftrace"));
        QCOMPARE(window_memory::inLastFolder("save", "perf.data"), QString("perf.data"));  // none yet
        window_memory::setLastFolder("open", QString());  // a cancelled dialog changes nothing
        QCOMPARE(window_memory::lastFolder("open"), a.path());
        const QString gone = a.path();
        a.remove();
        QCOMPARE(window_memory::lastFolder("open", "/fallback"), QString("/fallback"));
        Q_UNUSED(gone);
    }
};

QTEST_MAIN(WindowMemoryTest)
#include "WindowMemoryTest.moc"
