// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/MainWindow.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolButton>

#include <thread>

#include <unistd.h>

#include "gui/analysis/CompareLoader.h"
#include "gui/analysis/ComparePane.h"
#include "gui/analysis/RangeStatsPane.h"
#include "gui/capture/CaptureFiles.h"
#include "gui/capture/CapturePage.h"
#include "gui/capture/LiveTimeline.h"
#include "gui/common/WindowMemory.h"
#include "gui/timeline/SearchBar.h"
#include "gui/timeline/TimelineView.h"
#include "gui/trace/SideBySidePage.h"
#include "gui/trace/SymbolSettings.h"
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
    // The live timeline looks for code where Symbols & binaries' defaults say (never debuginfod).
    capture_->live()->setImageOptions([] { return SymbolSettings::defaults().options; });
    tabs_ = new QTabWidget;
    tabs_->setObjectName("tabs");
    tabs_->setTabsClosable(true);
    tabs_->addTab(capture_, "Capture");
    tabs_->tabBar()->setTabButton(0, QTabBar::RightSide, nullptr);  // the capture page stays
    setCentralWidget(tabs_);
    connect(tabs_, &QTabWidget::tabCloseRequested, this, &MainWindow::closeTab);
    connect(tabs_, &QTabWidget::currentChanged, this, [this] { updateActions(); });
    // The status bar shows a capture message's first line, and where the file
    // is whenever the message says it.
    connect(capture_, &CapturePage::statusMessage, statusBar(), [this](const QString& text) {
        const QStringList lines = text.split('\n');
        QString shown = lines.value(0);
        for (const QString& line : lines.mid(1))
            if (line.startsWith("Capture written to")) shown += "  " + line;
        statusBar()->showMessage(shown);
        updateActions();  // the file named on the status bar
    });
    // A finished capture opens as a trace, like a file, and stays in the
    // captures folder until the person discards it.
    connect(capture_, &CapturePage::captureFileReady, this, [this](const QString& path) {
        CaptureFiles::addRecent(path);
        if (closeAfterCapture_) {
            // Running when the window closed: finished and kept, nothing asked.
            statusBar()->showMessage("Capture kept in " + path);
            recentChanged();
            return;
        }
        unkept_.insert(path);
        openFile(path);
        updateActions();
    });
    connect(capture_, &CapturePage::captureFinished, this, [this] {
        if (closeAfterCapture_) QTimer::singleShot(0, this, &QWidget::close);
    });
    connect(capture_, &CapturePage::captureStarted, this, [this] { updateActions(); });
    connect(capture_, &CapturePage::openRequested, this, [this](const QString& path) { openFile(path); });

    auto* file = menuBar()->addMenu("&File");
    file->addAction("&Open perf.data…", QKeySequence::Open, this, &MainWindow::openDialog);
    recentMenu_ = file->addMenu("Open &Recent");
    recentMenu_->setObjectName("recentMenu");
    connect(recentMenu_, &QMenu::aboutToShow, this, &MainWindow::rebuildRecentMenu);
    saveCaptureAction_ =
        file->addAction("&Save capture as…", QKeySequence::Save, this, &MainWindow::saveCaptureDialog);
    exportAction_ =
        file->addAction("&Export…", QKeySequence(Qt::CTRL | Qt::Key_E), this, &MainWindow::exportDialog);
    symbolsAction_ = file->addAction("S&ymbols && binaries…", this, [this] {
        if (TraceFilePage* page = currentTracePage()) page->openSymbolsDialog();
    });
    symbolsAction_->setToolTip("Where the open file's code and names come from (per file)");
    compareAction_ = file->addAction("&Compare with…", this, &MainWindow::compareDialog);
    compareAction_->setObjectName("compareWith");
    compareAction_->setToolTip(
        "Before and after: this file (A) against another (B), every function's deltas");
    sideBySideAction_ = file->addAction("Timelines side by side &with…", this, &MainWindow::sideBySideDialog);
    sideBySideAction_->setObjectName("sideBySideWith");
    sideBySideAction_->setToolTip("This file's timeline (A) above another's (B), zoomed and panned in step");
    file->addSeparator();
    // Ctrl+Q on every platform theme (QKeySequence::Quit is empty on some).
    file->addAction("&Quit", QKeySequence(Qt::CTRL | Qt::Key_Q), this, &QWidget::close);
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
    viewMenu->addAction("Compare the selection with &another range", this, onTimeline([](TraceFilePage& p) {
                            if (p.rangeStats()) p.rangeStats()->compareWithNextRange();
                        }));
    viewMenu->addAction("&Clear the selection\tEsc", this,
                        onTimeline([](TraceFilePage& p) { p.timeline()->clearTimeSelection(); }));
    auto* help = menuBar()->addMenu("&Help");
    // No trace hardware needed: a recording made here by the bundled generators.
    auto* examples = help->addMenu("Open an &example");
    examples->setObjectName("examplesMenu");
    examples
        ->addAction(exampleTitle(ExampleKind::IntelPt), this, [this] { openExample(ExampleKind::IntelPt); })
        ->setObjectName("exampleIntelPt");
    examples
        ->addAction(exampleTitle(ExampleKind::CoreSight), this,
                    [this] { openExample(ExampleKind::CoreSight); })
        ->setObjectName("exampleCoreSight");
    examples->addAction(exampleTitle(ExampleKind::ArmSpe), this, [this] { openExample(ExampleKind::ArmSpe); })
        ->setObjectName("exampleArmSpe");
    connect(capture_, &CapturePage::openExampleRequested, this, &MainWindow::openExample);
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
    statusFile_ = new QLabel;
    statusFile_->setObjectName("statusFile");
    statusFile_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    statusBar()->addPermanentWidget(statusFile_);
    exampleBusy_ = new QProgressBar;
    exampleBusy_->setObjectName("exampleBusy");
    exampleBusy_->setRange(0, 0);  // busy: the generator says nothing of its progress
    exampleBusy_->setMaximumWidth(120);
    exampleBusy_->setVisible(false);
    statusBar()->addPermanentWidget(exampleBusy_);
    if (guiRunsAsRoot()) addRootWarning(statusBar());
    updateActions();
    rebuildRecentMenu();
    resize(1200, 800);
}

