// SPDX-License-Identifier: GPL-3.0-or-later
#include "gui/trace/SymbolsDialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

namespace auxscope {
namespace {

QStringList lines(const QPlainTextEdit* edit) {
    QStringList out;
    for (const QString& l : edit->toPlainText().split('\n'))
        if (!l.trimmed().isEmpty()) out << l.trimmed();
    return out;
}

QPlainTextEdit* listEdit(const char* name, const QString& placeholder) {
    auto* e = new QPlainTextEdit;
    e->setObjectName(name);
    e->setPlaceholderText(placeholder);
    e->setLineWrapMode(QPlainTextEdit::NoWrap);
    e->setTabChangesFocus(true);
    e->setFixedHeight(e->fontMetrics().lineSpacing() * 3 + 12);
    return e;
}

QLineEdit* lineEdit(const char* name, const QString& placeholder) {
    auto* e = new QLineEdit;
    e->setObjectName(name);
    e->setPlaceholderText(placeholder);
    e->setClearButtonEnabled(true);
    return e;
}

}  // namespace

SymbolsDialog::SymbolsDialog(const QString& file, const SymbolSettings& current, QWidget* parent)
    : QDialog(parent), file_(file) {
    setObjectName("symbolsDialog");
    setWindowTitle("Symbols & binaries — " + QFileInfo(file).fileName());
    const QString folder = SymbolSettings::fileFolder(file);

    // A line edit with a Browse… button that picks a file or a folder.
    auto withBrowse = [this](QLineEdit* edit, bool folders, const QString& title) {
        auto* row = new QHBoxLayout;
        row->addWidget(edit, 1);
        auto* b = new QPushButton("Browse…");
        b->setObjectName(edit->objectName() + "Browse");
        connect(b, &QPushButton::clicked, this, [this, edit, folders, title] {
            const QString start = edit->text().isEmpty() ? QFileInfo(file_).absolutePath() : edit->text();
            const QString p = folders ? QFileDialog::getExistingDirectory(this, title, start)
                                      : QFileDialog::getOpenFileName(this, title, start);
            if (!p.isEmpty()) edit->setText(p);
        });
        row->addWidget(b);
        return row;
    };
    // A list (one path per line) with an Add… button that appends a file or a folder.
    auto withAdd = [this](QPlainTextEdit* edit, bool folders, const QString& title) {
        auto* row = new QHBoxLayout;
        row->addWidget(edit, 1);
        auto* b = new QPushButton(folders ? "Add folder…" : "Add file…");
        b->setObjectName(edit->objectName() + "Add");
        connect(b, &QPushButton::clicked, this, [this, edit, folders, title] {
            const QString start = QFileInfo(file_).absolutePath();
            const QStringList picked =
                folders ? QStringList{QFileDialog::getExistingDirectory(this, title, start)}
                        : QFileDialog::getOpenFileNames(this, title, start);
            for (const QString& p : picked)
                if (!p.isEmpty()) edit->appendPlainText(p);
        });
        auto* column = new QVBoxLayout;
        column->addWidget(b);
        column->addStretch(1);
        row->addLayout(column);
        return row;
    };

    symfs_ = lineEdit("symfs", "none: recorded paths as they are (e.g. /data/local/tmp/app)");
    symfs_->setToolTip(
        "A copy of the recording machine's root: recorded paths are looked up under it first "
        "(perf's --symfs)");
    fileFolder_ = new QCheckBox("Search the file's folder (automatic): " + folder);
    fileFolder_->setObjectName("searchFileFolder");
    fileFolder_->setToolTip(
        "Mapped files are looked up by name in the opened file's folder, and under it as a "
        "sysroot");
    binaryDirs_ = listEdit("binaryDirs", "more folders with binaries and libraries, one per line");
    debugDirs_ =
        listEdit("debugDirs", "debug roots laid out as /usr/lib/debug (always searched), one per line");
    vmlinux_ = lineEdit("vmlinux", "the kernel's ELF with symbols (perf's --vmlinux)");
    kcore_ = lineEdit("kcore", "perf record --kcore's folder, or a kcore file");
    kallsyms_ = lineEdit("kallsyms", "kernel names only (a copy of /proc/kallsyms)");
    debuginfod_ = new QCheckBox("Ask debuginfod servers for debug files that are not found here");
    debuginfod_->setObjectName("debuginfod");
    const QString envUrls = qEnvironmentVariable("DEBUGINFOD_URLS");
    debuginfodUrls_ = lineEdit(
        "debuginfodUrls", envUrls.isEmpty() ? "server URLs, space-separated (none set: no request is made)"
                                            : "empty: DEBUGINFOD_URLS (" + envUrls + ")");
    connect(debuginfod_, &QCheckBox::toggled, debuginfodUrls_, &QWidget::setEnabled);
    jitDumps_ = listEdit("jitDumps", "jit-<pid>.dump files (those beside the file are read automatically)");
    perfMaps_ = listEdit("perfMaps",
                         "perf-<pid>.map files (/tmp's and those beside the file are read automatically)");

    auto* binaries = new QVBoxLayout;
    binaries->addWidget(fileFolder_);
    binaries->addLayout(withAdd(binaryDirs_, true, "Folder with binaries and libraries"));
    auto* debuginfod = new QVBoxLayout;
    debuginfod->addWidget(debuginfod_);
    debuginfod->addWidget(debuginfodUrls_);

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    form->addRow("Sysroot (symfs):", withBrowse(symfs_, true, "Sysroot"));
    form->addRow("Binaries and libraries:", binaries);
    form->addRow("Debug folders:", withAdd(debugDirs_, true, "Debug folder"));
    form->addRow("vmlinux:", withBrowse(vmlinux_, false, "vmlinux"));
    form->addRow("kcore:", withBrowse(kcore_, true, "kcore folder"));
    form->addRow("kallsyms:", withBrowse(kallsyms_, false, "kallsyms"));
    form->addRow("debuginfod:", debuginfod);
    form->addRow("JIT dumps:", withAdd(jitDumps_, false, "jitdump files"));
    form->addRow("perf maps:", withAdd(perfMaps_, false, "perf-<pid>.map files"));

    problems_ = new QLabel;
    problems_->setObjectName("symbolsProblems");
    problems_->setWordWrap(true);
    problems_->setStyleSheet("color: #b00020;");
    problems_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    defaults_ = new QCheckBox("Use these settings for every file without settings of its own");
    defaults_->setObjectName("saveAsDefaults");
    auto* intro = new QLabel(
        "Where the code and names of <b>" + QFileInfo(file).fileName().toHtmlEscaped() +
        "</b> come from, beyond the paths the recording names and perf's build-id cache (~/.debug). "
        "OK resolves the file's images and decodes it again.");
    intro->setWordWrap(true);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel |
                                         QDialogButtonBox::RestoreDefaults);
    buttons->button(QDialogButtonBox::Ok)->setObjectName("symbolsOk");
    buttons->button(QDialogButtonBox::RestoreDefaults)->setText("Defaults");
    buttons->button(QDialogButtonBox::RestoreDefaults)
        ->setToolTip("Fill the form with the defaults for every file");
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
            [this] { setSettings(SymbolSettings::defaults()); });

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(problems_);
    layout->addWidget(defaults_);
    layout->addWidget(buttons);

    for (QLineEdit* e : {symfs_, vmlinux_, kcore_, kallsyms_, debuginfodUrls_})
        connect(e, &QLineEdit::textChanged, this, &SymbolsDialog::checkPaths);
    for (QPlainTextEdit* e : {binaryDirs_, debugDirs_, jitDumps_, perfMaps_})
        connect(e, &QPlainTextEdit::textChanged, this, &SymbolsDialog::checkPaths);
    setSettings(current);
    resize(760, sizeHint().height());
}

