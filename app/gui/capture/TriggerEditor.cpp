// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/capture/TriggerEditor.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

#include <limits.h>
#include <unistd.h>

#include <algorithm>

namespace auxscope {

namespace {

constexpr const char* kErrorStyle = "color: #b00020;";

QString thresholdOf(const QString& text) {
    const int i = text.lastIndexOf('>');
    return i < 0 ? QString() : text.mid(i + 1).trimmed();
}

}  // namespace

std::string triggerDefaultBinary(const CaptureOptions& options) {
    if (options.target == TargetKind::Command && !options.command.empty()) {
        auto exe = findExecutable(options.command.front());
        return exe ? *exe : std::string();
    }
    if (options.target == TargetKind::Process) {
        char exe[PATH_MAX];
        const std::string link = "/proc/" + std::to_string(options.pid) + "/exe";
        const ssize_t n = readlink(link.c_str(), exe, sizeof exe - 1);
        if (n > 0) return std::string(exe, size_t(n));
    }
    return {};
}

// ---- A row ----

TriggerRow::TriggerRow(QWidget* parent) : QWidget(parent) {
    setObjectName("triggerRow");
    kind_ = new QComboBox;
    kind_->setObjectName("triggerKind");
    kind_->addItems({"Function entered", "Slow call", "Slow syscall", "Tracepoint pair", "Marker"});
    kind_->setItemData(FunctionEntered,
                       "A function of the binary is entered (a uprobe), or an instruction "
                       "at a file offset is reached (0x… in the function field)",
                       Qt::ToolTipRole);
    kind_->setItemData(SlowCall,
                       "A call of the function takes longer than the threshold (uprobe + uretprobe per "
                       "thread): fires at the return, so the whole slow call is in the snapshot",
                       Qt::ToolTipRole);
    kind_->setItemData(SlowSyscall,
                       "A system call slower than the threshold (its sys_enter / sys_exit tracepoints)",
                       Qt::ToolTipRole);
    kind_->setItemData(TracepointPair,
                       "Tracepoint A followed by tracepoint B on the same thread slower than the threshold "
                       "(sched:sched_wakeup → sched_switch: scheduling latency)",
                       Qt::ToolTipRole);
    kind_->setItemData(Marker, "The program calls its auxscope_trigger() function", Qt::ToolTipRole);
    auto edit = [this](const char* name, const QString& placeholder, int width) {
        auto* e = new QLineEdit;
        e->setObjectName(name);
        e->setPlaceholderText(placeholder);
        if (width) e->setMinimumWidth(width);
        connect(e, &QLineEdit::textChanged, this, &TriggerRow::changed);
        return e;
    };
    function_ = edit("triggerFunction", "function (or 0xOFFSET)", 160);
    binary_ = edit("triggerBinary", "binary (default: the target's)", 140);
    syscall_ = edit("triggerSyscall", "syscall, e.g. read", 110);
    first_ = edit("triggerFirst", "SYS:A, e.g. sched:sched_wakeup", 170);
    second_ = edit("triggerSecond", "B, e.g. sched_switch", 120);
    threshold_ = edit("triggerThreshold", "5ms", 60);
    threshold_->setMaximumWidth(90);
    threshold_->setToolTip("A number with ns, us, ms or s (1 us to 1 hour)");
    pick_ = new QPushButton("Pick…");
    pick_->setObjectName("triggerPick");
    pick_->setToolTip("Choose a function of the binary (searchable, demangled names)");
    remove_ = new QPushButton("Remove");
    remove_->setObjectName("triggerRemove");
    specLabel_ = new QLabel;
    specLabel_->setObjectName("triggerSpec");
    specLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    specLabel_->setToolTip("The same trigger on the command line: auxscope record --trigger SPEC");
    errorLabel_ = new QLabel;
    errorLabel_->setObjectName("triggerError");
    errorLabel_->setWordWrap(true);
    errorLabel_->setStyleSheet(kErrorStyle);
    errorLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* fields = new QHBoxLayout;
    fields->setContentsMargins(0, 0, 0, 0);
    fields->addWidget(kind_);
    fields->addWidget(function_, 2);
    fields->addWidget(pick_);
    fields->addWidget(syscall_, 1);
    fields->addWidget(first_, 2);
    fields->addWidget(second_, 1);
    auto* slower = new QLabel("slower than");
    slower->setObjectName("triggerSlower");
    fields->addWidget(slower);
    fields->addWidget(threshold_);
    fields->addWidget(binary_, 2);
    fields->addStretch(0);
    fields->addWidget(remove_);
    syscall_->setMaximumWidth(240);
    first_->setMaximumWidth(280);
    second_->setMaximumWidth(220);

    auto* notes = new QHBoxLayout;
    notes->setContentsMargins(0, 0, 0, 0);
    notes->setSpacing(12);
    notes->addWidget(specLabel_);
    notes->addWidget(errorLabel_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 2);
    layout->setSpacing(1);
    layout->addLayout(fields);
    layout->addLayout(notes);

    connect(kind_, &QComboBox::currentIndexChanged, this, [this] {
        showKind();
        emit changed();
    });
    connect(this, &TriggerRow::changed, this, [this] { specLabel_->setText("--trigger '" + spec() + "'"); });
    connect(pick_, &QPushButton::clicked, this, &TriggerRow::pickRequested);
    connect(remove_, &QPushButton::clicked, this, &TriggerRow::removeRequested);
    setKind(SlowCall);
    showKind();
    specLabel_->setText("--trigger '" + spec() + "'");
}

TriggerRow::Kind TriggerRow::kind() const {
    return Kind(kind_->currentIndex());
}

void TriggerRow::setKind(Kind k) {
    kind_->setCurrentIndex(int(k));
    showKind();
}

void TriggerRow::showKind() {
    const Kind k = kind();
    const bool function = k == FunctionEntered || k == SlowCall;
    function_->setVisible(function);
    pick_->setVisible(function);
    binary_->setVisible(function || k == Marker);
    syscall_->setVisible(k == SlowSyscall);
    first_->setVisible(k == TracepointPair);
    second_->setVisible(k == TracepointPair);
    const bool slow = k == SlowCall || k == SlowSyscall || k == TracepointPair;
    threshold_->setVisible(slow);
    if (auto* l = findChild<QLabel*>("triggerSlower")) l->setVisible(slow);
}

bool TriggerRow::setSpec(const QString& text) {
    auto s = parseTriggerSpec(text.trimmed().toStdString());
    if (!s) return false;
    const QSignalBlocker block(this);
    function_->clear();
    binary_->clear();
    syscall_->clear();
    first_->clear();
    second_->clear();
    threshold_->clear();
    binary_->setText(QString::fromStdString(s->binary));
    switch (s->kind) {
        case TriggerKind::FunctionEntry:
            if (s->marker) {
                setKind(Marker);
            } else {
                setKind(FunctionEntered);
                function_->setText(s->offset ? QString("0x%1").arg(*s->offset, 0, 16)
                                             : QString::fromStdString(s->function));
            }
            break;
        case TriggerKind::FunctionSlow:
            setKind(SlowCall);
            function_->setText(QString::fromStdString(s->function));
            threshold_->setText(thresholdOf(text));
            break;
        case TriggerKind::SyscallSlow:
            setKind(SlowSyscall);
            syscall_->setText(QString::fromStdString(s->syscall));
            threshold_->setText(thresholdOf(text));
            break;
        case TriggerKind::TracepointPair:
            setKind(TracepointPair);
            first_->setText(QString::fromStdString(s->firstSystem + ":" + s->firstEvent));
            second_->setText(QString::fromStdString(
                s->secondSystem == s->firstSystem ? s->secondEvent : s->secondSystem + ":" + s->secondEvent));
            threshold_->setText(thresholdOf(text));
            break;
    }
    specLabel_->setText("--trigger '" + spec() + "'");
    emit changed();
    return true;
}

QString TriggerRow::spec() const {
    const QString f = function_->text().trimmed(), b = binary_->text().trimmed(),
                  t = threshold_->text().trimmed();
    const QString at = b.isEmpty() ? QString() : "@" + b;
    switch (kind()) {
        case FunctionEntered:
            if (f.startsWith("0x")) return b + ":" + f;
            return f + at;
        case SlowCall:
            return f + at + ">" + t;
        case SlowSyscall:
            return "syscall:" + syscall_->text().trimmed() + ">" + t;
        case TracepointPair:
            return first_->text().trimmed() + "->" + second_->text().trimmed() + ">" + t;
        case Marker:
            return "marker" + at;
    }
    return {};
}

QString TriggerRow::missing() const {
    const Kind k = kind();
    if ((k == FunctionEntered || k == SlowCall) && function_->text().trimmed().isEmpty())
        return "enter the function (or Pick\u2026 one)";
    if (k == FunctionEntered && function_->text().trimmed().startsWith("0x") &&
        binary_->text().trimmed().isEmpty())
        return "a file offset needs its binary";
    if (k == SlowSyscall && syscall_->text().trimmed().isEmpty()) return "enter the system call (e.g. read)";
    if (k == TracepointPair && (first_->text().trimmed().isEmpty() || second_->text().trimmed().isEmpty()))
        return "enter both tracepoints (e.g. sched:sched_wakeup and sched_switch)";
    if ((k == SlowCall || k == SlowSyscall || k == TracepointPair) && threshold_->text().trimmed().isEmpty())
        return "enter the threshold (e.g. 5ms)";
    return {};
}

void TriggerRow::setError(const QString& text) {
    error_ = text;
    errorLabel_->setText(text.isEmpty() ? QString() : "✗ " + text);
    errorLabel_->setToolTip(text);
}

// ---- The editor ----

TriggerEditor::TriggerEditor(QWidget* parent) : QGroupBox("Snapshot triggers", parent) {
    setObjectName("triggerEditor");
    note_ = new QLabel(
        "Each firing snapshots everything in flight: the capture must be a flight recorder (tick "
        "\u201cSideband flight recorder\u201d or the AUX snapshot mode).");
    note_->setToolTip(
        "Firings are marked on the live timeline, counted beside Start, and kept in the file "
        "(its timeline opens on the first, with a list of them all)");
    note_->setObjectName("triggerNote");
    note_->setWordWrap(true);
    auto* rowsBox = new QWidget;
    rowsLayout_ = new QVBoxLayout(rowsBox);
    rowsLayout_->setContentsMargins(0, 0, 0, 0);
    rowsLayout_->setSpacing(2);
    rowsArea_ = new QScrollArea;
    rowsArea_->setObjectName("triggerRows");
    rowsArea_->setFrameShape(QFrame::NoFrame);
    rowsArea_->setWidgetResizable(true);
    rowsArea_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    rowsArea_->setWidget(rowsBox);
    rowsArea_->setVisible(false);
    add_ = new QPushButton("Add trigger");
    add_->setObjectName("triggerAdd");
    connect(add_, &QPushButton::clicked, this, [this] { addTrigger(); });

    post_ = new QDoubleSpinBox;
    post_->setObjectName("triggerPost");
    post_->setRange(0, 3600'000);
    post_->setDecimals(1);
    post_->setSuffix(" ms");
    post_->setToolTip(
        "Keep tracing this long after a firing before its snapshot, so that the snapshot is "
        "centred on the event (--trigger-post)");
    max_ = new QSpinBox;
    max_->setObjectName("triggerMax");
    max_->setRange(0, 1'000'000);
    max_->setSpecialValueText("no limit");
    max_->setToolTip(
        "At most this many triggered snapshots; later firings are counted as skipped (--trigger-max)");
    gap_ = new QDoubleSpinBox;
    gap_->setObjectName("triggerGap");
    gap_->setRange(0, 3600'000);
    gap_->setDecimals(1);
    gap_->setSuffix(" ms");
    gap_->setToolTip(
        "At least this long between two snapshots' firings; firings within it are counted as "
        "skipped (--trigger-gap)");
    tids_ = new QLineEdit;
    tids_->setObjectName("triggerThreads");
    tids_->setPlaceholderText("every thread");
    tids_->setToolTip(
        "Only these threads fire (thread ids, comma-separated; --trigger-tid); others are "
        "counted as skipped");
    optionsError_ = new QLabel;
    optionsError_->setObjectName("triggerOptionsError");
    optionsError_->setStyleSheet(kErrorStyle);
    auto* options = new QHBoxLayout;
    options->addWidget(add_);
    options->addSpacing(12);
    options->addWidget(new QLabel("Keep tracing after a firing"));
    options->addWidget(post_);
    options->addWidget(new QLabel("At most"));
    options->addWidget(max_);
    options->addWidget(new QLabel("snapshots, gap"));
    options->addWidget(gap_);
    options->addWidget(new QLabel("Threads"));
    options->addWidget(tids_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(note_);
    layout->addWidget(rowsArea_);
    layout->addLayout(options);
    layout->addWidget(optionsError_);
    optionsError_->setVisible(false);
    note_->setVisible(false);

    validateTimer_ = new QTimer(this);
    validateTimer_->setSingleShot(true);
    validateTimer_->setInterval(250);  // resolving reads the binary's symbols: not on every key
    connect(validateTimer_, &QTimer::timeout, this, &TriggerEditor::validate);
    connect(tids_, &QLineEdit::textChanged, this, &TriggerEditor::scheduleValidate);
}

TriggerRow* TriggerEditor::addTrigger(const QString& spec) {
    auto* row = new TriggerRow;
    if (!spec.isEmpty() && !row->setSpec(spec)) {
        // Not a spec: kept as typed, so that the check says what is wrong with it.
        row->setKind(TriggerRow::FunctionEntered);
        row->functionEdit()->setText(spec);
    }
    rows_.push_back(row);
    rowsLayout_->addWidget(row);
    note_->setVisible(true);
    connect(row, &TriggerRow::changed, this, &TriggerEditor::scheduleValidate);
    connect(row, &TriggerRow::removeRequested, this, [this, row] {
        auto it = std::find(rows_.begin(), rows_.end(), row);
        if (it != rows_.end()) removeTrigger(int(it - rows_.begin()));
    });
    connect(row, &TriggerRow::pickRequested, this, [this, row] {
        auto it = std::find(rows_.begin(), rows_.end(), row);
        if (it != rows_.end()) openPicker(int(it - rows_.begin()));
    });
    validate();
    if (count() > 2) QTimer::singleShot(0, this, [this, row] { rowsArea_->ensureWidgetVisible(row); });
    if (spec.isEmpty()) row->functionEdit()->setFocus();
    return row;
}

void TriggerEditor::removeTrigger(int i) {
    if (i < 0 || i >= count()) return;
    TriggerRow* row = rows_[size_t(i)];
    rows_.erase(rows_.begin() + i);
    row->deleteLater();
    note_->setVisible(!rows_.empty());
    rowsLayout_->removeWidget(row);
    validate();
}

void TriggerEditor::fitRows() {
    rowsArea_->setVisible(!rows_.empty());
    if (rows_.empty()) return;
    // The first two rows' heights at the width they have (an error may take two lines).
    const int width = rowsArea_->viewport()->width() > 50 ? rowsArea_->viewport()->width() : this->width();
    int height = 0;
    for (int i = 0; i < std::min(count(), 2); ++i) {
        QLayout* l = rows_[size_t(i)]->layout();
        height +=
            (l->hasHeightForWidth() ? l->totalHeightForWidth(width) : rows_[size_t(i)]->sizeHint().height()) +
            rowsLayout_->spacing();
    }
    rowsArea_->setFixedHeight(height);
}

void TriggerEditor::setDefaultBinary(const QString& path) {
    if (path == defaultBinary_) return;
    defaultBinary_ = path;
    if (!rows_.empty()) scheduleValidate();
}

void TriggerEditor::scheduleValidate() {
    // Not valid until checked: Start waits for the check.
    if (valid_) {
        valid_ = false;
        emit validityChanged(false);
    }
    validateTimer_->start();
}

Expected<std::vector<pid_t>> TriggerEditor::threads() const {
    std::vector<pid_t> out;
    const QStringList parts = tids_->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts);
    for (const QString& p : parts) {
        bool ok = false;
        const long v = p.toLong(&ok);
        if (!ok || v <= 0 || v > INT_MAX)
            return makeError("Threads: '" + p.toStdString() + "' is not a thread id (a positive number)");
        out.push_back(pid_t(v));
    }
    return out;
}

bool TriggerEditor::validate() {
    validateTimer_->stop();
    bool ok = true;
    TriggerResolveOptions ro;
    ro.defaultBinary = defaultBinary_.toStdString();
    for (TriggerRow* row : rows_) {
        if (const QString m = row->missing(); !m.isEmpty()) {
            row->setError(m);
            ok = false;
            continue;
        }
        auto spec = parseTriggerSpec(row->spec().toStdString());
        if (!spec) {
            row->setError(QString::fromStdString(spec.error().message));
            ok = false;
            continue;
        }
        auto r = resolveTrigger(*spec, ro);
        if (!r) {
            row->setError(QString::fromStdString(r.error().message));
            ok = false;
            continue;
        }
        row->setError({});
    }
    auto t = threads();
    optionsError_->setVisible(!t);
    optionsError_->setText(t ? QString() : "✗ " + QString::fromStdString(t.error().message));
    if (!t) ok = false;
    valid_ = ok;
    fitRows();
    emit validityChanged(ok);
    return ok;
}

QString TriggerEditor::firstError() const {
    for (size_t i = 0; i < rows_.size(); ++i)
        if (!rows_[i]->error().isEmpty())
            return QString("trigger %1 (%2): %3").arg(i + 1).arg(rows_[i]->spec(), rows_[i]->error());
    if (auto t = threads(); !t) return QString::fromStdString(t.error().message);
    return {};
}

Expected<TriggerEditor::Armed> TriggerEditor::resolved() const {
    Armed a;
    TriggerResolveOptions ro;
    ro.defaultBinary = defaultBinary_.toStdString();
    for (size_t i = 0; i < rows_.size(); ++i) {
        const std::string text = rows_[i]->spec().toStdString();
        auto spec = parseTriggerSpec(text);
        if (!spec) return makeError("trigger " + std::to_string(i + 1) + ": " + spec.error().message);
        auto r = resolveTrigger(*spec, ro);
        if (!r) return makeError("trigger " + std::to_string(i + 1) + ": " + r.error().message);
        a.settings.specs.push_back(std::move(spec.value()));
        a.triggers.push_back(std::move(r.value()));
    }
    a.settings.postNs = uint64_t(post_->value() * 1e6 + 0.5);
    a.settings.max = uint64_t(max_->value());
    a.settings.gapNs = uint64_t(gap_->value() * 1e6 + 0.5);
    auto t = threads();
    if (!t) return t.error();
    a.settings.tids = std::move(*t);
    return a;
}

TriggerFunctionPicker* TriggerEditor::openPicker(int i) {
    if (i < 0 || i >= count()) return nullptr;
    TriggerRow* row = rows_[size_t(i)];
    QString binary = row->binaryEdit()->text().trimmed();
    if (!binary.isEmpty()) {
        auto exe = findExecutable(binary.toStdString());
        if (!exe) {
            row->setError("Pick…: " + QString::fromStdString(exe.error().message));
            return nullptr;
        }
        binary = QString::fromStdString(*exe);
    } else {
        binary = defaultBinary_;
    }
    if (binary.isEmpty()) {
        row->setError("Pick…: name the binary (a system-wide capture has no target binary)");
        return nullptr;
    }
    if (picker_) picker_->deleteLater();
    picker_ = new TriggerFunctionPicker(binary, this);
    picker_->setAttribute(Qt::WA_DeleteOnClose);
    QPointer<TriggerRow> target(row);
    QPointer<TriggerFunctionPicker> picker(picker_);
    connect(picker_, &QDialog::accepted, this, [target, picker] {
        if (target && picker) target->functionEdit()->setText(picker->chosen());
    });
    connect(picker_, &QObject::destroyed, this, [this, raw = picker_] {
        if (picker_ == raw) picker_ = nullptr;
    });
    picker_->open();
    return picker_;
}

void TriggerEditor::resizeEvent(QResizeEvent* e) {
    QGroupBox::resizeEvent(e);
    fitRows();
}

void TriggerEditor::setEditable(bool on) {
    for (TriggerRow* r : rows_)
        r->setEnabled(on);
    for (QWidget* w : std::initializer_list<QWidget*>{add_, post_, max_, gap_, tids_})
        w->setEnabled(on);
}

}  // namespace auxscope
