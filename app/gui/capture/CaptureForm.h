// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture page's form: the target (system-wide, a CPU list, a process, a
// command, or a recording replayed through simulated CPUs, with its speed,
// snapshot mode and loop), the events (with a tracepoint chooser), call stacks
// on the samples (none, frame pointers, DWARF with its stack size, LBR where
// checkCallGraphFor accepts it), the data ring's size, the sideband flight
// recorder, the AUX panel (AuxOptionsPanel) and decoding while capturing; and
// the CaptureOptions they make. A new choice for a capture is a row here and a
// field of options(). The form remembers nothing between runs (no settings).
#include <QObject>
#include <QString>

#include "CaptureSession.h"
#include "record/ReplaySource.h"

class QCheckBox;
class QComboBox;
class QFormLayout;
class QLineEdit;
class QPushButton;
class QWidget;

namespace auxscope {

class AuxOptionsPanel;

class CaptureForm : public QObject {
    Q_OBJECT
public:
    // `owner`: the page (the dialogs' parent).
    CaptureForm(const PmuRegistry& pmus, QWidget* owner);

    // The form's rows, and the AUX panel under them (the page puts both in its Capture box).
    QFormLayout* layout() const { return form_; }
    AuxOptionsPanel* auxPanel() const { return auxPanel_; }
    // Shows the rows the target kind chooses (once the form is in its page).
    void showTargetKind();
    void setEnabled(bool enabled);

    // What the form asks for (the error says what is wrong with it).
    Expected<CaptureOptions> options() const;
    // A replay: the recording (target()) fed at the chosen speed, snapshot mode and loop.
    bool replaySelected() const;
    QString target() const;
    // `recordedSeconds`: the recording's time span, for the speed that stretches
    // a short recording to a few seconds ("slow motion", the example's).
    Expected<ReplayOptions> replayOptions(double recordedSeconds) const;
    bool decodeWhileCapturing() const;
    // A replay in flight-recorder (snapshot) mode: its simulated AUX areas take snapshots.
    bool replayFlightRecorder() const;
    // Why LBR call stacks are not offered for the events the form names now
    // (checkCallGraphFor's refusal; empty when they are).
    QString lbrRefusal() const { return lbrRefusal_; }
    // The Replay row's "Example" (object name "replayExample"): makes (or reuses)
    // the Intel PT example, chooses Replay and fills its path, so Start replays it
    // through the live AUX path with decoding while capturing.
    void replayExample();

signals:
    // What the form has to say on the page (the example being made, or why it could not be).
    void statusMessage(const QString& text, bool error);
    // The target kind changed to a replay (true) or to a live capture (false).
    void replayChosen(bool replay);

private:
    void targetKindChanged(int index);
    void chooseTracepoint();
    // Offers LBR only where checkCallGraphFor accepts it for the events the form
    // names now; else greys it, with the refusal as its tooltip.
    void checkLbr();
    // The DWARF stack size is a choice only with DWARF.
    void callGraphChanged();

    QWidget* owner_;
    const PmuRegistry& pmus_;
    QFormLayout* form_ = nullptr;
    QComboBox* targetKind_ = nullptr;
    QLineEdit* targetValue_ = nullptr;
    QLineEdit* events_ = nullptr;
    QPushButton* tracepointButton_ = nullptr;
    QComboBox* callGraph_ = nullptr;   // none, fp, dwarf, lbr (CallGraphMode, as item data)
    QComboBox* dwarfStack_ = nullptr;  // bytes of user stack per sample (dwarf)
    QString lbrRefusal_;
    QComboBox* bufferPages_ = nullptr;
    QCheckBox* overwrite_ = nullptr;
    // Replay: a recorded perf.data fed through simulated CPUs (target kind 4).
    QPushButton* replayBrowse_ = nullptr;
    QPushButton* replayExample_ = nullptr;
    QComboBox* replaySpeed_ = nullptr;
    QCheckBox* replaySnapshot_ = nullptr;
    QCheckBox* replayLoop_ = nullptr;
    QWidget* replayRow_ = nullptr;
    AuxOptionsPanel* auxPanel_ = nullptr;
    QCheckBox* liveDecode_ = nullptr;  // decode while capturing (Intel PT, CoreSight)
};

}  // namespace auxscope
