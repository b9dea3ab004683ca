// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A perf.data opened in the GUI: what it holds (header, events, features, per-CPU
// record counts, losses, AUX flags, every problem the reader found with its
// offset) and export to Perfetto or CSV. The file is read on a worker thread so
// a large file never freezes the window.
#include <QWidget>

#include <memory>

class QLabel;
class QPushButton;
class QTreeWidget;
class QTreeWidgetItem;

namespace auxscope {

class PerfDataReader;

class TraceFilePage : public QWidget {
    Q_OBJECT
public:
    explicit TraceFilePage(const QString& path, QWidget* parent = nullptr);
    ~TraceFilePage() override;

    const QString& path() const { return path_; }
    bool loaded() const { return reader_ != nullptr; }
    bool failed() const { return failed_; }
    QTreeWidget* tree() const { return tree_; }

public slots:
    // Without a path, ask for one.
    bool exportTo(const QString& format, QString outPath = {});

signals:
    void loadFinished(bool ok);
    void statusMessage(const QString& text);

private:
    void populate();
    QTreeWidgetItem* section(const QString& title);

    QString path_;
    QLabel* status_ = nullptr;
    QTreeWidget* tree_ = nullptr;
    QPushButton* exportPerfetto_ = nullptr;
    QPushButton* exportCsv_ = nullptr;
    std::unique_ptr<PerfDataReader> reader_;
    bool failed_ = false;
};

}  // namespace auxscope
