// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/AuxOptionsPanel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSpinBox>
#include <QToolButton>

#include "CaptureOptions.h"
#include "DataRing.h"

namespace auxscope {
namespace {

const char* kNone = "Off (no AUX trace)";

}  // namespace

AuxOptionsPanel::AuxOptionsPanel(const PmuRegistry& pmus, QWidget* parent)
    : QGroupBox("AUX trace (Intel PT, CoreSight, SPE)", parent), pmus_(pmus) {
    setObjectName("auxOptions");
    pmu_ = new QComboBox;
    pmu_->setObjectName("auxPmu");
    pmu_->addItem(kNone, QString());
    for (const auto& p : pmus.pmus())
        if (p.isAuxPmu()) {
            pmu_->addItem(QString::fromStdString(p.name), QString::fromStdString(p.name));
            pmu_->setItemData(pmu_->count() - 1, QString::fromStdString(auxEventHelp(p)), Qt::ToolTipRole);
        }
    if (pmu_->count() == 1) {
        pmu_->setEnabled(false);
        pmu_->setToolTip(
            "This machine has no AUX-area trace PMU (no intel_pt, cs_etm, arm_spe or intel_bts under "
            "/sys/bus/event_source/devices). Replay a recorded trace to see the AUX path, or open an "
            "example.");
        // The examples need no trace hardware: one click away.
        exampleButton_ = new QToolButton;
        exampleButton_->setObjectName("openExampleButton");
        exampleButton_->setPopupMode(QToolButton::MenuButtonPopup);
        exampleButton_->setToolButtonStyle(Qt::ToolButtonTextOnly);
        auto* menu = new QMenu(exampleButton_);
        auto* pt = menu->addAction("Open the " + exampleTitle(ExampleKind::IntelPt), this,
                                   [this] { emit exampleRequested(ExampleKind::IntelPt); });
        pt->setObjectName("openExampleIntelPt");
        menu->addAction("Open the " + exampleTitle(ExampleKind::CoreSight), this,
                        [this] { emit exampleRequested(ExampleKind::CoreSight); })
            ->setObjectName("openExampleCoreSight");
        menu->addAction("Replay the " + exampleTitle(ExampleKind::IntelPt) + " (live AUX path and decode)",
                        this, [this] { emit replayExampleRequested(); })
            ->setObjectName("replayExampleIntelPt");
        exampleButton_->setMenu(menu);
        connect(exampleButton_, &QToolButton::clicked, pt, &QAction::trigger);
        exampleButton_->setText("Open an example");
        exampleButton_->setToolTip(
            "A small Intel PT recording made by the bundled synthesizer, opened on its timeline (the "
            "arrow: the CoreSight example, or the Intel PT one replayed through the live AUX path)");
    }

    auto check = [this](const char* text, const char* name, bool on, const char* tip) {
        auto* c = new QCheckBox(text);
        c->setObjectName(name);
        c->setChecked(on);
        c->setToolTip(tip);
        connect(c, &QCheckBox::toggled, this, &AuxOptionsPanel::validate);
        return c;
    };
    auto spin = [this](const char* name, int max, int value, const char* tip) {
        auto* s = new QSpinBox;
        s->setObjectName(name);
        s->setRange(0, max);
        s->setValue(value);
        s->setToolTip(tip);
        connect(s, &QSpinBox::valueChanged, this, &AuxOptionsPanel::validate);
        return s;
    };
    user_ = check("user", "auxUser", true, "trace user space (the u modifier)");
    kernel_ = check("kernel", "auxKernel", true, "trace the kernel (the k modifier)");
    branch_ = check("branch", "auxBranch", true, "branch packets (TNT, TIP): the instruction flow");
    tsc_ = check("tsc", "auxTsc", true, "TSC timestamps in PSB+ and on demand");
    mtc_ = check("mtc", "auxMtc", true, "mini timestamps (MTC) every 2^period crystal-clock ticks");
    mtcPeriod_ = spin("auxMtcPeriod", 15, 3, "mtc_period: allowed values are in caps/mtc_periods");
    cyc_ = check("cyc", "auxCyc", false, "cycle-accurate mode (CYC packets)");
    cycThresh_ = spin("auxCycThresh", 15, 0, "cyc_thresh: allowed values are in caps/cycle_thresholds");
    noretcomp_ = check("noretcomp", "auxNoretcomp", false, "a TIP for every return (no return compression)");
    psbPeriod_ = spin("auxPsbPeriod", 15, 3, "psb_period: PSB+ every 2^(n+11) bytes; caps/psb_periods");
    ptwrite_ = check("ptwrite", "auxPtwrite", false, "PTWRITE packets (caps/ptwrite)");

    auto* levels = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{user_, kernel_, branch_, tsc_, noretcomp_, ptwrite_})
        levels->addWidget(w);
    levels->addStretch(1);
    auto* timing = new QHBoxLayout;
    timing->addWidget(mtc_);
    timing->addWidget(new QLabel("period"));
    timing->addWidget(mtcPeriod_);
    timing->addWidget(cyc_);
    timing->addWidget(new QLabel("threshold"));
    timing->addWidget(cycThresh_);
    timing->addWidget(new QLabel("PSB period"));
    timing->addWidget(psbPeriod_);
    timing->addStretch(1);

    filter_ = new QLineEdit;
    filter_->setObjectName("auxFilter");
    filter_->setPlaceholderText(
        "address filters, perf syntax: filter main @ /path/prog, tracestop func @ /lib/x.so");
    connect(filter_, &QLineEdit::editingFinished, this, &AuxOptionsPanel::validate);

