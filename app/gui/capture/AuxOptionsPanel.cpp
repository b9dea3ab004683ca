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

#include <cstdio>

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
        menu->addAction("Open the " + exampleTitle(ExampleKind::ArmSpe), this,
                        [this] { emit exampleRequested(ExampleKind::ArmSpe); })
            ->setObjectName("openExampleArmSpe");
        menu->addAction("Replay the " + exampleTitle(ExampleKind::IntelPt) + " (live AUX path and decode)",
                        this, [this] { emit replayExampleRequested(); })
            ->setObjectName("replayExampleIntelPt");
        exampleButton_->setMenu(menu);
        connect(exampleButton_, &QToolButton::clicked, pt, &QAction::trigger);
        exampleButton_->setText("Open an example");
        exampleButton_->setToolTip(
            "A small Intel PT recording made by the bundled synthesizer, opened on its timeline (the "
            "arrow: the CoreSight or Arm SPE example, or the Intel PT one replayed through the live AUX "
            "path)");
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

    // Arm SPE (drivers/perf/arm_spe_pmu.c's format/ terms).
    speLoads_ = check("loads", "speLoads", false,
                      "load_filter: sample loads only (with stores/branches: any of them)");
    speStores_ = check("stores", "speStores", false, "store_filter: sample stores");
    speBranches_ = check("branches", "speBranches", false, "branch_filter: sample branches");
    speMinLatency_ =
        spin("speMinLatency", 4095, 0,
             "min_latency: keep only operations whose total latency is at least this many cycles "
             "(0: all)");
    spePeriod_ = spin("spePeriod", 1 << 24, 0,
                      "period: one operation sampled every N (0: caps/min_interval, the driver's minimum)");
    spePeriod_->setSpecialValueText("default");
    speTs_ =
        check("timestamps", "speTs", true,
              "ts_enable: a timestamp per record, so samples land on the timeline (perf adds it per CPU)");
    spePa_ =
        check("physical addresses", "spePa", false, "pa_enable: the data's physical address (CAP_PERFMON)");
    spePct_ = check("physical timestamps", "spePct", false,
                    "pct_enable: physical counter timestamps (CAP_PERFMON)");
    speJitter_ =
        check("jitter", "speJitter", false,
              "jitter: randomise the interval, so loops in step with it are not missed or over-sampled");
    const std::pair<const char*, int> speEvents[] = {{"retired", 1},      {"L1D refill", 3}, {"TLB walk", 5},
                                                     {"mispredicted", 7}, {"LLC miss", 9},   {"remote", 10}};
    for (auto [name, bit] : speEvents) {
        auto* c = check(name, "", false, "");
        c->setObjectName(QString("speEvent%1").arg(bit));
        c->setToolTip(
            QString("event_filter bit %1: keep only samples with the event '%2'").arg(bit).arg(name));
        speEvents_.push_back({c, bit});
    }

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
    timingRow_ = timing;
    auto* speOps = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{speLoads_, speStores_, speBranches_})
        speOps->addWidget(w);
    speOps->addWidget(new QLabel("min latency"));
    speOps->addWidget(speMinLatency_);
    speOps->addWidget(new QLabel("interval"));
    speOps->addWidget(spePeriod_);
    speOps->addWidget(speJitter_);
    speOps->addStretch(1);
    auto* speEv = new QHBoxLayout;
    for (auto& [c, bit] : speEvents_)
        speEv->addWidget(c);
    speEv->addStretch(1);
    auto* speData = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{speTs_, spePa_, spePct_})
        speData->addWidget(w);
    speData->addStretch(1);
    form->addRow("Sample", speOps);
    form->addRow("Only with", speEv);
    form->addRow("Record", speData);
    speOpsRow_ = speOps;
    speEventsRow_ = speEv;
    speDataRow_ = speData;
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
    // Each trace's own options: PT's timing, SPE's sampling; a term the PMU's
    // format/ does not have is shown but not offered.
    const bool spe = pmu.startsWith("arm_spe");
    if (form_ && on) {
        form_->setRowVisible(timingRow_, pt);
        for (QLayout* row : {speOpsRow_, speEventsRow_, speDataRow_})
            form_->setRowVisible(row, spe);
    }
    const PmuInfo* info = spe ? pmus_.find(pmu.toStdString()) : nullptr;
    auto has = [&](const char* term) { return info && info->format.count(term); };
    const std::pair<QWidget*, const char*> speTerms[] = {
        {speLoads_, "load_filter"},      {speStores_, "store_filter"}, {speBranches_, "branch_filter"},
        {speMinLatency_, "min_latency"}, {spePeriod_, "period"},       {speTs_, "ts_enable"},
        {spePa_, "pa_enable"},           {spePct_, "pct_enable"},      {speJitter_, "jitter"}};
    for (auto [w, term] : speTerms)
        // period is perf's own term (attr.sample_period), not a format/ file.
        w->setEnabled(std::string(term) == "period" ? spe : has(term));
    for (auto& [c, bit] : speEvents_)
        c->setEnabled(has("event_filter"));
}

std::vector<std::string> AuxOptionsPanel::speTerms() const {
    std::vector<std::string> terms;
    auto flag = [&](QCheckBox* c, const char* term) {
        if (c->isEnabled() && c->isChecked()) terms.push_back(term);
    };
    flag(speLoads_, "load_filter");
    flag(speStores_, "store_filter");
    flag(speBranches_, "branch_filter");
    if (speMinLatency_->isEnabled() && speMinLatency_->value())
        terms.push_back("min_latency=" + std::to_string(speMinLatency_->value()));
    uint64_t events = 0;
    for (auto& [c, bit] : speEvents_)
        if (c->isEnabled() && c->isChecked()) events |= uint64_t(1) << bit;
    if (events) {
        char hex[32];
        std::snprintf(hex, sizeof hex, "event_filter=0x%llx", static_cast<unsigned long long>(events));
        terms.push_back(hex);
    }
    if (spePeriod_->value()) terms.push_back("period=" + std::to_string(spePeriod_->value()));
    flag(speJitter_, "jitter");
    // Timestamps are perf's per-CPU default: only turning them off is spelled out.
    if (speTs_->isEnabled() && !speTs_->isChecked()) terms.push_back("ts_enable=0");
    flag(spePa_, "pa_enable");
    flag(spePct_, "pct_enable");
    return terms;
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
    } else if (pmu.startsWith("arm_spe")) {
        t.terms = speTerms();
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
