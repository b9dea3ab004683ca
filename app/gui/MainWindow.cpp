// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/MainWindow.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QToolButton>

#include <unistd.h>

#include "gui/capture/CapturePage.h"
#include "gui/timeline/SearchBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/TraceFilePage.h"

namespace auxscope {
namespace {

// Running the GUI as root (issue 17): as hotspot and Tracy do, say so, once on
// stderr at start (auxscope_run_gui) and in a banner on the status bar that the
// user can dismiss. The GUI parses files from other machines; it should not do
// so with root's rights, and what it saves would belong to root.
void addRootWarning(QStatusBar* bar) {
    auto* banner = new QWidget;
    banner->setObjectName("rootWarning");
    banner->setAutoFillBackground(true);
    QPalette pal = banner->palette();
    pal.setColor(QPalette::Window, QColor(0xff, 0xe0, 0x8a));
    pal.setColor(QPalette::WindowText, Qt::black);
    banner->setPalette(pal);
    auto* layout = new QHBoxLayout(banner);
    layout->setContentsMargins(6, 0, 0, 0);
    auto* text = new QLabel(QString::fromUtf8(rootWarningText()));
    text->setObjectName("rootWarningText");
    auto* close = new QToolButton;
    close->setObjectName("rootWarningDismiss");
    close->setText(QString::fromUtf8("\u2715"));
    close->setToolTip("Dismiss");
    close->setAutoRaise(true);
    layout->addWidget(text, 1);
    layout->addWidget(close);
    QObject::connect(close, &QToolButton::clicked, banner, [bar, banner] {
        bar->removeWidget(banner);
        banner->hide();
        banner->deleteLater();
    });
    bar->addPermanentWidget(banner, 1);
}

}  // namespace

const char* rootWarningText() {
    return "auxscope is running as root: not recommended. Every file it opens is parsed with root's rights "
           "and the files it saves belong to root; run it as your user.";
}

bool guiRunsAsRoot() {
    return ::geteuid() == 0;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    setWindowTitle("auxscope");
    setAcceptDrops(true);
    capture_ = new CapturePage;
    tabs_ = new QTabWidget;
    tabs_->setObjectName("tabs");
    tabs_->setTabsClosable(true);
    tabs_->addTab(capture_, "Capture");
    tabs_->tabBar()->setTabButton(0, QTabBar::RightSide, nullptr);  // the capture page stays
    setCentralWidget(tabs_);
    connect(tabs_, &QTabWidget::tabCloseRequested, this, [this](int index) {
        if (tabs_->widget(index) == capture_) return;  // the capture page stays
        QWidget* page = tabs_->widget(index);
        tabs_->removeTab(index);
        page->deleteLater();
        updateActions();
    });
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { updateActions(); });
    connect(capture_, &CapturePage::statusMessage, statusBar(),
            [this](const QString& text) { statusBar()->showMessage(text.section('\n', 0, 0)); });
    // A finished capture opens as a trace, like a file.
    connect(capture_, &CapturePage::captureFileReady, this, [this](const QString& path) {
        openFile(path);
        updateActions();
    });

