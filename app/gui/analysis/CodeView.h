// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The code of a function as the trace executed it (images/CodeAnnotation.h):
// its disassembly with each instruction's execution count in the range (rows
// executed at least once tinted, hotter ones darker) and source file:line
// where the image has debug information; beside it the source file, when it
// can be read, with per-line counts.
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
    void showCode(const AnnotatedCode& code, const QString& context);
    // A message instead of code (working, or why there is none).
    void showMessage(const QString& text, bool error = false);
    const AnnotatedCode* code() const { return code_ ? &*code_ : nullptr; }
    QTreeWidget* instructions() const { return insns_; }
    QTreeWidget* source() const { return source_; }
    QLabel* header() const { return header_; }

private:
    std::optional<AnnotatedCode> code_;
    QLabel* header_ = nullptr;
    QSplitter* split_ = nullptr;
    QTreeWidget* insns_ = nullptr;
    QTreeWidget* source_ = nullptr;
};

}  // namespace auxscope
