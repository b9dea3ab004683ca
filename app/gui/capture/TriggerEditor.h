// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The capture page's snapshot triggers (issue 29): a row per trigger with its
// kind (a function entered, a slow call, a slow syscall, a tracepoint pair, a
// marker) and that kind's fields, the spec they make (the text `auxscope record
// --trigger` takes) and, beside it, what is wrong with it; under the rows the
// options (keep tracing after a firing, at most N snapshots, a minimum gap, the
// threads that count). Every row is parsed and resolved (parseTriggerSpec,
// resolveTrigger: the CLI's own functions) as it is edited, against the target's
// binary the page sets; the page refuses Start while one is wrong and arms the
// resolved triggers with CaptureSession::armTriggers, as the CLI does.
//
// "Pick…" opens a TriggerFunctionPicker on the row's binary (else the target's).
#include <QGroupBox>
#include <QString>

#include <memory>
#include <vector>

#include "CaptureOptions.h"
#include "Result.h"
#include "TriggerSpec.h"
#include "gui/capture/TriggerFunctionPicker.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTimer;
class QVBoxLayout;

namespace auxscope {

// One trigger's row (object name "triggerRow").
class TriggerRow : public QWidget {
    Q_OBJECT
public:
    enum Kind { FunctionEntered, SlowCall, SlowSyscall, TracepointPair, Marker };
    explicit TriggerRow(QWidget* parent = nullptr);
    Kind kind() const;
    void setKind(Kind k);
    // Fills the fields from a spec ("handle>5ms", "syscall:read>10ms"...); false
    // (the fields unchanged) when it does not parse.
    bool setSpec(const QString& text);
    // The spec the fields make, as --trigger takes it.
    QString spec() const;
    // A field the kind needs and that is empty ("enter the function…"; empty: none).
    QString missing() const;
    // What is wrong with it (empty: nothing), as validate() last found.
    const QString& error() const { return error_; }
    void setError(const QString& text);

    QComboBox* kindBox() const { return kind_; }
    QLineEdit* functionEdit() const { return function_; }
    QLineEdit* binaryEdit() const { return binary_; }
    QLineEdit* thresholdEdit() const { return threshold_; }
    QLineEdit* syscallEdit() const { return syscall_; }
    QLineEdit* firstEdit() const { return first_; }
    QLineEdit* secondEdit() const { return second_; }
    QPushButton* pickButton() const { return pick_; }
    QPushButton* removeButton() const { return remove_; }

signals:
    void changed();
    void pickRequested();
    void removeRequested();

private:
    void showKind();
    QComboBox* kind_ = nullptr;
    QLineEdit *function_ = nullptr, *binary_ = nullptr, *threshold_ = nullptr, *syscall_ = nullptr;
    QLineEdit *first_ = nullptr, *second_ = nullptr;
    QPushButton *pick_ = nullptr, *remove_ = nullptr;
    QLabel *specLabel_ = nullptr, *errorLabel_ = nullptr;
    QString error_;
};

class TriggerEditor : public QGroupBox {
    Q_OBJECT
public:
    explicit TriggerEditor(QWidget* parent = nullptr);

    int count() const { return int(rows_.size()); }
    TriggerRow* row(int i) const { return rows_.at(size_t(i)); }
    // A new row (object name "triggerRow"), filled from `spec` when given.
    TriggerRow* addTrigger(const QString& spec = {});
    void removeTrigger(int i);
    // The binary of the capture's target (a launched command's, a process's; empty:
    // system-wide, where a trigger must name its binary). Revalidates.
    void setDefaultBinary(const QString& path);
    const QString& defaultBinary() const { return defaultBinary_; }
    // Parses and resolves every row now; true when each is right (or there is none).
    bool validate();
    bool valid() const { return valid_; }
    // "trigger 2 (handle>0ms): the threshold '0ms': out of range" for the first wrong one.
    QString firstError() const;

    // What armTriggers takes (after validate(); an error names the row and its cause).
    struct Armed {
        std::vector<ResolvedTrigger> triggers;
        TriggerSettings settings;
    };
    Expected<Armed> resolved() const;

    QDoubleSpinBox* postBox() const { return post_; }
    QSpinBox* maxBox() const { return max_; }
    QDoubleSpinBox* gapBox() const { return gap_; }
    QLineEdit* threadsEdit() const { return tids_; }
    // The picker the last "Pick…" opened (null when none is open).
    TriggerFunctionPicker* picker() const { return picker_; }
    // Opens the picker for row `i` (as its "Pick…" does).
    TriggerFunctionPicker* openPicker(int i);
    void setEditable(bool on);

protected:
    void resizeEvent(QResizeEvent* e) override;

signals:
    // validate() found the triggers right (true) or not; false too while an edit waits to be checked.
    void validityChanged(bool ok);

private:
    void scheduleValidate();
    // The rows' box shows up to two rows, then scrolls (the page has little height to spare).
    void fitRows();
    Expected<std::vector<pid_t>> threads() const;
    std::vector<TriggerRow*> rows_;
    QVBoxLayout* rowsLayout_ = nullptr;
    QScrollArea* rowsArea_ = nullptr;
    QDoubleSpinBox *post_ = nullptr, *gap_ = nullptr;
    QSpinBox* max_ = nullptr;
    QLineEdit* tids_ = nullptr;
    QLabel* optionsError_ = nullptr;
    QLabel* note_ = nullptr;
    QPushButton* add_ = nullptr;
    QTimer* validateTimer_ = nullptr;
    QString defaultBinary_;
    TriggerFunctionPicker* picker_ = nullptr;
    bool valid_ = true;
};

// The binary triggers of a capture of `options` look in when they name none:
// a launched command's (as execvp finds it) or a process's /proc/PID/exe; empty
// for a system-wide or CPU-list capture (as `auxscope record` does).
std::string triggerDefaultBinary(const CaptureOptions& options);

}  // namespace auxscope
