// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The code of a function as the trace executed it (images/CodeAnnotation.h):
// its disassembly with each instruction's execution count in the range (rows
// executed at least once tinted, hotter ones darker) and source file:line
// where the image has debug information; beside it the source file, when it
// can be read, with per-line counts. The counts of a sampled function are its
// samples (those whose leaf, the sampled address, is in it), not executions:
// the header and the column say so.
#include <QWidget>

#include <optional>

#include "images/CodeAnnotation.h"

class QLabel;
class QSplitter;
class QTreeWidget;

namespace auxscope {

class CodeView : public QWidget {
    Q_OBJECT
public:
    explicit CodeView(QWidget* parent = nullptr);
    // Shows `code`; `context` says over what ("thread 42, +1.2 ms … +3.4 ms").
    // `sampledEvent` non-empty: the counts are samples of that event ("cpu-clock")
    // whose leaf is at each instruction; else executions from the decoded flow.
    void showCode(const AnnotatedCode& code, const QString& context, const QString& sampledEvent = {});
    // The counts shown are samples (not executions).
    bool countsSamples() const { return countsSamples_; }
    // A message instead of code (working, or why there is none).
    void showMessage(const QString& text, bool error = false);
    const AnnotatedCode* code() const { return code_ ? &*code_ : nullptr; }
    QTreeWidget* instructions() const { return insns_; }
    QTreeWidget* source() const { return source_; }
    QLabel* header() const { return header_; }

private:
    std::optional<AnnotatedCode> code_;
    bool countsSamples_ = false;
    QLabel* header_ = nullptr;
    QSplitter* split_ = nullptr;
    QTreeWidget* insns_ = nullptr;
    QTreeWidget* source_ = nullptr;
};

}  // namespace auxscope
