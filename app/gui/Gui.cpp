// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/Gui.h"

#include <QApplication>
#include <QIcon>

#include <cstdio>

#include "gui/MainWindow.h"
#include "gui/QuitSignals.h"
#include "gui/common/WindowMemory.h"

extern "C" const char* auxscope_gui_qt_version() {
    return qVersion();
}

extern "C" int auxscope_run_gui(int argc, char** argv) {
    if (auxscope::guiRunsAsRoot())
        std::fprintf(stderr, "auxscope: warning: %s\n", auxscope::rootWarningText());
    QApplication app(argc, argv);
    QApplication::setApplicationName("auxscope");
    QApplication::setApplicationVersion(AUXSCOPE_VERSION);
    // The installed .desktop entry (packaging/) and its icon, for the window manager and the task bar.
    QGuiApplication::setDesktopFileName("org.auxscope.auxscope");
    QIcon icon = QIcon::fromTheme("auxscope");
    if (icon.isNull()) {
        icon.addFile(":/icons/auxscope-48.png");
        icon.addFile(":/icons/auxscope-256.png");
    }
    QApplication::setWindowIcon(icon);
    auxscope::MainWindow window;
    // SIGTERM (and SIGINT, SIGHUP) finish a running capture and keep it.
    auxscope::installQuitSignals(window);
    const QStringList args = QApplication::arguments();
    if (args.size() > 1) window.openFile(args.at(1));
    auxscope::window_memory::restoreWindow(&window);  // where and how big it was last time
    window.show();
    return app.exec();
}
