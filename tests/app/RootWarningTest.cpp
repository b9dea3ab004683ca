// SPDX-License-Identifier: GPL-3.0-or-later
// The GUI run as root warns (issue 17): the main window carries a dismissible
// banner on its status bar when the effective user id is 0, and none otherwise.
// ctest runs this twice: as the user running the tests (root on the test
// machines) and, when that is root, once more as nobody through setpriv
// (app_root_warning_tests_as_user), so both branches are asserted here.
#include <unistd.h>

#include <QLabel>
#include <QStatusBar>
#include <QToolButton>
#include <QtTest>

#include "gui/MainWindow.h"

using namespace auxscope;

class RootWarningTest : public QObject {
    Q_OBJECT
private slots:
    void bannerOnlyWhenRunningAsRoot() {
        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        auto* banner = window.statusBar()->findChild<QWidget*>("rootWarning");
        QCOMPARE(guiRunsAsRoot(), ::geteuid() == 0);
        qInfo("effective user id %u: %s", unsigned(::geteuid()),
              ::geteuid() == 0 ? "a banner is expected" : "no banner is expected");
        if (::geteuid() != 0) {
            QVERIFY2(!banner, "no root warning for a normal user");
            return;
        }
        QVERIFY2(banner, "running as root shows a banner on the status bar");
        QVERIFY(banner->isVisible());
        const QString text = banner->findChild<QLabel*>("rootWarningText")->text();
        QVERIFY2(text.contains("running as root"), qPrintable(text));
        QCOMPARE(text, QString::fromUtf8(rootWarningText()));
        // A status message from a page does not hide it (a permanent widget).
        window.statusBar()->showMessage("capture started");
        QVERIFY(banner->isVisible());
        // Dismissed with its button: gone for the rest of the session.
        QPointer<QWidget> guard(banner);
        auto* dismiss = banner->findChild<QToolButton*>("rootWarningDismiss");
        QVERIFY(dismiss);
        dismiss->click();
        QVERIFY(!banner->isVisible());
        QTRY_VERIFY(guard.isNull());
        QVERIFY(!window.statusBar()->findChild<QWidget*>("rootWarning"));
    }
};

QTEST_MAIN(RootWarningTest)
#include "RootWarningTest.moc"
