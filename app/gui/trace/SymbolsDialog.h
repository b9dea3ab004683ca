// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The *Symbols & binaries* dialog of an opened file (issue 27): where its code
// and names come from (SymbolSettings): sysroot (symfs), extra binary and
// library folders, debug folders, the kernel's vmlinux, kcore and kallsyms,
// debuginfod servers (on/off), JIT dumps and perf maps; the file's own folder
// is listed as searched automatically (a check box turns it off). Lists are
// one path per line, with an Add… button each. Paths that do not exist are
// named under the form as they are typed (they are kept: a folder may be
// mounted later). OK gives settings(); "Use for every file" also makes them
// the defaults; "Defaults" fills the form with the defaults.
#include <QDialog>

#include "gui/trace/SymbolSettings.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace auxscope {

class SymbolsDialog : public QDialog {
    Q_OBJECT
public:
    // `file`: the opened file (its folder is the automatic one); `current`: its settings.
    SymbolsDialog(const QString& file, const SymbolSettings& current, QWidget* parent = nullptr);

    // What the form says now.
    SymbolSettings settings() const;
    void setSettings(const SymbolSettings& s);
    // "Use for every file" is checked: the caller saves settings() as the defaults too.
    bool saveAsDefaults() const;
    // The paths in the form that do not exist ("" when all do).
    QString problems() const { return problemsText_; }

    // The form's fields (tests; object names as below).
    QLineEdit* symfsEdit() const { return symfs_; }                    // "symfs"
    QCheckBox* fileFolderCheck() const { return fileFolder_; }         // "searchFileFolder"
    QPlainTextEdit* binaryDirsEdit() const { return binaryDirs_; }     // "binaryDirs"
    QPlainTextEdit* debugDirsEdit() const { return debugDirs_; }       // "debugDirs"
    QLineEdit* vmlinuxEdit() const { return vmlinux_; }                // "vmlinux"
    QLineEdit* kcoreEdit() const { return kcore_; }                    // "kcore"
    QLineEdit* kallsymsEdit() const { return kallsyms_; }              // "kallsyms"
    QCheckBox* debuginfodCheck() const { return debuginfod_; }         // "debuginfod"
    QLineEdit* debuginfodUrlsEdit() const { return debuginfodUrls_; }  // "debuginfodUrls"
    QPlainTextEdit* jitDumpsEdit() const { return jitDumps_; }         // "jitDumps"
    QPlainTextEdit* perfMapsEdit() const { return perfMaps_; }         // "perfMaps"
    QCheckBox* defaultsCheck() const { return defaults_; }             // "saveAsDefaults"

private:
    void checkPaths();

    QString file_;
    QLineEdit* symfs_ = nullptr;
    QCheckBox* fileFolder_ = nullptr;
    QPlainTextEdit* binaryDirs_ = nullptr;
    QPlainTextEdit* debugDirs_ = nullptr;
    QLineEdit* vmlinux_ = nullptr;
    QLineEdit* kcore_ = nullptr;
    QLineEdit* kallsyms_ = nullptr;
    QCheckBox* debuginfod_ = nullptr;
    QLineEdit* debuginfodUrls_ = nullptr;
    QPlainTextEdit* jitDumps_ = nullptr;
    QPlainTextEdit* perfMaps_ = nullptr;
    QCheckBox* defaults_ = nullptr;
    QLabel* problems_ = nullptr;
    QString problemsText_;
};

}  // namespace auxscope
