// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/Gui.h"

#include <QApplication>
#include <QFileInfo>
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
    QApplication app(argc, argv);  // takes Qt's own options (-platform, -style, ...) out of argv
    // What is left is `auxscope [--] [FILE]`, `auxscope FILE --compare-with B` or
    // `auxscope --compare A B` (before and after): anything else is refused before a window opens.
    QString file, compareWith, compareA;
    bool endOfOptions = false;
    for (int i = 1; i < argc; ++i) {
        const QString a = QString::fromLocal8Bit(argv[i]);
        if (!endOfOptions && a == "--") {
            endOfOptions = true;
        } else if (!endOfOptions && (a == "--compare-with" || a == "--compare")) {
            const int need = a == "--compare" ? 2 : 1;
            if (i + need >= argc) {
                std::fprintf(stderr, "auxscope: %s needs %s (auxscope --help)\n", argv[i],
                             need == 2 ? "two files, A and B" : "a file to compare with");
                return 2;
            }
            if (!compareWith.isEmpty()) {
                std::fprintf(stderr, "auxscope: one comparison at a time (auxscope --help)\n");
                return 2;
            }
            if (need == 2) compareA = QString::fromLocal8Bit(argv[++i]);
            compareWith = QString::fromLocal8Bit(argv[++i]);
        } else if (!endOfOptions && a.startsWith('-') && a != "-") {
            std::fprintf(stderr, "auxscope: unknown option '%s' (commands and options: auxscope --help)\n",
                         argv[i]);
            return 2;
        } else if (!file.isEmpty()) {
            std::fprintf(stderr, "auxscope: one file at a time: '%s' and '%s' given (auxscope --help)\n",
                         qPrintable(file), argv[i]);
            return 2;
        } else {
            file = a;
        }
    }
    if (!compareA.isEmpty() && !file.isEmpty()) {
        std::fprintf(stderr, "auxscope: --compare A B takes no other file ('%s' given; auxscope --help)\n",
                     qPrintable(file));
        return 2;
    }
    if (!compareWith.isEmpty() && compareA.isEmpty() && file.isEmpty()) {
        std::fprintf(stderr,
                     "auxscope: --compare-with B compares FILE with B: no FILE given (auxscope --help)\n");
        return 2;
    }
    for (const QString& f : {compareA, compareWith})
        if (!f.isEmpty() && f != "-" && !QFileInfo(f).isFile()) {
            std::fprintf(stderr, "auxscope: %s: no such file\n", qPrintable(f));
            return 2;
        }
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
    if (!file.isEmpty()) window.openFile(file);
    if (!compareWith.isEmpty()) window.compareFiles(compareA.isEmpty() ? file : compareA, compareWith);
    auxscope::window_memory::restoreWindow(&window);  // where and how big it was last time
    window.show();
    return app.exec();
}