void MainWindow::openExample(ExampleKind kind) {
    ExampleMaker& maker = ExampleMaker::instance();
    ++examplesMaking_;
    exampleBusy_->setVisible(true);
    statusBar()->showMessage(QString("Making the %1…").arg(exampleTitle(kind)));
    maker.make(kind, this, [this, kind](const QString& path, const QString& error) {
        exampleBusy_->setVisible(--examplesMaking_ > 0);
        if (!error.isEmpty()) {
            statusBar()->showMessage(QString("Could not make the %1").arg(exampleTitle(kind)));
            // Not exec(): nothing waits on the box.
            if (exampleError_) exampleError_->close();
            auto* box = new QMessageBox(
                QMessageBox::Warning, QString("Cannot open the %1").arg(exampleTitle(kind)),
                QString("The %1 could not be made.").arg(exampleTitle(kind)), QMessageBox::Ok, this);
            box->setObjectName("exampleErrorBox");
            box->setInformativeText(error);
            box->setTextInteractionFlags(Qt::TextSelectableByMouse);
            box->setAttribute(Qt::WA_DeleteOnClose);
            exampleError_ = box;
            box->open();
            emit exampleFailed(kind, error);
            return;
        }
        TraceFilePage* page = openFile(path);
        page->showTimelineTour();
        statusBar()->showMessage(QString("Opened the %1: %2").arg(exampleTitle(kind), path));
        emit exampleOpened(kind, page);
    });
}

QMessageBox* MainWindow::exampleErrorBox() const {
    return exampleError_;
}

QStringList MainWindow::unkeptCaptures() const {
    QStringList files;
    for (const QString& f : unkept_)
        if (QFileInfo::exists(f)) files << f;
    files.sort();
    return files;
}

