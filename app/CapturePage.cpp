// SPDX-License-Identifier: GPL-3.0-or-later
#include "CapturePage.h"

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLineSeries>
#include <QListWidget>
#include <QPointer>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QValueAxis>

#include <cmath>

#include "PerfEvent.h"
#include "Tracefs.h"

namespace auxscope {
namespace {

enum Column {
    ColCpu,
    ColFill,
    ColAuxFill,
    ColRate,
    ColRecords,
    ColLost,
    ColLostSamples,
    ColKernelLost,
    ColThrottle,
    ColCount
};

QString humanRate(double bytesPerSecond) {
    const char* units[] = {"B/s", "KiB/s", "MiB/s", "GiB/s"};
    int u = 0;
    while (bytesPerSecond >= 1024 && u < 3)
        bytesPerSecond /= 1024, ++u;
    return QString::number(bytesPerSecond, 'f', u ? 1 : 0) + " " + units[u];
}

QChartView* makeChart(const QString& title, const QString& yTitle, QValueAxis*& x, QValueAxis*& y) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignRight);
    x = new QValueAxis;
    x->setTitleText("seconds since start");
    x->setLabelFormat("%.0f");
    x->setRange(0, 60);
    y = new QValueAxis;
    y->setTitleText(yTitle);
    y->setRange(0, 1);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(180);
    return view;
}

// Rounds an axis maximum up to 1, 2 or 5 times a power of ten.
double niceCeil(double v) {
    if (v <= 0) return 1;
    double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (v <= m * p) return m * p;
    return 10 * p;
}

QString captureFolder() {
    return QDir::temp().filePath(QString("auxscope-%1").arg(QCoreApplication::applicationPid()));
}

}  // namespace

CapturePage::CapturePage(QWidget* parent) : QWidget(parent), pmus_(PmuRegistry::discover()) {
    auto* form = new QFormLayout;
    targetKind_ = new QComboBox;
    targetKind_->setObjectName("targetKind");
    targetKind_->addItems({"System-wide (all CPUs)", "CPU list", "Existing process (PID)", "Launch command"});
    targetValue_ = new QLineEdit;
    targetValue_->setObjectName("targetValue");
    auto* targetRow = new QHBoxLayout;
    targetRow->addWidget(targetKind_);
    targetRow->addWidget(targetValue_, 1);
    form->addRow("Target", targetRow);

    events_ = new QLineEdit;
    events_->setObjectName("events");
    events_->setPlaceholderText(
        "cpu-clock (default); e.g. raw_syscalls:sys_enter, page-faults, pmu/term=1/u");
    tracepointButton_ = new QPushButton("Tracepoint…");
    tracepointButton_->setObjectName("tracepointButton");
    auto* eventRow = new QHBoxLayout;
    eventRow->addWidget(events_, 1);
    eventRow->addWidget(tracepointButton_);
    form->addRow("Events", eventRow);
    auto tracefs = Tracefs::locate();
    if (!tracefs) {
        tracepointButton_->setEnabled(false);
        tracepointButton_->setToolTip(QString::fromStdString(tracefs.error().message));
    }

    bufferPages_ = new QComboBox;
    bufferPages_->setObjectName("bufferPages");
    for (size_t pages = 16; pages <= 65536; pages *= 2) {
        QString label =
            QString("%1 pages (%2 per CPU)").arg(pages).arg(humanRate(double(pages * pageSize())).chopped(2));
        if (pages == kPerfDefaultDataPages) label += " — perf's default";
        if (pages == kDefaultDataPages) label += " — default";
        bufferPages_->addItem(label, qulonglong(pages));
        if (pages == kDefaultDataPages) bufferPages_->setCurrentIndex(bufferPages_->count() - 1);
    }
    form->addRow("Data ring", bufferPages_);

    startButton_ = new QPushButton("Start");
    startButton_->setObjectName("startButton");
    stopButton_ = new QPushButton("Stop");
    stopButton_->setObjectName("stopButton");
    stopButton_->setEnabled(false);
    status_ = new QLabel("Idle.");
    status_->setObjectName("status");
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(startButton_);
    buttons->addWidget(stopButton_);
    buttons->addWidget(status_, 1);

    auto* controls = new QGroupBox("Capture");
    auto* controlsLayout = new QVBoxLayout(controls);
    controlsLayout->addLayout(form);
    controlsLayout->addLayout(buttons);

    cpuTable_ = new QTableWidget(0, ColCount);
    cpuTable_->setObjectName("cpuTable");
    cpuTable_->setHorizontalHeaderLabels({"CPU", "Data ring fill", "AUX ring fill", "Throughput", "Records",
                                          "Lost records", "Lost samples", "Kernel lost", "Throttles"});
    cpuTable_->horizontalHeaderItem(ColKernelLost)
        ->setToolTip(
            "The kernel's own count of records it could not write (PERF_FORMAT_LOST). It leads the "
            "LOST records, which the kernel writes once space is free again.");
    cpuTable_->verticalHeader()->setVisible(false);
    cpuTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    cpuTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);

    throughputView_ = makeChart("Throughput per CPU (last 60 s)", "MiB/s", throughputX_, throughputY_);
    throughputView_->setObjectName("throughputChart");
    lostView_ = makeChart("Lost records + samples per CPU (cumulative)", "lost", lostX_, lostY_);
    lostView_->setObjectName("lostChart");

    auto* charts = new QSplitter(Qt::Horizontal);
    charts->addWidget(throughputView_);
    charts->addWidget(lostView_);
    auto* split = new QSplitter(Qt::Vertical);
    split->addWidget(cpuTable_);
    split->addWidget(charts);
    split->setStretchFactor(1, 2);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(controls);
    layout->addWidget(split, 1);

    timer_ = new QTimer(this);
    timer_->setInterval(100);  // 10 Hz: the charts are replaced at most this often
    connect(timer_, &QTimer::timeout, this, &CapturePage::refresh);
    connect(startButton_, &QPushButton::clicked, this, &CapturePage::start);
    connect(stopButton_, &QPushButton::clicked, this, &CapturePage::stop);
    connect(targetKind_, &QComboBox::currentIndexChanged, this, &CapturePage::targetKindChanged);
    connect(tracepointButton_, &QPushButton::clicked, this, &CapturePage::chooseTracepoint);
    targetKindChanged(0);

    // Show the CPUs before the first capture so the page is not empty.
    history_.reset(onlineCpus().size());
    rebuildCpuRows();
    if (auto denied = perfCaptureUnavailableReason())
        setStatus("Capture is not permitted here: " + QString::fromStdString(*denied), true);
}

