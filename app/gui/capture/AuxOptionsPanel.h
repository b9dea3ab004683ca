// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The AUX-area trace part of the capture page: which trace PMU (intel_pt,
// cs_etm, arm_spe, intel_bts, as sysfs lists them), Intel PT's options as
// toggles (user/kernel, branch, tsc, mtc + period, cyc + threshold, noretcomp,
// psb_period, ptwrite), Arm SPE's terms (which operations are sampled: loads,
// stores, branches, a minimum latency, the events a sample must have; the
// interval, jitter, timestamps, physical addresses), address filters in perf's syntax, full-trace or
// snapshot (flight-recorder) mode, and the AUX area size. The toggles become
// the same event string the command line takes (auxEventStringFromToggles), and
// every change is checked at once with planAuxEvent, so a combination the PMU's
// caps/ refuse is shown with the reason before Start.
#include <QGroupBox>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "AuxEventConfig.h"
#include "Pmu.h"
#include "Result.h"
#include "gui/common/ExampleMaker.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLabel;
class QLayout;
class QLineEdit;
class QSpinBox;
class QToolButton;

namespace auxscope {

struct AuxSelection {
    std::string eventSpec;  // e.g. "intel_pt/cyc,mtc_period=3/u"
    std::string filter;     // perf --filter syntax, may be empty
    bool snapshot = false;
    size_t auxPages = 0;
};

class AuxOptionsPanel : public QGroupBox {
    Q_OBJECT
public:
    explicit AuxOptionsPanel(const PmuRegistry& pmus, QWidget* parent = nullptr);

    // Nothing when AUX trace is off (or no trace PMU exists); an error when the
    // combination is refused (the message says why, from caps/).
    Expected<std::optional<AuxSelection>> selection() const;
    // Whether the capture will be in snapshot mode.
    bool snapshotMode() const;
    // For tests and for the page: the PMUs offered.
    QComboBox* pmuBox() const { return pmu_; }

    // On a machine without a trace PMU: the button beside the verdict that opens
    // an example (object name "openExampleButton": a click, the Intel PT one; its
    // menu, either, or the Intel PT one replayed); null where there is a trace PMU.
    QToolButton* exampleButton() const { return exampleButton_; }

signals:
    void changed();
    // The person asked to open an example (the main window opens it).
    void exampleRequested(ExampleKind kind);
    // ... or to replay the Intel PT example (the form fills its Replay row).
    void replayExampleRequested();

private:
    void validate();
    void updateEnabled();

    const PmuRegistry& pmus_;
    QComboBox* pmu_ = nullptr;
    QToolButton* exampleButton_ = nullptr;
    QCheckBox *user_ = nullptr, *kernel_ = nullptr, *branch_ = nullptr, *tsc_ = nullptr, *mtc_ = nullptr,
              *cyc_ = nullptr, *noretcomp_ = nullptr, *ptwrite_ = nullptr;
    QSpinBox *mtcPeriod_ = nullptr, *cycThresh_ = nullptr, *psbPeriod_ = nullptr;
    // Arm SPE: each offered only where the PMU's format/ has the term.
    QCheckBox *speLoads_ = nullptr, *speStores_ = nullptr, *speBranches_ = nullptr, *speTs_ = nullptr,
              *spePa_ = nullptr, *spePct_ = nullptr, *speJitter_ = nullptr;
    QSpinBox *speMinLatency_ = nullptr, *spePeriod_ = nullptr;
    std::vector<std::pair<QCheckBox*, int>> speEvents_;  // event_filter bits
    QLayout *timingRow_ = nullptr, *speOpsRow_ = nullptr, *speEventsRow_ = nullptr, *speDataRow_ = nullptr;
    std::vector<std::string> speTerms() const;
    QLineEdit* filter_ = nullptr;
    QComboBox* mode_ = nullptr;
    QComboBox* auxSize_ = nullptr;
    QLabel* verdict_ = nullptr;
    QFormLayout* form_ = nullptr;
};

}  // namespace auxscope