MainWindow::KeepChoice MainWindow::askKeep(const QStringList& files, bool wholeWindow) {
    QMessageBox box(this);
    box.setObjectName("keepCapturesBox");
    box.setIcon(QMessageBox::Question);
    box.setWindowTitle(files.size() == 1 ? "Keep the capture?" : "Keep the captures?");
    const QString what = files.size() == 1 ? QString("This capture was not saved:")
                                           : QString("These %1 captures were not saved:").arg(files.size());
    box.setText(what + "\n\n" + files.join('\n'));
    box.setInformativeText(
        QString("Keep leaves %1 in the captures folder (File > Open Recent lists %2); Discard deletes %1; "
                "Cancel %3.")
            .arg(files.size() == 1 ? "it" : "them", files.size() == 1 ? "it" : "them",
                 wholeWindow ? "keeps the window open" : "keeps the tab open"));
    QPushButton* keep = box.addButton("Keep", QMessageBox::AcceptRole);
    keep->setObjectName("keepButton");
    QPushButton* discardButton = box.addButton("Discard", QMessageBox::DestructiveRole);
    discardButton->setObjectName("discardButton");
    QPushButton* cancel = box.addButton("Cancel", QMessageBox::RejectRole);
    cancel->setObjectName("cancelButton");
    box.setDefaultButton(keep);
    box.setEscapeButton(cancel);
    box.exec();
    if (box.clickedButton() == keep) return KeepChoice::Keep;
    if (box.clickedButton() == discardButton) return KeepChoice::Discard;
    return KeepChoice::Cancel;
}

void MainWindow::discard(const QStringList& files) {
    for (const QString& f : files) {
        unkept_.remove(f);
        // Its tab goes first: nothing should show a file that is gone.
        for (int i = tabs_->count() - 1; i >= 0; --i)
            if (auto* page = qobject_cast<TraceFilePage*>(tabs_->widget(i)); page && page->path() == f) {
                tabs_->removeTab(i);
                page->deleteLater();
            }
        if (QFile::remove(f))
            statusBar()->showMessage("Discarded " + f);
        else
            statusBar()->showMessage("Could not delete " + f);
    }
    CaptureFiles::pruneMissing();
    recentChanged();
    updateActions();
}

void MainWindow::closeTab(int index) {
    if (tabs_->widget(index) == capture_) return;  // the capture page stays
    QWidget* page = tabs_->widget(index);
    if (auto* trace = qobject_cast<TraceFilePage*>(page);
        trace && unkept_.contains(trace->path()) && QFileInfo::exists(trace->path())) {
        const QString path = trace->path();
        switch (askKeep({path}, false)) {
            case KeepChoice::Cancel:
                return;
            case KeepChoice::Discard:
                discard({path});  // closes the tab
                return;
            case KeepChoice::Keep:
                unkept_.remove(path);
                statusBar()->showMessage("Capture kept in " + path);
                break;
        }
    }
    index = tabs_->indexOf(page);
    if (index < 0) return;
    tabs_->removeTab(index);
    page->deleteLater();
    updateActions();
}

void MainWindow::quitKeepingCaptures() {
    keepWithoutAsking_ = true;
    close();
}

void MainWindow::recentChanged() {
    rebuildRecentMenu();
    capture_->refreshRecent();
}

void MainWindow::rebuildRecentMenu() {
    // Deleted later, not now: this runs inside the triggered signal of one of them.
    for (QAction* a : recentMenu_->actions()) {
        recentMenu_->removeAction(a);
        a->deleteLater();
    }
    const QStringList files = CaptureFiles::recentFiles();
    int missing = 0;
    for (const QString& f : files) {
        const bool exists = QFileInfo::exists(f);
        QAction* a = recentMenu_->addAction(QFileInfo(f).fileName() + "  —  " + QFileInfo(f).path() +
                                            (exists ? QString() : QString("  (missing)")));
        a->setData(f);
        a->setToolTip(f);
        a->setEnabled(exists);
        if (!exists) ++missing;
        connect(a, &QAction::triggered, this, [this, f] { openFile(f); });
    }
    if (files.isEmpty()) recentMenu_->addAction("No recent files")->setEnabled(false);
    recentMenu_->addSeparator();
    QAction* prune =
        recentMenu_->addAction(QString("Remove &missing entries (%1)").arg(missing), this, [this] {
            CaptureFiles::pruneMissing();
            recentChanged();
        });
    prune->setObjectName("recentPrune");
    prune->setEnabled(missing > 0);
    QAction* clear = recentMenu_->addAction("&Clear list", this, [this] {
        CaptureFiles::clearRecent();
        recentChanged();
    });
    clear->setObjectName("recentClear");
    clear->setEnabled(!files.isEmpty());
}

