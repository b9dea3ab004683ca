// SPDX-License-Identifier: GPL-3.0-or-later
#include "MainWindow.h"

#include <QApplication>
#include <QCloseEvent>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTabWidget>

#include "CapturePage.h"

namespace auxscope {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle("auxscope");
    capture_ = new CapturePage;
    auto* tabs = new QTabWidget;
    tabs->addTab(capture_, "Capture");
    setCentralWidget(tabs);
    connect(capture_, &CapturePage::statusMessage, statusBar(),
            [this](const QString& text) { statusBar()->showMessage(text.section('\n', 0, 0)); });

    auto* file = menuBar()->addMenu("&File");
    file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
    auto* captureMenu = menuBar()->addMenu("&Capture");
    captureMenu->addAction("&Start", QKeySequence(Qt::CTRL | Qt::Key_R), capture_, &CapturePage::start);
    captureMenu->addAction("S&top", QKeySequence(Qt::CTRL | Qt::Key_T), capture_, &CapturePage::stop);
    auto* help = menuBar()->addMenu("&Help");
    help->addAction("&About auxscope", this, [this] {
        QMessageBox::about(this, "About auxscope",
                           "<b>auxscope</b> — live hardware trace capture for Linux.<br>"
                           "Per-CPU perf data rings drained live, with fill and loss per CPU.<br>"
                           "Licence: GPL-3.0-or-later.");
    });
    resize(1200, 800);
}

void MainWindow::openFile(const QString& path) {
    statusBar()->showMessage("Cannot open " + path +
                             ": reading trace files is not available in this build yet");
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (capture_->capturing()) capture_->stop();
    event->accept();
}

}  // namespace auxscope
