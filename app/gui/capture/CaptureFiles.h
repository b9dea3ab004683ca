// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where GUI captures live and what was opened lately (issue 27: captures are
// never lost). A capture is written straight into the captures folder, a
// folder the person sees and can change (QSettings "captures/folder"; default
// $XDG_DATA_HOME/auxscope/captures), under a name that says when and what:
// `2026-11-27_10-31-05_system-wide.data`. Nothing here deletes a capture; only
// the main window does, after the person chose Discard.
//
// The recent list (QSettings "recent/files", newest first, at most kMaxRecent)
// holds the captures made and the files opened; File > Open Recent and the
// capture page show it.
#include <QDateTime>
#include <QString>
#include <QStringList>

namespace auxscope {

class CaptureFiles {
public:
    static constexpr int kMaxRecent = 10;

    // The captures folder: the one chosen, else the default below.
    static QString capturesFolder();
    // $XDG_DATA_HOME/auxscope/captures (~/.local/share/auxscope/captures).
    static QString defaultCapturesFolder();
    // Remembers `folder` (empty: back to the default).
    static void setCapturesFolder(const QString& folder);

    // "2026-11-27_10-31-05_<target>.data": the target made safe for a file name
    // (letters, digits, '.', '-', '_'; at most 48 characters).
    static QString captureFileName(const QDateTime& when, const QString& target);
    // A path in `folder` for a capture starting now that names no existing file
    // ("…_2.data" and on when two start in one second). Creates the folder;
    // empty with `error` set when it cannot.
    static QString newCapturePath(const QString& folder, const QString& target, QString* error);

    // The recent list, newest first (files that no longer exist included: the
    // menu greys them).
    static QStringList recentFiles();
    // Puts `path` (made absolute) first, dropping an older entry of it and
    // whatever falls past kMaxRecent.
    static void addRecent(const QString& path);
    // Drops the entries whose file no longer exists; returns how many.
    static int pruneMissing();
    static void clearRecent();
};

}  // namespace auxscope
