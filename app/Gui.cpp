// SPDX-License-Identifier: GPL-3.0-or-later
#include "Gui.h"

#include <QApplication>

#include "MainWindow.h"

namespace auxscope {

const char* guiQtVersion() {
    return qVersion();
}

int runGui(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("auxscope");
    QApplication::setApplicationVersion(AUXSCOPE_VERSION);
    MainWindow window;
    const QStringList args = QApplication::arguments();
    if (args.size() > 1) window.openFile(args.at(1));
    window.show();
    return app.exec();
}

}  // namespace auxscope
