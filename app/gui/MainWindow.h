// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// app/gui/: the Qt Widgets front end, one folder per concern (timeline/,
// analysis/, trace/, capture/; each one's main header says what it owns and
// may include). Here, on top of them, the main window (the capture page and a
// trace page per file opened, menus, drag and drop) and the entry the
// `auxscope` binary loads (Gui.h); they may include every folder.
#include <QMainWindow>

class QTabWidget;

namespace auxscope {

// Whether the GUI runs with root's user id, and what it then says (one line on
// stderr at start, and a dismissible banner, object name "rootWarning", on the
// main window's status bar).
bool guiRunsAsRoot();
const char* rootWarningText();

class CapturePage;
class TraceFilePage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    CapturePage* capturePage() const { return capture_; }
    // Opens a perf.data (from the command line, File > Open or a drop) in its own tab.
    TraceFilePage* openFile(const QString& path);
    TraceFilePage* currentTracePage() const;

public slots:
    void openDialog();
    void saveCaptureDialog();
    void exportDialog();

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    void updateActions();

    QTabWidget* tabs_ = nullptr;
    CapturePage* capture_ = nullptr;
    QAction* saveCaptureAction_ = nullptr;
    QAction* exportAction_ = nullptr;
    QAction* symbolsAction_ = nullptr;  // File > Symbols & binaries… of the current file
};

}  // namespace auxscope