void SymbolsDialog::setSettings(const SymbolSettings& s) {
    symfs_->setText(QString::fromStdString(s.options.symfs));
    fileFolder_->setChecked(s.searchFileFolder);
    binaryDirs_->setPlainText(toQStringList(s.options.binaryDirs).join('\n'));
    debugDirs_->setPlainText(toQStringList(s.options.debugDirs).join('\n'));
    vmlinux_->setText(QString::fromStdString(s.options.vmlinux));
    kcore_->setText(QString::fromStdString(s.options.kcore));
    kallsyms_->setText(QString::fromStdString(s.options.kallsyms));
    debuginfod_->setChecked(s.options.debuginfod);
    debuginfodUrls_->setEnabled(s.options.debuginfod);
    debuginfodUrls_->setText(toQStringList(s.options.debuginfodUrls).join(' '));
    jitDumps_->setPlainText(toQStringList(s.options.jitDumps).join('\n'));
    perfMaps_->setPlainText(toQStringList(s.options.perfMaps).join('\n'));
    checkPaths();
}

SymbolSettings SymbolsDialog::settings() const {
    SymbolSettings s;
    s.options.symfs = symfs_->text().trimmed().toStdString();
    // perf's --symfs is a prefix: a trailing slash would double the recorded path's.
    while (s.options.symfs.size() > 1 && s.options.symfs.back() == '/')
        s.options.symfs.pop_back();
    s.searchFileFolder = fileFolder_->isChecked();
    s.options.binaryDirs = toStdStrings(lines(binaryDirs_));
    s.options.debugDirs = toStdStrings(lines(debugDirs_));
    s.options.vmlinux = vmlinux_->text().trimmed().toStdString();
    s.options.kcore = kcore_->text().trimmed().toStdString();
    s.options.kallsyms = kallsyms_->text().trimmed().toStdString();
    s.options.debuginfod = debuginfod_->isChecked();
    s.options.debuginfodUrls =
        toStdStrings(debuginfodUrls_->text().split(QRegularExpression("\\s+"), Qt::SkipEmptyParts));
    s.options.jitDumps = toStdStrings(lines(jitDumps_));
    s.options.perfMaps = toStdStrings(lines(perfMaps_));
    return s;
}

bool SymbolsDialog::saveAsDefaults() const {
    return defaults_->isChecked();
}

void SymbolsDialog::checkPaths() {
    QStringList missing;
    auto check = [&](const QString& what, const QString& path) {
        if (!path.isEmpty() && !QFileInfo::exists(path)) missing << what + " " + path;
    };
    check("sysroot", symfs_->text().trimmed());
    for (const QString& p : lines(binaryDirs_))
        check("binary folder", p);
    for (const QString& p : lines(debugDirs_))
        check("debug folder", p);
    check("vmlinux", vmlinux_->text().trimmed());
    check("kcore", kcore_->text().trimmed());
    check("kallsyms", kallsyms_->text().trimmed());
    for (const QString& p : lines(jitDumps_))
        check("JIT dump", p);
    for (const QString& p : lines(perfMaps_))
        check("perf map", p);
    // debuginfod takes http://, https:// and file:// URLs.
    for (const QString& url : debuginfodUrls_->text().split(QRegularExpression("\\s+"), Qt::SkipEmptyParts))
        if (!QRegularExpression("^(https?|file)://\\S+$").match(url).hasMatch())
            missing << "debuginfod URL " + url + " (not http://, https:// or file://)";
    problemsText_ = missing.isEmpty() ? QString() : "Not found (kept as typed): " + missing.join("; ");
    problems_->setText(problemsText_);
    problems_->setVisible(!problemsText_.isEmpty());
}

}  // namespace auxscope
