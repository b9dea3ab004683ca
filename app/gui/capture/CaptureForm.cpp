// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/CaptureForm.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "PerfEvent.h"
#include "Tracefs.h"
#include "gui/capture/AuxOptionsPanel.h"
#include "gui/capture/LiveStatsView.h"
#include "gui/common/ExampleMaker.h"
#include "gui/common/WindowMemory.h"

namespace auxscope {

CaptureForm::CaptureForm(const PmuRegistry& pmus, QWidget* owner)
    : QObject(owner), owner_(owner), pmus_(pmus) {
    form_ = new QFormLayout;
    targetKind_ = new QComboBox;
    targetKind_->setObjectName("targetKind");
    targetKind_->addItems({"System-wide (all CPUs)", "CPU list", "Existing process (PID)", "Launch command",
                           "Replay a recorded trace (not live hardware)"});
    targetKind_->setItemData(4,
                             "Feeds the AUX trace and sideband of a perf.data through simulated CPUs, so the "
                             "live path (drain, loss counters, file) runs without trace hardware",
                             Qt::ToolTipRole);
    targetValue_ = new QLineEdit;
    targetValue_->setObjectName("targetValue");
    auto* targetRow = new QHBoxLayout;
    targetRow->addWidget(targetKind_);
    targetRow->addWidget(targetValue_, 1);
    form_->addRow("Target", targetRow);

    replayBrowse_ = new QPushButton("Browse…");
    replayBrowse_->setObjectName("replayBrowse");
    replayExample_ = new QPushButton("Example");
    replayExample_->setObjectName("replayExample");
    replayExample_->setToolTip(
        "Replay the Intel PT example (made by the bundled synthesizer auxscope-ptsynth, no trace hardware "
        "needed): the live AUX path and its decode while capturing");
    connect(replayExample_, &QPushButton::clicked, this, &CaptureForm::replayExample);
    replaySpeed_ = new QComboBox;
    replaySpeed_->setObjectName("replaySpeed");
    replaySpeed_->addItem("recorded speed", "1");
    replaySpeed_->addItem("10× faster", "10");
    replaySpeed_->addItem("100× faster", "100");
    replaySpeed_->addItem("10× slower", "0.1");
    replaySpeed_->addItem("as fast as the drain takes it", "max");
    // The examples last milliseconds as recorded: slowed down, the live path can be watched.
    replaySpeed_->addItem("slow motion (a short recording made to last 5 s)", "stretch:5");
    replaySpeed_->setItemData(replaySpeed_->count() - 1,
                              "A recording shorter than 5 s replayed as much slower as makes it last 5 s "
                              "(longer ones at the recorded speed)",
                              Qt::ToolTipRole);
    replaySnapshot_ = new QCheckBox("flight-recorder (snapshot) mode");
    replaySnapshot_->setObjectName("replaySnapshot");
    replayLoop_ = new QCheckBox("loop");
    replayLoop_->setObjectName("replayLoop");
    replayRow_ = new QWidget;
    auto* replayLayout = new QHBoxLayout(replayRow_);
    replayLayout->setContentsMargins(0, 0, 0, 0);
    replayLayout->addWidget(replayBrowse_);
    replayLayout->addWidget(replayExample_);
    replayLayout->addWidget(new QLabel("Speed"));
    replayLayout->addWidget(replaySpeed_);
    replayLayout->addWidget(replaySnapshot_);
    replayLayout->addWidget(replayLoop_);
    replayLayout->addStretch(1);
    form_->addRow("Replay", replayRow_);
    connect(replayBrowse_, &QPushButton::clicked, this, [this] {
        const QString f = QFileDialog::getOpenFileName(owner_, "Replay a recorded trace",
                                                       window_memory::lastFolder("replay"),
                                                       "perf.data files (*.data perf.data*);;All files (*)");
        window_memory::setLastFolder("replay", f);
        if (!f.isEmpty()) targetValue_->setText(f);
    });

    events_ = new QLineEdit;
    events_->setObjectName("events");
    events_->setPlaceholderText(
        "cpu-clock (default); e.g. raw_syscalls:sys_enter, page-faults, pmu/term=1/u");
    tracepointButton_ = new QPushButton("Tracepoint…");
    tracepointButton_->setObjectName("tracepointButton");
    auto* eventRow = new QHBoxLayout;
    eventRow->addWidget(events_, 1);
    eventRow->addWidget(tracepointButton_);
    form_->addRow("Events", eventRow);
    auto tracefs = Tracefs::locate();
    if (!tracefs) {
        tracepointButton_->setEnabled(false);
        tracepointButton_->setToolTip(QString::fromStdString(tracefs.error().message));
    }

    // Call stacks on every sampling event's samples, as `auxscope record -g` /
    // `--call-graph MODE` take them (CaptureOptions::callGraph).
    callGraph_ = new QComboBox;
    callGraph_->setObjectName("callGraph");
    callGraph_->addItem("None", int(CallGraphMode::None));
    callGraph_->addItem("Frame pointers (-g)", int(CallGraphMode::FramePointer));
    callGraph_->addItem("DWARF", int(CallGraphMode::Dwarf));
    callGraph_->addItem("LBR", int(CallGraphMode::Lbr));
    callGraph_->setItemData(0, "Samples without call stacks", Qt::ToolTipRole);
    callGraph_->setItemData(1,
                            "--call-graph fp: the kernel walks the frame pointers at each sample, kernel and "
                            "user part; code built without frame pointers gives short user stacks",
                            Qt::ToolTipRole);
    callGraph_->setItemData(2,
                            "--call-graph dwarf: the user registers and a copy of the user stack with each "
                            "sample, unwound later with the binaries' CFI (works without frame pointers; "
                            "costs the stack size per sample in the ring and the file)",
                            Qt::ToolTipRole);
    callGraph_->setToolTip("Call stacks on every sample (auxscope record -g / --call-graph)");
    dwarfStack_ = new QComboBox;
    dwarfStack_->setObjectName("dwarfStackBytes");
    dwarfStack_->setToolTip(
        "Bytes of user stack the kernel copies with each sample (--call-graph dwarf,SIZE); frames beyond "
        "it are not unwound");
    for (uint32_t bytes : {1024u, 2048u, 4096u, 8192u, 16384u, 32768u, kMaxDwarfStackBytes}) {
        QString label = bytes == kMaxDwarfStackBytes ? QString("%1 bytes (the most)").arg(bytes)
                                                     : QString("%1 KiB").arg(bytes / 1024);
        if (bytes == kDefaultDwarfStackBytes) label += " — default";
        dwarfStack_->addItem(label, uint(bytes));
        if (bytes == kDefaultDwarfStackBytes) dwarfStack_->setCurrentIndex(dwarfStack_->count() - 1);
    }
    auto* callGraphRow = new QHBoxLayout;
    callGraphRow->addWidget(callGraph_);
    callGraphRow->addWidget(new QLabel("user stack per sample"));
    callGraphRow->addWidget(dwarfStack_);
    callGraphRow->addStretch(1);
    form_->addRow("Call stacks", callGraphRow);

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
    form_->addRow("Data ring", bufferPages_);
    overwrite_ = new QCheckBox("Sideband flight recorder (overwrite, like perf --overwrite)");
    overwrite_->setObjectName("overwrite");
    overwrite_->setToolTip(
        "The data ring is written backward and overwritten, keeping the newest history at no drain "
        "cost; records reach the capture only at snapshots (Take snapshot) and at Stop. Not with an "
        "AUX event");
    form_->addRow("", overwrite_);
    auxPanel_ = new AuxOptionsPanel(pmus);
    liveDecode_ = new QCheckBox("Decode the AUX trace while capturing (Intel PT, CoreSight, Arm SPE)");
    liveDecode_->setObjectName("liveDecode");
    liveDecode_->setChecked(true);
    liveDecode_->setToolTip(
        "Twice a second, the newest trace of each CPU (at most 1 MB each: the rest is skipped, never "
        "queued) is decoded into call stacks and shown below. The capture file keeps every byte; "
        "open it afterwards for the whole decode.");
    form_->addRow("", liveDecode_);

    connect(targetKind_, &QComboBox::currentIndexChanged, this, &CaptureForm::targetKindChanged);
    connect(tracepointButton_, &QPushButton::clicked, this, &CaptureForm::chooseTracepoint);
    connect(callGraph_, &QComboBox::currentIndexChanged, this, &CaptureForm::callGraphChanged);
    // LBR depends on the events (hardware ones of the core PMU only): checked as they change.
    connect(events_, &QLineEdit::textChanged, this, &CaptureForm::checkLbr);
    connect(auxPanel_, &AuxOptionsPanel::changed, this, &CaptureForm::checkLbr);
    checkLbr();
    callGraphChanged();
}

void CaptureForm::checkLbr() {
    CaptureOptions o;
    const QString events = events_->text().trimmed();
    if (!events.isEmpty()) o.events.push_back(events.toStdString());
    if (auto aux = auxPanel_->selection(); aux && *aux) o.events.insert(o.events.begin(), (*aux)->eventSpec);
    o.callGraph.mode = CallGraphMode::Lbr;
    auto accepted = checkCallGraphFor(o, pmus_);
    lbrRefusal_ = accepted ? QString() : QString::fromStdString(accepted.error().message);
    auto* model = qobject_cast<QStandardItemModel*>(callGraph_->model());
    if (QStandardItem* lbr = model ? model->item(3) : nullptr) lbr->setEnabled(lbrRefusal_.isEmpty());
    callGraph_->setItemData(
        3,
        lbrRefusal_.isEmpty()
            ? QString("--call-graph lbr: Intel's Last Branch Records as the user call stack (hardware "
                      "events only), the kernel part as a callchain")
            : "Not here: " + lbrRefusal_,
        Qt::ToolTipRole);
}

void CaptureForm::callGraphChanged() {
    const bool dwarf = CallGraphMode(callGraph_->currentData().toInt()) == CallGraphMode::Dwarf;
    dwarfStack_->setEnabled(dwarf && callGraph_->isEnabled());
}

void CaptureForm::showTargetKind() {
    targetKindChanged(targetKind_->currentIndex());
}

void CaptureForm::targetKindChanged(int index) {
    static const char* placeholders[] = {"", "CPU list, e.g. 0-3,6", "PID of a running process",
                                         "command line, e.g. ./myprog --arg",
                                         "perf.data with AUX trace, e.g. ../shared/data/intel-pt/"
                                         "perf-intel_pt-skylake/perf.data.intel_pt-4.14"};
    targetValue_->setEnabled(index != 0);
    targetValue_->setPlaceholderText(placeholders[index]);
    // The whole row, label too (hiding the widget alone left "Replay" standing alone).
    form_->setRowVisible(replayRow_, index == 4);
    // A replay's events, call stacks and AUX set-up are the recording's.
    events_->setEnabled(index != 4);
    callGraph_->setEnabled(index != 4);
    callGraphChanged();
    auxPanel_->setEnabled(index != 4);
    auxPanel_->setVisible(index != 4);
    emit replayChosen(index == 4);
}

void CaptureForm::replayExample() {
    targetKind_->setCurrentIndex(4);
    replayExample_->setEnabled(false);
    emit statusMessage(QString("Making the %1 to replay…").arg(exampleTitle(ExampleKind::IntelPt)), false);
    ExampleMaker::instance().make(
        ExampleKind::IntelPt, this, [this](const QString& path, const QString& error) {
            replayExample_->setEnabled(true);
            if (!error.isEmpty()) {
                emit statusMessage("Cannot replay the example: " + error, true);
                return;
            }
            targetKind_->setCurrentIndex(4);
            targetValue_->setText(path);
            liveDecode_->setChecked(true);
            // The example lasts milliseconds as recorded: stretched to seconds, it can be watched.
            replaySpeed_->setCurrentIndex(replaySpeed_->findData(QString("stretch:5")));
            emit statusMessage(QString("Ready to replay the %1 (%2): Start feeds it through simulated CPUs, "
                                       "in slow motion, decoding while capturing.")
                                   .arg(exampleTitle(ExampleKind::IntelPt), path),
                               false);
        });
}

void CaptureForm::chooseTracepoint() {
    QDialog dialog(owner_);
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

Expected<CaptureOptions> CaptureForm::options() const {
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
        case 4:
            if (value.isEmpty()) return makeError("choose a perf.data to replay");
            return o;  // the recording decides the rest
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
    o.callGraph.mode = CallGraphMode(callGraph_->currentData().toInt());
    if (o.callGraph.mode == CallGraphMode::Dwarf)
        o.callGraph.dwarfStackBytes = dwarfStack_->currentData().toUInt();
    o.dataPages = size_t(bufferPages_->currentData().toULongLong());
    o.overwrite = overwrite_->isChecked();
    auto aux = auxPanel_->selection();
    if (!aux) return aux.error();
    if (*aux) {
        // The AUX event first: it owns each CPU's ring, as in perf.
        o.events.insert(o.events.begin(), (*aux)->eventSpec);
        o.auxFilter = (*aux)->filter;
        o.auxSnapshot = (*aux)->snapshot;
        o.auxPages = (*aux)->auxPages;
    }
    return o;
}

void CaptureForm::setEnabled(bool enabled) {
    for (QWidget* w : std::initializer_list<QWidget*>{targetKind_, events_, callGraph_, bufferPages_,
                                                      overwrite_, liveDecode_, auxPanel_})
        w->setEnabled(enabled);
    callGraphChanged();
    targetValue_->setEnabled(enabled && targetKind_->currentIndex() != 0);
    tracepointButton_->setEnabled(enabled && Tracefs::locate().ok());
    replayRow_->setEnabled(enabled);
    if (enabled) targetKindChanged(targetKind_->currentIndex());
}

bool CaptureForm::replaySelected() const {
    return targetKind_->currentIndex() == 4;
}

QString CaptureForm::target() const {
    return targetValue_->text().trimmed();
}

bool CaptureForm::replayFlightRecorder() const {
    return replaySnapshot_->isChecked();
}

bool CaptureForm::decodeWhileCapturing() const {
    return liveDecode_->isChecked();
}

Expected<ReplayOptions> CaptureForm::replayOptions(double recordedSeconds) const {
    QString factor = replaySpeed_->currentData().toString();
    if (factor.startsWith("stretch:")) {
        // Never faster than recorded: a long recording plays as recorded.
        const double seconds = factor.mid(8).toDouble();
        factor = recordedSeconds > 0 && recordedSeconds < seconds
                     ? QString::number(recordedSeconds / seconds, 'g', 6)
                     : QString("1");
    }
    auto speed = parseReplaySpeed(factor.toStdString());
    if (!speed) return speed.error();
    ReplayOptions options;
    options.speed = *speed;
    options.loop = replayLoop_->isChecked();
    options.mode = replaySnapshot_->isChecked() ? AuxMode::Snapshot : AuxMode::Full;
    return options;
}

}  // namespace auxscope
