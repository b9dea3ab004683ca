// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The trace page's exports, on a worker thread with a progress bar and a
// Cancel button (one at a time; Cancel leaves no file: the exporter removes
// what it wrote): the whole file, or a time range of the timeline's data (run
// slices, samples, losses and decoded spans overlapping it, clipped to it), to
// Perfetto or CSV. Without a path, a dialog asks for one.
#include <QObject>
#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "Result.h"

class QProgressBar;
class QPushButton;
class QWidget;

namespace auxscope {

class AuxTraceSession;
class PerfDataReader;
struct AuxTraceSpans;
struct TimelineData;

class TraceExporter : public QObject {
    Q_OBJECT
public:
    // `owner`: the page (the dialogs' parent); `input`: the file exported (names the suggested output).
    TraceExporter(QWidget* owner, const QString& input);

    QProgressBar* progress() const { return progress_; }
    QPushButton* cancelButton() const { return cancel_; }
    bool exporting() const { return exporting_; }
    void cancel();

    // What an export ended with: its line for the page (`error`: shown as one), and whether it wrote.
    using Done = std::function<void(const QString& text, bool ok, bool error)>;
    // The whole file (and `decoded`'s spans, of kind `traceKind`); false: not started.
    bool exportFile(const QString& format, QString outPath, std::shared_ptr<PerfDataReader> reader,
                    std::shared_ptr<const AuxTraceSpans> decoded, const QString& traceKind, Done done);
    // [begin, end) of `data` (the timeline's; `session` names the threads' processes); false: not started.
    bool exportRange(const QString& format, uint64_t begin, uint64_t end, QString outPath,
                     std::shared_ptr<PerfDataReader> reader, std::shared_ptr<const TimelineData> data,
                     std::shared_ptr<AuxTraceSession> session, Done done);

signals:
    // An export started (the page's export buttons wait) or ended.
    void busyChanged(bool busy);

private:
    // Runs `job` (which exports with the progress callback it gets) on a worker thread;
    // `done` gets its result on the GUI thread.
    using ExportJob = std::function<Expected<void>(const std::function<bool(uint64_t, uint64_t)>&)>;
    bool start(ExportJob job, std::function<void(const Expected<void>&)> done);

    QWidget* owner_;
    QString input_;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_ = nullptr;
    std::shared_ptr<std::atomic<bool>> cancelFlag_;
    bool exporting_ = false;
};

}  // namespace auxscope