TraceFilePage* MainWindow::openFile(const QString& path) {
    if (QFileInfo::exists(path)) {
        CaptureFiles::addRecent(path);
        recentChanged();
    }
    auto* page = new TraceFilePage(path);
    const int index = tabs_->addTab(page, QFileInfo(path).fileName());
    tabs_->setTabToolTip(index, path);
    tabs_->setCurrentIndex(index);
    connect(page, &TraceFilePage::statusMessage, statusBar(),
            [this](const QString& t) { statusBar()->showMessage(t); });
    connect(page, &TraceFilePage::loadFinished, this, [this] { updateActions(); });
    // Two ranges of the file compared (the selection pane's "Compare with another range").
    connect(page, &TraceFilePage::timelineOpened, this, [this, page] {
        RangeStatsPane* pane = page->rangeStats();
        if (!pane || pane->property("compareConnected").toBool()) return;
        pane->setProperty("compareConnected", true);
        connect(pane, &RangeStatsPane::compareRequested, this,
                [this, page](const CompareSideData& a, const CompareSideData& b) {
                    compareSides(a, b, QFileInfo(page->path()).fileName() + ": two ranges");
                });
    });
    updateActions();
    return page;
}

ComparePane* MainWindow::compareSides(const CompareSideData& a, const CompareSideData& b,
                                      const QString& title) {
    auto* pane = new ComparePane;
    pane->setObjectName("comparePane");
    const int index = tabs_->addTab(pane, title);
    tabs_->setTabToolTip(index, "A: " + a.label + "\nB: " + b.label);
    tabs_->setCurrentIndex(index);
    pane->setSides(a, b);
    return pane;
}

ComparePane* MainWindow::compareFiles(const QString& a, const QString& b) {
    auto* pane = new ComparePane;
    pane->setObjectName("comparePane");
    const QString title = QFileInfo(a).fileName() + " → " + QFileInfo(b).fileName();
    const int index = tabs_->addTab(pane, title);
    tabs_->setTabToolTip(index, "A: " + a + "\nB: " + b);
    tabs_->setCurrentIndex(index);
    pane->summary()->setText(QString("Loading %1 and %2…").arg(a, b));
    pane->setFiles(a, b);
    connect(pane, &ComparePane::sideBySideRequested, this,
            [this](const QString& fa, const QString& fb) { sideBySide(fa, fb); });
    statusBar()->showMessage("Comparing " + a + " with " + b + "…");
    QPointer<ComparePane> self(pane);
    QPointer<MainWindow> window(this);
    std::thread([self, window, a = a.toStdString(), b = b.toStdString()] {
        auto sa = loadCompareSide(a);
        auto sb = sa ? loadCompareSide(b) : Expected<CompareSideData>(makeError(""));
        QMetaObject::invokeMethod(
            qApp,
            [self, window, sa = std::move(sa), sb = std::move(sb)]() mutable {
                if (window) window->statusBar()->clearMessage();
                if (!self) return;
                if (!sa)
                    self->showError("Cannot compare: " + QString::fromStdString(sa.error().message));
                else if (!sb)
                    self->showError("Cannot compare: " + QString::fromStdString(sb.error().message));
                else
                    self->setSides(std::move(*sa), std::move(*sb));
            },
            Qt::QueuedConnection);
    }).detach();
    return pane;
}

void MainWindow::compareDialog() {
    TraceFilePage* page = currentTracePage();
    if (!page) return;
    const QString path = QFileDialog::getOpenFileName(
        this, "Compare " + QFileInfo(page->path()).fileName() + " with", window_memory::lastFolder("open"),
        "perf.data files (*.data perf.data*);;All files (*)");
    window_memory::setLastFolder("open", path);
    if (!path.isEmpty()) compareFiles(page->path(), path);
}

SideBySidePage* MainWindow::sideBySide(const QString& a, const QString& b) {
    auto* page = new SideBySidePage(a, b);
    page->setObjectName("sideBySidePage");
    const int index = tabs_->addTab(page, QFileInfo(a).fileName() + " | " + QFileInfo(b).fileName());
    tabs_->setTabToolTip(index, "A: " + a + "\nB: " + b + "\ntimelines side by side");
    tabs_->setCurrentIndex(index);
    for (TraceFilePage* side : {page->pageA(), page->pageB()})
        connect(side, &TraceFilePage::statusMessage, statusBar(),
                [this](const QString& t) { statusBar()->showMessage(t); });
    return page;
}

void MainWindow::sideBySideDialog() {
    TraceFilePage* page = currentTracePage();
    if (!page) return;
    const QString path = QFileDialog::getOpenFileName(
        this, "Show " + QFileInfo(page->path()).fileName() + "'s timeline beside",
        window_memory::lastFolder("open"), "perf.data files (*.data perf.data*);;All files (*)");
    window_memory::setLastFolder("open", path);
    if (!path.isEmpty()) sideBySide(page->path(), path);
}

