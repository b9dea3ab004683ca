// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where an opened file's code and names come from (issue 27): the image
// options the trace page decodes and resolves with (images/ImageResolver.h's
// ImageOptions: sysroot, binary and debug folders, kernel images, debuginfod,
// JIT maps), kept in QSettings per file ("symbols/<sha1 of its canonical
// path>", the path beside it for whoever reads the settings file) with
// defaults for every file that has none of its own ("symbols/defaults").
//
// The opened file's folder is searched automatically: effective() puts it
// first in binaryDirs unless the person turned that off, so a trace recorded
// elsewhere with its binaries copied beside it decodes as it opens.
#include <QString>
#include <QStringList>
#include <QVariantMap>

#include "images/ImageResolver.h"

namespace auxscope {

struct SymbolSettings {
    ImageOptions options;          // as the person set them (the file's folder not among binaryDirs)
    bool searchFileFolder = true;  // the opened file's folder joins binaryDirs
    bool ownEntry = false;         // read from the file's own entry (else the defaults)

    // The file's entry, else the defaults, else the built-in ones.
    static SymbolSettings forFile(const QString& path);
    static SymbolSettings defaults();
    // Stores `s` as the file's own entry / as the defaults for every file.
    static void saveForFile(const QString& path, const SymbolSettings& s);
    static void saveDefaults(const SymbolSettings& s);
    // Drops the file's own entry: it follows the defaults again.
    static void forgetFile(const QString& path);
    // "symbols/<sha1 of the canonical path>".
    static QString settingsKey(const QString& path);
    // The folder searched automatically for `path` (its absolute folder).
    static QString fileFolder(const QString& path);

    // What the resolver gets for `path`: options with the file's folder first in
    // binaryDirs when searchFileFolder (and not listed already).
    ImageOptions effective(const QString& path) const;

    QVariantMap toVariant() const;
    static SymbolSettings fromVariant(const QVariantMap& map);
    bool operator==(const SymbolSettings& o) const;
};

// std::vector<std::string> <-> QStringList, for the settings and the dialog.
QStringList toQStringList(const std::vector<std::string>& v);
std::vector<std::string> toStdStrings(const QStringList& list);

}  // namespace auxscope