CapturePage::~CapturePage() {
    if (session_) {
        session_->requestStop();
        session_->wait();
    }
    if (finishThread_.joinable()) finishThread_.join();
    // Unsaved captures live in a per-process temporary folder; they go with the window.
    QDir(captureFolder()).removeRecursively();
}

void CapturePage::targetKindChanged(int index) {
    static const char* placeholders[] = {"", "CPU list, e.g. 0-3,6", "PID of a running process",
                                         "command line, e.g. ./myprog --arg"};
    targetValue_->setEnabled(index != 0);
    targetValue_->setPlaceholderText(placeholders[index]);
}

void CapturePage::chooseTracepoint() {
    QDialog dialog(this);
    dialog.setWindowTitle("Add tracepoint");
    auto* filter = new QLineEdit;
    filter->setPlaceholderText("filter, e.g. sched: or syscalls");
    auto* list = new QListWidget;
    for (auto& tp : Tracefs::listAll())
        list->addItem(QString::fromStdString(tp));
    list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    connect(filter, &QLineEdit::textChanged, list, [list](const QString& text) {
        for (int i = 0; i < list->count(); ++i)
            list->item(i)->setHidden(!list->item(i)->text().contains(text, Qt::CaseInsensitive));
    });
    auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(box, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(box, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(filter);
    layout->addWidget(list);
    layout->addWidget(box);
    dialog.resize(480, 560);
    if (dialog.exec() != QDialog::Accepted) return;
    QStringList chosen;
    for (auto* item : list->selectedItems())
        chosen << item->text();
    if (chosen.isEmpty()) return;
    QString text = events_->text().trimmed();
    events_->setText(text.isEmpty() ? chosen.join(",") : text + "," + chosen.join(","));
}

Expected<CaptureOptions> CapturePage::optionsFromForm() const {
    CaptureOptions o;
    const QString value = targetValue_->text().trimmed();
    switch (targetKind_->currentIndex()) {
        case 0:
            o.target = TargetKind::SystemWide;
            break;
        case 1: {
            auto cpus = parseCpuList(value.toStdString());
            if (!cpus) return cpus.error();
            o.target = TargetKind::CpuList;
            o.cpus = cpus.value();
            break;
        }
        case 2: {
            bool ok = false;
            int pid = value.toInt(&ok);
            if (!ok || pid <= 0) return makeError("enter the PID of a running process");
            o.target = TargetKind::Process;
            o.pid = pid;
            break;
        }
        case 3: {
            const QStringList argv = QProcess::splitCommand(value);
            if (argv.isEmpty()) return makeError("enter a command line to launch");
            o.target = TargetKind::Command;
            for (auto& a : argv)
                o.command.push_back(a.toStdString());
            break;
        }
    }
    const QString events = events_->text().trimmed();
    if (!events.isEmpty()) o.events.push_back(events.toStdString());
    o.dataPages = size_t(bufferPages_->currentData().toULongLong());
    return o;
}

void CapturePage::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #b00020;" : "");
    emit statusMessage(text);
}

void CapturePage::setFormEnabled(bool enabled) {
    for (QWidget* w : std::initializer_list<QWidget*>{targetKind_, events_, bufferPages_, startButton_})
        w->setEnabled(enabled);
    targetValue_->setEnabled(enabled && targetKind_->currentIndex() != 0);
    tracepointButton_->setEnabled(enabled && Tracefs::locate().ok());
}

void CapturePage::start() {
    if (session_) return;
    auto opts = optionsFromForm();
    if (!opts) {
        setStatus("Cannot start: " + QString::fromStdString(opts.error().message), true);
        return;
    }
    auto session = CaptureSession::open(*opts, pmus_);
    if (!session) {
        setStatus("Cannot start: " + QString::fromStdString(session.error().message), true);
        return;
    }
    // Every capture streams into a perf.data while it runs (File > Save capture as
    // keeps it); the drain thread only hands records to the file's queue.
    static int captureNumber = 0;
    QDir().mkpath(captureFolder());
    const QString path = QDir(captureFolder()).filePath(QString("capture-%1.data").arg(++captureNumber));
    PerfDataWriterCaptureOptions fileOptions;
    fileOptions.path = path.toStdString();
    fileOptions.version = std::string("auxscope ") + AUXSCOPE_VERSION;
    fileOptions.cmdline = {"auxscope", "(GUI capture)", describeTarget(*opts)};
    auto file = PerfDataWriterCapture::open(**session, fileOptions);
    if (!file) {
        setStatus("Cannot start: " + QString::fromStdString(file.error().message), true);
        return;
    }
    if (auto r = (*session)->start(); !r) {
        setStatus("Cannot start: " + QString::fromStdString(r.error().message), true);
        return;
    }
    session_ = std::move(session.value());
    file_ = std::move(file.value());
    captureFile_ = path;
    stopping_ = false;
    history_.reset(session_->cpus().size());
    rebuildCpuRows();
    rebuildSeries();
    setFormEnabled(false);
    stopButton_->setEnabled(true);
    setStatus("Capturing " + QString::fromStdString(describeTarget(*opts)) + "…");
    timer_->start();
    emit captureStarted();
}

void CapturePage::stop() {
    if (!session_ || stopping_) return;
    stopping_ = true;
    stopButton_->setEnabled(false);
    session_->requestStop();  // returns at once; refresh() notices when the drain thread is done
    setStatus("Stopping…");
}

void CapturePage::rebuildCpuRows() {
    const auto cpus = session_ ? session_->cpus() : onlineCpus();
    cpuTable_->setRowCount(int(cpus.size()));
    for (int row = 0; row < int(cpus.size()); ++row) {
        cpuTable_->setItem(row, ColCpu, new QTableWidgetItem(QString::number(cpus[size_t(row)])));
        auto* fill = new QProgressBar;
        fill->setRange(0, 1000);
        fill->setFormat("%p%");
        fill->setValue(0);
        cpuTable_->setCellWidget(row, ColFill, fill);
        auto* aux = new QProgressBar;
        aux->setRange(0, 1000);
        aux->setValue(0);
        aux->setEnabled(false);
        aux->setFormat("no AUX event");
        aux->setTextVisible(true);
        cpuTable_->setCellWidget(row, ColAuxFill, aux);
        for (int col = ColRate; col < ColCount; ++col)
            cpuTable_->setItem(row, col, new QTableWidgetItem("0"));
    }
}

void CapturePage::rebuildSeries() {
    for (QChartView* view : {throughputView_, lostView_})
        view->chart()->removeAllSeries();
    throughputSeries_.clear();
    lostSeries_.clear();
    const auto& cpus = session_->cpus();
    for (int cpu : cpus) {
        auto* t = new QLineSeries;
        t->setName(QString("cpu %1").arg(cpu));
        throughputView_->chart()->addSeries(t);
        t->attachAxis(throughputX_);
        t->attachAxis(throughputY_);
        throughputSeries_.push_back(t);
        auto* l = new QLineSeries;
        l->setName(QString("cpu %1").arg(cpu));
        lostView_->chart()->addSeries(l);
        l->attachAxis(lostX_);
        l->attachAxis(lostY_);
        lostSeries_.push_back(l);
    }
}

void CapturePage::refresh() {
    if (!session_) return;
    const auto snaps = session_->stats().snapshotAll();
    const double t =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - session_->startTime()).count();
    history_.add(t, snaps);

    for (int row = 0; row < int(snaps.size()) && row < cpuTable_->rowCount(); ++row) {
        const auto& s = snaps[size_t(row)];
        if (auto* bar = qobject_cast<QProgressBar*>(cpuTable_->cellWidget(row, ColFill))) {
            bar->setValue(int(s.fillPeakPercent * 10));
            bar->setToolTip(QString("peak fill in the last interval of a %1 ring")
                                .arg(humanRate(double(s.ringBytes)).chopped(2)));
        }
        if (auto* bar = qobject_cast<QProgressBar*>(cpuTable_->cellWidget(row, ColAuxFill));
            bar && s.hasAux) {
            bar->setEnabled(true);
            bar->setFormat("%p%");
            bar->setValue(int(s.auxFillPercent * 10));
        }
        cpuTable_->item(row, ColRate)->setText(humanRate(s.bytesPerSecond));
        cpuTable_->item(row, ColRecords)->setText(QString::number(s.totals.records));
        cpuTable_->item(row, ColLost)->setText(QString::number(s.totals.lostRecords));
        cpuTable_->item(row, ColLostSamples)->setText(QString::number(s.totals.lostSamples));
        cpuTable_->item(row, ColKernelLost)
            ->setText(s.kernelLostAvailable ? QString::number(s.totals.kernelLost) : "n/a");
        cpuTable_->item(row, ColThrottle)->setText(QString::number(s.totals.throttles));
    }
    for (size_t i = 0; i < throughputSeries_.size() && i < history_.cpuCount(); ++i) {
        throughputSeries_[i]->replace(history_.throughput(i));
        lostSeries_[i]->replace(history_.lost(i));
    }
    const double lo = std::max(0.0, t - history_.window());
    const double hi = std::max(history_.window(), t);
    throughputX_->setRange(lo, hi);
    lostX_->setRange(lo, hi);
    throughputY_->setRange(0, niceCeil(history_.maxThroughput()));
    lostY_->setRange(0, niceCeil(history_.maxLost()));

    if (session_->finished() && !finishing_) beginFinishing();
}

