// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
#include <QMainWindow>

namespace auxscope {

class CapturePage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    CapturePage* capturePage() const { return capture_; }
    // A trace file given on the command line or dropped on the window.
    void openFile(const QString& path);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    CapturePage* capture_ = nullptr;
};

}  // namespace auxscope