    auto* file = menuBar()->addMenu("&File");
    file->addAction("&Open perf.data…", QKeySequence::Open, this, &MainWindow::openDialog);
    saveCaptureAction_ =
        file->addAction("&Save capture as…", QKeySequence::Save, this, &MainWindow::saveCaptureDialog);
    exportAction_ =
        file->addAction("&Export…", QKeySequence(Qt::CTRL | Qt::Key_E), this, &MainWindow::exportDialog);
    symbolsAction_ = file->addAction("S&ymbols && binaries…", this, [this] {
        if (TraceFilePage* page = currentTracePage()) page->openSymbolsDialog();
    });
    symbolsAction_->setToolTip("Where the open file's code and names come from (per file)");
    file->addSeparator();
    file->addAction("&Quit", QKeySequence::Quit, this, &QWidget::close);
    auto* captureMenu = menuBar()->addMenu("&Capture");
    captureMenu->addAction("&Start", QKeySequence(Qt::CTRL | Qt::Key_R), capture_, &CapturePage::start);
    captureMenu->addAction("S&top", QKeySequence(Qt::CTRL | Qt::Key_T), capture_, &CapturePage::stop);
    // The open trace's timeline: search and the range selection (the keys work on the view itself).
    auto* viewMenu = menuBar()->addMenu("&View");
    auto onTimeline = [this](auto&& f) {
        return [this, f] {
            if (TraceFilePage* page = currentTracePage(); page && page->timeline()) f(*page);
        };
    };
    viewMenu->addAction("&Find functions and threads…", QKeySequence::Find, this,
                        onTimeline([](TraceFilePage& p) { p.searchBar()->activate(); }));
    viewMenu->addAction("&Zoom to the selection\tF", this,
                        onTimeline([](TraceFilePage& p) { p.timeline()->focusSelection(); }));
    viewMenu->addAction("&Mark / unmark the selection\tM", this,
                        onTimeline([](TraceFilePage& p) { p.timeline()->toggleMark(); }));
    viewMenu->addAction("&Clear the selection\tEsc", this,
                        onTimeline([](TraceFilePage& p) { p.timeline()->clearTimeSelection(); }));
    auto* help = menuBar()->addMenu("&Help");
    help->addAction("Timeline &keys", this, [this] {
        QString text = "<table>";
        for (const QString& line : TimelineView::keysHelp().split('\n')) {
            const QStringList kv = line.split('\t');
            text += QString("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>")
                        .arg(kv[0].toHtmlEscaped(), kv.value(1).toHtmlEscaped());
        }
        QMessageBox::information(this, "Timeline keys", text + "</table>");
    });
    help->addAction("&About auxscope", this, [this] {
        QMessageBox::about(this, "About auxscope",
                           "<b>auxscope</b> — live hardware trace capture for Linux.<br>"
                           "Per-CPU perf data rings drained live, with fill and loss per CPU;<br>"
                           "captures are perf.data files that perf, hotspot and Perfetto read.<br>"
                           "Licence: GPL-3.0-or-later.");
    });
    if (guiRunsAsRoot()) addRootWarning(statusBar());
    updateActions();
    resize(1200, 800);
}

TraceFilePage* MainWindow::openFile(const QString& path) {
    auto* page = new TraceFilePage(path);
    const int index = tabs_->addTab(page, QFileInfo(path).fileName());
    tabs_->setTabToolTip(index, path);
    tabs_->setCurrentIndex(index);
    connect(page, &TraceFilePage::statusMessage, statusBar(),
            [this](const QString& t) { statusBar()->showMessage(t); });
    connect(page, &TraceFilePage::loadFinished, this, [this] { updateActions(); });
    updateActions();
    return page;
}

TraceFilePage* MainWindow::currentTracePage() const {
    return qobject_cast<TraceFilePage*>(tabs_->currentWidget());
}

void MainWindow::openDialog() {
    const QString path = QFileDialog::getOpenFileName(this, "Open perf.data", QString(),
                                                      "perf.data files (*.data perf.data*);;All files (*)");
    if (!path.isEmpty()) openFile(path);
}

void MainWindow::saveCaptureDialog() {
    if (capture_->lastCaptureFile().isEmpty()) return;
    const QString path = QFileDialog::getSaveFileName(this, "Save capture as perf.data", "perf.data",
                                                      "perf.data files (*.data);;All files (*)");
    if (!path.isEmpty()) capture_->saveCaptureAs(path);
}

void MainWindow::exportDialog() {
    TraceFilePage* page = currentTracePage();
    if (!page) return;
    const QString csvFilter = "CSV (*.csv)";
    QString filter;
    const QString path =
        QFileDialog::getSaveFileName(this, "Export", QFileInfo(page->path()).completeBaseName() + ".pftrace",
                                     "Perfetto trace (*.pftrace);;" + csvFilter, &filter);
    if (path.isEmpty()) return;
    page->exportTo(filter == csvFilter || path.endsWith(".csv") ? "csv" : "perfetto", path);
}

void MainWindow::updateActions() {
    saveCaptureAction_->setEnabled(!capture_->lastCaptureFile().isEmpty());
    TraceFilePage* page = currentTracePage();
    exportAction_->setEnabled(page && page->loaded());
    symbolsAction_->setEnabled(page != nullptr);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (capture_->capturing()) capture_->stop();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile()) openFile(url.toLocalFile());
    event->acceptProposedAction();
}

}  // namespace auxscope