void CapturePage::beginFinishing() {
    timer_->stop();
    finishing_ = true;
    session_->wait();  // the drain thread has ended: this returns at once
    lastSummary_ = session_->summary();
    setStatus("Writing " + captureFile_ + "…");
    // Completing the file (queued records, features, build-ids) touches the disk:
    // not on the GUI thread.
    if (finishThread_.joinable()) finishThread_.join();
    QPointer<CapturePage> self(this);
    finishThread_ = std::thread([self, file = file_] {
        auto done = file->finish();
        QString error = done ? QString() : QString::fromStdString(done.error().message);
        QMetaObject::invokeMethod(
            qApp,
            [self, error] {
                if (self) self->fileFinished(error);
            },
            Qt::QueuedConnection);
    });
}

void CapturePage::fileFinished(const QString& error) {
    const CpuCounters total = lastSummary_.total();
    QString text = QString("Stopped after %1 s: %2 records, %3 lost records, %4 lost samples.")
                       .arg(lastSummary_.seconds, 0, 'f', 1)
                       .arg(total.records)
                       .arg(total.lostRecords)
                       .arg(total.lostSamples);
    for (auto& m : lastSummary_.messages)
        text += "\n" + QString::fromStdString(m);
    for (auto& l : lastSummary_.sinkLosses)
        text += QString("\nfile writer dropped %1 records of cpu %2: %3")
                    .arg(l.records)
                    .arg(l.cpu)
                    .arg(QString::fromStdString(l.reason));
    const auto report = file_->report();
    if (error.isEmpty()) {
        lastCaptureFile_ = captureFile_;
        text += QString("\nCapture written to %1 (%2 bytes); File > Save capture as… keeps it.")
                    .arg(captureFile_)
                    .arg(report.fileBytes);
    } else {
        text += "\nThe capture file could not be completed: " + error;
    }
    session_.reset();
    file_.reset();
    finishing_ = false;
    setFormEnabled(true);
    stopButton_->setEnabled(false);
    setStatus(text, !error.isEmpty());
    emit captureFinished();
    if (error.isEmpty()) emit captureFileReady(lastCaptureFile_);
}

bool CapturePage::saveCaptureAs(const QString& path) {
    if (lastCaptureFile_.isEmpty()) return false;
    if (QFileInfo(path).absoluteFilePath() == QFileInfo(lastCaptureFile_).absoluteFilePath()) return true;
    QFile::remove(path);
    if (!QFile::copy(lastCaptureFile_, path)) {
        setStatus("Cannot save the capture to " + path, true);
        return false;
    }
    setStatus("Capture saved to " + path);
    return true;
}

}  // namespace auxscope