TraceFilePage* MainWindow::currentTracePage() const {
    return qobject_cast<TraceFilePage*>(tabs_->currentWidget());
}

void MainWindow::openDialog() {
    const QString path =
        QFileDialog::getOpenFileName(this, "Open perf.data", window_memory::lastFolder("open"),
                                     "perf.data files (*.data perf.data*);;All files (*)");
    window_memory::setLastFolder("open", path);
    if (!path.isEmpty()) openFile(path);
}

void MainWindow::saveCaptureDialog() {
    if (capture_->lastCaptureFile().isEmpty()) return;
    const QString path = QFileDialog::getSaveFileName(this, "Save capture as perf.data",
                                                      window_memory::inLastFolder("save", "perf.data"),
                                                      "perf.data files (*.data);;All files (*)");
    window_memory::setLastFolder("save", path);
    if (!path.isEmpty() && capture_->saveCaptureAs(path)) {
        unkept_.remove(capture_->lastCaptureFile());  // saved: nothing left to ask about
        CaptureFiles::addRecent(path);
        recentChanged();
    }
}

void MainWindow::exportDialog() {
    TraceFilePage* page = currentTracePage();
    if (!page) return;
    const QString csvFilter = "CSV (*.csv)";
    QString filter;
    const QString path = QFileDialog::getSaveFileName(
        this, "Export",
        window_memory::inLastFolder("export", QFileInfo(page->path()).completeBaseName() + ".pftrace"),
        "Perfetto trace (*.pftrace);;" + csvFilter, &filter);
    window_memory::setLastFolder("export", path);
    if (path.isEmpty()) return;
    page->exportTo(filter == csvFilter || path.endsWith(".csv") ? "csv" : "perfetto", path);
}

void MainWindow::updateActions() {
    saveCaptureAction_->setEnabled(!capture_->lastCaptureFile().isEmpty() &&
                                   QFileInfo::exists(capture_->lastCaptureFile()));  // not discarded
    TraceFilePage* page = currentTracePage();
    exportAction_->setEnabled(page && page->loaded());
    // The title names the file the current tab shows.
    setWindowTitle(page ? "auxscope — " + page->path() : QString("auxscope"));
    if (page)
        statusFile_->setText(page->path());
    else if (capture_->capturing())
        statusFile_->setText("Capturing into " + capture_->currentCaptureFile());
    else if (!capture_->lastCaptureFile().isEmpty())
        statusFile_->setText("Last capture: " + capture_->lastCaptureFile());
    else
        statusFile_->setText("Captures go to " + CaptureFiles::capturesFolder());
    symbolsAction_->setEnabled(page != nullptr);
    compareAction_->setEnabled(page != nullptr);
    sideBySideAction_->setEnabled(page != nullptr);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (capture_->capturing()) {
        // A running capture is finished and kept first; the window closes when
        // its file is complete (captureFinished).
        event->ignore();
        if (!closeAfterCapture_) {
            closeAfterCapture_ = true;
            capture_->stop();
            statusBar()->showMessage(
                "Finishing the capture before closing: " + capture_->currentCaptureFile() + "…");
        }
        return;
    }
    const QStringList files = unkeptCaptures();
    if (!files.isEmpty() && !keepWithoutAsking_) {
        switch (askKeep(files, true)) {
            case KeepChoice::Cancel:
                closeAfterCapture_ = false;
                event->ignore();
                return;
            case KeepChoice::Discard:
                discard(files);
                break;
            case KeepChoice::Keep:
                break;
        }
    }
    unkept_.clear();  // kept: they stay in the captures folder
    window_memory::saveWindow(this);
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    // Ctrl+drop of one file on a trace page: before and after, the page's file against it.
    const QList<QUrl> urls = event->mimeData()->urls();
    if ((event->modifiers() & Qt::ControlModifier) && currentTracePage() && urls.size() == 1 &&
        urls[0].isLocalFile()) {
        compareFiles(currentTracePage()->path(), urls[0].toLocalFile());
        event->acceptProposedAction();
        return;
    }
    for (const QUrl& url : urls)
        if (url.isLocalFile()) openFile(url.toLocalFile());
    event->acceptProposedAction();
}

}  // namespace auxscope