    mode_ = new QComboBox;
    mode_->setObjectName("auxMode");
    mode_->addItem("Full trace: every byte; the event pauses when the AUX area fills (counted, re-enabled)");
    mode_->addItem(
        "Snapshot (flight recorder): the hardware overwrites; Take snapshot copies the newest bytes");
    connect(mode_, &QComboBox::currentIndexChanged, this, &AuxOptionsPanel::validate);

    auxSize_ = new QComboBox;
    auxSize_->setObjectName("auxSize");
    for (size_t pages = 16; pages <= 65536; pages *= 2) {
        const double mib = double(pages * pageSize()) / (1024.0 * 1024.0);
        QString label = QString("%1 pages (%2 MiB per CPU)").arg(pages).arg(mib, 0, 'g', 3);
        if (pages == kDefaultAuxPages) label += " — perf's default";
        auxSize_->addItem(label, qulonglong(pages));
        if (pages == kDefaultAuxPages) auxSize_->setCurrentIndex(auxSize_->count() - 1);
    }
    connect(auxSize_, &QComboBox::currentIndexChanged, this, &AuxOptionsPanel::validate);

    verdict_ = new QLabel;
    verdict_->setObjectName("auxVerdict");
    verdict_->setWordWrap(true);

    auto* form = form_ = new QFormLayout(this);
    form->addRow("PMU", pmu_);
    form->addRow("Trace", levels);
    form->addRow("Timing", timing);
    form->addRow("Filters", filter_);
    form->addRow("Mode", mode_);
    form->addRow("AUX area", auxSize_);
    if (exampleButton_) {
        auto* row = new QHBoxLayout;
        row->addWidget(verdict_, 1);
        row->addWidget(exampleButton_, 0, Qt::AlignTop);
        form->addRow(row);
    } else {
        form->addRow(verdict_);
    }
    connect(pmu_, &QComboBox::currentIndexChanged, this, &AuxOptionsPanel::validate);
    validate();
}

bool AuxOptionsPanel::snapshotMode() const {
    return !pmu_->currentData().toString().isEmpty() && mode_->currentIndex() == 1;
}

void AuxOptionsPanel::updateEnabled() {
    const QString pmu = pmu_->currentData().toString();
    const bool on = !pmu.isEmpty();
    const bool pt = pmu == "intel_pt";
    for (QWidget* w : std::initializer_list<QWidget*>{user_, kernel_, filter_, mode_, auxSize_})
        w->setEnabled(on);
    for (QWidget* w : std::initializer_list<QWidget*>{branch_, tsc_, mtc_, cyc_, noretcomp_, ptwrite_,
                                                      mtcPeriod_, cycThresh_, psbPeriod_})
        w->setEnabled(pt);
    mtcPeriod_->setEnabled(pt && mtc_->isChecked());
    cycThresh_->setEnabled(pt && cyc_->isChecked());
    // With AUX trace off only the PMU choice and the verdict stay: the page keeps
    // its room for the per-CPU table and the charts.
    if (form_)
        for (int row = 1; row < form_->rowCount() - 1; ++row)
            form_->setRowVisible(row, on);
}

Expected<std::optional<AuxSelection>> AuxOptionsPanel::selection() const {
    const QString pmu = pmu_->currentData().toString();
    if (pmu.isEmpty()) return std::optional<AuxSelection>{};
    AuxToggles t;
    t.pmu = pmu.toStdString();
    t.user = user_->isChecked();
    t.kernel = kernel_->isChecked();
    if (pmu == "intel_pt") {
        // Only what differs from perf's default is spelled out, so the PMU's
        // caps-dependent defaults stay in charge of the rest.
        if (!branch_->isChecked()) t.branch = false;
        if (!tsc_->isChecked()) t.tsc = false;
        if (!mtc_->isChecked())
            t.mtc = false;
        else if (mtcPeriod_->value() != 3)
            t.mtcPeriod = unsigned(mtcPeriod_->value());
        if (cyc_->isChecked()) {
            t.cyc = true;
            if (cycThresh_->value()) t.cycThresh = unsigned(cycThresh_->value());
        }
        if (noretcomp_->isChecked()) t.noretcomp = true;
        if (psbPeriod_->value() != 3) t.psbPeriod = unsigned(psbPeriod_->value());
        if (ptwrite_->isChecked()) t.ptwrite = true;
    }
    t.filter = filter_->text().trimmed().toStdString();
    auto spec = auxEventStringFromToggles(t);
    if (!spec) return spec.error();
    AuxSelection s;
    s.eventSpec = *spec;
    s.filter = t.filter;
    s.snapshot = mode_->currentIndex() == 1;
    s.auxPages = size_t(auxSize_->currentData().toULongLong());
    // The same check the capture makes, now, so the reason shows before Start.
    AuxEventOptions ao;
    ao.snapshot = s.snapshot;
    ao.auxPages = s.auxPages;
    ao.filter = s.filter;
    auto plan = planAuxEvent(pmus_, s.eventSpec, ao);
    if (!plan) return plan.error();
    return std::optional<AuxSelection>(s);
}

void AuxOptionsPanel::validate() {
    updateEnabled();
    auto sel = selection();
    if (!sel) {
        verdict_->setText("Refused: " + QString::fromStdString(sel.error().message));
        verdict_->setStyleSheet("color: #b00020;");
    } else if (!*sel) {
        verdict_->setText(pmu_->isEnabled() ? "No AUX trace: only the events above are captured."
                                            : pmu_->toolTip());
        verdict_->setStyleSheet("");
    } else {
        verdict_->setText(
            "Event: " + QString::fromStdString((*sel)->eventSpec) +
            ((*sel)->filter.empty() ? QString() : "  filter: " + QString::fromStdString((*sel)->filter)));
        verdict_->setStyleSheet("");
    }
    emit changed();
}

}  // namespace auxscope
