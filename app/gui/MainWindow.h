// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/: the Qt Widgets front end, one folder per concern (timeline/,
// analysis/, trace/, capture/; each one's main header says what it owns and
// may include). Here, on top of them, the main window (the capture page and a
// trace page per file opened, menus, drag and drop) and the entry the
// `auxscope` binary loads (Gui.h); they may include every folder.
#include <QMainWindow>
#include <QPointer>
#include <QSet>
#include <QStringList>

#include "gui/common/ExampleMaker.h"

class QLabel;
class QMenu;
class QMessageBox;
class QProgressBar;
class QTabWidget;

namespace auxscope {

// Whether the GUI runs with root's user id, and what it then says (one line on
// stderr at start, and a dismissible banner, object name "rootWarning", on the
// main window's status bar).
bool guiRunsAsRoot();
const char* rootWarningText();

class CapturePage;
class ComparePane;
class SideBySidePage;
class TraceFilePage;
struct CompareSideData;

class MainWindow : public QMainWindow {
    Q_OBJECT
    Q_MOC_INCLUDE("gui/trace/TraceFilePage.h")
public:
    explicit MainWindow(QWidget* parent = nullptr);
    CapturePage* capturePage() const { return capture_; }
    // Opens a perf.data (from the command line, File > Open or a drop) in its own tab.
    TraceFilePage* openFile(const QString& path);
    TraceFilePage* currentTracePage() const;
    // Before and after: a tab comparing two files (each loaded on a worker
    // thread as `auxscope compare A B` loads it: the whole recording), or two
    // sides already at hand (two ranges of one file).
    ComparePane* compareFiles(const QString& a, const QString& b);
    ComparePane* compareSides(const CompareSideData& a, const CompareSideData& b, const QString& title);
    // File > Compare with… (the current trace page's file is A; asks for B); a
    // file dropped with Ctrl on a trace page is B too.
    void compareDialog();
    // Two captures' timelines in one tab, B's under A's, zoomed and panned in
    // step (File > Timelines side by side with…, or the compare pane's button).
    SideBySidePage* sideBySide(const QString& a, const QString& b);
    void sideBySideDialog();

    // Captures made in this window that the person has neither saved, kept nor
    // discarded (issue 27): closing their tab or the window asks about them.
    QStringList unkeptCaptures() const;
    // What closing does with them; the person answers in a QMessageBox
    // (object name "keepCapturesBox", buttons "Keep", "Discard", "Cancel").
    enum class KeepChoice { Keep, Discard, Cancel };
    KeepChoice askKeep(const QStringList& files, bool wholeWindow);
    // File > Open Recent (object name "recentMenu"), rebuilt from the list.
    QMenu* recentMenu() const { return recentMenu_; }

    // Help > Open an example (object names "exampleIntelPt", "exampleCoreSight"),
    // and the capture page's "Open an example": the example is made (or reused)
    // by ExampleMaker off the GUI thread, a busy bar on the status bar meanwhile
    // (object name "exampleBusy"); then it opens like File > Open, with the tour
    // of the timeline's keys on its page. A failure shows in a box that waits
    // on nobody (object name "exampleErrorBox") with the generator's stderr.
    void openExample(ExampleKind kind);
    QMessageBox* exampleErrorBox() const;

signals:
    // The example opened in `page` (exampleFailed: why it did not).
    void exampleOpened(ExampleKind kind, TraceFilePage* page);
    void exampleFailed(ExampleKind kind, const QString& error);

public slots:
    void openDialog();
    void saveCaptureDialog();
    void exportDialog();
    // Closes without asking (SIGTERM, SIGINT, SIGHUP): a running capture is
    // finished first, and every capture is kept.
    void quitKeepingCaptures();
    void rebuildRecentMenu();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void updateActions();
    void closeTab(int index);
    void discard(const QStringList& files);
    void recentChanged();  // the menu and the capture page's list

    QTabWidget* tabs_ = nullptr;
    CapturePage* capture_ = nullptr;
    QAction* saveCaptureAction_ = nullptr;
    QAction* exportAction_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    // On the status bar, always: the file the current tab shows, or the one the
    // capture page writes (object name "statusFile").
    QLabel* statusFile_ = nullptr;
    QSet<QString> unkept_;
    // Close was asked while capturing: the capture is stopped, its file
    // completed and kept, then the window closes.
    bool closeAfterCapture_ = false;
    bool keepWithoutAsking_ = false;
    QAction* symbolsAction_ = nullptr;     // File > Symbols & binaries… of the current file
    QAction* compareAction_ = nullptr;     // File > Compare with…
    QAction* sideBySideAction_ = nullptr;  // File > Timelines side by side with…
    QProgressBar* exampleBusy_ = nullptr;
    int examplesMaking_ = 0;
    QPointer<QMessageBox> exampleError_;
};

}  // namespace auxscope
