// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture page: target, events and buffer size; Start and Stop; live
// per-CPU ring fill bars and lost counters; charts of throughput and lost
// records per CPU over the last 60 s. A 10 Hz timer reads lock-free statistics
// snapshots, so the GUI thread never waits on the drain thread.
#include <QWidget>

#include <memory>

#include "CaptureSession.h"
#include "LiveHistory.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTimer;
class QChartView;
class QLineSeries;
class QValueAxis;

namespace auxscope {

class CapturePage : public QWidget {
    Q_OBJECT
public:
    explicit CapturePage(QWidget* parent = nullptr);
    ~CapturePage() override;

    bool capturing() const { return session_ != nullptr; }
    const LiveHistory& history() const { return history_; }
    // The summary of the last finished capture (empty target before the first).
    const CaptureSummary& lastSummary() const { return lastSummary_; }

public slots:
    void start();
    void stop();

signals:
    void captureStarted();
    void captureFinished();
    void statusMessage(const QString& text);

private slots:
    void refresh();
    void targetKindChanged(int index);
    void chooseTracepoint();

private:
    Expected<CaptureOptions> optionsFromForm() const;
    void rebuildCpuRows();
    void rebuildSeries();
    void setStatus(const QString& text, bool error = false);
    void setFormEnabled(bool enabled);

    QComboBox* targetKind_ = nullptr;
    QLineEdit* targetValue_ = nullptr;
    QLineEdit* events_ = nullptr;
    QPushButton* tracepointButton_ = nullptr;
    QComboBox* bufferPages_ = nullptr;
    QPushButton* startButton_ = nullptr;
    QPushButton* stopButton_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* cpuTable_ = nullptr;
    QChartView* throughputView_ = nullptr;
    QChartView* lostView_ = nullptr;
    QValueAxis* throughputX_ = nullptr;
    QValueAxis* throughputY_ = nullptr;
    QValueAxis* lostX_ = nullptr;
    QValueAxis* lostY_ = nullptr;
    std::vector<QLineSeries*> throughputSeries_;
    std::vector<QLineSeries*> lostSeries_;
    QTimer* timer_ = nullptr;

    PmuRegistry pmus_;
    std::unique_ptr<CaptureSession> session_;
    LiveHistory history_;
    CaptureSummary lastSummary_;
    bool stopping_ = false;
};

}  // namespace auxscope
